//! The profile model: what one profiled process looked like.
//!
//! A profile is a method table, a thread table and a flat array of call-tree nodes. Every node
//! belongs to one thread and points to its parent (parents always precede their children, so a
//! single forward pass can aggregate bottom-up by walking backwards). Node and method ids are their
//! indices in the arrays.
//!
//! Both profiling modes fill the same fields: tracing knows `calls` and times exactly (or estimates
//! time from samples with `--timing sampled`), sampling knows samples and estimates time from them.
//! A field a mode does not measure is 0.

use serde::{Deserialize, Serialize};

/// How the data was collected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Mode {
    /// Enter/leave hooks on every traced method: exact call counts.
    Tracing,
    /// Periodic stack samples.
    Sampling,
    /// Counters inserted into the code (IL rewriting): which blocks, lines and methods ran, and
    /// how often; no call tree.
    Coverage,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Tracing => "tracing",
            Mode::Sampling => "sampling",
            Mode::Coverage => "coverage",
        }
    }
}

/// How tracing mode measures time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Timing {
    /// A timestamp on every enter and leave.
    Exact,
    /// No clock on the hot path; a sampler thread attributes time to each thread's current node.
    Sampled,
}

impl Timing {
    pub fn as_str(self) -> &'static str {
        match self {
            Timing::Exact => "exact",
            Timing::Sampled => "sampled",
        }
    }
}

/// Which clock drives sampling.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum SampleClock {
    /// Thread CPU time: a thread is sampled only while it runs.
    Cpu,
    /// Wall time: every thread, running or blocked.
    Wall,
}

impl SampleClock {
    pub fn as_str(self) -> &'static str {
        match self {
            SampleClock::Cpu => "cpu",
            SampleClock::Wall => "wall",
        }
    }
}

/// Samples that were not taken or not kept, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LostSamples {
    /// A short machine-readable reason, e.g. `ring_full`.
    pub reason: String,
    pub count: u64,
}

/// Which runtime ran the program.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Runtime {
    /// `"coreclr"`, `"mono"`, or `"native"` (a program traced through its compiler-inserted
    /// hooks, docs/NATIVE.md).
    pub kind: String,
    /// e.g. `"8.0.4"`.
    pub version: String,
}

/// How the measured times were corrected for the profiler's own cost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Compensation {
    /// Hook cost that lands inside a call's own measured interval, subtracted once per call.
    pub inner_ns_per_call: f64,
    /// Hook cost a caller sees around each call it makes, subtracted from the caller once per call.
    pub outer_ns_per_call: f64,
}

/// Facts about the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunInfo {
    pub mode: Mode,
    /// Set in tracing mode.
    pub timing: Option<Timing>,
    pub runtime: Runtime,
    /// The command the user asked to profile.
    pub command: Vec<String>,
    pub pid: u32,
    /// The process exit code, when it is known (`None` when it died by a signal or is unknown).
    pub exit_code: Option<i32>,
    /// The signal that ended the process, when it died by one.
    pub signal: Option<i32>,
    /// From the agent's start to its last snapshot.
    pub wall_ns: u64,
    /// Unix time in milliseconds at which the agent started.
    pub started_unix_ms: u64,
    /// Sampling interval (sampling mode, or tracing with sampled timing); 0 otherwise.
    pub sample_interval_ns: u64,
    /// Hook-cost compensation applied to the times in this profile (exact tracing only).
    pub compensation: Option<Compensation>,
    /// True when the process ended before it could send its final snapshot: the profile holds
    /// what the last periodic snapshot carried.
    pub incomplete: bool,
    /// Calls, nodes or samples the agent could not record (e.g. a full call tree).
    pub lost: u64,
    /// Sampling mode: the clock that drove the sampler.
    pub sample_clock: Option<SampleClock>,
    /// Sampling mode: samples taken (each counts the sampling periods it stands for).
    pub samples_taken: u64,
    /// Sampling mode: samples lost, by reason.
    pub samples_lost: Vec<LostSamples>,
    /// Agent version that recorded the data.
    pub agent_version: String,
    /// Set when `sonde record --pid` attached to a process that was already running (and left
    /// it running): the profile covers only the attached span. Stored in the file's extension
    /// section, not the version-1 payload (`file`), hence `skip` here.
    #[serde(skip)]
    pub attach: Option<Attach>,
    /// Sampling mode: which sampler raised the samples — `kernel` (a `perf_event` ring per
    /// thread, written by the kernel: nothing runs in the program), `signal-timers` (per-thread
    /// task-clock timers raise Sonde's sampling signal), `signal-thread` (Sonde's sampler thread
    /// signals the running threads), `runtime` (the runtime's own sampler: Mono). `None` in files
    /// from before it was recorded. An extension (`file`), hence `skip`.
    #[serde(skip)]
    pub sampler: Option<String>,
}

