//! The runtime's events (docs/EVENTS.md): exceptions by type and garbage collections, checked
//! against what tests/apps/Events.cs did and what its runtime counted, in both modes on both
//! runtimes. Like every integration test, FAILS when a runtime is missing.

mod support;

use support::*;

/// `collections C0 C1 C2` from Events.exe's output: `GC.CollectionCount(0..=2)` at its end.
fn collection_counts(stdout: &str) -> [u64; 3] {
    let line = stdout.lines().find_map(|l| l.strip_prefix("collections ")).expect("a collections line");
    let counts: Vec<u64> = line.split(' ').map(|n| n.parse().expect("a count")).collect();
    [counts[0], counts[1], counts[2]]
}

fn exceptions_and_collections_match_the_program(rt: Runtime) {
    // On Mono, catches are counted only with `--catches` (they cost every `finally`).
    let runs: &[(&str, bool)] = match rt {
        Runtime::CoreClr => &[("sampling", true), ("tracing", true)],
        Runtime::Mono => &[("sampling", false), ("tracing", false), ("sampling", true)],
    };
    for &(mode, catches) in runs {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("events.sonde");
        let opts: &[&str] = if rt == Runtime::Mono && catches { &["--catches"] } else { &[] };
        let opts: Vec<&str> = ["--mode", mode].iter().chain(opts).copied().collect();
        let args = record_args(&file, &opts, &rt.app_command("Events", &["200"]));
        let out = Running::spawn(sonde(), &args).wait(DEADLINE);
        let what = format!("{rt:?} {mode}, catches {catches}:\n{}", out.describe());
        assert_eq!(out.code(), 0, "{what}");
        let report = report_json(&file);
        check_invariants(&report);

        // Exceptions: exact, by type; the `when` filter's rejections are not catches.
        let exceptions = arr(&report, "exceptions");
        let counts = |name: &str| {
            let e = exceptions.iter().find(|e| str_of(e, "type") == name);
            e.map(|e| (u64_of(e, "thrown"), e["caught"].as_u64()))
        };
        let caught = |n: u64| catches.then_some(n);
        assert_eq!(counts("System.InvalidOperationException"), Some((200, caught(200))), "{what}\n{exceptions:?}");
        assert_eq!(counts("Acme.Events+ParseError"), Some((200, caught(200))), "{what}\n{exceptions:?}");
        assert_eq!(counts("Acme.Events+ParseError+Deep"), Some((100, caught(100))), "{what}\n{exceptions:?}");
        assert!(exceptions.iter().all(|e| e["caught"].is_null() != catches), "{what}\n{exceptions:?}");

        // Collections: as many as the runtime counted. CoreCLR's GC.CollectionCount(g) counts the
        // collections of generation g or older; Mono's counts its nursery collections (0) and its
        // major ones (1 and 2), and collects once more as it shuts down, after the program's count.
        let gc = &report["gc"];
        let by_gen: Vec<u64> = arr(gc, "count_by_gen").iter().map(|n| n.as_u64().unwrap()).collect();
        let [c0, c1, c2] = collection_counts(&out.stdout_str());
        match rt {
            Runtime::CoreClr => {
                assert_eq!(
                    [by_gen[0] + by_gen[1] + by_gen[2], by_gen[1] + by_gen[2], by_gen[2]],
                    [c0, c1, c2],
                    "{what}"
                );
            }
            Runtime::Mono => {
                assert!((c0..=c0 + 2).contains(&by_gen[0]), "{what}\n{by_gen:?} vs {c0}");
                assert!((c1..=c1 + 2).contains(&by_gen[1]), "{what}\n{by_gen:?} vs {c1}");
                assert_eq!(by_gen[2], 0, "{what}");
            }
        }
        let collections = arr(gc, "collections");
        assert_eq!(collections.len() as u64, by_gen.iter().sum::<u64>(), "{what}: one record per collection");
        if rt == Runtime::CoreClr {
            let induced = collections.iter().filter(|c| str_of(c, "reason") == "induced").count();
            assert!(induced >= 10, "{what}: the program induced 10 collections, {induced} say so");
            assert!(collections.iter().all(|c| u64_of(c, "heap_bytes_after") > 0), "{what}");
        }
        let pauses: u64 = collections.iter().map(|c| u64_of(c, "pause_ns")).sum();
        assert_eq!(pauses, u64_of(gc, "pause_ns_total"), "{what}: each pause belongs to one collection");
        assert!(pauses > 0 && u64_of(gc, "pause_ns_max") <= pauses, "{what}");
        for c in collections {
            assert!(u64_of(c, "end_ns") >= u64_of(c, "start_ns"), "{what}: {c}");
            assert!(u64_of(c, "end_ns") <= u64_of(&report, "wall_ns"), "{what}: {c}");
        }

        // By throwing method: the innermost managed frame at the throw (Mono's runtime may throw
        // one of its own on the way, under Main in tracing mode).
        assert_eq!(u64_of(method_named(&report, "Acme.Events.ThrowDeep"), "exceptions_thrown"), 100, "{what}");
        let main = u64_of(method_named(&report, "Acme.Events.Main"), "exceptions_thrown");
        assert!((400..=402).contains(&main), "{what}: Main threw {main}");

        // JIT and loading: the program's own module and the core library, by file. (On CoreCLR
        // in sampling mode the framework is precompiled: the JIT compiles the program's methods.)
        let jit = &report["jit"];
        assert!(u64_of(jit, "methods_compiled") >= 3 && u64_of(jit, "jit_ns") > 0, "{what}: {jit}");
        let modules = arr(&report, "modules");
        let position = |name: &str| modules.iter().position(|m| str_of(m, "name").eq_ignore_ascii_case(name));
        let corlib = match rt {
            Runtime::CoreClr => "System.Private.CoreLib.dll",
            Runtime::Mono => "mscorlib.dll",
        };
        let (Some(core), Some(own)) = (position(corlib), position("Events.exe")) else { panic!("{what}: {modules:?}") };
        if rt == Runtime::CoreClr {
            assert!(core < own, "{what}: the core library loads first: {modules:?}");
        }
        assert!(str_of(&modules[own], "path").ends_with("/Events.exe"), "{what}: {modules:?}");
        let loaded: Vec<u64> = modules.iter().map(|m| u64_of(m, "loaded_ns")).collect();
        assert!(loaded.windows(2).all(|w| w[0] <= w[1]), "{what}: {loaded:?}");

        // The timeline (Chrome's trace format): every throw an instant on its thread, every
        // collection a span on the GC track, the compilations spans.
        let args: Vec<std::ffi::OsString> =
            vec!["report".into(), file.clone().into(), "--format".into(), "chrome".into()];
        let chrome = run(sonde(), &args);
        assert_eq!(chrome.code(), 0, "{what}\n{}", chrome.describe());
        let trace: serde_json::Value = serde_json::from_str(&chrome.stdout_str()).expect("a JSON trace");
        let trace_events = arr(&trace, "traceEvents");
        let of = |cat: &str, ph: &str| trace_events.iter().filter(|e| e["cat"] == cat && e["ph"] == ph).count();
        let thrown: u64 = exceptions.iter().map(|e| u64_of(e, "thrown")).sum();
        assert_eq!(of("exception", "i") as u64, thrown, "{what}");
        assert_eq!(of("gc", "X"), collections.len(), "{what}");
        assert!(of("jit", "X") > 0, "{what}");
        assert_eq!(trace["metadata"]["timeline_events_dropped"], 0, "{what}");

        let text = report_text(&file);
        let text = &text.stdout_str();
        assert!(text.contains("JIT: "), "{what}\n{text}");
        assert!(text.contains("Garbage collections: "), "{what}\n{text}");
        assert!(text.contains("Exceptions: "), "{what}\n{text}");
        assert!(text.contains("Acme.Events+ParseError+Deep"), "{what}\n{text}");
    }
}

