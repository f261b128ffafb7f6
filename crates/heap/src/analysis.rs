//! What the dominator tree tells: each object's retained size, shallow and retained size by type,
//! and the top of the tree.

use std::collections::HashMap;

use crate::dominators::{Graph, dominators};
use crate::model::{HeapSnapshot, NONE, ObjectIndex};

/// How much of the dominator tree [`Analysis::new`] keeps for reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TreeLimits {
    /// Levels below the super-root (1: only the objects the roots hold directly).
    pub depth: usize,
    /// Children kept per node, the largest by retained size.
    pub width: usize,
}

impl Default for TreeLimits {
    fn default() -> Self {
        TreeLimits { depth: 5, width: 10 }
    }
}

/// Per type, over the objects reachable from a root.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TypeStats {
    pub count: u64,
    /// Shallow bytes: the sum of the objects' own sizes.
    pub bytes: u64,
    /// Retained bytes: what would be freed if every object of the type went away — the size of
    /// the union of the objects the type's instances dominate (each counted once). It is the sum of
    /// the retained sizes of the type's instances that no other instance of the type dominates, so
    /// a linked list's nodes are not counted once per node above them.
    pub retained: u64,
}

/// One node of the top of the dominator tree: an object and the largest objects it dominates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DominatorNode {
    pub object: ObjectIndex,
    pub children: Vec<DominatorNode>,
}

/// The analysis of one snapshot: immediate dominators, retained sizes, the statistics by type.
/// Objects no root reaches are left out of every figure and counted apart.
#[derive(Debug, Clone)]
pub struct Analysis {
    /// `objects() + 1` entries, the last the super-root: each object's immediate dominator,
    /// [`NONE`] for an unreachable object.
    idom: Vec<u32>,
    /// `objects() + 1` entries: retained bytes (the super-root's is every reachable byte).
    retained: Retained,
    /// Indexed by type.
    pub types: Vec<TypeStats>,
    pub reachable_objects: u64,
    pub reachable_bytes: u64,
    pub unreachable_objects: u64,
    pub unreachable_bytes: u64,
    /// The top of the dominator tree: the super-root's children, as far as the limits allow.
    pub top: Vec<DominatorNode>,
}

/// Who immediately dominates an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dominator {
    /// Only the roots together: the object is held directly by a root, or by several paths that
    /// meet nowhere but at the roots.
    Roots,
    Object(ObjectIndex),
}

impl Analysis {
    /// Analyses `heap` (which must be valid: [`HeapSnapshot::validate`]).
    pub fn new(heap: &HeapSnapshot, limits: TreeLimits) -> Self {
        let n = heap.objects();
        let roots: Vec<u32> = heap.roots.iter().filter(|r| r.kind.retains()).map(|r| r.object).collect();
        let d = dominators(Graph { offsets: heap.offsets(), edges: heap.edges(), roots: &roots });
        drop(roots);
        let idom = d.idom;

        // Retained sizes: children come after their dominator in the order, so walking it
        // backwards adds each object's total to its dominator after its own is complete.
        let mut retained = Retained::new(n + 1);
        for &v in d.order[1..].iter().rev() {
            retained.add(v, heap.size_of(v));
            retained.add(idom[v as usize], retained.get(v));
        }
        drop(d.order);

        let mut analysis = Analysis {
            idom,
            retained,
            types: vec![TypeStats::default(); heap.types.len()],
            reachable_objects: 0,
            reachable_bytes: 0,
            unreachable_objects: 0,
            unreachable_bytes: 0,
            top: Vec::new(),
        };
        for v in 0..n as u32 {
            let size = heap.size_of(v);
            if analysis.is_reachable(v) {
                let stats = &mut analysis.types[heap.type_of(v) as usize];
                stats.count += 1;
                stats.bytes += size;
                analysis.reachable_objects += 1;
                analysis.reachable_bytes += size;
            } else {
                analysis.unreachable_objects += 1;
                analysis.unreachable_bytes += size;
            }
        }
        let children = Children::new(&analysis.idom);
        analysis.retained_by_type(heap, &children);
        analysis.top = analysis.tree(&children, n as u32, limits.depth.min(64), limits.width);
        analysis
    }

    /// Whether a root (other than a weak handle) reaches `object`.
    pub fn is_reachable(&self, object: ObjectIndex) -> bool {
        self.idom[object as usize] != NONE
    }

