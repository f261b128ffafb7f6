//! The CoreCLR backend: the runtime loads the agent as its profiler (`DllGetClassObject` in
//! `lib.rs`) and calls the [`ProfilerCallback`] methods below, through `sonde-clr`'s COM object.
//!
//! * **Start-up** ([`Clr::initialize`]): one [`session::start`], whose set-up for the configured
//!   mode is [`start_tracing`] (event mask, the enter/leave [`hooks`], the function-ID mapper) or
//!   [`start_sampling`] (thread events only; Sonde's signal sampler, names through [`frames`]).
//! * **JIT time** ([`map_function`]): names the function, applies the filter, and hands a traced
//!   function's dense id to the hooks.
//! * **Threads and exceptions**: thread events feed the session's thread bookkeeping; an unwound
//!   frame closes its call (the runtime calls no leave hook for it); a thrown exception may send
//!   a last-chance snapshot; a finished catch unblocks the sampling signal.
//!
//! Everything here runs off the hot path (at JIT time or on rare runtime events).

pub mod coverage;
mod eventpipe;
mod frames;
mod heap;
mod info;

use info::{info, set_info, with_type_arguments};
pub mod hooks;
mod images;
pub mod inject;
mod rewrite;
mod rewrite_error;

use crate::base::log::log;
use crate::base::running;
use crate::calibration;
use crate::events;
use crate::ipc::link::SnapshotFacts;
use crate::sampling;
use crate::session::{self, ConfigSource, RuntimeId, StartError};
use crate::tree::methods::methods;
use crate::tree::{clock, threads};
use sonde_clr::sys::*;
use sonde_clr::{EventPipeEvent, HResult, ProfilerCallback, ProfilerInfo};
use sonde_profile::{AllocSampling, GcReason, Mode, NodeEvents, Timing};
use sonde_protocol::AgentConfig;
use sonde_protocol::config::EventKinds;
use std::cell::Cell;

/// The profiler object the runtime gets.
pub struct Clr;

thread_local! {
    /// The function whose frame the runtime is unwinding on this thread (set by
    /// ExceptionUnwindFunctionEnter, consumed by ExceptionUnwindFunctionLeave).
    static UNWINDING: Cell<FunctionID> = const { Cell::new(0) };
}

impl ProfilerCallback for Clr {
    fn initialize(&self, info: ProfilerInfo) -> Result<(), HResult> {
        let loaded_by = format!("CoreCLR (ICorProfilerInfo{})", info.version);
        let info = set_info(info);
        let runtime = RuntimeId { kind: "coreclr", loaded_by: &loaded_by };
        let set_up = |config: &AgentConfig| {
            crate::faults::configure(config, None);
            match config.mode {
                Mode::Tracing => start_tracing(info, config),
                Mode::Sampling => start_sampling(info, config, false),
                Mode::Coverage => coverage::start(info, config),
            }
        };
        session::start(runtime, ConfigSource::Environment, || runtime_version(info), set_up)
            .map_err(|_| HResult(E_FAIL))?;
        events::set_catches_counted(true);
        session::install_last_chance(false);
        crate::ipc::heap::on_heap(|| heap::take(info));
        Ok(())
    }

    /// `sonde record --pid`: the runtime loaded a copy of the agent into the running process
    /// (its diagnostics IPC's `AttachProfiler`), with the configuration as client data. Sampling
    /// only. No last-chance signal handlers: an attached recording keeps the controller's latest
    /// periodic snapshot if the process dies, and leaves nothing behind when it detaches.
    fn initialize_for_attach(&self, info: ProfilerInfo, client_data: &[u8]) -> Result<(), HResult> {
        let loaded_by = format!("CoreCLR attach (ICorProfilerInfo{})", info.version);
        let info = set_info(info);
        ATTACH_COMPLETE.store(false, std::sync::atomic::Ordering::Release);
        if !crate::base::process::stay_loaded() {
            log!("cannot keep the agent loaded after a detach: refusing to attach");
            return Err(HResult(E_FAIL));
        }
        let runtime = RuntimeId { kind: "coreclr", loaded_by: &loaded_by };
        let set_up = |config: &AgentConfig| start_sampling(info, config, true);
        session::start(runtime, ConfigSource::Attach(client_data), || runtime_version(info), set_up)
            .map_err(|_| HResult(E_FAIL))?;
        events::set_catches_counted(true);
        session::on_detach(|| {
            // From the IPC thread, which makes no runtime call after this one; the runtime calls
            // back `ProfilerDetachSucceeded` once no callback runs, then unloads the agent (which
            // stays mapped: `process::stay_loaded`; an attach after this one gets it again).
            // The EventPipe session ends first: the runtime would go on delivering its events.
            // 300 ms: the shortest wait the runtime allows.
            stop_event_pipe(info);
            match info.request_detach(300) {
                Ok(()) => log!("detach requested"),
                Err(e) => log!("RequestProfilerDetach failed: {e}; the agent stays, inert"),
            }
        });
        crate::ipc::walk::on_walk(|| walk_stacks(info));
        crate::ipc::heap::on_heap(|| heap::take(info));
        Ok(())
    }

