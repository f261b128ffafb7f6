//! The agent's end of the IPC channel: handshake at start-up, then a thread that answers the
//! controller's snapshot requests, and a writer thread that alone writes to the socket. The final
//! snapshot is sent from the runtime's shutdown callback.
//!
//! The agent must never block the program on the controller, which may be stopped (Ctrl-Z,
//! SIGSTOP), slow, or gone. So no program thread ever writes to the socket: a snapshot is built
//! and encoded where it is asked for, then put in a one-place outbox that the writer thread
//! empties. A snapshot still waiting there when a newer one comes is replaced by it (snapshots
//! are cumulative, so nothing is lost while the process lives; the count goes to the controller as
//! `superseded`). Whoever asked may wait for the delivery, but only while the writer makes
//! progress ([`Patience`]): a stalled controller costs a throwing thread at most a few
//! milliseconds, the process's exit at most a second. The writer itself may block for as long as
//! the controller does — it is our thread, and the process's exit ends it. A snapshot sent as
//! the process ends (its final one, or a last-chance one) that the controller did not take in
//! time is *spilled*: written to `<pid>.spill` in the session's private directory, where the
//! controller looks when the connection ends without a final snapshot.
//!
//! The session belongs to the process that opened it: a forked child stays silent
//! (`process::forked_child`), or two processes would write one stream.

use crate::ipc::snapshot::{self, SnapshotContext};
use crate::tree::methods::methods;
use sonde_protocol::{AgentMessage, ControllerMessage, Hello, encode_frame, read_frame, write_frame};
use std::collections::VecDeque;
use std::io::{BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);
/// Error messages waiting for the writer beyond this many are dropped.
const MAX_QUEUED_ERRORS: usize = 16;
/// The writer reports progress after each chunk of this size.
const CHUNK: usize = 64 * 1024;
/// Pieces of a heap snapshot waiting for the writer: beyond this many, the walk waits (the
/// agent's memory stays bounded whatever the heap's size).
pub const MAX_QUEUED_HEAP: usize = 16;

/// How long a sender waits for its message to be written: as long as the writer keeps making
/// progress, giving up once it has made none for `stall` (or at once for `stall` zero).
#[derive(Clone, Copy, Debug)]
pub struct Patience {
    pub stall: Duration,
}

impl Patience {
    /// A snapshot sent with this patience is spilled to a file when it is not delivered.
    fn spills(self) -> bool {
        self.stall >= Patience::EXIT.stall
    }

    /// Do not wait (the controller asked for this snapshot; it will read it when it reads).
    pub const NONE: Patience = Patience { stall: Duration::ZERO };
    /// A program thread that threw an exception: the data should be out before the process can
    /// die of it, but a stalled controller must not hold the thread.
    pub const THROW: Patience = Patience { stall: Duration::from_millis(20) };
    /// The last snapshots of a process (its exit, a fatal signal); spilled to a file when the
    /// controller does not take them.
    pub const EXIT: Patience = Patience { stall: Duration::from_secs(1) };
    /// A heap snapshot's pieces, sent while the program is stopped for the walk: a controller
    /// that reads nothing for this long gets an incomplete snapshot, the program its threads back.
    pub const WALK: Patience = Patience { stall: Duration::from_secs(10) };
}

pub struct Link {
    /// Building snapshots: one at a time, in sequence.
    build: Mutex<Build>,
    outbox: Mutex<Outbox>,
    /// Signalled when the outbox gets work (the writer waits) or the writer made progress.
    changed: Condvar,
    /// The session's private directory, for spilled snapshots.
    spill_dir: Option<PathBuf>,
}

struct Build {
    seq: u64,
}

