//! One slot per sampled thread: its ring, and what the drain needs. Each sampler keeps its own
//! per-thread bookkeeping in an array of its own, under the same index. Slots are found by index
//! from the sampling signal's value (a [`token`]: the index and the slot's generation), or by
//! thread id (cached in a TLS word, with the generation) from an external sampler's handler: no
//! lock, no allocation.
//!
//! Slots are reused: [`MAX_THREADS`] bounds the threads sampled *at once*, not the threads a
//! process creates in its life. A slot goes
//! * FREE → CLAIMED ([`claim`]; its ring allocated the first time, kept afterwards) → LIVE
//!   ([`activate`]: bound to the thread's state, sampled);
//! * → ENDED when the runtime reports the thread ended ([`unregister`]) or the sampler finds it
//!   gone ([`ended`]): no signal is sent any more;
//! * → FINAL when the drain finds the OS thread gone ([`seal_gone`]): no handler can run on it any
//!   more and no signal can reach it, so its ring has no writer left; the drain then takes its
//!   last samples;
//! * → FREE after that drain ([`release_final`]): the thread's state is unbound (and may be folded
//!   with other ended threads: `threads::fold_ended`), the generation moves on, so a late signal
//!   carrying the old generation is refused by the handler.
//!
//! A thread that finds every slot taken waits for one ([`waiting`]): the drain hands it the next
//! slot freed, and the intervals it runs meanwhile count as `too_many_threads`.

use super::ring::Ring;
use crate::tree::threads::{self, ThreadState};
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU8, AtomicU32, AtomicU64, AtomicUsize, Ordering::*};
use std::sync::{Arc, Mutex};

/// Threads that can be sampled at once; more wait for a slot (see the module docs).
pub const MAX_THREADS: usize = 1024;
const RING_WORDS: usize = 1 << 14;
/// A token's low bits: the slot index; above them, the slot's generation.
const INDEX_BITS: u32 = 16;
const INDEX_MASK: usize = (1 << INDEX_BITS) - 1;
const GENERATION_MASK: u32 = 0xffff;

/// The outer compilations a slot keeps ([`Slot::outer_compilations`]).
pub(super) const OUTER_COMPILATIONS: usize = 8;

/// [`Slot::first_signals`] once the first full sample was asked for.
pub(super) const FIRST_DONE: u8 = u8::MAX;

const FREE: u8 = 0;
const CLAIMED: u8 = 1;
const LIVE: u8 = 2;
const ENDED: u8 = 3;
const FINAL: u8 = 4;

/// One sampled thread.
pub(super) struct Slot {
    pub tid: AtomicU32,
    pub ring: AtomicPtr<Ring>,
    /// Sampled while set; cleared when the thread is destroyed or gone.
    pub active: AtomicBool,
    /// Intervals the thread spent blocked since its last sample, charged to that sample's stack
    /// (the signal sampler adds, its handler or the drain takes).
    pub idle_periods: AtomicU64,
    /// Drain-thread bookkeeping: the call-tree node of the thread's last sample (+1; 0: none).
    pub last_leaf: AtomicU32,
    /// The async context the thread runs in now (`async_stacks`; 0: none): each sample carries
    /// it.
    pub async_context: AtomicU32,
    /// The methods of the compilations a nested one interrupted, by depth (`work`: written and
    /// read by the thread itself, and only when compilations nest).
    pub outer_compilations: [AtomicU64; OUTER_COMPILATIONS],
    /// Wall clock: signals the sampler sent the thread whatever its state, so that a thread
    /// blocked since before it was registered (an attach, `sonde dump`) has a stack to charge its
    /// time to (see the sampler); [`FIRST_DONE`] once one was sent with the stack's limits known.
    pub first_signals: AtomicU8,
    /// Moves on each time the slot is freed (see [`token`]).
    pub generation: AtomicU32,
    /// FREE, CLAIMED, LIVE, ENDED or FINAL (see the module docs).
    phase: AtomicU8,
    /// The thread's state, whose tree the drain fills: an `Arc` held by the slot from
    /// [`activate`] to [`release_final`] (null meanwhile).
    thread: AtomicPtr<ThreadState>,
}

