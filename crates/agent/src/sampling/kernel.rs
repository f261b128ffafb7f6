//! The kernel's sampler (CoreCLR, `--clock cpu`, the default where the kernel allows it): each
//! sampled thread gets a task-clock `perf_event` whose every overflow — each interval of the
//! thread's CPU time, in user mode — makes the kernel write a sample into the thread's own ring
//! ([`perf_event::Ring`]): the thread's CPU time so far, the frame-pointer call chain the kernel
//! walked, three registers and the top 512 bytes of the stack. Nothing runs in the program: no
//! signal, no handler, no re-arming `ioctl`, no `EINTR`; the drain reads the rings
//! ([`drain_slot`]). `docs/SAMPLING.md` ("The kernel's sampler") has the measurements.
//!
//! What the signal handler did on the thread, the drain does from the record:
//! - **Weight**: the sample stands for the CPU time since the thread's previous one (the count),
//!   in whole intervals, the remainder carried: overflows the kernel skipped while the thread
//!   was in a system call are not lost.
//! - **A leaf in its prologue or epilogue, or frameless** (the kernel's chain then skips the
//!   caller): the drain walks the copied top of the stack from the registers as the handler
//!   would (`stack_walk::walk_copy`), and joins the kernel's chain where the two meet.
//! - **Runtime work** (`work`: compiling, collecting): the handler read the thread's work word;
//!   here the thread logs each change of its word with the ring's head at that moment
//!   ([`work_changed`]), and each sample takes the word in force at its position in the ring.
//!   Only changes between two samples are logged (one entry per sample at most).
//!
//! Not here: the wall clock (the sampler thread signals threads), async stacks (`--async`: each
//! sample needs the thread's async context, which only a handler on the thread can read), Mono
//! (its own sampler). There the signal sampler runs (`signal`).

use super::common::interval_ns;
use super::perf_event::{self, Attr, Event, Ring, Sample};
use super::ring::FLAG_TRUNCATED;
use super::slots;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicPtr, AtomicU32, AtomicU64, Ordering::*};

/// Bytes of the stack each sample copies (the leaf's return address is within them unless
/// the leaf is in a prologue that just reserved a large frame).
const STACK_COPY: u32 = 512;
/// Ring sizes tried, in pages, after [`first_ring_pages`]: the kernel lets a user lock
/// `perf_event_mlock_kb` (516 KB) per CPU for rings, then up to `RLIMIT_MEMLOCK`; a thread that
/// finds no room gets a smaller ring (and the drain comes sooner: [`drain_period`]).
const RING_PAGES: [usize; 5] = [32, 16, 8, 4, 2];

/// The ring first tried: 128 KB up to 2 kHz (120 ms of samples at 1 kHz), more above, so that
/// a ring holds ~25 ms of samples whatever the rate (at most 512 KB, at 8 kHz and above).
fn first_ring_pages() -> usize {
    let rate = 1_000_000_000 / interval_ns().max(1);
    (RING_PAGES[0] * rate.div_ceil(2000) as usize).next_power_of_two().clamp(RING_PAGES[0], 128)
}
/// Work-word changes kept per thread between two drains (one per sample at most).
const LOG: usize = 128;

/// Per slot: the thread's ring, and its log of work-word changes.
struct PerThread {
    /// The event's ring (null: none): a leaked `Box<Ring>`. The mapping is all that keeps the
    /// event: its descriptor is closed as soon as the ring is mapped (no descriptor of the
    /// program's table is taken, none can be closed or reused under us), and unmapping the
    /// ring ends the event.
    ring: AtomicPtr<Ring>,
    /// The slot generation the event was opened in.
    generation: AtomicU32,
    /// Drain bookkeeping: the thread's CPU time at its last sample, and what was not counted in
    /// whole intervals yet (negative: counted ahead).
    last_count: AtomicU64,
    carry_ns: AtomicI64,
    log: WorkLog,
}

