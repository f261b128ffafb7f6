//! [`Recording`]: one profiled process, launched or attached, whose profile can be read while it
//! runs. Every `sonde` command that profiles is built on it: `sonde record` (launched, or
//! `--pid`), `top`, `dump` and `daemon`. A recording that runs to its end is [`Recording::watch`]ed:
//! periodic snapshots, `sonde`'s signals handled ([`Signals`]: passed on to a launched program),
//! a stop from outside (the control socket) and a hook for continuous profiling's pushes.

use crate::assemble::{RunFacts, assemble};
use crate::attach::{Target, TargetError};
use crate::collector::{Agents, Collector, Session};
use crate::launch::{AgentNotFound, LaunchError};
use sonde_profile::{Mode, Profile, SampleClock};
use sonde_protocol::AgentConfig;
use std::os::unix::net::UnixStream;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Why a recording could not start, or ended without a profile. Each message is one line for a
/// user; the variants say which step failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The program could not be started (not found, not executable, an untrusted agent).
    #[error(transparent)]
    Launch(#[from] LaunchError),
    /// The process cannot be attached to (no such process, another user's, not .NET, refused).
    #[error(transparent)]
    Target(#[from] TargetError),
    #[error(
        "tracing cannot attach to a running process (its hooks are set up when the runtime starts): sample it, or start the program under sonde (`sonde record --mode tracing -- COMMAND`)"
    )]
    TracingAttach,
    #[error("cannot open the agent socket: {0}")]
    AgentSocket(std::io::Error),
    #[error("cannot open the agent socket in the temporary directory of process {pid}: {source}")]
    TargetSocket { pid: u32, source: std::io::Error },
    #[error("the runtime of process {pid} loaded the agent, but it did not connect (see --agent-log)")]
    NotConnected { pid: u32 },
    #[error("cannot install a signal handler: {0}")]
    Signals(std::io::Error),
    #[error("cannot wait for the program: {0}")]
    Wait(std::io::Error),
    #[error("nothing recorded from process {pid}")]
    NothingRecorded { pid: u32 },
}

impl From<AgentNotFound> for Error {
    fn from(e: AgentNotFound) -> Error {
        Error::Launch(e.into())
    }
}

/// How often a recording asks for a snapshot while the process runs ([`Recording::watch`]), so
/// that a process that dies without shutting its runtime down (a crash, a kill) loses at most this
/// much.
pub const SNAPSHOT_PERIOD: Duration = Duration::from_secs(1);

/// The sampler's period, in microseconds, for `rate_hz` samples per second (at least 1 µs).
pub fn interval_for_rate(rate_hz: u64) -> u64 {
    (1_000_000 / rate_hz.max(1)).max(1)
}

/// How to profile.
#[derive(Debug, Clone)]
pub struct Options {
    /// The agent's configuration; its socket is filled in by the recording.
    pub config: AgentConfig,
    /// A launched program's stdout and stderr pass through (else they go to `/dev/null`, as a
    /// full-screen view needs).
    pub program_output: bool,
    /// Notes about agents connecting (`sonde -vv`).
    pub verbose: bool,
}

impl Options {
    /// `mode`, its sampler ticking every `interval_us` (sampling; tracing with sampled timing);
    /// everything else as the agent's defaults say, but for the settings tests and benchmarks
    /// give `sonde` in its own environment, handed on from there
    /// ([`sonde_protocol::config::ENV_CPU_TIMERS`], `ENV_SAMPLER`, `ENV_MONO_CATCHES`,
    /// `ENV_ALLOC_SAMPLE_BYTES`):
    /// a launched program inherits them anyway; an attached one gets them here. The one place an
    /// [`AgentConfig`] is made for a recording.
    pub fn new(mode: Mode, interval_us: u64) -> Options {
        use sonde_protocol::config::{
            DEFAULT_ALLOC_SAMPLE_BYTES, ENV_ALLOC_SAMPLE_BYTES, ENV_CPU_TIMERS, ENV_MONO_CATCHES, ENV_SAMPLER,
        };
        let var = |name| std::env::var(name).ok();
        let config = AgentConfig {
            mode,
            interval_us,
            cpu_timers: var(ENV_CPU_TIMERS).is_none_or(|v| v != "0"),
            kernel_sampler: var(ENV_SAMPLER).is_none_or(|v| v != "signal"),
            mono_catches: var(ENV_MONO_CATCHES).is_some_and(|v| v == "1"),
            alloc_sample_bytes: var(ENV_ALLOC_SAMPLE_BYTES)
                .and_then(|v| v.parse().ok())
                .filter(|&n| n > 0)
                .unwrap_or(DEFAULT_ALLOC_SAMPLE_BYTES),
            ..AgentConfig::default()
        };
        Options { config, program_output: true, verbose: false }
    }

