//! The controller's side of the IPC channel: accepts agents on a Unix socket in a private
//! directory, checks their handshake, asks them for snapshots and keeps each one's latest.
//!
//! One thread accepts, one thread per agent reads; the main thread only asks for snapshots and
//! finally collects the sessions. An agent that misbehaves is dropped with a note; it never
//! stops the recording of the others.

use sonde_protocol::trust;
use sonde_protocol::{
    AgentMessage, ControllerMessage, FrameError, Hello, MethodRecord, PROTOCOL_VERSION, Snapshot, read_frame,
    write_frame,
};
use sonde_render::fmt::Clean;
use std::collections::BTreeMap;
use std::io::BufReader;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Everything one agent (one process) sent.
#[derive(Debug, Default)]
pub struct Session {
    pub hello: Option<Hello>,
    /// Methods by agent id, accumulated over snapshots.
    pub methods: BTreeMap<u32, MethodRecord>,
    pub latest: Option<Snapshot>,
    /// The agent sent its final snapshot.
    pub complete: bool,
    /// The connection is gone.
    pub closed: bool,
    pub errors: Vec<String>,
    /// The heap snapshots this agent sent ([`Agents::take_heap`]), in order.
    pub heaps: Vec<TakenHeap>,
    /// Pieces of the heap snapshot in progress received so far (progress, while it streams).
    pub heap_pieces: u64,
    /// The connection's writing half, for requests to this process alone.
    writer: Option<UnixStream>,
}

/// A heap snapshot as one agent sent it.
#[derive(Debug)]
pub struct TakenHeap {
    /// The snapshot, or why there is none (the runtime refused, the walk was cut short).
    pub heap: Result<sonde_heap::HeapSnapshot, String>,
    /// How long the program was stopped for it, by the agent's clock.
    pub pause_ns: u64,
    /// Records of the runtime's walk that did not fit their layout (skipped).
    pub malformed: u64,
}

struct Shared {
    sessions: Vec<Arc<Mutex<Session>>>,
    writers: Vec<UnixStream>,
}

/// Counts the sessions' changes (a snapshot arrived, a connection closed), so that
/// [`Collector::finish`] sleeps until one happens rather than polling.
#[derive(Default)]
struct Changes {
    count: Mutex<u64>,
    changed: Condvar,
}

impl Changes {
    fn bump(&self) {
        *self.count.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        self.changed.notify_all();
    }

    fn seen(&self) -> u64 {
        *self.count.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits until the count moves past `seen`, or `until`.
    fn wait(&self, seen: u64, until: Instant) {
        let count = self.count.lock().unwrap_or_else(|e| e.into_inner());
        let timeout = until.saturating_duration_since(Instant::now());
        let _ = self.changed.wait_timeout_while(count, timeout, |c| *c == seen);
    }
}

pub struct Collector {
    agents: Agents,
    dir: tempfile::TempDir,
    socket: PathBuf,
    accept: Option<JoinHandle<()>>,
    /// The sweep of what killed recordings left ([`sweep_stale`]), run beside the program.
    sweep: Option<JoinHandle<()>>,
    verbose: bool,
}

impl Drop for Collector {
    /// The sweep is finished before `sonde` exits (long before, nearly always: it takes a
    /// millisecond or two, the program far longer).
    fn drop(&mut self) {
        if let Some(sweep) = self.sweep.take() {
            let _ = sweep.join();
        }
    }
}

/// What the other threads of a recording may do with its agents while the collector runs (the
/// control socket's thread, a live view): a cheap clone.
#[derive(Clone)]
pub struct Agents {
    shared: Arc<Mutex<Shared>>,
    changes: Arc<Changes>,
}

impl Agents {
    fn lock(&self) -> std::sync::MutexGuard<'_, Shared> {
        self.shared.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn tell(&self, message: &ControllerMessage) {
        self.lock().writers.retain_mut(|w| write_frame(w, message).is_ok());
    }

    pub fn connected(&self) -> usize {
        self.lock().sessions.len()
    }

    /// Asks every connected agent for a fresh snapshot (they answer asynchronously).
    pub fn request_snapshots(&self) {
        self.tell(&ControllerMessage::RequestSnapshot);
    }

