//! The x86-64 hook entry points (System V; the JIT's profiler-hook convention, see `hooks`).
//!
//! Register use: the thread's state pointer comes from the initial-exec TLS slot
//! `sonde_thread_state` (`threads::slot`); R10/R11 (and RCX, R8, R9 on leave) are scratch the
//! JIT allows us to clobber. Field offsets are computed by the compiler (`offset_of!`), so the
//! assembly follows the Rust structs. All stores are plain `mov`s: `Relaxed` atomics on x86-64.

use super::*;
use crate::tree::calltree::{CallTree, Node};
use crate::tree::threads::ThreadState;
use std::mem::offset_of;

const CURRENT: usize = offset_of!(ThreadState, tree) + offset_of!(CallTree, current);
const METHOD: usize = offset_of!(Node, method);
const CHILD_METHOD_0: usize = offset_of!(Node, child_method);
const CHILD_METHOD_1: usize = CHILD_METHOD_0 + 4;
const CHILD_0: usize = offset_of!(Node, child);
const CHILD_1: usize = CHILD_0 + 8;
const CALLS: usize = offset_of!(Node, calls);
const ENTER_TICK: usize = offset_of!(Node, enter_tick);
const TOTAL_TICKS: usize = offset_of!(Node, total_ticks);
const PARENT: usize = offset_of!(Node, parent_node);

/// Enter. Fast path: R11 = state, R10 = current node → cached child, then count it, make it
/// current and (exact timing) stamp it. Slow path (label 9): save the argument registers, call
/// `$slow(id)`.
macro_rules! enter_hook {
    ($name:ident, $slow:path, [$($stamp:literal),*]) => {
        #[unsafe(naked)]
        pub unsafe extern "C" fn $name() {
            core::arch::naked_asm!(
                "mov r11, qword ptr [rip + sonde_thread_state@GOTTPOFF]",
                "mov r11, qword ptr fs:[r11]",
                "test r11, r11",
                "jz 9f",
                "mov r10, qword ptr [r11 + {current}]",
                "cmp r14d, dword ptr [r10 + {cm0}]",
                "jne 1f",
                "mov r10, qword ptr [r10 + {c0}]",
                "jmp 2f",
                "1:",
                "cmp r14d, dword ptr [r10 + {cm1}]",
                "jne 9f",
                "mov r10, qword ptr [r10 + {c1}]",
                "2:",
                "inc qword ptr [r10 + {calls}]",
                "mov qword ptr [r11 + {current}], r10",
                $($stamp,)*
                "ret",
                "9:",
                "push rbp",
                "mov rbp, rsp",
                "push rdi", "push rsi", "push rdx", "push rcx", "push r8", "push r9",
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
                current = const CURRENT,
                cm0 = const CHILD_METHOD_0,
                cm1 = const CHILD_METHOD_1,
                c0 = const CHILD_0,
                c1 = const CHILD_1,
                calls = const CALLS,
                enter_tick = const ENTER_TICK,
                slow = sym $slow,
            )
        }
    };
}

/// Leave and tailcall. Fast path: the current node must be `id`'s; (exact timing) add the elapsed
/// ticks, then make the parent current. Slow path (label 9): save the return registers, call
/// `$slow(id)` (the id is still in RDI).
macro_rules! leave_hook {
    ($name:ident, $slow:path, [$($stamp:literal),*]) => {
        #[unsafe(naked)]
        pub unsafe extern "C" fn $name() {
            core::arch::naked_asm!(
                "mov r11, qword ptr [rip + sonde_thread_state@GOTTPOFF]",
                "mov r11, qword ptr fs:[r11]",
                "test r11, r11",
                "jz 9f",
                "mov r10, qword ptr [r11 + {current}]",
                "cmp edi, dword ptr [r10 + {method}]",
                "jne 9f",
                $($stamp,)*
                "mov rcx, qword ptr [r10 + {parent}]",
                "mov qword ptr [r11 + {current}], rcx",
                "ret",
                "9:",
                "push rbp",
                "mov rbp, rsp",
                "push rax", "push rdx",
                "sub rsp, 32",
                "movaps [rsp], xmm0", "movaps [rsp + 16], xmm1",
                "call {slow}",
                "movaps xmm0, [rsp]", "movaps xmm1, [rsp + 16]",
                "add rsp, 32",
                "pop rdx", "pop rax",
                "pop rbp",
                "ret",
                current = const CURRENT,
                method = const METHOD,
                parent = const PARENT,
                total_ticks = const TOTAL_TICKS,
                enter_tick = const ENTER_TICK,
                slow = sym $slow,
            )
        }
    };
}

