//! Native programs built with `-finstrument-functions` (issue 15): `sonde record -- ./program`
//! preloads the agent, whose hooks feed the same call trees as managed tracing (tracing is the
//! default mode for such a program). Real C and C++ sources compiled here by gcc/g++ at -O2
//! (`tests/apps/native/`): exact counts for recursion, function pointers, C++ virtual calls, a C++
//! exception thrown through three instrumented frames, `longjmp` out of three, inlined functions,
//! and four threads.

mod support;

use serde_json::Value;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use support::*;

/// The program `source` built by `compiler` as `dir/name`.
fn build(dir: &Path, compiler: &str, source: &str, name: &str) -> PathBuf {
    compile_native(compiler, source, &dir.join(name), &["-pthread"])
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
    // The hooks' cost inside each call is measured and subtracted (the final snapshot's
    // measurement, taken while the process exits, once measured nothing and made it 0).
    if report["timing"] == "exact" {
        let inner = report["compensation"]["inner_ns_per_call"].as_f64().unwrap_or(0.0);
        assert!(inner > 0.0, "compensation: {}", report["compensation"]);
    }
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
fn c_recursion_pointers_longjmp_and_threads_are_counted_exactly_gcc() {
    c_recursion_pointers_longjmp_and_threads("gcc");
}

#[test]
fn c_recursion_pointers_longjmp_and_threads_are_counted_exactly_clang() {
    c_recursion_pointers_longjmp_and_threads("clang");
}

fn c_recursion_pointers_longjmp_and_threads(compiler: &str) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let exe = build(dir.path(), compiler, "calls.c", "calls");
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

    // Function coverage: every instrumented function of the program, `unused` never called.
    let coverage: Vec<(String, u64)> =
        arr(&report, "coverage").iter().map(|f| (str_of(f, "method").to_string(), u64_of(f, "calls"))).collect();
    let expected = [
        ("deep", 20),
        ("fib", 1973),
        ("jumper", 5),
        ("main", 1),
        ("thrice", 5),
        ("twice", 4005),
        ("unused", 0),
        ("worker", 4),
    ];
    assert_eq!(coverage, expected.map(|(f, c)| (f.to_string(), c)));
    let text = report_text(&exe.with_extension("sonde"));
    let text = text.stdout_str();
    assert!(text.contains("87.5%  7 of 8") && text.contains("    calls!unused\n"), "{text}");
}

/// A function called after a `longjmp` hangs under the frame the jump returned to, not under the
/// one it abandoned (issue 37, item 2): `lj_mid` and `after_longjmp` are both called from
/// `lj_outer`'s frame, at the same frame position, as an inlined callee's hooks are (`bump` in
/// `after_longjmp` at -O1 and above); `lj_mid` three times from one call instruction.
#[test]
fn a_call_after_longjmp_is_a_sibling_of_the_abandoned_frame_gcc() {
    for level in ["-O0", "-O1", "-O2"] {
        call_after_longjmp("gcc", level);
    }
}

#[test]
fn a_call_after_longjmp_is_a_sibling_of_the_abandoned_frame_clang() {
    for level in ["-O0", "-O1", "-O2"] {
        call_after_longjmp("clang", level);
    }
}

fn call_after_longjmp(compiler: &str, level: &str) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let exe = compile_native(compiler, "longjmp.c", &dir.path().join("longjmp"), &[level]);
    let report = record_native(&exe, &[], "sink 8");
    let edges = edges(&report);
    let at = format!("{compiler} {level}: {edges:?}");
    for (function, expected) in [("lj_outer", 1), ("lj_mid", 3), ("lj_deep", 3), ("after_longjmp", 1), ("bump", 1)] {
        assert_eq!(calls(&report, function), expected, "{function}, {at}");
    }
    assert_eq!(sum_calls(&edges, "lj_outer", Some("main")), 1, "{at}");
    assert_eq!(sum_calls(&edges, "lj_mid", Some("lj_outer")), 3, "{at}");
    assert_eq!(sum_calls(&edges, "lj_deep", Some("lj_mid")), 3, "{at}");
    assert_eq!(sum_calls(&edges, "after_longjmp", Some("lj_outer")), 1, "{at}");
    assert_eq!(sum_calls(&edges, "bump", Some("after_longjmp")), 1, "{at}");
}