/// The changes of a thread's work word, each with the ring's head when it changed: written by the
/// thread ([`work_changed`]), read by the drain. `written`/`read` count entries; an entry is
/// complete once `written` covers it.
struct WorkLog {
    heads: [AtomicU64; LOG],
    words: [AtomicU64; LOG],
    written: AtomicU64,
    read: AtomicU64,
    /// Drain side: the word in force before the oldest unread entry.
    word: AtomicU64,
    /// Changes not logged for a full log (their samples keep the word before).
    dropped: AtomicU64,
}

#[allow(clippy::declare_interior_mutable_const)]
const EMPTY: PerThread = PerThread {
    ring: AtomicPtr::new(std::ptr::null_mut()),
    generation: AtomicU32::new(0),
    last_count: AtomicU64::new(0),
    carry_ns: AtomicI64::new(0),
    log: WorkLog {
        heads: [const { AtomicU64::new(0) }; LOG],
        words: [const { AtomicU64::new(0) }; LOG],
        written: AtomicU64::new(0),
        read: AtomicU64::new(0),
        word: AtomicU64::new(0),
        dropped: AtomicU64::new(0),
    },
};
static THREADS: [PerThread; slots::MAX_THREADS] = [EMPTY; slots::MAX_THREADS];

/// The kernel's sampler is the session's (set by [`start`], cleared by [`stop`]).
static RUNNING: AtomicBool = AtomicBool::new(false);
/// Threads that got no event or no ring (the kernel refused: out of descriptors or of lockable
/// memory): not sampled.
static REFUSED: AtomicU64 = AtomicU64::new(0);
/// The smallest ring handed out, in pages (the drain's period follows it).
static SMALLEST_RING: AtomicU32 = AtomicU32::new(RING_PAGES[0] as u32);

/// True while the kernel's sampler samples. Async-signal-safe.
pub fn running() -> bool {
    RUNNING.load(Relaxed)
}

fn attr(interval_ns: u64) -> Attr {
    let mut attr = Attr::task_clock(interval_ns);
    attr.sample_type = perf_event::SAMPLE_READ
        | perf_event::SAMPLE_CALLCHAIN
        | perf_event::SAMPLE_REGS_USER
        | perf_event::SAMPLE_STACK_USER;
    attr.sample_regs_user = perf_event::REGS_MASK;
    attr.sample_stack_user = STACK_COPY;
    attr.sample_max_stack = max_stack();
    attr
}

/// The deepest call chain asked for: the ring's own bound, or the kernel's if lower.
fn max_stack() -> u16 {
    static MAX: std::sync::OnceLock<u16> = std::sync::OnceLock::new();
    *MAX.get_or_init(|| perf_event::max_stack().min(super::ring::MAX_FRAMES as u16))
}

/// Whether the kernel writes samples for this process: an event with a ring, opened on the
/// calling thread and closed at once. False under `perf_event_paranoid` 3 (Debian's default
/// for unprivileged users), a seccomp policy without `perf_event_open` (Docker's default
/// before 20.10), or no lockable memory left.
pub fn available() -> bool {
    let Some(event) = Event::open(&attr(1_000_000), crate::tree::threads::gettid()) else { return false };
    Ring::map(event.fd(), 1).is_some()
}

/// The kernel's sampler samples from now on (threads are added with [`registered`]).
pub(super) fn start() {
    REFUSED.store(0, Relaxed);
    SMALLEST_RING.store(first_ring_pages() as u32, Relaxed);
    RUNNING.store(true, Release);
}

/// Thread `tid` has slot `index`, new: its event starts (the previous thread's, gone, is
/// closed first). Registrations hold `slots::REGISTERING`.
pub(super) fn registered(index: usize, tid: u32) {
    let Some(state) = THREADS.get(index) else { return };
    close(state);
    let Some(slot) = slots::used().get(index) else { return };
    let log = &state.log;
    log.written.store(0, Relaxed);
    log.read.store(0, Relaxed);
    log.word.store(0, Relaxed);
    state.last_count.store(0, Relaxed);
    state.carry_ns.store(0, Relaxed);
    let Some(event) = Event::open(&attr(interval_ns()), tid) else {
        refused(tid, "no event");
        return;
    };
    let first = first_ring_pages();
    let sizes = std::iter::once(first).chain(RING_PAGES.into_iter().filter(|&p| p < first));
    let Some((ring, pages)) = sizes.into_iter().find_map(|pages| Some((Ring::map(event.fd(), pages)?, pages))) else {
        refused(tid, "no memory for a ring");
        return;
    };
    SMALLEST_RING.fetch_min(pages as u32, Relaxed);
    state.generation.store(slot.generation.load(Acquire), Release);
    state.ring.store(Box::into_raw(Box::new(ring)), Release);
    drop(event); // the mapping keeps the event
}

