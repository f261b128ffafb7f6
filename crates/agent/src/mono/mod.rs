//! The Mono backend: the same agent library, loaded by Mono as a profiler module.
//!
//! Mono loads `libmono-profiler-<name>.so` for `--profile=<name>` (the controller provides the
//! agent under the name `libmono-profiler-sonde.so` on `LD_LIBRARY_PATH` and sets
//! `MONO_ENV_OPTIONS=--profile=sonde`) and calls `mono_profiler_init_sonde` (`lib.rs`), before
//! the runtime is initialised: [`init`], one [`session::start`] like the CoreCLR backend's. Mono's
//! API comes through `sonde-mono`, so this backend has no `unsafe` of its own.
//!
//! What differs from CoreCLR is how calls arrive:
//! * **The filter.** Mono asks every installed profiler, per method it compiles, which
//!   instrumentation it wants ([`Agent::instrument`]). This is the function-ID mapper's job on
//!   CoreCLR: name the method (`sonde_mono::Method::describe`), apply the `MethodFilter`, give a
//!   traced method its id. It runs on the compiling thread, which is attached to the runtime —
//!   the only place the agent calls Mono's API (a call from an unattached thread, e.g. the IPC or
//!   sampler thread, aborts the process).
//! * **Enter/leave** receive the `MonoMethod*` (as a `MethodKey`; Mono calls them through
//!   `mono_profiler_raise_method_enter`, from code the JIT emitted), so each looks its method id
//!   up in a lock-free table (`tree/ids.rs`) and then does what the CoreCLR hooks do: the call tree's
//!   fast path (`CallTree::enter_fast`/`leave_fast`, with an `rdtsc` tick), else its guarded slow
//!   path. Exceptional exits and tail calls close the frame like a leave. Mono does not inline a
//!   method it instruments, so counts are exact without a flag.
//! * **Hook cost.** [`COST_PROBE`] runs the real callbacks through Mono's trampolines (by function
//!   pointer, as Mono calls them) on a private tree, exactly as the CoreCLR probe does for its
//!   trampolines. Not measured: Mono's own dispatch around the callbacks (the JIT-emitted call
//!   and `mono_profiler_raise_*`'s loop over profilers: ~11 ns a call on the project's machine,
//!   `mono-floor-empty` in `scripts/bench.py`), which stays in the figures — compensation errs
//!   low, as it is designed to.
//! * **Threads.** Mono identifies threads by their `pthread_t`; the agent's registry by OS thread
//!   id. `thread_started` runs on the new thread itself, which is where the two are paired.
//!
//! Sampling mode (`sampling.rs`) uses Mono's own sampler instead of the filter and enter/leave:
//! names at JIT time (`jit_done`), stacks from Mono's async-safe walk in its signal handler.

pub mod coverage;
mod heap;
pub mod precompiled;
mod sampling;

use sampling::IDS;

use crate::base::log::log;
use crate::base::running;
use crate::calibration::{self, CostProbe, Floor};
use crate::events;
use crate::ipc::link::SnapshotFacts;
use crate::session::{self, RuntimeId, StartError};
use crate::tree::methods::methods;
use crate::tree::{clock, threads};
use sonde_mono::{CallHooks, Events, Exception, GcEvent, Method, MethodKey, Mono, Object, Profiler, invoke};
use sonde_profile::{GcReason, Mode, NodeEvents, Timing};
use sonde_protocol::AgentConfig;
use std::collections::HashMap;
use std::ffi::CStr;
use std::sync::Mutex;

/// `pthread_t` (Mono's thread id) → OS thread id, and names that arrived before the pairing.
#[derive(Default)]
struct ThreadIds {
    os_tid: HashMap<usize, u32>,
    pending_names: HashMap<usize, String>,
}

static THREADS: Mutex<Option<ThreadIds>> = Mutex::new(None);

fn thread_ids<R>(f: impl FnOnce(&mut ThreadIds) -> R) -> R {
    f(THREADS.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert_with(ThreadIds::default))
}

/// Why `--inject` does nothing on Mono (docs/INJECT.md).
pub const INJECT_UNSUPPORTED: &str =
    "not applied: the error simulator needs CoreCLR (Mono's profiler API cannot rewrite a method's IL)";

