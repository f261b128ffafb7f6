//! End-to-end tests of tracing mode and of the command line around it: `sonde record --mode
//! tracing` on real programs (tests/apps/*.cs, compiled once with mcs), then `sonde report`.
//!
//! Each scenario is written once, as `fn scenario(rt: Runtime)`, and runs on both runtimes with the
//! same `.exe` (`scenario::coreclr`, `scenario::mono`): the counts must be the programs' own
//! tallies on both, and Mono must record the same names, signatures, counts and call paths as
//! CoreCLR. Where the runtimes genuinely behave differently (how a crash or SIGTERM ends the
//! process) the scenario says so. The tests below the scenarios concern one runtime only. They need
//! `SONDE_DOTNET`, `SONDE_MONO` and `SONDE_MCS` (see `support`), and FAIL when those are missing.

mod support;

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use support::*;

/// These tests are about tracing mode; sampling (the default mode) has its own file.
fn tracing_opts<'a>(opts: &[&'a str]) -> Vec<&'a str> {
    let mut all = vec!["--mode", "tracing"];
    all.extend_from_slice(opts);
    all
}

fn trace_app(rt: Runtime, out: &Path, opts: &[&str], name: &str, args: &[&str]) -> Output {
    rt.record_app(out, &tracing_opts(opts), name, args)
}

fn trace_args(out: &Path, opts: &[&str], command: &[OsString]) -> Vec<OsString> {
    record_args(out, &tracing_opts(opts), command)
}

fn trace(out: &Path, opts: &[&str], command: &[OsString]) -> Output {
    record(out, &tracing_opts(opts), command)
}

fn tmp() -> tempfile::TempDir {
    tempfile::Builder::new().prefix("sonde-it-").tempdir().expect("cannot create a temp dir")
}

/// The run facts every real recording must have.
fn assert_run_facts(rt: Runtime, report: &Value, timing: &str) {
    assert_eq!(report["schema"], "sonde.report/1");
    assert_eq!(report["mode"], "tracing");
    assert_eq!(report["timing"], timing);
    rt.assert_recorded_on(report);
    assert!(u64_of(report, "wall_ns") > 0, "wall_ns is 0");
    assert!(u64_of(report, "pid") > 0, "pid is 0");
}

fn method_names(report: &Value) -> BTreeSet<String> {
    arr(report, "methods").iter().map(|m| str_of(m, "name").to_string()).collect()
}

/// `(name, signature)` of every method that was called.
fn called_methods(report: &Value) -> BTreeSet<(String, String)> {
    arr(report, "methods")
        .iter()
        .filter(|m| u64_of(m, "calls") > 0)
        .map(|m| (str_of(m, "name").to_string(), str_of(m, "signature").to_string()))
        .collect()
}

/// Calls per call path (`A > B > C`, by method name), summed over threads.
fn calls_by_path(report: &Value) -> BTreeMap<String, u64> {
    let methods = arr(report, "methods");
    let mut path_of: Vec<String> = Vec::new();
    let mut paths = BTreeMap::new();
    for n in arr(report, "nodes") {
        let name = str_of(&methods[u64_of(n, "method") as usize], "name");
        let path = match n["parent"].as_u64() {
            Some(p) => format!("{} > {name}", path_of[p as usize]),
            None => name.to_string(),
        };
        *paths.entry(path.clone()).or_insert(0) += u64_of(n, "calls");
        path_of.push(path);
    }
    paths
}

on_both_runtimes!(
    calls_are_exact,
    exact_times_add_up,
    timing_sampled_keeps_counts_exact,
    exit_code_and_output_pass_through,
    filters,
    crash_keeps_data,
    crash_right_after_a_handled_exception_keeps_data,
    sigterm_keeps_data,
);

/// Records Calls.exe on `rt` with `opts` and checks everything that does not depend on the
/// timing: output, exit code, the program's own tallies, threads, names, invariants.
fn record_calls_exactly(rt: Runtime, opts: &[&str], timing: &str) -> Value {
    let direct = rt.run_app("Calls", &[]);
    assert_eq!(direct.code(), 0, "Calls.exe failed on its own on {rt:?}:\n{}", direct.describe());
    let expected = expected_calls(&direct.stdout_str());

    let dir = tmp();
    let file = dir.path().join("p.sonde");
    let out = trace_app(rt, &file, opts, "Calls", &[]);
    assert_eq!(out.code(), 0, "sonde record {opts:?} -- Calls.exe on {rt:?}:\n{}", out.describe());
    assert_eq!(
        out.stdout_str(),
        direct.stdout_str(),
        "the program's stdout under sonde differs from its stdout without sonde"
    );
    assert_eq!(out.stdout, direct.stdout, "stdout is not byte-identical");
    assert_stderr_passes_through(&out.stderr, &direct.stderr);
    assert!(
        out.stderr_str().lines().any(|l| l.starts_with("sonde: ") && l.contains("p.sonde")),
        "sonde's summary does not say where the profile went:\n{}",
        out.describe()
    );

    let report = report_json(&file);
    assert_run_facts(rt, &report, timing);
    assert_eq!(report["exit_code"], 0);
    assert_eq!(report["incomplete"], false, "a clean exit must give a complete profile");
    assert_eq!(report["lost"], 0);
    assert_calls(&report, &expected, &format!("Calls.exe {opts:?} on {rt:?}"));
    check_invariants(&report);

    // Main + 4 workers, and the threads' calls account for every node.
    let threads = arr(&report, "threads");
    assert!(threads.len() >= 5, "expected at least 5 threads (main + 4 workers), got {}", threads.len());
    let thread_calls: u64 = threads.iter().map(|t| u64_of(t, "calls")).sum();
    let node_calls: u64 = arr(&report, "nodes").iter().map(|n| u64_of(n, "calls")).sum();
    assert_eq!(thread_calls, node_calls, "threads' calls != nodes' calls");
    let workers = threads.iter().filter(|t| u64_of(t, "calls") == 1 + 10_000).count();
    assert_eq!(workers, 4, "expected 4 worker threads with Run + 10,000 Step calls each: {threads:#?}");

    // Unicode names survive intact (not escaped, mangled or lossy-decoded); nested and generic
    // types are named as C# does.
    let names = method_names(&report);
    for name in ["Acme.Ünïcødé.Grüße", "Acme.Ünïcødé.計算", "Acme.Outer+Inner.Nested", "Acme.Node`1..ctor"]
    {
        assert!(names.contains(name), "{name} is missing from the methods: {names:?}");
    }
    report
}

