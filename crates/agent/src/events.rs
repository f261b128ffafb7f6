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

use crate::tree::clock;
use sonde_profile::{ExceptionCount, GcCollection, GcKind, GcReason, GcSummary, RuntimeEvents};
use std::collections::HashMap;
use std::sync::Mutex;

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
}

static STATE: Mutex<Option<State>> = Mutex::new(None);

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
    with(|s| s.events.catches_counted = counted);
}

/// An exception of type `key` was thrown (first chance, rethrows included).
pub fn exception_thrown(key: usize, name: impl FnOnce() -> Option<String>) {
    with(|s| {
        let i = exception_type(s, key, name);
        s.events.exceptions[i].thrown += 1;
    });
}

/// A catch handler is about to run for an exception of type `key`.
pub fn exception_caught(key: usize, name: impl FnOnce() -> Option<String>) {
    with(|s| {
        let i = exception_type(s, key, name);
        s.events.exceptions[i].caught += 1;
    });
}

/// The runtime starts suspending the program's threads for a collection.
pub fn suspend_started() {
    let now = clock::elapsed_ns();
    with(|s| s.suspended_at = Some(now));
}

/// The program's threads run again. Ends the suspension [`suspend_started`] began, if any.
pub fn resumed() {
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

/// The events so far, for a snapshot.
pub fn snapshot() -> RuntimeEvents {
    with(|s| s.events.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

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
