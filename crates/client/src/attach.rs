//! `sonde record --pid PID`: loading the agent into a .NET process that is already running,
//! through its runtime's diagnostics IPC (what `dotnet-trace` and `dotnet-counters` talk to).
//!
//! * **Which process** ([`Target::inspect`]): it must exist, run as this user, and run CoreCLR
//!   (`libcoreclr.so` in its memory map). Mono has no attach API; a process with its
//!   diagnostics switched off (`DOTNET_EnableDiagnostics=0`) has no socket. Each case is a
//!   one-line error that says what to do instead.
//! * **Containers**: a process in another mount namespace is seen through `/proc/PID/root`, its
//!   temporary directory read from its own environment (`TMPDIR`, else `/tmp`), and its pid as
//!   it knows itself from `NSpid` (the socket is named after that one). The controller's session
//!   directory and the agent's copy are made there, so the agent finds both under the paths it
//!   sees; the session directory is private (0700) either way.
//! * **The command** ([`attach_profiler`]): the socket
//!   `dotnet-diagnostic-{pid}-{start time}-socket` in that directory; a 20-byte header (magic
//!   `DOTNET_IPC_V1\0`, total size u16, command set, command id, reserved u16), then the
//!   `AttachProfiler` payload (command set 0x03, id 0x01): the timeout (u32, milliseconds — the
//!   runtime only uses it when an attaching profiler waits for a concurrent GC), the CLSID (the
//!   in-memory GUID layout), the agent's path (u32 count of UTF-16 units including the NUL, then
//!   the units) and the client data (u32 length, bytes: the agent's configuration,
//!   [`AgentConfig::to_client_data`](sonde_protocol::AgentConfig::to_client_data)). The runtime
//!   answers after the agent's `ProfilerAttachComplete`, with command set 0xFF, id 0x00 (OK) or
//!   0xFF (error) and an HRESULT. (dotnet/diagnostics, `documentation/design-docs/ipc-protocol.md`.)
//! * **Once per process at a time**: the runtime takes one profiler. A process that loaded one
//!   at start-up (`CORECLR_ENABLE_PROFILING=1`, and the library `CORECLR_PROFILER_PATH` names in
//!   its memory map: every program `sonde record` starts) is refused before anything is sent
//!   ([`Target::startup_profiler`]): the request would load a copy of the agent into it only to
//!   be refused. After a detach, the runtime releases the old profiler in the background (within
//!   about a second); an attach meanwhile is refused as "already active", and retried for a
//!   while when the agent's copy was loaded before this request (the runtime loads the library
//!   before it looks for a profiler, so a copy loaded only by the refused request says nothing).
//! * **Any number of times**: every attach names the same copy of the agent
//!   ([`Target::agent_copy`]), which the runtime finds loaded and hands back; the agent restarts
//!   its session. One loaded agent per process, whatever the attaches.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A running process to attach to.
#[derive(Debug)]
pub struct Target {
    pub pid: u32,
    /// The pid as the process knows itself (its innermost PID namespace): what its socket is
    /// named after, and what its agent reports.
    pub ns_pid: u32,
    /// Its filesystem as seen from here (`/proc/PID/root`).
    root: PathBuf,
    /// Its temporary directory, as it sees it.
    pub tmp: PathBuf,
    /// Its command line, for messages.
    pub command: Vec<String>,
}

