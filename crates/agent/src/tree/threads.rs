//! Per-thread state and the registry of the threads the agent has seen.
//!
//! A thread's state is created on its first traced call (the slow path of the hooks) or, in
//! sampling mode, when the runtime reports the thread. A finished thread's call tree stays in the
//! profile, but memory must not grow with the threads a process ever created (services start and
//! retire threads all day): once more than [`KEPT_ENDED`] threads have ended, the oldest ended
//! ones whose tree can no longer change — the OS thread is gone, and no sampler slot still
//! writes into it — are **folded** into one aggregate tree (reported as the thread
//! `[N ended threads]`, OS thread id 0) and freed ([`fold_ended`]). Memory is then bounded by the
//! live threads, [`KEPT_ENDED`] ended ones and the aggregate, whose size grows with distinct call
//! paths only.
//!
//! The registry owns each state (an `Arc`); the thread-local slot holds a plain pointer to it, so
//! the hot path is one TLS read. That pointer stays valid: a state is dropped only after its OS
//! thread is gone, and with it the slot. Readers on other threads (snapshots, the sampled-timing
//! thread) hold `Arc`s of their own.

use crate::tree::calltree::CallTree;
use crate::tree::clock;
use sonde_profile::NodeEvents;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering::*};
use std::sync::{Arc, Mutex, MutexGuard};

/// Ended threads listed one by one; older ones are folded into the `[N ended threads]` aggregate.
pub const KEPT_ENDED: usize = 100;

