//! From rings to call trees: the drain thread (and every snapshot) turns each sample's values
//! into methods through the backend's [`FrameResolver`] and counts the stack into its thread's
//! call tree. Never in a signal handler: resolving may take locks and call the runtime.

use super::async_stacks;
use super::common::{COUNTERS, DRAIN_BELL, interval, interval_ns};
use super::doorbell;
use super::paths::{FrameResolver, WalkedFrame, WorkFrames, event_path, resolved_path, stack_path, walk_path};
use super::ring::{self, CONTEXT_SHIFT, FLAG_TRUNCATED};
use super::slots;
use super::work::Work;
use crate::tree::threads;
use sonde_profile::NodeEvents;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering::*};
use std::time::Duration;

/// The drain's state, one per process: the drain thread, snapshots and walks share it. A session's
/// resolver, thread and way of draining are set by [`start`] and taken back by [`stop`] and
/// [`reset`]; its queued event stacks and their losses are the session's too. Every sample and walk
/// goes into the trees under [`Drain::draining`].
struct Drain {
    resolver: Mutex<Option<Box<dyn FrameResolver>>>,
    /// Held while samples or walks go into the trees.
    draining: Mutex<()>,
    /// Set while the sampler thread drains at each of its passes (low rates, every thread on its
    /// own timer: one wake-up a second for both); the drain thread then only answers its doorbell.
    sampler_drains: AtomicBool,
    /// What the drain does once it freed slots: give them to the threads waiting for one (set by
    /// `sampling::start`/`start_external`, which know how each sampler registers a thread).
    after_release: std::sync::OnceLock<fn()>,
    /// The drain thread, for [`stop`].
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
    /// Event stacks waiting for the drain, at most [`MAX_EVENT_STACKS`]; past that they are counted
    /// in [`Drain::event_stacks_lost`] (their counts still reach the run's totals by type).
    event_stacks: Mutex<Vec<EventStack>>,
    event_stacks_lost: std::sync::atomic::AtomicU64,
}

static DRAIN: Drain = Drain {
    resolver: Mutex::new(None),
    draining: Mutex::new(()),
    sampler_drains: AtomicBool::new(false),
    after_release: std::sync::OnceLock::new(),
    thread: Mutex::new(None),
    event_stacks: Mutex::new(Vec::new()),
    event_stacks_lost: std::sync::atomic::AtomicU64::new(0),
};

/// How long the drain thread sleeps, unrung, while the sampler drains.
const ANSWER_ONLY: Duration = Duration::from_secs(60);

/// The sampler thread drains at each pass from now on (`true`), or no longer.
pub(super) fn sampler_drains(drains: bool) {
    if DRAIN.sampler_drains.swap(drains, Relaxed) && !drains {
        DRAIN_BELL.ring(); // back to its own period now
    }
}

/// Installs the resolver and starts the drain thread, which first runs `block_signals` (the
/// sampler's: an agent thread is never sampled); `after_release`: see [`Drain::after_release`].
pub(super) fn start(resolver: Box<dyn FrameResolver>, block_signals: fn(), after_release: fn()) -> std::io::Result<()> {
    *DRAIN.resolver.lock().unwrap_or_else(|e| e.into_inner()) = Some(resolver);
    let _ = DRAIN.after_release.set(after_release);
    let thread = crate::base::running::spawn_thread("sonde-drain", move || {
        block_signals();
        // Every eight intervals, at least every 100 ms and at most every 20 — and whenever a
        // ring is half full (a thread's ring holds dozens of full-depth samples, hundreds of
        // usual ones): the handler rings [`wake`]. At low rates (`sonde daemon`'s 97 Hz) once a
        // second, plus those rings — or only those rings while the sampler thread drains at its
        // own once-a-second pass ([`sampler_drains`]): wake-ups cost more than the samples there,
        // and every snapshot drains first anyway.
        let interval = interval();
        let period = if doorbell::low_rate(interval) {
            doorbell::LOW_RATE_PERIOD
        } else {
            (interval * 8).clamp(Duration::from_millis(20), Duration::from_millis(100))
        };
        // The kernel's rings ring no doorbell: drained before they can fill.
        let period = super::kernel::drain_period(period);
        while !super::common::STOPPED.load(Relaxed) {
            DRAIN_BELL.wait(if DRAIN.sampler_drains.load(Relaxed) { ANSWER_ONLY } else { period });
            drain();
        }
    })?;
    *DRAIN.thread.lock().unwrap_or_else(|e| e.into_inner()) = Some(thread);
    Ok(())
}

/// Ends the drain thread (after `sampling::stop` set `STOPPED`).
pub(super) fn stop() {
    if let Some(thread) = DRAIN.thread.lock().unwrap_or_else(|e| e.into_inner()).take() {
        DRAIN_BELL.ring();
        let _ = thread.join();
    }
}

