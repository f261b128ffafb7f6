//! The agent's configuration. The controller writes it into the target's environment; the agent
//! reads it once, at start-up, into this one typed struct.

use crate::filter::MethodFilter;
use sonde_profile::{Mode, SampleClock, Timing};
use std::path::PathBuf;

/// The socket the agent connects to.
pub const ENV_SOCKET: &str = "SONDE_SOCKET";
pub const ENV_MODE: &str = "SONDE_MODE";
pub const ENV_TIMING: &str = "SONDE_TIMING";
/// Patterns separated by newlines.
pub const ENV_INCLUDE: &str = "SONDE_INCLUDE";
pub const ENV_EXCLUDE: &str = "SONDE_EXCLUDE";
pub const ENV_ALL: &str = "SONDE_ALL";
/// Sampler period in microseconds (sampling mode and `--timing sampled`).
pub const ENV_INTERVAL_US: &str = "SONDE_INTERVAL_US";
/// Sampling mode's clock: `cpu` or `wall`.
pub const ENV_CLOCK: &str = "SONDE_CLOCK";
/// Where the agent logs; it never writes to the target's stdout or stderr.
pub const ENV_LOG: &str = "SONDE_LOG";
/// Benchmarks only (`scripts/bench*.py`): `empty` or `clock` replaces the tracing hooks (or Mono's
/// sample callback) with ones that record nothing, to measure the floor under any profiler. Not
/// in [`ALL_VARS`]: the controller never sets it; it reaches the agent from the environment the
/// benchmark gives `sonde`.
pub const ENV_BENCH_HOOKS: &str = "SONDE_BENCH_HOOKS";
/// `0` keeps `--clock cpu` on the sampler thread, which then looks at every thread every
/// interval, instead of per-thread task-clock timers (the default where the kernel allows them):
/// for tests and benchmarks of that fallback. Not in [`ALL_VARS`], like [`ENV_BENCH_HOOKS`].
pub const ENV_CPU_TIMERS: &str = "SONDE_CPU_TIMERS";
/// `signal` keeps `--clock cpu` on Sonde's signal sampler instead of the kernel's (the default
/// where the kernel allows it: see docs/SAMPLING.md): for a kernel whose `perf_event` rings
/// misbehave, and for the benchmarks that compare the two. Not in [`ALL_VARS`], like
/// [`ENV_CPU_TIMERS`]: set in `sonde`'s own environment, it reaches the agent.
pub const ENV_SAMPLER: &str = "SONDE_SAMPLER";
/// `1`: on Mono, count caught exceptions too (`sonde record --catches`). Off by default: Mono then
/// raises a clause event for every `finally` block the program runs, thrown or not (about 11 ns
/// each: a `lock`- or `using`-heavy loop ran twice as slow). See docs/EVENTS.md. Not in
/// [`ALL_VARS`]: set in `sonde`'s own environment, the way before `--catches`, it still passes
/// through to a program any command starts.
pub const ENV_MONO_CATCHES: &str = "SONDE_MONO_CATCHES";

/// Mean bytes between two allocation samples where Sonde samples allocations itself (Mono; on
/// CoreCLR the runtime's allocation tick decides, every ~100 KB). Tests set it lower for tighter
/// estimates; not in [`ALL_VARS`], like [`ENV_MONO_CATCHES`]: it passes through from `sonde`'s
/// own environment.
pub const ENV_ALLOC_SAMPLE_BYTES: &str = "SONDE_ALLOC_SAMPLE_BYTES";
pub const DEFAULT_ALLOC_SAMPLE_BYTES: u64 = 100 * 1024;

