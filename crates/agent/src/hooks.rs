//! The enter/leave/tailcall hooks: the only code that runs on every traced call.
//!
//! The runtime calls the hooks registered with `SetEnterLeaveFunctionHooks3` directly from JIT-ed
//! code, with a custom convention (the JIT's `targetamd64.h`, Unix ABI): the enter hook gets the
//! client id (our method index, returned by the function-ID mapper) in R14 and must preserve the
//! argument registers (RDI, RSI, RDX, RCX, R8, R9, XMM0–7); leave and tailcall get it in RDI and
//! must preserve the return registers (RAX, RDX, XMM0, XMM1). So the runtime-facing entry points
//! are small naked trampolines.
//!
//! Saving eight vector registers costs more than the whole common case (~3.7 ns of ~8 ns here),
//! so each trampoline first calls a *fast path* with only the general-purpose registers saved:
//! integer-only code (checked by a test on the compiled code) that handles a call whose node is
//! already known. Anything else — a thread's first call, a new call path, a resync, a full tree —
//! returns "not done", and the trampoline saves the vector registers and calls the *slow path*,
//! ordinary Rust behind a panic guard. The thread's state pointer comes from an initial-exec TLS
//! slot read in the trampoline (`threads::slot`), not through `__tls_get_addr`.
//!
//! Other architectures use `SetEnterLeaveFunctionHooks3WithInfo`, whose hooks are ordinary C
//! functions (the runtime saves registers itself), at roughly twice the cost.

use crate::clock;
use crate::threads::{self, ThreadState};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

/// Cleared if a hook ever panics: from then on the hooks do nothing (the profile is lost, the
/// program is not).
static ACTIVE: AtomicBool = AtomicBool::new(true);

#[inline(always)]
fn guarded(f: impl FnOnce()) {
    if ACTIVE.load(Relaxed) && catch_unwind(AssertUnwindSafe(f)).is_err() {
        ACTIVE.store(false, Relaxed);
    }
}

/// Fast paths: `state` is the thread's TLS slot (null before its first call). Return 0 when the
/// call was handled (or profiling is off), 1 when the slow path must run.
macro_rules! fast_path {
    ($name:ident, $op:ident, $clock:expr) => {
        pub extern "C" fn $name(state: *const ThreadState, method: usize) -> u32 {
            if !ACTIVE.load(Relaxed) {
                return 0;
            }
            // SAFETY: the slot holds null or a leaked, never-freed ThreadState.
            match unsafe { state.as_ref() } {
                Some(state) if state.tree.$op(method as u32, $clock) => 0,
                _ => 1,
            }
        }
    };
}

fast_path!(enter_fast_exact, enter_fast, clock::ticks);
fast_path!(leave_fast_exact, leave_fast, clock::ticks);
fast_path!(enter_fast_untimed, enter_fast, || 0);
fast_path!(leave_fast_untimed, leave_fast, || 0);

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

#[cfg(target_arch = "x86_64")]
mod arch {
    use super::*;

    /// Enter: saves the argument registers, calls `$fast(state, id)`; if that returns non-zero,
    /// also saves XMM0–7 and calls `$slow(id)`. The client id arrives in R14 (callee-saved, so it
    /// survives the first call).
    macro_rules! enter_trampoline {
        ($name:ident, $fast:path, $slow:path) => {
            #[unsafe(naked)]
            pub unsafe extern "C" fn $name() {
                core::arch::naked_asm!(
                    "push rbp",
                    "mov rbp, rsp",
                    "push rdi", "push rsi", "push rdx", "push rcx", "push r8", "push r9",
                    "mov rax, qword ptr [rip + sonde_thread_state@GOTTPOFF]",
                    "mov rdi, qword ptr fs:[rax]",
                    "mov rsi, r14",
                    "call {fast}",
                    "test eax, eax",
                    "jnz 2f",
                    "pop r9", "pop r8", "pop rcx", "pop rdx", "pop rsi", "pop rdi",
                    "pop rbp",
                    "ret",
                    "2:",
                    "sub rsp, 128",
                    "movaps [rsp], xmm0", "movaps [rsp + 16], xmm1",
                    "movaps [rsp + 32], xmm2", "movaps [rsp + 48], xmm3",
                    "movaps [rsp + 64], xmm4", "movaps [rsp + 80], xmm5",
                    "movaps [rsp + 96], xmm6", "movaps [rsp + 112], xmm7",
                    "mov rdi, r14",
                    "call {slow}",
                    "movaps xmm0, [rsp]", "movaps xmm1, [rsp + 16]",
                    "movaps xmm2, [rsp + 32]", "movaps xmm3, [rsp + 48]",
                    "movaps xmm4, [rsp + 64]", "movaps xmm5, [rsp + 80]",
                    "movaps xmm6, [rsp + 96]", "movaps xmm7, [rsp + 112]",
                    "add rsp, 128",
                    "pop r9", "pop r8", "pop rcx", "pop rdx", "pop rsi", "pop rdi",
                    "pop rbp",
                    "ret",
                    fast = sym $fast,
                    slow = sym $slow,
                )
            }
        };
    }

