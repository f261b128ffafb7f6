//! A per-thread call tree: the hot-path data structure of tracing mode.
//!
//! Each node is one call path (the chain of methods from the thread's root). The hooks move a
//! `current` cursor down on enter and up on leave, so memory grows with distinct call paths, never
//! with calls. Each active frame has its own node (a node is on the stack at most once: a recursive
//! call is a child node), so a node can hold its frame's enter timestamp itself — no separate stack.
//!
//! The cursor is a pointer and every node caches its two most recent children, so the common
//! enter is "compare the method with two cached ids, follow a pointer, count" and the common leave
//! is "compare the method, follow the parent pointer" — short enough for the hooks to do in a few
//! instructions of assembly (`hooks`), with [`CallTree::enter_fast`]/[`CallTree::leave_fast`] as
//! the Rust statement of the same logic. Everything else (new paths, resyncs, a full tree) takes
//! the slow paths [`CallTree::enter`] / [`CallTree::leave`].
//!
//! Concurrency: exactly one thread (the owner) writes the structure and the counters; the sampler
//! writes only the sample fields; snapshot readers only read. Every field is an atomic accessed with
//! `Relaxed` loads and stores (plain `mov`s on x86-64; no locked instruction on the hot path), and
//! node storage never moves: nodes live in fixed-size chunks reached through a two-level
//! directory whose slots are published once (`OnceLock`), and `len` is published with `Release`
//! after a node is initialised. A fixed chunk bounds what a new call path costs the program's
//! thread: at most one allocation of [`CHUNK`] nodes (and, once per [`CHUNK`] · [`LEAF`] nodes, one
//! of a directory page) — microseconds, whatever the tree's size. Readers
//! therefore see a consistent set of nodes with possibly slightly stale counters — fine for a
//! profile, and no locks for anyone.

use std::ptr;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, Ordering::*};

/// Index of the root node: the thread itself, outside any traced method.
pub const ROOT: u32 = 0;
/// The root's "method" (and the empty child-cache entry).
pub const NO_METHOD: u32 = u32::MAX;
/// Index meaning "none" in child/sibling links.
const NIL: u32 = u32::MAX;

/// Nodes per chunk (about 26 KB of nodes).
const CHUNK_BITS: u32 = 8;
const CHUNK: usize = 1 << CHUNK_BITS;
/// Chunks per directory page, and pages: 256 · 512 · 512 ≈ 67 M nodes per thread; past that,
/// calls are counted as lost.
const LEAF_BITS: u32 = 9;
const LEAF: usize = 1 << LEAF_BITS;
const PAGES: usize = 512;
/// Per-thread direct-mapped cache from (parent, method) to child, behind the per-node cache, so
/// wide nodes cost no list walks on the slow path either.
const CACHE_BITS: u32 = 8;
const CACHE_SIZE: usize = 1 << CACHE_BITS;

#[derive(Debug)]
#[repr(C)]
pub struct Node {
    pub method: AtomicU32,
    /// This node's own index.
    pub index: AtomicU32,
    /// Two most recently entered children: `child_method[i]` → `child[i]`.
    pub child_method: [AtomicU32; 2],
    pub child: [AtomicPtr<Node>; 2],
    pub calls: AtomicU64,
    /// Tick at which the open call through this node started (valid while it is on the stack).
    pub enter_tick: AtomicU64,
    /// Inclusive ticks of all completed calls through this node.
    pub total_ticks: AtomicU64,
    pub parent_node: AtomicPtr<Node>,
    pub parent: AtomicU32,
    first_child: AtomicU32,
    next_sibling: AtomicU32,
    /// Written by the sampler only.
    pub self_samples: AtomicU64,
    pub sampled_ns: AtomicU64,
}

impl Node {
    fn new() -> Self {
        Node {
            method: AtomicU32::new(NO_METHOD),
            index: AtomicU32::new(NIL),
            child_method: [AtomicU32::new(NO_METHOD), AtomicU32::new(NO_METHOD)],
            child: [AtomicPtr::new(ptr::null_mut()), AtomicPtr::new(ptr::null_mut())],
            calls: AtomicU64::new(0),
            enter_tick: AtomicU64::new(0),
            total_ticks: AtomicU64::new(0),
            parent_node: AtomicPtr::new(ptr::null_mut()),
            parent: AtomicU32::new(NIL),
            first_child: AtomicU32::new(NIL),
            next_sibling: AtomicU32::new(NIL),
            self_samples: AtomicU64::new(0),
            sampled_ns: AtomicU64::new(0),
        }
    }
}

