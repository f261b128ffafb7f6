//! Sampling mode (the default mode) on real programs: accuracy against a program that measures its
//! own work split (and, on Mono, against CoreCLR's sampled split of the same `.exe`), the report
//! contract, and that sampling changes neither output nor exit code (64 threads, exceptions,
//! async). Each scenario is written once, as `fn scenario(rt: Runtime)`, and runs on CoreCLR and
//! on Mono (`scenario::coreclr`, `scenario::mono`); where the runtimes' samplers genuinely differ
//! the scenario says so. Like every integration test, they FAIL (never skip) without
//! `SONDE_DOTNET`, `SONDE_MONO` and `SONDE_MCS` (see `support`).

mod support;

use serde_json::Value;
use std::collections::BTreeMap;
use std::ffi::OsString;
use support::*;

fn tmp() -> tempfile::TempDir {
    tempfile::Builder::new().prefix("sonde-sampling-").tempdir().expect("cannot create a temp dir")
}

on_both_runtimes!(
    sampled_split_matches_measured_split_cpu_clock,
    sampled_split_matches_measured_split_wall_clock,
    sampling_changes_neither_output_nor_exit_code,
    tracing_changes_neither_output_nor_exit_code_with_64_threads,
    sampling_report_shows_frames_and_contract,
    sampling_keeps_data_of_a_crash,
    hot_leaves_sit_under_their_callers,
);

/// Split.exe recordings run alone, with no other test of this binary beside them: two profiled
/// programs and their samplers on the machine's 2 cores preempt each other, and a preempted thread
/// gets its samples in larger lumps (the kernel updates another thread's CPU clock at its ticks and
/// context switches; a starved sampler thread sends late ticks that stand for several intervals),
/// which widens the sampled split's spread for no fault of the profiler's. Split recordings take
/// this lock for writing, every other test here for reading ([`beside_split`]).
static SPLIT_RECORDINGS: std::sync::RwLock<()> = std::sync::RwLock::new(());

/// Held by the tests that do not record Split.exe: see [`SPLIT_RECORDINGS`].
fn beside_split() -> std::sync::RwLockReadGuard<'static, ()> {
    SPLIT_RECORDINGS.read().unwrap_or_else(|e| e.into_inner())
}

/// Who samples CoreCLR's CPU clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sampler {
    /// The kernel's sampler where the kernel allows it (as here); the runtime's own on Mono.
    Default,
    /// Sonde's signal raised by per-thread timers (`SONDE_SAMPLER=signal`).
    Signal,
    /// Sonde's signal sent by its sampler thread (and `SONDE_CPU_TIMERS=0`).
    Thread,
}

/// Records `Split.exe 3` on `rt` with `clock` by `sampler`; checks its exit code and facts, and
/// that the profile names the sampler that ran; returns the program's measured split (for
/// `clock`), the sampled one, and the report.
fn record_split(rt: Runtime, clock: &str, sampler: Sampler) -> (BTreeMap<String, f64>, BTreeMap<String, f64>, Value) {
    let _alone = SPLIT_RECORDINGS.write().unwrap_or_else(|e| e.into_inner());
    let dir = tmp();
    let file = dir.path().join("split.sonde");
    let opts = ["--clock", clock];
    let out = match sampler {
        Sampler::Default => rt.record_app(&file, &opts, "Split", &["3"]),
        Sampler::Signal => record_app_signal_sampler(&file, &opts, "Split", &["3"]),
        Sampler::Thread => record_app_thread_sampler(&file, &opts, "Split", &["3"]),
    };
    assert_eq!(out.code(), 0, "{rt:?}: {}", out.describe());
    let measured = measured_split(&out.stdout_str(), clock);
    assert_eq!(measured.len(), 3, "Split.exe printed {:?}", out.stdout_str());
    let report = report_json(&file);
    assert_sampling_facts(&report, clock, rt.kind());
    let expected = match (rt, clock, sampler) {
        (Runtime::Mono, _, _) => "runtime",
        (_, "cpu", Sampler::Default) => "kernel",
        (_, "cpu", Sampler::Signal) => "signal-timers",
        _ => "signal-thread",
    };
    assert_eq!(report["sampler"], expected, "{rt:?}, {clock} clock, {sampler:?}");
    let names: Vec<String> = measured.keys().cloned().collect();
    let sampled = sampled_split(&report, &names);
    (measured, sampled, report)
}

