//! The sampling signal: which signal it is, its handler, the fault-handler wrappers that keep it
//! out of the runtime's alternate-stack window, and how the sampler thread raises it on one
//! thread. `docs/SAMPLING.md` ("The signal") explains why each piece is needed.
//!
//! The handler runs on the sampled thread at an arbitrary instruction — possibly inside malloc or
//! the GC — so it only reads registers from the signal context, reads stack memory between the
//! interrupted stack pointer and the top of the thread's own stack (its limits, captured when the
//! thread registered), and writes to the thread's preallocated ring. No allocation, no lock, no
//! call into the runtime, no panic path, and `errno` is preserved.
//!
//! - **Which signal.** Not SIGPROF: programs use SIGPROF themselves (`setitimer`, gperftools),
//!   reset it, or send it to themselves. The agent takes the highest real-time signal nobody
//!   handles, so a program's SIGPROF is never ours and ours is nobody else's.
//! - **Ours or not.** Our signals are queued by this process with a value whose high half is a
//!   random per-process key. Anything else is handed to whatever handled the signal before us,
//!   exactly as if Sonde were not there.
//! - **Which stack.** The handler runs on the thread's alternate signal stack (`SA_ONSTACK`), so
//!   sampling a thread that is about to overflow its stack never needs room on that stack. But
//!   CoreCLR's SIGSEGV handler also runs there and then continues on the thread's stack while its
//!   frames on the alternate stack are still live; a signal delivered then would be written over
//!   them. So the agent wraps the runtime's SIGSEGV, SIGBUS and SIGFPE handlers with one that adds
//!   the sampling signal to their signal mask: the kernel blocks it from the fault until that
//!   handler returns (`sigreturn` restores the mask), and the pending sample is taken then.
//! - **Resets.** The sampler thread checks before every tick (every housekeeping period when
//!   per-thread timers sample) that the sampling handler is still installed, and every few ticks
//!   that the wrappers are ([`check`]). If the program took the sampling signal, sampling
//!   stops (the profile and stderr say so); if it replaced a fault handler, the sampling handler
//!   is reinstalled without `SA_ONSTACK` (a handler on the current stack never overwrites anyone's
//!   frames).

use super::threads::{PerThread, state, wake_sampler};
use crate::sampling::common::COUNTERS;
use crate::sampling::ring::CONTEXT_SHIFT;
use crate::sampling::slots;
use crate::sampling::stack_walk::walk;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering::*};

/// The sampling signal (0 until [`install`] chose one).
static SIGNAL: AtomicI32 = AtomicI32::new(0);
/// The high half of every value we queue (never 0 once installed).
static KEY: AtomicU64 = AtomicU64::new(0);
static PREVIOUS: OnceLock<libc::sigaction> = OnceLock::new();
/// Fault signals whose handler is wrapped, and the handler each had.
const FAULTS: [libc::c_int; 3] = [libc::SIGSEGV, libc::SIGBUS, libc::SIGFPE];
static FAULT_PREVIOUS: [OnceLock<libc::sigaction>; 3] = [const { OnceLock::new() }; 3];
/// The handler is installed with `SA_ONSTACK` (cleared when a wrapper was replaced).
static ON_ALTERNATE_STACK: AtomicBool = AtomicBool::new(false);

/// The signal the sampler sends, once installed.
pub fn signal_number() -> Option<libc::c_int> {
    Some(SIGNAL.load(Relaxed)).filter(|&s| s != 0)
}

/// Chooses the sampling signal, installs its handler and wraps the fault handlers.
pub fn install() -> std::io::Result<()> {
    let signal = choose_signal().ok_or_else(|| std::io::Error::other("no free real-time signal for sampling"))?;
    KEY.store(random_key() << 32, Relaxed);
    for (i, &fault) in FAULTS.iter().enumerate() {
        if let Some(previous) = wrap_fault_handler(fault, signal)? {
            let _ = FAULT_PREVIOUS[i].set(previous);
        }
    }
    let previous = install_handler(signal, true)?;
    let _ = PREVIOUS.set(previous);
    SIGNAL.store(signal, Release);
    Ok(())
}

