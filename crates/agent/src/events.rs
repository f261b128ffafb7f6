//! The runtime's events besides calls and samples: exceptions by type, garbage collections. The
//! backends report them from the runtime's callbacks (CoreCLR: `ExceptionThrown`,
//! `ExceptionCatcherEnter`, the suspension and collection callbacks; Mono: its profiler API's
//! exception, clause and GC events); each snapshot copies the totals ([`snapshot`]).
//!
//! All of it is a cold path: each entry point takes one mutex (an exception costs the runtime tens
//! of microseconds, a collection far more), none runs in a signal handler, and nothing is
//! allocated per event once a type is known (a collection record aside, capped at
//! [`GcSummary::MAX_RECORDS`]).
//!
//! **Collections and pauses.** A suspension of the runtime for a collection starts at
//! [`suspend_started`] and ends at [`resumed`]; its length is a *pause*. The collection that began
//! inside a suspension gets the pause; a collection that ends while the runtime is not suspended
//! ran beside the program: CoreCLR's background gen2 collection ([`GcKind::Background`]; its
//! own short suspensions at start and end go to its record too when nothing else started since).
//! Collections nest (a foreground gen0/gen1 during a background gen2): they are kept on a stack.
//! A collection counts (and its pauses with it) once it has finished: one still running at the
//! last snapshot is left out, and the totals always equal the sum of the records.

mod by_type;

use crate::tree::{clock, threads};
use sonde_profile::{
    AllocSampling, AllocationCount, ExceptionCount, GcCollection, GcKind, GcReason, GcSummary, Loading, Mode,
    ModuleLoad, NodeEvents, RuntimeEvents, Timeline, TimelineEvent, TimelineKind,
};
use sonde_protocol::config::EventKinds;
use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering::Relaxed};

#[derive(Default)]
struct State {
    /// Exception type key (the runtime's class handle) → index into `events.exceptions`.
    exception_types: HashMap<usize, usize>,
    events: RuntimeEvents,
    /// Collections started and not finished, innermost last, each with its longest suspension
    /// so far.
    running: Vec<(GcCollection, u64)>,
    /// The current suspension for a collection began at this time (ns from the agent's start).
    suspended_at: Option<u64>,
    /// Allocated type key (the runtime's class handle) → index into
    /// `events.allocations.by_type`.
    alloc_types: HashMap<usize, usize>,
}

static STATE: Mutex<Option<State>> = Mutex::new(None);

/// The kinds recorded (`EventKinds` as bits: alloc 1, gc 2, exceptions 4, contention 8, jit
/// 16); all until [`configure`] says otherwise.
static KINDS: AtomicU8 = AtomicU8::new(0x1f);

/// Records only `kinds` from now on (the session's configuration, before the backend starts).
pub fn configure(kinds: EventKinds) {
    let bits = u8::from(kinds.alloc)
        | u8::from(kinds.gc) << 1
        | u8::from(kinds.exceptions) << 2
        | u8::from(kinds.contention) << 3
        | u8::from(kinds.jit) << 4;
    KINDS.store(bits, Relaxed);
}

/// A new session: nothing counted yet (the session's kinds follow with [`configure`]).
pub fn reset() {
    *STATE.lock().unwrap_or_else(|e| e.into_inner()) = None;
    ALLOCATIONS.every.store(false, Relaxed);
    ALLOCATIONS.exact.store(false, Relaxed);
    ALLOCATIONS.sampled.store(0, Relaxed);
}

/// The kinds recorded.
pub fn kinds() -> EventKinds {
    let bits = KINDS.load(Relaxed);
    EventKinds {
        alloc: bits & 1 != 0,
        gc: bits & 2 != 0,
        exceptions: bits & 4 != 0,
        contention: bits & 8 != 0,
        jit: bits & 16 != 0,
    }
}

fn with<R>(f: impl FnOnce(&mut State) -> R) -> R {
    f(STATE.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert_with(State::default))
}

