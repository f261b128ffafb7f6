//! `--format speedscope`: speedscope's file format
//! (<https://www.speedscope.app/file-format-schema.json>), opened by dropping the file on
//! speedscope.app or with `speedscope FILE` from its npm package.
//!
//! * One shared frame per method (frame index = method id): the method name, and its module as
//!   the `file` speedscope shows in the tooltip.
//! * Profiles of type `"evented"`: each call-tree node opens its frame (an `O` event) and
//!   closes it (a `C` event) once, so the file is linear in the tree however deep it is.
//!   Time is the node's weight: self time in nanoseconds for tracing, self samples (unit
//!   `"none"`) for sampling. A node opens at `t` and spends its own weight first; its
//!   children follow one after another in node order, and it closes when the last one has.
//!   So the span from a node's open event to its first child's is its self weight, the span
//!   to its close event its total, and speedscope's "left heavy" and "sandwich" views are
//!   exact. The "time order" view shows the call tree in node order (a tracing profile keeps
//!   no timeline).
//!   Subtrees that weigh nothing are left out: speedscope would only show them empty.
//!   (The `"sampled"` type would list every stack in full, which grows with the square of the
//!   depth: 5 GB for a recursion 50,000 deep.)
//! * Stacks keep at most [`MAX_STACK_FRAMES`] frames, as in the other stack formats: each
//!   subtree below that depth is one `[… N frames cut]` frame as long as the subtree's weight
//!   (`N`: the most frames a stack lost there; these frames follow the methods' in the frame
//!   list). The file would be linear without the cut, but speedscope (1.25) cannot open it:
//!   it sorts its call tree recursively and runs out of JavaScript stack between 5,000 and
//!   10,000 frames deep, whichever profile type it reads.
//! * The first profile merges all threads, their trees one after another, and is the one
//!   opened (`activeProfileIndex` 0); one profile per thread follows, named
//!   `thread <os tid> (<managed name>)`. Threads without any weight are left out.
//! * Where the profile has them, the runtime's events follow as profiles of all threads, each
//!   weighted by the event with the node innermost: `allocated bytes, all threads` (unit
//!   `bytes`) and `lock contention (wait), all threads` (unit `nanoseconds`).
//!
//! Written by hand rather than through serde so that events stream: nothing is built per node
//! except its subtree's weight. Every event and frame starts a line, which keeps goldens
//! diffable.

use std::collections::{BTreeMap, HashMap};
use std::io::{self, BufWriter, Write};

use sonde_profile::{CallTree, Mode, Profile};

use crate::Renderer;
use crate::fmt::command_line;
use crate::stacks::{MAX_STACK_FRAMES, cut_frame_name, roots_by_thread, self_weight, thread_label};

/// The `$schema` value speedscope recognises its files by.
const SCHEMA: &str = "https://www.speedscope.app/file-format-schema.json";

/// Renders speedscope's JSON file format.
#[derive(Debug, Clone, Copy, Default)]
pub struct SpeedscopeRenderer;

