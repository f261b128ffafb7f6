//! The agent's end of the IPC channel: handshake at start-up, then a thread that answers the
//! controller's snapshot requests. The final snapshot is sent from the runtime's shutdown callback.
//!
//! The agent must never block the program on the controller: the handshake and every write have
//! timeouts, and if the controller goes away the agent just stops sending.
//!
//! The session belongs to the process that opened it: a forked child stays silent
//! (`process::forked_child`), or two processes would write one stream.

use crate::ipc::snapshot::{self, SnapshotContext};
use crate::tree::methods::methods;
use sonde_protocol::{AgentMessage, ControllerMessage, Hello, read_frame, write_frame};
use std::io::BufReader;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use std::time::Duration;

const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);
const WRITE_TIMEOUT: Duration = Duration::from_secs(10);

pub struct Link {
    state: Mutex<LinkState>,
}

struct LinkState {
    stream: Option<UnixStream>,
    methods_sent: usize,
    seq: u64,
}

/// What snapshots carry besides the trees (fixed at start-up).
#[derive(Clone, Copy)]
pub struct SnapshotFacts {
    pub sample_interval_ns: u64,
    /// Exact timing: snapshots carry the hook cost, re-measured each time (`calibration::measure_cost`).
    pub exact_timing: bool,
    /// Sampling mode: pending samples are drained into the trees first, and counts are reported.
    pub sampling: bool,
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
    pub fn connect(socket: &Path, hello: Hello) -> Result<Link, LinkError> {
        let mut stream = UnixStream::connect(socket)
            .map_err(|source| LinkError::Connect { socket: socket.to_path_buf(), source })?;
        // Who listens is checked by the kernel's word (SO_PEERCRED), not by the path: the path
        // may have been replaced between the session's checks and this connection.
        sonde_protocol::trust::check_peer(&stream).map_err(LinkError::Peer)?;
        stream.set_read_timeout(Some(HANDSHAKE_TIMEOUT)).map_err(LinkError::Timeouts)?;
        stream.set_write_timeout(Some(WRITE_TIMEOUT)).map_err(LinkError::Timeouts)?;
        write_frame(&mut stream, &AgentMessage::Hello(hello)).map_err(|e| LinkError::Handshake(e.to_string()))?;
        match read_frame::<ControllerMessage>(&mut stream) {
            Ok(ControllerMessage::Welcome { .. }) => {}
            Ok(ControllerMessage::Reject { reason }) => return Err(LinkError::Refused(reason)),
            Ok(other) => return Err(LinkError::Handshake(format!("unexpected answer: {other:?}"))),
            Err(e) => return Err(LinkError::Handshake(e.to_string())),
        }
        stream.set_read_timeout(None).map_err(LinkError::Timeouts)?;
        crate::process::claim_session();
        Ok(Link { state: Mutex::new(LinkState { stream: Some(stream), methods_sent: 0, seq: 0 }) })
    }

    /// Serves snapshot requests until the controller hangs up.
    pub fn serve(&'static self, facts: SnapshotFacts) -> std::io::Result<()> {
        let reader = match self.lock().stream.as_ref() {
            Some(stream) => stream.try_clone()?,
            None => return Ok(()),
        };
        std::thread::Builder::new().name("sonde-ipc".into()).spawn(move || {
            crate::signals::block_on_this_thread();
            let mut reader = BufReader::new(reader);
            while let Ok(ControllerMessage::RequestSnapshot) = read_frame::<ControllerMessage>(&mut reader) {
                if !self.send_snapshot(facts, false) {
                    break;
                }
            }
        })?;
        Ok(())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, LinkState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sends a snapshot; false once the link is gone.
    pub fn send_snapshot(&self, facts: SnapshotFacts, last: bool) -> bool {
        // Before any lock: a forked child's copy may be held by a thread it does not have.
        if crate::process::forked_child() {
            return false;
        }
        let mut state = self.lock();
        if state.stream.is_none() {
            return false;
        }
        if facts.sampling {
            crate::sampling::drain();
        }
        let (new_methods, methods_total) = methods().since(state.methods_sent);
        state.seq += 1;
        let message = AgentMessage::Snapshot(snapshot::take(SnapshotContext {
            seq: state.seq,
            last,
            sample_interval_ns: facts.sample_interval_ns,
            hook_cost_ticks: facts
                .exact_timing
                .then(crate::calibration::measure_cost)
                .flatten()
                .map(|cost| (cost.inner_ticks, cost.outer_ticks)),
            new_methods,
            sampling: facts.sampling,
        }));
        let Some(stream) = state.stream.as_mut() else { return false };
        match write_frame(stream, &message) {
            Ok(()) => {
                state.methods_sent = methods_total;
                if last {
                    state.stream = None;
                }
                true
            }
            Err(e) => {
                crate::log::log!("lost the controller: {e}");
                state.stream = None;
                false
            }
        }
    }

    pub fn send_error(&self, message: String) {
        if crate::process::forked_child() {
            return;
        }
        if let Some(stream) = self.lock().stream.as_mut() {
            let _ = write_frame(stream, &AgentMessage::Error(message));
        }
    }
}
