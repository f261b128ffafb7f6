//! Per-thread state and the registry of all threads the agent has seen.
//!
//! A thread's state is created on its first traced call (the slow path of the hooks) and lives
//! until the process ends: a finished thread's call tree is still part of the profile. The
//! thread-local slot holds a `&'static ThreadState`, so the hot path is one TLS read.

use crate::tree::calltree::CallTree;
use crate::tree::clock;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};
use std::sync::{Mutex, MutexGuard};

pub struct ThreadState {
    pub os_tid: u32,
    pub tree: CallTree,
    pub first_tick: u64,
    /// Set when the runtime reports the thread destroyed.
    pub ended: AtomicBool,
    pub end_tick: AtomicU64,
    /// CPU times read when the thread ended (its /proc entry is gone afterwards).
    pub final_cpu: Mutex<Option<CpuTimes>>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuTimes {
    pub user_ns: u64,
    pub kernel_ns: u64,
}

#[derive(Default)]
pub struct Registry {
    pub threads: Vec<&'static ThreadState>,
    pub by_tid: HashMap<u32, &'static ThreadState>,
    /// Managed thread names by OS thread id (a name may arrive before the thread's first call).
    pub names: HashMap<u32, String>,
    /// Names of managed threads (by runtime ThreadID) that had no OS thread yet.
    pub pending_names: HashMap<usize, String>,
}

static REGISTRY: Mutex<Option<Registry>> = Mutex::new(None);

/// The registry, locked. Never held on the hot path: only on a thread's first call, by the
/// sampler and by snapshots. A poisoned lock is recovered: the data is plain bookkeeping.
pub fn registry() -> RegistryGuard {
    RegistryGuard(REGISTRY.lock().unwrap_or_else(|e| e.into_inner()))
}

/// Call-tree nodes of every thread together.
pub fn total_nodes() -> u64 {
    registry().threads.iter().map(|t| u64::from(t.tree.len())).sum()
}

pub struct RegistryGuard(MutexGuard<'static, Option<Registry>>);

impl std::ops::Deref for RegistryGuard {
    type Target = Registry;
    fn deref(&self) -> &Registry {
        static EMPTY: std::sync::LazyLock<Registry> = std::sync::LazyLock::new(Registry::default);
        self.0.as_ref().unwrap_or(&EMPTY)
    }
}

impl std::ops::DerefMut for RegistryGuard {
    fn deref_mut(&mut self) -> &mut Registry {
        self.0.get_or_insert_with(Registry::default)
    }
}

/// The thread-local slot holding this thread's `&'static ThreadState` (or null).
///
/// On x86-64 it is an initial-exec TLS word (`tree::tls`), which the hook trampolines read with
/// two instructions of their own.
#[cfg(target_arch = "x86_64")]
pub mod slot {
    use super::ThreadState;

    mod word {
        crate::tree::tls::tls_word!("sonde_thread_state");
    }

    #[inline(always)]
    pub fn get() -> *const ThreadState {
        word::get() as *const ThreadState
    }

    #[inline(always)]
    pub fn set(state: *const ThreadState) {
        word::set(state as usize)
    }
}

#[cfg(not(target_arch = "x86_64"))]
pub mod slot {
    use super::ThreadState;

    thread_local! {
        static CURRENT: Cell<*const ThreadState> = const { Cell::new(std::ptr::null()) };
    }

    pub fn get() -> *const ThreadState {
        CURRENT.with(Cell::get)
    }

    pub fn set(state: *const ThreadState) {
        CURRENT.with(|c| c.set(state))
    }
}

/// This thread's state, if it has one.
#[inline(always)]
pub fn current_if_any() -> Option<&'static ThreadState> {
    // SAFETY: the slot only ever holds null or a leaked (never freed) ThreadState.
    unsafe { slot::get().as_ref() }
}

/// This thread's state, creating and registering it on first use.
#[inline(always)]
pub fn current() -> &'static ThreadState {
    match current_if_any() {
        Some(state) => state,
        None => register_current(),
    }
}

#[cold]
fn register_current() -> &'static ThreadState {
    let os_tid = gettid();
    let state: &'static ThreadState = Box::leak(Box::new(ThreadState::new(os_tid)));
    let mut registry = registry();
    registry.threads.push(state);
    registry.by_tid.insert(os_tid, state);
    drop(registry);
    slot::set(state);
    state
}