fn calls_are_exact(rt: Runtime) {
    let report = record_calls_exactly(rt, &[], "exact");
    let comp = &report["compensation"];
    assert!(comp.is_object(), "exact timing should report its hook-cost compensation: {comp}");
    assert_eq!(report["sample_interval_ns"], 0);
    let total: u64 =
        arr(&report, "nodes").iter().filter(|n| n["parent"].is_null()).map(|n| u64_of(n, "total_ns")).sum();
    assert!(total > 0, "exact timing measured no time at all");
}

fn exact_times_add_up(rt: Runtime) {
    // KNOWN BUG (minor, reported to the lead): assemble.rs rounds each node's self and total
    // time separately (`self_ns.round()`, `total[i].round()`), so in integer nanoseconds a node's
    // total differs from self + children's totals by rounding, and a recursive method's summed
    // self time can exceed its recursion-aware total by a few ns (seen: Acme.Node`1.Length self
    // 2782 ns, total 2778 ns). Rounding the totals first and deriving self = total - children's
    // (rounded) totals in integers would make both hold exactly.
    let dir = tmp();
    let file = dir.path().join("p.sonde");
    let out = trace_app(rt, &file, &[], "Calls", &[]);
    assert_eq!(out.code(), 0, "{}", out.describe());
    let report = report_json(&file);
    check_invariants(&report);
    let violations = exact_additivity_violations(&report);
    assert!(
        violations.is_empty(),
        "{} time(s) do not add up exactly; the first ones:\n{}",
        violations.len(),
        violations.iter().take(10).cloned().collect::<Vec<_>>().join("\n")
    );
}

fn timing_sampled_keeps_counts_exact(rt: Runtime) {
    let report = record_calls_exactly(rt, &["--timing", "sampled", "--interval-us", "200"], "sampled");
    assert_eq!(u64_of(&report, "sample_interval_ns"), 200_000, "the sampler period is not the one asked for");
    assert!(report["compensation"].is_null(), "sampled timing has no hook cost to compensate");
    let samples: u64 = arr(&report, "nodes").iter().map(|n| u64_of(n, "self_samples")).sum();
    assert!(samples > 0, "no samples at all with a 200 µs sampler over Calls.exe");
    let sampled_ns: u64 = arr(&report, "nodes").iter().map(|n| u64_of(n, "self_ns")).sum();
    assert!(sampled_ns > 0, "samples were taken but no time was attributed");
    // Sampled times are integer sums of whole samples: they must add up exactly.
    let violations = exact_additivity_violations(&report);
    assert!(violations.is_empty(), "sampled times do not add up:\n{}", violations.join("\n"));
}

fn exit_code_and_output_pass_through(rt: Runtime) {
    let direct = rt.run_app("ExitCode", &["7"]);
    assert_eq!(direct.code(), 7, "ExitCode.exe 7 on its own on {rt:?}:\n{}", direct.describe());
    assert_eq!(direct.stderr_str(), "stderr: exiting with code 7\n");

    let dir = tmp();
    let file = dir.path().join("p.sonde");
    let out = trace_app(rt, &file, &[], "ExitCode", &["7"]);
    assert_eq!(out.code(), 7, "sonde must exit with the program's code:\n{}", out.describe());
    assert_eq!(out.stdout, direct.stdout, "stdout differs under sonde:\n{}", out.describe());
    assert!(out.stdout_str().starts_with("stdout: exiting with code 7\n"));
    assert_stderr_passes_through(&out.stderr, &direct.stderr);

    let report = report_json(&file);
    assert_run_facts(rt, &report, "exact");
    assert_eq!(report["exit_code"], 7);
    assert_eq!(report["incomplete"], false);
    assert_calls(&report, &expected_calls(&direct.stdout_str()), &format!("ExitCode.exe 7 on {rt:?}"));
    check_invariants(&report);

    // The text report names the runtime and its version.
    let text = report_text(&file);
    assert_eq!(text.code(), 0, "{}", text.describe());
    let runtime = format!("{} {}", rt.kind(), str_of(&report["runtime"], "version"));
    assert!(text.stdout_str().contains(&runtime), "runtime {runtime:?} missing:\n{}", text.describe());
}

