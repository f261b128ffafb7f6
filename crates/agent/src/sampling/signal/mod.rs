//! Sonde's own sampler (CoreCLR). Two ways to raise the samples, into the same handler:
//! * **`--clock cpu`: per-thread timers** ([`timers`]): each thread's task-clock event raises the
//!   sampling signal on it after each interval of its CPU time, in user mode only (never inside a
//!   system call). The sampler thread then only keeps house every [`HOUSEKEEPING`] period.
//! * **`--clock wall`, and the CPU clock where the kernel refuses the timers: the sampler
//!   thread** wakes every interval on the monotonic clock and reads each managed thread's CPU-time
//!   clock. Only a thread that is running ([`running`]) is signalled — with the sampling signal of
//!   [`handler`], never SIGPROF — and its sample stands for the intervals it ran (`--clock cpu`)
//!   or that passed (`--clock wall`). A blocked thread is never interrupted (a signal would cut
//!   its `sleep` or `poll` short): its stack has not changed since it last ran, so the intervals
//!   it spends blocked are charged to its last sample (wall clock), as is CPU time used in bursts
//!   between two looks (CPU clock). (POSIX per-thread CPU-time timers were rejected: they fire
//!   only at the kernel's scheduler tick — 250 Hz here — whatever the rate; see
//!   `docs/SAMPLING.md`.)
//!
//! The handler, on the sampled thread, walks the frame-pointer chain from the interrupted context
//! (the JIT keeps RBP frames on Unix x64) inside the thread's own stack only ([`maps`] finds it
//! for threads registered from elsewhere), and writes the raw instruction pointers to the
//! thread's ring.

mod handler;
pub mod maps;
mod threads;
mod timers;

pub use handler::block_on_this_thread;

use super::common::{COUNTERS, Clock, STOPPED, Sampler, configure, notice, thread_cpu_ns};
use super::doorbell;
use super::drain;
use super::paths::FrameResolver;
use super::slots;
use std::sync::atomic::{AtomicBool, Ordering::*};
use std::time::Duration;
use threads::{PerThread, WAKE, state, wake_sampler};

/// Threads are sampled by their own task-clock timers ([`timers`], `--clock cpu` where the kernel
/// allows it) rather than by the sampler thread's looks.
static TIMERS: AtomicBool = AtomicBool::new(false);
/// Thread `tid` (slot `index`) registered: when `new`, the slot's bookkeeping starts afresh (a
/// slot is reused once its previous thread is gone) and the thread's CPU time so far is not
/// sampled; when it registered itself (`own_thread`), its stack's limits are taken now.
pub(super) fn registered(index: usize, tid: u32, new: bool, own_thread: bool) {
    let Some(state) = state(index) else { return };
    if new {
        state.periods.store(0, Relaxed);
        state.signalled.store(false, Relaxed);
        state.unsampled_cpu_ns.store(0, Relaxed);
        set_stack(state, 0, 0);
        state.seen_sp.store(0, Relaxed);
        state.pending_ticks.store(0, Relaxed);
        state.carry_ns.store(0, Relaxed);
        // The slot's previous thread is gone (its slot was freed): so may its timer be.
        drop_timer(state);
        state.last_cpu_ns.store(thread_cpu_ns(tid).unwrap_or(0), Relaxed);
    }
    if own_thread && let Some((low, high)) = crate::sampling::stack_walk::own_stack() {
        set_stack(state, low, high);
    }
}

/// Thread `tid` (slot `index`, new) is now sampled: with per-thread timers, its timer starts.
/// Without one (the kernel refused), the sampler thread looks at it every interval.
/// Registrations hold `slots::REGISTERING`.
pub(super) fn activated(index: usize, tid: u32) {
    let (Some(state), Some(slot), Some(signal)) = (state(index), slots::used().get(index), handler::signal_number())
    else {
        return;
    };
    if !TIMERS.load(Relaxed) {
        return;
    }
    let generation = slot.generation.load(Acquire);
    let token = slots::token(index, generation);
    if let Some(timer) = timers::Timer::start(tid, super::common::interval_ns(), signal, token) {
        state.timer_generation.store(generation, Release);
        state.timer.store(timer.into_raw(), Release);
    } else {
        wake_sampler(); // it looks at the thread every interval from now on
    }
}

