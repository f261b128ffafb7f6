//! Sampling mode on real .NET 8 programs: accuracy against a program that measures its own work
//! split, the report contract, and that sampling changes neither output nor exit code (64 threads,
//! exceptions, async). Like every integration test, FAILS when the runtime is missing.

mod support;

use support::*;

fn tmp() -> tempfile::TempDir {
    tempfile::Builder::new().prefix("sonde-sampling-").tempdir().expect("cannot create a temp dir")
}

fn check_split(clock: &str) {
    let dir = tmp();
    let file = dir.path().join("split.sonde");
    let out = record_app(&file, &["--clock", clock], "Split", &["3"]);
    assert_eq!(out.code(), 0, "{}", out.describe());
    let measured = measured_split(&out.stdout_str());
    assert_eq!(measured.len(), 3, "Split.exe printed {:?}", out.stdout_str());
    let report = report_json(&file);
    assert_sampling_facts(&report, clock, "coreclr");
    let names: Vec<String> = measured.keys().cloned().collect();
    let sampled = sampled_split(&report, &names);
    for name in &names {
        let (m, s) = (measured[name], sampled[name]);
        assert!(
            (m - s).abs() <= 2.0,
            "{clock} clock: {name}: measured {m:.2}%, sampled {s:.2}% (more than 2 points apart)\nall: measured {measured:?} sampled {sampled:?}"
        );
    }
    // About one sample per millisecond of the program's 3 s of work.
    let in_split: u64 = arr(&report, "methods")
        .iter()
        .filter(|m| names.iter().any(|n| n == str_of(m, "name")))
        .map(|m| u64_of(m, "self_samples"))
        .sum();
    assert!(in_split >= 2000, "{clock} clock: only {in_split} samples in 3 s of work at 1 kHz");
}

#[test]
fn sampled_split_matches_measured_split_cpu_clock() {
    check_split("cpu");
}

#[test]
fn sampled_split_matches_measured_split_wall_clock() {
    check_split("wall");
}

fn check_unchanged(opts: &[&str]) {
    let direct = run_app("Stress", &["64"]);
    assert_eq!(direct.code(), 5, "Stress.exe on its own:\n{}", direct.describe());
    let dir = tmp();
    let file = dir.path().join("stress.sonde");
    let out = record_app(&file, opts, "Stress", &["64"]);
    assert_eq!(out.code(), 5, "exit code changed under sonde {opts:?}:\n{}", out.describe());
    assert_eq!(out.stdout_str(), direct.stdout_str(), "stdout changed under sonde {opts:?}");
    assert_stderr_passes_through(&out.stderr, &direct.stderr);
    let report = report_json(&file);
    check_invariants(&report);
    let names: Vec<&str> = arr(&report, "threads").iter().filter_map(|t| t["name"].as_str()).collect();
    assert!(names.iter().filter(|n| n.starts_with("stress-")).count() >= 1, "no named stress thread in {names:?}");
}

#[test]
fn sampling_changes_neither_output_nor_exit_code() {
    check_unchanged(&[]);
    check_unchanged(&["--clock", "wall", "--rate", "2000"]);
}

#[test]
fn tracing_changes_neither_output_nor_exit_code_with_64_threads() {
    check_unchanged(&["--mode", "tracing"]);
}

#[test]
fn sampling_report_shows_frames_and_contract() {
    let dir = tmp();
    let file = dir.path().join("bench.sonde");
    let out = record_app(&file, &[], "Bench", &["36"]);
    assert_eq!(out.code(), 0, "{}", out.describe());
    let report = report_json(&file);
    assert_sampling_facts(&report, "cpu", "coreclr");
    let fib = arr(&report, "methods").iter().find(|m| str_of(m, "name") == "Acme.Bench.Fib").expect("Fib sampled");
    assert!(u64_of(fib, "self_samples") > 10, "{fib}");
    assert!(u64_of(fib, "self_ns") > 0, "sampled time estimate missing: {fib}");
    // Recursion-aware: Fib's total is at most all samples, though it recurses 36 deep.
    assert!(u64_of(fib, "total_samples") <= u64_of(&report, "samples_taken"));
    let text = report_text(&file);
    assert!(text.stdout_str().contains("samples taken"), "{}", text.stdout_str());
}

#[test]
fn sampling_keeps_data_of_a_crash() {
    let dir = tmp();
    let file = dir.path().join("crash.sonde");
    let out = record_app(&file, &[], "Crash", &[]);
    assert_eq!(out.code(), 134, "{}", out.describe());
    let report = report_json(&file);
    assert_eq!(report["mode"], "sampling");
    assert_eq!(report["incomplete"], true);
    assert_eq!(report["signal"], 6);
}
