//! Sampling mode: statistical profiles at a chosen rate, without stopping the world.
//!
//! Design (see `docs/SAMPLING.md`): a sampler thread wakes every interval on the monotonic clock
//! and reads each managed thread's CPU-time clock. Only a thread that is running ([`running`]) is
//! signalled — with the sampling signal of [`handler`], never SIGPROF — and its sample stands for
//! the intervals it ran (`--clock cpu`) or that passed (`--clock wall`). A blocked thread is never
//! interrupted (a signal would cut its `sleep` or `poll` short): its stack has not changed since
//! it last ran, so the intervals it spends blocked are charged to its last sample (wall clock),
//! as is CPU time used in bursts between two looks (CPU clock). (Per-thread CPU-time timers would
//! avoid the clock reads but fire only at the kernel's scheduler tick — 250 Hz here — whatever
//! the rate.) The handler, on the sampled thread, walks the frame-pointer chain from the
//! interrupted context (the JIT keeps RBP frames on Unix x64) inside the thread's own stack only,
//! and writes the raw instruction pointers to the thread's ring. A drain thread (and every
//! snapshot) later turns addresses into methods — off the signal path, with the runtime's
//! `GetFunctionFromIP` — and counts each stack into the thread's call tree: `self_samples` at the
//! leaf, time = samples × interval.
//!
//! A runtime with a sampler of its own (Mono: its sampling thread signals every thread and calls
//! the profiler in the signal handler) replaces the sampler thread and the handler: see
//! [`start_external`] and [`record_for_current_thread`]. Threads, rings, the drain and the call
//! trees are the same.

mod handler;
pub mod maps;
pub mod ring;

use crate::threads;
use ring::{FLAG_TRUNCATED, Ring};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering::*};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// Threads that can be sampled at once; more are counted as not sampled.
pub const MAX_THREADS: usize = 1024;
const RING_WORDS: usize = 1 << 14;

/// Which clock drives the per-thread timers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Clock {
    /// The thread's CPU time: samples only while it runs.
    Cpu,
    /// Wall time: every thread, running or blocked.
    Wall,
}

/// One sampled thread: looked up by index from the signal's value.
struct Slot {
    tid: AtomicU32,
    ring: AtomicPtr<Ring>,
    /// Sampled while set; cleared when the thread is destroyed or gone.
    active: AtomicBool,
    /// Intervals the next sample stands for (the sampler adds, the handler takes).
    periods: AtomicU64,
    /// A signal was sent and the handler has not run yet: don't send another (it would merge).
    signalled: AtomicBool,
    /// Sampler-thread bookkeeping: the thread's CPU time at the last look, and CPU time run since
    /// the last sample.
    last_cpu_ns: AtomicU64,
    unsampled_cpu_ns: AtomicU64,
    /// The thread's stack, `[low, high)`: the only memory the handler's walk reads (0, 0 until
    /// known: see [`maps`]).
    stack_low: AtomicU64,
    stack_high: AtomicU64,
    /// A stack pointer the handler saw while the limits were unknown (0: none).
    seen_sp: AtomicU64,
    /// Intervals the thread spent blocked since its last sample, charged to that sample's stack
    /// (the sampler adds, the handler or the drain takes).
    idle_periods: AtomicU64,
    /// Sampler-thread bookkeeping: ticks at which the thread ran while our signal was still
    /// pending (blocked by the thread, or by a fault handler of the runtime).
    pending_ticks: AtomicU32,
    /// Drain-thread bookkeeping: the call-tree node of the thread's last sample (+1; 0: none).
    last_leaf: AtomicU32,
    /// External sampler only, written by the thread itself (in its signal handler): the clock's
    /// reading at the last sample, and the clock time not yet turned into periods (negative when
    /// the last sample was rounded up).
    external_clock_ns: AtomicU64,
    external_carry_ns: AtomicI64,
}

#[allow(clippy::declare_interior_mutable_const)]
const EMPTY_SLOT: Slot = Slot {
    tid: AtomicU32::new(0),
    ring: AtomicPtr::new(std::ptr::null_mut()),
    active: AtomicBool::new(false),
    periods: AtomicU64::new(0),
    signalled: AtomicBool::new(false),
    last_cpu_ns: AtomicU64::new(0),
    unsampled_cpu_ns: AtomicU64::new(0),
    stack_low: AtomicU64::new(0),
    stack_high: AtomicU64::new(0),
    seen_sp: AtomicU64::new(0),
    idle_periods: AtomicU64::new(0),
    pending_ticks: AtomicU32::new(0),
    last_leaf: AtomicU32::new(0),
    external_clock_ns: AtomicU64::new(0),
    external_carry_ns: AtomicI64::new(0),
};
static SLOTS: [Slot; MAX_THREADS] = [EMPTY_SLOT; MAX_THREADS];
static USED: AtomicUsize = AtomicUsize::new(0);

