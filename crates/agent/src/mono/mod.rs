//! The Mono backend: the same agent library, loaded by Mono as a profiler module.
//!
//! Mono loads `libmono-profiler-<name>.so` for `--profile=<name>` (the controller provides the
//! agent under the name `libmono-profiler-sonde.so` on `LD_LIBRARY_PATH` and sets
//! `MONO_ENV_OPTIONS=--profile=sonde`) and calls [`mono_profiler_init_sonde`], before the runtime
//! is initialised. From there on everything mirrors the CoreCLR backend (`profiler.rs`) and reuses
//! its parts: the configuration, the IPC link and snapshots, per-thread call trees, the
//! `--timing sampled` sampler, the last-chance signal handlers and the hook-cost calibration.
//!
//! What differs is how calls arrive:
//! * **The filter.** Mono asks every installed profiler, per method it compiles, which
//!   instrumentation it wants (`call_instrumentation_filter`). This is the function-ID mapper's
//!   job on CoreCLR: name the method (`metadata.rs`), apply the `MethodFilter`, give a traced
//!   method its id. It runs on the compiling thread, which is attached to the runtime — the only
//!   place the agent calls Mono's API (a call from an unattached thread, e.g. the IPC or sampler
//!   thread, aborts the process).
//! * **Enter/leave** are plain C callbacks receiving the `MonoMethod*` (Mono calls them through
//!   `mono_profiler_raise_method_enter`, from code the JIT emitted), so each looks its method id
//!   up in a lock-free table (`ids.rs`) and then does what the CoreCLR hooks do: the call tree's
//!   fast path (`CallTree::enter_fast`/`leave_fast`, with an `rdtsc` tick), else its guarded slow
//!   path. Exceptional exits arrive as
//!   `method_exception_leave` and tail calls as `method_tail_call`; both close the frame like a
//!   leave. Mono does not inline a method it instruments, so counts are exact without a flag.
//! * **Hook cost.** [`MONO_PROBE`] runs the real callbacks (through function pointers, as Mono
//!   calls them) on a private tree, exactly as `hooks::measure_cost` does for the trampolines;
//!   the compensation then works as on CoreCLR. Not measured: Mono's own dispatch around the
//!   callbacks (the JIT-emitted call and `mono_profiler_raise_*`'s loop over profilers: ~11 ns a
//!   call on the project's machine, `mono-floor-empty` in `scripts/bench.py`), which stays in the
//!   figures — compensation errs low, as it is designed to. `mono_profiler_raise_*` is not
//!   exported, and calling it would hand a fake method to any other profiler loaded anyway.
//! * **Threads.** Mono identifies threads by their `pthread_t`; the agent's registry by OS thread
//!   id. `thread_started` runs on the new thread itself, which is where the two are paired.
//!
//! Sampling mode (`sampling.rs`) uses Mono's own sampler instead of the filter and enter/leave:
//! names at JIT time (`jit_done`), stacks from Mono's async-safe walk in its signal handler.
//!
//! Every callback runs behind a panic guard (the enter/leave fast paths and the sample callback,
//! which cannot panic, before it); the first panic switches the backend off (the profile is lost,
//! the program is not). Nothing is printed: `SONDE_LOG` only.

mod ids;
mod metadata;
mod sampling;