/// Closes the timer of a slot whose thread is gone.
fn drop_timer(state: &PerThread) {
    let fd = state.timer.swap(-1, AcqRel);
    if fd >= 0 {
        drop(timers::Timer::from_raw(fd));
    }
}

/// Closes the timers of freed slots (their threads are gone). Sampler thread.
fn drop_freed_timers() {
    for (index, slot) in slots::used().iter().enumerate() {
        let Some(state) = state(index) else { continue };
        if state.timer.load(Acquire) < 0 || state.timer_generation.load(Acquire) == slot.generation.load(Acquire) {
            continue;
        }
        // Not while the slot is being registered again (that drops it too, then starts its own).
        let _registering = slots::REGISTERING.lock().unwrap_or_else(|e| e.into_inner());
        if state.timer_generation.load(Acquire) != slot.generation.load(Acquire) {
            drop_timer(state);
        }
    }
}

/// The sampler thread, for [`stop`].
static SAMPLER: std::sync::Mutex<Option<std::thread::JoinHandle<()>>> = std::sync::Mutex::new(None);

/// Stops sampling for good (a detach): the sampler thread ends, every thread's timer stops and
/// is closed, and the handlers give way ([`handler::uninstall`]). The drain is the caller's.
pub(super) fn stop() {
    TIMERS.store(false, Relaxed); // a thread registered from now on gets no timer
    if let Some(sampler) = SAMPLER.lock().unwrap_or_else(|e| e.into_inner()).take() {
        WAKE.ring();
        let _ = sampler.join(); // it sees `STOPPED` within a tick, or now if keeping house
    }
    let timers: Vec<libc::c_int> = (0..slots::used().len())
        .filter_map(|index| Some(state(index)?.timer.swap(-1, AcqRel)).filter(|&fd| fd >= 0))
        .collect();
    for &fd in &timers {
        timers::retire(fd);
    }
    // A handler runs for microseconds: one that had read a route before it went is done by now.
    std::thread::sleep(Duration::from_millis(20));
    for fd in timers {
        timers::disarm(fd);
        drop(timers::Timer::from_raw(fd));
    }
    handler::uninstall();
}

/// Installs the signal handler and starts the drain thread (`after_release`: what it does
/// with the slots it frees). Threads are added with `sampling::register`.
pub(super) fn start(
    interval: Duration,
    clock: Clock,
    cpu_timers: bool,
    resolver: Box<dyn FrameResolver>,
    after_release: fn(),
) -> std::io::Result<&'static str> {
    configure(interval, Sampler::Signal);
    handler::install()?;
    let timed = clock == Clock::Cpu && cpu_timers && timers::available();
    TIMERS.store(timed, Relaxed);
    let sampler = crate::base::running::spawn_thread("sonde-sampler", move || {
        handler::block_on_this_thread();
        run_sampler(interval, clock);
    })?;
    *SAMPLER.lock().unwrap_or_else(|e| e.into_inner()) = Some(sampler);
    drain::start(resolver, handler::block_on_this_thread, after_release)?;
    Ok(if timed { "signal (per-thread timers)" } else { "signal (sampler thread)" })
}

/// True when per-thread timers raise the signal (else the sampler thread does).
pub(super) fn timed() -> bool {
    TIMERS.load(Relaxed)
}

/// Publishes a thread's stack limits (low first: the handler checks `sp < high`, and a high of
/// 0 means unknown).
fn set_stack(state: &PerThread, low: usize, high: usize) {
    state.stack_high.store(0, Release);
    state.stack_low.store(low as u64, Release);
    state.stack_high.store(high as u64, Release);
}

/// The calling thread finished a catch block. The exception may have started as a fault (a null
/// dereference) whose runtime handler did not return but resumed the program at the catch (see
/// `handler`): the signal mask it ran with — the sampling signal blocked — is still the thread's.
/// Unblock the sampling signal again; the fault handler's frames are dead by now.
pub fn fault_handled_on_this_thread() {
    handler::unblock_on_this_thread();
}