/// When an attached recording began and ended, in Unix time (nanoseconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attach {
    /// The agent started in the running process.
    pub attached_at_ns: u64,
    /// The agent was detached and the process ran on; `None` when it ended while attached (or
    /// the detach did not complete).
    pub detached_at_ns: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Method {
    /// `Namespace.Type.Method`, nested types joined with `+`, generic arity kept (``Acme.Node`1..ctor``).
    pub name: String,
    /// Human-readable parameter and return types, e.g. `(int32, string) -> void`.
    pub signature: String,
    pub assembly: String,
    pub module: String,
}

impl Method {
    /// What stands for method `id` when nothing named it (a snapshot cut short):
    /// `<unknown method ID>`, the rest empty.
    pub fn unknown(id: u32) -> Method {
        Method {
            name: format!("<unknown method {id}>"),
            signature: String::new(),
            assembly: String::new(),
            module: String::new(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Thread {
    /// OS thread id.
    pub os_tid: u32,
    /// The managed thread name, if it had one.
    pub name: Option<String>,
    /// From the thread's first recorded event to its end (or the last snapshot).
    pub wall_ns: u64,
    pub cpu_user_ns: u64,
    pub cpu_kernel_ns: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Node {
    pub thread: u32,
    /// `None` for a thread's top-level calls.
    pub parent: Option<u32>,
    pub method: u32,
    pub calls: u64,
    /// Time in this node excluding its children.
    pub self_ns: u64,
    /// Time in this node including its children.
    pub total_ns: u64,
    /// Samples in which this node was the innermost frame.
    pub self_samples: u64,
    /// Samples in which this node was on the stack.
    pub total_samples: u64,
}

/// One profiled process.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    pub run: RunInfo,
    pub methods: Vec<Method>,
    pub threads: Vec<Thread>,
    /// Parents precede children.
    pub nodes: Vec<Node>,
    /// The runtime's events (exceptions, collections): an extension of the file (`file`), hence
    /// `skip` in the version-1 payload. Empty when the recording had none.
    #[serde(skip)]
    pub events: RuntimeEvents,
    /// Where methods are in their source files (the file's `sources` extension): empty when the
    /// recording found no symbols.
    #[serde(skip)]
    pub sources: Sources,
    /// The type arguments of methods that are instantiations of generic code (the file's
    /// `instantiations` extension), by method id, ascending, one each: what tells
    /// `Acme.Table<Acme.Row>.Fill` from `Acme.Table<Acme.Col>.Fill`, both named
    /// `` Acme.Table`1.Fill ``. Empty when the agent named none.
    #[serde(skip)]
    pub instantiations: Vec<Instantiation>,
    /// The managed methods that are framework code, not the program's own, by id, ascending
    /// (the file's `framework` extension; `crate::origin` says how it is decided). `None` in a
    /// profile recorded before it existed: then the assembly's name decides
    /// ([`Profile::is_framework`]).
    #[serde(skip)]
    pub framework: Option<Vec<u32>>,
    /// The functions that could have run, for function coverage (the file's `coverage`
    /// extension): empty when the recording knew of none.
    #[serde(skip)]
    pub coverage: Coverage,
}

/// What could have run, for coverage reports: the instrumented native functions of every
/// instrumented file the recording saw (`-finstrument-functions`; docs/NATIVE.md, "Function
/// coverage"). Which of them ran, and how often, is in the call tree.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Coverage {
    /// By file, then name; once each.
    pub native: Vec<NativeFunction>,
    /// Coverage mode: each rewritten method's blocks and how often each ran, by method id
    /// (the file's `coverage_blocks` extension).
    #[serde(skip)]
    pub managed: Vec<MethodBlocks>,
    /// Coverage mode: each covered method's source lines and how often each ran, by method then
    /// file and line (the file's `coverage_lines` extension), from the blocks and the symbols.
    #[serde(skip)]
    pub lines: Vec<LineHits>,
}

/// One rewritten method's basic blocks: `(IL offset of the block's first instruction, times it
/// ran)`, ascending.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MethodBlocks {
    pub method: u32,
    pub blocks: Vec<(u32, u64)>,
}

impl MethodBlocks {
    /// How often the method was entered (its first block's count).
    pub fn calls(&self) -> u64 {
        self.blocks.first().filter(|b| b.0 == 0).map_or(0, |b| b.1)
    }

    /// How often the block containing `il_offset` ran.
    pub fn hits_at(&self, il_offset: u32) -> u64 {
        let after = self.blocks.partition_point(|&(o, _)| o <= il_offset);
        after.checked_sub(1).map_or(0, |i| self.blocks[i].1)
    }
}

/// A source line of a covered method and how often it ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LineHits {
    pub method: u32,
    pub at: SourceLine,
    pub hits: u64,
}

/// One instrumented function of [`Profile::function_coverage`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunctionCoverage<'a> {
    pub module: &'a str,
    /// The file's name (what method names show before `!`).
    pub library: &'a str,
    pub symbol: &'a str,
    /// Its method, if it ran.
    pub method: Option<u32>,
    /// Calls (0: never ran).
    pub calls: u64,
}

