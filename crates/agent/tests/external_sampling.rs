//! Sampling driven by an external sampler (as on Mono, whose sampling thread signals the threads
//! and calls the profiler in its signal handler): a stand-in sampler thread signals this test's
//! thread, whose handler calls `sampling::record_for_current_thread` the way the Mono backend's
//! `sample_hit` does. Proves that the recording path allocates nothing on the sampled thread,
//! weights samples by wall time, and counts empty stacks and unknown threads. (Its own test
//! binary: the sampling configuration is set once per process.)

use sonde_agent::sampling;
use sonde_agent::tree::threads;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};
use std::time::{Duration, Instant};

#[path = "support/counting_alloc.rs"]
mod counting_alloc;
use counting_alloc::allocations;

#[global_allocator]
static ALLOCATOR: counting_alloc::Counting = counting_alloc::Counting;

/// Values the stand-in walk writes: method ids themselves (leaf first).
struct Ids;
impl sampling::FrameResolver for Ids {
    fn resolve(&mut self, value: usize) -> sampling::Frame {
        sampling::Frame { method: value as u32, managed: true }
    }
    fn raw_addresses(&self) -> bool {
        false
    }
    fn truncated(&mut self) -> u32 {
        0
    }
}

/// What the stand-in walk records: a two-frame stack, or nothing.
static EMPTY_WALK: AtomicBool = AtomicBool::new(false);
static HANDLED: AtomicU64 = AtomicU64::new(0);
/// The monotonic clock when the last signal was handled.
static LAST_HANDLED_NS: AtomicU64 = AtomicU64::new(0);

fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime (async-signal-safe) into a local.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

extern "C" fn on_signal(_signal: libc::c_int) {
    HANDLED.fetch_add(1, Relaxed);
    LAST_HANDLED_NS.store(monotonic_ns(), Relaxed);
    sampling::record_for_current_thread(|writer| {
        if !EMPTY_WALK.load(Relaxed) {
            writer.push(11); // leaf
            writer.push(10);
        }
        0
    });
}

const SIGNAL: libc::c_int = libc::SIGUSR2;

fn install() {
    // SAFETY: installs a plain handler for SIGUSR2, which nothing else in this test uses.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_signal as *const () as libc::sighandler_t;
        action.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut action.sa_mask);
        assert_eq!(libc::sigaction(SIGNAL, &action, std::ptr::null_mut()), 0);
    }
}

/// Signals thread `tid` every `period` until `stop`.
fn signal_every(tid: u32, period: Duration, stop: &'static AtomicBool) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        while !stop.load(Relaxed) {
            std::thread::sleep(period);
            // SAFETY: tgkill to a thread of this process with a signal it handles.
            unsafe { libc::syscall(libc::SYS_tgkill, std::process::id() as libc::c_long, tid as libc::c_long, SIGNAL) };
        }
    })
}

fn spin(duration: Duration) {
    let start = Instant::now();
    let mut x = 1u64;
    while start.elapsed() < duration {
        x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
    }
}

#[test]
fn an_external_sampler_records_weighted_samples_without_allocating() {
    static STOP: AtomicBool = AtomicBool::new(false);
    install();
    let interval = Duration::from_micros(500);
    sampling::start_external(interval, sampling::Clock::Wall, Box::new(Ids)).unwrap();
    assert!(sampling::external());
    let tid = threads::gettid();
    let registered_ns = monotonic_ns();
    sampling::register(tid, threads::state_for(tid));

    // Signals every 1 ms while samples are worth 0.5 ms each: every sample carries ~2 periods.
    // However late the signals come (a loaded machine), the test waits for 200 of them.
    let sampler = signal_every(tid, Duration::from_millis(1), &STOP);
    let before = allocations();
    let deadline = Instant::now() + Duration::from_secs(60);
    while HANDLED.load(Relaxed) < 200 && Instant::now() < deadline {
        spin(Duration::from_millis(10));
    }
    let during = allocations() - before;
    STOP.store(true, Relaxed);
    sampler.join().unwrap();
    sampling::drain();
    assert_eq!(during, 0, "recording a sample allocated on the sampled thread");
    let (taken, losses) = sampling::totals();
    let handled = HANDLED.load(Relaxed);
    assert!(handled >= 200, "only {handled} signals handled in 60 s");
    // Wall-clock weights: the periods from registration to the last sample, rounded to whole
    // intervals (the remainder carried, so at most one period off).
    let covered = Duration::from_nanos(LAST_HANDLED_NS.load(Relaxed) - registered_ns);
    let expected = covered.as_nanos() as f64 / interval.as_nanos() as f64;
    assert!(
        (taken as f64 - expected).abs() <= 0.02 * expected + 2.0,
        "{taken} periods for {covered:?} of wall time at {interval:?} ({handled} signals, {losses:?})"
    );
    let tree = &threads::state_for(tid).tree;
    let root_child = (0..tree.len()).filter_map(|i| tree.node(i)).find(|n| n.method.load(Relaxed) == 10);
    let leaf = (0..tree.len()).filter_map(|i| tree.node(i)).find(|n| n.method.load(Relaxed) == 11);
    assert!(root_child.is_some(), "the root frame (written last) is not in the tree");
    assert_eq!(leaf.map(|n| n.self_samples.load(Relaxed)), Some(taken), "self samples belong to the leaf");

    // An empty walk is not a sample: its periods are counted as having no managed frames.
    EMPTY_WALK.store(true, Relaxed);
    std::thread::sleep(Duration::from_millis(5));
    // SAFETY: raise(3) on this thread, with a signal it handles.
    unsafe { libc::raise(SIGNAL) };
    sampling::drain();
    let (after, losses) = sampling::totals();
    assert_eq!(after, taken, "an empty walk was counted as a sample");
    assert!(losses.no_managed_frames >= 5, "{losses:?}");

    // A thread that was never registered is counted, not recorded.
    let other = std::thread::spawn(|| {
        // SAFETY: as above.
        unsafe { libc::raise(SIGNAL) };
    });
    other.join().unwrap();
    assert_eq!(sampling::totals().1.unknown_thread, 1);
}