    /// Leave/tailcall: saves the return registers RAX and RDX (and the id), calls
    /// `$fast(state, id)`; if that returns non-zero, also saves XMM0–1 and calls `$slow(id)`.
    macro_rules! leave_trampoline {
        ($name:ident, $fast:path, $slow:path) => {
            #[unsafe(naked)]
            pub unsafe extern "C" fn $name() {
                core::arch::naked_asm!(
                    "push rbp",
                    "mov rbp, rsp",
                    "push rax", "push rdx", "push rdi",
                    "sub rsp, 8",
                    "mov rsi, rdi",
                    "mov rax, qword ptr [rip + sonde_thread_state@GOTTPOFF]",
                    "mov rdi, qword ptr fs:[rax]",
                    "call {fast}",
                    "test eax, eax",
                    "jnz 2f",
                    "add rsp, 8",
                    "pop rdi", "pop rdx", "pop rax",
                    "pop rbp",
                    "ret",
                    "2:",
                    "sub rsp, 32",
                    "movaps [rsp], xmm0", "movaps [rsp + 16], xmm1",
                    "mov rdi, [rsp + 40]",
                    "call {slow}",
                    "movaps xmm0, [rsp]", "movaps xmm1, [rsp + 16]",
                    "add rsp, 40",
                    "pop rdi", "pop rdx", "pop rax",
                    "pop rbp",
                    "ret",
                    fast = sym $fast,
                    slow = sym $slow,
                )
            }
        };
    }

    enter_trampoline!(enter_exact_naked, enter_fast_exact, enter_exact);
    leave_trampoline!(leave_exact_naked, leave_fast_exact, leave_exact);
    enter_trampoline!(enter_untimed_naked, enter_fast_untimed, enter_untimed);
    leave_trampoline!(leave_untimed_naked, leave_fast_untimed, leave_untimed);

    /// Benchmark floors: hooks that do nothing, and hooks that only read the clock (what any
    /// exactly-timed tracer must at least pay). `rdtsc` writes RDX, an argument register on
    /// enter and a return register on leave, so it is saved.
    #[unsafe(naked)]
    unsafe extern "C" fn empty_naked() {
        core::arch::naked_asm!("ret")
    }
    #[unsafe(naked)]
    unsafe extern "C" fn clock_enter_naked() {
        core::arch::naked_asm!("push rdx", "rdtsc", "pop rdx", "ret")
    }
    #[unsafe(naked)]
    unsafe extern "C" fn clock_leave_naked() {
        core::arch::naked_asm!("push rax", "push rdx", "rdtsc", "pop rdx", "pop rax", "ret")
    }

    pub fn floor_hooks(kind: Floor) -> HookSet {
        let (enter, leave) = match kind {
            Floor::Empty => (empty_naked as *const () as usize, empty_naked as *const () as usize),
            Floor::Clock => (clock_enter_naked as *const () as usize, clock_leave_naked as *const () as usize),
        };
        HookSet { enter, leave, tailcall: leave, with_info: false }
    }

    pub fn hooks(timed: bool) -> HookSet {
        let (enter, leave) = if timed {
            (enter_exact_naked as *const () as usize, leave_exact_naked as *const () as usize)
        } else {
            (enter_untimed_naked as *const () as usize, leave_untimed_naked as *const () as usize)
        };
        // A tail call ends the caller's frame exactly like a leave; the callee then enters as a
        // child of the caller's parent, which keeps the tree (and the counts) right.
        HookSet { enter, leave, tailcall: leave, with_info: false }
    }