/// One rewritten method of coverage mode ([`Profile::method_coverage`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MethodCoverage<'a> {
    pub method: u32,
    /// How often it was entered.
    pub calls: u64,
    /// Its source file, when its symbols were found.
    pub file: Option<&'a str>,
    /// Its lines and how often each ran, ascending.
    pub lines: Vec<(u32, u64)>,
}

impl FunctionCoverage<'_> {
    /// `library!function` as reports show it (C++ demangled, without parameters).
    pub fn display_name(&self) -> String {
        let full = format!("[native] {}!{}", self.library, self.symbol);
        let shown = crate::names::display_name(&full, "", &[], &[]);
        shown.strip_prefix("[native] ").unwrap_or(&shown).to_string()
    }
}

impl Profile {
    /// Coverage mode: every rewritten method, by id, with its calls and source lines.
    pub fn method_coverage(&self) -> Vec<MethodCoverage<'_>> {
        let lines = &self.coverage.lines;
        self.coverage
            .managed
            .iter()
            .map(|m| {
                let start = lines.partition_point(|l| l.method < m.method);
                let end = lines.partition_point(|l| l.method <= m.method);
                let mine = &lines[start..end];
                MethodCoverage {
                    method: m.method,
                    calls: m.calls(),
                    file: mine.first().map(|l| self.sources.file(l.at)),
                    lines: mine.iter().map(|l| (l.at.line, l.hits)).collect(),
                }
            })
            .collect()
    }

    /// Function coverage: every instrumented native function of [`Profile::coverage`] with its
    /// calls in the call tree, in the coverage's order.
    pub fn function_coverage(&self) -> Vec<FunctionCoverage<'_>> {
        if self.coverage.native.is_empty() {
            return Vec::new();
        }
        let mut calls = vec![0u64; self.methods.len()];
        for n in &self.nodes {
            if let Some(c) = calls.get_mut(n.method as usize) {
                *c = c.saturating_add(n.calls);
            }
        }
        // (module, symbol) → method, for the methods the hooks named (`[native] library!symbol`).
        let mut ran: std::collections::HashMap<(&str, &str), u32> = std::collections::HashMap::new();
        for (id, m) in self.methods.iter().enumerate() {
            let symbol = m.name.strip_prefix("[native] ").and_then(|n| n.strip_prefix(m.assembly.as_str()));
            if let Some(symbol) = symbol.and_then(|s| s.strip_prefix('!')) {
                ran.entry((m.module.as_str(), symbol)).or_insert(id as u32);
            }
        }
        self.coverage
            .native
            .iter()
            .map(|f| {
                let method = ran.get(&(f.module.as_str(), f.symbol.as_str())).copied();
                FunctionCoverage {
                    module: &f.module,
                    library: f.module.rsplit('/').next().unwrap_or(&f.module),
                    symbol: &f.symbol,
                    method,
                    calls: method.map_or(0, |m| calls[m as usize]),
                }
            })
            .collect()
    }
}

/// An instrumented native function.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct NativeFunction {
    /// The file's path, as methods' `module` names it.
    pub module: String,
    /// The symbol as the linker wrote it (C++ mangled).
    pub symbol: String,
}

/// A method that is one instantiation of generic code: its type arguments as the runtime named
/// them (`System.__Canon` for code shared by reference types).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Instantiation {
    pub method: u32,
    /// The declaring type's, outermost type first.
    pub type_args: Vec<String>,
    /// The method's own.
    pub method_args: Vec<String>,
}

/// Source locations, from the symbols (portable PDB, Mono `.mdb`) of the modules the methods came
/// from, resolved when the profile was recorded: a profile file carries them to wherever it is
/// read.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sources {
    /// Source file paths as the compiler wrote them (untrusted text, like every name in a
    /// profile); [`SourceLine::file`] is an index into this.
    pub files: Vec<String>,
    /// Methods' first lines (their first sequence point), by method id, ascending, one each.
    pub methods: Vec<(u32, SourceLine)>,
    /// Samples by source line, by method then file and line, one entry each (sampling mode).
    pub lines: Vec<LineSamples>,
    /// Each call-tree node's own samples by the line its method was at, by node then file and
    /// line, one entry each (sampling mode; the file's `node_lines` extension): what the pprof
    /// export puts on each sample's innermost location. A node's entries sum to at most its
    /// `self_samples` (time charged afterwards to a blocked thread's stack has no line).
    #[serde(skip)]
    pub node_lines: Vec<NodeLine>,
}

/// The samples of one call-tree node at one source line of its method.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeLine {
    pub node: u32,
    pub at: SourceLine,
    pub samples: u64,
}

/// A line of a source file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct SourceLine {
    /// An index into [`Sources::files`].
    pub file: u32,
    /// 1-based.
    pub line: u32,
}

/// The samples of one method at one of its source lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LineSamples {
    pub method: u32,
    pub at: SourceLine,
    /// Samples whose innermost frame was this method at this line.
    pub self_samples: u64,
    /// Samples with this method at this line anywhere on the stack (a recursive method counts a
    /// sample once per distinct IL offset of the line, see `docs/SAMPLING.md`).
    pub total_samples: u64,
}

