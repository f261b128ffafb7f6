//! `sonde daemon --push URL`: continuous profiling of every .NET (CoreCLR) process of this user
//! on the host (docs/CONTINUOUS.md, "The host daemon"). Every few seconds it looks for new
//! processes (those with `libcoreclr.so` mapped and a diagnostics socket, containers included:
//! `sonde_client::attach`), attaches to each at a low rate, pushes each one's intervals under its
//! own application name, notices the processes that end, and on SIGTERM or SIGINT detaches from
//! all of them, pushing their last interval. `sonde daemon --status` reads what it writes about
//! itself every few seconds.

use crate::cli::DaemonArgs;
use crate::push::Pushing;
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use sonde_client::collector::alive;
use sonde_client::{Options, Recording, running_facts};
use sonde_profile::SampleClock;
use sonde_protocol::config::EventKinds;
use sonde_protocol::filter::glob;
use sonde_render::fmt::Clean;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// How often the host is searched for new processes.
const SCAN_EVERY: Duration = Duration::from_secs(5);
/// Scans at which an attach is tried before the process is given up.
const ATTACH_TRIES: u32 = 3;
/// How long a detach at SIGTERM may take per process.
const DETACH_PATIENCE: Duration = Duration::from_secs(5);

/// What `sonde daemon --status` shows: the daemon's own costs and what it profiles.
#[derive(Debug, Serialize, Deserialize)]
pub struct Status {
    pub pid: u32,
    pub started_unix_s: u64,
    pub updated_unix_s: u64,
    pub push: String,
    pub rate_hz: u64,
    /// The daemon's own CPU time (all its threads), and its resident memory.
    pub cpu_ms: u64,
    pub rss_kb: u64,
    pub processes: Vec<Profiled>,
    pub pushed: u64,
    pub dropped: u64,
    pub failures: u64,
    /// Processes it could not attach to, with why (the latest few).
    pub refused: Vec<String>,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct Profiled {
    pub pid: u32,
    pub app: String,
    pub since_unix_s: u64,
}

struct Tracked {
    recording: Recording,
    app: String,
    since: u64,
}

pub fn daemon(args: DaemonArgs) -> Result<i32> {
    if args.status {
        return status();
    }
    let url = args.push.as_deref().context("sonde daemon needs --push URL (or --status)")?;
    // Profiles wait for the server per process, up to the usual 60 each.
    let mut pushing = crate::push::to(url, None, &args.labels, crate::push::QUEUE * 4)?;
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM, signal_hook::consts::SIGHUP] {
        signal_hook::flag::register(signal, stop.clone()).context("cannot install a signal handler")?;
    }
    let mut options = Options::sampling_with(args.rate, SampleClock::Cpu);
    // What a continuous profile shows: CPU. The runtime's events cost their own (docs/EVENTS.md).
    options.config.events = EventKinds::NONE;
    options.program_output = false;
    let status_file = status_file()?;
    let _only = only_daemon(&status_file)?;
    let started = unix_s();
    let mut tracked: HashMap<u32, Tracked> = HashMap::new();
    // Processes looked at and not profiled (not .NET, filtered out, refused), by pid and start
    // time: looked at once.
    let mut skipped: HashMap<u32, u64> = HashMap::new();
    let mut refused: Vec<String> = Vec::new();
    // Failed attaches by pid: a process found just after it started may not have its
    // diagnostics socket yet, so it is tried again at the next scans before it is given up.
    let mut tries: HashMap<u32, u32> = HashMap::new();
    let mut last_scan: Option<Instant> = None;
    write_status(&status_file, &status_of(started, url, args.rate, &tracked, &pushing, &refused));
    crate::say!(
        "sonde: daemon {}: profiling .NET processes at {} Hz, pushing to {}",
        std::process::id(),
        args.rate,
        Clean(url)
    );
    while !stop.load(Ordering::Relaxed) {
        if last_scan.is_none_or(|t| t.elapsed() >= SCAN_EVERY) {
            last_scan = Some(Instant::now());
            for pid in candidates(&tracked, &mut skipped) {
                match consider(pid, &args, &options) {
                    Ok(Some((recording, app))) => {
                        crate::say!("sonde: daemon: profiling process {pid} ({})", Clean(&app));
                        pushing.name_app(recording.ns_pid(), app.clone());
                        recording.agents().request_snapshots();
                        tracked.insert(pid, Tracked { recording, app, since: unix_s() });
                    }
                    Ok(None) => {
                        skipped.insert(pid, start_time(pid));
                    }
                    Err(_) if *tries.entry(pid).and_modify(|n| *n += 1).or_insert(1) < ATTACH_TRIES => {}
                    Err(e) => {
                        tries.remove(&pid);
                        skipped.insert(pid, start_time(pid));
                        let line = format!("process {pid}: {e}");
                        crate::say!("sonde: daemon: not profiling {}", Clean(&line));
                        refused.push(line);
                        if refused.len() > 10 {
                            refused.remove(0);
                        }
                    }
                }
            }
        }
        tries.retain(|&pid, _| alive(pid));
        // Processes that ended: their last interval, from their last snapshot.
        let ended: Vec<u32> = tracked.keys().copied().filter(|&pid| !alive(pid)).collect();
        for pid in ended {
            if let Some(t) = tracked.remove(&pid) {
                crate::say!("sonde: daemon: process {pid} ({}) ended", Clean(&t.app));
                let sessions = t.recording.collect(Duration::from_millis(200));
                pushing.push_final(&sessions, |s| running_facts(s, true, &[]));
            }
        }
        // One snapshot per process per interval, asked for just after each push: the next push
        // carries it (a snapshot every second, as `sonde record` takes, cost each process more
        // than its sampling at the daemon's rate).
        if pushing.due() {
            for t in tracked.values() {
                pushing.push_agents(&t.recording.agents(), |s| running_facts(s, true, &[]));
                t.recording.agents().request_snapshots();
            }
            write_status(&status_file, &status_of(started, url, args.rate, &tracked, &pushing, &refused));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    crate::say!("sonde: daemon: detaching from {} processes", tracked.len());
    for (_, t) in tracked.drain() {
        let sessions = t.recording.finish_sessions(DETACH_PATIENCE);
        pushing.push_final(&sessions, |s| running_facts(s, true, &[]));
    }
    let _ = std::fs::remove_file(&status_file);
    pushing.finish(&[], |s| running_facts(s, true, &[]), false, false);
    Ok(0)
}

/// The pids of this user's processes not tracked and not already looked at (a pid reused by a
/// new process is looked at again).
fn candidates(tracked: &HashMap<u32, Tracked>, skipped: &mut HashMap<u32, u64>) -> Vec<u32> {
    let me = std::process::id();
    let user = sonde_protocol::trust::user();
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    let mut out = Vec::new();
    for entry in dir.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        if pid == me || tracked.contains_key(&pid) {
            continue;
        }
        if skipped.get(&pid).is_some_and(|&t| t == start_time(pid)) {
            continue;
        }
        use std::os::unix::fs::MetadataExt;
        if entry.metadata().map(|m| m.uid()).ok() != Some(user) {
            skipped.insert(pid, start_time(pid));
            continue;
        }
        out.push(pid);
    }
    skipped.retain(|&pid, _| alive(pid));
    out
}

/// `/proc/PID/stat`'s start time (clock ticks since boot), 0 if gone.
fn start_time(pid: u32) -> u64 {
    sonde_client::collector::stat_fields(pid)
        .and_then(|f| f.split_whitespace().nth(19).and_then(|t| t.parse().ok()))
        .unwrap_or(0)
}

/// Attaches to `pid` if it is a .NET process the filters keep; `None` for one that is not .NET.
fn consider(pid: u32, args: &DaemonArgs, options: &Options) -> Result<Option<(Recording, String)>> {
    // Only processes with CoreCLR mapped are .NET here; others are skipped quietly.
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap_or_default();
    if !maps.lines().any(|l| l.rsplit('/').next().is_some_and(|f| f.starts_with("libcoreclr.so"))) {
        return Ok(None);
    }
    let app = app_of(pid);
    let kept = (args.include.is_empty() || args.include.iter().any(|p| glob(p, &app)))
        && !args.exclude.iter().any(|p| glob(p, &app));
    if !kept {
        return Ok(None);
    }
    let (recording, _) = Recording::attach(pid, options)?;
    Ok(Some((recording, app)))
}

/// The process's application name: `SONDE_APP` in its environment, else its entry assembly's
/// or executable's name.
fn app_of(pid: u32) -> String {
    let list = |file: &str| -> Vec<String> {
        std::fs::read(format!("/proc/{pid}/{file}"))
            .map(|b| {
                b.split(|&c| c == 0)
                    .filter(|s| !s.is_empty())
                    .map(|s| String::from_utf8_lossy(s).into_owned())
                    .collect()
            })
            .unwrap_or_default()
    };
    if let Some(app) = list("environ").iter().find_map(|e| e.strip_prefix("SONDE_APP=")).filter(|a| !a.is_empty()) {
        return app.to_string();
    }
    crate::push::app_of_command(&list("cmdline")).unwrap_or_else(|| format!("pid-{pid}"))
}

/// One daemon per user at a time: a second one would attach to the same processes again (each
/// takes only a few attaches in its lifetime) and overwrite the first's status. The lock
/// (`daemon.lock` beside the status file, in the user's private registry directory) is held
/// until the daemon exits.
fn only_daemon(status_file: &std::path::Path) -> Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(false)
        .mode(0o600)
        .open(status_file.with_file_name("daemon.lock"))
        .context("cannot open the daemon's lock file")?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => {
            let running = std::fs::read(status_file)
                .ok()
                .and_then(|b| serde_json::from_slice::<Status>(&b).ok())
                .map_or(String::new(), |s| format!(" (pid {})", s.pid));
            anyhow::bail!("another sonde daemon of this user is running{running}: see `sonde daemon --status`")
        }
        Err(std::fs::TryLockError::Error(e)) => Err(e).context("cannot lock the daemon's lock file"),
    }
}