#[test]
fn cpp_virtual_calls_exceptions_and_inlined_functions_are_counted_exactly_gcc() {
    cpp_virtual_calls_exceptions_and_inlined_functions("g++");
}

#[test]
fn cpp_virtual_calls_exceptions_and_inlined_functions_are_counted_exactly_clang() {
    cpp_virtual_calls_exceptions_and_inlined_functions("clang++");
}

fn cpp_virtual_calls_exceptions_and_inlined_functions(compiler: &str) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let exe = build(dir.path(), compiler, "shapes.cpp", "shapes");
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
    // Coverage names C++ functions as reports do. The deleting destructors (D0, emitted for the
    // vtables) never ran: no object was destroyed through `delete`.
    let coverage = arr(&report, "coverage");
    let shown: Vec<&str> = coverage.iter().map(|f| str_of(f, "display_name")).collect();
    assert!(shown.contains(&"shapes!Circle::area") && shown.contains(&"shapes!level3"), "{shown:?}");
    let never: Vec<&str> = coverage.iter().filter(|f| u64_of(f, "calls") == 0).map(|f| str_of(f, "method")).collect();
    assert_eq!(never, ["_ZN5ShapeD0Ev", "_ZN6CircleD0Ev", "_ZN6SquareD0Ev"], "{coverage:?}");
}

/// `Mixed.exe` with its runtimeconfig and the instrumented `libcodec.so` in `dir`.
fn mixed_app(dir: &Path) -> PathBuf {
    let built = built_app("Mixed", Build::Mcs);
    for file in ["Mixed.exe", "Mixed.runtimeconfig.json"] {
        std::fs::copy(built.with_file_name(file), dir.join(file)).expect("copy the app");
    }
    compile_native("gcc", "codec.c", &dir.join("libcodec.so"), &["-shared", "-fPIC"]);
    dir.join("Mixed.exe")
}

/// Traced, a managed method that calls an instrumented library through P/Invoke has the
/// library's functions as its children, with exact counts, on both runtimes: the preloaded
/// agent's hooks join the runtime's trees. The call trace holds the native calls, their depth
/// counted from the outermost native one.
fn mixed_trees(rt: Runtime) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let exe = mixed_app(dir.path());
    let file = dir.path().join("mixed.sonde");
    let opts = ["--mode", "tracing", "--native-hooks", "--call-trace"];
    let out = record(&file, &opts, &[rt.host().into(), exe.into_os_string()]);
    assert_eq!(out.code(), 0, "{rt:?}: {}", out.describe());
    assert!(out.stdout_str().contains("done"), "{}", out.describe());
    // Traced through the hooks: nothing to suggest.
    assert!(!out.stderr_str().contains("--native-hooks would trace"), "{rt:?}: {}", out.describe());
    let report = report_json(&file);
    check_invariants(&report);
    let edges = edges(&report);
    let compress = edges.iter().find(|(n, _, _)| n.ends_with("Acme.Codec.Compress")).map(|e| e.0.clone());
    let compress = compress.unwrap_or_else(|| panic!("{rt:?}: no Compress in {edges:?}"));
    assert_eq!(sum_calls(&edges, &compress, Some("Acme.Codec.Main")), 10, "{rt:?}: {edges:?}");
    assert_eq!(sum_calls(&edges, "compress_block", Some(&compress)), 10, "{rt:?}: {edges:?}");
    assert_eq!(sum_calls(&edges, "huff_encode", Some("compress_block")), 40, "{rt:?}: {edges:?}");
    assert_eq!(sum_calls(&edges, "checksum", Some("compress_block")), 10, "{rt:?}: {edges:?}");
    // Function coverage of the instrumented library: all three ran.
    let coverage: Vec<(&str, &str, u64)> = arr(&report, "coverage")
        .iter()
        .map(|f| (str_of(f, "assembly"), str_of(f, "method"), u64_of(f, "calls")))
        .collect();
    let library =
        [("libcodec.so", "checksum", 10), ("libcodec.so", "compress_block", 10), ("libcodec.so", "huff_encode", 40)];
    assert_eq!(coverage, library, "{rt:?}");
    let traced: Vec<(String, u64)> =
        traced_calls(&report).into_values().flatten().map(|c| (c.0, c.1)).filter(|c| !c.0.contains('.')).collect();
    let count = |name: &str, depth: u64| traced.iter().filter(|c| c.0 == name && c.1 == depth).count();
    assert_eq!(
        (count("compress_block", 1), count("huff_encode", 2), count("checksum", 2), traced.len()),
        (10, 40, 10, 60),
        "{rt:?}: {traced:?}"
    );
}