    /// Sampling at `rate_hz` samples per second of each thread's CPU time.
    pub fn sampling(rate_hz: u64) -> Options {
        Options::sampling_with(rate_hz, SampleClock::Cpu)
    }

    /// Sampling at `rate_hz`, driven by `clock`.
    pub fn sampling_with(rate_hz: u64, clock: SampleClock) -> Options {
        let mut options = Options::new(Mode::Sampling, interval_for_rate(rate_hz));
        options.config.clock = clock;
        options
    }
}

/// One snapshot of a running recording.
#[derive(Debug)]
pub struct Update {
    pub profile: Profile,
    /// The process ended (or the agent finished): no update follows.
    pub last: bool,
}

/// A profiled process.
pub struct Recording {
    collector: Collector,
    agents: Agents,
    /// The host's pid, and the pid as the process knows itself (its agent reports that one).
    pid: u32,
    ns_pid: u32,
    command: Vec<String>,
    child: Option<Child>,
    attached: bool,
    mode: Mode,
    next_update: Instant,
}

/// A program ready to start with the agent: its socket listens, the agent library is found and
/// trusted ([`Recording::prepare`]). What must come before the program's first line of output
/// (`sonde record` names its control socket) goes between that and [`Launch::start`].
pub struct Launch {
    collector: Collector,
    command: Command,
    program: Vec<String>,
    mode: Mode,
}

impl Launch {
    /// Starts the program.
    pub fn start(mut self) -> Result<Recording, Error> {
        let child = crate::launch::spawn(&mut self.command, &self.program[0])?;
        let pid = child.id();
        Ok(Recording {
            agents: self.collector.agents(),
            collector: self.collector,
            pid,
            ns_pid: pid,
            command: self.program,
            child: Some(child),
            attached: false,
            mode: self.mode,
            next_update: Instant::now(),
        })
    }
}

impl Recording {
    /// Starts `command` with the agent loaded (see [`crate::launch`]).
    pub fn launch(command: &[String], options: &Options) -> Result<Recording, Error> {
        Recording::prepare(command, options)?.start()
    }

    /// Everything [`Recording::launch`] does but start the program: [`Launch::start`] does.
    pub fn prepare(command: &[String], options: &Options) -> Result<Launch, Error> {
        if command.is_empty() {
            return Err(LaunchError::NoCommand.into());
        }
        let agent = crate::launch::locate_agent()?;
        let collector = Collector::start(options.verbose).map_err(Error::AgentSocket)?;
        let mut config = options.config.clone();
        config.socket = Some(collector.socket().to_path_buf());
        let mut cmd = crate::launch::command(command, &agent, &config)?;
        if !options.program_output {
            cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
        }
        Ok(Launch { collector, command: cmd, program: command.to_vec(), mode: config.mode })
    }

    /// Loads the agent into running CoreCLR process `pid` (see [`crate::attach`]); returns once
    /// it runs, with how long the attach took.
    pub fn attach(pid: u32, options: &Options) -> Result<(Recording, Duration), Error> {
        if options.config.mode == Mode::Tracing {
            return Err(Error::TracingAttach);
        }
        let target = Target::inspect(pid)?;
        let socket = target.diagnostics_socket()?;
        let agent = crate::launch::locate_agent()?;
        let collector = Collector::start_in(Some(&target.host_path(&target.tmp)), options.verbose)
            .map_err(|source| Error::TargetSocket { pid, source })?;
        // The paths as the target sees them (the same ones unless it is in another mount namespace).
        let name = collector.dir().file_name().unwrap_or_default().to_owned();
        let inside = target.tmp.join(name);
        let copy = target.agent_copy(&agent)?;
        let mut config = options.config.clone();
        config.socket = Some(inside.join("agent.sock"));
        let asked = Instant::now();
        target.attach(&socket, &copy, &config.to_client_data())?;
        let latency = asked.elapsed();
        if collector.connected() == 0 {
            return Err(Error::NotConnected { pid });
        }
        let recording = Recording {
            agents: collector.agents(),
            collector,
            pid,
            ns_pid: target.ns_pid,
            command: target.command,
            child: None,
            attached: true,
            mode: config.mode,
            next_update: Instant::now(),
        };
        Ok((recording, latency))
    }