    /// The bytes that would be freed if `object` went away (0 when unreachable).
    pub fn retained(&self, object: ObjectIndex) -> u64 {
        self.retained.get(object)
    }

    /// `object`'s immediate dominator, or `None` when no root reaches it.
    pub fn immediate_dominator(&self, object: ObjectIndex) -> Option<Dominator> {
        match self.idom[object as usize] {
            NONE => None,
            d if d as usize == self.idom.len() - 1 => Some(Dominator::Roots),
            d => Some(Dominator::Object(d)),
        }
    }

    /// Retained bytes by type (see [`TypeStats::retained`]): a walk of the dominator tree with a
    /// count per type of the instances above the current object; an instance with none above it
    /// adds its retained size to its type.
    fn retained_by_type(&mut self, heap: &HeapSnapshot, children: &Children) {
        let super_root = self.idom.len() as u32 - 1;
        let mut above = vec![0u32; heap.types.len()];
        let mut stack: Vec<(u32, u32)> = vec![(super_root, 0)];
        while let Some(top) = stack.last_mut() {
            let (v, next) = *top;
            if let Some(&w) = children.of(v).get(next as usize) {
                top.1 += 1;
                let t = heap.type_of(w) as usize;
                if above[t] == 0 {
                    self.types[t].retained += self.retained.get(w);
                }
                above[t] += 1;
                stack.push((w, 0));
            } else {
                stack.pop();
                if v != super_root {
                    above[heap.type_of(v) as usize] -= 1;
                }
            }
        }
    }

    /// `v`'s largest dominated children, `depth` levels down (bounded, so recursion is safe).
    fn tree(&self, children: &Children, v: u32, depth: usize, width: usize) -> Vec<DominatorNode> {
        if depth == 0 || width == 0 {
            return Vec::new();
        }
        let mut kids = children.of(v).to_vec();
        let by_retained = |a: &u32, b: &u32| self.retained.get(*b).cmp(&self.retained.get(*a)).then(a.cmp(b));
        if kids.len() > width {
            kids.select_nth_unstable_by(width - 1, by_retained);
            kids.truncate(width);
        }
        kids.sort_by(by_retained);
        kids.into_iter()
            .map(|object| DominatorNode { object, children: self.tree(children, object, depth - 1, width) })
            .collect()
    }
}

/// Retained sizes, 4 bytes per object: almost every object retains less than 4 GiB, and the few
/// that retain more (the top of a big heap) are kept in a map.
#[derive(Debug, Clone)]
struct Retained {
    small: Vec<u32>,
    large: HashMap<u32, u64>,
}

impl Retained {
    fn new(len: usize) -> Self {
        Retained { small: vec![0; len], large: HashMap::new() }
    }

    fn get(&self, v: u32) -> u64 {
        match self.small[v as usize] {
            u32::MAX => self.large[&v],
            small => small as u64,
        }
    }

    fn add(&mut self, v: u32, amount: u64) {
        let sum = self.get(v) + amount;
        match u32::try_from(sum) {
            Ok(small) if small != u32::MAX => self.small[v as usize] = small,
            _ => {
                self.small[v as usize] = u32::MAX;
                self.large.insert(v, sum);
            }
        }
    }
}

/// The dominator tree downwards, in CSR form (8 bytes per object, only while analysing).
struct Children {
    offsets: Vec<u32>,
    kids: Vec<u32>,
}

impl Children {
    fn new(idom: &[u32]) -> Self {
        let nodes = idom.len(); // objects + the super-root
        let objects = &idom[..nodes - 1];
        let mut offsets = vec![0u32; nodes + 1];
        for &d in objects.iter().filter(|&&d| d != NONE) {
            offsets[d as usize + 1] += 1;
        }
        for i in 1..=nodes {
            offsets[i] += offsets[i - 1];
        }
        // `offsets[d]` is `d`'s cursor while filling; shifted back afterwards.
        let mut kids = vec![0u32; offsets[nodes] as usize];
        for (v, &d) in objects.iter().enumerate().filter(|&(_, &d)| d != NONE) {
            kids[offsets[d as usize] as usize] = v as u32;
            offsets[d as usize] += 1;
        }
        offsets.copy_within(0..nodes, 1);
        offsets[0] = 0;
        Children { offsets, kids }
    }

    fn of(&self, v: u32) -> &[u32] {
        &self.kids[self.offsets[v as usize] as usize..self.offsets[v as usize + 1] as usize]
    }
}
