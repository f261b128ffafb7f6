//! Two snapshots compared by type: `sonde.heapdiff/1`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::model::HeapSnapshot;
use crate::paths::PathIndex;
use crate::report::{HeapReport, PathRow, StepRow, path_row};

/// The schema name of a heap diff.
pub const HEAP_DIFF_SCHEMA: &str = "sonde.heapdiff/1";

/// `sonde.heapdiff/1`: per type, both snapshots' figures and the changes, the largest growth in
/// bytes first (then in count).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeapDiff {
    pub schema: String,
    pub types: Vec<TypeChange>,
    /// The types that grew the most in count, each with its retention paths in both snapshots
    /// matched by shape, the largest growth first: where the new objects hang ([`HeapDiff::suspects`]).
    #[serde(default)]
    pub suspects: Vec<Suspect>,
}

/// A type that grew, and the shapes of its shortest paths from the roots in both snapshots.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Suspect {
    pub name: String,
    pub count_change: i64,
    pub paths: Vec<PathChange>,
}

/// One path shape of a [`Suspect`] in both snapshots (zeros where it has none).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PathChange {
    pub steps: Vec<StepRow>,
    pub base_objects: u64,
    pub new_objects: u64,
    pub objects_change: i64,
    pub base_bytes: u64,
    pub new_bytes: u64,
    pub bytes_change: i64,
}

/// One type in both snapshots (zeros where it has no reachable instance).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TypeChange {
    pub name: String,
    pub base_count: u64,
    pub new_count: u64,
    pub count_change: i64,
    pub base_bytes: u64,
    pub new_bytes: u64,
    pub bytes_change: i64,
    pub retained_change: i64,
    pub base_retained_bytes: u64,
    pub new_retained_bytes: u64,
}

impl HeapDiff {
    /// `new` compared with `base`, types matched by name.
    pub fn new(base: &HeapReport, new: &HeapReport) -> Self {
        #[derive(Default)]
        struct Both {
            base: (u64, u64, u64),
            new: (u64, u64, u64),
        }
        let mut by_name: BTreeMap<&str, Both> = BTreeMap::new();
        for t in &base.types {
            by_name.entry(&t.name).or_default().base = (t.count, t.bytes, t.retained_bytes);
        }
        for t in &new.types {
            by_name.entry(&t.name).or_default().new = (t.count, t.bytes, t.retained_bytes);
        }
        let change = |a: u64, b: u64| b as i64 - a as i64;
        let mut types: Vec<TypeChange> = by_name
            .into_iter()
            .map(|(name, Both { base, new })| TypeChange {
                name: name.to_string(),
                base_count: base.0,
                new_count: new.0,
                count_change: change(base.0, new.0),
                base_bytes: base.1,
                new_bytes: new.1,
                bytes_change: change(base.1, new.1),
                retained_change: change(base.2, new.2),
                base_retained_bytes: base.2,
                new_retained_bytes: new.2,
            })
            .collect();
        // Stable after the name order: ties stay alphabetical.
        types.sort_by(|a, b| b.bytes_change.cmp(&a.bytes_change).then(b.count_change.cmp(&a.count_change)));
        HeapDiff { schema: HEAP_DIFF_SCHEMA.to_string(), types, suspects: Vec::new() }
    }

    /// Fills [`HeapDiff::suspects`]: for the `types` types whose count grew the most, their path
    /// shapes in `base` and `new` (the snapshots the reports were made from), matched by shape,
    /// the largest growth in objects first, at most `paths` each. Objects cannot be matched across
    /// snapshots (a collection moves them), shapes can: the shape whose count grew is where the
    /// new objects are held.
    pub fn with_suspects(mut self, base: &HeapSnapshot, new: &HeapSnapshot, types: usize, paths: usize) -> Self {
        let mut grown: Vec<&TypeChange> = self.types.iter().filter(|t| t.count_change > 0).collect();
        grown.sort_by(|a, b| b.count_change.cmp(&a.count_change).then(b.bytes_change.cmp(&a.bytes_change)));
        grown.truncate(types);
        if grown.is_empty() {
            return self;
        }
        let names: Vec<&str> = grown.iter().map(|t| t.name.as_str()).collect();
        let (base_rows, new_rows) = (grown_rows(base, &names), grown_rows(new, &names));
        let mut suspects = Vec::with_capacity(grown.len());
        for ((t, base_rows), new_rows) in grown.into_iter().zip(base_rows).zip(new_rows) {
            // Per shape: (objects, bytes) in the base, then in the new snapshot.
            type Both = ((u64, u64), (u64, u64));
            let mut shapes: BTreeMap<Vec<StepRow>, Both> = BTreeMap::new();
            for row in base_rows {
                shapes.entry(row.steps).or_default().0 = (row.objects, row.bytes);
            }
            for row in new_rows {
                shapes.entry(row.steps).or_default().1 = (row.objects, row.bytes);
            }
            let mut changes: Vec<PathChange> = shapes
                .into_iter()
                .map(|(steps, ((base_objects, base_bytes), (new_objects, new_bytes)))| PathChange {
                    steps,
                    base_objects,
                    new_objects,
                    objects_change: new_objects as i64 - base_objects as i64,
                    base_bytes,
                    new_bytes,
                    bytes_change: new_bytes as i64 - base_bytes as i64,
                })
                .collect();
            // The shapes that hold the change; the unchanged ones say nothing about it.
            changes.retain(|c| c.objects_change != 0);
            changes.sort_by(|a, b| b.objects_change.cmp(&a.objects_change).then(b.bytes_change.cmp(&a.bytes_change)));
            changes.truncate(paths);
            suspects.push(Suspect { name: t.name.clone(), count_change: t.count_change, paths: changes });
        }
        self.suspects = suspects;
        self
    }

    /// The diff as JSON text.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("plain structs serialize")
    }
}

/// The path rows of each of the types `names` in `heap` (none for a type it does not have): one
/// walk and one pass over the objects for all of them.
fn grown_rows(heap: &HeapSnapshot, names: &[&str]) -> Vec<Vec<PathRow>> {
    let types: Vec<Option<u32>> = names.iter().map(|name| heap.type_named(name)).collect();
    let present: Vec<u32> = types.iter().flatten().copied().collect();
    let mut groups = PathIndex::new(heap).groups_of(heap, &present).into_iter();
    types
        .iter()
        .map(|ty| match ty {
            Some(_) => groups.next().unwrap_or_default().iter().map(|g| path_row(heap, g)).collect(),
            None => Vec::new(),
        })
        .collect()
}
