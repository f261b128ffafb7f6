//! The hot-path clock: the CPU's time-stamp counter where there is one (x86-64: ~10 ns a read on
//! this project's machines, half of `clock_gettime`), calibrated against the monotonic clock over
//! the whole run at snapshot time.

use std::sync::OnceLock;
use std::time::Instant;

struct Epoch {
    tick: u64,
    instant: Instant,
}

static EPOCH: OnceLock<Epoch> = OnceLock::new();

fn epoch() -> &'static Epoch {
    EPOCH.get_or_init(|| Epoch { tick: read(), instant: Instant::now() })
}

/// Where the session's elapsed time starts, in nanoseconds after the calibration epoch (0 for
/// the first session; an agent attached again starts counting anew).
static SESSION_START_NS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Fixes the calibration start (the first time), and the start of the session's elapsed time.
pub fn start() {
    let since_epoch = epoch().instant.elapsed().as_nanos() as u64;
    SESSION_START_NS.store(since_epoch, std::sync::atomic::Ordering::Relaxed);
}

fn session_start_ns() -> u64 {
    SESSION_START_NS.load(std::sync::atomic::Ordering::Relaxed)
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn read() -> u64 {
    // SAFETY: rdtsc is available on every x86-64 CPU and has no side effects.
    unsafe { core::arch::x86_64::_rdtsc() }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn read() -> u64 {
    // Without a user-readable counter, ticks are nanoseconds since the epoch.
    match EPOCH.get() {
        Some(e) => e.instant.elapsed().as_nanos() as u64,
        None => 0,
    }
}

#[inline(always)]
pub fn ticks() -> u64 {
    read()
}

/// Nanoseconds per tick, measured from start-up to now. Runs shorter than a millisecond fall back
/// to a short busy calibration, so a tiny run still gets a sane rate.
pub fn ns_per_tick() -> f64 {
    let e = epoch();
    let (mut ticks, mut ns) = (read().wrapping_sub(e.tick), e.instant.elapsed().as_nanos() as f64);
    if ns < 1e6 {
        let (t0, i0) = (read(), Instant::now());
        while i0.elapsed().as_micros() < 2000 {}
        ticks = read().wrapping_sub(t0);
        ns = i0.elapsed().as_nanos() as f64;
    }
    if ticks == 0 { 1.0 } else { ns / ticks as f64 }
}

/// Nanoseconds since the session started.
pub fn elapsed_ns() -> u64 {
    (epoch().instant.elapsed().as_nanos() as u64).saturating_sub(session_start_ns())
}

/// A tick read by [`ticks`] as nanoseconds since the session started (0 for one read before it).
pub fn tick_to_elapsed_ns(tick: u64, ns_per_tick: f64) -> u64 {
    ticks_to_ns(tick.saturating_sub(epoch().tick), ns_per_tick).saturating_sub(session_start_ns())
}

/// Ticks → nanoseconds.
pub fn ticks_to_ns(ticks: u64, ns_per_tick: f64) -> u64 {
    (ticks as f64 * ns_per_tick) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calibration_is_plausible() {
        start();
        std::thread::sleep(std::time::Duration::from_millis(5));
        let rate = ns_per_tick();
        // Any TSC between 100 MHz and 10 GHz.
        assert!((0.1..10.0).contains(&rate), "{rate} ns per tick");
    }
}