fn filters(rt: Runtime) {
    let direct = rt.run_app("Calls", &[]);
    let expected = expected_calls(&direct.stdout_str());
    let dir = tmp();

    // --exclude removes exactly that method and leaves the others' counts alone.
    let file = dir.path().join("exclude.sonde");
    let out = trace_app(rt, &file, &["--exclude", "Acme.Calls.Fib"], "Calls", &[]);
    assert_eq!(out.code(), 0, "{}", out.describe());
    let report = report_json(&file);
    check_invariants(&report);
    assert!(!method_names(&report).contains("Acme.Calls.Fib"), "excluded Acme.Calls.Fib was recorded");
    let others: Vec<(String, u64)> = expected.iter().filter(|(n, _)| n != "Acme.Calls.Fib").cloned().collect();
    assert_calls(&report, &others, &format!("Calls.exe --exclude Acme.Calls.Fib on {rt:?}"));

    // --include restricts tracing to the matching methods.
    let file = dir.path().join("include.sonde");
    let out = trace_app(rt, &file, &["--include", "Acme.Worker.*"], "Calls", &[]);
    assert_eq!(out.code(), 0, "{}", out.describe());
    let report = report_json(&file);
    check_invariants(&report);
    assert!(!called_methods(&report).is_empty(), "--include 'Acme.Worker.*' recorded nothing");
    for name in method_names(&report) {
        assert!(name.starts_with("Acme.Worker."), "--include 'Acme.Worker.*' recorded {name}");
    }
    let workers: Vec<(String, u64)> = expected.iter().filter(|(n, _)| n.starts_with("Acme.Worker.")).cloned().collect();
    assert_eq!(workers.len(), 3, "Calls.exe should expect Worker..ctor, Run and Step: {expected:?}");
    assert_calls(&report, &workers, &format!("Calls.exe --include Acme.Worker.* on {rt:?}"));

    // --all traces the framework too (on Mono, Debian's mscorlib is precompiled: the controller
    // asks Mono not to use its AOT code), without disturbing the program's own counts.
    let direct = rt.run_app("ExitCode", &["0"]);
    let file = dir.path().join("all.sonde");
    let out = trace_app(rt, &file, &["--all"], "ExitCode", &["0"]);
    assert_eq!(out.code(), 0, "{}", out.describe());
    assert_eq!(out.stdout, direct.stdout);
    let report = report_json(&file);
    check_invariants(&report);
    let calls = calls_by_name(&report);
    assert!(
        calls.iter().any(|(n, &c)| n.starts_with("System.Console.") && c > 0),
        "--all recorded no call to System.Console: {calls:?}"
    );
    assert_calls(&report, &expected_calls(&direct.stdout_str()), &format!("ExitCode.exe with --all on {rt:?}"));
}

fn crash_keeps_data(rt: Runtime) {
    check_crash(rt, &[]);
}

/// The exception snapshots are rate-limited; a crash right after a handled exception must not
/// fall in the gap.
fn crash_right_after_a_handled_exception_keeps_data(rt: Runtime) {
    check_crash(rt, &["after-handled"]);
}

/// Crash.exe's exception is unhandled: .NET aborts, Mono exits with 1 (see
/// [`Runtime::assert_crash_end`]); either way every call made before is in the profile.
fn check_crash(rt: Runtime, args: &[&str]) {
    let direct = rt.run_app("Crash", args);
    assert_eq!(direct.code(), rt.crash_code(), "Crash.exe on its own on {rt:?}:\n{}", direct.describe());
    let expected = expected_calls(&direct.stdout_str());

    let dir = tmp();
    let file = dir.path().join("crash.sonde");
    // The agent's log, for the message of a failure that a loaded machine showed once in ~15 runs
    // (Mono: the final snapshot missing) and that could not be reproduced since.
    let log = dir.path().join("agent.log");
    let out = trace_app(rt, &file, &["--agent-log", log.to_str().unwrap()], "Crash", args);
    assert_eq!(out.code(), rt.crash_code(), "sonde must exit with the target's code:\n{}", out.describe());
    assert_eq!(out.stdout, direct.stdout, "stdout differs under sonde");
    // Each runtime reports an unhandled exception in its own words.
    let runtime_report = match rt {
        Runtime::CoreClr => "Unhandled exception. Acme.CrashTestException",
        Runtime::Mono => "Unhandled Exception:\nAcme.CrashTestException",
    };
    assert!(
        out.stderr_str().contains(runtime_report),
        "the runtime's crash report did not pass through:\n{}",
        out.describe()
    );
    assert!(
        file.is_file(),
        "no profile was written for a program that crashed (the data it produced before crashing is lost):\n{}",
        out.describe()
    );
    let report = report_json(&file);
    assert_run_facts(rt, &report, "exact");
    check_invariants(&report);
    if rt == Runtime::Mono && report["incomplete"] != false {
        let log = std::fs::read_to_string(&log).unwrap_or_default();
        panic!("the final snapshot is missing; agent log:\n{log}\n{}", out.describe());
    }
    rt.assert_crash_end(&report);
    // Every call happened before the throw that killed the process: all are in the profile.
    assert_calls(&report, &expected, &format!("Crash.exe {args:?} on {rt:?}"));
}

fn sigterm_keeps_data(rt: Runtime) {
    // SIGTERM to sonde alone (as `kill <pid>` or a service manager would send it): sonde passes
    // it on to the program.
    let dir = tmp();
    let file = dir.path().join("term.sonde");
    let mut sonde = Running::spawn(sonde(), &trace_args(&file, &[], &rt.app_command("Sleeper", &[])));
    sonde.wait_for_line("ready", Duration::from_secs(20));
    std::thread::sleep(Duration::from_millis(300));
    let pid = libc::pid_t::try_from(sonde.pid()).expect("pid out of range");
    // SAFETY: kill(2) only sends SIGTERM to the sonde process this test started; no memory is touched.
    unsafe {
        libc::kill(pid, libc::SIGTERM);
    }
    let out = sonde.wait(Duration::from_secs(10));
    assert_eq!(out.code(), 143, "sonde must exit with the target's code (128 + SIGTERM):\n{}", out.describe());
    assert!(file.is_file(), "no profile was written after SIGTERM:\n{}", out.describe());
    let report = report_json(&file);
    assert_run_facts(rt, &report, "exact");
    check_invariants(&report);
    match rt {
        // .NET handles SIGTERM and shuts down cleanly (its shutdown callback runs).
        Runtime::CoreClr => {
            assert_eq!(report["incomplete"], false, "a SIGTERM shuts .NET down cleanly: the final snapshot must arrive")
        }
        // Mono leaves SIGTERM at its default action: the process dies without a shutdown, and the
        // agent's handler sends a last snapshot first.
        Runtime::Mono => assert_eq!(report["incomplete"], true, "Mono dies by SIGTERM without a shutdown"),
    }
    let calls = calls_by_name(&report);
    assert_eq!(calls.get("Acme.Sleeper.Main"), Some(&1), "{calls:?}");
    let ticks = calls.get("Acme.Sleeper.Tick").copied().unwrap_or(0);
    // ~300 ms of 20 ms ticks is ~15 calls, all before the first periodic snapshot (1 s).
    assert!(ticks >= 5, "Acme.Sleeper.Tick recorded {ticks} times after ~300 ms of running: {calls:?}");
}