#[derive(Default)]
struct Outbox {
    /// The next snapshot to write, encoded: (seq, methods it completes, last, bytes).
    snapshot: Option<Outgoing>,
    errors: VecDeque<Vec<u8>>,
    /// A heap snapshot's messages, in order (never replaced, never dropped while the link lives).
    heap: VecDeque<Vec<u8>>,
    /// Buffers for a heap walk's pieces, allocated before the walk ([`Link::prepare_heap`]):
    /// the walk writes into one, the writer hands it back once written — no allocation on
    /// either side while the runtime's world is stopped.
    spare: Vec<Vec<u8>>,
    /// Every method record up to this index has been delivered.
    methods_delivered: usize,
    /// The newest snapshot written (by seq), and the errors written, so far.
    written_seq: u64,
    errors_written: u64,
    errors_queued: u64,
    superseded: u64,
    /// The writer is in the middle of a message and this is when it last moved.
    busy_since_progress: Option<Instant>,
    /// The last snapshot was written, or the connection failed: nothing more will be.
    closed: bool,
    /// A last snapshot was handed to the writer: a periodic one built meanwhile (the controller
    /// asks every second, also while the process exits) must neither replace it in the outbox
    /// nor follow it — the controller would take the run for unfinished.
    last_queued: bool,
}

struct Outgoing {
    seq: u64,
    methods_total: usize,
    last: bool,
    bytes: Arc<Vec<u8>>,
}

/// What snapshots carry besides the trees (fixed at start-up).
#[derive(Clone, Copy)]
pub struct SnapshotFacts {
    pub sample_interval_ns: u64,
    /// Exact timing: snapshots carry the hook cost, re-measured each time (`calibration::measure_cost`).
    pub exact_timing: bool,
    /// Sampling mode: pending samples are drained into the trees first, and counts are reported.
    pub sampling: bool,
    /// Tracing a .NET program without `--native-hooks`: snapshots list the files mapped
    /// executable ([`crate::base::process::executable_files`]).
    pub mapped_files: bool,
}

/// Why the agent could not open its session with the controller.
#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    #[error("cannot connect to {}: {source}", socket.display())]
    Connect { socket: PathBuf, source: std::io::Error },
    #[error("cannot set the socket's timeouts: {0}")]
    Timeouts(std::io::Error),
    #[error("handshake: {0}")]
    Handshake(String),
    #[error("controller refused: {0}")]
    Refused(String),
    #[error("{0}")]
    Peer(sonde_protocol::trust::TrustError),
}

