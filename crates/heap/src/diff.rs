//! Two snapshots compared by type: `sonde.heapdiff/1`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::report::HeapReport;

/// The schema name of a heap diff.
pub const HEAP_DIFF_SCHEMA: &str = "sonde.heapdiff/1";

/// `sonde.heapdiff/1`: per type, both snapshots' figures and the changes, the largest growth in
/// bytes first (then in count).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeapDiff {
    pub schema: String,
    pub types: Vec<TypeChange>,
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
        HeapDiff { schema: HEAP_DIFF_SCHEMA.to_string(), types }
    }

    /// The diff as JSON text.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("plain structs serialize")
    }
}
