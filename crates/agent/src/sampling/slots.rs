//! One slot per sampled thread: its ring and the bookkeeping of whichever sampler samples it.
//! Slots are found by index from the sampling signal's value, or by thread id (cached in a TLS
//! word) from an external sampler's handler; they are never freed or reused for another index.

use super::ring::Ring;
use super::{CONFIG, COUNTERS, Sampler, external, signal};
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
    /// The signal sampler's bookkeeping.
    pub signal: signal::PerThread,
    /// The external sampler's bookkeeping.
    pub external: external::PerThread,
}

#[allow(clippy::declare_interior_mutable_const)]
const EMPTY_SLOT: Slot = Slot {
    tid: AtomicU32::new(0),
    ring: AtomicPtr::new(std::ptr::null_mut()),
    active: AtomicBool::new(false),
    idle_periods: AtomicU64::new(0),
    last_leaf: AtomicU32::new(0),
    signal: signal::PerThread::EMPTY,
    external: external::PerThread::EMPTY,
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

/// Starts sampling thread `tid` (any thread may call this; when the thread itself does, its
/// stack's limits are taken then — call it again from the thread if it was registered first from
/// elsewhere).
pub fn register(tid: u32) {
    let Some(config) = CONFIG.get() else { return };
    let own_thread = tid == threads::gettid();
    if let Some(slot) = used().iter().find(|s| s.tid.load(Relaxed) == tid) {
        if own_thread && config.sampler == Sampler::Signal {
            signal::registered_from_own_thread(&slot.signal);
        }
        return;
    }
    let index = USED.fetch_add(1, AcqRel);
    let Some(slot) = SLOTS.get(index) else {
        USED.store(MAX_THREADS, Release);
        COUNTERS.too_many_threads.fetch_add(1, Relaxed);
        return;
    };
    slot.ring.store(Box::into_raw(Box::new(Ring::new(RING_WORDS))), Release);
    match config.sampler {
        Sampler::Signal => signal::registered(&slot.signal, tid, own_thread),
        Sampler::External(clock) => external::registered(&slot.external, tid, clock),
    }
    slot.tid.store(tid, Release);
    slot.active.store(true, Release);
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
pub(super) fn current_slot() -> Option<&'static Slot> {
    let cached = cache::get();
    if cached != 0 {
        return SLOTS.get(cached - 1);
    }
    let tid = threads::gettid();
    let index = used().iter().position(|s| s.tid.load(Acquire) == tid)?;
    cache::set(index + 1);
    SLOTS.get(index)
}

/// The calling thread's slot index + 1 (0: not looked up yet), for [`current_slot`]: an
/// initial-exec TLS variable declared in assembly, like `threads::slot` — a Rust `thread_local!`
/// in a shared library goes through `__tls_get_addr`, which may allocate on a thread's first
/// access and so must not run in a signal handler. 8 more bytes of glibc's static TLS reserve.
#[cfg(target_arch = "x86_64")]
mod cache {
    core::arch::global_asm!(
        ".pushsection .tbss,\"awT\",@nobits",
        ".p2align 3",
        ".globl sonde_sample_slot",
        ".hidden sonde_sample_slot",
        ".type sonde_sample_slot, @object",
        ".size sonde_sample_slot, 8",
        "sonde_sample_slot:",
        ".zero 8",
        ".popsection",
    );

    #[inline(always)]
    pub fn get() -> usize {
        let value: usize;
        // SAFETY: reads this thread's own 8-byte TLS slot through its GOT-held offset.
        unsafe {
            core::arch::asm!(
                "mov {v}, qword ptr [rip + sonde_sample_slot@GOTTPOFF]",
                "mov {v}, qword ptr fs:[{v}]",
                v = out(reg) value,
                options(nostack, readonly, preserves_flags),
            );
        }
        value
    }

    pub fn set(value: usize) {
        // SAFETY: writes this thread's own 8-byte TLS slot.
        unsafe {
            core::arch::asm!(
                "mov {t}, qword ptr [rip + sonde_sample_slot@GOTTPOFF]",
                "mov qword ptr fs:[{t}], {v}",
                t = out(reg) _,
                v = in(reg) value,
                options(nostack, preserves_flags),
            );
        }
    }
}

/// Elsewhere: no cache, the thread id is looked up every time.
#[cfg(not(target_arch = "x86_64"))]
mod cache {
    pub fn get() -> usize {
        0
    }

    pub fn set(_value: usize) {}
}
