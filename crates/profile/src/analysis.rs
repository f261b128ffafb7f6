//! Aggregations over a [`Profile`]: per-method statistics, the caller/callee "butterfly" of each
//! method, whole-profile totals and the hot path.
//!
//! Everything here is linear or `n log n` in the number of nodes: the tree is indexed once into
//! children lists ([`CallTree`]) and walked depth-first with an explicit stack (a recursive walk
//! would overflow on the deep trees recursion produces), and lookups go through vectors indexed
//! by id or through hash maps, never through searches.
//!
//! # Recursion
//!
//! A node's total already contains every call nested below it, so summing the totals of all
//! nodes of a recursive method counts the inner calls again (a `Fib` of depth 30 would show
//! thirty times the time it took). Totals therefore count only *outermost* occurrences:
//!
//! * a method's total sums the nodes of that method that have no ancestor of the same method;
//! * an edge's time (caller `C` → callee `M`) sums the nodes of `M` called from `C` that have no
//!   ancestor which is itself an `M` called from `C`.
//!
//! So an edge's time never exceeds the total of its caller or its callee, and for a self-recursive
//! `A → A → A` the butterfly of `A` shows the recursive edge `A → A` once, with the time of the
//! outermost recursive call. Calls, selves and samples-as-self are plain sums: each call and each
//! sample happened exactly once.

use std::collections::HashMap;

use crate::model::Profile;

/// Children lists of every node, built once so that walks never search for them.
#[derive(Debug, Clone)]
pub struct CallTree {
    /// The children of node `i` are `children[first[i]..first[i + 1]]`, in node order.
    first: Vec<u32>,
    children: Vec<u32>,
    roots: Vec<u32>,
}

impl CallTree {
    /// Expects a profile that passes [`Profile::validate`]; panics on out-of-range parents.
    pub fn new(profile: &Profile) -> CallTree {
        let nodes = &profile.nodes;
        let mut first = vec![0u32; nodes.len() + 1];
        let mut roots = Vec::new();
        for (i, node) in nodes.iter().enumerate() {
            match node.parent {
                Some(p) => first[p as usize + 1] += 1,
                None => roots.push(i as u32),
            }
        }
        for i in 1..first.len() {
            first[i] += first[i - 1];
        }
        let mut next = first.clone();
        let mut children = vec![0u32; nodes.len() - roots.len()];
        for (i, node) in nodes.iter().enumerate() {
            if let Some(p) = node.parent {
                children[next[p as usize] as usize] = i as u32;
                next[p as usize] += 1;
            }
        }
        CallTree { first, children, roots }
    }

    /// Top-level nodes of all threads, in node order.
    pub fn roots(&self) -> &[u32] {
        &self.roots
    }

    pub fn children(&self, node: u32) -> &[u32] {
        let i = node as usize;
        &self.children[self.first[i] as usize..self.first[i + 1] as usize]
    }
}

/// One method's figures, summed over the nodes of the threads analysed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MethodStats {
    pub calls: u64,
    pub self_ns: u64,
    /// Recursion-aware: outermost occurrences only.
    pub total_ns: u64,
    pub self_samples: u64,
    /// Recursion-aware: outermost occurrences only.
    pub total_samples: u64,
    /// Bytes allocated with this method innermost (estimated when sampled).
    pub alloc_bytes: u64,
    pub alloc_count: u64,
    /// Bytes allocated in this method and everything it called; recursion-aware.
    pub total_alloc_bytes: u64,
    /// Lock-contention wait with this method innermost.
    pub wait_ns: u64,
    /// Exceptions thrown with this method innermost.
    pub exceptions_thrown: u64,
}

/// One line of a butterfly: calls and time between a method and one caller or callee.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Edge {
    /// The other method. `None` appears only among callers: the method ran as a thread's
    /// top-level frame, with no recorded caller.
    pub method: Option<u32>,
    pub calls: u64,
    /// Time in the callee when called from the caller (recursion-aware, see the module docs).
    pub total_ns: u64,
    pub total_samples: u64,
}

/// Whole-profile figures, the denominators of percentages.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    /// Sum of all nodes' calls.
    pub calls: u64,
    /// Sum of the thread roots' totals.
    pub total_ns: u64,
    /// Sum of the thread roots' total samples.
    pub total_samples: u64,
}

/// Per-method statistics and butterflies for all threads or one.
#[derive(Debug, Clone)]
pub struct Analysis {
    methods: Vec<MethodStats>,
    callers: Vec<Vec<Edge>>,
    callees: Vec<Vec<Edge>>,
    totals: Totals,
}

