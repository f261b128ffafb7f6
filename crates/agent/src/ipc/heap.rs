//! The controller's request for a heap snapshot (`sonde heap`, `ControllerMessage::TakeHeap`):
//! the backend that can take one says how ([`on_heap`]); the link runs it on the IPC thread
//! ([`take`]), and while it runs, the runtime's records of its heap walk go out as they come
//! ([`piece`], from whichever thread the runtime walks on) — the agent never holds the graph.
//! The end ([`sonde_protocol::HeapEnd`]) says whether the snapshot is whole.

use super::link::{Link, Patience};
use crate::base::log::log;
use crate::base::running;
use sonde_protocol::{AgentMessage, HeapChunk, HeapEnd};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// What a backend's snapshot returns: the names of what its walk referred to without naming it,
/// and how long the program was stopped for it; or why there is no snapshot.
pub type Taken = Result<Names, String>;

/// See [`Taken`].
pub struct Names {
    pub names: Vec<(u64, String)>,
    /// The collection and its walk, during which the program's threads were stopped (the naming
    /// after it runs beside the program).
    pub pause_ns: u64,
}

type Taker = Arc<dyn Fn() -> Taken + Send + Sync>;

static TAKER: Mutex<Option<Taker>> = Mutex::new(None);

/// A snapshot is being taken: [`piece`] sends (checked before the lock, on every event).
static ACTIVE: AtomicBool = AtomicBool::new(false);

/// The snapshot being taken.
static CURRENT: Mutex<Option<Current>> = Mutex::new(None);

struct Current {
    link: &'static Link,
    chunks: u64,
    /// Why pieces stopped going out (the controller stopped reading). Static: set on the
    /// walk's thread, which must not allocate (see [`piece`]).
    failed: Option<&'static str>,
}

/// Sets how [`take`] takes a snapshot (CoreCLR: a forced collection with the runtime's heap walk).
pub fn on_heap(take: impl Fn() -> Taken + Send + Sync + 'static) {
    *TAKER.lock().unwrap_or_else(|e| e.into_inner()) = Some(Arc::new(take));
}

/// A new session: no taker until its backend sets one.
pub fn reset() {
    *TAKER.lock().unwrap_or_else(|e| e.into_inner()) = None;
}

/// Takes a snapshot with the backend's taker and ends it with a [`HeapEnd`] (on the IPC thread).
pub fn take(link: &'static Link) {
    let taker = TAKER.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let start = Instant::now();
    let (taken, current) = match taker {
        None => (Err("this runtime cannot take heap snapshots".to_string()), None),
        Some(taker) => {
            link.prepare_heap(PIECES, PIECE_BYTES + HeapChunk::FRAME_OVERHEAD);
            *CURRENT.lock().unwrap_or_else(|e| e.into_inner()) = Some(Current { link, chunks: 0, failed: None });
            ACTIVE.store(true, Relaxed);
            let taken = running::guarded(Err("the heap snapshot failed".to_string()), || taker());
            ACTIVE.store(false, Relaxed);
            (taken, CURRENT.lock().unwrap_or_else(|e| e.into_inner()).take())
        }
    };
    let chunks = current.as_ref().map_or(0, |c| c.chunks);
    let (error, type_names, pause_ns) = match (taken, current.and_then(|c| c.failed)) {
        (Err(e), _) => (Some(e), Vec::new(), 0),
        (Ok(_), Some(failed)) => (Some(failed.to_string()), Vec::new(), 0),
        (Ok(Names { names, pause_ns }), None) => (None, names, pause_ns),
    };
    log!(
        "heap snapshot: {chunks} pieces in {:?}{}",
        start.elapsed(),
        error.as_ref().map_or(String::new(), |e| format!(": {e}"))
    );
    link.send_heap(&AgentMessage::HeapEnd(HeapEnd { error, pause_ns, chunks, type_names }), Patience::WALK);
}

/// Buffers for the walk's pieces, made ready before it (the queue's length and one being filled).
const PIECES: usize = super::link::MAX_QUEUED_HEAP + 1;
/// The largest piece a walk sends without allocating: CoreCLR's bulk events stay below 64 KB (the
/// runtime's own limit), Mono's pieces are cut at 60 KB (`mono/heap.rs`).
pub const PIECE_BYTES: usize = 64 * 1024;

/// True while a snapshot is taken: the backend's event handler passes its heap events to [`piece`].
pub fn active() -> bool {
    ACTIVE.load(Relaxed)
}

/// One of the runtime's heap-walk records (an event's payload), sent on at once. After a piece
/// could not be sent, the rest of the walk is dropped and the snapshot ends incomplete.
pub fn piece(event: u32, version: u32, payload: &[u8]) {
    if !active() {
        return;
    }
    let mut current = CURRENT.lock().unwrap_or_else(|e| e.into_inner());
    let Some(current) = current.as_mut() else { return };
    if current.failed.is_some() {
        return;
    }
    // Written into a buffer made ready before the walk: nothing allocated while the runtime's
    // world is stopped (`Link::send_heap_piece`). A larger record (none is expected) is encoded
    // apart.
    let sent = if payload.len() <= PIECE_BYTES {
        let write = |buffer: &mut Vec<u8>| HeapChunk::write_frame(buffer, event, version, payload);
        current.link.send_heap_piece(write, Patience::WALK)
    } else {
        let message = AgentMessage::HeapChunk(HeapChunk { event, version, payload: payload.to_vec() });
        current.link.send_heap(&message, Patience::WALK)
    };
    if sent {
        current.chunks += 1;
    } else {
        current.failed = Some("the controller stopped reading; the snapshot is incomplete");
    }
}
