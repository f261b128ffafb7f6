//! `--format pprof`: a gzip-compressed `perftools.profiles.Profile` (google/pprof's
//! `proto/profile.proto`), read by `go tool pprof`, Pyroscope, Grafana, Polar Signals and
//! others.
//!
//! * Sample types say what they are: `samples/count` and `cpu/nanoseconds` for sampling (the
//!   time is the node's self time, or samples × interval when the profile has none), and
//!   `calls/count` and `wall/nanoseconds` for tracing. The time type is the default. Where the
//!   profile has them, the runtime's events follow, as Go names them: `alloc_objects/count` and
//!   `alloc_space/bytes` (allocations, estimated), `delay/nanoseconds` (lock contention), and
//!   `exceptions/count` (thrown) — each with the node innermost, like the times.
//! * One sample per call-tree node whose values are not all zero, with the node's own (self)
//!   figures and its stack as location ids, leaf first, as pprof wants.
//! * One location and one function per method that occurs in a sample (both with id = method
//!   id + 1; 0 is not a valid id): function name = method name, system name = name and
//!   signature, file name = module. .NET gives no addresses or line numbers here, so locations
//!   have neither and there are no mappings.
//! * Stacks keep at most [`MAX_STACK_FRAMES`] frames, as in the other stack formats: each
//!   subtree below that depth is one sample, with the subtree's summed values and a last
//!   (leaf) frame `[… N frames cut]` (`N`: the most frames a stack lost there; its location and
//!   function come after the methods'), and a comment says so. A sample lists its whole stack,
//!   so without the cut a recursion 50,000 deep would take 1.25 billion location ids.
//! * A profile whose samples would list more than [`MAX_PPROF_LOCATION_IDS`] location ids in
//!   all is refused with an error before anything is written.
//! * A `thread` string label on every sample (`4250 (Worker)`: OS id and managed name), so `-tagfocus` and
//!   Pyroscope's label filters can split by thread.
//! * `time_nanos` from the run's start, `duration_nanos` = its wall time, comments with the
//!   command, runtime and mode (`go tool pprof -comments`).
//!
//! Values are `int64` in the format; larger ones saturate at `i64::MAX`.
//!
//! # Streaming
//!
//! Parsers merge concatenated serializations of a message (repeated fields append), so the
//! profile is written as a sequence of partial `Profile` messages: the header fields, then
//! samples in batches as the tree is walked, then locations, functions and finally the string
//! table, whose strings were interned in a hash map along the way. Memory stays bounded by the
//! number of methods and threads, not nodes. The messages are derived by hand with
//! `prost::Message`, only the fields used, with the tags of `profile.proto`.

use std::collections::HashMap;
use std::io::{self, BufWriter, Write};

use flate2::Compression;
use flate2::write::GzEncoder;
use prost::Message;
use sonde_profile::{AllocSampling, CallTree, Mode, NodeEvents, Profile};

use crate::Renderer;
use crate::fmt::command_line;
use crate::stacks::{MAX_STACK_FRAMES, Stack, cut_frame_name, subtree, thread_id, too_large, walk};

/// The most location ids all samples together may list (100 million): about 150 MB of
/// protobuf before compression, and 800 MB of pointers once `go tool pprof` has read it. With
/// stacks cut at [`MAX_STACK_FRAMES`] only a profile with very many very deep stacks comes
/// near it.
pub const MAX_PPROF_LOCATION_IDS: u64 = 100_000_000;

/// Renders gzip-compressed `profile.proto`: every sample type the profile has, or one
/// [`PprofSeries`] alone.
#[derive(Debug, Clone, Copy, Default)]
pub struct PprofRenderer {
    pub series: PprofSeries,
}

/// What one pprof carries. `All` is `--format pprof`: the time and every event column, under Go's
/// names. The others are the profile types a continuous profiler pushes apart (`sonde record
/// --push`), named as Grafana's own .NET profiler names them, so that Pyroscope and Grafana
/// show them as they show its profiles: `process_cpu` (`samples/count`, `cpu/nanoseconds`),
/// `memory` (`alloc_samples/count`, `alloc_size/bytes`), `lock` (`lock_time/nanoseconds`: the
/// runtime reports how long a contended lock was waited for, not a count per stack) and
/// `exception` (`exception/count`, thrown).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum PprofSeries {
    #[default]
    All,
    Cpu,
    Allocations,
    Contention,
    Exceptions,
}

impl PprofSeries {
    /// The series pushed apart, CPU first.
    pub const PUSHED: [PprofSeries; 4] =
        [PprofSeries::Cpu, PprofSeries::Allocations, PprofSeries::Contention, PprofSeries::Exceptions];