#[test]
fn mono_records_what_coreclr_records() {
    // The same .exe on both runtimes: the same methods (names and signatures), the same counts,
    // the same call paths — recursion, tail calls, exceptions and threads included.
    let mono = record_calls_exactly(Runtime::Mono, &[], "exact");
    let coreclr = record_calls_exactly(Runtime::CoreClr, &[], "exact");
    assert_eq!(method_names(&mono), method_names(&coreclr), "method names differ between Mono and CoreCLR");
    assert_eq!(called_methods(&mono), called_methods(&coreclr), "names or signatures differ between Mono and CoreCLR");
    assert_eq!(calls_by_name(&mono), calls_by_name(&coreclr), "call counts differ between Mono and CoreCLR");
    let (m, c) = (calls_by_path(&mono), calls_by_path(&coreclr));
    let differ: Vec<String> = m
        .keys()
        .chain(c.keys())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .filter(|p| m.get(*p) != c.get(*p))
        .take(10)
        .map(|p| format!("  {p}: mono {:?}, coreclr {:?}", m.get(p), c.get(p)))
        .collect();
    assert!(differ.is_empty(), "call paths differ between Mono and CoreCLR:\n{}", differ.join("\n"));
}

#[test]
fn ctrl_c_keeps_data() {
    // KNOWN BUG (reported to the lead): on SIGINT the .NET runtime dies at once (no shutdown
    // callback, so no final snapshot), and sonde's "snapshot now" request arrives too late; so a
    // program interrupted before the first periodic snapshot (1 s) leaves no profile at all, and
    // one interrupted later loses everything after its last periodic snapshot.
    let dir = tmp();
    let file = dir.path().join("sleeper.sonde");
    let mut args = trace_args(&file, &[], &app_command("Sleeper", &[]));
    args.insert(0, OsString::from("-v"));
    let mut sonde = Running::spawn(sonde(), &args);
    sonde.wait_for_line("ready", Duration::from_secs(20));
    std::thread::sleep(Duration::from_millis(300));
    // Ctrl-C in a terminal: SIGINT to the whole foreground process group.
    kill_group(sonde.pid(), libc::SIGINT);
    let interrupted = Instant::now();
    let out = sonde.wait(Duration::from_secs(10));
    assert!(interrupted.elapsed() < Duration::from_secs(5), "sonde took {:?} to exit", interrupted.elapsed());
    assert_eq!(out.code(), 130, "sonde must exit with the target's code (128 + SIGINT):\n{}", out.describe());
    assert!(!out.stdout_str().contains("done ticks="), "Sleeper.exe finished instead of being interrupted");
    assert!(file.is_file(), "no profile was written after Ctrl-C:\n{}", out.describe());
    let report = report_json(&file);
    assert_run_facts(Runtime::CoreClr, &report, "exact");
    check_invariants(&report);
    let calls = calls_by_name(&report);
    let ticks = calls.get("Acme.Sleeper.Tick").copied().unwrap_or(0);
    // ~300 ms of 20 ms ticks is ~15 calls; at least 5 must be in the profile.
    assert!(ticks >= 5, "Acme.Sleeper.Tick recorded {ticks} times after ~300 ms of running: {calls:?}");
}

/// sonde's stderr must end with exactly one `sonde: ...` line containing `needle`, after what
/// the program itself wrote there; no panic, and a failure exit code.
fn assert_sonde_error(out: &Output, program_stderr: &[u8], needle: &str) {
    let stderr = out.stderr_str();
    assert!(!stderr.contains("panicked"), "sonde panicked:\n{}", out.describe());
    assert_ne!(out.code(), 0, "expected a failure:\n{}", out.describe());
    let stderr = after_session_line(&out.stderr);
    assert!(stderr.starts_with(program_stderr), "the program's stderr did not pass through:\n{}", out.describe());
    let rest = String::from_utf8_lossy(&stderr[program_stderr.len()..]).into_owned();
    let lines: Vec<&str> = rest.lines().collect();
    assert_eq!(lines.len(), 1, "expected exactly one line from sonde:\n{}", out.describe());
    assert!(lines[0].starts_with("sonde: "), "the error line does not start with `sonde: `: {:?}", lines[0]);
    assert!(lines[0].contains(needle), "the error line does not mention {needle:?}: {:?}", lines[0]);
}

/// sonde's stderr must be exactly one `sonde: ...` line containing `needle`, and no panic.
fn assert_one_error_line(out: &Output, needle: &str) {
    assert_sonde_error(out, b"", needle);
}

#[test]
fn not_a_dotnet_program() {
    let dir = tmp();
    let file = dir.path().join("x.sonde");
    let out = trace(&file, &[], &[OsString::from("/bin/true")]);
    assert_one_error_line(&out, "no .NET runtime loaded the agent");
    assert!(out.stdout.is_empty(), "stdout: {}", out.describe());
    assert!(!file.exists(), "a profile was written for a non-.NET program");

    // The program's own failure code wins over sonde's generic one.
    let out = trace(&file, &[], &[OsString::from("/bin/false")]);
    assert_one_error_line(&out, "no .NET runtime loaded the agent");
    assert_eq!(out.code(), 1);

    let out = trace(&file, &[], &[OsString::from("/nonexistent/cmd")]);
    assert_one_error_line(&out, "/nonexistent/cmd");
    assert!(out.stderr_str().contains("not found"), "{}", out.describe());
    assert!(!file.exists());
}