impl Analysis {
    /// Analyses all threads. Expects a profile that passes [`Profile::validate`].
    pub fn new(profile: &Profile) -> Analysis {
        Analysis::compute(profile, None)
    }

    /// Analyses only the nodes of `thread`.
    pub fn for_thread(profile: &Profile, thread: u32) -> Analysis {
        Analysis::compute(profile, Some(thread))
    }

    /// Statistics of every method, indexed by method id.
    pub fn methods(&self) -> &[MethodStats] {
        &self.methods
    }

    pub fn method(&self, id: u32) -> &MethodStats {
        &self.methods[id as usize]
    }

    /// Who called `id`, heaviest first.
    pub fn callers(&self, id: u32) -> &[Edge] {
        &self.callers[id as usize]
    }

    /// What `id` called, heaviest first.
    pub fn callees(&self, id: u32) -> &[Edge] {
        &self.callees[id as usize]
    }

    pub fn totals(&self) -> Totals {
        self.totals
    }

    fn compute(profile: &Profile, thread: Option<u32>) -> Analysis {
        let nodes = &profile.nodes;
        let n_methods = profile.methods.len();
        let mut methods = vec![MethodStats::default(); n_methods];
        let mut edges: HashMap<(Option<u32>, u32), Edge> = HashMap::new();
        let mut totals = Totals::default();
        let total_alloc = node_alloc_totals(profile);

        walk(profile, &CallTree::new(profile), thread, |i, outermost| {
            let node = &nodes[i as usize];
            let caller = node.parent.map(|p| nodes[p as usize].method);
            let stats = &mut methods[node.method as usize];
            add(&mut stats.calls, node.calls);
            add(&mut stats.self_ns, node.self_ns);
            add(&mut stats.self_samples, node.self_samples);
            if outermost.method {
                add(&mut stats.total_ns, node.total_ns);
                add(&mut stats.total_samples, node.total_samples);
                add(&mut stats.total_alloc_bytes, total_alloc[i as usize]);
            }
            if let Some(e) = profile.events.node(i) {
                add(&mut stats.alloc_bytes, e.alloc_bytes);
                add(&mut stats.alloc_count, e.alloc_count);
                add(&mut stats.wait_ns, e.wait_ns);
                add(&mut stats.exceptions_thrown, e.exceptions_thrown);
            }
            let edge = edges.entry((caller, node.method)).or_insert(Edge {
                method: caller,
                calls: 0,
                total_ns: 0,
                total_samples: 0,
            });
            add(&mut edge.calls, node.calls);
            if outermost.edge {
                add(&mut edge.total_ns, node.total_ns);
                add(&mut edge.total_samples, node.total_samples);
            }
            add(&mut totals.calls, node.calls);
            if node.parent.is_none() {
                add(&mut totals.total_ns, node.total_ns);
                add(&mut totals.total_samples, node.total_samples);
            }
        });

        let mut callers = vec![Vec::new(); n_methods];
        let mut callees = vec![Vec::new(); n_methods];
        for ((caller, callee), edge) in edges {
            callers[callee as usize].push(edge);
            if let Some(caller) = caller {
                callees[caller as usize].push(Edge { method: Some(callee), ..edge });
            }
        }
        for list in callers.iter_mut().chain(callees.iter_mut()) {
            // Heaviest first; the method id breaks ties so that output is deterministic
            // despite the hash map.
            list.sort_unstable_by_key(|e| (std::cmp::Reverse((e.total_ns, e.total_samples, e.calls)), e.method));
        }
        Analysis { methods, callers, callees, totals }
    }
}

/// Whether a node is the outermost occurrence of its method, and of its caller→callee edge,
/// on its path from the root.
#[derive(Debug, Clone, Copy)]
struct Outermost {
    method: bool,
    edge: bool,
}

