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

use crate::base::running::guarded;
use crate::calibration::{CostProbe, Floor};
use crate::tree::clock;
use crate::tree::threads;

#[cfg(target_arch = "x86_64")]
#[path = "hooks/x86_64.rs"]
mod arch;

pub extern "C" fn enter_exact(method: usize) {
    guarded((), || threads::current().tree.enter(method as u32, clock::ticks()));
}

pub extern "C" fn leave_exact(method: usize) {
    guarded((), || {
        let tick = clock::ticks();
        threads::current().tree.leave(method as u32, tick)
    });
}

pub extern "C" fn enter_untimed(method: usize) {
    guarded((), || threads::current().tree.enter(method as u32, 0));
}

pub extern "C" fn leave_untimed(method: usize) {
    guarded((), || threads::current().tree.leave(method as u32, 0));
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

/// The CoreCLR hooks' calibration: the trampolines themselves, on a private call tree.
pub static COST_PROBE: CostProbe = CostProbe::new(probe_enter, probe_leave, probe_pair);

fn probe_enter(method: usize) {
    enter_exact(method)
}
fn probe_leave(method: usize) {
    leave_exact(method)
}
fn probe_pair(method: usize) {
    call_pair(true, method)
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
        assert_eq!(state.tree.current(), crate::tree::calltree::ROOT);
    }

    #[test]
    fn measured_cost_is_positive_and_inner_below_outer() {
        let cost = COST_PROBE.measure();
        assert!(cost.outer_ticks > 0.0 && cost.inner_ticks >= 0.0, "{cost:?}");
        assert!(cost.inner_ticks < cost.outer_ticks, "{cost:?}");
    }
}
