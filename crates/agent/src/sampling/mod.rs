//! Sampling mode: statistical profiles at a chosen rate, without stopping the world.
//!
//! Two samplers raise the samples, one at a time (see `docs/SAMPLING.md`):
//! * **Sonde's signal sampler** ([`signal`], CoreCLR): a sampler thread wakes every interval,
//!   signals each managed thread that is running, and the signal handler walks the frame-pointer
//!   chain from the interrupted context into the thread's ring, as raw instruction pointers.
//! * **An external sampler** ([`external`], Mono): the runtime's own sampler thread signals every
//!   thread and calls the agent in its signal handler, which writes what the runtime's walk
//!   reports.
//!
//! Both write into the same per-thread [`slots`] and rings; the [`drain`] thread (and every
//! snapshot) later turns the values into methods through the backend's [`FrameResolver`], off
//! the signal path, and counts each stack into the thread's call tree: `self_samples` at the
//! leaf, time = samples × interval. [`symbols`] names native code.

pub mod drain;
pub mod external;
pub mod ring;
pub mod signal;
mod slots;
pub mod symbols;

pub use drain::{Frame, FrameResolver, drain};
pub use external::{record_for_current_thread, start_external};
pub use signal::{fault_handled_on_this_thread, start};
pub use slots::{MAX_THREADS, register, unregister};
pub use symbols::{native_frame, native_symbol};

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
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
enum Sampler {
    /// Sonde's sampler thread and signal handler ([`signal`]).
    Signal,
    /// The runtime's, with the clock that weights the samples, read on the sampled thread
    /// ([`external`]).
    External(Clock),
}

struct Config {
    interval: Duration,
    sampler: Sampler,
}

static CONFIG: OnceLock<Config> = OnceLock::new();

fn configure(interval: Duration, sampler: Sampler) {
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

/// Why samples were lost, for the report.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Losses {
    /// The thread's ring was full when its timer fired (the drain fell behind).
    pub ring_full: u64,
    /// A timer signal arrived for no registered thread.
    pub unknown_thread: u64,
    /// More threads than [`MAX_THREADS`] (their samples were never taken).
    pub too_many_threads: u64,
    /// Ticks at which a thread still had a signal pending (it had not run since); the periods
    /// are not lost, they are added to its next sample. (External sampler: the periods beyond
    /// the first that a sample stood for.)
    pub deferred: u64,
    /// External sampler: periods whose stack walk found nothing to record (on Mono: no managed
    /// frame on the thread's stack, e.g. a runtime thread waiting in native code).
    pub no_managed_frames: u64,
    /// Periods not sampled because the thread kept the sampling signal blocked for more than
    /// `signal::PENDING_LIMIT` while it ran.
    pub signal_blocked: u64,
    /// Periods not sampled because the program installed its own handler for the sampling signal
    /// (sampling stopped then).
    pub signal_taken: u64,
}

/// The counters behind [`Losses`] that are not per thread, and samples taken.
struct Counters {
    unknown_thread: AtomicU64,
    too_many_threads: AtomicU64,
    deferred: AtomicU64,
    no_managed_frames: AtomicU64,
    taken: AtomicU64,
    signal_blocked: AtomicU64,
    signal_taken: AtomicU64,
}

static COUNTERS: Counters = Counters {
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

fn notice(message: String) {
    if let Some(notice) = NOTICE.get() {
        notice(message);
    }
}

/// Samples taken (counting merged expirations) and lost, so far.
pub fn totals() -> (u64, Losses) {
    let c = &COUNTERS;
    let losses = Losses {
        ring_full: slots::ring_full(),
        unknown_thread: c.unknown_thread.load(Relaxed),
        too_many_threads: c.too_many_threads.load(Relaxed),
        deferred: c.deferred.load(Relaxed),
        no_managed_frames: c.no_managed_frames.load(Relaxed),
        signal_blocked: c.signal_blocked.load(Relaxed),
        signal_taken: c.signal_taken.load(Relaxed),
    };
    (c.taken.load(Relaxed), losses)
}
