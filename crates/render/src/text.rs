//! The human-readable report: run facts, the hot methods, the hot path and a gprof-style call
//! graph.

mod call_graph;
mod faults;
pub mod lines;

use std::io::{self, BufWriter, Write};

use sonde_profile::{Analysis, MethodStats, Mode, Profile, Timing, hot_path};

use crate::Renderer;
use crate::fmt::{Clean, bytes, command_line, count, duration, percent};

/// How many methods the hot-methods table lists.
const HOT_METHODS: usize = 30;

/// How many assemblies the runtime-work table lists under the JIT.
const JIT_ASSEMBLIES: usize = 5;

/// How many exception types the exceptions table lists.
const EXCEPTION_TYPES: usize = 20;

/// Renders the text report.
#[derive(Debug, Clone, Copy, Default)]
pub struct TextRenderer;

impl Renderer for TextRenderer {
    fn render(&self, profile: &Profile, out: &mut dyn Write) -> io::Result<()> {
        crate::check(profile)?;
        let analysis = Analysis::new(profile);
        let view = View::new(profile, &analysis);
        // Many small writes: buffer them rather than make one system call per cell.
        let mut out = BufWriter::new(out);
        header(&mut out, &view)?;
        faults::write(&mut out, &view)?;
        if profile.run.mode == Mode::Coverage {
            // No call tree: what ran, not how long.
            coverage(&mut out, &view)?;
            return out.flush();
        }
        runtime_work(&mut out, &view)?;
        hot_methods(&mut out, &view)?;
        hot_path_section(&mut out, &view)?;
        runtime_events(&mut out, &view)?;
        coverage(&mut out, &view)?;
        call_graph::write(&mut out, &view)?;
        out.flush()
    }
}

/// What the columns of this profile show.
struct View<'a> {
    profile: &'a Profile,
    analysis: &'a Analysis,
    /// Time columns show durations when the profile has any time (sampling profiles estimate it
    /// from samples), sample counts when it has none.
    has_time: bool,
    /// The count column shows calls in tracing mode, samples in sampling mode, which counts no
    /// calls.
    counts_calls: bool,
    /// What each method is called here ([`Profile::display_name`]).
    names: Vec<std::borrow::Cow<'a, str>>,
}

impl<'a> View<'a> {
    fn new(profile: &'a Profile, analysis: &'a Analysis) -> View<'a> {
        View {
            profile,
            analysis,
            has_time: analysis.totals().total_ns > 0,
            counts_calls: profile.run.mode == Mode::Tracing,
            names: (0..profile.methods.len() as u32).map(|m| profile.display_name(m)).collect(),
        }
    }

    /// The figure the time columns show.
    fn measure(&self, ns: u64, samples: u64) -> u64 {
        if self.has_time { ns } else { samples }
    }

    fn amount(&self, ns: u64, samples: u64) -> String {
        if self.has_time { duration(ns) } else { count(samples) }
    }

    /// The denominator of every percentage.
    fn whole(&self) -> u64 {
        let totals = self.analysis.totals();
        self.measure(totals.total_ns, totals.total_samples)
    }

    fn total_of(&self, stats: &MethodStats) -> u64 {
        self.measure(stats.total_ns, stats.total_samples)
    }

    fn count_label(&self) -> &'static str {
        if self.counts_calls { "calls" } else { "samples" }
    }

    fn name(&self, method: u32) -> Clean<'_> {
        Clean(&self.names[method as usize])
    }

    /// The method's name, and where it starts when its symbols said: `Acme.Run (Run.cs:42)`.
    fn located(&self, method: u32) -> String {
        let sources = &self.profile.sources;
        match sources.method_line(method) {
            Some(at) => {
                let file = sources.file(at);
                let file = file.rsplit(['/', '\\']).next().unwrap_or(file);
                format!("{} ({}:{})", self.name(method), Clean(file), at.line)
            }
            None => self.name(method).to_string(),
        }
    }
}

