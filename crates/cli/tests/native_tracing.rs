//! Native programs built with `-finstrument-functions` (issue 15): `sonde record -- ./program`
//! preloads the agent, whose hooks feed the same call trees as managed tracing (tracing is the
//! default mode for such a program). Real C and C++ sources compiled here by gcc/g++ at -O2
//! (`tests/apps/native/`): exact counts for recursion, function pointers, C++ virtual calls, a C++
//! exception thrown through three instrumented frames, `longjmp` out of three, inlined functions,
//! and four threads.

mod support;

use serde_json::Value;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use support::*;

/// `source` (under tests/apps/native) built by `compiler` at -O2 with the hooks into `out`, with
/// `flags` (`-shared -fPIC` for a library, `-pthread`, `-ldl`).
fn compile(compiler: &str, source: &str, out: &Path, flags: &[&str]) -> PathBuf {
    let built = Command::new(compiler)
        .args(["-O2", "-finstrument-functions", "-o"])
        .arg(out)
        .arg(repo_file(&format!("tests/apps/native/{source}")))
        .args(flags)
        .output()
        .unwrap_or_else(|e| panic!("{compiler} (the C/C++ compiler that comes with gcc): {e}"));
    assert!(built.status.success(), "{compiler}: {}", String::from_utf8_lossy(&built.stderr));
    out.to_path_buf()
}

/// The program `source` built by `compiler` as `dir/name`.
fn build(dir: &Path, compiler: &str, source: &str, name: &str) -> PathBuf {
    compile(compiler, source, &dir.join(name), &["-pthread"])
}

/// Records `exe` with `opts` (no mode: tracing is the default for it); its report.
fn record_native(exe: &Path, opts: &[&str], expect_stdout: &str) -> Value {
    let file = exe.with_extension("sonde");
    let out = record(&file, opts, &[OsString::from(exe)]);
    assert_eq!(out.code(), 0, "{}", out.describe());
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), expect_stdout, "{}", out.describe());
    let report = report_json(&file);
    assert_eq!(report["runtime"]["kind"], "native", "{}", report["runtime"]);
    assert_eq!(report["mode"], "tracing");
    check_invariants(&report);
    report
}

/// Calls of the method whose name ends with `!function`.
fn calls(report: &Value, function: &str) -> u64 {
    let suffix = format!("!{function}");
    let found: Vec<&Value> = arr(report, "methods").iter().filter(|m| str_of(m, "name").ends_with(&suffix)).collect();
    assert_eq!(found.len(), 1, "{function}: {:?}", arr(report, "methods"));
    u64_of(found[0], "calls")
}

/// Each node's method name and its parent's (None at a thread's root), with its calls.
fn edges(report: &Value) -> Vec<(String, Option<String>, u64)> {
    let methods = arr(report, "methods");
    let nodes = arr(report, "nodes");
    let name = |n: &Value| {
        let full = str_of(&methods[u64_of(n, "method") as usize], "name");
        full.rsplit('!').next().unwrap_or(full).to_string()
    };
    nodes
        .iter()
        .map(|n| (name(n), n["parent"].as_u64().map(|p| name(&nodes[p as usize])), u64_of(n, "calls")))
        .collect()
}

fn sum_calls(edges: &[(String, Option<String>, u64)], node: &str, parent: Option<&str>) -> u64 {
    edges.iter().filter(|(n, p, _)| n == node && p.as_deref() == parent).map(|e| e.2).sum()
}

#[test]
fn c_recursion_pointers_longjmp_and_threads_are_counted_exactly() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let exe = build(dir.path(), "gcc", "calls.c", "calls");
    let report = record_native(&exe, &[], "sum 725");
    for (function, expected) in
        [("main", 1), ("fib", 1973), ("twice", 4005), ("thrice", 5), ("jumper", 5), ("deep", 20), ("worker", 4)]
    {
        assert_eq!(calls(&report, function), expected, "{function}");
    }
    let edges = edges(&report);
    // longjmp left deep's frames without exit hooks: every jumper is still main's child, and
    // deep nests at most four deep under each.
    assert_eq!(sum_calls(&edges, "jumper", Some("main")), 5, "{edges:?}");
    assert_eq!(sum_calls(&edges, "deep", Some("jumper")), 5, "{edges:?}");
    assert_eq!(sum_calls(&edges, "deep", Some("deep")), 15, "{edges:?}");
    assert!(!edges.iter().any(|(n, p, _)| n == "jumper" && p.as_deref() == Some("deep")), "{edges:?}");
    // Function pointers: children of main; the workers' calls under each worker, on 4 threads.
    assert_eq!(sum_calls(&edges, "thrice", Some("main")), 5);
    assert_eq!(sum_calls(&edges, "twice", Some("main")), 5);
    assert_eq!(sum_calls(&edges, "twice", Some("worker")), 4000);
    assert_eq!(sum_calls(&edges, "worker", None), 4);
    assert_eq!(sum_calls(&edges, "fib", Some("main")), 1);
    assert_eq!(sum_calls(&edges, "fib", Some("fib")), 1972);
    let threads = arr(&report, "threads");
    assert!(threads.len() >= 5, "main and four workers: {threads:?}");
}

