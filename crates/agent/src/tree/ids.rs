//! Pointer-sized runtime handles → small ids, readable from a hot path without a lock: Mono's
//! `MonoMethod*` → method id (its enter/leave callbacks get only the pointer, where CoreCLR hands
//! the hooks the id its function-ID mapper returned), Mono's code starts → compiled-method index
//! (sampling), a class handle → its allocation counter (`events::by_type`, on every allocation).
//!
//! An open-addressing table (linear probing, multiplicative hash of the pointer) whose slots are
//! atomics — a hash, a load or two, no lock, no allocation.
//!
//! Writers (the call-instrumentation filter at JIT time, a class's first allocation) serialise on
//! a mutex. A table never fills past half, so a probe always meets an empty slot. Growing builds
//! the next, twice as large table, copies every entry and publishes it; the old table stays
//! readable (a reader may be in it) and is simply kept, so memory is at most twice the live table.
//! A key is stored after its id (`Release`), and readers load keys with `Acquire`, so a reader that
//! sees a key sees its id. A method is inserted before its code first runs, so no call misses its
//! own method.

use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering::*};
use std::sync::{Mutex, OnceLock};

/// The first table holds 2^FIRST_BITS slots; table `i` holds twice as many as table `i - 1`.
const FIRST_BITS: u32 = 12;
const MAX_TABLES: usize = 20;
/// Key of an empty slot (no handle is null).
const EMPTY: usize = 0;

struct Table {
    bits: u32,
    keys: Box<[AtomicUsize]>,
    ids: Box<[AtomicU32]>,
}

impl Table {
    fn new(bits: u32) -> Table {
        let size = 1usize << bits;
        Table {
            bits,
            keys: (0..size).map(|_| AtomicUsize::new(EMPTY)).collect(),
            ids: (0..size).map(|_| AtomicU32::new(0)).collect(),
        }
    }

    #[inline(always)]
    fn home(&self, key: usize) -> usize {
        // Fibonacci hashing: the top bits of the product mix every bit of the pointer.
        ((key as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - self.bits)) as usize
    }

    #[inline(always)]
    fn get(&self, key: usize) -> Option<u32> {
        let mask = self.keys.len() - 1;
        let mut slot = self.home(key);
        loop {
            let k = self.keys.get(slot)?.load(Acquire);
            if k == EMPTY {
                return None;
            }
            if k == key {
                return Some(self.ids.get(slot)?.load(Relaxed));
            }
            slot = (slot + 1) & mask;
        }
    }

    /// Writer only (under the mutex), with room to spare.
    fn put(&self, key: usize, id: u32) {
        let mask = self.keys.len() - 1;
        let mut slot = self.home(key);
        loop {
            let k = self.keys[slot].load(Relaxed);
            if k == key {
                return;
            }
            if k == EMPTY {
                self.ids[slot].store(id, Relaxed);
                self.keys[slot].store(key, Release);
                return;
            }
            slot = (slot + 1) & mask;
        }
    }
}

/// The Mono backend's name for it (method and code-start keys).
pub type MethodIds = KeyIds;

pub struct KeyIds {
    tables: [OnceLock<Table>; MAX_TABLES],
    /// Index of the live table.
    live: AtomicUsize,
    /// Entries in the live table; guards writers.
    len: Mutex<usize>,
}

impl Default for KeyIds {
    fn default() -> Self {
        Self::new()
    }
}

impl KeyIds {
    pub const fn new() -> KeyIds {
        KeyIds { tables: [const { OnceLock::new() }; MAX_TABLES], live: AtomicUsize::new(0), len: Mutex::new(0) }
    }

    /// The id of `method` (any key), if it has one. Lock-free; the hot path.
    #[inline(always)]
    pub fn get(&self, method: usize) -> Option<u32> {
        self.tables.get(self.live.load(Acquire))?.get()?.get(method)
    }

    /// Records `method` → `id` (a method already present keeps its id). False when the table
    /// cannot grow any further (then the method is not traced).
    pub fn insert(&self, method: usize, id: u32) -> bool {
        if method == EMPTY {
            return false;
        }
        let mut len = self.len.lock().unwrap_or_else(|e| e.into_inner());
        let mut live = self.live.load(Relaxed);
        let Some(slot) = self.tables.get(live) else { return false };
        let mut table = slot.get_or_init(|| Table::new(FIRST_BITS));
        if table.get(method).is_some() {
            return true;
        }
        if (*len + 1) * 2 > table.keys.len() {
            let Some(next) = self.tables.get(live + 1) else { return false };
            let bigger = next.get_or_init(|| Table::new(table.bits + 1));
            for (key, id) in table.keys.iter().zip(table.ids.iter()) {
                let key = key.load(Relaxed);
                if key != EMPTY {
                    bigger.put(key, id.load(Relaxed));
                }
            }
            live += 1;
            self.live.store(live, Release);
            table = bigger;
        }
        table.put(method, id);
        *len += 1;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_what_was_inserted_across_growth() {
        let ids = KeyIds::new();
        assert_eq!(ids.get(0x1000), None);
        let n = 20_000u32; // several doublings past the first table
        for i in 0..n {
            assert!(ids.insert(0x7f00_0000_0000 + i as usize * 56, i));
        }
        for i in 0..n {
            assert_eq!(ids.get(0x7f00_0000_0000 + i as usize * 56), Some(i), "method {i}");
        }
        assert_eq!(ids.get(0x7f00_0000_0000 + 8), None);
        assert!(ids.live.load(Relaxed) >= 3);
    }

    #[test]
    fn first_id_wins_and_null_is_refused() {
        let ids = KeyIds::new();
        assert!(ids.insert(0x40, 1));
        assert!(ids.insert(0x40, 2));
        assert_eq!(ids.get(0x40), Some(1));
        assert!(!ids.insert(0, 3));
        assert_eq!(ids.get(0), None);
    }

    #[test]
    fn readers_run_while_a_writer_grows_the_table() {
        static IDS: KeyIds = KeyIds::new();
        IDS.insert(0x10, 7);
        let reader = std::thread::spawn(|| {
            for _ in 0..200_000 {
                assert_eq!(IDS.get(0x10), Some(7));
            }
        });
        for i in 1..10_000usize {
            IDS.insert(0x10 + i * 16, i as u32);
        }
        reader.join().unwrap();
    }
}