use crate::clock;
use crate::hooks::{self, CostProbe};
use crate::link::{Link, SnapshotFacts};
use crate::log::log;
use crate::sampler;
use crate::signals;
use crate::snapshot::MethodTable;
use crate::threads;
use ids::MethodIds;
use sonde_mono_sys::*;
use sonde_profile::{Mode, Runtime, SampleClock, Timing};
use sonde_protocol::{AgentConfig, Hello, MethodRecord, PROTOCOL_VERSION};
use std::collections::HashMap;
use std::ffi::{CStr, c_char, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::ptr::null_mut;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// State that exists once the entry point succeeded.
struct Backend {
    api: MonoApi,
    config: AgentConfig,
    link: Link,
    facts: SnapshotFacts,
    shut_down: AtomicBool,
    threads: Mutex<ThreadIds>,
}

/// `pthread_t` (Mono's thread id) → OS thread id, and names that arrived before the pairing.
#[derive(Default)]
struct ThreadIds {
    os_tid: HashMap<usize, u32>,
    pending_names: HashMap<usize, String>,
}

static BACKEND: OnceLock<Backend> = OnceLock::new();
static METHODS: OnceLock<MethodTable> = OnceLock::new();
/// `MonoMethod*` → the method's id in [`METHODS`] (tracing), or its index among the compiled
/// methods (sampling: `sampling.rs`).
static IDS: MethodIds = MethodIds::new();
/// Set by the first call of the entry point.
static STARTED: AtomicBool = AtomicBool::new(false);
/// Cleared by the first panic in a callback.
static ENABLED: AtomicBool = AtomicBool::new(true);

/// The instrumentation Sonde asks for on a traced method: no call contexts (they cost a copy of
/// the frame on every call).
const TRACED: MonoProfilerCallInstrumentationFlags = MONO_PROFILER_CALL_INSTRUMENTATION_ENTER
    | MONO_PROFILER_CALL_INSTRUMENTATION_LEAVE
    | MONO_PROFILER_CALL_INSTRUMENTATION_TAIL_CALL
    | MONO_PROFILER_CALL_INSTRUMENTATION_EXCEPTION_LEAVE;

fn methods() -> &'static MethodTable {
    METHODS.get_or_init(MethodTable::default)
}

/// Runs a callback body unless a previous one panicked; a panic is caught (it must never unwind
/// into Mono), logged, and switches the backend off.
#[inline(always)]
fn guarded<R>(default: R, f: impl FnOnce() -> R) -> R {
    if !ENABLED.load(Relaxed) {
        return default;
    }
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(_) => {
            ENABLED.store(false, Relaxed);
            disable();
            default
        }
    }
}

#[cold]
fn disable() {
    log!("a Mono callback panicked; profiling stops here");
    if let Some(backend) = BACKEND.get() {
        backend.link.send_error("the agent hit an internal error and stopped profiling".into());
    }
}

/// Mono's entry point for `--profile=sonde[:ARGS]`; `desc` is the whole option value.
///
/// # Safety
/// Called once by Mono, before the runtime is initialised, with a NUL-terminated string (or null).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mono_profiler_init_sonde(desc: *const c_char) {
    guarded((), || {
        let desc = if desc.is_null() {
            String::new()
        } else {
            // SAFETY: Mono passes the NUL-terminated option value, valid during this call.
            unsafe { CStr::from_ptr(desc) }.to_string_lossy().into_owned()
        };
        init(&desc)
    });
}