/// Why samples were lost, for the report.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Losses {
    /// The thread's ring was full when its timer fired (the drain fell behind).
    pub ring_full: u64,
    /// A timer signal arrived for no registered thread.
    pub unknown_thread: u64,
    /// More threads than [`MAX_THREADS`] (their samples were never taken).
    pub too_many_threads: u64,
    /// Ticks at which a thread still had a signal pending (it had not run since); the periods
    /// are not lost, they are added to its next sample. (External sampler: the periods beyond
    /// the first that a sample stood for.)
    pub deferred: u64,
    /// External sampler: periods whose stack walk found nothing to record (on Mono: no managed
    /// frame on the thread's stack, e.g. a runtime thread waiting in native code).
    pub no_managed_frames: u64,
    /// Periods not sampled because the thread kept the sampling signal blocked for more than
    /// [`PENDING_LIMIT`] while it ran.
    pub signal_blocked: u64,
    /// Periods not sampled because the program installed its own handler for the sampling signal
    /// (sampling stopped then).
    pub signal_taken: u64,
}

/// How long a running thread may keep our signal pending (blocked: a runtime's fault handler
/// handling a first exception can take tens of milliseconds) before its periods stop accumulating
/// for its next sample and count as lost.
const PENDING_LIMIT: Duration = Duration::from_millis(200);

static UNKNOWN_THREAD: AtomicU64 = AtomicU64::new(0);
static TOO_MANY_THREADS: AtomicU64 = AtomicU64::new(0);
static DEFERRED: AtomicU64 = AtomicU64::new(0);
static NO_MANAGED_FRAMES: AtomicU64 = AtomicU64::new(0);
static TAKEN: AtomicU64 = AtomicU64::new(0);
static SIGNAL_BLOCKED: AtomicU64 = AtomicU64::new(0);
static SIGNAL_TAKEN: AtomicU64 = AtomicU64::new(0);
/// Tells the user something went wrong with sampling (set by the backend: an error message to
/// the controller). Called from the sampler thread.
static NOTICE: OnceLock<Box<dyn Fn(String) + Send + Sync>> = OnceLock::new();

/// Sets where the sampler reports trouble (the program took the sampling signal).
pub fn on_notice(notice: impl Fn(String) + Send + Sync + 'static) {
    let _ = NOTICE.set(Box::new(notice));
}

struct Config {
    interval: Duration,
    /// Set when an external sampler raises the samples ([`start_external`]): the clock that
    /// weights them, read on the sampled thread.
    external: Option<Clock>,
}

static CONFIG: OnceLock<Config> = OnceLock::new();

/// A resolved stack frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame {
    pub method: u32,
    /// Managed code (a real method), as opposed to native code, stubs or markers.
    pub managed: bool,
}

/// Turns an instruction pointer into a method id (runtime-specific; see `profiler.rs`).
pub trait FrameResolver: Send {
    /// `ip` is the interrupted instruction for the leaf, a return address minus one for callers.
    /// (With [`raw_addresses`](Self::raw_addresses) false, `ip` is the value the sampler wrote,
    /// unchanged.)
    fn resolve(&mut self, ip: usize) -> Frame;
    /// True when the sampled values are instruction pointers and return addresses (Sonde's own
    /// handler); false when an external sampler wrote values of its own (method ids, tagged
    /// pointers) that must reach [`resolve`](Self::resolve) as they are.
    fn raw_addresses(&self) -> bool {
        true
    }
    /// True when the call that returns to `return_address` is a call into the runtime itself (a
    /// JIT helper such as the on-stack-replacement patchpoint) rather than to managed code: a
    /// managed frame "called" from there continues the caller's invocation (the OSR version of
    /// the same method), it is not a recursive call.
    fn calls_runtime(&mut self, _return_address: usize) -> bool {
        false
    }
    /// The pseudo-method for the root of a stack cut short by [`ring::MAX_FRAMES`].
    fn truncated(&mut self) -> u32;
}

static RESOLVER: Mutex<Option<Box<dyn FrameResolver>>> = Mutex::new(None);

