//! Sampling mode on Mono (`sonde record -- mono <App>.exe`, sampling being the default mode): the
//! same checks as `sampling.rs` runs on CoreCLR, on the same compiled programs — accuracy against
//! Split.exe's own measurement and against CoreCLR's sampled split, the report contract, output
//! and exit code unchanged with 64 threads, exceptions and async code. Like every integration
//! test, they FAIL (never skip) without `SONDE_MONO`, `SONDE_DOTNET` and `SONDE_MCS` (see
//! `support`).

mod support;

use serde_json::Value;
use std::collections::BTreeMap;
use std::ffi::OsString;
use support::*;

fn tmp() -> tempfile::TempDir {
    tempfile::Builder::new().prefix("sonde-mono-sampling-").tempdir().expect("cannot create a temp dir")
}

/// Records `Split.exe 3` with `clock` (and `runtime`'s command line); checks its exit code and
/// facts; returns the program's measured split and the sampled one.
fn record_split(
    clock: &str,
    kind: &str,
    record: impl Fn(&std::path::Path, &[&str]) -> Output,
) -> (BTreeMap<String, f64>, BTreeMap<String, f64>, Value) {
    let dir = tmp();
    let file = dir.path().join("split.sonde");
    let out = record(&file, &["--clock", clock]);
    assert_eq!(out.code(), 0, "{kind}: {}", out.describe());
    let measured = measured_split(&out.stdout_str());
    assert_eq!(measured.len(), 3, "Split.exe printed {:?}", out.stdout_str());
    let report = report_json(&file);
    assert_sampling_facts(&report, clock, kind);
    let names: Vec<String> = measured.keys().cloned().collect();
    let sampled = sampled_split(&report, &names);
    (measured, sampled, report)
}

fn record_split_on_mono(clock: &str) -> (BTreeMap<String, f64>, BTreeMap<String, f64>, Value) {
    record_split(clock, "mono", |file, opts| record_mono_app(file, opts, "Split", &["3"]))
}

fn check_split(clock: &str) {
    let (measured, sampled, report) = record_split_on_mono(clock);
    for (name, m) in &measured {
        let s = sampled[name];
        assert!(
            (m - s).abs() <= 2.0,
            "mono, {clock} clock: {name}: measured {m:.2}%, sampled {s:.2}% (more than 2 points apart)\nall: measured {measured:?} sampled {sampled:?}"
        );
    }
    // About one sample per millisecond of the program's 3 s of work.
    let in_split: u64 = arr(&report, "methods")
        .iter()
        .filter(|m| measured.contains_key(str_of(m, "name")))
        .map(|m| u64_of(m, "self_samples"))
        .sum();
    assert!(in_split >= 2000, "mono, {clock} clock: only {in_split} samples in 3 s of work at 1 kHz");
    // Mono's sampler signals every thread; stacks without managed code are dropped and counted.
    assert!(report["samples_lost"]["no_managed_frames"].is_u64(), "samples_lost: {}", report["samples_lost"]);
}

#[test]
fn sampled_split_matches_measured_split_cpu_clock() {
    check_split("cpu");
}

#[test]
fn sampled_split_matches_measured_split_wall_clock() {
    check_split("wall");
}

#[test]
fn sampled_split_matches_coreclr() {
    let (_, mono, _) = record_split_on_mono("cpu");
    let (_, coreclr, _) = record_split("cpu", "coreclr", |file, opts| record_app(file, opts, "Split", &["3"]));
    for (name, m) in &mono {
        let c = coreclr[name];
        assert!((m - c).abs() <= 3.0, "{name}: mono {m:.2}%, coreclr {c:.2}%\nmono {mono:?}\ncoreclr {coreclr:?}");
    }
}

/// Stress.exe 64 under sampling on Mono: same stdout, stderr and exit code as without Sonde.
/// Returns the names of the threads that were sampled.
fn check_unchanged(opts: &[&str]) -> Vec<String> {
    let direct = run_mono_app("Stress", &["64"]);
    assert_eq!(direct.code(), 5, "mono Stress.exe on its own:\n{}", direct.describe());
    let dir = tmp();
    let file = dir.path().join("stress.sonde");
    let out = record_mono_app(&file, opts, "Stress", &["64"]);
    assert_eq!(out.code(), 5, "exit code changed under sonde {opts:?}:\n{}", out.describe());
    assert_eq!(out.stdout_str(), direct.stdout_str(), "stdout changed under sonde {opts:?}");
    assert_stderr_passes_through(&out.stderr, &direct.stderr);
    let report = report_json(&file);
    let clock = if opts.contains(&"wall") { "wall" } else { "cpu" };
    assert_sampling_facts(&report, clock, "mono");
    assert_eq!(report["exit_code"], 5);
    assert_eq!(report["incomplete"], false, "a clean exit must give a complete profile");
    arr(&report, "threads").iter().filter_map(|t| t["name"].as_str().map(String::from)).collect()
}