fn header(out: &mut impl Write, view: &View) -> io::Result<()> {
    let run = &view.profile.run;
    let totals = view.analysis.totals();
    let every = |ns: u64| if ns == 0 { String::new() } else { format!(" every {}", duration(ns)) };
    let mode = match (run.mode, run.timing) {
        (Mode::Tracing, Some(Timing::Exact)) => "tracing, exact timing".to_owned(),
        (Mode::Tracing, Some(Timing::Sampled)) => {
            format!("tracing, timing sampled{}", every(run.sample_interval_ns))
        }
        (Mode::Tracing, None) => "tracing".to_owned(),
        (Mode::Sampling, _) => format!("sampling{}", every(run.sample_interval_ns)),
        (Mode::Coverage, _) => "coverage".to_owned(),
    };
    let exit = match (run.exit_code, run.signal) {
        (Some(code), _) => code.to_string(),
        (None, Some(signal)) => format!("killed by signal {signal}"),
        (None, None) => "unknown".to_owned(),
    };

    writeln!(out, "Sonde profile of: {}", Clean(&command_line(&run.command)))?;
    writeln!(out, "  pid          {}", run.pid)?;
    writeln!(out, "  runtime      {} {}", Clean(&run.runtime.kind), Clean(&run.runtime.version))?;
    writeln!(out, "  mode         {mode}")?;
    writeln!(out, "  wall time    {}", duration(run.wall_ns))?;
    writeln!(out, "  exit code    {exit}")?;
    writeln!(out, "  threads      {}", view.profile.threads.len())?;
    if run.mode == Mode::Tracing {
        writeln!(out, "  calls        {}", count(totals.calls))?;
    }
    if run.mode == Mode::Sampling || totals.total_samples > 0 {
        writeln!(out, "  samples      {}", count(totals.total_samples))?;
    }
    if let Some(clock) = run.sample_clock {
        let lost: u64 = run.samples_lost.iter().map(|l| l.count).sum();
        let why: Vec<String> = run
            .samples_lost
            .iter()
            .filter(|l| l.count > 0)
            .map(|l| format!("{} {}", Clean(&l.reason), count(l.count)))
            .collect();
        writeln!(
            out,
            "  sampler      {}{} clock, {} samples taken, {} lost{}",
            run.sampler.as_deref().map(|s| format!("{}, ", Clean(s))).unwrap_or_default(),
            clock.as_str(),
            count(run.samples_taken),
            count(lost),
            if why.is_empty() { String::new() } else { format!(" ({})", why.join(", ")) }
        )?;
    }
    if let Some(c) = run.compensation {
        writeln!(
            out,
            "  hook cost compensated: {:.1} ns/call inside, {:.1} ns/call around each callee",
            c.inner_ns_per_call, c.outer_ns_per_call
        )?;
    }
    if run.incomplete {
        writeln!(
            out,
            "  warning: incomplete: the process ended before its final snapshot; \
             these figures are from the last periodic one"
        )?;
    }
    if run.lost > 0 {
        writeln!(
            out,
            "  warning: {} calls, nodes or samples could not be recorded; figures undercount",
            count(run.lost)
        )?;
    }
    Ok(())
}

/// Sampling: what the runtime's work for the program's threads (the `[jit] …` and `[gc]` frames)
/// adds up to, and whose methods the JIT compiled, before any table of methods.
fn runtime_work(out: &mut impl Write, view: &View) -> io::Result<()> {
    let work = sonde_profile::RuntimeWork::new(view.profile);
    if work.is_empty() {
        return Ok(());
    }
    let whole = view.whole();
    writeln!(out)?;
    writeln!(out, "Runtime work (samples taken while the runtime compiled or collected for a thread)")?;
    writeln!(out, "{:>7}  {:>10}  work", "total %", "total")?;
    let row = |out: &mut dyn Write, ns: u64, samples: u64, what: String| {
        writeln!(out, "{:>7}  {:>10}  {what}", percent(view.measure(ns, samples), whole), view.amount(ns, samples))
    };
    if work.jit.samples > 0 {
        // The methods sampled while compiled are a part of those compiled (when the JIT's events
        // counted them).
        let methods = match view.profile.events.loading.methods_compiled {
            0 => format!("({} methods sampled)", count(work.jit.frames)),
            1 => format!("1 method ({} sampled)", count(work.jit.frames)),
            n => format!("{} methods ({} sampled)", count(n), count(work.jit.frames)),
        };
        row(out, work.jit.ns, work.jit.samples, format!("JIT compiling {methods}"))?;
        for a in work.jit_by_assembly.iter().take(JIT_ASSEMBLIES) {
            let name = if a.assembly.is_empty() { "(unknown)" } else { a.assembly.as_str() };
            row(out, a.ns, a.samples, format!("  of {} ({} sampled)", Clean(name), count(a.methods)))?;
        }
        if work.jit_by_assembly.len() > JIT_ASSEMBLIES {
            writeln!(
                out,
                "{:>7}  {:>10}    … {} more assemblies",
                "",
                "",
                work.jit_by_assembly.len() - JIT_ASSEMBLIES
            )?;
        }
    }
    if work.gc.samples > 0 {
        row(out, work.gc.ns, work.gc.samples, "garbage collection".to_owned())?;
    }
    if work.type_load.samples > 0 {
        row(
            out,
            work.type_load.ns,
            work.type_load.samples,
            format!("type loading ({} types)", count(work.type_load.frames)),
        )?;
    }
    Ok(())
}