/// The index of the exception type `key`, named by `name` the first time it is seen (`None`:
/// unnamed, kept as `?`).
fn exception_type(state: &mut State, key: usize, name: impl FnOnce() -> Option<String>) -> usize {
    if let Some(&i) = state.exception_types.get(&key) {
        return i;
    }
    let type_name = name().unwrap_or_else(|| "?".to_string());
    // Two keys with one name (a class unloaded and another loaded at its address is the other
    // way round, and not handled): one entry.
    let i = match state.events.exceptions.iter().position(|e| e.type_name == type_name) {
        Some(i) => i,
        None => {
            state.events.exceptions.push(ExceptionCount { type_name, thrown: 0, caught: 0 });
            state.events.exceptions.len() - 1
        }
    };
    state.exception_types.insert(key, i);
    i
}

/// Whether this runtime reports catches ([`exception_caught`]): set by the backend at start-up.
pub fn set_catches_counted(counted: bool) {
    with(|s| s.events.catches_counted = counted && kinds().exceptions);
}

/// An exception of type `key` was thrown (first chance, rethrows included).
pub fn exception_thrown(key: usize, name: impl FnOnce() -> Option<String>) {
    if !kinds().exceptions {
        return;
    }
    let now = clock::elapsed_ns();
    let os_tid = threads::gettid_cached();
    with(|s| {
        let i = exception_type(s, key, name);
        s.events.exceptions[i].thrown += 1;
        let kind = TimelineKind::Exception { type_index: i as u32 };
        mark(s, TimelineEvent { kind, os_tid, start_ns: now, end_ns: now });
    });
}

/// Adds `event` to the timeline, or counts it dropped once the timeline is full.
fn mark(s: &mut State, event: TimelineEvent) {
    let timeline = &mut s.events.timeline;
    if timeline.events.len() < Timeline::MAX_EVENTS {
        timeline.events.push(event);
    } else {
        timeline.dropped += 1;
    }
}

/// A catch handler is about to run for an exception of type `key`.
pub fn exception_caught(key: usize, name: impl FnOnce() -> Option<String>) {
    if !kinds().exceptions {
        return;
    }
    with(|s| {
        let i = exception_type(s, key, name);
        s.events.exceptions[i].caught += 1;
    });
}

/// The runtime starts suspending the program's threads for a collection.
pub fn suspend_started() {
    if !kinds().gc {
        return;
    }
    let now = clock::elapsed_ns();
    with(|s| s.suspended_at = Some(now));
}

/// The program's threads run again. Ends the suspension [`suspend_started`] began, if any.
pub fn resumed() {
    if !kinds().gc {
        return;
    }
    let now = clock::elapsed_ns();
    with(|s| {
        let Some(start) = s.suspended_at.take() else { return };
        let pause = now.saturating_sub(start);
        let gc = &mut s.events.gc;
        // The collection that started in this suspension (still running, or finished in it);
        // else the innermost running one (a background collection's own short suspensions). A
        // suspension without one (Mono stops the world for other work too) is not a GC pause.
        // Totals count finished collections only (a running one adds its pauses when it ends),
        // so that they always equal the records' sum.
        let started_in = |c: &GcCollection| c.start_ns >= start;
        let finished_in_it =
            s.running.last().is_none_or(|(c, _)| !started_in(c)) && gc.collections.last().is_some_and(started_in);
        if finished_in_it {
            if let Some(c) = gc.collections.last_mut() {
                c.pause_ns += pause;
                gc.pause_ns_total += pause;
                gc.pause_ns_max = gc.pause_ns_max.max(pause);
            }
        } else if let Some((c, longest)) = s.running.last_mut() {
            c.pause_ns += pause;
            *longest = (*longest).max(pause);
        }
    });
}

/// A collection of `generation` starts (an older one than 2 counts as 2).
pub fn gc_started(generation: u32, reason: GcReason) {
    if !kinds().gc {
        return;
    }
    let now = clock::elapsed_ns();
    with(|s| {
        let collection = GcCollection {
            generation: generation.min(2) as u8,
            reason,
            kind: GcKind::Blocking,
            start_ns: now,
            end_ns: now,
            pause_ns: 0,
            heap_bytes_after: 0,
        };
        s.running.push((collection, 0));
    });
}

