//! Sonde's `ProfilerCallback`: start-up, the function filter, threads, exception unwinding and
//! shutdown. Everything here runs off the hot path (at JIT time or on rare runtime events).

use crate::clock;
use crate::hooks;
use crate::link::{Link, SnapshotFacts};
use crate::log::log;
use crate::sampler;
use crate::sampling;
use crate::signals;
use crate::snapshot::MethodTable;
use crate::threads;
use sonde_clr::sys::*;
use sonde_clr::{HResult, ProfilerCallback, ProfilerInfo};
use sonde_profile::{Mode, Runtime, SampleClock, Timing};
use sonde_protocol::{AgentConfig, Hello, MethodRecord, PROTOCOL_VERSION};
use std::cell::Cell;
use std::collections::HashMap;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::Duration;

pub struct Profiler;

/// State that exists once `initialize` succeeded.
struct Active {
    info: ProfilerInfo,
    config: AgentConfig,
    link: Link,
    facts: SnapshotFacts,
    shut_down: AtomicBool,
}

static ACTIVE: OnceLock<Active> = OnceLock::new();
static METHODS: OnceLock<MethodTable> = OnceLock::new();

fn methods() -> &'static MethodTable {
    METHODS.get_or_init(MethodTable::default)
}

thread_local! {
    /// The function whose frame the runtime is unwinding on this thread (set by
    /// ExceptionUnwindFunctionEnter, consumed by ExceptionUnwindFunctionLeave).
    static UNWINDING: Cell<FunctionID> = const { Cell::new(0) };
}

impl ProfilerCallback for Profiler {
    fn initialize(&self, info: ProfilerInfo) -> Result<(), HResult> {
        clock::start();
        let config = AgentConfig::from_env(|k| std::env::var(k).ok()).map_err(|e| {
            // No log file configured yet is fine: the controller reports that no agent connected.
            log!("bad configuration: {e}");
            HResult(E_FAIL)
        })?;
        if let Some(path) = &config.log {
            crate::log::open(path);
        }
        log!("loaded; ICorProfilerInfo{}; config {config:?}", info.version);
        let Some(socket) = config.socket.clone() else {
            log!("{} is not set: nothing to report to; staying inactive", sonde_protocol::config::ENV_SOCKET);
            return Err(HResult(E_FAIL));
        };
        let hello = Hello {
            protocol: PROTOCOL_VERSION,
            agent_version: env!("CARGO_PKG_VERSION").to_string(),
            pid: std::process::id(),
            runtime: Runtime { kind: "coreclr".into(), version: runtime_version(&info) },
            mode: config.mode,
            timing: config.timing,
            clock: (config.mode == Mode::Sampling).then_some(config.clock),
            command_line: crate::link::process_command_line(),
            started_unix_ms: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as u64),
        };
        let link = Link::connect(&socket, hello).map_err(|e| {
            log!("{e}");
            HResult(E_FAIL)
        })?;
        let started = match config.mode {
            Mode::Tracing => start_tracing(&info, &config),
            Mode::Sampling => start_sampling(&info, &config),
        };
        let facts = started.map_err(|(what, e)| {
            log!("{what} failed: {e}");
            link.send_error(format!("{what} failed: {e}"));
            e
        })?;
        let active = ACTIVE.get_or_init(|| Active { info, config, link, facts, shut_down: AtomicBool::new(false) });
        if let Err(e) = active.link.serve(methods(), facts) {
            log!("cannot start the IPC thread: {e}");
        }
        if let Err(e) = signals::install(|| {
            if let Some(active) = ACTIVE.get() {
                active.link.send_snapshot(methods(), active.facts, false);
            }
        }) {
            log!("cannot install the last-chance snapshot handlers: {e}");
        }
        log!("profiling");
        Ok(())
    }

    fn shutdown(&self) {
        let Some(active) = ACTIVE.get() else { return };
        if crate::link::forked_child() {
            return; // the parent's session (see `link`)
        }
        if active.shut_down.swap(true, Relaxed) {
            return;
        }
        sampler::stop();
        let sent = active.link.send_snapshot(methods(), active.facts, true);
        log!("shutdown; final snapshot {}", if sent { "sent" } else { "not sent" });
    }

    fn thread_created(&self, thread: ThreadID) {
        let Some(active) = ACTIVE.get() else { return };
        if active.config.mode != Mode::Sampling {
            return;
        }
        if let Some(os_tid) = active.info.os_thread_id(thread).ok().filter(|&t| t != 0) {
            start_sampling_thread(os_tid);
        }
    }

    fn thread_assigned_to_os_thread(&self, thread: ThreadID, os_tid: u32) {
        let Some(active) = ACTIVE.get() else { return };
        {
            let mut registry = threads::registry();
            if let Some(name) = registry.pending_names.remove(&thread) {
                registry.names.insert(os_tid, name);
            }
        }
        if active.config.mode == Mode::Sampling {
            start_sampling_thread(os_tid);
        }
    }

    fn thread_destroyed(&self, thread: ThreadID) {
        let Some(active) = ACTIVE.get() else { return };
        if let Ok(os_tid) = active.info.os_thread_id(thread) {
            if active.config.mode == Mode::Sampling {
                sampling::unregister(os_tid);
            }
            let state = threads::registry().by_tid.get(&os_tid).copied();
            if let Some(state) = state {
                state.end();
            }
        }
    }

    /// A thread is often named before it starts (`new Thread(…) { Name = … }`), when it has no
    /// OS thread yet: the name then waits for `thread_assigned_to_os_thread`.
    fn thread_name_changed(&self, thread: ThreadID, name: String) {
        let Some(active) = ACTIVE.get() else { return };
        let mut registry = threads::registry();
        match active.info.os_thread_id(thread).ok().filter(|&t| t != 0) {
            Some(os_tid) => {
                registry.names.insert(os_tid, name);
            }
            None => {
                registry.pending_names.insert(thread, name);
            }
        }
    }

    /// An exception may be about to kill the process (see `signals::exception_thrown`).
    fn exception_thrown(&self) {
        let Some(active) = ACTIVE.get() else { return };
        signals::exception_thrown(|| {
            active.link.send_snapshot(methods(), active.facts, false);
        });
    }

    /// A caught exception may have been a fault whose handler never returned (see
    /// `sampling::fault_handled_on_this_thread`).
    fn exception_catcher_leave(&self) {
        if ACTIVE.get().is_some_and(|a| a.config.mode == Mode::Sampling) {
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
        let Some(active) = ACTIVE.get().filter(|a| a.config.mode == Mode::Tracing) else { return };
        if let Some(id) = methods().id_of(function) {
            let tick = if active.config.timing == Timing::Exact { clock::ticks() } else { 0 };
            threads::current().tree.leave(id, tick);
        }
    }

    fn disable(&self) {
        log!("a callback panicked; profiling stops here");
        if let Some(active) = ACTIVE.get() {
            active.link.send_error("the agent hit an internal error and stopped profiling".into());
        }
    }
}

