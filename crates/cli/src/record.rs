//! `sonde record`: launch the program with the agent attached, collect, write, summarise (or,
//! with `--pid`, attach: `attached.rs`). Both run on `sonde_client::Recording`, which launches,
//! takes the periodic snapshots and handles `sonde`'s signals (`Recording::watch`).

use crate::cli::RecordArgs;
use crate::control;
use crate::options::Verbosity;
use crate::output;
use crate::summary;
use anyhow::{Context, Result};
use sonde_client::assemble::{RunFacts, assemble};
use sonde_client::collector::Session;
use sonde_client::{Recording, Signals, Watch, launch, running_facts};
use sonde_profile::{Mode, Timing};
use sonde_render::fmt::Clean;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::ExitStatus;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// How long to wait for agents after the program exited (its .NET children may still run).
const PATIENCE: Duration = Duration::from_secs(5);

/// `--call-trace` records instrumented native code's calls, with their times.
fn check_call_trace(args: &RecordArgs) -> Result<()> {
    if args.mode() != Mode::Tracing {
        anyhow::bail!("--call-trace goes with --mode tracing (it records the calls the hooks see)");
    }
    if args.timing == Timing::Sampled {
        anyhow::bail!("--call-trace goes with --timing exact (each of its events carries its time)");
    }
    let native = args.command.first().is_some_and(|p| launch::is_instrumented_native(p));
    if !native && !args.native_hooks {
        anyhow::bail!(
            "--call-trace records instrumented native code: a program built with -finstrument-functions, or a .NET program with --native-hooks"
        );
    }
    Ok(())
}

/// `--inject-file`: its rules join `--inject`'s (a bad line stops here, naming it).
fn read_inject_file(args: &mut RecordArgs) -> Result<()> {
    let Some(path) = &args.inject_file else { return Ok(()) };
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let rules = sonde_protocol::InjectRule::parse_file(&text)
        .map_err(|(line, e)| anyhow::anyhow!("{}:{line}: {e}", path.display()))?;
    if rules.is_empty() {
        anyhow::bail!("{}: no rule in the file", path.display());
    }
    args.inject.extend(rules);
    Ok(())
}

/// Returns the exit code `sonde` should end with.
pub fn record(mut args: RecordArgs, v: &Verbosity) -> Result<i32> {
    // Decided once: telling an instrumented native program reads its executable.
    args.mode_arg = Some(args.mode());
    if args.native_hooks && args.mode() != Mode::Tracing {
        anyhow::bail!("--native-hooks goes with --mode tracing (the native functions are traced through their hooks)");
    }
    if args.call_trace.is_some() {
        check_call_trace(&args)?;
    }
    if args.mode() == Mode::Coverage && args.pid.is_some() {
        anyhow::bail!(
            "--mode coverage needs a program sonde starts: a running process has compiled its methods already"
        );
    }
    if args.async_stacks && args.mode() != Mode::Sampling {
        anyhow::bail!("--async goes with --mode sampling (it puts samples under the stack that awaited)");
    }
    if args.async_stacks && args.command.first().is_some_and(|p| launch::is_mono(p)) {
        anyhow::bail!("--async needs CoreCLR: Mono raises no task events (its async frames are named without it)");
    }
    read_inject_file(&mut args)?;
    if !args.inject.is_empty() {
        if args.pid.is_some() {
            anyhow::bail!("--inject needs a program sonde starts: a running process has compiled its methods already");
        }
        if args.command.first().is_some_and(|p| launch::is_mono(p)) {
            anyhow::bail!("--inject needs CoreCLR: Mono's profiler API cannot rewrite a method's IL (docs/INJECT.md)");
        }
    }
    if let Some(pid) = args.pid {
        return crate::attached::record(pid, &args, v);
    }
    if args.duration.is_some() {
        anyhow::bail!("--duration goes with --pid (a program sonde starts runs until it ends)");
    }
    let options = crate::options::record(&args, v);
    let mut pushing = crate::push::start(&args)?;
    // Before the program runs: a run whose profile cannot be written is a run for nothing.
    let output = output::Output::prepare(&args.output, args.force)?;
    let launch = Recording::prepare(&args.command, &options)?;
    let signals = Signals::install()?;

    // The control socket, named before the program runs (its first line of output would race
    // ours), answering once the program is there.
    let served = Arc::new(std::sync::OnceLock::new());
    let stopped = Arc::new(AtomicBool::new(false));
    let (wake_rx, wake_tx) = sonde_client::wake_pair();
    let control = control::serve(served.clone(), stopped.clone(), wake_tx, v);
    let mut recording = launch.start()?;
    let child_pid = recording.pid();
    let _ = served.set(sonde_client::control::Served::of(&recording, &args.output));
    let facts = |s: &Session| running_facts(s, false, &args.command);
    let watch = Watch { signals: &signals, stop: &stopped, wake: wake_rx, until: None };
    let end = recording.watch(watch, crate::push::ticker(&mut pushing, facts))?;
    drop(control);
    let patience = if recording.agents().connected() == 0 { Duration::from_millis(200) } else { PATIENCE };
    let mut child = recording.take_child().context("the program sonde started is not there")?;
    let sessions = match end {
        // `sonde stop`: the agents finish; the program runs on and is still waited for below.
        sonde_client::End::Stopped => recording.finish_sessions(patience),
        _ => recording.collect(patience),
    };
    if let Some(pushing) = pushing {
        pushing.finish(&sessions, facts, v.quiet, true);
    }
    let sonde_client::End::Exited(status) = end else {
        // Stopped from outside: the profiles now, then the program's own end, as ours.
        let unknown = End { code: None, signal: None };
        let written = write_profiles(&sessions, &args, &output, child_pid, unknown, v)?;
        if !v.quiet {
            crate::say!("sonde: recording stopped; process {child_pid} runs on, unprofiled");
            for (path, profile) in &written {
                summary::print(profile, path);
            }
        }
        let status = child.wait().context("cannot wait for the program")?;
        return Ok(End { code: status.code(), signal: status.signal() }.exit_code());
    };
    let end = real_end(status, &sessions, child_pid);
    let exit = end.exit_code();

    let written = write_profiles(&sessions, &args, &output, child_pid, end, v)?;
    if written.is_empty() {
        let reason = match sessions.iter().flat_map(|s| &s.errors).next() {
            Some(e) => format!("the agent failed: {e}"),
            None if sessions.is_empty() => launch::no_agent_reason(&args.command),
            None => "the agent connected but sent no data".to_string(),
        };
        crate::say!("sonde: nothing recorded: {}", Clean(&reason));
        return Ok(if exit != 0 { exit } else { 1 });
    }
    if !v.quiet {
        for (path, profile) in &written {
            summary::print(profile, path);
            let mapped = sessions
                .iter()
                .find(|s| s.hello.as_ref().is_some_and(|h| h.pid == profile.run.pid))
                .and_then(|s| s.latest.as_ref())
                .map_or(&[][..], |l| &l.mapped_files[..]);
            summary::unhooked(profile.run.pid, &launch::instrumented_libraries(mapped));
        }
    }
    Ok(exit)
}