    /// The profiled process's pid (as seen from here).
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Its pid as it knows itself (in its own PID namespace): what its agent reports.
    pub fn ns_pid(&self) -> u32 {
        self.ns_pid
    }

    pub fn command(&self) -> &[String] {
        &self.command
    }

    pub fn attached(&self) -> bool {
        self.attached
    }

    /// How it profiles.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The launched program (`None` when attached).
    pub fn child(&mut self) -> Option<&mut Child> {
        self.child.as_mut()
    }

    /// The agents, for another thread (a control socket).
    pub fn agents(&self) -> Agents {
        self.agents.clone()
    }

    /// The process still runs.
    pub fn running(&mut self) -> bool {
        match self.child.as_mut() {
            Some(child) => matches!(child.try_wait(), Ok(None)),
            None => crate::collector::alive(self.pid),
        }
    }

    /// The profile so far, from a snapshot asked for now (waiting up to `timeout` for it; the
    /// latest one otherwise). `None` before the agent sent anything.
    pub fn snapshot(&self, timeout: Duration) -> Option<Update> {
        self.agents.refresh(self.ns_pid, timeout);
        self.agents.with_session(self.ns_pid, |s| {
            let last = s.complete || s.closed;
            assemble(s, self.facts(s)).map(|profile| Update { profile, last })
        })?
    }

    /// The next update, at most one per `every`: sleeps until it is due, then takes a snapshot.
    /// `None` once the process has ended and its last data was delivered.
    pub fn next_update(&mut self, every: Duration) -> Option<Update> {
        // Until the agent has sent something, or the process ended without a word.
        loop {
            let now = Instant::now();
            if self.next_update > now {
                std::thread::sleep(self.next_update - now);
            }
            self.next_update = Instant::now() + every;
            let running = self.running();
            match self.snapshot(every.min(Duration::from_secs(1))) {
                Some(mut update) => {
                    update.last |= !running;
                    return Some(update);
                }
                None if running => continue,
                None => return None,
            }
        }
    }

    /// Updates every `every` until the process ends: `for update in recording.updates(…)`.
    pub fn updates(&mut self, every: Duration) -> impl Iterator<Item = Update> + '_ {
        let mut done = false;
        std::iter::from_fn(move || {
            if done {
                return None;
            }
            let update = self.next_update(every)?;
            done = update.last;
            Some(update)
        })
    }

    /// A heap snapshot of the process, asked for now: `None` when the agent sent none while its
    /// pieces kept coming with no gap of `stall` (see [`Agents::take_heap`]).
    pub fn take_heap(&self, stall: Duration) -> Option<crate::collector::TakenHeap> {
        self.agents.take_heap(self.ns_pid, stall)
    }

    /// Pauses or resumes collection (sampling mode).
    pub fn pause(&self, paused: bool) {
        self.agents.pause_agents(paused);
    }

    /// Stops profiling and returns the final profile. The process runs on, unprofiled (an
    /// attached one is detached; a launched one keeps running and is not waited for).
    pub fn finish(self) -> Result<Profile, Error> {
        let pid = self.pid;
        let sessions = self.finish_sessions(Duration::from_secs(5));
        sessions
            .iter()
            .find(|s| s.latest.is_some())
            .and_then(|s| assemble(s, RunFacts { command: command_of(s), exit_code: None, signal: None }))
            .ok_or(Error::NothingRecorded { pid })
    }

    /// Stops profiling, waiting up to `patience` for the agents' final snapshots, and returns
    /// what every agent sent (`sonde record` writes its profiles from these).
    pub fn finish_sessions(self, patience: Duration) -> Vec<Session> {
        self.collector.finish_agents();
        self.collector.finish(patience)
    }

    /// Returns what every agent sent, without asking them to finish (the process ended).
    pub fn collect(self, patience: Duration) -> Vec<Session> {
        self.collector.finish(patience)
    }

    fn facts(&self, session: &Session) -> RunFacts {
        running_facts(session, self.attached, &self.command)
    }

    /// Collects until the process ends or the recording is stopped: a snapshot every
    /// [`SNAPSHOT_PERIOD`], `tick` after every wake-up (continuous profiling's pushes), and
    /// `sonde`'s own signals as [`Signals`] says. Sleeps in between (see [`Waiter`]).
    pub fn watch(&mut self, watch: Watch<'_>, mut tick: impl FnMut(&Recording)) -> Result<End, Error> {
        let mut waiter = Waiter::new(self.pid, watch.signals.wake.as_ref(), watch.wake);
        let mut last_snapshot = Instant::now();
        loop {
            if let Some(end) = self.ended()? {
                return Ok(end);
            }
            let time_up = watch.until.is_some_and(|d| Instant::now() >= d);
            if watch.stop.load(Ordering::Relaxed) || time_up || (self.attached && watch.signals.any()) {
                return Ok(End::Stopped);
            }
            if !self.attached {
                self.pass_on(watch.signals);
            }
            if last_snapshot.elapsed() >= SNAPSHOT_PERIOD {
                self.agents.request_snapshots();
                last_snapshot = Instant::now();
            }
            tick(self);
            let mut wait = SNAPSHOT_PERIOD.saturating_sub(last_snapshot.elapsed());
            if let Some(d) = watch.until {
                wait = wait.min(d.saturating_duration_since(Instant::now()));
            }
            waiter.wait(wait);
        }
    }

    /// How the process ended, if it did.
    fn ended(&mut self) -> Result<Option<End>, Error> {
        match self.child.as_mut() {
            Some(child) => Ok(child.try_wait().map_err(Error::Wait)?.map(End::Exited)),
            None => Ok((!crate::collector::alive(self.pid)).then_some(End::Gone)),
        }
    }

    /// A launched program's share of `sonde`'s signals: a snapshot now for each, and SIGTERM and
    /// SIGHUP passed on.
    fn pass_on(&self, signals: &Signals) {
        if signals.interrupted.swap(false, Ordering::Relaxed) {
            self.agents.request_snapshots();
        }
        for (flag, signal) in
            [(&signals.terminated, rustix::process::Signal::TERM), (&signals.hung_up, rustix::process::Signal::HUP)]
        {
            if flag.swap(false, Ordering::Relaxed) {
                self.agents.request_snapshots();
                crate::launch::send_signal(self.pid, signal);
            }
        }
    }

    /// Takes the launched program out of the recording (`None` when attached), for a caller that
    /// finishes the recording and then waits for the program's end: [`Recording::running`] and
    /// [`Recording::watch`] then look at the process by its pid.
    pub fn take_child(&mut self) -> Option<Child> {
        self.child.take()
    }
}

