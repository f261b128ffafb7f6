//! The control socket of a running `sonde record` (`sonde_client::control` answers it; the
//! snapshots it asks for are written here), and the commands that talk to it: `sonde sessions`, `sonde snapshot`, `sonde stop`, `sonde pause`,
//! `sonde resume`.
//!
//! `sonde snapshot --heap` asks for a heap snapshot instead (`heap.rs`), written as a `.heap` file.
//!
//! A snapshot is taken as the periodic ones are (the agent sends its cumulative trees) and
//! written by the recording itself — as the same user, the client's path made absolute by the
//! client — with the checks of `-o` (a file that is not a profile is not replaced without
//! `--force`). `stop` ends the recording as Ctrl-C ends an attached one: the agents send their
//! final snapshot and stop; the profile is written; the program runs on, unprofiled (a program
//! sonde started is still waited for, and its exit code is still sonde's).

use crate::cli::{ControlArgs, SnapshotArgs};
use crate::options::Verbosity;
use crate::output::Output;
use anyhow::Result;
use sonde_client::assemble::assemble;
use sonde_client::control::{self, ControlServer, Served};
use sonde_client::running_facts;
use sonde_profile::Mode;
use sonde_protocol::control::{ControlCommand, ControlReply};
use sonde_render::fmt::{Clean, count};
use std::io::Write;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// Opens the control socket of this recording (`sonde_client::control::serve`, snapshots
/// written by [`snapshot`]) and names the session on stderr. `stop` is set (and `wake` written
/// to) when a client asks the recording to stop. Without a control socket (the registry cannot be
/// made) the recording goes on with a note.
///
/// `served` is filled in once the program runs (the session is named before it starts, so that
/// the line never lands in the middle of the program's own output); until then requests are
/// answered with an error.
pub fn serve(
    served: Arc<OnceLock<Served>>,
    stop: Arc<AtomicBool>,
    wake: Option<UnixStream>,
    v: &Verbosity,
) -> Option<ControlServer> {
    let write = |served: &Served, to: &Path, force: bool, heap: bool| {
        let written = if heap { crate::heap::snapshot(served, to, force) } else { snapshot(served, to, force) };
        written.map_err(|e| crate::chain(&e))
    };
    match control::serve(served, stop, wake, write) {
        Ok(server) => {
            if !v.quiet {
                crate::say!("sonde: session {} (sonde snapshot|stop|pause|resume --session {0})", server.id);
            }
            Some(server)
        }
        Err(e) => {
            crate::say!("sonde: no control socket for this recording: {e}");
            None
        }
    }
}

/// Takes a snapshot now and writes it to `to`.
fn snapshot(served: &Served, to: &Path, force: bool) -> Result<String> {
    let output = Output::prepare(to, force)?;
    if !served.agents.refresh(served.ns_pid, Duration::from_secs(5)) {
        crate::say!("sonde: process {} did not answer in time: the snapshot holds its latest data", served.pid);
    }
    let profile = served
        .agents
        .with_session(served.ns_pid, |s| assemble(s, running_facts(s, served.attached, &served.command)))
        .flatten()
        .ok_or_else(|| anyhow::anyhow!("process {} has sent no data yet", served.pid))?;
    let samples: u64 = profile.nodes.iter().map(|n| n.self_samples).sum();
    let path = output.save(&profile, served.pid, true)?;
    Ok(match profile.run.mode {
        Mode::Sampling => format!("wrote {}: {} samples of process {}", path.display(), count(samples), served.pid),
        Mode::Tracing | Mode::Coverage => format!("wrote {}: a snapshot of process {}", path.display(), served.pid),
    })
}

/// `sonde sessions`.
pub fn sessions() -> Result<i32> {
    let sessions = control::sessions()?;
    if sessions.is_empty() {
        crate::say!("sonde: no recording session is running");
        return Ok(0);
    }
    let mut out = std::io::stdout().lock();
    writeln!(out, "{:>8} {:>8}  {:<8} {:<9} {:<7} COMMAND", "SESSION", "PID", "MODE", "HOW", "STATE")?;
    for s in sessions {
        writeln!(
            out,
            "{:>8} {:>8}  {:<8} {:<9} {:<7} {}",
            s.id,
            s.pid,
            s.mode.as_str(),
            if s.attached { "attached" } else { "launched" },
            if s.paused { "paused" } else { "running" },
            Clean(&s.command.join(" "))
        )?;
    }
    Ok(0)
}

/// `sonde snapshot --to FILE [--session ID] [--force]`.
pub fn take_snapshot(args: SnapshotArgs) -> Result<i32> {
    let to = std::path::absolute(&args.to)?;
    send(args.session, ControlCommand::Snapshot { to, force: args.force, heap: args.heap })
}

/// `sonde stop|pause|resume [--session ID]`.
pub fn command(args: ControlArgs, command: ControlCommand) -> Result<i32> {
    send(args.session, command)
}

fn send(session: Option<u32>, command: ControlCommand) -> Result<i32> {
    let id = control::choose(session)?;
    match control::send(id, command)? {
        ControlReply::Done(line) => {
            crate::say!("sonde: {}", Clean(&line));
            Ok(0)
        }
        ControlReply::Error(line) => anyhow::bail!("session {id}: {line}"),
        ControlReply::Status(_) => anyhow::bail!("session {id} answered with its status"),
    }
}
