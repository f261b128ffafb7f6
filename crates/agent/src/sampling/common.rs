//! What the samplers, the slots and the drain share: the configuration (interval, which sampler),
//! the loss counters, and where trouble is reported. A leaf: it depends on nothing else here.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering::Relaxed};
use std::time::Duration;

/// What weights a sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Clock {
    /// The thread's CPU time: samples only while it runs.
    Cpu,
    /// Wall time: every thread, running or blocked.
    Wall,
}

/// Which sampler raises the samples (set once, by `start` or `start_external`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Sampler {
    /// Sonde's sampler thread and signal handler ([`signal`]).
    Signal,
    /// The kernel's: a task-clock event per thread writing samples into a ring ([`kernel`]).
    Kernel,
    /// The runtime's, with the clock that weights the samples, read on the sampled thread
    /// ([`external`]).
    External(Clock),
}

/// The session's sampling interval in nanoseconds (0: sampling not configured), the one place
/// it is kept: the sampler thread, the handlers, the timers and the drain all read it here.
/// Atomic, not a `OnceLock`: an agent attached again gets the new session's rate.
static INTERVAL_NS: AtomicU64 = AtomicU64::new(0);
/// The session's [`Sampler`] ([`sampler`]'s encoding; 0: none).
static SAMPLER: AtomicU8 = AtomicU8::new(0);

/// Sets the session's interval and sampler (by `start` or `start_external`, before any thread is
/// registered).
pub(super) fn configure(interval: Duration, sampler: Sampler) {
    INTERVAL_NS.store((interval.as_nanos() as u64).max(1), Relaxed);
    let code = match sampler {
        Sampler::Signal => 1,
        Sampler::External(Clock::Cpu) => 2,
        Sampler::External(Clock::Wall) => 3,
        Sampler::Kernel => 4,
    };
    SAMPLER.store(code, Relaxed);
}

/// The session's sampler, once configured. Async-signal-safe.
pub(super) fn sampler() -> Option<Sampler> {
    match SAMPLER.load(Relaxed) {
        1 => Some(Sampler::Signal),
        2 => Some(Sampler::External(Clock::Cpu)),
        3 => Some(Sampler::External(Clock::Wall)),
        4 => Some(Sampler::Kernel),
        _ => None,
    }
}

/// True when samples come from an external sampler (`start_external`).
pub fn external() -> bool {
    matches!(sampler(), Some(Sampler::External(_)))
}

/// The sampling interval (1 ms before it is configured). Async-signal-safe.
pub fn interval() -> Duration {
    Duration::from_nanos(interval_ns())
}

/// [`interval`] in nanoseconds, never 0: what the handlers read at each sample (one load).
pub(super) fn interval_ns() -> u64 {
    match INTERVAL_NS.load(Relaxed) {
        0 => 1_000_000,
        ns => ns,
    }
}

/// A new session: no sampler configured, no sample counted, neither stopped nor paused.
pub(super) fn reset() {
    INTERVAL_NS.store(0, Relaxed);
    SAMPLER.store(0, Relaxed);
    STOPPED.store(false, Relaxed);
    PAUSED.store(false, Relaxed);
    for counter in [
        &COUNTERS.unknown_thread,
        &COUNTERS.too_many_threads,
        &COUNTERS.deferred,
        &COUNTERS.no_managed_frames,
        &COUNTERS.taken,
        &COUNTERS.signal_blocked,
        &COUNTERS.signal_taken,
    ] {
        counter.store(0, Relaxed);
    }
}

/// The drain thread's doorbell: rung when a ring is half full, and to stop (`drain`).
pub(super) static DRAIN_BELL: super::doorbell::Doorbell = super::doorbell::Doorbell::new();

/// Wakes the drain thread now (a ring is half full). Async-signal-safe.
pub(super) fn wake_drain() {
    DRAIN_BELL.ring();
}

/// Set by `sampling::stop`: the sampler and drain threads end.
pub(super) static STOPPED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Set while the controller paused collection (`ControllerMessage::Pause`): the handlers return
/// at once, taking no sample. Async-signal-safe to read.
pub(super) static PAUSED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The counters behind [`Losses`] that are not per thread, and samples taken.
pub(super) struct Counters {
    pub unknown_thread: AtomicU64,
    pub too_many_threads: AtomicU64,
    pub deferred: AtomicU64,
    pub no_managed_frames: AtomicU64,
    pub taken: AtomicU64,
    pub signal_blocked: AtomicU64,
    pub signal_taken: AtomicU64,
}

pub(super) static COUNTERS: Counters = Counters {
    unknown_thread: AtomicU64::new(0),
    too_many_threads: AtomicU64::new(0),
    deferred: AtomicU64::new(0),
    no_managed_frames: AtomicU64::new(0),
    taken: AtomicU64::new(0),
    signal_blocked: AtomicU64::new(0),
    signal_taken: AtomicU64::new(0),
};

/// Tells the user something went wrong with sampling (the session sends it to the controller).
/// Called from the sampler thread.
static NOTICE: OnceLock<fn(String)> = OnceLock::new();

/// Sets where the sampler reports trouble (the program took the sampling signal).
pub fn on_notice(notice: fn(String)) {
    let _ = NOTICE.set(notice);
}

pub(super) fn notice(message: String) {
    if let Some(notice) = NOTICE.get() {
        notice(message);
    }
}

/// Thread `tid`'s CPU time (its CPU-time clock: the kernel's MAKE_THREAD_CPUCLOCK(tid,
/// CPUCLOCK_SCHED), as pthread_getcpuclockid builds it); `None` once the thread is gone.
pub(super) fn thread_cpu_ns(tid: u32) -> Option<u64> {
    let clock = ((!(tid as libc::clockid_t)) << 3) | 6;
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: writes a local timespec.
    (unsafe { libc::clock_gettime(clock, &mut ts) } == 0).then(|| ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}