#[allow(clippy::declare_interior_mutable_const)]
const EMPTY_SLOT: Slot = Slot {
    tid: AtomicU32::new(0),
    ring: AtomicPtr::new(std::ptr::null_mut()),
    active: AtomicBool::new(false),
    idle_periods: AtomicU64::new(0),
    last_leaf: AtomicU32::new(0),
    async_context: AtomicU32::new(0),
    outer_compilations: [const { AtomicU64::new(0) }; OUTER_COMPILATIONS],
    first_signals: AtomicU8::new(0),
    generation: AtomicU32::new(0),
    phase: AtomicU8::new(FREE),
    thread: AtomicPtr::new(std::ptr::null_mut()),
};
/// Registrations and unregistrations, one at a time (a thread may be reported from two threads
/// at once: CoreCLR's `ThreadCreated` and `ThreadAssignedToOSThread`).
pub(super) static REGISTERING: Mutex<()> = Mutex::new(());

/// The slot table, one per process. Invariants: `slots[..used]` are the slots ever handed out;
/// every free one below `used` is in `free_list` (which also serialises the updates of `used` and
/// of the phases: taken by [`claim`], [`release_final`] and [`reset`] only, never in a handler); a
/// handler reads only `slots` and `used`, without a lock; `waiting` holds the threads that found
/// every slot taken, `waiting_count` how many.
struct Table {
    slots: [Slot; MAX_THREADS],
    /// Slots handed out at least once: `SLOTS[..USED]`.
    used: AtomicUsize,
    /// Free slots below `USED`. Taken by [`claim`] and [`release_final`] only (never in a handler),
    /// which also serialises their updates of `USED` and of the phases.
    free_list: Mutex<Vec<usize>>,
    /// Threads waiting for a slot (every slot was taken when they registered), and how many.
    waiting: Mutex<Vec<u32>>,
    waiting_count: AtomicUsize,
    /// Samples dropped for a full ring by threads whose slots were freed since.
    retired_dropped: AtomicU64,
    /// When the drain last looked for dead threads among the live slots (ms since the first look).
    last_sweep_ms: AtomicU64,
}

static TABLE: Table = Table {
    slots: [EMPTY_SLOT; MAX_THREADS],
    used: AtomicUsize::new(0),
    free_list: Mutex::new(Vec::new()),
    waiting: Mutex::new(Vec::new()),
    waiting_count: AtomicUsize::new(0),
    retired_dropped: AtomicU64::new(0),
    last_sweep_ms: AtomicU64::new(0),
};

/// The slots handed out so far.
pub(super) fn used() -> &'static [Slot] {
    &TABLE.slots[..TABLE.used.load(Acquire).min(MAX_THREADS)]
}

/// What the sampling signal carries for slot `index` in its generation `generation`.
pub(super) fn token(index: usize, generation: u32) -> usize {
    ((generation & GENERATION_MASK) as usize) << INDEX_BITS | (index & INDEX_MASK)
}

/// The slot index of a [`token`] (or of a plain index).
pub(super) fn index(token: usize) -> usize {
    token & INDEX_MASK
}

/// The slot a [`token`] names, if it is still in the generation the token carries: a signal
/// sent to a thread whose slot was freed since finds nothing. Async-signal-safe.
pub(super) fn get(token: usize) -> Option<&'static Slot> {
    let slot = used().get(index(token))?;
    let generation = (token >> INDEX_BITS) as u32 & GENERATION_MASK;
    (slot.generation.load(Acquire) & GENERATION_MASK == generation).then_some(slot)
}