/// How long a running thread may keep our signal pending (blocked: a runtime's fault handler
/// handling a first exception can take tens of milliseconds) before its periods stop accumulating
/// for its next sample and count as lost.
const PENDING_LIMIT: Duration = Duration::from_millis(200);

/// How often (in ticks) the sampler checks the fault wrappers and looks up unknown stacks.
const CHECK_EVERY: u64 = 16;

/// How often the sampler thread wakes when every sampled thread has its own timer: to see ended
/// threads, waiting ones and the handler's health, not to sample. At low rates, once a second
/// ([`doorbell::LOW_RATE_PERIOD`]).
const HOUSEKEEPING: Duration = Duration::from_millis(10);

/// The sampler thread: every interval, decides which threads to sample and signals them; with
/// every thread on its own timer, only every [`HOUSEKEEPING`] period.
fn run_sampler(interval: Duration, clock: Clock) {
    let interval_ns = (interval.as_nanos() as u64).max(1);
    let start = std::time::Instant::now();
    let mut tick: u64 = 0;
    let mut deadline = start;
    let mut step = interval;
    let mut last_wall_ns = 0u64;
    let mut stopped = false;
    let pending_limit = (PENDING_LIMIT.as_nanos() as u64 / interval_ns).clamp(1, u64::from(u32::MAX)) as u32;
    // Per slot: the thread's stat file, and the slot's generation it was opened in (slots are
    // reused).
    let mut stats: Vec<Option<handler::ThreadStat>> = Vec::new();
    let mut stat_generations: Vec<u32> = Vec::new();
    // Threads waiting for a slot: CPU time at the last look, and not counted yet.
    let mut waiting: std::collections::HashMap<u32, (u64, u64)> = std::collections::HashMap::new();
    let min_run_ns = min_run_ns(interval_ns);
    while !STOPPED.load(Relaxed) {
        tick += 1;
        // Absolute deadlines: the rate does not drift with the loop's own cost.
        deadline += step;
        if let Some(wait) = deadline.checked_duration_since(std::time::Instant::now()) {
            if step > interval {
                // Keeping house: a doorbell may cut the wait short (no tick is due).
                if WAKE.wait(wait) {
                    deadline = std::time::Instant::now();
                }
            } else {
                std::thread::sleep(wait);
            }
        } else {
            // Starved (a busy machine): skip the missed ticks; wall weights use elapsed time.
            deadline = std::time::Instant::now();
        }
        let now_ns = start.elapsed().as_nanos() as u64;
        let wall_periods = ((now_ns - last_wall_ns) / interval_ns).max(1);
        last_wall_ns = now_ns;
        let housekeeping = step > interval || step >= HOUSEKEEPING;
        let check = housekeeping || tick.is_multiple_of(CHECK_EVERY);
        if !stopped {
            stopped = check_handler(check);
            if stopped {
                disarm_timers();
            }
        }
        if check {
            find_unknown_stacks();
            drop_freed_timers();
        }
        count_waiting(&mut waiting, clock, interval_ns, wall_periods);
        let used = slots::used();
        stats.resize_with(used.len(), || None);
        stat_generations.resize(used.len(), 0);
        // The next wake-up: every interval while a thread is looked at, else housekeeping only.
        let mut looked_at = clock == Clock::Wall || stopped;
        for (index, slot) in used.iter().enumerate() {
            let Some(state) = state(index) else { continue };
            // The generation first: a slot freed and claimed again since has a newer one.
            let generation = slot.generation.load(Acquire);
            if !slot.active.load(Acquire) {
                stats[index] = None;
                continue;
            }
            let tid = slot.tid.load(Acquire);
            if stat_generations[index] != generation {
                stat_generations[index] = generation;
                stats[index] = None;
            }
            let timed = !stopped && state.timer.load(Acquire) >= 0;
            if timed && !housekeeping {
                continue;
            }
            let looked = std::time::Instant::now();
            let Some(cpu) = thread_cpu_ns(tid) else {
                slots::ended(index, generation); // the thread is gone
                stats[index] = None;
                continue;
            };
            if timed {
                continue; // its timer samples it
            }
            looked_at = true;
            let ran = cpu.saturating_sub(state.last_cpu_ns.swap(cpu, Relaxed));
            let periods = match clock {
                Clock::Wall => wall_periods,
                Clock::Cpu => {
                    let pending = state.unsampled_cpu_ns.load(Relaxed) + ran;
                    state.unsampled_cpu_ns.store(pending % interval_ns, Relaxed);
                    pending / interval_ns
                }
            };
            if periods == 0 {
                continue;
            }
            if stopped {
                COUNTERS.signal_taken.fetch_add(periods, Relaxed);
                continue;
            }
            // Wall clock: each thread is signalled once whatever its state, so that one blocked
            // from before it was registered (an attach, `sonde dump`) has its stack known. Its
            // stack's limits must be known for a walk: until they are (the first signals tell
            // the sampler where the stack is), a few more.
            let first = clock == Clock::Wall && {
                let sent = slot.first_signals.load(Relaxed);
                let limits = state.stack_high.load(Acquire) != 0;
                let next = if limits { slots::FIRST_DONE } else { sent + 1 };
                let due = sent != slots::FIRST_DONE && (limits || sent < FIRST_SIGNALS_WITHOUT_LIMITS);
                if due {
                    slot.first_signals.store(next, Relaxed);
                }
                due
            };
            if !first && !running(tid, cpu, ran >= min_run_ns, looked, &mut stats[index]) {
                // Blocked: a signal would interrupt its system call. Its stack is the one it had
                // when it last ran: charged there (`drain`).
                slot.idle_periods.fetch_add(periods, AcqRel);
                continue;
            }
            if state.signalled.load(Acquire) {
                // Running with our signal still pending: blocked by the thread (or a fault handler
                // of the runtime). The periods wait for the sample, for a while.
                if state.pending_ticks.fetch_add(1, Relaxed) >= pending_limit {
                    COUNTERS.signal_blocked.fetch_add(periods, Relaxed);
                } else {
                    state.periods.fetch_add(periods, AcqRel);
                    COUNTERS.deferred.fetch_add(1, Relaxed);
                }
                continue;
            }
            state.pending_ticks.store(0, Relaxed);
            state.periods.fetch_add(periods, AcqRel);
            state.signalled.store(true, Release);
            if !handler::signal(tid, slots::token(index, generation)) {
                state.signalled.store(false, Release);
                slots::ended(index, generation);
            }
        }
        // A thread registered meanwhile without a timer rings the doorbell: the next pass sees
        // it. Housekeeping every 10 ms (or eight intervals) at high rates; at low ones
        // (`sonde daemon`'s 97 Hz) once a second: a wake-up costs more than the samples there.
        // (A program that takes the sampling signal over gets at most one stray signal per
        // thread whatever the period: each timer is armed for one overflow at a time and only
        // our handler re-arms it.)
        step = if looked_at || !TIMERS.load(Relaxed) {
            interval
        } else if doorbell::low_rate(interval) {
            doorbell::LOW_RATE_PERIOD
        } else {
            HOUSEKEEPING.max(interval * 8)
        };
        // At low rates, one wake-up a second for both threads: the drain's too (its doorbell
        // still wakes it for a ring half full).
        let drains = step == doorbell::LOW_RATE_PERIOD;
        drain::sampler_drains(drains);
        if drains {
            drain::drain();
        }
    }
}