    /// After an attach: the threads that were running before it get no thread event; start
    /// sampling them now (one that also gets an event meanwhile is registered once: `sampling`
    /// takes a thread it already samples as a no-op). Their names come from the OS (`comm`,
    /// which .NET sets from the managed name, cut to 15 bytes) until the runtime reports one.
    fn attach_complete(&self) {
        let Some(info) = info() else { return };
        let threads = match info.threads() {
            Ok(threads) => threads,
            Err(e) => {
                log!("EnumThreads failed: {e}; only threads started from now on are sampled");
                return;
            }
        };
        let mut sampled = 0;
        for thread in threads {
            let Some(os_tid) = os_thread_id(thread) else { continue };
            if let Ok(name) = std::fs::read_to_string(format!("/proc/self/task/{os_tid}/comm")) {
                threads::set_name_if_unnamed(os_tid, name.trim_end_matches('\n').to_string());
            }
            session::thread_started(os_tid);
            sampled += 1;
        }
        log!("attached: sampling {sampled} running threads");
        ATTACH_COMPLETE.store(true, std::sync::atomic::Ordering::Release);
    }

    fn detach_succeeded(&self) {
        log!("detached");
    }

    fn shutdown(&self) {
        rewrite::log_stats();
        session::final_snapshot("shutdown");
    }

    fn thread_created(&self, thread: ThreadID) {
        if let Some(os_tid) = os_thread_id(thread) {
            session::thread_started(os_tid);
        }
    }

    fn thread_assigned_to_os_thread(&self, thread: ThreadID, os_tid: u32) {
        if session::get().is_none() {
            return;
        }
        let name = threads::registry().pending_names.remove(&thread);
        if let Some(name) = name {
            session::thread_named(os_tid, name);
        }
        session::thread_started(os_tid);
    }

    fn thread_destroyed(&self, thread: ThreadID) {
        if session::get().is_none() {
            return;
        }
        if let Some(os_tid) = info().and_then(|info| info.os_thread_id(thread).ok()) {
            session::thread_ended(os_tid);
        }
    }

    /// A thread is often named before it starts (`new Thread(…) { Name = … }`), when it has no
    /// OS thread yet: the name then waits for `thread_assigned_to_os_thread`.
    fn thread_name_changed(&self, thread: ThreadID, name: String) {
        if session::get().is_none() {
            return;
        }
        match os_thread_id(thread) {
            Some(os_tid) => session::thread_named(os_tid, name),
            None => {
                threads::registry().pending_names.insert(thread, name);
            }
        }
    }

    /// Exact allocations (`exact_allocations`): every object, sized and named.
    fn object_allocated(&self, object: ObjectID, class: ClassID) {
        let (Some(_), Some(info)) = (session::get(), info()) else { return };
        let Ok(size) = info.object_size(object) else { return };
        events::each_allocation(class, || info.type_name(class).ok(), size, sampling::walk_this_thread);
    }

    fn exception_thrown(&self, exception: ObjectID) {
        crate::faults::thrown();
        if let (Some(_), Some(info)) = (session::get(), info()) {
            let class = info.class_of_object(exception).unwrap_or(0);
            events::exception_thrown(class, || info.class_name(class).ok());
            if events::kinds().exceptions {
                let counts = NodeEvents { exceptions_thrown: 1, ..Default::default() };
                events::attribute(counts, sampling::walk_this_thread);
            }
        }
        session::exception_thrown();
    }