fn check_split(rt: Runtime, clock: &str, sampler: Sampler) {
    let (measured, sampled, report) = record_split(rt, clock, sampler);
    // About one sample per millisecond of the program's 3 s of work.
    let in_split: u64 = arr(&report, "methods")
        .iter()
        .filter(|m| measured.contains_key(str_of(m, "name")))
        .map(|m| u64_of(m, "self_samples"))
        .sum();
    assert!(in_split >= 2000, "{rt:?}, {clock} clock: only {in_split} samples in 3 s of work at 1 kHz");
    for (name, m) in &measured {
        let s = sampled[name];
        // A share estimated from n samples has a standard error of sqrt(p(1-p)/n) — 0.84 points
        // for 30% of 3,000 — so a fixed 2-point bound failed now and then on a sound sampler
        // (2.4 sigma). Four standard errors, and never under 2 points: a real bias (a missed
        // caller, a lost phase) is still far outside.
        let p = m / 100.0;
        let tolerance = (4.0 * 100.0 * (p * (1.0 - p) / in_split as f64).sqrt()).max(2.0);
        assert!(
            (m - s).abs() <= tolerance,
            "{rt:?}, {clock} clock: {name}: measured {m:.2}%, sampled {s:.2}% (more than {tolerance:.2} points apart: 4 standard errors of {in_split} samples)\nall: measured {measured:?} sampled {sampled:?}"
        );
    }
    // The samplers lose samples for different reasons (docs/SAMPLING.md): Mono's signals every
    // thread, and drops and counts stacks without managed code; Sonde's own signal (CoreCLR) can
    // be blocked too long, or taken over by the program; the kernel may refuse a thread a ring.
    let reasons: &[&str] = match (rt, report["sampler"].as_str()) {
        (Runtime::Mono, _) => &["no_managed_frames"],
        (_, Some("kernel")) => &["no_ring"],
        _ => &["signal_blocked", "signal_taken"],
    };
    for reason in reasons {
        assert!(report["samples_lost"][reason].is_u64(), "samples_lost.{reason}: {}", report["samples_lost"]);
    }
}

fn sampled_split_matches_measured_split_cpu_clock(rt: Runtime) {
    check_split(rt, "cpu", Sampler::Default);
}

/// The CPU clock on CoreCLR where the kernel refuses its rings: Sonde's signal, raised by
/// per-thread timers.
#[test]
fn sampled_split_matches_measured_split_cpu_clock_by_the_signal_sampler() {
    check_split(Runtime::CoreClr, "cpu", Sampler::Signal);
}

/// The CPU clock on CoreCLR where `perf_event_open` is refused: the sampler thread looks at every
/// thread every interval instead of per-thread timers.
#[test]
fn sampled_split_matches_measured_split_cpu_clock_by_the_sampler_thread() {
    check_split(Runtime::CoreClr, "cpu", Sampler::Thread);
}

fn sampled_split_matches_measured_split_wall_clock(rt: Runtime) {
    check_split(rt, "wall", Sampler::Default);
}

