//! One slot per sampled thread: its ring, and what the drain needs. Each sampler keeps its own
//! per-thread bookkeeping in an array of its own, under the same index. Slots are found by index
//! from the sampling signal's value, or by thread id (cached in a TLS word) from an external
//! sampler's handler; they are never freed or reused for another thread id.

use super::common::COUNTERS;
use super::ring::Ring;
use crate::tree::threads;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering::*};

/// Threads that can be sampled at once; more are counted as not sampled.
pub const MAX_THREADS: usize = 1024;
const RING_WORDS: usize = 1 << 14;

/// One sampled thread.
pub(super) struct Slot {
    pub tid: AtomicU32,
    pub ring: AtomicPtr<Ring>,
    /// Sampled while set; cleared when the thread is destroyed or gone.
    pub active: AtomicBool,
    /// Intervals the thread spent blocked since its last sample, charged to that sample's stack
    /// (the signal sampler adds, its handler or the drain takes).
    pub idle_periods: AtomicU64,
    /// Drain-thread bookkeeping: the call-tree node of the thread's last sample (+1; 0: none).
    pub last_leaf: AtomicU32,
}

#[allow(clippy::declare_interior_mutable_const)]
const EMPTY_SLOT: Slot = Slot {
    tid: AtomicU32::new(0),
    ring: AtomicPtr::new(std::ptr::null_mut()),
    active: AtomicBool::new(false),
    idle_periods: AtomicU64::new(0),
    last_leaf: AtomicU32::new(0),
};
static SLOTS: [Slot; MAX_THREADS] = [EMPTY_SLOT; MAX_THREADS];
static USED: AtomicUsize = AtomicUsize::new(0);

/// The slots handed out so far.
pub(super) fn used() -> &'static [Slot] {
    &SLOTS[..USED.load(Acquire).min(MAX_THREADS)]
}

/// Slot `index`, if handed out.
pub(super) fn get(index: usize) -> Option<&'static Slot> {
    used().get(index)
}

impl Slot {
    /// The slot's ring, once published (a slot's ring is set before its tid is published and
    /// never freed).
    pub fn ring(&self) -> Option<&'static Ring> {
        // SAFETY: the pointer is null or a leaked `Box<Ring>`, never freed.
        unsafe { self.ring.load(Acquire).as_ref() }
    }
}

/// Thread `tid`'s slot index, and whether it is new (its ring allocated, its thread id not yet
/// published: see [`activate`]); `None` when every slot is taken.
pub(super) fn claim(tid: u32) -> Option<(usize, bool)> {
    if let Some(index) = used().iter().position(|s| s.tid.load(Relaxed) == tid) {
        return Some((index, false));
    }
    let index = USED.fetch_add(1, AcqRel);
    let Some(slot) = SLOTS.get(index) else {
        USED.store(MAX_THREADS, Release);
        COUNTERS.too_many_threads.fetch_add(1, Relaxed);
        return None;
    };
    slot.ring.store(Box::into_raw(Box::new(Ring::new(RING_WORDS))), Release);
    Some((index, true))
}

/// Publishes a new slot's thread id (after the samplers set their bookkeeping up) and starts
/// sampling it.
pub(super) fn activate(index: usize, tid: u32) {
    if let Some(slot) = SLOTS.get(index) {
        slot.tid.store(tid, Release);
        slot.active.store(true, Release);
    }
}

/// Stops sampling thread `tid` (its samples so far stay to be drained).
pub fn unregister(tid: u32) {
    for slot in used() {
        if slot.tid.load(Relaxed) == tid {
            slot.active.store(false, Release);
        }
    }
}

/// Samples dropped because a ring was full, over every thread.
pub(super) fn ring_full() -> u64 {
    used().iter().filter_map(Slot::ring).map(|r| r.dropped.load(Relaxed)).sum()
}

/// The calling thread's slot: cached in a thread-local after the first look-up. Async-signal-safe.
pub(super) fn current_slot() -> Option<(usize, &'static Slot)> {
    let cached = cache::get();
    if cached != 0 {
        return Some((cached - 1, SLOTS.get(cached - 1)?));
    }
    let tid = threads::gettid();
    let index = used().iter().position(|s| s.tid.load(Acquire) == tid)?;
    cache::set(index + 1);
    Some((index, SLOTS.get(index)?))
}

/// The calling thread's slot index + 1 (0: not looked up yet), for [`current_slot`]: an
/// initial-exec TLS word (`tree::tls`), like `threads::slot`: safe in a signal handler, where a
/// `thread_local!` is not.
#[cfg(target_arch = "x86_64")]
mod cache {
    crate::tree::tls::tls_word!("sonde_sample_slot");
}

/// Elsewhere: no cache, the thread id is looked up every time.
#[cfg(not(target_arch = "x86_64"))]
mod cache {
    pub fn get() -> usize {
        0
    }

    pub fn set(_value: usize) {}
}