    fn exception_catcher_enter(&self, function: FunctionID, exception: ObjectID) {
        let (Some(_), Some(info)) = (session::get(), info()) else { return };
        crate::faults::caught(|| inject::method_id(info, function));
        let class = info.class_of_object(exception).unwrap_or(0);
        events::exception_caught(class, || info.class_name(class).ok());
    }

    /// On the thread that suspends the runtime (for a collection: the one that then runs it, or
    /// waits for the collection's threads); the resume is on the same thread.
    fn runtime_suspend_started(&self, reason: COR_PRF_SUSPEND_REASON) {
        if matches!(reason, COR_PRF_SUSPEND_FOR_GC | COR_PRF_SUSPEND_FOR_GC_PREP) && session::get().is_some() {
            events::suspend_started();
            if running::mode() == Some(Mode::Sampling) {
                sampling::work::suspended_for_gc(true);
            }
        }
    }

    fn runtime_resumed(&self) {
        if session::get().is_some() {
            events::resumed();
            if running::mode() == Some(Mode::Sampling) {
                sampling::work::suspended_for_gc(false);
            }
        }
    }

    /// The condemned generation is the highest one collected; the large-object and pinned heaps
    /// (3, 4) are collected with gen2 only.
    fn gc_started(&self, generations: &[bool], reason: COR_PRF_GC_REASON) {
        if session::get().is_none() {
            return;
        }
        let condemned = generations.iter().rposition(|&g| g).unwrap_or(0) as u32;
        let reason = if reason == COR_PRF_GC_INDUCED { GcReason::Induced } else { GcReason::Other };
        events::gc_started(condemned, reason);
        if running::mode() == Some(Mode::Sampling) {
            sampling::work::collecting(true);
        }
    }

    /// On the thread that ran the collection — for a background one, not the thread that
    /// started it (whose mark the runtime's resume cleared: `sampling::work`).
    fn gc_finished(&self) {
        if session::get().is_none() {
            return;
        }
        if running::mode() == Some(Mode::Sampling) {
            sampling::work::collecting(false);
        }
        let heap = info().and_then(|info| info.heap_bytes().ok()).unwrap_or(0);
        events::gc_finished(heap);
    }

    fn jit_compilation_started(&self, function: FunctionID) {
        let Some(mode) = running::mode() else { return };
        if mode == Mode::Sampling {
            // First: samples taken from here on name the method (`sampling::work`).
            sampling::work::jit_started(function);
        }
        if rewrite::active()
            && let Some(info) = info()
        {
            rewrite::compiling(info, function);
        }
        if mode != Mode::Coverage {
            events::jit_started();
        }
    }

    fn jit_inlining(&self, _caller: FunctionID, callee: FunctionID) -> bool {
        match info() {
            Some(info) if session::get().is_some() && rewrite::active() => rewrite::may_inline(info, callee),
            _ => true,
        }
    }

    fn jit_compilation_finished(&self, function: FunctionID, _status: HRESULT) {
        if session::get().is_some() {
            let sampling = running::mode() == Some(Mode::Sampling);
            if sampling {
                sampling::work::jit_finished(function);
            }
            events::jit_finished();
            if sampling {
                frames::learn_osr(function);
            }
        }
    }

    /// A dynamic method or an IL stub: samples meanwhile are `[jit] [unnamed method]` (it has
    /// no metadata to be named by); not counted among the methods compiled.
    fn dynamic_method_jit_started(&self, function: FunctionID) {
        if running::mode() == Some(Mode::Sampling) {
            sampling::work::jit_started(function);
        }
    }

    fn dynamic_method_jit_finished(&self, function: FunctionID) {
        if running::mode() == Some(Mode::Sampling) {
            sampling::work::jit_finished(function);
        }
    }

    /// A module's name is its file's (`System.Private.CoreLib.dll`), or the runtime's display name
    /// for one without a file.
    fn module_load_finished(&self, module: ModuleID, status: HRESULT) {
        let (Some(_), Some(info)) = (session::get(), info()) else { return };
        if status < 0 {
            return;
        }
        inject::module_loaded(module);
        let Ok((path, _assembly)) = info.module_path_and_assembly(module) else { return };
        let name =
            std::path::Path::new(&path).file_name().map_or_else(|| path.clone(), |n| n.to_string_lossy().into_owned());
        let path = if std::path::Path::new(&path).is_absolute() { path } else { String::new() };
        events::module_loaded(name, path);
    }

