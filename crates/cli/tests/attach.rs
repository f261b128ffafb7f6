//! `sonde record --pid`: attaching to a .NET program that was started without Sonde
//! (`tests/apps/Service.cs`: a worker thread named "spinner" burns CPU in `Service.Spin` until a
//! stop file appears; the program then prints a fixed result and exits with 7), sampling it,
//! detaching, and attaching again — on the real .NET 8 runtime, in this mount namespace and in a
//! private one. Like every integration test, these FAIL (never skip) without `SONDE_DOTNET` and
//! `SONDE_MCS` (`SONDE_MONO` for the Mono refusal).

mod support;

use serde_json::Value;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;
use support::*;

fn scratch() -> tempfile::TempDir {
    support::scratch("sonde-attach-")
}

/// `sonde record --pid PID --duration SECS -o FILE [extra]`.
fn attach(pid: u32, secs: &str, file: &Path, extra: &[&str]) -> Output {
    let mut args = attach_args(pid, file);
    args.extend(["--duration", secs].iter().chain(extra).map(OsString::from));
    sonde_cmd(&args)
}

/// `record --pid PID -o FILE --force`, until stopped.
fn attach_args(pid: u32, file: &Path) -> Vec<OsString> {
    vec!["record".into(), "--pid".into(), pid.to_string().into(), "-o".into(), file.into(), "--force".into()]
}

/// The thread names of process `pid`, and how many perf_event descriptors it holds.
fn threads_and_timers(pid: u32) -> (Vec<String>, usize) {
    let descriptors = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .flatten()
        .filter(|fd| std::fs::read_link(fd.path()).is_ok_and(|l| l.to_string_lossy().contains("perf_event")))
        .count();
    // The kernel's sampler keeps no descriptor: its events live as long as their rings' mappings.
    let rings = std::fs::read_to_string(format!("/proc/{pid}/maps"))
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains("perf_event"))
        .count();
    (thread_names(pid), descriptors + rings)
}

/// The checks every attached profile of Service.exe passes: attached and detached, sampled, and
/// `Service.Spin` (on the thread that ran before the attach) the hot method.
fn assert_attached_profile(report: &Value, detached: bool) {
    assert_eq!(report["attached"], true, "{report:#}");
    let attached_at = report["attached_at_ns"].as_u64().expect("attached_at_ns");
    match report["detached_at_ns"].as_u64() {
        Some(detached_at) => assert!(detached && detached_at > attached_at, "{report:#}"),
        None => assert!(!detached, "no detached_at_ns: {report:#}"),
    }
    let methods = arr(report, "methods");
    let total: u64 = methods.iter().map(|m| u64_of(m, "self_samples")).sum();
    let spin: u64 =
        methods.iter().filter(|m| str_of(m, "name") == "Service.Spin").map(|m| u64_of(m, "self_samples")).sum();
    assert!(total >= 50, "only {total} samples");
    // The hot method, and nearly all of its thread's samples. (Not a share of all samples: the
    // runtime's own work on other threads during the attach is about fixed, while the spinner
    // gets less of the CPU on a busy machine — 2 to 4 of this file's tests failed a share of 80%
    // when they ran in parallel with a loaded machine.)
    let top = methods.iter().map(|m| u64_of(m, "self_samples")).max().unwrap_or(0);
    assert_eq!(spin, top, "Service.Spin has {spin} of {total} samples, another method {top}");
    let spinner = arr(report, "threads").iter().find(|t| t["name"] == "spinner").expect("the spinner thread, by name");
    let on_spinner = u64_of(spinner, "samples");
    assert!(spin * 10 >= on_spinner * 8, "Service.Spin has {spin} of its thread's {on_spinner} samples");
    assert!(on_spinner >= spin * 9 / 10, "{spinner}");
}