/// A new session: no resolver (the next `start` installs the session's), no event stack queued
/// or counted lost.
pub(super) fn reset() {
    *DRAIN.resolver.lock().unwrap_or_else(|e| e.into_inner()) = None;
    DRAIN.event_stacks.lock().unwrap_or_else(|e| e.into_inner()).clear();
    DRAIN.event_stacks_lost.store(0, Relaxed);
    DRAIN.sampler_drains.store(false, Relaxed);
}

/// Moves every ring's samples into the call trees. Serialised; runs on the drain thread and
/// before every snapshot.
///
/// A sample's "periods before" (the thread was blocked since its previous sample) are charged to
/// the previous sample's stack: a blocked thread's stack does not change. Periods a thread has
/// been blocked since its last sample are charged there too, as the drain finds them.
///
/// Slots of threads that are gone get their last drain here and are then freed for the next
/// thread (see `slots`); ended threads beyond the ones kept are folded (`threads::fold_ended`).
pub fn drain() {
    drain_and(false);
}

/// [`drain`], taking every sample held back too (the kernel's sampler holds a few until it can
/// repair them: `kernel`): the session's end.
pub fn drain_all() {
    drain_and(true);
}

fn drain_and(flush: bool) {
    let _guard = DRAIN.draining.lock().unwrap_or_else(|e| e.into_inner());
    let mut resolver = DRAIN.resolver.lock().unwrap_or_else(|e| e.into_inner());
    let Some(resolver) = resolver.as_mut() else { return };
    resolver.begin_pass();
    let interval_ns = interval_ns();
    let raw_addresses = resolver.raw_addresses();
    let mut path: Vec<u32> = Vec::with_capacity(ring::MAX_FRAMES + 1);
    let mut offsets: Vec<u32> = Vec::with_capacity(ring::MAX_FRAMES + 1);
    let mut lines = super::lines::table();
    let mut work_frames = WorkFrames::default();
    slots::seal_gone();
    let mut stitching = async_stacks::begin_drain(resolver.as_mut());
    // The kernel's rings are small: their samples move to the slots' rings first, and again
    // between slots when resolving takes a while.
    let mut moved = std::time::Instant::now();
    move_kernel_samples(flush);
    for slot in slots::used() {
        let tid = slot.tid.load(Acquire);
        let Some(ring) = slot.ring() else { continue };
        if tid == 0 {
            continue;
        }
        // The slot's own thread (a thread id may name a newer thread by now).
        let Some(thread) = slot.thread() else { continue };
        if moved.elapsed() >= MOVE_AGAIN {
            move_kernel_samples(flush);
            moved = std::time::Instant::now();
        }
        let tree = &thread.tree;
        let mut last_leaf = slot.last_leaf.load(Relaxed).checked_sub(1);
        let mut sample = |frames: &[u64], periods: u64, before: u64, flags: u64, work: u64| {
            let runtime_run = if raw_addresses {
                stack_path(frames, flags & FLAG_TRUNCATED != 0, false, resolver.as_mut(), &mut path, &mut offsets)
            } else {
                resolved_path(frames, flags & FLAG_TRUNCATED != 0, resolver.as_mut(), &mut path, &mut offsets)
            };
            // Counted from the leaf: stitching replaces the root end.
            let runtime_run = runtime_run.map(|at| path.len() - at);
            if let Some(stitching) = stitching.as_mut() {
                stitching.stitch((flags >> CONTEXT_SHIFT) as u32, resolver.as_mut(), &mut path, &mut offsets);
            }
            if let Some(from_leaf) = runtime_run {
                let at = path.len().saturating_sub(from_leaf);
                work_frames.insert(Work::decode(work), at, resolver.as_mut(), &mut path, &mut offsets);
            }
            COUNTERS.taken.fetch_add(periods + before, Relaxed);
            let mut weight = periods;
            match last_leaf {
                Some(leaf) => tree.add_samples(leaf, before, before * interval_ns),
                // The thread's first sample: its stack before it is not known; this one is the
                // nearest.
                None => weight += before,
            }
            if let Some(leaf) = tree.record_sample(&path, weight, weight * interval_ns) {
                last_leaf = Some(leaf);
                lines.record(&path, &offsets, weight);
                if let Some(&offset) = offsets.last().filter(|&&o| o != super::lines::NONE && weight > 0) {
                    thread.add_leaf_offset(leaf, offset, weight);
                }
            }
        };
        ring.drain(&mut sample);
        if let Some(leaf) = last_leaf {
            let idle = slot.idle_periods.swap(0, AcqRel);
            // Paused: time blocked meanwhile is not collected either.
            if idle > 0 && !super::common::PAUSED.load(Relaxed) {
                COUNTERS.taken.fetch_add(idle, Relaxed);
                tree.add_samples(leaf, idle, idle * interval_ns);
            }
            slot.last_leaf.store(leaf + 1, Relaxed);
            thread.last_sample.store(leaf + 1, Relaxed);
        }
    }
    drain_event_stacks(resolver.as_mut(), &mut path);
    async_stacks::end_drain(stitching);
    if slots::release_final() > 0 {
        super::kernel::close_freed();
        if let Some(after_release) = DRAIN.after_release.get() {
            after_release();
        }
    }
    threads::fold_ended();
}