#[test]
fn sampling_changes_neither_output_nor_exit_code() {
    let mut names = check_unchanged(&[]);
    names.extend(check_unchanged(&["--clock", "wall", "--rate", "2000"]));
    // The 64 worker threads live a millisecond or two each: not every one is sampled.
    assert!(names.iter().any(|n| n.starts_with("stress-")), "no named stress thread in {names:?}");
}

#[test]
fn sampling_report_shows_frames_and_contract() {
    let dir = tmp();
    let file = dir.path().join("bench.sonde");
    let out = record_mono_app(&file, &[], "Bench", &["36"]);
    assert_eq!(out.code(), 0, "{}", out.describe());
    let report = report_json(&file);
    assert_sampling_facts(&report, "cpu", "mono");
    let methods = arr(&report, "methods");
    let fib = methods.iter().find(|m| str_of(m, "name") == "Acme.Bench.Fib").expect("Fib sampled");
    assert_eq!(str_of(fib, "signature"), "(int) -> int", "{fib}");
    assert!(u64_of(fib, "self_samples") > 10, "{fib}");
    assert!(u64_of(fib, "self_ns") > 0, "sampled time estimate missing: {fib}");
    // Recursion-aware: Fib's total is at most all samples, though it recurses 36 deep.
    assert!(u64_of(fib, "total_samples") <= u64_of(&report, "samples_taken"));
    // Only sampled methods are listed, as on CoreCLR (not everything Mono compiled).
    assert!(methods.iter().all(|m| u64_of(m, "total_samples") > 0), "a method without samples is listed");
    let text = report_text(&file);
    assert!(text.stdout_str().contains("samples taken"), "{}", text.stdout_str());
    assert!(text.stdout_str().contains("mono"), "{}", text.stdout_str());
}

#[test]
fn unhandled_exception_keeps_the_samples() {
    // Mono prints the exception and exits with status 1, without a runtime shutdown: the agent's
    // exit handler still sends the last samples.
    let direct = run_mono_app("Crash", &[]);
    assert_eq!(direct.code(), 1, "mono Crash.exe on its own should exit with 1:\n{}", direct.describe());
    let dir = tmp();
    let file = dir.path().join("crash.sonde");
    let out = record_mono_app(&file, &["--clock", "wall"], "Crash", &[]);
    assert_eq!(out.code(), 1, "{}", out.describe());
    assert_eq!(out.stdout, direct.stdout, "stdout differs under sonde");
    let report = report_json(&file);
    assert_sampling_facts(&report, "wall", "mono");
    assert_eq!(report["exit_code"], 1);
}

#[test]
fn both_runtimes_sampled_in_one_recording() {
    // A shell starts a Mono program and a CoreCLR one, in the default (sampling) mode: each
    // process gets its own sampled profile.
    let dir = tmp();
    let file = dir.path().join("multi.sonde");
    let script = r#""$0" "$1" 0.5 >/dev/null; "$2" "$3" 0.5 >/dev/null"#;
    let command: Vec<OsString> = vec![
        "sh".into(),
        "-c".into(),
        script.into(),
        mono().into(),
        app("Split").into(),
        dotnet().into(),
        app("Split").into(),
    ];
    let out = record(&file, &[], &command);
    assert_eq!(out.code(), 0, "{}", out.describe());
    let files = sonde_files(dir.path());
    assert_eq!(files.len(), 2, "expected two multi.<pid>.sonde files, found {files:?}\n{}", out.describe());
    let mut kinds: Vec<String> = files
        .iter()
        .map(|f| {
            let report = report_json(f);
            let kind = str_of(&report["runtime"], "kind").to_string();
            assert_sampling_facts(&report, "cpu", &kind);
            let spin = arr(&report, "methods").iter().find(|m| str_of(m, "name") == "Acme.Split.Spin");
            assert!(spin.is_some_and(|m| u64_of(m, "self_samples") > 50), "{kind}: Spin was hardly sampled");
            kind
        })
        .collect();
    kinds.sort();
    assert_eq!(kinds, ["coreclr", "mono"]);
}