    /// The EventPipe session's events, on the thread that wrote them: an allocation tick on the
    /// allocating thread, the end of a contended wait on the waiting one.
    fn event_pipe_event(&self, event: &EventPipeEvent<'_>) {
        if session::get().is_none() || EVENT_FLOOR.load(std::sync::atomic::Ordering::Relaxed) {
            return;
        }
        if crate::ipc::heap::active() && heap::is_heap_event(event.id) && !providers::is_tpl(event.provider) {
            heap::event(event.id, event.version, event.data);
            return;
        }
        if providers::is_tpl(event.provider) {
            match eventpipe::task_event(event.id, event.data) {
                Some(eventpipe::TaskEvent::Await(task)) => sampling::async_stacks::awaiting(task),
                Some(eventpipe::TaskEvent::Resume(task)) => sampling::async_stacks::resumed(task),
                Some(eventpipe::TaskEvent::Done(task)) => sampling::async_stacks::completed(task),
                None => {}
            }
            return;
        }
        match event.id {
            eventpipe::ALLOCATION_TICK => {
                let Some(tick) = eventpipe::allocation_tick(event.data, event.version) else { return };
                let (alloc_bytes, alloc_count) = tick.estimate();
                events::allocated(tick.type_id, || Some(tick.type_name()), alloc_bytes, alloc_count);
                let counts = NodeEvents { alloc_bytes, alloc_count, ..Default::default() };
                events::attribute(counts, sampling::walk_this_thread);
            }
            eventpipe::CONTENTION_STOP => {
                let Some(wait_ns) = eventpipe::contention_wait_ns(event.data, event.version) else { return };
                events::attribute(NodeEvents { wait_ns, ..Default::default() }, sampling::walk_this_thread);
            }
            _ => {}
        }
    }

    /// Precompiled code handed out: the drain may now ask the runtime about addresses above it
    /// (`images`).
    fn jit_cached_function_search_finished(&self, function: FunctionID, found: bool) {
        if found && running::mode() == Some(Mode::Sampling) {
            frames::prepared(function);
        }
    }

    /// A caught exception may have been a fault whose handler never returned (see
    /// `sampling::fault_handled_on_this_thread`).
    fn exception_catcher_leave(&self) {
        if running::mode() == Some(Mode::Sampling) {
            sampling::fault_handled_on_this_thread();
        }
    }

    fn exception_unwind_function_enter(&self, function: FunctionID) {
        UNWINDING.with(|u| u.set(function));
    }

    fn exception_unwind_function_leave(&self) {
        // The runtime does not call the leave hook for frames an exception unwinds: close the
        // frame here so the tree stays in step with the real stack.
        let function = UNWINDING.with(|u| u.replace(0));
        let Some(session) = session::get().filter(|s| s.config.mode == Mode::Tracing) else { return };
        if let Some(id) = methods().id_of(function) {
            let tick = if session.config.timing == Timing::Exact { clock::ticks() } else { 0 };
            threads::current().tree.leave(id, tick);
        }
    }

    fn disable(&self) {
        running::disable();
    }
}

/// Benchmarks only: EventPipe's events are ignored (what the runtime's session costs alone).
static EVENT_FLOOR: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Set once the runtime reported the attach complete: it then allows a suspension.
static ATTACH_COMPLETE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The deepest stack [`walk_stacks`] records (deeper ones are cut at the root end).
const MAX_WALKED_FRAMES: usize = 1024;

