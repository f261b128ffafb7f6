//! Building snapshots of every thread's call tree (with the methods not sent before).
//!
//! Runs on the IPC thread or the runtime's shutdown thread, never on a profiled thread's hot
//! path. Reading the trees takes no lock that the hooks take: see `calltree` for why that is safe.

use crate::tree::calltree::{NO_METHOD, ROOT};
use crate::tree::clock;
use crate::tree::threads::{self, ThreadState};
use sonde_profile::{CallTrace, LostSamples, NodeEvents, ThreadTrace, TraceEvent};
use sonde_protocol::{HookCost, MethodRecord, NodeRecord, Snapshot, ThreadSnapshot};
use std::collections::HashMap;
use std::sync::atomic::Ordering::Relaxed;

/// What a snapshot needs to know besides the trees.
pub struct SnapshotContext {
    pub seq: u64,
    pub last: bool,
    pub sample_interval_ns: u64,
    /// The exact-timing hook cost in ticks, if it was measured.
    pub hook_cost_ticks: Option<(f64, f64)>,
    pub new_methods: Vec<MethodRecord>,
    /// Sampling mode: include the sampler's counts.
    pub sampling: bool,
    /// Snapshots replaced before they could be sent, so far.
    pub superseded: u64,
    /// List the files mapped executable (see `SnapshotFacts::mapped_files`).
    pub mapped_files: bool,
}

pub fn take(ctx: SnapshotContext) -> Snapshot {
    let ns_per_tick = clock::ns_per_tick();
    let now = clock::ticks();
    // Folding waits until the trees are read (see `threads::listed`).
    let (_folding, threads) = threads::listed();
    let (samples_taken, samples_lost) = if ctx.sampling {
        let (taken, l) = crate::sampling::totals();
        let mut lost = vec![
            ("ring_full", l.ring_full),
            ("unknown_thread", l.unknown_thread),
            ("too_many_threads", l.too_many_threads),
        ];
        if crate::sampling::external() {
            // Only an external sampler (Mono's) walks stacks that can hold no managed frame at all.
            lost.push(("no_managed_frames", l.no_managed_frames));
        } else if crate::sampling::name() == "kernel" {
            // Only the kernel's sampler needs a ring per thread from the kernel.
            lost.push(("no_ring", l.no_ring));
        } else {
            // Only Sonde's own sampling signal can be blocked too long, or taken over by the program.
            lost.push(("signal_blocked", l.signal_blocked));
            lost.push(("signal_taken", l.signal_taken));
        }
        // Stacks of runtime events (allocations, waits, throws) the drain could not keep up with:
        // their counts reach the run's totals, not the tree.
        lost.push(("event_stacks", crate::sampling::event_stacks_lost()));
        (taken, lost.into_iter().map(|(reason, count)| LostSamples { reason: reason.into(), count }).collect())
    } else {
        (0, Vec::new())
    };
    // One look at the events; the protocol carries the later kinds beside `events`.
    let mut events = crate::events::snapshot();
    let (allocations, loading, timeline) = (
        std::mem::take(&mut events.allocations),
        std::mem::take(&mut events.loading),
        std::mem::take(&mut events.timeline),
    );
    let call_trace = call_trace(&threads, ns_per_tick);
    let mut lost = 0;
    let threads = threads
        .iter()
        .map(|t| {
            lost += t.tree.lost.load(Relaxed);
            thread_snapshot(t, now, ns_per_tick)
        })
        .collect();
    let mut snapshot = Snapshot {
        seq: ctx.seq,
        last: ctx.last,
        wall_ns: clock::elapsed_ns(),
        sample_interval_ns: ctx.sample_interval_ns,
        hook_cost: ctx
            .hook_cost_ticks
            .map(|(inner, outer)| HookCost { inner_ns: inner * ns_per_tick, outer_ns: outer * ns_per_tick }),
        new_methods: ctx.new_methods,
        threads,
        lost,
        samples_taken,
        samples_lost,
        superseded: ctx.superseded,
        fatal_signal: crate::signals::aborting().then_some(libc::SIGABRT),
        stacks_walked: super::walk::stacks_walked(),
        events,
        allocations_exact_by_type: allocations.exact_by_type,
        allocations,
        loading,
        timeline,
        call_trace,
        faults: Default::default(),
        coverage: Vec::new(),
        lines: if ctx.sampling { crate::sampling::lines::snapshot() } else { Vec::new() },
        precompiled: Vec::new(),
        mapped_files: if ctx.mapped_files { crate::base::process::executable_files() } else { Vec::new() },
        sampler: if ctx.sampling { crate::sampling::name().to_string() } else { String::new() },
    };
    for contribute in contributions() {
        contribute(&mut snapshot, ctx.last);
    }
    snapshot
}

