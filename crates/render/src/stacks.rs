//! Stacks, the shape every export format shares: each call-tree node stands for the stack of
//! methods from its thread's root down to it, weighted by what was measured *in* that node
//! (its self time or self samples). Speedscope, pprof and folded stacks all want exactly that.

use std::io;

use sonde_profile::{CallTree, Mode, Node, Profile};

/// What a stack weighs in the formats that carry one number per stack: self time in
/// nanoseconds for tracing (exact, or estimated with `--timing sampled`), self samples for
/// sampling.
pub(crate) fn self_weight(mode: Mode, node: &Node) -> u64 {
    match mode {
        Mode::Tracing => node.self_ns,
        Mode::Sampling => node.self_samples,
    }
}

/// The unit of [`self_weight`], as a short plural noun.
pub(crate) fn weight_unit(mode: Mode) -> &'static str {
    match mode {
        Mode::Tracing => "ns",
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

/// Depth-first walk over the trees under `roots`, children in node order. For every node,
/// `visit` gets the node id and its stack: the method ids from the root down to the node's own
/// method. The walk uses an explicit stack, so deep recursion in the profile cannot overflow
/// ours, and one path buffer, so no stack is allocated per node.
pub(crate) fn walk(
    profile: &Profile,
    tree: &CallTree,
    roots: &[u32],
    mut visit: impl FnMut(u32, &[u32]) -> io::Result<()>,
) -> io::Result<()> {
    let mut path: Vec<u32> = Vec::new();
    // (node, depth of its parent's frame + 1)
    let mut pending: Vec<(u32, usize)> = roots.iter().rev().map(|&r| (r, 0)).collect();
    while let Some((node, depth)) = pending.pop() {
        path.truncate(depth);
        path.push(profile.nodes[node as usize].method);
        visit(node, &path)?;
        pending.extend(tree.children(node).iter().rev().map(|&c| (c, depth + 1)));
    }
    Ok(())
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