/// Signals a blocked thread gets while its stack's limits are still unknown (see the sampler).
const FIRST_SIGNALS_WITHOUT_LIMITS: u8 = 8;

/// The program took the sampling signal: no timer raises it any more (an armed one would fire
/// once more, into the program's handler).
fn disarm_timers() {
    TIMERS.store(false, Relaxed);
    for index in 0..slots::used().len() {
        if let Some(state) = state(index) {
            let fd = state.timer.load(Acquire);
            if fd >= 0 {
                timers::disarm(fd);
            }
        }
    }
}

/// Threads waiting for a slot (more than [`slots::MAX_THREADS`] live at once) are not sampled:
/// the intervals they run (`--clock cpu`), or that pass (`--clock wall`), count as
/// `too_many_threads` until the drain gives them a slot.
fn count_waiting(waiting: &mut std::collections::HashMap<u32, (u64, u64)>, clock: Clock, interval_ns: u64, wall: u64) {
    let tids = slots::waiting();
    waiting.retain(|tid, _| tids.contains(tid));
    for tid in tids {
        let Some(cpu) = thread_cpu_ns(tid) else { continue };
        let (last_cpu, unsampled) = waiting.entry(tid).or_insert((cpu, 0));
        let ran = cpu.saturating_sub(std::mem::replace(last_cpu, cpu));
        let periods = match clock {
            Clock::Wall => wall,
            Clock::Cpu => {
                let pending = *unsampled + ran;
                *unsampled = pending % interval_ns;
                pending / interval_ns
            }
        };
        COUNTERS.too_many_threads.fetch_add(periods, Relaxed);
    }
}

