//! The runtime's own events that the profiling API has no callback for — allocation ticks and
//! lock contention, and the task library's await events for `--async` — received in-process through the profiler's EventPipe session
//! (`ICorProfilerInfo12::EventPipeStartSession`; delivered to `EventPipeEventDelivered` on the
//! thread that wrote each event, without a stack: the agent walks it there).
//!
//! Payloads are the manifest's (`ClrEtwAll.man`), packed, little-endian; parsing is pure and
//! bounds-checked (an unexpected layout is ignored, never read past).

use sonde_protocol::config::EventKinds;

/// `Microsoft-Windows-DotNETRuntime`.
pub const PROVIDER: &str = "Microsoft-Windows-DotNETRuntime";
/// `GCKeyword`: at verbose level it brings `GCAllocationTick` (and per-collection events).
const GC_KEYWORD: u64 = 0x1;
/// `ContentionKeyword`: `ContentionStart`/`ContentionStop`.
const CONTENTION_KEYWORD: u64 = 0x4000;
pub const LEVEL_INFORMATIONAL: u32 = 4;
const LEVEL_VERBOSE: u32 = 5;

/// `GCAllocationTick` (versions 2–4 carry the 64-bit amount and the type).
pub const ALLOCATION_TICK: u32 = 10;
/// `ContentionStop` (version 1 carries the wait).
pub const CONTENTION_STOP: u32 = 91;

/// The runtime's allocation tick fires after about this many bytes per heap and object kind
/// (`etw_allocation_tick` in the GC).
pub const TICK_BYTES: u64 = 100 * 1024;

/// The session's provider configuration for `kinds`: `(keywords, level)`, `None` when no event
/// needs a session.
pub fn session_for(kinds: EventKinds) -> Option<(u64, u32)> {
    let keywords = if kinds.alloc { GC_KEYWORD } else { 0 } | if kinds.contention { CONTENTION_KEYWORD } else { 0 };
    let level = if kinds.alloc { LEVEL_VERBOSE } else { LEVEL_INFORMATIONAL };
    (keywords != 0).then_some((keywords, level))
}

/// One `GCAllocationTick`: the runtime handed out `amount` bytes (on one heap, for one object
/// kind) since its previous tick, and the allocation that crossed the threshold was an object of
/// `type_id` (its `MethodTable`, the profiling API's ClassID), `object_size` bytes (version 4; 0
/// before).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllocationTick<'a> {
    pub amount: u64,
    pub type_id: usize,
    /// UTF-16 code units of the type's name, without the terminator.
    type_name: &'a [u8],
    pub object_size: u64,
}

impl AllocationTick<'_> {
    pub fn type_name(&self) -> String {
        let units: Vec<u16> = self.type_name.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect();
        String::from_utf16_lossy(&units)
    }

    /// The estimate this tick stands for: `(bytes, objects)`. The bytes are the runtime's own
    /// count since the previous tick (so their sum over a run is the bytes allocated); the
    /// objects, those bytes in objects of the sampled one's size (docs/EVENTS.md).
    pub fn estimate(&self) -> (u64, u64) {
        let count = match self.object_size {
            0 => 1,
            size => ((self.amount as f64 / size as f64).round() as u64).max(1),
        };
        (self.amount, count)
    }
}

/// Parses a `GCAllocationTick` of `version` 2 or later.
pub fn allocation_tick(data: &[u8], version: u32) -> Option<AllocationTick<'_>> {
    // AllocationAmount u32, AllocationKind u32, ClrInstanceID u16, AllocationAmount64 u64,
    // TypeID pointer, TypeName (UTF-16, NUL-terminated), HeapIndex u32; v3: Address pointer;
    // v4: ObjectSize u64.
    if version < 2 {
        return None;
    }
    let amount = u64::from_le_bytes(data.get(10..18)?.try_into().ok()?);
    let type_id = u64::from_le_bytes(data.get(18..26)?.try_into().ok()?) as usize;
    let rest = data.get(26..)?;
    let end = rest.chunks_exact(2).position(|c| c == [0, 0])? * 2;
    let type_name = &rest[..end];
    let after = &rest[end + 2..];
    let object_size = if version >= 4 {
        // HeapIndex u32, Address pointer, then ObjectSize.
        u64::from_le_bytes(after.get(12..20)?.try_into().ok()?)
    } else {
        0
    };
    Some(AllocationTick { amount, type_id, type_name, object_size })
}

