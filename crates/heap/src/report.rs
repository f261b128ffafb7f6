//! The reports' data: `sonde.heap/1` (and `sonde.heapdiff/1`, [`crate::diff`]) as serde structs,
//! the one model the JSON and the text report are both made from.
//!
//! Names in these structs are the program's, unescaped; the text report escapes them
//! ([`crate::text`]), JSON escapes by construction.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::analysis::{Analysis, DominatorNode};
use crate::model::{HeapSnapshot, NONE, RootKind};
use crate::paths::{PathGroup, PathStep};

/// The schema name of a heap report.
pub const HEAP_SCHEMA: &str = "sonde.heap/1";

/// `sonde.heap/1`. The first nine keys are the contract, in its order; the others add to
/// it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeapReport {
    pub schema: String,
    pub runtime: String,
    pub pid: u32,
    /// Objects reachable from a root (the unreachable are counted apart).
    pub objects: u64,
    /// Their shallow bytes.
    pub bytes: u64,
    pub pause_ns: u64,
    /// Every type with a reachable instance, the most retained bytes first.
    pub types: Vec<TypeRow>,
    /// Roots grouped by kind and name, the most bytes first.
    pub roots: Vec<RootRow>,
    /// The top of the dominator tree, the most retained bytes first.
    pub dominators: Vec<DominatorRow>,
    /// The retention paths of the type asked for (`--paths TYPE`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paths: Option<Vec<PathRow>>,
    /// The type the paths are for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paths_type: Option<String>,
    /// Objects in the snapshot that no root reaches (garbage the collection had not freed), and
    /// their bytes: left out of every other figure.
    pub unreachable_objects: u64,
    pub unreachable_bytes: u64,
    /// References and roots the runtime reported to objects the snapshot does not have.
    pub missing_references: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TypeRow {
    pub name: String,
    pub count: u64,
    pub bytes: u64,
    /// See [`crate::TypeStats::retained`].
    pub retained_bytes: u64,
}

/// The roots of one kind and name (a static field; a thread's stack; the strong handles).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RootRow {
    pub kind: String,
    pub name: String,
    /// Distinct objects these roots point at.
    pub count: u64,
    /// The retained bytes of those objects. A root's object is dominated by no other object, so
    /// these are what the root alone holds, unless other roots hold the same objects (then each
    /// counts them). A weak handle's row has its objects' bytes, though it holds none of them.
    pub bytes: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DominatorRow {
    #[serde(rename = "type")]
    pub ty: String,
    pub retained_bytes: u64,
    /// The object's own (shallow) bytes.
    pub bytes: u64,
    pub children: Vec<DominatorRow>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PathRow {
    pub steps: Vec<StepRow>,
    pub objects: u64,
    pub bytes: u64,
}

/// One step of a path: `kind` is `root` (with `root_kind`, `root_name`) or `object` (with
/// `type`, and `field`: the field of the previous object it is reached through, when known).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct StepRow {
    pub kind: String,
    #[serde(rename = "type")]
    pub ty: Option<String>,
    pub field: Option<String>,
    pub root_kind: Option<String>,
    pub root_name: Option<String>,
    /// One or more consecutive objects of this type (a linked list's nodes).
    #[serde(default)]
    pub repeated: bool,
    /// The path goes on beyond this step (see [`crate::paths::MAX_STEPS`]).
    #[serde(default)]
    pub more: bool,
}

impl HeapReport {
    /// The report of `heap` as `analysis` sees it; `paths`, when given, is the type named and its
    /// groups ([`crate::PathIndex::groups`]).
    pub fn new(heap: &HeapSnapshot, analysis: &Analysis, paths: Option<(&str, &[PathGroup])>) -> Self {
        let mut types: Vec<TypeRow> = analysis
            .types
            .iter()
            .enumerate()
            .filter(|(_, s)| s.count > 0)
            .map(|(t, s)| TypeRow {
                name: heap.types[t].clone(),
                count: s.count,
                bytes: s.bytes,
                retained_bytes: s.retained,
            })
            .collect();
        types.sort_by(|a, b| {
            b.retained_bytes.cmp(&a.retained_bytes).then(b.bytes.cmp(&a.bytes)).then(a.name.cmp(&b.name))
        });

        HeapReport {
            schema: HEAP_SCHEMA.to_string(),
            runtime: heap.run.runtime.clone(),
            pid: heap.run.pid,
            objects: analysis.reachable_objects,
            bytes: analysis.reachable_bytes,
            pause_ns: heap.run.pause_ns,
            types,
            roots: root_rows(heap, analysis),
            dominators: analysis.top.iter().map(|node| dominator_row(heap, analysis, node)).collect(),
            paths: paths.map(|(_, groups)| groups.iter().map(|g| path_row(heap, g)).collect()),
            paths_type: paths.map(|(name, _)| name.to_string()),
            unreachable_objects: analysis.unreachable_objects,
            unreachable_bytes: analysis.unreachable_bytes,
            missing_references: heap.missing_references,
        }
    }

    /// The report as JSON text.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("plain structs serialize")
    }
}

fn root_rows(heap: &HeapSnapshot, analysis: &Analysis) -> Vec<RootRow> {
    let mut groups: BTreeMap<(RootKind, &str), Vec<u32>> = BTreeMap::new();
    for root in &heap.roots {
        groups.entry((root.kind, root.name.as_str())).or_default().push(root.object);
    }
    let mut rows: Vec<RootRow> = groups
        .into_iter()
        .map(|((kind, name), mut objects)| {
            objects.sort_unstable();
            objects.dedup();
            RootRow {
                kind: kind.as_str().to_string(),
                name: name.to_string(),
                count: objects.len() as u64,
                bytes: objects.iter().map(|&o| analysis.retained(o)).sum(),
            }
        })
        .collect();
    rows.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(b.count.cmp(&a.count)));
    rows
}

fn dominator_row(heap: &HeapSnapshot, analysis: &Analysis, node: &DominatorNode) -> DominatorRow {
    DominatorRow {
        ty: heap.type_name(node.object).to_string(),
        retained_bytes: analysis.retained(node.object),
        bytes: heap.size_of(node.object),
        children: node.children.iter().map(|c| dominator_row(heap, analysis, c)).collect(),
    }
}

/// A path group as the reports show it: type and field names instead of indices.
pub fn path_row(heap: &HeapSnapshot, group: &PathGroup) -> PathRow {
    let steps = group
        .steps
        .iter()
        .map(|step| match step {
            PathStep::Root { kind, name } => StepRow {
                kind: "root".into(),
                ty: None,
                field: None,
                root_kind: Some(kind.as_str().into()),
                root_name: Some(name.clone()),
                repeated: false,
                more: false,
            },
            PathStep::Object { ty, field, repeated, more } => StepRow {
                kind: "object".into(),
                ty: Some(heap.types[*ty as usize].clone()),
                field: (*field != NONE).then(|| heap.field_name(*field).unwrap_or("?").to_string()),
                root_kind: None,
                root_name: None,
                repeated: *repeated,
                more: *more,
            },
        })
        .collect();
    PathRow { steps, objects: group.objects, bytes: group.bytes }
}