impl Slot {
    /// The slot's ring, once published (a slot's ring is set before its tid is published and
    /// never freed: the next thread in the slot uses it).
    pub fn ring(&self) -> Option<&'static Ring> {
        // SAFETY: the pointer is null or a leaked `Box<Ring>`, never freed.
        unsafe { self.ring.load(Acquire).as_ref() }
    }

    /// The state of the thread in the slot, once activated. For the drain only: the drain
    /// releases the `Arc` ([`release_final`]), so the reference lasts while it runs.
    pub fn thread(&self) -> Option<&ThreadState> {
        // SAFETY: null or an `Arc<ThreadState>` the slot holds; only the drain, which calls this,
        // gives it back (`release_final`), after its pass over the slots.
        unsafe { self.thread.load(Acquire).as_ref() }
    }

    /// The thread is gone and this drain takes its last samples (see the module docs).
    pub fn is_final(&self) -> bool {
        self.phase.load(Acquire) == FINAL
    }

    fn is_current(&self) -> bool {
        matches!(self.phase.load(Acquire), CLAIMED | LIVE)
    }
}

/// Thread `tid`'s slot index, and whether it is new (its ring allocated, its state not yet bound:
/// see [`activate`]); `None` when every slot is taken: the thread then waits for one ([`waiting`]).
/// Callers serialise registrations (`sampling::register`).
pub(super) fn claim(tid: u32) -> Option<(usize, bool)> {
    let mut free = TABLE.free_list.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(index) = used().iter().position(|s| s.is_current() && s.tid.load(Relaxed) == tid) {
        return Some((index, false));
    }
    let index = match free.pop() {
        Some(index) => index,
        None if TABLE.used.load(Relaxed) < MAX_THREADS => TABLE.used.load(Relaxed),
        None => {
            drop(free);
            wait(tid);
            return None;
        }
    };
    let slot = &TABLE.slots[index];
    if slot.ring.load(Relaxed).is_null() {
        slot.ring.store(Box::into_raw(Box::new(Ring::new(RING_WORDS))), Release);
    }
    slot.idle_periods.store(0, Relaxed);
    slot.last_leaf.store(0, Relaxed);
    slot.first_signals.store(0, Relaxed);
    for kept in &slot.outer_compilations {
        kept.store(0, Relaxed);
    }
    slot.tid.store(tid, Release);
    slot.phase.store(CLAIMED, Release);
    if index == TABLE.used.load(Relaxed) {
        TABLE.used.store(index + 1, Release);
    }
    drop(free);
    unwait(tid);
    Some((index, true))
}

/// Binds a new slot to its thread's state (after the samplers set their bookkeeping up) and
/// starts sampling it.
pub(super) fn activate(index: usize, tid: u32, thread: Arc<ThreadState>) {
    let Some(slot) = TABLE.slots.get(index) else { return };
    thread.sampled.fetch_add(1, AcqRel);
    let previous = slot.thread.swap(Arc::into_raw(thread).cast_mut(), AcqRel);
    unbind(previous);
    slot.async_context.store(0, Relaxed);
    slot.tid.store(tid, Release);
    slot.phase.store(LIVE, Release);
    slot.active.store(true, Release);
}

/// Gives back a state a slot held (a pointer [`activate`] made).
fn unbind(thread: *mut ThreadState) {
    if thread.is_null() {
        return;
    }
    // SAFETY: made by `Arc::into_raw` in `activate`, and swapped out of its slot by the caller:
    // given back once.
    let thread = unsafe { Arc::from_raw(thread) };
    thread.sampled.fetch_sub(1, AcqRel);
    // The OS thread is gone: its tree is closed (if the runtime did not say so already).
    threads::end_state(&thread);
}

/// Stops sampling thread `tid` (its samples so far stay to be drained; its slot is freed once
/// the thread is gone).
pub fn unregister(tid: u32) {
    for slot in used() {
        if slot.tid.load(Relaxed) == tid && slot.phase.load(Acquire) == LIVE {
            end(slot);
        }
    }
    unwait(tid);
}