#[test]
fn module_that_does_not_load_is_reported() {
    // An "agent" that is no Sonde agent: Mono finds libmono-profiler-sonde.so but cannot load it
    // (or finds no entry point in it), and runs the program on without a profiler and without a
    // word. The controller must say that Mono's module did not load.
    let dir = tmp();
    let fake = dir.path().join("libnot_an_agent.so");
    std::fs::write(&fake, b"not a shared library").expect("cannot write the fake agent");
    let direct = Runtime::Mono.run_app("ExitCode", &["0"]);
    let file = dir.path().join("none.sonde");
    let args = trace_args(&file, &[], &Runtime::Mono.app_command("ExitCode", &["0"]));
    let out = Running::spawn_with_env(sonde(), &args, &[("SONDE_AGENT", fake.into())]).wait(DEADLINE);
    assert_eq!(out.stdout, direct.stdout, "the program did not run normally:\n{}", out.describe());
    assert_sonde_error(&out, &direct.stderr, "libmono-profiler-sonde.so");
    assert!(!file.exists(), "a profile was written without an agent");
}

#[test]
fn mono_profile_option_given_twice_profiles_once() {
    // The user's MONO_ENV_OPTIONS already asks for Sonde's module, and the controller appends it
    // again: Mono calls the entry point twice. The second call is ignored; the first session
    // profiles the run as usual.
    let direct = Runtime::Mono.run_app("Calls", &[]);
    let expected = expected_calls(&direct.stdout_str());
    let dir = tmp();
    let file = dir.path().join("twice.sonde");
    let args = trace_args(&file, &[], &Runtime::Mono.app_command("Calls", &[]));
    let out = Running::spawn_with_env(sonde(), &args, &[("MONO_ENV_OPTIONS", "--profile=sonde".into())]).wait(DEADLINE);
    assert_eq!(out.code(), 0, "{}", out.describe());
    assert_eq!(out.stdout, direct.stdout, "the program did not run normally:\n{}", out.describe());
    let report = report_json(&file);
    assert_calls(&report, &expected, "Calls.exe with --profile=sonde given twice");
}

#[test]
fn mono_errors_are_one_clear_line() {
    let dir = tmp();
    let file = dir.path().join("x.sonde");
    let exe = app("ExitCode").into_os_string();

    // Mono is not installed (here: not where the command says), in either mode.
    for mode in ["tracing", "sampling"] {
        let out = record(&file, &["--mode", mode], &["/nonexistent/bin/mono".into(), exe.clone()]);
        assert_sonde_error(&out, b"", "is Mono installed?");
        assert!(!file.exists());
    }
}

#[test]
fn report_errors() {
    let dir = tmp();
    let valid = dir.path().join("valid.sonde");
    let out = trace_app(Runtime::CoreClr, &valid, &[], "ExitCode", &["0"]);
    assert_eq!(out.code(), 0, "{}", out.describe());
    let bytes = std::fs::read(&valid).expect("the valid profile");
    assert!(bytes.len() > 16, "the profile is suspiciously small");

    let write = |name: &str, data: &[u8]| {
        let path = dir.path().join(name);
        std::fs::write(&path, data).expect("cannot write a test file");
        path
    };
    // Deterministic pseudo-random bytes (xorshift), so a failure can be reproduced.
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let random: Vec<u8> = (0..4096)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect();
    let mut magic_then_garbage = bytes[..8].to_vec();
    magic_then_garbage.extend_from_slice(&random);
    let mut flipped = bytes.clone();
    let middle = flipped.len() / 2;
    flipped[middle] ^= 0xFF;

    let cases: Vec<(&str, std::path::PathBuf)> = vec![
        ("missing", dir.path().join("missing.sonde")),
        ("empty", write("empty.sonde", b"")),
        ("random bytes", write("random.sonde", &random)),
        ("magic then random bytes", write("magic.sonde", &magic_then_garbage)),
        ("truncated by 5 bytes", write("trunc5.sonde", &bytes[..bytes.len() - 5])),
        ("truncated by 1 byte", write("trunc1.sonde", &bytes[..bytes.len() - 1])),
        ("cut in half", write("half.sonde", &bytes[..bytes.len() / 2])),
        ("one byte flipped", write("flipped.sonde", &flipped)),
        ("a directory", dir.path().to_path_buf()),
    ];
    for (what, path) in &cases {
        for format in ["text", "json"] {
            let out = sonde_cmd(&[OsString::from("report"), path.into(), "--format".into(), format.into()]);
            assert!(out.stdout.is_empty(), "{what} ({format}): something was printed on stdout:\n{}", out.describe());
            let name = path.file_name().expect("file name").to_string_lossy();
            assert_one_error_line(&out, &name);
        }
    }
    // The intact file still loads.
    let report = report_json(&valid);
    assert_eq!(report["schema"], "sonde.report/1");
}

/// `sh -c SCRIPT ARGS...` under `sonde record --mode tracing -o <dir>/multi.sonde`: the profile
/// files written, one per .NET process (`multi.<pid>.sonde`), and sonde's output.
fn trace_shell(dir: &Path, script: &str, args: Vec<OsString>) -> (Vec<std::path::PathBuf>, Output) {
    let file = dir.join("multi.sonde");
    let command: Vec<OsString> = ["sh", "-c", script].into_iter().map(OsString::from).chain(args).collect();
    let out = trace(&file, &[], &command);
    assert_eq!(out.code(), 3, "sonde must exit with sh's code (ExitCode.exe's 3):\n{}", out.describe());
    assert!(!file.exists(), "with two .NET processes there must be no plain multi.sonde");
    let files = sonde_files(dir);
    assert_eq!(files.len(), 2, "expected two multi.<pid>.sonde files, found {files:?}\n{}", out.describe());
    (files, out)
}