/// The highest real-time signal with no handler (at its default action, or ignored — which is
/// also how a detached agent leaves the one it used, see [`uninstall`]; an ignored signal that is
/// not ours is forwarded to its `SIG_IGN`, i.e. still ignored): `SIGRTMIN` itself is CoreCLR's
/// activation signal and glibc keeps the two below it; the lowest ones are what programs and
/// libraries usually pick first.
fn choose_signal() -> Option<libc::c_int> {
    let (low, high) = (libc::SIGRTMIN() + 4, libc::SIGRTMAX());
    (low..=high).rev().find(|&sig| {
        current_action(sig).is_ok_and(|c| c.sa_sigaction == libc::SIG_DFL || c.sa_sigaction == libc::SIG_IGN)
    })
}

/// Takes the agent's actions out of the process (a detach; the sampler thread and the timers
/// are stopped already): each fault wrapper still installed gives way to the action it wrapped,
/// and the sampling signal, if still ours, becomes ignored — not its default action, which for a
/// real-time signal ends the process: a signal still pending on a thread that blocks it (sent
/// before the sampler stopped) is discarded instead. Actions installed over ours since are left
/// alone. The library stays loaded (`process::stay_loaded`), so a handler running meanwhile
/// still has its code.
pub fn uninstall() {
    for (i, &fault) in FAULTS.iter().enumerate() {
        if let Some(previous) = FAULT_PREVIOUS[i].get()
            && current_handler(fault) == Some(on_fault as *const () as libc::sighandler_t)
        {
            // SAFETY: reinstalls the action our wrapper replaced, as it was.
            unsafe { libc::sigaction(fault, previous, std::ptr::null_mut()) };
        }
    }
    let Some(signal) = signal_number() else { return };
    if current_handler(signal) == Some(on_signal as *const () as libc::sighandler_t) {
        // SAFETY: sets the signal's action to SIG_IGN (a local, fully initialised struct).
        unsafe {
            let mut ignore: libc::sigaction = std::mem::zeroed();
            ignore.sa_sigaction = libc::SIG_IGN;
            libc::sigemptyset(&mut ignore.sa_mask);
            libc::sigaction(signal, &ignore, std::ptr::null_mut());
        }
    }
}

/// The action installed for `signal`.
fn current_action(signal: libc::c_int) -> std::io::Result<libc::sigaction> {
    // SAFETY: queries the action of `signal` into a local.
    unsafe {
        let mut current: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(signal, std::ptr::null(), &mut current) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(current)
    }
}

fn random_key() -> u64 {
    let mut bytes = [0u8; 4];
    // SAFETY: getrandom(2) writes at most `bytes.len()` bytes into the local buffer.
    let got = unsafe { libc::getrandom(bytes.as_mut_ptr().cast(), bytes.len(), libc::GRND_NONBLOCK) };
    let key = if got == bytes.len() as isize {
        u32::from_ne_bytes(bytes)
    } else {
        // No entropy yet (early boot): the clock and pid still make a collision unlikely.
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: writes a local timespec.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
        (ts.tv_nsec as u32) ^ std::process::id().rotate_left(16)
    };
    u64::from(key.max(1))
}

/// Installs [`on_signal`] for `signal`; returns the previous action.
fn install_handler(signal: libc::c_int, on_alternate_stack: bool) -> std::io::Result<libc::sigaction> {
    // SAFETY: installs `on_signal` (see the module docs) with the flags its signature needs; both
    // structs are local and fully initialised.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_signal as *const () as libc::sighandler_t;
        action.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
        if on_alternate_stack {
            action.sa_flags |= libc::SA_ONSTACK;
        }
        libc::sigemptyset(&mut action.sa_mask);
        // CoreCLR's activation signal must not run on top of us on the (small) alternate stack;
        // CoreCLR blocks it in its own alternate-stack handler for the same reason.
        libc::sigaddset(&mut action.sa_mask, libc::SIGRTMIN());
        let mut previous: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(signal, &action, &mut previous) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        ON_ALTERNATE_STACK.store(on_alternate_stack, Relaxed);
        Ok(previous)
    }
}