    /// The profile's name in Pyroscope (its `__name__` label).
    pub fn pyroscope_name(self) -> &'static str {
        match self {
            PprofSeries::All | PprofSeries::Cpu => "process_cpu",
            PprofSeries::Allocations => "memory",
            PprofSeries::Contention => "lock",
            PprofSeries::Exceptions => "exception",
        }
    }

    /// The columns of [`Values`] this series carries, with their sample types, and the period type.
    fn columns(self, mode: Mode) -> Columns {
        let time = match mode {
            Mode::Sampling => vec![(0, "samples", "count"), (1, "cpu", "nanoseconds")],
            Mode::Tracing | Mode::Coverage => vec![(0, "calls", "count"), (1, "wall", "nanoseconds")],
        };
        let period = match mode {
            Mode::Sampling => ("cpu", "nanoseconds"),
            // Tracing sees every call: one call per count.
            Mode::Tracing | Mode::Coverage => ("calls", "count"),
        };
        let (columns, period) = match self {
            PprofSeries::All => (time.into_iter().chain(EVENT_TYPES).collect(), period),
            PprofSeries::Cpu => (time, period),
            PprofSeries::Allocations => {
                (vec![(2, "alloc_samples", "count"), (3, "alloc_size", "bytes")], ("space", "bytes"))
            }
            PprofSeries::Contention => (vec![(4, "lock_time", "nanoseconds")], period),
            PprofSeries::Exceptions => (vec![(5, "exception", "count")], period),
        };
        Columns { columns, period }
    }
}

/// `perftools.profiles.Profile`, fields as numbered in `profile.proto`.
#[derive(Clone, PartialEq, Message)]
struct ProfileProto {
    #[prost(message, repeated, tag = "1")]
    sample_type: Vec<ValueType>,
    #[prost(message, repeated, tag = "2")]
    sample: Vec<Sample>,
    #[prost(message, repeated, tag = "4")]
    location: Vec<Location>,
    #[prost(message, repeated, tag = "5")]
    function: Vec<Function>,
    #[prost(string, repeated, tag = "6")]
    string_table: Vec<String>,
    #[prost(int64, tag = "9")]
    time_nanos: i64,
    #[prost(int64, tag = "10")]
    duration_nanos: i64,
    #[prost(message, optional, tag = "11")]
    period_type: Option<ValueType>,
    #[prost(int64, tag = "12")]
    period: i64,
    #[prost(int64, repeated, tag = "13")]
    comment: Vec<i64>,
    #[prost(int64, tag = "14")]
    default_sample_type: i64,
}

#[derive(Clone, PartialEq, Message)]
struct ValueType {
    #[prost(int64, tag = "1")]
    r#type: i64,
    #[prost(int64, tag = "2")]
    unit: i64,
}

#[derive(Clone, PartialEq, Message)]
struct Sample {
    #[prost(uint64, repeated, tag = "1")]
    location_id: Vec<u64>,
    #[prost(int64, repeated, tag = "2")]
    value: Vec<i64>,
    #[prost(message, repeated, tag = "3")]
    label: Vec<Label>,
}

#[derive(Clone, PartialEq, Message)]
struct Label {
    #[prost(int64, tag = "1")]
    key: i64,
    #[prost(int64, tag = "2")]
    str: i64,
}

#[derive(Clone, PartialEq, Message)]
struct Location {
    #[prost(uint64, tag = "1")]
    id: u64,
    #[prost(message, repeated, tag = "4")]
    line: Vec<Line>,
}

#[derive(Clone, PartialEq, Message)]
struct Line {
    #[prost(uint64, tag = "1")]
    function_id: u64,
    /// 0 where the line is not known (every frame but a sample's innermost, see [`line_split`]).
    #[prost(int64, tag = "2")]
    line: i64,
}

#[derive(Clone, PartialEq, Message)]
struct Function {
    #[prost(uint64, tag = "1")]
    id: u64,
    #[prost(int64, tag = "2")]
    name: i64,
    #[prost(int64, tag = "3")]
    system_name: i64,
    #[prost(int64, tag = "4")]
    filename: i64,
    #[prost(int64, tag = "5")]
    start_line: i64,
}

/// The string table: index 0 is `""`, as the format requires.
struct Strings {
    index: HashMap<String, i64>,
    table: Vec<String>,
}

impl Strings {
    fn new() -> Strings {
        let mut strings = Strings { index: HashMap::new(), table: Vec::new() };
        strings.intern("");
        strings
    }