fn init(desc: &str) {
    clock::start();
    let config = match AgentConfig::from_env(|k| std::env::var(k).ok()) {
        Ok(config) => config,
        Err(e) => {
            // No log file configured yet is fine: the controller reports that no agent connected.
            log!("bad configuration: {e}");
            return;
        }
    };
    if let Some(path) = &config.log {
        crate::log::open(path);
    }
    log!("loaded by Mono (--profile={desc}); config {config:?}");
    if STARTED.swap(true, Relaxed) {
        log!("already loaded (--profile=sonde given twice?); ignoring this one");
        return;
    }
    let api = MonoApi::from_process();
    let Some(socket) = config.socket.clone() else {
        log!("{} is not set: nothing to report to; staying inactive", sonde_protocol::config::ENV_SOCKET);
        return;
    };
    let hello = Hello {
        protocol: PROTOCOL_VERSION,
        agent_version: env!("CARGO_PKG_VERSION").to_string(),
        pid: std::process::id(),
        runtime: Runtime { kind: "mono".into(), version: api.as_ref().map_or("unknown".into(), runtime_version) },
        mode: config.mode,
        timing: config.timing,
        clock: (config.mode == Mode::Sampling).then_some(config.clock),
        command_line: crate::link::process_command_line(),
        started_unix_ms: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64),
    };
    let link = match Link::connect(&socket, hello) {
        Ok(link) => link,
        Err(e) => {
            log!("{e}");
            return;
        }
    };
    let api = match api {
        Ok(api) => api,
        Err(e) => {
            log!("{e}");
            link.send_error(format!("{e}: cannot profile this Mono process"));
            return;
        }
    };
    if config.mode == Mode::Sampling {
        start_sampling(api, config, link);
        return;
    }

    let timed = config.timing == Timing::Exact;
    let floor = hooks::Floor::from_env();
    if let Some(floor) = floor {
        log!("benchmark floor callbacks: {floor:?}; nothing is recorded");
    }
    let interval = Duration::from_micros(config.interval_us);
    let facts = SnapshotFacts {
        sample_interval_ns: if timed { 0 } else { interval.as_nanos() as u64 },
        exact_timing: timed && floor.is_none(),
        sampling: false,
    };
    let backend = BACKEND.get_or_init(|| Backend {
        api,
        config,
        link,
        facts,
        shut_down: AtomicBool::new(false),
        threads: Mutex::new(ThreadIds::default()),
    });
    if timed {
        for (key, id) in PROBE_KEYS.iter().zip(1u32..) {
            IDS.insert(std::ptr::from_ref(key) as usize, id);
        }
        hooks::use_cost_probe(&MONO_PROBE);
        let cost = hooks::measure_cost();
        log!("callback cost: {:.1} ticks inside a call, {:.1} around it", cost.inner_ticks, cost.outer_ticks);
    } else if let Err(e) = sampler::start(interval) {
        log!("cannot start the sampler: {e}");
        backend.link.send_error(format!("cannot start the sampler thread: {e}"));
        return;
    }
    register_callbacks(&backend.api, timed, floor);
    // SAFETY: registers a function of this library (which Mono never unloads) to run at exit.
    if unsafe { libc::atexit(at_exit) } != 0 {
        log!("cannot register the exit handler");
    }
    if let Err(e) = backend.link.serve(methods(), facts) {
        log!("cannot start the IPC thread: {e}");
    }
    log!("profiling");
}

/// Sampling mode: Mono's sampler signals the threads, `sampling.rs` walks their stacks; Sonde
/// runs the drain thread only. No filter, no enter/leave, no JIT option changed.
fn start_sampling(api: MonoApi, config: AgentConfig, link: Link) {
    let interval = Duration::from_micros(config.interval_us.max(1));
    // Mono ticks at a whole frequency; the weighting and the times use the interval asked for.
    let freq = ((1_000_000 + config.interval_us / 2) / config.interval_us.max(1)).clamp(1, u32::MAX as u64) as u32;
    let clock = match config.clock {
        SampleClock::Cpu => crate::sampling::Clock::Cpu,
        SampleClock::Wall => crate::sampling::Clock::Wall,
    };
    let facts = SnapshotFacts { sample_interval_ns: interval.as_nanos() as u64, exact_timing: false, sampling: true };
    let backend = BACKEND.get_or_init(|| Backend {
        api,
        config,
        link,
        facts,
        shut_down: AtomicBool::new(false),
        threads: Mutex::new(ThreadIds::default()),
    });
    if let Err(e) = crate::sampling::start_external(interval, clock, sampling::resolver()) {
        log!("cannot start the drain thread: {e}");
        backend.link.send_error(format!("cannot start the sampling drain thread: {e}"));
        return;
    }
    // SAFETY: Mono's profiler API, called from the init function with a null `MonoProfiler*`.
    let handle = unsafe { (backend.api.mono_profiler_create)(null_mut()) };
    let empty = hooks::Floor::from_env() == Some(hooks::Floor::Empty);
    if empty {
        log!("benchmark floor: Mono's sampler with an empty sample callback; nothing is recorded");
    }
    if let Err(e) = sampling::register(&backend.api, handle, freq, empty) {
        log!("{e}");
        backend.link.send_error(format!("{e}: cannot sample this Mono process"));
        return;
    }
    register_common_callbacks(&backend.api, handle);
    // The thread running the init function initialises the runtime and runs Main.
    start_sampling_thread(threads::gettid());
    // SAFETY: registers a function of this library (which Mono never unloads) to run at exit.
    if unsafe { libc::atexit(at_exit) } != 0 {
        log!("cannot register the exit handler");
    }
    if let Err(e) = backend.link.serve(methods(), facts) {
        log!("cannot start the IPC thread: {e}");
    }
    log!("sampling at {freq} Hz (Mono's sampler, real-time mode), {:?} clock", clock);
}