/// Owner-only increment: a load and a store, no locked instruction (only the owner writes).
#[inline(always)]
fn bump(counter: &AtomicU64, by: u64) {
    counter.store(counter.load(Relaxed).wrapping_add(by), Relaxed);
}

#[repr(C)]
pub struct CallTree {
    /// The innermost open node (the root outside any call; `overflow` while the tree is full).
    pub current: AtomicPtr<Node>,
    /// Directory pages of chunks (see [`locate`]).
    pages: Box<[OnceLock<Page>]>,
    len: AtomicU32,
    /// Stand-in cursor while the tree is full: its method and child cache never match, so the
    /// fast paths always defer to the slow ones, which count the depth in `overflow_depth`.
    overflow: Box<Node>,
    overflow_depth: AtomicU32,
    /// Where the cursor was when the tree filled up.
    overflow_from: AtomicPtr<Node>,
    /// Calls not recorded because the tree was full.
    pub lost: AtomicU64,
    cache_keys: Box<[AtomicU64; CACHE_SIZE]>,
    cache_nodes: Box<[AtomicU32; CACHE_SIZE]>,
}

impl Default for CallTree {
    fn default() -> Self {
        Self::new()
    }
}

/// One directory page: [`LEAF`] chunks of [`CHUNK`] nodes, each allocated when first needed.
type Page = Box<[OnceLock<Box<[Node]>>]>;

/// Where node `index` lives: (directory page, chunk in the page, node in the chunk).
#[inline(always)]
fn locate(index: u32) -> (usize, usize, usize) {
    let index = index as usize;
    (index >> (CHUNK_BITS + LEAF_BITS), (index >> CHUNK_BITS) & (LEAF - 1), index & (CHUNK - 1))
}

#[inline(always)]
fn cache_slot(parent: u32, method: u32) -> (usize, u64) {
    let key = (u64::from(parent) << 32) | u64::from(method);
    let slot = (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - CACHE_BITS)) as usize & (CACHE_SIZE - 1);
    (slot, key)
}

/// Dereferences a node pointer held by a tree.
///
/// Every pointer a tree stores (`current`, `child`, `parent_node`, `overflow_from`) is null or
/// points into the tree's own chunks or `overflow` box, which are never freed or moved while the
/// tree exists (a thread's tree is dropped only once nothing can use it: see `threads`).
#[inline(always)]
fn at(_tree: &CallTree, node: *const Node) -> Option<&Node> {
    // SAFETY: see above — null or a live node of `_tree`, which outlives the returned reference.
    unsafe { node.as_ref() }
}

impl CallTree {
    pub fn new() -> Self {
        let tree = CallTree {
            current: AtomicPtr::new(ptr::null_mut()),
            pages: (0..PAGES).map(|_| OnceLock::new()).collect(),
            len: AtomicU32::new(0),
            overflow: Box::new(Node::new()),
            overflow_depth: AtomicU32::new(0),
            overflow_from: AtomicPtr::new(ptr::null_mut()),
            lost: AtomicU64::new(0),
            cache_keys: Box::new([const { AtomicU64::new(u64::MAX) }; CACHE_SIZE]),
            cache_nodes: Box::new([const { AtomicU32::new(NIL) }; CACHE_SIZE]),
        };
        let root = tree.push(NIL, NO_METHOD).expect("the first chunk");
        tree.current.store(ptr::from_ref(tree.node(root).expect("the root")).cast_mut(), Relaxed);
        tree
    }

    /// Number of published nodes, root included.
    pub fn len(&self) -> u32 {
        self.len.load(Acquire)
    }

    pub fn is_empty(&self) -> bool {
        self.len() <= 1
    }

    #[inline(always)]
    pub fn node(&self, index: u32) -> Option<&Node> {
        let (page, chunk, offset) = locate(index);
        self.pages.get(page)?.get()?.get(chunk)?.get()?.get(offset)
    }

    fn current_node(&self) -> Option<&Node> {
        at(self, self.current.load(Relaxed))
    }

    /// Index of the innermost open node (read by the sampler and snapshots, racily by design).
    pub fn current(&self) -> u32 {
        let mut node = self.current.load(Relaxed);
        if ptr::eq(node, &*self.overflow) {
            node = self.overflow_from.load(Relaxed);
        }
        at(self, node).map_or(ROOT, |n| n.index.load(Relaxed))
    }