fn hot_methods(out: &mut impl Write, view: &View) -> io::Result<()> {
    let methods = view.analysis.methods();
    let mut ranked: Vec<u32> =
        (0..methods.len() as u32).filter(|&id| methods[id as usize] != MethodStats::default()).collect();
    // Sampling counts no calls and its times are estimates from samples, so samples rank it.
    let sampling = view.profile.run.mode == Mode::Sampling;
    ranked.sort_unstable_by_key(|&id| {
        let m = &methods[id as usize];
        let key = if sampling { (m.self_samples, m.self_ns) } else { (m.self_ns, m.self_samples) };
        (std::cmp::Reverse((key, m.calls)), id)
    });

    let by = if sampling { "self samples" } else { "self time" };
    writeln!(out)?;
    let shown =
        if ranked.len() > HOT_METHODS { format!(" (top {HOT_METHODS} of {})", ranked.len()) } else { String::new() };
    writeln!(out, "Hot methods by {by}{shown}")?;
    writeln!(
        out,
        "{:>5}  {:>12}  {:>10}  {:>7}  {:>10}  {:>7}  method",
        "rank",
        view.count_label(),
        "self",
        "self %",
        "total",
        "total %"
    )?;
    let whole = view.whole();
    for (rank, &id) in ranked.iter().take(HOT_METHODS).enumerate() {
        let m = &methods[id as usize];
        let n = if view.counts_calls { m.calls } else { m.self_samples };
        writeln!(
            out,
            "{:>5}  {:>12}  {:>10}  {:>7}  {:>10}  {:>7}  {}",
            rank + 1,
            count(n),
            view.amount(m.self_ns, m.self_samples),
            percent(view.measure(m.self_ns, m.self_samples), whole),
            view.amount(m.total_ns, m.total_samples),
            percent(view.total_of(m), whole),
            view.located(id),
        )?;
    }
    Ok(())
}

/// Garbage collections and exceptions, when the run had any.
fn runtime_events(out: &mut impl Write, view: &View) -> io::Result<()> {
    let events = &view.profile.events;
    let gc = &events.gc;
    if gc.count() > 0 {
        let [g0, g1, g2] = gc.count_by_gen.map(count);
        writeln!(out)?;
        writeln!(
            out,
            "Garbage collections: {} (gen0 {g0}, gen1 {g1}, gen2 {g2}); paused {} in all, {} at most, {} of the run",
            count(gc.count()),
            duration(gc.pause_ns_total),
            duration(gc.pause_ns_max),
            percent(gc.pause_ns_total, view.profile.run.wall_ns),
        )?;
        if let Some(heap) = gc.last_heap_bytes() {
            writeln!(out, "  heap after the last one measured: {}", bytes(heap))?;
        }
    }
    if !events.exceptions.is_empty() {
        let thrown: u64 = events.exceptions.iter().map(|e| e.thrown).sum();
        let caught: u64 = events.exceptions.iter().map(|e| e.caught).sum();
        let mut ranked: Vec<_> = events.exceptions.iter().collect();
        ranked.sort_by_key(|e| std::cmp::Reverse(e.thrown));
        writeln!(out)?;
        let shown = if ranked.len() > EXCEPTION_TYPES {
            format!(" (top {EXCEPTION_TYPES} of {} types)", ranked.len())
        } else {
            String::new()
        };
        let counted = events.catches_counted;
        if counted {
            writeln!(out, "Exceptions: {} thrown, {} caught{shown}", count(thrown), count(caught))?;
        } else {
            writeln!(out, "Exceptions: {} thrown (catches not counted: see docs/EVENTS.md){shown}", count(thrown))?;
        }
        writeln!(out, "{:>12}  {:>12}  type", "thrown", "caught")?;
        for e in ranked.iter().take(EXCEPTION_TYPES) {
            let caught = if counted { count(e.caught) } else { "-".to_owned() };
            writeln!(out, "{:>12}  {:>12}  {}", count(e.thrown), caught, Clean(&e.type_name))?;
        }
    }
    allocations(out, view)?;
    contention(out, view)?;
    let loading = &events.loading;
    if loading.methods_compiled > 0 || !loading.modules.is_empty() {
        writeln!(out)?;
        writeln!(
            out,
            "JIT: {} methods compiled in {}; {} modules loaded{}",
            count(loading.methods_compiled),
            duration(loading.jit_ns),
            count(loading.modules.len() as u64),
            loading.modules.last().map_or(String::new(), |m| format!(", the last at {}", duration(m.loaded_ns))),
        )?;
    }
    Ok(())
}

