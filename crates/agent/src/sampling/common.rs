//! What the samplers, the slots and the drain share: the configuration (interval, which sampler),
//! the loss counters, and where trouble is reported. A leaf: it depends on nothing else here.

use std::sync::OnceLock;
use std::sync::atomic::AtomicU64;
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
    /// The runtime's, with the clock that weights the samples, read on the sampled thread
    /// ([`external`]).
    External(Clock),
}

pub(super) struct Config {
    pub interval: Duration,
    pub sampler: Sampler,
}

pub(super) static CONFIG: OnceLock<Config> = OnceLock::new();

pub(super) fn configure(interval: Duration, sampler: Sampler) {
    let _ = CONFIG.set(Config { interval, sampler });
}

/// True when samples come from an external sampler ([`start_external`]).
pub fn external() -> bool {
    CONFIG.get().is_some_and(|c| matches!(c.sampler, Sampler::External(_)))
}

/// The sampling interval.
pub fn interval() -> Duration {
    CONFIG.get().map_or(Duration::from_millis(1), |c| c.interval)
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
