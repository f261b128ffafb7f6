//! The `sonde.report/1` JSON contract: one object with the run facts, three flat arrays
//! (threads, methods, nodes) whose ids are their indices, and the runtime's events (exceptions,
//! gc).
//!
//! The structs below are the contract, field for field and in order; they borrow from the
//! profile so that nothing is copied, and the arrays are produced by iterators while
//! `serde_json` writes them, so a profile of millions of nodes streams in constant memory. They
//! are deliberately separate from the model's own serde derives: a change to the model must not
//! silently change the report.
//!
//! Every element of the arrays (and of `gc.collections`) goes on its own line (see [`LineFormatter`]): the output
//! stays compact for programs yet diffs line by line in golden tests and code review.

use std::io::{self, BufWriter, Write};

use serde::{Serialize, Serializer};
use serde_json::ser::{CompactFormatter, Formatter};
use sonde_profile::{Analysis, Profile, node_alloc_totals, thread_totals};

use crate::Renderer;

/// The value of the report's `schema` key. A consumer checks it before reading anything else;
/// an incompatible change to the contract gets a new number.
pub const SCHEMA: &str = "sonde.report/1";

/// Renders the `sonde.report/1` JSON contract.
#[derive(Debug, Clone, Copy, Default)]
pub struct JsonRenderer;