/// Rows of the allocation and contention tables.
const EVENT_ROWS: usize = 10;

/// Allocations by type, then the methods that allocated most (innermost frame).
fn allocations(out: &mut impl Write, view: &View) -> io::Result<()> {
    let allocations = &view.profile.events.allocations;
    if allocations.by_type.is_empty() {
        return Ok(());
    }
    let total: u64 = allocations.by_type.iter().map(|a| a.bytes).sum();
    let objects: u64 = allocations.by_type.iter().map(|a| a.count).sum();
    let estimate = match (allocations.sampling, allocations.exact_by_type) {
        (sonde_profile::AllocSampling::Exact, _) => String::new(),
        // Mono reports every allocation: the types' figures are counts, the methods' estimates.
        (_, true) => format!(", every one counted (by method: estimated from {} samples)", count(allocations.samples)),
        _ => format!(", estimated from {} samples", count(allocations.samples)),
    };
    let mut ranked: Vec<_> = allocations.by_type.iter().collect();
    ranked.sort_by_key(|a| std::cmp::Reverse(a.bytes));
    writeln!(out)?;
    writeln!(out, "Allocations: {} in {} objects{estimate}", bytes(total), count(objects))?;
    writeln!(out, "{:>12}  {:>7}  {:>12}  type", "bytes", "%", "objects")?;
    for a in ranked.iter().take(EVENT_ROWS) {
        writeln!(
            out,
            "{:>12}  {:>7}  {:>12}  {}",
            bytes(a.bytes),
            percent(a.bytes, total),
            count(a.count),
            Clean(&a.type_name)
        )?;
    }
    let methods = ranked_by(view, |m| m.alloc_bytes);
    if !methods.is_empty() {
        writeln!(out, "{:>12}  {:>7}  {:>12}  allocating method (innermost frame)", "bytes", "%", "objects")?;
        for (id, m) in methods.iter().take(EVENT_ROWS) {
            writeln!(
                out,
                "{:>12}  {:>7}  {:>12}  {}",
                bytes(m.alloc_bytes),
                percent(m.alloc_bytes, total),
                count(m.alloc_count),
                view.name(*id)
            )?;
        }
    }
    Ok(())
}

/// The methods (id, statistics) whose `figure` is not 0, largest first (ties by id).
fn ranked_by<'a>(view: &View<'a>, figure: impl Fn(&MethodStats) -> u64) -> Vec<(u32, &'a MethodStats)> {
    let mut methods: Vec<(u32, &MethodStats)> = view
        .analysis
        .methods()
        .iter()
        .enumerate()
        .map(|(id, m)| (id as u32, m))
        .filter(|(_, m)| figure(m) > 0)
        .collect();
    methods.sort_by_key(|&(id, m)| (std::cmp::Reverse(figure(m)), id));
    methods
}

/// Time spent waiting for contended locks, by the method that waited (innermost frame).
fn contention(out: &mut impl Write, view: &View) -> io::Result<()> {
    let methods = ranked_by(view, |m| m.wait_ns);
    if methods.is_empty() {
        return Ok(());
    }
    let total: u64 = methods.iter().map(|(_, m)| m.wait_ns).sum();
    writeln!(out)?;
    writeln!(out, "Lock contention: {} waited", duration(total))?;
    writeln!(out, "{:>12}  {:>7}  waiting method (innermost frame)", "waited", "%")?;
    for (id, m) in methods.iter().take(EVENT_ROWS) {
        writeln!(out, "{:>12}  {:>7}  {}", duration(m.wait_ns), percent(m.wait_ns, total), view.name(*id))?;
    }
    Ok(())
}

