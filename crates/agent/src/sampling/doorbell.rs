//! Wake-ups on demand for the agent's own threads: at low rates (`sonde daemon`'s 97 Hz) the
//! sampler and drain threads sleep a whole second, and a signal handler that needs one sooner (a
//! ring half full, a stack to look up) rings its doorbell — one `write` to an `eventfd`,
//! async-signal-safe, and only by the first ringer until the sleeper wakes. In a virtual machine
//! a thread's wake-up alone costs tens of microseconds: at 12 a second per thread they were most
//! of what profiling an idle service cost (BENCHMARKS.md, "Continuous profiling").

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering::*};
use std::time::Duration;

pub struct Doorbell {
    /// The `eventfd` (-1 until [`open`](Self::open), or if the kernel refused one: then the
    /// sleeper only wakes at its timeout).
    fd: AtomicI32,
    /// Rung since the sleeper last woke: later rings need no system call.
    rung: AtomicBool,
}

impl Doorbell {
    pub const fn new() -> Doorbell {
        Doorbell { fd: AtomicI32::new(-1), rung: AtomicBool::new(false) }
    }

    /// Creates the `eventfd`, once, before any thread may ring or wait.
    pub fn open(&self) {
        if self.fd.load(Acquire) >= 0 {
            return;
        }
        // SAFETY: eventfd(2) takes no pointers; it returns a new descriptor or -1.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if fd >= 0 && self.fd.compare_exchange(-1, fd, AcqRel, Acquire).is_err() {
            // SAFETY: our own descriptor, never published.
            unsafe { libc::close(fd) };
        }
    }

    /// Wakes the sleeper (at once if it is awake: its next wait returns). Async-signal-safe: an
    /// atomic swap and at most one `write`, and the interrupted code's `errno` is kept (a
    /// runtime's signal handler may call this without saving it).
    pub fn ring(&self) {
        let fd = self.fd.load(Acquire);
        if fd < 0 || self.rung.swap(true, AcqRel) {
            return;
        }
        let one: u64 = 1;
        // SAFETY: errno is this thread's; writes 8 bytes from a local to our own non-blocking
        // eventfd; errno restored.
        unsafe {
            let errno = *libc::__errno_location();
            libc::write(fd, (&raw const one).cast(), 8);
            *libc::__errno_location() = errno;
        }
    }

    /// Sleeps until rung or `timeout` passes; true when rung. What the ringer saw before ringing
    /// is visible after this returns.
    pub fn wait(&self, timeout: Duration) -> bool {
        let fd = self.fd.load(Acquire);
        if fd < 0 {
            std::thread::sleep(timeout);
            return false;
        }
        let mut poll = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
        let spec = libc::timespec {
            tv_sec: timeout.as_secs().min(i64::MAX as u64) as libc::time_t,
            tv_nsec: libc::c_long::from(timeout.subsec_nanos() as i32),
        };
        // SAFETY: ppoll(2) on one local pollfd with a local timeout and no signal mask change.
        let ready = unsafe { libc::ppoll(&raw mut poll, 1, &raw const spec, std::ptr::null()) };
        // Cleared before the counter is read: a ring after the read gets its own wake-up, and one
        // between is about what the caller does next anyway.
        self.rung.store(false, Release);
        let mut count: u64 = 0;
        // SAFETY: reads 8 bytes into a local from our own non-blocking eventfd (EAGAIN if empty).
        let read = unsafe { libc::read(fd, (&raw mut count).cast(), 8) };
        ready > 0 && read == 8
    }
}

/// Below this rate the agent's threads keep house once a second, woken sooner only by doorbells.
pub const LOW_RATE_INTERVAL: Duration = Duration::from_millis(4);

/// How long the sampler (with every thread on its own timer) and the drain sleep at low rates.
pub const LOW_RATE_PERIOD: Duration = Duration::from_secs(1);

/// True at rates where [`LOW_RATE_PERIOD`] applies (250 Hz and below).
pub fn low_rate(interval: Duration) -> bool {
    interval >= LOW_RATE_INTERVAL
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ring_wakes_the_sleeper_once_and_the_next_wait_sleeps() {
        let bell = Doorbell::new();
        bell.open();
        assert!(!bell.wait(Duration::from_millis(1)), "nothing rang");
        bell.ring();
        bell.ring(); // coalesced
        let start = std::time::Instant::now();
        assert!(bell.wait(Duration::from_secs(10)));
        assert!(start.elapsed() < Duration::from_secs(5));
        assert!(!bell.wait(Duration::from_millis(1)), "the two rings were one");
        // From another thread, while waiting.
        let bell = std::sync::Arc::new(bell);
        let ringer = {
            let bell = bell.clone();
            std::thread::spawn(move || bell.ring())
        };
        assert!(bell.wait(Duration::from_secs(30)));
        ringer.join().unwrap();
    }

    #[test]
    fn an_unopened_doorbell_only_times_out() {
        let bell = Doorbell::new();
        bell.ring();
        assert!(!bell.wait(Duration::from_millis(1)));
    }
}
