//! The SIGPROF handler, and how the sampler thread raises it on one thread.
//!
//! The handler runs on the sampled thread at an arbitrary instruction — possibly inside malloc,
//! the runtime's own signal handlers or the GC — so it only reads registers from the signal
//! context, reads stack memory inside the thread's stack mapping (`maps`), and writes to the
//! thread's preallocated ring. No allocation, no lock, no call into the runtime, no panic path,
//! and `errno` is preserved.

use super::{SLOTS, UNKNOWN_THREAD, maps, ring::FLAG_TRUNCATED};
use std::sync::OnceLock;
use std::sync::atomic::Ordering::*;

const SIGNAL: libc::c_int = libc::SIGPROF;
static PREVIOUS: OnceLock<libc::sigaction> = OnceLock::new();

pub fn install() -> std::io::Result<()> {
    // SAFETY: installs `on_signal` (see the module docs) with the flags its signature needs and
    // keeps the previous action for signals that are not ours.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_signal as *const () as libc::sighandler_t;
        action.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART | libc::SA_ONSTACK;
        libc::sigemptyset(&mut action.sa_mask);
        let mut previous: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(SIGNAL, &action, &mut previous) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        let _ = PREVIOUS.set(previous);
    }
    Ok(())
}

/// Agent threads never take samples of themselves.
pub fn block_on_this_thread() {
    // SAFETY: plain libc calls on a local, initialised set.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, SIGNAL);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
}

/// Signals thread `tid` with its slot index as the signal's value; false if the thread is gone.
pub fn signal(tid: u32, slot: usize) -> bool {
    // SAFETY: rt_tgsigqueueinfo with a zeroed, filled-in siginfo for our own process. SI_QUEUE
    // marks it as user-sent (the kernel allows any negative code to the sender's own process).
    unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        info.si_signo = SIGNAL;
        info.si_code = libc::SI_QUEUE;
        let raw = (&raw mut info).cast::<u8>();
        // The `_rt` member of the siginfo union: si_pid (i32), si_uid (u32), si_value (8 bytes),
        // after the three leading ints and padding (offset 16 on 64-bit Linux).
        *raw.add(16).cast::<i32>() = std::process::id() as i32;
        *raw.add(20).cast::<u32>() = libc::getuid();
        *raw.add(24).cast::<usize>() = slot;
        libc::syscall(
            libc::SYS_rt_tgsigqueueinfo,
            std::process::id() as libc::c_long,
            tid as libc::c_long,
            SIGNAL as libc::c_long,
            &raw const info,
        ) == 0
    }
}

/// Thread `tid`'s CPU time (its CPU-time clock: the kernel's MAKE_THREAD_CPUCLOCK(tid,
/// CPUCLOCK_SCHED), as pthread_getcpuclockid builds it); `None` once the thread is gone.
pub fn thread_cpu_ns(tid: u32) -> Option<u64> {
    let clock = ((!(tid as libc::clockid_t)) << 3) | 6;
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: writes a local timespec.
    (unsafe { libc::clock_gettime(clock, &mut ts) } == 0).then(|| ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

extern "C" fn on_signal(signal: libc::c_int, info: *mut libc::siginfo_t, context: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo and ucontext for an SA_SIGINFO handler.
    let errno = unsafe { *libc::__errno_location() };
    // Ours: queued by this process (`signal`) — its value is a slot index.
    let ours = !info.is_null()
        && unsafe { (*info).si_code } == libc::SI_QUEUE
        && unsafe { (*info).si_pid() } == std::process::id() as libc::pid_t;
    if ours {
        // SAFETY: for our SI_QUEUE signals the value is the slot index `signal` put there.
        let slot = unsafe { (*info).si_value().sival_ptr } as usize;
        sample(slot, context);
    } else {
        chain(signal, info, context);
    }
    // SAFETY: restores the interrupted code's errno.
    unsafe { *libc::__errno_location() = errno };
}

fn sample(slot: usize, context: *mut libc::c_void) {
    let Some(slot) = SLOTS.get(slot) else {
        UNKNOWN_THREAD.fetch_add(1, Relaxed);
        return;
    };
    // SAFETY: a published ring is never freed.
    let Some(ring) = (unsafe { slot.ring.load(Acquire).as_ref() }) else {
        UNKNOWN_THREAD.fetch_add(1, Relaxed);
        return;
    };
    // Take the periods first, then allow the next signal: periods added after this point go to
    // the next sample.
    let periods = slot.periods.swap(0, AcqRel).max(1);
    slot.signalled.store(false, Release);
    let Some(mut writer) = ring.begin() else { return };
    let (ip, sp, fp) = registers(context);
    writer.push(ip as u64);
    let mut flags = 0;
    // Frame-pointer walk, reading only inside the mapping that holds the stack pointer.
    match maps::current().and_then(|m| m.containing(sp)) {
        Some((_, stack_end)) => {
            let mut fp = fp;
            while fp >= sp && fp % 8 == 0 && fp.saturating_add(16) <= stack_end {
                if writer.is_full() {
                    flags |= FLAG_TRUNCATED;
                    break;
                }
                // SAFETY: [fp, fp + 16) lies inside the thread's stack mapping, which stays mapped
                // while the thread runs this handler.
                let (next, ret) = unsafe { (*(fp as *const usize), *((fp + 8) as *const usize)) };
                if ret == 0 {
                    break;
                }
                writer.push(ret as u64);
                if next <= fp {
                    break;
                }
                fp = next;
            }
        }
        None => maps::mark_stale(),
    }
    writer.commit(periods, flags);
}

#[cfg(target_arch = "x86_64")]
fn registers(context: *mut libc::c_void) -> (usize, usize, usize) {
    // SAFETY: the kernel's ucontext for this signal.
    let gregs = unsafe { &(*(context as *const libc::ucontext_t)).uc_mcontext.gregs };
    (
        gregs[libc::REG_RIP as usize] as usize,
        gregs[libc::REG_RSP as usize] as usize,
        gregs[libc::REG_RBP as usize] as usize,
    )
}

#[cfg(target_arch = "aarch64")]
fn registers(context: *mut libc::c_void) -> (usize, usize, usize) {
    // SAFETY: the kernel's ucontext for this signal.
    let mc = unsafe { &(*(context as *const libc::ucontext_t)).uc_mcontext };
    (mc.pc as usize, mc.sp as usize, mc.regs[29] as usize)
}

/// A SIGPROF that is not ours goes to whoever had the signal before (its default action, fatal,
/// is not taken: a stray SIGPROF must not kill a profiled program).
fn chain(signal: libc::c_int, info: *mut libc::siginfo_t, context: *mut libc::c_void) {
    if let Some(previous) = PREVIOUS.get() {
        crate::signals::forward(previous, signal, info, context, crate::signals::OnDefault::Ignore);
    }
}