fn refused(tid: u32, why: &str) {
    if REFUSED.fetch_add(1, Relaxed) == 0 {
        crate::base::log::log!("kernel sampler: thread {tid} not sampled ({why}); later ones are counted");
    }
}

/// Threads the kernel refused an event or a ring (not sampled).
pub fn refused_threads() -> u64 {
    REFUSED.load(Relaxed)
}

/// Unmaps a slot's ring, which ends its event. Only once its thread is gone, or no thread can
/// read the ring's head any more (see [`stop`]).
fn close(state: &PerThread) {
    let ring = state.ring.swap(std::ptr::null_mut(), AcqRel);
    if !ring.is_null() {
        // SAFETY: a `Box<Ring>` leaked by `registered`, swapped out: freed once.
        drop(unsafe { Box::from_raw(ring) });
    }
}

/// Closes the events of slots freed since (their threads are gone). Drain thread, after it
/// released slots.
pub(super) fn close_freed() {
    for (index, slot) in slots::used().iter().enumerate() {
        let state = &THREADS[index];
        if !state.ring.load(Acquire).is_null() && state.generation.load(Acquire) != slot.generation.load(Acquire) {
            let _registering = slots::REGISTERING.lock().unwrap_or_else(|e| e.into_inner());
            if state.generation.load(Acquire) != slot.generation.load(Acquire) {
                close(state);
            }
        }
    }
}

/// Stops for good (a detach): once no thread can be reading a ring's head any more
/// ([`work_changed`] takes nanoseconds), every ring is unmapped, which ends its event. The drain
/// took the samples before (`sampling::stop`).
pub(super) fn stop() {
    RUNNING.store(false, Release);
    std::thread::sleep(std::time::Duration::from_millis(20));
    for state in &THREADS[..slots::used().len()] {
        close(state);
    }
}

/// The calling thread's work word changed to `word` (`work`): logged with its ring's head, so
/// that the samples written from now on take it. Runs on the program's threads at every JIT
/// compilation's start and end: a cached TLS look-up, two loads and two stores.
#[inline]
pub(super) fn work_changed(word: u64) {
    if !running() {
        return;
    }
    let Some((index, _)) = slots::current_slot() else { return };
    let state = &THREADS[index];
    // SAFETY: null or the thread's own live ring: a ring is closed only once its thread is gone,
    // or after `stop` waited for readers like this one.
    let Some(ring) = (unsafe { state.ring.load(Acquire).as_ref() }) else { return };
    let head = ring.head();
    let log = &state.log;
    let written = log.written.load(Relaxed);
    if written > log.read.load(Acquire) {
        // No sample since the last change: it is replaced (the drain reads an entry only once
        // samples were written past its head, so not this one).
        let last = (written - 1) as usize % LOG;
        if log.heads[last].load(Relaxed) == head {
            log.words[last].store(word, Release);
            return;
        }
    }
    if written - log.read.load(Acquire) >= LOG as u64 {
        log.dropped.fetch_add(1, Relaxed);
        return;
    }
    let at = written as usize % LOG;
    log.heads[at].store(head, Relaxed);
    log.words[at].store(word, Relaxed);
    log.written.store(written + 1, Release);
}