/// Mono's entry point for `--profile=sonde[:ARGS]`; `desc` is the whole option value.
pub fn init(desc: &str) {
    let loaded_by = format!("Mono (--profile={desc})");
    let runtime = RuntimeId { kind: "mono", loaded_by: &loaded_by };
    let version = || Mono::from_process().map_or_else(|_| "unknown".into(), Mono::runtime_version);
    let _ = session::start(runtime, session::ConfigSource::Environment, version, |config| {
        let mono = Mono::from_process().map_err(|e| StartError::runtime("finding Mono's API", e))?;
        // The controller refuses `--inject` for a `mono` command; a Mono it did not recognise
        // says so in the profile, rule by rule.
        crate::faults::configure(config, Some(INJECT_UNSUPPORTED));
        precompiled::watch(config.mode);
        let facts = match config.mode {
            Mode::Tracing => start_tracing(mono, config)?,
            Mode::Sampling => {
                let (profiler, facts) = sampling::start::<Agent>(mono, config)?;
                set_events(&profiler, config);
                facts
            }
            Mode::Coverage => coverage::start::<Agent>(mono, config)?,
        };
        // Heap snapshots on request (`sonde snapshot --heap`), in every mode: their root ranges
        // are registered from now on.
        heap::install(mono);
        Ok(facts)
    });
}

/// Tracing mode: the filter and the enter/leave callbacks for the configured timing.
fn start_tracing(mono: &'static Mono, config: &AgentConfig) -> Result<SnapshotFacts, StartError> {
    let timed = config.timing == Timing::Exact;
    let floor = config.bench_hooks;
    if let Some(floor) = floor {
        log!("benchmark floor callbacks: {floor:?}; nothing is recorded");
    }
    if timed {
        for (key, id) in PROBE_KEYS.iter().zip(1u32..) {
            IDS.insert(std::ptr::from_ref(key) as usize, id);
        }
        calibration::use_probe(&COST_PROBE);
        let cost = COST_PROBE.measure();
        log!("callback cost: {:.1} ticks inside a call, {:.1} around it", cost.inner_ticks, cost.outer_ticks);
    }
    session::start_sampled_timing(config)?;
    let profiler = mono.create_profiler();
    match (floor, timed) {
        (Some(Floor::Empty), _) => profiler.set_call_instrumentation::<Agent, EmptyFloor>(),
        (Some(Floor::Clock), _) => profiler.set_call_instrumentation::<Agent, ClockFloor>(),
        (None, true) => profiler.set_call_instrumentation::<Agent, Exact>(),
        (None, false) => profiler.set_call_instrumentation::<Agent, Untimed>(),
    }
    set_events(&profiler, config);
    Ok(session::tracing_facts(config, floor.is_some(), true))
}

/// The runtime's events, in both modes: catches only when asked (`AgentConfig::mono_catches`).
fn set_events(profiler: &Profiler, config: &AgentConfig) {
    if config.async_stacks {
        // The controller refuses `--async` for a Mono command; a Mono child of another program
        // may still receive it.
        log!("async stacks: Mono raises no task events; continuations show where they ran");
    }
    profiler.set_events::<Agent>(config.mono_catches);
    events::set_catches_counted(config.mono_catches);
    if config.events.alloc {
        if !profiler.set_allocations::<Agent>() {
            log!("Mono refused allocation events: allocations are not recorded");
        } else if config.alloc_exact {
            events::set_exact_allocations(config.alloc_sample_bytes);
        } else {
            events::set_sampled_allocations(config.alloc_sample_bytes);
        }
    }
    if config.events.contention {
        profiler.set_monitor_events::<Agent>();
    }
    if config.events.jit {
        profiler.set_loading_events::<Agent>();
    }
}