type StartError = (&'static str, HResult);

/// Tracing mode: enter/leave hooks on every method the filter selects.
fn start_tracing(info: &ProfilerInfo, config: &AgentConfig) -> Result<SnapshotFacts, StartError> {
    let timed = config.timing == Timing::Exact;
    let floor = hooks::Floor::from_env();
    if let Some(floor) = floor {
        log!("benchmark floor hooks: {floor:?}; nothing is recorded");
    }
    let hook_set = floor.map_or_else(|| hooks::hooks(timed), hooks::floor_hooks);
    let mut mask =
        COR_PRF_MONITOR_ENTERLEAVE | COR_PRF_DISABLE_INLINING | COR_PRF_MONITOR_EXCEPTIONS | COR_PRF_MONITOR_THREADS;
    if hook_set.with_info {
        mask |= COR_PRF_ENABLE_FRAME_INFO;
    }
    if config.filter.may_trace_framework() {
        // Precompiled (ReadyToRun) framework code has no hooks; have it JIT-ed instead.
        mask |= COR_PRF_DISABLE_ALL_NGEN_IMAGES;
    }
    info.set_event_mask(mask, 0).map_err(|e| ("SetEventMask", e))?;
    if timed {
        let cost = hooks::measure_cost();
        log!("hook cost: {:.1} ticks inside a call, {:.1} around it", cost.inner_ticks, cost.outer_ticks);
    }
    // SAFETY: `hooks::hooks` returns entry points built for this architecture's convention
    // (assembly entry points for the fast hooks on x86-64, C functions for the WithInfo hooks).
    unsafe { info.set_enter_leave_hooks(hook_set.enter, hook_set.leave, hook_set.tailcall, hook_set.with_info) }
        .map_err(|e| ("SetEnterLeaveFunctionHooks3", e))?;
    info.set_function_mapper(map_function).map_err(|e| ("SetFunctionIDMapper2", e))?;
    let interval = Duration::from_micros(config.interval_us);
    if !timed {
        sampler::start(interval).map_err(|_| ("starting the sampler thread", HResult(E_FAIL)))?;
    }
    Ok(SnapshotFacts {
        sample_interval_ns: if timed { 0 } else { interval.as_nanos() as u64 },
        exact_timing: timed && floor.is_none(),
        sampling: false,
    })
}

/// Sampling mode: no hooks, no JIT flags; a sampler thread and a stack-walking signal handler
/// (`sampling`). The runtime only reports threads (to start and stop their timers) and exceptions
/// (for the crash snapshot).
fn start_sampling(info: &ProfilerInfo, config: &AgentConfig) -> Result<SnapshotFacts, StartError> {
    info.set_event_mask(COR_PRF_MONITOR_THREADS | COR_PRF_MONITOR_EXCEPTIONS, 0).map_err(|e| ("SetEventMask", e))?;
    let interval = Duration::from_micros(config.interval_us);
    let clock = match config.clock {
        SampleClock::Cpu => sampling::Clock::Cpu,
        SampleClock::Wall => sampling::Clock::Wall,
    };
    sampling::on_notice(|message| {
        if let Some(active) = ACTIVE.get() {
            active.link.send_error(message);
        }
    });
    sampling::start(interval, clock, Box::new(ClrFrames::default()))
        .map_err(|_| ("installing the sampler", HResult(E_FAIL)))?;
    // The thread initialising the runtime runs Main; it may never be reported as created.
    start_sampling_thread(threads::gettid());
    Ok(SnapshotFacts { sample_interval_ns: interval.as_nanos() as u64, exact_timing: false, sampling: true })
}

fn start_sampling_thread(os_tid: u32) {
    if os_tid == 0 {
        return;
    }
    threads::state_for(os_tid);
    sampling::register(os_tid);
}

/// Resolves sampled instruction pointers to methods: managed code through the runtime, native
/// code through the dynamic linker's symbols, anything else as unknown code (stubs, JIT helpers).
#[derive(Default)]
struct ClrFrames {
    cache: HashMap<usize, sampling::Frame>,
    runtime_calls: HashMap<usize, bool>,
}

impl ClrFrames {
    fn managed(&self, function: FunctionID) -> u32 {
        if let Some(id) = methods().id_of(function) {
            return id;
        }
        let names = ACTIVE.get().and_then(|a| a.info.method_names(function).ok());
        match names {
            Some(names) => methods().insert(function, |id| MethodRecord {
                id,
                name: names.name,
                signature: names.signature,
                assembly: names.assembly,
                module: names.module,
            }),
            None => methods().pseudo("[unnamed managed code]", "", ""),
        }
    }
}

impl sampling::FrameResolver for ClrFrames {
    fn resolve(&mut self, ip: usize) -> sampling::Frame {
        if let Some(&frame) = self.cache.get(&ip) {
            return frame;
        }
        if self.cache.len() > 1 << 20 {
            self.cache.clear();
        }
        let function = ACTIVE.get().and_then(|a| a.info.function_from_ip(ip));
        let frame = match function {
            Some(function) => sampling::Frame { method: self.managed(function), managed: true },
            None => sampling::Frame { method: sampling::native_frame(methods(), ip), managed: false },
        };
        self.cache.insert(ip, frame);
        frame
    }

    fn calls_runtime(&mut self, return_address: usize) -> bool {
        if let Some(&answer) = self.runtime_calls.get(&return_address) {
            return answer;
        }
        let answer = call_target(return_address)
            .and_then(sampling::native_symbol)
            .is_some_and(|(library, _, _)| library == "libcoreclr.so");
        self.runtime_calls.insert(return_address, answer);
        answer
    }

    fn truncated(&mut self) -> u32 {
        // (a marker, not a method: see `sampling::Frame::managed`)
        methods().pseudo("[truncated stack]", "", "")
    }
}

/// The target of the call instruction that ends just before `return_address`, for the forms
/// the JIT emits: `call rel32`, `call [rip+disp32]`, `mov rax, imm64; call rax`.
fn call_target(return_address: usize) -> Option<usize> {
    let mut code = [0u8; 12];
    let start = return_address.checked_sub(code.len())?;
    read_memory(start, &mut code)?;
    let rel32 = |b: &[u8]| i32::from_le_bytes([b[0], b[1], b[2], b[3]]) as isize;
    if code[7] == 0xE8 {
        return Some(return_address.wrapping_add_signed(rel32(&code[8..12])));
    }
    if code[6] == 0xFF && code[7] == 0x15 {
        let cell = return_address.wrapping_add_signed(rel32(&code[8..12]));
        let mut target = [0u8; 8];
        read_memory(cell, &mut target)?;
        return Some(usize::from_le_bytes(target));
    }
    if code[0] == 0x48 && code[1] == 0xB8 && code[10] == 0xFF && code[11] == 0xD0 {
        return Some(usize::from_le_bytes(code[2..10].try_into().ok()?));
    }
    None
}

/// Reads this process's memory without risking a fault (the address may be anything):
/// `process_vm_readv` reports unmapped memory as an error instead.
fn read_memory(address: usize, buf: &mut [u8]) -> Option<()> {
    let local = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() };
    let remote = libc::iovec { iov_base: address as *mut libc::c_void, iov_len: buf.len() };
    // SAFETY: writes at most `buf.len()` bytes into `buf`; the remote range is only read, by the
    // kernel, which fails cleanly on unmapped memory.
    let read = unsafe { libc::process_vm_readv(libc::getpid(), &local, 1, &remote, 1, 0) };
    (read == buf.len() as isize).then_some(())
}

/// The function-ID mapper: names the function (at JIT time), applies the filter, and gives traced
/// functions a dense id that the hooks receive instead of the FunctionID.
fn map_function(function: FunctionID) -> Option<usize> {
    let active = ACTIVE.get()?;
    if let Some(id) = methods().id_of(function) {
        return Some(id as usize);
    }
    let names = match active.info.method_names(function) {
        Ok(names) => names,
        Err(e) => {
            log!("cannot name function {function:#x}: {e}; not traced");
            return None;
        }
    };
    if !active.config.filter.traces(&names.name, &names.assembly) {
        return None;
    }
    let id = methods().insert(function, |id| MethodRecord {
        id,
        name: names.name,
        signature: names.signature,
        assembly: names.assembly,
        module: names.module,
    });
    Some(id as usize)
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