/// The innermost running collection ends, leaving `heap_bytes` in the heap (0: not known).
pub fn gc_finished(heap_bytes: u64) {
    if !kinds().gc {
        return;
    }
    let now = clock::elapsed_ns();
    with(|s| {
        let Some((mut c, longest)) = s.running.pop() else { return };
        c.end_ns = now;
        c.heap_bytes_after = heap_bytes;
        if s.suspended_at.is_none() {
            c.kind = GcKind::Background;
        }
        let gc = &mut s.events.gc;
        gc.count_by_gen[usize::from(c.generation)] += 1;
        gc.pause_ns_total += c.pause_ns;
        gc.pause_ns_max = gc.pause_ns_max.max(longest);
        if gc.collections.len() == GcSummary::MAX_RECORDS {
            gc.collections.remove(0);
        }
        gc.collections.push(c);
    });
}

/// The events so far, all of them at one instant, for a snapshot (the per-node ones are the
/// threads': `ThreadState::events`).
pub fn snapshot() -> RuntimeEvents {
    let mut events = with(|s| s.events.clone());
    if ALLOCATIONS.every.load(Relaxed) {
        let allocations = &mut events.allocations;
        allocations.by_type = by_type::snapshot();
        allocations.exact_by_type = true;
        allocations.samples = if ALLOCATIONS.exact.load(Relaxed) {
            allocations.by_type.iter().map(|a| a.count).sum()
        } else {
            ALLOCATIONS.sampled.load(Relaxed)
        };
    }
    events
}

thread_local! {
    /// The JIT compilation running on this thread: when the outermost began (ns from the agent's
    /// start) and how deep compilations nest (a compilation can trigger another one).
    static JITTING: std::cell::Cell<(u64, u32)> = const { std::cell::Cell::new((0, 0)) };
}

/// The JIT starts compiling a method on this thread.
pub fn jit_started() {
    if !kinds().jit {
        return;
    }
    JITTING.with(|j| {
        let (start, depth) = j.get();
        j.set(if depth == 0 { (clock::elapsed_ns(), 1) } else { (start, depth + 1) });
    });
}

/// The JIT finished a method on this thread (compiled or not). The time counts once, for the
/// outermost compilation; every method started counts (a finish without a start — Mono reports
/// some compilations twice — does not).
pub fn jit_finished() {
    if !kinds().jit {
        return;
    }
    let elapsed = JITTING.with(|j| match j.get() {
        (_, 0) => None,
        (start, 1) => {
            j.set((0, 0));
            Some(clock::elapsed_ns().saturating_sub(start))
        }
        (start, depth) => {
            j.set((start, depth - 1));
            Some(0)
        }
    });
    let Some(elapsed) = elapsed else { return };
    let (end_ns, os_tid) = (clock::elapsed_ns(), threads::gettid_cached());
    with(|s| {
        s.events.loading.methods_compiled += 1;
        s.events.loading.jit_ns = s.events.loading.jit_ns.saturating_add(elapsed);
        if elapsed > 0 {
            // The outermost compilation ended: its span goes on the timeline.
            let start_ns = end_ns.saturating_sub(elapsed);
            mark(s, TimelineEvent { kind: TimelineKind::Jit, os_tid, start_ns, end_ns });
        }
    });
}

/// A module finished loading (the latest [`Loading::MAX_MODULES`] are kept).
pub fn module_loaded(name: String, path: String) {
    if !kinds().jit {
        return;
    }
    let loaded_ns = clock::elapsed_ns();
    with(|s| {
        let modules = &mut s.events.loading.modules;
        if modules.len() == Loading::MAX_MODULES {
            modules.remove(0);
        }
        modules.push(ModuleLoad { name, path, loaded_ns });
    });
}