pub struct ThreadState {
    pub os_tid: u32,
    pub tree: CallTree,
    pub first_tick: u64,
    /// Set when the runtime reports the thread destroyed (or its sampler finds it gone).
    pub ended: AtomicBool,
    pub end_tick: AtomicU64,
    /// CPU times read when the thread ended (its /proc entry is gone afterwards).
    pub final_cpu: Mutex<Option<CpuTimes>>,
    /// The managed thread's name.
    pub name: Mutex<Option<String>>,
    /// Sampling mode: sampler slots bound to this state (the drain writes their samples into the
    /// tree).
    pub sampled: AtomicU32,
    /// Sampling mode: the tree node of the thread's latest sample, + 1 (0: none yet). Written by
    /// the drain; read by snapshots (`sonde dump` prints the stack it stands for).
    pub last_sample: AtomicU32,
    /// The tree node of the thread's stack in the latest runtime walk (`sampling::record_walk`),
    /// + 1 (0: none). Such a stack is in the tree without a sample counted.
    pub walked: AtomicU32,
    /// The thread's start time (field 22 of its `/proc` stat: clock ticks since boot; 0 when
    /// unknown). With `os_tid`, it tells the thread from a later one that reuses its id.
    start_time: u64,
    /// Allocations, waits and throws attributed to nodes of `tree` (by node index), written by
    /// the runtime's event callbacks (tracing) or the drain (sampling); never on the hooks' path.
    pub events: Mutex<BTreeMap<u32, NodeEvents>>,
    /// Sampling mode: samples by (node, IL offset of the node's method), for the innermost frame
    /// of each sample (the drain's; lines per node for the exports).
    leaf_offsets: Mutex<BTreeMap<(u32, u32), u64>>,
    /// The aggregate of ended threads ([`fold_ended`]): how many, and their wall time together.
    merged_threads: AtomicU64,
    merged_wall_ns: AtomicU64,
    /// The thread's call-trace ring (`--call-trace`), made at its first traced call.
    trace: std::sync::OnceLock<Box<super::trace::Ring>>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuTimes {
    pub user_ns: u64,
    pub kernel_ns: u64,
}

#[derive(Default)]
pub struct Registry {
    /// Every thread listed in the profile: live ones and the last [`KEPT_ENDED`] ended ones.
    pub threads: Vec<Arc<ThreadState>>,
    /// The latest thread with each OS thread id.
    pub by_tid: HashMap<u32, Arc<ThreadState>>,
    /// Names of managed threads that arrived before the thread's state was created, by OS thread
    /// id (dropped when the thread ends).
    pub names: HashMap<u32, String>,
    /// Names of managed threads (by runtime ThreadID) that had no OS thread yet.
    pub pending_names: HashMap<usize, String>,
    /// Ended threads still listed one by one, oldest first.
    ended: VecDeque<Arc<ThreadState>>,
    /// The threads folded so far ([`fold_ended`]).
    aggregate: Option<Arc<ThreadState>>,
}

static REGISTRY: Mutex<Option<Registry>> = Mutex::new(None);
/// `Registry::ended.len()`, to skip [`fold_ended`] without the lock.
static ENDED: AtomicUsize = AtomicUsize::new(0);
/// Held while ended threads are folded, and by snapshots while they read the trees: a snapshot
/// never sees a thread both on its own and inside the aggregate.
static FOLDING: Mutex<()> = Mutex::new(());

/// The registry, locked. Never held on the hot path: only on a thread's first call, by the
/// sampler and by snapshots. A poisoned lock is recovered: the data is plain bookkeeping.
pub fn registry() -> RegistryGuard {
    RegistryGuard(REGISTRY.lock().unwrap_or_else(|e| e.into_inner()))
}

/// Call-tree nodes of every thread together.
pub fn total_nodes() -> u64 {
    let registry = registry();
    let aggregate = registry.aggregate.iter().map(|t| u64::from(t.tree.len())).sum::<u64>();
    registry.threads.iter().map(|t| u64::from(t.tree.len())).sum::<u64>() + aggregate
}

/// Every listed thread, then the aggregate of the folded ones (if any), with the fold lock held
/// (see [`FOLDING`]) for as long as the caller keeps the guard. For snapshots.
pub fn listed() -> (MutexGuard<'static, ()>, Vec<Arc<ThreadState>>) {
    let folding = FOLDING.lock().unwrap_or_else(|e| e.into_inner());
    let registry = registry();
    let mut threads = registry.threads.clone();
    threads.extend(registry.aggregate.iter().cloned());
    (folding, threads)
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
    // SAFETY: the slot only ever holds null, a leaked ThreadState (`with_private_state`) or one
    // the registry owns, which is dropped only after this thread is gone (`fold_ended`): for as
    // long as this thread can read it.
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
    let state = Arc::new(ThreadState::new(os_tid));
    let pointer = Arc::as_ptr(&state);
    registry().add(state);
    slot::set(pointer);
    // SAFETY: the registry owns the state and drops it only after this thread is gone (see
    // `current_if_any`).
    unsafe { &*pointer }
}

impl Registry {
    /// Lists a new thread's state (the latest with its OS thread id), with the name that may have
    /// arrived before it.
    fn add(&mut self, state: Arc<ThreadState>) {
        if let Some(name) = self.names.remove(&state.os_tid) {
            *state.name.lock().unwrap_or_else(|e| e.into_inner()) = Some(name);
        }
        self.by_tid.insert(state.os_tid, state.clone());
        self.threads.push(state);
    }
}

/// A new session (an agent attached again): every thread's state and tree of the last session is
/// dropped, the registry starts empty. Only between sessions: nothing samples or records, and
/// no thread-local slot points into the registry (sampling mode, the only one that attaches,
/// reaches states through the registry, never through the slot).
pub fn reset() {
    let _folding = FOLDING.lock().unwrap_or_else(|e| e.into_inner());
    let old = REGISTRY.lock().unwrap_or_else(|e| e.into_inner()).take();
    ENDED.store(0, Relaxed);
    drop(old);
}

/// Closes thread `tid`'s tree, if it has one (it stays in the profile, on its own or folded).
pub fn end(tid: u32) {
    let state = {
        let mut registry = registry();
        registry.names.remove(&tid);
        registry.by_tid.get(&tid).cloned()
    };
    if let Some(state) = state {
        end_state(&state);
    }
    fold_ended();
}

/// Closes `state`'s tree (a thread found gone, or reported ended).
pub fn end_state(state: &Arc<ThreadState>) {
    if state.end() {
        let mut registry = registry();
        registry.ended.push_back(state.clone());
        ENDED.store(registry.ended.len(), Relaxed);
    }
}

/// The state of the live thread `tid`, created and registered if needed (sampling mode builds
/// trees for threads from another thread, so this does not touch the thread-local slot). A
/// thread id whose last state has ended belongs to a new thread: it gets a state of its own.
pub fn state_for(tid: u32) -> Arc<ThreadState> {
    if let Some(state) = registry().by_tid.get(&tid).filter(|s| !s.ended.load(Acquire)) {
        return state.clone();
    }
    let new = Arc::new(ThreadState::new(tid)); // reads /proc: outside the lock
    let mut registry = registry();
    if let Some(state) = registry.by_tid.get(&tid).filter(|s| !s.ended.load(Acquire)) {
        return state.clone(); // registered meanwhile
    }
    registry.add(new.clone());
    new
}

/// Thread `tid`'s name (it may arrive before the thread's state exists).
pub fn set_name(tid: u32, name: String) {
    let mut registry = registry();
    match registry.by_tid.get(&tid).filter(|s| !s.ended.load(Acquire)) {
        Some(state) => *state.name.lock().unwrap_or_else(|e| e.into_inner()) = Some(name),
        None => {
            registry.names.insert(tid, name);
        }
    }
}

/// Names thread `tid` unless it has a name already (a name the runtime reported wins over one
/// read from the OS).
pub fn set_name_if_unnamed(tid: u32, name: String) {
    let mut registry = registry();
    match registry.by_tid.get(&tid).filter(|s| !s.ended.load(Acquire)) {
        Some(state) => {
            state.name.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert(name);
        }
        None => {
            registry.names.entry(tid).or_insert(name);
        }
    }
}

/// Folds the oldest ended threads beyond [`KEPT_ENDED`] whose trees can no longer change (the
/// OS thread is gone and no sampler slot is bound to the state) into the aggregate, and frees
/// them. Called when a thread ends and by the sampling drain; returns at once if another fold or
/// a snapshot is under way (the next call does the work).
pub fn fold_ended() {
    if ENDED.load(Relaxed) <= KEPT_ENDED {
        return;
    }
    let Ok(_folding) = FOLDING.try_lock() else { return };
    // The oldest candidates, checked outside the registry lock (each check reads /proc). A few
    // more than needed: a thread reported ended may still be on its way out.
    let (candidates, excess) = {
        let registry = registry();
        let excess = registry.ended.len().saturating_sub(KEPT_ENDED);
        (registry.ended.iter().take(excess + 8).cloned().collect::<Vec<_>>(), excess)
    };
    let done: Vec<Arc<ThreadState>> =
        candidates.into_iter().filter(|t| t.sampled.load(Acquire) == 0 && t.gone()).take(excess).collect();
    if done.is_empty() {
        return;
    }
    let aggregate = {
        let mut registry = registry();
        let is_done = |t: &Arc<ThreadState>| done.iter().any(|d| Arc::ptr_eq(d, t));
        registry.ended.retain(|t| !is_done(t));
        registry.threads.retain(|t| !is_done(t));
        for t in &done {
            if registry.by_tid.get(&t.os_tid).is_some_and(|s| Arc::ptr_eq(s, t)) {
                registry.by_tid.remove(&t.os_tid);
            }
        }
        ENDED.store(registry.ended.len(), Relaxed);
        registry.aggregate.get_or_insert_with(|| Arc::new(ThreadState::aggregate())).clone()
    };
    for t in &done {
        aggregate.absorb(t);
    }
}

/// `ThreadState`s alive wherever they are held — listed, ended and waiting to be folded, the
/// aggregate, a private one — so that one kept by mistake (an `Arc` nobody drops) shows too.
static STATES_ALIVE: AtomicUsize = AtomicUsize::new(0);

/// What the agent holds for threads: bounded by the live threads and [`KEPT_ENDED`] in a process
/// that has run any number of threads. Written to the log with the final snapshot (the process's
/// resident memory is no measure of it: see docs/SAMPLING.md, "Threads that come and go").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Held {
    /// Thread states alive (each with its call tree).
    pub states: usize,
    /// Threads listed one by one in the profile, and how many of them have ended.
    pub listed: usize,
    pub ended: usize,
    /// Threads folded into the `[N ended threads]` aggregate (they hold nothing of their own).
    pub folded: u64,
    /// Entries of the OS-thread-id map, and names that arrived before their thread's state (by OS
    /// thread id and by runtime thread id).
    pub thread_ids: usize,
    pub names_waiting: usize,
}