/// What [`Recording::watch`] watches besides the process.
pub struct Watch<'a> {
    pub signals: &'a Signals,
    /// Set from elsewhere to stop (`sonde stop` through the control socket).
    pub stop: &'a AtomicBool,
    /// Data on this socket wakes the watch at once (whoever sets `stop` writes to it).
    pub wake: Option<UnixStream>,
    /// Stop then (`--duration`).
    pub until: Option<Instant>,
}

/// How a watched recording ended.
#[derive(Debug)]
pub enum End {
    /// The launched program exited.
    Exited(ExitStatus),
    /// The attached process ended.
    Gone,
    /// Stopped while the process runs: asked to ([`Watch::stop`]), time up, or (attached) a
    /// signal for `sonde`.
    Stopped,
}

/// SIGINT, SIGQUIT, SIGTERM and SIGHUP while a recording runs: installed before the program
/// starts or the attach is made, so that none is lost. For a launched program, SIGINT and SIGQUIT
/// (a terminal's Ctrl-C reaches the whole foreground process group: the program gets it directly
/// and decides what to do) only ask the agents for a snapshot right away, in case the program
/// dies without shutting down; SIGTERM and SIGHUP (the terminal was closed) are meant for `sonde`,
/// and passed on to the program so that it can shut down cleanly, while the recording stays to
/// collect what it leaves. For an attached process, each stops the recording (it detaches).
pub struct Signals {
    interrupted: Arc<AtomicBool>,
    terminated: Arc<AtomicBool>,
    hung_up: Arc<AtomicBool>,
    /// Written to by each of them, to wake [`Waiter::wait`].
    wake: Option<UnixStream>,
}

impl Signals {
    pub fn install() -> Result<Signals, Error> {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGQUIT, SIGTERM};
        let signals = Signals {
            interrupted: Arc::default(),
            terminated: Arc::default(),
            hung_up: Arc::default(),
            wake: wake_on(&[SIGINT, SIGQUIT, SIGTERM, SIGHUP]),
        };
        for (signal, flag) in [
            (SIGINT, &signals.interrupted),
            (SIGQUIT, &signals.interrupted),
            (SIGTERM, &signals.terminated),
            (SIGHUP, &signals.hung_up),
        ] {
            signal_hook::flag::register(signal, flag.clone()).map_err(Error::Signals)?;
        }
        Ok(signals)
    }

    /// One of them arrived.
    pub fn any(&self) -> bool {
        [&self.interrupted, &self.terminated, &self.hung_up].iter().any(|f| f.load(Ordering::Relaxed))
    }
}

