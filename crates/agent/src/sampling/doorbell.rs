//! Wake-ups on demand for the agent's own threads: at low rates (`sonde daemon`'s 97 Hz) the
//! sampler and drain threads sleep a whole second, and a signal handler that needs one sooner (a
//! ring half full, a stack to look up) rings its doorbell — an atomic swap and, for the first
//! ringer only, one `futex` wake: async-signal-safe. In a virtual machine a thread's wake-up
//! alone costs tens of microseconds: at 12 a second per thread they were most of what profiling
//! an idle service cost (BENCHMARKS.md, "Continuous profiling").
//!
//! A futex word, not an `eventfd`: a descriptor is the program's to close (a daemon closing every
//! descriptor above 2), and a handler writing to a descriptor number the program has reused
//! since would write into the program's own file.

use std::sync::atomic::{AtomicU32, Ordering::*};
use std::time::Duration;

pub struct Doorbell {
    /// 1 when rung since the sleeper last woke, else 0.
    word: AtomicU32,
}

impl Doorbell {
    pub const fn new() -> Doorbell {
        Doorbell { word: AtomicU32::new(0) }
    }

    /// Wakes the sleeper (at once if it is awake: its next wait returns). Async-signal-safe: an
    /// atomic swap and at most one `futex` call, and the interrupted code's `errno` is kept (a
    /// runtime's signal handler may call this without saving it).
    pub fn ring(&self) {
        if self.word.swap(1, AcqRel) == 1 {
            return;
        }
        // SAFETY: futex(2) FUTEX_WAKE on our own static word (no memory written); errno is this
        // thread's, restored.
        unsafe {
            let errno = *libc::__errno_location();
            libc::syscall(libc::SYS_futex, self.word.as_ptr(), libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG, 1);
            *libc::__errno_location() = errno;
        }
    }

    /// Sleeps until rung or `timeout` passes; true when rung. What the ringer did before ringing
    /// is visible after this returns.
    pub fn wait(&self, timeout: Duration) -> bool {
        if self.word.swap(0, AcqRel) == 1 {
            return true;
        }
        let spec = libc::timespec {
            tv_sec: timeout.as_secs().min(i64::MAX as u64) as libc::time_t,
            tv_nsec: libc::c_long::from(timeout.subsec_nanos() as i32),
        };
        // SAFETY: futex(2) FUTEX_WAIT on our own word with a local relative timeout: it sleeps
        // only while the word is still 0 (a ring between the swap and here returns at once).
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                self.word.as_ptr(),
                libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
                0u32,
                &raw const spec,
            )
        };
        self.word.swap(0, AcqRel) == 1
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
        assert!(!bell.wait(Duration::from_millis(20)), "nothing rang");
        bell.ring();
        bell.ring(); // coalesced
        let start = std::time::Instant::now();
        assert!(bell.wait(Duration::from_secs(10)));
        assert!(start.elapsed() < Duration::from_secs(5));
        assert!(!bell.wait(Duration::from_millis(1)), "the two rings were one");
        // From another thread, while waiting (or before: the wait returns at once then).
        let bell = std::sync::Arc::new(bell);
        let ringer = {
            let bell = bell.clone();
            std::thread::spawn(move || bell.ring())
        };
        assert!(bell.wait(Duration::from_secs(30)));
        ringer.join().unwrap();
    }

    #[test]
    fn a_ring_keeps_errno() {
        let bell = Doorbell::new();
        // SAFETY: this thread's errno.
        unsafe { *libc::__errno_location() = libc::EINTR };
        bell.ring();
        // SAFETY: this thread's errno.
        assert_eq!(unsafe { *libc::__errno_location() }, libc::EINTR);
        assert!(bell.wait(Duration::ZERO));
    }
}