impl Renderer for JsonRenderer {
    fn render(&self, profile: &Profile, out: &mut dyn Write) -> io::Result<()> {
        crate::check(profile)?;
        let analysis = Analysis::new(profile);
        let runtime_work = sonde_profile::RuntimeWork::new(profile);
        let threads = thread_totals(profile);
        let node_alloc = node_alloc_totals(profile);
        let allocations = &profile.events.allocations;
        let run = &profile.run;
        let report = Report {
            schema: SCHEMA,
            mode: run.mode.as_str(),
            timing: run.timing.map(|t| t.as_str()),
            runtime: RuntimeView { kind: &run.runtime.kind, version: &run.runtime.version },
            command: &run.command,
            pid: run.pid,
            exit_code: run.exit_code,
            signal: run.signal,
            wall_ns: run.wall_ns,
            sample_interval_ns: run.sample_interval_ns,
            compensation: run.compensation.map(|c| CompensationView {
                inner_ns_per_call: c.inner_ns_per_call,
                outer_ns_per_call: c.outer_ns_per_call,
            }),
            incomplete: run.incomplete,
            lost: run.lost,
            sample_clock: run.sample_clock.map(|c| c.as_str()),
            sampler: run.sampler.as_deref(),
            samples_taken: run.samples_taken,
            samples_lost: LostView(&run.samples_lost),
            attached: run.attach.is_some(),
            attached_at_ns: run.attach.map(|a| a.attached_at_ns),
            detached_at_ns: run.attach.and_then(|a| a.detached_at_ns),
            threads: Seq(|| {
                profile.threads.iter().zip(&threads).enumerate().map(|(id, (t, sums))| ThreadView {
                    id,
                    pid: run.pid,
                    os_tid: t.os_tid,
                    name: t.name.as_deref(),
                    calls: sums.calls,
                    samples: sums.self_samples,
                    wall_ns: t.wall_ns,
                    cpu_ns: t.cpu_user_ns.saturating_add(t.cpu_kernel_ns),
                    cpu_user_ns: t.cpu_user_ns,
                    cpu_kernel_ns: t.cpu_kernel_ns,
                })
            }),
            methods: Seq(|| {
                profile.methods.iter().zip(analysis.methods()).enumerate().map(|(id, (m, s))| MethodView {
                    id,
                    name: &m.name,
                    display_name: profile.display_name(id as u32),
                    kind: profile.kind(id as u32).as_str(),
                    user_code: profile.is_user_code(id as u32),
                    signature: &m.signature,
                    assembly: &m.assembly,
                    module: &m.module,
                    calls: s.calls,
                    self_ns: s.self_ns,
                    total_ns: s.total_ns,
                    self_samples: s.self_samples,
                    total_samples: s.total_samples,
                    alloc_bytes: s.alloc_bytes,
                    alloc_count: s.alloc_count,
                    total_alloc_bytes: s.total_alloc_bytes,
                    wait_ns: s.wait_ns,
                    exceptions_thrown: s.exceptions_thrown,
                    file: profile.sources.method_line(id as u32).map(|at| profile.sources.file(at)),
                    line: profile.sources.method_line(id as u32).map(|at| at.line),
                    lines: Seq(move || {
                        profile.sources.lines_of(id as u32).iter().map(|l| LineView {
                            file: profile.sources.file(l.at),
                            line: l.at.line,
                            self_samples: l.self_samples,
                            total_samples: l.total_samples,
                            self_ns: l.self_samples.saturating_mul(run.sample_interval_ns),
                        })
                    }),
                    runtime_work: profile.work(id as u32).map(|w| w.as_str()),
                })
            }),
            nodes: Seq(|| {
                profile.nodes.iter().enumerate().map(|(id, n)| {
                    let e = profile.events.node(id as u32).copied().unwrap_or_default();
                    NodeView {
                        id,
                        thread: n.thread,
                        parent: n.parent,
                        method: n.method,
                        calls: n.calls,
                        self_ns: n.self_ns,
                        total_ns: n.total_ns,
                        self_samples: n.self_samples,
                        total_samples: n.total_samples,
                        alloc_bytes: e.alloc_bytes,
                        alloc_count: e.alloc_count,
                        total_alloc_bytes: node_alloc[id],
                        wait_ns: e.wait_ns,
                        exceptions_thrown: e.exceptions_thrown,
                    }
                })
            }),
            exceptions: Seq(|| {
                profile.events.exceptions.iter().map(|e| ExceptionView {
                    r#type: &e.type_name,
                    thrown: e.thrown,
                    caught: profile.events.catches_counted.then_some(e.caught),
                })
            }),
            gc: GcView {
                count_by_gen: profile.events.gc.count_by_gen,
                pause_ns_total: profile.events.gc.pause_ns_total,
                pause_ns_max: profile.events.gc.pause_ns_max,
                collections: Seq(|| {
                    profile.events.gc.collections.iter().map(|c| CollectionView {
                        r#gen: c.generation,
                        reason: c.reason.as_str(),
                        kind: c.kind.as_str(),
                        start_ns: c.start_ns,
                        end_ns: c.end_ns,
                        pause_ns: c.pause_ns,
                        heap_bytes_after: c.heap_bytes_after,
                    })
                }),
            },
            jit: JitView {
                methods_compiled: profile.events.loading.methods_compiled,
                jit_ns: profile.events.loading.jit_ns,
            },
            modules: Seq(|| {
                profile.events.loading.modules.iter().map(|m| ModuleView {
                    name: &m.name,
                    path: &m.path,
                    loaded_ns: m.loaded_ns,
                })
            }),
            precompiled: &profile.events.loading.precompiled,
            allocation_sampling: allocations.sampling.as_str(),
            allocations_exact: allocations.exact_by_type,
            allocations: Seq(|| {
                allocations.by_type.iter().map(|a| AllocationView {
                    r#type: &a.type_name,
                    bytes: a.bytes,
                    count: a.count,
                })
            }),
            runtime_work: RuntimeWorkView::new(&runtime_work),
            coverage: (!profile.coverage.native.is_empty() || !profile.coverage.managed.is_empty()).then_some({
                Seq(|| {
                    let native = profile.function_coverage().into_iter().map(|f| CoverageView {
                        kind: "native",
                        assembly: f.library,
                        module: f.module,
                        method: f.symbol,
                        display_name: f.display_name(),
                        file: None,
                        lines: Vec::new(),
                        calls: f.calls,
                    });
                    let managed = profile.method_coverage().into_iter().map(|m| {
                        let method = &profile.methods[m.method as usize];
                        CoverageView {
                            kind: "managed",
                            assembly: &method.assembly,
                            module: &method.module,
                            method: &method.name,
                            display_name: profile.display_name(m.method).into_owned(),
                            file: m.file,
                            lines: m.lines.iter().map(|&(line, hits)| LineHitsView { line, hits }).collect(),
                            calls: m.calls,
                        }
                    });
                    native.chain(managed)
                })
            }),
            call_trace: (!profile.events.call_trace.threads.is_empty()).then_some(CallTraceView {
                events_per_thread: profile.events.call_trace.events_per_thread,
                threads: Seq(|| {
                    profile.events.call_trace.threads.iter().map(|t| TracedThreadView {
                        os_tid: t.os_tid,
                        events_overwritten: t.overwritten,
                        calls: Seq(move || {
                            t.calls().into_iter().map(|c| TracedCallView {
                                method: c.method,
                                depth: c.depth,
                                start_ns: c.start_ns,
                                end_ns: c.end_ns,
                                entered_before_trace: c.entered_before,
                                still_running: c.still_open,
                            })
                        }),
                    })
                }),
            }),
            faults: fault_views(profile),
        };
        let mut out = BufWriter::new(out);
        let mut ser = serde_json::Serializer::with_formatter(&mut out, LineFormatter::default());
        report.serialize(&mut ser)?;
        out.write_all(b"\n")?;
        out.flush()
    }
}