fn start_sampling_thread(os_tid: u32) {
    threads::state_for(os_tid);
    crate::sampling::register(os_tid);
}

fn register_callbacks(api: &MonoApi, timed: bool, floor: Option<hooks::Floor>) {
    let (enter, leave, tail, exception): (
        MonoProfilerMethodEnterCallback,
        MonoProfilerMethodLeaveCallback,
        MonoProfilerMethodTailCallCallback,
        MonoProfilerMethodExceptionLeaveCallback,
    ) = match (floor, timed) {
        (Some(hooks::Floor::Empty), _) => (empty_enter, empty_enter, empty_tail, empty_exception),
        (Some(hooks::Floor::Clock), _) => (clock_enter, clock_enter, clock_tail, clock_exception),
        (None, true) => (enter_exact, leave_exact, tail_call_exact, exception_leave_exact),
        (None, false) => (enter_untimed, leave_untimed, tail_call_untimed, exception_leave_untimed),
    };
    // SAFETY: Mono's profiler API, called from the profiler's init function as it requires, with
    // a null `MonoProfiler*` (documented as allowed) and callbacks whose signatures are the
    // header's callback types.
    let handle = unsafe {
        let handle = (api.mono_profiler_create)(null_mut());
        (api.mono_profiler_set_call_instrumentation_filter_callback)(handle, Some(instrumentation_filter));
        (api.mono_profiler_set_method_enter_callback)(handle, Some(enter));
        (api.mono_profiler_set_method_leave_callback)(handle, Some(leave));
        (api.mono_profiler_set_method_tail_call_callback)(handle, Some(tail));
        (api.mono_profiler_set_method_exception_leave_callback)(handle, Some(exception));
        handle
    };
    register_common_callbacks(api, handle);
}

/// The callbacks both modes need: runtime start and end, threads, exceptions.
fn register_common_callbacks(api: &MonoApi, handle: MonoProfilerHandle) {
    // SAFETY: as in `register_callbacks`.
    unsafe {
        (api.mono_profiler_set_runtime_initialized_callback)(handle, Some(runtime_initialized));
        (api.mono_profiler_set_runtime_shutdown_begin_callback)(handle, Some(runtime_shutdown_begin));
        (api.mono_profiler_set_runtime_shutdown_end_callback)(handle, Some(runtime_shutdown_end));
        (api.mono_profiler_set_thread_started_callback)(handle, Some(thread_started));
        (api.mono_profiler_set_thread_stopped_callback)(handle, Some(thread_stopped));
        (api.mono_profiler_set_thread_name_callback)(handle, Some(thread_name));
        (api.mono_profiler_set_exception_throw_callback)(handle, Some(exception_throw));
    }
}

