//! `--timing sampled`: tracing without a clock on the hot path. The hooks keep counting calls and
//! moving each thread's `current` node (the shadow stack they maintain anyway); this thread wakes
//! every interval and charges the elapsed wall time to the node each live thread is in. No runtime
//! suspension, no signal, no stack walk: a load per thread.

use crate::tree::threads::{self, ThreadState};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::{Duration, Instant};

static STOP: AtomicBool = AtomicBool::new(false);

pub fn start(interval: Duration) -> std::io::Result<()> {
    crate::base::running::spawn_thread("sonde-sampler", move || run(interval))?;
    Ok(())
}

pub fn stop() {
    STOP.store(true, Relaxed);
}

fn run(interval: Duration) {
    let mut threads: Vec<Arc<ThreadState>> = Vec::new();
    let mut last = Instant::now();
    while !STOP.load(Relaxed) {
        std::thread::sleep(interval);
        let now = Instant::now();
        let elapsed = now.duration_since(last).as_nanos() as u64;
        last = now;
        threads.clear();
        threads.extend(threads::registry().threads.iter().cloned());
        for t in &threads {
            if !t.ended.load(Relaxed) {
                tick(t, elapsed);
            }
        }
    }
}

/// Charges one sample of `elapsed` ns to the thread's current node. The sampler is the only
/// writer of the sample fields, so plain load/store increments are exact.
pub fn tick(t: &ThreadState, elapsed: u64) {
    if let Some(node) = t.tree.node(t.tree.current()) {
        node.self_samples.store(node.self_samples.load(Relaxed) + 1, Relaxed);
        node.sampled_ns.store(node.sampled_ns.load(Relaxed) + elapsed, Relaxed);
    }
}