    /// Appends a node (owner only). Allocates only when a new chunk is needed.
    fn push(&self, parent: u32, method: u32) -> Option<u32> {
        let index = self.len.load(Relaxed);
        let (page, chunk, offset) = locate(index);
        let page = self.pages.get(page)?.get_or_init(|| (0..LEAF).map(|_| OnceLock::new()).collect());
        let nodes = page.get(chunk)?.get_or_init(|| (0..CHUNK).map(|_| Node::new()).collect());
        let node = &nodes[offset];
        node.method.store(method, Relaxed);
        node.index.store(index, Relaxed);
        node.parent.store(parent, Relaxed);
        if let Some(parent) = self.node(parent) {
            node.parent_node.store(ptr::from_ref(parent).cast_mut(), Relaxed);
        }
        self.len.store(index + 1, Release);
        Some(index)
    }

    /// The child of `parent` for `method`, created if needed.
    fn child(&self, parent: &Node, method: u32) -> Option<&Node> {
        let parent_index = parent.index.load(Relaxed);
        let (slot, key) = cache_slot(parent_index, method);
        let mut index = NIL;
        if self.cache_keys[slot].load(Relaxed) == key {
            index = self.cache_nodes[slot].load(Relaxed);
        } else {
            let mut sibling = parent.first_child.load(Relaxed);
            while sibling != NIL {
                let node = self.node(sibling)?;
                if node.method.load(Relaxed) == method {
                    index = sibling;
                    break;
                }
                sibling = node.next_sibling.load(Relaxed);
            }
            if index == NIL {
                index = self.push(parent_index, method)?;
                let node = self.node(index)?;
                node.next_sibling.store(parent.first_child.load(Relaxed), Relaxed);
                parent.first_child.store(index, Relaxed);
            }
            self.cache_keys[slot].store(key, Relaxed);
            self.cache_nodes[slot].store(index, Relaxed);
        }
        let child = self.node(index)?;
        // Most recent child first in the parent's two-entry cache.
        if parent.child_method[0].load(Relaxed) != method {
            parent.child_method[1].store(parent.child_method[0].load(Relaxed), Relaxed);
            parent.child[1].store(parent.child[0].load(Relaxed), Relaxed);
            parent.child_method[0].store(method, Relaxed);
            parent.child[0].store(ptr::from_ref(child).cast_mut(), Relaxed);
        }
        Some(child)
    }

    /// The common case of [`enter`](Self::enter): the child is in the current node's cache.
    /// Returns false, having changed nothing, when the slow path is needed. `clock` is read only
    /// once the call is sure to be recorded, as late as possible. (On x86-64 the hooks do this
    /// in assembly; this is its statement in Rust, used elsewhere and by the tests.)
    #[inline(always)]
    pub fn enter_fast(&self, method: u32, clock: impl FnOnce() -> u64) -> bool {
        let Some(current) = self.current_node() else { return false };
        let child = if current.child_method[0].load(Relaxed) == method {
            current.child[0].load(Relaxed)
        } else if current.child_method[1].load(Relaxed) == method {
            current.child[1].load(Relaxed)
        } else {
            return false;
        };
        let Some(node) = at(self, child) else { return false };
        bump(&node.calls, 1);
        node.enter_tick.store(clock(), Relaxed);
        self.current.store(child, Relaxed);
        true
    }

    /// The common case of [`leave`](Self::leave): `method` is the current node's. Returns false,
    /// having changed nothing, when the slow path is needed.
    #[inline(always)]
    pub fn leave_fast(&self, method: u32, clock: impl FnOnce() -> u64) -> bool {
        let tick = clock();
        let Some(current) = self.current_node() else { return false };
        if current.method.load(Relaxed) != method {
            return false;
        }
        bump(&current.total_ticks, tick.wrapping_sub(current.enter_tick.load(Relaxed)));
        self.current.store(current.parent_node.load(Relaxed), Relaxed);
        true
    }

    /// A call to `method` starts at `tick` (0 when time is not measured).
    pub fn enter(&self, method: u32, tick: u64) {
        if self.enter_fast(method, || tick) {
            return;
        }
        let depth = self.overflow_depth.load(Relaxed);
        if depth != 0 {
            self.overflow_depth.store(depth + 1, Relaxed);
            bump(&self.lost, 1);
            return;
        }
        let Some(current) = self.current_node() else { return };
        match self.child(current, method) {
            Some(node) => {
                bump(&node.calls, 1);
                node.enter_tick.store(tick, Relaxed);
                self.current.store(ptr::from_ref(node).cast_mut(), Relaxed);
            }
            None => {
                // The tree is full: park the cursor on the stand-in until this call returns.
                self.overflow_from.store(self.current.load(Relaxed), Relaxed);
                self.current.store(ptr::from_ref(&*self.overflow).cast_mut(), Relaxed);
                self.overflow_depth.store(1, Relaxed);
                bump(&self.lost, 1);
            }
        }
    }

