//! The dominator tree of the object graph, from a virtual super-root whose successors are the
//! roots' objects: Cooper, Harvey and Kennedy's iterative algorithm ("A Simple, Fast Dominance
//! Algorithm", 2001) on `u32` indices, with no recursion anywhere.
//!
//! Why this one rather than Lengauer–Tarjan: it needs three `u32` arrays (order, order number,
//! immediate dominator) besides the predecessors, where Lengauer–Tarjan needs six or seven; a heap
//! graph is shallow and mostly a tree, so it converges in two or three passes; and it is short
//! enough to be checked by eye (and is checked against the definition by property tests).
//!
//! Predecessors are stored compactly: most objects in a heap have exactly one referrer, and such
//! an object's immediate dominator is that referrer. So a `u32` per object holds the only
//! predecessor inline, or (top bit set) the index of a list of predecessors kept for the objects
//! that have several. Memory: 4 bytes per object plus 4 per reference into a shared object.

use crate::model::NONE;

/// The top bit of a predecessor word: "the index of a list", not "the only predecessor".
const MANY: u32 = 1 << 31;

/// A graph in CSR form: `edges[offsets[v]..offsets[v + 1]]` are `v`'s successors; `n` nodes.
#[derive(Clone, Copy)]
pub(crate) struct Graph<'a> {
    pub offsets: &'a [u32],
    pub edges: &'a [u32],
    /// The super-root's successors (the retaining roots' objects).
    pub roots: &'a [u32],
}

impl Graph<'_> {
    fn n(&self) -> usize {
        self.offsets.len() - 1
    }

    /// `v`'s successors; the super-root (index `n`) has the roots.
    fn successors(&self, v: u32) -> &[u32] {
        if v as usize == self.n() {
            self.roots
        } else {
            &self.edges[self.offsets[v as usize] as usize..self.offsets[v as usize + 1] as usize]
        }
    }
}

/// The result: each node's immediate dominator, and the reachable nodes in reverse postorder.
pub(crate) struct Dominators {
    /// `n + 1` entries: `idom[v]` for every node, [`NONE`] when unreachable; the super-root `n` is
    /// its own.
    pub idom: Vec<u32>,
    /// The reachable nodes in reverse postorder, the super-root first: every node comes after
    /// its immediate dominator.
    pub order: Vec<u32>,
}

/// Computes the dominator tree of `graph` from its super-root.
pub(crate) fn dominators(graph: Graph<'_>) -> Dominators {
    let n = graph.n();
    let order = reverse_postorder(graph);
    let mut number = vec![NONE; n + 1];
    for (i, &v) in order.iter().enumerate() {
        number[v as usize] = i as u32;
    }
    let preds = Predecessors::new(graph, &order);

    let mut idom = vec![NONE; n + 1];
    idom[n] = n as u32;
    let intersect = |idom: &[u32], mut a: u32, mut b: u32| {
        while a != b {
            while number[a as usize] > number[b as usize] {
                a = idom[a as usize];
            }
            while number[b as usize] > number[a as usize] {
                b = idom[b as usize];
            }
        }
        a
    };
    let mut first = true;
    loop {
        let mut changed = false;
        for &v in &order[1..] {
            let word = preds.word[v as usize];
            if word & MANY == 0 {
                // The only predecessor, always earlier in the order: settled in the first pass.
                if first {
                    idom[v as usize] = word;
                    changed = true;
                }
                continue;
            }
            let mut new = NONE;
            for &p in preds.list(word) {
                if idom[p as usize] != NONE {
                    new = if new == NONE { p } else { intersect(&idom, p, new) };
                }
            }
            if idom[v as usize] != new {
                idom[v as usize] = new;
                changed = true;
            }
        }
        first = false;
        if !changed {
            break;
        }
    }
    Dominators { idom, order }
}