/// Depth-first walk over the trees of `thread` (or all threads) that tells the visitor, for each
/// node, whether it is the outermost occurrence of its method and edge. It keeps, for every
/// method and edge, how many times it occurs on the current path: a count of zero on entry means
/// outermost.
fn walk(profile: &Profile, tree: &CallTree, thread: Option<u32>, mut visit: impl FnMut(u32, Outermost)) {
    let nodes = &profile.nodes;
    let mut method_depth = vec![0u32; profile.methods.len()];
    let mut edge_depth: HashMap<(u32, u32), u32> = HashMap::new();
    let edge_of = |i: u32| {
        let node = &nodes[i as usize];
        node.parent.map(|p| (nodes[p as usize].method, node.method))
    };

    enum Step {
        Enter(u32),
        Leave(u32),
    }
    let mut stack: Vec<Step> = Vec::new();
    for &root in tree.roots() {
        if thread.is_some_and(|t| nodes[root as usize].thread != t) {
            continue;
        }
        stack.push(Step::Enter(root));
        while let Some(step) = stack.pop() {
            match step {
                Step::Enter(i) => {
                    let depth = &mut method_depth[nodes[i as usize].method as usize];
                    let method = *depth == 0;
                    *depth += 1;
                    let edge = match edge_of(i) {
                        Some(key) => {
                            let depth = edge_depth.entry(key).or_insert(0);
                            *depth += 1;
                            *depth == 1
                        }
                        None => true,
                    };
                    visit(i, Outermost { method, edge });
                    stack.push(Step::Leave(i));
                    stack.extend(tree.children(i).iter().rev().map(|&c| Step::Enter(c)));
                }
                Step::Leave(i) => {
                    method_depth[nodes[i as usize].method as usize] -= 1;
                    if let Some(key) = edge_of(i)
                        && let Some(depth) = edge_depth.get_mut(&key)
                    {
                        *depth -= 1;
                    }
                }
            }
        }
    }
}

/// Bytes allocated in each node's subtree (the node's own allocations and its descendants'),
/// indexed by node id. One backward pass: parents precede children.
pub fn node_alloc_totals(profile: &Profile) -> Vec<u64> {
    let nodes = &profile.nodes;
    let mut total = vec![0u64; nodes.len()];
    for e in &profile.events.nodes {
        total[e.node as usize] = e.alloc_bytes;
    }
    for i in (0..nodes.len()).rev() {
        if let Some(p) = nodes[i].parent {
            total[p as usize] = total[p as usize].saturating_add(total[i]);
        }
    }
    total
}

/// Sums saturate: a hostile file can hold values whose sum overflows, and that must not panic.
fn add(sum: &mut u64, value: u64) {
    *sum = sum.saturating_add(value);
}

/// Per-thread sums, indexed by thread id.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ThreadTotals {
    /// Sum of the thread's nodes' calls.
    pub calls: u64,
    /// Sum of the thread's nodes' self samples: every sample the thread took.
    pub self_samples: u64,
    /// Sum of the thread's roots' totals.
    pub total_ns: u64,
    pub total_samples: u64,
}

/// One pass over the nodes. Expects a profile that passes [`Profile::validate`].
pub fn thread_totals(profile: &Profile) -> Vec<ThreadTotals> {
    let mut threads = vec![ThreadTotals::default(); profile.threads.len()];
    for node in &profile.nodes {
        let t = &mut threads[node.thread as usize];
        add(&mut t.calls, node.calls);
        add(&mut t.self_samples, node.self_samples);
        if node.parent.is_none() {
            add(&mut t.total_ns, node.total_ns);
            add(&mut t.total_samples, node.total_samples);
        }
    }
    threads
}

/// A child stays on the hot path while it holds at least this share of its parent's weight.
const HOT_PATH_SHARE: f64 = 0.5;

/// The chain of node ids from the heaviest root down through the heaviest child, as long as that
/// child holds at least half its parent's weight. Weight is time when the profile has any (the
/// roots' `total_ns`), samples otherwise. Empty when the profile has no weight at all.
pub fn hot_path(profile: &Profile) -> Vec<u32> {
    let nodes = &profile.nodes;
    let has_time = nodes.iter().any(|n| n.parent.is_none() && n.total_ns > 0);
    let weight = |i: u32| {
        let node = &nodes[i as usize];
        if has_time { node.total_ns } else { node.total_samples }
    };
    // max_by_key keeps the last of equals; reversing keeps the first, in node order.
    let heaviest = |ids: &[u32]| ids.iter().rev().copied().max_by_key(|&i| weight(i));

    let tree = CallTree::new(profile);
    let mut path = Vec::new();
    let Some(mut current) = heaviest(tree.roots()).filter(|&r| weight(r) > 0) else {
        return path;
    };
    path.push(current);
    while let Some(child) = heaviest(tree.children(current)) {
        if weight(child) == 0 || (weight(child) as f64) < HOT_PATH_SHARE * weight(current) as f64 {
            break;
        }
        path.push(child);
        current = child;
    }
    path
}

#[cfg(test)]
mod tests;