    fn intern(&mut self, s: &str) -> i64 {
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        let i = self.table.len() as i64;
        self.index.insert(s.to_owned(), i);
        self.table.push(s.to_owned());
        i
    }

    fn value_type(&mut self, r#type: &str, unit: &str) -> ValueType {
        ValueType { r#type: self.intern(r#type), unit: self.intern(unit) }
    }
}

/// Samples per partial message: large enough to amortise the calls, small enough to stay tiny.
const BATCH: usize = 1024;

impl Renderer for PprofRenderer {
    fn render(&self, profile: &Profile, out: &mut dyn Write) -> io::Result<()> {
        crate::check(profile)?;
        let run = &profile.run;
        let tree = CallTree::new(profile);
        // Counted before a byte is written, so that a refusal leaves no partial file.
        let (mut location_ids, mut cut) = (0u64, false);
        let columns = Columns::of(profile, self.series);
        for_each_sample(profile, &tree, |node, value, stack, cut_frames| {
            // A sample split by line repeats its stack once per line.
            let copies = if cut_frames.is_none() { 1 + line_split(profile, node, &value).len() as u64 } else { 1 };
            location_ids += (stack.len() as u64 + u64::from(cut_frames.is_some())) * copies;
            cut |= cut_frames.is_some();
            Ok(())
        })?;
        if location_ids > MAX_PPROF_LOCATION_IDS {
            return Err(too_large("pprof", location_ids, MAX_PPROF_LOCATION_IDS, "location ids"));
        }
        let mut strings = Strings::new();
        // The time where there is one, else the series' last value (its size, or its count).
        let default = columns.columns.get(1).or(columns.columns.last()).map_or("", |c| c.1);
        let mut header = ProfileProto {
            sample_type: columns.columns.iter().map(|&(_, r#type, unit)| strings.value_type(r#type, unit)).collect(),
            period_type: Some(strings.value_type(columns.period.0, columns.period.1)),
            period: match (self.series, run.mode) {
                (PprofSeries::Allocations, _) => 0,
                (_, Mode::Sampling) => int(run.sample_interval_ns),
                (_, Mode::Tracing | Mode::Coverage) => 1,
            },
            default_sample_type: strings.intern(default),
            ..ProfileProto::default()
        };
        header.time_nanos = int(run.started_unix_ms.saturating_mul(1_000_000));
        header.duration_nanos = int(run.wall_ns);
        let mode = match run.timing {
            Some(timing) => format!("mode: {} ({} timing)", run.mode.as_str(), timing.as_str()),
            None => format!("mode: {}", run.mode.as_str()),
        };
        let mut comments = vec![
            format!("command: {}", command_line(&run.command)),
            format!("runtime: {} {}", run.runtime.kind, run.runtime.version),
            mode,
            format!("recorded by sonde agent {}", run.agent_version),
        ];
        if cut {
            comments.push(format!(
                "stacks deeper than {MAX_STACK_FRAMES} frames are cut: a \"{}\" frame stands for the rest",
                cut_frame_name("N")
            ));
        }
        header.comment = comments.iter().map(|c| strings.intern(c)).collect();

        // Level 1: on a million-node profile it is more than twice as fast as the default
        // level for a file about a tenth larger.
        let mut out = BufWriter::new(GzEncoder::new(out, Compression::fast()));
        let mut buf = Vec::new();
        let mut write = |out: &mut BufWriter<GzEncoder<&mut dyn Write>>, part: &ProfileProto| {
            buf.clear();
            part.encode(&mut buf).map_err(|e| io::Error::other(e.to_string()))?;
            out.write_all(&buf)
        };
        write(&mut out, &header)?;

        let thread_key = strings.intern("thread");
        let thread_names: Vec<i64> =
            (0..profile.threads.len()).map(|t| strings.intern(&thread_id(profile, t))).collect();
        let mut used = vec![false; profile.methods.len()];
        // The cut markers' names by frames cut, and their location (= function) ids, which
        // follow the methods'.
        let mut markers: HashMap<u32, u64> = HashMap::new();
        let mut marker_names: Vec<String> = Vec::new();
        let mut part = ProfileProto::default();
        // (method, line) → location id, for samples split by the line of their innermost frame.
        let mut line_locations: HashMap<(u32, u32), u64> = HashMap::new();
        for_each_sample(profile, &tree, |node, value, stack, cut_frames| {
            if !columns.any(&value) {
                return Ok(()); // nothing for this pprof's series
            }
            for &m in stack {
                used[m as usize] = true;
            }
            let mut location_id = Vec::with_capacity(stack.len() + 1);
            if let Some(frames) = cut_frames {
                location_id.push(*markers.entry(frames).or_insert_with(|| {
                    marker_names.push(cut_frame_name(frames));
                    (profile.methods.len() + marker_names.len()) as u64
                }));
            }
            location_id.extend(stack.iter().rev().map(|&m| u64::from(m) + 1));
            let label =
                vec![Label { key: thread_key, str: thread_names[profile.nodes[node as usize].thread as usize] }];
            let mut rest = value;
            if cut_frames.is_none() {
                for (line, values) in line_split(profile, node, &value) {
                    let method = profile.nodes[node as usize].method;
                    let next = LINE_LOCATIONS + line_locations.len() as u64;
                    let id = *line_locations.entry((method, line)).or_insert(next);
                    let mut ids = location_id.clone();
                    ids[0] = id;
                    for (r, v) in rest.iter_mut().zip(values) {
                        *r -= v;
                    }
                    if columns.any(&values) {
                        part.sample.push(Sample {
                            location_id: ids,
                            value: columns.values(&values),
                            label: label.clone(),
                        });
                    }
                }
            }
            if columns.any(&rest) {
                part.sample.push(Sample { location_id, value: columns.values(&rest), label });
            }
            if part.sample.len() >= BATCH {
                write(&mut out, &part)?;
                part.sample.clear();
            }
            Ok(())
        })?;
        write(&mut out, &part)?;
        part.sample.clear();

        // The name reports show; the system name is the compiler's, with its signature; the file
        // is the method's source file and its start line when its symbols said, else its module.
        let methods = profile.methods.iter().enumerate().filter(|&(m, _)| used[m]).map(|(m, method)| {
            let shown = profile.display_name(m as u32);
            let at = profile.sources.method_line(m as u32);
            let file = at.map_or(method.module.as_str(), |at| profile.sources.file(at));
            let line = at.map_or(0, |at| i64::from(at.line));
            (m as u64 + 1, shown, format!("{}{}", method.name, method.signature), file, line)
        });
        let cut_markers = marker_names
            .iter()
            .enumerate()
            .map(|(i, name)| ((profile.methods.len() + 1 + i) as u64, name.as_str().into(), name.clone(), "", 0));
        let mut by_line: Vec<(&(u32, u32), &u64)> = line_locations.iter().collect();
        by_line.sort_unstable_by_key(|&(_, &id)| id);
        for (&(method, line), &id) in by_line {
            part.location
                .push(Location { id, line: vec![Line { function_id: u64::from(method) + 1, line: i64::from(line) }] });
        }
        for (id, name, system_name, file, start_line) in methods.chain(cut_markers) {
            part.location.push(Location { id, line: vec![Line { function_id: id, line: 0 }] });
            part.function.push(Function {
                id,
                name: strings.intern(&name),
                system_name: strings.intern(&system_name),
                filename: strings.intern(file),
                start_line,
            });
            if part.function.len() == BATCH {
                write(&mut out, &part)?;
                part.location.clear();
                part.function.clear();
            }
        }
        write(&mut out, &part)?;
        part.location.clear();
        part.function.clear();

        for chunk in strings.table.chunks(BATCH) {
            part.string_table = chunk.to_vec();
            write(&mut out, &part)?;
        }
        out.into_inner().map_err(io::IntoInnerError::into_error)?.finish()?.flush()
    }
}

/// Calls `visit(node, values, stack, cut)` for every sample, in depth-first order: each node at
/// most [`MAX_STACK_FRAMES`] deep whose values are not all zero, with its own values and its
/// stack (method ids, root first, `cut` = `None`), and each subtree below that depth whose
/// summed values are not all zero, with those sums, the stack above it and `cut` = the most
/// frames a stack lost there. `node` says which thread the sample is on.
fn for_each_sample(
    profile: &Profile,
    tree: &CallTree,
    mut visit: impl FnMut(u32, Values, &[u32], Option<u32>) -> io::Result<()>,
) -> io::Result<()> {
    let run = &profile.run;
    let values = |id: u32| {
        let node = &profile.nodes[id as usize];
        let [count, time] = match run.mode {
            Mode::Sampling => {
                let ns = match node.self_ns {
                    0 => run.sample_interval_ns.saturating_mul(node.self_samples),
                    ns => ns,
                };
                [node.self_samples, ns]
            }
            Mode::Tracing | Mode::Coverage => [node.calls, node.self_ns],
        };
        let e = profile.events.node(id).copied().unwrap_or_default();
        values_of(count, time, &e)
    };
    walk(profile, tree, tree.roots(), |stack| match stack {
        Stack::Whole { node, methods } => {
            let value = values(node);
            if value == ZERO { Ok(()) } else { visit(node, value, methods, None) }
        }
        Stack::Cut { node, above } => {
            let (mut sum, mut below) = (ZERO, 0);
            subtree(tree, node, |n, depth| {
                for (s, v) in sum.iter_mut().zip(values(n)) {
                    *s = s.saturating_add(v);
                }
                below = below.max(depth);
            });
            if sum == ZERO { Ok(()) } else { visit(node, sum, above, Some(below + 1)) }
        }
    })
}

/// Location ids of (method, line) locations start here, clear of the methods' and the cut
/// markers' ids.
const LINE_LOCATIONS: u64 = 1 << 40;

/// Node `node`'s own samples split by the line its method was at (sampling mode, where the
/// profile has the node's lines): `(line, values)` per line — the samples and their share of the
/// time; the events stay with the rest of the node's values. Only lines of the file the
/// method's function names (pprof's `Line` has no file of its own).
fn line_split(profile: &Profile, node: u32, value: &Values) -> Vec<(u32, Values)> {
    let lines = profile.sources.lines_of_node(node);
    let (samples, time) = (value[0], value[1]);
    if lines.is_empty() || profile.run.mode != Mode::Sampling || samples == 0 {
        return Vec::new();
    }
    let method = profile.nodes[node as usize].method;
    let Some(file) = profile.sources.method_line(method).map(|at| at.file) else { return Vec::new() };
    let mut left = samples;
    lines
        .iter()
        .filter(|l| l.at.file == file && l.samples > 0)
        .map_while(|l| {
            let n = l.samples.min(left);
            left -= n;
            let ns = u64::try_from(u128::from(time) * u128::from(n) / u128::from(samples)).unwrap_or(u64::MAX);
            (n > 0).then_some((l.at.line, [n, ns, 0, 0, 0, 0]))
        })
        .collect()
}

/// A sample's values: count and time (calls or samples; wall or CPU time), then the runtime's
/// events with the node innermost: objects and bytes allocated, lock wait, exceptions thrown.
type Values = [u64; 6];
const ZERO: Values = [0; 6];

/// The event columns of [`Values`] and their pprof sample types (Go's names for allocations
/// and lock delay, so `go tool pprof -sample_index=alloc_space` works as for a Go heap profile).
const EVENT_TYPES: [(usize, &str, &str); 4] = [
    (2, "alloc_objects", "count"),
    (3, "alloc_space", "bytes"),
    (4, "delay", "nanoseconds"),
    (5, "exceptions", "count"),
];

/// Which columns of [`Values`] a profile's samples carry, with their sample types, and the period
/// type: for [`PprofSeries::All`], count and time always and an event column when the profile has
/// any of it; for one series, its own.
struct Columns {
    /// (column, sample type, unit)
    columns: Vec<(usize, &'static str, &'static str)>,
    /// (type, unit)
    period: (&'static str, &'static str),
}

impl Columns {
    fn of(profile: &Profile, series: PprofSeries) -> Columns {
        let mut columns = series.columns(profile.run.mode);
        if series == PprofSeries::All {
            let events = &profile.events;
            let alloc =
                events.allocations.sampling != AllocSampling::Off || events.nodes.iter().any(|e| e.alloc_bytes > 0);
            let wait = events.nodes.iter().any(|e| e.wait_ns > 0);
            let thrown = events.nodes.iter().any(|e| e.exceptions_thrown > 0);
            columns.columns.retain(|&(c, _, _)| match c {
                2 | 3 => alloc,
                4 => wait,
                5 => thrown,
                _ => true,
            });
        }
        columns
    }

    fn values(&self, values: &Values) -> Vec<i64> {
        self.columns.iter().map(|&(c, _, _)| int(values[c])).collect()
    }

    /// A sample with these values has something to say in this pprof.
    fn any(&self, values: &Values) -> bool {
        self.columns.iter().any(|&(c, _, _)| values[c] != 0)
    }
}

/// Whether `profile` has anything for `series` (CPU: always).
pub fn has_series(profile: &Profile, series: PprofSeries) -> bool {
    let columns = series.columns(profile.run.mode);
    matches!(series, PprofSeries::All | PprofSeries::Cpu)
        || profile.events.nodes.iter().any(|e| columns.any(&values_of(0, 0, e)))
}

/// A node's [`Values`]: its count and time, then its events.
fn values_of(count: u64, time: u64, e: &NodeEvents) -> Values {
    [count, time, e.alloc_count, e.alloc_bytes, e.wait_ns, e.exceptions_thrown]
}

/// `profile.proto` counts in `int64`.
fn int(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}