/// Threads counting their allocations in a table of their own now ([`by_type`]).
pub fn allocation_tables() -> usize {
    by_type::tables()
}

/// How the backend counts allocations (set once, at start-up, when it records them).
pub fn set_allocation_sampling(sampling: AllocSampling, sample_bytes: u64) {
    with(|s| {
        s.events.allocations.sampling = sampling;
        s.events.allocations.sample_bytes = sample_bytes;
    });
}

/// An allocation sample: `bytes` in `count` objects of type `key` (named by `name` the first
/// time), estimated when sampled. One lock, a hash look-up and two additions.
pub fn allocated(key: usize, name: impl FnOnce() -> Option<String>, bytes: u64, count: u64) {
    with(|s| {
        let i = match s.alloc_types.get(&key) {
            Some(&i) => i,
            None => {
                let type_name = name().unwrap_or_else(|| "?".to_string());
                let by_type = &mut s.events.allocations.by_type;
                let i = by_type.iter().position(|a| a.type_name == type_name).unwrap_or_else(|| {
                    by_type.push(AllocationCount { type_name, bytes: 0, count: 0 });
                    by_type.len() - 1
                });
                s.alloc_types.insert(key, i);
                i
            }
        };
        let allocations = &mut s.events.allocations;
        allocations.samples += 1;
        let a = &mut allocations.by_type[i];
        a.bytes = a.bytes.saturating_add(bytes);
        a.count = a.count.saturating_add(count);
    });
}

/// How allocations are counted, set at start-up by the backend for the session: every one
/// (`every`: the runtime reports each; `exact`: per node too) or a sample of them (Sonde's per-byte
/// sampler, `sample_bytes` apart on average; `sampled` counts its picks).
struct Allocations {
    /// The runtime reports every allocation (Mono; CoreCLR in exact mode), so the totals by type are
    /// counted exactly ([`by_type`]): set once, at start-up.
    every: AtomicBool,
    /// Every allocation also counts per node, in tracing mode (`--alloc-sampling exact`).
    exact: AtomicBool,
    /// Allocations the per-byte sampler picked ([`sample_allocation`]), when not [`Allocations::exact`].
    sampled: AtomicU64,
    /// Mean bytes between two samples of Sonde's own allocation sampler ([`sample_allocation`]):
    /// `AgentConfig::alloc_sample_bytes`.
    sample_bytes: AtomicU64,
}

static ALLOCATIONS: Allocations = Allocations {
    every: AtomicBool::new(false),
    exact: AtomicBool::new(false),
    sampled: AtomicU64::new(0),
    sample_bytes: AtomicU64::new(sonde_protocol::config::DEFAULT_ALLOC_SAMPLE_BYTES),
};

/// Counts every allocation from now on (`--alloc-sampling exact`: [`each_allocation`]); `mean`
/// is the sampler's mean for the stacks of sampling mode.
pub fn set_exact_allocations(mean: u64) {
    ALLOCATIONS.every.store(true, Relaxed);
    ALLOCATIONS.exact.store(true, Relaxed);
    set_allocation_sampling(AllocSampling::Exact, set_sample_bytes(mean));
}

/// The runtime reports every allocation, and the stacks are sampled (Mono's default): the totals
/// by type are counted exactly from every event, the figures per node are estimated from a sample
/// every `mean` bytes ([`each_allocation`]).
pub fn set_sampled_allocations(mean: u64) {
    ALLOCATIONS.every.store(true, Relaxed);
    set_allocation_sampling(AllocSampling::Sampled, set_sample_bytes(mean));
}