/// Stress.exe 64 under sonde with `opts`: the same stdout, stderr and exit code as without it,
/// and a complete profile that names the stress threads. Returns the report.
fn record_stress(rt: Runtime, opts: &[&str]) -> Value {
    let direct = rt.run_app("Stress", &["64"]);
    assert_eq!(direct.code(), 5, "Stress.exe on its own on {rt:?}:\n{}", direct.describe());
    let dir = tmp();
    let file = dir.path().join("stress.sonde");
    let out = rt.record_app(&file, opts, "Stress", &["64"]);
    assert_eq!(out.code(), 5, "exit code changed under sonde {opts:?} on {rt:?}:\n{}", out.describe());
    assert_eq!(out.stdout_str(), direct.stdout_str(), "stdout changed under sonde {opts:?} on {rt:?}");
    assert_stderr_passes_through(&out.stderr, &direct.stderr);
    let report = report_json(&file);
    check_invariants(&report);
    assert_eq!(report["exit_code"], 5);
    assert_eq!(report["incomplete"], false, "a clean exit must give a complete profile");
    // Every thread the runtime reported is listed, sampled or not (the 64 workers live a
    // millisecond or two each: not every one is sampled).
    let names: Vec<&str> = arr(&report, "threads").iter().filter_map(|t| t["name"].as_str()).collect();
    assert!(names.iter().any(|n| n.starts_with("stress-")), "no named stress thread in {names:?}");
    report
}

fn sampling_changes_neither_output_nor_exit_code(rt: Runtime) {
    let _beside = beside_split();
    let report = record_stress(rt, &[]);
    assert_sampling_facts(&report, "cpu", rt.kind());
    let report = record_stress(rt, &["--clock", "wall", "--rate", "2000"]);
    assert_sampling_facts(&report, "wall", rt.kind());
}

fn tracing_changes_neither_output_nor_exit_code_with_64_threads(rt: Runtime) {
    let _beside = beside_split();
    let report = record_stress(rt, &["--mode", "tracing"]);
    assert_eq!(report["mode"], "tracing");
}

fn sampling_report_shows_frames_and_contract(rt: Runtime) {
    let _beside = beside_split();
    let dir = tmp();
    let file = dir.path().join("bench.sonde");
    let out = rt.record_app(&file, &[], "Bench", &["36"]);
    assert_eq!(out.code(), 0, "{}", out.describe());
    let report = report_json(&file);
    assert_sampling_facts(&report, "cpu", rt.kind());
    let methods = arr(&report, "methods");
    let fib = methods.iter().find(|m| str_of(m, "name") == "Acme.Bench.Fib").expect("Fib sampled");
    assert_eq!(str_of(fib, "signature"), "(int) -> int", "{fib}");
    assert!(u64_of(fib, "self_samples") > 10, "{fib}");
    assert!(u64_of(fib, "self_ns") > 0, "sampled time estimate missing: {fib}");
    // Recursion-aware: Fib's total is at most all samples, though it recurses 36 deep.
    assert!(u64_of(fib, "total_samples") <= u64_of(&report, "samples_taken"));
    // Only methods on a recorded stack are listed (on Mono: not everything Mono compiled): a
    // sample's, or a runtime event's (an exception thrown by the runtime itself, on Mono).
    let nodes = arr(&report, "nodes");
    let on_a_stack: std::collections::HashSet<u64> = nodes.iter().map(|n| u64_of(n, "method")).collect();
    for (id, m) in methods.iter().enumerate() {
        assert!(on_a_stack.contains(&(id as u64)), "a method on no stack is listed: {m}");
    }
    let text = report_text(&file);
    assert!(text.stdout_str().contains("samples taken"), "{}", text.stdout_str());
    assert!(text.stdout_str().contains(rt.kind()), "{}", text.stdout_str());
}