/// `6.8.0.105` from `mono_get_runtime_build_info` (`6.8.0.105 (Debian 6.8.0.105+dfsg-3.3 ...)`).
fn runtime_version(api: &MonoApi) -> String {
    // SAFETY: returns a fresh string (or null) that the caller frees with mono_free; safe to
    // call before the runtime is initialised (it only formats build constants).
    let info = unsafe { (api.mono_get_runtime_build_info)() };
    if info.is_null() {
        return "unknown".into();
    }
    // SAFETY: a NUL-terminated string owned by us until freed below.
    let text = unsafe { CStr::from_ptr(info) }.to_string_lossy().into_owned();
    // SAFETY: allocated by Mono for the caller, freed once.
    unsafe { (api.mono_free)(info.cast::<c_void>()) };
    text.split_whitespace().next().unwrap_or("unknown").to_string()
}

// --- The filter: names the method, applies the MethodFilter, gives it an id. ------------------

unsafe extern "C" fn instrumentation_filter(
    _prof: *mut MonoProfiler,
    method: *mut MonoMethod,
) -> MonoProfilerCallInstrumentationFlags {
    guarded(MONO_PROFILER_CALL_INSTRUMENTATION_NONE, || {
        if trace(method) { TRACED } else { MONO_PROFILER_CALL_INSTRUMENTATION_NONE }
    })
}

fn trace(method: *mut MonoMethod) -> bool {
    let Some(backend) = BACKEND.get() else { return false };
    let key = method as usize;
    if IDS.get(key).is_some() {
        return true; // compiled again (another domain, a recompilation)
    }
    // SAFETY: Mono passed `method` to the filter, which runs on the compiling (attached) thread.
    let Some(names) = (unsafe { metadata::describe(&backend.api, method) }) else { return false };
    if !backend.config.filter.traces(&names.name, &names.assembly) {
        return false;
    }
    let id = methods().insert(key, |id| MethodRecord {
        id,
        name: names.name,
        signature: names.signature,
        assembly: names.assembly,
        module: names.module,
    });
    IDS.insert(key, id)
}

// --- Enter/leave: the hot path. ---------------------------------------------------------------
//
// The common case runs without the panic guard: an id lookup and the call tree's fast path
// (`CallTree::enter_fast`/`leave_fast`), which cannot panic — no indexing, no allocation, no
// arithmetic that can overflow — and cost a few ns. Everything else (a thread's first call, a new
// call path, a resync) takes the guarded slow path, as the CoreCLR trampolines do. A method that
// another profiler asked to instrument also reaches these callbacks; one without an id is ignored.

#[inline(always)]
fn enter(method: *mut MonoMethod, clock: impl Fn() -> u64) {
    if !ENABLED.load(Relaxed) {
        return;
    }
    let Some(id) = IDS.get(method as usize) else { return };
    if let Some(state) = threads::current_if_any()
        && state.tree.enter_fast(id, &clock)
    {
        return;
    }
    guarded((), || threads::current().tree.enter(id, clock()));
}

#[inline(always)]
fn leave(method: *mut MonoMethod, tick: u64) {
    if !ENABLED.load(Relaxed) {
        return;
    }
    let Some(id) = IDS.get(method as usize) else { return };
    if let Some(state) = threads::current_if_any()
        && state.tree.leave_fast(id, || tick)
    {
        return;
    }
    guarded((), || threads::current().tree.leave(id, tick));
}

unsafe extern "C" fn enter_exact(
    _prof: *mut MonoProfiler,
    method: *mut MonoMethod,
    _ctx: *mut MonoProfilerCallContext,
) {
    enter(method, clock::ticks);
}

unsafe extern "C" fn leave_exact(
    _prof: *mut MonoProfiler,
    method: *mut MonoMethod,
    _ctx: *mut MonoProfilerCallContext,
) {
    leave(method, clock::ticks());
}

/// A tail call ends the caller's frame like a leave; the target then enters as a child of the
/// caller's parent.
unsafe extern "C" fn tail_call_exact(_prof: *mut MonoProfiler, method: *mut MonoMethod, _target: *mut MonoMethod) {
    leave(method, clock::ticks());
}