impl std::fmt::Display for Held {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Held { states, listed, ended, folded, thread_ids, names_waiting } = self;
        write!(
            f,
            "{states} thread states ({listed} listed, {ended} of them ended; {folded} threads folded), \
             {thread_ids} thread ids, {names_waiting} names waiting for their thread"
        )
    }
}

/// What the agent holds for threads now ([`Held`]).
pub fn held() -> Held {
    let registry = registry();
    Held {
        states: STATES_ALIVE.load(Relaxed),
        listed: registry.threads.len(),
        ended: registry.ended.len(),
        folded: registry.aggregate.as_ref().map_or(0, |a| a.merged_threads()),
        thread_ids: registry.by_tid.len(),
        names_waiting: registry.names.len() + registry.pending_names.len(),
    }
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

impl Drop for ThreadState {
    fn drop(&mut self) {
        STATES_ALIVE.fetch_sub(1, Relaxed);
    }
}

impl ThreadState {
    pub fn new(os_tid: u32) -> Self {
        STATES_ALIVE.fetch_add(1, Relaxed);
        ThreadState {
            os_tid,
            tree: CallTree::new(),
            first_tick: clock::ticks(),
            ended: AtomicBool::new(false),
            end_tick: AtomicU64::new(0),
            final_cpu: Mutex::new(None),
            name: Mutex::new(None),
            sampled: AtomicU32::new(0),
            last_sample: AtomicU32::new(0),
            walked: AtomicU32::new(0),
            events: Mutex::new(BTreeMap::new()),
            leaf_offsets: Mutex::new(BTreeMap::new()),
            start_time: if os_tid == 0 { 0 } else { start_time(os_tid).unwrap_or(0) },
            merged_threads: AtomicU64::new(0),
            merged_wall_ns: AtomicU64::new(0),
            trace: std::sync::OnceLock::new(),
        }
    }

    /// The thread's call-trace ring, made on first use; `None` without a call trace. Called on the
    /// thread's own hooks only (its ring has one writer).
    #[inline(always)]
    pub fn trace_ring(&self) -> Option<&super::trace::Ring> {
        let size = super::trace::size();
        if size == 0 {
            return None;
        }
        Some(self.trace.get_or_init(|| Box::new(super::trace::Ring::new(size))))
    }

    /// The ring, if the thread has one (snapshots).
    pub fn trace(&self) -> Option<&super::trace::Ring> {
        self.trace.get().map(|r| &**r)
    }

    /// The aggregate of folded threads: ended from the start, its CPU times the sum of theirs.
    fn aggregate() -> Self {
        let state = ThreadState::new(0);
        state.ended.store(true, Release);
        *state.final_cpu.lock().unwrap_or_else(|e| e.into_inner()) = Some(CpuTimes::default());
        state
    }

    /// Called when the runtime reports the thread gone; true the first time.
    pub fn end(&self) -> bool {
        if self.ended.swap(true, AcqRel) {
            return false;
        }
        self.end_tick.store(clock::ticks(), Relaxed);
        let cpu = cpu_times(self.os_tid).filter(|_| !self.gone());
        *self.final_cpu.lock().unwrap_or_else(|e| e.into_inner()) = cpu;
        true
    }

    /// True once the OS thread is gone (no `/proc` entry, a zombie, or its id now names a thread
    /// started at another time): nothing runs on it any more, no signal reaches it. When in
    /// doubt (`/proc` unreadable for another reason), false: the state is then kept.
    pub fn gone(&self) -> bool {
        if self.os_tid == 0 {
            return true;
        }
        let stat = match std::fs::read_to_string(format!("/proc/self/task/{}/stat", self.os_tid)) {
            Ok(stat) => stat,
            Err(e) => return e.kind() == std::io::ErrorKind::NotFound || e.raw_os_error() == Some(libc::ESRCH),
        };
        let Some(fields) = stat_fields_of(&stat) else { return false };
        let state = fields.first().and_then(|s| s.bytes().next());
        let start: Option<u64> = fields.get(19).and_then(|s| s.parse().ok());
        matches!(state, Some(b'Z' | b'X')) || (self.start_time != 0 && start.is_some_and(|s| s != self.start_time))
    }

    /// Threads this state stands for: 0 for a thread, N for the aggregate of N folded threads.
    pub fn merged_threads(&self) -> u64 {
        self.merged_threads.load(Relaxed)
    }

    /// Wall time from the thread's first event to its end (or `now`); the aggregate's: the sum of
    /// its threads'.
    pub fn wall_ns(&self, now: u64, ns_per_tick: f64) -> u64 {
        if self.merged_threads() > 0 {
            return self.merged_wall_ns.load(Relaxed);
        }
        let end = if self.ended.load(Relaxed) { self.end_tick.load(Relaxed) } else { now };
        clock::ticks_to_ns(end.saturating_sub(self.first_tick), ns_per_tick)
    }

    /// Adds an ended thread's tree, wall and CPU times to this aggregate (folding only).
    fn absorb(&self, thread: &ThreadState) {
        let map = self.tree.absorb(&thread.tree);
        let theirs = std::mem::take(&mut *thread.events.lock().unwrap_or_else(|e| e.into_inner()));
        for (node, counts) in theirs {
            if let Some(&mine) = map.get(node as usize) {
                self.add_events(mine, &counts);
            }
        }
        let theirs = std::mem::take(&mut *thread.leaf_offsets.lock().unwrap_or_else(|e| e.into_inner()));
        for ((node, offset), samples) in theirs {
            if let Some(&mine) = map.get(node as usize) {
                self.add_leaf_offset(mine, offset, samples);
            }
        }
        let wall = thread.wall_ns(clock::ticks(), clock::ns_per_tick());
        self.merged_wall_ns.fetch_add(wall, Relaxed);
        self.merged_threads.fetch_add(thread.merged_threads().max(1), Relaxed);
        let cpu = thread.final_cpu.lock().unwrap_or_else(|e| e.into_inner()).unwrap_or_default();
        let mut total = self.final_cpu.lock().unwrap_or_else(|e| e.into_inner());
        let total = total.get_or_insert_with(CpuTimes::default);
        total.user_ns += cpu.user_ns;
        total.kernel_ns += cpu.kernel_ns;
    }

    /// Counts `samples` of node `node` at IL offset `offset` (the drain's).
    pub fn add_leaf_offset(&self, node: u32, offset: u32, samples: u64) {
        *self.leaf_offsets.lock().unwrap_or_else(|e| e.into_inner()).entry((node, offset)).or_default() += samples;
    }

    /// The samples by IL offset of the nodes among the first `records` of a snapshot (node `n`
    /// is record `n - 1`), by node then offset.
    pub fn leaf_offsets(&self, records: usize) -> Vec<sonde_protocol::LeafOffset> {
        // See `ipc::snapshot::node_events`: an inverted range panics.
        if records == 0 {
            return Vec::new();
        }
        let offsets = self.leaf_offsets.lock().unwrap_or_else(|e| e.into_inner());
        offsets
            .range((1, 0)..=(records as u32, u32::MAX))
            .map(|(&(node, il_offset), &samples)| sonde_protocol::LeafOffset { node: node - 1, il_offset, samples })
            .collect()
    }

    /// Adds `counts` (not their node) to node `node`'s events.
    pub fn add_events(&self, node: u32, counts: &NodeEvents) {
        let mut events = self.events.lock().unwrap_or_else(|e| e.into_inner());
        events.entry(node).or_insert(NodeEvents { node, ..Default::default() }).add(counts);
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

/// [`gettid`], read once per thread (event callbacks run often on the same threads).
pub fn gettid_cached() -> u32 {
    thread_local!(static TID: std::cell::Cell<u32> = const { std::cell::Cell::new(0) });
    TID.with(|tid| {
        if tid.get() == 0 {
            tid.set(gettid());
        }
        tid.get()
    })
}

/// The fields of a `/proc/.../stat` line after the command name (state first: field 3).
fn stat_fields_of(stat: &str) -> Option<Vec<&str>> {
    let rest = stat.get(stat.rfind(')')? + 2..)?;
    Some(rest.split_whitespace().collect())
}

/// Thread `os_tid`'s start time (field 22 of its stat: clock ticks since boot).
fn start_time(os_tid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/self/task/{os_tid}/stat")).ok()?;
    stat_fields_of(&stat)?.get(19)?.parse().ok()
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
