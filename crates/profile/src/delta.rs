//! What a profile gained since an earlier snapshot of the same process: continuous profiling
//! sends each interval's profile, not the cumulative one (`sonde record --push`;
//! docs/CONTINUOUS.md).
//!
//! Snapshots of one process only grow: methods and threads are appended, and a call path's
//! figures never shrink. So a node of the newer profile is matched with the earlier one by its
//! thread (OS id) and its path of method ids from the thread's root, and keeps the difference of
//! its own (self) figures; totals are summed again from those. A path the earlier profile did
//! not have keeps all it has. Figures that went down (a thread whose id was reused) count as 0.

use std::collections::HashMap;

use crate::model::{Node, NodeEvents, Profile, RuntimeEvents};

/// `newer` minus `earlier`: the same methods, threads and tree shape as `newer`, with each
/// node's calls, self time and self samples reduced by what `earlier` had on the same path, and
/// totals recomputed, and each node's events (allocations, lock wait, exceptions thrown)
/// reduced the same way; its run starts where `earlier` ended and lasts the difference. The
/// runtime's other events, sources and coverage are left out (empty).
pub fn since(earlier: &Profile, newer: &Profile) -> Profile {
    let before = figures_by_path(earlier);
    let paths = paths(newer);
    let newer_events = events_by_node(newer);
    let mut events = Vec::new();
    let mut nodes: Vec<Node> = newer
        .nodes
        .iter()
        .zip(&paths)
        .enumerate()
        .map(|(id, (n, path))| {
            let was = before.get(path);
            let (calls, self_ns, self_samples) = was.map_or((0, 0, 0), |f| (f.calls, f.self_ns, f.self_samples));
            if let Some(now) = newer_events.get(&(id as u32)) {
                let gained = gained(now, was.map(|f| &f.events), id as u32);
                if !gained.is_empty() {
                    events.push(gained);
                }
            }
            Node {
                calls: n.calls.saturating_sub(calls),
                self_ns: n.self_ns.saturating_sub(self_ns),
                self_samples: n.self_samples.saturating_sub(self_samples),
                total_ns: 0,
                total_samples: 0,
                ..*n
            }
        })
        .collect();
    fill_totals(&mut nodes);
    let mut run = newer.run.clone();
    if !earlier.nodes.is_empty() || earlier.run.wall_ns > 0 {
        // The interval: from where the earlier snapshot ended to where this one does.
        run.started_unix_ms = earlier.run.started_unix_ms + earlier.run.wall_ns / 1_000_000;
        run.wall_ns = newer.run.wall_ns.saturating_sub(earlier.run.wall_ns);
        run.samples_taken = newer.run.samples_taken.saturating_sub(earlier.run.samples_taken);
    }
    Profile {
        run,
        methods: newer.methods.clone(),
        threads: newer.threads.clone(),
        nodes,
        events: RuntimeEvents { nodes: events, ..Default::default() },
        sources: Default::default(),
        instantiations: newer.instantiations.clone(),
        framework: newer.framework.clone(),
        coverage: Default::default(),
    }
}

/// What node `node` counted since: `now` minus what its path had before (none: all of it).
fn gained(now: &NodeEvents, before: Option<&NodeEvents>, node: u32) -> NodeEvents {
    let before = before.copied().unwrap_or_default();
    NodeEvents {
        node,
        alloc_bytes: now.alloc_bytes.saturating_sub(before.alloc_bytes),
        alloc_count: now.alloc_count.saturating_sub(before.alloc_count),
        wait_ns: now.wait_ns.saturating_sub(before.wait_ns),
        exceptions_thrown: now.exceptions_thrown.saturating_sub(before.exceptions_thrown),
    }
}

/// A node's identity across snapshots: its thread's OS id, then its methods from the root.
type Path = (u32, Vec<u32>);

fn paths(profile: &Profile) -> Vec<Path> {
    let mut out: Vec<Path> = Vec::with_capacity(profile.nodes.len());
    for n in &profile.nodes {
        let os_tid = profile.threads.get(n.thread as usize).map_or(u32::MAX, |t| t.os_tid);
        let mut methods = match n.parent {
            // Parents precede children (`Profile::validate`).
            Some(p) => out.get(p as usize).map(|(_, m)| m.clone()).unwrap_or_default(),
            None => Vec::new(),
        };
        methods.push(n.method);
        out.push((os_tid, methods));
    }
    out
}

fn events_by_node(profile: &Profile) -> HashMap<u32, &NodeEvents> {
    profile.events.nodes.iter().map(|e| (e.node, e)).collect()
}

