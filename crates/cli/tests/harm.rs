//! The profiler must never harm the program: real programs (tests/apps/Harm.cs) that a careless
//! profiler kills, blinds or slows down — null dereferences caught on several threads, a thread
//! whose stack the program allocated and half freed, a program that takes signals for itself,
//! sleeps that a signal cuts short, exceptions thrown while a large call tree is recorded, a
//! forking Mono program. Each runs under `sonde record` as it would without it: same exit code,
//! same output, and a profile. Like every integration test, FAILS when a runtime is missing.

mod support;

use support::*;

fn tmp() -> tempfile::TempDir {
    tempfile::Builder::new().prefix("sonde-harm-").tempdir().expect("cannot create a temp dir")
}

/// Records `Harm.exe ARGS` on CoreCLR with `opts`, `runs` times; every run must exit 0 with a
/// usable sampling profile. Returns the last run's report.
fn survives(opts: &[&str], args: &[&str], runs: usize) -> serde_json::Value {
    survives_with(Sampler::Default, opts, args, runs)
}

/// Who raises the samples of the CPU clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sampler {
    /// The kernel's sampler where the kernel allows it (as here).
    Default,
    /// Sonde's signal raised by per-thread task-clock timers (`SONDE_SAMPLER=signal`), the
    /// fallback where the kernel refuses rings.
    Signal,
    /// The sampler thread (`SONDE_SAMPLER=signal SONDE_CPU_TIMERS=0`), the fallback without
    /// `perf_event_open`.
    Thread,
}

/// [`survives`] with a choice of sampler. A run that fails keeps its evidence: the agent's log is
/// in the failure message, and a core dump of the program (these tests raise the core-size limit
/// their children inherit) is moved to `target/test-artifacts/`.
fn survives_with(sampler: Sampler, opts: &[&str], args: &[&str], runs: usize) -> serde_json::Value {
    keep_core_dumps();
    let dir = tmp();
    let file = dir.path().join("harm.sonde");
    let log = dir.path().join("agent.log");
    let mut opts: Vec<&str> = opts.to_vec();
    let log_arg = log.to_str().expect("a UTF-8 temp path").to_string();
    opts.extend(["--agent-log", &log_arg]);
    let mut report = serde_json::Value::Null;
    for run in 0..runs {
        let _ = std::fs::remove_file(&file);
        let _ = std::fs::remove_file(&log);
        let out = match sampler {
            Sampler::Default => record_app(&file, &opts, "Harm", args),
            Sampler::Signal => record_app_signal_sampler(&file, &opts, "Harm", args),
            Sampler::Thread => record_app_thread_sampler(&file, &opts, "Harm", args),
        };
        if out.code() != 0 {
            let agent_log = std::fs::read_to_string(&log).unwrap_or_else(|e| format!("(no agent log: {e})"));
            panic!(
                "run {run} of Harm.exe {args:?} under sonde {opts:?}:\n{}\n--- agent log ---\n{agent_log}\n{}",
                out.describe(),
                save_core_dumps()
            );
        }
        report = report_json(&file);
        check_invariants(&report);
    }
    report
}

/// Raises this process's core-size limit to its hard limit, for the programs it starts.
fn keep_core_dumps() {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Core);
    let _ = setrlimit(Resource::Core, rustix::process::Rlimit { current: limit.maximum, maximum: limit.maximum });
}

/// Moves core dumps the kernel wrote in this test's directory (`core_pattern` `core`: the
/// crashed process's working directory, which the programs inherit) to `target/test-artifacts/`;
/// what was found, for a failure message.
fn save_core_dumps() -> String {
    let artifacts = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("../test-artifacts");
    let _ = std::fs::create_dir_all(&artifacts);
    let cores: Vec<_> = std::fs::read_dir(".")
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("core"))
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .collect();
    let mut saved = Vec::new();
    for core in cores {
        let to = artifacts.join(format!("harm-{}-{}", std::process::id(), core.file_name().to_string_lossy()));
        if std::fs::rename(core.path(), &to).or_else(|_| std::fs::copy(core.path(), &to).map(drop)).is_ok() {
            saved.push(to.display().to_string());
        }
    }
    let pattern = std::fs::read_to_string("/proc/sys/kernel/core_pattern").unwrap_or_default();
    format!("core dumps saved: {saved:?} (core_pattern {:?})", pattern.trim())
}