impl Sources {
    /// The first line of method `method`, if its symbols gave one.
    pub fn method_line(&self, method: u32) -> Option<SourceLine> {
        self.methods.binary_search_by_key(&method, |&(m, _)| m).ok().map(|i| self.methods[i].1)
    }

    /// The file name of `line`.
    pub fn file(&self, line: SourceLine) -> &str {
        self.files.get(line.file as usize).map_or("", String::as_str)
    }

    /// The line samples of node `node`.
    pub fn lines_of_node(&self, node: u32) -> &[NodeLine] {
        let start = self.node_lines.partition_point(|l| l.node < node);
        let end = self.node_lines.partition_point(|l| l.node <= node);
        &self.node_lines[start..end]
    }

    /// The line samples of method `method`.
    pub fn lines_of(&self, method: u32) -> &[LineSamples] {
        let start = self.lines.partition_point(|l| l.method < method);
        let end = self.lines.partition_point(|l| l.method <= method);
        &self.lines[start..end]
    }
}

/// What the runtime reported besides calls and samples (`docs/EVENTS.md`). Counts are cumulative
/// from the agent's start (an attached recording: from the attach).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RuntimeEvents {
    /// Exceptions by type, in the order each type was first thrown.
    pub exceptions: Vec<ExceptionCount>,
    /// Whether `ExceptionCount::caught` was counted (always on CoreCLR; on Mono only when asked,
    /// as it costs every `finally` block a callback).
    pub catches_counted: bool,
    /// Garbage collections.
    pub gc: GcSummary,
    /// Allocations by type (the file's `allocations` extension, hence `skip` in `events`).
    #[serde(skip)]
    pub allocations: Allocations,
    /// What the events above attribute to call-tree nodes, by node id, ascending, at most one
    /// entry per node and only nodes with something to count (the file's `node_events`
    /// extension).
    #[serde(skip)]
    pub nodes: Vec<NodeEvents>,
    /// JIT compilation and module loads (the file's `loading` extension).
    #[serde(skip)]
    pub loading: Loading,
    /// When exceptions were thrown and the JIT compiled, per thread (the file's `timeline`
    /// extension); collections and module loads carry their own times.
    #[serde(skip)]
    pub timeline: Timeline,
    /// Each traced thread's latest calls in order (`--call-trace`; the file's `call_trace`
    /// extension).
    #[serde(skip)]
    pub call_trace: crate::trace::CallTrace,
    /// The error simulator's rules and the faults it injected (`--inject`; the file's `faults`
    /// extension).
    #[serde(skip)]
    pub faults: Faults,
}

/// What the error simulator did (`sonde record --inject`; docs/INJECT.md): each rule, the
/// methods it was applied to, and every fault it injected with what became of it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Faults {
    pub rules: Vec<FaultRule>,
    /// The faults in the order they were thrown: the first [`Faults::MAX_INJECTED`].
    pub injected: Vec<Fault>,
    /// Faults injected after `injected` was full.
    pub dropped: u64,
}

impl Faults {
    pub const MAX_INJECTED: usize = 100_000;

    /// The faults counted by rule, throwing method and catcher: by rule, then in the order each
    /// outcome first happened.
    pub fn outcomes(&self) -> Vec<FaultOutcome> {
        let mut out: Vec<FaultOutcome> = Vec::new();
        for f in &self.injected {
            match out.iter_mut().find(|o| (o.rule, o.method, o.caught_in) == (f.rule, f.method, f.caught_in)) {
                Some(o) => o.count += 1,
                None => out.push(FaultOutcome { rule: f.rule, method: f.method, caught_in: f.caught_in, count: 1 }),
            }
        }
        out.sort_by_key(|o| o.rule);
        out
    }
}

/// How many faults of one rule, thrown by one method, ended the same way ([`Faults::outcomes`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FaultOutcome {
    pub rule: u32,
    pub method: u32,
    pub caught_in: Option<u32>,
    pub count: u64,
}

/// One rule of the error simulator.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FaultRule {
    /// As the controller wrote it (`METHODS=EXCEPTION[@…]`).
    pub rule: String,
    /// The exception type's full name.
    pub exception: String,
    /// The methods it was applied to (their IL throws at entry), by id, ascending.
    pub methods: Vec<u32>,
    /// Why it could not be applied to a method it matched (the exception type not found,
    /// a body the IL editor refused), each reason once.
    pub problems: Vec<String>,
}

/// One injected fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fault {
    /// Index into [`Faults::rules`].
    pub rule: u32,
    /// The method that threw it, at its entry.
    pub method: u32,
    pub os_tid: u32,
    /// Nanoseconds from the agent's start.
    pub at_ns: u64,
    /// The method whose handler caught it first; `None` when nothing caught it: the program
    /// died of it (or ended while it was unwinding).
    pub caught_in: Option<u32>,
}