#[test]
fn attach_samples_a_running_program_detaches_and_attaches_again() {
    let dir = scratch();
    let stop = dir.path().join("stop");
    let service = start_service(&dotnet(), &stop, &[]);
    let pid = service.pid();
    // The socket a killed runtime with the same pid left behind, newer than the live one: no one
    // listens there (a long test run reuses pids, and this once made an attach fail).
    let stale = std::env::temp_dir().join(format!("dotnet-diagnostic-{pid}-1-socket"));
    drop(std::os::unix::net::UnixListener::bind(&stale).expect("a stale socket"));
    for round in 1..=2 {
        let file = dir.path().join(format!("attach{round}.sonde"));
        let out = attach(pid, "1", &file, &[]);
        assert_eq!(out.code(), 0, "attach {round}: {}", out.describe());
        assert!(out.stderr_str().contains(&format!("attached to process {pid}")), "{}", out.describe());
        assert!(out.stderr_str().contains(&format!("detached from process {pid}")), "{}", out.describe());
        assert_attached_profile(&report_json(&file), true);
        // Nothing of the agent runs in the process any more: no timer, and no thread once the
        // agent's IPC thread has asked the runtime to detach it (just after the final snapshot).
        assert_eq!(threads_and_timers(pid).1, 0, "perf_event timers left after the detach");
        wait_detached(pid);
    }
    let _ = std::fs::remove_file(&stale);
    stop_service(service, &stop);
}

/// The target is SIGKILLed while attached: the profile still gets written, from the latest
/// periodic snapshot (at most about a second old), and says the process ended.
#[test]
fn a_process_killed_while_attached_leaves_its_last_snapshot() {
    let dir = scratch();
    let stop = dir.path().join("stop");
    let service = start_service(&dotnet(), &stop, &[]);
    let pid = service.pid();
    let file = dir.path().join("killed.sonde");
    let sonde = Running::spawn(sonde(), &attach_args(pid, &file));
    // Once the recording holds a snapshot of a second or more, with a few hundred samples (asked
    // for through its control socket: when the periodic ones arrive depends on the machine's
    // load), the kill.
    let session = sonde.pid().to_string();
    let taken = dir.path().join("taken.sonde");
    wait_until("a snapshot with samples from the attached process", || {
        let to = taken.to_str().unwrap();
        let out = sonde_cmd(&["snapshot", "--to", to, "--session", &session].map(OsString::from));
        out.code() == 0 && {
            let report = report_json(&taken);
            u64_of(&report, "samples_taken") >= 200 && u64_of(&report, "wall_ns") >= 1_000_000_000
        }
    });
    kill_group(pid, libc::SIGKILL);
    let _ = service.wait(Duration::from_secs(30));
    let out = sonde.wait(Duration::from_secs(30));
    assert_eq!(out.code(), 0, "{}", out.describe());
    assert!(out.stderr_str().contains("ended while attached"), "{}", out.describe());
    let report = report_json(&file);
    assert_attached_profile(&report, false);
    assert_eq!(report["incomplete"], true);
    // At least the snapshot seen before the kill arrived: ≥ 1 s of samples.
    assert!(u64_of(&report, "wall_ns") >= 1_000_000_000, "wall_ns {}", report["wall_ns"]);
}

/// `sonde` itself is SIGKILLed while attached: the agent notices its controller is gone, stops
/// sampling and detaches on its own; the program runs on unharmed and can be attached to again.
#[test]
fn a_killed_controller_leaves_the_program_unprofiled_and_unharmed() {
    let dir = scratch();
    let stop = dir.path().join("stop");
    let service = start_service(&dotnet(), &stop, &[]);
    let pid = service.pid();
    let file = dir.path().join("orphan.sonde");
    let mut controller = Running::spawn(sonde(), &attach_args(pid, &file));
    // The sampler runs: its drain thread is there, whichever sampler raises the samples (the
    // kernel's has no thread of its own; the signal sampler's thread may come a moment later).
    controller
        .wait_while_running("the agent to sample the program", || thread_names(pid).iter().any(|n| n == "sonde-drain"));
    kill_group(controller.pid(), libc::SIGKILL);
    let _ = controller.wait(Duration::from_secs(30));
    wait_until("the orphaned agent to stop and detach", || {
        let (names, timers) = threads_and_timers(pid);
        timers == 0 && !names.iter().any(|n| n.starts_with("sonde"))
    });
    let again = dir.path().join("again.sonde");
    let out = attach(pid, "1", &again, &[]);
    assert_eq!(out.code(), 0, "{}", out.describe());
    assert_attached_profile(&report_json(&again), true);
    stop_service(service, &stop);
}