/// The most lines or functions listed as never run, per section (the JSON has them all).
const NEVER_LISTED: usize = 20;

/// Coverage mode: per source file, how many of the covered methods' lines ran, then the lines
/// that never did (the first [`NEVER_LISTED`]).
fn line_coverage(out: &mut impl Write, view: &View) -> io::Result<()> {
    let profile = view.profile;
    if profile.coverage.lines.is_empty() {
        return Ok(());
    }
    let mut by_file: std::collections::BTreeMap<&str, (usize, usize, Vec<u32>)> = Default::default();
    for l in &profile.coverage.lines {
        let entry = by_file.entry(profile.sources.file(l.at)).or_default();
        entry.1 += 1;
        if l.hits > 0 {
            entry.0 += 1;
        } else {
            entry.2.push(l.at.line);
        }
    }
    writeln!(out, "\nLine coverage (every method of the assemblies that ran code):")?;
    let mut never = Vec::new();
    for (file, (ran, all, missed)) in &by_file {
        let share = *ran as f64 * 100.0 / *all as f64;
        writeln!(out, "  {share:>5.1}%  {ran} of {all}  {}", Clean(file))?;
        let short = file.rsplit(['/', '\\']).next().unwrap_or(file);
        let mut missed = missed.clone();
        missed.sort_unstable();
        missed.dedup();
        never.extend(missed.into_iter().map(|line| format!("{short}:{line}")));
    }
    if !never.is_empty() {
        writeln!(out, "  never ran:")?;
        for place in never.iter().take(NEVER_LISTED) {
            writeln!(out, "    {}", Clean(place))?;
        }
        if never.len() > NEVER_LISTED {
            writeln!(out, "    … and {} more (sonde report --format json: `coverage`)", never.len() - NEVER_LISTED)?;
        }
    }
    Ok(())
}

/// Function coverage (instrumented native code): per file, how many of its functions ran, and
/// the ones that never did (the first [`NEVER_LISTED`]; the JSON's `coverage` lists them all).
fn coverage(out: &mut impl Write, view: &View) -> io::Result<()> {
    line_coverage(out, view)?;
    let functions = view.profile.function_coverage();
    if functions.is_empty() {
        return Ok(());
    }
    writeln!(out, "\nFunction coverage (instrumented functions that ran at least once):")?;
    let mut never = Vec::new();
    for module in functions.chunk_by(|a, b| a.module == b.module) {
        let ran = module.iter().filter(|f| f.calls > 0).count();
        let share = ran as f64 * 100.0 / module.len() as f64;
        writeln!(out, "  {:>5.1}%  {ran} of {}  {}", share, module.len(), Clean(module[0].module))?;
        never.extend(module.iter().filter(|f| f.calls == 0));
    }
    if !never.is_empty() {
        writeln!(out, "  never called:")?;
        for f in never.iter().take(NEVER_LISTED) {
            writeln!(out, "    {}", Clean(&f.display_name()))?;
        }
        if never.len() > NEVER_LISTED {
            writeln!(out, "    … and {} more (sonde report --format json: `coverage`)", never.len() - NEVER_LISTED)?;
        }
    }
    Ok(())
}

fn hot_path_section(out: &mut impl Write, view: &View) -> io::Result<()> {
    let path = hot_path(view.profile);
    if path.is_empty() {
        return Ok(());
    }
    let nodes = &view.profile.nodes;
    writeln!(out)?;
    writeln!(out, "Hot path (from the heaviest thread root, each step holding at least half of its caller)")?;
    writeln!(out, "{:>7}  {:>10}  method", "total %", "total")?;
    // A recursive method is one line, not one line per frame: the chain can be thousands deep.
    let whole = view.whole();
    for run in path.chunk_by(|&a, &b| nodes[a as usize].method == nodes[b as usize].method) {
        let node = &nodes[run[0] as usize];
        let depth = if run.len() > 1 { format!("  (recursive, {} frames)", run.len()) } else { String::new() };
        writeln!(
            out,
            "{:>7}  {:>10}  {}{depth}",
            percent(view.measure(node.total_ns, node.total_samples), whole),
            view.amount(node.total_ns, node.total_samples),
            view.name(node.method),
        )?;
    }
    Ok(())
}