    /// Asks every connected agent to finish: send its final snapshot and stop profiling, leaving
    /// its process running (an attached recording's end, `sonde stop`).
    pub fn finish_agents(&self) {
        self.tell(&ControllerMessage::Finish);
    }

    /// Pauses or resumes collection in every connected agent (sampling mode).
    pub fn pause_agents(&self, paused: bool) {
        self.tell(&if paused { ControllerMessage::Pause } else { ControllerMessage::Resume });
    }

    /// Asks every connected agent to have its runtime walk every thread's stack at one instant
    /// (`ControllerMessage::WalkStacks`); each answers with a snapshot whose `stacks_walked`
    /// counts it.
    pub fn walk_stacks(&self) {
        self.tell(&ControllerMessage::WalkStacks);
    }

    /// Asks process `pid` (as it knows itself) for a heap snapshot and waits for it: as long as
    /// its pieces keep coming, giving up after `stall` without any (or once the process is
    /// gone). `None` when it did not come.
    pub fn take_heap(&self, pid: u32, stall: Duration) -> Option<TakenHeap> {
        // A program just started may not have said hello yet.
        let until = Instant::now() + stall;
        let session = loop {
            let seen = self.changes.seen();
            if let Some(session) = self.session_of(pid) {
                break session;
            }
            if Instant::now() >= until {
                return None;
            }
            self.changes.wait(seen, until);
        };
        let (taken_before, mut pieces) = {
            // Under the lock `tell` writes under, so that two requests' frames never interleave
            // on the socket (the periodic snapshot requests come from another thread).
            let _writing = self.lock();
            let mut s = session.lock().unwrap_or_else(|e| e.into_inner());
            let writer = s.writer.as_mut()?;
            write_frame(writer, &ControllerMessage::TakeHeap).ok()?;
            (s.heaps.len(), s.heap_pieces)
        };
        let mut until = Instant::now() + stall;
        loop {
            let seen = self.changes.seen();
            {
                let mut s = session.lock().unwrap_or_else(|e| e.into_inner());
                if s.heaps.len() > taken_before {
                    return s.heaps.pop();
                }
                if s.closed {
                    return None;
                }
                if s.heap_pieces != pieces {
                    pieces = s.heap_pieces;
                    until = Instant::now() + stall;
                }
            }
            if Instant::now() >= until {
                return None;
            }
            self.changes.wait(seen, until);
        }
    }

    /// The session of process `pid`, once it said hello.
    fn session_of(&self, pid: u32) -> Option<Arc<Mutex<Session>>> {
        let sessions: Vec<_> = self.lock().sessions.clone();
        sessions
            .into_iter()
            .find(|s| s.lock().unwrap_or_else(|e| e.into_inner()).hello.as_ref().is_some_and(|h| h.pid == pid))
    }

    /// Calls `f` with every session that has data (continuous profiling's periodic pushes).
    pub fn each_session(&self, mut f: impl FnMut(&Session)) {
        let sessions: Vec<_> = self.lock().sessions.clone();
        for session in sessions {
            let s = session.lock().unwrap_or_else(|e| e.into_inner());
            if s.hello.is_some() && s.latest.is_some() {
                f(&s);
            }
        }
    }

    /// Calls `f` with the session of process `pid` (as the process knows itself) that has data.
    pub fn with_session<R>(&self, pid: u32, f: impl FnOnce(&Session) -> R) -> Option<R> {
        let sessions: Vec<_> = self.lock().sessions.clone();
        for session in sessions {
            let s = session.lock().unwrap_or_else(|e| e.into_inner());
            if s.hello.as_ref().is_some_and(|h| h.pid == pid) && s.latest.is_some() {
                return Some(f(&s));
            }
        }
        None
    }