/// The runtime events to record, comma-separated ([`EventKinds`]; `sonde record --events`).
pub const ENV_EVENTS: &str = "SONDE_EVENTS";
/// `exact`: count every allocation (`sonde record --alloc-sampling exact`); else sampled.
pub const ENV_ALLOC_SAMPLING: &str = "SONDE_ALLOC_SAMPLING";
/// `1`: a program with no .NET runtime, built with `-finstrument-functions`, starts a native
/// tracing session at its first hook call (`sonde record` sets it with `LD_PRELOAD` of the agent).
pub const ENV_NATIVE: &str = "SONDE_NATIVE";
/// `1`: also preload the agent into .NET programs in tracing mode, so that instrumented native
/// libraries they call join the trees (`sonde record --native-hooks`; docs/NATIVE.md). Read by
/// the controller's launcher.
pub const ENV_NATIVE_HOOKS: &str = "SONDE_NATIVE_HOOKS";
/// `1`: stitch async call stacks (`sonde record --async`; CoreCLR sampling, docs/ASYNC.md).
pub const ENV_ASYNC: &str = "SONDE_ASYNC";
/// Keep a call trace of instrumented native code: the latest N enter/exit events per thread
/// (`sonde record --call-trace[=N]`; docs/NATIVE.md).
pub const ENV_CALL_TRACE: &str = "SONDE_CALL_TRACE";
/// The error simulator's rules, one per line (`sonde record --inject`; [`crate::inject`]).
pub const ENV_INJECT: &str = "SONDE_INJECT";
/// The events per thread `--call-trace` keeps when no number is given.
pub const DEFAULT_CALL_TRACE_EVENTS: u32 = 65_536;
/// The most events per thread a call trace can keep (16 bytes each).
pub const MAX_CALL_TRACE_EVENTS: u32 = 1 << 24;

/// Every variable the agent reads, so the controller can clear stale values.
pub const ALL_VARS: &[&str] = &[
    ENV_SOCKET,
    ENV_MODE,
    ENV_TIMING,
    ENV_INCLUDE,
    ENV_EXCLUDE,
    ENV_ALL,
    ENV_INTERVAL_US,
    ENV_CLOCK,
    ENV_LOG,
    ENV_EVENTS,
    ENV_ALLOC_SAMPLING,
    ENV_ASYNC,
    ENV_NATIVE,
    ENV_NATIVE_HOOKS,
    ENV_CALL_TRACE,
    ENV_INJECT,
];

/// Which of the runtime's events a recording counts (`docs/EVENTS.md`). Each kind costs nothing
/// when off: its callbacks are not registered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventKinds {
    /// Allocations by type and stack, sampled (`alloc`).
    pub alloc: bool,
    /// Garbage collections (`gc`).
    pub gc: bool,
    /// Exceptions by type and stack (`exceptions`).
    pub exceptions: bool,
    /// Time waiting for contended locks (`contention`).
    pub contention: bool,
    /// Methods compiled by the JIT and the time it took, modules loaded (`jit`).
    pub jit: bool,
}

impl EventKinds {
    /// The kinds, as `--events` spells them.
    pub const NAMES: [&str; 5] = ["alloc", "gc", "exceptions", "contention", "jit"];

    pub const NONE: EventKinds =
        EventKinds { alloc: false, gc: false, exceptions: false, contention: false, jit: false };

    /// What a recording counts unless told otherwise: the kinds that cost nothing measurable
    /// (collections, exceptions, JIT and loading). Allocations cost ~2 µs per sample, one per
    /// ~100 KB allocated (up to several % of an allocation-heavy program's CPU), and on CoreCLR
    /// both allocations and contention need the runtime's EventPipe session, which keeps ~50 KB
    /// per thread that ever ran while it is on (a service that churns threads grows without
    /// bound): they are asked for (docs/EVENTS.md, BENCHMARKS.md).
    pub const DEFAULT: EventKinds =
        EventKinds { alloc: false, gc: true, exceptions: true, contention: false, jit: true };

    /// Every kind (`all`).
    pub const ALL: EventKinds = EventKinds { alloc: true, gc: true, exceptions: true, contention: true, jit: true };

    fn flag(&mut self, name: &str) -> Option<&mut bool> {
        match name {
            "alloc" => Some(&mut self.alloc),
            "gc" => Some(&mut self.gc),
            "exceptions" => Some(&mut self.exceptions),
            "contention" => Some(&mut self.contention),
            "jit" => Some(&mut self.jit),
            _ => None,
        }
    }

    /// Parses `alloc,gc,…` (`none`: nothing; `all`: everything); the unknown name is the error.
    pub fn parse(list: &str) -> Result<EventKinds, UnknownEventKind> {
        let mut kinds = EventKinds::NONE;
        for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            match name {
                "none" => {}
                "all" => kinds = EventKinds::ALL,
                _ => *kinds.flag(name).ok_or_else(|| UnknownEventKind(name.to_string()))? = true,
            }
        }
        Ok(kinds)
    }

    /// The list [`parse`](Self::parse) reads back (`none` when empty).
    pub fn to_list(self) -> String {
        let mut copy = self;
        let names: Vec<&str> = Self::NAMES.into_iter().filter(|n| copy.flag(n).is_some_and(|f| *f)).collect();
        if names.is_empty() { "none".to_string() } else { names.join(",") }
    }
}