/// Why a process cannot be attached to: each message is one line for a user, and says what to do
/// instead where there is something to do.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TargetError {
    #[error("no process with pid {pid}")]
    NoProcess { pid: u32 },
    /// Sonde never attaches across users. `owner`: the process's uid, when it could be read.
    #[error(
        "process {pid} runs as {who}, not as this user (uid {user}): run sonde as the process's user (e.g. `sudo -u USER sonde record --pid {pid}`)",
        who = .owner.map_or_else(|| "another user".to_string(), |u| format!("uid {u}"))
    )]
    OtherUser { pid: u32, owner: Option<u32>, user: u32 },
    #[error("cannot read the memory map of process {pid}: {source}")]
    Maps { pid: u32, source: std::io::Error },
    #[error(
        "process {pid} runs Mono, which has no attach API: start it under sonde instead (`sonde record -- mono …`)"
    )]
    Mono { pid: u32 },
    #[error("process {pid} is not a .NET (CoreCLR) process: no libcoreclr.so in its memory map")]
    NotDotnet { pid: u32 },
    /// Started with `setting=0`, which switches off `what`.
    #[error(
        "process {pid} was started with {setting}=0 ({what} switched off): it cannot be attached to; restart it without that setting, or under sonde (`sonde record -- …`)"
    )]
    DiagnosticsOff { pid: u32, setting: &'static str, what: &'static str },
    /// Started under `sonde record`: its agent was loaded at start-up.
    #[error(
        "process {pid} already has a profiler loaded: Sonde's agent, at start-up (it was started under `sonde record`, which records it); the runtime takes one per process"
    )]
    SondeAtStartup { pid: u32 },
    /// Another profiler (`library`) was loaded at start-up.
    #[error(
        "process {pid} already has a profiler loaded: {library}, at start-up (CORECLR_PROFILER_PATH); the runtime takes one per process"
    )]
    ProfilerAtStartup { pid: u32, library: String },
    #[error(
        "process {pid} has no diagnostics socket in {} (its diagnostics may be off: DOTNET_EnableDiagnostics=0)",
        .tmp.display()
    )]
    NoSocket { pid: u32, tmp: PathBuf },
    #[error("process {pid} already has a profiler loaded (the runtime takes one per process)")]
    ProfilerActive { pid: u32 },
    /// The private directory for the agent's copy in the process's temporary directory is not
    /// this user's alone (see [`Target::agent_copy`]): nothing is loaded.
    #[error("the agent's directory for process {pid}: {source}")]
    AgentDirectory { pid: u32, source: sonde_protocol::trust::TrustError },
    /// The agent's copy could not be made (`path`: what could not be read or written).
    #[error("cannot copy the agent to {}: {source}", .path.display())]
    AgentCopy { path: PathBuf, source: std::io::Error },
    #[error("cannot attach to process {pid}: {source}")]
    Attach { pid: u32, source: AttachError },
}

/// `0x8013136A`: the process has a profiler already (or is still unloading one).
const CORPROF_E_PROFILER_ALREADY_ACTIVE: u32 = 0x8013_136A;

impl Target {
    /// Checks that `pid` is a CoreCLR process of this user's that can be attached to.
    pub fn inspect(pid: u32) -> Result<Target, TargetError> {
        let proc_dir = PathBuf::from(format!("/proc/{pid}"));
        let status = match std::fs::read_to_string(proc_dir.join("status")) {
            Ok(status) => status,
            Err(_) => return Err(TargetError::NoProcess { pid }),
        };
        let field = |name: &str| {
            status.lines().find_map(|l| l.strip_prefix(name)).map(|v| v.split_whitespace().collect::<Vec<_>>())
        };
        let uid = field("Uid:").and_then(|v| v.get(1).and_then(|u| u.parse::<u32>().ok()));
        let user = sonde_protocol::trust::user();
        if uid != Some(user) {
            return Err(TargetError::OtherUser { pid, owner: uid, user });
        }
        let ns_pid = field("NSpid:").and_then(|v| v.last().and_then(|p| p.parse().ok())).unwrap_or(pid);
        let command = read_nul_list(&proc_dir.join("cmdline"));
        let maps =
            std::fs::read_to_string(proc_dir.join("maps")).map_err(|source| TargetError::Maps { pid, source })?;
        let mapped = |name: &str| maps.lines().any(|l| l.rsplit('/').next().is_some_and(|f| f.starts_with(name)));
        if !mapped("libcoreclr.so") {
            if mapped("libmonosgen") || mapped("libmono-") || command.first().is_some_and(|c| crate::launch::is_mono(c))
            {
                return Err(TargetError::Mono { pid });
            }
            return Err(TargetError::NotDotnet { pid });
        }
        let environ = read_nul_list(&proc_dir.join("environ"));
        let var = |name: &str| environ.iter().find_map(|e| e.strip_prefix(name)?.strip_prefix('='));
        for (setting, what) in [
            ("DOTNET_EnableDiagnostics", "its diagnostics"),
            ("COMPlus_EnableDiagnostics", "its diagnostics"),
            ("DOTNET_EnableDiagnostics_IPC", "its diagnostics IPC"),
            ("DOTNET_EnableDiagnostics_Profiler", "profiler attach"),
        ] {
            if var(setting) == Some("0") {
                return Err(TargetError::DiagnosticsOff { pid, setting, what });
            }
        }
        let tmp = var("TMPDIR").filter(|t| t.starts_with('/')).unwrap_or("/tmp");
        let target = Target { pid, ns_pid, root: proc_dir.join("root"), tmp: PathBuf::from(tmp), command };
        if let Some(library) = target.startup_profiler(&environ, &maps) {
            let name = library.rsplit('/').next().unwrap_or(&library);
            if name == crate::launch::AGENT_LIBRARY {
                return Err(TargetError::SondeAtStartup { pid });
            }
            return Err(TargetError::ProfilerAtStartup { pid, library: name.to_string() });
        }
        Ok(target)
    }