#[derive(Serialize)]
struct Report<'a, T, M, N, E, C, A, L, X, V> {
    schema: &'static str,
    mode: &'static str,
    timing: Option<&'static str>,
    runtime: RuntimeView<'a>,
    command: &'a [String],
    pid: u32,
    exit_code: Option<i32>,
    signal: Option<i32>,
    wall_ns: u64,
    sample_interval_ns: u64,
    compensation: Option<CompensationView>,
    incomplete: bool,
    lost: u64,
    sample_clock: Option<&'static str>,
    sampler: Option<&'a str>,
    samples_taken: u64,
    samples_lost: LostView<'a>,
    attached: bool,
    attached_at_ns: Option<u64>,
    detached_at_ns: Option<u64>,
    threads: T,
    methods: M,
    nodes: N,
    exceptions: E,
    gc: GcView<C>,
    jit: JitView,
    modules: L,
    /// Mono AOT images whose code ran untraced (`Loading::precompiled`): only when there are some.
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    precompiled: &'a [String],
    allocation_sampling: &'static str,
    allocations_exact: bool,
    allocations: A,
    runtime_work: RuntimeWorkView<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    call_trace: Option<CallTraceView<X>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    coverage: Option<V>,
    #[serde(flatten)]
    faults: Option<FaultsView<'a>>,
}

/// The error simulator's record, present only when the recording had rules (`faults`,
/// `fault_rules`, `faults_dropped` at the top level).
#[derive(Serialize)]
struct FaultsView<'a> {
    faults: Vec<FaultView<'a>>,
    fault_rules: Vec<FaultRuleView<'a>>,
    faults_dropped: u64,
}

#[derive(Serialize)]
struct FaultView<'a> {
    rule: u32,
    method: &'a str,
    exception: &'a str,
    thread: u32,
    at_ns: u64,
    caught_in: Option<&'a str>,
}

#[derive(Serialize)]
struct FaultRuleView<'a> {
    rule: &'a str,
    exception: &'a str,
    methods: Vec<&'a str>,
    faults: usize,
    problems: &'a [String],
}

fn fault_views(profile: &Profile) -> Option<FaultsView<'_>> {
    let faults = &profile.events.faults;
    if faults.rules.is_empty() {
        return None;
    }
    let name = |m: u32| profile.methods.get(m as usize).map_or("", |m| m.name.as_str());
    Some(FaultsView {
        faults: faults
            .injected
            .iter()
            .map(|f| FaultView {
                rule: f.rule,
                method: name(f.method),
                exception: faults.rules.get(f.rule as usize).map_or("", |r| r.exception.as_str()),
                thread: f.os_tid,
                at_ns: f.at_ns,
                caught_in: f.caught_in.map(name),
            })
            .collect(),
        fault_rules: faults
            .rules
            .iter()
            .enumerate()
            .map(|(i, r)| FaultRuleView {
                rule: &r.rule,
                exception: &r.exception,
                methods: r.methods.iter().map(|&m| name(m)).collect(),
                faults: faults.injected.iter().filter(|f| f.rule as usize == i).count(),
                problems: &r.problems,
            })
            .collect(),
        faults_dropped: faults.dropped,
    })
}

