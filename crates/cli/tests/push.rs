//! Continuous profiling (`sonde record --push`, issue 17; docs/CONTINUOUS.md) against a loopback
//! stand-in for Grafana Pyroscope (`tests/pyroscope/server.py`: it takes what the server's push
//! API takes and records every request). What a real client sends is recorded first: Grafana's
//! own client (PyPI `pyroscope-io`, `tests/pyroscope/client.py`) pushes to the same server, and
//! Sonde's pushes must follow the same rules. The pushed profiles are decoded by an independent
//! pprof decoder (npm `pprof-format`, `tests/js/decode-pprof.mjs`).

mod support;

use serde_json::Value;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use support::*;

/// The daemon tests, one at a time: a user runs one daemon (a second one refuses to start).
fn one_daemon_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static DAEMON: std::sync::Mutex<()> = std::sync::Mutex::new(());
    DAEMON.lock().unwrap_or_else(|e| e.into_inner())
}

/// The stand-in server, listening; stopped on drop.
struct Server {
    running: Option<Running>,
    port: u16,
    dir: PathBuf,
}

impl Server {
    fn start(dir: &Path, extra: &[&str]) -> Server {
        let mut args: Vec<OsString> = vec![repo_file("tests/pyroscope/server.py").into(), dir.into()];
        args.extend(extra.iter().map(OsString::from));
        let mut running = Running::spawn("python3", &args);
        running.wait_for_line("listening", Duration::from_secs(30));
        let out = String::from_utf8_lossy(running.stdout_so_far()).into_owned();
        let port = out.split_whitespace().nth(1).and_then(|p| p.parse().ok()).expect("the server's port");
        Server { running: Some(running), port, dir: dir.to_path_buf() }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The `service_name`s of the accepted pushes.
    fn apps_pushed(&self) -> std::collections::BTreeSet<String> {
        self.requests()
            .iter()
            .filter(|r| r["accepted"] == true)
            .filter_map(|r| r["series"][0]["labels"]["service_name"].as_str().map(str::to_string))
            .collect()
    }

    fn requests(&self) -> Vec<Value> {
        std::fs::read_to_string(self.dir.join("requests.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).expect("a JSON line"))
            .collect()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(running) = self.running.take() {
            kill_group(running.pid(), libc::SIGTERM);
            let _ = running.wait(Duration::from_secs(10));
        }
    }
}

/// Each file decoded by `pprof-format`: `{types, totals, leaves}`.
fn decode(files: &[PathBuf]) -> Vec<Value> {
    if files.is_empty() {
        return Vec::new();
    }
    let mut args: Vec<OsString> = vec![repo_file("tests/js/decode-pprof.mjs").into()];
    args.extend(files.iter().map(|f| f.into()));
    let node = std::env::var_os("SONDE_NODE").map_or_else(|| PathBuf::from("node"), PathBuf::from);
    let out = run(node, &args);
    assert_eq!(out.code(), 0, "decode-pprof.mjs: {}", out.describe());
    out.stdout_str().lines().map(|l| serde_json::from_str(l).expect("a JSON line")).collect()
}

/// The `samples/count` total of a decoded profile.
fn samples(decoded: &Value) -> u64 {
    let k = decoded["types"].as_array().unwrap().iter().position(|t| t == "samples/count").expect("samples/count");
    decoded["totals"][k].as_u64().unwrap()
}

/// The files of the accepted pushes of CPU profiles whose `service_name` is `app`.
fn pushed_files(server: &Server, app: &str) -> Vec<PathBuf> {
    pushed_files_of(server, app, "process_cpu")
}

/// The files of the accepted pushes of profile type `name` (`__name__`) whose `service_name` is
/// `app`.
fn pushed_files_of(server: &Server, app: &str, name: &str) -> Vec<PathBuf> {
    server
        .requests()
        .iter()
        .filter(|r| r["accepted"] == true)
        .flat_map(|r| r["series"].as_array().unwrap().clone())
        .filter(|s| s["labels"]["service_name"] == app && s["labels"]["__name__"] == name)
        .flat_map(|s| s["samples"].as_array().unwrap().clone())
        .map(|s| server.dir.join(s["file"].as_str().unwrap()))
        .collect()
}

/// The whole profile as `--format pprof`, decoded.
fn whole(profile: &Path) -> Value {
    let pb = profile.with_extension("pb.gz");
    let out = sonde_cmd(&[
        "report".into(),
        profile.into(),
        "--format".into(),
        "pprof".into(),
        "-o".into(),
        pb.clone().into(),
    ]);
    assert_eq!(out.code(), 0, "{}", out.describe());
    decode(&[pb]).remove(0)
}

fn push_lines(stderr: &str) -> Vec<&str> {
    stderr.lines().filter(|l| l.starts_with("sonde: push:")).collect()
}

/// Grafana's client and Sonde push to the same server: the same path, content type and
/// message, the labels the server files a profile under, and a pprof it reads. Sonde's pushes
/// are the intervals of one recording: decoded independently, they add up to the whole profile,
/// and the hot method is the hot leaf.
#[test]
fn pushes_follow_grafanas_client_and_add_up_to_the_whole_profile() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let server = Server::start(&dir.path().join("server"), &[]);
    let real = run(python(), &[repo_file("tests/pyroscope/client.py").into(), server.url().into(), "1".into()]);
    assert_eq!(real.code(), 0, "pyroscope-io: {}", real.describe());
    let requests = server.requests();
    let reference =
        requests.iter().find(|r| r["headers"]["user-agent"].as_str().is_some_and(|a| a.contains("pyroscope")));
    let reference = reference.unwrap_or_else(|| panic!("no request from pyroscope-io: {requests:?}"));
    assert_eq!(reference["accepted"], true, "the stand-in refused the real client: {reference}");

    let file = dir.path().join("busy.sonde");
    let opts = ["--push", &server.url(), "--push-every", "1", "--app", "shop", "--tag", "region=test"];
    let out = record(&file, &opts, &app_command("Busy", &["1", "10000"]));
    assert_eq!(out.code(), 0, "{}", out.describe());
    assert!(push_lines(&out.stderr_str()).is_empty(), "{}", out.describe());
    let all = server.requests();
    let ours: Vec<&Value> =
        all.iter().filter(|r| r["headers"]["user-agent"].as_str().is_some_and(|a| a.starts_with("sonde/"))).collect();
    assert!(ours.len() >= 2, "one push per second of a multi-second run, and the last: {ours:?}");
    for r in &ours {
        assert_eq!(r["accepted"], true, "{r}");
        assert_eq!(r["path"], reference["path"]);
        assert_eq!(r["query"], reference["query"]);
        assert_eq!(r["headers"]["content-type"], reference["headers"]["content-type"]);
        let labels = &r["series"][0]["labels"];
        for name in ["__name__", "service_name", "region", "process.runtime.name", "process.runtime.version"] {
            assert!(reference["series"][0]["labels"].get(name).is_some(), "the real client sets {name}");
            assert!(labels.get(name).is_some(), "no {name} label: {labels}");
        }
        assert_eq!(labels["__name__"], reference["series"][0]["labels"]["__name__"]);
        assert_eq!((labels["service_name"].as_str(), labels["region"].as_str()), (Some("shop"), Some("test")));
        assert_eq!(labels["process.runtime.name"], "coreclr");
    }
    assert!(out.stderr_str().contains(&format!("sonde: pushed {} profiles\n", ours.len())), "{}", out.describe());

    let decoded = decode(&pushed_files(&server, "shop"));
    let pushed: u64 = decoded.iter().map(samples).sum();
    let whole = whole(&file);
    assert_eq!(pushed, samples(&whole), "the intervals add up to the whole: {decoded:?}");
    let mut by_leaf: std::collections::BTreeMap<String, u64> = Default::default();
    for d in &decoded {
        let k = d["types"].as_array().unwrap().iter().position(|t| t == "samples/count").unwrap();
        for (leaf, n) in d["leaves"][k].as_object().unwrap() {
            *by_leaf.entry(leaf.clone()).or_default() += n.as_u64().unwrap();
        }
    }
    let hot = by_leaf.iter().max_by_key(|(_, n)| **n).map(|(l, _)| l.clone());
    assert_eq!(hot.as_deref(), Some("Acme.Busy.Mix"), "{by_leaf:?}");
}

/// The total of sample type `kind` (`exception/count`) in a decoded profile (0 without it).
fn total(decoded: &Value, kind: &str) -> u64 {
    let types = decoded["types"].as_array().unwrap();
    types.iter().position(|t| t == kind).map_or(0, |k| decoded["totals"][k].as_u64().unwrap())
}

/// The runtime's events go as profile types of their own, named as Grafana's .NET profiler
/// names them: `exception` (`exception/count`) and `memory` (`alloc_samples/count`,
/// `alloc_size/bytes`), each with only its own sample types. Their intervals add up to what the
/// whole profile has.
#[test]
fn events_are_pushed_as_profile_types_of_their_own() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let server = Server::start(&dir.path().join("server"), &[]);
    let file = dir.path().join("events.sonde");
    let opts = ["--push", &server.url(), "--push-every", "1", "--app", "ev", "--events", "alloc,exceptions"];
    let out = record(&file, &opts, &app_command("Events", &["2000"]));
    assert_eq!(out.code(), 0, "{}", out.describe());
    let whole = whole(&file);
    assert!(total(&whole, "exceptions/count") >= 5000, "{whole}");
    assert!(total(&whole, "alloc_space/bytes") > 0, "{whole}");

    let thrown = decode(&pushed_files_of(&server, "ev", "exception"));
    assert!(!thrown.is_empty(), "no exception profile: {:?}", server.requests());
    for d in &thrown {
        assert_eq!(d["types"], serde_json::json!(["exception/count"]), "{d}");
    }
    let pushed: u64 = thrown.iter().map(|d| total(d, "exception/count")).sum();
    assert_eq!(pushed, total(&whole, "exceptions/count"), "the intervals add up to the whole");

    let allocated = decode(&pushed_files_of(&server, "ev", "memory"));
    assert!(!allocated.is_empty(), "no memory profile: {:?}", server.requests());
    for d in &allocated {
        assert_eq!(d["types"], serde_json::json!(["alloc_samples/count", "alloc_size/bytes"]), "{d}");
    }
    let pushed: u64 = allocated.iter().map(|d| total(d, "alloc_size/bytes")).sum();
    assert_eq!(pushed, total(&whole, "alloc_space/bytes"), "the intervals add up to the whole");

    // The CPU profiles keep their own two types; no lock profile without contention.
    for d in decode(&pushed_files(&server, "ev")) {
        assert_eq!(d["types"], serde_json::json!(["samples/count", "cpu/nanoseconds"]), "{d}");
    }
    assert!(pushed_files_of(&server, "ev", "lock").is_empty());
}

/// A server that is unavailable when the first profiles come (503, as from behind its load
/// balancer): one line says so, the profiles wait in the queue and are retried with backoff,
/// one line says when it takes them again, and nothing is lost. (A server that does not answer
/// at all takes the same path: `sonde_client::push`'s tests.)
#[test]
fn profiles_wait_for_an_unavailable_server_and_arrive_when_it_is_back() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let server = Server::start(&dir.path().join("server"), &["--fail-first", "2"]);
    let file = dir.path().join("down.sonde");
    let out = record(
        &file,
        &["--push", &server.url(), "--push-every", "1", "--app", "down"],
        &app_command("Busy", &["1", "3000"]),
    );
    assert_eq!(out.code(), 0, "{}", out.describe());
    let stderr = out.stderr_str();
    let lines = push_lines(&stderr);
    assert_eq!(lines.len(), 2, "one line when it fails, one when it is back: {}", out.describe());
    assert!(lines[0].contains("HTTP 503; retrying with backoff"), "{}", out.describe());
    assert!(lines[1].contains("takes profiles again"), "{}", out.describe());
    let requests = server.requests();
    assert_eq!((requests[0]["status"].as_u64(), requests[1]["status"].as_u64()), (Some(503), Some(503)));
    let pushed: u64 = decode(&pushed_files(&server, "down")).iter().map(samples).sum();
    assert_eq!(pushed, samples(&whole(&file)), "nothing lost while the server was unavailable");
}