/// The receiving end of a socket pair that `signals` write to; `None` when it cannot be made
/// (the watch then wakes every 5 ms).
fn wake_on(signals: &[i32]) -> Option<UnixStream> {
    let (rx, tx) = UnixStream::pair().ok()?;
    rx.set_nonblocking(true).ok()?;
    tx.set_nonblocking(true).ok()?;
    for &signal in signals {
        signal_hook::low_level::pipe::register(signal, tx.try_clone().ok()?).ok()?;
    }
    Some(rx)
}

/// A socket pair for [`Watch::wake`]: (its receiving end, the end to write to). Both `None` when
/// no pair can be made (the recording then wakes on its own schedule only).
pub fn wake_pair() -> (Option<UnixStream>, Option<UnixStream>) {
    match UnixStream::pair() {
        Ok((rx, tx)) => (Some(rx), Some(tx)),
        Err(_) => (None, None),
    }
}

/// Sleeps until the process ends, a signal for `sonde` arrives, the wake socket has data, or a
/// timeout — rather than waking every few milliseconds to look (each look would cost the whole
/// recording a wake-up and the run up to a period of latency at its end): a pidfd becomes
/// readable when the process ends. Where pidfds are missing (Linux before 5.3), it sleeps 5 ms.
struct Waiter<'a> {
    pidfd: Option<rustix::fd::OwnedFd>,
    signals: Option<&'a UnixStream>,
    extra: Option<UnixStream>,
}

impl<'a> Waiter<'a> {
    fn new(pid: u32, signals: Option<&'a UnixStream>, extra: Option<UnixStream>) -> Waiter<'a> {
        let pidfd = i32::try_from(pid)
            .ok()
            .and_then(rustix::process::Pid::from_raw)
            .and_then(|pid| rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()).ok());
        Waiter { pidfd, signals, extra: extra.filter(|s| s.set_nonblocking(true).is_ok()) }
    }

    fn wait(&mut self, timeout: Duration) {
        use rustix::event::{PollFd, PollFlags, Timespec, poll};
        use std::os::fd::AsFd;
        let (Some(pidfd), Some(signals)) = (&self.pidfd, self.signals) else {
            std::thread::sleep(timeout.min(Duration::from_millis(5)));
            return;
        };
        let timeout = Timespec::try_from(timeout.max(Duration::from_millis(1))).ok();
        let mut fds = vec![PollFd::new(pidfd, PollFlags::IN), PollFd::from_borrowed_fd(signals.as_fd(), PollFlags::IN)];
        if let Some(extra) = &self.extra {
            fds.push(PollFd::from_borrowed_fd(extra.as_fd(), PollFlags::IN));
        }
        // EINTR (a signal) is a wake-up like any other.
        let _ = poll(&mut fds, timeout.as_ref());
        let mut buf = [0u8; 64];
        for socket in std::iter::once(signals).chain(&self.extra) {
            while matches!(std::io::Read::read(&mut &*socket, &mut buf), Ok(n) if n > 0) {}
        }
    }
}

/// What a profile taken while the process runs says about its run: no end yet, and the command
/// line — the one sonde ran, or for an attached process its own (`/proc/self/cmdline`, sent in
/// the handshake).
pub fn running_facts(session: &Session, attached: bool, command: &[String]) -> RunFacts {
    let command = if attached { command_of(session) } else { command.to_vec() };
    RunFacts { command, exit_code: None, signal: None }
}

fn command_of(session: &Session) -> Vec<String> {
    session.hello.as_ref().map(|h| h.command_line.clone()).unwrap_or_default()
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rate_becomes_the_samplers_period() {
        assert_eq!(interval_for_rate(1000), 1000);
        assert_eq!(interval_for_rate(97), 10_309);
        assert_eq!(interval_for_rate(0), 1_000_000, "no rate: once a second");
        assert_eq!(interval_for_rate(3_000_000), 1, "never zero");
        let options = Options::sampling_with(100, SampleClock::Wall);
        assert_eq!((options.config.mode, options.config.interval_us), (Mode::Sampling, 10_000));
        assert_eq!(options.config.clock, SampleClock::Wall);
    }
}