/// Installs the signal handler and starts the drain thread. Threads are added with [`register`].
pub fn start(interval: Duration, clock: Clock, resolver: Box<dyn FrameResolver>) -> std::io::Result<()> {
    *RESOLVER.lock().unwrap_or_else(|e| e.into_inner()) = Some(resolver);
    let _ = CONFIG.set(Config { interval, external: None });
    handler::install()?;
    std::thread::Builder::new().name("sonde-sampler".into()).spawn(move || {
        crate::signals::block_on_this_thread();
        handler::block_on_this_thread();
        run_sampler(interval, clock);
    })?;
    spawn_drain()
}

/// Sampling driven by someone else's sampler (the runtime's): no sampler thread, no signal
/// handler of ours; the drain thread only. The external sampler's signal handler calls
/// [`record_for_current_thread`] on each sampled thread, which must be [`register`]ed; `clock`
/// weights the samples there (see that function). `resolver` receives the values the external
/// walk wrote (see [`FrameResolver::raw_addresses`]).
pub fn start_external(interval: Duration, clock: Clock, resolver: Box<dyn FrameResolver>) -> std::io::Result<()> {
    *RESOLVER.lock().unwrap_or_else(|e| e.into_inner()) = Some(resolver);
    let _ = CONFIG.set(Config { interval, external: Some(clock) });
    spawn_drain()
}

/// True when samples come from an external sampler ([`start_external`]).
pub fn external() -> bool {
    CONFIG.get().is_some_and(|c| c.external.is_some())
}

fn spawn_drain() -> std::io::Result<()> {
    std::thread::Builder::new().name("sonde-drain".into()).spawn(|| {
        crate::signals::block_on_this_thread();
        handler::block_on_this_thread();
        loop {
            std::thread::sleep(Duration::from_millis(20));
            drain();
        }
    })?;
    Ok(())
}

pub fn interval() -> Duration {
    CONFIG.get().map_or(Duration::from_millis(1), |c| c.interval)
}

/// Starts sampling thread `tid` (any thread may call this; when the thread itself does, its
/// stack's limits are taken then — call it again from the thread if it was registered first from
/// elsewhere).
pub fn register(tid: u32) {
    if CONFIG.get().is_none() {
        return;
    }
    let own = (tid == threads::gettid()).then(handler::own_stack).flatten();
    if let Some(slot) = SLOTS[..USED.load(Acquire).min(MAX_THREADS)].iter().find(|s| s.tid.load(Relaxed) == tid) {
        if let Some((low, high)) = own {
            set_stack(slot, low, high);
        }
        return;
    }
    let index = USED.fetch_add(1, AcqRel);
    let Some(slot) = SLOTS.get(index) else {
        USED.store(MAX_THREADS, Release);
        TOO_MANY_THREADS.fetch_add(1, Relaxed);
        return;
    };
    slot.ring.store(Box::into_raw(Box::new(Ring::new(RING_WORDS))), Release);
    slot.last_cpu_ns.store(handler::thread_cpu_ns(tid).unwrap_or(0), Relaxed);
    match CONFIG.get().and_then(|c| c.external) {
        Some(Clock::Cpu) => slot.external_clock_ns.store(handler::thread_cpu_ns(tid).unwrap_or(0), Relaxed),
        Some(Clock::Wall) => slot.external_clock_ns.store(monotonic_ns(), Relaxed),
        None => {}
    }
    if let Some((low, high)) = own {
        set_stack(slot, low, high);
    }
    slot.tid.store(tid, Release);
    slot.active.store(true, Release);
}

/// Publishes a thread's stack limits (low first: the handler checks `sp < high`, and a high of
/// 0 means unknown).
fn set_stack(slot: &Slot, low: usize, high: usize) {
    slot.stack_high.store(0, Release);
    slot.stack_low.store(low as u64, Release);
    slot.stack_high.store(high as u64, Release);
}

/// The calling thread finished a catch block. The exception may have started as a fault (a null
/// dereference) whose runtime handler did not return but resumed the program at the catch (see
/// `handler`): the signal mask it ran with — the sampling signal blocked — is still the thread's.
/// Unblock the sampling signal again; the fault handler's frames are dead by now.
pub fn fault_handled_on_this_thread() {
    handler::unblock_on_this_thread();
}

/// Stops sampling thread `tid` (its samples so far stay to be drained).
pub fn unregister(tid: u32) {
    for slot in &SLOTS[..USED.load(Acquire).min(MAX_THREADS)] {
        if slot.tid.load(Relaxed) == tid {
            slot.active.store(false, Release);
        }
    }
}

