//! Native function names from real ELF files: a library GCC builds here (its own `.symtab`; a
//! stripped copy with a `.gnu_debuglink` debug file, matched by build-id or by CRC; a stale debug
//! file refused), and the system's libc with Debian's `libc6-dbg` (the build-id path).

use sonde_symbols::{NativeOrigin, NativeSymbols};
use std::path::{Path, PathBuf};
use std::process::Command;

const SOURCE: &str = r#"
static __attribute__((noinline)) long hidden_work(long n) { long s = 0; for (long i = 0; i < n; i++) s += i * i; return s; }
long exported_entry(long n) { return hidden_work(n) + 1; }
"#;

fn run(program: &str, args: &[&str]) {
    let status = Command::new(program).args(args).status().unwrap_or_else(|e| panic!("{program}: {e}"));
    assert!(status.success(), "{program} {args:?}: {status}");
}

/// Builds `lib<name>.so` from `source` in `dir` with extra linker/compiler `flags`.
fn build(dir: &Path, name: &str, source: &str, flags: &[&str]) -> PathBuf {
    let c = dir.join(format!("{name}.c"));
    std::fs::write(&c, source).unwrap();
    let lib = dir.join(format!("lib{name}.so"));
    let mut args = vec!["-O1", "-g", "-shared", "-fPIC", "-o", lib.to_str().unwrap(), c.to_str().unwrap()];
    args.extend_from_slice(flags);
    run("gcc", &args);
    lib
}

/// The address `nm` gives for `symbol` in `file`.
fn address_of(file: &Path, symbol: &str) -> u64 {
    let out = Command::new("nm").arg(file).output().expect("nm");
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.split_whitespace().nth(2) == Some(symbol))
        .unwrap_or_else(|| panic!("nm shows no {symbol} in {}", file.display()));
    u64::from_str_radix(line.split_whitespace().next().unwrap(), 16).unwrap()
}

/// Moves the symbols of `lib` into `debug` and strips `lib`, linking it to `debug` by name.
fn split_debug(lib: &Path, debug: &Path) {
    let (lib, debug) = (lib.to_str().unwrap(), debug.to_str().unwrap());
    run("objcopy", &["--only-keep-debug", lib, debug]);
    run("strip", &["--strip-all", lib]);
    run("objcopy", &[&format!("--add-gnu-debuglink={debug}"), lib]);
}

#[test]
fn a_library_s_own_symtab_names_its_static_functions() {
    let dir = tempfile::tempdir().unwrap();
    let lib = build(dir.path(), "hot", SOURCE, &[]);
    let at = address_of(&lib, "hidden_work");
    let symbols = NativeSymbols::open_with(&lib, dir.path()).unwrap();
    assert_eq!(symbols.origin(), &NativeOrigin::Symtab);
    assert_eq!(symbols.function(at + 3), Some((at, "hidden_work")));
    assert!(symbols.build_id().is_some(), "GCC links a build-id by default");
}

#[test]
fn a_stripped_library_is_named_from_its_debuglink_file_matched_by_build_id_or_crc() {
    for flags in [&[][..], &["-Wl,--build-id=none"][..]] {
        let dir = tempfile::tempdir().unwrap();
        let lib = build(dir.path(), "hot", SOURCE, flags);
        let at = address_of(&lib, "hidden_work");
        let debug = dir.path().join("libhot.so.debug");
        split_debug(&lib, &debug);

        // The stripped library alone names only what it exports.
        let root = dir.path().join("no-debug-root");
        std::fs::rename(&debug, dir.path().join("elsewhere")).unwrap();
        let stripped = NativeSymbols::open_with(&lib, &root).unwrap();
        assert_eq!(stripped.origin(), &NativeOrigin::Dynsym, "{flags:?}");
        assert_ne!(stripped.function(at + 3).map(|f| f.1), Some("hidden_work"));

        std::fs::rename(dir.path().join("elsewhere"), &debug).unwrap();
        let symbols = NativeSymbols::open_with(&lib, &root).unwrap();
        assert_eq!(symbols.origin(), &NativeOrigin::DebugFile(debug.clone()), "{flags:?}");
        assert_eq!(symbols.function(at + 3), Some((at, "hidden_work")), "{flags:?}");
        assert_eq!(symbols.function(address_of(&debug, "exported_entry")).unwrap().1, "exported_entry");
    }
}

