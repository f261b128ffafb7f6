//! `sonde record --pid PID`: attach to a running process, sample it until Ctrl-C, `--duration`
//! or its end, then detach and leave it running.
//!
//! The steps, all `sonde_client::Recording`'s: check the target
//! (`sonde_client::attach::Target::inspect`), open the session directory and the socket in the
//! target's own temporary directory, copy the agent there (a fresh path per attach: the runtime
//! keeps each agent it loaded mapped after a detach, and a new path gives the next attach fresh
//! state — see the agent's `process::stay_loaded`), send the runtime `AttachProfiler` with the
//! configuration as client data, then collect as a launched recording does (`Recording::watch`):
//! a snapshot every second, so that a target killed meanwhile loses at most about a second.
//! At the end the agent is asked to finish (`ControllerMessage::Finish`): it sends its final
//! snapshot, stops its threads and timers, and asks the runtime to detach it.
//!
//! The target's exit status is not ours to see (it is not our child): a profile of a target that
//! ended while attached says it ended, without a code.

use crate::cli::RecordArgs;
use crate::control;
use crate::options::Verbosity;
use crate::output;
use crate::summary;
use anyhow::{Result, bail};
use sonde_client::assemble::{RunFacts, assemble};
use sonde_client::collector::Session;
use sonde_client::{End, Recording, Signals, Watch, running_facts};
use sonde_profile::Attach;
use sonde_render::fmt::Clean;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

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
    let signals = Signals::install()?;
    let options = crate::options::record(args, v);
    let (mut recording, attach_latency) = Recording::attach(pid, &options)?;
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
    let _ = served.set(sonde_client::control::Served::of(&recording, &args.output));
    let stop = Arc::new(AtomicBool::new(false));
    let (wake_rx, wake_tx) = sonde_client::wake_pair();
    let control = control::serve(served, stop.clone(), wake_tx, v);
    let facts = |s: &Session| running_facts(s, true, &[]);
    let until = args.duration.map(|d| Instant::now() + d);
    let watch = Watch { signals: &signals, stop: &stop, wake: wake_rx, until };
    let end = recording.watch(watch, crate::push::ticker(&mut pushing, facts))?;
    drop(control);
    let ended = matches!(end, End::Gone);
    let sessions =
        if ended { recording.collect(Duration::from_millis(500)) } else { recording.finish_sessions(FINISH_PATIENCE) };
    let detached_at_ns = (!ended).then(unix_ns);
    if let Some(pushing) = pushing {
        pushing.finish(&sessions, facts, v.quiet, true);
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