    /// One enter/leave pair through the same trampolines and the same register convention the
    /// JIT uses (for the hook-cost calibration).
    #[inline(always)]
    pub fn call_pair(timed: bool, method: usize) {
        let (enter, leave) = if timed {
            (enter_exact_naked as *const () as usize, leave_exact_naked as *const () as usize)
        } else {
            (enter_untimed_naked as *const () as usize, leave_untimed_naked as *const () as usize)
        };
        // SAFETY: the trampolines follow the register contract set up here (id in R14 for enter,
        // RDI for leave); everything they may clobber is declared through `clobber_abi("C")`, and
        // without `nostack` the compiler keeps the stack aligned and the red zone free for the calls.
        unsafe {
            core::arch::asm!(
                // r12 = id, r13 = enter, r15 = leave: callee-saved, so they survive the first call.
                "mov r14, r12",
                "call r13",
                "mov rdi, r12",
                "call r15",
                in("r12") method,
                in("r13") enter,
                in("r15") leave,
                out("r14") _,
                clobber_abi("C"),
            );
        }
    }
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

/// The hooks' own cost in ticks, measured through the real entry points on a private call tree.
#[derive(Debug, Clone, Copy)]
pub struct MeasuredCost {
    /// Ticks inside a call's own enter→leave interval that belong to the hooks.
    pub inner_ticks: f64,
    /// Ticks a caller sees per call it makes (both hooks end to end, plus the calls to them).
    pub outer_ticks: f64,
}

/// Measures the exact-timing hook cost. Takes the fastest of several batches: the cost of a hook
/// is its undisturbed cost; interruptions in a real run are real time of the program's thread.
pub fn measure_cost() -> MeasuredCost {
    const BATCH: u64 = 4000;
    const BATCHES: usize = 9;
    const PARENT: usize = 1;
    const CHILD: usize = 2;
    let state: &'static threads::ThreadState = Box::leak(Box::new(threads::ThreadState::new(0)));
    threads::with_private_state(state, || {
        let (mut inner, mut outer) = (f64::MAX, f64::MAX);
        enter_exact(PARENT);
        call_pair(true, CHILD); // creates the child node: the last one in the tree
        let child = state.tree.node(state.tree.len() - 1).expect("the calibration child node");
        for _ in 0..BATCHES {
            let before = child.total_ticks.load(Relaxed);
            let start = clock::ticks();
            for _ in 0..BATCH {
                call_pair(true, CHILD);
            }
            let elapsed = clock::ticks().wrapping_sub(start) as f64 / BATCH as f64;
            let inside = child.total_ticks.load(Relaxed).wrapping_sub(before) as f64 / BATCH as f64;
            outer = outer.min(elapsed);
            inner = inner.min(inside);
        }
        leave_exact(PARENT);
        MeasuredCost { inner_ticks: inner, outer_ticks: outer }
    })
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

/// The fast paths run with the caller's vector registers live, so their compiled code must not
/// touch a vector register, call anything (a callee could) or contain a panic branch. This reads
/// this test binary's own machine code (compiled with the same settings as the agent library:
/// see the workspace `Cargo.toml`) with `objdump` and checks.
#[cfg(all(test, target_arch = "x86_64"))]
mod fast_path_code {
    #[test]
    fn fast_paths_are_leaf_integer_code() {
        let exe = std::env::current_exe().unwrap();
        let out = std::process::Command::new("objdump")
            .args(["-d", "--no-show-raw-insn", "-M", "intel", "-C"])
            .arg(&exe)
            .output()
            .expect("objdump (binutils) is needed to check the hooks' machine code");
        assert!(out.status.success());
        let text = String::from_utf8_lossy(&out.stdout);
        for name in ["enter_fast_exact", "leave_fast_exact", "enter_fast_untimed", "leave_fast_untimed"] {
            let header = format!("sonde_agent::hooks::{name}>:");
            let start = text.find(&header).unwrap_or_else(|| panic!("{name} not found in {}", exe.display()));
            let body: Vec<&str> = text[start..].lines().skip(1).take_while(|l| !l.trim().is_empty()).collect();
            assert!(!body.is_empty());
            for line in &body {
                let bad = ["xmm", "ymm", "zmm", "call", "ud2"].iter().find(|w| line.contains(*w));
                assert!(bad.is_none(), "{name} contains `{}`:\n{}", bad.unwrap(), body.join("\n"));
            }
        }
    }
}
