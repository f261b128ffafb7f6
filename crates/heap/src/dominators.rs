//! The dominator tree of the object graph, from a virtual super-root whose successors are the
//! roots' objects: the Semi-NCA algorithm (Georgiadis, "Linear-Time Algorithms for Dominators and
//! Related Problems", 2005; what LLVM's dominator trees use) on `u32` indices, with explicit
//! stacks — no recursion anywhere.
//!
//! Semi-NCA computes Lengauer and Tarjan's semidominators (one pass in reverse depth-first
//! preorder over the predecessors, with path compression), then each immediate dominator as the
//! nearest common ancestor of its parent and its semidominator, in preorder. Why not
//! Cooper–Harvey–Kennedy's iterative algorithm, tried first: its intersections walk the dominator
//! tree up to the common ancestor on every pass, and a heap has deep chains (a linked list of
//! 50,000 nodes, an object inside it also held from elsewhere): on a synthetic heap of a million
//! objects it took 50 s where Semi-NCA takes a fraction of one. Why not full Lengauer–Tarjan: it
//! needs buckets and labels besides, for no gain on graphs this shallow.
//!
//! Memory, in preorder numbers: five `u32` arrays (the preorder's objects, parents that become
//! immediate dominators, semidominators, the compressed forest's ancestors and best semidominator
//! values) and the predecessors, stored compactly: most objects in a heap have exactly one
//! referrer, so a `u32` per object holds that one inline, or (top bit set) the index of a list kept
//! for the objects that have several.

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

/// The result: each node's immediate dominator, and the reachable nodes in depth-first preorder.
pub(crate) struct Dominators {
    /// `n + 1` entries: `idom[v]` for every node, [`NONE`] when unreachable; the super-root `n` is
    /// its own.
    pub idom: Vec<u32>,
    /// The reachable nodes in depth-first preorder, the super-root first: every node comes after
    /// its immediate dominator (a dominator is an ancestor in any depth-first tree).
    pub order: Vec<u32>,
}

/// Computes the dominator tree of `graph` from its super-root.
pub(crate) fn dominators(graph: Graph<'_>) -> Dominators {
    let n = graph.n();
    let Preorder { vertex, mut parent, number } = preorder(graph);
    let preds = Predecessors::new(graph, &vertex, &number);
    drop(number);
    let semi = semidominators(&preds, &parent);
    drop(preds);

    // Each immediate dominator is the nearest common ancestor of the parent and the
    // semidominator: walk up from the parent through the dominators already known (preorder).
    let idom = &mut parent;
    for w in 1..vertex.len() {
        let mut x = idom[w];
        while x > semi[w] {
            x = idom[x as usize];
        }
        idom[w] = x;
    }
    drop(semi);

    let mut by_object = vec![NONE; n + 1];
    for (w, &v) in vertex.iter().enumerate() {
        by_object[v as usize] = vertex[idom[w] as usize];
    }
    Dominators { idom: by_object, order: vertex }
}

/// Semidominators in preorder numbers: for each `w` from the last, the least of its
/// predecessors' numbers below it and of the best semidominators on the forest paths from those
/// above it (path-compressed, iteratively).
fn semidominators(preds: &Predecessors, parent: &[u32]) -> Vec<u32> {
    let m = parent.len();
    let mut semi: Vec<u32> = (0..m as u32).collect();
    // The forest of the nodes done (numbers above the current one), each linked to its parent.
    let mut ancestor = parent.to_vec();
    // The least semidominator on the (compressed) path from a node up to below its forest root.
    let mut best: Vec<u32> = (0..m as u32).collect();
    let mut path: Vec<u32> = Vec::new();
    for w in (1..m as u32).rev() {
        let mut s = semi[w as usize];
        for &v in preds.of(w) {
            let candidate = if v <= w {
                v
            } else {
                // Compress v's path: top down, each node takes its ancestor's best and jumps to
                // the ancestor's ancestor.
                let mut y = v;
                while ancestor[y as usize] > w {
                    path.push(y);
                    y = ancestor[y as usize];
                }
                while let Some(y) = path.pop() {
                    let a = ancestor[y as usize] as usize;
                    best[y as usize] = best[y as usize].min(best[a]);
                    ancestor[y as usize] = ancestor[a];
                }
                best[v as usize]
            };
            s = s.min(candidate);
        }
        semi[w as usize] = s;
        best[w as usize] = s;
    }
    semi
}

/// A depth-first preorder from the super-root.
struct Preorder {
    /// Preorder number → node (the super-root first).
    vertex: Vec<u32>,
    /// Preorder number → its parent's preorder number in the depth-first tree (0 for the root).
    parent: Vec<u32>,
    /// Node → preorder number ([`NONE`]: unreachable).
    number: Vec<u32>,
}

/// The depth-first preorder, by an explicit stack (10 million objects in a linked list must not
/// overflow the thread's stack).
fn preorder(graph: Graph<'_>) -> Preorder {
    let n = graph.n();
    let mut number = vec![NONE; n + 1];
    let mut vertex = vec![n as u32];
    let mut parent = vec![0u32];
    number[n] = 0;
    // (node, position of the next successor to look at)
    let mut stack: Vec<(u32, u32)> = vec![(n as u32, 0)];
    while let Some(top) = stack.last_mut() {
        let (v, next) = *top;
        if let Some(&w) = graph.successors(v).get(next as usize) {
            top.1 += 1;
            if number[w as usize] == NONE {
                number[w as usize] = vertex.len() as u32;
                vertex.push(w);
                parent.push(number[v as usize]);
                stack.push((w, 0));
            }
        } else {
            stack.pop();
        }
    }
    Preorder { vertex, parent, number }
}

/// Each reachable node's predecessors among the reachable nodes (see the module doc).
struct Predecessors {
    /// Per preorder number: the only predecessor, or `MANY | list index`; [`NONE`] for none.
    word: Vec<u32>,
    /// The lists: list `m` is `sources[ends[m - 1]..ends[m]]` (`0` for `m = 0`).
    ends: Vec<u32>,
    sources: Vec<u32>,
}

impl Predecessors {
    /// The predecessors of each node, all in preorder numbers.
    fn new(graph: Graph<'_>, vertex: &[u32], number: &[u32]) -> Self {
        let mut word = vec![NONE; vertex.len()];
        let mut counts: Vec<u32> = Vec::new();
        for (u, &object) in vertex.iter().enumerate() {
            for &v in graph.successors(object) {
                let w = &mut word[number[v as usize] as usize];
                if *w == NONE {
                    *w = u as u32;
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
        for (u, &object) in vertex.iter().enumerate() {
            for &v in graph.successors(object) {
                let w = word[number[v as usize] as usize];
                if w & MANY != 0 {
                    let cursor = &mut ends[(w & !MANY) as usize];
                    sources[*cursor as usize] = u as u32;
                    *cursor += 1;
                }
            }
        }
        Predecessors { word, ends, sources }
    }

    /// `w`'s predecessors (none for the super-root).
    fn of(&self, w: u32) -> &[u32] {
        let word = &self.word[w as usize];
        match *word {
            NONE => &[],
            x if x & MANY == 0 => std::slice::from_ref(word),
            x => self.list(x),
        }
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
        assert_eq!(d.order[1], 0);
    }
}
