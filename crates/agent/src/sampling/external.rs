//! Samples raised by the runtime's own sampler (Mono's: its sampling thread signals every
//! attached thread and calls the profiler in its signal handler). No sampler thread and no signal
//! handler of Sonde's: the runtime's handler calls [`record_for_current_thread`], and the drain
//! thread does the rest as for the signal sampler.

use super::common::{COUNTERS, Clock, Sampler, configure, sampler, thread_cpu_ns};
use super::drain;
use super::paths::FrameResolver;
use super::{ring, slots};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::*};
use std::time::Duration;

/// Per thread, written by the thread itself (in the runtime's signal handler): the clock's
/// reading at the last sample, and the clock time not yet turned into periods (negative when the
/// last sample was rounded up).
struct PerThread {
    clock_ns: AtomicU64,
    carry_ns: AtomicI64,
}

#[allow(clippy::declare_interior_mutable_const)]
const EMPTY: PerThread = PerThread { clock_ns: AtomicU64::new(0), carry_ns: AtomicI64::new(0) };
/// By slot index.
static THREADS: [PerThread; slots::MAX_THREADS] = [EMPTY; slots::MAX_THREADS];

/// A new thread (slot `index`, perhaps used by a thread gone since): its clock starts now.
pub(super) fn registered(index: usize, tid: u32, clock: Clock) {
    let now = match clock {
        Clock::Cpu => thread_cpu_ns(tid).unwrap_or(0),
        Clock::Wall => monotonic_ns(),
    };
    if let Some(state) = THREADS.get(index) {
        state.clock_ns.store(now, Relaxed);
        state.carry_ns.store(0, Relaxed);
    }
}

/// Sampling driven by someone else's sampler (the runtime's): no sampler thread, no signal
/// handler of ours; the drain thread only. The external sampler's signal handler calls
/// [`record_for_current_thread`] on each sampled thread, which must be [`register`]ed; `clock`
/// weights the samples there (see that function). `resolver` receives the values the external
/// walk wrote (see [`FrameResolver::raw_addresses`]).
pub(super) fn start(
    interval: Duration,
    clock: Clock,
    resolver: Box<dyn FrameResolver>,
    after_release: fn(),
) -> std::io::Result<()> {
    configure(interval, Sampler::External(clock));
    drain::start(resolver, || {}, after_release)
}

/// For an external sampler's signal handler, on the sampled thread: records one sample of the
/// calling thread. `walk` pushes the frames, leaf first, and returns the sample's flags
/// ([`ring::FLAG_TRUNCATED`]); a walk that pushes nothing is not a sample (counted as
/// `no_managed_frames`).
///
/// The sample is weighted on the thread itself, by the time its clock advanced since its last
/// sample, in whole intervals (rounded to the nearest, the remainder carried over, so no time is
/// lost or counted twice): with [`Clock::Wall`] the monotonic clock — an on-time tick is one
/// period, a late or missed one more; with [`Clock::Cpu`] the thread's own CPU-time clock — a
/// thread that has not run since its last sample records nothing and its stack is not walked.
///
/// Async-signal-safe: finds the thread's slot through a thread-local cache (else its thread id
/// among the published slots), reads one clock, writes into the thread's preallocated ring. No
/// allocation, no lock, no panic path. A thread that was never registered counts as
/// `unknown_thread`; one waiting for a slot (more than [`slots::MAX_THREADS`] live at once)
/// counts the tick as `too_many_threads`.
pub fn record_for_current_thread(walk: impl FnOnce(&mut ring::Writer<'_>) -> u64) {
    let Some(Sampler::External(clock)) = sampler() else { return };
    if super::common::PAUSED.load(Relaxed) {
        return;
    }
    let Some((index, slot)) = slots::current_slot() else {
        if slots::current_waiting() {
            COUNTERS.too_many_threads.fetch_add(1, Relaxed);
        } else {
            COUNTERS.unknown_thread.fetch_add(1, Relaxed);
        }
        return;
    };
    let Some(state) = THREADS.get(index) else { return };
    if !slot.active.load(Acquire) {
        return;
    }
    let now = match clock {
        Clock::Wall => monotonic_ns(),
        Clock::Cpu => own_cpu_ns(),
    };
    let elapsed = now.saturating_sub(state.clock_ns.swap(now, Relaxed));
    let interval_ns = super::common::interval_ns().min(i64::MAX as u64) as i64;
    let (periods, carry) = weigh(state.carry_ns.load(Relaxed), elapsed, interval_ns);
    state.carry_ns.store(carry, Relaxed);
    if periods == 0 {
        return;
    }
    let Some(ring) = slot.ring() else { return };
    let Some(mut writer) = ring.begin() else { return };
    let flags = walk(&mut writer);
    if writer.is_empty() {
        COUNTERS.no_managed_frames.fetch_add(periods, Relaxed);
        return;
    }
    if periods > 1 {
        COUNTERS.deferred.fetch_add(periods - 1, Relaxed);
    }
    if writer.commit(periods, 0, flags, super::work::current()) {
        super::common::wake_drain();
    }
}

/// Turns clock time into whole periods: `carry + elapsed` rounded to the nearest number of
/// intervals, and the new carry (what was not counted, negative when rounded up). No panic path.
fn weigh(carry: i64, elapsed: u64, interval_ns: i64) -> (u64, i64) {
    let interval_ns = interval_ns.max(1);
    let elapsed = elapsed.min(i64::MAX as u64 / 4) as i64;
    let pending = carry.saturating_add(elapsed);
    let periods = pending.saturating_add(interval_ns / 2).max(0) / interval_ns;
    (periods as u64, pending.saturating_sub(periods.saturating_mul(interval_ns)))
}

fn monotonic_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

fn own_cpu_ns() -> u64 {
    clock_ns(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// `clock_gettime` (async-signal-safe); 0 if it fails.
fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: writes a local timespec.
    if unsafe { libc::clock_gettime(clock, &mut ts) } != 0 {
        return 0;
    }
    (ts.tv_sec as u64).wrapping_mul(1_000_000_000).wrapping_add(ts.tv_nsec as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn external_samples_weigh_whole_intervals_and_lose_no_time() {
        // On time: one period; a late tick more; jitter does not lose or double-count time.
        assert_eq!(weigh(0, 1000, 1000), (1, 0));
        assert_eq!(weigh(0, 2600, 1000), (3, -400));
        assert_eq!(weigh(-400, 900, 1000), (1, -500));
        assert_eq!(weigh(0, 400, 1000), (0, 400)); // a thread that barely ran: nothing yet
        assert_eq!(weigh(400, 200, 1000), (1, -400));
        let (mut carry, mut total) = (0i64, 0u64);
        for elapsed in [700u64, 1300, 950, 1050, 2000, 10, 990, 1000] {
            let (p, c) = weigh(carry, elapsed, 1000);
            total += p;
            carry = c;
        }
        assert_eq!(total as i64 * 1000 + carry, 8000, "every nanosecond is counted once");
        assert!(weigh(i64::MAX, u64::MAX, 0).0 > 0, "no overflow at the extremes");
    }
}
