//! `sonde record --pid PID`: attach to a running process, sample it until Ctrl-C, `--duration`
//! or its end, then detach and leave it running.
//!
//! The steps: check the target ([`Target::inspect`]), open the session directory and the socket
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

use crate::assemble::{RunFacts, assemble};
use crate::attach::Target;
use crate::cli::{ModeArg, RecordArgs};
use crate::collector::Collector;
use crate::output;
use crate::record::{ExitWaiter, Verbosity, agent_config};
use crate::summary;
use anyhow::{Context, Result, bail};
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
    if args.mode == ModeArg::Tracing {
        bail!(
            "tracing cannot attach to a running process (its hooks are set up when the runtime starts): sample it (`--mode sampling`, the default), or start the program under sonde (`sonde record --mode tracing -- COMMAND`)"
        );
    }
    let target = Target::inspect(pid)?;
    let socket = target.diagnostics_socket()?;
    let agent = crate::launch::locate_agent()?;
    let output = output::Output::prepare(&args.output, args.force)?;
    let collector = Collector::start_in(Some(&target.host_path(&target.tmp)), v.verbose > 1)
        .with_context(|| format!("cannot open the agent socket in the temporary directory of process {pid}"))?;
    // The paths as the target sees them (the same ones unless it is in another mount namespace).
    let name = collector.dir().file_name().context("the session directory has no name")?.to_owned();
    let inside = target.tmp.join(name);
    let copy = collector.dir().join(crate::launch::AGENT_LIBRARY);
    copy_private(&agent, &copy).with_context(|| format!("cannot copy the agent to {}", copy.display()))?;
    let config = agent_config(args, inside.join("agent.sock"));

    let stop = Arc::new(AtomicBool::new(false));
    for signal in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
        signal_hook::consts::SIGQUIT,
    ] {
        signal_hook::flag::register(signal, stop.clone()).context("cannot install a signal handler")?;
    }
    let mut waiter = ExitWaiter::new(pid);

    let asked = Instant::now();
    target.attach(&socket, &inside.join(crate::launch::AGENT_LIBRARY), &config.to_client_data())?;
    let attach_latency = asked.elapsed();
    if collector.connected() == 0 {
        bail!("the runtime of process {pid} loaded the agent, but it did not connect (see --agent-log)");
    }
    let attached_at_ns = unix_ns();
    if !v.quiet {
        let command = target.command.join(" ");
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

    let deadline = args.duration.map(|d| Instant::now() + d);
    let mut last_snapshot = Instant::now();
    let ended = loop {
        if !alive(pid) {
            break true;
        }
        if stop.load(Ordering::Relaxed) || deadline.is_some_and(|d| Instant::now() >= d) {
            break false;
        }
        if last_snapshot.elapsed() >= SNAPSHOT_PERIOD {
            collector.request_snapshots();
            last_snapshot = Instant::now();
        }
        let mut wait = SNAPSHOT_PERIOD.saturating_sub(last_snapshot.elapsed());
        if let Some(d) = deadline {
            wait = wait.min(d.saturating_duration_since(Instant::now()));
        }
        waiter.wait(wait);
    };
    if !ended {
        collector.finish_agents();
    }
    let sessions = collector.finish(if ended { Duration::from_millis(500) } else { FINISH_PATIENCE });
    let detached_at_ns = (!ended).then(unix_ns);

    let Some(session) =
        sessions.iter().find(|s| s.hello.as_ref().is_some_and(|h| h.pid == target.ns_pid) && s.latest.is_some())
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

/// The process exists and has not exited (a zombie its parent has not reaped yet has).
fn alive(pid: u32) -> bool {
    crate::collector::stat_fields(pid).is_some_and(|fields| !fields.starts_with(['Z', 'X']))
}

fn unix_ns() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}

/// Copies the agent to `to`, readable and executable by the user alone.
fn copy_private(from: &std::path::Path, to: &std::path::Path) -> std::io::Result<()> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let mut source = std::fs::File::open(from)?;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o700)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(to)?;
    std::io::copy(&mut source, &mut file)?;
    file.set_permissions(std::fs::Permissions::from_mode(0o500))?;
    Ok(())
}