    /// Asks for fresh snapshots and waits until process `pid` sent one newer than what is here,
    /// or its session ended, or `timeout`. True when a newer one (or the last one) arrived.
    pub fn refresh(&self, pid: u32, timeout: Duration) -> bool {
        let state = || self.with_session(pid, |s| (s.latest.as_ref().map_or(0, |l| l.seq), s.complete || s.closed));
        let before = state();
        if before.is_some_and(|(_, done)| done) {
            return true;
        }
        self.request_snapshots();
        let until = Instant::now() + timeout;
        loop {
            let seen = self.changes.seen();
            let now = state();
            if now.is_some_and(|(seq, done)| done || before.is_none_or(|(old, _)| seq > old)) {
                return true;
            }
            if Instant::now() >= until {
                return false;
            }
            self.changes.wait(seen, until);
        }
    }
}

impl Collector {
    /// Listens on a fresh socket inside a private directory: created `0700` whatever the umask
    /// (the mode is set explicitly after creation, then checked together with the owner).
    pub fn start(verbose: bool) -> std::io::Result<Collector> {
        Self::start_in(None, verbose)
    }

    /// [`Collector::start`], with the session directory in `parent` (when given) instead of the
    /// user's runtime or temporary directory: an attached process's own temporary directory,
    /// which may be in another mount namespace (`attach`).
    pub fn start_in(parent: Option<&Path>, verbose: bool) -> std::io::Result<Collector> {
        let parent = parent.map(Path::to_path_buf).or_else(runtime_dir).unwrap_or_else(std::env::temp_dir);
        let dir = private_dir(&parent)?;
        let socket = dir.path().join("agent.sock");
        let listener = UnixListener::bind(&socket)?;
        let agents = Agents {
            shared: Arc::new(Mutex::new(Shared { sessions: Vec::new(), writers: Vec::new() })),
            changes: Arc::new(Changes::default()),
        };
        let accept = {
            let (shared, changes) = (agents.shared.clone(), agents.changes.clone());
            std::thread::Builder::new()
                .name("sonde-accept".into())
                .spawn(move || accept_loop(listener, shared, changes, verbose))?
        };
        // Not on the program's way: reading a busy /tmp costs a millisecond or more, and
        // nothing here depends on it (a stale directory is another recording's, never ours).
        let sweep = std::thread::Builder::new().name("sonde-sweep".into()).spawn(move || sweep_stale(&parent)).ok();
        Ok(Collector { agents, dir, socket, accept: Some(accept), sweep, verbose })
    }

    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// The session's private directory.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// A handle on the agents for other threads.
    pub fn agents(&self) -> Agents {
        self.agents.clone()
    }

    /// See [`Agents::finish_agents`].
    pub fn finish_agents(&self) {
        self.agents.finish_agents();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Shared> {
        self.agents.lock()
    }

    pub fn connected(&self) -> usize {
        self.agents.connected()
    }

    /// See [`Agents::request_snapshots`].
    pub fn request_snapshots(&self) {
        self.agents.request_snapshots();
    }

    /// Waits until every agent has closed its connection, or `patience` has passed since the last
    /// sign of life; then asks the stragglers for one last snapshot and returns all sessions.
    pub fn finish(mut self, patience: Duration) -> Vec<Session> {
        self.wait_closed(Instant::now() + patience);
        if !self.all_closed() {
            if self.verbose {
                crate::note!("sonde: some agents are still running; taking their latest data");
            }
            self.request_snapshots();
            self.wait_closed(Instant::now() + Duration::from_millis(500));
        }
        let sessions = std::mem::take(&mut self.lock().sessions);
        for session in &sessions {
            let mut s = session.lock().unwrap_or_else(|e| e.into_inner());
            if !s.complete {
                take_spill(&mut s, self.dir.path());
            }
        }
        // Dropping the writers closes our end; the accept thread ends when the socket goes.
        self.lock().writers.clear();
        let _ = std::fs::remove_file(&self.socket);
        drop(self.accept.take());
        sessions
            .into_iter()
            .map(|s| match Arc::try_unwrap(s) {
                Ok(m) => m.into_inner().unwrap_or_else(|e| e.into_inner()),
                Err(shared) => std::mem::take(&mut *shared.lock().unwrap_or_else(|e| e.into_inner())),
            })
            .collect()
    }

    /// Sleeps until every session is closed or complete, or `until`.
    fn wait_closed(&self, until: Instant) {
        loop {
            let seen = self.agents.changes.seen();
            if self.all_closed() || Instant::now() >= until {
                return;
            }
            self.agents.changes.wait(seen, until);
        }
    }

    fn all_closed(&self) -> bool {
        self.lock().sessions.iter().all(|s| {
            let s = s.lock().unwrap_or_else(|e| e.into_inner());
            s.closed || s.complete
        })
    }
}

/// A fresh directory only this user can enter, under `$XDG_RUNTIME_DIR` when there is one (a
/// directory of this user's that nobody else can create anything in, removed at logout), else in
/// the temporary directory: `mkdir` with mode 0700 (a umask can only take bits away), then
/// `chmod 0700` (in case the umask took the owner's too), then a check that it is ours and
/// private ([`trust::check_private_dir`] — the agent makes the same check before connecting).
fn private_dir(parent: &Path) -> std::io::Result<tempfile::TempDir> {
    use std::os::unix::fs::PermissionsExt;
    let mut builder = tempfile::Builder::new();
    builder.prefix(SESSION_PREFIX).permissions(std::fs::Permissions::from_mode(0o700));
    let dir = builder.tempdir_in(parent)?;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700))?;
    trust::check_private_dir(dir.path()).map_err(std::io::Error::other)?;
    std::fs::write(dir.path().join(OWNER_FILE), owner_line())?;
    Ok(dir)
}