/// An exception unwinding a frame ends it (Mono reports each unwound frame).
unsafe extern "C" fn exception_leave_exact(_prof: *mut MonoProfiler, method: *mut MonoMethod, _exc: *mut MonoObject) {
    leave(method, clock::ticks());
}

unsafe extern "C" fn enter_untimed(
    _prof: *mut MonoProfiler,
    method: *mut MonoMethod,
    _ctx: *mut MonoProfilerCallContext,
) {
    enter(method, || 0);
}

unsafe extern "C" fn leave_untimed(
    _prof: *mut MonoProfiler,
    method: *mut MonoMethod,
    _ctx: *mut MonoProfilerCallContext,
) {
    leave(method, 0);
}

unsafe extern "C" fn tail_call_untimed(_prof: *mut MonoProfiler, method: *mut MonoMethod, _target: *mut MonoMethod) {
    leave(method, 0);
}

unsafe extern "C" fn exception_leave_untimed(_prof: *mut MonoProfiler, method: *mut MonoMethod, _exc: *mut MonoObject) {
    leave(method, 0);
}

// Benchmark floors (`SONDE_BENCH_HOOKS`): callbacks that do nothing, or only read the clock.

unsafe extern "C" fn empty_enter(_: *mut MonoProfiler, _: *mut MonoMethod, _: *mut MonoProfilerCallContext) {}
unsafe extern "C" fn empty_tail(_: *mut MonoProfiler, _: *mut MonoMethod, _: *mut MonoMethod) {}
unsafe extern "C" fn empty_exception(_: *mut MonoProfiler, _: *mut MonoMethod, _: *mut MonoObject) {}
unsafe extern "C" fn clock_enter(_: *mut MonoProfiler, _: *mut MonoMethod, _: *mut MonoProfilerCallContext) {
    std::hint::black_box(clock::ticks());
}
unsafe extern "C" fn clock_tail(_: *mut MonoProfiler, _: *mut MonoMethod, _: *mut MonoMethod) {
    std::hint::black_box(clock::ticks());
}
unsafe extern "C" fn clock_exception(_: *mut MonoProfiler, _: *mut MonoMethod, _: *mut MonoObject) {
    std::hint::black_box(clock::ticks());
}

// --- Hook-cost calibration through the real callbacks. -----------------------------------------

/// Stand-in `MonoMethod*` keys for the calibration's two methods (addresses no runtime method can
/// have), given the ids 1 and 2 at start-up; only the private calibration tree ever sees them.
static PROBE_KEYS: [u8; 2] = [0, 0];

fn probe_key(id: usize) -> *mut MonoMethod {
    std::ptr::from_ref(&PROBE_KEYS[(id + 1) & 1]).cast_mut().cast()
}

fn probe_enter(id: usize) {
    let enter = std::hint::black_box(enter_exact as MonoProfilerMethodEnterCallback);
    // SAFETY: the callback ignores the profiler and context pointers; the key is registered.
    unsafe { enter(null_mut(), probe_key(id), null_mut()) }
}

fn probe_leave(id: usize) {
    let leave = std::hint::black_box(leave_exact as MonoProfilerMethodLeaveCallback);
    // SAFETY: as for `probe_enter`.
    unsafe { leave(null_mut(), probe_key(id), null_mut()) }
}

fn probe_pair(id: usize) {
    probe_enter(id);
    probe_leave(id);
}

static MONO_PROBE: CostProbe = CostProbe::new(probe_enter, probe_leave, probe_pair);

// --- Runtime events. ---------------------------------------------------------------------------