/// The sampler found the thread of slot `index` (in generation `generation`) gone.
pub(super) fn ended(index: usize, generation: u32) {
    if let Some(slot) = used().get(index).filter(|s| s.generation.load(Acquire) == generation) {
        end(slot);
    }
}

fn end(slot: &Slot) {
    slot.active.store(false, Release);
    let _ = slot.phase.compare_exchange(LIVE, ENDED, AcqRel, Relaxed);
}

/// For the drain, before it takes the samples: ended slots whose OS thread is gone become FINAL
/// (this pass takes their last samples, then [`release_final`] frees them). When slots run
/// short, live slots whose thread died unreported are found too (at most once a second).
pub(super) fn seal_gone() {
    let sweep = sweep_due();
    for slot in used() {
        let phase = slot.phase.load(Acquire);
        if phase != ENDED && !(sweep && phase == LIVE) {
            continue;
        }
        if slot.thread().is_none_or(ThreadState::gone) {
            slot.active.store(false, Release);
            slot.phase.store(FINAL, Release);
        }
    }
}

/// True when live slots are to be checked for dead threads: a thread waits for a slot, or three
/// quarters are taken with none free; not more than once a second.
fn sweep_due() -> bool {
    let short = TABLE.waiting_count.load(Relaxed) > 0
        || (TABLE.used.load(Relaxed) >= MAX_THREADS * 3 / 4
            && TABLE.free_list.lock().unwrap_or_else(|e| e.into_inner()).is_empty());
    if !short {
        return false;
    }
    static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    let now = START.get_or_init(std::time::Instant::now).elapsed().as_millis() as u64 + 1000;
    let last = TABLE.last_sweep_ms.load(Relaxed);
    now >= last + 1000 && TABLE.last_sweep_ms.compare_exchange(last, now, Relaxed, Relaxed).is_ok()
}

/// For the drain, after it took the samples: frees the FINAL slots (their last samples are in
/// their trees). Returns how many.
pub(super) fn release_final() -> usize {
    let mut released = 0;
    for (index, slot) in used().iter().enumerate() {
        if slot.phase.load(Acquire) != FINAL {
            continue;
        }
        if let Some(ring) = slot.ring() {
            TABLE.retired_dropped.fetch_add(ring.dropped.swap(0, Relaxed), Relaxed);
        }
        slot.active.store(false, Release);
        slot.idle_periods.store(0, Relaxed);
        slot.last_leaf.store(0, Relaxed);
        unbind(slot.thread.swap(std::ptr::null_mut(), AcqRel));
        let mut free = TABLE.free_list.lock().unwrap_or_else(|e| e.into_inner());
        slot.tid.store(0, Release);
        slot.generation.fetch_add(1, AcqRel);
        slot.phase.store(FREE, Release);
        free.push(index);
        released += 1;
    }
    released
}

/// A new session (an agent attached again): every slot free, its ring empty (kept for the next
/// thread), its state given back, its generation moved on (a late signal of the last session is
/// refused); no thread waits. Only between sessions: no sampler, handler or drain runs.
pub(super) fn reset() {
    let mut free = TABLE.free_list.lock().unwrap_or_else(|e| e.into_inner());
    free.clear();
    for (index, slot) in used().iter().enumerate() {
        if let Some(ring) = slot.ring() {
            ring.drain(|_, _, _, _, _| {});
            ring.dropped.store(0, Relaxed);
        }
        slot.active.store(false, Release);
        slot.idle_periods.store(0, Relaxed);
        slot.last_leaf.store(0, Relaxed);
        slot.async_context.store(0, Relaxed);
        let thread = slot.thread.swap(std::ptr::null_mut(), AcqRel);
        if !thread.is_null() {
            // SAFETY: as in `unbind`: made by `Arc::into_raw` in `activate`, swapped out here.
            let thread = unsafe { Arc::from_raw(thread) };
            thread.sampled.fetch_sub(1, AcqRel);
        }
        slot.tid.store(0, Release);
        slot.generation.fetch_add(1, AcqRel);
        slot.phase.store(FREE, Release);
        free.push(index);
    }
    // Handed out lowest first, as in a fresh process.
    free.reverse();
    TABLE.waiting.lock().unwrap_or_else(|e| e.into_inner()).clear();
    TABLE.waiting_count.store(0, Relaxed);
    TABLE.retired_dropped.store(0, Relaxed);
}