// Exact timing: the enter stamp is the last thing the hook does, the leave stamp the first thing
// after finding the node, so little of the hooks' own time falls inside the call (and what does
// is measured and subtracted: `measure_cost`). RDX is an argument register on enter and a return
// register on leave; RAX a return register on leave: both are kept in scratch registers.
enter_hook!(
    enter_exact_naked,
    enter_exact,
    ["mov r11, rdx", "rdtsc", "shl rdx, 32", "or rax, rdx", "mov rdx, r11", "mov qword ptr [r10 + {enter_tick}], rax"]
);
leave_hook!(
    leave_exact_naked,
    leave_exact,
    [
        "mov r8, rax",
        "mov r9, rdx",
        "rdtsc",
        "shl rdx, 32",
        "or rax, rdx",
        "sub rax, qword ptr [r10 + {enter_tick}]",
        "add qword ptr [r10 + {total_ticks}], rax",
        "mov rax, r8",
        "mov rdx, r9"
    ]
);
// Sampled timing: no clock (the comments only use the offsets the macros always pass).
enter_hook!(enter_untimed_naked, enter_untimed, ["/* no clock ({enter_tick}) */"]);
leave_hook!(leave_untimed_naked, leave_untimed, ["/* no clock ({enter_tick}, {total_ticks}) */"]);

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

/// One enter/leave pair through the same entry points and the same register convention the JIT
/// uses (for the hook-cost calibration and the tests).
#[inline(always)]
pub fn call_pair(timed: bool, method: usize) {
    let set = hooks(timed);
    // SAFETY: the hooks follow the register contract set up here (id in R14 for enter, RDI for
    // leave); everything they may clobber is declared through `clobber_abi("C")`, and without
    // `nostack` the compiler keeps the stack aligned and the red zone free for the calls.
    unsafe {
        core::arch::asm!(
            // r12 = id, r13 = enter, r15 = leave: callee-saved, so they survive the first call.
            "mov r14, r12",
            "call r13",
            "mov rdi, r12",
            "call r15",
            in("r12") method,
            in("r13") set.enter,
            in("r15") set.leave,
            out("r14") _,
            clobber_abi("C"),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering::Relaxed;

    /// Calls `enter` with every register the JIT expects preserved set to a marker, and checks
    /// they come back unchanged; then the same for `leave` and its return registers.
    fn check_preserved(enter: usize, leave: usize, id: usize) {
        let (mut rdi, mut rsi, mut rdx, mut rcx, mut r8, mut r9) = (1usize, 2usize, 3usize, 4usize, 5usize, 6usize);
        let mut x: [f64; 8] = [0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5];
        // SAFETY: the enter hook's contract: id in R14, may clobber RAX, R10, R11 and XMM8–15
        // (declared), must preserve everything else (checked below).
        unsafe {
            core::arch::asm!(
                "call {f}",
                f = in(reg) enter,
                in("r14") id,
                inout("rdi") rdi, inout("rsi") rsi, inout("rdx") rdx, inout("rcx") rcx,
                inout("r8") r8, inout("r9") r9,
                inout("xmm0") x[0], inout("xmm1") x[1], inout("xmm2") x[2], inout("xmm3") x[3],
                inout("xmm4") x[4], inout("xmm5") x[5], inout("xmm6") x[6], inout("xmm7") x[7],
                out("rax") _, out("r10") _, out("r11") _,
                out("xmm8") _, out("xmm9") _, out("xmm10") _, out("xmm11") _,
                out("xmm12") _, out("xmm13") _, out("xmm14") _, out("xmm15") _,
            );
        }
        assert_eq!((rdi, rsi, rdx, rcx, r8, r9), (1, 2, 3, 4, 5, 6), "enter clobbered an argument register");
        assert_eq!(x, [0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5], "enter clobbered a vector argument register");

        let (mut rax, mut rdx) = (0x1111usize, 0x2222usize);
        let (mut x0, mut x1) = (8.25f64, 9.25f64);
        // SAFETY: the leave hook's contract: id in RDI, must preserve RAX, RDX, XMM0, XMM1.
        unsafe {
            core::arch::asm!(
                "call {f}",
                f = in(reg) leave,
                in("rdi") id,
                inout("rax") rax, inout("rdx") rdx, inout("xmm0") x0, inout("xmm1") x1,
                clobber_abi("C"),
            );
        }
        assert_eq!((rax, rdx, x0, x1), (0x1111, 0x2222, 8.25, 9.25), "leave clobbered a return register");
    }

    #[test]
    fn hooks_preserve_the_registers_the_jit_relies_on() {
        for timed in [true, false] {
            let state: &'static ThreadState = Box::leak(Box::new(ThreadState::new(0)));
            let set = hooks(timed);
            crate::tree::threads::with_private_state(state, || {
                // The first pair takes the slow paths (new node), the next ones the fast paths;
                // an unmatched leave takes the slow path again.
                for _ in 0..3 {
                    check_preserved(set.enter, set.leave, 7);
                }
                check_preserved(set.enter, set.leave, 8);
            });
            let node = state.tree.node(1).unwrap();
            assert_eq!(node.calls.load(Relaxed), 3);
            assert_eq!(state.tree.current(), crate::tree::calltree::ROOT);
        }
    }

    #[test]
    fn fast_paths_count_and_time() {
        let state: &'static ThreadState = Box::leak(Box::new(ThreadState::new(0)));
        crate::tree::threads::with_private_state(state, || {
            for _ in 0..1000 {
                call_pair(true, 3);
            }
        });
        let node = state.tree.node(1).unwrap();
        assert_eq!(node.calls.load(Relaxed), 1000);
        assert!(node.total_ticks.load(Relaxed) > 0);
        assert_eq!(state.tree.len(), 2);
    }
}
