//! The agent's modules depend one way (docs/ARCHITECTURE.md): no file reaches, through the
//! modules it names, back to itself.
//!
//! Read as text, as a reader would: every `crate::…`, `super::…` and `self::…` path (the `use`
//! trees expanded), and a parent module's own `child::…` paths, is an arrow from the file that
//! spells it to the file that defines the module it names (the longest prefix of the path that
//! is a file). Test code (`#[cfg(test)] mod tests { … }`) and comments are left out: a test may
//! look anywhere. A failure lists every circle with the arrows that make it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

#[test]
fn the_agent_s_modules_form_no_circle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = Graph::read(&src);
    assert!(graph.files.len() > 20, "too few files read from {}: {:?}", src.display(), graph.files.keys());
    assert!(graph.arrows() > 40, "too few arrows read: the reader is broken");
    let circles = graph.circles();
    let described: Vec<String> = circles.iter().map(|c| graph.describe(c)).collect();
    assert!(described.is_empty(), "import circles in the agent:\n{}", described.join("\n"));
}

#[test]
fn the_reader_finds_a_circle_when_there_is_one() {
    let dir = std::env::temp_dir().join(format!("sonde-one-way-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("a")).unwrap();
    std::fs::write(dir.join("lib.rs"), "mod a;\nmod b;\n").unwrap();
    std::fs::write(dir.join("a/mod.rs"), "mod inner;\nuse crate::b::{x, y};\n").unwrap();
    std::fs::write(dir.join("a/inner.rs"), "fn f() { super::super::b::x(); }\n").unwrap();
    std::fs::write(
        dir.join("b.rs"),
        "// crate::a::inner is named in a comment only\npub fn x() { crate::a::inner::g() }\n\
         #[cfg(test)]\nmod tests { use crate::a; }\n",
    )
    .unwrap();
    let graph = Graph::read(&dir);
    let circles = graph.circles();
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(circles.len(), 1, "{circles:?}");
    let names: Vec<&str> = circles[0].iter().map(|f| f.as_str()).collect();
    assert_eq!(names, ["a/inner.rs", "b.rs"]);
}

/// Files (by path under `src/`, with `/`) and the files each one's paths name.
struct Graph {
    /// Module path (`["sampling", "drain"]`) → file.
    modules: BTreeMap<Vec<String>, String>,
    files: BTreeMap<String, BTreeSet<String>>,
}

impl Graph {
    fn read(src: &Path) -> Graph {
        let mut paths = Vec::new();
        collect(src, &mut paths);
        let mut modules = BTreeMap::new();
        for path in &paths {
            let relative = path.strip_prefix(src).unwrap().to_string_lossy().replace('\\', "/");
            modules.insert(module_of(&relative), relative);
        }
        let mut graph = Graph { modules, files: BTreeMap::new() };
        for path in &paths {
            let relative = path.strip_prefix(src).unwrap().to_string_lossy().into_owned();
            let text = std::fs::read_to_string(path).unwrap();
            let targets = graph.arrows_of(&relative, &text);
            graph.files.insert(relative, targets);
        }
        graph
    }

    fn arrows(&self) -> usize {
        self.files.values().map(BTreeSet::len).sum()
    }

    /// The files `text` (the file `file`) names, itself left out.
    fn arrows_of(&self, file: &str, text: &str) -> BTreeSet<String> {
        let here = module_of(file);
        let mut targets = BTreeSet::new();
        for (inline, path) in paths_in(&strip(text)) {
            let mut module = here.clone();
            module.extend(inline.iter().cloned());
            let absolute = match path.first().map(String::as_str) {
                Some("crate") => path[1..].to_vec(),
                Some("self") => [module.as_slice(), &path[1..]].concat(),
                Some("super") => {
                    let ups = path.iter().take_while(|s| *s == "super").count();
                    if ups > module.len() {
                        continue;
                    }
                    [&module[..module.len() - ups], &path[ups..]].concat()
                }
                // A bare path: a child module of this one (or of the inline module it is in).
                Some(_) => [module.as_slice(), &path[..]].concat(),
                None => continue,
            };
            if let Some(target) = self.file_of(&absolute)
                && target != file
            {
                targets.insert(target.to_string());
            }
        }
        targets
    }

    /// The file defining the longest prefix of `path` that is a file module; for a bare path,
    /// only when its first segment is a module (not a type or a function of the same name).
    fn file_of(&self, path: &[String]) -> Option<&str> {
        (1..=path.len()).rev().find_map(|n| self.modules.get(&path[..n]).map(String::as_str))
    }

    /// Strongly connected components of more than one file (Tarjan's, recursive: the graph is small).
    fn circles(&self) -> Vec<Vec<String>> {
        struct State<'a> {
            graph: &'a Graph,
            index: BTreeMap<&'a str, usize>,
            low: BTreeMap<&'a str, usize>,
            stack: Vec<&'a str>,
            on_stack: BTreeSet<&'a str>,
            found: Vec<Vec<String>>,
        }
        fn visit<'a>(s: &mut State<'a>, v: &'a str) {
            let n = s.index.len();
            s.index.insert(v, n);
            s.low.insert(v, n);
            s.stack.push(v);
            s.on_stack.insert(v);
            for w in s.graph.files.get(v).into_iter().flatten() {
                let w = w.as_str();
                if !s.index.contains_key(w) {
                    visit(s, w);
                    let low = s.low[v].min(s.low[w]);
                    s.low.insert(v, low);
                } else if s.on_stack.contains(w) {
                    let low = s.low[v].min(s.index[w]);
                    s.low.insert(v, low);
                }
            }
            if s.low[v] == s.index[v] {
                let mut component = Vec::new();
                while let Some(w) = s.stack.pop() {
                    s.on_stack.remove(w);
                    component.push(w.to_string());
                    if w == v {
                        break;
                    }
                }
                if component.len() > 1 {
                    component.sort();
                    s.found.push(component);
                }
            }
        }
        let mut s = State {
            graph: self,
            index: BTreeMap::new(),
            low: BTreeMap::new(),
            stack: Vec::new(),
            on_stack: BTreeSet::new(),
            found: Vec::new(),
        };
        for v in self.files.keys() {
            if !s.index.contains_key(v.as_str()) {
                visit(&mut s, v);
            }
        }
        s.found
    }

    fn describe(&self, circle: &[String]) -> String {
        let mut out = format!("circle of {} files:", circle.len());
        for from in circle {
            for to in &self.files[from] {
                if circle.contains(to) {
                    out += &format!("\n  {from} -> {to}");
                }
            }
        }
        out
    }
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            collect(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `sampling/drain.rs` → `["sampling", "drain"]`; `mod.rs` and `lib.rs` name their folder.
/// (`coreclr/hooks/x86_64.rs` is `coreclr::hooks`'s `#[path]` child: the same rule names it.)
fn module_of(file: &str) -> Vec<String> {
    let trimmed = file.trim_end_matches(".rs");
    let mut parts: Vec<String> = trimmed.split('/').map(String::from).collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

/// The code of a file without comments, string and character literals (their contents become
/// spaces) and without `#[cfg(test)]` modules.
fn strip(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let bytes: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        let next = bytes.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < bytes.len() && bytes[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            while i + 1 < bytes.len() && !(bytes[i] == '*' && bytes[i + 1] == '/') {
                i += 1;
            }
            i += 2;
        } else if c == '"' {
            out.push(' ');
            i += 1;
            while i < bytes.len() && bytes[i] != '"' {
                i += if bytes[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
        } else if c == '\'' && bytes.get(i + 2) == Some(&'\'') {
            i += 3; // 'x'
        } else if c == '\'' && next == Some('\\') {
            i += 2;
            while i < bytes.len() && bytes[i] != '\'' {
                i += 1;
            }
            i += 1;
        } else {
            out.push(c);
            i += 1;
        }
    }
    remove_test_modules(&out)
}

/// Drops every `#[cfg(test)]` item that is a `mod … { … }`.
fn remove_test_modules(code: &str) -> String {
    let mut out = String::new();
    let mut rest = code;
    while let Some(at) = rest.find("#[cfg(test)]") {
        let after = &rest[at + "#[cfg(test)]".len()..];
        let trimmed = after.trim_start();
        let is_mod = trimmed.starts_with("mod ") || trimmed.starts_with("pub mod ");
        match (is_mod, trimmed.find('{')) {
            (true, Some(open)) if !trimmed[..open].contains(';') => {
                out += &rest[..at];
                let body = &trimmed[open..];
                let mut depth = 0;
                let mut end = body.len();
                for (j, ch) in body.char_indices() {
                    match ch {
                        '{' => depth += 1,
                        '}' => {
                            depth -= 1;
                            if depth == 0 {
                                end = j + 1;
                                break;
                            }
                        }
                        _ => {}
                    }
                }
                rest = &body[end..];
            }
            _ => {
                out += &rest[..at + "#[cfg(test)]".len()];
                rest = after;
            }
        }
    }
    out + rest
}

/// Every path of two or more segments in `code`, with the inline modules (`mod name { … }`) it
/// sits in; `use` trees expanded (`use a::{b, c::d}` → `a::b`, `a::c::d`). `$crate` is `crate`.
fn paths_in(code: &str) -> Vec<(Vec<String>, Vec<String>)> {
    let code = code.replace("$crate", "crate");
    let chars: Vec<char> = code.chars().collect();
    let mut found = Vec::new();
    let mut inline: Vec<(String, usize)> = Vec::new(); // (name, depth inside it)
    let mut depth = 0usize;
    let mut i = 0;
    let ident_char = |c: char| c.is_alphanumeric() || c == '_';
    while i < chars.len() {
        let c = chars[i];
        if c == '{' {
            depth += 1;
            i += 1;
            continue;
        }
        if c == '}' {
            depth = depth.saturating_sub(1);
            if inline.last().is_some_and(|(_, d)| *d > depth) {
                inline.pop();
            }
            i += 1;
            continue;
        }
        if !ident_char(c) || (i > 0 && (ident_char(chars[i - 1]) || chars[i - 1] == ':')) {
            i += 1;
            continue;
        }
        let word_end = (i..chars.len()).find(|&j| !ident_char(chars[j])).unwrap_or(chars.len());
        let word: String = chars[i..word_end].iter().collect();
        if word == "mod" {
            // `mod name {` opens an inline module.
            let rest: String = chars[word_end..chars.len().min(word_end + 80)].iter().collect();
            let name: String = rest.trim_start().chars().take_while(|&c| ident_char(c)).collect();
            let after = rest.trim_start()[name.len()..].trim_start();
            if after.starts_with('{') {
                inline.push((name, depth + 1));
            }
            i = word_end;
            continue;
        }
        if word == "use" {
            let end = (word_end..chars.len()).find(|&j| chars[j] == ';').unwrap_or(chars.len());
            let text: String = chars[word_end..end].iter().collect();
            // `x as y` → `x`, then the tree without spaces.
            let mut words = text.split_whitespace().peekable();
            let mut tree = String::new();
            while let Some(w) = words.next() {
                if w == "as" {
                    words.next();
                } else {
                    tree += w;
                }
            }
            let module: Vec<String> = inline.iter().map(|(n, _)| n.clone()).collect();
            for path in expand(&tree) {
                if path.len() >= 2 || path.first().is_some_and(|s| s != "self" && s != "super" && s != "crate") {
                    found.push((module.clone(), path));
                }
            }
            i = end;
            continue;
        }
        // A path: word(::word)+
        let mut segments = vec![word];
        let mut j = word_end;
        while j + 2 < chars.len() && chars[j] == ':' && chars[j + 1] == ':' && ident_char(chars[j + 2]) {
            let end = (j + 2..chars.len()).find(|&k| !ident_char(chars[k])).unwrap_or(chars.len());
            segments.push(chars[j + 2..end].iter().collect());
            j = end;
        }
        if segments.len() >= 2 {
            found.push((inline.iter().map(|(n, _)| n.clone()).collect(), segments));
        }
        i = j;
    }
    found
}

/// `a::{b,c::{d,e}}` → `[a,b]`, `[a,c,d]`, `[a,c,e]`; a glob ends the path.
fn expand(tree: &str) -> Vec<Vec<String>> {
    fn split_top(list: &str) -> Vec<&str> {
        let (mut parts, mut depth, mut start) = (Vec::new(), 0, 0);
        for (i, c) in list.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    parts.push(&list[start..i]);
                    start = i + 1;
                }
                _ => {}
            }
        }
        parts.push(&list[start..]);
        parts.into_iter().filter(|p| !p.is_empty()).collect()
    }
    let tree = tree.trim_start_matches("::");
    match tree.find('{') {
        None => vec![tree.split("::").filter(|s| !s.is_empty() && *s != "*").map(String::from).collect()],
        Some(open) => {
            let prefix: Vec<String> = tree[..open].split("::").filter(|s| !s.is_empty()).map(String::from).collect();
            let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
            let mut out = Vec::new();
            for part in split_top(inner) {
                for tail in expand(part) {
                    let tail: Vec<String> = tail.into_iter().filter(|s| s != "self").collect();
                    out.push([prefix.clone(), tail].concat());
                }
            }
            out
        }
    }
}