/// For an external sampler's signal handler, on the sampled thread: records one sample of the
/// calling thread. `walk` pushes the frames, leaf first, and returns the sample's flags
/// ([`ring::FLAG_TRUNCATED`]); a walk that pushes nothing is not a sample (counted as
/// `no_managed_frames`).
///
/// The sample is weighted on the thread itself, by the time its clock advanced since its last
/// sample, in whole intervals (rounded to the nearest, the remainder carried over, so no time is
/// lost or counted twice): with [`Clock::Wall`] the monotonic clock — an on-time tick is one
/// period, a late or missed one more; with [`Clock::Cpu`] the thread's own CPU-time clock — a
/// thread that has not run since its last sample records nothing and its stack is not walked.
///
/// Async-signal-safe: finds the thread's slot through a thread-local cache (else its thread id
/// among the published slots), reads one clock, writes into the thread's preallocated ring. No
/// allocation, no lock, no panic path. A thread that was never registered counts as
/// `unknown_thread`.
pub fn record_for_current_thread(walk: impl FnOnce(&mut ring::Writer<'_>) -> u64) {
    let Some(config) = CONFIG.get() else { return };
    let Some(clock) = config.external else { return };
    let Some(slot) = current_slot() else {
        UNKNOWN_THREAD.fetch_add(1, Relaxed);
        return;
    };
    if !slot.active.load(Acquire) {
        return;
    }
    let now = match clock {
        Clock::Wall => monotonic_ns(),
        Clock::Cpu => own_cpu_ns(),
    };
    let elapsed = now.saturating_sub(slot.external_clock_ns.swap(now, Relaxed));
    let interval_ns = config.interval.as_nanos().min(i64::MAX as u128) as i64;
    let (periods, carry) = weigh(slot.external_carry_ns.load(Relaxed), elapsed, interval_ns);
    slot.external_carry_ns.store(carry, Relaxed);
    if periods == 0 {
        return;
    }
    // SAFETY: a published ring is never freed.
    let Some(ring) = (unsafe { slot.ring.load(Acquire).as_ref() }) else { return };
    let Some(mut writer) = ring.begin() else { return };
    let flags = walk(&mut writer);
    if writer.is_empty() {
        NO_MANAGED_FRAMES.fetch_add(periods, Relaxed);
        return;
    }
    if periods > 1 {
        DEFERRED.fetch_add(periods - 1, Relaxed);
    }
    writer.commit(periods, 0, flags);
}

/// Turns clock time into whole periods: `carry + elapsed` rounded to the nearest number of
/// intervals, and the new carry (what was not counted, negative when rounded up). No panic path.
fn weigh(carry: i64, elapsed: u64, interval_ns: i64) -> (u64, i64) {
    let interval_ns = interval_ns.max(1);
    let elapsed = elapsed.min(i64::MAX as u64 / 4) as i64;
    let pending = carry.saturating_add(elapsed);
    let periods = pending.saturating_add(interval_ns / 2).max(0) / interval_ns;
    (periods as u64, pending.saturating_sub(periods.saturating_mul(interval_ns)))
}

/// The calling thread's slot: cached in a thread-local after the first look-up. Async-signal-safe.
fn current_slot() -> Option<&'static Slot> {
    let cached = cache::get();
    if cached != 0 {
        return SLOTS.get(cached - 1);
    }
    let tid = threads::gettid();
    let used = USED.load(Acquire).min(MAX_THREADS);
    let index = SLOTS.get(..used)?.iter().position(|s| s.tid.load(Acquire) == tid)?;
    cache::set(index + 1);
    SLOTS.get(index)
}

/// The calling thread's slot index + 1 (0: not looked up yet), for [`current_slot`]: an
/// initial-exec TLS variable declared in assembly, like `threads::slot` — a Rust `thread_local!`
/// in a shared library goes through `__tls_get_addr`, which may allocate on a thread's first
/// access and so must not run in a signal handler. 8 more bytes of glibc's static TLS reserve.
#[cfg(target_arch = "x86_64")]
mod cache {
    core::arch::global_asm!(
        ".pushsection .tbss,\"awT\",@nobits",
        ".p2align 3",
        ".globl sonde_sample_slot",
        ".hidden sonde_sample_slot",
        ".type sonde_sample_slot, @object",
        ".size sonde_sample_slot, 8",
        "sonde_sample_slot:",
        ".zero 8",
        ".popsection",
    );