impl Renderer for SpeedscopeRenderer {
    fn render(&self, profile: &Profile, out: &mut dyn Write) -> io::Result<()> {
        crate::check(profile)?;
        let mode = profile.run.mode;
        let tree = CallTree::new(profile);
        let inclusive = |self_of: &dyn Fn(usize) -> u64| {
            let mut weight: Vec<u64> = (0..profile.nodes.len()).map(self_of).collect();
            for (i, node) in profile.nodes.iter().enumerate().rev() {
                if let Some(p) = node.parent {
                    weight[p as usize] = weight[p as usize].saturating_add(weight[i]);
                }
            }
            weight
        };
        let time = |i: usize| self_weight(mode, &profile.nodes[i]);
        let events = |i: usize| profile.events.node(i as u32).copied().unwrap_or_default();
        let allocated = |i: usize| events(i).alloc_bytes;
        let waited = |i: usize| events(i).wait_ns;
        let weight = inclusive(&time);
        let alloc_weight = inclusive(&allocated);
        let wait_weight = inclusive(&waited);
        let roots = roots_by_thread(profile, &tree);
        let thread_weight =
            |thread: usize| roots[thread].iter().fold(0u64, |sum, &r| sum.saturating_add(weight[r as usize]));
        // Cut markers for every node a profile shows: time, allocations or waits.
        let any: Vec<u64> =
            (0..profile.nodes.len()).map(|i| weight[i].max(alloc_weight[i]).max(wait_weight[i])).collect();
        let markers = cut_markers(profile, &any);

        let mut out = BufWriter::new(out);
        write!(out, "{{\"$schema\":\"{SCHEMA}\",\n\"name\":")?;
        string(&mut out, &format!("Sonde: {}", command_line(&profile.run.command)))?;
        write!(out, ",\n\"exporter\":\"sonde\",\n\"activeProfileIndex\":0,\n\"shared\":{{\"frames\":[")?;
        let marker_names: Vec<String> = markers.frames_cut.iter().map(|&frames| cut_frame_name(frames)).collect();
        // A frame's file is the method's source file and its line where the method starts, when
        // its symbols said; else the file is its module.
        let methods = profile.methods.iter().enumerate().map(|(m, method)| {
            let at = profile.sources.method_line(m as u32);
            let file = at.map_or(method.module.as_str(), |at| profile.sources.file(at));
            (profile.display_name(m as u32), file, at.map(|at| at.line))
        });
        let cut = marker_names.iter().map(|n| (n.as_str().into(), "", None));
        for (i, (name, file, line)) in methods.chain(cut).enumerate() {
            out.write_all(if i == 0 { b"\n" } else { b",\n" })?;
            out.write_all(b"{\"name\":")?;
            string(&mut out, &name)?;
            if !file.is_empty() {
                out.write_all(b",\"file\":")?;
                string(&mut out, file)?;
            }
            if let Some(line) = line {
                write!(out, ",\"line\":{line}")?;
            }
            out.write_all(b"}")?;
        }
        out.write_all(b"]},\n\"profiles\":[")?;
        let unit = match mode {
            Mode::Tracing | Mode::Coverage => "nanoseconds",
            Mode::Sampling => "none",
        };
        let stacks = Stacks { profile, tree: &tree, weight: &weight, self_of: &time, unit, markers: &markers };
        write_profile(&mut out, &stacks, "all threads", tree.roots())?;
        for (thread, roots) in roots.iter().enumerate() {
            if thread_weight(thread) > 0 {
                out.write_all(b",")?;
                write_profile(&mut out, &stacks, &thread_label(profile, thread), roots)?;
            }
        }
        // The runtime's events, all threads, each a profile of its own.
        let total = |weight: &[u64]| tree.roots().iter().fold(0u64, |sum, &r| sum.saturating_add(weight[r as usize]));
        if total(&alloc_weight) > 0 {
            out.write_all(b",")?;
            let stacks = Stacks { weight: &alloc_weight, self_of: &allocated, unit: "bytes", ..stacks };
            write_profile(&mut out, &stacks, "allocated bytes, all threads", tree.roots())?;
        }
        if total(&wait_weight) > 0 {
            out.write_all(b",")?;
            let stacks = Stacks { weight: &wait_weight, self_of: &waited, unit: "nanoseconds", ..stacks };
            write_profile(&mut out, &stacks, "lock contention (wait), all threads", tree.roots())?;
        }
        out.write_all(b"]}\n")?;
        out.flush()
    }
}

/// The cut markers' frames: which frames they stand for (in frame order, after the methods'),
/// and the frame index of each cut node, the root of a subtree below [`MAX_STACK_FRAMES`].
/// Only subtrees with weight get a marker.
struct Markers {
    frames_cut: Vec<u32>,
    frame_of_node: HashMap<u32, usize>,
}