on_both_runtimes!(exceptions_and_collections_match_the_program);

/// An exception that leaves the program is thrown, not caught: Mono reports the catch of the
/// `runtime-invoke` wrapper that called `Main` (to print it unhandled), which is no catch of the
/// program's. Crash.exe dies of one; `after-handled` first catches one of the same type in
/// `Probe`. `--catches` switches catches on; `SONDE_MONO_CATCHES=1` in sonde's environment, the
/// older way, still does.
#[test]
fn mono_counts_no_catch_for_an_unhandled_exception() {
    let rt = Runtime::Mono;
    for (args, opts, env, want) in [
        (&[][..], &["--catches"][..], None, (1, 0)),
        (&["after-handled"][..], &["--catches"][..], None, (2, 1)),
        (&["after-handled"][..], &[][..], Some("1"), (2, 1)),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("crash.sonde");
        let opts: Vec<&str> = ["--mode", "sampling"].iter().chain(opts).copied().collect();
        let record = record_args(&file, &opts, &rt.app_command("Crash", args));
        let env: Vec<(&str, std::ffi::OsString)> = env.map(|v| ("SONDE_MONO_CATCHES", v.into())).into_iter().collect();
        let out = Running::spawn_with_env(sonde(), &record, &env).wait(DEADLINE);
        let what = format!("Crash.exe {args:?}, {opts:?} {env:?}:\n{}", out.describe());
        assert_eq!(out.code(), rt.crash_code(), "{what}");
        let report = report_json(&file);
        let exceptions = arr(&report, "exceptions");
        let crash = exceptions.iter().find(|e| str_of(e, "type") == "Acme.CrashTestException");
        let counts = crash.map(|e| (u64_of(e, "thrown"), e["caught"].as_u64()));
        assert_eq!(counts, Some((want.0, Some(want.1))), "{what}\n{exceptions:?}");
    }
}