#[test]
fn a_debug_file_of_another_build_is_refused() {
    for flags in [&[][..], &["-Wl,--build-id=none"][..]] {
        let dir = tempfile::tempdir().unwrap();
        // The debug file of an older build, under the name the new build's debuglink gives.
        let old = build(dir.path(), "hot", "long exported_entry(long n) { return n; }", flags);
        let debug = dir.path().join("libhot.so.debug");
        split_debug(&old, &debug);
        let stale = std::fs::read(&debug).unwrap();
        let lib = build(dir.path(), "hot", SOURCE, flags);
        split_debug(&lib, &debug);
        std::fs::write(&debug, stale).unwrap();

        let symbols = NativeSymbols::open_with(&lib, &dir.path().join("none")).unwrap();
        assert_eq!(symbols.origin(), &NativeOrigin::Dynsym, "{flags:?}");
    }
}

#[test]
fn libc_is_named_from_debians_debug_file_by_build_id() {
    let libc = Path::new("/lib/x86_64-linux-gnu/libc.so.6");
    let symbols = NativeSymbols::open(libc).unwrap();
    let NativeOrigin::DebugFile(debug) = symbols.origin().clone() else {
        panic!("libc6-dbg is not installed (scripts/setup.sh installs it): {:?}", symbols.origin());
    };
    assert!(debug.starts_with("/usr/lib/debug/.build-id/"), "{}", debug.display());
    // A static function of glibc's qsort: in the debug file only.
    let at = address_of(&debug, "msort_with_tmp.part.0");
    assert_eq!(symbols.function(at + 8), Some((at, "msort_with_tmp.part.0")));
    let exported = NativeSymbols::open_with(libc, Path::new("/nonexistent")).unwrap();
    assert_eq!(exported.origin(), &NativeOrigin::Dynsym);
    assert!(symbols.len() > exported.len() + 1000, "{} vs {}", symbols.len(), exported.len());
}

/// A program built with `-finstrument-functions` imports the compiler's hooks (glibc's empty
/// ones, until a preloaded library comes first); one built without does not.
#[test]
fn instrumented_programs_are_told_by_their_imports() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let source = "int f(int x) { return x + 1; }\nint main(void) { return f(-1); }\n";
    let hooks = ["__cyg_profile_func_enter", "__cyg_profile_func_exit"];
    for (flags, expected) in [(&["-finstrument-functions"][..], true), (&[][..], false)] {
        let name = if expected { "with" } else { "without" };
        let c = dir.path().join(format!("{name}.c"));
        std::fs::write(&c, source).unwrap();
        let exe = dir.path().join(name);
        let mut args = vec!["-O2", "-o", exe.to_str().unwrap(), c.to_str().unwrap()];
        args.extend(flags);
        run("gcc", &args);
        assert_eq!(sonde_symbols::imports_any(&exe, &hooks), expected, "{name}");
    }
    assert!(!sonde_symbols::imports_any(std::path::Path::new("/nonexistent"), &hooks));
    assert!(!sonde_symbols::imports_any(std::path::Path::new("/dev/null"), &hooks));
}

/// Only the parts of a file its tables need are read (the headers, notes, symbol and string
/// tables: a few hundred kilobytes of glibc's 4 MB debug file): the functions are the same as
/// from the whole file held in memory, for a library named from its debug file, one named from
/// its exports, and a program with its own `.symtab`.
#[test]
fn reading_only_the_tables_names_what_the_whole_file_names() {
    let exe = std::env::current_exe().unwrap();
    let runtime = std::env::var("SONDE_DOTNET").ok().and_then(|dotnet| {
        let shared = Path::new(&dotnet).parent()?.join("shared/Microsoft.NETCore.App");
        Some(std::fs::read_dir(shared).ok()?.flatten().next()?.path().join("libcoreclr.so"))
    });
    let libraries = [Path::new("/lib/x86_64-linux-gnu/libc.so.6"), Path::new("/lib64/ld-linux-x86-64.so.2"), &exe];
    for path in libraries.iter().copied().chain(runtime.as_deref().filter(|p| p.exists())) {
        let parts = NativeSymbols::open(path).unwrap();
        let whole = NativeSymbols::from_image(&std::fs::read(path).unwrap(), "whole").unwrap();
        let listed = |s: &NativeSymbols| s.functions().map(|(a, n, name)| (a, n, name.to_string())).collect::<Vec<_>>();
        assert!(!parts.is_empty(), "{}", path.display());
        assert_eq!(listed(&parts), listed(&whole), "{}", path.display());
        assert_eq!(parts.build_id(), whole.build_id(), "{}", path.display());
        assert_eq!(parts.load_bias(0x7f00_0000_0000), whole.load_bias(0x7f00_0000_0000), "{}", path.display());
    }
}
