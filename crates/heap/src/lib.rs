//! Sonde's heap snapshots, on the controller's side: the model of the object graph, its file,
//! and what holds the memory — retained sizes from the dominator tree, the shortest paths from the
//! roots grouped by shape, and the comparison of two snapshots (issue 40).
//!
//! # Design constraints
//!
//! A snapshot of a big service holds tens of millions of objects, and the controller must analyse
//! it in at most 40 bytes per object and ten seconds for ten million. So:
//!
//! - **The model is compact** ([`HeapSnapshot`]): per object a type index and a shallow size
//!   (`u32` each; the rare object of 4 GiB or more in a side table); the references as one CSR
//!   graph — `u32` object indices, all edges in one array with per-object offsets, and an optional
//!   `u32` field-name index per edge. The runtime's object ids (addresses) are mapped to dense
//!   indices once, by sorting, in the [`HeapBuilder`], which takes objects, references and roots
//!   in any order as the agent streams them.
//! - **Dominators by Cooper–Harvey–Kennedy** (`dominators.rs`), iterative on `u32` indices from a
//!   virtual super-root over the roots, with an explicit stack for the depth-first order. It needs
//!   fewer arrays than Lengauer–Tarjan, converges in a few passes on graphs as tree-like as heaps,
//!   and is checked against the definition of dominance by property tests. Predecessors are kept
//!   inline for the many objects with a single referrer (whose immediate dominator it is).
//! - **Retained sizes** fall out of one backward pass over that order; retained size *by type* is
//!   the size of the union of what the type's instances dominate ([`TypeStats::retained`]), from a
//!   walk of the dominator tree counting the instances above each object.
//! - **Paths** ([`PathIndex`]) come from one breadth-first walk: each object gets the id of its
//!   shortest path's *shape* (root kind and name, then types and fields), interned, so grouping a
//!   type's instances by path costs 4 bytes per object, not a path each.
//! - **Nothing recurses with the heap's depth**: a linked list of ten million nodes is a normal
//!   input. Only the bounded top of the dominator tree is built recursively.
//! - Weak handles are listed among the roots but hold nothing: the analyses start from the others.
//!   Objects no root reaches are left out of every figure and counted apart.
//! - A file is untrusted: corrupt or foreign input is a [`HeapFileError`], never a panic, and every
//!   index is checked before the analyses use it. Names are untrusted too: the text report escapes
//!   them ([`text::Clean`]).

#![forbid(unsafe_code)]

pub mod analysis;
pub mod builder;
pub mod diff;
mod dominators;
pub mod file;
pub mod model;
pub mod paths;
pub mod report;
pub mod text;

pub use analysis::{Analysis, Dominator, DominatorNode, TreeLimits, TypeStats};
pub use builder::{BuildError, HeapBuilder};
pub use diff::{HEAP_DIFF_SCHEMA, HeapDiff, TypeChange};
pub use file::{
    FileKind, HEAP_FORMAT_VERSION, HEAP_MAGIC, HeapFileError, file_kind, file_kind_of, load_heap, read_heap, save_heap,
    write_heap,
};
pub use model::{HeapSnapshot, InvalidHeap, MAX_OBJECTS, NONE, ObjectIndex, Root, RootKind, RunFacts};
pub use paths::{PathGroup, PathIndex, PathStep};
pub use report::{HEAP_SCHEMA, HeapReport};

#[cfg(test)]
mod tests;
