//! The command line. Clap types stay here; they become plain option structs at the edge. The values
//! `--mode`, `--timing`, `--clock`, `--alloc-sampling` and `--format` take are the model's own types
//! (`clap::ValueEnum` from the `clap` features of sonde-profile and sonde-render).

use clap::{Args, Parser, Subcommand, ValueEnum};
use sonde_profile::{AllocSampling, Mode, SampleClock, Timing};
use sonde_protocol::config::EventKinds;
use sonde_render::Format;
use std::path::PathBuf;

#[derive(Debug, Parser)]
#[command(name = "sonde", version, about = "A performance profiler for .NET programs", propagate_version = true)]
pub struct Cli {
    /// More detail on stderr (-v: each agent that connects and the sampler it runs).
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,
    /// Print nothing but errors on stderr (the target's own output still passes through).
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    pub quiet: bool,
    #[command(subcommand)]
    pub command: Command,
}

// Parsed once at start-up: the size of the record variant costs nothing worth a box.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a .NET program under the profiler (or attach to a running one: --pid) and write its profile.
    Record(RecordArgs),
    /// Render a recorded profile.
    Report(ReportArgs),
    /// Compare two profiles: per method, self and total in both runs and the change.
    Diff(DiffArgs),
    /// Watch a .NET program live: hot methods, refreshed every second (attach with --pid, or
    /// start one after --).
    Top(TopArgs),
    /// Print the current managed stack of every thread of a running .NET process, then detach.
    Dump(DumpArgs),
    /// Take a heap snapshot (what holds the memory) of a running .NET process (--pid), or of a
    /// program sonde starts (after --) once it ran --after SECS; write it to a file and show what
    /// it holds.
    Heap(HeapArgs),
    /// Continuous profiling of every .NET (CoreCLR) process of this user on the host, pushed to
    /// Grafana Pyroscope (docs/CONTINUOUS.md).
    Daemon(DaemonArgs),
    /// List the running recordings (`sonde record` sessions).
    Sessions,
    /// Write a snapshot of a running recording to a file, now.
    Snapshot(SnapshotArgs),
    /// Stop a running recording: its profile is written, the program runs on unprofiled.
    Stop(ControlArgs),
    /// Pause collection in a running recording (sampling).
    Pause(ControlArgs),
    /// Resume collection in a paused recording.
    Resume(ControlArgs),
}

#[derive(Debug, Args)]
pub struct DaemonArgs {
    /// The Pyroscope server's base URL (credentials from the environment, as for record --push).
    #[arg(long, value_name = "URL", required_unless_present = "status")]
    pub push: Option<String>,
    /// Samples per second per thread of each process (low: the daemon runs all the time).
    #[arg(long, value_name = "HZ", default_value_t = 97, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    pub rate: u64,
    /// Profile only the applications whose name matches one of these globs (repeatable).
    #[arg(long, value_name = "GLOB")]
    pub include: Vec<String>,
    /// Never profile the applications whose name matches one of these globs (repeatable).
    #[arg(long, value_name = "GLOB")]
    pub exclude: Vec<String>,
    #[command(flatten)]
    pub labels: PushLabels,
    /// Show the running daemon's state and its own costs, then exit.
    #[arg(long, conflicts_with_all = ["push", "include", "exclude", "tags", "push_every"])]
    pub status: bool,
}

/// What every pushed profile carries and how often it goes (`record --push`, `daemon`).
#[derive(Debug, Args)]
pub struct PushLabels {
    /// With --push: a label on every profile, KEY=VALUE (repeatable).
    #[arg(long = "tag", value_name = "KEY=VALUE")]
    pub tags: Vec<String>,
    /// With --push: seconds between pushes (default 10).
    #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub push_every: Option<u64>,
}