#[test]
fn cpp_virtual_calls_exceptions_and_inlined_functions_are_counted_exactly() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let exe = build(dir.path(), "g++", "shapes.cpp", "shapes");
    let report = record_native(&exe, &[], "total 31 caught 4");
    // Names are shown demangled; the JSON keeps the linker's.
    for (function, expected) in [
        ("_ZNK6Circle4areaEv", 3),
        ("_ZNK6Square4areaEv", 2),
        ("_Z6level1i", 4),
        ("_Z6level2i", 4),
        ("_Z6level3i", 4),
        ("_Z3runi", 4),
    ] {
        assert_eq!(calls(&report, function), expected, "{function}");
    }
    let edges = edges(&report);
    // The exception unwound level3 → level2 → level1 through their exit hooks: run's next
    // call is main's child again, and the three nest once each under it.
    assert_eq!(sum_calls(&edges, "_Z3runi", Some("main")), 4, "{edges:?}");
    assert_eq!(sum_calls(&edges, "_Z6level1i", Some("_Z3runi")), 4, "{edges:?}");
    assert_eq!(sum_calls(&edges, "_Z6level3i", Some("_Z6level2i")), 4, "{edges:?}");
    // `add` is inlined into main at -O2 and still counted there, as a child of main.
    assert_eq!(sum_calls(&edges, "_ZL3addii", Some("main")), 5, "{edges:?}");
    let text =
        sonde_cmd(&["report".into(), exe.with_extension("sonde").into_os_string(), "--native".into(), "show".into()]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("shapes!Circle::area") && text.contains("shapes!level3"), "{text}");
}

/// `Mixed.exe` with its runtimeconfig and the instrumented `libcodec.so` in `dir`.
fn mixed_app(dir: &Path) -> PathBuf {
    let built = built_app("Mixed", Build::Mcs);
    for file in ["Mixed.exe", "Mixed.runtimeconfig.json"] {
        std::fs::copy(built.with_file_name(file), dir.join(file)).expect("copy the app");
    }
    compile("gcc", "codec.c", &dir.join("libcodec.so"), &["-shared", "-fPIC"]);
    dir.join("Mixed.exe")
}

/// Traced, a managed method that calls an instrumented library through P/Invoke has the
/// library's functions as its children, with exact counts, on both runtimes: the preloaded
/// agent's hooks join the runtime's trees.
fn mixed_trees(rt: Runtime) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let exe = mixed_app(dir.path());
    let file = dir.path().join("mixed.sonde");
    let out = record(&file, &["--mode", "tracing", "--native-hooks"], &[rt.host().into(), exe.into_os_string()]);
    assert_eq!(out.code(), 0, "{rt:?}: {}", out.describe());
    assert!(out.stdout_str().contains("done"), "{}", out.describe());
    let report = report_json(&file);
    check_invariants(&report);
    let edges = edges(&report);
    let compress = edges.iter().find(|(n, _, _)| n.ends_with("Acme.Codec.Compress")).map(|e| e.0.clone());
    let compress = compress.unwrap_or_else(|| panic!("{rt:?}: no Compress in {edges:?}"));
    assert_eq!(sum_calls(&edges, &compress, Some("Acme.Codec.Main")), 10, "{rt:?}: {edges:?}");
    assert_eq!(sum_calls(&edges, "compress_block", Some(&compress)), 10, "{rt:?}: {edges:?}");
    assert_eq!(sum_calls(&edges, "huff_encode", Some("compress_block")), 40, "{rt:?}: {edges:?}");
    assert_eq!(sum_calls(&edges, "checksum", Some("compress_block")), 10, "{rt:?}: {edges:?}");
}

#[test]
fn coreclr_mixed_managed_and_native_trees() {
    mixed_trees(Runtime::CoreClr);
}

#[test]
fn mono_mixed_managed_and_native_trees() {
    mixed_trees(Runtime::Mono);
}