/// A stack taken at a runtime event (an allocation sampled, a lock waited for, an exception
/// thrown) on its own thread, with what the event counts, waiting for the drain to resolve it.
struct EventStack {
    os_tid: u32,
    /// As the sampler writes them: raw return addresses (the innermost first, already `- 1`), or
    /// an external sampler's values.
    frames: Vec<u64>,
    truncated: bool,
    counts: NodeEvents,
}

const MAX_EVENT_STACKS: usize = 1 << 16;

/// The kernel sampler's buffers, kept from one drain to the next (taken under the drain's lock).
static KERNEL_SCRATCH: Mutex<Option<super::kernel::Scratch>> = Mutex::new(None);

/// How long the drain resolves before it empties the kernel's rings again.
const MOVE_AGAIN: Duration = Duration::from_millis(2);

/// Moves the samples in the kernel's rings (the kernel's sampler: `kernel`) into the slots'
/// rings, repaired, as the signal handler would have written them; `flush`: with every sample
/// the kernel sampler holds back. Under the drain's lock.
fn move_kernel_samples(flush: bool) {
    if !super::kernel::running() && !flush {
        return;
    }
    let mut scratch = KERNEL_SCRATCH.lock().unwrap_or_else(|e| e.into_inner());
    let scratch = scratch.get_or_insert_with(Default::default);
    for (index, slot) in slots::used().iter().enumerate() {
        let Some(ring) = slot.ring() else { continue };
        let lost = super::kernel::drain_slot(
            index,
            flush || slot.is_final(),
            scratch,
            |frames, periods, before, flags, work| {
                if let Some(mut writer) = ring.begin() {
                    for &frame in frames {
                        writer.push(frame);
                    }
                    let _ = writer.commit(periods, before, flags, work);
                }
            },
        );
        if lost > 0 {
            ring.dropped.fetch_add(lost, Relaxed);
        }
    }
}

/// Event stacks dropped because the drain fell behind.
pub fn event_stacks_lost() -> u64 {
    DRAIN.event_stacks_lost.load(Relaxed)
}

/// Queues the stack of thread `os_tid` at an event (`frames` innermost first, in the values
/// the backend's resolver reads; raw addresses all return addresses already moved inside their
/// call), for the next drain to put into the thread's tree with `counts` at its innermost
/// managed frame. Never blocks on the drain: the queue's lock is held for a push only.
pub fn record_event_stack(os_tid: u32, frames: Vec<u64>, truncated: bool, counts: NodeEvents) {
    let mut queue = DRAIN.event_stacks.lock().unwrap_or_else(|e| e.into_inner());
    if queue.len() >= MAX_EVENT_STACKS {
        DRAIN.event_stacks_lost.fetch_add(1, Relaxed);
        return;
    }
    queue.push(EventStack { os_tid, frames, truncated, counts });
}

/// Puts the queued event stacks into their threads' trees (under the drain's lock).
fn drain_event_stacks(resolver: &mut dyn FrameResolver, path: &mut Vec<u32>) {
    let stacks = std::mem::take(&mut *DRAIN.event_stacks.lock().unwrap_or_else(|e| e.into_inner()));
    for stack in stacks {
        event_path(&stack.frames, stack.truncated, resolver, path);
        if path.is_empty() {
            continue;
        }
        let thread = threads::state_for(stack.os_tid);
        if let Some(leaf) = thread.tree.record_sample(path, 0, 0) {
            thread.add_events(leaf, &stack.counts);
        }
    }
}

/// Records thread `os_tid`'s stack as the runtime walked it (`frames` innermost first; `sonde
/// dump`): the path goes into the thread's tree without a sample counted, and becomes the
/// thread's `walked` stack. Serialised with the drain, never in a signal handler.
pub fn record_walk(os_tid: u32, frames: &[WalkedFrame], truncated: bool) {
    let _guard = DRAIN.draining.lock().unwrap_or_else(|e| e.into_inner());
    let mut resolver = DRAIN.resolver.lock().unwrap_or_else(|e| e.into_inner());
    let Some(resolver) = resolver.as_mut() else { return };
    let mut path = Vec::with_capacity(frames.len() + 1);
    walk_path(frames, truncated, resolver.as_mut(), &mut path);
    let thread = threads::state_for(os_tid);
    if let Some(leaf) = thread.tree.record_sample(&path, 0, 0) {
        thread.walked.store(leaf + 1, Relaxed);
    }
}