    /// The library of the profiler the process loaded at start-up, if it is still mapped:
    /// `CORECLR_ENABLE_PROFILING=1` in its environment, and the file `CORECLR_PROFILER_PATH_64`
    /// or `CORECLR_PROFILER_PATH` names (as the process sees it) in its memory map, matched by
    /// device and inode. A profiler that failed to load, or was unloaded, is not mapped.
    fn startup_profiler(&self, environ: &[String], maps: &str) -> Option<String> {
        use std::os::unix::fs::MetadataExt;
        let var = |name: &str| environ.iter().find_map(|e| e.strip_prefix(name)?.strip_prefix('='));
        if var("CORECLR_ENABLE_PROFILING") != Some("1") {
            return None;
        }
        let named =
            var("CORECLR_PROFILER_PATH_64").or_else(|| var("CORECLR_PROFILER_PATH")).filter(|p| !p.is_empty())?;
        let seen_from_here = if named.starts_with('/') {
            self.host_path(Path::new(named))
        } else {
            PathBuf::from(format!("/proc/{}/cwd", self.pid)).join(named)
        };
        let meta = std::fs::metadata(seen_from_here).ok()?;
        maps.lines().find_map(|line| {
            let mut fields = line.split_whitespace();
            let (dev, inode) = (fields.nth(3)?, fields.next()?.parse::<u64>().ok()?);
            let (major, minor) = dev.split_once(':')?;
            let dev = rustix::fs::makedev(u32::from_str_radix(major, 16).ok()?, u32::from_str_radix(minor, 16).ok()?);
            let path = fields.next()?;
            (inode == meta.ino() && dev == meta.dev()).then(|| path.to_string())
        })
    }

    /// A path of the process's filesystem (absolute, as it sees it), as seen from here.
    pub fn host_path(&self, inside: &Path) -> PathBuf {
        self.root.join(inside.strip_prefix("/").unwrap_or(inside))
    }