/// Closes thread `tid`'s tree, if it has one (it stays in the profile).
pub fn end(tid: u32) {
    let state = registry().by_tid.get(&tid).copied();
    if let Some(state) = state {
        state.end();
    }
}

/// The state of thread `tid`, created and registered if needed (sampling mode builds trees for
/// threads from another thread, so this does not touch the thread-local slot).
pub fn state_for(tid: u32) -> &'static ThreadState {
    let mut registry = registry();
    if let Some(&state) = registry.by_tid.get(&tid) {
        return state;
    }
    let state: &'static ThreadState = Box::leak(Box::new(ThreadState::new(tid)));
    registry.threads.push(state);
    registry.by_tid.insert(tid, state);
    state
}

/// Runs `f` with this thread's hooks recording into `state`, which is not registered (used by the
/// hook-cost calibration so its fake calls never reach a profile).
pub fn with_private_state<R>(state: &'static ThreadState, f: impl FnOnce() -> R) -> R {
    let previous = slot::get();
    slot::set(state);
    let result = f();
    slot::set(previous);
    result
}

impl ThreadState {
    pub fn new(os_tid: u32) -> Self {
        ThreadState {
            os_tid,
            tree: CallTree::new(),
            first_tick: clock::ticks(),
            ended: AtomicBool::new(false),
            end_tick: AtomicU64::new(0),
            final_cpu: Mutex::new(None),
        }
    }

    /// Called when the runtime reports the thread gone.
    pub fn end(&self) {
        if !self.ended.swap(true, AcqRel) {
            self.end_tick.store(clock::ticks(), Relaxed);
            let cpu = cpu_times(self.os_tid);
            *self.final_cpu.lock().unwrap_or_else(|e| e.into_inner()) = cpu;
        }
    }

    pub fn cpu(&self) -> CpuTimes {
        if let Some(cpu) = *self.final_cpu.lock().unwrap_or_else(|e| e.into_inner()) {
            return cpu;
        }
        cpu_times(self.os_tid).unwrap_or_default()
    }
}

/// The calling thread's `pthread_t` (Mono's id for a thread).
pub fn pthread_self() -> usize {
    // SAFETY: pthread_self has no preconditions.
    unsafe { libc::pthread_self() as usize }
}

pub fn gettid() -> u32 {
    // SAFETY: gettid has no preconditions and cannot fail.
    unsafe { libc::gettid() as u32 }
}

/// A thread's CPU time: the precise total from `schedstat` (ns), split into user and kernel in the
/// proportions of `stat`'s utime/stime (clock ticks: too coarse on their own).
pub fn cpu_times(os_tid: u32) -> Option<CpuTimes> {
    let dir = format!("/proc/self/task/{os_tid}");
    let total_ns: u64 =
        std::fs::read_to_string(format!("{dir}/schedstat")).ok()?.split_whitespace().next()?.parse().ok()?;
    let stat = std::fs::read_to_string(format!("{dir}/stat")).ok()?;
    // Fields after the parenthesised command name (which may contain spaces): state is field 3,
    // utime field 14, stime field 15.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    let kernel_ns =
        if utime + stime == 0 { 0 } else { (total_ns as u128 * stime as u128 / (utime + stime) as u128) as u64 };
    Some(CpuTimes { user_ns: total_ns - kernel_ns, kernel_ns })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_this_threads_cpu_time() {
        // Spin for a few scheduler ticks: the kernel accounts run time at ticks and switches.
        let start = std::time::Instant::now();
        let mut x = 0u64;
        while start.elapsed() < std::time::Duration::from_millis(30) {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(1));
        }
        let cpu = cpu_times(gettid()).unwrap();
        assert!(cpu.user_ns + cpu.kernel_ns > 0);
    }

    #[test]
    fn threads_register_once() {
        let a = current() as *const ThreadState;
        let b = current() as *const ThreadState;
        assert_eq!(a, b);
        let other = std::thread::spawn(|| current() as *const ThreadState as usize).join().unwrap();
        assert_ne!(other, a as usize);
        assert!(registry().by_tid.contains_key(&gettid()));
    }
}