/// Puts [`on_fault`] in front of the handler of `fault`, with the same flags and mask plus
/// `signal`. Nothing to wrap (and `None`) when the fault has no handler.
fn wrap_fault_handler(fault: libc::c_int, signal: libc::c_int) -> std::io::Result<Option<libc::sigaction>> {
    let current = current_action(fault)?;
    // Only a handler on the alternate stack has the window described in the module docs.
    if current.sa_sigaction == libc::SIG_DFL
        || current.sa_sigaction == libc::SIG_IGN
        || current.sa_flags & libc::SA_ONSTACK == 0
    {
        return Ok(None);
    }
    // SAFETY: installs `on_fault` with the current action's flags (plus SA_SIGINFO, which
    // `on_fault`'s signature needs; `forward` calls the previous handler with the arity its own
    // flags say) and its mask plus the sampling signal.
    unsafe {
        let mut action = current;
        action.sa_sigaction = on_fault as *const () as libc::sighandler_t;
        action.sa_flags |= libc::SA_SIGINFO;
        libc::sigaddset(&mut action.sa_mask, signal);
        let mut previous: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(fault, &action, &mut previous) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Some(previous))
    }
}

/// What [`check`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Health {
    Installed,
    /// A fault handler was replaced: the sampling handler now runs on the current stack.
    MovedOffAlternateStack,
    /// The program installed its own action for the sampling signal: stop sending it.
    SignalTaken,
}

/// Checks that the sampling handler is still the installed action for the sampling signal and,
/// with `wrappers`, that the fault wrappers are still in place, reacting to a replaced wrapper
/// (see the module docs). Called by the sampler thread: the first check before every tick's
/// signals (one system call), the wrappers every few ticks.
pub fn check(wrappers: bool) -> Health {
    let Some(signal) = signal_number() else { return Health::SignalTaken };
    if current_handler(signal) != Some(on_signal as *const () as libc::sighandler_t) {
        return Health::SignalTaken;
    }
    if !wrappers || !ON_ALTERNATE_STACK.load(Relaxed) {
        return Health::Installed;
    }
    let wrapped = FAULTS
        .iter()
        .zip(&FAULT_PREVIOUS)
        .filter(|(_, previous)| previous.get().is_some())
        .all(|(&fault, _)| current_handler(fault) == Some(on_fault as *const () as libc::sighandler_t));
    if wrapped {
        return Health::Installed;
    }
    if install_handler(signal, false).is_err() {
        return Health::SignalTaken;
    }
    Health::MovedOffAlternateStack
}

/// The handler installed for `signal` (none, if it cannot be read).
fn current_handler(signal: libc::c_int) -> Option<libc::sighandler_t> {
    current_action(signal).ok().map(|c| c.sa_sigaction)
}

/// Agent threads never take samples of themselves.
pub fn block_on_this_thread() {
    change_mask(libc::SIG_BLOCK);
}

/// Unblocks the sampling signal on the calling thread (see [`super::fault_handled_on_this_thread`]).
pub fn unblock_on_this_thread() {
    change_mask(libc::SIG_UNBLOCK);
}

fn change_mask(how: libc::c_int) {
    let Some(signal) = signal_number() else { return };
    // SAFETY: plain libc calls on a local, initialised set.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, signal);
        libc::pthread_sigmask(how, &set, std::ptr::null_mut());
    }
}