/// One allocation of `size` bytes of type `key`, from a runtime that reports each one (Mono's
/// allocation event; CoreCLR's `ObjectAllocated` in exact mode), on the allocating thread.
/// Every allocation counts by type, exactly and without a lock ([`by_type`]: a look-up and two
/// atomic additions). The stacks: Sonde's per-byte sampler picks some allocations and weighs
/// them ([`sample_allocation`]) — a walk per allocation would cost more than the allocation many
/// times over — so the figures per node are estimates; in exact mode in tracing mode every
/// allocation counts to the thread's innermost traced call instead.
pub fn each_allocation(
    key: usize,
    name: impl FnOnce() -> Option<String>,
    size: u64,
    walk: impl FnOnce(&mut Vec<u64>) -> bool,
) {
    if !by_type::add(key, size) {
        by_type::add_first(key, name, size);
    }
    let exact = ALLOCATIONS.exact.load(Relaxed);
    let counts = match crate::base::running::mode() {
        Some(Mode::Tracing) if exact => Some((size, 1)),
        _ => sample_allocation(size),
    };
    let Some((alloc_bytes, alloc_count)) = counts else { return };
    if !exact {
        ALLOCATIONS.sampled.fetch_add(1, Relaxed);
    }
    attribute(NodeEvents { alloc_bytes, alloc_count, ..Default::default() }, walk);
}

/// Sets the mean of Sonde's own allocation sampler (before the first allocation); returns it.
pub fn set_sample_bytes(bytes: u64) -> u64 {
    let bytes = bytes.max(1);
    ALLOCATIONS.sample_bytes.store(bytes, Relaxed);
    bytes
}

thread_local! {
    /// Bytes this thread may still allocate before its next sample (`i64::MIN`: not drawn yet),
    /// and its random state.
    static ALLOC_SAMPLER: std::cell::Cell<(i64, u64)> = const { std::cell::Cell::new((i64::MIN, 0)) };
}

/// Sonde's own allocation sampler (Mono, which reports every allocation): each byte allocated is
/// a sampling point with probability 1/[`Allocations::sample_bytes`] (a Poisson process along the bytes
/// a thread allocates), and an allocation of `size` bytes is sampled when a point falls inside
/// it — with probability `p = 1 - exp(-size / ALLOCATIONS.sample_bytes)` — and then stands for `1/p`
/// allocations of its size: the estimate `(bytes, count)` is unbiased for every type and stack
/// (`docs/EVENTS.md`). `None`: not sampled. A few arithmetic operations per allocation.
pub fn sample_allocation(size: u64) -> Option<(u64, u64)> {
    ALLOC_SAMPLER.with(|cell| {
        let mut state = cell.get();
        let mean = ALLOCATIONS.sample_bytes.load(Relaxed);
        if state.0 == i64::MIN {
            state.1 = seed();
            state.0 = next_gap(&mut state.1, mean);
        }
        let sampled = sample_step(&mut state, size, mean);
        cell.set(state);
        sampled
    })
}

/// One allocation through the sampler whose state is `(bytes left, random state)`.
fn sample_step((left, rng): &mut (i64, u64), size: u64, mean: u64) -> Option<(u64, u64)> {
    *left -= size.min(i64::MAX as u64) as i64;
    if *left > 0 {
        return None;
    }
    // Memoryless: the next point is drawn afresh from the end of this allocation.
    *left = next_gap(rng, mean);
    let weight = 1.0 / -(-(size.max(1) as f64) / mean as f64).exp_m1();
    // The fraction of an allocation is rounded at random, so that counts stay unbiased.
    let count = weight.floor() as u64 + u64::from(uniform(rng) < weight.fract());
    Some(((size as f64 * weight).round() as u64, count))
}

/// A random state for this thread (its id and the clock; not for secrets).
fn seed() -> u64 {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    let seed = nanos ^ (u64::from(threads::gettid_cached()) << 32) ^ 0x9E37_79B9_7F4A_7C15;
    seed | 1
}