#[test]
fn several_processes() {
    let calls = run_app("Calls", &[]);
    let exit = run_app("ExitCode", &["3"]);
    let dir = tmp();
    let script = r#""$0" "$1" >/dev/null; "$0" "$2" 3 >/dev/null"#;
    let (files, out) =
        trace_shell(dir.path(), script, vec![dotnet().into(), app("Calls").into(), app("ExitCode").into()]);

    let mut seen = Vec::new();
    for path in &files {
        let name = path.file_name().expect("file name").to_string_lossy().into_owned();
        let pid: u64 = name
            .strip_prefix("multi.")
            .and_then(|s| s.strip_suffix(".sonde"))
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("{name} is not multi.<pid>.sonde"));
        let report = report_json(path);
        assert_run_facts(Runtime::CoreClr, &report, "exact");
        check_invariants(&report);
        assert_eq!(u64_of(&report, "pid"), pid, "{name}: the file name's pid is not the profile's");
        assert_eq!(report["incomplete"], false, "{name}: a cleanly exiting process gave an incomplete profile");
        let names = method_names(&report);
        if names.contains("Acme.Calls.Main") {
            assert_calls(&report, &expected_calls(&calls.stdout_str()), &name);
            assert!(!names.iter().any(|n| n.starts_with("Acme.ExitCode.")), "{name} mixes the two processes");
            seen.push("Calls");
        } else if names.contains("Acme.ExitCode.Main") {
            assert_calls(&report, &expected_calls(&exit.stdout_str()), &name);
            assert!(!names.iter().any(|n| n.starts_with("Acme.Calls.")), "{name} mixes the two processes");
            seen.push("ExitCode");
        } else {
            panic!("{name} holds neither Calls.exe nor ExitCode.exe: {names:?}");
        }
    }
    seen.sort();
    assert_eq!(seen, ["Calls", "ExitCode"]);
    // ExitCode.exe's stderr line passes through sh and sonde (after sonde's session line).
    assert!(after_session_line(&out.stderr).starts_with(b"stderr: exiting with code 3\n"), "{}", out.describe());
}

#[test]
fn both_runtimes_in_one_recording() {
    // A shell starts a Mono program and a CoreCLR one: the controller sets up both runtimes
    // whatever the command, and each process gets its own profile.
    let dir = tmp();
    let script = r#""$0" "$1" >/dev/null; "$2" "$3" 3 >/dev/null"#;
    let args = vec![mono().into(), app("Calls").into(), dotnet().into(), app("ExitCode").into()];
    let (files, _) = trace_shell(dir.path(), script, args);
    let mut kinds: Vec<String> = files
        .iter()
        .map(|f| {
            let report = report_json(f);
            check_invariants(&report);
            let kind = str_of(&report["runtime"], "kind").to_string();
            let main = if kind == "mono" { "Acme.Calls.Main" } else { "Acme.ExitCode.Main" };
            assert_eq!(calls_by_name(&report).get(main), Some(&1), "{kind}: {main} not recorded once");
            kind
        })
        .collect();
    kinds.sort();
    assert_eq!(kinds, ["coreclr", "mono"]);
}

#[test]
fn text_report() {
    let dir = tmp();
    let file = dir.path().join("p.sonde");
    let out = trace_app(Runtime::CoreClr, &file, &[], "Calls", &[]);
    assert_eq!(out.code(), 0, "{}", out.describe());

    let text = report_text(&file);
    assert_eq!(text.code(), 0, "{}", text.describe());
    assert!(text.stderr.is_empty(), "sonde report wrote to stderr:\n{}", text.describe());
    let stdout = text.stdout_str();
    assert!(stdout.contains("Hot methods by self time"), "no hot-methods header:\n{stdout}");
    assert!(stdout.contains("Acme.Calls.Fib"), "Acme.Calls.Fib missing:\n{stdout}");
    assert!(stdout.contains("coreclr 8."), "runtime missing:\n{stdout}");
    // Its row (in the hot list or, when its self time is tiny, in the call graph) shows its calls.
    assert!(
        stdout.lines().any(|l| l.contains("Acme.Calls.Fib") && l.contains(" 21,891 ")),
        "no line shows Acme.Calls.Fib with its 21,891 calls:\n{stdout}"
    );

    // `-o FILE` writes the same report as stdout.
    for format in ["text", "json"] {
        let to = dir.path().join(format!("report.{format}"));
        let args =
            [OsString::from("report"), file.clone().into(), "-f".into(), format.into(), "-o".into(), to.clone().into()];
        let written = sonde_cmd(&args);
        assert_eq!(written.code(), 0, "{}", written.describe());
        assert!(written.stdout.is_empty(), "-o still printed to stdout:\n{}", written.describe());
        let to_stdout = sonde_cmd(&args[..4]);
        assert_eq!(std::fs::read(&to).expect("the -o file"), to_stdout.stdout, "-o {format} differs from stdout");
    }
}

/// The controller stopped (SIGSTOP) from before the program's first exception until after it
/// exited: no throw waits for it (each snapshot it cannot take is replaced by the next, or left
/// in a file), and once it runs again it writes the whole profile, final snapshot included.
fn a_stopped_controller_never_blocks_the_program(rt: Runtime) {
    let dir = tmp();
    let file = dir.path().join("t.sonde");
    let mut recording =
        Running::spawn(sonde(), &record_args(&file, &["--mode", "tracing"], &rt.app_command("Throws", &[])));
    recording.wait_for_line("ready", DEADLINE);
    let sonde_pid = rustix::process::Pid::from_raw(recording.pid() as i32).unwrap();
    rustix::process::kill_process(sonde_pid, rustix::process::Signal::STOP).unwrap();
    recording.wait_for_line("caught 16", DEADLINE);
    let stdout = String::from_utf8_lossy(recording.stdout_so_far()).into_owned();
    let pid: u32 = stdout.lines().find_map(|l| l.strip_prefix("pid ")).and_then(|p| p.trim().parse().ok()).unwrap();
    // Until the program has exited (a zombie: its parent, sonde, is stopped).
    wait_until("the program to exit while sonde is stopped", || {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .is_ok_and(|s| s.rsplit(')').next().is_some_and(|r| r.trim_start().starts_with('Z')))
    });
    rustix::process::kill_process(sonde_pid, rustix::process::Signal::CONT).unwrap();
    let out = recording.wait(DEADLINE);
    assert_eq!(out.code(), 0, "{}", out.describe());
    let slowest: u64 = out
        .stdout_str()
        .lines()
        .find_map(|l| l.strip_prefix("slowest-throw-ms "))
        .and_then(|v| v.parse().ok())
        .expect("no slowest-throw-ms line");
    // Without the fix a throw waited for the controller for as long as it was stopped (seconds).
    assert!(slowest < 1000, "{rt:?}: a throw took {slowest} ms while the controller was stopped");
    let report = report_json(&file);
    assert_eq!(report["incomplete"], false, "{rt:?}: the final snapshot was lost:\n{}", out.describe());
    assert_eq!(calls_by_name(&report).get("Throws.Fail"), Some(&16), "{rt:?}: {:?}", calls_by_name(&report));
}

