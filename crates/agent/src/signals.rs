//! Last-chance snapshots for a process that dies without shutting its runtime down.
//!
//! The runtime's `Shutdown` callback is where the agent sends its final snapshot, but two common
//! ends skip it: an unhandled exception (the runtime calls `abort()`: SIGABRT), Ctrl-C (.NET
//! re-raises SIGINT with the default action when no handler cancels it) and a hang-up (SIGHUP). For those signals the
//! agent installs a handler that asks the snapshot thread for one more snapshot, waits for it (at
//! most [`WAIT`]) and then hands the signal to whatever handler was there before — so the
//! program's own signal behaviour, and its exit status, stay what they were.
//!
//! The handler does only async-signal-safe things: an atomic add, `write` to a pipe, `nanosleep`,
//! and the chaining. The snapshot is built on an ordinary thread, which (like every agent thread)
//! blocks these signals so a handler never waits for the thread it interrupted.

use crate::base::running::{self, LAST_CHANCE_SIGNALS};
use std::sync::Mutex;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering::SeqCst};
use std::time::Duration;
use std::time::Instant;

/// Signals after which the runtime will not call `Shutdown`: SIGHUP (the terminal closed, or
/// `sonde` passing on its own) ends a .NET program at once on both runtimes. SIGTERM is one of
/// them only on runtimes that leave it at its default action (Mono: the process just dies), see
/// [`install`]; CoreCLR handles SIGTERM itself and shuts down cleanly. Every agent thread blocks
/// them (`running::spawn_thread`).
const SIGNALS: [libc::c_int; 5] = LAST_CHANCE_SIGNALS;
/// Longest a dying process is held back for its snapshot.
const WAIT: Duration = Duration::from_secs(1);

/// Shortest time between two snapshots the snapshot thread takes on request.
const MIN_GAP: Duration = Duration::from_millis(20);
/// See [`exception_thrown`]: about 2 ms of snapshot work.
const SYNC_SNAPSHOT_NODES: u64 = 20_000;
/// See [`exception_thrown`].
const EXCEPTION_GAP: Duration = Duration::from_millis(200);

/// The last-chance snapshots' state, one per process: the handlers read and write only its atomics
/// (async-signal-safe); the snapshot thread owns the pipe's other end. `requested` and `sent` count
/// the snapshots asked for and sent: a handler waits (at most [`WAIT`]) until `sent` reaches its
/// ticket.
struct LastChance {
    pipe_write: AtomicI32,
    /// A request is waiting for the snapshot thread (requests coalesce).
    pending: AtomicBool,
    last_exception_snapshot: Mutex<Option<Instant>>,
    requested: AtomicU64,
    sent: AtomicU64,
    /// SIGABRT arrived: the process is dying of it, whatever happens next (see [`aborting`]).
    aborting: AtomicBool,
    previous: [OnceLock<libc::sigaction>; 5],
}

static LAST_CHANCE: LastChance = LastChance {
    pipe_write: AtomicI32::new(-1),
    pending: AtomicBool::new(false),
    last_exception_snapshot: Mutex::new(None),
    requested: AtomicU64::new(0),
    sent: AtomicU64::new(0),
    aborting: AtomicBool::new(false),
    previous: [const { OnceLock::new() }; 5],
};

/// Starts the snapshot thread (running `snapshot` on request) and installs the handlers for
/// SIGINT, SIGQUIT, SIGABRT and SIGHUP, and SIGTERM with `sigterm` (for a runtime that leaves SIGTERM at
/// its default action).
pub fn install(sigterm: bool, snapshot: impl Fn() + Send + 'static) -> std::io::Result<()> {
    let signals = if sigterm { &SIGNALS[..] } else { &SIGNALS[..SIGNALS.len() - 1] };
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let [read_fd, write_fd] = fds;
    running::spawn_thread("sonde-signal", move || {
        let mut byte = 0u8;
        // SAFETY: reads one byte into a local from a descriptor this thread owns.
        while unsafe { libc::read(read_fd, (&raw mut byte).cast(), 1) } == 1 {
            LAST_CHANCE.pending.store(false, SeqCst);
            let ticket = LAST_CHANCE.requested.load(SeqCst);
            snapshot();
            LAST_CHANCE.sent.fetch_max(ticket, SeqCst);
            // Requests that arrive meanwhile coalesce into the next snapshot; this bounds how
            // often an exception-heavy program pays for one.
            std::thread::sleep(MIN_GAP);
        }
    })?;
    LAST_CHANCE.pipe_write.store(write_fd, SeqCst);
    for (i, &sig) in SIGNALS.iter().enumerate().filter(|(_, sig)| signals.contains(sig)) {
        // SAFETY: installs `handler` (async-signal-safe, see the module docs) with the flags its
        // signature needs, saving the previous action for chaining; both structs are local or
        // static and fully initialised.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = handler as *const () as libc::sighandler_t;
            // Not SA_ONSTACK: a runtime's fault handler may be using the alternate stack (see
            // `sampling::signal::handler`), and these handlers do not run out of stack.
            action.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            let mut previous: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(sig, &action, &mut previous) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            let _ = LAST_CHANCE.previous[i].set(previous);
        }
    }
    Ok(())
}

