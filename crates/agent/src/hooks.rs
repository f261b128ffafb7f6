//! The enter/leave/tailcall hooks: the only code that runs on every traced call.
//!
//! The runtime calls the hooks registered with `SetEnterLeaveFunctionHooks3` directly from JIT-ed
//! code, with a custom convention (the JIT's `targetamd64.h`, Unix ABI): the enter hook gets the
//! client id (our method index, returned by the function-ID mapper) in R14 and must preserve the
//! argument registers (RDI, RSI, RDX, RCX, R8, R9, XMM0–7; it may clobber RAX, R10, R11); leave and
//! tailcall get it in RDI and must preserve the return registers (RAX, RDX, XMM0, XMM1).
//!
//! On x86-64 the common case is therefore written in assembly (`hooks/x86_64.rs`): follow the
//! current node's two-entry child cache (enter) or its parent pointer (leave), count, and read the
//! clock — a dozen instructions, no call, no register saved but RDX around `rdtsc`. Everything
//! else (a thread's first call, a new call path, a resync, a full tree) saves the registers and
//! calls the Rust slow paths below, which run behind a panic guard.
//!
//! Other architectures use `SetEnterLeaveFunctionHooks3WithInfo`, whose hooks are ordinary C
//! functions (the runtime saves registers itself), at roughly twice the cost.

use crate::clock;
use crate::threads;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Mutex, OnceLock};

#[cfg(target_arch = "x86_64")]
#[path = "hooks/x86_64.rs"]
mod arch;

/// Cleared if a slow path ever panics: from then on the slow paths do nothing (the profile is
/// lost, the program is not).
static ACTIVE: AtomicBool = AtomicBool::new(true);

#[inline(always)]
fn guarded(f: impl FnOnce()) {
    if ACTIVE.load(Relaxed) && catch_unwind(AssertUnwindSafe(f)).is_err() {
        ACTIVE.store(false, Relaxed);
    }
}

pub extern "C" fn enter_exact(method: usize) {
    guarded(|| threads::current().tree.enter(method as u32, clock::ticks()));
}

pub extern "C" fn leave_exact(method: usize) {
    guarded(|| {
        let tick = clock::ticks();
        threads::current().tree.leave(method as u32, tick)
    });
}

pub extern "C" fn enter_untimed(method: usize) {
    guarded(|| threads::current().tree.enter(method as u32, 0));
}

pub extern "C" fn leave_untimed(method: usize) {
    guarded(|| threads::current().tree.leave(method as u32, 0));
}

/// The entry points handed to the runtime for one timing.
#[derive(Clone, Copy)]
pub struct HookSet {
    pub enter: usize,
    pub leave: usize,
    pub tailcall: usize,
    /// True when these are `...WithInfo` hooks (they need `COR_PRF_ENABLE_FRAME_INFO`).
    pub with_info: bool,
}

#[cfg(not(target_arch = "x86_64"))]
mod arch {
    use super::*;

    extern "C" fn empty_info(_method: usize, _info: usize) {}
    extern "C" fn clock_info(_method: usize, _info: usize) {
        std::hint::black_box(clock::ticks());
    }

    pub fn floor_hooks(kind: Floor) -> HookSet {
        let f = match kind {
            Floor::Empty => empty_info as *const () as usize,
            Floor::Clock => clock_info as *const () as usize,
        };
        HookSet { enter: f, leave: f, tailcall: f, with_info: true }
    }

    extern "C" fn enter_exact_info(method: usize, _info: usize) {
        enter_exact(method)
    }
    extern "C" fn leave_exact_info(method: usize, _info: usize) {
        leave_exact(method)
    }
    extern "C" fn enter_untimed_info(method: usize, _info: usize) {
        enter_untimed(method)
    }
    extern "C" fn leave_untimed_info(method: usize, _info: usize) {
        leave_untimed(method)
    }

    pub fn hooks(timed: bool) -> HookSet {
        let (enter, leave) = if timed {
            (enter_exact_info as *const () as usize, leave_exact_info as *const () as usize)
        } else {
            (enter_untimed_info as *const () as usize, leave_untimed_info as *const () as usize)
        };
        HookSet { enter, leave, tailcall: leave, with_info: true }
    }