/// Null dereferences caught in a loop: CoreCLR's SIGSEGV handler runs on the alternate signal
/// stack, where a sampling signal must never land (docs/SAMPLING.md, "The signal"). 21 runs per
/// thread count and rate: the CPU clock with per-thread timers and with the sampler thread, and
/// the wall clock.
fn null_dereferences(threads: &str, rate: &str) {
    for (clock, sampler) in
        [("cpu", Sampler::Default), ("cpu", Sampler::Signal), ("cpu", Sampler::Thread), ("wall", Sampler::Default)]
    {
        let report = survives_with(sampler, &["--rate", rate, "--clock", clock], &["nullref", threads, "500"], 7);
        let clock = format!("{clock} ({sampler:?} sampler)");
        // The sampling signal is blocked while the runtime handles a fault, and only then. (The
        // kernel's sampler sends no signal: nothing to block.)
        let blocked = match report["sampler"].as_str() {
            Some("kernel") => 0,
            _ => u64_of(&report["samples_lost"], "signal_blocked"),
        };
        assert!(
            blocked * 20 <= u64_of(&report, "samples_taken"),
            "{clock} clock at {rate} Hz: the sampling signal stayed blocked: {}",
            report["samples_lost"]
        );
        // Every faulting thread that ran two intervals or more of the clock is sampled. (The
        // program faults for 500 ms of wall time: on a loaded machine a thread may get less than
        // one 10 ms interval of CPU in that time, and then no CPU-clock sample at 100 Hz.)
        let interval = u64_of(&report, "sample_interval_ns");
        let faulting: Vec<&serde_json::Value> = arr(&report, "threads")
            .iter()
            .filter(|t| t["name"].as_str().is_some_and(|n| n.starts_with("fault-")))
            .collect();
        assert_eq!(faulting.len().to_string(), threads, "{clock} clock at {rate} Hz: the faulting threads");
        let ran = if clock.starts_with("wall") { "wall_ns" } else { "cpu_ns" };
        let long = |t: &&&serde_json::Value| u64_of(t, ran) >= 2 * interval;
        let unsampled: Vec<_> = faulting.iter().filter(long).filter(|t| u64_of(t, "samples") == 0).collect();
        assert!(unsampled.is_empty(), "{clock} clock at {rate} Hz: faulting threads not sampled: {unsampled:?}");
    }
}

#[test]
fn null_dereferences_on_one_thread_at_100_hz() {
    null_dereferences("1", "100");
}

#[test]
fn null_dereferences_on_one_thread_at_1000_hz() {
    null_dereferences("1", "1000");
}

#[test]
fn null_dereferences_on_one_thread_at_10000_hz() {
    null_dereferences("1", "10000");
}

#[test]
fn null_dereferences_on_three_threads_at_100_hz() {
    null_dereferences("3", "100");
}

#[test]
fn null_dereferences_on_three_threads_at_1000_hz() {
    null_dereferences("3", "1000");
}

#[test]
fn null_dereferences_on_three_threads_at_10000_hz() {
    null_dereferences("3", "10000");
}

#[test]
fn divisions_by_zero_are_caught_and_sampled() {
    survives(&["--rate", "10000"], &["fpe", "3", "500"], 3);
}

/// Native code on a program-allocated stack, with a frame pointer into memory just unmapped:
/// the walk stays inside the thread's own stack.
#[test]
fn a_frame_pointer_into_freed_memory_is_never_followed() {
    let report = survives(&["--rate", "10000"], &["freedstack"], 20);
    let sampled = arr(&report, "threads").iter().filter(|t| u64_of(t, "samples") > 0).count();
    assert!(sampled >= 2, "the custom-stack thread was sampled: {}", report["threads"]);
}