/// `daemon.json` in the user's private registry directory (the control sockets').
fn status_file() -> Result<PathBuf> {
    Ok(sonde_client::control::registry().context("cannot open the private registry directory")?.join("daemon.json"))
}

fn unix_s() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

fn status_of(
    started: u64,
    url: &str,
    rate: u64,
    tracked: &HashMap<u32, Tracked>,
    pushing: &Pushing,
    refused: &[String],
) -> Status {
    let stats = pushing.stats();
    let mut processes: Vec<Profiled> =
        tracked.iter().map(|(&pid, t)| Profiled { pid, app: t.app.clone(), since_unix_s: t.since }).collect();
    processes.sort_by_key(|p| p.pid);
    Status {
        pid: std::process::id(),
        started_unix_s: started,
        updated_unix_s: unix_s(),
        push: url.to_string(),
        rate_hz: rate,
        cpu_ms: cpu_ms(),
        rss_kb: rss_kb(),
        processes,
        pushed: stats.pushed,
        dropped: stats.dropped,
        failures: stats.failures,
        refused: refused.to_vec(),
    }
}

/// The daemon's CPU time, all threads: `/proc/self/stat`'s utime and stime, in the kernel's
/// user-visible ticks (USER_HZ, 100 a second on Linux).
fn cpu_ms() -> u64 {
    sonde_client::collector::stat_fields(std::process::id())
        .map(|f| f.split_whitespace().skip(11).take(2).filter_map(|t| t.parse::<u64>().ok()).sum::<u64>() * 10)
        .unwrap_or(0)
}