/// Signals thread `tid` with its slot index (and our key) as the signal's value; false if the
/// thread is gone.
pub fn signal(tid: u32, slot: usize) -> bool {
    let Some(signal) = signal_number() else { return false };
    // SAFETY: rt_tgsigqueueinfo with a zeroed, filled-in siginfo for our own process. SI_QUEUE
    // marks it as user-sent (the kernel allows any negative code to the sender's own process).
    unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        info.si_signo = signal;
        info.si_code = libc::SI_QUEUE;
        let raw = (&raw mut info).cast::<u8>();
        // The `_rt` member of the siginfo union: si_pid (i32), si_uid (u32), si_value (8 bytes),
        // after the three leading ints and padding (offset 16 on 64-bit Linux).
        *raw.add(16).cast::<i32>() = std::process::id() as i32;
        *raw.add(20).cast::<u32>() = libc::getuid();
        *raw.add(24).cast::<u64>() = KEY.load(Relaxed) | slot as u64;
        libc::syscall(
            libc::SYS_rt_tgsigqueueinfo,
            std::process::id() as libc::c_long,
            tid as libc::c_long,
            signal as libc::c_long,
            &raw const info,
        ) == 0
    }
}

/// A thread's `/proc/self/task/TID/stat`, kept open: each read is one `pread`.
pub struct ThreadStat(std::fs::File);

impl ThreadStat {
    pub fn open(tid: u32) -> Option<ThreadStat> {
        std::fs::File::open(format!("/proc/self/task/{tid}/stat")).ok().map(ThreadStat)
    }

    /// The thread's scheduler state now (`R` running or runnable, `S` sleeping, `D` waiting for
    /// I/O, …); `None` once the thread is gone. Not for signal context.
    pub fn state(&self) -> Option<u8> {
        use std::os::unix::fs::FileExt;
        // "TID (COMM) STATE …": the command is at most 15 bytes, so the state is in the first 64.
        let mut buf = [0u8; 64];
        let n = self.0.read_at(&mut buf, 0).ok()?;
        let text = &buf[..n];
        let close = text.iter().rposition(|&b| b == b')')?;
        text.get(close + 2).copied()
    }
}

/// Our signal, from this process, with our key: its slot index.
fn our_slot(info: *const libc::siginfo_t) -> Option<usize> {
    if info.is_null() {
        return None;
    }
    // SAFETY: the kernel passes a valid siginfo to an SA_SIGINFO handler; the value is read as
    // the raw 8 bytes `signal` wrote.
    let (code, pid, value) = unsafe {
        let raw = info.cast::<u8>();
        ((*info).si_code, *raw.add(16).cast::<i32>(), *raw.add(24).cast::<u64>())
    };
    let key = KEY.load(Relaxed);
    (code == libc::SI_QUEUE && pid == std::process::id() as i32 && key != 0 && value & !0xffff_ffff == key)
        .then_some((value & 0xffff_ffff) as usize)
}

extern "C" fn on_signal(signal: libc::c_int, info: *mut libc::siginfo_t, context: *mut libc::c_void) {
    // SAFETY: errno is this thread's; read and restored around our work.
    let errno = unsafe { *libc::__errno_location() };
    if let Some(fd) = super::timers::fd_of(info) {
        // A task-clock overflow: ours (nobody else had this signal when it was chosen). One
        // whose event was retired meanwhile (its thread ended, or a detach) is dropped: passed
        // on, it would meet the signal's default action, which ends the process.
        if let Some(token) = super::timers::token_of(fd) {
            on_timer(fd, token, context);
        }
    } else if let Some(slot) = our_slot(info) {
        sample(slot, context);
    } else if let Some(previous) = PREVIOUS.get() {
        crate::signals::forward(previous, signal, info, context);
    }
    // SAFETY: restores the interrupted code's errno.
    unsafe { *libc::__errno_location() = errno };
}

