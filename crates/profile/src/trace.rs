//! The call trace: each traced thread's latest calls, in order, with their times
//! (`sonde record --call-trace`; instrumented native code, docs/NATIVE.md).
//!
//! The agent keeps a ring of enter and exit events per thread and sends what the ring holds; a
//! profile keeps the events as they came, and [`ThreadTrace::calls`] pairs them into calls. A
//! ring cuts a trace at its oldest event, so the first events can be exits of calls whose entry
//! was overwritten, and the last calls can be still open: both are kept, marked.

use serde::{Deserialize, Serialize};

/// Every traced thread's latest events (the file's `call_trace` extension). Empty when the
/// recording kept no call trace.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallTrace {
    /// How many events the agent kept per thread (the ring's size).
    pub events_per_thread: u32,
    pub threads: Vec<ThreadTrace>,
}

/// One thread's latest events, oldest first.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadTrace {
    pub os_tid: u32,
    /// Earlier events the ring overwrote.
    pub overwritten: u64,
    pub events: Vec<TraceEvent>,
}

/// A call's entry or exit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceEvent {
    /// Nanoseconds from the agent's start.
    pub ns: u64,
    /// The method (function) id.
    pub method: u32,
    /// The call's depth on the thread's traced stack: 1 for an outermost call.
    pub depth: u32,
    pub exit: bool,
}

/// One call of a trace, paired from its events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TracedCall {
    pub method: u32,
    pub depth: u32,
    pub start_ns: u64,
    pub end_ns: u64,
    /// Its entry is before the trace's first event (overwritten): `start_ns` is that event's.
    pub entered_before: bool,
    /// No exit in the trace (the call was still running): `end_ns` is the last event's.
    pub still_open: bool,
}

impl CallTrace {
    pub fn is_empty(&self) -> bool {
        self.threads.iter().all(|t| t.events.is_empty())
    }

    /// The trace of thread `os_tid`.
    pub fn thread(&self, os_tid: u32) -> Option<&ThreadTrace> {
        self.threads.iter().find(|t| t.os_tid == os_tid)
    }
}

impl ThreadTrace {
    /// The calls of the trace, in the order they started (a caller before its callees).
    ///
    /// Events are paired by depth: an exit at depth `d` ends the open call at depth `d`, and
    /// closes any deeper ones left open (an event the agent could not record). An exit with no
    /// open call at its depth started before the trace: it becomes a call from the trace's first
    /// event, as do the exits of its callers that follow. Whatever the events, the calls come out
    /// well nested: each lies within the call one level up that encloses it.
    pub fn calls(&self) -> Vec<TracedCall> {
        let Some(first) = self.events.first() else { return Vec::new() };
        let last_ns = self.events.last().map_or(first.ns, |e| e.ns);
        let mut calls: Vec<TracedCall> = Vec::new();
        // The open calls: (depth, index into `calls`), depths increasing.
        let mut open: Vec<(u32, usize)> = Vec::new();
        // Calls entered before the trace, found from their exits: they start at its first event
        // and enclose everything before them, so they go before every call already listed.
        let mut before: Vec<TracedCall> = Vec::new();
        let mut ns = first.ns;
        for e in &self.events {
            // Times never go backwards within a thread; a damaged file's may.
            ns = ns.max(e.ns);
            let close_from = |open: &mut Vec<(u32, usize)>, calls: &mut Vec<TracedCall>, depth: u32| {
                while open.last().is_some_and(|&(d, _)| d >= depth) {
                    let (_, i) = open.pop().expect("checked");
                    calls[i].end_ns = ns;
                    calls[i].still_open = false;
                }
            };
            if e.exit {
                if open.iter().any(|&(d, i)| d == e.depth && calls[i].method == e.method) {
                    close_from(&mut open, &mut calls, e.depth);
                } else {
                    // Entered before the trace (or its entry was not recorded): it encloses
                    // every call so far that is deeper, and ends the open ones at its depth.
                    close_from(&mut open, &mut calls, e.depth);
                    let enclosed = before.last().is_none_or(|b| b.depth > e.depth);
                    if enclosed && open.is_empty() {
                        before.push(TracedCall {
                            method: e.method,
                            depth: e.depth,
                            start_ns: first.ns,
                            end_ns: ns,
                            entered_before: true,
                            still_open: false,
                        });
                    }
                }
            } else {
                close_from(&mut open, &mut calls, e.depth);
                calls.push(TracedCall {
                    method: e.method,
                    depth: e.depth,
                    start_ns: ns,
                    end_ns: last_ns.max(ns),
                    entered_before: false,
                    still_open: true,
                });
                open.push((e.depth, calls.len() - 1));
            }
        }
        // The outermost of the calls entered before the trace first.
        before.reverse();
        before.extend(calls);
        nest(&mut before);
        before
    }
}

