//! Whether the agent runs, in which mode, and how its own code runs: behind the one panic policy,
//! on threads of its own.
//!
//! A panic in any agent code the runtime calls switches profiling off ([`disable`]): the profile
//! is lost, the program is not. The CoreCLR and Mono wrappers (`sonde-clr`, `sonde-mono`) catch
//! panics at their boundary and call the backend's `disable`, which is this one; the hooks' slow
//! paths run behind [`guarded`], the agent's threads behind [`spawn_thread`].

use sonde_profile::Mode;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering::Relaxed};

/// Cleared by the first panic, a failed start or the end of a session: the agent then does
/// nothing more until a session starts again.
static ENABLED: AtomicBool = AtomicBool::new(true);
/// The running session's mode ([`mode_code`]); 0 while none runs.
static MODE: AtomicU8 = AtomicU8::new(0);
/// What [`disable`] does once profiling is off: tell the controller (set by the session).
static ON_DISABLE: OnceLock<fn()> = OnceLock::new();

/// Signals after which the runtime will not call `Shutdown` (see `signals`): the agent's own
/// threads block them, so that a last-chance handler never waits for the thread it interrupted.
/// SIGTERM stays last (`signals::install` leaves it out on CoreCLR).
pub const LAST_CHANCE_SIGNALS: [libc::c_int; 5] =
    [libc::SIGINT, libc::SIGQUIT, libc::SIGABRT, libc::SIGHUP, libc::SIGTERM];

/// False once profiling was switched off (a panic, a failed start, the session's end).
#[inline(always)]
pub fn enabled() -> bool {
    ENABLED.load(Relaxed)
}

/// The running session's mode (None before it started, and once profiling was switched off).
#[inline]
pub fn mode() -> Option<Mode> {
    if !enabled() {
        return None;
    }
    match MODE.load(Relaxed) {
        1 => Some(Mode::Tracing),
        2 => Some(Mode::Sampling),
        3 => Some(Mode::Coverage),
        _ => None,
    }
}

/// A session started in `mode` (None: it ended, or did not start).
pub fn set_mode(mode: Option<Mode>) {
    let code = match mode {
        None => 0,
        Some(Mode::Tracing) => 1,
        Some(Mode::Sampling) => 2,
        Some(Mode::Coverage) => 3,
    };
    MODE.store(code, Relaxed);
}

/// Switches profiling on again for a new session (an agent attached again: see `session`).
pub fn enable() {
    ENABLED.store(true, Relaxed);
}

/// Switches profiling off without a word: a failed start (already logged), the end of a
/// session, or a child the program forked (no log, no message there: their locks may be held;
/// see `process::claim_session`).
pub fn switch_off_quietly() {
    ENABLED.store(false, Relaxed);
}

/// Sets what [`disable`] does after switching profiling off (once: the session's log line and
/// notice to the controller; this file uses nothing else of the agent's, not even the log).
pub fn on_disable(notify: fn()) {
    let _ = ON_DISABLE.set(notify);
}

/// Switches profiling off after a panic: the one policy for every backend.
#[cold]
pub fn disable() {
    if !ENABLED.swap(false, Relaxed) {
        return;
    }
    if let Some(notify) = ON_DISABLE.get() {
        notify();
    }
}

/// Runs `f` unless profiling was switched off; a panic is caught (it must never unwind into the
/// runtime) and switches profiling off.
#[inline(always)]
pub fn guarded<R>(default: R, f: impl FnOnce() -> R) -> R {
    if !enabled() {
        return default;
    }
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(_) => {
            disable();
            default
        }
    }
}

/// Starts one of the agent's own threads. It blocks the last-chance signals first (a handler
/// never waits for the thread it interrupted), and a panic in it switches profiling off
/// ([`disable`], which tells the controller) instead of ending the thread without a word.
pub fn spawn_thread(name: &str, body: impl FnOnce() + Send + 'static) -> std::io::Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new().name(name.into()).spawn(move || {
        block_last_chance_signals();
        if catch_unwind(AssertUnwindSafe(body)).is_err() {
            disable();
        }
    })
}

/// Blocks [`LAST_CHANCE_SIGNALS`] on the calling thread.
fn block_last_chance_signals() {
    // SAFETY: plain libc calls on a local, fully initialised signal set.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for sig in LAST_CHANCE_SIGNALS {
            libc::sigaddset(&mut set, sig);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
}