    /// The runtime's diagnostics socket (as seen from here). Sockets of earlier processes that
    /// had the same pid may still lie there (a killed runtime leaves its socket behind), so the
    /// one named after this process's start time (`/proc/PID/stat`'s `starttime`, the key the
    /// runtime puts in the name) is taken, else the newest.
    pub fn diagnostics_socket(&self) -> Result<PathBuf, TargetError> {
        let dir = self.host_path(&self.tmp);
        let prefix = format!("dotnet-diagnostic-{}-", self.ns_pid);
        let mut found: Vec<(String, std::time::SystemTime)> = std::fs::read_dir(&dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                let key = name.strip_prefix(&prefix)?.strip_suffix("-socket")?.to_string();
                Some((key, e.metadata().and_then(|m| m.modified()).unwrap_or(std::time::UNIX_EPOCH)))
            })
            .collect();
        found.sort_by_key(|&(_, modified)| std::cmp::Reverse(modified));
        let start = process_start_time(self.pid);
        let chosen = found.iter().find(|(key, _)| start.as_deref() == Some(key.as_str())).or_else(|| found.first());
        match chosen {
            Some((key, _)) => Ok(dir.join(format!("{prefix}{key}-socket"))),
            None => Err(TargetError::NoSocket { pid: self.pid, tmp: self.tmp.clone() }),
        }
    }

    /// The agent's copy for this process, as the process sees it: `sonde-agent-UID/` in its
    /// temporary directory (private, this user's, checked whatever the umask), one file per agent
    /// build (`libsonde_agent-HASH.so`, read-only, made once, whole under another name first).
    ///
    /// **The same path at every attach**, on purpose: a detached agent stays loaded (the agent's
    /// `process::stay_loaded`), and the runtime's `dlopen` of a path already loaded hands back
    /// that library, whose state the agent restarts (its `session::restart`). So a process
    /// holds one loaded copy however often it is attached to — where a fresh copy per attach
    /// each took static TLS of its own, and glibc's reserve ran out after a few.
    pub fn agent_copy(&self, agent: &Path) -> Result<PathBuf, TargetError> {
        use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
        let user = sonde_protocol::trust::user();
        let dir_inside = self.tmp.join(format!("sonde-agent-{user}"));
        let dir = self.host_path(&dir_inside);
        match std::fs::create_dir(&dir) {
            Ok(()) => std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).map_err(failed(&dir))?,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(failed(&dir)(e)),
        }
        sonde_protocol::trust::check_private_dir(&dir)
            .map_err(|source| TargetError::AgentDirectory { pid: self.pid, source })?;
        let bytes = std::fs::read(agent).map_err(failed(agent))?;
        let name = format!("{}-{:016x}.so", crate::launch::AGENT_LIBRARY.trim_end_matches(".so"), build_hash(&bytes));
        let path = dir.join(&name);
        let made = std::fs::symlink_metadata(&path)
            .is_ok_and(|m| m.is_file() && m.uid() == user && m.mode() & 0o222 == 0 && m.len() == bytes.len() as u64);
        if !made {
            let tmp = dir.join(format!(".{name}.{}", std::process::id()));
            let _ = std::fs::remove_file(&tmp);
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o700)
                .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
                .open(&tmp)
                .map_err(failed(&tmp))?;
            file.write_all(&bytes).map_err(failed(&tmp))?;
            file.set_permissions(std::fs::Permissions::from_mode(0o500)).map_err(failed(&tmp))?;
            drop(file);
            std::fs::rename(&tmp, &path).map_err(failed(&path))?;
            remove_unused_copies(&dir, &name);
        }
        Ok(dir_inside.join(name))
    }

    /// Whether the process has the agent at `copy` (as it sees it) loaded: an earlier attach's.
    fn has_loaded(&self, copy: &Path) -> bool {
        let maps = std::fs::read_to_string(format!("/proc/{}/maps", self.pid)).unwrap_or_default();
        maps.lines().filter_map(|l| l.split_whitespace().nth(5)).any(|p| Path::new(p) == copy)
    }

    /// Loads the agent at `agent` (a path as the process sees it) into the process, handing it
    /// `client_data`; returns once the agent is running (its `ProfilerAttachComplete` returned).
    /// A refusal because a profiler is there already is retried for a while when an earlier
    /// attach left this agent loaded there (one that just detached is released in the
    /// background).
    pub fn attach(&self, socket: &Path, agent: &Path, client_data: &[u8]) -> Result<(), TargetError> {
        let pid = self.pid;
        let deadline = Instant::now() + Duration::from_secs(10);
        let loaded_before = self.has_loaded(agent);
        loop {
            match attach_profiler(socket, agent, client_data) {
                Ok(()) => return Ok(()),
                Err(AttachError::Refused(CORPROF_E_PROFILER_ALREADY_ACTIVE))
                    if loaded_before && Instant::now() < deadline =>
                {
                    std::thread::sleep(Duration::from_millis(200));
                }
                Err(AttachError::Refused(CORPROF_E_PROFILER_ALREADY_ACTIVE)) => {
                    return Err(TargetError::ProfilerActive { pid });
                }
                Err(source) => return Err(TargetError::Attach { pid, source }),
            }
        }
    }
}