/// `sonde dump`'s exact stacks (on the IPC thread): once the attach is complete, the runtime walks
/// every managed thread at one instant — a thread blocked in native code too, through the frames
/// the runtime keeps at each transition, which a frame-pointer walk cannot get past — and each
/// stack goes into its thread's tree as its `walked` stack. The process stops for the walk as it
/// does for a GC.
fn walk_stacks(info: &ProfilerInfo) {
    use std::sync::atomic::Ordering::Acquire;
    use std::time::{Duration, Instant};
    let until = Instant::now() + Duration::from_secs(5);
    while !ATTACH_COMPLETE.load(Acquire) {
        if Instant::now() >= until {
            log!("stack walk: the attach did not complete; not walked");
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    // Walks need the stack-snapshot flag, allowed after an attach; it is set only now, so that
    // the recordings that never walk run with the sampling mask alone.
    let loading = session::get().map_or(0, |s| loading_events(&s.config));
    if let Err(e) = info.set_event_mask(SAMPLING_EVENTS | loading | COR_PRF_ENABLE_STACK_SNAPSHOT, EVENTS_HIGH) {
        log!("stack walk: SetEventMask failed: {e}");
    }
    let started = Instant::now();
    let walks = match info.walk_all_threads(MAX_WALKED_FRAMES) {
        Ok(walks) => walks,
        Err(e) => {
            log!("stack walk failed: {e}");
            session::send_error(format!("the runtime could not walk the stacks ({e}); showing sampled stacks"));
            return;
        }
    };
    log!("stack walk: {} threads in {:?}", walks.len(), started.elapsed());
    for walk in walks {
        let Some(os_tid) = os_thread_id(walk.thread) else { continue };
        if let Err(e) = walk.walked {
            log!("stack walk of thread {os_tid}: {e}");
        }
        let frames: Vec<sampling::WalkedFrame> =
            walk.frames.iter().map(|f| sampling::WalkedFrame { function: f.function, ip: f.ip }).collect();
        sampling::record_walk(os_tid, &frames, frames.len() >= MAX_WALKED_FRAMES);
    }
}

/// A runtime thread's OS thread id, once it has one.
fn os_thread_id(thread: ThreadID) -> Option<u32> {
    info()?.os_thread_id(thread).ok().filter(|&t| t != 0)
}

/// Tracing mode: enter/leave hooks on every method the filter selects.
fn start_tracing(info: &ProfilerInfo, config: &AgentConfig) -> Result<SnapshotFacts, StartError> {
    let timed = config.timing == Timing::Exact;
    let floor = config.bench_hooks;
    if let Some(floor) = floor {
        log!("benchmark floor hooks: {floor:?}; nothing is recorded");
    }
    let hook_set = floor.map_or_else(|| hooks::hooks(timed), hooks::floor_hooks);
    let exact = exact_allocations(config, false);
    let mut mask = COR_PRF_MONITOR_ENTERLEAVE
        | COR_PRF_DISABLE_INLINING
        | COR_PRF_MONITOR_EXCEPTIONS
        | COR_PRF_MONITOR_THREADS
        | COR_PRF_MONITOR_SUSPENDS
        | loading_events(config)
        | inject::event_mask(config)
        | exact_allocation_events(exact);
    if hook_set.with_info {
        mask |= COR_PRF_ENABLE_FRAME_INFO;
    }
    if config.filter.may_trace_framework() {
        // Precompiled (ReadyToRun) framework code has no hooks; have it JIT-ed instead.
        mask |= COR_PRF_DISABLE_ALL_NGEN_IMAGES;
    }
    info.set_event_mask(mask, EVENTS_HIGH).map_err(|e| StartError::runtime("SetEventMask", e))?;
    start_event_pipe(info, config, exact);
    if timed {
        calibration::use_probe(&hooks::COST_PROBE);
        let cost = hooks::COST_PROBE.measure();
        log!("hook cost: {:.1} ticks inside a call, {:.1} around it", cost.inner_ticks, cost.outer_ticks);
    }
    // SAFETY: `hooks::hooks` returns entry points built for this architecture's convention
    // (assembly entry points for the fast hooks on x86-64, C functions for the WithInfo hooks).
    unsafe { info.set_enter_leave_hooks(hook_set.enter, hook_set.leave, hook_set.tailcall, hook_set.with_info) }
        .map_err(|e| StartError::runtime("SetEnterLeaveFunctionHooks3", e))?;
    info.set_function_mapper(map_function).map_err(|e| StartError::runtime("SetFunctionIDMapper2", e))?;
    session::start_sampled_timing(config)?;
    Ok(session::tracing_facts(config, floor.is_some(), true))
}

/// The runtime events a sampling session asks for: threads, exceptions, suspensions and (in the
/// high mask, [`EVENTS_HIGH`]) collections.
const SAMPLING_EVENTS: u32 = COR_PRF_MONITOR_THREADS | COR_PRF_MONITOR_EXCEPTIONS | COR_PRF_MONITOR_SUSPENDS;

/// Collections without the per-object callbacks `COR_PRF_MONITOR_GC` brings (moved references,
/// roots, handles): `GarbageCollectionStarted`/`Finished` only.
/// And the profiler's EventPipe session's events (allocation ticks, contention: `eventpipe`).
const EVENTS_HIGH: u32 = COR_PRF_HIGH_BASIC_GC | COR_PRF_HIGH_MONITOR_EVENT_PIPE;

/// Starts the EventPipe session for the allocation and contention events the configuration asks
/// for (after the event mask is set; `exact`: it holds `exact_allocation_events`). A runtime that
/// refuses leaves them unrecorded, nothing else.
fn start_event_pipe(info: &ProfilerInfo, config: &AgentConfig, exact: bool) {
    if exact {
        events::set_exact_allocations(config.alloc_sample_bytes);
    }
    // Exact allocations come from `ObjectAllocated`, not from the session's ticks.
    let kinds = EventKinds { alloc: config.events.alloc && !exact, ..config.events };
    let runtime = eventpipe::session_for(kinds);
    let tasks = config.async_stacks && config.mode == Mode::Sampling;
    let mut providers = Vec::new();
    if let Some((keywords, level)) = runtime {
        providers.push((eventpipe::PROVIDER, keywords, level));
    }
    if tasks {
        providers.push((eventpipe::TPL_PROVIDER, eventpipe::TPL_KEYWORDS, eventpipe::TPL_LEVEL));
    }
    if providers.is_empty() {
        return;
    }
    if config.mode == Mode::Sampling && config.bench_hooks.is_some() {
        // The benchmark floor (scripts/bench-alloc.py): the session runs, its events are ignored.
        EVENT_FLOOR.store(true, std::sync::atomic::Ordering::Relaxed);
        log!("benchmark floor: EventPipe events are received and ignored");
    }
    if tasks {
        sampling::async_stacks::enable();
    }
    match info.event_pipe_start_session(&providers) {
        Ok(session) => {
            EVENT_PIPE_SESSION.store(session, std::sync::atomic::Ordering::Relaxed);
            if runtime.is_some() && config.events.alloc {
                events::set_allocation_sampling(AllocSampling::Sampled, eventpipe::TICK_BYTES);
            }
            log!("EventPipe session: {providers:?}");
        }
        Err(e) => {
            log!("EventPipeStartSession failed: {e}; allocations, lock contention and async stacks are not recorded")
        }
    }
}

/// The EventPipe session [`start_event_pipe`] started (0: none).
static EVENT_PIPE_SESSION: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Ends the EventPipe session, if one runs (before a detach).
fn stop_event_pipe(info: &ProfilerInfo) {
    let session = EVENT_PIPE_SESSION.swap(0, std::sync::atomic::Ordering::Relaxed);
    if session != 0
        && let Err(e) = info.event_pipe_stop_session(session)
    {
        log!("EventPipeStopSession failed: {e}");
    }
}

/// The session's providers told apart by their handles (looked up by name once each).
mod providers {
    use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

    /// The handle of the task library's provider, and of the other one (0: not seen yet).
    static TPL: AtomicUsize = AtomicUsize::new(0);
    static OTHER: AtomicUsize = AtomicUsize::new(0);

    pub fn is_tpl(provider: usize) -> bool {
        if provider == 0 {
            return false;
        }
        if TPL.load(Relaxed) == provider {
            return true;
        }
        if OTHER.load(Relaxed) == provider {
            return false;
        }
        let tpl = super::info()
            .and_then(|info| info.event_pipe_provider_name(provider).ok())
            .is_some_and(|name| name == super::eventpipe::TPL_PROVIDER);
        if tpl { &TPL } else { &OTHER }.store(provider, Relaxed);
        tpl
    }
}

/// Whether every allocation is counted (`--alloc-sampling exact`). Not after an attach: the
/// runtime allows `ObjectAllocated` at start-up only; the controller refuses that, and an agent
/// asked anyway counts sampled.
fn exact_allocations(config: &AgentConfig, attached: bool) -> bool {
    let exact = config.events.alloc && config.alloc_exact;
    if exact && attached {
        log!("exact allocations need the runtime's start-up: sampled instead");
    }
    exact && !attached
}

/// Exact allocations' events: `ObjectAllocated`, which makes the JIT call a slower allocation
/// helper for every `new` (docs/EVENTS.md has the cost).
fn exact_allocation_events(exact: bool) -> u32 {
    if exact { COR_PRF_ENABLE_OBJECT_ALLOCATED | COR_PRF_MONITOR_OBJECT_ALLOCATED } else { 0 }
}

/// The JIT's compilations and the modules' loads, when `jit` events are recorded (allowed after
/// an attach).
fn loading_events(config: &AgentConfig) -> u32 {
    if config.events.jit { COR_PRF_MONITOR_JIT_COMPILATION | COR_PRF_MONITOR_MODULE_LOADS } else { 0 }
}

/// Sampling mode: no hooks, no flag that changes the JIT's code; Sonde's signal sampler
/// (`sampling::signal`). The
/// runtime only reports threads (to sample them), exceptions (counted; for the crash snapshot,
/// and to see a fault's handler out), suspensions and collections (`events`) — all allowed after
/// an attach (`attached`), and none keeps the runtime from detaching the agent later.
fn start_sampling(info: &ProfilerInfo, config: &AgentConfig, attached: bool) -> Result<SnapshotFacts, StartError> {
    let exact = exact_allocations(config, attached);
    // JIT compilations always: an on-stack-replacement version's frame shape is learnt when it
    // is compiled (`frames::learn_osr`), before its first sample.
    // Precompiled code handed out, from start-up (not allowed after an attach): which sampled
    // addresses in ReadyToRun images the runtime can safely be asked about (`images`).
    let prepared = if attached { 0 } else { COR_PRF_MONITOR_CACHE_SEARCHES };
    let events = SAMPLING_EVENTS
        | COR_PRF_MONITOR_JIT_COMPILATION
        | prepared
        | loading_events(config)
        | inject::event_mask(config);
    info.set_event_mask(events | exact_allocation_events(exact), EVENTS_HIGH)
        .map_err(|e| StartError::runtime("SetEventMask", e))?;
    if !attached {
        images::set_complete();
    }
    start_event_pipe(info, config, exact);
    let interval = session::interval(config);
    let clock = session::sampling_clock(config);
    // Async stacks need each sample's async context, which only a handler on the thread reads.
    let choice =
        sampling::Choice { kernel: config.kernel_sampler && !config.async_stacks, cpu_timers: config.cpu_timers };
    let sampler = sampling::start(interval, clock, choice, Box::new(frames::ClrFrames::default()))
        .map_err(|e| StartError::runtime("installing the sampler", e))?;
    log!("sampler: {sampler}");
    // At start-up, the thread initialising the runtime runs Main; it may never be reported as
    // created. (After an attach this is the runtime's diagnostics thread: the running threads
    // are enumerated in `attach_complete`.)
    if !attached {
        session::sample_thread(threads::gettid());
    }
    Ok(session::sampling_facts(config))
}

/// The function-ID mapper: names the function (at JIT time), applies the filter, and gives traced
/// functions a dense id that the hooks receive instead of the FunctionID.
fn map_function(function: FunctionID) -> Option<usize> {
    let session = session::get()?;
    if let Some(id) = methods().id_of(function) {
        return Some(id as usize);
    }
    let names = match info()?.method_names(function) {
        Ok(names) => names,
        Err(e) => {
            log!("cannot name function {function:#x}: {e}; not traced");
            return None;
        }
    };
    if !session.config.filter.traces(
        &names.name,
        &names.assembly,
        crate::base::process::is_framework(&names.path, &names.assembly),
    ) {
        return None;
    }
    Some(methods().insert(function, with_type_arguments(names, function)) as usize)
}

/// The runtime's version as its directory spells it (`.../Microsoft.NETCore.App/8.0.4/libcoreclr.so`),
/// else as `GetRuntimeInformation` reports it.
fn runtime_version(info: &ProfilerInfo) -> String {
    let from_maps = std::fs::read_to_string("/proc/self/maps").ok().and_then(|maps| {
        let line = maps.lines().find(|l| l.ends_with("/libcoreclr.so"))?;
        let path = std::path::Path::new(line.split_whitespace().last()?);
        let dir = path.parent()?.file_name()?.to_str()?;
        dir.chars().next()?.is_ascii_digit().then(|| dir.to_string())
    });
    from_maps.unwrap_or_else(|| match info.runtime_information() {
        Ok(r) => format!("{}.{}.{}", r.major, r.minor, r.build),
        Err(_) => "unknown".into(),
    })
}
