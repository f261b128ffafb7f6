//! Facts about the profiled process the agent needs in several places: its command line, and
//! whether this is the process that opened the session.
//!
//! A child the program forks inherits the socket, the agent's threads' locks in whatever state
//! they were (its threads are not), and the runtime's exit callbacks: it must stay silent
//! ([`forked_child`]), or two processes would write one stream.

use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

/// The process that opened the session (0: none yet).
static OWNER: AtomicU32 = AtomicU32::new(0);

/// The session was opened by this process.
pub fn claim_session() {
    OWNER.store(std::process::id(), Relaxed);
}

/// True in a child forked by the profiled process (a copy of the agent whose session is its
/// parent's). Async-signal-safe.
pub fn forked_child() -> bool {
    let owner = OWNER.load(Relaxed);
    // SAFETY: getpid(2) has no preconditions (and is async-signal-safe).
    owner != 0 && owner != unsafe { libc::getpid() } as u32
}

/// The process's own command line (`/proc/self/cmdline`), for the handshake.
pub fn command_line() -> Vec<String> {
    std::fs::read("/proc/self/cmdline")
        .map(|bytes| {
            bytes
                .split(|&b| b == 0)
                .filter(|s| !s.is_empty())
                .map(|s| String::from_utf8_lossy(s).into_owned())
                .collect()
        })
        .unwrap_or_default()
}