#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The profile (or heap snapshot) to compare against (before the change).
    pub base: PathBuf,
    /// The profile (or heap snapshot) to compare (after the change).
    pub new: PathBuf,
    #[arg(short, long, value_enum, default_value_t = DiffFormatArg::Text)]
    pub format: DiffFormatArg,
    /// Write to this file instead of standard output.
    #[arg(short, long, value_name = "OUT")]
    pub output: Option<PathBuf>,
    /// `total`: compare shares of each run's total (the base scaled to the new run's total), so
    /// runs of different lengths compare; `none`: the raw figures.
    #[arg(long, value_enum, value_name = "HOW", default_value_t = NormalizeArg::Total)]
    pub normalize: NormalizeArg,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DiffFormatArg {
    /// The change table.
    Text,
    /// The `sonde.diff/1` contract.
    Json,
    /// One page: a differential flame graph and the change table.
    Html,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum NormalizeArg {
    Total,
    None,
}

#[derive(Debug, Args)]
pub struct ControlArgs {
    /// The session (as `sonde sessions` lists them); may be left out when one session runs.
    #[arg(long, value_name = "ID")]
    pub session: Option<u32>,
}

#[derive(Debug, Args)]
pub struct SnapshotArgs {
    /// The profile file to write.
    #[arg(long, value_name = "FILE")]
    pub to: PathBuf,
    /// The session (as `sonde sessions` lists them); may be left out when one session runs.
    #[arg(long, value_name = "ID")]
    pub session: Option<u32>,
    /// Overwrite the file even when it is not a Sonde profile.
    #[arg(long)]
    pub force: bool,
    /// A heap snapshot of the recorded process (what holds its memory) instead of its profile.
    #[arg(long)]
    pub heap: bool,
}

#[derive(Debug, Args)]
pub struct DumpArgs {
    /// The running .NET (CoreCLR) process.
    #[arg(long, value_name = "PID")]
    pub pid: u32,
    /// Print the `sonde.dump/1` JSON document instead of text.
    #[arg(long)]
    pub json: bool,
    /// Let the agent log to this file.
    #[arg(long, value_name = "FILE")]
    pub agent_log: Option<PathBuf>,
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("target").required(true).args(["pid", "command"])))]
pub struct HeapArgs {
    /// The running .NET (CoreCLR) process (attached, then detached).
    #[arg(long, value_name = "PID")]
    pub pid: Option<u32>,
    /// The snapshot file to write (default, in the current directory: heap-PID.heap with --pid,
    /// heap.heap with a COMMAND).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Overwrite the file even when it is not a Sonde heap snapshot.
    #[arg(long)]
    pub force: bool,
    /// With the summary: the retention paths of this type's instances.
    #[arg(long, value_name = "TYPE")]
    pub paths: Option<String>,
    /// Let the agent log to this file.
    #[arg(long, value_name = "FILE")]
    pub agent_log: Option<PathBuf>,
    /// With a COMMAND: take the snapshot after this many seconds (the program then runs on to its end).
    #[arg(long, value_name = "SECS", conflicts_with = "pid", value_parser = parse_seconds)]
    pub after: Option<f64>,
    /// The program to run.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// A number of seconds, at least 0 and at most a day.
fn parse_seconds(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if (0.0..=86_400.0).contains(&v) => Ok(v),
        _ => Err(format!("{s:?} is not a number of seconds between 0 and 86400")),
    }
}

#[derive(Debug, Args)]
pub struct TopArgs {
    /// Attach to this running .NET (CoreCLR) process (detached again on quit).
    #[arg(long, value_name = "PID", conflicts_with = "command")]
    pub pid: Option<u32>,
    /// Sampling, or (for a program top starts) tracing, with a calls column.
    #[arg(long, value_enum, default_value_t = Mode::Sampling)]
    pub mode: Mode,
    /// Samples per second per thread.
    #[arg(long, value_name = "HZ", default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..=20_000))]
    pub rate: u64,
    /// The clock that drives the sampler.
    #[arg(long, value_enum, default_value_t = SampleClock::Cpu)]
    pub clock: SampleClock,
    /// Seconds between refreshes.
    #[arg(long, value_name = "SECS", default_value = "1", value_parser = parse_duration)]
    pub refresh: std::time::Duration,
    /// Write the profile to this file on quit (nothing is written without it).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Overwrite the output file even when it is not a Sonde profile.
    #[arg(long)]
    pub force: bool,
    /// The program to run, and its arguments (its output is discarded: the screen is the view's).
    #[arg(last = true, required_unless_present = "pid", value_name = "COMMAND")]
    pub command: Vec<String>,
}