/// Crash.exe's exception is unhandled: .NET aborts, Mono exits with 1 without a runtime shutdown
/// (see [`Runtime::assert_crash_end`]); the samples taken before are in the profile.
fn sampling_keeps_data_of_a_crash(rt: Runtime) {
    let _beside = beside_split();
    let direct = rt.run_app("Crash", &[]);
    assert_eq!(direct.code(), rt.crash_code(), "Crash.exe on its own on {rt:?}:\n{}", direct.describe());
    for (opts, clock) in [(&[][..], "cpu"), (&["--clock", "wall"][..], "wall")] {
        let dir = tmp();
        let file = dir.path().join("crash.sonde");
        let out = rt.record_app(&file, opts, "Crash", &[]);
        assert_eq!(out.code(), rt.crash_code(), "{clock} clock:\n{}", out.describe());
        assert_eq!(out.stdout, direct.stdout, "stdout differs under sonde");
        let report = report_json(&file);
        assert_sampling_facts(&report, clock, rt.kind());
        rt.assert_crash_end(&report);
    }
}

#[test]
fn mono_sampled_split_matches_coreclr() {
    let (_, mono, _) = record_split(Runtime::Mono, "cpu", Sampler::Default);
    let (_, coreclr, _) = record_split(Runtime::CoreClr, "cpu", Sampler::Default);
    for (name, m) in &mono {
        let c = coreclr[name];
        assert!((m - c).abs() <= 3.0, "{name}: mono {m:.2}%, coreclr {c:.2}%\nmono {mono:?}\ncoreclr {coreclr:?}");
    }
}