/// Removes the copies of other agent builds in `dir` (an agent's private directory) that no
/// process has mapped, found by inode in every `/proc/*/maps` this user can read (a process of
/// another mount namespace names the file by another path; a copy kept by mistake costs disk
/// only, one removed by mistake would cost its process a second loaded agent). Once per new
/// build: the directory holds the builds still loaded somewhere, not every build ever used.
fn remove_unused_copies(dir: &Path, keep: &str) {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let prefix = crate::launch::AGENT_LIBRARY.trim_end_matches(".so");
    let others: Vec<(PathBuf, u64)> = entries
        .flatten()
        .filter(|e| e.file_name().to_str().is_some_and(|n| n != keep && n.starts_with(prefix) && n.ends_with(".so")))
        .filter_map(|e| Some((e.path(), e.metadata().ok()?.ino())))
        .collect();
    if others.is_empty() {
        return;
    }
    let mut mapped = std::collections::HashSet::new();
    for process in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(maps) = std::fs::read_to_string(process.path().join("maps")) else { continue };
        mapped.extend(maps.lines().filter_map(|l| l.split_whitespace().nth(4)?.parse::<u64>().ok()));
    }
    for (path, inode) in others {
        if !mapped.contains(&inode) {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// What turns an I/O error on `path` into [`TargetError::AgentCopy`].
fn failed(path: &Path) -> impl FnOnce(std::io::Error) -> TargetError {
    let path = path.to_path_buf();
    move |source| TargetError::AgentCopy { path, source }
}

/// Tells agent builds apart (not a security measure: the directory is private).
fn build_hash(bytes: &[u8]) -> u64 {
    use std::hash::Hasher;
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    hasher.write(bytes);
    hasher.finish()
}

fn read_nul_list(path: &Path) -> Vec<String> {
    std::fs::read(path)
        .map(|b| {
            b.split(|&c| c == 0).filter(|s| !s.is_empty()).map(|s| String::from_utf8_lossy(s).into_owned()).collect()
        })
        .unwrap_or_default()
}

#[derive(Debug, thiserror::Error)]
pub enum AttachError {
    #[error("the diagnostics socket: {0}")]
    Io(#[from] std::io::Error),
    #[error("the runtime refused: HRESULT {hr:#010x}{why}", hr = .0, why = explain(*.0))]
    Refused(u32),
    #[error("the runtime's answer is not a diagnostics IPC reply")]
    BadReply,
    #[error("the attach command does not fit in one diagnostics IPC message")]
    TooLarge,
}

fn explain(hr: u32) -> &'static str {
    match hr {
        0x8013_1368 => " (the profiler refused to attach: see --agent-log)",
        0x8013_135B | 0x8013_1371 => " (the runtime is not fully started yet)",
        0x8013_1515 => " (this runtime was built without attach support)",
        0x8013_1384 => " (bad encoding)",
        0x8007_0002 | 0x8007_007E => " (the runtime cannot load the agent library)",
        _ => "",
    }
}

const MAGIC: &[u8; 14] = b"DOTNET_IPC_V1\0";
const HEADER_LEN: usize = 20;
const PROFILER_COMMANDS: u8 = 0x03;
const ATTACH_PROFILER: u8 = 0x01;
const SERVER: u8 = 0xFF;
const OK: u8 = 0x00;
const ERROR: u8 = 0xFF;
/// What the runtime is told the attach may take (see the module documentation).
const ATTACH_TIMEOUT_MS: u32 = 10_000;

/// Sends `AttachProfiler` for Sonde's CLSID and `agent` and reads the runtime's answer.
fn attach_profiler(socket: &Path, agent: &Path, client_data: &[u8]) -> Result<(), AttachError> {
    let message = encode_attach(ATTACH_TIMEOUT_MS, &clsid_bytes(), agent, client_data)?;
    let mut stream = UnixStream::connect(socket)?;
    // The answer comes once the agent is running: its start-up (connecting to us included).
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    stream.write_all(&message)?;
    let mut reply = [0u8; HEADER_LEN + 4];
    stream.read_exact(&mut reply)?;
    decode_reply(&reply)
}

/// The whole `AttachProfiler` message.
fn encode_attach(timeout_ms: u32, clsid: &[u8; 16], agent: &Path, client_data: &[u8]) -> Result<Vec<u8>, AttachError> {
    let mut payload = Vec::new();
    payload.extend(timeout_ms.to_le_bytes());
    payload.extend(clsid);
    let path: Vec<u16> = agent.to_string_lossy().encode_utf16().chain([0]).collect();
    payload.extend((path.len() as u32).to_le_bytes());
    payload.extend(path.iter().flat_map(|u| u.to_le_bytes()));
    payload.extend((client_data.len() as u32).to_le_bytes());
    payload.extend(client_data);
    let size = u16::try_from(HEADER_LEN + payload.len()).map_err(|_| AttachError::TooLarge)?;
    let mut message = Vec::with_capacity(size as usize);
    message.extend(MAGIC);
    message.extend(size.to_le_bytes());
    message.extend([PROFILER_COMMANDS, ATTACH_PROFILER, 0, 0]);
    message.extend(payload);
    Ok(message)
}

/// The runtime's answer: OK with HRESULT 0, or the HRESULT it refused with.
fn decode_reply(reply: &[u8; HEADER_LEN + 4]) -> Result<(), AttachError> {
    if &reply[..14] != MAGIC || reply[16] != SERVER {
        return Err(AttachError::BadReply);
    }
    let hr = u32::from_le_bytes(reply[20..24].try_into().expect("4 bytes"));
    match reply[17] {
        OK if hr == 0 => Ok(()),
        OK | ERROR => Err(AttachError::Refused(hr)),
        _ => Err(AttachError::BadReply),
    }
}

/// Sonde's CLSID ([`crate::launch::PROFILER_CLSID`]) in the in-memory GUID layout: Data1 (u32),
/// Data2 and Data3 (u16) little-endian, then Data4's 8 bytes as written.
fn clsid_bytes() -> [u8; 16] {
    let hex: String = crate::launch::PROFILER_CLSID.chars().filter(char::is_ascii_hexdigit).collect();
    let byte = |i: usize| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).expect("a valid CLSID constant");
    let mut out = [0u8; 16];
    for (i, o) in out.iter_mut().enumerate() {
        // Bytes 0-3, 4-5 and 6-7 are reversed (little-endian fields); 8-15 as written.
        *o = match i {
            0..4 => byte(3 - i),
            4..6 => byte(9 - i),
            6..8 => byte(13 - i),
            _ => byte(i),
        };
    }
    out
}

/// A process's start time in clock ticks after boot (`/proc/PID/stat`, field 22), as text.
fn process_start_time(pid: u32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // "PID (COMM) STATE …": the command may hold spaces and parentheses; fields restart after
    // the last ')', with the state as field 3.
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(22 - 3).map(str::to_owned)
}

#[cfg(test)]
mod tests {
    #[test]
    fn copies_of_other_builds_go_unless_a_process_maps_them() {
        // Beside this test program, on its file system: a hard link to it is "mapped" (by this
        // very process), the other copy is not.
        let exe = std::env::current_exe().unwrap();
        let dir = tempfile::tempdir_in(exe.parent().unwrap()).unwrap();
        let name = |build: &str| format!("{}-{build}.so", crate::launch::AGENT_LIBRARY.trim_end_matches(".so"));
        std::fs::write(dir.path().join(name("old")), b"unused").unwrap();
        std::fs::hard_link(&exe, dir.path().join(name("loaded"))).unwrap();
        std::fs::write(dir.path().join(name("new")), b"this one").unwrap();
        std::fs::write(dir.path().join("notes.txt"), b"not a copy").unwrap();
        super::remove_unused_copies(dir.path(), &name("new"));
        let mut left: Vec<String> =
            std::fs::read_dir(dir.path()).unwrap().flatten().map(|e| e.file_name().into_string().unwrap()).collect();
        left.sort();
        assert_eq!(left, [name("loaded"), name("new"), "notes.txt".to_string()]);
    }

    use super::*;

    #[test]
    fn the_clsid_has_the_guid_layout() {
        assert_eq!(
            clsid_bytes(),
            [0x4A, 0x6C, 0x2B, 0x9E, 0x0F, 0x5D, 0x8B, 0x4E, 0xA1, 0xC3, 0x7F, 0x5D, 0x2E, 0x9B, 0x0A, 0x61]
        );
    }

    #[test]
    fn the_attach_message_is_laid_out_as_the_runtime_parses_it() {
        let m = encode_attach(5000, &[7; 16], Path::new("/a/é"), b"K=V\0").unwrap();
        assert_eq!(&m[..14], b"DOTNET_IPC_V1\0");
        assert_eq!(u16::from_le_bytes([m[14], m[15]]) as usize, m.len());
        assert_eq!(&m[16..20], [0x03, 0x01, 0, 0]);
        assert_eq!(&m[20..24], 5000u32.to_le_bytes());
        assert_eq!(&m[24..40], [7; 16]);
        // "/a/é" + NUL: 5 UTF-16 units.
        assert_eq!(&m[40..44], 5u32.to_le_bytes());
        let units: Vec<u16> = m[44..54].chunks(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect();
        assert_eq!(units, [0x2F, 0x61, 0x2F, 0xE9, 0]);
        assert_eq!(&m[54..58], 4u32.to_le_bytes());
        assert_eq!(&m[58..], b"K=V\0");
        assert!(matches!(encode_attach(0, &[0; 16], Path::new("/x"), &[0; 70_000]), Err(AttachError::TooLarge)));
    }

    #[test]
    fn replies_are_decoded() {
        let reply = |id: u8, hr: u32| {
            let mut r = [0u8; 24];
            r[..14].copy_from_slice(MAGIC);
            r[14..16].copy_from_slice(&24u16.to_le_bytes());
            r[16] = 0xFF;
            r[17] = id;
            r[20..24].copy_from_slice(&hr.to_le_bytes());
            r
        };
        assert!(decode_reply(&reply(0x00, 0)).is_ok());
        assert!(matches!(decode_reply(&reply(0xFF, 0x8013_136A)), Err(AttachError::Refused(0x8013_136A))));
        assert!(matches!(decode_reply(&reply(0x00, 0x8000_4005)), Err(AttachError::Refused(0x8000_4005))));
        assert!(matches!(decode_reply(&reply(0x01, 0)), Err(AttachError::BadReply)));
        let mut bad = reply(0x00, 0);
        bad[0] = b'X';
        assert!(matches!(decode_reply(&bad), Err(AttachError::BadReply)));
    }

    #[test]
    fn a_missing_process_is_one_line() {
        let e = Target::inspect(u32::MAX - 1).unwrap_err();
        assert!(matches!(e, TargetError::NoProcess { pid } if pid == u32::MAX - 1), "{e:?}");
        assert_eq!(e.to_string(), format!("no process with pid {}", u32::MAX - 1));
    }

    #[test]
    fn a_process_without_coreclr_is_not_dotnet() {
        let e = Target::inspect(std::process::id()).unwrap_err();
        assert!(matches!(e, TargetError::NotDotnet { .. }), "{e:?}");
        assert!(e.to_string().contains("is not a .NET (CoreCLR) process"), "{e}");
    }
}
