//! `sonde record`: launch the program with the agent attached, collect, write, summarise.

use crate::cli::RecordArgs;
use crate::control;
use crate::output;
use crate::summary;
use anyhow::{Context, Result};
use sonde_client::assemble::{RunFacts, assemble};
use sonde_client::collector::{Collector, Session};
use sonde_client::launch;
use sonde_profile::{AllocSampling, Mode, Timing};
use sonde_protocol::config::EventKinds;
use sonde_protocol::{AgentConfig, MethodFilter};
use sonde_render::fmt::Clean;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::ExitStatus;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How often the controller asks for a snapshot while the program runs, so that a program that
/// dies without shutting its runtime down (a crash, a kill) loses at most this much.
const SNAPSHOT_PERIOD: Duration = Duration::from_secs(1);
/// How long to wait for agents after the program exited (its .NET children may still run).
const PATIENCE: Duration = Duration::from_secs(5);

pub struct Verbosity {
    pub quiet: bool,
    pub verbose: u8,
}

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
    let agent = launch::locate_agent()?;
    let mut pushing = crate::push::start(&args)?;
    // Before the program runs: a run whose profile cannot be written is a run for nothing.
    let output = output::Output::prepare(&args.output, args.force)?;
    let collector = Collector::start(v.verbose > 1).context("cannot open the agent socket")?;
    let config = agent_config(&args, collector.socket().to_path_buf());

    let mut command = launch::command(&args.command, &agent, &config)?;

    // Ctrl-C in a terminal reaches the whole foreground process group: the program gets it
    // directly and decides what to do. We stay alive to collect what it leaves behind, and ask
    // the agents for a snapshot right away in case the program dies without shutting down.
    let interrupted = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGQUIT] {
        signal_hook::flag::register(signal, interrupted.clone()).context("cannot install a signal handler")?;
    }
    // SIGTERM, and SIGHUP (the terminal was closed), are meant for us: passed on to the program
    // so that it can shut down cleanly, while we stay to write what it leaves.
    let terminated = Arc::new(AtomicBool::new(false));
    let hung_up = Arc::new(AtomicBool::new(false));
    signal_hook::flag::register(signal_hook::consts::SIGTERM, terminated.clone())
        .context("cannot install a signal handler")?;
    signal_hook::flag::register(signal_hook::consts::SIGHUP, hung_up.clone())
        .context("cannot install a signal handler")?;

    // The control socket, named before the program runs (its first line of output would race
    // ours), answering once the program is there.
    let served = Arc::new(std::sync::OnceLock::new());
    let stopped = Arc::new(AtomicBool::new(false));
    let (wake_rx, wake_tx) = wake_pair();
    let control = control::serve(served.clone(), stopped.clone(), wake_tx, v);
    let mut child = command.spawn().map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => anyhow::anyhow!("cannot run `{}`: command not found", args.command[0]),
        _ => anyhow::anyhow!("cannot run `{}`: {e}", args.command[0]),
    })?;
    let child_pid = child.id();
    let mut waiter = ExitWaiter::new(child_pid).with_wake(wake_rx);
    let _ = served.set(control::Served {
        agents: collector.agents(),
        pid: child_pid,
        ns_pid: child_pid,
        command: args.command.clone(),
        mode: config.mode,
        attached: false,
        output: std::path::absolute(&args.output).unwrap_or_else(|_| args.output.clone()),
    });
    let mut last_snapshot = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().context("cannot wait for the program")? {
            break Some(status);
        }
        if stopped.load(Ordering::Relaxed) {
            break None;
        }
        if interrupted.swap(false, Ordering::Relaxed) {
            collector.request_snapshots();
        }
        for (flag, signal) in [(&terminated, rustix::process::Signal::TERM), (&hung_up, rustix::process::Signal::HUP)] {
            if flag.swap(false, Ordering::Relaxed) {
                collector.request_snapshots();
                launch::send_signal(child_pid, signal);
            }
        }
        if last_snapshot.elapsed() >= SNAPSHOT_PERIOD {
            collector.request_snapshots();
            last_snapshot = Instant::now();
        }
        if let Some(pushing) = pushing.as_mut() {
            pushing.tick(&collector.agents(), |s| sonde_client::running_facts(s, false, &args.command));
        }
        waiter.wait(SNAPSHOT_PERIOD.saturating_sub(last_snapshot.elapsed()));
    };
    drop(control);
    let connected = collector.connected();
    if status.is_none() {
        // `sonde stop`: the agents finish; the program runs on and is still waited for below.
        collector.finish_agents();
    }
    let sessions = collector.finish(if connected == 0 { Duration::from_millis(200) } else { PATIENCE });
    if let Some(pushing) = pushing {
        pushing.finish(&sessions, |s| sonde_client::running_facts(s, false, &args.command), v.quiet, true);
    }
    let Some(status) = status else {
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

/// The agent's configuration from the command line; `socket` as the agent will see it.
pub fn agent_config(args: &RecordArgs, socket: PathBuf) -> AgentConfig {
    let exact = args.alloc_sampling == AllocSampling::Exact;
    AgentConfig {
        socket: Some(socket),
        mode: args.mode(),
        timing: args.timing,
        filter: MethodFilter { include: args.include.clone(), exclude: args.exclude.clone(), all: args.all },
        interval_us: match args.mode() {
            Mode::Tracing | Mode::Coverage => args.interval_us,
            Mode::Sampling => (1_000_000 / args.rate).max(1),
        },
        clock: args.clock,
        log: args.agent_log.clone(),
        // Benchmarks set SONDE_BENCH_HOOKS in sonde's own environment; it passes through.
        bench_hooks: None,
        // Tests and benchmarks of the sampler thread set SONDE_CPU_TIMERS=0 in sonde's own
        // environment: it passes through to a program sonde starts, and is handed on here for one
        // it attaches to.
        cpu_timers: std::env::var(sonde_protocol::config::ENV_CPU_TIMERS).map_or(true, |v| v != "0"),
        // `SONDE_MONO_CATCHES=1` in sonde's own environment, what turned them on before
        // `--catches` existed, still does.
        mono_catches: args.catches || std::env::var(sonde_protocol::config::ENV_MONO_CATCHES).is_ok_and(|v| v == "1"),
        events: EventKinds { alloc: args.events.alloc || exact, ..args.events },
        alloc_exact: exact,
        async_stacks: args.async_stacks,
        native_hooks: args.native_hooks,
        call_trace: args.call_trace.unwrap_or(0),
        inject: args.inject.clone(),
        // Likewise SONDE_ALLOC_SAMPLE_BYTES (tests).
        alloc_sample_bytes: std::env::var(sonde_protocol::config::ENV_ALLOC_SAMPLE_BYTES)
            .ok()
            .and_then(|v| v.parse().ok())
            .filter(|&n| n > 0)
            .unwrap_or(sonde_protocol::config::DEFAULT_ALLOC_SAMPLE_BYTES),
    }
}

/// Sleeps until the program ends, a signal for `sonde` arrives, or a timeout — rather than
/// waking every few milliseconds to look (each look would cost the whole recording a wake-up and
/// the run up to a period of latency at its end): a pidfd becomes readable when the process ends,
/// and the signals SIGINT, SIGQUIT, SIGTERM and SIGHUP write to a socket pair (their flags are
/// read by the caller). Where pidfds are missing (Linux before 5.3), it sleeps 5 ms.
pub(crate) struct ExitWaiter {
    pidfd: Option<rustix::fd::OwnedFd>,
    wake: Option<std::os::unix::net::UnixStream>,
    /// Another socket whose data wakes [`ExitWaiter::wait`] (`sonde stop`, see [`ExitWaiter::with_wake`]).
    extra: Option<std::os::unix::net::UnixStream>,
}

impl ExitWaiter {
    pub(crate) fn new(pid: u32) -> ExitWaiter {
        let pidfd = i32::try_from(pid)
            .ok()
            .and_then(rustix::process::Pid::from_raw)
            .and_then(|pid| rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()).ok());
        let wake = std::os::unix::net::UnixStream::pair().ok().and_then(|(rx, tx)| {
            rx.set_nonblocking(true).ok()?;
            tx.set_nonblocking(true).ok()?;
            for signal in [
                signal_hook::consts::SIGINT,
                signal_hook::consts::SIGQUIT,
                signal_hook::consts::SIGTERM,
                signal_hook::consts::SIGHUP,
            ] {
                signal_hook::low_level::pipe::register(signal, tx.try_clone().ok()?).ok()?;
            }
            Some(rx)
        });
        ExitWaiter { pidfd, wake, extra: None }
    }

    /// Also wakes when `socket` (the receiving end of a pair) has data.
    pub(crate) fn with_wake(mut self, socket: Option<std::os::unix::net::UnixStream>) -> ExitWaiter {
        self.extra = socket.filter(|s| s.set_nonblocking(true).is_ok());
        self
    }

    pub(crate) fn wait(&mut self, timeout: Duration) {
        use rustix::event::{PollFd, PollFlags, Timespec, poll};
        use std::os::fd::AsFd;
        let (Some(pidfd), Some(wake)) = (&self.pidfd, &self.wake) else {
            std::thread::sleep(timeout.min(Duration::from_millis(5)));
            return;
        };
        let timeout = Timespec::try_from(timeout.max(Duration::from_millis(1))).ok();
        let mut fds = vec![PollFd::new(pidfd, PollFlags::IN), PollFd::from_borrowed_fd(wake.as_fd(), PollFlags::IN)];
        if let Some(extra) = &self.extra {
            fds.push(PollFd::from_borrowed_fd(extra.as_fd(), PollFlags::IN));
        }
        // EINTR (a signal) is a wake-up like any other.
        let _ = poll(&mut fds, timeout.as_ref());
        let mut buf = [0u8; 64];
        for socket in std::iter::once(wake).chain(&self.extra) {
            while matches!(std::io::Read::read(&mut &*socket, &mut buf), Ok(n) if n > 0) {}
        }
    }
}

/// A socket pair for [`ExitWaiter::with_wake`]: (its receiving end, the end to write to). Both
/// `None` when no pair can be made (the recording then wakes on its own schedule only).
pub(crate) fn wake_pair() -> (Option<std::os::unix::net::UnixStream>, Option<std::os::unix::net::UnixStream>) {
    match std::os::unix::net::UnixStream::pair() {
        Ok((rx, tx)) => (Some(rx), Some(tx)),
        Err(_) => (None, None),
    }
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