/// The wait a `ContentionStop` (version 1 or later) reports, in nanoseconds.
pub fn contention_wait_ns(data: &[u8], version: u32) -> Option<u64> {
    // ContentionFlags u8, ClrInstanceID u16, DurationNs double.
    if version < 1 {
        return None;
    }
    let ns = f64::from_le_bytes(data.get(3..11)?.try_into().ok()?);
    (ns.is_finite() && ns >= 0.0).then_some(ns as u64)
}

/// `System.Threading.Tasks.TplEventSource`: the task library's events (`--async`).
pub const TPL_PROVIDER: &str = "System.Threading.Tasks.TplEventSource";
/// `TaskTransfer | Tasks | TaskStops`, at verbose level: the await, resume and completion events
/// below (and, unavoidably, the scheduling events of every task).
pub const TPL_KEYWORDS: u64 = 0x1 | 0x2 | 0x40;
pub const TPL_LEVEL: u32 = LEVEL_VERBOSE;

const TASK_WAIT_BEGIN: u32 = 10;
const TASK_WAIT_END: u32 = 11;
const AWAIT_CONTINUATION_SCHEDULED: u32 = 12;
const TASK_WAIT_CONTINUATION_COMPLETE: u32 = 13;
const TASK_WAIT_CONTINUATION_STARTED: u32 = 19;
/// `TaskWaitBehavior.Asynchronous`: an `await`, not a blocking `Wait()`.
const ASYNCHRONOUS: i32 = 2;

/// What a task event says about an await, by the id that ties its three events together (the
/// awaited task's, or the queued continuation's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskEvent {
    /// A continuation was registered on this thread (`TaskWaitBegin` of an await,
    /// `AwaitTaskContinuationScheduled`).
    Await(i32),
    /// It starts running on this thread (`TaskWaitEnd`, `TaskWaitContinuationStarted`).
    Resume(i32),
    /// It returned (`TaskWaitContinuationComplete`).
    Done(i32),
}