/// Traced without `--native-hooks`, the instrumented library's hooks run glibc's empty functions:
/// its calls are not in the tree, and the summary names the library and what would trace it.
fn unhooked_library_is_named(rt: Runtime) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let exe = mixed_app(dir.path());
    let file = dir.path().join("unhooked.sonde");
    let out = record(&file, &["--mode", "tracing"], &[rt.host().into(), exe.into_os_string()]);
    assert_eq!(out.code(), 0, "{rt:?}: {}", out.describe());
    assert!(out.stdout_str().contains("done"), "{}", out.describe());
    let stderr = out.stderr_str();
    let said: Vec<&str> = stderr.lines().filter(|l| l.contains("-finstrument-functions")).collect();
    assert_eq!(said.len(), 1, "{rt:?}: {}", out.describe());
    assert!(
        said[0].ends_with(
            ": libcodec.so was built with -finstrument-functions: --native-hooks would trace its functions under their managed callers (docs/NATIVE.md)"
        ),
        "{rt:?}: {}",
        out.describe()
    );
    let report = report_json(&file);
    assert!(!edges(&report).iter().any(|(n, _, _)| n == "compress_block"), "{rt:?}: traced without the hooks?");
    // A program without such a library: not a word.
    let plain = dir.path().join("plain.sonde");
    let out = record(&plain, &["--mode", "tracing"], &rt.app_command("Calls", &[]));
    assert_eq!(out.code(), 0, "{rt:?}: {}", out.describe());
    assert!(!out.stderr_str().contains("-finstrument-functions"), "{rt:?}: {}", out.describe());
}

#[test]
fn coreclr_unhooked_library_is_named() {
    unhooked_library_is_named(Runtime::CoreClr);
}