unsafe extern "C" fn runtime_initialized(_prof: *mut MonoProfiler) {
    guarded((), || {
        // Installed now rather than in the init function, so that they chain to the handlers
        // Mono has just installed (its SIGQUIT thread dump, its SIGABRT crash report). Mono
        // leaves SIGTERM at its default action (the process dies without a shutdown), so that
        // one gets a last snapshot too.
        if let Err(e) = signals::install_with_sigterm(|| {
            if let Some(backend) = BACKEND.get() {
                backend.link.send_snapshot(methods(), backend.facts, false);
            }
        }) {
            log!("cannot install the last-chance snapshot handlers: {e}");
        }
    });
}

/// The runtime shuts down (when `Main` returns, or `Environment.Exit`): the final snapshot goes
/// with the first of these that arrives.
unsafe extern "C" fn runtime_shutdown_begin(_prof: *mut MonoProfiler) {
    guarded((), || final_snapshot("runtime shutdown"));
}

unsafe extern "C" fn runtime_shutdown_end(_prof: *mut MonoProfiler) {
    guarded((), || final_snapshot("runtime shutdown end"));
}

/// `exit(3)` without a runtime shutdown: Mono ends a program with an unhandled exception that way
/// (after printing it), so the profile still gets everything up to the end.
extern "C" fn at_exit() {
    guarded((), || final_snapshot("exit"));
}

fn final_snapshot(why: &str) {
    let Some(backend) = BACKEND.get() else { return };
    if crate::link::forked_child() {
        return; // the parent's session (see `link`); not even the log, whose lock may be held
    }
    if backend.shut_down.swap(true, Relaxed) {
        return;
    }
    sampler::stop();
    if backend.facts.sampling {
        // What the final snapshot is about to report (Mono's sampler keeps running until the
        // runtime is gone). A sample standing for several intervals counted the extra ones as
        // deferred.
        crate::sampling::drain();
        let (taken, losses) = crate::sampling::totals();
        log!("samples: {taken} taken in {} stacks; {losses:?}", taken.saturating_sub(losses.deferred));
    }
    let sent = backend.link.send_snapshot(methods(), backend.facts, true);
    log!("{why}; final snapshot {}", if sent { "sent" } else { "not sent" });
}

/// An exception may be about to end the process (see `signals::exception_thrown`).
unsafe extern "C" fn exception_throw(_prof: *mut MonoProfiler, _exception: *mut MonoObject) {
    guarded((), || {
        let Some(backend) = BACKEND.get() else { return };
        crate::signals::exception_thrown(|| {
            backend.link.send_snapshot(methods(), backend.facts, false);
        });
    });
}

fn pthread_self() -> usize {
    // SAFETY: pthread_self has no preconditions.
    unsafe { libc::pthread_self() as usize }
}

/// Runs on the new thread: pairs Mono's id for it with its OS thread id.
unsafe extern "C" fn thread_started(_prof: *mut MonoProfiler, tid: usize) {
    guarded((), || {
        let Some(backend) = BACKEND.get() else { return };
        if tid != pthread_self() {
            return;
        }
        let os_tid = threads::gettid();
        if backend.facts.sampling {
            // Mono signals every attached thread; this one is now known to `sampling`. (It is
            // not unregistered when it stops: Mono stops signalling it, and a later thread that
            // reuses its OS thread id takes its slot over.)
            start_sampling_thread(os_tid);
        }
        let mut ids = backend.threads.lock().unwrap_or_else(|e| e.into_inner());
        ids.os_tid.insert(tid, os_tid);
        if let Some(name) = ids.pending_names.remove(&tid) {
            drop(ids);
            threads::registry().names.insert(os_tid, name);
        }
    });
}

unsafe extern "C" fn thread_stopped(_prof: *mut MonoProfiler, tid: usize) {
    guarded((), || {
        let Some(backend) = BACKEND.get() else { return };
        let mut ids = backend.threads.lock().unwrap_or_else(|e| e.into_inner());
        ids.pending_names.remove(&tid);
        let os_tid = ids.os_tid.remove(&tid).or_else(|| (tid == pthread_self()).then(threads::gettid));
        drop(ids);
        let state = os_tid.and_then(|t| threads::registry().by_tid.get(&t).copied());
        if let Some(state) = state {
            state.end();
        }
    });
}