#[derive(Serialize)]
struct CoverageView<'a> {
    kind: &'static str,
    assembly: &'a str,
    module: &'a str,
    method: &'a str,
    display_name: String,
    file: Option<&'a str>,
    lines: Vec<LineHitsView>,
    calls: u64,
}

#[derive(Serialize)]
struct LineHitsView {
    line: u32,
    hits: u64,
}

#[derive(Serialize)]
struct CallTraceView<X> {
    events_per_thread: u32,
    threads: X,
}

#[derive(Serialize)]
struct TracedThreadView<C> {
    os_tid: u32,
    events_overwritten: u64,
    calls: C,
}

#[derive(Serialize)]
struct TracedCallView {
    method: u32,
    depth: u32,
    start_ns: u64,
    end_ns: u64,
    entered_before_trace: bool,
    still_running: bool,
}

#[derive(Serialize)]
struct JitView {
    methods_compiled: u64,
    jit_ns: u64,
}

/// What the `[jit] …` and `[gc]` frames hold (`sonde_profile::work`); zeros in a profile
/// without them (tracing, an older agent).
#[derive(Serialize)]
struct RuntimeWorkView<'a> {
    jit: JitWorkView<'a>,
    gc: WorkView,
    type_load: TypeLoadView,
}

#[derive(Serialize)]
struct JitWorkView<'a> {
    samples: u64,
    ns: u64,
    /// The methods sampled while being compiled.
    methods: u64,
    by_assembly: Vec<AssemblyWorkView<'a>>,
}

#[derive(Serialize)]
struct AssemblyWorkView<'a> {
    assembly: &'a str,
    samples: u64,
    ns: u64,
    methods: u64,
}

#[derive(Serialize)]
struct WorkView {
    samples: u64,
    ns: u64,
}

#[derive(Serialize)]
struct TypeLoadView {
    samples: u64,
    ns: u64,
    types: u64,
}

impl<'a> RuntimeWorkView<'a> {
    fn new(work: &'a sonde_profile::RuntimeWork) -> RuntimeWorkView<'a> {
        RuntimeWorkView {
            jit: JitWorkView {
                samples: work.jit.samples,
                ns: work.jit.ns,
                methods: work.jit.frames,
                by_assembly: work
                    .jit_by_assembly
                    .iter()
                    .map(|a| AssemblyWorkView {
                        assembly: &a.assembly,
                        samples: a.samples,
                        ns: a.ns,
                        methods: a.methods,
                    })
                    .collect(),
            },
            gc: WorkView { samples: work.gc.samples, ns: work.gc.ns },
            type_load: TypeLoadView {
                samples: work.type_load.samples,
                ns: work.type_load.ns,
                types: work.type_load.frames,
            },
        }
    }
}

#[derive(Serialize)]
struct ModuleView<'a> {
    name: &'a str,
    path: &'a str,
    loaded_ns: u64,
}

#[derive(Serialize)]
struct AllocationView<'a> {
    r#type: &'a str,
    bytes: u64,
    count: u64,
}

#[derive(Serialize)]
struct ExceptionView<'a> {
    r#type: &'a str,
    thrown: u64,
    /// Null where catches were not counted (Mono by default).
    caught: Option<u64>,
}

#[derive(Serialize)]
struct GcView<C> {
    count_by_gen: [u64; 3],
    pause_ns_total: u64,
    pause_ns_max: u64,
    collections: C,
}

#[derive(Serialize)]
struct CollectionView {
    r#gen: u8,
    reason: &'static str,
    kind: &'static str,
    start_ns: u64,
    end_ns: u64,
    pause_ns: u64,
    heap_bytes_after: u64,
}

/// `{"reason": count, …}` in the profile's order.
struct LostView<'a>(&'a [sonde_profile::LostSamples]);

impl Serialize for LostView<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for lost in self.0 {
            map.serialize_entry(&lost.reason, &lost.count)?;
        }
        map.end()
    }
}

#[derive(Serialize)]
struct RuntimeView<'a> {
    kind: &'a str,
    version: &'a str,
}

#[derive(Serialize)]
struct CompensationView {
    inner_ns_per_call: f64,
    outer_ns_per_call: f64,
}