/// `sonde record --help` lists `--catches`.
#[test]
fn record_help_lists_catches() {
    let out = run(sonde(), &["record".into(), "--help".into()]);
    assert_eq!(out.code(), 0, "{}", out.describe());
    assert!(out.stdout_str().contains("--catches"), "{}", out.stdout_str());
}

/// The methods' entries of a JSON report by name (the first of each name).
fn method_named<'a>(report: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    arr(report, "methods").iter().find(|m| str_of(m, "name") == name).unwrap_or_else(|| panic!("no method {name}"))
}

/// `field` summed over the nodes at or below a node of method `name` (each node once).
fn sum_under(report: &serde_json::Value, name: &str, field: &str) -> u64 {
    let nodes = arr(report, "nodes");
    let methods = arr(report, "methods");
    let mut inside = vec![false; nodes.len()];
    let mut sum = 0;
    for (i, n) in nodes.iter().enumerate() {
        let own = str_of(&methods[u64_of(n, "method") as usize], "name") == name;
        let parent = n["parent"].as_u64().is_some_and(|p| inside[p as usize]);
        inside[i] = own || parent;
        if inside[i] {
            sum += u64_of(n, field);
        }
    }
    sum
}

fn within(estimate: u64, truth: u64, tolerance: f64) -> bool {
    (estimate as f64 - truth as f64).abs() <= tolerance * truth as f64
}

/// One recording of `Alloc.exe alloc` (allocations sampled every 10 KB where Sonde samples
/// them), and what the checks of it need.
struct AllocRun {
    /// What a failed check says: the runtime, the mode and everything the run printed.
    what: String,
    stdout: String,
    report: serde_json::Value,
    file: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

impl AllocRun {
    fn record(rt: Runtime, mode: &str, opts: &[&str]) -> AllocRun {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("alloc.sonde");
        let opts: Vec<&str> = ["--mode", mode].iter().chain(opts).copied().collect();
        let args = record_args(&file, &opts, &rt.app_command("Alloc", &["alloc"]));
        let env: &[(&str, std::ffi::OsString)] = &[("SONDE_ALLOC_SAMPLE_BYTES", "10240".into())];
        let out = Running::spawn_with_env(sonde(), &args, env).wait(DEADLINE);
        let what = format!("{rt:?} {mode}:\n{}", out.describe());
        assert_eq!(out.code(), 0, "{what}");
        let report = report_json(&file);
        check_invariants(&report);
        AllocRun { what, stdout: out.stdout_str(), report, file, _dir: dir }
    }