/// A native function whose frame pointer leads the walk through two fake frames whose "return
/// addresses" lie in a ReadyToRun image loaded but never run (its metadata; the code of a method
/// never prepared). Asked about such an address, CoreCLR's lookup walks its table of runtime
/// functions back past the start and the process dies of SIGSEGV: issue 11's one crash in a
/// thousand runs was such an address in `System.Console.dll`'s metadata, read at start-up. The
/// drain must not ask (`agent/src/coreclr/images.rs`); the burning method is still sampled
/// whole, under its real callers.
#[test]
fn addresses_in_an_image_never_run_are_not_looked_up() {
    let report = survives(&["--rate", "2000"], &["bogusframes", "300"], 5);
    let methods = arr(&report, "methods");
    let nodes = arr(&report, "nodes");
    let name = |n: &serde_json::Value| str_of(&methods[u64_of(n, "method") as usize], "name").to_string();
    let (mut under, mut burnt) = (0, 0);
    for node in nodes.iter().filter(|n| name(n) == "Acme.Harm.BurnCpu") {
        burnt += u64_of(node, "total_samples");
        let mut at = node["parent"].as_u64();
        while let Some(p) = at {
            if name(&nodes[p as usize]) == "Acme.Harm.BogusFrames" {
                under += u64_of(node, "total_samples");
                break;
            }
            at = nodes[p as usize]["parent"].as_u64();
        }
    }
    assert!(burnt >= 100, "BurnCpu sampled {burnt} times: {}", report["samples_taken"]);
    assert_eq!(under, burnt, "BurnCpu's samples under its caller BogusFrames");
}

/// The program's own use of SIGPROF is untouched; a program that takes the sampling signal stops
/// Sonde's signal sampler, and the profile and stderr say so. The kernel's sampler sends no
/// signal: the same program is sampled to its end.
#[test]
fn the_programs_signals_are_its_own() {
    for (sampler, record) in [("kernel", record_app as Recorder), ("signal-timers", record_app_signal_sampler)] {
        for how in ["default", "ignore", "handler", "queue"] {
            let dir = tmp();
            let file = dir.path().join("sigprof.sonde");
            let direct = run_app("Harm", &["sigprof", how]);
            assert_eq!(direct.code(), 0, "Harm.exe sigprof {how} on its own:\n{}", direct.describe());
            let out = record(&file, &[], "Harm", &["sigprof", how]);
            assert_eq!(out.code(), 0, "sigprof {how}:\n{}", out.describe());
            assert_eq!(out.stdout_str(), direct.stdout_str(), "sigprof {how}: output changed");
            let report = report_json(&file);
            assert_sampling_facts(&report, "cpu", "coreclr");
            assert_eq!(report["sampler"], sampler);
            if sampler != "kernel" {
                assert_eq!(report["samples_lost"]["signal_taken"], 0, "sigprof {how}: {}", report["samples_lost"]);
            }
            // A second of work on the main thread after the reset: still sampled.
            assert!(u64_of(&report, "samples_taken") > 500, "sigprof {how}: sampling went blind: {report}");
        }
    }

    let dir = tmp();
    let file = dir.path().join("kept.sonde");
    let out = record_app(&file, &[], "Harm", &["sigprof", "taken"]);
    assert_eq!(out.code(), 0, "sigprof taken:\n{}", out.describe());
    assert!(out.stdout_str().contains("sigprof taken: survived"), "{}", out.describe());
    assert!(!out.stderr_str().contains("sampling signal"), "no signal, no notice:\n{}", out.describe());
    let report = report_json(&file);
    assert_eq!(report["sampler"], "kernel");
    assert!(u64_of(&report, "samples_taken") > 500, "the kernel's sampler goes on: {report}");

    let file = dir.path().join("taken.sonde");
    let out = record_app_signal_sampler(&file, &[], "Harm", &["sigprof", "taken"]);
    assert_eq!(out.code(), 0, "sigprof taken:\n{}", out.describe());
    assert!(out.stdout_str().contains("sigprof taken: survived"), "{}", out.describe());
    assert!(
        out.stderr_str().contains("installed its own handler for the sampling signal"),
        "stderr must say sampling stopped:\n{}",
        out.describe()
    );
    let report = report_json(&file);
    assert!(u64_of(&report["samples_lost"], "signal_taken") > 0, "{}", report["samples_lost"]);
    assert!(u64_of(&report, "samples_taken") > 0, "the samples before the takeover are kept");
}