fn cut_markers(profile: &Profile, weight: &[u64]) -> Markers {
    let mut depth: Vec<u32> = Vec::with_capacity(profile.nodes.len());
    for node in &profile.nodes {
        depth.push(node.parent.map_or(1, |p| depth[p as usize].saturating_add(1)));
    }
    // Below each node deeper than MAX_STACK_FRAMES, the most frames a stack goes deeper still,
    // carried up backwards (children follow parents) to the cut nodes.
    let mut below = vec![0u32; profile.nodes.len()];
    let mut cut: Vec<(u32, u32)> = Vec::new();
    for (i, node) in profile.nodes.iter().enumerate().rev() {
        match node.parent {
            Some(p) if depth[i] > MAX_STACK_FRAMES + 1 => below[p as usize] = below[p as usize].max(below[i] + 1),
            _ if depth[i] == MAX_STACK_FRAMES + 1 && weight[i] > 0 => cut.push((i as u32, below[i] + 1)),
            _ => {}
        }
    }
    let mut index: BTreeMap<u32, usize> = cut.iter().map(|&(_, frames)| (frames, 0)).collect();
    for (k, frame) in index.values_mut().enumerate() {
        *frame = profile.methods.len() + k;
    }
    Markers {
        frames_cut: index.keys().copied().collect(),
        frame_of_node: cut.iter().map(|&(node, frames)| (node, index[&frames])).collect(),
    }
}

/// What a profile of the file is written from: the tree, and one weight of its nodes (time, or
/// one of the runtime's events).
#[derive(Clone, Copy)]
struct Stacks<'a> {
    profile: &'a Profile,
    tree: &'a CallTree,
    /// Each node's weight with its descendants'.
    weight: &'a [u64],
    /// Each node's own weight.
    self_of: &'a dyn Fn(usize) -> u64,
    /// speedscope's unit of the weight.
    unit: &'a str,
    markers: &'a Markers,
}

/// One evented profile over the trees under `roots`.
fn write_profile(out: &mut impl Write, stacks: &Stacks<'_>, name: &str, roots: &[u32]) -> io::Result<()> {
    let Stacks { profile, tree, weight, self_of, unit, markers } = *stacks;
    out.write_all(b"\n{\"type\":\"evented\",\"name\":")?;
    string(out, name)?;
    write!(out, ",\"unit\":\"{unit}\",\"startValue\":0,\n\"events\":[")?;
    // Depth-first with an explicit stack (deep recursion cannot overflow ours): a node's open
    // event, then its own weight, then its children, then its close event. Times only grow
    // (saturating), so the events stay in order even on absurd weights.
    enum Step {
        /// A node and how many frames its stack has.
        Open(u32, u32),
        Close(usize),
    }
    let mut at = 0u64;
    let mut first = true;
    let mut event = |out: &mut dyn Write, kind: char, frame: usize, at: u64| {
        out.write_all(if first { b"\n" } else { b",\n" })?;
        first = false;
        write!(out, "{{\"type\":\"{kind}\",\"frame\":{frame},\"at\":{at}}}")
    };
    let mut pending: Vec<Step> = roots.iter().rev().map(|&r| Step::Open(r, 1)).collect();
    while let Some(step) = pending.pop() {
        match step {
            Step::Open(node, _) if weight[node as usize] == 0 => {}
            Step::Open(node, depth) if depth > MAX_STACK_FRAMES => {
                // The whole subtree is one marker frame.
                let frame = markers.frame_of_node[&node];
                event(out, 'O', frame, at)?;
                at = at.saturating_add(weight[node as usize]);
                event(out, 'C', frame, at)?;
            }
            Step::Open(node, depth) => {
                let frame = profile.nodes[node as usize].method as usize;
                event(out, 'O', frame, at)?;
                at = at.saturating_add(self_of(node as usize));
                pending.push(Step::Close(frame));
                pending.extend(tree.children(node).iter().rev().map(|&c| Step::Open(c, depth + 1)));
            }
            Step::Close(frame) => event(out, 'C', frame, at)?,
        }
    }
    write!(out, "],\n\"endValue\":{at}}}")
}

/// A JSON string literal.
fn string(out: &mut impl Write, s: &str) -> io::Result<()> {
    serde_json::to_writer(&mut *out, s).map_err(io::Error::from)
}