/// Keeps each call within the enclosing one listed before it (by depth). A trace the agent
/// wrote is nested already; events that contradict each other (a damaged file) are clamped.
fn nest(calls: &mut [TracedCall]) {
    let mut stack: Vec<(u32, u64, u64)> = Vec::new();
    for c in calls {
        while stack.last().is_some_and(|&(depth, _, _)| depth >= c.depth) {
            stack.pop();
        }
        if let Some(&(_, start, end)) = stack.last() {
            c.start_ns = c.start_ns.clamp(start, end);
            c.end_ns = c.end_ns.clamp(c.start_ns, end);
        }
        stack.push((c.depth, c.start_ns, c.end_ns));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn enter(ns: u64, method: u32, depth: u32) -> TraceEvent {
        TraceEvent { ns, method, depth, exit: false }
    }
    fn exit(ns: u64, method: u32, depth: u32) -> TraceEvent {
        TraceEvent { ns, method, depth, exit: true }
    }
    fn call(method: u32, depth: u32, start_ns: u64, end_ns: u64) -> TracedCall {
        TracedCall { method, depth, start_ns, end_ns, entered_before: false, still_open: false }
    }

    #[test]
    fn pairs_nested_calls() {
        let trace = ThreadTrace {
            os_tid: 7,
            overwritten: 0,
            events: vec![
                enter(10, 1, 1),
                enter(20, 2, 2),
                exit(30, 2, 2),
                enter(40, 3, 2),
                exit(50, 3, 2),
                exit(60, 1, 1),
            ],
        };
        assert_eq!(trace.calls(), vec![call(1, 1, 10, 60), call(2, 2, 20, 30), call(3, 2, 40, 50)]);
    }

    #[test]
    fn a_cut_trace_keeps_its_first_exits_and_last_entries() {
        // The ring overwrote the entries of 1 (depth 1) and 2 (depth 2); 4 never returned.
        let trace = ThreadTrace {
            os_tid: 7,
            overwritten: 2,
            events: vec![enter(10, 3, 3), exit(20, 3, 3), exit(30, 2, 2), exit(40, 1, 1), enter(50, 4, 1)],
        };
        let calls = trace.calls();
        assert_eq!(
            calls,
            vec![
                TracedCall { entered_before: true, ..call(1, 1, 10, 40) },
                TracedCall { entered_before: true, ..call(2, 2, 10, 30) },
                call(3, 3, 10, 20),
                TracedCall { still_open: true, ..call(4, 1, 50, 50) },
            ]
        );
    }

    #[test]
    fn a_missing_exit_is_closed_by_the_callers() {
        // 2's exit was not recorded: 1's exit closes it.
        let trace =
            ThreadTrace { os_tid: 1, overwritten: 0, events: vec![enter(1, 1, 1), enter(2, 2, 2), exit(5, 1, 1)] };
        assert_eq!(trace.calls(), vec![call(1, 1, 1, 5), call(2, 2, 2, 5)]);
    }

    proptest! {
        /// Whatever the events (a damaged file), calls are well nested: each call at depth d > 1
        /// that has an enclosing call listed before it lies within it, and no call ends before
        /// it starts.
        #[test]
        fn calls_are_well_nested(raw in proptest::collection::vec((0u64..50, 0u32..4, 1u32..6, any::<bool>()), 0..60)) {
            let mut ns = 0;
            let events = raw.iter().map(|&(dt, method, depth, exit)| {
                ns += dt;
                TraceEvent { ns, method, depth, exit }
            }).collect();
            let trace = ThreadTrace { os_tid: 1, overwritten: 0, events };
            let calls = trace.calls();
            let mut stack: Vec<TracedCall> = Vec::new();
            for c in &calls {
                prop_assert!(c.start_ns <= c.end_ns);
                while stack.last().is_some_and(|p| p.depth >= c.depth) {
                    stack.pop();
                }
                if let Some(parent) = stack.last() {
                    prop_assert!(parent.start_ns <= c.start_ns && c.end_ns <= parent.end_ns, "{parent:?} encloses {c:?}");
                }
                stack.push(*c);
            }
        }
    }
}
