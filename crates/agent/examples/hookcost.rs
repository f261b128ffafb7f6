//! Microbenchmark of the hook bodies through the real trampolines, outside any runtime:
//! `cargo run --release -p sonde-agent --example hookcost`.
use sonde_agent::coreclr::hooks;
use sonde_agent::tree::threads;
use std::time::Instant;

fn main() {
    let n = 20_000_000u64;
    for timed in [false, true] {
        let state: &'static threads::ThreadState = Box::leak(Box::new(threads::ThreadState::new(0)));
        threads::with_private_state(state, || {
            hooks::call_pair(timed, 1);
            let t = Instant::now();
            for _ in 0..n {
                hooks::call_pair(timed, 1);
            }
            println!("timed={timed}: {:.2} ns per enter+leave", t.elapsed().as_nanos() as f64 / n as f64);
        });
    }
}