    #[inline(always)]
    pub fn get() -> usize {
        let value: usize;
        // SAFETY: reads this thread's own 8-byte TLS slot through its GOT-held offset.
        unsafe {
            core::arch::asm!(
                "mov {v}, qword ptr [rip + sonde_sample_slot@GOTTPOFF]",
                "mov {v}, qword ptr fs:[{v}]",
                v = out(reg) value,
                options(nostack, readonly, preserves_flags),
            );
        }
        value
    }

    pub fn set(value: usize) {
        // SAFETY: writes this thread's own 8-byte TLS slot.
        unsafe {
            core::arch::asm!(
                "mov {t}, qword ptr [rip + sonde_sample_slot@GOTTPOFF]",
                "mov qword ptr fs:[{t}], {v}",
                t = out(reg) _,
                v = in(reg) value,
                options(nostack, preserves_flags),
            );
        }
    }
}

/// Elsewhere: no cache, the thread id is looked up every time.
#[cfg(not(target_arch = "x86_64"))]
mod cache {
    pub fn get() -> usize {
        0
    }

    pub fn set(_value: usize) {}
}

fn monotonic_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

fn own_cpu_ns() -> u64 {
    clock_ns(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// `clock_gettime` (async-signal-safe); 0 if it fails.
fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: writes a local timespec.
    if unsafe { libc::clock_gettime(clock, &mut ts) } != 0 {
        return 0;
    }
    (ts.tv_sec as u64).wrapping_mul(1_000_000_000).wrapping_add(ts.tv_nsec as u64)
}

/// How often (in ticks) the sampler checks the fault wrappers and looks up unknown stacks.
const CHECK_EVERY: u64 = 16;

/// The sampler thread: every interval, decides which threads to sample and signals them.
fn run_sampler(interval: Duration, clock: Clock) {
    let interval_ns = (interval.as_nanos() as u64).max(1);
    let start = std::time::Instant::now();
    let mut tick: u64 = 0;
    let mut last_wall_ns = 0u64;
    let mut stopped = false;
    let pending_limit = (PENDING_LIMIT.as_nanos() as u64 / interval_ns).clamp(1, u64::from(u32::MAX)) as u32;
    // Per slot (slots are never reused): the thread's stat file, and what the last look saw.
    let mut stats: Vec<Option<handler::ThreadStat>> = Vec::new();
    let mut was_running: Vec<bool> = Vec::new();
    loop {
        tick += 1;
        // Absolute deadlines: the rate does not drift with the loop's own cost.
        let deadline = start + interval * tick as u32;
        if let Some(wait) = deadline.checked_duration_since(std::time::Instant::now()) {
            std::thread::sleep(wait);
        } else {
            // Starved (a busy machine): skip the missed ticks; wall weights use elapsed time.
            tick = (start.elapsed().as_nanos() as u64 / interval_ns).max(tick);
        }
        let now_ns = start.elapsed().as_nanos() as u64;
        let wall_periods = ((now_ns - last_wall_ns) / interval_ns).max(1);
        last_wall_ns = now_ns;
        if !stopped {
            stopped = check_handler(tick.is_multiple_of(CHECK_EVERY));
        }
        if tick.is_multiple_of(CHECK_EVERY) {
            find_unknown_stacks();
        }
        let used = USED.load(Acquire).min(MAX_THREADS);
        stats.resize_with(used, || None);
        was_running.resize(used, false);
        for (index, slot) in SLOTS[..used].iter().enumerate() {
            if !slot.active.load(Acquire) {
                stats[index] = None;
                continue;
            }
            let tid = slot.tid.load(Relaxed);
            let Some(cpu) = handler::thread_cpu_ns(tid) else {
                slot.active.store(false, Release); // the thread is gone
                stats[index] = None;
                continue;
            };
            let ran = cpu.saturating_sub(slot.last_cpu_ns.swap(cpu, Relaxed));
            let periods = match clock {
                Clock::Wall => wall_periods,
                Clock::Cpu => {
                    let pending = slot.unsampled_cpu_ns.load(Relaxed) + ran;
                    slot.unsampled_cpu_ns.store(pending % interval_ns, Relaxed);
                    pending / interval_ns
                }
            };
            if periods == 0 {
                continue;
            }
            if stopped {
                SIGNAL_TAKEN.fetch_add(periods, Relaxed);
                continue;
            }
            if !running(tid, ran, &mut stats[index], &mut was_running[index]) {
                // Blocked: a signal would interrupt its system call. Its stack is the one it had
                // when it last ran: charged there (`drain`).
                slot.idle_periods.fetch_add(periods, AcqRel);
                continue;
            }
            if slot.signalled.load(Acquire) {
                // Running with our signal still pending: blocked by the thread (or a fault handler
                // of the runtime). The periods wait for the sample, for a while.
                if slot.pending_ticks.fetch_add(1, Relaxed) >= pending_limit {
                    SIGNAL_BLOCKED.fetch_add(periods, Relaxed);
                } else {
                    slot.periods.fetch_add(periods, AcqRel);
                    DEFERRED.fetch_add(1, Relaxed);
                }
                continue;
            }
            slot.pending_ticks.store(0, Relaxed);
            slot.periods.fetch_add(periods, AcqRel);
            slot.signalled.store(true, Release);
            if !handler::signal(tid, index) {
                slot.signalled.store(false, Release);
                slot.active.store(false, Release);
            }
        }
    }
}

/// True when thread `tid` is to be signalled now: the kernel says it is running or runnable (`R`
/// in `/proc/self/task/TID/stat`, read through a file kept open per thread: `stat`), and it was
/// running at the previous look too (`was_running`) or its CPU time moved since (`ran` > 0).
/// A thread that runs only briefly between two blocking calls (a loop of `poll`s) is rarely seen
/// running, and a thread seen blocked is never signalled: a signal there would make the call
/// fail with `EINTR`. (The CPU-time clock alone cannot tell: the kernel updates another thread's
/// CPU time only at its scheduler tick or a context switch.) A thread caught runnable inside a
/// system call on its way to block can still be interrupted: that race is what is left.
fn running(tid: u32, ran: u64, stat: &mut Option<handler::ThreadStat>, was_running: &mut bool) -> bool {
    if stat.is_none() {
        *stat = handler::ThreadStat::open(tid);
    }
    let now = stat.as_ref().and_then(handler::ThreadStat::state) == Some(b'R');
    let before = std::mem::replace(was_running, now);
    now && (before || ran > 0)
}

/// Reacts to what [`handler::check`] finds; true when sampling must stop.
fn check_handler(wrappers: bool) -> bool {
    match handler::check(wrappers) {
        handler::Health::Installed => false,
        handler::Health::MovedOffAlternateStack => {
            crate::log::log!("a fault handler was replaced: the sampling handler now runs on the thread's stack");
            false
        }
        handler::Health::SignalTaken => {
            let signal = handler::signal_number().unwrap_or(0);
            let message = format!(
                "the program installed its own handler for the sampling signal ({signal}): sampling stopped, \
                 the profile covers the run until then"
            );
            crate::log::log!("{message}");
            if let Some(notice) = NOTICE.get() {
                notice(message);
            }
            true
        }
    }
}

/// Gives a stack's limits to threads registered from elsewhere, from the stack pointer their
/// first samples saw (see [`maps`]).
fn find_unknown_stacks() {
    for slot in &SLOTS[..USED.load(Acquire).min(MAX_THREADS)] {
        if slot.stack_high.load(Acquire) != 0 {
            continue;
        }
        let sp = slot.seen_sp.swap(0, Relaxed) as usize;
        if sp == 0 {
            continue;
        }
        if let Some((low, high)) = maps::stack_containing(sp) {
            set_stack(slot, low, high);
        }
    }
}

/// Moves every ring's samples into the call trees. Serialised; runs on the drain thread and
/// before every snapshot.
///
/// A sample's "periods before" (the thread was blocked since its previous sample) are charged to
/// the previous sample's stack: a blocked thread's stack does not change. Periods a thread has
/// been blocked since its last sample are charged there too, as the drain finds them.
pub fn drain() {
    static DRAINING: Mutex<()> = Mutex::new(());
    let _guard = DRAINING.lock().unwrap_or_else(|e| e.into_inner());
    let mut resolver = RESOLVER.lock().unwrap_or_else(|e| e.into_inner());
    let Some(resolver) = resolver.as_mut() else { return };
    let interval_ns = interval().as_nanos() as u64;
    let raw_addresses = resolver.raw_addresses();
    let mut path: Vec<u32> = Vec::with_capacity(ring::MAX_FRAMES + 1);
    for slot in &SLOTS[..USED.load(Acquire).min(MAX_THREADS)] {
        let tid = slot.tid.load(Acquire);
        // SAFETY: a slot's ring is set before its tid is published and never freed.
        let Some(ring) = (unsafe { slot.ring.load(Acquire).as_ref() }) else { continue };
        if tid == 0 {
            continue;
        }
        let tree = &threads::state_for(tid).tree;
        let mut last_leaf = slot.last_leaf.load(Relaxed).checked_sub(1);
        ring.drain(|frames, periods, before, flags| {
            if raw_addresses {
                stack_path(frames, flags & FLAG_TRUNCATED != 0, resolver.as_mut(), &mut path);
            } else {
                resolved_path(frames, flags & FLAG_TRUNCATED != 0, resolver.as_mut(), &mut path);
            }
            TAKEN.fetch_add(periods + before, Relaxed);
            let mut weight = periods;
            match last_leaf {
                Some(leaf) => tree.add_samples(leaf, before, before * interval_ns),
                // The thread's first sample: its stack before it is not known; this one is the
                // nearest.
                None => weight += before,
            }
            if let Some(leaf) = tree.record_sample(&path, weight, weight * interval_ns) {
                last_leaf = Some(leaf);
            }
        });
        if let Some(leaf) = last_leaf {
            let idle = slot.idle_periods.swap(0, AcqRel);
            if idle > 0 {
                TAKEN.fetch_add(idle, Relaxed);
                tree.add_samples(leaf, idle, idle * interval_ns);
            }
            slot.last_leaf.store(leaf + 1, Relaxed);
        }
    }
}

/// The method path, root first, of one raw sample (`frames`: leaf IP, then return addresses).
fn stack_path(frames: &[u64], truncated: bool, resolver: &mut dyn FrameResolver, path: &mut Vec<u32>) {
    path.clear();
    if truncated {
        path.push(resolver.truncated());
    }
    let mut last: Option<Frame> = None;
    for (depth, &ip) in frames.iter().enumerate().rev() {
        // Callers' return addresses point after the call: look up ip - 1.
        let ip = if depth == 0 { ip as usize } else { (ip as usize).saturating_sub(1) };
        let frame = resolver.resolve(ip);
        if last.is_some_and(|l| l.method == frame.method) {
            // A run of the same native code (no symbols to tell functions apart) is one frame; so
            // is a method continuing in its OSR version. Real recursion stays.
            let outer_return = frames.get(depth + 1).map_or(0, |&r| r as usize);
            if !frame.managed || resolver.calls_runtime(outer_return) {
                continue;
            }
        }
        path.push(frame.method);
        last = Some(frame);
    }
}

/// [`stack_path`] for values an external sampler wrote (not addresses: no `ip - 1`, no call
/// decoding): root first, a run of the same non-managed pseudo-frame collapsed, recursion kept.
fn resolved_path(frames: &[u64], truncated: bool, resolver: &mut dyn FrameResolver, path: &mut Vec<u32>) {
    path.clear();
    if truncated {
        path.push(resolver.truncated());
    }
    let mut last: Option<Frame> = None;
    for &value in frames.iter().rev() {
        let frame = resolver.resolve(value as usize);
        if !frame.managed && last.is_some_and(|l| l.method == frame.method) {
            continue;
        }
        path.push(frame.method);
        last = Some(frame);
    }
}

/// (library file name, library path, symbol) for native code, from `dladdr`.
pub fn native_symbol(ip: usize) -> Option<(String, String, Option<String>)> {
    // SAFETY: dladdr only reads the loader's tables and fills `info`; the strings it returns
    // belong to loaded objects and are copied before returning.
    unsafe {
        let mut info: libc::Dl_info = std::mem::zeroed();
        if libc::dladdr(ip as *const libc::c_void, &mut info) == 0 || info.dli_fname.is_null() {
            return None;
        }
        let path = std::ffi::CStr::from_ptr(info.dli_fname).to_string_lossy().into_owned();
        let library = path.rsplit('/').next().unwrap_or(&path).to_string();
        let symbol = (!info.dli_sname.is_null())
            .then(|| std::ffi::CStr::from_ptr(info.dli_sname).to_string_lossy().into_owned());
        Some((library, path, symbol))
    }
}

/// The pseudo-method for native code at `ip`: `[native] lib!symbol`, `[native] lib`, or
/// `[unknown code]` (stubs and helpers in anonymous memory).
pub fn native_frame(methods: &crate::snapshot::MethodTable, ip: usize) -> u32 {
    match native_symbol(ip) {
        Some((library, path, Some(symbol))) => methods.pseudo(&format!("[native] {library}!{symbol}"), &library, &path),
        Some((library, path, None)) => methods.pseudo(&format!("[native] {library}"), &library, &path),
        None => methods.pseudo("[unknown code]", "", ""),
    }
}

/// Samples taken (counting merged expirations) and lost, so far.
pub fn totals() -> (u64, Losses) {
    let ring_full = SLOTS[..USED.load(Acquire).min(MAX_THREADS)]
        .iter()
        // SAFETY: as in `drain`.
        .filter_map(|s| unsafe { s.ring.load(Acquire).as_ref() })
        .map(|r| r.dropped.load(Relaxed))
        .sum();
    let losses = Losses {
        ring_full,
        unknown_thread: UNKNOWN_THREAD.load(Relaxed),
        too_many_threads: TOO_MANY_THREADS.load(Relaxed),
        deferred: DEFERRED.load(Relaxed),
        no_managed_frames: NO_MANAGED_FRAMES.load(Relaxed),
        signal_blocked: SIGNAL_BLOCKED.load(Relaxed),
        signal_taken: SIGNAL_TAKEN.load(Relaxed),
    };
    (TAKEN.load(Relaxed), losses)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Addresses 100..199 are method 1, 200..299 method 2 (managed); 900.. native library 9.
    /// A return address of 555 is after a runtime-helper call.
    struct Fake;
    impl FrameResolver for Fake {
        fn resolve(&mut self, ip: usize) -> Frame {
            Frame { method: (ip / 100) as u32, managed: ip < 900 }
        }
        fn truncated(&mut self) -> u32 {
            77
        }
        fn calls_runtime(&mut self, return_address: usize) -> bool {
            return_address == 555
        }
    }

    fn path(frames: &[u64], truncated: bool) -> Vec<u32> {
        let mut path = Vec::new();
        stack_path(frames, truncated, &mut Fake, &mut path);
        path
    }

    #[test]
    fn stacks_come_out_root_first_with_return_addresses_adjusted() {
        // leaf ip 150 (method 1), called from method 2 (return address 201 → 200)
        assert_eq!(path(&[150, 201], false), vec![2, 1]);
        // a return address at the start of a range belongs to the previous function (ip - 1)
        assert_eq!(path(&[150, 200], false), vec![1, 1]);
    }

    #[test]
    fn external_samples_weigh_whole_intervals_and_lose_no_time() {
        // On time: one period; a late tick more; jitter does not lose or double-count time.
        assert_eq!(weigh(0, 1000, 1000), (1, 0));
        assert_eq!(weigh(0, 2600, 1000), (3, -400));
        assert_eq!(weigh(-400, 900, 1000), (1, -500));
        assert_eq!(weigh(0, 400, 1000), (0, 400)); // a thread that barely ran: nothing yet
        assert_eq!(weigh(400, 200, 1000), (1, -400));
        let (mut carry, mut total) = (0i64, 0u64);
        for elapsed in [700u64, 1300, 950, 1050, 2000, 10, 990, 1000] {
            let (p, c) = weigh(carry, elapsed, 1000);
            total += p;
            carry = c;
        }
        assert_eq!(total as i64 * 1000 + carry, 8000, "every nanosecond is counted once");
        assert!(weigh(i64::MAX, u64::MAX, 0).0 > 0, "no overflow at the extremes");
    }

    #[test]
    fn external_values_pass_through_unchanged() {
        struct Ids;
        impl FrameResolver for Ids {
            fn resolve(&mut self, value: usize) -> Frame {
                Frame { method: value as u32 % 1000, managed: value < 1000 }
            }
            fn raw_addresses(&self) -> bool {
                false
            }
            fn truncated(&mut self) -> u32 {
                77
            }
        }
        let mut path = Vec::new();
        // Leaf first in, root first out; no `ip - 1`; recursion kept; a run of one pseudo-frame
        // (not managed) collapsed.
        resolved_path(&[3, 3, 2, 1009, 1009, 1], true, &mut Ids, &mut path);
        assert_eq!(path, vec![77, 1, 9, 2, 3, 3]);
    }

    #[test]
    fn recursion_stays_native_runs_and_osr_collapse() {
        assert_eq!(path(&[150, 160, 170, 250], false), vec![2, 1, 1, 1]);
        assert_eq!(path(&[950, 960, 970, 150], false), vec![1, 9]);
        // method 5 at the root called through a runtime helper (return address 555): OSR.
        assert_eq!(path(&[520, 555], false), vec![5]);
        assert_eq!(path(&[150], true), vec![77, 1]);
    }
}
