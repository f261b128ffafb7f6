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
//!   field-name index per edge (2 bytes while there are fewer than 65,535 field names). About 12
//!   bytes per object and 6 per reference. The runtime's object ids (addresses) are mapped to
//!   dense indices once, by sorting, in the [`HeapBuilder`], which takes objects, references and
//!   roots in any order as the agent streams them.
//! - **Dominators by Semi-NCA** (`dominators.rs`): Lengauer and Tarjan's semidominators with path
//!   compression, then each immediate dominator as a nearest common ancestor — on `u32` preorder
//!   numbers from a virtual super-root over the roots, with explicit stacks. Cooper–Harvey–Kennedy's
//!   simpler iterative algorithm was tried first and dropped: on heaps with deep chains (linked
//!   lists with objects also held from elsewhere) its repeated walks up the tree took 50 s for a
//!   million objects. Predecessors are stored only for the objects with several referrers (the
//!   only referrer of the others is their depth-first parent), and the arrays are dropped as soon
//!   as they are done: the analysis adds about 19 bytes per object to the snapshot's 19.
//! - **Retained sizes** fall out of one backward pass over the depth-first preorder (a dominator
//!   comes before what it dominates), 4 bytes each (a map for the few above 4 GiB); retained size *by type* is
//!   the size of the union of what the type's instances dominate ([`TypeStats::retained`]), from a
//!   walk of the dominator tree counting the instances above each object.
//! - **Paths** ([`PathIndex`]) come from one breadth-first walk: each object gets the id of its
//!   shortest path's *shape* (root kind and name, then types and fields), interned, so grouping a
//!   type's instances by path costs 4 bytes per object, not a path each. Walk them before the
//!   [`Analysis`] or after dropping it: holding both at once raises the peak by about 6 bytes per
//!   object.
//! - **The builder** sorts 16-byte object records and maps 20-byte reference records in place:
//!   about 50 bytes per object at its peak, before the analysis starts (BENCHMARKS.md).
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
pub mod bulk;
pub mod clr;
pub mod diff;
mod dominators;
pub mod file;
pub mod model;
pub mod paths;
pub mod report;
pub mod text;

pub use analysis::{Analysis, Dominator, DominatorNode, TreeLimits, TypeStats};
pub use builder::{BuildError, HeapBuilder};
pub use clr::ClrHeapDecoder;
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
