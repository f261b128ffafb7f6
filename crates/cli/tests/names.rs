//! Reports name compiler-generated code after what the programmer wrote (issue 14): async state
//! machines, iterators and lambdas after their methods, generic instantiations with their type
//! arguments. `tests/apps/Async.cs`, compiled by Roslyn and by mcs (whose generated names
//! differ), on both runtimes. Like every integration test, FAILS when a runtime is missing.

mod support;

use serde_json::Value;
use std::ffi::OsString;
use support::*;

/// Records `Async.exe` built as `build` on `rt` with `opts`, running for `ms` milliseconds; the
/// JSON report and the text report.
fn record_async(rt: Runtime, build: Build, opts: &[&str], ms: &str) -> (Value, String) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let file = dir.path().join("async.sonde");
    let command: Vec<OsString> = vec![rt.host().into(), built_app("Async", build).into(), ms.into()];
    let out = record(&file, opts, &command);
    assert_eq!(out.code(), 0, "{}", out.describe());
    assert!(String::from_utf8_lossy(&out.stdout).contains("done"), "{}", out.describe());
    let text = report_text(&file);
    assert_eq!(text.code(), 0, "{}", text.describe());
    (report_json(&file), String::from_utf8_lossy(&text.stdout).into_owned())
}

/// The report's methods whose display name is `shown`.
fn shown<'a>(report: &'a Value, shown: &str) -> Vec<&'a Value> {
    arr(report, "methods").iter().filter(|m| m["display_name"] == shown).collect()
}

/// What the programmer wrote, as every report shows it; the compiler's name stays in `name`.
const WRITTEN: [&str; 6] = [
    "Acme.Orders.HandleRequestAsync [async]",
    "Acme.Orders.LoadOrderAsync [async]",
    "Acme.Orders.ReadAsync [async]",
    "Acme.Orders.Squares [iterator]",
    "Acme.Orders.Main.<lambda>",
    "Acme.Orders.Parse",
];

/// Traced (every method that ran is in the profile): each generated method shows as the method
/// the programmer wrote, once, in the JSON and the text report, with the compiler's name kept;
/// the two instantiations of `Table<T>.Fill` show their type arguments.
fn traced_names(rt: Runtime, build: Build, row: &str, col: &str) {
    let (report, text) = record_async(rt, build, &["--mode", "tracing"], "300");
    for name in WRITTEN {
        let found = shown(&report, name);
        assert_eq!(found.len(), 1, "{name}: {found:?}");
        let m = found[0];
        assert!(u64_of(m, "calls") > 0, "{m}");
        assert_eq!(m["kind"], "managed", "{m}");
        assert!(text.contains(name), "{name} not in the text report:\n{text}");
    }
    // The compiler's names are kept where a program looks for them.
    let read = shown(&report, "Acme.Orders.ReadAsync [async]")[0];
    let compiler = read["name"].as_str().unwrap();
    assert!(compiler.starts_with("Acme.Orders+<ReadAsync>") && compiler.ends_with(".MoveNext"), "{read}");
    assert_eq!(read["signature"], "() -> void", "{read}");
    // The kickoff method (it runs up to the first await) keeps its own name.
    assert_eq!(shown(&report, "Acme.Orders.ReadAsync").len(), 1);
    // Two instantiations, two names, never the same name twice.
    for name in [format!("Acme.Table<{row}>.Fill"), format!("Acme.Table<{col}>.Fill")] {
        let found = shown(&report, &name);
        assert_eq!(found.len(), 1, "{name}: {:?}", arr(&report, "methods"));
        assert_eq!(found[0]["name"], "Acme.Table`1.Fill", "{}", found[0]);
        assert!(u64_of(found[0], "calls") > 0, "{}", found[0]);
        assert!(text.contains(&name), "{name} not in the text report:\n{text}");
    }
    assert!(!text.contains("d__") && !text.contains("c__async") && !text.contains("b__7"), "{text}");
}

#[test]
fn coreclr_names_roslyn_code_as_written() {
    traced_names(Runtime::CoreClr, Build::RoslynPdb, "Acme.Row", "Acme.Col");
}

#[test]
fn coreclr_names_mcs_code_as_written() {
    traced_names(Runtime::CoreClr, Build::Mcs, "Acme.Row", "Acme.Col");
}

#[test]
fn mono_names_mcs_code_as_written() {
    traced_names(Runtime::Mono, Build::Mcs, "Acme.Row", "Acme.Col");
}