/// Thread `tid` found every slot taken.
fn wait(tid: u32) {
    let mut waiting = TABLE.waiting.lock().unwrap_or_else(|e| e.into_inner());
    if !waiting.contains(&tid) {
        waiting.push(tid);
        TABLE.waiting_count.store(waiting.len(), Relaxed);
    }
}

fn unwait(tid: u32) {
    if TABLE.waiting_count.load(Relaxed) == 0 {
        return;
    }
    let mut waiting = TABLE.waiting.lock().unwrap_or_else(|e| e.into_inner());
    waiting.retain(|&t| t != tid);
    TABLE.waiting_count.store(waiting.len(), Relaxed);
}

/// The threads waiting for a slot (not for signal context).
pub(super) fn waiting() -> Vec<u32> {
    if TABLE.waiting_count.load(Relaxed) == 0 {
        return Vec::new();
    }
    TABLE.waiting.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// Samples dropped because a ring was full, over every thread.
pub(super) fn ring_full() -> u64 {
    let live: u64 = used().iter().filter_map(Slot::ring).map(|r| r.dropped.load(Relaxed)).sum();
    live + TABLE.retired_dropped.load(Relaxed)
}

/// [`cache`]'s mark for a thread that registered and found every slot taken.
const WAITING_MARK: usize = usize::MAX;

/// The calling thread's slot: cached in a thread-local (with its generation) after the first
/// look-up. Async-signal-safe.
pub(super) fn current_slot() -> Option<(usize, &'static Slot)> {
    let cached = cache::get();
    if cached != 0 && cached != WAITING_MARK {
        let index = (cached & 0xffff_ffff) - 1;
        if let Some(slot) = TABLE.slots.get(index)
            && slot.generation.load(Acquire) == (cached >> 32) as u32
        {
            return Some((index, slot));
        }
    }
    let tid = threads::gettid();
    let Some(index) = used().iter().position(|s| s.active.load(Acquire) && s.tid.load(Acquire) == tid) else {
        if cached != WAITING_MARK {
            cache::set(0);
        }
        return None;
    };
    let slot = TABLE.slots.get(index)?;
    cache::set(((slot.generation.load(Acquire) as usize) << 32) | (index + 1));
    Some((index, slot))
}

/// Keeps `id`, the method of the compilation open at `depth` (1-based) on the calling thread,
/// if it is sampled and `depth` is within [`OUTER_COMPILATIONS`] (`work`).
pub(super) fn keep_outer_compilation(depth: u64, id: u64) {
    if let Some((_, slot)) = current_slot()
        && let Some(kept) = slot.outer_compilations.get((depth as usize).wrapping_sub(1))
    {
        kept.store(id, Relaxed);
    }
}

/// The method of the compilation open at `depth` (1-based) on the calling thread, kept when a
/// deeper one started (0: not kept).
pub(super) fn outer_compilation(depth: u64) -> u64 {
    current_slot()
        .and_then(|(_, slot)| slot.outer_compilations.get((depth as usize).wrapping_sub(1)))
        .map_or(0, |kept| kept.load(Relaxed))
}

/// Sets the calling thread's current async context (`async_stacks`), if it is sampled.
pub(super) fn set_current_async(ctx: u32) {
    if let Some((_, slot)) = current_slot() {
        slot.async_context.store(ctx, Relaxed);
    }
}

/// True when the calling thread registered and found every slot taken (and has not found its
/// slot since). Async-signal-safe.
pub(super) fn current_waiting() -> bool {
    cache::get() == WAITING_MARK
}

/// Marks the calling thread as waiting for a slot (see [`current_waiting`]).
pub(super) fn mark_current_waiting() {
    cache::set(WAITING_MARK);
}

/// The calling thread's slot, for [`current_slot`]: `generation << 32 | (index + 1)` (0: not
/// looked up yet; [`WAITING_MARK`]): an initial-exec TLS word (`tree::tls`), like
/// `threads::slot`: safe in a signal handler, where a `thread_local!` is not.
#[cfg(target_arch = "x86_64")]
mod cache {
    crate::tree::tls::tls_word!("sonde_sample_slot");
}

/// Elsewhere: no cache, the thread id is looked up every time.
#[cfg(not(target_arch = "x86_64"))]
mod cache {
    pub fn get() -> usize {
        0
    }

    pub fn set(_value: usize) {}
}

/// Held by the tests that take slots (they share the process's table).
#[cfg(test)]
pub(super) static TESTS: Mutex<()> = Mutex::new(());

/// For tests: frees the slots of the threads that ended (as the drain does).
#[cfg(test)]
pub(super) fn release_ended() {
    seal_gone();
    release_final();
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Thread ids no thread has (above the kernel's limit of 4,194,304): gone from the start.
    const FAKE: u32 = 0x4000_0000;

    /// What the drain does with ended threads: seal the gone ones, (drain,) free them.
    fn drain_pass() {
        seal_gone();
        release_final();
    }

    #[test]
    fn slots_of_gone_threads_are_reused_and_late_signals_refused() {
        let _serial = TESTS.lock().unwrap_or_else(|e| e.into_inner());
        release_ended();
        // More threads one after the other than there are slots: each one's slot serves the next.
        let mut stale = Vec::new();
        for i in 0..(MAX_THREADS as u32 + 100) {
            let tid = FAKE + i;
            let (index, new) = claim(tid).expect("a free slot");
            assert!(new);
            assert_eq!(claim(tid), Some((index, false)), "registered twice: one slot");
            let thread = threads::state_for(tid);
            activate(index, tid, thread.clone());
            assert_eq!(thread.sampled.load(Relaxed), 1);
            let token = token(index, TABLE.slots[index].generation.load(Relaxed));
            assert!(get(token).is_some_and(|s| s.tid.load(Relaxed) == tid));
            stale.push(token);
            unregister(tid);
            drain_pass();
            assert!(get(token).is_none(), "a late signal for an ended thread finds no slot");
            assert_eq!(thread.sampled.load(Relaxed), 0, "the state is unbound");
            assert!(thread.ended.load(Relaxed), "the state is closed");
        }
        assert_eq!(used().len(), 1, "one slot served every thread");
        assert!(stale.iter().all(|&t| get(t).is_none()));
        // Ended threads beyond the ones kept are folded: the registry does not grow with them.
        threads::fold_ended();
        let listed = threads::registry().threads.iter().filter(|t| t.os_tid >= FAKE).count();
        assert!(listed <= threads::KEPT_ENDED, "{listed} ended threads still listed");

        // Every slot taken: the next thread waits, and gets the first slot freed.
        let base = FAKE + 10_000;
        for i in 0..MAX_THREADS as u32 {
            let (index, _) = claim(base + i).expect("a slot");
            activate(index, base + i, threads::state_for(base + i));
        }
        let late = base + MAX_THREADS as u32;
        assert_eq!(claim(late), None);
        assert_eq!(waiting(), vec![late]);
        unregister(base + 7);
        drain_pass();
        let (index, new) = claim(late).expect("the freed slot");
        assert!(new && waiting().is_empty());
        activate(index, late, threads::state_for(late));
        for i in 0..=MAX_THREADS as u32 {
            unregister(base + i);
        }
        drain_pass();
        assert_eq!(TABLE.free_list.lock().unwrap().len(), MAX_THREADS);
    }
}
