//! docs/ARCHITECTURE.md names only files that exist: every path it quotes (`` `a/b.rs` ``, from
//! the repository, `crates/` or a crate's `src/`), and every file of the agent's map.

use std::path::{Path, PathBuf};

const EXTENSIONS: [&str; 9] = [".rs", ".md", ".js", ".c", ".cs", ".py", ".sh", ".toml", ".json"];

#[test]
fn every_file_the_architecture_names_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let text = std::fs::read_to_string(root.join("docs/ARCHITECTURE.md")).unwrap();
    let bases = bases(&root);
    let mut missing = Vec::new();
    let mut checked = 0;
    for quoted in text.split('`').skip(1).step_by(2) {
        let quoted = quoted.trim_start_matches("crates/");
        if quoted.contains(' ') || !quoted.contains('/') || !EXTENSIONS.iter().any(|e| quoted.ends_with(e)) {
            continue;
        }
        checked += 1;
        if !bases.iter().any(|b| b.join(quoted).exists()) {
            missing.push(quoted.to_string());
        }
    }
    // The agent's map: each line's folder (`sampling/`) and every file it names, under the agent.
    let agent = root.join("crates/agent/src");
    let agent_files = files_under(&agent);
    let map = text.split("The agent (`crates/agent/src/`)").nth(1).and_then(|t| t.split("```").nth(1)).unwrap();
    for word in map.split(|c: char| c.is_whitespace() || matches!(c, ',' | '(' | ')' | '+' | ':' | ';')) {
        if word.ends_with('/') && !word.contains('.') && word.len() > 1 {
            checked += 1;
            if !agent_files.iter().any(|f| f.parent().is_some_and(|d| d.ends_with(word.trim_end_matches('/')))) {
                missing.push(format!("agent folder {word}"));
            }
        } else if let Some(name) = word.strip_suffix(".rs") {
            checked += 1;
            let name = format!("{name}.rs");
            if !agent_files.iter().any(|f| f.ends_with(&name)) {
                missing.push(format!("agent file {name}"));
            }
        }
    }
    assert!(checked > 60, "too few names checked ({checked}): the reader is broken");
    assert!(missing.is_empty(), "docs/ARCHITECTURE.md names files that do not exist: {missing:?}");
}

/// Where a quoted path may start: the repository, `crates/`, every crate's `src/` and the
/// agent's folders (the map names `hooks/x86_64.rs` on `coreclr/`'s line).
fn bases(root: &Path) -> Vec<PathBuf> {
    let mut bases = vec![root.to_path_buf(), root.join("crates")];
    for entry in std::fs::read_dir(root.join("crates")).unwrap() {
        bases.push(entry.unwrap().path().join("src"));
    }
    let agent = root.join("crates/agent/src");
    bases.extend(files_under(&agent).iter().filter_map(|f| f.parent().map(Path::to_path_buf)));
    bases.sort();
    bases.dedup();
    bases
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else {
            out.push(path);
        }
    }
    out
}