impl Link {
    pub fn connect(socket: &Path, hello: Hello) -> Result<&'static Link, LinkError> {
        let mut stream = UnixStream::connect(socket)
            .map_err(|source| LinkError::Connect { socket: socket.to_path_buf(), source })?;
        // Who listens is checked by the kernel's word (SO_PEERCRED), not by the path: the path
        // may have been replaced between the session's checks and this connection.
        sonde_protocol::trust::check_peer(&stream).map_err(LinkError::Peer)?;
        stream.set_read_timeout(Some(HANDSHAKE_TIMEOUT)).map_err(LinkError::Timeouts)?;
        stream.set_write_timeout(Some(HANDSHAKE_TIMEOUT)).map_err(LinkError::Timeouts)?;
        write_frame(&mut stream, &AgentMessage::Hello(hello)).map_err(|e| LinkError::Handshake(e.to_string()))?;
        match read_frame::<ControllerMessage>(&mut stream) {
            Ok(ControllerMessage::Welcome { .. }) => {}
            Ok(ControllerMessage::Reject { reason }) => return Err(LinkError::Refused(reason)),
            Ok(other) => return Err(LinkError::Handshake(format!("unexpected answer: {other:?}"))),
            Err(e) => return Err(LinkError::Handshake(e.to_string())),
        }
        stream.set_read_timeout(None).map_err(LinkError::Timeouts)?;
        // The writer blocks as long as the controller does: only the writer writes.
        stream.set_write_timeout(None).map_err(LinkError::Timeouts)?;
        crate::base::process::claim_session();
        let link: &'static Link = Box::leak(Box::new(Link {
            build: Mutex::new(Build { seq: 0 }),
            outbox: Mutex::new(Outbox::default()),
            changed: Condvar::new(),
            spill_dir: socket.parent().map(Path::to_path_buf),
        }));
        let writer = stream.try_clone().map_err(LinkError::Timeouts)?;
        crate::base::running::spawn_thread("sonde-ipc-write", move || link.write_loop(writer))
            .map_err(LinkError::Timeouts)?;
        *READER.lock().unwrap_or_else(|e| e.into_inner()) = Some(stream);
        Ok(link)
    }

    /// Serves snapshot requests until the controller asks to finish, or hangs up: then `finish`
    /// or `gone` runs, on this thread (`finish` sends the final snapshot). A heap snapshot's
    /// request runs `take_heap` (`ipc::heap::take`, handed in: it sends through this link).
    pub fn serve(
        &'static self,
        facts: SnapshotFacts,
        finish: fn(),
        gone: fn(),
        take_heap: fn(&'static Link),
    ) -> std::io::Result<()> {
        let Some(reader) = READER.lock().unwrap_or_else(|e| e.into_inner()).take() else { return Ok(()) };
        crate::base::running::spawn_thread("sonde-ipc", move || {
            let mut reader = BufReader::new(reader);
            loop {
                match read_frame::<ControllerMessage>(&mut reader) {
                    Ok(ControllerMessage::RequestSnapshot) => {
                        // Not waited for (`send_snapshot` says "not delivered yet"): the writer
                        // sends it. Only a closed link ends the requests.
                        self.send_snapshot(facts, false, Patience::NONE);
                        if self.outbox().closed {
                            break;
                        }
                    }
                    Ok(ControllerMessage::Pause) => crate::sampling::set_paused(true),
                    Ok(ControllerMessage::Resume) => crate::sampling::set_paused(false),
                    Ok(ControllerMessage::WalkStacks) => {
                        super::walk::walk_stacks();
                        self.send_snapshot(facts, false, Patience::NONE);
                    }
                    Ok(ControllerMessage::TakeHeap) => take_heap(self),
                    Ok(ControllerMessage::Finish) => {
                        finish();
                        break;
                    }
                    Ok(other) => {
                        crate::base::log::log!("unexpected message from the controller: {other:?}");
                        break;
                    }
                    Err(e) => {
                        crate::base::log::log!("the controller hung up ({e})");
                        gone();
                        break;
                    }
                }
            }
        })?;
        Ok(())
    }

    fn outbox(&self) -> MutexGuard<'_, Outbox> {
        self.outbox.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Builds a snapshot, hands it to the writer (replacing one it has not started), and waits
    /// for it to be written as `patience` allows. False once nothing more can be sent, or when
    /// this one was not written within the patience.
    pub fn send_snapshot(&self, facts: SnapshotFacts, last: bool, patience: Patience) -> bool {
        // Before any lock: a forked child's copy may be held by a thread it does not have.
        if crate::base::process::forked_child() {
            return false;
        }
        let mut build = self.build.lock().unwrap_or_else(|e| e.into_inner());
        let (methods_delivered, superseded) = {
            let outbox = self.outbox();
            if outbox.closed || (outbox.last_queued && !last) {
                return false;
            }
            (outbox.methods_delivered, outbox.superseded)
        };
        if facts.sampling {
            crate::sampling::drain();
        }
        let (new_methods, methods_total) = methods().since(methods_delivered);
        build.seq += 1;
        let seq = build.seq;
        let message = AgentMessage::Snapshot(snapshot::take(SnapshotContext {
            seq,
            last,
            sample_interval_ns: facts.sample_interval_ns,
            hook_cost_ticks: facts
                .exact_timing
                .then(crate::calibration::measure_cost)
                .flatten()
                .map(|cost| (cost.inner_ticks, cost.outer_ticks)),
            new_methods,
            sampling: facts.sampling,
            superseded,
            mapped_files: facts.mapped_files,
        }));
        let bytes = match encode_frame(&message) {
            Ok(bytes) => bytes,
            Err(e) => {
                crate::base::log::log!("cannot encode a snapshot: {e}");
                return false;
            }
        };
        let bytes = Arc::new(bytes);
        let mut outbox = self.outbox();
        if outbox.closed || (outbox.last_queued && !last) {
            return false;
        }
        outbox.last_queued |= last;
        if outbox.snapshot.replace(Outgoing { seq, methods_total, last, bytes: bytes.clone() }).is_some() {
            outbox.superseded += 1;
        }
        // Only now may the next snapshot be built: snapshots reach the outbox in the order of
        // their numbers. Released earlier, a periodic snapshot built while this (last) one waited
        // for the outbox could overtake it, and the controller, which keeps the newest number,
        // would drop the last one and take the run for unfinished.
        drop(build);
        self.changed.notify_all();
        let delivered = self.wait(outbox, patience, |o| o.written_seq >= seq);
        if !delivered && patience.spills() {
            self.spill(&bytes);
        }
        delivered
    }

    /// Leaves a snapshot the controller did not take in the session's directory: `<pid>.spill`,
    /// written whole under another name first, never through a symlink, readable by the user
    /// alone (the directory was checked to be the user's and private at start-up).
    fn spill(&self, frame: &[u8]) {
        let Some(dir) = &self.spill_dir else { return };
        let pid = std::process::id();
        let (tmp, path) = (dir.join(format!(".{pid}.spill.tmp")), dir.join(format!("{pid}.spill")));
        let written = crate::base::process::open_private(&tmp, false)
            .and_then(|mut file| file.write_all(frame))
            .and_then(|()| std::fs::rename(&tmp, &path));
        match written {
            Ok(()) => crate::base::log::log!("the controller did not read: snapshot left in {}", path.display()),
            Err(e) => {
                crate::base::log::log!("the controller did not read, and {} cannot be written: {e}", path.display())
            }
        }
    }

    pub fn send_error(&self, message: String) {
        if crate::base::process::forked_child() {
            return;
        }
        let Ok(bytes) = encode_frame(&AgentMessage::Error(message)) else { return };
        let mut outbox = self.outbox();
        if outbox.closed || outbox.errors.len() >= MAX_QUEUED_ERRORS {
            return;
        }
        outbox.errors.push_back(bytes);
        outbox.errors_queued += 1;
        let ticket = outbox.errors_queued;
        self.changed.notify_all();
        // Errors mostly come at start-up, or just before profiling stops: worth a short wait.
        self.wait(outbox, Patience::THROW, |o| o.errors_written >= ticket);
    }

    /// Makes `pieces` buffers of `capacity` bytes ready for a heap walk, and room for them in the
    /// queue (before the walk: the walk's own thread must not allocate, see [`Link::send_heap_piece`]).
    pub fn prepare_heap(&self, pieces: usize, capacity: usize) {
        let mut outbox = self.outbox();
        let have = outbox.spare.len() + outbox.heap.len();
        outbox.heap.reserve(pieces + 2);
        outbox.spare.reserve(pieces + 2);
        for _ in have..pieces {
            outbox.spare.push(Vec::with_capacity(capacity));
        }
    }

    /// Hands one piece of a heap walk to the writer, in order: `write` fills a buffer made ready
    /// by [`Link::prepare_heap`] (emptied; it must not outgrow its capacity). Allocates nothing —
    /// the runtime may have stopped its threads anywhere, one inside `malloc` holding its lock
    /// (Mono suspends threads by signal) — and waits for a buffer the writer hands back, as
    /// `patience` allows: false when none came (or the link closed); the walk then ends
    /// incomplete.
    pub fn send_heap_piece(&self, write: impl FnOnce(&mut Vec<u8>), patience: Patience) -> bool {
        if crate::base::process::forked_child() {
            return false;
        }
        let mut outbox = self.outbox();
        let mut buffer = loop {
            if outbox.closed {
                return false;
            }
            if let Some(buffer) = outbox.spare.pop() {
                break buffer;
            }
            if !self.wait(outbox, patience, |o| !o.spare.is_empty() || o.closed) {
                return false;
            }
            outbox = self.outbox();
        };
        drop(outbox);
        buffer.clear();
        write(&mut buffer);
        let mut outbox = self.outbox();
        outbox.heap.push_back(buffer);
        self.changed.notify_all();
        true
    }

    /// Hands one message of a heap snapshot to the writer, in order, encoded here (its end,
    /// sent once the program runs again).
    pub fn send_heap(&self, message: &AgentMessage, patience: Patience) -> bool {
        if crate::base::process::forked_child() {
            return false;
        }
        let bytes = match encode_frame(message) {
            Ok(bytes) => bytes,
            Err(e) => {
                crate::base::log::log!("cannot encode a heap message: {e}");
                return false;
            }
        };
        let mut outbox = self.outbox();
        if outbox.heap.len() >= MAX_QUEUED_HEAP {
            if !self.wait(outbox, patience, |o| o.heap.len() < MAX_QUEUED_HEAP) {
                return false;
            }
            outbox = self.outbox();
        }
        if outbox.closed {
            return false;
        }
        outbox.heap.push_back(bytes);
        self.changed.notify_all();
        true
    }

    /// Waits until `done`, while the writer keeps making progress (see [`Patience`]): from the
    /// writer's last move when it is busy (a writer already stalled longer gets no wait at all),
    /// from our own start while it is between messages.
    fn wait(&self, mut outbox: MutexGuard<'_, Outbox>, patience: Patience, done: impl Fn(&Outbox) -> bool) -> bool {
        let start = Instant::now();
        loop {
            if done(&outbox) {
                return true;
            }
            if outbox.closed || patience.stall.is_zero() {
                return false;
            }
            let last_move = outbox.busy_since_progress.unwrap_or(start);
            let left = patience.stall.saturating_sub(last_move.elapsed());
            if left.is_zero() {
                return false;
            }
            outbox = self.changed.wait_timeout(outbox, left).unwrap_or_else(|e| e.into_inner()).0;
        }
    }

    fn write_loop(&self, mut stream: UnixStream) {
        /// What the writer took from the outbox.
        enum Taken {
            Error,
            /// A heap piece's buffer, handed back to `spare` once written (not wrapped in an
            /// `Arc`: the writer allocates nothing for it either).
            Heap(Vec<u8>),
            Snapshot {
                seq: u64,
                methods_total: usize,
                last: bool,
            },
        }
        loop {
            let (bytes, taken) = {
                let mut outbox = self.outbox();
                loop {
                    if let Some(error) = outbox.errors.pop_front() {
                        break (Some(Arc::new(error)), Taken::Error);
                    }
                    if let Some(piece) = outbox.heap.pop_front() {
                        break (None, Taken::Heap(piece));
                    }
                    if let Some(out) = outbox.snapshot.take() {
                        let (seq, methods_total, last) = (out.seq, out.methods_total, out.last);
                        break (Some(out.bytes), Taken::Snapshot { seq, methods_total, last });
                    }
                    outbox = self.changed.wait(outbox).unwrap_or_else(|e| e.into_inner());
                }
            };
            let written = match (&bytes, &taken) {
                (Some(bytes), _) => self.write_progressively(&mut stream, bytes),
                (None, Taken::Heap(piece)) => self.write_progressively(&mut stream, piece),
                (None, _) => Ok(()),
            };
            let mut outbox = self.outbox();
            outbox.busy_since_progress = None;
            match (written, taken) {
                (Ok(()), Taken::Snapshot { seq, methods_total, last }) => {
                    outbox.written_seq = outbox.written_seq.max(seq);
                    outbox.methods_delivered = outbox.methods_delivered.max(methods_total);
                    outbox.closed |= last;
                }
                (Ok(()), Taken::Error) => outbox.errors_written += 1,
                (Ok(()), Taken::Heap(piece)) => {
                    // Back to the walk; a piece encoded elsewhere (the end) joins them, within
                    // the room `prepare_heap` reserved or not (the walk is over by then).
                    if outbox.spare.len() < outbox.spare.capacity() {
                        outbox.spare.push(piece);
                    }
                }
                (Err(e), _) => {
                    crate::base::log::log!("lost the controller: {e}");
                    outbox.closed = true;
                }
            }
            let closed = outbox.closed;
            self.changed.notify_all();
            drop(outbox);
            if closed {
                let _ = stream.shutdown(std::net::Shutdown::Write);
                return;
            }
        }
    }

    /// Writes `bytes` a chunk at a time, telling waiters after each that the writer moves.
    fn write_progressively(&self, stream: &mut UnixStream, bytes: &[u8]) -> std::io::Result<()> {
        for chunk in bytes.chunks(CHUNK) {
            self.outbox().busy_since_progress = Some(Instant::now());
            self.changed.notify_all();
            stream.write_all(chunk)?;
        }
        Ok(())
    }
}

/// The connection's reading half, between the handshake and the IPC thread that takes it.
static READER: Mutex<Option<UnixStream>> = Mutex::new(None);
