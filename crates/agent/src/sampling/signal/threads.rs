//! Per sampled thread, what the sampler thread and the signal handler share (by slot index), and
//! the sampler thread's doorbell.

use crate::sampling::doorbell::Doorbell;
use crate::sampling::slots;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicI64, AtomicU32, AtomicU64, Ordering::Relaxed};

/// Per thread: the sampler thread's and the handler's bookkeeping.
pub(super) struct PerThread {
    /// Intervals the next sample stands for (the sampler adds, the handler takes).
    pub(super) periods: AtomicU64,
    /// A signal was sent and the handler has not run yet: don't send another (it would merge).
    pub(super) signalled: AtomicBool,
    /// Sampler-thread bookkeeping: the thread's CPU time at the last look, and CPU time run since
    /// the last sample.
    pub(super) last_cpu_ns: AtomicU64,
    pub(super) unsampled_cpu_ns: AtomicU64,
    /// The thread's stack, `[low, high)`: the only memory the handler's walk reads (0, 0 until
    /// known: see `maps`).
    pub(super) stack_low: AtomicU64,
    pub(super) stack_high: AtomicU64,
    /// A stack pointer the handler saw while the limits were unknown (0: none).
    pub(super) seen_sp: AtomicU64,
    /// Sampler-thread bookkeeping: ticks at which the thread ran while our signal was still
    /// pending (blocked by the thread, or by a fault handler of the runtime).
    pub(super) pending_ticks: AtomicU32,
    /// The thread's task-clock timer (a `timers::Timer`'s descriptor; -1: none, the sampler
    /// thread looks at it), and the slot generation it was started in.
    pub(super) timer: AtomicI32,
    pub(super) timer_generation: AtomicU32,
    /// Handler bookkeeping with a timer: CPU time run since the last sample not yet counted in
    /// whole intervals (negative: counted ahead).
    pub(super) carry_ns: AtomicI64,
}

impl PerThread {
    /// With a timer: the intervals a sample stands for when the thread ran `ran` ns of CPU time
    /// since its last one — rounded, at least one, the remainder carried to the next sample
    /// (the handler's CPU-clock read and the event's overflow are a few µs apart).
    pub(super) fn timer_periods(&self, ran: u64) -> u64 {
        let interval = crate::sampling::common::interval_ns().min(i64::MAX as u64) as i64;
        let pending = self.carry_ns.load(Relaxed).saturating_add(ran.min(i64::MAX as u64) as i64);
        let periods = ((pending + interval / 2) / interval).max(1);
        self.carry_ns.store(pending - periods * interval, Relaxed);
        periods as u64
    }
}

#[allow(clippy::declare_interior_mutable_const)]
const EMPTY: PerThread = PerThread {
    periods: AtomicU64::new(0),
    signalled: AtomicBool::new(false),
    last_cpu_ns: AtomicU64::new(0),
    unsampled_cpu_ns: AtomicU64::new(0),
    stack_low: AtomicU64::new(0),
    stack_high: AtomicU64::new(0),
    seen_sp: AtomicU64::new(0),
    pending_ticks: AtomicU32::new(0),
    timer: AtomicI32::new(-1),
    timer_generation: AtomicU32::new(0),
    carry_ns: AtomicI64::new(0),
};
/// By slot index.
pub(super) static THREADS: [PerThread; slots::MAX_THREADS] = [EMPTY; slots::MAX_THREADS];

/// Slot `index`'s bookkeeping (`index` may be a [`slots::token`]: the handler's slot, whose
/// generation `slots::get` checks).
pub(super) fn state(index: usize) -> Option<&'static PerThread> {
    THREADS.get(slots::index(index))
}

/// Rung by a handler that found a stack not looked up yet (`find_unknown_stacks`), by a
/// thread whose timer could not start, and to stop.
pub(super) static WAKE: Doorbell = Doorbell::new();

/// Wakes the sampler thread if it is keeping house. Async-signal-safe.
pub(super) fn wake_sampler() {
    WAKE.ring();
}