/// `--include`/`--exclude` globs match a native function's symbol, its demangled name or its
/// library: left-out functions are not counted, their callees count under the nearest traced
/// caller.
#[test]
fn filters_select_native_functions() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let exe = build(dir.path(), "gcc", "calls.c", "calls");
    let report = record_native(&exe, &["--exclude", "fib", "--exclude", "th*"], "sum 725");
    // (Named, since the filter looks at their names, but never counted.)
    let counted = edges(&report);
    assert!(!counted.iter().any(|(n, _, _)| n == "fib" || n == "thrice"), "{counted:?}");
    assert_eq!(sum_calls(&counted, "twice", Some("main")), 5, "{counted:?}");
    assert_eq!(calls(&report, "twice"), 4005);
    assert_eq!(calls(&report, "deep"), 20);
    let exe = build(dir.path(), "g++", "shapes.cpp", "shapes");
    let report = record_native(&exe, &["--include", "level?"], "total 31 caught 4");
    let edges = edges(&report);
    // Demangled names match (`level1`, not `_Z6level1i`); main and run are left out, so level1
    // is a thread root.
    assert_eq!(sum_calls(&edges, "_Z6level1i", None), 4, "{edges:?}");
    assert_eq!(sum_calls(&edges, "_Z6level2i", Some("_Z6level1i")), 4, "{edges:?}");
    assert_eq!(edges.iter().map(|e| e.0.as_str()).filter(|n| !n.starts_with("_Z6level")).count(), 0, "{edges:?}");
}

/// Side by side with uftrace (Debian's, installed by the setup; the peer on the same hooks): the
/// same calls per instrumented function, C (recursion, pointers, threads) and C++ (virtual calls,
/// exceptions, inlined functions). (Not `longjmp`: uftrace's report drops the functions that
/// never returned.)
#[test]
fn uftrace_counts_the_same_calls() {
    let dir = tempfile::tempdir().expect("a temp dir");
    for (compiler, source, name, stdout) in
        [("gcc", "hot.c", "hot", "calls 3000 sum 29328"), ("g++", "shapes.cpp", "shapes", "total 31 caught 4")]
    {
        let exe = build(dir.path(), compiler, source, name);
        let args: Vec<&str> = if name == "hot" { vec!["1000"] } else { vec![] };
        let file = dir.path().join(format!("{name}.sonde"));
        let mut command = vec![OsString::from(&exe)];
        command.extend(args.iter().map(OsString::from));
        let out = record(&file, &[], &command);
        assert_eq!(out.code(), 0, "{}", out.describe());
        assert_eq!(out.stdout_str().trim(), stdout);
        let report = report_json(&file);
        let data = dir.path().join(format!("{name}.uftrace"));
        let traced = Command::new("uftrace")
            .arg("record")
            .arg("-d")
            .arg(&data)
            .arg(&exe)
            .args(&args)
            .output()
            .unwrap_or_else(|e| panic!("uftrace (Debian's uftrace; scripts/setup.sh installs it): {e}"));
        assert!(traced.status.success(), "uftrace record: {}", String::from_utf8_lossy(&traced.stderr));
        let listed =
            Command::new("uftrace").arg("report").arg("-d").arg(&data).args(["-f", "call"]).output().expect("uftrace");
        let listed = String::from_utf8_lossy(&listed.stdout);
        let theirs: std::collections::HashMap<&str, u64> = listed
            .lines()
            .filter_map(|l| {
                let (calls, function) = l.trim().split_once(char::is_whitespace)?;
                Some((function.trim(), calls.parse().ok()?))
            })
            .collect();
        for m in arr(&report, "methods") {
            let shown = str_of(m, "display_name");
            let Some((_, function)) = shown.split_once('!') else { continue };
            let ours = u64_of(m, "calls");
            assert_eq!(theirs.get(function).copied(), Some(ours), "{name}: {function}: uftrace says\n{listed}");
        }
    }
}

/// A library the program loads with `dlopen` is named and counted like the program's own code
/// (its symbols are read when its first function is called), under the program's caller.
#[test]
fn dlopened_libraries_are_traced_too() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let plugin = compile("gcc", "plugin.c", &dir.path().join("libplugin.so"), &["-shared", "-fPIC"]);
    let exe = compile("gcc", "host.c", &dir.path().join("host"), &["-ldl"]);
    let file = dir.path().join("host.sonde");
    let out = record(&file, &[], &[exe.into_os_string(), plugin.into_os_string()]);
    assert_eq!(out.code(), 0, "{}", out.describe());
    assert_eq!(out.stdout_str().trim(), "plugin 330");
    let report = report_json(&file);
    let names: Vec<&str> = arr(&report, "methods").iter().map(|m| str_of(m, "name")).collect();
    assert!(names.contains(&"[native] libplugin.so!plugin_run"), "{names:?}");
    let edges = edges(&report);
    assert_eq!(sum_calls(&edges, "plugin_run", Some("call_plugin")), 5, "{edges:?}");
    assert_eq!(sum_calls(&edges, "plugin_step", Some("plugin_run")), 15, "{edges:?}");
}
