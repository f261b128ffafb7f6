//! What both backends share: one profiling session per process, from the configuration to the
//! final snapshot.
//!
//! A backend's start-up is one call to [`start`] with the runtime's name and version and a
//! closure that sets the runtime up for the configured mode; everything around it is here:
//! reading the configuration, the log, the handshake (`Hello`, built once, here), the IPC thread,
//! reporting a failed start to the controller, the last-chance snapshots (`signals`), the
//! final snapshot, the thread bookkeeping both runtimes report, and the one panic policy: a panic
//! in any agent code the runtime calls switches profiling off ([`disable`]) — the profile is
//! lost, the program is not. The CoreCLR and Mono wrappers (`sonde-clr`, `sonde-mono`) catch
//! panics at their boundary and call the backend's `disable`, which is this one; the hooks' slow
//! paths run behind [`guarded`].

use crate::base::log::log;
use crate::base::process;
use crate::base::running::{self, guarded};
use crate::ipc::link::{Link, LinkError, Patience, SnapshotFacts};
use crate::sampled_timing;
use crate::sampling;
use crate::signals;
use crate::tree::{clock, threads};
use sonde_profile::{Mode, Runtime};
use sonde_protocol::{AgentConfig, Hello, PROTOCOL_VERSION};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, Ordering::*};

/// The session of this process, once [`start`] succeeded.
pub struct Session {
    pub config: AgentConfig,
    /// Loaded into a running process (`sonde record --pid`), not at its start.
    pub attached: bool,
    link: &'static Link,
    facts: SnapshotFacts,
    shut_down: AtomicBool,
}

/// The sessions of this process: at most one runs at a time (`running`); the current or last one
/// is `current`; `started` counts them, so that [`restart`] knows a session came before.
struct Sessions {
    /// The current (or last) session: a `Session` leaked by [`start`] (a few hundred bytes a
    /// session, never freed: a late reader may still hold the last one), or null before the first.
    current: AtomicPtr<Session>,
    /// Set while a session is starting or running: a second start meanwhile is refused (one
    /// session at a time). Cleared when an attached session finished ([`finish`]): the same
    /// loaded agent then serves the next attach, from a clean state ([`restart`]).
    running: AtomicBool,
    /// Sessions started in this process so far.
    started: AtomicU32,
}

static SESSIONS: Sessions = Sessions {
    current: AtomicPtr::new(std::ptr::null_mut()),
    running: AtomicBool::new(false),
    started: AtomicU32::new(0),
};

fn current() -> Option<&'static Session> {
    // SAFETY: null, or a `Session` leaked by `try_start` and never freed.
    unsafe { SESSIONS.current.load(Acquire).as_ref() }
}