/// A name in an event list that is not a kind ([`EventKinds::parse`]); it holds the name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown event kind `{0}`")]
pub struct UnknownEventKind(pub String);

impl Default for EventKinds {
    fn default() -> Self {
        EventKinds::DEFAULT
    }
}

pub const DEFAULT_INTERVAL_US: u64 = 1000;

/// Why the configuration in the environment was refused: a variable holds a value the agent does
/// not know. Each message is one line and names the variable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    #[error("{ENV_MODE}: unknown mode `{0}`")]
    UnknownMode(String),
    #[error("{ENV_TIMING}: unknown timing `{0}`")]
    UnknownTiming(String),
    #[error("{ENV_INTERVAL_US}: not a positive number: `{0}`")]
    BadInterval(String),
    #[error("{ENV_CLOCK}: unknown clock `{0}`")]
    UnknownClock(String),
    #[error("{ENV_BENCH_HOOKS}: unknown benchmark hooks `{0}`")]
    UnknownBenchHooks(String),
    #[error("{ENV_ALLOC_SAMPLING}: `{0}` is neither `exact` nor `sampled`")]
    BadAllocSampling(String),
    #[error("{ENV_EVENTS}: unknown event kind `{0}` (known: alloc, gc, exceptions, contention, jit)")]
    UnknownEvent(String),
    #[error("{ENV_ALLOC_SAMPLE_BYTES}: not a positive number: `{0}`")]
    BadAllocSampleBytes(String),
    #[error("{ENV_INJECT}: {0}")]
    BadInjectRule(crate::inject::RuleError),
    #[error("{ENV_CALL_TRACE}: not a number of events from 1 to {MAX_CALL_TRACE_EVENTS}: `{0}`")]
    BadCallTrace(String),
    #[error("the attach command's client data is not a Sonde configuration")]
    BadClientData,
}

/// Benchmark floor hooks ([`ENV_BENCH_HOOKS`]): they record nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BenchHooks {
    /// Return at once.
    Empty,
    /// Read the clock once per hook, nothing else.
    Clock,
}