#[test]
fn mono_unhooked_library_is_named() {
    unhooked_library_is_named(Runtime::Mono);
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
    let plugin = compile_native("gcc", "plugin.c", &dir.path().join("libplugin.so"), &["-shared", "-fPIC"]);
    let exe = compile_native("gcc", "host.c", &dir.path().join("host"), &["-ldl"]);
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

/// The calls of each thread's call trace, by OS thread id: `(method name, depth, start, end,
/// entered before the trace, still running)`, in the order they started.
type TracedCalls = BTreeMap<u64, Vec<(String, u64, u64, u64, bool, bool)>>;

fn traced_calls(report: &Value) -> TracedCalls {
    let methods = arr(report, "methods");
    arr(&report["call_trace"], "threads")
        .iter()
        .map(|t| {
            let calls = arr(t, "calls")
                .iter()
                .map(|c| {
                    let name = str_of(&methods[u64_of(c, "method") as usize], "name");
                    let name = name.rsplit_once('!').map_or(name, |(_, f)| f).to_string();
                    let flag = |key: &str| c[key].as_bool().unwrap_or_else(|| panic!("{key}: {c}"));
                    let (start, end) = (u64_of(c, "start_ns"), u64_of(c, "end_ns"));
                    (name, u64_of(c, "depth"), start, end, flag("entered_before_trace"), flag("still_running"))
                })
                .collect();
            (u64_of(t, "os_tid"), calls)
        })
        .collect()
}

/// Each thread's calls in the call tree, by OS thread id.
fn tree_calls_by_thread(report: &Value) -> BTreeMap<u64, u64> {
    let threads = arr(report, "threads");
    let mut calls = BTreeMap::new();
    for n in arr(report, "nodes") {
        let tid = u64_of(&threads[u64_of(n, "thread") as usize], "os_tid");
        *calls.entry(tid).or_default() += u64_of(n, "calls");
    }
    calls
}

/// Calls nest: each lies within the enclosing call (by depth) listed before it, in [0, wall].
fn assert_nested(calls: &[(String, u64, u64, u64, bool, bool)], wall_ns: u64) {
    let mut stack: Vec<&(String, u64, u64, u64, bool, bool)> = Vec::new();
    for call in calls {
        let (_, depth, start, end, _, _) = call;
        assert!(start <= end && *end <= wall_ns, "{call:?} outside the run of {wall_ns} ns");
        while stack.last().is_some_and(|p| p.1 >= *depth) {
            stack.pop();
        }
        match stack.last() {
            Some(parent) => {
                assert_eq!(parent.1 + 1, *depth, "{call:?} under {parent:?}");
                assert!(parent.2 <= *start && end <= &parent.3, "{call:?} not within {parent:?}");
            }
            None => assert!(*depth == 1 || call.4, "{call:?} has no caller in the trace"),
        }
        stack.push(call);
    }
}

#[test]
fn call_trace_keeps_each_threads_latest_calls_in_order() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let exe = build(dir.path(), "gcc", "calls.c", "calls");

    // Room for every event (65,536 per thread): the trace holds every call of the tree.
    let report = record_native(&exe, &["--call-trace"], "sum 725");
    let wall_ns = u64_of(&report, "wall_ns");
    assert_eq!(u64_of(&report["call_trace"], "events_per_thread"), 65_536);
    let traced = traced_calls(&report);
    let tree = tree_calls_by_thread(&report);
    assert_eq!(traced.keys().collect::<Vec<_>>(), tree.keys().collect::<Vec<_>>(), "the traced threads");
    for (tid, calls) in &traced {
        assert_eq!(calls.len() as u64, tree[tid], "thread {tid}: every call of the tree is in the trace");
        assert!(calls.iter().all(|c| !c.4 && !c.5), "thread {tid}: nothing cut: {calls:?}");
        assert_nested(calls, wall_ns);
    }
    for t in arr(&report["call_trace"], "threads") {
        assert_eq!(u64_of(t, "events_overwritten"), 0);
    }
    // In program order: main, the five pairs through function pointers, fib(15) recursing 15
    // deep, then each jumper with deep four deep (closed where longjmp left them).
    let main_thread = traced.values().find(|c| c[0].0 == "main").expect("main's thread");
    let names: Vec<&str> = main_thread.iter().map(|c| c.0.as_str()).collect();
    assert_eq!(
        names[..12],
        ["main", "twice", "thrice", "twice", "thrice", "twice", "thrice", "twice", "thrice", "twice", "thrice", "fib"]
    );
    assert_eq!(
        main_thread.iter().filter(|c| c.0 == "fib").map(|c| c.1).max(),
        Some(16),
        "fib(15) is 15 calls deeper than main's child"
    );
    let jumps: Vec<(&str, u64)> =
        main_thread.iter().filter(|c| c.0 == "jumper" || c.0 == "deep").map(|c| (c.0.as_str(), c.1)).collect();
    assert_eq!(jumps[..5], [("jumper", 2), ("deep", 3), ("deep", 4), ("deep", 5), ("deep", 6)], "{jumps:?}");
    assert_eq!(jumps.len(), 25);

    // A small ring (50 rounds up to 64): the latest 64 events of each thread; the earlier ones
    // are counted, and the calls they cut are marked.
    let report = record_native(&exe, &["--call-trace=50"], "sum 725");
    assert_eq!(u64_of(&report["call_trace"], "events_per_thread"), 64);
    let traced = traced_calls(&report);
    let tree = tree_calls_by_thread(&report);
    for t in arr(&report["call_trace"], "threads") {
        let tid = u64_of(t, "os_tid");
        let calls = &traced[&tid];
        let events: u64 = calls.iter().map(|c| u64::from(!c.4) + u64::from(!c.5)).sum();
        assert_eq!(events, 64, "thread {tid}: {calls:?}");
        assert_eq!(
            u64_of(t, "events_overwritten") + events,
            2 * tree[&tid],
            "thread {tid}: every call enters and exits"
        );
        assert_nested(calls, u64_of(&report, "wall_ns"));
        // The thread's outermost call was entered long before its last 64 events.
        assert!(calls[0].4 && calls[0].1 == 1, "thread {tid}: {:?}", calls[0]);
    }
    let main_thread = traced.values().find(|c| c[0].0 == "main").expect("main's thread");
    assert!(main_thread.iter().all(|c| !c.5), "every call returned: {main_thread:?}");
    assert!(main_thread.iter().any(|c| c.0 == "deep"), "the last calls are jumper's: {main_thread:?}");

    // The Chrome trace: one complete event per traced call, on its thread's track.
    let file = exe.with_extension("sonde");
    let out = sonde_cmd(&[OsString::from("report"), file.into(), "--format".into(), "chrome".into()]);
    assert_eq!(out.code(), 0, "{}", out.describe());
    let chrome: Value = serde_json::from_slice(&out.stdout).expect("the Chrome trace is JSON");
    let mut per_thread: BTreeMap<u64, usize> = BTreeMap::new();
    for e in arr(&chrome, "traceEvents").iter().filter(|e| e["cat"] == "call") {
        assert_eq!(e["ph"], "X", "{e}");
        *per_thread.entry(u64_of(e, "tid")).or_default() += 1;
    }
    let expected: BTreeMap<u64, usize> = traced.iter().map(|(&tid, c)| (tid, c.len())).collect();
    assert_eq!(per_thread, expected);
    assert_eq!(u64_of(&chrome["metadata"], "call_trace_events_per_thread"), 64);
}

#[test]
fn call_trace_is_refused_where_it_would_record_nothing() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let exe = build(dir.path(), "gcc", "calls.c", "calls");
    let out_file = dir.path().join("refused.sonde");
    let exe = OsString::from(exe);
    for (opts, message) in [
        (&["--call-trace", "--mode", "sampling"][..], "--call-trace goes with --mode tracing"),
        (&["--call-trace", "--timing", "sampled"][..], "--call-trace goes with --timing exact"),
        (&["--call-trace=0"][..], "0 is not in 1..=16777216"),
    ] {
        let out = record(&out_file, opts, std::slice::from_ref(&exe));
        assert_eq!(out.code(), 2, "{opts:?}: {}", out.describe());
        assert!(String::from_utf8_lossy(&out.stderr).contains(message), "{opts:?}: {}", out.describe());
        assert!(!out_file.exists(), "{opts:?}: nothing ran");
    }
    // A .NET program's own calls are traced by the runtime's hooks, which keep no call trace.
    let out = record(&out_file, &["--mode", "tracing", "--call-trace"], &app_command("Calls", &[]));
    assert_eq!(out.code(), 2, "{}", out.describe());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--call-trace records instrumented native code"),
        "{}",
        out.describe()
    );
}
