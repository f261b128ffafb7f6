//! `sonde record --pid PID`: attach to a running process, sample it until Ctrl-C, `--duration`
//! or its end, then detach and leave it running.
//!
//! The steps: check the target (`sonde_client::attach::Target::inspect`), open the session directory and the socket
//! in the target's own temporary directory, copy the agent there (a fresh path per attach: the
//! runtime keeps each agent it loaded mapped after a detach, and a new path gives the next
//! attach fresh state — see the agent's `process::stay_loaded`), send the runtime
//! `AttachProfiler` with the configuration as client data, then collect as a launched recording
//! does: a snapshot every second, so that a target killed meanwhile loses at most about a second.
//! At the end the agent is asked to finish (`ControllerMessage::Finish`): it sends its final
//! snapshot, stops its threads and timers, and asks the runtime to detach it.
//!
//! The target's exit status is not ours to see (it is not our child): a profile of a target that
//! ended while attached says it ended, without a code.

use crate::cli::RecordArgs;
use crate::control;
use crate::output;
use crate::record::{ExitWaiter, Verbosity, agent_config};
use crate::summary;
use anyhow::{Context, Result, bail};
use sonde_client::assemble::{RunFacts, assemble};
use sonde_client::{Options, Recording};
use sonde_profile::Attach;
use sonde_render::fmt::Clean;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const SNAPSHOT_PERIOD: Duration = Duration::from_secs(1);
/// How long the agent gets to send its final snapshot once asked to finish.
const FINISH_PATIENCE: Duration = Duration::from_secs(5);

/// Returns the exit code `sonde` should end with.
pub fn record(pid: u32, args: &RecordArgs, v: &Verbosity) -> Result<i32> {
    if args.alloc_sampling == sonde_profile::AllocSampling::Exact {
        // The runtime takes the flag that reports every allocation at start-up only.
        anyhow::bail!(
            "--alloc-sampling exact needs the program started by sonde (the runtime allows it at start-up only); attach with --alloc-sampling sampled"
        );
    }
    // What is wrong with the target first (`Recording::attach` looks again, just before the attach).
    if args.mode() == sonde_profile::Mode::Sampling {
        sonde_client::attach::Target::inspect(pid)?;
    }
    let output = output::Output::prepare(&args.output, args.force)?;
    let mut pushing = crate::push::start(args)?;
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
        signal_hook::consts::SIGQUIT,
    ] {
        signal_hook::flag::register(signal, stop.clone()).context("cannot install a signal handler")?;
    }
    let (wake_rx, wake_tx) = crate::record::wake_pair();
    let mut waiter = ExitWaiter::new(pid).with_wake(wake_rx);
    let options =
        Options { config: agent_config(args, Default::default()), program_output: true, verbose: v.verbose > 1 };
    let (recording, attach_latency) = Recording::attach(pid, &options)?;
    let ns_pid = recording.ns_pid();
    let attached_at_ns = unix_ns();
    if !v.quiet {
        let command = recording.command().join(" ");
        crate::say!(
            "sonde: attached to process {pid} ({}) in {} ms; sampling at {} Hz{}",
            Clean(&command),
            attach_latency.as_millis(),
            args.rate,
            match args.duration {
                Some(d) => format!(" for {:.1} s", d.as_secs_f64()),
                None => " until Ctrl-C".to_string(),
            }
        );
    }

    let served = Arc::new(std::sync::OnceLock::new());
    let _ = served.set(control::Served {
        agents: recording.agents(),
        pid,
        ns_pid,
        command: recording.command().to_vec(),
        mode: sonde_profile::Mode::Sampling,
        attached: true,
        output: std::path::absolute(&args.output).unwrap_or_else(|_| args.output.clone()),
    });
    let control = control::serve(served, stop.clone(), wake_tx, v);
    let deadline = args.duration.map(|d| Instant::now() + d);
    let mut last_snapshot = Instant::now();
    let ended = loop {
        if !sonde_client::collector::alive(pid) {
            break true;
        }
        if stop.load(Ordering::Relaxed) || deadline.is_some_and(|d| Instant::now() >= d) {
            break false;
        }
        if last_snapshot.elapsed() >= SNAPSHOT_PERIOD {
            recording.agents().request_snapshots();
            last_snapshot = Instant::now();
        }
        if let Some(pushing) = pushing.as_mut() {
            pushing.tick(&recording.agents(), |s| sonde_client::running_facts(s, true, &[]));
        }
        let mut wait = SNAPSHOT_PERIOD.saturating_sub(last_snapshot.elapsed());
        if let Some(d) = deadline {
            wait = wait.min(d.saturating_duration_since(Instant::now()));
        }
        waiter.wait(wait);
    };
    drop(control);
    let sessions =
        if ended { recording.collect(Duration::from_millis(500)) } else { recording.finish_sessions(FINISH_PATIENCE) };
    let detached_at_ns = (!ended).then(unix_ns);
    if let Some(pushing) = pushing {
        pushing.finish(&sessions, |s| sonde_client::running_facts(s, true, &[]), v.quiet, true);
    }

    let Some(session) =
        sessions.iter().find(|s| s.hello.as_ref().is_some_and(|h| h.pid == ns_pid) && s.latest.is_some())
    else {
        let reason = match sessions.iter().flat_map(|s| &s.errors).next() {
            Some(e) => format!("the agent failed: {e}"),
            None => "the agent sent no data".to_string(),
        };
        crate::say!("sonde: nothing recorded from process {pid}: {}", Clean(&reason));
        return Ok(1);
    };
    let facts = RunFacts {
        command: session.hello.as_ref().map(|h| h.command_line.clone()).unwrap_or_default(),
        exit_code: None,
        signal: None,
    };
    let Some(mut profile) = assemble(session, facts) else {
        bail!("process {pid}: the agent's data was inconsistent; nothing written");
    };
    // A detach that completed is one whose final snapshot arrived (`incomplete` is false then:
    // the profile holds everything up to the detach).
    profile.run.attach = Some(Attach { attached_at_ns, detached_at_ns: detached_at_ns.filter(|_| session.complete) });
    let path = output.save(&profile, pid, true)?;
    for warning in sonde_client::sources::take_warnings() {
        crate::say!("sonde: {}", Clean(&warning));
    }
    for error in &session.errors {
        crate::say!("sonde: process {pid}: {}", Clean(error));
    }
    if !v.quiet {
        if ended {
            crate::say!("sonde: process {pid} ended while attached: the profile holds its last snapshot");
        } else if session.complete {
            crate::say!("sonde: detached from process {pid}; it runs on");
        } else {
            crate::say!("sonde: process {pid} did not finish in time: the profile holds its last snapshot");
        }
        summary::print(&profile, &path);
    }
    Ok(0)
}

fn unix_ns() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}