/// Takes slot `index`'s samples (drain thread): each as the signal handler would have written
/// it — `frames` (the leaf's address, then return addresses), the intervals it stands for, 0
/// intervals before (the CPU clock), flags, the work word — to `sample`. Samples the ring lost
/// (it was full) are counted in `lost`.
pub(super) fn drain_slot(
    index: usize,
    flush: bool,
    scratch: &mut Scratch,
    mut sample: impl FnMut(&[u64], u64, u64, u64, u64),
) -> u64 {
    let Some(state) = THREADS.get(index) else { return 0 };
    // SAFETY: null or a live ring; only the drain (which calls this, under its lock) and `stop`
    // (after the last drain) close rings.
    let Some(ring) = (unsafe { state.ring.load(Acquire).as_ref() }) else { return 0 };
    let interval = interval_ns().min(i64::MAX as u64) as i64;
    let log = &state.log;
    let written = log.written.load(Acquire);
    let mut read = log.read.load(Relaxed);
    let mut word = log.word.load(Relaxed);
    let mut lost = 0;
    let Scratch { wrap, frames, repairs, pending } = scratch;
    for (patchpoint, next, right) in LEARNT.lock().unwrap_or_else(|e| e.into_inner()).drain(..) {
        repairs.splices.insert((patchpoint, next), right);
    }
    let held = pending.entry(index).or_default();
    ring.read(wrap, |position, kind, body| {
        if kind == perf_event::RECORD_LOST {
            lost += body.get(8..16).map_or(0, |b| u64::from_ne_bytes(b.try_into().unwrap_or_default()));
            return;
        }
        if kind != perf_event::RECORD_SAMPLE {
            return;
        }
        let Some(record) = Sample::parse(body) else { return };
        // The work word in force when the kernel wrote this record.
        while read < written && log.heads[read as usize % LOG].load(Relaxed) <= position {
            word = log.words[read as usize % LOG].load(Acquire);
            read += 1;
        }
        let ran = record.count.saturating_sub(state.last_count.swap(record.count, Relaxed));
        if super::common::PAUSED.load(Relaxed) {
            // Collection paused (`sampling::set_paused`): the kernel still writes (the event has
            // no descriptor left to disable it with); the sample is dropped, its time with it.
            state.carry_ns.store(0, Relaxed);
            return;
        }
        let pending = state.carry_ns.load(Relaxed).saturating_add(ran.min(i64::MAX as u64) as i64);
        let periods = ((pending + interval / 2) / interval).max(1);
        state.carry_ns.store(pending - periods * interval, Relaxed);
        frames.clear();
        frames.extend(record.frames());
        let truncated = frames.len() >= usize::from(max_stack());
        if let Some([fp, sp, ip]) = record.regs
            && frames.first() == Some(&ip)
        {
            repair(ip, sp, fp, record.stack, frames, repairs);
        }
        let waiting = !apply_splices(frames, &repairs.splices);
        if frames.is_empty() {
            return;
        }
        let flags = if truncated { FLAG_TRUNCATED } else { 0 };
        if waiting && held.len() < MAX_PENDING {
            held.push(Pending { frames: frames.clone(), periods: periods as u64, flags, word, age: 0 });
        } else {
            sample(frames, periods as u64, 0, flags, word);
        }
    });
    log.read.store(read, Release);
    log.word.store(word, Relaxed);
    // Samples waiting for a splice: what the samples just read taught may complete them; after
    // two more passes (or the thread's last) they go as they are.
    held.retain_mut(|waiting| {
        let done = apply_splices(&mut waiting.frames, &repairs.splices);
        if done || flush || waiting.age >= 2 {
            sample(&waiting.frames, waiting.periods, 0, waiting.flags, waiting.word);
            return false;
        }
        waiting.age += 1;
        true
    });
    lost
}

/// Splices learnt on the program's threads ([`learn_from_this_thread`]), for the drain to take
/// (`(patchpoint return address, the chain's next frame, the right frame)`).
static LEARNT: std::sync::Mutex<Vec<(u64, u64, u64)>> = std::sync::Mutex::new(Vec::new());