/// Timestamped events for a timeline of the run: the first [`Timeline::MAX_EVENTS`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Timeline {
    pub events: Vec<TimelineEvent>,
    /// Events left out once the timeline was full.
    pub dropped: u64,
}

impl Timeline {
    pub const MAX_EVENTS: usize = 65_536;
}

/// One event of the timeline, on the OS thread it happened on. Times are nanoseconds from the
/// agent's start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimelineEvent {
    pub kind: TimelineKind,
    pub os_tid: u32,
    pub start_ns: u64,
    /// Equal to `start_ns` for an instant (a throw).
    pub end_ns: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum TimelineKind {
    /// The JIT compiled (the outermost of nested compilations).
    Jit,
    /// An exception was thrown: its type, an index into [`RuntimeEvents::exceptions`].
    Exception { type_index: u32 },
}

/// The start-up story: what the JIT compiled and which modules loaded when.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Loading {
    /// Method bodies the JIT compiled (a method compiled again at a higher tier counts again).
    pub methods_compiled: u64,
    /// Time spent in those compilations, from start to finish, summed over threads.
    pub jit_ns: u64,
    /// Modules (assemblies' files) in the order they loaded, at most
    /// [`Loading::MAX_MODULES`].
    pub modules: Vec<ModuleLoad>,
    /// Mono, tracing and coverage modes: the precompiled (AOT) images whose code ran although
    /// the recording would have traced or covered it (`mono -O=all` or `--full-aot` on the
    /// program's own command line override the controller's `-O=-aot`); that code has no
    /// enter/leave hooks and no coverage counters, so the profile misses it. Their paths, once
    /// each. The file's `precompiled` extension, hence `skip` in `loading`'s encoding.
    #[serde(skip)]
    pub precompiled: Vec<String>,
}

impl Loading {
    pub const MAX_MODULES: usize = 65_536;
}

/// One module load.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModuleLoad {
    /// The module's simple name (`System.Private.CoreLib.dll`).
    pub name: String,
    /// Its file, when it has one (empty for a module built in memory).
    pub path: String,
    /// When it finished loading, in nanoseconds from the agent's start.
    pub loaded_ns: u64,
}

/// Allocations, all threads: how they were counted and the totals per type.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Allocations {
    pub sampling: AllocSampling,
    /// Sampled: the mean number of bytes between two samples (CoreCLR's `AllocationTick`:
    /// about 100 KB; Mono: Sonde's own per-byte sampler).
    pub sample_bytes: u64,
    /// Allocations the agent sampled (every one, exact).
    pub samples: u64,
    /// Totals per type — estimated, or exact when [`Allocations::exact_by_type`] — in the order
    /// each type was first seen.
    pub by_type: Vec<AllocationCount>,
    /// `by_type` counts every allocation, exactly: the runtime reported each one (Mono always;
    /// CoreCLR in exact mode), whatever `sampling` says of the figures per node (the file's
    /// `allocations_exact` extension, hence `skip` in `allocations`).
    #[serde(skip)]
    pub exact_by_type: bool,
}

/// How allocations were counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum AllocSampling {
    /// Not recorded.
    #[default]
    Off,
    /// One allocation in about every `sample_bytes` bytes, weighted (`docs/EVENTS.md`).
    Sampled,
    /// Every allocation.
    Exact,
}

impl AllocSampling {
    pub fn as_str(self) -> &'static str {
        match self {
            AllocSampling::Off => "off",
            AllocSampling::Sampled => "sampled",
            AllocSampling::Exact => "exact",
        }
    }
}

/// Allocations of one type.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AllocationCount {
    /// `Namespace.Type`, nested types joined with `+`, arrays as `T[]`.
    pub type_name: String,
    pub bytes: u64,
    pub count: u64,
}

/// The events attributed to one call-tree node, where it was the innermost frame (its self
/// share; inclusive figures are derived from the tree).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeEvents {
    pub node: u32,
    /// Allocated bytes (estimated when sampled).
    pub alloc_bytes: u64,
    /// Allocated objects (estimated when sampled).
    pub alloc_count: u64,
    /// Time spent waiting to enter a contended lock.
    pub wait_ns: u64,
    /// Exceptions thrown (first chance).
    pub exceptions_thrown: u64,
}

impl NodeEvents {
    pub fn is_empty(&self) -> bool {
        self.alloc_bytes == 0 && self.alloc_count == 0 && self.wait_ns == 0 && self.exceptions_thrown == 0
    }

    /// Adds `other`'s counts (not its node) to these.
    pub fn add(&mut self, other: &NodeEvents) {
        self.alloc_bytes = self.alloc_bytes.saturating_add(other.alloc_bytes);
        self.alloc_count = self.alloc_count.saturating_add(other.alloc_count);
        self.wait_ns = self.wait_ns.saturating_add(other.wait_ns);
        self.exceptions_thrown = self.exceptions_thrown.saturating_add(other.exceptions_thrown);
    }
}

