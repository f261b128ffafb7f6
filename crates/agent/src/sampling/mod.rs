//! Sampling mode: statistical profiles at a chosen rate, without stopping the world.
//!
//! Three samplers raise the samples, one at a time (see `docs/SAMPLING.md`):
//! * **The kernel's sampler** ([`kernel`], CoreCLR with the CPU clock, where the kernel allows
//!   it): a task-clock `perf_event` per thread writes each sample — call chain, registers, the
//!   top of the stack — into a ring the drain reads. Nothing runs on the sampled thread.
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

pub mod async_stacks;
mod common;
mod doorbell;
pub mod drain;
pub mod external;
pub mod kernel;
pub mod lines;
pub mod module_files;
mod paths;
mod perf_event;
pub mod ring;
pub mod shapes;
pub mod signal;
mod slots;
mod stack_walk;
pub mod symbols;
pub mod work;

pub use drain::{drain, drain_all, event_stacks_lost, record_event_stack, record_walk};
pub use external::record_for_current_thread;
pub use paths::{Frame, FrameResolver, WalkedFrame};
pub use signal::fault_handled_on_this_thread;
pub use slots::MAX_THREADS;
pub use stack_walk::{walk_this_thread, walk_this_thread_until};
pub use symbols::{AddressMap, NativeNames, native_symbol};

pub use common::{Clock, external, interval, on_notice};
pub use perf_event::warm_up as warm_up_perf_events;

use crate::tree::threads::{self, ThreadState};
use common::{COUNTERS, Sampler, sampler};
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;

/// Why samples were lost, for the report.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Losses {
    /// The thread's ring was full when it was sampled (the drain fell behind).
    pub ring_full: u64,
    /// A sample arrived for no registered thread.
    pub unknown_thread: u64,
    /// Intervals of threads that were not sampled because [`MAX_THREADS`] others were (they
    /// wait for a slot: the signal sampler counts the intervals they run, or that pass with the
    /// wall clock; an external sampler the ticks that reach them).
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
    /// The kernel's sampler: threads not sampled because the kernel refused them an event or a
    /// ring (out of descriptors, or of memory it lets a user lock).
    pub no_ring: u64,
}

/// Which sampler raises the samples, as the profile names it (`RunInfo::sampler`): `kernel`,
/// `signal-timers` (per-thread timers raise the signal), `signal-thread` (the sampler thread
/// does), `runtime` (the runtime's own: Mono); empty before sampling started.
pub fn name() -> &'static str {
    match sampler() {
        Some(Sampler::Kernel) => "kernel",
        Some(Sampler::Signal) if signal::timed() => "signal-timers",
        Some(Sampler::Signal) => "signal-thread",
        Some(Sampler::External(_)) => "runtime",
        None => "",
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
        no_ring: kernel::refused_threads(),
    };
    (c.taken.load(Relaxed), losses)
}

/// Pauses (`true`) or resumes collection: while paused, a sample interrupts its thread only for
/// the handler to return (the timers keep their rhythm; nothing is walked or recorded).
pub fn set_paused(paused: bool) {
    if sampler() == Some(Sampler::Kernel) {
        // The kernel's rings hold samples from before: they go in (pausing), or are dropped
        // (resuming) before the switch.
        drain::drain();
    }
    common::PAUSED.store(paused, Relaxed);
}

/// Stops sampling for good, leaving the process as it was before sampling started (a detach:
/// the runtime is about to release the agent): Sonde's sampler thread, per-thread timers and
/// signal actions (see `signal::stop`), and the drain thread. What was sampled stays in the
/// trees. An external sampler (Mono's) is the runtime's to stop: its samples find no session.
pub fn stop() {
    common::STOPPED.store(true, Relaxed);
    match sampler() {
        Some(Sampler::Signal) => signal::stop(),
        Some(Sampler::Kernel) => {
            drain::stop();
            drain::drain_all(); // what the rings hold, before they go
            kernel::stop();
        }
        _ => {}
    }
    drain::stop();
}

/// Starts sampling thread `tid` into `thread`'s call tree (any thread may call this; when the
/// thread itself does, its stack's limits are taken then — call it again from the thread if it
/// was registered first from elsewhere). With every slot taken, the thread waits for one.
pub fn register(tid: u32, thread: Arc<ThreadState>) {
    let Some(sampler) = sampler() else { return };
    let _registering = slots::REGISTERING.lock().unwrap_or_else(|e| e.into_inner());
    let own_thread = tid == threads::gettid();
    let Some((index, new)) = slots::claim(tid) else {
        if own_thread {
            slots::mark_current_waiting();
        }
        return;
    };
    match sampler {
        Sampler::Signal => signal::registered(index, tid, new, own_thread),
        Sampler::Kernel if new => kernel::registered(index, tid),
        Sampler::Kernel => {}
        Sampler::External(clock) if new => external::registered(index, tid, clock),
        Sampler::External(_) => {}
    }
    if new {
        slots::activate(index, tid, thread);
        if sampler == Sampler::Signal {
            signal::activated(index, tid);
        }
    }
}

/// Stops sampling thread `tid`, which the runtime reports ended. Its samples so far are drained
/// into its tree; its slot is reused once the thread is gone.
pub fn unregister(tid: u32) {
    let _registering = slots::REGISTERING.lock().unwrap_or_else(|e| e.into_inner());
    slots::unregister(tid);
}

/// A new session in a process whose agent sampled before (attached again: see `session`): the
/// samplers' configuration, counters, slots, queued event stacks and lines start afresh. What
/// is known of the process's code (native symbols, code shapes, module files) is kept: it is
/// true whatever the session. Only between sessions: [`stop`] ended every sampling thread.
pub fn reset() {
    common::reset();
    slots::reset();
    drain::reset();
    lines::reset();
    async_stacks::reset();
}

/// Which of Sonde's own samplers [`start`] may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Choice {
    /// The kernel's sampler, where the kernel allows it (the CPU clock only).
    pub kernel: bool,
    /// Per-thread timers raising the signal (the CPU clock only), else the sampler thread.
    pub cpu_timers: bool,
}

/// Sonde's own sampler: the kernel's ([`kernel`]) where `choice` and the kernel allow it (the
/// drain thread alone), else the signal sampler (`signal`: installs the handler, starts the
/// sampler and drain threads). Threads are added with [`register`]. Returns the sampler's name,
/// for the log and the profile.
pub fn start(
    interval: std::time::Duration,
    clock: Clock,
    choice: Choice,
    resolver: Box<dyn FrameResolver>,
) -> std::io::Result<&'static str> {
    if clock == Clock::Cpu && choice.kernel && kernel::available() {
        common::configure(interval, Sampler::Kernel);
        kernel::start();
        drain::start(resolver, || {}, register_waiting)?;
        return Ok("kernel");
    }
    signal::start(interval, clock, choice.cpu_timers, resolver, register_waiting)
}

/// Sampling driven by the runtime's own sampler (`external`): the drain thread only; the
/// runtime's handler calls [`record_for_current_thread`] on each sampled thread, which must be
/// [`register`]ed; `clock` weights the samples there. `resolver` receives the values the
/// external walk wrote (see [`FrameResolver::raw_addresses`]).
pub fn start_external(
    interval: std::time::Duration,
    clock: Clock,
    resolver: Box<dyn FrameResolver>,
) -> std::io::Result<()> {
    external::start(interval, clock, resolver, register_waiting)
}

/// Gives the slots the drain just freed to threads waiting for one (drain thread).
fn register_waiting() {
    for tid in slots::waiting() {
        register(tid, threads::state_for(tid));
    }
}