/// The calling thread is compiling an on-stack-replacement version at the patchpoint it reached
/// (the JIT's callback, after the version's shape was published): its own stack, walked with
/// the shapes, has the patchpoint's return address and, above it, the original frame's return
/// into the method's caller — the splice the kernel's chain needs for this patchpoint, known
/// before the first sample through it. Once per OSR compilation.
pub fn learn_from_this_thread() {
    if !running() {
        return;
    }
    let mut frames = Vec::new();
    super::stack_walk::walk_this_thread(&mut frames);
    // The walk's values are return addresses moved inside their call (`- 1`).
    let Some(at) = frames.iter().position(|&f| is_patchpoint(0, f)) else { return };
    if let (Some(&right), Some(&next)) = (frames.get(at + 1), frames.get(at + 2)) {
        LEARNT.lock().unwrap_or_else(|e| e.into_inner()).push((frames[at] + 1, next + 1, right + 1));
    }
}

/// Samples held per thread waiting for a splice, at most.
const MAX_PENDING: usize = 4096;

/// A sample through an on-stack-replacement frame whose splice is not known yet.
struct Pending {
    frames: Vec<u64>,
    periods: u64,
    flags: u64,
    word: u64,
    /// Drain passes it has waited.
    age: u8,
}

/// Replaces each patchpoint return address in `frames` whose splice is known; true when none
/// is left unreplaced.
fn apply_splices(frames: &mut [u64], splices: &std::collections::HashMap<(u64, u64), u64>) -> bool {
    let mut done = true;
    for i in 1..frames.len().saturating_sub(1) {
        if is_patchpoint(i, frames[i]) {
            match splices.get(&(frames[i], frames[i + 1])) {
                Some(&right) => frames[i] = right,
                None => done = false,
            }
        }
    }
    done
}

/// Whether the frame at `i` (0: the leaf's address; above: return addresses, one byte past
/// their call) returns into a tier-0 method's patchpoint call.
fn is_patchpoint(i: usize, value: u64) -> bool {
    matches!(
        super::shapes::SHAPES.lookup((value as usize).wrapping_sub(usize::from(i > 0))),
        Some(super::shapes::Shape::Patchpoint(_))
    )
}

/// The drain's buffers, kept between passes.
#[derive(Default)]
pub(super) struct Scratch {
    wrap: Vec<u8>,
    frames: Vec<u64>,
    repairs: Repairs,
    /// By slot: samples waiting for a splice.
    pending: std::collections::HashMap<usize, Vec<Pending>>,
}

/// Where the kernel's chain is wrong: a leaf in its prologue or epilogue (the frame pointer is
/// still, or again, the caller's: the chain skips the caller), frameless code, on-stack
/// replacement. The handler's walk, repeated on the copied top of the stack, repairs what lies
/// within the copy, joined to the kernel's chain where the two agree again ([`join`]). Deeper
/// down, one mistake stays: the chain through an on-stack-replacement frame has the return
/// address of the original (tier-0) method's patchpoint call where its caller's should be; the
/// right one, learnt from samples whose copy held the frame, replaces it ([`Scratch::splices`]).
fn repair(ip: u64, sp: u64, fp: u64, stack: &[u8], frames: &mut Vec<u64>, scratch: &mut Repairs) {
    use super::shapes::{SHAPES, Shape};
    let Repairs { walked, chain, leaves, splices } = scratch;
    if leaves.len() > 1 << 16 {
        leaves.clear();
    }
    let slot = *leaves.entry(ip).or_insert_with(|| super::stack_walk::leaf_slot_of(ip as usize));
    // Return addresses point after their call: the code they belong to is one byte before.
    let shape = |i: usize, value: u64| SHAPES.lookup((value as usize).wrapping_sub(usize::from(i > 0)));
    if slot.is_none() && !frames.iter().enumerate().any(|(i, &f)| shape(i, f).is_some()) {
        return; // the frame-pointer chain is right
    }
    walked.clear();
    let complete = super::stack_walk::walk_copy(walked, ip as usize, sp as usize, fp as usize, stack, slot);
    let leaf = match shape(0, ip) {
        _ if slot.is_some() => Leaf::SkipsCaller,
        Some(Shape::Frameless(_)) => Leaf::SkipsCaller,
        Some(_) => Leaf::ReplacesCaller,
        None => Leaf::Right,
    };
    chain.clear();
    chain.extend_from_slice(frames);
    // Chain frames from `rest_from` on are now at `+ shift` in `frames`.
    let (rest_from, shift) = match join(frames, walked, complete, leaf) {
        Some(rest_from) => (rest_from, (1 + walked.len()) as isize - rest_from as isize),
        None => (1, 0),
    };
    // (The chain's patchpoint frames beyond the walked part: `apply_splices`, after.)
    for c in 1..rest_from.min(chain.len().saturating_sub(1)) {
        if !is_patchpoint(c, chain[c]) {
            continue;
        }
        let key = (chain[c], chain[c + 1]);
        let at = (c as isize + shift) as usize;
        {
            // Within the walked part: learn what the walk put in its place (the frames on either
            // side agree with the chain's).
            if frames.get(at + 1) == Some(&chain[c + 1])
                && frames.get(at.wrapping_sub(1)) == Some(&chain[c - 1])
                && let Some(&right) = frames.get(at).filter(|&&f| f != chain[c])
            {
                if splices.len() > 1 << 12 {
                    splices.clear();
                }
                splices.insert(key, right);
            }
        }
    }
}