on_both_runtimes!(a_stopped_controller_never_blocks_the_program);

/// `sh -c SCRIPT sh ARGS…` as a command line.
fn shell(script: &str, args: &[OsString]) -> Vec<OsString> {
    let mut all: Vec<OsString> = vec!["sh".into(), "-c".into(), script.into(), "sh".into()];
    all.extend(args.iter().cloned());
    all
}

#[test]
fn an_output_that_cannot_be_written_is_refused_before_the_program_runs() {
    let dir = tmp();
    let marker = dir.path().join("ran");
    let touch = shell(r#"touch "$1""#, &[marker.clone().into()]);
    // A directory that does not exist, and a directory.
    for (output, needle) in
        [(dir.path().join("no/such/dir/p.sonde"), "cannot write"), (dir.path().to_path_buf(), "is a directory")]
    {
        let out = record(&output, &[], &touch);
        assert_eq!(out.code(), 2, "{}", out.describe());
        assert_one_error_line(&out, needle);
        assert!(!marker.exists(), "the program ran although its profile could not be written");
    }
    // A file that is not a profile is not overwritten, unless forced.
    let notes = dir.path().join("notes.txt");
    std::fs::write(&notes, "precious").unwrap();
    let out = record(&notes, &[], &touch);
    assert_eq!(out.code(), 2, "{}", out.describe());
    assert_one_error_line(&out, "exists and is not a Sonde profile; not overwriting it (--force overwrites it)");
    assert!(!marker.exists(), "the program ran");
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "precious");
    let out = record(&notes, &["--force"], &app_command("Calls", &[]));
    assert_eq!(out.code(), 0, "{}", out.describe());
    report_json(&notes);
}