/// How the program ended: its exit code, or the signal it died of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct End {
    code: Option<i32>,
    signal: Option<i32>,
}

impl End {
    /// As a shell reports it: the code, or 128 + the signal.
    fn exit_code(self) -> i32 {
        self.code.unwrap_or_else(|| 128 + self.signal.unwrap_or(0))
    }
}

/// The program's real end: its wait status, unless its agent saw it receive a signal that is
/// fatal whatever happens next (SIGABRT) and the status says something else — Mono's sampler turns
/// an aborting process into `exit(0)`, or hangs it until Mono's watchdog kills it (SIGKILL; see
/// docs/SAMPLING.md). Then the abort is what happened, and what sonde reports and exits with.
fn real_end(status: ExitStatus, sessions: &[Session], child_pid: u32) -> End {
    let waited = End { code: status.code(), signal: status.signal() };
    let fatal = sessions
        .iter()
        .filter(|s| s.hello.as_ref().is_some_and(|h| h.pid == child_pid))
        .find_map(|s| s.latest.as_ref().and_then(|l| l.fatal_signal));
    match fatal {
        Some(signal) if waited.signal != Some(signal) => {
            let how = match waited.signal {
                Some(other) => format!("died of signal {other}"),
                None => format!("exited with status {}", waited.code.unwrap_or(0)),
            };
            crate::say!(
                "sonde: process {child_pid} received signal {signal} (abort) but then {how}: reporting the abort"
            );
            End { code: None, signal: Some(signal) }
        }
        _ => waited,
    }
}

fn write_profiles(
    sessions: &[Session],
    args: &RecordArgs,
    output: &output::Output,
    child_pid: u32,
    end: End,
    v: &Verbosity,
) -> Result<Vec<(PathBuf, sonde_profile::Profile)>> {
    let usable: Vec<&Session> = sessions.iter().filter(|s| s.hello.is_some() && s.latest.is_some()).collect();
    let mut written = Vec::new();
    for session in &usable {
        let pid = session.hello.as_ref().map_or(0, |h| h.pid);
        // The program we started is described by the user's command and its exit status; a
        // process it started in turn, by its own command line (its status is not ours to see).
        let facts = if pid == child_pid {
            RunFacts { command: args.command.clone(), exit_code: end.code, signal: end.signal }
        } else {
            let command = session.hello.as_ref().map(|h| h.command_line.clone()).unwrap_or_default();
            RunFacts { command, exit_code: None, signal: None }
        };
        let Some(profile) = assemble(session, facts) else {
            crate::say!("sonde: process {pid}: the agent's data was inconsistent; skipped");
            continue;
        };
        let path = output.save(&profile, pid, usable.len() == 1)?;
        for error in &session.errors {
            crate::say!("sonde: process {pid}: {}", Clean(error));
        }
        let superseded = session.latest.as_ref().map_or(0, |l| l.superseded);
        if superseded > 0 && !v.quiet {
            crate::say!(
                "sonde: process {pid}: {superseded} snapshots waited for sonde (stopped or slow) and were replaced by newer ones; none of their data was lost"
            );
        }
        if profile.run.incomplete && !v.quiet {
            crate::say!(
                "sonde: process {pid} ended without shutting down its runtime: the profile holds its last snapshot"
            );
        }
        for warning in sonde_client::sources::take_warnings() {
            crate::say!("sonde: {}", Clean(&warning));
        }
        written.push((path, profile));
    }
    Ok(written)
}