/// The same for a program sonde started: SIGKILL gives it no chance to send a final snapshot,
/// so the profile is the controller's latest periodic one — about a second old, not the first
/// second's (the agent once stopped answering after its first periodic snapshot).
#[test]
fn a_launched_program_killed_keeps_all_but_its_last_second() {
    let dir = scratch();
    let stop = dir.path().join("stop");
    let file = dir.path().join("launched-killed.sonde");
    let command = record_args(&file, &[], &[dotnet().into(), app("Service").into(), stop.into()]);
    let mut recording = Running::spawn(sonde(), &command);
    recording.wait_for_line("ready", Duration::from_secs(60));
    let program = child_of(recording.pid());
    std::thread::sleep(Duration::from_millis(3600));
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(program as i32).unwrap(),
        rustix::process::Signal::KILL,
    )
    .unwrap();
    let out = recording.wait(Duration::from_secs(60));
    assert_eq!(out.code(), 128 + libc::SIGKILL, "{}", out.describe());
    let report = report_json(&file);
    assert_eq!(report["incomplete"], true);
    assert_eq!(report["signal"], libc::SIGKILL);
    // Snapshots are asked for at 1, 2 and 3 s: with the kill at 3.6 s, the profile ends after
    // 2 s at least even on a busy machine (where the agent answered only its first request, at
    // ~1 s).
    let wall = u64_of(&report, "wall_ns");
    assert!(wall >= 1_800_000_000, "the profile ends at {:.2} s of a 3.6 s run", wall as f64 / 1e9);
}

/// A process in a private mount namespace with its own temporary directory (a container seen
/// from the host): its diagnostics socket, the agent's copy and the session's socket all live
/// there, which this namespace reaches only through /proc/PID/root.
#[test]
fn attach_into_a_private_mount_namespace() {
    attach_into_namespaces(&["--mount", "--propagation", "private"]);
}

/// The same in a PID namespace too, as a container has: the program is pid 1 there and names its
/// diagnostics socket after that pid; its agent sees the controller as pid 0 (outside its
/// namespace) and still checks the controller's uid.
#[test]
fn attach_into_a_private_pid_and_mount_namespace() {
    attach_into_namespaces(&["--pid", "--fork", "--mount-proc", "--mount", "--propagation", "private"]);
}