/// In front of the runtime's fault handler: only the mask differs (see the module docs).
extern "C" fn on_fault(signal: libc::c_int, info: *mut libc::siginfo_t, context: *mut libc::c_void) {
    let previous = FAULTS.iter().position(|&f| f == signal).and_then(|i| FAULT_PREVIOUS[i].get());
    match previous {
        Some(previous) => crate::signals::forward(previous, signal, info, context),
        None => {
            // Cannot happen (the wrapper is installed only after its previous action is kept);
            // the default action is what an unhandled fault gets anyway.
            // SAFETY: signal(2) is async-signal-safe; returning re-runs the faulting instruction.
            unsafe { libc::signal(signal, libc::SIG_DFL) };
        }
    }
}

/// A signal the sampler thread queued for slot token `token`.
fn sample(token: usize, context: *mut libc::c_void) {
    let (Some(state), Some(slot)) = (state(token), slots::get(token)) else {
        COUNTERS.unknown_thread.fetch_add(1, Relaxed);
        return;
    };
    // Take the periods first, then allow the next signal: periods added after this point go to
    // the next sample.
    let periods = state.periods.swap(0, AcqRel).max(1);
    let before = slot.idle_periods.swap(0, AcqRel);
    state.signalled.store(false, Release);
    record(state, slot, periods, before, context);
}

/// The task-clock event `fd` of this thread, routed to slot token `token`, overflowed (`timers`): the sample stands for the
/// thread's CPU time since its last one, and the event is armed again while the thread is
/// sampled (an ended thread's stays disarmed).
fn on_timer(fd: libc::c_int, token: usize, context: *mut libc::c_void) {
    use super::timers;
    let (Some(state), Some(slot)) = (state(token), slots::get(token)) else {
        COUNTERS.unknown_thread.fetch_add(1, Relaxed);
        return;
    };
    if !slot.active.load(Acquire) {
        return;
    }
    let now = timers::own_cpu_ns();
    let ran = now.saturating_sub(state.last_cpu_ns.swap(now, Relaxed));
    let periods = state.timer_periods(ran);
    let before = slot.idle_periods.swap(0, AcqRel);
    record(state, slot, periods, before, context);
    timers::arm(fd);
}

/// Writes the interrupted stack into the slot's ring: a sample standing for `periods` intervals,
/// after `before` intervals charged to the previous sample.
fn record(state: &PerThread, slot: &slots::Slot, periods: u64, before: u64, context: *mut libc::c_void) {
    if super::super::common::PAUSED.load(Relaxed) {
        return;
    }
    let Some(ring) = slot.ring() else {
        COUNTERS.unknown_thread.fetch_add(1, Relaxed);
        return;
    };
    let Some(mut writer) = ring.begin() else { return };
    let (ip, sp, fp) = registers(context);
    writer.push(ip as u64);
    let mut flags = 0;
    // Frame-pointer walk, reading only between the stack pointer and the top of the thread's own
    // stack: memory the thread itself is running on, so mapped while it runs this handler. A
    // stack pointer elsewhere (another signal's alternate stack, a stack the thread switched to)
    // gives the leaf alone.
    // High, low, high again: the limits are published low first between two writes of the high
    // one (`set_stack`), so an unchanged, non-zero high means the low one read between belongs
    // to it.
    let high = state.stack_high.load(Acquire) as usize;
    let low = state.stack_low.load(Acquire) as usize;
    let high = if state.stack_high.load(Acquire) as usize == high { high } else { 0 };
    if low <= sp && sp < high {
        walk(&mut writer, &mut flags, ip, sp, fp, high);
    } else if high == 0 {
        // Limits not known yet: the sampler thread looks this stack pointer up (`maps`), now.
        state.seen_sp.store(sp as u64, Relaxed);
        wake_sampler();
    }
    // The async context the thread runs in (`async_stacks`), in the flags above the truncation bit.
    flags |= u64::from(slot.async_context.load(Relaxed)) << CONTEXT_SHIFT;
    // What the thread was doing for the runtime (`work`: compiling, collecting): named later.
    if writer.commit(periods, before, flags, crate::sampling::work::current()) {
        crate::sampling::common::wake_drain();
    }
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
