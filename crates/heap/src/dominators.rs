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
//! Memory, in preorder numbers: at the peak four `u32` arrays (parents that become immediate
//! dominators, semidominators, the compressed forest's ancestors and best semidominator values)
//! and the predecessors of the objects that have several (most objects in a heap have exactly one
//! referrer, which is then their parent in the depth-first tree and needs no storing).

use crate::model::NONE;

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
///
/// The arrays live only as long as they must, to keep the peak low: the preorder's objects are
/// dropped while the semidominators are computed (four arrays and the predecessors then) and
/// found again afterwards by the same deterministic walk.
pub(crate) fn dominators(graph: Graph<'_>) -> Dominators {
    let n = graph.n();
    let (vertex, mut parent) = preorder(graph, true);
    let mut number = vec![NONE; n + 1];
    for (i, &v) in vertex.iter().enumerate() {
        number[v as usize] = i as u32;
    }
    let preds = Predecessors::new(graph, &vertex, &number);
    drop(number);
    drop(vertex);
    let semi = semidominators(&preds, &parent);
    drop(preds);

    // Each immediate dominator is the nearest common ancestor of the parent and the
    // semidominator: walk up from the parent through the dominators already known (preorder).
    let idom = &mut parent;
    for w in 1..idom.len() {
        let mut x = idom[w];
        while x > semi[w] {
            x = idom[x as usize];
        }
        idom[w] = x;
    }
    drop(semi);

    let (vertex, _) = preorder(graph, false);
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
    // The pairs of the nodes not done yet: `pairs[..end]`.
    let mut end = preds.pairs.len();
    for w in (1..m as u32).rev() {
        let mut s = semi[w as usize];
        let only = [parent[w as usize]];
        let list: &[(u32, u32)] = if preds.has_many(w) {
            let start = preds.pairs[..end].partition_point(|&(x, _)| x < w);
            let list = &preds.pairs[start..end];
            end = start;
            list
        } else {
            &[]
        };
        let sources = list.iter().map(|&(_, v)| v).chain(if list.is_empty() { &only[..] } else { &[] }.iter().copied());
        for v in sources {
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

/// The depth-first preorder from the super-root (the super-root first), by an explicit stack (10
/// million objects in a linked list must not overflow the thread's stack); with `parents`, also
/// each node's parent's preorder number (0 for the super-root). Seen nodes are marked in a bit
/// set, an eighth of a byte per object.
fn preorder(graph: Graph<'_>, parents: bool) -> (Vec<u32>, Vec<u32>) {
    let n = graph.n();
    let mut seen = vec![0u64; (n + 1).div_ceil(64)];
    let mut vertex = vec![n as u32];
    let mut parent = if parents { vec![0u32] } else { Vec::new() };
    seen[n / 64] |= 1 << (n % 64);
    // (node, its preorder number, position of the next successor to look at)
    let mut stack: Vec<(u32, u32, u32)> = vec![(n as u32, 0, 0)];
    while let Some(top) = stack.last_mut() {
        let (v, number, next) = *top;
        if let Some(&w) = graph.successors(v).get(next as usize) {
            top.2 += 1;
            let (word, bit) = (w as usize / 64, 1u64 << (w % 64));
            if seen[word] & bit == 0 {
                seen[word] |= bit;
                stack.push((w, vertex.len() as u32, 0));
                vertex.push(w);
                if parents {
                    parent.push(number);
                }
            }
        } else {
            stack.pop();
        }
    }
    (vertex, parent)
}

/// Each reachable node's predecessors, in preorder numbers (see the module doc). A node with one
/// predecessor needs no entry: that one is its parent in the depth-first tree. The nodes with
/// several are marked in a bit set, and their (node, predecessor) pairs kept sorted by node, which
/// is the order the semidominator pass consumes them in (backwards).
struct Predecessors {
    many: Vec<u64>,
    /// (node, predecessor), sorted by node.
    pairs: Vec<(u32, u32)>,
}

impl Predecessors {
    fn new(graph: Graph<'_>, vertex: &[u32], number: &[u32]) -> Self {
        let words = vertex.len().div_ceil(64);
        let (mut once, mut many) = (vec![0u64; words], vec![0u64; words]);
        let targets = || {
            vertex
                .iter()
                .enumerate()
                .flat_map(|(u, &object)| graph.successors(object).iter().map(move |&v| (number[v as usize], u as u32)))
        };
        for (w, _) in targets() {
            let (word, bit) = (w as usize / 64, 1u64 << (w % 64));
            if once[word] & bit != 0 {
                many[word] |= bit;
            }
            once[word] |= bit;
        }
        drop(once);
        let mut pairs: Vec<(u32, u32)> =
            targets().filter(|&(w, _)| many[w as usize / 64] & (1 << (w % 64)) != 0).collect();
        pairs.sort_unstable();
        Predecessors { many, pairs }
    }

    fn has_many(&self, w: u32) -> bool {
        self.many[w as usize / 64] & (1 << (w % 64)) != 0
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