/// The namespace's temporary directory is a tmpfs mounted on a fresh directory and named by
/// `TMPDIR` (where the runtime puts its diagnostics socket and the attach puts the agent), a
/// short path under `/tmp` — not a tmpfs over `/tmp` itself: that would hide the runtime and the test programs of a checkout
/// cloned under `/tmp` (issue 37, item 8).
fn attach_into_namespaces(unshare_args: &[&str]) {
    if !rustix::process::geteuid().is_root() {
        panic!("this test makes namespaces and needs root (as CI runs it)");
    }
    let dir = scratch();
    let stop = dir.path().join("stop");
    // Under /tmp, not in the checkout: the runtime's socket path, seen from here through
    // /proc/PID/root, must stay shorter than a socket address allows (108 bytes) wherever the
    // checkout lives.
    let ns_tmp = tempfile::Builder::new().prefix("sonde-ns-").tempdir_in("/tmp").unwrap();
    let own_tmp = ns_tmp.path().to_path_buf();
    let script = format!(
        "mount -t tmpfs tmpfs '{tmp}' && TMPDIR='{tmp}' exec '{}' '{}' '{}'",
        dotnet().display(),
        app("Service").display(),
        stop.display(),
        tmp = own_tmp.display(),
    );
    let unshare = PathBuf::from("/usr/bin/unshare");
    let mut args: Vec<OsString> = unshare_args.iter().map(OsString::from).collect();
    args.extend(["--", "sh", "-c", &script].map(OsString::from));
    let mut service = Running::spawn(&unshare, &args);
    service.wait_for_line("ready", Duration::from_secs(60));
    // `unshare` execs sh, which execs dotnet: the same process — or, with `--fork`, its child.
    let pid = if unshare_args.contains(&"--fork") { child_of(service.pid()) } else { service.pid() };
    let names =
        |dir: &Path| -> Vec<OsString> { std::fs::read_dir(dir).unwrap().flatten().map(|e| e.file_name()).collect() };
    let theirs = names(&Path::new(&format!("/proc/{pid}/root")).join(own_tmp.strip_prefix("/").unwrap()));
    assert!(
        theirs.iter().any(|n| n.to_string_lossy().starts_with("dotnet-diagnostic-")),
        "no diagnostics socket in the process's own temporary directory: {theirs:?}"
    );
    assert!(names(&own_tmp).is_empty(), "the process's temporary directory is visible here: not private");
    let file = dir.path().join("ns.sonde");
    let out = attach(pid, "1", &file, &[]);
    assert_eq!(out.code(), 0, "{}", out.describe());
    assert_attached_profile(&report_json(&file), true);
    stop_service(service, &stop);
}

/// Every process that cannot be attached to gets one line that says why, and exit code 2.
#[test]
fn what_cannot_be_attached_to_is_refused_in_one_line() {
    let dir = scratch();
    let file = dir.path().join("never.sonde");
    let refused = |pid: u32, extra: &[&str], want: &str| {
        let out = attach(pid, "1", &file, extra);
        assert_eq!(out.code(), 2, "{}", out.describe());
        let stderr = out.stderr_str();
        assert_eq!(stderr.lines().count(), 1, "not one line: {stderr:?}");
        assert!(stderr.contains(want), "{stderr:?} does not say {want:?}");
        assert!(!file.exists(), "a profile was written");
    };
    // --duration without --pid.
    let out = sonde_cmd(&["record".into(), "--duration".into(), "1".into(), "--".into(), "true".into()]);
    assert_eq!(out.code(), 2, "{}", out.describe());
    assert_eq!(
        out.stderr_str().trim(),
        "sonde: --duration goes with --pid (a program sonde starts runs until it ends)"
    );
    // No such process; not .NET at all.
    refused(u32::MAX - 1, &[], "no process with pid");
    let sleeper = Running::spawn("sleep", &["30".into()]);
    refused(sleeper.pid(), &[], "is not a .NET (CoreCLR) process");
    kill_group(sleeper.pid(), libc::SIGKILL);
    let _ = sleeper.wait(Duration::from_secs(10));

    // Mono has no attach API.
    let stop = dir.path().join("stop-mono");
    let mono_service = start_service(&mono(), &stop, &[]);
    refused(mono_service.pid(), &[], "runs Mono, which has no attach API");
    stop_service(mono_service, &stop);

    // Diagnostics switched off.
    let stop = dir.path().join("stop-nodiag");
    let off = start_service(&dotnet(), &stop, &[("DOTNET_EnableDiagnostics", "0".into())]);
    refused(off.pid(), &[], "DOTNET_EnableDiagnostics=0");
    stop_service(off, &stop);

    // Tracing needs the program to start under sonde; a program started under sonde already has
    // a profiler.
    let stop = dir.path().join("stop-traced");
    let service = start_service(&dotnet(), &stop, &[]);
    refused(service.pid(), &["--mode", "tracing"], "tracing cannot attach to a running process");
    stop_service(service, &stop);

    let stop = dir.path().join("stop-launched");
    let launched_file = dir.path().join("launched.sonde");
    let mut command =
        record_args(&launched_file, &["--rate", "10"], &[dotnet().into(), app("Service").into(), stop.clone().into()]);
    command.insert(0, "-q".into());
    let mut launched = Running::spawn(sonde(), &command);
    launched.wait_for_line("ready", Duration::from_secs(60));
    let child = child_of(launched.pid());
    refused(child, &[], "already has a profiler loaded");
    std::fs::write(&stop, b"").unwrap();
    let out = launched.wait(Duration::from_secs(60));
    assert_eq!(out.code(), SERVICE_EXIT, "{}", out.describe());
}