impl RuntimeEvents {
    /// The events of node `id`, if any (`nodes` is sorted by node).
    pub fn node(&self, id: u32) -> Option<&NodeEvents> {
        self.nodes.binary_search_by_key(&id, |e| e.node).ok().map(|i| &self.nodes[i])
    }
}

/// Exceptions of one type: first-chance throws (a rethrow counts again) and catches (a catch
/// handler entered; a `when` filter that rejects does not count).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExceptionCount {
    /// `Namespace.Type`, nested types joined with `+`.
    pub type_name: String,
    pub thrown: u64,
    pub caught: u64,
}

/// The garbage collections of the run: totals over all of them, and the most recent ones.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GcSummary {
    /// Collections by the generation they condemned: `[gen0, gen1, gen2]` (each counted once; a
    /// collection of the large-object or pinned heap counts as gen2; Mono's major collection as
    /// gen1, its nursery collection as gen0).
    pub count_by_gen: [u64; 3],
    /// Time the runtime was suspended for collections (suspension start to resume end).
    pub pause_ns_total: u64,
    pub pause_ns_max: u64,
    /// One record per collection, oldest first; at most [`GcSummary::MAX_RECORDS`] (the most
    /// recent ones) — the totals above count them all.
    pub collections: Vec<GcCollection>,
}

impl GcSummary {
    /// Records kept per run (a service collecting 10 times a second fills it in about two hours).
    pub const MAX_RECORDS: usize = 65_536;

    pub fn count(&self) -> u64 {
        self.count_by_gen.iter().sum()
    }

    /// The heap after the latest collection that measured it (Mono's do not).
    pub fn last_heap_bytes(&self) -> Option<u64> {
        self.collections.iter().rev().map(|c| c.heap_bytes_after).find(|&b| b > 0)
    }
}

/// One garbage collection. Times are nanoseconds from the agent's start, like `wall_ns`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct GcCollection {
    /// The generation condemned (0, 1 or 2).
    pub generation: u8,
    pub reason: GcReason,
    pub kind: GcKind,
    pub start_ns: u64,
    pub end_ns: u64,
    /// Suspension of the runtime for this collection (0 when none was seen: a background
    /// collection runs beside the program).
    pub pause_ns: u64,
    /// The managed heap after the collection, all generations, in bytes (0: not known).
    pub heap_bytes_after: u64,
}

/// Why a collection ran, as far as the runtime tells a profiler.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum GcReason {
    /// `GC.Collect` (or another explicit request).
    Induced,
    /// Allocation or memory pressure (CoreCLR's profiling API does not say more).
    Other,
    /// The runtime does not tell (Mono).
    Unknown,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum GcKind {
    /// The program's threads are suspended for the whole collection.
    Blocking,
    /// CoreCLR's background gen2 collection, which runs while the program does.
    Background,
}

impl GcReason {
    pub fn as_str(self) -> &'static str {
        match self {
            GcReason::Induced => "induced",
            GcReason::Other => "other",
            GcReason::Unknown => "unknown",
        }
    }
}

impl GcKind {
    pub fn as_str(self) -> &'static str {
        match self {
            GcKind::Blocking => "blocking",
            GcKind::Background => "background",
        }
    }
}

/// How a profile breaks an invariant that readers rely on ([`Profile::validate`]). Each message is
/// one line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InvalidProfile {
    #[error("node {node} names method {method} of {methods}")]
    MethodOutOfRange { node: usize, method: u32, methods: usize },
    #[error("node {node} names thread {thread} of {threads}")]
    ThreadOutOfRange { node: usize, thread: u32, threads: usize },
    #[error("node {node} has parent {parent}, which does not precede it")]
    ParentDoesNotPrecede { node: usize, parent: u32 },
    #[error("node {node} and its parent {parent} are on different threads")]
    ParentOnAnotherThread { node: usize, parent: u32 },
    #[error("node events name node {node} of {nodes}, out of order or twice")]
    NodeEventsOutOfOrder { node: u32, nodes: usize },
    #[error("source lines name method {method} of {methods}, file {file} of {files}, or are out of order")]
    SourcesOutOfRange { method: u32, methods: usize, file: u32, files: usize },
    #[error("node lines name node {node} of {nodes}, or a file of {files}, out of order or beyond the node's samples")]
    NodeLinesOutOfRange { node: u32, nodes: usize, files: usize },
    #[error("framework methods are out of order or beyond the {methods} methods")]
    FrameworkOutOfOrder { methods: usize },
    #[error("generic instantiations name method {method} of {methods}, or are out of order")]
    InstantiationsOutOfOrder { method: u32, methods: usize },
    #[error("an injected fault names a rule the profile does not have")]
    FaultRuleOutOfRange,
    #[error("the call trace, the coverage or the faults name method {method} of {methods}")]
    TraceMethodOutOfRange { method: u32, methods: usize },
    #[error("the coverage's methods are out of order")]
    CoverageOutOfOrder,
}