#[derive(Serialize)]
struct ThreadView<'a> {
    id: usize,
    pid: u32,
    os_tid: u32,
    name: Option<&'a str>,
    calls: u64,
    samples: u64,
    wall_ns: u64,
    cpu_ns: u64,
    cpu_user_ns: u64,
    cpu_kernel_ns: u64,
}

#[derive(Serialize)]
struct MethodView<'a, L> {
    id: usize,
    name: &'a str,
    display_name: std::borrow::Cow<'a, str>,
    kind: &'static str,
    /// The program's own managed code (not the framework's, by where it was loaded from).
    user_code: bool,
    signature: &'a str,
    assembly: &'a str,
    module: &'a str,
    calls: u64,
    self_ns: u64,
    total_ns: u64,
    self_samples: u64,
    total_samples: u64,
    alloc_bytes: u64,
    alloc_count: u64,
    total_alloc_bytes: u64,
    wait_ns: u64,
    exceptions_thrown: u64,
    /// The method's first line, from its symbols.
    file: Option<&'a str>,
    line: Option<u32>,
    lines: L,
    /// `jit`, `gc` or `type_load` for a frame of the runtime's work (`[jit] …`, `[gc]`), else
    /// null.
    runtime_work: Option<&'static str>,
}

/// Samples at one source line of a method.
#[derive(Serialize)]
struct LineView<'a> {
    file: &'a str,
    line: u32,
    self_samples: u64,
    total_samples: u64,
    self_ns: u64,
}

#[derive(Serialize)]
struct NodeView {
    id: usize,
    thread: u32,
    parent: Option<u32>,
    method: u32,
    calls: u64,
    self_ns: u64,
    total_ns: u64,
    self_samples: u64,
    total_samples: u64,
    alloc_bytes: u64,
    alloc_count: u64,
    total_alloc_bytes: u64,
    wait_ns: u64,
    exceptions_thrown: u64,
}

/// A JSON array produced on demand from an iterator, so it is never collected.
struct Seq<F>(F);

impl<F, I> Serialize for Seq<F>
where
    F: Fn() -> I,
    I: IntoIterator,
    I::Item: Serialize,
{
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq((self.0)())
    }
}

/// Compact JSON, except that each top-level key, and each object in a top-level array, starts a
/// new line.
#[derive(Default)]
struct LineFormatter {
    /// Open containers, innermost last; for arrays, whether an object was written in them.
    open: Vec<Container>,
}

#[derive(Clone, Copy, PartialEq)]
enum Container {
    Object,
    Array { had_objects: bool },
}

impl LineFormatter {
    /// Directly inside an array that is a value of the top-level object, or of an object that is
    /// one (`gc.collections`): its objects go one per line.
    fn in_listing_array(&self) -> bool {
        matches!(
            self.open.as_slice(),
            [Container::Object, Container::Array { .. }]
                | [Container::Object, Container::Object, Container::Array { .. }]
        )
    }

    /// Directly inside the top-level object, or an object that is a value of it.
    fn listing_array_parent(&self) -> bool {
        matches!(self.open.as_slice(), [Container::Object] | [Container::Object, Container::Object])
    }
}

impl Formatter for LineFormatter {
    fn begin_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        if self.in_listing_array() {
            if let Some(last) = self.open.last_mut() {
                *last = Container::Array { had_objects: true };
            }
            w.write_all(b"\n")?;
        }
        self.open.push(Container::Object);
        w.write_all(b"{")
    }

    fn begin_object_key<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        CompactFormatter.begin_object_key(w, first)?;
        if self.open.len() == 1 {
            w.write_all(b"\n")?;
        }
        Ok(())
    }

    fn end_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.open.pop();
        if self.open.is_empty() {
            w.write_all(b"\n")?;
        }
        w.write_all(b"}")
    }

    fn begin_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.open.push(Container::Array { had_objects: false });
        w.write_all(b"[")
    }

    fn end_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        if self.open.pop() == Some(Container::Array { had_objects: true }) && self.listing_array_parent() {
            w.write_all(b"\n")?;
        }
        w.write_all(b"]")
    }
}
