//! The model of one heap snapshot: objects, the references between them as one compact graph,
//! the type and field-name tables, the roots, and the facts of the run.

use serde::{Deserialize, Serialize};

/// An object's index in a snapshot (dense, `0..objects()`).
pub type ObjectIndex = u32;

/// "No value" in the `u32` tables (no field name, no object).
pub const NONE: u32 = u32::MAX;

/// The most objects a snapshot holds. The analyses borrow the top bit of an index as a flag
/// (`dominators.rs`) and index `objects()` as the virtual super-root, so indices stay below 2³¹.
pub const MAX_OBJECTS: usize = (1 << 31) - 2;

/// What kind of root holds an object, as the runtime reports it (CoreCLR's `COR_PRF_GC_ROOT_KIND`
/// and flags; Mono's `MONO_PROFILER_GC_ROOT_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum RootKind {
    /// A local or argument on a thread's stack (or a register).
    Stack,
    /// A strong GC handle (`GCHandle.Alloc`, the runtime's own handles).
    StrongHandle,
    /// A pinned GC handle (`GCHandleType.Pinned`, `fixed` buffers handed to native code).
    PinnedHandle,
    /// A weak handle. It does not keep its object alive, so the analyses never start from it:
    /// it is listed among the roots but holds nothing.
    WeakHandle,
    /// The finalizer queue: objects waiting for their finalizer to run.
    FinalizerQueue,
    /// A static field (`Acme.Cache.Items`).
    StaticField,
    /// Any other root the runtime reports.
    Other,
}

impl RootKind {
    /// The name used in JSON and text: `stack`, `strong_handle`, … .
    pub fn as_str(self) -> &'static str {
        match self {
            RootKind::Stack => "stack",
            RootKind::StrongHandle => "strong_handle",
            RootKind::PinnedHandle => "pinned_handle",
            RootKind::WeakHandle => "weak_handle",
            RootKind::FinalizerQueue => "finalizer_queue",
            RootKind::StaticField => "static",
            RootKind::Other => "other",
        }
    }

    /// Whether the root keeps its object alive (every kind but a weak handle).
    pub fn retains(self) -> bool {
        self != RootKind::WeakHandle
    }
}

/// One root: what kind, a name a user recognises (the static field `Acme.Cache.Items`, the thread
/// `worker-3 (tid 4242)`, `strong handle`), and the object it points at.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Root {
    pub kind: RootKind,
    pub name: String,
    pub object: ObjectIndex,
}

/// The facts of the run the snapshot was taken in.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunFacts {
    /// `coreclr` or `mono`.
    pub runtime: String,
    pub pid: u32,
    /// How long the program was paused for the snapshot, in nanoseconds.
    pub pause_ns: u64,
}

/// One heap snapshot in compact form: per object a type index and a shallow size; the
/// references as a CSR graph (each object's targets are `edges[offsets[i]..offsets[i + 1]]`,
/// with an optional field-name index per edge). About 12 bytes per object plus 4 (6 with field
/// names) per reference.
///
/// Build one with [`crate::HeapBuilder`]; read one with [`crate::read_heap`]. Every index in it
/// is in range ([`HeapSnapshot::validate`]), so the analyses index without checks.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeapSnapshot {
    pub run: RunFacts,
    /// Type names as the program's source spells them, indexed by [`HeapSnapshot::type_of`].
    pub types: Vec<String>,
    /// Field names, indexed by the edges' field indices.
    pub fields: Vec<String>,
    pub roots: Vec<Root>,
    /// References the runtime reported to objects that were not in the snapshot (dropped).
    pub missing_references: u64,
    pub(crate) object_types: Vec<u32>,
    /// Shallow sizes; `u32::MAX` means "look in `large_sizes`" (objects of 4 GiB and more are
    /// rare, and a `u64` per object would cost 4 more bytes each).
    pub(crate) sizes: Vec<u32>,
    pub(crate) large_sizes: Vec<(ObjectIndex, u64)>,
    /// `objects() + 1` offsets into `edges`.
    pub(crate) offsets: Vec<u32>,
    pub(crate) edges: Vec<ObjectIndex>,
    /// One field index per edge, or none at all.
    pub(crate) edge_fields: Option<EdgeFields>,
}

/// The field index of each edge: 2 bytes each while there are fewer than 65,535 field names
/// (always, in practice: names, not fields, are interned), 4 beyond. The all-ones value of each
/// width means "no field" (an array's element).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum EdgeFields {
    Narrow(Vec<u16>),
    Wide(Vec<u32>),
}

impl EdgeFields {
    /// Field indices for `len` edges when there are `names` field names, all "no field".
    pub(crate) fn new(len: usize, names: usize) -> Self {
        if names < u16::MAX as usize {
            EdgeFields::Narrow(vec![u16::MAX; len])
        } else {
            EdgeFields::Wide(vec![NONE; len])
        }
    }

    pub(crate) fn len(&self) -> usize {
        match self {
            EdgeFields::Narrow(v) => v.len(),
            EdgeFields::Wide(v) => v.len(),
        }
    }

    /// The field index of edge `i`, [`NONE`] for none.
    pub(crate) fn get(&self, i: usize) -> u32 {
        match self {
            EdgeFields::Narrow(v) => match v[i] {
                u16::MAX => NONE,
                f => f as u32,
            },
            EdgeFields::Wide(v) => v[i],
        }
    }