/// Credentials come from the environment, the server refuses them: one line says so (without
/// the password), and the refused profiles are not retried in a storm.
#[test]
fn refused_credentials_are_said_once_and_not_retried_in_a_storm() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let server = Server::start(&dir.path().join("server"), &["--status", "401"]);
    let file = dir.path().join("auth.sonde");
    let args =
        record_args(&file, &["--push", &server.url(), "--push-every", "1"], &app_command("Busy", &["1", "2500"]));
    let env = [("SONDE_PUSH_USER", OsString::from("sonde")), ("SONDE_PUSH_PASSWORD", OsString::from("hunter2"))];
    let started = Instant::now();
    let out = Running::spawn_with_env(sonde(), &args, &env).wait(DEADLINE);
    let seconds = started.elapsed().as_secs();
    assert_eq!(out.code(), 0, "{}", out.describe());
    let stderr = out.stderr_str();
    assert!(!stderr.contains("hunter2"), "{}", out.describe());
    let lines = push_lines(&stderr);
    assert_eq!(lines.len(), 1, "{}", out.describe());
    assert!(lines[0].contains("refused the credentials (HTTP 401)"), "{}", out.describe());
    let requests = server.requests();
    // Backoff after each refusal (1 s, 2 s, 4 s, …): a handful, not one per profile per retry.
    assert!(
        !requests.is_empty() && requests.len() as u64 <= 4 + seconds / 4,
        "{} requests in {seconds} s",
        requests.len()
    );
    for r in &requests {
        assert_eq!(r["headers"]["authorization"], "Basic c29uZGU6aHVudGVyMg==", "{r}");
    }
}