/// The name every session directory starts with (and nothing else of ours does).
pub const SESSION_PREFIX: &str = "sonde-ipc-";

/// The file in a session directory naming the controller that owns it: `PID START`, its process
/// id and start time (so that a reused pid is not taken for it).
const OWNER_FILE: &str = "controller";

/// `PID START` for this process.
fn owner_line() -> String {
    let pid = std::process::id();
    format!("{pid} {}", start_time(pid).unwrap_or(0))
}

/// A process's start time, in clock ticks since boot (`/proc/PID/stat`, field 22).
fn start_time(pid: u32) -> Option<u64> {
    stat_fields(pid)?.split_whitespace().nth(19)?.parse().ok()
}

/// The process exists and has not exited (a zombie its parent has not reaped yet has).
pub fn alive(pid: u32) -> bool {
    stat_fields(pid).is_some_and(|fields| !fields.starts_with(['Z', 'X']))
}

/// `/proc/PID/stat` from its third field (the state) on: what follows the command name, which is
/// in parentheses and may hold anything, spaces and parentheses included.
pub fn stat_fields(pid: u32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    Some(stat.rsplit_once(')')?.1.trim_start().to_string())
}

/// Removes what recordings that were killed (SIGKILL, a crash) left in `parent`: directories
/// `sonde-ipc-*` of this user's, private, whose owner file names a controller that no longer
/// runs (no such process, or another one under a reused pid). Nothing is connected to — a live
/// controller would take a probe for an agent — and anything else is left alone, a directory
/// without an owner file too (a recording killed before writing it, rare), since nothing proves it
/// is dead.
fn sweep_stale(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else { return };
    for entry in entries.flatten() {
        // The name first: one `stat` per entry of a busy /tmp adds up.
        if !entry.file_name().as_encoded_bytes().starts_with(SESSION_PREFIX.as_bytes()) {
            continue;
        }
        let dir = entry.path();
        let ours = entry.metadata().is_ok_and(|m| std::os::unix::fs::MetadataExt::uid(&m) == trust::user());
        if !ours || trust::check_private_dir(&dir).is_err() {
            continue;
        }
        let Ok(owner) = std::fs::read_to_string(dir.join(OWNER_FILE)) else { continue };
        let Some((pid, start)) = owner.trim().split_once(' ') else { continue };
        let (Ok(pid), Ok(start)) = (pid.parse::<u32>(), start.parse::<u64>()) else { continue };
        if start_time(pid) != Some(start) {
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
}

/// `$XDG_RUNTIME_DIR` if it is set, absolute, and a private directory of this user's (under
/// `sudo` it may still name the invoking user's, which is then not ours).
pub(crate) fn runtime_dir() -> Option<PathBuf> {
    let dir = PathBuf::from(std::env::var_os("XDG_RUNTIME_DIR")?);
    (dir.is_absolute() && trust::check_private_dir(&dir).is_ok()).then_some(dir)
}

/// What an agent left in the session's directory because this controller did not read in time
/// (`<pid>.spill`, see the agent's `ipc::link`): one frame, taken when it is newer than what
/// arrived over the socket. A file that is not the user's own regular file is ignored.
fn take_spill(session: &mut Session, dir: &Path) {
    use std::os::unix::fs::MetadataExt;
    let Some(pid) = session.hello.as_ref().map(|h| h.pid) else { return };
    let path = dir.join(format!("{pid}.spill"));
    let Ok(meta) = std::fs::symlink_metadata(&path) else { return };
    if !meta.is_file()
        || !trust::trusted_uid(meta.uid())
        || meta.len() > u64::from(sonde_protocol::frame::MAX_FRAME) + 4
    {
        return;
    }
    let Ok(bytes) = std::fs::read(&path) else { return };
    match read_frame::<AgentMessage>(&mut bytes.as_slice()) {
        Ok(AgentMessage::Snapshot(snapshot)) => apply(session, snapshot),
        Ok(_) => session.errors.push(format!("{} holds no snapshot", path.display())),
        Err(e) => session.errors.push(format!("{}: {e}", path.display())),
    }
}

/// A snapshot that arrived: its methods are kept, and it becomes the latest unless an older one.
fn apply(session: &mut Session, mut snapshot: Snapshot) {
    for method in std::mem::take(&mut snapshot.new_methods) {
        session.methods.insert(method.id, method);
    }
    // The agent's last word stands even if it arrived behind a newer snapshot (which then holds
    // everything the last one does: snapshots are cumulative).
    session.complete |= snapshot.last;
    if session.latest.as_ref().is_some_and(|l| l.seq > snapshot.seq) {
        return;
    }
    session.latest = Some(snapshot);
}

fn accept_loop(listener: UnixListener, shared: Arc<Mutex<Shared>>, changes: Arc<Changes>, verbose: bool) {
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        // The directory keeps others out; the kernel's word on the peer is the second lock.
        if let Err(e) = trust::check_peer(&stream) {
            crate::note!("sonde: refused a connection to the agent socket: {e}");
            continue;
        }
        let (Ok(writer), Ok(own_writer)) = (stream.try_clone(), stream.try_clone()) else { continue };
        let session = Arc::new(Mutex::new(Session { writer: Some(own_writer), ..Default::default() }));
        {
            let mut shared = shared.lock().unwrap_or_else(|e| e.into_inner());
            shared.sessions.push(session.clone());
            shared.writers.push(writer);
        }
        let changes = changes.clone();
        let _ = std::thread::Builder::new().name("sonde-agent-conn".into()).spawn(move || {
            let result = serve(stream, &session, &changes, verbose);
            let mut s = session.lock().unwrap_or_else(|e| e.into_inner());
            if let Err(e) = result {
                s.errors.push(e.to_string());
            }
            s.closed = true;
            // Its descriptor with it (a daemon keeps the sessions of processes long gone).
            s.writer = None;
            drop(s);
            changes.bump();
        });
    }
}

/// Why a connection from an agent ended badly (kept in its session's `errors`).
#[derive(Debug, thiserror::Error)]
enum ConnectionError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("{0}")]
    Reply(#[from] FrameError),
    #[error("agent spoke before its handshake: {0}")]
    BeforeHandshake(String),
    #[error("agent handshake failed: {0}")]
    Handshake(FrameError),
    #[error("agent speaks protocol {0}, this sonde speaks {PROTOCOL_VERSION}")]
    Protocol(u32),
    #[error("agent repeated its handshake")]
    RepeatedHandshake,
    #[error("bad message from agent: {0}")]
    BadMessage(FrameError),
}

