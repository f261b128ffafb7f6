//! Proves what the agent promises about its hot paths: the enter/leave hooks (through the real
//! entry points) and the sampling signal handler allocate nothing once a call path is known. A
//! counting global allocator counts the allocations each thread makes.

use sonde_agent::coreclr::hooks;
use sonde_agent::sampling;
use sonde_agent::tree::threads;
use std::time::{Duration, Instant};

#[path = "support/counting_alloc.rs"]
mod counting_alloc;
use counting_alloc::allocations;

#[global_allocator]
static ALLOCATOR: counting_alloc::Counting = counting_alloc::Counting;

#[test]
fn hooks_do_not_allocate_once_a_path_exists() {
    let state: &'static threads::ThreadState = Box::leak(Box::new(threads::ThreadState::new(0)));
    threads::with_private_state(state, || {
        for timed in [true, false] {
            hooks::call_pair(timed, 1); // creates the node: allowed to allocate
            let before = allocations();
            for _ in 0..100_000 {
                hooks::call_pair(timed, 1);
            }
            assert_eq!(allocations(), before, "the hooks allocated (timed: {timed})");
        }
    });
}

struct NoNames;
impl sampling::FrameResolver for NoNames {
    fn resolve(&mut self, ip: usize) -> sampling::Frame {
        sampling::Frame { method: (ip >> 12) as u32 & 0xffff, managed: true }
    }
    fn truncated(&mut self) -> u32 {
        0
    }
}

#[test]
fn the_sampling_signal_handler_does_not_allocate() {
    sampling::start(
        Duration::from_micros(500),
        sampling::Clock::Wall,
        sampling::Choice { kernel: false, cpu_timers: false },
        Box::new(NoNames),
    )
    .unwrap();
    let tid = threads::gettid();
    sampling::register(tid, threads::state_for(tid));
    let before = allocations();
    let start = Instant::now();
    let mut x = 1u64;
    while start.elapsed() < Duration::from_millis(300) {
        x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
    }
    let during = allocations() - before;
    sampling::unregister(tid);
    sampling::drain();
    let (taken, losses) = sampling::totals();
    assert!(taken > 50, "only {taken} samples in 300 ms at 2 kHz ({losses:?})");
    // The busy loop itself allocates nothing; whatever ran on this thread in between was the
    // signal handler.
    assert_eq!(during, 0, "the signal handler allocated on the sampled thread");
    let tree = &threads::state_for(tid).tree;
    let samples: u64 = (0..tree.len())
        .filter_map(|i| tree.node(i))
        .map(|n| n.self_samples.load(std::sync::atomic::Ordering::Relaxed))
        .sum();
    assert!(samples > 50, "the samples did not reach this thread's tree ({samples})");
}