/// A server that takes seconds to answer holds up neither the program nor the end of the
/// recording beyond the last push's bounded wait.
#[test]
fn a_slow_server_holds_nothing_up() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let server = Server::start(&dir.path().join("server"), &["--delay", "4"]);
    let file = dir.path().join("slow.sonde");
    let plain = Instant::now();
    assert_eq!(run_app("Busy", &["1", "2500"]).code(), 0);
    let plain = plain.elapsed();
    let started = Instant::now();
    let out = record(&file, &["--push", &server.url(), "--push-every", "1"], &app_command("Busy", &["1", "2500"]));
    let took = started.elapsed();
    assert_eq!(out.code(), 0, "{}", out.describe());
    let report = report_json(&file);
    let wall = Duration::from_nanos(u64_of(&report, "wall_ns"));
    // Loose: the machine's load varies between the two runs; a blocking push would add its 4 s
    // per interval.
    assert!(wall < plain * 3 + Duration::from_secs(5), "the program took {wall:?} (unprofiled {plain:?})");
    // The last push gets 10 s; the rest of the queue is dropped and said.
    assert!(took < wall + Duration::from_secs(20), "sonde took {took:?} for a {wall:?} run");
    assert!(out.stderr_str().contains("sonde: pushed "), "{}", out.describe());
}