    /// Sets edge `i`'s field index (`field` below the width's limit, or [`NONE`]).
    pub(crate) fn set(&mut self, i: usize, field: u32) {
        match self {
            EdgeFields::Narrow(v) => v[i] = if field == NONE { u16::MAX } else { field as u16 },
            EdgeFields::Wide(v) => v[i] = field,
        }
    }
}

/// Why a snapshot's tables do not hold together (a corrupt file, or a bug in a builder).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidHeap(pub String);

impl HeapSnapshot {
    /// Number of objects.
    pub fn objects(&self) -> usize {
        self.object_types.len()
    }

    /// Number of references.
    pub fn references(&self) -> usize {
        self.edges.len()
    }

    /// The type index of `object`.
    pub fn type_of(&self, object: ObjectIndex) -> u32 {
        self.object_types[object as usize]
    }

    /// The type name of `object`.
    pub fn type_name(&self, object: ObjectIndex) -> &str {
        &self.types[self.type_of(object) as usize]
    }

    /// The shallow size of `object` in bytes.
    pub fn size_of(&self, object: ObjectIndex) -> u64 {
        match self.sizes[object as usize] {
            u32::MAX => match self.large_sizes.binary_search_by_key(&object, |&(o, _)| o) {
                Ok(i) => self.large_sizes[i].1,
                Err(_) => u32::MAX as u64,
            },
            size => size as u64,
        }
    }

    /// The objects `object` references.
    pub fn references_of(&self, object: ObjectIndex) -> &[ObjectIndex] {
        &self.edges[self.edge_range(object)]
    }

    /// The objects `object` references, each with its field name index ([`NONE`] when unknown).
    pub fn references_with_fields(&self, object: ObjectIndex) -> impl Iterator<Item = (ObjectIndex, u32)> + '_ {
        let range = self.edge_range(object);
        let (start, fields) = (range.start, self.edge_fields.as_ref());
        self.edges[range].iter().enumerate().map(move |(i, &to)| (to, fields.map_or(NONE, |f| f.get(start + i))))
    }

    /// The bytes the per-object and per-reference tables hold (not the names).
    pub fn table_bytes(&self) -> usize {
        let fields = match &self.edge_fields {
            Some(EdgeFields::Narrow(v)) => 2 * v.len(),
            Some(EdgeFields::Wide(v)) => 4 * v.len(),
            None => 0,
        };
        4 * (self.object_types.len() + self.sizes.len() + self.offsets.len() + self.edges.len())
            + 12 * self.large_sizes.len()
            + fields
    }

    /// Whether the references carry field names (a field index per reference).
    pub fn has_field_names(&self) -> bool {
        self.edge_fields.is_some()
    }

    /// The field name for a field index, if it has one.
    pub fn field_name(&self, field: u32) -> Option<&str> {
        self.fields.get(field as usize).map(String::as_str)
    }

    /// The index of the type named `name`, if the snapshot has it.
    pub fn type_named(&self, name: &str) -> Option<u32> {
        self.types.iter().position(|t| t == name).map(|i| i as u32)
    }

    pub(crate) fn offsets(&self) -> &[u32] {
        &self.offsets
    }

    pub(crate) fn edges(&self) -> &[u32] {
        &self.edges
    }

    fn edge_range(&self, object: ObjectIndex) -> std::ops::Range<usize> {
        self.offsets[object as usize] as usize..self.offsets[object as usize + 1] as usize
    }

    /// Checks that every index is in range and the tables agree in length: what a reader must
    /// know before the analyses index into them.
    pub fn validate(&self) -> Result<(), InvalidHeap> {
        let bad = |what: String| Err(InvalidHeap(what));
        let n = self.object_types.len();
        if n > MAX_OBJECTS {
            return bad(format!("{n} objects, above the limit of {MAX_OBJECTS}"));
        }
        if self.sizes.len() != n {
            return bad(format!("{} sizes for {n} objects", self.sizes.len()));
        }
        if let Some(&t) = self.object_types.iter().find(|&&t| t as usize >= self.types.len()) {
            return bad(format!("type index {t} beyond the {} types", self.types.len()));
        }
        if !self.large_sizes.windows(2).all(|w| w[0].0 < w[1].0)
            || self.large_sizes.iter().any(|&(o, _)| o as usize >= n)
        {
            return bad("the large sizes are not sorted object indices".into());
        }
        if self.offsets.len() != n + 1 || self.offsets[0] != 0 {
            return bad(format!("{} offsets for {n} objects", self.offsets.len()));
        }
        if !self.offsets.windows(2).all(|w| w[0] <= w[1]) || self.offsets[n] as usize != self.edges.len() {
            return bad("the reference offsets do not cover the references in order".into());
        }
        if let Some(&e) = self.edges.iter().find(|&&e| e as usize >= n) {
            return bad(format!("a reference to object {e} of {n}"));
        }
        if let Some(fields) = &self.edge_fields {
            if fields.len() != self.edges.len() {
                return bad(format!("{} field indices for {} references", fields.len(), self.edges.len()));
            }
            if let Some(f) =
                (0..fields.len()).map(|i| fields.get(i)).find(|&f| f != NONE && f as usize >= self.fields.len())
            {
                return bad(format!("field index {f} beyond the {} field names", self.fields.len()));
            }
        }
        if let Some(root) = self.roots.iter().find(|r| r.object as usize >= n) {
            return bad(format!("a root to object {} of {n}", root.object));
        }
        Ok(())
    }
}