/// How a test records an app (`record_app` and its variants).
type Recorder = fn(&std::path::Path, &[&str], &str, &[&str]) -> Output;

/// `key=value` from Harm.exe's output line starting with `prefix`.
fn field(stdout: &str, prefix: &str, key: &str) -> f64 {
    stdout
        .lines()
        .find(|l| l.starts_with(prefix))
        .and_then(|l| l.split_whitespace().find_map(|w| w.strip_prefix(&format!("{key}="))))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {key}= on a line starting with {prefix:?} in:\n{stdout}"))
}

/// Sleeping threads are not interrupted: 40 × usleep(20 ms) and 40 × poll(20 ms) are never cut
/// short, with either clock. A sleep that is not interrupted lasts at least what it asked for, so
/// the check is against the 800 ms asked, not against a second run (whose timing depends on the
/// machine's load). (A signal can still meet a thread entering a blocking call in the
/// microseconds between the sampler's look and the delivery, rarely, on a machine busy enough to
/// preempt the thread inside the call: two such races per 40 calls are let pass, the same
/// 760 ms floor (800 ms − 5%) this test held when it compared total times.)
#[test]
fn sleeps_are_not_cut_short() {
    let args = ["sleeps", "40", "20"];
    let direct = run_app("Harm", &args);
    assert_eq!(direct.code(), 0, "{}", direct.describe());
    for (clock, sampler) in
        [("cpu", Sampler::Default), ("cpu", Sampler::Signal), ("cpu", Sampler::Thread), ("wall", Sampler::Default)]
    {
        let dir = tmp();
        let file = dir.path().join("sleeps.sonde");
        let out = match sampler {
            Sampler::Default => record_app(&file, &["--clock", clock], "Harm", &args),
            Sampler::Signal => record_app_signal_sampler(&file, &["--clock", clock], "Harm", &args),
            Sampler::Thread => record_app_thread_sampler(&file, &["--clock", clock], "Harm", &args),
        };
        assert_eq!(out.code(), 0, "{}", out.describe());
        for call in ["usleep", "poll"] {
            let stdout = out.stdout_str();
            let (total, eintr) = (field(&stdout, call, "total_ms"), field(&stdout, call, "eintr"));
            assert!(eintr <= 2.0, "{clock} clock: {eintr} of 40 {call}s were interrupted (EINTR)");
            assert!(
                total >= 800.0 - 20.0 * eintr,
                "{clock} clock: 40 {call}s of 20 ms took {total} ms ({eintr} interrupted)"
            );
        }
        let report = report_json(&file);
        assert_sampling_facts(&report, clock, "coreclr");
        if clock == "wall" {
            // The blocked time is in the profile, charged to the stack the thread blocked in.
            let main = arr(&report, "threads").iter().map(|t| u64_of(t, "samples")).max().unwrap_or(0);
            assert!(main >= 1200, "wall clock: the sleeping thread's 1.6 s hold only {main} samples");
        }
    }
}