impl Profile {
    /// Checks the invariants readers rely on: ids in range, parents before children, a node's
    /// thread equal to its parent's, node events in node order.
    pub fn validate(&self) -> Result<(), InvalidProfile> {
        for (i, node) in self.nodes.iter().enumerate() {
            if node.method as usize >= self.methods.len() {
                return Err(InvalidProfile::MethodOutOfRange {
                    node: i,
                    method: node.method,
                    methods: self.methods.len(),
                });
            }
            if node.thread as usize >= self.threads.len() {
                return Err(InvalidProfile::ThreadOutOfRange {
                    node: i,
                    thread: node.thread,
                    threads: self.threads.len(),
                });
            }
            if let Some(p) = node.parent {
                if p as usize >= i {
                    return Err(InvalidProfile::ParentDoesNotPrecede { node: i, parent: p });
                }
                if self.nodes[p as usize].thread != node.thread {
                    return Err(InvalidProfile::ParentOnAnotherThread { node: i, parent: p });
                }
            }
        }
        let mut previous = None;
        for e in &self.events.nodes {
            if e.node as usize >= self.nodes.len() || previous.is_some_and(|p| p >= e.node) {
                return Err(InvalidProfile::NodeEventsOutOfOrder { node: e.node, nodes: self.nodes.len() });
            }
            previous = Some(e.node);
        }
        if let Some(ids) = &self.framework
            && ids.windows(2).any(|w| w[0] >= w[1]) | ids.last().is_some_and(|&m| m as usize >= self.methods.len())
        {
            return Err(InvalidProfile::FrameworkOutOfOrder { methods: self.methods.len() });
        }
        let mut previous = None;
        for i in &self.instantiations {
            if i.method as usize >= self.methods.len() || previous.is_some_and(|p| p >= i.method) {
                return Err(InvalidProfile::InstantiationsOutOfOrder { method: i.method, methods: self.methods.len() });
            }
            previous = Some(i.method);
        }
        let methods = self.methods.len();
        let covered =
            self.coverage.managed.iter().map(|b| b.method).chain(self.coverage.lines.iter().map(|l| l.method));
        if let Some(method) = covered.into_iter().find(|&m| m as usize >= methods) {
            return Err(InvalidProfile::TraceMethodOutOfRange { method, methods });
        }
        if self.coverage.lines.windows(2).any(|w| w[0].method > w[1].method)
            || self.coverage.managed.windows(2).any(|w| w[0].method > w[1].method)
        {
            return Err(InvalidProfile::CoverageOutOfOrder);
        }
        let faults = &self.events.faults;
        let named = faults.rules.iter().flat_map(|r| r.methods.iter().copied());
        let thrown = faults.injected.iter().flat_map(|f| std::iter::once(f.method).chain(f.caught_in));
        if let Some(method) = named.chain(thrown).find(|&m| m as usize >= methods) {
            return Err(InvalidProfile::TraceMethodOutOfRange { method, methods });
        }
        if faults.injected.iter().any(|f| f.rule as usize >= faults.rules.len()) {
            return Err(InvalidProfile::FaultRuleOutOfRange);
        }
        let traced = self.events.call_trace.threads.iter().flat_map(|t| &t.events);
        if let Some(e) = traced.into_iter().find(|e| e.method as usize >= self.methods.len()) {
            return Err(InvalidProfile::TraceMethodOutOfRange { method: e.method, methods: self.methods.len() });
        }
        self.validate_sources()
    }