/// The drain's buffers and what it learnt about the kernel's chains, kept between passes.
#[derive(Default)]
struct Repairs {
    walked: Vec<u64>,
    chain: Vec<u64>,
    /// Per leaf address: where its return address is when it is in a prologue or epilogue
    /// (`shapes::leaf_return_slot` on its code), `None` otherwise.
    leaves: std::collections::HashMap<u64, Option<usize>>,
    /// What replaces a patchpoint's return address in the kernel's chain (keyed by it and the
    /// frame above it): the return address into the caller of the method running on-stack-
    /// replacement code, learnt from a sample whose copied stack held the original frame.
    splices: std::collections::HashMap<(u64, u64), u64>,
}

/// How the kernel's chain goes wrong at a leaf.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Leaf {
    /// In a prologue or epilogue, or frameless: the frame pointer is the caller's, so the chain
    /// skips the caller.
    SkipsCaller,
    /// On-stack-replacement code: the chain has a wrong frame where the caller is.
    ReplacesCaller,
    /// The chain is right at the leaf (a shaped frame further up may still be wrong).
    Right,
}

/// `frames` (the kernel's chain, leaf first) with the frames `walked` found above the leaf (a
/// true prefix of the stack; `complete`: the whole of it) in their place. The two agree again
/// from some frame on (they follow the same frame-pointer chain once past the frames the walk
/// repaired): the last walked frame is looked for in the chain at its own depth, one above (a
/// frame the chain skipped) or one below, and the place where most of the walked frames before
/// it match too wins (ties: as `leaf` says). Where none matches, the kernel's chain is kept.
/// Returns where the chain's frames kept begin (in the chain as it was), when it changed.
fn join(frames: &mut Vec<u64>, walked: &[u64], complete: bool, leaf: Leaf) -> Option<usize> {
    let &ip = frames.first()?;
    let depth = walked.len(); // the last walked frame's depth (the leaf is 0)
    if depth == 0 {
        return None;
    }
    let rest_from = if complete {
        frames.len()
    } else if depth == 1 {
        match (frames.get(1) == Some(&walked[0]), leaf) {
            (true, _) | (false, Leaf::Right) => return None,
            (false, Leaf::SkipsCaller) => 1,
            (false, Leaf::ReplacesCaller) => 2,
        }
    } else {
        // How many walked frames, from the last one back, match the chain ending at `at`.
        let matches = |at: usize| {
            (0..depth.min(at)).take_while(|&back| frames.get(at - back) == Some(&walked[depth - 1 - back])).count()
        };
        let order = match leaf {
            Leaf::SkipsCaller => [depth - 1, depth, depth + 1],
            _ => [depth, depth - 1, depth + 1],
        };
        let best = order.into_iter().filter(|&at| at >= 1).map(|at| (matches(at), at)).max_by_key(|&(m, _)| m);
        match best {
            // `max_by_key` keeps the last of equals: take the first in `order` instead.
            Some((m, _)) if m > 0 => {
                order.into_iter().find(|&at| at >= 1 && matches(at) == m).map_or(frames.len(), |at| at + 1)
            }
            _ => return None,
        }
    };
    let rest: Vec<u64> = frames.get(rest_from..).unwrap_or_default().to_vec();
    frames.clear();
    frames.push(ip);
    frames.extend_from_slice(walked);
    frames.extend(rest);
    Some(rest_from)
}