/// Why a session did not start. Logged (when there is a log) and, once the controller is
/// connected, sent to it: it prints it as the reason the process was not profiled.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("bad configuration: {0}")]
    Config(#[from] sonde_protocol::ConfigError),
    #[error("{} is not set: nothing to report to; staying inactive", sonde_protocol::config::ENV_SOCKET)]
    NoController,
    #[error("already loaded (--profile=sonde given twice?); ignoring this one")]
    AlreadyStarted,
    #[error(transparent)]
    Link(#[from] LinkError),
    /// The agent's own library, or the socket it was told to use, is not the recording user's
    /// alone (`sonde_protocol::trust`): staying inactive, saying nothing to whoever listens there.
    #[error("not trusted, staying inactive: {0}")]
    Untrusted(#[from] sonde_protocol::trust::TrustError),
    /// Attached to a running process in a mode that needs the program to start under the
    /// profiler (the controller refuses first; this is the agent's own check).
    #[error("only sampling can attach to a running process; tracing needs it to start under sonde")]
    TracingNeedsStart,
    /// The runtime refused a step of the set-up (`what`: the call or the step).
    #[error("{what} failed: {detail}")]
    Runtime { what: &'static str, detail: String },
}

impl StartError {
    pub fn runtime(what: &'static str, detail: impl std::fmt::Display) -> StartError {
        StartError::Runtime { what, detail: detail.to_string() }
    }
}

/// Where the configuration comes from.
#[derive(Clone, Copy)]
pub enum ConfigSource<'a> {
    /// The environment `sonde record` gave the program it started.
    Environment,
    /// The client data of the runtime's attach command (`sonde record --pid`): there is no
    /// environment to set in a running process.
    Attach(&'a [u8]),
}

/// Which runtime is being profiled, for the handshake and the log.
pub struct RuntimeId<'a> {
    /// `coreclr` or `mono` (the profile's `runtime.kind`).
    pub kind: &'static str,
    /// How the runtime loaded the agent, for the log.
    pub loaded_by: &'a str,
}

/// Starts the session: configuration, log, handshake, then `set_up` (the backend's own start for
/// the configured mode, returning what snapshots need to know), then the IPC thread. `version` is
/// asked for once the configuration says there is a controller to tell.
pub fn start(
    runtime: RuntimeId<'_>,
    source: ConfigSource<'_>,
    version: impl FnOnce() -> String,
    set_up: impl FnOnce(&AgentConfig) -> Result<SnapshotFacts, StartError>,
) -> Result<&'static Session, StartError> {
    let started = try_start(runtime, source, version, set_up);
    if let Err(e) = &started {
        // A second start leaves the first one's session alone; a failed one leaves the agent
        // off, and free for the next attach.
        if !matches!(e, StartError::AlreadyStarted) {
            running::switch_off_quietly();
            running::set_mode(None);
            SESSIONS.running.store(false, SeqCst);
        }
        log!("{e}");
    }
    started
}

fn try_start(
    runtime: RuntimeId<'_>,
    source: ConfigSource<'_>,
    version: impl FnOnce() -> String,
    set_up: impl FnOnce(&AgentConfig) -> Result<SnapshotFacts, StartError>,
) -> Result<&'static Session, StartError> {
    crate::base::log::install_panic_hook();
    running::on_disable(|| {
        log!("a callback panicked; profiling stops here");
        send_error("the agent hit an internal error and stopped profiling".into());
    });
    // No log file yet when the configuration is unreadable: the controller then reports that no
    // agent connected.
    let config = match source {
        ConfigSource::Environment => AgentConfig::from_env(|k| std::env::var(k).ok())?,
        ConfigSource::Attach(data) => AgentConfig::from_client_data(data)?,
    };
    let attached = matches!(source, ConfigSource::Attach(_));
    if let Some(path) = &config.log {
        crate::base::log::open(path);
    }
    log!("loaded by {}; config {config:?}", runtime.loaded_by);
    if SESSIONS.running.swap(true, SeqCst) {
        return Err(StartError::AlreadyStarted);
    }
    restart();
    let socket = config.socket.clone().ok_or(StartError::NoController)?;
    // CoreCLR's samplers of CPU time open a perf event per thread, the first one on the thread
    // that starts the runtime, which then waits for what the kernel does for a first one: begun
    // beside the checks and the handshake instead (`perf_event::warm_up`).
    if config.mode == Mode::Sampling
        && runtime.kind == "coreclr"
        && sampling_clock(&config) == sampling::Clock::Cpu
        && (config.kernel_sampler || config.cpu_timers)
    {
        sampling::warm_up_perf_events();
    }
    // The environment that names the socket outlives the controller: a process started after it
    // ended may find the path re-created by someone else. Check before a word is said; the link
    // checks the peer itself once connected.
    if let Some(library) = process::own_library() {
        sonde_protocol::trust::check_not_writable_by_others(&library)?;
    }
    sonde_protocol::trust::check_socket(&socket)?;
    let hello = Hello {
        protocol: PROTOCOL_VERSION,
        agent_version: env!("CARGO_PKG_VERSION").to_string(),
        pid: std::process::id(),
        runtime: Runtime { kind: runtime.kind.into(), version: version() },
        mode: config.mode,
        timing: config.timing,
        clock: (config.mode == Mode::Sampling).then_some(config.clock),
        command_line: process::command_line(),
        started_unix_ms: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64),
    };
    let link = Link::connect(&socket, hello)?;
    if attached && config.mode != Mode::Sampling {
        link.send_error(StartError::TracingNeedsStart.to_string());
        return Err(StartError::TracingNeedsStart);
    }
    crate::events::configure(config.events);
    let facts = match set_up(&config) {
        Ok(facts) => facts,
        Err(e) => {
            link.send_error(e.to_string());
            return Err(e);
        }
    };
    let mode = config.mode;
    let session: &'static Session =
        Box::leak(Box::new(Session { config, attached, link, facts, shut_down: AtomicBool::new(false) }));
    SESSIONS.current.store(std::ptr::from_ref(session).cast_mut(), Release);
    running::set_mode(Some(mode));
    // Whichever comes first sends the final snapshot: the runtime's shutdown event, or the
    // process's exit — a host that exits without shutting its runtime down (Python with
    // pythonnet, a native host calling `exit`), or Mono after an unhandled exception.
    final_snapshot_at_exit();
    sampling::on_notice(send_error);
    if let Err(e) = session.link.serve(facts, finish, controller_gone, crate::ipc::heap::take) {
        log!("cannot start the IPC thread: {e}");
    }
    log!("profiling");
    Ok(session)
}

