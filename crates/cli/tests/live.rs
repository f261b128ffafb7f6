//! Live profiling on the real .NET 8 runtime: `sonde dump` (the stacks of a running program's
//! threads, a blocked one included), `sonde top` in a real terminal (tmux), and the control
//! socket of a running `sonde record` (`sonde sessions`, `snapshot`, `pause`, `resume`, `stop`).
//! The program is `tests/apps/Service.cs`: a "spinner" thread burns CPU in `Service.Spin`, a
//! "parked" thread waits on a monitor in `Service.Park`, the main thread sleeps in a loop in
//! `Service.Main` until a stop file appears; it then prints a fixed result and exits with 7. Like
//! every integration test, these FAIL (never skip) without `SONDE_DOTNET`, `SONDE_MCS` and
//! `SONDE_TMUX`.

mod support;

use serde_json::Value;
use std::ffi::OsString;
use std::path::Path;
use std::time::Duration;
use support::*;

fn scratch() -> tempfile::TempDir {
    support::scratch("sonde-live-")
}

fn sonde_os(args: &[&str]) -> Output {
    sonde_cmd(&args.iter().map(OsString::from).collect::<Vec<_>>())
}

/// The frames (method names, innermost first) of the thread named `name` in a dump.
fn frames_of<'a>(dump: &'a Value, name: &str) -> Vec<&'a str> {
    let thread = arr(dump, "threads")
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("no thread {name:?} in the dump: {dump:#}"));
    assert!(thread["os_tid"].as_u64().is_some_and(|t| t > 0), "{thread}");
    arr(thread, "frames").iter().map(|f| str_of(f, "method")).collect()
}

/// `callee` directly below `caller` (innermost first: callee, then caller).
fn calls(frames: &[&str], caller: &str, callee: &str) -> bool {
    frames.windows(2).any(|w| w[0] == callee && w[1] == caller)
}

#[test]
fn dump_shows_every_thread_a_blocked_one_included_then_detaches() {
    let dir = scratch();
    let stop = dir.path().join("stop");
    let service = start_service(&dotnet(), &stop, &[]);
    let pid = service.pid();

    let out = sonde_os(&["dump", "--pid", &pid.to_string(), "--json"]);
    assert_eq!(out.code(), 0, "{}", out.describe());
    let dump: Value = serde_json::from_str(&out.stdout_str()).unwrap_or_else(|e| panic!("{e}: {}", out.describe()));
    assert_eq!(dump["pid"], pid);
    assert_eq!(dump["runtime"]["kind"], "coreclr");
    assert!(str_of(&dump["runtime"], "version").starts_with("8."), "{dump:#}");
    // Blocked on a monitor since it started (before the attach), in the C library's wait, where
    // no frame-pointer walk gets through: the runtime's walk finds its managed frames.
    let parked = frames_of(&dump, "parked");
    assert_eq!(parked[..2], ["System.Threading.Monitor.Wait", "Service.Park"], "parked: {parked:?}");
    // The main thread is in its polling loop (sleeping, or looking for the stop file).
    let main = arr(&dump, "threads").iter().find(|t| t["os_tid"] == pid).expect("the main thread");
    let main: Vec<&str> = arr(main, "frames").iter().map(|f| str_of(f, "method")).collect();
    assert!(main.contains(&"Service.Main"), "main: {main:?}");
    // Running: somewhere in its loop, innermost frame first.
    let spinner = frames_of(&dump, "spinner");
    assert!(spinner.contains(&"Service.Work"), "spinner: {spinner:?}");
    assert!(spinner[0] == "Service.Work" || calls(&spinner, "Service.Work", "Service.Spin"), "spinner: {spinner:?}");
    for frame in arr(&dump, "threads").iter().flat_map(|t| arr(t, "frames")) {
        assert!(frame["module"].is_string(), "{frame}");
    }
    wait_detached(pid);

    // The text form: one block per thread, innermost frame first.
    let out = sonde_os(&["dump", "--pid", &pid.to_string()]);
    assert_eq!(out.code(), 0, "{}", out.describe());
    let text = out.stdout_str();
    assert!(text.starts_with(&format!("Process {pid} (coreclr 8.")), "{text}");
    let block = |name: &str| {
        text.split("\nThread ")
            .find(|b| b.contains(&format!("\"{name}\"")))
            .unwrap_or_else(|| panic!("no {name} block: {text}"))
    };
    assert!(
        block("parked").contains(
            "    System.Threading.Monitor.Wait (System.Private.CoreLib.dll)\n    Service.Park (Service.exe)\n"
        ),
        "{text}"
    );
    assert!(block("spinner").contains("    Service.Work (Service.exe)"), "{text}");
    wait_detached(pid);
    stop_service(service, &stop);
}