fn rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find_map(|l| l.strip_prefix("VmRSS:")?.split_whitespace().next()?.parse().ok()))
        .unwrap_or(0)
}

/// Written whole to a temporary file beside it, then renamed: a reader never sees half of one.
fn write_status(path: &PathBuf, status: &Status) {
    let tmp = path.with_extension("json.tmp");
    if let Ok(json) = serde_json::to_vec_pretty(status)
        && std::fs::write(&tmp, json).is_ok()
    {
        let _ = std::fs::rename(&tmp, path);
    }
}

/// `sonde daemon --status`.
fn status() -> Result<i32> {
    let path = status_file()?;
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(_) => {
            crate::say!("sonde: no daemon of this user's is running (no {})", path.display());
            return Ok(1);
        }
    };
    let s: Status = serde_json::from_str(&text).with_context(|| format!("{}: not a daemon status", path.display()))?;
    if !alive(s.pid) {
        crate::say!("sonde: the daemon (pid {}) is gone; its last status is {}", s.pid, path.display());
        return Ok(1);
    }
    let up = s.updated_unix_s.saturating_sub(s.started_unix_s).max(1);
    println!("daemon     pid {}, up {} s, pushing to {} at {} Hz", s.pid, up, Clean(&s.push), s.rate_hz);
    println!(
        "own cost   {} ms of CPU ({:.2}% of a core), {} KB resident",
        s.cpu_ms,
        s.cpu_ms as f64 / 10.0 / up as f64,
        s.rss_kb
    );
    println!("pushes     {} pushed, {} dropped, {} failed attempts", s.pushed, s.dropped, s.failures);
    println!("processes  {}", s.processes.len());
    for p in &s.processes {
        println!(
            "  {:>8}  {}  (since {} s ago)",
            p.pid,
            Clean(&p.app),
            s.updated_unix_s.saturating_sub(p.since_unix_s)
        );
    }
    for r in &s.refused {
        println!("  not profiled: {}", Clean(r));
    }
    Ok(0)
}
