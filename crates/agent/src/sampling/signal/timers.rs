//! Per-thread CPU-time timers for `--clock cpu`: a `perf_event_open` task-clock event per sampled
//! thread, whose overflow after each interval of the thread's CPU time raises the sampling signal
//! on that thread itself (`F_SETOWN_EX` to the thread, `F_SETSIG` to our signal). The kernel does
//! what the sampler thread would: no wake-ups, no clock reads of other threads, no signal sends
//! (`docs/SAMPLING.md`, "Per-thread timers").
//!
//! - **User mode only** (`exclude_kernel`): the event still counts the thread's whole CPU time,
//!   but an overflow that comes while the thread is in the kernel is skipped, so the signal is
//!   always raised on a thread running its own code — never in a system call it would cut short
//!   with `EINTR` — and `perf_event_paranoid` up to 2 allows it for a process's own threads
//!   without privileges. The handler weights each sample by the thread's CPU clock, so the time
//!   of the skipped overflows is not lost: it goes to the next sample.
//! - **One signal at a time**: each event is armed for a single overflow
//!   (`PERF_EVENT_IOC_REFRESH` with 1) and the handler re-arms it; an event whose thread ended,
//!   or whose signal is blocked, stays disarmed.
//! - **Which thread**: the signal carries the event's file descriptor; [`token_of`] maps it back
//!   to the slot (a fixed table, no lock).
//!
//! The `fcntl` and `siginfo` numbers are declared here; the event's own ABI in `perf_event`.

use std::sync::atomic::{AtomicUsize, Ordering::*};

use crate::sampling::perf_event;

// <asm-generic/fcntl.h>, <asm-generic/siginfo.h> (the event's own ABI: `perf_event`).
const F_SETSIG: libc::c_int = 10;
const F_SETOWN_EX: libc::c_int = 15;
const F_OWNER_TID: libc::c_int = 0;
const POLL_IN: libc::c_int = 1;
const POLL_HUP: libc::c_int = 6;

#[repr(C)]
struct OwnerEx {
    kind: libc::c_int,
    pid: libc::pid_t,
}

/// File descriptors below this can route a signal ([`ROUTES`]); an event opened above it is
/// closed again and its thread is polled by the sampler thread instead.
const MAX_FD: usize = 1 << 16;
/// By file descriptor: the slot token of the thread its event samples, plus one (0: none). Only
/// the pages of the descriptors used are ever touched.
static ROUTES: [AtomicUsize; MAX_FD] = [const { AtomicUsize::new(0) }; MAX_FD];

/// A thread's armed task-clock event.
pub(super) struct Timer(libc::c_int);

impl Timer {
    /// Opens a task-clock event on thread `tid` that raises `signal` on it after each
    /// `interval_ns` of its CPU time, routed to slot `token`, and arms it. `None` when the kernel
    /// refuses (no `perf_event_open` under this seccomp policy, `perf_event_paranoid` 3, out of
    /// descriptors) or the descriptor is too high to route.
    pub fn start(tid: u32, interval_ns: u64, signal: libc::c_int, token: usize) -> Option<Timer> {
        let timer = Timer(open(tid, interval_ns)?);
        let fd = timer.0 as usize;
        if fd >= MAX_FD {
            return None; // dropped: closed
        }
        let owner = OwnerEx { kind: F_OWNER_TID, pid: tid as libc::pid_t };
        // SAFETY: fcntl on a descriptor we own, with a local owner struct the kernel reads.
        let routed = unsafe {
            libc::fcntl(timer.0, F_SETSIG, signal) == 0
                && libc::fcntl(timer.0, F_SETOWN_EX, &raw const owner) == 0
                && libc::fcntl(timer.0, libc::F_SETFL, libc::O_ASYNC) == 0
        };
        if !routed {
            return None;
        }
        ROUTES[fd].store(token + 1, Release);
        arm(timer.0);
        Some(timer)
    }

    /// Takes the raw descriptor back from a slot's bookkeeping (see [`Timer::into_raw`]).
    pub fn from_raw(fd: libc::c_int) -> Timer {
        Timer(fd)
    }

    /// Leaves the descriptor to a slot's bookkeeping (an atomic), to be taken back with
    /// [`Timer::from_raw`] and dropped once its thread is gone.
    pub fn into_raw(self) -> libc::c_int {
        let fd = self.0;
        std::mem::forget(self);
        fd
    }
}

impl Drop for Timer {
    /// Disarms, unroutes and closes. Only once the event's thread is gone, or before it was ever
    /// armed: a handler still running on that thread could otherwise re-arm a descriptor number
    /// that names something else by then.
    fn drop(&mut self) {
        disarm(self.0);
        if let Some(route) = ROUTES.get(self.0 as usize) {
            route.store(0, Release);
        }
        // SAFETY: closes our own descriptor, once.
        unsafe { libc::close(self.0) };
    }
}

/// Whether this process may open task-clock events on its threads: one opened on the calling
/// thread and closed at once.
pub(super) fn available() -> bool {
    open(crate::tree::threads::gettid(), 1_000_000).map(Timer).is_some()
}

fn open(tid: u32, interval_ns: u64) -> Option<libc::c_int> {
    let mut attr = perf_event::Attr::task_clock(interval_ns);
    attr.flags |= perf_event::ATTR_DISABLED; // armed by `arm`, one overflow at a time
    perf_event::Event::open(&attr, tid).map(perf_event::Event::into_raw)
}

/// Stops event `fd` from raising any more signals before it is closed while its thread may
/// still run (a detach): unrouted first, so that a handler arriving from now on does not re-arm
/// it, then disarmed. A handler that read the route just before may still re-arm it once:
/// disarm again after handlers in flight are done (see `signal::stop`).
pub(super) fn retire(fd: libc::c_int) {
    if let Some(route) = ROUTES.get(fd as usize) {
        route.store(0, Release);
    }
    disarm(fd);
}

/// Arms event `fd` for one more overflow. Async-signal-safe: the handler calls it (the handler
/// checks the route first, and a route outlives its thread's handlers: see `Timer::drop`).
pub(super) fn arm(fd: libc::c_int) {
    perf_event::refresh(fd, 1);
}

/// Disarms event `fd`: no more overflows until it is armed again.
pub(super) fn disarm(fd: libc::c_int) {
    perf_event::disable(fd);
}

/// The descriptor of the event that raised this signal, if a task-clock overflow raised it.
/// Async-signal-safe.
pub(super) fn fd_of(info: *const libc::siginfo_t) -> Option<libc::c_int> {
    if info.is_null() {
        return None;
    }
    // SAFETY: the kernel passes a valid siginfo to an SA_SIGINFO handler. For a SIGIO-style
    // signal (si_code POLL_*) the union holds `si_band` (a long, offset 16) then `si_fd` (an
    // int, offset 24) on 64-bit Linux.
    let (code, fd) = unsafe { ((*info).si_code, *info.cast::<u8>().add(24).cast::<libc::c_int>()) };
    matches!(code, POLL_IN | POLL_HUP).then_some(fd)
}

/// The slot token event `fd` samples for, while it is routed. Async-signal-safe.
pub(super) fn token_of(fd: libc::c_int) -> Option<usize> {
    let route = ROUTES.get(usize::try_from(fd).ok()?)?.load(Acquire);
    route.checked_sub(1)
}

/// The calling thread's CPU time, in nanoseconds. Async-signal-safe.
pub(super) fn own_cpu_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime(2) writes a local timespec; async-signal-safe.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}