/// A path's own figures, summed over the nodes that have it.
#[derive(Default)]
struct Figures {
    calls: u64,
    self_ns: u64,
    self_samples: u64,
    events: NodeEvents,
}

fn figures_by_path(profile: &Profile) -> HashMap<Path, Figures> {
    let events = events_by_node(profile);
    let mut out: HashMap<Path, Figures> = HashMap::with_capacity(profile.nodes.len());
    for (id, (n, path)) in profile.nodes.iter().zip(paths(profile)).enumerate() {
        let f = out.entry(path).or_default();
        f.calls += n.calls;
        f.self_ns += n.self_ns;
        f.self_samples += n.self_samples;
        if let Some(e) = events.get(&(id as u32)) {
            f.events.add(e);
        }
    }
    out
}

/// Totals from self figures: children follow their parents, so walking backwards adds every
/// child to its parent before the parent is added to its own.
pub(crate) fn fill_totals(nodes: &mut [Node]) {
    for n in nodes.iter_mut() {
        n.total_ns = n.self_ns;
        n.total_samples = n.self_samples;
    }
    for i in (0..nodes.len()).rev() {
        if let Some(p) = nodes[i].parent.map(|p| p as usize).filter(|&p| p < i) {
            let (ns, samples) = (nodes[i].total_ns, nodes[i].total_samples);
            nodes[p].total_ns = nodes[p].total_ns.saturating_add(ns);
            nodes[p].total_samples = nodes[p].total_samples.saturating_add(samples);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{Builder, arb_profile};
    use proptest::prelude::*;

    #[test]
    fn each_path_keeps_what_it_gained() {
        let mut b = Builder::new();
        let (main, work) = (b.method("Main"), b.method("Work"));
        let t = b.thread();
        let root = b.node(t, None, main, 1, 0, 2);
        b.node(t, Some(root), work, 0, 0, 10);
        let earlier = b.finish();

        let mut b = Builder::new();
        let (main, work, idle) = (b.method("Main"), b.method("Work"), b.method("Idle"));
        let t = b.thread();
        let root = b.node(t, None, main, 1, 0, 3);
        b.node(t, Some(root), work, 0, 0, 25);
        b.node(t, Some(root), idle, 0, 0, 4);
        let newer = b.finish();

        let d = since(&earlier, &newer);
        let selfs: Vec<u64> = d.nodes.iter().map(|n| n.self_samples).collect();
        assert_eq!(selfs, [1, 15, 4]);
        assert_eq!(d.nodes[0].total_samples, 20);
        d.validate().unwrap();
    }

    #[test]
    fn events_keep_what_each_path_gained() {
        let events = |node, exceptions_thrown, alloc_bytes| NodeEvents {
            node,
            exceptions_thrown,
            alloc_bytes,
            alloc_count: alloc_bytes / 10,
            wait_ns: 0,
        };
        let mut b = Builder::new();
        let (main, work) = (b.method("Main"), b.method("Work"));
        let t = b.thread();
        let root = b.node(t, None, main, 1, 0, 2);
        b.node(t, Some(root), work, 0, 0, 10);
        let mut earlier = b.finish();
        earlier.events.nodes = vec![events(1, 2, 0)];

        // The same paths under other node ids (an idle branch came first this time).
        let mut b = Builder::new();
        let (main, work, idle) = (b.method("Main"), b.method("Work"), b.method("Idle"));
        let t = b.thread();
        let root = b.node(t, None, main, 1, 0, 3);
        b.node(t, Some(root), idle, 0, 0, 4);
        b.node(t, Some(root), work, 0, 0, 25);
        let mut newer = b.finish();
        newer.events.nodes = vec![events(0, 0, 500), events(2, 5, 0)];

        let d = since(&earlier, &newer);
        assert_eq!(d.events.nodes, [events(0, 0, 500), events(2, 3, 0)]);
        assert!(since(&newer, &newer).events.nodes.is_empty(), "nothing gained since itself");
        d.validate().unwrap();
    }

    proptest! {
        /// A profile minus itself is empty, and minus nothing is itself.
        #[test]
        fn nothing_gained_since_itself(profile in arb_profile()) {
            let zero = since(&profile, &profile);
            prop_assert!(zero.nodes.iter().all(|n| n.self_samples == 0 && n.total_samples == 0 && n.calls == 0));
            let mut empty = Profile { nodes: Vec::new(), ..profile.clone() };
            empty.run.wall_ns = 0;
            let whole = since(&empty, &profile);
            prop_assert_eq!(&whole.nodes, &profile.nodes);
        }
    }
}
