//! The control socket of a running recording, and its clients (`sonde sessions`, `sonde
//! snapshot`, `sonde stop`, `sonde pause`, `sonde resume`).
//!
//! Every recording listens on `<registry>/<id>.sock`, where the id is the recording `sonde`'s own
//! pid and the registry a private directory of the user's: `$XDG_RUNTIME_DIR/sonde` when there is
//! one, else `<tmp>/sonde-control-<uid>` — created 0700 whatever the umask, and checked (owner,
//! mode, not a symlink) by both ends before use, as the agent's session directory is. Each end
//! also checks the other's uid through `SO_PEERCRED`. A socket whose recording is gone (its pid
//! no longer runs) is removed by the next `sonde sessions`.
//!
//! One request per connection ([`ControlRequest`]), one reply ([`ControlReply`]), framed as the
//! agent channel is. A recording answers through [`serve`]: its status, `stop`, `pause` and
//! `resume` here, a snapshot through the caller (where and how a profile is written is its own).

use crate::collector::Agents;
use sonde_profile::Mode;
use sonde_protocol::control::{CONTROL_VERSION, ControlCommand, ControlReply, ControlRequest, SessionStatus};
use sonde_protocol::trust::{self, TrustError};
use sonde_protocol::{FrameError, read_frame, write_frame};
use std::io::Write;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How long either end waits for the other's message (a snapshot takes a moment).
const PATIENCE: Duration = Duration::from_secs(30);

/// Why a control request got no answer, or which session to ask could not be chosen.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ControlError {
    /// The registry directory cannot be made or read, or the connection failed midway.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error("no recording session {id} (see `sonde sessions`)")]
    NoSession { id: u32 },
    #[error("the control socket of session {id} is not trusted: {source}")]
    Untrusted { id: u32, source: TrustError },
    /// The peer is not this user's.
    #[error(transparent)]
    Peer(#[from] TrustError),
    #[error("session {id} does not answer: {source}")]
    NotAnswering { id: u32, source: std::io::Error },
    #[error(transparent)]
    Request(#[from] FrameError),
    #[error("session {id} did not answer: {source}")]
    NoAnswer { id: u32, source: FrameError },
    #[error("no recording session is running (start one with `sonde record`)")]
    NoneRunning,
    /// Several sessions run: `--session` must say which.
    #[error(
        "{} recording sessions are running ({}): choose one with --session ID",
        .ids.len(),
        .ids.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
    )]
    Several { ids: Vec<u32> },
}

/// The registry directory (created if missing), checked private.
pub fn registry() -> std::io::Result<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let dir = match crate::collector::runtime_dir() {
        Some(runtime) => runtime.join("sonde"),
        None => std::env::temp_dir().join(format!("sonde-control-{}", trust::user())),
    };
    match std::fs::create_dir(&dir) {
        Ok(()) => std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))?,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    trust::check_private_dir(&dir).map_err(std::io::Error::other)?;
    Ok(dir)
}

fn socket_path(registry: &Path, id: u32) -> PathBuf {
    registry.join(format!("{id}.sock"))
}

/// A recording's control socket; removed when dropped.
pub struct ControlServer {
    path: PathBuf,
    pub id: u32,
}

impl Drop for ControlServer {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

impl ControlServer {
    /// Listens for control requests, answering each with `handler` on a thread of its own (one
    /// request at a time).
    pub fn start(handler: impl Fn(ControlCommand) -> ControlReply + Send + 'static) -> std::io::Result<ControlServer> {
        let id = std::process::id();
        let path = socket_path(&registry()?, id);
        // Ours by construction: a socket of an earlier process with our pid, which is gone.
        let _ = std::fs::remove_file(&path);
        let listener = UnixListener::bind(&path)?;
        std::thread::Builder::new().name("sonde-control".into()).spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                if let Err(e) = trust::check_peer(&stream) {
                    crate::note!("sonde: refused a connection to the control socket: {e}");
                    continue;
                }
                let _ = stream.set_read_timeout(Some(PATIENCE));
                let _ = stream.set_write_timeout(Some(PATIENCE));
                let reply = match read_frame::<ControlRequest>(&mut stream) {
                    Ok(request) if request.version == CONTROL_VERSION => handler(request.command),
                    Ok(request) => ControlReply::Error(format!(
                        "this recording speaks control protocol {CONTROL_VERSION}, the client {}",
                        request.version
                    )),
                    Err(e) => ControlReply::Error(format!("bad request: {e}")),
                };
                let _ = write_frame(&mut stream, &reply);
            }
        })?;
        Ok(ControlServer { path, id })
    }
}

/// What a recording's control socket needs to know about it ([`serve`]).
pub struct Served {
    pub agents: Agents,
    pub pid: u32,
    /// The pid the agent reports (its own PID namespace's).
    pub ns_pid: u32,
    pub command: Vec<String>,
    pub mode: Mode,
    pub attached: bool,
    /// Where its profile goes (absolute).
    pub output: PathBuf,
}