/// One loaded agent serves every attach: 50 attach/detach cycles on one process (`sonde dump`,
/// and a `sonde record --pid` now and then), each as good as the first — the blocked thread's
/// stack found, the recording's samples and wall time its own, not the sessions' before it —
/// with one copy of the agent mapped in the end, no thread of the agent's left between them,
/// the process's memory flat, and its output and exit code what they always are.
#[test]
fn fifty_attaches_to_one_process_each_work_and_leave_it_unchanged() {
    let dir = scratch();
    let stop = dir.path().join("stop");
    let service = start_service(&dotnet(), &stop, &[]);
    let pid = service.pid();
    let rss_kb = || -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
        line.split_whitespace().nth(1).unwrap().parse().unwrap()
    };
    // Resident memory after each cycle: glibc's arenas and the runtime's own structures grow
    // over the first attaches and then stay; a leak per attach keeps growing.
    let mut rss = Vec::new();
    for cycle in 1..=50 {
        if cycle % 25 == 0 {
            let file = dir.path().join(format!("{cycle}.sonde"));
            let args = ["record", "--pid", &pid.to_string(), "--duration", "1", "-o"];
            let mut args: Vec<OsString> = args.iter().map(OsString::from).collect();
            args.push(file.clone().into());
            let out = sonde_cmd(&args);
            assert_eq!(out.code(), 0, "cycle {cycle}: {}", out.describe());
            let report = report_json(&file);
            // This recording's second, not the time since the first attach.
            let wall = u64_of(&report, "wall_ns");
            assert!((500_000_000..20_000_000_000).contains(&wall), "cycle {cycle}: wall {wall} ns");
            let spin: u64 = arr(&report, "methods")
                .iter()
                .filter(|m| str_of(m, "name") == "Service.Spin")
                .map(|m| u64_of(m, "self_samples"))
                .sum();
            let taken = u64_of(&report, "samples_taken");
            assert!(spin > 0, "cycle {cycle}: no sample of Service.Spin");
            // At the default 1 kHz, about a second's worth (the process has 2 cores at most).
            assert!(taken < 10_000, "cycle {cycle}: {taken} samples in one second: an earlier session's counted too");
        } else {
            let out = sonde_os(&["dump", "--pid", &pid.to_string(), "--json"]);
            assert_eq!(out.code(), 0, "cycle {cycle}: {}", out.describe());
            let dump: Value = serde_json::from_str(&out.stdout_str())
                .unwrap_or_else(|e| panic!("cycle {cycle}: {e}: {}", out.describe()));
            let parked = frames_of(&dump, "parked");
            assert_eq!(parked[..2], ["System.Threading.Monitor.Wait", "Service.Park"], "cycle {cycle}: {parked:?}");
        }
        wait_detached(pid);
        rss.push(rss_kb());
    }
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap();
    let copies: std::collections::BTreeSet<&str> =
        maps.lines().filter_map(|l| l.split_whitespace().nth(5)).filter(|p| p.contains("libsonde_agent")).collect();
    assert_eq!(copies.len(), 1, "agent copies mapped: {copies:?}");
    // A copy of the agent per attach added several MB each; what one session leaks (its
    // link, its session record) is a few hundred bytes. Medians: one reading is noisy (the
    // runtime's heap breathes).
    let median = |cycles: &[u64]| {
        let mut sorted = cycles.to_vec();
        sorted.sort_unstable();
        sorted[sorted.len() / 2]
    };
    let (middle, last) = (median(&rss[20..30]), median(&rss[40..50]));
    eprintln!("resident memory (median kB): {middle} over attaches 21-30, {last} over 41-50");
    assert!(
        last < middle + 8 * 1024,
        "resident memory grew from {middle} kB (attaches 21-30) to {last} kB (41-50): {rss:?}"
    );
    stop_service(service, &stop);
}

#[test]
fn dump_refuses_what_it_cannot_attach_to_in_one_line() {
    let out = sonde_os(&["dump", "--pid", "1"]);
    assert_eq!(out.code(), 2, "{}", out.describe());
    assert_eq!(out.stderr_str().lines().count(), 1, "{}", out.describe());
    assert!(out.stderr_str().starts_with("sonde: "), "{}", out.describe());
}