#[test]
fn both_runtimes_sampled_in_one_recording() {
    let _beside = beside_split();
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

/// Hot leaf methods under their real callers (tests/apps/Leaves.cs): Main → Alpha/Beta/Gamma/Delta
/// and Delta → Mix. On CoreCLR a frame-pointer walk alone put a fifth of them straight under the
/// runtime, without Main: the loops run in on-stack-replacement versions (whose `[rbp + 8]` is a
/// slot of the original frame), `Mix` is frameless, and samples land in prologues and epilogues
/// (docs/SAMPLING.md, "Frames the chain does not describe"). OSR versions' shapes are learnt when
/// the JIT finishes them, before they run; Mono has no such frames. At most 5% stay misplaced
/// (samples in a prologue the decoder does not know, on either runtime).
fn hot_leaves_sit_under_their_callers(rt: Runtime) {
    let _beside = beside_split();
    let dir = tmp();
    let file = dir.path().join("leaves.sonde");
    let log = dir.path().join("agent.log");
    let out = rt.record_app(&file, &["--clock", "cpu", "--agent-log", log.to_str().unwrap()], "Leaves", &["2000"]);
    assert_eq!(out.code(), 0, "{rt:?}: {}", out.describe());
    // Sampled methods are named from their module's file; on CoreCLR none through the runtime's
    // metadata interface (which slows it down: docs/SAMPLING.md); on Mono only the methods
    // without a metadata row (wrappers) by Mono.
    let log = std::fs::read_to_string(&log).unwrap_or_default();
    let names = log.lines().find(|l| l.contains("names: ")).unwrap_or_else(|| panic!("{rt:?}: no names line in {log}"));
    assert!(!names.contains("names: 0 "), "{rt:?}: {names}");
    if rt == Runtime::CoreClr {
        assert!(names.ends_with(" from module files, 0 from the runtime"), "{rt:?}: {names}");
    }
    let report = report_json(&file);
    check_invariants(&report);
    let methods = arr(&report, "methods");
    let nodes = arr(&report, "nodes");
    let name = |n: &Value| str_of(&methods[u64_of(n, "method") as usize], "name").to_string();
    let parent = |n: &Value| n["parent"].as_u64().map(|p| &nodes[p as usize]);
    let (mut placed, mut misplaced) = (0u64, 0u64);
    let mut seen = BTreeMap::<String, u64>::new();
    for node in nodes {
        let leaf = name(node);
        let Some(short) = leaf.strip_prefix("Leaves.").filter(|m| *m != "Main") else { continue };
        let samples = u64_of(node, "self_samples");
        *seen.entry(short.to_string()).or_default() += samples;
        let want = if short == "Mix" { "Leaves.Delta" } else { "Leaves.Main" };
        let mut caller = parent(node).map(name);
        if short == "Mix" && caller.as_deref() == Some(want) {
            caller = parent(node).and_then(parent).map(name).filter(|c| c == "Leaves.Main").map(|_| want.into());
        }
        if caller.as_deref() == Some(want) { placed += samples } else { misplaced += samples }
    }
    assert_eq!(seen.len(), 5, "{rt:?}: every leaf is sampled: {seen:?}");
    assert!(seen.values().all(|&s| s >= 20), "{rt:?}: {seen:?}");
    assert!(
        misplaced * 20 <= placed + misplaced,
        "{rt:?}: {misplaced} of {} leaf samples are not under their callers ({seen:?})",
        placed + misplaced
    );
}

/// On-stack replacement keeps the method's caller (tests/apps/Alloc.cs: Main → Measure →
/// AllocateX, whose loops move to OSR versions at once): the samples in the three methods, and
/// the allocations sampled from their own threads' stacks, are under Measure — not `Main →
/// AllocateX`, which a walk by the OSR frame's chain gives (it skips the original frame and its
/// return address into Measure). Before OSR shapes were learnt at JIT time, a fifth were misplaced
/// at 5 kHz.
#[test]
fn osr_methods_keep_their_callers() {
    let dir = tmp();
    let file = dir.path().join("alloc.sonde");
    let out = record_app(&file, &["--rate", "5000", "--events", "alloc"], "Alloc", &["alloc", "3"]);
    assert_eq!(out.code(), 0, "{}", out.describe());
    let report = report_json(&file);
    check_invariants(&report);
    let methods = arr(&report, "methods");
    let nodes = arr(&report, "nodes");
    let name = |n: &Value| str_of(&methods[u64_of(n, "method") as usize], "name").to_string();
    let (mut samples, mut bytes) = ([0u64; 2], [0u64; 2]);
    for node in nodes {
        if !name(node).starts_with("Acme.Alloc.Allocate") {
            continue;
        }
        // Measure anywhere above (the allocations' own frames are the runtime's, below).
        let mut at = node["parent"].as_u64();
        let mut under = false;
        while let Some(p) = at {
            let parent = &nodes[p as usize];
            under |= name(parent) == "Acme.Alloc.Measure";
            at = parent["parent"].as_u64();
        }
        // The whole subtree's own samples and bytes belong to this frame's placement.
        samples[usize::from(under)] += u64_of(node, "total_samples");
        bytes[usize::from(under)] += u64_of(node, "total_alloc_bytes");
    }
    let [bad, good] = samples;
    assert!(good >= 200 && bad * 100 <= good + bad, "{good} samples under Measure, {bad} not");
    let [bad, good] = bytes;
    assert!(good > 0 && bad * 100 <= good + bad, "{good} bytes under Measure, {bad} not");
}

/// `-v` says which sampler raises the samples: the kernel's where it allows it, Sonde's signal
/// with `SONDE_SAMPLER=signal` (the fallback); the profile says the same.
#[test]
fn verbose_says_which_sampler_runs() {
    let dir = tmp();
    for (env, said, named) in [
        (None, "sampled by the kernel", "kernel"),
        (Some("signal"), "sampled by Sonde's signal, raised by per-thread timers", "signal-timers"),
    ] {
        let file = dir.path().join("busy.sonde");
        let mut args = vec![std::ffi::OsString::from("-v")];
        args.extend(record_args(&file, &["--force"], &app_command("Busy", &["1", "50"])));
        let env: Vec<(&str, std::ffi::OsString)> = env.map(|v| ("SONDE_SAMPLER", v.into())).into_iter().collect();
        let out = Running::spawn_with_env(sonde(), &args, &env).wait(DEADLINE);
        assert_eq!(out.code(), 0, "{}", out.describe());
        assert!(out.stderr_str().contains(said), "-v must say `{said}`: {}", out.describe());
        assert_eq!(report_json(&file)["sampler"], named);
    }
}
