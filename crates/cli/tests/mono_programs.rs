//! End-to-end tests of the Mono backend: `sonde record --mode tracing -- mono <App>.exe` on the
//! same C# programs (tests/apps/*.cs, compiled once with mcs) that `real_programs.rs` runs on
//! CoreCLR, then `sonde report`. The counts must be the programs' own tallies, and the same names,
//! signatures, counts and call paths as CoreCLR records for the same `.exe`. They need
//! `SONDE_MONO` as well as `SONDE_DOTNET` and `SONDE_MCS` (see `support`), and FAIL without them.

mod support;

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::time::Duration;
use support::*;

const TRACING: &[&str] = &["--mode", "tracing"];

fn tmp() -> tempfile::TempDir {
    tempfile::Builder::new().prefix("sonde-mono-it-").tempdir().expect("cannot create a temp dir")
}

fn opts<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    TRACING.iter().copied().chain(extra.iter().copied()).collect()
}

/// Mono's version as `mono --version` prints it (`Mono JIT compiler version 6.8.0.105 (...)`).
fn mono_version() -> String {
    let out = run(mono(), &[OsString::from("--version")]);
    assert_eq!(out.code(), 0, "mono --version failed:\n{}", out.describe());
    let first = out.stdout_str().lines().next().unwrap_or_default().to_string();
    first
        .split_whitespace()
        .skip_while(|w| *w != "version")
        .nth(1)
        .unwrap_or_else(|| panic!("no version in `mono --version`: {first}"))
        .to_string()
}

fn assert_mono_run(report: &Value, timing: &str) {
    assert_eq!(report["schema"], "sonde.report/1");
    assert_eq!(report["mode"], "tracing");
    assert_eq!(report["timing"], timing);
    assert_eq!(report["runtime"]["kind"], "mono", "runtime: {}", report["runtime"]);
    assert_eq!(str_of(&report["runtime"], "version"), mono_version());
    assert!(u64_of(report, "wall_ns") > 0, "wall_ns is 0");
    assert!(u64_of(report, "pid") > 0, "pid is 0");
}

/// `(name, signature)` of every method that was called.
fn called_methods(report: &Value) -> BTreeSet<(String, String)> {
    arr(report, "methods")
        .iter()
        .filter(|m| u64_of(m, "calls") > 0)
        .map(|m| (str_of(m, "name").to_string(), str_of(m, "signature").to_string()))
        .collect()
}