/// The session, once started (and until profiling was switched off).
#[inline]
pub fn get() -> Option<&'static Session> {
    if !running::enabled() {
        return None;
    }
    current()
}

/// Everything of a session before this one back to a clean state, so that a second session in
/// one process (an agent attached again: the runtime loads the same library, whose statics
/// live on) starts as the first did: the clock's start, the threads and their trees, the
/// runtime events, the samplers' state, the snapshot's contributions and requests. What is known
/// of the process (method names and ids, native symbols, code shapes) is kept. Nothing of the
/// last session runs any more: its threads were joined or ended in [`finish`].
fn restart() {
    clock::start();
    if SESSIONS.started.fetch_add(1, Relaxed) == 0 {
        return;
    }
    running::enable();
    threads::reset();
    crate::events::reset();
    sampling::reset();
    crate::ipc::snapshot::reset();
    crate::ipc::walk::reset();
    crate::ipc::heap::reset();
    *DETACH.lock().unwrap_or_else(|e| e.into_inner()) = None;
}

/// Tells the controller something went wrong (it prints the message).
pub fn send_error(message: String) {
    if let Some(session) = current() {
        session.link.send_error(message);
    }
}

/// A snapshot now, not the last one, waited for while the controller reads (see [`Patience`]).
pub fn snapshot_now(patience: Patience) {
    if let Some(session) = get() {
        session.link.send_snapshot(session.facts, false, patience);
    }
}

/// Installs the last-chance snapshot handlers (see [`signals`]); `sigterm` too where the
/// runtime leaves SIGTERM at its default action.
pub fn install_last_chance(sigterm: bool) {
    // The snapshot thread sends it; the dying thread's handler waits for it (at most a second).
    // Guarded: the thread outlives a panic in one snapshot, and the dying thread's handler is
    // not left waiting for snapshots that will never come.
    if let Err(e) = signals::install(sigterm, || guarded((), || snapshot_now(Patience::EXIT))) {
        log!("cannot install the last-chance snapshot handlers: {e}");
    }
}

/// An exception was thrown: it may be about to end the process (see
/// [`signals::exception_thrown`]).
pub fn exception_thrown() {
    if get().is_some() {
        signals::exception_thrown(|| snapshot_now(Patience::THROW));
    }
}

/// The final snapshot, sent once, by the first of the runtime's end-of-run events (`why`) that
/// arrives.
pub fn final_snapshot(why: &str) {
    let Some(session) = get() else { return };
    if process::forked_child() {
        return; // the parent's session (see `process`); not even the log, whose lock may be held
    }
    if session.shut_down.swap(true, Relaxed) {
        return;
    }
    sampled_timing::stop();
    if session.facts.sampling {
        // What the final snapshot is about to report. A sample standing for several intervals
        // counted the extra ones as deferred.
        sampling::drain_all();
        let (taken, losses) = sampling::totals();
        log!("samples: {taken} taken in {} stacks; {losses:?}", taken.saturating_sub(losses.deferred));
        if crate::sampling::async_stacks::enabled() {
            log!(
                "async stacks: {} awaits not stitched (the drain fell behind)",
                crate::sampling::async_stacks::dropped()
            );
        }
        log!("{}", sampling::module_files::summary());
        log!("{}", sampling::module_files::unasked_summary());
    }
    threads::fold_ended();
    log!("held at the end: {}, {} allocation tables", threads::held(), crate::events::allocation_tables());
    let sent = session.link.send_snapshot(session.facts, true, Patience::EXIT);
    log!("{why}; final snapshot {}", if sent { "sent" } else { "not sent" });
}

/// How the backend hands the process back to the runtime once profiling finished (CoreCLR:
/// `RequestProfilerDetach`), set where the backend supports it.
static DETACH: Mutex<Option<Box<dyn Fn() + Send + Sync>>> = Mutex::new(None);

/// Sets how [`finish`] detaches the agent.
pub fn on_detach(detach: impl Fn() + Send + Sync + 'static) {
    *DETACH.lock().unwrap_or_else(|e| e.into_inner()) = Some(Box::new(detach));
}

/// The controller asked to stop profiling while the process runs on (`ControllerMessage::Finish`:
/// the end of an attached recording). On the IPC thread: the final snapshot, then nothing of the
/// agent's runs any more — callbacks find no session, the samplers and their threads stop — and
/// the backend detaches the agent from the runtime where it can ([`on_detach`]).
fn finish() {
    guarded((), || {
        // Sampling stops first, so that the final snapshot holds every sample taken, and the
        // controller, once it has it, finds nothing of ours running but this thread.
        if current().is_some_and(|s| s.facts.sampling) {
            sampling::stop();
        }
        final_snapshot("finished by the controller");
        running::switch_off_quietly();
        running::set_mode(None);
        let detach = DETACH.lock().unwrap_or_else(|e| e.into_inner()).take();
        match detach {
            Some(detach) => {
                detach();
                // The runtime takes a new attach only once this agent is detached: the same
                // loaded library then serves it ([`restart`]). Nothing of ours runs by then but
                // this thread, on its way out.
                SESSIONS.running.store(false, SeqCst);
            }
            None => log!("profiling stopped; this runtime cannot detach the agent, which stays inert"),
        }
    });
}

