//! Exact allocation counts by type, without a lock or a shared write on the allocating thread.
//!
//! Where the runtime reports every allocation — Mono always (its allocation event, whether Sonde
//! samples or not), CoreCLR in exact mode (`ObjectAllocated`) — each one counts here. Each thread
//! counts its own: a small table of its own, keyed by class handle, whose counters only it
//! writes — a probe, a load and a store, no locked instruction, no cache line shared with another
//! thread. A class's first allocation in the process names it and gives it a shared counter
//! (under a mutex, once: [`KeyIds`] then maps the class to it without a lock); a thread's first
//! allocation of a class takes a slot of its table. The bytes need no second sum: a class's
//! objects all have the size of its first one, but for arrays and strings, whose difference to it
//! goes to a second one.
//!
//! A thread that ends adds its counts to the shared counters (its thread-local's destructor) and
//! frees its table, so nothing is kept per ended thread; a thread that allocates more classes
//! than its table holds counts the rest on the shared counters (relaxed atomic additions), as do
//! allocations after its table is gone. A snapshot adds the live threads' tables to the shared
//! counters under the lock that folding takes: no allocation is counted twice or missed.
//!
//! Shared counters are never moved or freed: chunks of [`CHUNK`], allocated as they are needed,
//! up to [`MAX_TYPES`] classes; the allocations of any class beyond those count under the last
//! one's name, `?`. A snapshot merges classes of one name (a type loaded twice), in the order each
//! was first allocated.

use crate::tree::ids::KeyIds;
use sonde_profile::AllocationCount;
use std::cell::Cell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering::*};
use std::sync::{Arc, Mutex, OnceLock};

/// Counters per chunk (64 bytes each: 16 KB a chunk).
const CHUNK: usize = 256;
const CHUNKS: usize = 1024;
/// Classes counted one by one; the last counter takes every class beyond.
const MAX_TYPES: usize = CHUNK * CHUNKS;

/// One class's objects so far; its bytes are `count × size + extra`.
#[repr(align(64))]
struct Counter {
    count: AtomicU64,
    /// The size of the class's first object, set before the class is published.
    size: AtomicU64,
    /// What the objects of another size (arrays, strings) had beyond `size`, wrapping (a smaller
    /// one adds a "negative" difference; the sum is right modulo 2^64).
    extra: AtomicU64,
}

impl Counter {
    const fn new() -> Counter {
        Counter { count: AtomicU64::new(0), size: AtomicU64::new(0), extra: AtomicU64::new(0) }
    }

    #[inline(always)]
    fn add(&self, size: u64) {
        self.count.fetch_add(1, Relaxed);
        let usual = self.size.load(Relaxed);
        if size != usual {
            self.extra.fetch_add(size.wrapping_sub(usual), Relaxed);
        }
    }

    /// (objects, bytes) so far.
    fn read(&self) -> (u64, u64) {
        let count = self.count.load(Relaxed);
        let bytes = count.wrapping_mul(self.size.load(Relaxed)).wrapping_add(self.extra.load(Relaxed));
        (count, bytes)
    }
}

/// Class handle → index of its counter + 1.
static CLASSES: KeyIds = KeyIds::new();
static COUNTERS: [OnceLock<Box<[Counter]>>; CHUNKS] = [const { OnceLock::new() }; CHUNKS];
/// Every counter's type name, by index: the writers' lock, and the number of counters given out.
static NAMES: Mutex<Vec<String>> = Mutex::new(Vec::new());
/// Allocations with no class handle (the runtime gave none), counted as `?`.
static UNKNOWN: Counter = Counter::new();

/// The counter at `index` (its chunk exists once the index was given out).
#[inline(always)]
fn counter(index: usize) -> Option<&'static Counter> {
    COUNTERS.get(index / CHUNK)?.get()?.get(index % CHUNK)
}

/// Counts one allocation of `size` bytes of the class `key` if the class has a counter; false
/// when it has none yet ([`add_first`]). Usually on the thread's own table (a probe, a load and
/// a store); else on the shared counter.
#[inline]
pub fn add(key: usize, size: u64) -> bool {
    LOCAL.try_with(|local| local.add(key, size)).unwrap_or_else(|_| add_shared(key, size))
}

/// Counts on the class's shared counter (relaxed atomic additions); false when it has none yet.
fn add_shared(key: usize, size: u64) -> bool {
    let Some(counter) = CLASSES.get(key).and_then(|id| counter(id as usize - 1)) else { return false };
    counter.add(size);
    true
}

/// Slots of a thread's table: it counts up to half as many classes itself.
const LOCAL_SLOTS: usize = 128;

/// One class in a thread's table. Only the owning thread writes it; snapshots read it.
#[derive(Default)]
struct LocalSlot {
    /// The class handle (0: free), stored last (`Release`) when the slot is taken.
    key: AtomicUsize,
    /// Its shared counter's index, and that counter's usual size.
    index: AtomicU32,
    size: AtomicU64,
    count: AtomicU64,
    extra: AtomicU64,
}