impl Served {
    /// What `recording` is, writing its profile to `output`.
    pub fn of(recording: &crate::Recording, output: &Path) -> Served {
        Served {
            agents: recording.agents(),
            pid: recording.pid(),
            ns_pid: recording.ns_pid(),
            command: recording.command().to_vec(),
            mode: recording.mode(),
            attached: recording.attached(),
            output: std::path::absolute(output).unwrap_or_else(|_| output.to_path_buf()),
        }
    }
}

/// Opens the control socket of a recording and answers it: `status`; `snapshot` through `write`
/// (the recording, the file asked for, `--force`, `--heap`; the line to answer with, or why not); `stop`,
/// which sets `stop` and writes to `wake` (the recording's watch wakes: see
/// [`crate::Watch::wake`]); `pause` and `resume` (sampling only). `served` is filled in once the
/// process runs; until then requests are answered with an error.
pub fn serve(
    served: Arc<OnceLock<Served>>,
    stop: Arc<AtomicBool>,
    wake: Option<UnixStream>,
    write: impl Fn(&Served, &Path, bool, bool) -> Result<String, String> + Send + 'static,
) -> std::io::Result<ControlServer> {
    let paused = AtomicBool::new(false);
    let started_unix_ms = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
    ControlServer::start(move |command: ControlCommand| {
        let Some(served) = served.get() else {
            return ControlReply::Error("the recording is starting; try again".into());
        };
        match command {
            ControlCommand::Status => ControlReply::Status(SessionStatus {
                id: std::process::id(),
                pid: served.pid,
                command: served.command.clone(),
                mode: served.mode,
                attached: served.attached,
                paused: paused.load(Ordering::Relaxed),
                output: served.output.clone(),
                started_unix_ms,
            }),
            ControlCommand::Snapshot { to, force, heap } => match write(served, &to, force, heap) {
                Ok(line) => ControlReply::Done(line),
                Err(why) => ControlReply::Error(why),
            },
            ControlCommand::Stop => {
                stop.store(true, Ordering::Relaxed);
                if let Some(mut wake) = wake.as_ref() {
                    let _ = wake.write_all(b"s");
                }
                ControlReply::Done(format!("stopping the recording of process {}", served.pid))
            }
            ControlCommand::Pause | ControlCommand::Resume if served.mode != Mode::Sampling => ControlReply::Error(
                "pause and resume apply to sampling; this session traces (its enter/leave pairs must stay balanced)"
                    .into(),
            ),
            ControlCommand::Pause | ControlCommand::Resume => {
                let pause = command == ControlCommand::Pause;
                paused.store(pause, Ordering::Relaxed);
                served.agents.pause_agents(pause);
                ControlReply::Done(format!("{} process {}", if pause { "paused" } else { "resumed" }, served.pid))
            }
        }
    })
}

/// Sends `command` to recording `id` and returns its reply.
pub fn send(id: u32, command: ControlCommand) -> Result<ControlReply, ControlError> {
    let path = socket_path(&registry()?, id);
    trust::check_socket(&path).map_err(|e| match e {
        TrustError::Inspect { .. } => ControlError::NoSession { id },
        source => ControlError::Untrusted { id, source },
    })?;
    let mut stream = UnixStream::connect(&path).map_err(|source| ControlError::NotAnswering { id, source })?;
    trust::check_peer(&stream)?;
    stream.set_read_timeout(Some(PATIENCE))?;
    stream.set_write_timeout(Some(PATIENCE))?;
    write_frame(&mut stream, &ControlRequest { version: CONTROL_VERSION, command })?;
    read_frame::<ControlReply>(&mut stream).map_err(|source| ControlError::NoAnswer { id, source })
}

/// The running sessions, by id; sockets left by recordings that no longer run are removed.
pub fn sessions() -> Result<Vec<SessionStatus>, ControlError> {
    let registry = registry()?;
    let mut found = Vec::new();
    for entry in std::fs::read_dir(&registry)?.flatten() {
        let name = entry.file_name();
        let Some(id) = name.to_str().and_then(|n| n.strip_suffix(".sock")).and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        if !Path::new(&format!("/proc/{id}")).exists() {
            let _ = std::fs::remove_file(entry.path());
            continue;
        }
        if let Ok(ControlReply::Status(status)) = send(id, ControlCommand::Status) {
            found.push(status);
        }
    }
    found.sort_by_key(|s| s.id);
    Ok(found)
}

/// `id`, or the one running session when `id` is `None`.
pub fn choose(id: Option<u32>) -> Result<u32, ControlError> {
    if let Some(id) = id {
        return Ok(id);
    }
    let sessions = sessions()?;
    match sessions.as_slice() {
        [one] => Ok(one.id),
        [] => Err(ControlError::NoneRunning),
        many => Err(ControlError::Several { ids: many.iter().map(|s| s.id).collect() }),
    }
}
