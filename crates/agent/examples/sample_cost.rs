//! The cost of one CoreCLR-style sample on the sampled thread — the kernel's sampler (the kernel
//! writes the sample into the thread's ring; the default), or with `SONDE_SAMPLER=signal` the
//! signal sampler (per-thread timer signal — or, with `SONDE_CPU_TIMERS=0`, the sampler
//! thread's — + handler + frame walk + ring write) — measured
//! inside one process so machine noise largely cancels: a fixed amount of work is timed in
//! alternating slices with sampling on and off.
//! `cargo run --release -p sonde-agent --example sample_cost [RATE_HZ=1000]`
use sonde_agent::sampling;
use sonde_agent::tree::threads;
use std::time::{Duration, Instant};

struct Ids;
impl sampling::FrameResolver for Ids {
    fn resolve(&mut self, ip: usize) -> sampling::Frame {
        sampling::Frame { method: (ip >> 12) as u32 & 0xffff, managed: true }
    }
    fn truncated(&mut self) -> u32 {
        0
    }
}

#[inline(never)]
fn work(n: u64) -> u64 {
    let mut x = 1u64;
    for i in 0..n {
        x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(i));
    }
    x
}

fn main() {
    let rate: u64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(1000);
    let choice = sampling::Choice {
        kernel: std::env::var("SONDE_SAMPLER").map_or(true, |v| v != "signal"),
        cpu_timers: std::env::var("SONDE_CPU_TIMERS").map_or(true, |v| v != "0"),
    };
    let interval = Duration::from_micros(1_000_000 / rate);
    let start = || sampling::start(interval, sampling::Clock::Cpu, choice, Box::new(Ids)).unwrap();
    let sampler = start();
    println!("sampler: {sampler}");
    let tid = threads::gettid();
    // The kernel's sampler keeps a thread's event as long as the thread lives (a pause only
    // drops its samples): its unsampled slices run with the sampler stopped, and it starts
    // again (a new session, as an agent attached again does) for each sampled slice.
    let kernel = sampler == "kernel";
    if kernel {
        sampling::stop();
        sampling::reset();
    }
    let n = 20_000_000; // ~ tens of ms of work per slice
    work(n);
    let (mut on, mut off) = (Vec::new(), Vec::new());
    for round in 0..40 {
        let sampled = round % 2 == 0;
        if kernel && sampled {
            start();
        }
        if sampled {
            sampling::register(tid, threads::state_for(tid));
        } else if !kernel {
            sampling::unregister(tid);
        }
        let t = Instant::now();
        std::hint::black_box(work(n));
        let elapsed = t.elapsed().as_secs_f64();
        if sampled {
            on.push(elapsed)
        } else {
            off.push(elapsed)
        }
        if kernel && sampled {
            sampling::stop();
            sampling::reset();
        }
    }
    sampling::unregister(tid);
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (on, off) = (median(&mut on), median(&mut off));
    let overhead = on / off - 1.0;
    println!(
        "rate {rate} Hz: slice {:.1} ms unsampled, {:.1} ms sampled: overhead {:+.2}% ≈ {:.1} µs per sample",
        off * 1e3,
        on * 1e3,
        overhead * 100.0,
        overhead * 1e6 / rate as f64
    );
}