/// A program started under `sonde record` has Sonde's agent, loaded at start-up: an attach is
/// refused at once, from the process's environment and memory map, without asking its runtime —
/// whose refusal came only after loading a copy of the agent into the process, and was then
/// retried for 10 s as if that copy were an earlier attach's.
#[test]
fn a_process_started_under_sonde_is_refused_at_once() {
    let dir = scratch();
    let stop = dir.path().join("stop");
    let launched_file = dir.path().join("launched.sonde");
    let mut command =
        record_args(&launched_file, &["--rate", "10"], &[dotnet().into(), app("Service").into(), stop.clone().into()]);
    command.insert(0, "-q".into());
    let mut launched = Running::spawn(sonde(), &command);
    launched.wait_for_line("ready", Duration::from_secs(60));
    let child = child_of(launched.pid());
    let file = dir.path().join("never.sonde");
    let started = std::time::Instant::now();
    let out = attach(child, "1", &file, &[]);
    let took = started.elapsed();
    assert_eq!(out.code(), 2, "{}", out.describe());
    // Nothing was sent: no copy of the agent from an attach's session directory in the process.
    let maps = std::fs::read_to_string(format!("/proc/{child}/maps")).expect("the process's memory map");
    let copies: Vec<&str> = maps.lines().filter(|l| l.contains("/sonde-ipc-")).collect();
    assert!(copies.is_empty(), "the attach loaded the agent into the process: {copies:?}");
    // Generous: the refusal needs no waiting at all; before, 10 s of retries.
    assert!(took < Duration::from_secs(5), "refused after {took:?}");
    assert_eq!(
        out.stderr_str().trim(),
        format!(
            "sonde: process {child} already has a profiler loaded: Sonde's agent, at start-up (it was started under `sonde record`, which records it); the runtime takes one per process"
        )
    );
    assert!(!file.exists(), "a profile was written");
    std::fs::write(&stop, b"").unwrap();
    let out = launched.wait(Duration::from_secs(60));
    assert_eq!(out.code(), SERVICE_EXIT, "{}", out.describe());
}

/// Another user's process: refused before anything is sent to it (sonde runs as `nobody`, the
/// program as this user).
#[test]
fn another_users_process_is_refused() {
    if !rustix::process::geteuid().is_root() {
        panic!("this test acts as a second, unprivileged user and needs root to become it (as CI runs it)");
    }
    let dir = scratch();
    let stop = dir.path().join("stop");
    let service = start_service(&dotnet(), &stop, &[]);
    // A copy of sonde that `nobody` can run, in a directory it can enter.
    let shared = tempfile::Builder::new().prefix("sonde-attach-user-").tempdir_in(std::env::temp_dir()).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(shared.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let copy = shared.path().join("sonde");
    std::fs::copy(sonde(), &copy).unwrap();
    let out = std::process::Command::new("setpriv")
        .args(["--reuid", "65534", "--regid", "65534", "--clear-groups", "--"])
        .arg(&copy)
        .args(["record", "--pid", &service.pid().to_string(), "--duration", "1", "-o", "/dev/null/x.sonde"])
        .current_dir("/")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("runs as uid 0, not as this user (uid 65534)"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    stop_service(service, &stop);
}