/// The CPU time a thread must have used since the last look to be signalled: a tenth of the
/// interval, and at least 20 µs — more than the kernel spends waking a thread at the end of a
/// `poll` or a `sleep` (a thread caught there, runnable but still inside the call, would see
/// the call fail with `EINTR`; `poll` checks for signals once more after its timeout).
fn min_run_ns(interval_ns: u64) -> u64 {
    (interval_ns / 10).max(20_000)
}

/// How old a look may be when the signal is sent: a sampler preempted between its look and the
/// signal looks again (the thread may have blocked meanwhile).
const FRESH: Duration = Duration::from_micros(50);

/// True when thread `tid` is to be signalled now: it has run since the last look (`has_run`:
/// at least [`min_run_ns`] of CPU time — the clock is exact for a running thread) and it is on a
/// CPU (its clock, `cpu` at the look, moves) or the kernel says it is runnable (`R` in
/// `/proc/self/task/TID/stat`, read through a file kept open per thread: `stat`), as it still
/// was when the look ended — a look older than [`FRESH`] (begun at `looked`) is made again. A
/// thread seen blocked is never signalled: a signal there would make the call fail with `EINTR`.
/// A thread that runs only briefly between two blocking calls (a loop of `poll`s) is not
/// signalled either: its few microseconds are charged to its last sample. What is left is the race of a thread that ran, was seen running, and entered a
/// blocking call in the microseconds before the signal arrived.
fn running(
    tid: u32,
    cpu: u64,
    has_run: bool,
    looked: std::time::Instant,
    stat: &mut Option<handler::ThreadStat>,
) -> bool {
    if !has_run {
        return false;
    }
    // On a CPU right now: its clock moved since the read a microsecond ago (the kernel brings a
    // running thread's clock up to date on every read; a blocked or preempted one's stands
    // still). One clock read (~1 µs here) instead of the `stat` file (~4.5 µs).
    if thread_cpu_ns(tid).is_some_and(|again| again > cpu) && looked.elapsed() <= FRESH {
        return true;
    }
    if stat.is_none() {
        *stat = handler::ThreadStat::open(tid);
    }
    let Some(stat) = stat.as_ref() else { return false };
    stat.state() == Some(b'R') && (looked.elapsed() <= FRESH || stat.state() == Some(b'R'))
}

/// Reacts to what [`handler::check`] finds; true when sampling must stop.
fn check_handler(wrappers: bool) -> bool {
    match handler::check(wrappers) {
        handler::Health::Installed => false,
        handler::Health::MovedOffAlternateStack => {
            crate::base::log::log!("a fault handler was replaced: the sampling handler now runs on the thread's stack");
            false
        }
        handler::Health::SignalTaken => {
            let signal = handler::signal_number().unwrap_or(0);
            let message = format!(
                "the program installed its own handler for the sampling signal ({signal}): sampling stopped, \
                 the profile covers the run until then"
            );
            crate::base::log::log!("{message}");
            notice(message);
            true
        }
    }
}

/// Gives a stack's limits to threads registered from elsewhere, from the stack pointer their
/// first samples saw (see [`maps`]).
fn find_unknown_stacks() {
    for index in 0..slots::used().len() {
        let Some(state) = state(index) else { continue };
        if state.stack_high.load(Acquire) != 0 {
            continue;
        }
        let sp = state.seen_sp.swap(0, Relaxed) as usize;
        if sp == 0 {
            continue;
        }
        if let Some((low, high)) = maps::stack_containing(sp) {
            set_stack(state, low, high);
        }
    }
}