/// Exceptions thrown while a large call tree is traced: the throwing thread must not do work
/// proportional to the tree where the runtime cannot collect garbage, or every allocating
/// thread stalls with it. The bug this guards against stalled the allocating thread for 300 ms
/// and more at *every* throw; a busy machine (two cores, a test suite beside) also stalls a
/// thread now and then, once by 354 ms. So the test counts the allocating thread's stalls of
/// 100 ms or more: with a throw every 100 ms for 3 s (the bug: one per throw)
/// at most 3 more than the same run without throws (and at least 5 throws: the bug made each
/// loop 400 ms, 7 throws in 3 s).
#[test]
fn exceptions_do_not_stall_other_threads_under_tracing() {
    let stall = |period: &str| {
        let dir = tmp();
        let file = dir.path().join("throws.sonde");
        let out = record_app(&file, &["--mode", "tracing"], "Harm", &["throws", "5", "3", period]);
        assert_eq!(out.code(), 0, "{}", out.describe());
        let report = report_json(&file);
        let nodes = report["nodes"].as_array().map_or(0, |n| n.len());
        assert!(nodes > 100_000, "the tree is large: {nodes} nodes");
        let stdout = out.stdout_str();
        (
            field(&stdout, "throws:", "long_stalls"),
            field(&stdout, "throws:", "stall_ms"),
            field(&stdout, "throws:", "caught"),
        )
    };
    let (quiet, quiet_ms, _) = stall("0");
    let (throwing, throwing_ms, caught) = stall("100");
    assert!(caught >= 5.0, "{caught} throws");
    assert!(
        throwing <= quiet + 3.0,
        "{throwing} allocation stalls of 100 ms or more with {caught} throws (the longest {throwing_ms:.1} ms), \
         {quiet} without (the longest {quiet_ms:.1} ms)"
    );
}

/// A Mono program whose forked children call `exit()`: the children stay silent on the parent's
/// session (before the fix, each sent a "final snapshot" over it), so the profile is the
/// parent's, complete. The agent's log tells which processes spoke.
#[test]
fn forked_mono_children_leave_the_parents_session_alone() {
    for mode in ["tracing", "sampling"] {
        let dir = tmp();
        let file = dir.path().join("fork.sonde");
        let log = dir.path().join("agent.log");
        let mut opts = vec!["--mode", mode, "--agent-log"];
        opts.push(log.to_str().expect("a UTF-8 temp path"));
        let out = Runtime::Mono.record_app(&file, &opts, "Harm", &["fork", "100"]);
        assert_eq!(out.code(), 0, "{mode}:\n{}", out.describe());
        assert!(out.stdout_str().contains("children exited cleanly: 100 of 100"), "{}", out.describe());
        assert_eq!(sonde_files(dir.path()).len(), 1, "{mode}: one profile");
        let report = report_json(&file);
        check_invariants(&report);
        assert_eq!(report["incomplete"], false, "{mode}: the parent's final snapshot is the profile");
        let text = std::fs::read_to_string(&log).expect("the agent log");
        let speakers: std::collections::BTreeSet<&str> = text.lines().filter_map(|l| l.split(':').next()).collect();
        assert_eq!(speakers.len(), 1, "{mode}: only the parent's agent speaks: {speakers:?}");
        let finals = text.lines().filter(|l| l.contains("final snapshot sent")).count();
        assert_eq!(finals, 1, "{mode}: one final snapshot, the parent's:\n{text}");
        if mode == "tracing" {
            // Spin runs before the forks and after them.
            let calls = calls_by_name(&report);
            assert_eq!(calls.get("Acme.Harm.Spin"), Some(&2), "{mode}: {calls:?}");
        }
    }
}

/// Background threads left when `Main` returns: Mono's main thread aborts each one, walking its
/// stack in an "async context" where Mono's own sampling signal handler asserts (1 run in ~400 of
/// Stress.exe at 2 kHz; every run of this one, 32 threads 500 frames deep, before the fix). The
/// agent takes the main thread out of Mono's sampler when `Main` returns. Three runs per clock;
/// the parked threads are sampled on the wall clock.
#[test]
fn mono_aborting_background_threads_at_exit_survives_sampling() {
    let dir = tmp();
    let file = dir.path().join("abort.sonde");
    for (clock, rate) in [("cpu", "1000"), ("wall", "2000")] {
        for run in 0..3 {
            let _ = std::fs::remove_file(&file);
            let log = dir.path().join(format!("agent-{clock}-{run}.log"));
            let log_arg = log.to_str().expect("a UTF-8 path");
            let opts = ["--clock", clock, "--rate", rate, "--agent-log", log_arg];
            let out = Runtime::Mono.record_app(&file, &opts, "Harm", &["abortatexit", "32", "500"]);
            let agent_log = std::fs::read_to_string(&log).unwrap_or_default();
            let what = format!("{clock} clock, run {run}:\n{}\n--- agent log ---\n{agent_log}", out.describe());
            assert_eq!(out.code(), 0, "{what}");
            assert!(out.stdout_str().contains("parked 32 threads 500 deep"), "{what}");
            let report = report_json(&file);
            check_invariants(&report);
            assert_eq!(report["incomplete"], false, "{what}");
            if clock == "wall" {
                let park = arr(&report, "methods").iter().find(|m| str_of(m, "name") == "Acme.Harm.Park").cloned();
                assert!(
                    park.is_some_and(|m| u64_of(&m, "total_samples") > 0),
                    "{what}: the parked threads were sampled"
                );
            }
        }
    }
}