impl LocalSlot {
    /// Owner only: a load and a store each, no locked instruction.
    #[inline(always)]
    fn add(&self, size: u64) {
        self.count.store(self.count.load(Relaxed).wrapping_add(1), Relaxed);
        let usual = self.size.load(Relaxed);
        if size != usual {
            self.extra.store(self.extra.load(Relaxed).wrapping_add(size.wrapping_sub(usual)), Relaxed);
        }
    }

    /// (shared counter index, objects, bytes), for a taken slot.
    fn read(&self) -> Option<(usize, u64, u64)> {
        if self.key.load(Acquire) == 0 {
            return None;
        }
        let count = self.count.load(Relaxed);
        let bytes = count.wrapping_mul(self.size.load(Relaxed)).wrapping_add(self.extra.load(Relaxed));
        Some((self.index.load(Relaxed) as usize, count, bytes))
    }
}

type LocalTable = Arc<[LocalSlot]>;

/// The live threads' tables (registered at a thread's first allocation, removed as it ends).
/// Held while a snapshot reads, and while an ending thread moves its counts to the shared
/// counters.
static LIVE: Mutex<Vec<LocalTable>> = Mutex::new(Vec::new());

/// This thread's table, and how many of its slots are taken: boxed, so that the thread-local is
/// one pointer (a loaded agent takes its thread-locals from the small static reserve glibc keeps
/// for libraries loaded after start-up, shared with every other such library).
struct Local(Box<LocalState>);

struct LocalState {
    table: LocalTable,
    taken: Cell<usize>,
}

thread_local! {
    static LOCAL: Local = Local::register();
}

impl Local {
    #[cold]
    fn register() -> Local {
        let table: LocalTable = (0..LOCAL_SLOTS).map(|_| LocalSlot::default()).collect();
        LIVE.lock().unwrap_or_else(|e| e.into_inner()).push(table.clone());
        Local(Box::new(LocalState { table, taken: Cell::new(0) }))
    }

    #[inline(always)]
    fn add(&self, key: usize, size: u64) -> bool {
        let mask = LOCAL_SLOTS - 1;
        // Fibonacci hashing of the handle, as in `KeyIds`.
        let mut at = ((key as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - LOCAL_SLOTS.trailing_zeros())) as usize;
        loop {
            let Some(slot) = self.0.table.get(at) else { return add_shared(key, size) };
            match slot.key.load(Relaxed) {
                k if k == key => {
                    slot.add(size);
                    return true;
                }
                0 => return self.take(slot, key, size),
                _ => at = (at + 1) & mask,
            }
        }
    }

    /// The thread's first allocation of class `key`: a slot of its own, or the shared counter
    /// when its table is half full; false when the class has no counter yet.
    #[cold]
    fn take(&self, slot: &LocalSlot, key: usize, size: u64) -> bool {
        let Some(index) = CLASSES.get(key).map(|id| id as usize - 1) else { return false };
        let Some(shared) = counter(index) else { return false };
        if self.0.taken.get() * 2 >= LOCAL_SLOTS {
            shared.add(size);
            return true;
        }
        slot.index.store(index as u32, Relaxed);
        slot.size.store(shared.size.load(Relaxed), Relaxed);
        slot.key.store(key, Release);
        self.0.taken.set(self.0.taken.get() + 1);
        slot.add(size);
        true
    }
}

/// The thread ends: its counts go to the shared counters and its table is freed, at once for
/// snapshots (which hold [`LIVE`]). A slot's usual size is its class's shared counter's, so the
/// objects and the extra bytes add up as they are.
impl Drop for Local {
    fn drop(&mut self) {
        let mut live = LIVE.lock().unwrap_or_else(|e| e.into_inner());
        for slot in self.0.table.iter().filter(|s| s.key.load(Relaxed) != 0) {
            if let Some(shared) = counter(slot.index.load(Relaxed) as usize) {
                shared.count.fetch_add(slot.count.load(Relaxed), Relaxed);
                shared.extra.fetch_add(slot.extra.load(Relaxed), Relaxed);
            }
        }
        live.retain(|t| !Arc::ptr_eq(t, &self.0.table));
    }
}

/// Counts the allocation [`add`] had no counter for: gives the class one, named by `name` (`None`:
/// `?`), then counts. Under the writers' mutex, once per class (another thread may have given it
/// one meanwhile).
#[cold]
pub fn add_first(key: usize, name: impl FnOnce() -> Option<String>, size: u64) {
    if key == 0 {
        UNKNOWN.add(size);
        return;
    }
    let counter = {
        let mut names = NAMES.lock().unwrap_or_else(|e| e.into_inner());
        match CLASSES.get(key) {
            Some(id) => counter(id as usize - 1),
            None => {
                // Past `MAX_TYPES - 1` classes, every new one shares the last counter, `?`.
                let index = names.len().min(MAX_TYPES - 1);
                let new = index == names.len();
                if new {
                    let chunk = COUNTERS[index / CHUNK].get_or_init(|| (0..CHUNK).map(|_| Counter::new()).collect());
                    chunk[index % CHUNK].size.store(size, Relaxed);
                    let last = index == MAX_TYPES - 1;
                    names.push(if last { None } else { name() }.unwrap_or_else(|| "?".into()));
                }
                if CLASSES.insert(key, index as u32 + 1) {
                    counter(index)
                } else {
                    // The table cannot grow (2^31 slots): not in practice.
                    if new {
                        names.pop();
                    }
                    None
                }
            }
        }
    };
    counter.unwrap_or(&UNKNOWN).add(size);
}