fn serve(
    stream: UnixStream,
    session: &Mutex<Session>,
    changes: &Changes,
    verbose: bool,
) -> Result<(), ConnectionError> {
    let mut writer = stream.try_clone()?;
    let mut reader = BufReader::new(stream);
    let lock = || session.lock().unwrap_or_else(|e| e.into_inner());
    let hello = match read_frame::<AgentMessage>(&mut reader) {
        Ok(AgentMessage::Hello(hello)) => hello,
        Ok(other) => return Err(ConnectionError::BeforeHandshake(format!("{other:?}"))),
        Err(e) => return Err(ConnectionError::Handshake(e)),
    };
    if hello.protocol != PROTOCOL_VERSION {
        let error = ConnectionError::Protocol(hello.protocol);
        let _ = write_frame(&mut writer, &ControllerMessage::Reject { reason: error.to_string() });
        return Err(error);
    }
    write_frame(&mut writer, &ControllerMessage::Welcome { protocol: PROTOCOL_VERSION })?;
    if verbose {
        crate::note!(
            "sonde: agent connected: pid {} ({} {})",
            hello.pid,
            Clean(&hello.runtime.kind),
            Clean(&hello.runtime.version)
        );
    }
    let run = sonde_heap::RunFacts { runtime: hello.runtime.kind.clone(), pid: hello.pid, pause_ns: 0 };
    lock().hello = Some(hello);
    let mut told_sampler = false;
    // The heap snapshot being received: decoded as it comes, outside the session's lock.
    let mut heap: Option<sonde_heap::ClrHeapDecoder> = None;
    loop {
        match read_frame::<AgentMessage>(&mut reader) {
            Ok(AgentMessage::HeapChunk(chunk)) => {
                heap.get_or_insert_with(|| sonde_heap::ClrHeapDecoder::new(run.clone()))
                    .event(chunk.event, &chunk.payload);
                lock().heap_pieces += 1;
                changes.bump();
            }
            Ok(AgentMessage::HeapEnd(end)) => {
                let mut decoder = heap.take().unwrap_or_else(|| sonde_heap::ClrHeapDecoder::new(run.clone()));
                decoder.names(&end.type_names);
                let malformed = decoder.malformed();
                let taken = match end.error {
                    Some(error) => Err(error),
                    None => decoder.finish().map_err(|e| e.to_string()).map(|mut h| {
                        h.run.pause_ns = end.pause_ns;
                        h
                    }),
                };
                lock().heaps.push(TakenHeap { heap: taken, pause_ns: end.pause_ns, malformed });
                changes.bump();
            }
            Ok(AgentMessage::Snapshot(snapshot)) => {
                if verbose && !snapshot.sampler.is_empty() && !std::mem::replace(&mut told_sampler, true) {
                    crate::note!("sonde: pid {}: {}", snapshot_pid(&lock()), sampler_note(&snapshot.sampler));
                }
                apply(&mut lock(), snapshot);
                changes.bump();
            }
            Ok(AgentMessage::Error(message)) => lock().errors.push(format!("agent: {message}")),
            Ok(AgentMessage::Hello(_)) => return Err(ConnectionError::RepeatedHandshake),
            Err(FrameError::Closed) => return Ok(()),
            // A process that dies mid-frame (killed, crashed) is expected: keep what arrived.
            Err(FrameError::Io(_)) => return Ok(()),
            Err(e) => return Err(ConnectionError::BadMessage(e)),
        }
    }
}