/// Asks the snapshot thread for a snapshot, without waiting (coalesced with pending requests).
pub fn request_snapshot() {
    if crate::base::process::forked_child() {
        return;
    }
    if LAST_CHANCE.pending.swap(true, SeqCst) {
        return;
    }
    let fd = LAST_CHANCE.pipe_write.load(SeqCst);
    if fd >= 0 {
        let byte = 1u8;
        // SAFETY: write(2) of one byte from a local to our pipe.
        unsafe { libc::write(fd, (&raw const byte).cast(), 1) };
    }
}

/// The program threw an exception: it may be about to die of it without the runtime's shutdown
/// notification (CoreCLR aborts on an unhandled exception, after resetting the signal handlers;
/// Mono calls `exit`). The first exception after a quiet period ([`EXCEPTION_GAP`]) runs
/// `send_now` on the throwing thread, so the data is out before the process can go — but only
/// while the call trees are small ([`SYNC_SNAPSHOT_NODES`]): the callback runs where the runtime
/// cannot collect garbage, so every thread that allocates waits for it, and its cost must stay
/// bounded (a few milliseconds at most; the snapshot is built here but written by the link's
/// writer thread, and waited for only while the controller reads — `ipc::link::Patience::THROW`).
/// Otherwise, and for later exceptions, the snapshot
/// thread is only asked ([`request_snapshot`]), and the throwing thread goes on at once. A crash
/// right after then keeps what the last snapshot held (the controller asks for one every
/// second).
pub fn exception_thrown(send_now: impl FnOnce()) {
    if crate::base::process::forked_child() {
        return;
    }
    let mut last = LAST_CHANCE.last_exception_snapshot.lock().unwrap_or_else(|e| e.into_inner());
    if last.is_some_and(|t| t.elapsed() < EXCEPTION_GAP) || crate::tree::threads::total_nodes() > SYNC_SNAPSHOT_NODES {
        drop(last);
        request_snapshot();
        return;
    }
    *last = Some(Instant::now());
    drop(last);
    send_now();
}

extern "C" fn handler(sig: libc::c_int, info: *mut libc::siginfo_t, context: *mut libc::c_void) {
    if crate::base::process::forked_child() {
        // The pipe leads to the parent's snapshot thread: nothing to wait for here.
        chain(sig, info, context);
        return;
    }
    if sig == libc::SIGABRT {
        LAST_CHANCE.aborting.store(true, SeqCst);
    }
    let ticket = LAST_CHANCE.requested.fetch_add(1, SeqCst) + 1;
    let fd = LAST_CHANCE.pipe_write.load(SeqCst);
    if fd >= 0 {
        let byte = 1u8;
        // SAFETY: write(2) is async-signal-safe; one byte from a local.
        unsafe { libc::write(fd, (&raw const byte).cast(), 1) };
        let step = libc::timespec { tv_sec: 0, tv_nsec: 1_000_000 };
        for _ in 0..WAIT.as_millis() {
            if LAST_CHANCE.sent.load(SeqCst) >= ticket {
                break;
            }
            // SAFETY: nanosleep(2) is async-signal-safe.
            unsafe { libc::nanosleep(&step, std::ptr::null_mut()) };
        }
    }
    chain(sig, info, context);
}

/// SIGABRT reached the process: `abort()` does not return, so the process is dying of it — even
/// if what runs after our handler ends it otherwise (Mono's sampler asserts in its crash handler
/// and the process exits with status 0). Snapshots carry it, so the controller reports the real
/// death.
pub fn aborting() -> bool {
    LAST_CHANCE.aborting.load(SeqCst)
}

/// Gives the signal to the handler that was installed before ours.
fn chain(sig: libc::c_int, info: *mut libc::siginfo_t, context: *mut libc::c_void) {
    let Some(previous) = SIGNALS.iter().position(|&s| s == sig).and_then(|i| LAST_CHANCE.previous[i].get()) else {
        return;
    };
    forward(previous, sig, info, context);
}

/// Hands a signal to the action that was installed before ours, as if ours were not there: a
/// default action is restored and the signal raised again (it takes effect when the current
/// handler returns: the signal is blocked while it runs). Async-signal-safe.
pub fn forward(previous: &libc::sigaction, sig: libc::c_int, info: *mut libc::siginfo_t, context: *mut libc::c_void) {
    match previous.sa_sigaction {
        libc::SIG_IGN => {}
        libc::SIG_DFL => {
            // SAFETY: signal(2) and raise(3) are async-signal-safe.
            unsafe {
                libc::signal(sig, libc::SIG_DFL);
                libc::raise(sig);
            }
        }
        f if previous.sa_flags & libc::SA_SIGINFO != 0 => {
            // SAFETY: the previous handler was installed with SA_SIGINFO, so it has this signature.
            let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                unsafe { std::mem::transmute(f) };
            f(sig, info, context);
        }
        f => {
            // SAFETY: the previous handler was installed without SA_SIGINFO: a one-argument handler.
            let f: extern "C" fn(libc::c_int) = unsafe { std::mem::transmute(f) };
            f(sig);
        }
    }
}
