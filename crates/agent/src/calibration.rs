//! Measuring the tracing hooks' own cost, so that the controller can subtract it (exact timing),
//! and the benchmark floors that put a figure on any tracer's minimum cost.
//!
//! Each backend brings a [`CostProbe`] over its real entry points (the CoreCLR trampolines,
//! `coreclr::hooks`; Mono's callbacks through its trampolines, `mono`) and registers it with
//! [`use_probe`] at start-up; the IPC link re-measures at every snapshot.

use crate::tree::{clock, threads};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Mutex, OnceLock};

/// The benchmark floors (`SONDE_BENCH_HOOKS`, read with the rest of the configuration): hooks
/// that record nothing, to measure the floor under any tracer.
pub use sonde_protocol::BenchHooks as Floor;

/// The hooks' own cost in ticks, measured through the real entry points on a private call tree.
#[derive(Debug, Clone, Copy)]
pub struct MeasuredCost {
    /// Ticks inside a call's own enter→leave interval that belong to the hooks.
    pub inner_ticks: f64,
    /// Ticks a caller sees per call it makes (both hooks end to end, plus the calls to them).
    pub outer_ticks: f64,
}

/// Calibrates one runtime's hooks: `enter`/`leave` open and close the calibration's parent call,
/// `pair` makes one complete child call, each through that runtime's real entry points (the
/// CoreCLR trampolines, Mono's callbacks as Mono calls them).
pub struct CostProbe {
    enter: fn(usize),
    leave: fn(usize),
    pair: fn(usize),
    state: OnceLock<&'static threads::ThreadState>,
    best: Mutex<Option<MeasuredCost>>,
}

static PROBE: OnceLock<&'static CostProbe> = OnceLock::new();

/// Makes [`measure_cost`] calibrate `probe`'s hooks. Called once, at start-up, by the backend
/// whose hooks these are (one runtime per process).
pub fn use_probe(probe: &'static CostProbe) {
    let _ = PROBE.set(probe);
}

/// Measures the exact-timing hook cost and returns the lowest figures seen so far.
///
/// The cost of a hook is its undisturbed cost: interruptions during a real run are real time of
/// the program's thread, so the estimate is the fastest of many short batches — and since a busy
/// machine can slow every batch of one measurement, the agent measures again at every snapshot
/// (off the program's threads) and keeps the minimum. Under-correcting leaves a little hook time in
/// the figures; over-correcting would erase real time, so the estimator errs low.
/// `None` until a backend chose its probe ([`use_probe`]).
pub fn measure_cost() -> Option<MeasuredCost> {
    Some(PROBE.get()?.measure())
}

impl CostProbe {
    pub const fn new(enter: fn(usize), leave: fn(usize), pair: fn(usize)) -> CostProbe {
        CostProbe { enter, leave, pair, state: OnceLock::new(), best: Mutex::new(None) }
    }

    pub fn measure(&self) -> MeasuredCost {
        const BATCH: u64 = 500;
        const BATCHES: usize = 40;
        const PARENT: usize = 1;
        const CHILD: usize = 2;
        let mut best = self.best.lock().unwrap_or_else(|e| e.into_inner());
        let state = *self.state.get_or_init(|| Box::leak(Box::new(threads::ThreadState::new(0))));
        let measured = threads::with_private_state(state, || {
            let (mut inner, mut outer) = (f64::MAX, f64::MAX);
            (self.enter)(PARENT);
            (self.pair)(CHILD); // the same two nodes every time: root → PARENT → CHILD
            // A probe that records nothing measures nothing: the native hooks' probes return at
            // once on a thread whose thread-locals are gone (the final snapshot, taken while the
            // process exits), and their fastest batch would then be "free".
            let Some(child) = state.tree.node(2) else {
                (self.leave)(PARENT);
                return None;
            };
            let calls = child.calls.load(Relaxed);
            for _ in 0..BATCHES {
                let before = child.total_ticks.load(Relaxed);
                let start = clock::ticks();
                for _ in 0..BATCH {
                    (self.pair)(CHILD);
                }
                let elapsed = clock::ticks().wrapping_sub(start) as f64 / BATCH as f64;
                let inside = child.total_ticks.load(Relaxed).wrapping_sub(before) as f64 / BATCH as f64;
                outer = outer.min(elapsed);
                inner = inner.min(inside);
            }
            (self.leave)(PARENT);
            let recorded = child.calls.load(Relaxed).wrapping_sub(calls) == BATCH * BATCHES as u64;
            recorded.then_some(MeasuredCost { inner_ticks: inner, outer_ticks: outer })
        });
        let merged = match (*best, measured) {
            (Some(b), Some(m)) => MeasuredCost {
                inner_ticks: b.inner_ticks.min(m.inner_ticks),
                outer_ticks: b.outer_ticks.min(m.outer_ticks),
            },
            (Some(b), None) => b,
            (None, Some(m)) => m,
            (None, None) => return MeasuredCost { inner_ticks: 0.0, outer_ticks: 0.0 },
        };
        *best = Some(merged);
        merged
    }
}