fn method_names(report: &Value) -> BTreeSet<String> {
    arr(report, "methods").iter().map(|m| str_of(m, "name").to_string()).collect()
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

/// Records Calls.exe on Mono with `extra` options and checks everything that does not depend on
/// the timing: output, exit code, the program's own tallies, threads, invariants.
fn record_calls_on_mono(extra: &[&str], timing: &str) -> Value {
    let direct = run_mono_app("Calls", &[]);
    assert_eq!(direct.code(), 0, "mono Calls.exe failed on its own:\n{}", direct.describe());
    let expected = expected_calls(&direct.stdout_str());

    let dir = tmp();
    let file = dir.path().join("p.sonde");
    let out = record_mono_app(&file, &opts(extra), "Calls", &[]);
    assert_eq!(out.code(), 0, "sonde record {extra:?} -- mono Calls.exe:\n{}", out.describe());
    assert_eq!(out.stdout, direct.stdout, "stdout under sonde differs from stdout without it:\n{}", out.describe());
    assert_stderr_passes_through(&out.stderr, &direct.stderr);

    let report = report_json(&file);
    assert_mono_run(&report, timing);
    assert_eq!(report["exit_code"], 0);
    assert_eq!(report["incomplete"], false, "a clean exit must give a complete profile");
    assert_eq!(report["lost"], 0);
    assert_calls(&report, &expected, &format!("mono Calls.exe {extra:?}"));
    check_invariants(&report);

    let threads = arr(&report, "threads");
    let workers = threads.iter().filter(|t| u64_of(t, "calls") == 1 + 10_000).count();
    assert_eq!(workers, 4, "expected 4 worker threads with Run + 10,000 Step calls each: {threads:#?}");
    let names = method_names(&report);
    for name in ["Acme.Ünïcødé.Grüße", "Acme.Ünïcødé.計算", "Acme.Outer+Inner.Nested", "Acme.Node`1..ctor"]
    {
        assert!(names.contains(name), "{name} is missing from the methods: {names:?}");
    }
    report
}

#[test]
fn calls_match_the_program_and_coreclr() {
    let mono = record_calls_on_mono(&[], "exact");
    assert!(mono["compensation"].is_object(), "exact timing reports its compensation: {}", mono["compensation"]);
    let total: u64 = arr(&mono, "nodes").iter().filter(|n| n["parent"].is_null()).map(|n| u64_of(n, "total_ns")).sum();
    assert!(total > 0, "exact timing measured no time at all");

    // The same .exe on CoreCLR: the same methods (names and signatures), the same counts, the
    // same call paths — recursion, tail calls, exceptions and threads included.
    let dir = tmp();
    let file = dir.path().join("coreclr.sonde");
    let out = record_app(&file, TRACING, "Calls", &[]);
    assert_eq!(out.code(), 0, "sonde record -- dotnet Calls.exe:\n{}", out.describe());
    let coreclr = report_json(&file);
    assert_eq!(coreclr["runtime"]["kind"], "coreclr");
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
fn exact_times_add_up() {
    let dir = tmp();
    let file = dir.path().join("p.sonde");
    let out = record_mono_app(&file, TRACING, "Calls", &[]);
    assert_eq!(out.code(), 0, "{}", out.describe());
    let report = report_json(&file);
    let violations = exact_additivity_violations(&report);
    assert!(violations.is_empty(), "times do not add up exactly:\n{}", violations.join("\n"));
}

#[test]
fn timing_sampled_keeps_counts_exact() {
    let report = record_calls_on_mono(&["--timing", "sampled", "--interval-us", "200"], "sampled");
    assert_eq!(u64_of(&report, "sample_interval_ns"), 200_000);
    assert!(report["compensation"].is_null(), "sampled timing has no hook cost to compensate");
    let samples: u64 = arr(&report, "nodes").iter().map(|n| u64_of(n, "self_samples")).sum();
    assert!(samples > 0, "no samples at all with a 200 µs sampler over Calls.exe");
    let violations = exact_additivity_violations(&report);
    assert!(violations.is_empty(), "sampled times do not add up:\n{}", violations.join("\n"));
}

#[test]
fn exit_code_and_output_pass_through() {
    let direct = run_mono_app("ExitCode", &["7"]);
    assert_eq!(direct.code(), 7, "mono ExitCode.exe 7 on its own:\n{}", direct.describe());
    assert_eq!(direct.stderr_str(), "stderr: exiting with code 7\n");

    let dir = tmp();
    let file = dir.path().join("p.sonde");
    let out = record_mono_app(&file, TRACING, "ExitCode", &["7"]);
    assert_eq!(out.code(), 7, "sonde must exit with the program's code:\n{}", out.describe());
    assert_eq!(out.stdout, direct.stdout, "stdout differs under sonde:\n{}", out.describe());
    assert_stderr_passes_through(&out.stderr, &direct.stderr);
    let report = report_json(&file);
    assert_mono_run(&report, "exact");
    assert_eq!(report["exit_code"], 7);
    assert_eq!(report["incomplete"], false);
    assert_calls(&report, &expected_calls(&direct.stdout_str()), "mono ExitCode.exe 7");
    check_invariants(&report);

    let text = report_text(&file);
    assert_eq!(text.code(), 0, "{}", text.describe());
    assert!(text.stdout_str().contains(&format!("mono {}", mono_version())), "runtime missing:\n{}", text.describe());
}

#[test]
fn unhandled_exception_keeps_all_data() {
    // Mono prints an unhandled exception and exits with status 1 (CoreCLR aborts instead); it
    // calls no shutdown callback, but the agent's exit handler still sends everything.
    let direct = run_mono_app("Crash", &[]);
    assert_eq!(direct.code(), 1, "mono Crash.exe on its own should exit with 1:\n{}", direct.describe());
    let expected = expected_calls(&direct.stdout_str());

    let dir = tmp();
    let file = dir.path().join("crash.sonde");
    let out = record_mono_app(&file, TRACING, "Crash", &[]);
    assert_eq!(out.code(), 1, "sonde must exit with the program's code:\n{}", out.describe());
    assert_eq!(out.stdout, direct.stdout, "stdout differs under sonde");
    assert!(
        out.stderr_str().contains("Acme.CrashTestException"),
        "Mono's report did not pass through:\n{}",
        out.describe()
    );
    let report = report_json(&file);
    assert_mono_run(&report, "exact");
    check_invariants(&report);
    assert_eq!(report["exit_code"], 1);
    assert_calls(&report, &expected, "mono Crash.exe");
}

#[test]
fn filters_and_all() {
    let direct = run_mono_app("Calls", &[]);
    let expected = expected_calls(&direct.stdout_str());
    let dir = tmp();

    let file = dir.path().join("exclude.sonde");
    let out = record_mono_app(&file, &opts(&["--exclude", "Acme.Calls.Fib"]), "Calls", &[]);
    assert_eq!(out.code(), 0, "{}", out.describe());
    let report = report_json(&file);
    check_invariants(&report);
    assert!(!method_names(&report).contains("Acme.Calls.Fib"), "excluded Acme.Calls.Fib was recorded");
    let others: Vec<(String, u64)> = expected.iter().filter(|(n, _)| n != "Acme.Calls.Fib").cloned().collect();
    assert_calls(&report, &others, "mono Calls.exe --exclude Acme.Calls.Fib");

    let file = dir.path().join("include.sonde");
    let out = record_mono_app(&file, &opts(&["--include", "Acme.Worker.*"]), "Calls", &[]);
    assert_eq!(out.code(), 0, "{}", out.describe());
    let report = report_json(&file);
    check_invariants(&report);
    for name in method_names(&report) {
        assert!(name.starts_with("Acme.Worker."), "--include 'Acme.Worker.*' recorded {name}");
    }
    let workers: Vec<(String, u64)> = expected.iter().filter(|(n, _)| n.starts_with("Acme.Worker.")).cloned().collect();
    assert_calls(&report, &workers, "mono Calls.exe --include Acme.Worker.*");

    // --all traces the framework too (Debian's mscorlib is precompiled: the controller asks Mono
    // not to use its AOT code), without disturbing the program's own counts.
    let direct = run_mono_app("ExitCode", &["0"]);
    let file = dir.path().join("all.sonde");
    let out = record_mono_app(&file, &opts(&["--all"]), "ExitCode", &["0"]);
    assert_eq!(out.code(), 0, "{}", out.describe());
    assert_eq!(out.stdout, direct.stdout);
    let report = report_json(&file);
    check_invariants(&report);
    let calls = calls_by_name(&report);
    assert!(
        calls.iter().any(|(n, &c)| n.starts_with("System.Console.") && c > 0),
        "--all recorded no call to System.Console: {calls:?}"
    );
    assert_calls(&report, &expected_calls(&direct.stdout_str()), "mono ExitCode.exe with --all");
}

#[test]
fn both_runtimes_in_one_recording() {
    // A shell starts a Mono program and a CoreCLR one: the controller sets up both runtimes
    // whatever the command, and each process gets its own profile.
    let dir = tmp();
    let file = dir.path().join("multi.sonde");
    let script = r#""$0" "$1" >/dev/null; "$2" "$3" 3 >/dev/null"#;
    let command: Vec<OsString> = vec![
        "sh".into(),
        "-c".into(),
        script.into(),
        mono().into(),
        app("Calls").into(),
        dotnet().into(),
        app("ExitCode").into(),
    ];
    let out = record(&file, TRACING, &command);
    assert_eq!(out.code(), 3, "sonde must exit with sh's code (ExitCode.exe's 3):\n{}", out.describe());
    let files = sonde_files(dir.path());
    assert_eq!(files.len(), 2, "expected two multi.<pid>.sonde files, found {files:?}\n{}", out.describe());
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
fn sigterm_keeps_data() {
    // Mono leaves SIGTERM at its default action: the process dies without a shutdown. The
    // agent's handler sends a last snapshot first.
    let dir = tmp();
    let file = dir.path().join("term.sonde");
    let args = record_args(&file, TRACING, &mono_app_command("Sleeper", &[]));
    let mut sonde = Running::spawn(sonde(), &args);
    sonde.wait_for_line("ready", Duration::from_secs(20));
    std::thread::sleep(Duration::from_millis(300));
    let pid = libc::pid_t::try_from(sonde.pid()).expect("pid out of range");
    // SAFETY: kill(2) only sends SIGTERM to the sonde process this test started.
    unsafe {
        libc::kill(pid, libc::SIGTERM);
    }
    let out = sonde.wait(Duration::from_secs(10));
    assert_eq!(out.code(), 143, "sonde must exit with the target's code (128 + SIGTERM):\n{}", out.describe());
    assert!(file.is_file(), "no profile was written after SIGTERM:\n{}", out.describe());
    let report = report_json(&file);
    assert_mono_run(&report, "exact");
    check_invariants(&report);
    let ticks = calls_by_name(&report).get("Acme.Sleeper.Tick").copied().unwrap_or(0);
    // ~300 ms of 20 ms ticks is ~15 calls, all before the first periodic snapshot (1 s).
    assert!(ticks >= 5, "Acme.Sleeper.Tick recorded {ticks} times after ~300 ms of running");
}

/// sonde's stderr must end with exactly one `sonde: ...` line containing `needle`, after what
/// the program itself wrote there; no panic, and a failure exit code.
fn assert_sonde_error(out: &Output, program_stderr: &[u8], needle: &str) {
    let stderr = out.stderr_str();
    assert!(!stderr.contains("panicked"), "sonde panicked:\n{}", out.describe());
    assert_ne!(out.code(), 0, "expected a failure:\n{}", out.describe());
    assert!(out.stderr.starts_with(program_stderr), "the program's stderr did not pass through:\n{}", out.describe());
    let rest = String::from_utf8_lossy(&out.stderr[program_stderr.len()..]).into_owned();
    let lines: Vec<&str> = rest.lines().collect();
    assert_eq!(lines.len(), 1, "expected exactly one line from sonde:\n{}", out.describe());
    assert!(lines[0].starts_with("sonde: "), "not a sonde line: {:?}", lines[0]);
    assert!(lines[0].contains(needle), "the error line does not mention {needle:?}: {:?}", lines[0]);
}

#[test]
fn module_that_does_not_load_is_reported() {
    // An "agent" that is no Sonde agent: Mono finds libmono-profiler-sonde.so but cannot load it
    // (or finds no entry point in it), and runs the program on without a profiler and without a
    // word. The controller must say that Mono's module did not load.
    let dir = tmp();
    let fake = dir.path().join("libnot_an_agent.so");
    std::fs::write(&fake, b"not a shared library").expect("cannot write the fake agent");
    let direct = run_mono_app("ExitCode", &["0"]);
    let file = dir.path().join("none.sonde");
    let args = record_args(&file, TRACING, &mono_app_command("ExitCode", &["0"]));
    let out = Running::spawn_with_env(sonde(), &args, &[("SONDE_AGENT", fake.into())]).wait(DEADLINE);
    assert_eq!(out.stdout, direct.stdout, "the program did not run normally:\n{}", out.describe());
    assert_sonde_error(&out, &direct.stderr, "libmono-profiler-sonde.so");
    assert!(!file.exists(), "a profile was written without an agent");
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