/// xorshift64*: a uniform value in [0, 1).
fn uniform(state: &mut u64) -> f64 {
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    (state.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
}

/// Bytes to the next sampling point: exponential with mean `mean`.
fn next_gap(state: &mut u64, mean: u64) -> i64 {
    let u = 1.0 - uniform(state); // (0, 1]
    ((-u.ln() * mean as f64) as i64).max(1)
}

/// Attributes `counts` (an allocation sample, a wait, a throw) to the calling thread's call
/// tree: in tracing mode to its innermost traced call, in sampling mode to the stack `walk`
/// writes (innermost first, in the values the backend's frame resolver reads; it returns true
/// when it cut the stack short), which the drain puts into the tree later. Runs on the thread
/// the event happened on, never in a signal handler.
pub fn attribute(counts: NodeEvents, walk: impl FnOnce(&mut Vec<u64>) -> bool) {
    match crate::base::running::mode() {
        Some(Mode::Tracing) => {
            if let Some(state) = threads::current_if_any() {
                state.add_events(state.tree.current(), &counts);
            }
        }
        Some(Mode::Sampling) => {
            let mut frames = Vec::with_capacity(64);
            let truncated = walk(&mut frames);
            if !frames.is_empty() {
                crate::sampling::record_event_stack(threads::gettid_cached(), frames, truncated, counts);
            }
        }
        // Coverage mode keeps no tree (and asks for no events).
        Some(Mode::Coverage) | None => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The estimates add up to what was allocated, for small and large objects alike.
    #[test]
    fn allocation_samples_estimate_bytes_and_counts_without_bias() {
        for (size, n) in [(24u64, 20_000_000u64), (1_000, 1_000_000), (100 * 1024, 20_000), (1 << 20, 500)] {
            let (mut bytes, mut count) = (0u64, 0u64);
            // A fixed seed: the same draws every run.
            let mut state = (1, 0x2545_F491_4F6C_DD1D);
            for _ in 0..n {
                if let Some((b, c)) = sample_step(&mut state, size, 100 * 1024) {
                    bytes += b;
                    count += c;
                }
            }
            let truth = (size * n) as f64;
            assert!((bytes as f64 / truth - 1.0).abs() < 0.03, "{size} B × {n}: estimated {bytes} of {truth}");
            assert!((count as f64 / n as f64 - 1.0).abs() < 0.03, "{size} B × {n}: estimated {count} objects");
        }
    }

    // One test: the state is process-wide.
    #[test]
    fn exceptions_and_collections_are_counted_with_their_pauses() {
        set_catches_counted(true);
        exception_thrown(1, || Some("System.IO.IOException".into()));
        exception_thrown(1, || panic!("named once"));
        exception_caught(1, || panic!("named once"));
        exception_thrown(2, || None);
        // A blocking gen0 inside one suspension.
        suspend_started();
        gc_started(0, GcReason::Other);
        gc_finished(1000);
        resumed();
        // A background gen2 with a foreground gen1 inside it.
        suspend_started();
        gc_started(2, GcReason::Induced);
        resumed();
        suspend_started();
        gc_started(1, GcReason::Other);
        gc_finished(2000);
        resumed();
        gc_finished(3500);
        // A suspension with no collection in it is no GC pause.
        suspend_started();
        resumed();
        let events = snapshot();
        assert_eq!(
            events.exceptions,
            [
                ExceptionCount { type_name: "System.IO.IOException".into(), thrown: 2, caught: 1 },
                ExceptionCount { type_name: "?".into(), thrown: 1, caught: 0 },
            ]
        );
        assert!(events.catches_counted);
        let gc = &events.gc;
        assert_eq!(gc.count_by_gen, [1, 1, 1]);
        let kinds: Vec<_> = gc.collections.iter().map(|c| (c.generation, c.kind, c.heap_bytes_after)).collect();
        assert_eq!(kinds, [(0, GcKind::Blocking, 1000), (1, GcKind::Blocking, 2000), (2, GcKind::Background, 3500)]);
        let pauses: u64 = gc.collections.iter().map(|c| c.pause_ns).sum();
        assert_eq!(pauses, gc.pause_ns_total, "every pause went to one collection");
        assert!(gc.pause_ns_max <= gc.pause_ns_total);
        assert!(gc.collections.iter().all(|c| c.end_ns >= c.start_ns));
    }
}
