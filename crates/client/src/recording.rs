//! [`Recording`]: one profiled process, launched or attached, whose profile can be read while it
//! runs. This is what `sonde record --pid`, `sonde top` and `sonde dump` are built on.

use crate::assemble::{RunFacts, assemble};
use crate::attach::Target;
use crate::collector::{Agents, Collector, Session};
use anyhow::{Context, Result, bail};
use sonde_profile::{Mode, Profile, SampleClock, Timing};
use sonde_protocol::{AgentConfig, MethodFilter};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

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
    /// Sampling at `rate_hz` samples per second of each thread's CPU time.
    pub fn sampling(rate_hz: u64) -> Options {
        Options::sampling_with(rate_hz, SampleClock::Cpu)
    }

    /// Sampling at `rate_hz`, driven by `clock`.
    pub fn sampling_with(rate_hz: u64, clock: SampleClock) -> Options {
        Options {
            config: AgentConfig {
                socket: None,
                mode: Mode::Sampling,
                timing: Timing::Exact,
                filter: MethodFilter::default(),
                interval_us: (1_000_000 / rate_hz.max(1)).max(1),
                clock,
                log: None,
                bench_hooks: None,
                cpu_timers: true,
                mono_catches: false,
                events: sonde_protocol::config::EventKinds::DEFAULT,
                alloc_sample_bytes: sonde_protocol::config::DEFAULT_ALLOC_SAMPLE_BYTES,
                alloc_exact: false,
                async_stacks: false,
                native_hooks: false,
                call_trace: 0,
                inject: Vec::new(),
            },
            program_output: true,
            verbose: false,
        }
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
    next_update: Instant,
}

impl Recording {
    /// Starts `command` with the agent loaded (see [`crate::launch`]).
    pub fn launch(command: &[String], options: &Options) -> Result<Recording> {
        let Some(program) = command.first() else { bail!("no command to run") };
        let agent = crate::launch::locate_agent()?;
        let collector = Collector::start(options.verbose).context("cannot open the agent socket")?;
        let mut config = options.config.clone();
        config.socket = Some(collector.socket().to_path_buf());
        let mut cmd = crate::launch::command(command, &agent, &config)?;
        if !options.program_output {
            cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
        }
        let child = cmd.spawn().map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => anyhow::anyhow!("cannot run `{program}`: command not found"),
            _ => anyhow::anyhow!("cannot run `{program}`: {e}"),
        })?;
        let pid = child.id();
        Ok(Recording {
            agents: collector.agents(),
            collector,
            pid,
            ns_pid: pid,
            command: command.to_vec(),
            child: Some(child),
            attached: false,
            next_update: Instant::now(),
        })
    }

    /// Loads the agent into running CoreCLR process `pid` (see [`crate::attach`]); returns once
    /// it runs, with how long the attach took.
    pub fn attach(pid: u32, options: &Options) -> Result<(Recording, Duration)> {
        if options.config.mode == Mode::Tracing {
            bail!(
                "tracing cannot attach to a running process (its hooks are set up when the runtime starts): sample it, or start the program under sonde (`sonde record --mode tracing -- COMMAND`)"
            );
        }
        let target = Target::inspect(pid)?;
        let socket = target.diagnostics_socket()?;
        let agent = crate::launch::locate_agent()?;
        let collector = Collector::start_in(Some(&target.host_path(&target.tmp)), options.verbose)
            .with_context(|| format!("cannot open the agent socket in the temporary directory of process {pid}"))?;
        // The paths as the target sees them (the same ones unless it is in another mount namespace).
        let name = collector.dir().file_name().context("the session directory has no name")?.to_owned();
        let inside = target.tmp.join(name);
        let copy = target.agent_copy(&agent)?;
        let mut config = options.config.clone();
        config.socket = Some(inside.join("agent.sock"));
        let asked = Instant::now();
        target.attach(&socket, &copy, &config.to_client_data())?;
        let latency = asked.elapsed();
        if collector.connected() == 0 {
            bail!("the runtime of process {pid} loaded the agent, but it did not connect (see --agent-log)");
        }
        let recording = Recording {
            agents: collector.agents(),
            collector,
            pid,
            ns_pid: target.ns_pid,
            command: target.command,
            child: None,
            attached: true,
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

    /// Pauses or resumes collection (sampling mode).
    pub fn pause(&self, paused: bool) {
        self.agents.pause_agents(paused);
    }

    /// Stops profiling and returns the final profile. The process runs on, unprofiled (an
    /// attached one is detached; a launched one keeps running and is not waited for).
    pub fn finish(self) -> Result<Profile> {
        let pid = self.pid;
        let sessions = self.finish_sessions(Duration::from_secs(5));
        sessions
            .iter()
            .find(|s| s.latest.is_some())
            .and_then(|s| assemble(s, RunFacts { command: command_of(s), exit_code: None, signal: None }))
            .with_context(|| format!("nothing recorded from process {pid}"))
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