/// The pid of a session's process (0 before its `Hello`).
fn snapshot_pid(session: &Session) -> u32 {
    session.hello.as_ref().map_or(0, |h| h.pid)
}

/// What `-v` says of the sampler an agent runs (`RunInfo::sampler`).
fn sampler_note(sampler: &str) -> String {
    match sampler {
        "kernel" => "sampled by the kernel (a perf_event ring per thread; no signal in the program)".into(),
        "signal-timers" => "sampled by Sonde's signal, raised by per-thread timers".into(),
        "signal-thread" => "sampled by Sonde's signal, sent by its sampler thread".into(),
        "runtime" => "sampled by the runtime's own sampler".into(),
        other => format!("sampled by `{}`", Clean(other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot(seq: u64, last: bool, lost: u64) -> Snapshot {
        Snapshot { seq, last, lost, ..Snapshot::default() }
    }

    #[test]
    fn the_newest_snapshot_is_kept_and_the_last_one_completes_in_any_order() {
        let mut session = Session::default();
        apply(&mut session, snapshot(2, false, 20));
        apply(&mut session, snapshot(1, false, 10));
        assert_eq!(session.latest.as_ref().map(|s| s.lost), Some(20));
        assert!(!session.complete);
        apply(&mut session, snapshot(1, true, 10));
        assert!(session.complete);
        assert_eq!(session.latest.as_ref().map(|s| s.lost), Some(20));
        apply(&mut session, snapshot(3, true, 30));
        assert_eq!(session.latest.as_ref().map(|s| s.lost), Some(30));
    }
}