    /// The call to `method` that is innermost on this thread ends at `tick`.
    ///
    /// If `method` is not the current node's method, an event was missed (e.g. a leave the runtime
    /// did not report); the tree resynchronises by closing frames up to the nearest open call of
    /// `method`, or ignores the leave when `method` is not open at all.
    pub fn leave(&self, method: u32, tick: u64) {
        let depth = self.overflow_depth.load(Relaxed);
        if depth != 0 {
            self.overflow_depth.store(depth - 1, Relaxed);
            if depth == 1 {
                self.current.store(self.overflow_from.load(Relaxed), Relaxed);
            }
            return;
        }
        if self.leave_fast(method, || tick) {
            return;
        }
        // Find the nearest open call of `method`; the root (no parent) ends the search.
        let mut node = self.current_node();
        while let Some(n) = node {
            if n.method.load(Relaxed) == method && n.index.load(Relaxed) != ROOT {
                break;
            }
            node = at(self, n.parent_node.load(Relaxed));
        }
        let Some(target) = node else { return };
        while let Some(open) = self.current_node() {
            bump(&open.total_ticks, tick.wrapping_sub(open.enter_tick.load(Relaxed)));
            self.current.store(open.parent_node.load(Relaxed), Relaxed);
            if ptr::eq(open, target) {
                return;
            }
        }
    }

    /// Counts one stack sample (sampling mode): `path` is the stack root first, as method ids.
    /// The leaf gets the sample; `periods` is how many sampling intervals it stands for. Returns
    /// the leaf's node index (for [`add_samples`](Self::add_samples)).
    /// Called only by the drain thread, the single writer of sampled trees.
    pub fn record_sample(&self, path: &[u32], periods: u64, ns: u64) -> Option<u32> {
        let mut node = self.node(ROOT)?;
        for &method in path {
            match self.child(node, method) {
                Some(child) => node = child,
                None => {
                    bump(&self.lost, periods);
                    return None;
                }
            }
        }
        if path.is_empty() {
            return None;
        }
        bump(&node.self_samples, periods);
        bump(&node.sampled_ns, ns);
        Some(node.index.load(Relaxed))
    }

    /// Adds samples to node `index` (one [`record_sample`](Self::record_sample) returned): the
    /// intervals a thread spent blocked in the stack it was last sampled in.
    pub fn add_samples(&self, index: u32, periods: u64, ns: u64) {
        if periods == 0 {
            return;
        }
        if let Some(node) = self.node(index) {
            bump(&node.self_samples, periods);
            bump(&node.sampled_ns, ns);
        }
    }

    /// Adds every count of `other` (a tree nobody writes any more) to the node of the same call
    /// path here, creating the paths this tree lacks: calls, inclusive ticks, samples and calls
    /// lost. Open calls add nothing (the snapshot of an ended thread counts none either). Only
    /// for a tree with a single writer, the caller. Returns, for each of `other`'s nodes, the
    /// node here that absorbed it (`u32::MAX`: none, this tree is full).
    pub fn absorb(&self, other: &CallTree) -> Vec<u32> {
        bump(&self.lost, other.lost.load(Relaxed));
        let len = other.len();
        // `map[i]`: this tree's node for `other`'s node `i` (parents come before their children).
        let mut map: Vec<u32> = Vec::with_capacity(len as usize);
        map.push(ROOT);
        for index in 1..len {
            let Some(node) = other.node(index) else { break };
            let method = node.method.load(Relaxed);
            let parent = map.get(node.parent.load(Relaxed) as usize).copied().unwrap_or(NIL);
            let mine = if method == NO_METHOD || parent == NIL {
                None
            } else {
                self.node(parent).and_then(|p| self.child(p, method))
            };
            let (calls, samples) = (node.calls.load(Relaxed), node.self_samples.load(Relaxed));
            match mine {
                Some(mine) => {
                    bump(&mine.calls, calls);
                    bump(&mine.total_ticks, node.total_ticks.load(Relaxed));
                    bump(&mine.self_samples, samples);
                    bump(&mine.sampled_ns, node.sampled_ns.load(Relaxed));
                    map.push(mine.index.load(Relaxed));
                }
                None => {
                    // This tree is full: what the node counted is lost here.
                    bump(&self.lost, calls.max(samples));
                    map.push(NIL);
                }
            }
        }
        map
    }