impl BenchHooks {
    pub fn as_str(self) -> &'static str {
        match self {
            BenchHooks::Empty => "empty",
            BenchHooks::Clock => "clock",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentConfig {
    pub socket: Option<PathBuf>,
    pub mode: Mode,
    pub timing: Timing,
    pub filter: MethodFilter,
    pub interval_us: u64,
    pub clock: SampleClock,
    pub log: Option<PathBuf>,
    /// Benchmarks only: see [`ENV_BENCH_HOOKS`].
    pub bench_hooks: Option<BenchHooks>,
    /// Per-thread CPU-time timers for `--clock cpu` where available (see [`ENV_CPU_TIMERS`]).
    pub cpu_timers: bool,
    /// The kernel's sampler for `--clock cpu` where available (see [`ENV_SAMPLER`]).
    pub kernel_sampler: bool,
    /// Mono: count caught exceptions (see [`ENV_MONO_CATCHES`]).
    pub mono_catches: bool,
    /// The runtime events to record ([`ENV_EVENTS`]).
    pub events: EventKinds,
    /// Mean bytes between allocation samples of Sonde's own sampler ([`ENV_ALLOC_SAMPLE_BYTES`]).
    pub alloc_sample_bytes: u64,
    /// Count every allocation ([`ENV_ALLOC_SAMPLING`] `exact`; with `events.alloc`).
    pub alloc_exact: bool,
    /// Stitch each async continuation's samples under the stack that awaited it ([`ENV_ASYNC`]).
    pub async_stacks: bool,
    /// Preload the agent into .NET programs for instrumented native libraries ([`ENV_NATIVE_HOOKS`]).
    pub native_hooks: bool,
    /// Events per thread of the native call trace; 0: none ([`ENV_CALL_TRACE`]).
    pub call_trace: u32,
    /// The error simulator's rules ([`ENV_INJECT`]); empty: none.
    pub inject: Vec<crate::InjectRule>,
}

impl Default for AgentConfig {
    fn default() -> Self {
        AgentConfig {
            socket: None,
            mode: Mode::Tracing,
            timing: Timing::Exact,
            filter: MethodFilter::default(),
            interval_us: DEFAULT_INTERVAL_US,
            clock: SampleClock::Cpu,
            log: None,
            bench_hooks: None,
            cpu_timers: true,
            kernel_sampler: true,
            mono_catches: false,
            events: EventKinds::DEFAULT,
            alloc_sample_bytes: DEFAULT_ALLOC_SAMPLE_BYTES,
            alloc_exact: false,
            async_stacks: false,
            native_hooks: false,
            call_trace: 0,
            inject: Vec::new(),
        }
    }
}

impl AgentConfig {
    /// The environment variables that carry this configuration.
    pub fn to_env(&self) -> Vec<(&'static str, String)> {
        let mut env = vec![
            (ENV_MODE, self.mode.as_str().to_string()),
            (ENV_TIMING, self.timing.as_str().to_string()),
            (ENV_INTERVAL_US, self.interval_us.to_string()),
            (ENV_CLOCK, self.clock.as_str().to_string()),
            (ENV_EVENTS, self.events.to_list()),
        ];
        if self.alloc_exact {
            env.push((ENV_ALLOC_SAMPLING, "exact".to_string()));
        }
        if self.async_stacks {
            env.push((ENV_ASYNC, "1".to_string()));
        }
        if self.native_hooks {
            env.push((ENV_NATIVE_HOOKS, "1".to_string()));
        }
        if self.call_trace != 0 {
            env.push((ENV_CALL_TRACE, self.call_trace.to_string()));
        }
        if !self.inject.is_empty() {
            env.push((ENV_INJECT, self.inject.iter().map(|r| r.to_string()).collect::<Vec<_>>().join("\n")));
        }
        if self.alloc_sample_bytes != DEFAULT_ALLOC_SAMPLE_BYTES {
            env.push((ENV_ALLOC_SAMPLE_BYTES, self.alloc_sample_bytes.to_string()));
        }
        if let Some(socket) = &self.socket {
            env.push((ENV_SOCKET, socket.display().to_string()));
        }
        if !self.filter.include.is_empty() {
            env.push((ENV_INCLUDE, self.filter.include.join("\n")));
        }
        if !self.filter.exclude.is_empty() {
            env.push((ENV_EXCLUDE, self.filter.exclude.join("\n")));
        }
        if self.filter.all {
            env.push((ENV_ALL, "1".into()));
        }
        if let Some(log) = &self.log {
            env.push((ENV_LOG, log.display().to_string()));
        }
        if let Some(hooks) = self.bench_hooks {
            env.push((ENV_BENCH_HOOKS, hooks.as_str().to_string()));
        }
        if !self.cpu_timers {
            env.push((ENV_CPU_TIMERS, "0".into()));
        }
        if !self.kernel_sampler {
            env.push((ENV_SAMPLER, "signal".into()));
        }
        if self.mono_catches {
            env.push((ENV_MONO_CATCHES, "1".into()));
        }
        env
    }

    /// The configuration as an attached agent receives it: the client data of the runtime's
    /// `AttachProfiler` command (there is no environment to set in a running process). The same
    /// variables as [`AgentConfig::to_env`], each `NAME=VALUE` followed by a NUL (values may hold
    /// newlines, never a NUL). See [`AgentConfig::from_client_data`].
    pub fn to_client_data(&self) -> Vec<u8> {
        let mut data = Vec::new();
        for (name, value) in self.to_env() {
            data.extend_from_slice(name.as_bytes());
            data.push(b'=');
            data.extend_from_slice(value.replace('\0', "").as_bytes());
            data.push(0);
        }
        data
    }

    /// Reads what [`AgentConfig::to_client_data`] wrote. Bytes that are not UTF-8, or an entry
    /// without `=`, are errors, like an unknown value.
    pub fn from_client_data(data: &[u8]) -> Result<Self, ConfigError> {
        let text = std::str::from_utf8(data).map_err(|_| ConfigError::BadClientData)?;
        let mut vars = std::collections::HashMap::new();
        for entry in text.split('\0').filter(|e| !e.is_empty()) {
            let (name, value) = entry.split_once('=').ok_or(ConfigError::BadClientData)?;
            vars.insert(name, value);
        }
        AgentConfig::from_env(|k| vars.get(k).map(|v| v.to_string()))
    }

    /// Reads the configuration through `get` (the agent passes `std::env::var`). Unknown or
    /// malformed values are errors: the agent then logs and stays inactive rather than guess.
    pub fn from_env(get: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let mut config = AgentConfig { socket: get(ENV_SOCKET).map(PathBuf::from), ..Default::default() };
        if let Some(mode) = get(ENV_MODE) {
            config.mode = match mode.as_str() {
                "tracing" => Mode::Tracing,
                "sampling" => Mode::Sampling,
                "coverage" => Mode::Coverage,
                _ => return Err(ConfigError::UnknownMode(mode)),
            };
        }
        if let Some(timing) = get(ENV_TIMING) {
            config.timing = match timing.as_str() {
                "exact" => Timing::Exact,
                "sampled" => Timing::Sampled,
                _ => return Err(ConfigError::UnknownTiming(timing)),
            };
        }
        let patterns = |var| -> Vec<String> {
            get(var).map(|v| v.lines().filter(|l| !l.is_empty()).map(str::to_string).collect()).unwrap_or_default()
        };
        config.filter.include = patterns(ENV_INCLUDE);
        config.filter.exclude = patterns(ENV_EXCLUDE);
        config.filter.all = get(ENV_ALL).is_some_and(|v| v == "1");
        if let Some(us) = get(ENV_INTERVAL_US) {
            config.interval_us = match us.parse() {
                Ok(n) if n > 0 => n,
                _ => return Err(ConfigError::BadInterval(us)),
            };
        }
        if let Some(clock) = get(ENV_CLOCK) {
            config.clock = match clock.as_str() {
                "cpu" => SampleClock::Cpu,
                "wall" => SampleClock::Wall,
                _ => return Err(ConfigError::UnknownClock(clock)),
            };
        }
        config.log = get(ENV_LOG).map(PathBuf::from);
        if let Some(hooks) = get(ENV_BENCH_HOOKS) {
            config.bench_hooks = match hooks.as_str() {
                "empty" => Some(BenchHooks::Empty),
                "clock" => Some(BenchHooks::Clock),
                _ => return Err(ConfigError::UnknownBenchHooks(hooks)),
            };
        }
        config.cpu_timers = get(ENV_CPU_TIMERS).is_none_or(|v| v != "0");
        config.kernel_sampler = get(ENV_SAMPLER).is_none_or(|v| v != "signal");
        config.mono_catches = get(ENV_MONO_CATCHES).is_some_and(|v| v == "1");
        config.async_stacks = get(ENV_ASYNC).is_some_and(|v| v == "1");
        config.native_hooks = get(ENV_NATIVE_HOOKS).is_some_and(|v| v == "1");
        if let Some(events) = get(ENV_CALL_TRACE) {
            config.call_trace = match events.parse() {
                Ok(n) if (1..=MAX_CALL_TRACE_EVENTS).contains(&n) => n,
                _ => return Err(ConfigError::BadCallTrace(events)),
            };
        }
        if let Some(rules) = get(ENV_INJECT) {
            config.inject = rules
                .lines()
                .filter(|l| !l.trim().is_empty())
                .map(crate::InjectRule::parse)
                .collect::<Result<_, _>>()
                .map_err(ConfigError::BadInjectRule)?;
        }
        if let Some(list) = get(ENV_EVENTS) {
            config.events = EventKinds::parse(&list).map_err(|e| ConfigError::UnknownEvent(e.0))?;
        }
        if let Some(how) = get(ENV_ALLOC_SAMPLING) {
            config.alloc_exact = match how.as_str() {
                "exact" => true,
                "sampled" => false,
                _ => return Err(ConfigError::BadAllocSampling(how)),
            };
        }
        if let Some(bytes) = get(ENV_ALLOC_SAMPLE_BYTES) {
            config.alloc_sample_bytes = match bytes.parse() {
                Ok(n) if n > 0 => n,
                _ => return Err(ConfigError::BadAllocSampleBytes(bytes)),
            };
        }
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn round_trips_through_the_environment() {
        let config = AgentConfig {
            socket: Some("/tmp/x/agent.sock".into()),
            mode: Mode::Tracing,
            timing: Timing::Sampled,
            filter: MethodFilter {
                include: vec!["Acme.*".into(), "Calls".into()],
                exclude: vec!["*.Fib".into()],
                all: true,
            },
            interval_us: 250,
            clock: SampleClock::Wall,
            log: Some("/tmp/agent.log".into()),
            bench_hooks: Some(BenchHooks::Clock),
            cpu_timers: false,
            kernel_sampler: false,
            mono_catches: true,
            events: EventKinds { alloc: false, gc: true, exceptions: false, contention: true, jit: false },
            alloc_sample_bytes: 4096,
            alloc_exact: true,
            async_stacks: true,
            native_hooks: true,
            call_trace: 1000,
            inject: vec![
                crate::InjectRule::parse("Acme.Db.Query=System.TimeoutException@every:5").unwrap(),
                crate::InjectRule::parse("Acme.Net.*=System.IO.IOException@after:2@p:0.25").unwrap(),
            ],
        };
        let env: HashMap<_, _> = config.to_env().into_iter().collect();
        let back = AgentConfig::from_env(|k| env.get(k).cloned()).unwrap();
        assert_eq!(back, config);
    }

    #[test]
    fn round_trips_through_client_data() {
        let config = AgentConfig {
            socket: Some("/tmp/sonde-ipc-x/agent.sock".into()),
            mode: Mode::Sampling,
            filter: MethodFilter { include: vec!["A.*".into(), "B".into()], exclude: vec![], all: false },
            interval_us: 10_000,
            clock: SampleClock::Wall,
            ..AgentConfig::default()
        };
        assert_eq!(AgentConfig::from_client_data(&config.to_client_data()).unwrap(), config);
        assert_eq!(AgentConfig::from_client_data(b"").unwrap(), AgentConfig::default());
        assert_eq!(AgentConfig::from_client_data(b"SONDE_MODE\0"), Err(ConfigError::BadClientData));
        assert_eq!(AgentConfig::from_client_data(b"\xff=1\0"), Err(ConfigError::BadClientData));
        assert!(matches!(AgentConfig::from_client_data(b"SONDE_MODE=fast\0"), Err(ConfigError::UnknownMode(_))));
    }

    #[test]
    fn event_lists_parse_and_print() {
        assert_eq!(EventKinds::parse("").unwrap(), EventKinds::NONE);
        assert_eq!(EventKinds::parse("none").unwrap(), EventKinds::NONE);
        assert_eq!(EventKinds::parse("all").unwrap(), EventKinds::ALL);
        assert_eq!(EventKinds::DEFAULT.to_list(), "gc,exceptions,jit");
        let some = EventKinds::parse(" gc , alloc").unwrap();
        assert_eq!(some, EventKinds { alloc: true, gc: true, ..EventKinds::NONE });
        assert_eq!(some.to_list(), "alloc,gc");
        assert_eq!(EventKinds::NONE.to_list(), "none");
        assert_eq!(EventKinds::parse(&EventKinds::DEFAULT.to_list()).unwrap(), EventKinds::DEFAULT);
        assert_eq!(EventKinds::parse(&EventKinds::ALL.to_list()).unwrap(), EventKinds::ALL);
        assert_eq!(EventKinds::parse("gc,heap"), Err(UnknownEventKind("heap".to_string())));
    }

    #[test]
    fn bad_values_are_errors() {
        assert!(AgentConfig::from_env(|k| (k == ENV_MODE).then(|| "fast".to_string())).is_err());
        assert!(AgentConfig::from_env(|k| (k == ENV_INTERVAL_US).then(|| "0".to_string())).is_err());
        assert_eq!(AgentConfig::from_env(|_| None).unwrap(), AgentConfig::default());
    }

    /// The agent logs these one-line messages as they are.
    #[test]
    fn errors_name_the_variable_and_the_value() {
        let error = |var: &str, value: &str| {
            AgentConfig::from_env(|k| (k == var).then(|| value.to_string())).expect_err("a bad value")
        };
        let cases = [
            (ENV_MODE, "fast", ConfigError::UnknownMode("fast".into()), "SONDE_MODE: unknown mode `fast`"),
            (ENV_TIMING, "rough", ConfigError::UnknownTiming("rough".into()), "SONDE_TIMING: unknown timing `rough`"),
            (
                ENV_INTERVAL_US,
                "0",
                ConfigError::BadInterval("0".into()),
                "SONDE_INTERVAL_US: not a positive number: `0`",
            ),
            (
                ENV_INTERVAL_US,
                "-5",
                ConfigError::BadInterval("-5".into()),
                "SONDE_INTERVAL_US: not a positive number: `-5`",
            ),
            (ENV_CLOCK, "sun", ConfigError::UnknownClock("sun".into()), "SONDE_CLOCK: unknown clock `sun`"),
            (
                ENV_EVENTS,
                "gc,heap",
                ConfigError::UnknownEvent("heap".into()),
                "SONDE_EVENTS: unknown event kind `heap` (known: alloc, gc, exceptions, contention, jit)",
            ),
            (
                ENV_BENCH_HOOKS,
                "none",
                ConfigError::UnknownBenchHooks("none".into()),
                "SONDE_BENCH_HOOKS: unknown benchmark hooks `none`",
            ),
        ];
        for (var, value, expected, message) in cases {
            let e = error(var, value);
            assert_eq!(e, expected);
            assert_eq!(e.to_string(), message);
        }
    }
}