#[test]
fn two_recordings_to_one_output_keep_both_profiles() {
    let dir = tmp();
    let (output, go) = (dir.path().join("p.sonde"), dir.path().join("go"));
    let mut late = app_command("Calls", &[]);
    late.insert(0, go.clone().into());
    let first = Running::spawn(
        sonde(),
        &record_args(&output, &[], &shell(r#"while [ ! -e "$1" ]; do sleep 0.02; done; shift; exec "$@""#, &late)),
    );
    let second = record_app(&output, &[], "Calls", &[]);
    assert_eq!(second.code(), 0, "{}", second.describe());
    let second_pid = report_json(&output)["pid"].clone();
    std::fs::write(&go, b"").unwrap();
    let first = first.wait(DEADLINE);
    assert_eq!(first.code(), 0, "{}", first.describe());
    assert!(first.stderr_str().contains("was written by someone else during this recording"), "{}", first.describe());
    assert_eq!(report_json(&output)["pid"], second_pid, "the second recording's profile was replaced");
    let files = sonde_files(dir.path());
    assert_eq!(files.len(), 2, "{files:?}");
    let other = files.iter().find(|f| **f != output).unwrap();
    let first_pid = report_json(other)["pid"].as_u64().unwrap();
    assert_eq!(other.file_name().unwrap().to_string_lossy(), format!("p.{first_pid}.sonde"));
}

#[test]
fn a_profile_whose_directory_vanished_is_saved_elsewhere() {
    let dir = tmp();
    let gone = dir.path().join("gone");
    std::fs::create_dir(&gone).unwrap();
    let go = dir.path().join("go");
    let mut late = app_command("Calls", &[]);
    late.insert(0, go.clone().into());
    let recording = Running::spawn(
        sonde(),
        &record_args(
            &gone.join("p.sonde"),
            &["--mode", "tracing"],
            &shell(r#"while [ ! -e "$1" ]; do sleep 0.02; done; shift; exec "$@""#, &late),
        ),
    );
    // Give sonde time to check the output, then take the directory away.
    wait_until("sonde to start the program", || {
        std::fs::read_dir(&gone).unwrap().next().is_none() && sonde_started(recording.pid())
    });
    std::fs::remove_dir(&gone).unwrap();
    std::fs::write(&go, b"").unwrap();
    let out = recording.wait(DEADLINE);
    assert_eq!(out.code(), 0, "the program's exit code must stay its own:\n{}", out.describe());
    let stderr = out.stderr_str();
    let saved = stderr
        .lines()
        .find_map(|l| l.split_once("; the profile was saved as ").map(|(_, p)| PathBuf::from(p.trim())))
        .unwrap_or_else(|| panic!("no word of where the profile went:\n{}", out.describe()));
    let report = report_json(&saved);
    std::fs::remove_file(&saved).unwrap();
    assert_eq!(calls_by_name(&report).get("Acme.Calls.Main"), Some(&1), "{}", out.describe());
}

/// True once process `pid` (sonde) has a child: the program was launched.
fn sonde_started(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).is_ok_and(|c| !c.trim().is_empty())
}

/// SIGHUP to sonde (its terminal closed) is passed on; the program dies of it (neither runtime
/// handles it), and the agent's last-chance handler still sends a snapshot.
fn a_hangup_is_passed_on_and_the_profile_written(rt: Runtime) {
    let dir = tmp();
    let file = dir.path().join("h.sonde");
    let mut recording = Running::spawn(sonde(), &trace_args(&file, &[], &rt.app_command("Sleeper", &[])));
    recording.wait_for_line("ready", DEADLINE);
    std::thread::sleep(Duration::from_millis(300));
    let pid = rustix::process::Pid::from_raw(recording.pid() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::HUP).unwrap();
    let out = recording.wait(DEADLINE);
    assert_eq!(out.code(), 128 + libc::SIGHUP, "the program's death by SIGHUP is sonde's exit:\n{}", out.describe());
    assert!(file.exists(), "no profile:\n{}", out.describe());
    let report = report_json(&file);
    assert_eq!(report["signal"], libc::SIGHUP, "{}", out.describe());
    assert!(calls_by_name(&report).get("Acme.Sleeper.Tick").copied().unwrap_or(0) >= 5, "{:?}", calls_by_name(&report));
}

on_both_runtimes!(a_hangup_is_passed_on_and_the_profile_written);

#[test]
fn a_killed_recording_leaves_nothing_behind_after_the_next() {
    let dir = tmp();
    let named = dir.path().join("socket");
    let recording = Running::spawn(
        sonde(),
        &record_args(
            &dir.path().join("k.sonde"),
            &[],
            &shell(r#"echo "$SONDE_SOCKET" > "$1"; sleep 60"#, &[named.clone().into()]),
        ),
    );
    let socket = PathBuf::from(wait_for_line_in(&named, "the program to name its socket"));
    let session_dir = socket.parent().unwrap().to_path_buf();
    kill_group(recording.pid(), libc::SIGKILL);
    drop(recording);
    assert!(session_dir.exists(), "a killed sonde cannot clean up");
    // A live recording beside it is neither removed nor disturbed by the sweep.
    let (live_named, go) = (dir.path().join("live-socket"), dir.path().join("go"));
    let live = Running::spawn(
        sonde(),
        &record_args(
            &dir.path().join("l.sonde"),
            &[],
            &shell(
                r#"echo "$SONDE_SOCKET" > "$1"; while [ ! -e "$2" ]; do sleep 0.02; done"#,
                &[live_named.clone().into(), go.clone().into()],
            ),
        ),
    );
    let live_socket = PathBuf::from(wait_for_line_in(&live_named, "the live program to name its socket"));
    let out = record(&dir.path().join("n.sonde"), &[], &[OsString::from("/bin/true")]);
    assert_one_error_line(&out, "no .NET runtime loaded the agent");
    assert!(!session_dir.exists(), "the next recording did not remove {}", session_dir.display());
    assert!(live_socket.exists(), "the sweep removed a live recording's socket");
    std::fs::write(&go, b"").unwrap();
    let live = live.wait(DEADLINE);
    assert_one_error_line(&live, "no .NET runtime loaded the agent");
}

/// Python hosting CoreCLR through pythonnet exits without shutting the runtime down: no Shutdown
/// callback ever comes. The agent's exit handler sends the final snapshot anyway — after a run of
/// .NET code, and after an error that ends the host early (its exit code kept).
#[test]
fn a_host_that_never_shuts_the_runtime_down_keeps_its_data() {
    let dir = tmp();
    let host = |file: &Path, args: &[&str]| {
        let mut command: Vec<OsString> =
            vec![python().into(), repo_file("tests/apps/host.py").into(), app("Hosted").into()];
        command.extend(args.iter().map(OsString::from));
        trace(file, &["--include", "Acme.*"], &command)
    };
    let file = dir.path().join("ok.sonde");
    let out = host(&file, &["1500"]);
    assert_eq!(out.code(), 0, "{}", out.describe());
    let report = report_json(&file);
    assert_eq!(report["incomplete"], false, "the final snapshot was lost:\n{}", out.describe());
    let calls = calls_by_name(&report);
    assert_eq!(calls.get("Acme.Hosted.Work"), Some(&1), "{calls:?}");
    assert!(calls.get("Acme.Hosted.Step").is_some_and(|&n| n > 1000), "{calls:?}");
    // Taken after Work's 1.5 s, not at the last periodic snapshot.
    let wall_ns = u64_of(&report, "wall_ns");
    assert!(wall_ns >= 1_500_000_000, "the profile ends before Work did: {wall_ns} ns");

    let file = dir.path().join("fail.sonde");
    let out = host(&file, &["300", "fail"]);
    assert_eq!(out.code(), 3, "the host's exit code is sonde's:\n{}", out.describe());
    let report = report_json(&file);
    assert_eq!(report["incomplete"], false, "{}", out.describe());
    assert_eq!(calls_by_name(&report).get("Acme.Hosted.Work"), Some(&1));
}

/// Finalizers.exe writes one line per finalizer that ran; 50 of its 150 objects are finalized
/// during the runtime's shutdown on Mono (CoreCLR does not finalize at exit). Every finalizer
/// that ran is counted: the final snapshot waits for the end of the shutdown.
fn calls_during_the_runtimes_shutdown_are_counted(rt: Runtime) {
    let dir = tmp();
    let (file, lines) = (dir.path().join("f.sonde"), dir.path().join("finalized"));
    let lines_arg = lines.to_string_lossy().into_owned();
    let out = trace(&file, &[], &rt.app_command("Finalizers", &[&lines_arg]));
    assert_eq!(out.code(), 0, "{}", out.describe());
    let ran = std::fs::read_to_string(&lines).unwrap().lines().count() as u64;
    if rt == Runtime::Mono {
        assert_eq!(ran, 150, "Mono finalizes what is left at shutdown");
    }
    let report = report_json(&file);
    assert_eq!(report["incomplete"], false);
    assert_eq!(calls_by_name(&report).get("Acme.Finalized.Finalize"), Some(&ran), "{rt:?}: finalizers that ran: {ran}");
}

on_both_runtimes!(calls_during_the_runtimes_shutdown_are_counted);