/// A stack overflow while the thread is being sampled: the sampling handler runs on the alternate
/// signal stack and never touches the exhausted one, so the runtime's own report and abort are
/// what the program gets (exit 134 and "Stack overflow." — a SIGSEGV exit 139 was 4 of 42 runs
/// before). Eight runs at 10 kHz on the wall clock, so samples land throughout the recursion;
/// 1.2 s of work first, so that a periodic snapshot exists when the runtime aborts.
#[test]
fn a_stack_overflow_under_sampling_ends_as_the_runtime_says() {
    let dir = tmp();
    let file = dir.path().join("overflow.sonde");
    for run in 0..8 {
        let out = record_app(&file, &["--rate", "10000", "--clock", "wall"], "Harm", &["overflow", "1200"]);
        assert_eq!(out.code(), 134, "run {run}: not the runtime's abort:\n{}", out.describe());
        assert!(
            out.stderr_str().contains("Stack overflow."),
            "run {run}: no word from the runtime:\n{}",
            out.describe()
        );
        let report = report_json(&file);
        assert_eq!(report["signal"], 6, "run {run}");
    }
}

/// `Environment.FailFast` aborts the process. On Mono, its sampler then asserts in the crash
/// handler and the process exits with status 0, or hangs until Mono's watchdog kills it (Mono's
/// own `log:sample-real` does the same):
/// the agent saw the SIGABRT, and sonde reports the abort — exit 134, `signal` 6 — on both. The
/// program spins 1.2 s first: CoreCLR resets the signal handlers before it aborts, so what the
/// profile holds is the last periodic snapshot.
fn fail_fast_is_reported_as_the_abort_it_is(rt: Runtime) {
    let dir = tmp();
    let file = dir.path().join("failfast.sonde");
    // One run on Mono: a hung abort waits for Mono's watchdog, which takes its time.
    let runs = if rt == Runtime::Mono { 1 } else { 3 };
    for run in 0..runs {
        // Mono's crash handler starts `mono-hang-watchdog`, which keeps the program's stdout and
        // stderr open: they go to files, and the watchdog is ended after the run.
        let (stdout, stderr) = (dir.path().join("out"), dir.path().join("err"));
        let status = std::process::Command::new(sonde())
            .args(record_args(&file, &[], &rt.app_command("Harm", &["failfast", "1200"])))
            .stdin(std::process::Stdio::null())
            // Mono's crash reporter writes mono_crash.* files into the working directory.
            .current_dir(dir.path())
            .stdout(std::fs::File::create(&stdout).unwrap())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .status()
            .unwrap();
        let report = report_json(&file);
        let pid = u64_of(&report, "pid");
        let _ = std::process::Command::new("pkill").args(["-f", &format!("mono-hang-watchdog {pid}$")]).status();
        let what = format!(
            "{rt:?} run {run}: {status}\n{}{}",
            std::fs::read_to_string(&stdout).unwrap(),
            std::fs::read_to_string(&stderr).unwrap()
        );
        assert_eq!(status.code(), Some(134), "{what}");
        assert!(std::fs::read_to_string(&stdout).unwrap().contains("failing fast"), "{what}");
        assert_eq!(report["signal"], 6, "{what}");
        assert!(report["exit_code"].is_null(), "{what}");
    }
}

on_both_runtimes!(fail_fast_is_reported_as_the_abort_it_is);