    /// What reports call method `method` ([`crate::names::display_name`]): the programmer's name
    /// for compiler-generated code, with the type arguments of an instantiation.
    pub fn display_name(&self, method: u32) -> std::borrow::Cow<'_, str> {
        let Some(m) = self.methods.get(method as usize) else { return "".into() };
        let generic =
            self.instantiations.binary_search_by_key(&method, |i| i.method).ok().map(|at| &self.instantiations[at]);
        let (types, own) = generic.map_or((&[][..], &[][..]), |i| (&i.type_args[..], &i.method_args[..]));
        crate::names::display_name(&m.name, &m.signature, types, own)
    }

    /// Whether method `method` is managed framework code (not the program's own: `crate::origin`).
    pub fn is_framework(&self, method: u32) -> bool {
        if self.kind(method) != crate::names::Kind::Managed {
            return false;
        }
        match &self.framework {
            Some(ids) => ids.binary_search(&method).is_ok(),
            None => self.methods.get(method as usize).is_some_and(|m| crate::origin::framework_name(&m.assembly)),
        }
    }

    /// Whether method `method` is the program's own managed code (JSON: `user_code`).
    pub fn is_user_code(&self, method: u32) -> bool {
        self.kind(method) == crate::names::Kind::Managed && !self.is_framework(method)
    }

    /// The runtime's work method `method` stands for, if it is a work frame (`[jit] …`, `[gc]`).
    pub fn work(&self, method: u32) -> Option<crate::names::Work> {
        self.methods.get(method as usize).and_then(|m| crate::names::Work::of(&m.name))
    }

    /// What kind of code method `method` is.
    pub fn kind(&self, method: u32) -> crate::names::Kind {
        self.methods.get(method as usize).map_or(crate::names::Kind::Runtime, |m| crate::names::Kind::of(&m.name))
    }

    /// Source lines name methods and files that exist, in the order lookups rely on.
    fn validate_sources(&self) -> Result<(), InvalidProfile> {
        let sources = &self.sources;
        let (methods, files) = (self.methods.len(), sources.files.len());
        let bad =
            |method: u32, at: SourceLine| InvalidProfile::SourcesOutOfRange { method, methods, file: at.file, files };
        let outside = |method: u32, at: SourceLine| method as usize >= methods || at.file as usize >= files;
        let mut previous: Option<u32> = None;
        for &(method, at) in &sources.methods {
            if outside(method, at) || previous.is_some_and(|p| p >= method) {
                return Err(bad(method, at));
            }
            previous = Some(method);
        }
        let mut previous: Option<(u32, SourceLine)> = None;
        for l in &sources.lines {
            if outside(l.method, l.at) || previous.is_some_and(|p| p >= (l.method, l.at)) {
                return Err(bad(l.method, l.at));
            }
            previous = Some((l.method, l.at));
        }
        let (nodes, bad) =
            (self.nodes.len(), |node| InvalidProfile::NodeLinesOutOfRange { node, nodes: self.nodes.len(), files });
        let mut previous: Option<(u32, SourceLine)> = None;
        let mut node_sum = 0u64;
        for l in &sources.node_lines {
            if l.node as usize >= nodes || l.at.file as usize >= files || previous.is_some_and(|p| p >= (l.node, l.at))
            {
                return Err(bad(l.node));
            }
            if previous.is_none_or(|(p, _)| p != l.node) {
                node_sum = 0;
            }
            node_sum = node_sum.saturating_add(l.samples);
            if node_sum > self.nodes[l.node as usize].self_samples {
                return Err(bad(l.node));
            }
            previous = Some((l.node, l.at));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::Builder;

    /// Two threads; on thread 0 a root (node 0) and its child (node 1).
    fn profile() -> Profile {
        let mut b = Builder::new();
        let main = b.method("App.Program.Main");
        let t0 = b.thread();
        b.thread();
        let root = b.node(t0, None, main, 1, 10, 0);
        b.node(t0, Some(root), main, 1, 10, 0);
        b.finish()
    }

    /// The file reader and the renderers print these one-line messages as they are.
    #[test]
    fn each_broken_invariant_has_its_error_and_message() {
        assert_eq!(profile().validate(), Ok(()));
        let broken = |change: fn(&mut Profile)| {
            let mut p = profile();
            change(&mut p);
            let e = p.validate().expect_err("an invalid profile");
            (e.clone(), e.to_string())
        };
        assert_eq!(
            broken(|p| p.nodes[1].method = 7),
            (
                InvalidProfile::MethodOutOfRange { node: 1, method: 7, methods: 1 },
                "node 1 names method 7 of 1".to_string()
            )
        );
        assert_eq!(
            broken(|p| p.nodes[0].thread = 5),
            (
                InvalidProfile::ThreadOutOfRange { node: 0, thread: 5, threads: 2 },
                "node 0 names thread 5 of 2".to_string()
            )
        );
        assert_eq!(
            broken(|p| p.nodes[1].parent = Some(1)),
            (
                InvalidProfile::ParentDoesNotPrecede { node: 1, parent: 1 },
                "node 1 has parent 1, which does not precede it".to_string()
            )
        );
        assert_eq!(
            broken(|p| p.nodes[1].thread = 1),
            (
                InvalidProfile::ParentOnAnotherThread { node: 1, parent: 0 },
                "node 1 and its parent 0 are on different threads".to_string()
            )
        );
        assert_eq!(
            broken(|p| p.events.nodes = vec![NodeEvents { node: 1, ..Default::default() }, NodeEvents::default()]),
            (
                InvalidProfile::NodeEventsOutOfOrder { node: 0, nodes: 2 },
                "node events name node 0 of 2, out of order or twice".to_string()
            )
        );
        assert_eq!(
            broken(|p| p.events.nodes = vec![NodeEvents { node: 2, ..Default::default() }]),
            (
                InvalidProfile::NodeEventsOutOfOrder { node: 2, nodes: 2 },
                "node events name node 2 of 2, out of order or twice".to_string()
            )
        );
        // The renderers index methods by the coverage's ids.
        assert_eq!(
            broken(|p| p.coverage.managed = vec![MethodBlocks { method: 3, blocks: vec![(0, 1)] }]),
            (
                InvalidProfile::TraceMethodOutOfRange { method: 3, methods: 1 },
                "the call trace, the coverage or the faults name method 3 of 1".to_string()
            )
        );
        assert_eq!(
            broken(|p| {
                let at = SourceLine { file: 0, line: 1 };
                p.methods.push(p.methods[0].clone());
                p.coverage.lines = vec![LineHits { method: 1, at, hits: 1 }, LineHits { method: 0, at, hits: 1 }];
            })
            .0,
            InvalidProfile::CoverageOutOfOrder
        );
    }
}