/// The drain's period while the kernel's sampler runs (`normal`: the signal sampler's, whose
/// rings ring a doorbell when half full): as long as rings allow — the time 3/8 of the smallest
/// ring takes to fill with samples of the stack's copy and 1 KB of chain (32 ms at 1 kHz, 0.3 s
/// at 97 Hz) —, at most a second. Each wake-up costs the drain more than a few samples do.
pub(super) fn drain_period(normal: std::time::Duration) -> std::time::Duration {
    if !running() {
        return normal;
    }
    let bytes = SMALLEST_RING.load(Relaxed) as u64 * 4096;
    let samples = (bytes * 3 / 8 / (u64::from(STACK_COPY) + 1024)).max(1);
    std::time::Duration::from_nanos(interval_ns().saturating_mul(samples)).min(std::time::Duration::from_secs(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repaired_leaf_joins_the_chain_where_the_two_agree_again() {
        let joined = |mut frames: Vec<u64>, walked: &[u64], complete, leaf| {
            let _ = join(&mut frames, walked, complete, leaf);
            frames
        };
        use Leaf::*;
        // The chain skipped the leaf's caller (0x20): the walk found it and its caller.
        assert_eq!(
            joined(vec![0x10, 0x30, 0x40, 0x50], &[0x20, 0x30], false, SkipsCaller),
            [0x10, 0x20, 0x30, 0x40, 0x50]
        );
        // The chain was right (frameless code whose caller the chain found anyway).
        assert_eq!(joined(vec![0x10, 0x20, 0x30, 0x40], &[0x20, 0x30], false, SkipsCaller), [0x10, 0x20, 0x30, 0x40]);
        // Recursion: the same return address at several depths; the skipped caller decides.
        assert_eq!(
            joined(vec![0x10, 0x30, 0x30, 0x30, 0x40], &[0x20, 0x30], false, SkipsCaller),
            [0x10, 0x20, 0x30, 0x30, 0x30, 0x40]
        );
        // An on-stack-replacement leaf: the chain's wrong caller (0x99) is replaced.
        assert_eq!(
            joined(vec![0x10, 0x99, 0x30, 0x40, 0x50], &[0x20, 0x30, 0x40], false, ReplacesCaller),
            [0x10, 0x20, 0x30, 0x40, 0x50]
        );
        // A wrong frame further up (an OSR frame above a right leaf).
        assert_eq!(
            joined(vec![0x10, 0x20, 0x99, 0x40, 0x50, 0x60], &[0x20, 0x30, 0x40, 0x50], false, Right),
            [0x10, 0x20, 0x30, 0x40, 0x50, 0x60]
        );
        // The walk reached the top of the stack: it is the whole stack.
        assert_eq!(joined(vec![0x10, 0x99], &[0x20, 0x30], true, Right), [0x10, 0x20, 0x30]);
        // Only the skipped caller was walked (its own frame is beyond the copy).
        assert_eq!(joined(vec![0x10, 0x30, 0x40], &[0x20], false, SkipsCaller), [0x10, 0x20, 0x30, 0x40]);
        assert_eq!(joined(vec![0x10, 0x99, 0x40], &[0x20], false, ReplacesCaller), [0x10, 0x20, 0x40]);
        assert_eq!(joined(vec![0x10, 0x99, 0x40], &[0x20], false, Right), [0x10, 0x99, 0x40]);
        // No meeting point: the kernel's chain stays.
        assert_eq!(joined(vec![0x10, 0x77, 0x88], &[0x20, 0x30], false, SkipsCaller), [0x10, 0x77, 0x88]);
    }
}
