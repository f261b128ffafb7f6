//! Samples by method and IL offset: where in a method its samples fell, for the controller to
//! turn into source lines (`sonde-symbols`). Filled by the drain (under its lock), read by every
//! snapshot; one table per process, its size bounded by the code that ran (one entry per IL offset
//! the JIT mapped and a sample hit).
//!
//! A sample counts `self` at its innermost frame's offset and `total` once at every (method,
//! offset) on its stack. Periods a thread spent blocked that the drain charges afterwards to its
//! previous stack (the wall clock's "before" and idle periods) go to its call-tree nodes only.

use super::symbols::AddressMap;
use sonde_protocol::LineRecord;
use std::sync::{Mutex, MutexGuard};

/// No IL offset for this frame (native code, a marker, a runtime that cannot say).
pub const NONE: u32 = u32::MAX;

/// (method, IL offset) → (self, total) samples.
type Counts = AddressMap<(u32, u32), (u64, u64)>;

static LINES: Mutex<Option<Counts>> = Mutex::new(None);

/// The table, locked for a drain.
/// A new session: no sample by line yet.
pub(super) fn reset() {
    *LINES.lock().unwrap_or_else(|e| e.into_inner()) = None;
}

pub(super) fn table() -> Table<'static> {
    Table { lines: LINES.lock().unwrap_or_else(|e| e.into_inner()), seen: Vec::new() }
}

pub(super) struct Table<'a> {
    lines: MutexGuard<'a, Option<Counts>>,
    /// The sample being counted's (method, offset) pairs, to count each once.
    seen: Vec<(u32, u32)>,
}

impl Table<'_> {
    /// Counts one sample of `weight` periods whose stack is `path` (root first) with `offsets`
    /// beside it ([`NONE`] where a frame has none).
    pub fn record(&mut self, path: &[u32], offsets: &[u32], weight: u64) {
        if weight == 0 || offsets.len() != path.len() {
            return;
        }
        let lines = self.lines.get_or_insert_with(Default::default);
        if let (Some(&method), Some(&offset)) = (path.last(), offsets.last())
            && offset != NONE
        {
            lines.entry((method, offset)).or_default().0 += weight;
        }
        self.seen.clear();
        self.seen.extend(path.iter().zip(offsets).filter(|&(_, &o)| o != NONE).map(|(&m, &o)| (m, o)));
        self.seen.sort_unstable();
        self.seen.dedup();
        for key in &self.seen {
            lines.entry(*key).or_default().1 += weight;
        }
    }
}

/// Everything counted so far, by method then offset.
pub fn snapshot() -> Vec<LineRecord> {
    let lines = LINES.lock().unwrap_or_else(|e| e.into_inner());
    let mut records: Vec<LineRecord> = lines
        .iter()
        .flatten()
        .map(|(&(method, il_offset), &(self_samples, total_samples))| LineRecord {
            method,
            il_offset,
            self_samples,
            total_samples,
        })
        .collect();
    records.sort_unstable_by_key(|r| (r.method, r.il_offset));
    records
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn self_at_the_leaf_total_once_per_offset() {
        let mut table = Table { lines: LINES.lock().unwrap(), seen: Vec::new() };
        *table.lines = None;
        // 1@4 → 2@8 → 2@8 (recursion at the same offset) → 3 (no offset)
        table.record(&[1, 2, 2, 3], &[4, 8, 8, NONE], 2);
        // 1@4 → 2@9 (leaf)
        table.record(&[1, 2], &[4, 9], 1);
        drop(table);
        let got: Vec<_> = snapshot().iter().map(|r| (r.method, r.il_offset, r.self_samples, r.total_samples)).collect();
        assert_eq!(got, vec![(1, 4, 0, 3), (2, 8, 0, 2), (2, 9, 1, 1)]);
    }
}