/// The nodes reachable from the super-root, in reverse postorder, by an explicit-stack DFS
/// (10 million objects in a linked list must not overflow the thread's stack).
fn reverse_postorder(graph: Graph<'_>) -> Vec<u32> {
    let n = graph.n();
    let mut seen = vec![false; n + 1];
    let mut postorder = Vec::new();
    // (node, position of the next successor to look at)
    let mut stack: Vec<(u32, u32)> = vec![(n as u32, 0)];
    seen[n] = true;
    while let Some(top) = stack.last_mut() {
        let (v, next) = *top;
        let successors = graph.successors(v);
        if let Some(&w) = successors.get(next as usize) {
            top.1 += 1;
            if !seen[w as usize] {
                seen[w as usize] = true;
                stack.push((w, 0));
            }
        } else {
            postorder.push(v);
            stack.pop();
        }
    }
    postorder.reverse();
    postorder
}

/// Each reachable node's predecessors among the reachable nodes (see the module doc).
struct Predecessors {
    /// Per node: the only predecessor, or `MANY | list index`; [`NONE`] for none.
    word: Vec<u32>,
    /// The lists: list `m` is `sources[ends[m - 1]..ends[m]]` (`0` for `m = 0`).
    ends: Vec<u32>,
    sources: Vec<u32>,
}

impl Predecessors {
    fn new(graph: Graph<'_>, order: &[u32]) -> Self {
        let mut word = vec![NONE; graph.n() + 1];
        let mut counts: Vec<u32> = Vec::new();
        for &u in order {
            for &v in graph.successors(u) {
                let w = &mut word[v as usize];
                if *w == NONE {
                    *w = u;
                } else if *w & MANY == 0 {
                    *w = MANY | counts.len() as u32;
                    counts.push(2);
                } else {
                    counts[(*w & !MANY) as usize] += 1;
                }
            }
        }
        // Exclusive prefix sums: each list's start, used as its cursor while filling; after the
        // fill each entry holds its list's end.
        let mut total = 0u32;
        for c in counts.iter_mut() {
            let start = total;
            total += *c;
            *c = start;
        }
        let mut ends = counts;
        let mut sources = vec![0u32; total as usize];
        for &u in order {
            for &v in graph.successors(u) {
                let w = word[v as usize];
                if w != NONE && w & MANY != 0 {
                    let cursor = &mut ends[(w & !MANY) as usize];
                    sources[*cursor as usize] = u;
                    *cursor += 1;
                }
            }
        }
        Predecessors { word, ends, sources }
    }

    fn list(&self, word: u32) -> &[u32] {
        let m = (word & !MANY) as usize;
        let start = if m == 0 { 0 } else { self.ends[m - 1] as usize };
        &self.sources[start..self.ends[m] as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A CSR graph from an edge list.
    pub(crate) fn csr(n: usize, edges: &[(u32, u32)]) -> (Vec<u32>, Vec<u32>) {
        let mut offsets = vec![0u32; n + 1];
        let mut sorted = edges.to_vec();
        sorted.sort_by_key(|e| e.0);
        for &(u, _) in &sorted {
            offsets[u as usize + 1] += 1;
        }
        for i in 1..=n {
            offsets[i] += offsets[i - 1];
        }
        (offsets, sorted.into_iter().map(|e| e.1).collect())
    }

    #[test]
    fn a_diamond_is_dominated_by_its_top() {
        // 0 → 1, 0 → 2, 1 → 3, 2 → 3; root 0.
        let (offsets, edges) = csr(4, &[(0, 1), (0, 2), (1, 3), (2, 3)]);
        let d = dominators(Graph { offsets: &offsets, edges: &edges, roots: &[0] });
        assert_eq!(d.idom, vec![4, 0, 0, 0, 4]);
    }

    #[test]
    fn a_long_chain_needs_no_recursion() {
        let n = 2_000_000u32;
        let list: Vec<(u32, u32)> = (0..n - 1).map(|i| (i, i + 1)).collect();
        let (offsets, edges) = csr(n as usize, &list);
        let d = dominators(Graph { offsets: &offsets, edges: &edges, roots: &[0] });
        assert_eq!(d.idom[n as usize - 1], n - 2);
        assert_eq!(d.order.len(), n as usize + 1);
    }
}