    /// The open frames, innermost first (for snapshots: their running time is not yet in
    /// `total_ticks`). Racy by design when read from another thread; bounded by the node count.
    pub fn open_frames(&self) -> Vec<u32> {
        let mut frames = Vec::new();
        let mut index = self.current();
        let limit = self.len();
        while index != ROOT && index < limit && frames.len() < limit as usize {
            frames.push(index);
            index = match self.node(index) {
                Some(node) => node.parent.load(Relaxed),
                None => break,
            };
        }
        frames
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(tree: &CallTree) -> Vec<(u32, u32, u64, u64)> {
        (1..tree.len())
            .map(|i| {
                let n = tree.node(i).unwrap();
                (n.parent.load(Relaxed), n.method.load(Relaxed), n.calls.load(Relaxed), n.total_ticks.load(Relaxed))
            })
            .collect()
    }

    #[test]
    fn locate_covers_indices_without_gaps() {
        let mut expected = (0usize, 0usize, 0usize);
        for index in 0..300_000u32 {
            assert_eq!(locate(index), expected, "index {index}");
            expected.2 += 1;
            if expected.2 == CHUNK {
                expected = (expected.0, expected.1 + 1, 0);
            }
            if expected.1 == LEAF {
                expected = (expected.0 + 1, 0, 0);
            }
        }
        let last = (PAGES * LEAF * CHUNK - 1) as u32;
        assert_eq!(locate(last), (PAGES - 1, LEAF - 1, CHUNK - 1));
        assert_eq!(locate(last + 1).0, PAGES, "past the last page: no node (counted as lost)");
    }

    #[test]
    fn nodes_are_per_path_and_times_inclusive() {
        let t = CallTree::new();
        t.enter(1, 0); // main
        for i in 0..3 {
            t.enter(2, 10 + i * 10); // a
            t.enter(3, 11 + i * 10); // a -> b
            t.leave(3, 15 + i * 10);
            t.leave(2, 20 + i * 10);
        }
        t.enter(3, 50); // main -> b: a different path, a different node
        t.leave(3, 51);
        t.leave(1, 100);
        assert_eq!(t.current(), ROOT);
        assert_eq!(counts(&t), vec![(ROOT, 1, 1, 100), (1, 2, 3, 30), (2, 3, 3, 12), (1, 3, 1, 1)]);
    }

    #[test]
    fn recursion_makes_a_chain() {
        let t = CallTree::new();
        for d in 0..5 {
            t.enter(7, d);
        }
        for d in 0..5 {
            t.leave(7, 100 + d);
        }
        assert_eq!(t.len(), 6);
        assert_eq!(t.current(), ROOT);
    }

    #[test]
    fn a_missed_leave_is_resynchronised() {
        let t = CallTree::new();
        t.enter(1, 0);
        t.enter(2, 1);
        t.enter(3, 2);
        t.leave(2, 10); // 3's leave was never reported
        assert_eq!(t.node(t.current()).unwrap().method.load(Relaxed), 1);
        t.leave(9, 11); // not open at all: ignored
        t.leave(1, 20);
        assert_eq!(t.current(), ROOT);
        t.leave(1, 30); // unmatched at root: ignored
        assert_eq!(counts(&t), vec![(ROOT, 1, 1, 20), (1, 2, 1, 9), (2, 3, 1, 8)]);
    }

    #[test]
    fn absorbing_a_tree_adds_its_counts_path_by_path() {
        let into = CallTree::new();
        into.enter(1, 0);
        into.enter(2, 1);
        into.leave(2, 3);
        into.leave(1, 10);
        let from = CallTree::new();
        from.enter(1, 0);
        from.enter(3, 1); // a path `into` lacks
        from.leave(3, 2);
        from.enter(2, 4);
        from.leave(2, 9);
        from.leave(1, 20);
        from.record_sample(&[1, 2], 4, 400);
        into.absorb(&from);
        into.absorb(&from);
        assert_eq!(counts(&into), vec![(ROOT, 1, 3, 50), (1, 2, 3, 12), (1, 3, 2, 2)]);
        let leaf = into.node(2).unwrap();
        assert_eq!((leaf.self_samples.load(Relaxed), leaf.sampled_ns.load(Relaxed)), (8, 800));
    }

    #[test]
    fn wide_nodes_find_their_children() {
        let t = CallTree::new();
        t.enter(0, 0);
        for round in 0..3 {
            for m in 1..2000 {
                t.enter(m, round);
                t.leave(m, round);
            }
        }
        assert_eq!(t.len(), 2001);
        assert!(counts(&t).iter().skip(1).all(|&(p, _, calls, _)| p == 1 && calls == 3));
    }
}