thread_local! {
    /// When this thread began waiting for a contended lock (ns from the agent's start; 0: not
    /// waiting).
    static WAITING_SINCE: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// The calling thread's managed stack as the sampling resolver reads it (innermost first);
/// true when cut short. Not once `Main` has returned: the runtime then aborts the background
/// threads (each throws a `ThreadAbortException`) and suspends what is left, and a walk in a
/// thread it is tearing down is a risk for nothing (the counts still reach the totals by type).
fn walk_stack(frames: &mut Vec<u64>) -> bool {
    if sonde_mono::main_returned() {
        return false;
    }
    let mut truncated = false;
    sonde_mono::walk_stack(|method, managed| {
        if frames.len() >= crate::sampling::ring::MAX_FRAMES {
            truncated = true;
            return true;
        }
        if managed && method != 0 {
            frames.push(sampling::frame_value(method, 0));
        }
        false
    });
    truncated
}

/// A wait for a lock ended (acquired or given up): its time goes to the waiting stack.
fn wait_ended() {
    let since = WAITING_SINCE.with(|w| w.replace(0));
    if since == 0 {
        return;
    }
    let wait_ns = clock::elapsed_ns().saturating_sub(since);
    events::attribute(NodeEvents { wait_ns, ..Default::default() }, walk_stack);
}

/// The agent's answer to Mono's cold events.
struct Agent;

impl Events for Agent {
    fn cover(method: Method<'_>) -> bool {
        coverage::cover(method)
    }

    /// The last-chance handlers are installed now rather than in the init function, so that they
    /// chain to the handlers Mono has just installed (its SIGQUIT thread dump, its SIGABRT crash
    /// report). Mono leaves SIGTERM at its default action (the process dies without a shutdown),
    /// so that one gets a last snapshot too.
    fn runtime_initialized() {
        if session::get().is_some() {
            session::install_last_chance(true);
        }
    }

    /// The runtime shuts down (when `Main` returns, or `Environment.Exit`). Code still runs after
    /// its shutdown begins — the finalizers of every object left, on Mono — so the final snapshot
    /// waits for the end of the shutdown (or for `exit`, whichever comes first).
    fn runtime_shutdown_end() {
        let (ids, names) = thread_ids(|ids| (ids.os_tid.len(), ids.pending_names.len()));
        log!("Mono's threads held at the end: {ids} thread ids, {names} names waiting for their thread");
        session::final_snapshot("runtime shutdown end");
    }

    /// Runs on the new thread: pairs Mono's id for it with its OS thread id.
    fn thread_started(thread: usize) {
        if session::get().is_none() || thread != threads::pthread_self() {
            return;
        }
        let os_tid = threads::gettid();
        // Mono signals every attached thread in sampling mode; this one is now known to
        // `sampling` (until `thread_stopped`: its slot is reused once the thread is gone).
        session::thread_started(os_tid);
        let name = thread_ids(|ids| {
            ids.os_tid.insert(thread, os_tid);
            ids.pending_names.remove(&thread)
        });
        if let Some(name) = name {
            session::thread_named(os_tid, name);
        }
    }

    fn thread_stopped(thread: usize) {
        if session::get().is_none() {
            return;
        }
        let os_tid = thread_ids(|ids| {
            ids.pending_names.remove(&thread);
            ids.os_tid.remove(&thread)
        });
        let os_tid = os_tid.or_else(|| (thread == threads::pthread_self()).then(threads::gettid));
        if let Some(os_tid) = os_tid {
            session::thread_ended(os_tid);
        }
    }

    fn thread_name(thread: usize, name: &CStr) {
        if session::get().is_none() {
            return;
        }
        let name = name.to_string_lossy().into_owned();
        let known = thread_ids(|ids| ids.os_tid.get(&thread).copied());
        match known.or_else(|| (thread == threads::pthread_self()).then(threads::gettid)) {
            Some(os_tid) => session::thread_named(os_tid, name),
            // Named before it started: `thread_started` will pair it.
            None => {
                thread_ids(|ids| ids.pending_names.insert(thread, name));
            }
        }
    }

    fn exception_throw(exception: Exception<'_>) {
        if session::get().is_some() {
            events::exception_thrown(exception.class_key(), || exception.type_name());
            if events::kinds().exceptions {
                events::attribute(NodeEvents { exceptions_thrown: 1, ..Default::default() }, walk_stack);
            }
        }
        session::exception_thrown();
    }

    /// Every allocation: counted, or sampled (`events::each_allocation`).
    fn allocation(object: Object<'_>) {
        if session::get().is_some() {
            events::each_allocation(object.class_key(), || object.type_name(), object.size(), walk_stack);
        }
    }

    fn monitor_contention(_object: Object<'_>) {
        if session::get().is_some() {
            WAITING_SINCE.with(|w| w.set(clock::elapsed_ns().max(1)));
        }
    }

    fn monitor_acquired(_object: Object<'_>) {
        wait_ended();
    }

    fn monitor_failed(_object: Object<'_>) {
        wait_ended();
    }

    fn exception_caught(exception: Exception<'_>) {
        if session::get().is_some() {
            events::exception_caught(exception.class_key(), || exception.type_name());
        }
    }

    /// SGen's collection: the world stops, the collection runs, the world restarts. The heap's
    /// size after it is not recorded: Mono's getters take the GC lock, which the collecting
    /// thread holds through every event (`sonde_mono::GcEvent`).
    fn gc_event(event: GcEvent, generation: u32) {
        if session::get().is_none() {
            return;
        }
        if running::mode() == Some(Mode::Sampling) {
            // On the collecting thread, from the world's stop to its restart (`sampling::work`).
            match event {
                GcEvent::PreStopWorld => crate::sampling::work::suspended_for_gc(true),
                GcEvent::Start => crate::sampling::work::collecting(true),
                GcEvent::End => crate::sampling::work::collecting(false),
                GcEvent::PostStartWorld => crate::sampling::work::suspended_for_gc(false),
            }
        }
        match event {
            GcEvent::PreStopWorld => events::suspend_started(),
            GcEvent::Start => events::gc_started(generation, GcReason::Unknown),
            GcEvent::End => events::gc_finished(0),
            GcEvent::PostStartWorld => events::resumed(),
        }
    }

    /// The filter: names the method, applies the `MethodFilter`, gives it an id.
    fn instrument(method: Method<'_>) -> bool {
        let Some(session) = session::get() else { return false };
        let key = method.key().0;
        if IDS.get(key).is_some() {
            return true; // compiled again (another domain, a recompilation)
        }
        let Some(names) = method.describe() else { return false };
        if !session.config.filter.traces(
            &names.name,
            &names.assembly,
            crate::base::process::is_framework(&names.path, &names.assembly),
        ) {
            return false;
        }
        let type_args = method.class_type_args();
        let id = methods().insert(key, sonde_metadata::MethodNames { type_args, ..names });
        IDS.insert(key, id)
    }

    /// Sampling: samples taken from here on name the method (`sampling::work`), which is
    /// noted now rather than when done, so that the drain can name it meanwhile.
    fn jit_begin(method: Method<'_>) {
        let Some(mode) = running::mode() else { return };
        if mode == Mode::Sampling {
            crate::sampling::work::jit_started(method.key().0);
            sampling::compiled(method, 0);
        }
        events::jit_started();
    }

    fn jit_failed(method: MethodKey) {
        if running::mode() == Some(Mode::Sampling) {
            crate::sampling::work::jit_finished(method.0);
        }
    }

    /// Sampling notes where the method's code is; every mode counts the compilation.
    fn jit_done(method: Method<'_>, code_start: usize) {
        let mode = running::mode();
        if mode == Some(Mode::Sampling) {
            crate::sampling::work::jit_finished(method.key().0);
        }
        if mode != Some(Mode::Tracing) {
            sampling::compiled(method, code_start);
        }
        if session::get().is_some() {
            events::jit_finished();
        }
    }

    /// Named as on CoreCLR: by its file's name (`mscorlib.dll`), else Mono's name for it.
    fn image_loaded(name: String, path: String) {
        if session::get().is_some() {
            let file = std::path::Path::new(&path).file_name().map(|n| n.to_string_lossy().into_owned());
            events::module_loaded(file.unwrap_or(name), path);
        }
    }

    fn disable() {
        running::disable();
    }

    fn active() -> bool {
        running::enabled()
    }
}

// --- Enter/leave: the hot path. ---------------------------------------------------------------
//
// The common case runs without the panic guard: an id lookup and the call tree's fast path
// (`CallTree::enter_fast`/`leave_fast`), which cannot panic — no indexing, no allocation, no
// arithmetic that can overflow — and cost a few ns. Everything else (a thread's first call, a new
// call path, a resync) takes the guarded slow path, as the CoreCLR trampolines do. A method that
// another profiler asked to instrument also reaches these callbacks; one without an id is ignored.

#[inline(always)]
fn enter(method: MethodKey, clock: impl Fn() -> u64) {
    if !running::enabled() {
        return;
    }
    let Some(id) = IDS.get(method.0) else { return };
    if let Some(state) = threads::current_if_any()
        && state.tree.enter_fast(id, &clock)
    {
        return;
    }
    running::guarded((), || threads::current().tree.enter(id, clock()));
}

#[inline(always)]
fn leave(method: MethodKey, tick: u64) {
    if !running::enabled() {
        return;
    }
    let Some(id) = IDS.get(method.0) else { return };
    if let Some(state) = threads::current_if_any()
        && state.tree.leave_fast(id, || tick)
    {
        return;
    }
    running::guarded((), || threads::current().tree.leave(id, tick));
}

/// `--timing exact`: every enter and leave stamped with `rdtsc`.
struct Exact;

impl CallHooks for Exact {
    #[inline(always)]
    fn enter(method: MethodKey) {
        enter(method, clock::ticks);
    }
    #[inline(always)]
    fn leave(method: MethodKey) {
        leave(method, clock::ticks());
    }
}

/// `--timing sampled`: counts and the current node only (`sampled_timing` charges the time).
struct Untimed;

impl CallHooks for Untimed {
    #[inline(always)]
    fn enter(method: MethodKey) {
        enter(method, || 0);
    }
    #[inline(always)]
    fn leave(method: MethodKey) {
        leave(method, 0);
    }
}

/// Benchmark floor (`SONDE_BENCH_HOOKS=empty`): callbacks that do nothing.
struct EmptyFloor;

impl CallHooks for EmptyFloor {
    #[inline(always)]
    fn enter(_: MethodKey) {}
    #[inline(always)]
    fn leave(_: MethodKey) {}
}

/// Benchmark floor (`SONDE_BENCH_HOOKS=clock`): callbacks that only read the clock.
struct ClockFloor;

impl CallHooks for ClockFloor {
    #[inline(always)]
    fn enter(_: MethodKey) {
        std::hint::black_box(clock::ticks());
    }
    #[inline(always)]
    fn leave(_: MethodKey) {
        std::hint::black_box(clock::ticks());
    }
}

// --- Hook-cost calibration through the real callbacks. -----------------------------------------

/// Stand-in `MonoMethod*` keys for the calibration's two methods (addresses no runtime method can
/// have), given the ids 1 and 2 at start-up; only the private calibration tree ever sees them.
static PROBE_KEYS: [u8; 2] = [0, 0];

fn probe_key(id: usize) -> MethodKey {
    MethodKey(std::ptr::from_ref(&PROBE_KEYS[(id + 1) & 1]) as usize)
}

fn probe_enter(id: usize) {
    invoke::enter::<Exact>(probe_key(id));
}

fn probe_leave(id: usize) {
    invoke::leave::<Exact>(probe_key(id));
}

fn probe_pair(id: usize) {
    probe_enter(id);
    probe_leave(id);
}

static COST_PROBE: CostProbe = CostProbe::new(probe_enter, probe_leave, probe_pair);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::calltree::ROOT;
    use std::sync::atomic::Ordering::Relaxed;

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
        let unknown = MethodKey(0x1000); // instrumented for another profiler
        let state: &'static threads::ThreadState = Box::leak(Box::new(threads::ThreadState::new(0)));
        threads::with_private_state(state, || {
            for _ in 0..3 {
                invoke::enter::<Exact>(a);
                invoke::enter::<Exact>(b);
                invoke::enter::<Exact>(unknown);
                invoke::leave::<Exact>(unknown);
                invoke::leave::<Exact>(b);
                invoke::leave::<Exact>(a);
            }
            // An exception unwinds both frames.
            invoke::enter::<Untimed>(a);
            invoke::enter::<Untimed>(b);
            invoke::exception_leave::<Untimed>(b);
            invoke::exception_leave::<Untimed>(a);
            // a tail-calls b: b runs as a's sibling.
            invoke::enter::<Exact>(a);
            invoke::tail_call::<Exact>(a);
            invoke::enter::<Exact>(b);
            invoke::leave::<Exact>(b);
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
        let cost = COST_PROBE.measure();
        assert!(cost.outer_ticks > 0.0 && cost.inner_ticks < cost.outer_ticks, "{cost:?}");
    }
}