    pub fn call_pair(timed: bool, method: usize) {
        if timed {
            enter_exact_info(method, 0);
            leave_exact_info(method, 0);
        } else {
            enter_untimed_info(method, 0);
            leave_untimed_info(method, 0);
        }
    }
}

pub use arch::{call_pair, floor_hooks, hooks};

/// Hooks for measuring the floor under any tracer (benchmarks only, `SONDE_BENCH_HOOKS`): they
/// record nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Floor {
    /// Return at once.
    Empty,
    /// Read the clock once per hook, nothing else.
    Clock,
}

impl Floor {
    /// `SONDE_BENCH_HOOKS=empty|clock`, read once at start-up by each runtime backend.
    pub fn from_env() -> Option<Floor> {
        match std::env::var("SONDE_BENCH_HOOKS").as_deref() {
            Ok("empty") => Some(Floor::Empty),
            Ok("clock") => Some(Floor::Clock),
            _ => None,
        }
    }
}

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
/// CoreCLR trampolines by default; the Mono backend brings its callbacks, see [`use_cost_probe`]).
pub struct CostProbe {
    enter: fn(usize),
    leave: fn(usize),
    pair: fn(usize),
    state: OnceLock<&'static threads::ThreadState>,
    best: Mutex<Option<MeasuredCost>>,
}

fn coreclr_enter(method: usize) {
    enter_exact(method)
}
fn coreclr_leave(method: usize) {
    leave_exact(method)
}
fn coreclr_pair(method: usize) {
    call_pair(true, method)
}

static CORECLR_PROBE: CostProbe = CostProbe::new(coreclr_enter, coreclr_leave, coreclr_pair);
static PROBE: OnceLock<&'static CostProbe> = OnceLock::new();

/// Makes [`measure_cost`] calibrate `probe`'s hooks instead of the CoreCLR ones. Called once, at
/// start-up, by a backend whose hooks are other entry points (one runtime per process).
pub fn use_cost_probe(probe: &'static CostProbe) {
    let _ = PROBE.set(probe);
}

/// Measures the exact-timing hook cost and returns the lowest figures seen so far.
///
/// The cost of a hook is its undisturbed cost: interruptions during a real run are real time of
/// the program's thread, so the estimate is the fastest of many short batches — and since a busy
/// machine can slow every batch of one measurement, the agent measures again at every snapshot
/// (off the program's threads) and keeps the minimum. Under-correcting leaves a little hook time in
/// the figures; over-correcting would erase real time, so the estimator errs low.
pub fn measure_cost() -> MeasuredCost {
    PROBE.get().copied().unwrap_or(&CORECLR_PROBE).measure()
}

impl CostProbe {
    pub const fn new(enter: fn(usize), leave: fn(usize), pair: fn(usize)) -> CostProbe {
        CostProbe { enter, leave, pair, state: OnceLock::new(), best: Mutex::new(None) }
    }

    pub(crate) fn measure(&self) -> MeasuredCost {
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
            let child = state.tree.node(2).expect("the calibration child node");
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
            MeasuredCost { inner_ticks: inner, outer_ticks: outer }
        });
        let merged = match *best {
            Some(b) => MeasuredCost {
                inner_ticks: b.inner_ticks.min(measured.inner_ticks),
                outer_ticks: b.outer_ticks.min(measured.outer_ticks),
            },
            None => measured,
        };
        *best = Some(merged);
        merged
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering::Relaxed;

    #[test]
    fn trampolines_record_calls_and_preserve_the_thread() {
        let state: &'static threads::ThreadState = Box::leak(Box::new(threads::ThreadState::new(0)));
        threads::with_private_state(state, || {
            for _ in 0..10 {
                call_pair(true, 5);
                call_pair(false, 6);
            }
        });
        let calls: Vec<(u32, u64)> = (1..state.tree.len())
            .map(|i| {
                let n = state.tree.node(i).unwrap();
                (n.method.load(Relaxed), n.calls.load(Relaxed))
            })
            .collect();
        assert_eq!(calls, vec![(5, 10), (6, 10)]);
        assert_eq!(state.tree.current(), crate::calltree::ROOT);
    }

    #[test]
    fn measured_cost_is_positive_and_inner_below_outer() {
        let cost = measure_cost();
        assert!(cost.outer_ticks > 0.0 && cost.inner_ticks >= 0.0, "{cost:?}");
        assert!(cost.inner_ticks < cost.outer_ticks, "{cost:?}");
    }
}