/// A URL where nothing listens: every attempt fails to connect, so the end does not wait out
/// the last push's 10 s. One line says how many intervals were not sent; the profile file has
/// them. (The run is shorter than its interval: the first attempt is made at the end.)
#[test]
fn nothing_listening_is_given_up_on_at_the_end_in_one_line() {
    let dir = tempfile::tempdir().expect("a temp dir");
    // A port nothing listens on: bound, then closed.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("http://127.0.0.1:{port}");
    let file = dir.path().join("nobody.sonde");
    let args = record_args(&file, &["--push", &url, "--push-every", "3600"], &app_command("Shift", &["2", "2"]));
    let mut sonde = Running::spawn(sonde(), &args);
    sonde.wait_for_line("done", DEADLINE);
    let program_done = Instant::now();
    let out = sonde.wait(DEADLINE);
    let after = program_done.elapsed();
    assert_eq!(out.code(), 0, "{}", out.describe());
    let stderr = out.stderr_str();
    let lines = push_lines(&stderr);
    assert_eq!(lines.len(), 2, "{}", out.describe());
    assert!(lines[0].contains("retrying with backoff"), "{}", out.describe());
    assert_eq!(
        lines[1],
        format!("sonde: push: nothing answered at {url}: 1 interval was not sent (the profile file has them)"),
        "{}",
        out.describe()
    );
    assert!(!stderr.contains("sonde: pushed "), "{}", out.describe());
    // Before: at least the last push's 10 s after the program's end, retrying a port where
    // nothing listens.
    assert!(after < Duration::from_secs(8), "sonde ended {after:?} after the program");
    assert!(u64_of(&report_json(&file), "samples_taken") > 0, "the profile file has the samples");
}

