//! What the sonde-symbols tests share: the real compilers and assemblies they read, and the
//! markers of `tests/data/Lines.cs`.
//!
//! - Symbols come only from real compilers: `$SONDE_MCS` (Debian's mcs, writes `.mdb`) and the
//!   Roslyn-built `Python.Runtime.pdb` that PyPI's pythonnet 3.0.3 ships in the venv of
//!   `$SONDE_PYTHON`. When one is missing the test FAILS, never skips.
//! - Method tokens are found by name through `sonde-metadata`; IL sizes come from the runtime
//!   itself (`Lines.exe --methods` prints them through reflection, run on `$SONDE_MONO`).
#![allow(dead_code)] // each test binary uses a different subset

use std::path::{Path, PathBuf};
use std::process::Command;

const SETUP_HINT: &str = "run `bash scripts/setup-runtime.sh`, then `source target/sonde-env.sh` before `cargo test`";

/// The value of a required toolchain variable, checked to name an existing file.
fn tool(var: &str) -> PathBuf {
    let value = std::env::var_os(var)
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| panic!("{var} is not set: these tests read symbols real compilers wrote; {SETUP_HINT}"));
    let path = PathBuf::from(value);
    assert!(path.is_file(), "{var}={} does not exist; {SETUP_HINT}", path.display());
    path
}

/// `tests/data/Lines.cs`.
pub fn lines_source() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/Lines.cs")
}

/// Compiles `source` with `mcs -debug` into `dir/Lines.exe` (and `dir/Lines.exe.mdb`).
pub fn compile_with_mcs(source: &Path, dir: &Path) -> PathBuf {
    compile(source, dir, true)
}

/// Compiles `source` with mcs into `dir/Lines.exe`, with symbols or without.
pub fn compile(source: &Path, dir: &Path, debug: bool) -> PathBuf {
    let mcs = tool("SONDE_MCS");
    let exe = dir.join("Lines.exe");
    let mut command = Command::new(&mcs);
    if debug {
        command.arg("-debug");
    }
    let output = command
        .arg(format!("-out:{}", exe.display()))
        .arg(source)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}; {SETUP_HINT}", mcs.display()));
    assert!(
        output.status.success(),
        "mcs failed: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    exe
}

/// A method as the runtime sees it.
#[derive(Debug, Clone)]
pub struct RuntimeMethod {
    pub token: u32,
    pub il_size: u32,
    /// `Namespace.Type+Nested.Method`.
    pub name: String,
}

/// Every method of the compiled `Lines.exe`, as it prints them on Mono with `--methods`.
pub fn runtime_methods(exe: &Path) -> Vec<RuntimeMethod> {
    let mono = tool("SONDE_MONO");
    let output = Command::new(&mono)
        .arg(exe)
        .arg("--methods")
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}; {SETUP_HINT}", mono.display()));
    assert!(output.status.success(), "{} --methods failed: {}", exe.display(), String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout)
        .expect("UTF-8 output")
        .lines()
        .map(|line| {
            let mut fields = line.split(' ');
            let mut next = || fields.next().unwrap_or_else(|| panic!("a short line: {line}"));
            let token = u32::from_str_radix(next().trim_start_matches("0x"), 16).expect("a hex token");
            let il_size = next().parse().expect("an IL size");
            RuntimeMethod { token, il_size, name: next().to_string() }
        })
        .collect()
}

/// The method called `name` (as the runtime spells it) among `methods`.
pub fn method<'a>(methods: &'a [RuntimeMethod], name: &str) -> &'a RuntimeMethod {
    methods.iter().find(|m| m.name == name).unwrap_or_else(|| panic!("no method {name} in {methods:#?}"))
}

/// The 1-based line of `tests/data/Lines.cs` that carries `// @marker`.
pub fn marker(marker: &str) -> u32 {
    let source = std::fs::read_to_string(lines_source()).expect("Lines.cs");
    let tag = format!("// @{marker}");
    let found: Vec<u32> = source
        .lines()
        .enumerate()
        .filter(|(_, line)| line.trim_end().ends_with(&tag))
        .map(|(i, _)| i as u32 + 1)
        .collect();
    assert_eq!(found.len(), 1, "marker {tag} must be on exactly one line of Lines.cs");
    found[0]
}

/// Every MethodDef of the assembly at `path`: token, `Namespace.Type.Method` and signature, as
/// `sonde-metadata` names them.
pub fn metadata_methods(path: &Path) -> Vec<(u32, String, String)> {
    use sonde_metadata::tables::{Unreadable, pe_metadata};
    let file = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let metadata = pe_metadata(&file).expect("metadata");
    let mut methods = Vec::new();
    for row in 1.. {
        let token = 0x0600_0000 | row;
        match metadata.method_name_and_signature(token) {
            Ok((name, signature)) => methods.push((token, name, signature)),
            Err(Unreadable("row out of range")) => break,
            Err(e) => panic!("method {token:#x}: {e:?}"),
        }
    }
    methods
}

/// The Roslyn-built `Python.Runtime.dll` of pythonnet 3.0.3 in the venv of `$SONDE_PYTHON`,
/// with its portable PDB beside it.
pub fn python_runtime() -> PathBuf {
    let python = tool("SONDE_PYTHON");
    let venv = python.parent().and_then(Path::parent).expect("the venv of $SONDE_PYTHON");
    let found = find(venv, "Python.Runtime.pdb")
        .unwrap_or_else(|| panic!("no Python.Runtime.pdb under {} (pythonnet 3.0.3); {SETUP_HINT}", venv.display()));
    let dll = found.with_extension("dll");
    assert!(dll.is_file(), "{} has no Python.Runtime.dll beside it", found.display());
    dll
}

fn find(dir: &Path, name: &str) -> Option<PathBuf> {
    let mut entries: Vec<_> = std::fs::read_dir(dir).ok()?.flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let path = entry.path();
        let kind = entry.file_type().ok()?;
        if kind.is_file() && entry.file_name() == name {
            return Some(path);
        }
        if kind.is_dir()
            && let Some(found) = find(&path, name)
        {
            return Some(found);
        }
    }
    None
}

/// Copies `files` into `dir` (keeping their names).
pub fn copy_into(dir: &Path, files: &[&Path]) {
    for file in files {
        let to = dir.join(file.file_name().expect("a file name"));
        std::fs::copy(file, &to).unwrap_or_else(|e| panic!("copy {} to {}: {e}", file.display(), to.display()));
    }
}