/// `sonde top --pid` in a real terminal: the hot method on top, the keys work, `q` quits (exit 0)
/// writing nothing, and the process is detached and unharmed.
#[test]
fn top_draws_the_hot_method_in_a_terminal_and_quits_on_q() {
    let dir = scratch();
    let stop = dir.path().join("stop");
    let service = start_service(&dotnet(), &stop, &[]);
    let pid = service.pid();
    let socket = dir.path().join("tmux.sock");
    let exit = dir.path().join("exit");
    let tmux = |args: &[&str]| -> Output {
        let mut all: Vec<OsString> = vec!["-S".into(), socket.clone().into()];
        all.extend(args.iter().map(OsString::from));
        run(tmux(), &all)
    };
    let screen = || tmux(&["capture-pane", "-p", "-t", "top"]).stdout_str();
    let command =
        format!("cd {} && {} top --pid {pid}; echo $? > {}", dir.path().display(), sonde().display(), exit.display());
    let started = tmux(&["new-session", "-d", "-s", "top", "-x", "120", "-y", "30", &command]);
    assert_eq!(started.code(), 0, "{}", started.describe());
    let kill_server = || tmux(&["kill-server"]);

    // The first row under the column header is the hot method.
    let first_row = |screen: &str| -> Option<String> {
        let mut lines = screen.lines().skip_while(|l| !l.starts_with("%self"));
        lines.next()?;
        lines.next().map(str::to_string)
    };
    let mut last = String::new();
    wait_until("top to show Service.Spin on top", || {
        last = screen();
        first_row(&last).is_some_and(|row| row.ends_with("Service.Spin"))
    });
    assert!(last.contains(&format!("process {pid} (attached)")), "{last}");
    assert!(last.contains("coreclr 8."), "{last}");
    // The runtime's counters, per second over the last refresh.
    assert!(last.lines().any(|l| l.starts_with("gc ") && l.contains("/s") && l.contains("exceptions ")), "{last}");
    assert!(last.contains("q quit"), "{last}");
    // `s` sorts by %total: the program's outer frames (Service.Work and what calls it) come first.
    tmux(&["send-keys", "-t", "top", "s"]);
    wait_until("the sort to change", || screen().contains("sort %total"));
    // `t` shows one thread.
    tmux(&["send-keys", "-t", "top", "t"]);
    wait_until("a thread filter", || !screen().contains("thread all"));
    tmux(&["send-keys", "-t", "top", "q"]);
    wait_until("top to quit", || std::fs::read_to_string(&exit).is_ok_and(|s| s.ends_with('\n')));
    kill_server();
    assert_eq!(std::fs::read_to_string(&exit).unwrap().trim(), "0");
    let written: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".sonde"))
        .collect();
    assert!(written.is_empty(), "top wrote {written:?} without -o");
    wait_detached(pid);
    stop_service(service, &stop);
}

/// Samples in a profile file.
fn samples(file: &Path) -> u64 {
    arr(&report_json(file), "methods").iter().map(|m| u64_of(m, "self_samples")).sum()
}