/// Threads with a table of their own now (live threads that allocated): what stays bounded
/// however many threads ended.
pub fn tables() -> usize {
    LIVE.lock().unwrap_or_else(|e| e.into_inner()).len()
}

/// The counts so far, one entry per type name, in the order each was first allocated (`?` last
/// for allocations without a class): the shared counters plus the live threads' tables, read
/// while no thread can move its counts from one to the other.
pub fn snapshot() -> Vec<AllocationCount> {
    let names = NAMES.lock().unwrap_or_else(|e| e.into_inner());
    let live = LIVE.lock().unwrap_or_else(|e| e.into_inner());
    let mut totals: Vec<(u64, u64)> = (0..names.len()).map(|i| counter(i).map_or((0, 0), Counter::read)).collect();
    for (index, count, bytes) in live.iter().flat_map(|t| t.iter().filter_map(LocalSlot::read)) {
        if let Some(total) = totals.get_mut(index) {
            *total = (total.0.wrapping_add(count), total.1.wrapping_add(bytes));
        }
    }
    drop(live);
    let unknown = UNKNOWN.read();
    let mut out: Vec<AllocationCount> = Vec::new();
    let mut index_of: HashMap<&str, usize> = HashMap::new();
    let all = names.iter().map(String::as_str).zip(totals).chain(std::iter::once(("?", unknown)));
    for (name, (count, bytes)) in all {
        if count == 0 {
            continue;
        }
        let at = *index_of.entry(name).or_insert_with(|| {
            out.push(AllocationCount { type_name: name.to_string(), bytes: 0, count: 0 });
            out.len() - 1
        });
        out[at].count = out[at].count.saturating_add(count);
        out[at].bytes = out[at].bytes.saturating_add(bytes);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counted(name: &str) -> Option<(u64, u64)> {
        snapshot().into_iter().find(|a| a.type_name == name).map(|a| (a.count, a.bytes))
    }

    /// Threads allocating the same classes at once lose no allocation; two classes of one name
    /// are one type; each class is named once; objects of a class's other sizes (an array's, a
    /// string's), smaller or larger than its first, count their own bytes.
    #[test]
    fn every_allocation_counts_from_any_thread() {
        const THREADS: u64 = 4;
        const EACH: u64 = 100_000;
        let keys = [0x7f10_0000_0100usize, 0x7f10_0000_0200, 0x7f10_0000_0300];
        // Small: 24 bytes each; Twice: 40 bytes (keys[1]) or 16 to 64 (keys[2], an array).
        let size = |key: usize, i: u64| match key {
            k if k == keys[0] => 24,
            k if k == keys[1] => 40,
            _ => 16 + (i % 7) * 8,
        };
        let named = std::sync::atomic::AtomicU32::new(0);
        std::thread::scope(|scope| {
            for _ in 0..THREADS {
                scope.spawn(|| {
                    for i in 0..EACH {
                        let key = keys[(i % 3) as usize];
                        let name = if key == keys[0] { "Test.ByType.Small" } else { "Test.ByType.Twice" };
                        if !add(key, size(key, i)) {
                            let name = || {
                                named.fetch_add(1, Relaxed);
                                Some(name.into())
                            };
                            add_first(key, name, size(key, i));
                        }
                    }
                });
            }
        });
        assert_eq!(named.load(Relaxed), 3, "each class named once");
        let (mut small, mut twice) = ((0, 0), (0, 0));
        for i in 0..EACH {
            let key = keys[(i % 3) as usize];
            let sum = if key == keys[0] { &mut small } else { &mut twice };
            *sum = (sum.0 + THREADS, sum.1 + THREADS * size(key, i));
        }
        assert_eq!(counted("Test.ByType.Small"), Some(small));
        assert_eq!(counted("Test.ByType.Twice"), Some(twice));
    }

    /// A live thread's counts are in every snapshot, those of the classes beyond what its table
    /// holds too (on the shared counters).
    #[test]
    fn a_live_threads_counts_and_its_overflow_are_seen() {
        let classes = LOCAL_SLOTS as u64; // twice what one thread counts itself
        for round in 1..=3u64 {
            for class in 0..classes {
                let key = 0x7f30_0000_0000 + class as usize * 64;
                let size = 16 + class * 8;
                if !add(key, size) {
                    add_first(key, || Some(format!("Test.ByType.Live{class}")), size);
                }
            }
            for class in 0..classes {
                let name = format!("Test.ByType.Live{class}");
                assert_eq!(counted(&name), Some((round, round * (16 + class * 8))), "{name}");
            }
        }
    }
}
