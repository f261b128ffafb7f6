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
    // On Mono, catches are counted only with SONDE_MONO_CATCHES=1 (they cost every `finally`).
    let runs: &[(&str, bool)] = match rt {
        Runtime::CoreClr => &[("sampling", true), ("tracing", true)],
        Runtime::Mono => &[("sampling", false), ("tracing", false), ("sampling", true)],
    };
    for &(mode, catches) in runs {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("events.sonde");
        let env: &[(&str, std::ffi::OsString)] =
            if rt == Runtime::Mono && catches { &[("SONDE_MONO_CATCHES", "1".into())] } else { &[] };
        let args = record_args(&file, &["--mode", mode], &rt.app_command("Events", &["200"]));
        let out = Running::spawn_with_env(sonde(), &args, env).wait(DEADLINE);
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

        let text = report_text(&file);
        let text = &text.stdout_str();
        assert!(text.contains("Garbage collections: "), "{what}\n{text}");
        assert!(text.contains("Exceptions: "), "{what}\n{text}");
        assert!(text.contains("Acme.Events+ParseError+Deep"), "{what}\n{text}");
    }
}

on_both_runtimes!(exceptions_and_collections_match_the_program);