#[derive(Debug, Args)]
pub struct RecordArgs {
    /// `sampling` (the default) or `tracing`; a native program built with
    /// `-finstrument-functions` is traced (its compiler-inserted hooks: docs/NATIVE.md).
    #[arg(long = "mode", value_enum)]
    pub mode_arg: Option<Mode>,
    /// Tracing mode: how time is measured.
    #[arg(long, value_enum, default_value_t = Timing::Exact)]
    pub timing: Timing,
    /// Sampling mode: samples per second per thread.
    #[arg(long, value_name = "HZ", default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..=20_000))]
    pub rate: u64,
    /// Sampling mode: the clock that drives the sampler.
    #[arg(long, value_enum, default_value_t = SampleClock::Cpu)]
    pub clock: SampleClock,
    /// Trace only methods whose `Namespace.Type.Method` or assembly name matches this glob
    /// (repeatable). An include overrides the default that skips the framework.
    #[arg(long = "include", value_name = "PATTERN")]
    pub include: Vec<String>,
    /// Never trace methods matching this glob (repeatable; wins over --include and --all).
    #[arg(long = "exclude", value_name = "PATTERN")]
    pub exclude: Vec<String>,
    /// Trace the framework too (System.*, Microsoft.*, runtime assemblies). Slow.
    #[arg(long)]
    pub all: bool,
    /// The runtime events to record, comma-separated: alloc, gc, exceptions, contention, jit (or
    /// `all`, `none`). Allocations and contention are off by default: allocations cost an
    /// allocation-heavy program a few % of CPU, and on CoreCLR both hold memory per thread.
    #[arg(long, value_name = "LIST", default_value = "gc,exceptions,jit", value_parser = parse_events)]
    pub events: EventKinds,
    /// How allocations are counted (and `exact` records them, whatever --events says): `sampled`
    /// (about one per 100 KB, weighted) or `exact` (every allocation by type; in tracing mode by
    /// call-tree node too). Exact slows an allocation-heavy program down several times on
    /// CoreCLR (its JIT leaves the fast allocators) and cannot be switched on by `--pid`.
    #[arg(long, value_name = "HOW", value_enum, default_value = "sampled")]
    pub alloc_sampling: AllocSampling,
    /// Mono: count caught exceptions too (CoreCLR always does). Off by default because Mono then
    /// reports every `finally` block the program runs, thrown or not (~11 ns each: a `lock`- or
    /// `using`-heavy loop can run twice as slow; docs/EVENTS.md).
    #[arg(long)]
    pub catches: bool,
    /// Tracing mode: also trace the instrumented native libraries (built with
    /// `-finstrument-functions`) the .NET program calls, under their managed callers (the agent
    /// is preloaded into the program: docs/NATIVE.md).
    #[arg(long = "native-hooks")]
    pub native_hooks: bool,
    /// Tracing mode, instrumented native code: also keep a call trace, each thread's latest
    /// EVENTS enter and exit events in order with their times (default 65536, rounded up to a
    /// power of two; 16 bytes each). Shown as a timeline by `--format html` and `--format chrome`
    /// (docs/NATIVE.md).
    #[arg(long = "call-trace", value_name = "EVENTS", num_args = 0..=1, default_missing_value = "65536",
          value_parser = clap::value_parser!(u32).range(1..=i64::from(sonde_protocol::config::MAX_CALL_TRACE_EVENTS)))]
    pub call_trace: Option<u32>,
    /// Continuous profiling: push each interval's profile (sampling) to the Grafana Pyroscope
    /// server at URL (`http://pyroscope:4040`). Credentials from SONDE_PUSH_USER and
    /// SONDE_PUSH_PASSWORD (basic) or SONDE_PUSH_TOKEN (bearer), SONDE_PUSH_TENANT for
    /// X-Scope-OrgID; never on the command line (docs/CONTINUOUS.md).
    #[arg(long, value_name = "URL")]
    pub push: Option<String>,
    /// With --push: the application name (default: the entry assembly's or program's name).
    #[arg(long, value_name = "NAME")]
    pub app: Option<String>,
    #[command(flatten)]
    pub labels: PushLabels,
    /// Error simulator (CoreCLR): the methods RULE matches throw an exception at entry.
    /// `METHODS=EXCEPTION[@after:N][@every:N][@p:X]`, e.g.
    /// `Acme.Db.Query=System.TimeoutException@every:5`; repeatable. The profile records each
    /// fault and where it was caught (docs/INJECT.md).
    #[arg(long = "inject", value_name = "RULE", value_parser = parse_inject_rule)]
    pub inject: Vec<sonde_protocol::InjectRule>,
    /// Error simulator: read rules from FILE, one per line (`#` starts a comment).
    #[arg(long = "inject-file", value_name = "FILE")]
    pub inject_file: Option<PathBuf>,
    /// Sampling mode on CoreCLR: stitch async call stacks, so the code after an `await` is shown
    /// under the stack that awaited it (from the runtime's task events; costs about a
    /// microsecond per await, see docs/ASYNC.md). Off by default.
    #[arg(long = "async")]
    pub async_stacks: bool,
    /// Sampler period for tracing with --timing sampled, in microseconds.
    #[arg(long, value_name = "US", default_value_t = 1000, value_parser = clap::value_parser!(u64).range(50..=1_000_000))]
    pub interval_us: u64,
    /// Profile file to write. With several .NET processes, each gets `STEM.PID.EXT`.
    #[arg(short, long, value_name = "FILE", default_value = "profile.sonde")]
    pub output: PathBuf,
    /// Overwrite the output file even when it is not a Sonde profile.
    #[arg(long)]
    pub force: bool,
    /// Let the agent log to this file (it never writes to the program's stdout/stderr).
    #[arg(long, value_name = "FILE")]
    pub agent_log: Option<PathBuf>,
    /// Attach to this running .NET (CoreCLR) process instead of starting one: sample it until
    /// Ctrl-C or --duration, then detach and leave it running.
    #[arg(long, value_name = "PID", conflicts_with = "command")]
    pub pid: Option<u32>,
    /// With --pid: stop and detach after this many seconds.
    #[arg(long, value_name = "SECS", value_parser = parse_duration)]
    pub duration: Option<std::time::Duration>,
    /// The program to run, and its arguments.
    #[arg(last = true, required_unless_present = "pid", value_name = "COMMAND")]
    pub command: Vec<String>,
}

fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    match text.parse::<f64>() {
        Ok(secs) if secs > 0.0 && secs <= 1e9 => Ok(std::time::Duration::from_secs_f64(secs)),
        _ => Err(format!("`{text}` is not a positive number of seconds")),
    }
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// A profile written by `sonde record`, or a heap snapshot written by `sonde heap` (text, json or html).
    pub file: PathBuf,
    /// A heap snapshot's report: with the retention paths of this type's instances.
    #[arg(long, value_name = "TYPE")]
    pub paths: Option<String>,
    #[arg(short, long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Write the report here instead of stdout.
    #[arg(short, long, value_name = "OUT")]
    pub output: Option<PathBuf>,
    /// Instead of the report, the samples of METHOD line by line, with the source beside them
    /// when its file is readable (text only). METHOD is a full name (`Acme.Orders.Process`), or
    /// its end after a `.` (`Orders.Process`, `Process`), or any part of names.
    #[arg(long, value_name = "METHOD")]
    pub lines: Option<String>,
    /// Native and runtime frames in every report but JSON: `fold` makes each run of them one
    /// frame named after its entry point (the host's start-up one `[runtime]` frame), `hide`
    /// gives their time to the nearest frame shown above them, `show` keeps every one.
    #[arg(long, value_enum, value_name = "HOW", default_value_t = ShowArg::Fold)]
    pub native: ShowArg,
    /// Framework frames (assemblies loaded from the runtime's directories, not the program's) in
    /// every report but JSON: `fold`, `hide` or `show`, as for `--native`.
    #[arg(long, value_enum, value_name = "HOW", default_value_t = ShowArg::Fold)]
    pub framework: ShowArg,
}

/// What a report does with frames the user did not write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ShowArg {
    Hide,
    Fold,
    Show,
}

impl From<ShowArg> for sonde_profile::view::Show {
    fn from(arg: ShowArg) -> Self {
        match arg {
            ShowArg::Hide => sonde_profile::view::Show::Hide,
            ShowArg::Fold => sonde_profile::view::Show::Fold,
            ShowArg::Show => sonde_profile::view::Show::Show,
        }
    }
}

/// `--events`: a list of event kinds.
fn parse_events(list: &str) -> Result<EventKinds, String> {
    EventKinds::parse(list).map_err(|e| format!("{e} (known: alloc, gc, exceptions, contention, jit, all, none)"))
}

impl RecordArgs {
    /// The mode: as given, else tracing for an instrumented native program, else sampling.
    pub fn mode(&self) -> Mode {
        self.mode_arg.unwrap_or_else(|| {
            let native = self.command.first().is_some_and(|p| sonde_client::launch::is_instrumented_native(p));
            if native { Mode::Tracing } else { Mode::Sampling }
        })
    }
}

fn parse_inject_rule(text: &str) -> Result<sonde_protocol::InjectRule, String> {
    sonde_protocol::InjectRule::parse(text).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn record_takes_the_command_after_the_separator() {
        let cli =
            Cli::try_parse_from(["sonde", "record", "--include", "Acme.*", "--", "dotnet", "app.dll", "-x"]).unwrap();
        let Command::Record(args) = cli.command else { panic!("not record") };
        assert_eq!(args.command, ["dotnet", "app.dll", "-x"]);
        assert_eq!(args.include, ["Acme.*"]);
        assert!(Cli::try_parse_from(["sonde", "record"]).is_err());
    }

    #[test]
    fn record_attaches_with_a_pid_instead_of_a_command() {
        let cli = Cli::try_parse_from(["sonde", "record", "--pid", "42", "--duration", "1.5"]).unwrap();
        let Command::Record(args) = cli.command else { panic!("not record") };
        assert_eq!((args.pid, args.duration), (Some(42), Some(std::time::Duration::from_millis(1500))));
        assert!(args.command.is_empty());
        assert!(Cli::try_parse_from(["sonde", "record", "--pid", "42", "--", "dotnet", "x.dll"]).is_err());
        assert!(Cli::try_parse_from(["sonde", "record", "--pid", "42", "--duration", "0"]).is_err());
    }
}