/// What `--push` cannot do is refused before the program starts, in one line.
#[test]
fn push_options_are_checked_before_the_program_starts() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let file = dir.path().join("never.sonde");
    let app = app_command("Busy", &["1", "10"]);
    let refused = |opts: &[&str], env: &[(&str, OsString)], says: &str| {
        let out = Running::spawn_with_env(sonde(), &record_args(&file, opts, &app), env).wait(DEADLINE);
        assert_eq!(out.code(), 2, "{opts:?}: {}", out.describe());
        assert!(out.stdout_str().is_empty(), "the program ran: {}", out.describe());
        assert!(out.stderr_str().lines().next().unwrap_or_default().contains(says), "{opts:?}: {}", out.describe());
    };
    refused(&["--push", "pyroscope:4040"], &[], "not an http:// or https:// URL");
    refused(&["--push", "http://127.0.0.1:9", "--mode", "tracing"], &[], "--push goes with --mode sampling");
    refused(&["--tag", "a=b"], &[], "go with --push URL");
    refused(&["--push", "http://127.0.0.1:9", "--tag", "service_name=x"], &[], "Sonde sets `service_name` itself");
    let both = [("SONDE_PUSH_USER", OsString::from("u")), ("SONDE_PUSH_TOKEN", OsString::from("t"))];
    refused(&["--push", "http://127.0.0.1:9"], &both, "not both");
}

/// A running process (`--pid`): its intervals are pushed while attached, and the last one at
/// the detach; the process runs on unharmed.
#[test]
fn an_attached_process_is_pushed_too() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let server = Server::start(&dir.path().join("server"), &[]);
    let stop = dir.path().join("stop");
    let service = start_service(&dotnet(), &stop, &[]);
    let file = dir.path().join("attached.sonde");
    let pid = service.pid().to_string();
    let url = server.url();
    let args = ["record", "-o", file.to_str().unwrap(), "--pid", &pid, "--duration", "3", "--push", &url];
    let out = sonde_cmd(
        &[&args[..], &["--push-every", "1", "--app", "svc"]].concat().iter().map(OsString::from).collect::<Vec<_>>(),
    );
    assert_eq!(out.code(), 0, "{}", out.describe());
    let files = pushed_files(&server, "svc");
    assert!(files.len() >= 2, "{:?}", server.requests());
    let pushed: u64 = decode(&files).iter().map(samples).sum();
    assert_eq!(pushed, samples(&whole(&file)));
    stop_service(service, &stop);
}

/// A Mono program is pushed the same way, labelled with its runtime.
#[test]
fn a_mono_program_is_pushed_too() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let server = Server::start(&dir.path().join("server"), &[]);
    let file = dir.path().join("mono.sonde");
    let out = record(
        &file,
        &["--push", &server.url(), "--push-every", "1"],
        &Runtime::Mono.app_command("Busy", &["1", "2000"]),
    );
    assert_eq!(out.code(), 0, "{}", out.describe());
    let requests = server.requests();
    assert!(!requests.is_empty() && requests.iter().all(|r| r["accepted"] == true), "{requests:?}");
    let labels = &requests[0]["series"][0]["labels"];
    assert_eq!(
        (labels["process.runtime.name"].as_str(), labels["service_name"].as_str()),
        (Some("mono"), Some("Busy"))
    );
    let pushed: u64 = decode(&pushed_files(&server, "Busy")).iter().map(samples).sum();
    assert_eq!(pushed, samples(&whole(&file)));
}