/// A running `sonde record` answers on its control socket: listed by `sonde sessions`, a snapshot
/// mid-run holds what ran so far, pause stops the samples and resume restarts them, stop writes
/// the profile while the program runs on — and the program's output and exit code are its own.
#[test]
fn a_running_recording_is_controlled_from_outside() {
    let dir = scratch();
    let stop = dir.path().join("stop");
    let file = dir.path().join("final.sonde");
    let command = record_args(&file, &[], &[dotnet().into(), app("Service").into(), stop.clone().into()]);
    // A registry of its own (`$XDG_RUNTIME_DIR/sonde`): sessions of tests running beside this one
    // stay out of it, so that `--session` can be left out.
    let runtime_dir = dir.path().join("run");
    std::fs::create_dir(&runtime_dir).unwrap();
    std::fs::set_permissions(&runtime_dir, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    let env = [("XDG_RUNTIME_DIR", runtime_dir.clone().into_os_string())];
    let sonde_os = |args: &[&str]| -> Output {
        let args: Vec<OsString> = args.iter().map(OsString::from).collect();
        Running::spawn_with_env(sonde(), &args, &env).wait(Duration::from_secs(120))
    };
    let mut recording = Running::spawn_with_env(sonde(), &command, &env);
    recording.wait_for_line("ready", Duration::from_secs(60));
    let session = recording.pid().to_string();
    let program = child_of(recording.pid()).to_string();

    let listed = sonde_os(&["sessions"]);
    assert_eq!(listed.code(), 0, "{}", listed.describe());
    let row =
        listed.stdout_str().lines().find(|l| l.split_whitespace().next() == Some(session.as_str())).map(str::to_string);
    let row = row.unwrap_or_else(|| panic!("session {session} not listed: {}", listed.describe()));
    let fields: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(&fields[1..5], [program.as_str(), "sampling", "launched", "running"], "{row}");

    // Snapshots until the busy thread has 50 samples (50 ms of its CPU; 20 s at most, on a loaded
    // machine).
    let first = dir.path().join("first.sonde");
    let until = std::time::Instant::now() + Duration::from_secs(20);
    let (report, spin) = loop {
        std::thread::sleep(Duration::from_millis(300));
        let out = sonde_os(&["snapshot", "--to", first.to_str().unwrap(), "--session", &session]);
        assert_eq!(out.code(), 0, "{}", out.describe());
        let report = report_json(&first);
        let spin: u64 = arr(&report, "methods")
            .iter()
            .filter(|m| str_of(m, "name") == "Service.Spin")
            .map(|m| u64_of(m, "self_samples"))
            .sum();
        if spin >= 50 || std::time::Instant::now() > until {
            break (report, spin);
        }
    };
    assert!(spin >= 50, "the snapshot holds {spin} samples of Service.Spin: {report:#}");

    let out = sonde_os(&["pause", "--session", &session]);
    assert_eq!(out.code(), 0, "{}", out.describe());
    // What the agent took before the pause reaches the trees within a drain period.
    std::thread::sleep(Duration::from_millis(300));
    let (a, b) = (dir.path().join("a.sonde"), dir.path().join("b.sonde"));
    sonde_os(&["snapshot", "--to", a.to_str().unwrap()]); // the one session: --session left out
    std::thread::sleep(Duration::from_millis(800));
    sonde_os(&["snapshot", "--to", b.to_str().unwrap()]);
    let (paused_a, paused_b) = (samples(&a), samples(&b));
    // Unpaused, 0.8 s of a busy thread at 1 kHz is ~800 samples.
    assert!(paused_b - paused_a < 40, "paused, yet {paused_a} → {paused_b} samples");
    let out = sonde_os(&["resume"]);
    assert_eq!(out.code(), 0, "{}", out.describe());
    // Resumed, samples grow again: 200 more take 0.2 s of the busy thread's CPU, however long a
    // loaded machine takes to give it that (snapshots until then, 20 s at most).
    let c = dir.path().join("c.sonde");
    let until = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        std::thread::sleep(Duration::from_millis(300));
        sonde_os(&["snapshot", "--to", c.to_str().unwrap()]);
        if samples(&c) > paused_b + 200 || std::time::Instant::now() > until {
            break;
        }
    }
    assert!(samples(&c) > paused_b + 200, "resumed, yet {paused_b} → {} samples in 20 s", samples(&c));

    let out = sonde_os(&["stop"]);
    assert_eq!(out.code(), 0, "{}", out.describe());
    wait_until("the profile after `sonde stop`", || file.exists());
    assert!(samples(&file) >= samples(&c), "the final profile holds less than the last snapshot");
    // The program runs on, unprofiled, and ends as it always does; sonde exits with its code.
    assert!(Path::new(&format!("/proc/{program}")).exists(), "the program ended at `sonde stop`");
    std::fs::write(&stop, b"").unwrap();
    let out = recording.wait(Duration::from_secs(60));
    assert_eq!(out.code(), SERVICE_EXIT, "{}", out.describe());
    assert_eq!(out.stdout_str(), SERVICE_OUTPUT, "{}", out.describe());
    let stderr = out.stderr_str();
    assert!(stderr.starts_with(&format!("sonde: session {session} ")), "{stderr}");
    assert!(stderr.contains("recording stopped"), "{stderr}");
    assert!(!sonde_os(&["sessions"]).stdout_str().contains(&format!(" {program} ")), "still listed");
}

/// The client library's example (`crates/client/examples/live.rs`, built by `cargo test
/// --workspace`): attaches, prints the hottest method once a second, finishes (detaches).
#[test]
fn the_client_library_example_attaches_streams_and_detaches() {
    let example = sonde().with_file_name("examples").join("live");
    assert!(
        example.is_file(),
        "{} is missing: run `cargo test --workspace` (it builds the examples)",
        example.display()
    );
    let dir = scratch();
    let stop = dir.path().join("stop");
    let service = start_service(&dotnet(), &stop, &[]);
    let pid = service.pid();
    let out = run(&example, &["--pid".into(), pid.to_string().into()]);
    assert_eq!(out.code(), 0, "{}", out.describe());
    let lines: Vec<String> = out.stdout_str().lines().map(str::to_string).collect();
    assert_eq!(lines.len(), 6, "five updates and a summary: {}", out.describe());
    // The first update may come before the first sample; the later ones name the hot method.
    assert!(lines[1..5].iter().all(|l| l.ends_with("Service.Spin")), "{}", out.describe());
    let counts: Vec<u64> = lines[..5].iter().map(|l| l.split_whitespace().next().unwrap().parse().unwrap()).collect();
    assert!(counts.windows(2).all(|w| w[0] <= w[1]) && counts[4] > counts[1], "the updates do not grow: {counts:?}");
    assert!(lines[5].starts_with("final: "), "{}", out.describe());
    wait_detached(pid);
    stop_service(service, &stop);
}
