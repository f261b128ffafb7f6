//! The shortest paths from the roots to each object, grouped by shape.
//!
//! One breadth-first walk from the super-root gives every reachable object a shortest path
//! (ties go to the root listed first, then to the referrer reached first). Paths are not stored:
//! each object gets the id of its path's *shape* — the root's kind and name, then per step the
//! object's type and the field it was reached through — interned as a tree of shapes, so that a
//! million entries of one dictionary share one shape and the walk costs 4 bytes per object.
//!
//! Two folds keep the number of shapes bounded on recursive structures: consecutive objects of
//! the same type are one step marked `repeated` (a linked list, a tree's nodes), and a path longer
//! than [`MAX_STEPS`] ends in a step marked `more` shared by all its longer variants.

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};

use crate::model::{HeapSnapshot, NONE, ObjectIndex, RootKind};

/// The longest path shape kept before the rest is folded into one step.
pub const MAX_STEPS: usize = 32;

/// One step of a path shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathStep {
    /// Where it starts: the root's kind and name.
    Root { kind: RootKind, name: String },
    /// An object of type `ty`, reached through the field `field` of the step before ([`NONE`]
    /// when the runtime did not name it, e.g. an array's element, or from a root).
    Object {
        ty: u32,
        field: u32,
        /// Several consecutive objects of this type (a linked list's nodes).
        repeated: bool,
        /// The path goes on beyond [`MAX_STEPS`] steps: this step stands for the rest.
        more: bool,
    },
}

/// The objects of one type whose shortest paths from the roots have the same shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathGroup {
    pub steps: Vec<PathStep>,
    pub objects: u64,
    /// Their shallow bytes.
    pub bytes: u64,
}

/// The walk looks a shape up once per object (10 million lookups): SipHash's resistance to
/// chosen keys buys nothing for keys that are our own small integers, and costs half the walk.
/// This is the Fx hash (rustc's), multiply and rotate per word.
#[derive(Default)]
struct FxHasher(u64);

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }

    fn write_u32(&mut self, n: u32) {
        self.write_u64(n as u64);
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

type FxMap<K, V> = HashMap<K, V, BuildHasherDefault<FxHasher>>;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Key {
    /// The index of the first root with this kind and name.
    Root(u32),
    Object {
        ty: u32,
        field: u32,
    },
}

#[derive(Debug, Clone)]
struct Shape {
    parent: u32,
    key: Key,
    depth: u32,
    repeated: bool,
    more: bool,
}

/// Every reachable object's shortest-path shape.
#[derive(Debug, Clone)]
pub struct PathIndex {
    /// Per object, its shape ([`NONE`]: unreachable).
    shape_of: Vec<u32>,
    shapes: Vec<Shape>,
}

impl PathIndex {
    /// The breadth-first walk from the roots (weak handles excluded) of `heap`.
    pub fn new(heap: &HeapSnapshot) -> Self {
        let mut index = PathIndex { shape_of: vec![NONE; heap.objects()], shapes: Vec::new() };
        let mut interned: FxMap<(u32, Key), u32> = FxMap::default();
        let mut root_groups: HashMap<(RootKind, &str), u32> = HashMap::new();
        let mut queue = VecDeque::new();
        for (i, root) in heap.roots.iter().enumerate() {
            if !root.kind.retains() || index.shape_of[root.object as usize] != NONE {
                continue;
            }
            let group = *root_groups.entry((root.kind, root.name.as_str())).or_insert(i as u32);
            let start = index.intern(&mut interned, NONE, Key::Root(group));
            let key = Key::Object { ty: heap.type_of(root.object), field: NONE };
            index.shape_of[root.object as usize] = index.intern(&mut interned, start, key);
            queue.push_back(root.object);
        }
        while let Some(u) = queue.pop_front() {
            let from = index.shape_of[u as usize];
            for (v, field) in heap.references_with_fields(u) {
                if index.shape_of[v as usize] == NONE {
                    let key = Key::Object { ty: heap.type_of(v), field };
                    index.shape_of[v as usize] = index.intern(&mut interned, from, key);
                    queue.push_back(v);
                }
            }
        }
        index
    }

    /// The shape one step after `parent`, folded as the module doc says.
    fn intern(&mut self, interned: &mut FxMap<(u32, Key), u32>, parent: u32, key: Key) -> u32 {
        if parent != NONE {
            let p = &mut self.shapes[parent as usize];
            match (p.key, key) {
                (Key::Object { ty: a, .. }, Key::Object { ty: b, .. }) if a == b => {
                    p.repeated = true;
                    return parent;
                }
                _ if p.more || p.depth as usize + 1 >= MAX_STEPS => {
                    p.more = true;
                    return parent;
                }
                _ => {}
            }
        }
        *interned.entry((parent, key)).or_insert_with(|| {
            let depth = if parent == NONE { 0 } else { self.shapes[parent as usize].depth + 1 };
            self.shapes.push(Shape { parent, key, depth, repeated: false, more: false });
            self.shapes.len() as u32 - 1
        })
    }

    /// Whether `object` is reachable from a root.
    pub fn is_reachable(&self, object: ObjectIndex) -> bool {
        self.shape_of[object as usize] != NONE
    }

    /// The shortest-path groups of the reachable objects of type `ty`, the most bytes first.
    pub fn groups(&self, heap: &HeapSnapshot, ty: u32) -> Vec<PathGroup> {
        self.groups_of(heap, &[ty]).pop().unwrap_or_default()
    }

    /// [`PathIndex::groups`] of each of `types`, in their order, from one pass over the objects
    /// (the HTML report embeds the paths of its top types: one pass, not one per type).
    pub fn groups_of(&self, heap: &HeapSnapshot, types: &[u32]) -> Vec<Vec<PathGroup>> {
        let mut slot_of: FxMap<u32, usize> = FxMap::default();
        for (slot, &ty) in types.iter().enumerate() {
            slot_of.entry(ty).or_insert(slot);
        }
        let mut by_shape: Vec<FxMap<u32, (u64, u64)>> = vec![FxMap::default(); types.len()];
        for v in 0..heap.objects() as u32 {
            let shape = self.shape_of[v as usize];
            if shape == NONE {
                continue;
            }
            if let Some(&slot) = slot_of.get(&heap.type_of(v)) {
                let entry = by_shape[slot].entry(shape).or_default();
                entry.0 += 1;
                entry.1 += heap.size_of(v);
            }
        }
        types
            .iter()
            .map(|ty| {
                let mut groups: Vec<PathGroup> = by_shape[slot_of[ty]]
                    .iter()
                    .map(|(&shape, &(objects, bytes))| PathGroup { steps: self.steps(heap, shape), objects, bytes })
                    .collect();
                groups.sort_by(|a, b| {
                    b.bytes.cmp(&a.bytes).then(b.objects.cmp(&a.objects)).then(a.steps.len().cmp(&b.steps.len()))
                });
                groups
            })
            .collect()
    }

    fn steps(&self, heap: &HeapSnapshot, mut shape: u32) -> Vec<PathStep> {
        let mut steps = Vec::new();
        while shape != NONE {
            let s = &self.shapes[shape as usize];
            steps.push(match s.key {
                Key::Root(i) => {
                    let root = &heap.roots[i as usize];
                    PathStep::Root { kind: root.kind, name: root.name.clone() }
                }
                Key::Object { ty, field } => PathStep::Object { ty, field, repeated: s.repeated, more: s.more },
            });
            shape = s.parent;
        }
        steps.reverse();
        steps
    }
}