/// What a part of the agent adds to every snapshot besides the trees and the runtime's events:
/// a backend's coverage counters, the faults injected, the precompiled images that ran
/// untraced. `last`: the final snapshot (a contribution may read what only the end can tell).
/// The snapshot code names none of them: each registers itself ([`contribute`]) when its
/// session sets it up.
pub type Contribution = fn(&mut Snapshot, last: bool);

static CONTRIBUTIONS: std::sync::Mutex<Vec<Contribution>> = std::sync::Mutex::new(Vec::new());

/// Adds `contribution` to every snapshot from now on (once, however often it is registered).
pub fn contribute(contribution: Contribution) {
    let mut all = CONTRIBUTIONS.lock().unwrap_or_else(|e| e.into_inner());
    if !all.iter().any(|&c| std::ptr::fn_addr_eq(c, contribution)) {
        all.push(contribution);
    }
}

/// A new session: no contribution until its parts register theirs.
pub fn reset() {
    CONTRIBUTIONS.lock().unwrap_or_else(|e| e.into_inner()).clear();
}

/// The contributions registered so far (a copy: a contribution may take its own locks).
fn contributions() -> Vec<Contribution> {
    CONTRIBUTIONS.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// The most call-trace events one snapshot carries (about 10 bytes each once encoded): many
/// threads with large rings would otherwise make a snapshot larger than a frame may be.
const MAX_SNAPSHOT_TRACE_EVENTS: usize = 16 << 20;

/// What every thread's call-trace ring holds (`--call-trace`): each thread's latest events, at
/// most an equal share of [`MAX_SNAPSHOT_TRACE_EVENTS`] each (the older ones count as
/// overwritten).
fn call_trace(threads: &[std::sync::Arc<ThreadState>], ns_per_tick: f64) -> CallTrace {
    let size = crate::tree::trace::size();
    if size == 0 {
        return CallTrace::default();
    }
    let rings: Vec<_> = threads.iter().filter_map(|t| Some((t.os_tid, t.trace()?))).collect();
    let share = MAX_SNAPSHOT_TRACE_EVENTS / rings.len().max(1);
    let threads = rings
        .into_iter()
        .map(|(os_tid, ring)| {
            let (overwritten, events) = ring.read();
            let cut = events.len().saturating_sub(share);
            let events = events[cut..]
                .iter()
                .map(|e| TraceEvent {
                    ns: clock::tick_to_elapsed_ns(e.tick, ns_per_tick),
                    method: e.method,
                    depth: e.depth,
                    exit: e.exit,
                })
                .collect();
            ThreadTrace { os_tid, overwritten: overwritten + cut as u64, events }
        })
        .collect();
    CallTrace { events_per_thread: size, threads }
}

/// The record of a node stored as its index + 1 (0: none): node `n` is record `n - 1`. None for
/// the ended aggregate, whose nodes are folded from several trees.
fn node_record(t: &ThreadState, stored: u32, records: usize) -> Option<u32> {
    match stored {
        0 | 1 => None,
        stored if t.merged_threads() == 0 && stored - 2 < records as u32 => Some(stored - 2),
        _ => None,
    }
}

/// One thread; the aggregate of folded threads is named `[N ended threads]` (OS thread id 0).
fn thread_snapshot(t: &ThreadState, now: u64, ns_per_tick: f64) -> ThreadSnapshot {
    let tree = &t.tree;
    let len = tree.len();
    let ended = t.ended.load(Relaxed);
    // Calls still open (e.g. Main while the program runs) have not added their time yet: count it
    // up to now in the snapshot without touching the tree.
    let open: HashMap<u32, u64> = if ended {
        HashMap::new()
    } else {
        tree.open_frames()
            .into_iter()
            .filter_map(|i| Some((i, now.saturating_sub(tree.node(i)?.enter_tick.load(Relaxed)))))
            .collect()
    };
    let mut nodes = Vec::with_capacity(len.saturating_sub(1) as usize);
    for index in 1..len {
        let Some(node) = tree.node(index) else { break };
        let parent = node.parent.load(Relaxed);
        let method = node.method.load(Relaxed);
        if method == NO_METHOD {
            break;
        }
        let ticks = node.total_ticks.load(Relaxed) + open.get(&index).copied().unwrap_or(0);
        nodes.push(NodeRecord {
            // Node `index` becomes record `index - 1`: the root is the thread itself.
            parent: (parent != ROOT).then(|| parent - 1),
            method,
            calls: node.calls.load(Relaxed),
            raw_total_ns: clock::ticks_to_ns(ticks, ns_per_tick),
            self_samples: node.self_samples.load(Relaxed),
            sampled_self_ns: node.sampled_ns.load(Relaxed),
        });
    }
    let cpu = t.cpu();
    let name = match t.merged_threads() {
        0 => t.name.lock().unwrap_or_else(|e| e.into_inner()).clone(),
        1 => Some("[1 ended thread]".to_string()),
        n => Some(format!("[{n} ended threads]")),
    };
    ThreadSnapshot {
        os_tid: t.os_tid,
        name,
        wall_ns: t.wall_ns(now, ns_per_tick),
        cpu_user_ns: cpu.user_ns,
        cpu_kernel_ns: cpu.kernel_ns,
        // Node `n` is record `n - 1`; the stored value is `n + 1`. None for the ended aggregate.
        last_sample: node_record(t, t.last_sample.load(Relaxed), nodes.len()),
        walked: node_record(t, t.walked.load(Relaxed), nodes.len()),
        events: node_events(t, nodes.len()),
        leaf_offsets: t.leaf_offsets(nodes.len()),
        nodes,
    }
}

/// The events of the thread's nodes among its first `records` (node `n` is record `n - 1`; the
/// root's, outside any recorded method, are in the run's totals only).
fn node_events(t: &ThreadState, records: usize) -> Vec<NodeEvents> {
    // Not `range(1..=0)`: a range whose start is past its end panics once the map has keys (a
    // thread with events but no node yet).
    if records == 0 {
        return Vec::new();
    }
    let events = t.events.lock().unwrap_or_else(|e| e.into_inner());
    events
        .range(1..=records as u32)
        .map(|(&node, counts)| NodeEvents { node: node - 1, ..*counts })
        .filter(|e| !e.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A thread can have events and sampled offsets before its first node is readable (a
    /// snapshot racing the node's first write): no records, so nothing of them, and no panic.
    #[test]
    fn a_thread_without_records_sends_no_events_and_no_offsets() {
        let t = ThreadState::new(1);
        t.add_events(1, &NodeEvents { exceptions_thrown: 2, ..Default::default() });
        t.add_leaf_offset(1, 7, 3);
        assert!(node_events(&t, 0).is_empty());
        assert!(t.leaf_offsets(0).is_empty());
        let events = node_events(&t, 1);
        assert_eq!(events.len(), 1);
        assert_eq!((events[0].node, events[0].exceptions_thrown), (0, 2));
        assert_eq!(t.leaf_offsets(1).len(), 1);
    }
}