unsafe extern "C" fn thread_name(_prof: *mut MonoProfiler, tid: usize, name: *const c_char) {
    guarded((), || {
        let Some(backend) = BACKEND.get() else { return };
        if name.is_null() {
            return;
        }
        // SAFETY: Mono passes a NUL-terminated UTF-8 name, valid during the callback.
        let name = unsafe { CStr::from_ptr(name) }.to_string_lossy().into_owned();
        let mut ids = backend.threads.lock().unwrap_or_else(|e| e.into_inner());
        let os_tid = ids.os_tid.get(&tid).copied().or_else(|| (tid == pthread_self()).then(threads::gettid));
        match os_tid {
            Some(os_tid) => {
                drop(ids);
                threads::registry().names.insert(os_tid, name);
            }
            // Named before it started: `thread_started` will pair it.
            None => {
                ids.pending_names.insert(tid, name);
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calltree::ROOT;

    /// (parent method, method, calls) of every node but the root.
    fn nodes(state: &threads::ThreadState) -> Vec<(u32, u32, u64)> {
        let tree = &state.tree;
        (1..tree.len())
            .map(|i| {
                let n = tree.node(i).unwrap();
                let parent = n.parent.load(Relaxed);
                let parent_method = if parent == ROOT { 0 } else { tree.node(parent).unwrap().method.load(Relaxed) };
                (parent_method, n.method.load(Relaxed), n.calls.load(Relaxed))
            })
            .collect()
    }

    #[test]
    fn callbacks_keep_the_tree_in_step_with_the_stack() {
        for (key, id) in PROBE_KEYS.iter().zip(1u32..) {
            IDS.insert(std::ptr::from_ref(key) as usize, id);
        }
        let (a, b) = (probe_key(1), probe_key(2));
        let unknown = 0x1000 as *mut MonoMethod; // instrumented for another profiler
        let p = null_mut();
        let state: &'static threads::ThreadState = Box::leak(Box::new(threads::ThreadState::new(0)));
        threads::with_private_state(state, || {
            // SAFETY: the callbacks ignore the profiler, context, target and exception pointers,
            // and only use the method pointer as a key.
            unsafe {
                for _ in 0..3 {
                    enter_exact(p, a, null_mut());
                    enter_exact(p, b, null_mut());
                    enter_exact(p, unknown, null_mut());
                    leave_exact(p, unknown, null_mut());
                    leave_exact(p, b, null_mut());
                    leave_exact(p, a, null_mut());
                }
                // An exception unwinds both frames.
                enter_untimed(p, a, null_mut());
                enter_untimed(p, b, null_mut());
                exception_leave_untimed(p, b, null_mut());
                exception_leave_untimed(p, a, null_mut());
                // a tail-calls b: b runs as a's sibling.
                enter_exact(p, a, null_mut());
                tail_call_exact(p, a, b);
                enter_exact(p, b, null_mut());
                leave_exact(p, b, null_mut());
            }
        });
        assert_eq!(nodes(state), vec![(0, 1, 5), (1, 2, 4), (0, 2, 1)]);
        assert_eq!(state.tree.current(), ROOT);
        let a_node = state.tree.node(1).unwrap();
        assert!(a_node.total_ticks.load(Relaxed) > 0, "exact timing measured nothing");
    }

    #[test]
    fn calibration_runs_through_the_callbacks() {
        for (key, id) in PROBE_KEYS.iter().zip(1u32..) {
            IDS.insert(std::ptr::from_ref(key) as usize, id);
        }
        let cost = MONO_PROBE.measure();
        assert!(cost.outer_ticks > 0.0 && cost.inner_ticks < cost.outer_ticks, "{cost:?}");
    }
}