/// Parses one of the task library's events (payloads of 32-bit integers:
/// `TaskWaitBegin(scheduler, task, awaited task, behavior, continuation task)`,
/// `TaskWaitEnd(scheduler, task, awaited task)`, `AwaitTaskContinuationScheduled(scheduler,
/// task, continuation id)`, `TaskWaitContinuationStarted/Complete(id)`).
pub fn task_event(id: u32, data: &[u8]) -> Option<TaskEvent> {
    let int = |i: usize| data.get(i * 4..i * 4 + 4).map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]]));
    match id {
        TASK_WAIT_BEGIN => (int(3)? == ASYNCHRONOUS).then_some(TaskEvent::Await(int(2)?)),
        AWAIT_CONTINUATION_SCHEDULED => Some(TaskEvent::Await(int(2)?)),
        TASK_WAIT_END => Some(TaskEvent::Resume(int(2)?)),
        TASK_WAIT_CONTINUATION_STARTED => Some(TaskEvent::Resume(int(0)?)),
        TASK_WAIT_CONTINUATION_COMPLETE => Some(TaskEvent::Done(int(0)?)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tick(version: u32, name: &str, amount: u64, size: u64) -> Vec<u8> {
        let mut d = Vec::new();
        d.extend((amount as u32).to_le_bytes());
        d.extend(1u32.to_le_bytes()); // large object
        d.extend(7u16.to_le_bytes());
        d.extend(amount.to_le_bytes());
        d.extend(0x7f00_1234_5678u64.to_le_bytes());
        for unit in name.encode_utf16().chain([0]) {
            d.extend(unit.to_le_bytes());
        }
        d.extend(3u32.to_le_bytes());
        if version >= 3 {
            d.extend(0xdead_beefu64.to_le_bytes());
        }
        if version >= 4 {
            d.extend(size.to_le_bytes());
        }
        d
    }

    #[test]
    fn allocation_ticks_parse_in_every_version_and_estimate() {
        let v4 = tick(4, "System.Byte[]", 102_464, 1_024);
        let t = allocation_tick(&v4, 4).unwrap();
        assert_eq!((t.amount, t.type_id, t.object_size), (102_464, 0x7f00_1234_5678, 1_024));
        assert_eq!(t.type_name(), "System.Byte[]");
        assert_eq!(t.estimate(), (102_464, 100));
        let v2 = tick(2, "Acme.Größe", 120_000, 0);
        let t = allocation_tick(&v2, 2).unwrap();
        assert_eq!((t.type_name(), t.estimate()), ("Acme.Größe".to_string(), (120_000, 1)));
        // A huge object: one object, all its bytes.
        let huge = tick(4, "System.Int64[]", 800_024, 800_024);
        assert_eq!(allocation_tick(&huge, 4).unwrap().estimate(), (800_024, 1));
        assert!(allocation_tick(&v4, 1).is_none());
    }

    #[test]
    fn damaged_payloads_are_ignored() {
        let v4 = tick(4, "System.String", 102_400, 40);
        for len in 0..v4.len() {
            assert!(allocation_tick(&v4[..len], 4).is_none(), "cut at {len}");
        }
        // No terminator at all.
        let mut open = v4[..26].to_vec();
        open.extend([0x41, 0x00, 0x42]);
        assert!(allocation_tick(&open, 2).is_none());
    }

    #[test]
    fn contention_stops_carry_their_wait() {
        let mut d = vec![0u8];
        d.extend(7u16.to_le_bytes());
        d.extend(1_500_000.25f64.to_le_bytes());
        assert_eq!(contention_wait_ns(&d, 1), Some(1_500_000));
        assert_eq!(contention_wait_ns(&d, 0), None);
        assert_eq!(contention_wait_ns(&d[..10], 1), None);
        let mut bad = d.clone();
        bad[3..11].copy_from_slice(&f64::NAN.to_le_bytes());
        assert_eq!(contention_wait_ns(&bad, 1), None);
    }

    #[test]
    fn sessions_ask_for_what_is_recorded() {
        assert_eq!(session_for(EventKinds::NONE), None);
        assert_eq!(session_for(EventKinds::ALL), Some((0x4001, 5)));
        assert_eq!(session_for(EventKinds::DEFAULT), None, "no session by default");
        assert_eq!(session_for(EventKinds { contention: true, ..EventKinds::NONE }), Some((0x4000, 4)));
    }

    #[test]
    fn task_events_parse_and_blocking_waits_are_not_awaits() {
        let ints = |v: &[i32]| v.iter().flat_map(|i| i.to_le_bytes()).collect::<Vec<u8>>();
        assert_eq!(task_event(10, &ints(&[1, 0, 42, 2, 7])), Some(TaskEvent::Await(42)));
        assert_eq!(task_event(10, &ints(&[1, 0, 42, 1, 7])), None);
        assert_eq!(task_event(12, &ints(&[1, 5, 43])), Some(TaskEvent::Await(43)));
        assert_eq!(task_event(11, &ints(&[1, 0, 42])), Some(TaskEvent::Resume(42)));
        assert_eq!(task_event(19, &ints(&[43])), Some(TaskEvent::Resume(43)));
        assert_eq!(task_event(13, &ints(&[43])), Some(TaskEvent::Done(43)));
        // Short payloads and other events: nothing.
        assert_eq!(task_event(10, &ints(&[1, 0, 42])), None);
        assert_eq!(task_event(7, &ints(&[1, 0, 42, 0, 0])), None);
    }
}