/// The controller hung up without a word (killed, crashed). An attached session then finishes
/// on its own — sampling stops and the agent detaches — rather than sample a process nobody
/// records any more; a launched one runs on as before (its final snapshot is spilled at exit
/// for a controller that may still read it).
fn controller_gone() {
    if current().is_some_and(|s| s.attached) && running::enabled() {
        log!("an attached session without its controller: finishing");
        finish();
    }
}

/// Sends the final snapshot at `exit(3)` too: a runtime may end the process without a shutdown
/// event (Mono, after printing an unhandled exception; CoreCLR in a host that never shuts it
/// down). Bounded like every final snapshot (`Patience::EXIT`).
fn final_snapshot_at_exit() {
    extern "C" fn at_exit() {
        guarded((), || final_snapshot("exit"));
    }
    // Once per process, whatever the sessions: the handler serves the one running at exit.
    static REGISTERED: std::sync::Once = std::sync::Once::new();
    REGISTERED.call_once(|| {
        // SAFETY: registers a function of this library (which the runtime never unloads) to run
        // at exit.
        if unsafe { libc::atexit(at_exit) } != 0 {
            log!("cannot register the exit handler");
        }
    });
}

/// What each mode needs to know about a thread the runtime reports started, on any thread.
pub fn thread_started(os_tid: u32) {
    if os_tid == 0 || running::mode() != Some(Mode::Sampling) {
        return;
    }
    sample_thread(os_tid);
}

/// Starts sampling thread `os_tid` (with its call tree). Backends call it for the thread that runs
/// `Main` while they set sampling up, before any thread event.
pub fn sample_thread(os_tid: u32) {
    sampling::register(os_tid, threads::state_for(os_tid));
}

/// A thread the runtime reports ended: sampling stops (its slot is reused once the thread is gone
/// and its last samples are in), its tree is closed and kept (on its own, or folded with other
/// ended threads: `threads::fold_ended`).
pub fn thread_ended(os_tid: u32) {
    if running::mode() == Some(Mode::Sampling) {
        sampling::unregister(os_tid);
    }
    threads::end(os_tid);
}

/// A managed thread's name.
pub fn thread_named(os_tid: u32, name: String) {
    threads::set_name(os_tid, name);
}

/// The facts of a tracing session: the hooks' cost is measured (and sent with each snapshot) for
/// exact timing with real hooks; `--timing sampled` charges time by interval. `runtime`: a .NET
/// runtime's session, whose snapshots list the files mapped executable unless `--native-hooks`
/// serves the compiler's hooks already (the controller looks there for instrumented libraries).
pub fn tracing_facts(config: &AgentConfig, floor: bool, runtime: bool) -> SnapshotFacts {
    let timed = config.timing == sonde_profile::Timing::Exact;
    SnapshotFacts {
        sample_interval_ns: if timed { 0 } else { interval(config).as_nanos() as u64 },
        exact_timing: timed && !floor,
        sampling: false,
        mapped_files: runtime && !config.native_hooks,
    }
}

/// The facts of a sampling session.
pub fn sampling_facts(config: &AgentConfig) -> SnapshotFacts {
    SnapshotFacts {
        sample_interval_ns: interval(config).as_nanos() as u64,
        exact_timing: false,
        sampling: true,
        mapped_files: false,
    }
}

/// The sampling interval (`--rate`), or `--timing sampled`'s.
pub fn interval(config: &AgentConfig) -> std::time::Duration {
    std::time::Duration::from_micros(config.interval_us.max(1))
}

/// The `--clock` of sampling mode, as the sampler spells it.
pub fn sampling_clock(config: &AgentConfig) -> sampling::Clock {
    match config.clock {
        sonde_profile::SampleClock::Cpu => sampling::Clock::Cpu,
        sonde_profile::SampleClock::Wall => sampling::Clock::Wall,
    }
}

/// Starts `--timing sampled`'s interval thread when the configuration asks for it.
pub fn start_sampled_timing(config: &AgentConfig) -> Result<(), StartError> {
    if config.timing == sonde_profile::Timing::Exact {
        return Ok(());
    }
    sampled_timing::start(interval(config)).map_err(|e| StartError::runtime("starting the sampler thread", e))
}
