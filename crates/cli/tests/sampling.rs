//! Sampling mode on real .NET 8 programs: accuracy against a program that measures its own work
//! split, the report contract, and that sampling changes neither output nor exit code (64 threads,
//! exceptions, async). Like every integration test, FAILS when the runtime is missing.

mod support;

use serde_json::Value;
use std::collections::BTreeMap;
use support::*;

fn tmp() -> tempfile::TempDir {
    tempfile::Builder::new().prefix("sonde-sampling-").tempdir().expect("cannot create a temp dir")
}

/// `split <Name> <percent>` lines printed by Split.exe.
fn measured_split(stdout: &str) -> BTreeMap<String, f64> {
    stdout
        .lines()
        .filter_map(|l| l.strip_prefix("split "))
        .map(|l| {
            let (name, pct) = l.rsplit_once(' ').expect("split line");
            (name.to_string(), pct.parse().expect("percent"))
        })
        .collect()
}

/// Each named method's share of the self samples of all the named methods, in percent.
fn sampled_split(report: &Value, names: &[String]) -> BTreeMap<String, f64> {
    let mut samples: BTreeMap<String, u64> = names.iter().map(|n| (n.clone(), 0)).collect();
    for m in arr(report, "methods") {
        if let Some(s) = samples.get_mut(str_of(m, "name")) {
            *s += u64_of(m, "self_samples");
        }
    }
    let total: u64 = samples.values().sum();
    assert!(total > 0, "no samples in {names:?}");
    samples.into_iter().map(|(n, s)| (n, 100.0 * s as f64 / total as f64)).collect()
}

fn assert_sampling_facts(report: &Value, clock: &str) {
    assert_eq!(report["schema"], "sonde.report/1");
    assert_eq!(report["mode"], "sampling");
    assert!(report["timing"].is_null());
    assert_eq!(report["runtime"]["kind"], "coreclr");
    assert_eq!(report["sample_clock"], clock);
    assert!(u64_of(report, "samples_taken") > 0);
    assert!(report["samples_lost"].is_object(), "samples_lost must say why: {}", report["samples_lost"]);
    for m in arr(report, "methods") {
        assert_eq!(u64_of(m, "calls"), 0, "sampling counts no calls: {m}");
        assert!(u64_of(m, "total_samples") >= u64_of(m, "self_samples"));
    }
    check_invariants(report);
}

fn check_split(clock: &str) {
    let dir = tmp();
    let file = dir.path().join("split.sonde");
    let out = record_app(&file, &["--clock", clock], "Split", &["3"]);
    assert_eq!(out.code(), 0, "{}", out.describe());
    let measured = measured_split(&out.stdout_str());
    assert_eq!(measured.len(), 3, "Split.exe printed {:?}", out.stdout_str());
    let report = report_json(&file);
    assert_sampling_facts(&report, clock);
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
    assert_sampling_facts(&report, "cpu");
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