/// Sampled: the async method doing the CPU work is sampled under its written name, with its
/// compiler's name in `name`, and the folded stacks (what flame graphs are made of) use the
/// written names too.
#[test]
fn sampled_async_code_is_named_as_written() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let file = dir.path().join("async.sonde");
    let command: Vec<OsString> =
        vec![Runtime::CoreClr.host().into(), built_app("Async", Build::RoslynPdb).into(), "800".into()];
    let out = record(&file, &["--rate", "1000"], &command);
    assert_eq!(out.code(), 0, "{}", out.describe());
    let report = report_json(&file);
    let read = shown(&report, "Acme.Orders.ReadAsync [async]");
    assert_eq!(read.len(), 1, "{:?}", arr(&report, "methods"));
    // ReadAsync's continuation spends 4 ms in Parse per request, for 800 ms of requests.
    let parse = shown(&report, "Acme.Orders.Parse");
    assert!(u64_of(read[0], "total_samples") >= u64_of(parse[0], "total_samples"), "{read:?} {parse:?}");
    assert!(u64_of(parse[0], "total_samples") > 0, "{parse:?}");
    let folded = sonde_cmd(&["report".into(), file.clone().into(), "--format".into(), "collapsed".into()]);
    assert_eq!(folded.code(), 0, "{}", folded.describe());
    let folded = String::from_utf8_lossy(&folded.stdout);
    assert!(folded.contains(";Acme.Orders.ReadAsync [async];Acme.Orders.Parse"), "{folded}");
    assert!(!folded.contains("<ReadAsync>"), "{folded}");
    // The two instantiations of Table<T>.Fill (200 ms of them) are told apart in sampling too,
    // their argument types named from the modules' files.
    for name in ["Acme.Table<Acme.Row>.Fill", "Acme.Table<Acme.Col>.Fill"] {
        let found = shown(&report, name);
        assert_eq!(found.len(), 1, "{name}: {:?}", arr(&report, "methods"));
        assert!(u64_of(found[0], "self_samples") > 0, "{}", found[0]);
    }
    // Without --async, the continuation's work is under the thread that ran it, not Main.
    let (parse, under_main) = parse_samples(&folded);
    assert!(parse > 0 && under_main == 0, "{parse} samples in Parse, {under_main} under Main:\n{folded}");
}

/// In folded stacks: the samples in `Acme.Orders.Parse`, and those among them whose stack is the
/// whole logical chain `Main → HandleRequestAsync → LoadOrderAsync → ReadAsync → Parse` (in that
/// order, whatever runtime frames lie between).
fn parse_samples(folded: &str) -> (u64, u64) {
    const CHAIN: [&str; 5] = [
        "Acme.Orders.Main",
        "Acme.Orders.HandleRequestAsync [async]",
        "Acme.Orders.LoadOrderAsync [async]",
        "Acme.Orders.ReadAsync [async]",
        "Acme.Orders.Parse",
    ];
    let (mut parse, mut chained) = (0, 0);
    for line in folded.lines() {
        let Some((stack, count)) = line.rsplit_once(' ') else { continue };
        let frames: Vec<&str> = stack.split(';').collect();
        if !frames.contains(&"Acme.Orders.Parse") {
            continue;
        }
        let count: u64 = count.parse().expect("a sample count");
        parse += count;
        let mut next = 0;
        for frame in &frames {
            if next < CHAIN.len() && *frame == CHAIN[next] {
                next += 1;
            }
        }
        if next == CHAIN.len() {
            chained += count;
        }
    }
    (parse, chained)
}

/// `--async` (CoreCLR): the samples of ReadAsync's continuation, which runs on thread-pool
/// threads after `Task.Yield` and `Task.Delay`, are counted under the stack that awaited — one
/// logical stack from Main — in the folded stacks (flame graphs) and the JSON call tree alike.
#[test]
fn async_stacks_are_stitched_across_threads() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let file = dir.path().join("async.sonde");
    let command: Vec<OsString> =
        vec![Runtime::CoreClr.host().into(), built_app("Async", Build::RoslynPdb).into(), "800".into()];
    let out = record(&file, &["--rate", "1000", "--async"], &command);
    assert_eq!(out.code(), 0, "{}", out.describe());
    let folded = sonde_cmd(&["report".into(), file.clone().into(), "--format".into(), "collapsed".into()]);
    assert_eq!(folded.code(), 0, "{}", folded.describe());
    let folded = String::from_utf8_lossy(&folded.stdout);
    let (parse, chained) = parse_samples(&folded);
    // 4 ms of Parse per request, for 800 ms of requests: ~200 samples expected at 1 kHz.
    assert!(parse >= 50, "{parse} samples in Parse:\n{folded}");
    assert!(chained * 10 >= parse * 9, "{chained} of {parse} Parse samples under Main:\n{folded}");
    // The JSON call tree agrees: Parse's time is inside Main's total.
    let report = report_json(&file);
    let main = shown(&report, "Acme.Orders.Main");
    let parse_total = u64_of(shown(&report, "Acme.Orders.Parse")[0], "total_samples");
    assert!(u64_of(main[0], "total_samples") >= parse_total * 9 / 10, "{main:?} vs {parse_total}");
}

/// `--async` is refused where it cannot work, before anything runs.
#[test]
fn async_stacks_need_coreclr_sampling() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let file = dir.path().join("x.sonde");
    let app: OsString = built_app("Async", Build::Mcs).into();
    let tracing = record(&file, &["--async", "--mode", "tracing"], &[Runtime::CoreClr.host().into(), app.clone()]);
    assert_ne!(tracing.code(), 0, "{}", tracing.describe());
    assert!(
        String::from_utf8_lossy(&tracing.stderr).contains("--async goes with --mode sampling"),
        "{}",
        tracing.describe()
    );
    let mono = record(&file, &["--async"], &[Runtime::Mono.host().into(), app]);
    assert_ne!(mono.code(), 0, "{}", mono.describe());
    assert!(String::from_utf8_lossy(&mono.stderr).contains("--async needs CoreCLR"), "{}", mono.describe());
    assert!(!file.exists(), "nothing was recorded");
}