/// `sonde daemon`: finds the .NET processes it is told to (`--include`, over the application
/// names their `SONDE_APP` gives), pushes each under its own name, takes in one that starts
/// later, notices one that ends, reports itself (`--status`), and on SIGTERM detaches from the
/// others, which run on unharmed.
#[test]
fn the_daemon_follows_processes_as_they_come_and_go() {
    let _one = one_daemon_at_a_time();
    let dir = tempfile::tempdir().expect("a temp dir");
    let server = Server::start(&dir.path().join("server"), &[]);
    let service = |name: &str| {
        let stop = dir.path().join(format!("stop-{name}"));
        (start_service(&dotnet(), &stop, &[("SONDE_APP", OsString::from(name))]), stop)
    };
    let wait_for = |what: &str, done: &dyn Fn() -> bool| {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !done() {
            assert!(Instant::now() < deadline, "{what}: {:?}", server.requests());
            std::thread::sleep(Duration::from_millis(200));
        }
    };
    let (a, stop_a) = service("dtest-a");
    let (b, stop_b) = service("dtest-b");
    let url = server.url();
    let args: Vec<OsString> =
        ["daemon", "--push", &url, "--push-every", "1", "--include", "dtest-*"].iter().map(OsString::from).collect();
    let daemon = Running::spawn(sonde(), &args);
    wait_for("both pushed", &|| ["dtest-a", "dtest-b"].iter().all(|a| server.apps_pushed().contains(*a)));
    // One daemon per user: a second one says so and ends.
    let second = sonde_cmd(&args);
    assert_eq!(second.code(), 2, "{}", second.describe());
    let expected = format!("another sonde daemon of this user is running (pid {})", daemon.pid());
    assert!(second.stderr_str().contains(&expected), "{}", second.describe());
    let (c, stop_c) = service("dtest-c");
    wait_for("the later one pushed", &|| server.apps_pushed().contains("dtest-c"));
    let status = sonde_cmd(&[OsString::from("daemon"), "--status".into()]);
    assert_eq!(status.code(), 0, "{}", status.describe());
    assert!(status.stdout_str().contains("processes  3\n"), "{}", status.describe());
    assert!(status.stdout_str().contains("own cost "), "{}", status.describe());
    stop_service(a, &stop_a);
    wait_for("the ended one noticed", &|| {
        sonde_cmd(&[OsString::from("daemon"), "--status".into()]).stdout_str().contains("processes  2\n")
    });
    kill_group(daemon.pid(), libc::SIGTERM);
    let out = daemon.wait(DEADLINE);
    assert_eq!(out.code(), 0, "{}", out.describe());
    let stderr = out.stderr_str();
    assert!(stderr.contains("(dtest-a) ended"), "{}", out.describe());
    assert!(stderr.contains("detaching from 2 processes"), "{}", out.describe());
    assert!(server.requests().iter().all(|r| r["accepted"] == true));
    // Detached, they run on and end as they always do.
    stop_service(b, &stop_b);
    stop_service(c, &stop_c);
    let gone = sonde_cmd(&[OsString::from("daemon"), "--status".into()]);
    assert_eq!(gone.code(), 1, "{}", gone.describe());
}

/// Twenty service-like processes (Steady.exe: 5 ms of work every 100 ms) under one daemon: each
/// is found, attached to and pushed under its own name; `--status` counts them; SIGTERM
/// detaches from all twenty, which run on.
#[test]
fn the_daemon_profiles_twenty_processes() {
    const N: usize = 20;
    let _one = one_daemon_at_a_time();
    let dir = tempfile::tempdir().expect("a temp dir");
    let server = Server::start(&dir.path().join("server"), &[]);
    let names: Vec<String> = (0..N).map(|i| format!("dtwenty-{i:02}")).collect();
    let services: Vec<Running> = names
        .iter()
        .map(|name| {
            let args = [app("Steady").into_os_string(), "600".into(), "5".into(), "100".into()];
            Running::spawn_with_env(dotnet(), &args, &[("SONDE_APP", OsString::from(name))])
        })
        .collect();
    let url = server.url();
    let args: Vec<OsString> =
        ["daemon", "--push", &url, "--push-every", "2", "--include", "dtwenty-*"].iter().map(OsString::from).collect();
    let daemon = Running::spawn(sonde(), &args);
    // Generous: twenty runtimes start and are attached to on two cores, beside other tests.
    let deadline = Instant::now() + Duration::from_secs(240);
    while server.apps_pushed().len() < N {
        assert!(Instant::now() < deadline, "not all pushed: {:?} of {names:?}", server.apps_pushed());
        std::thread::sleep(Duration::from_millis(500));
    }
    assert_eq!(server.apps_pushed().into_iter().collect::<Vec<_>>(), names);
    let status = sonde_cmd(&[OsString::from("daemon"), "--status".into()]);
    assert_eq!(status.code(), 0, "{}", status.describe());
    assert!(status.stdout_str().contains(&format!("processes  {N}\n")), "{}", status.describe());
    for name in &names {
        assert!(status.stdout_str().contains(name.as_str()), "{name} in:\n{}", status.describe());
    }
    kill_group(daemon.pid(), libc::SIGTERM);
    let out = daemon.wait(DEADLINE);
    assert_eq!(out.code(), 0, "{}", out.describe());
    assert!(out.stderr_str().contains(&format!("detaching from {N} processes")), "{}", out.describe());
    assert!(server.requests().iter().all(|r| r["accepted"] == true));
    for service in &services {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", service.pid())).unwrap_or_default();
        let state = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().next());
        assert!(matches!(state, Some(s) if s != "Z"), "a profiled process ended ({stat}):\n{}", out.describe());
    }
}
