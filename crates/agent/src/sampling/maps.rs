//! Which memory the signal handler may read while walking a stack.
//!
//! The handler follows frame pointers; a corrupt or foreign frame pointer must not make it read
//! unmapped memory (a fault inside our handler would take the program down). So it only reads
//! inside the writable anonymous mapping that contains the interrupted stack pointer — a thread's
//! stack — taken from a table of such mappings built from `/proc/self/maps` off the signal path.
//! The table is published through an atomic pointer and old tables are kept (they are small and
//! replaced rarely: when a sample finds its stack in no known mapping), so the handler never
//! reads freed memory.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering::*};

/// Sorted, non-overlapping `[start, end)` ranges.
pub struct StackRanges {
    ranges: Vec<(usize, usize)>,
}

static CURRENT: AtomicPtr<StackRanges> = AtomicPtr::new(std::ptr::null_mut());
/// Set by the handler when a stack was in no known range; the drain thread then refreshes.
static STALE: AtomicBool = AtomicBool::new(true);
/// Every table ever published, so none is freed while a handler might read it.
static ALL: Mutex<Vec<&'static StackRanges>> = Mutex::new(Vec::new());

impl StackRanges {
    /// Parses `/proc/self/maps` text: keeps readable+writable private mappings that are anonymous
    /// or the main thread's `[stack]` (thread stacks are anonymous `rw-p` mappings).
    pub fn parse(maps: &str) -> StackRanges {
        let mut ranges: Vec<(usize, usize)> = maps
            .lines()
            .filter_map(|line| {
                let mut fields = line.split_whitespace();
                let (range, perms) = (fields.next()?, fields.next()?);
                let path = fields.nth(3).unwrap_or("");
                if !perms.starts_with("rw") || !(path.is_empty() || path == "[stack]") {
                    return None;
                }
                let (start, end) = range.split_once('-')?;
                Some((usize::from_str_radix(start, 16).ok()?, usize::from_str_radix(end, 16).ok()?))
            })
            .collect();
        ranges.sort_unstable();
        // Adjacent anonymous mappings are equally readable: merge them.
        let mut merged: Vec<(usize, usize)> = Vec::with_capacity(ranges.len());
        for (start, end) in ranges {
            match merged.last_mut() {
                Some(last) if start <= last.1 => last.1 = last.1.max(end),
                _ => merged.push((start, end)),
            }
        }
        StackRanges { ranges: merged }
    }

    /// The range containing `addr`. Async-signal-safe: a binary search over immutable data.
    pub fn containing(&self, addr: usize) -> Option<(usize, usize)> {
        let i = self.ranges.partition_point(|&(start, _)| start <= addr);
        let (start, end) = *self.ranges.get(i.checked_sub(1)?)?;
        (addr < end).then_some((start, end))
    }
}

/// The published table, if any (for the signal handler).
pub fn current() -> Option<&'static StackRanges> {
    // SAFETY: CURRENT is null or points to a leaked table that is never freed.
    unsafe { CURRENT.load(Acquire).as_ref() }
}

/// Called by the handler when a stack pointer fell outside every known range.
pub fn mark_stale() {
    STALE.store(true, Relaxed);
}

/// Re-reads `/proc/self/maps` if a handler asked for it. Not for signal context.
pub fn refresh_if_stale() {
    if !STALE.swap(false, Relaxed) {
        return;
    }
    let Ok(text) = std::fs::read_to_string("/proc/self/maps") else { return };
    let table: &'static StackRanges = Box::leak(Box::new(StackRanges::parse(&text)));
    ALL.lock().unwrap_or_else(|e| e.into_inner()).push(table);
    CURRENT.store(std::ptr::from_ref(table).cast_mut(), Release);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_anonymous_writable_mappings_and_merges_neighbours() {
        let maps = "\
55d0c0000000-55d0c0021000 r-xp 00000000 08:01 123 /usr/bin/dotnet
7f0000000000-7f0000001000 ---p 00000000 00:00 0
7f0000001000-7f0000801000 rw-p 00000000 00:00 0
7f0000801000-7f0000802000 rw-p 00000000 00:00 0
7f0000900000-7f0000901000 rw-p 00000000 08:01 99 /usr/lib/libc.so.6
7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                          [stack]
";
        let table = StackRanges::parse(maps);
        assert_eq!(table.ranges, vec![(0x7f0000001000, 0x7f0000802000), (0x7ffd00000000, 0x7ffd00021000)]);
        assert_eq!(table.containing(0x7f0000400000), Some((0x7f0000001000, 0x7f0000802000)));
        assert_eq!(table.containing(0x7f0000000800), None); // guard page
        assert_eq!(table.containing(0x7f0000900800), None); // file-backed
        assert_eq!(table.containing(0x7ffd00020fff), Some((0x7ffd00000000, 0x7ffd00021000)));
        assert_eq!(table.containing(0x7ffd00021000), None);
        assert_eq!(table.containing(0), None);
    }

    #[test]
    fn this_threads_stack_is_found() {
        mark_stale();
        refresh_if_stale();
        let local = 0u64;
        let addr = std::ptr::from_ref(&local) as usize;
        assert!(current().unwrap().containing(addr).is_some());
    }
}
