//! Stacks, the shape every export format shares: each call-tree node stands for the stack of
//! methods from its thread's root down to it, weighted by what was measured *in* that node
//! (its self time or self samples). Speedscope, pprof and folded stacks all want exactly that.
//!
//! # Deep stacks
//!
//! Folded stacks, the SVG flame graph and pprof write every stack out in full, so their size is
//! the sum of the depths of the stacks: a recursion 50,000 calls deep is 50,000 stacks of
//! 25,000 frames on average, over a billion frames. These formats therefore keep the first
//! [`MAX_STACK_FRAMES`] frames of a stack and replace all deeper ones with a single marker
//! frame, named by [`cut_frame_name`], which carries the weight of everything below it. Their
//! output is then at most `nodes × (MAX_STACK_FRAMES + 1)` frames, and each format also checks
//! a byte or id limit of its own before writing anything. Speedscope's evented format opens and
//! closes each frame once, so it is linear in the tree anyway; it is cut the same way because
//! speedscope itself cannot open a tree more than 5,000 to 10,000 frames deep.

use std::io;

use sonde_profile::{CallTree, Mode, Node, Profile};

use crate::fmt::count;

/// The most frames a stack keeps in folded stacks, the flame graph, pprof and speedscope; the
/// deeper frames of a subtree become one `[… N frames cut]` frame, `N` being the most frames a
/// stack lost there, with the subtree's whole weight. Real stacks are far shallower (perf keeps
/// 127 frames by default, Go's profiles 64 to 128); only runaway recursion reaches this.
pub const MAX_STACK_FRAMES: u32 = 1_000;

/// The marker frame that replaces the frames below [`MAX_STACK_FRAMES`]: `frames` is how many
/// the deepest stack under it lost. It is one frame for the whole cut subtree, so its weight is
/// the subtree's and totals are unchanged.
pub(crate) fn cut_frame_name(frames: impl std::fmt::Display) -> String {
    format!("[… {frames} frames cut]")
}

/// A format's output would be over its stated limit: refused before anything is written.
pub(crate) fn too_large(format: &str, size: u64, limit: u64, unit: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::FileTooLarge,
        format!(
            "the {format} export would need {} {unit}, over its limit of {} {unit}: the profile has too many \
             deep stacks for this format (text, json, html and speedscope grow only linearly with it)",
            count(size),
            count(limit),
        ),
    )
}

/// What a stack weighs in the formats that carry one number per stack: self time in
/// nanoseconds for tracing (exact, or estimated with `--timing sampled`), self samples for
/// sampling.
pub(crate) fn self_weight(mode: Mode, node: &Node) -> u64 {
    match mode {
        Mode::Tracing | Mode::Coverage => node.self_ns,
        Mode::Sampling => node.self_samples,
    }
}

/// The unit of [`self_weight`], as a short plural noun.
pub(crate) fn weight_unit(mode: Mode) -> &'static str {
    match mode {
        Mode::Tracing | Mode::Coverage => "ns",
        Mode::Sampling => "samples",
    }
}

/// The roots of each thread's trees, in node order, indexed by thread id.
pub(crate) fn roots_by_thread(profile: &Profile, tree: &CallTree) -> Vec<Vec<u32>> {
    let mut roots = vec![Vec::new(); profile.threads.len()];
    for &root in tree.roots() {
        roots[profile.nodes[root as usize].thread as usize].push(root);
    }
    roots
}

/// One step of [`walk`].
pub(crate) enum Stack<'a> {
    /// A node at most [`MAX_STACK_FRAMES`] deep, with its stack: the method ids from the root
    /// down to the node's own method.
    Whole { node: u32, methods: &'a [u32] },
    /// A node one frame deeper than [`MAX_STACK_FRAMES`], standing for itself and all of its
    /// descendants (see [`subtree`]); `above` is the stack of its parent, `MAX_STACK_FRAMES`
    /// methods long.
    Cut { node: u32, above: &'a [u32] },
}

/// Depth-first walk over the trees under `roots`, children in node order, cut at
/// [`MAX_STACK_FRAMES`]: `visit` gets every node up to that depth, then one [`Stack::Cut`]
/// for each subtree below it. The walk uses an explicit stack, so deep recursion in the profile
/// cannot overflow ours, and one path buffer, so no stack is allocated per node.
pub(crate) fn walk(
    profile: &Profile,
    tree: &CallTree,
    roots: &[u32],
    mut visit: impl FnMut(Stack<'_>) -> io::Result<()>,
) -> io::Result<()> {
    let mut path: Vec<u32> = Vec::new();
    // (node, depth of its parent's frame + 1)
    let mut pending: Vec<(u32, usize)> = roots.iter().rev().map(|&r| (r, 0)).collect();
    while let Some((node, depth)) = pending.pop() {
        path.truncate(depth);
        if depth == MAX_STACK_FRAMES as usize {
            visit(Stack::Cut { node, above: &path })?;
            continue;
        }
        path.push(profile.nodes[node as usize].method);
        visit(Stack::Whole { node, methods: &path })?;
        pending.extend(tree.children(node).iter().rev().map(|&c| (c, depth + 1)));
    }
    Ok(())
}

/// Every node of the subtree under `root` (itself included), with its depth below `root`
/// (0 for `root`), in no particular order.
pub(crate) fn subtree(tree: &CallTree, root: u32, mut visit: impl FnMut(u32, u32)) {
    let mut pending = vec![(root, 0u32)];
    while let Some((node, depth)) = pending.pop() {
        visit(node, depth);
        pending.extend(tree.children(node).iter().map(|&c| (c, depth + 1)));
    }
}

/// How a thread is called in every export: `thread 4250`, or `thread 4250 (Worker)` when it had
/// a managed name.
pub(crate) fn thread_label(profile: &Profile, thread: usize) -> String {
    format!("thread {}", thread_id(profile, thread))
}

/// A thread's OS id, and its managed name when it had one: `4250 (Worker)`.
pub(crate) fn thread_id(profile: &Profile, thread: usize) -> String {
    let t = &profile.threads[thread];
    match &t.name {
        Some(name) => format!("{} ({name})", t.os_tid),
        None => t.os_tid.to_string(),
    }
}