    /// The bytes `method` allocated, as the program counted them (its `bytes METHOD B` line).
    fn truth(&self, method: &str) -> u64 {
        let prefix = format!("bytes {method} ");
        let line = self.stdout.lines().find_map(|l| l.strip_prefix(&prefix)).expect("a bytes line");
        line.parse().expect("a byte count")
    }

    /// The report's bytes and objects of `type_name` (`allocations`).
    fn of_type(&self, type_name: &str) -> (u64, u64) {
        let what = &self.what;
        let a = arr(&self.report, "allocations")
            .iter()
            .find(|a| str_of(a, "type") == type_name)
            .unwrap_or_else(|| panic!("{what}: no {type_name}"));
        (u64_of(a, "bytes"), u64_of(a, "count"))
    }
}

/// What Alloc.exe's three methods allocate: (method, type, objects).
const ALLOCATED: [(&str, &str, u64); 3] = [
    ("AllocateBytes", "System.Byte[]", 200_000),
    ("AllocateStrings", "System.String", 25_000),
    ("AllocateSmall", "Acme.Small", 1_000_000),
];

/// Alloc.exe allocates known amounts of three types from three methods: the estimates per type
/// and per method are within 10% of what the runtime says the methods allocated, in both modes.
/// On Mono, Sonde samples allocations itself: every 10 KB here (5,000 samples of the 50 MB of
/// strings, so 10% is seven standard deviations), every 100 KB by default.
fn allocations_match_the_program(rt: Runtime) {
    for mode in ["sampling", "tracing"] {
        let run = AllocRun::record(rt, mode, &["--events", "all"]);
        let (what, report) = (&run.what, &run.report);
        assert_eq!(str_of(report, "allocation_sampling"), "sampled", "{what}");
        // Mono reports every allocation: its totals by type are counts, not estimates.
        assert_eq!(report["allocations_exact"], rt == Runtime::Mono, "{what}");
        for (method, type_name, objects) in ALLOCATED {
            let truth = run.truth(method);
            let (bytes, count) = run.of_type(type_name);
            // The type's total may include a little from elsewhere (the runtime's own start-up).
            assert!(within(bytes, truth, 0.1), "{what}: {type_name} {bytes} bytes, {method} allocated {truth}");
            // The type's count may include the runtime's own start-up objects, and on CoreCLR
            // one start-up tick that crosses on a small string stands for thousands of them: the
            // type's count is a lower bound, the count under the method is the estimate.
            assert!(count as f64 >= 0.9 * objects as f64, "{what}: {type_name} {count} objects of {objects}");
            let name = format!("Acme.Alloc.{method}");
            let counted = sum_under(report, &name, "alloc_count");
            assert!(within(counted, objects, 0.1), "{what}: {counted} objects under {name}, of {objects}");
            let under = u64_of(method_named(report, &name), "total_alloc_bytes");
            assert!(within(under, truth, 0.1), "{what}: {name} allocated {under} bytes of {truth}");
            assert_eq!(under, sum_under(report, &name, "alloc_bytes"), "{what}: {name}");
        }
        let text = report_text(&run.file).stdout_str();
        assert!(text.contains("Allocations: ") && text.contains("Acme.Alloc.AllocateBytes"), "{what}\n{text}");
    }
}

on_both_runtimes!(allocations_match_the_program);

/// Mono reports every allocation to the profiler whether Sonde samples or not, so in the default
/// mode the totals by type count each one exactly (`allocations_exact`), while the figures per
/// method stay estimates from the sampled stacks. Alloc.exe's `AllocateSmall` makes exactly
/// 1,000,000 `Acme.Small`, and nothing else makes one: 1,000,000 objects of 24 bytes — Mono's
/// size for it (`mono_object_get_size`: an object header of two pointers, then two ints) — and
/// its byte arrays and strings are all there, beside the few the runtime allocates itself.
#[test]
fn mono_counts_every_allocation_by_type() {
    let rt = Runtime::Mono;
    for mode in ["sampling", "tracing"] {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("alloc.sonde");
        let args = record_args(&file, &["--mode", mode, "--events", "alloc"], &rt.app_command("Alloc", &["alloc"]));
        let out = Running::spawn(sonde(), &args).wait(DEADLINE);
        let what = format!("Mono {mode}:\n{}", out.describe());
        assert_eq!(out.code(), 0, "{what}");
        let report = report_json(&file);
        check_invariants(&report);
        assert_eq!(str_of(&report, "allocation_sampling"), "sampled", "{what}");
        assert_eq!(report["allocations_exact"], true, "{what}");
        let of_type = |name: &str| {
            let a = arr(&report, "allocations").iter().find(|a| str_of(a, "type") == name);
            a.map(|a| (u64_of(a, "bytes"), u64_of(a, "count"))).unwrap_or_else(|| panic!("{what}: no {name}"))
        };
        let header = 2 * std::mem::size_of::<usize>() as u64;
        assert_eq!(of_type("Acme.Small"), (1_000_000 * (header + 8), 1_000_000), "{what}");
        let stdout = out.stdout_str();
        for (method, type_name, objects) in ALLOCATED {
            let (bytes, count) = of_type(type_name);
            let prefix = format!("bytes {method} ");
            let truth: u64 =
                stdout.lines().find_map(|l| l.strip_prefix(&prefix)).expect("a bytes line").parse().unwrap();
            assert!(count >= objects && within(count, objects, 0.02), "{what}: {type_name}: {count} objects");
            // The sizes are Mono's (`mono_object_get_size`: a string of 1,000 chars is 2,022
            // bytes, which the heap rounds up to 2,024; `GetAllocatedBytesForCurrentThread`
            // counts what the heap hands out).
            assert!(within(bytes, truth, 0.001), "{what}: {type_name} {bytes} bytes, {method} allocated {truth}");
        }
        let text = report_text(&file).stdout_str();
        assert!(text.contains("every one counted (by method: estimated from"), "{what}\n{text}");
    }
}

/// `--alloc-sampling exact` counts every allocation: each type's objects and bytes exactly as
/// the program made them, and in tracing mode each method's too; in sampling mode the stacks are
/// still sampled (estimates within 10%, at five standard deviations).
fn exact_allocations_count_every_object(rt: Runtime) {
    for mode in ["tracing", "sampling"] {
        // The stacks of sampling mode: every 10 KB (2,400 samples of the 24 MB of small objects,
        // so 10% is five standard deviations).
        let run = AllocRun::record(rt, mode, &["--alloc-sampling", "exact"]);
        let (what, report) = (&run.what, &run.report);
        assert_eq!(str_of(report, "allocation_sampling"), "exact", "{what}");
        assert_eq!(report["allocations_exact"], true, "{what}");
        let tracing = mode == "tracing";
        for (method, type_name, objects) in ALLOCATED {
            let truth = run.truth(method);
            let (bytes, count) = run.of_type(type_name);
            // The runtime allocates a few of these itself (start-up strings, buffers).
            assert!(
                count >= objects && within(count, objects, 0.02),
                "{what}: {type_name} {count} objects of {objects}"
            );
            assert!(within(bytes, truth, 0.02), "{what}: {type_name} {bytes} bytes, {method} allocated {truth}");
            let name = format!("Acme.Alloc.{method}");
            let counted = sum_under(report, &name, "alloc_count");
            let under = u64_of(method_named(report, &name), "total_alloc_bytes");
            if tracing {
                // Every object, to its method (GetAllocatedBytesForCurrentThread counts the
                // thread's allocation contexts, which can differ by a part of one).
                assert!(
                    counted >= objects && counted <= objects + 2,
                    "{what}: {counted} objects under {name}, of {objects}"
                );
                assert!(within(under, truth, 0.005), "{what}: {name} allocated {under} bytes of {truth}");
            } else {
                assert!(within(counted, objects, 0.1), "{what}: {counted} objects under {name}, of {objects}");
                assert!(within(under, truth, 0.1), "{what}: {name} allocated {under} bytes of {truth}");
            }
        }
    }
}

on_both_runtimes!(exact_allocations_count_every_object);

/// Exact allocations need the runtime's start-up: an attach is refused, in one line.
#[test]
fn exact_allocations_are_refused_for_an_attach() {
    let args: Vec<std::ffi::OsString> =
        ["record", "--pid", "1", "--alloc-sampling", "exact"].iter().map(Into::into).collect();
    let out = run(sonde(), &args);
    assert_eq!(out.code(), 2, "a usage error: {}", out.describe());
    let stderr = out.stderr_str();
    assert!(stderr.contains("--alloc-sampling exact needs the program started by sonde"), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
}

/// Alloc.exe's worker waits ten times for a lock the main thread holds 50 ms: the wait under
/// its waiting method is within 10% of what it measured itself, in both modes.
fn contention_matches_the_program(rt: Runtime) {
    for mode in ["sampling", "tracing"] {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("contend.sonde");
        let args = record_args(
            &file,
            &["--mode", mode, "--events", "contention"],
            &rt.app_command("Alloc", &["contend", "10", "50"]),
        );
        let out = Running::spawn(sonde(), &args).wait(DEADLINE);
        let what = format!("{rt:?} {mode}:\n{}", out.describe());
        assert_eq!(out.code(), 0, "{what}");
        let stdout = out.stdout_str();
        let waited: u64 =
            stdout.lines().find_map(|l| l.strip_prefix("waited ")).expect("a waited line").parse().unwrap();
        assert!(waited >= 10 * 40_000_000, "{what}: the worker waited {waited} ns only");
        let report = report_json(&file);
        check_invariants(&report);
        let under = sum_under(&report, "Acme.Alloc.WaitForLock", "wait_ns");
        assert!(within(under, waited, 0.1), "{what}: {under} ns under WaitForLock, the worker measured {waited}");
        let text = report_text(&file).stdout_str();
        assert!(text.contains("Lock contention: ") && text.contains("Acme.Alloc.WaitForLock"), "{what}\n{text}");

        assert_eq!(str_of(&report, "allocation_sampling"), "off", "{what}: allocations were not asked for");

        // By default (and switched off), nothing is waited for.
        if mode == "sampling" {
            let args = record_args(&file, &[], &rt.app_command("Alloc", &["contend", "2", "20"]));
            let out = Running::spawn(sonde(), &args).wait(DEADLINE);
            assert_eq!(out.code(), 0, "{}", out.describe());
            let report = report_json(&file);
            assert!(arr(&report, "nodes").iter().all(|n| u64_of(n, "wait_ns") == 0), "{what}: contention was off");
            assert!(arr(&report, "allocations").is_empty(), "{what}: allocations were off");
        }
    }
}

on_both_runtimes!(contention_matches_the_program);

/// With every event kind on, the programs do what they do unprofiled: 100,000 exceptions thrown
/// and caught (Events.exe 40000), 64 threads taking one lock 2,000 times each, allocating
/// inside it (Alloc.exe crowd) — same output, same exit code, in both modes.
fn every_event_kind_leaves_the_program_unchanged(rt: Runtime) {
    let programs: [(&str, &[&str], &str); 2] =
        [("Events", &["40000"], "thrown "), ("Alloc", &["crowd", "64", "2000"], "counted ")];
    for (app, app_args, kept) in programs {
        let command = rt.app_command(app, app_args);
        let alone = run(&command[0], &command[1..]);
        assert_eq!(alone.code(), 0, "{rt:?} {app} unprofiled: {}", alone.describe());
        // Only the lines the program prints of what it did (not the runtime's collection counts).
        let lines = |out: &Output| -> Vec<String> {
            out.stdout_str().lines().filter(|l| l.starts_with(kept)).map(str::to_string).collect()
        };
        assert!(!lines(&alone).is_empty(), "{rt:?} {app}: {}", alone.describe());
        for mode in ["sampling", "tracing"] {
            let dir = tempfile::tempdir().unwrap();
            let file = dir.path().join("all.sonde");
            let args = record_args(&file, &["--mode", mode, "--events", "all"], &command);
            let out = Running::spawn(sonde(), &args).wait(DEADLINE);
            let what = format!("{rt:?} {app} {mode}:\n{}", out.describe());
            assert_eq!(out.code(), alone.code(), "{what}");
            assert_eq!(lines(&out), lines(&alone), "{what}");
            let report = report_json(&file);
            check_invariants(&report);
            assert_eq!(report["incomplete"], false, "{what}");
        }
    }
}

on_both_runtimes!(every_event_kind_leaves_the_program_unchanged);
