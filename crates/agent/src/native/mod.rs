//! Native code the compiler instrumented (`gcc`/`clang -finstrument-functions`): the hooks
//! `__cyg_profile_func_enter` / `__cyg_profile_func_exit` feed the same per-thread call trees as
//! managed tracing (docs/NATIVE.md).
//!
//! The agent library defines both hooks. glibc defines them too (empty), so a program built with
//! the flag links and runs without Sonde; `sonde record` preloads the agent (`LD_PRELOAD`), whose
//! definitions then come first. The first hook call starts the session:
//! * in a .NET process whose runtime already started Sonde in tracing mode, the native calls join
//!   its trees (a P/Invoke into an instrumented library shows its functions under the managed
//!   caller);
//! * in a process with no runtime, a **native session** starts (`runtime.kind` `native`), when
//!   `sonde record` asked for one (`SONDE_NATIVE=1`);
//! * anywhere else the hooks return at once, forever.
//!
//! **Frames left without an exit hook.** `longjmp` skips the exit hooks of the frames it leaves
//! (a C++ exception does not: GCC runs them while unwinding). Each thread keeps a shadow stack of
//! its calls; a call made from the code of a function that is not on top of it, but below, means
//! the calls above that one are gone ([`close_abandoned`]), as does a hook call whose frame
//! position is above an entry's ([`close_gone`]).

use crate::base::log::log;
use crate::base::running;
use crate::session::{self, RuntimeId};
use crate::tree::calltree::CallTree;
use crate::tree::methods::methods;
use crate::tree::trace::Ring;
use crate::tree::{clock, threads};
use sonde_profile::{Mode, Timing};
use std::ffi::c_void;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU8, Ordering::*};

/// Not decided yet (no hook called so far).
const UNKNOWN: u8 = 0;
/// Deciding, on the first hook's thread: other threads' hooks return meanwhile.
const STARTING: u8 = 1;
/// Recording, with exact timing.
const ON_TIMED: u8 = 2;
/// Recording calls only (`--timing sampled`: a sampler thread charges time).
const ON_UNTIMED: u8 = 3;
/// Not recording, for good.
const OFF: u8 = 4;

static STATE: AtomicU8 = AtomicU8::new(UNKNOWN);
/// The session is the native one (no runtime reports threads' ends: the hooks do).
static OWN_SESSION: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The deepest shadow stack kept per thread; deeper calls are counted without it.
const MAX_SHADOW: usize = 1 << 16;

/// A thread's state for the hooks, allocated at its first hook call: the thread-local itself is
/// one pointer (a loaded agent takes its thread-locals from the small static reserve glibc keeps
/// for libraries loaded after start-up).
#[derive(Default)]
struct NativeThread {
    /// Where an entry hook is called from → what is known of that call (the shared table is
    /// behind a lock).
    sites: crate::sampling::AddressMap<usize, Site>,
    /// A code address → the start of the function containing it, 0 when the symbols do not tell.
    code_of: crate::sampling::AddressMap<usize, usize>,
    /// The calls this thread is in.
    shadow: Vec<Entry>,
}

/// An entry hook's call instruction (each is in one function's code, for one entered function).
#[derive(Clone, Copy)]
struct Site {
    id: u32,
    /// The function whose frame the entered code runs in: the entered function itself when the
    /// hook call is in its own code, the function it was inlined into otherwise (the compilers
    /// call an inlined function's hooks from its caller's code); 0 when the symbols do not tell.
    frame_of: usize,
}

/// One call of the shadow stack.
#[derive(Clone, Copy)]
struct Entry {
    function: usize,
    id: u32,
    /// The hook's frame position at the entry (see [`stack_pointer`]).
    sp: usize,
    /// The entry hook's second argument: the return address of the instrumented function's
    /// frame. An inlined callee has its caller's (the hook is given the frame's return address).
    call_site: usize,
    /// [`Site::frame_of`]: the function whose code calls made from this frame come from.
    frame_of: usize,
    /// The last call site found in this entry's code (spares the look-up in a loop of calls).
    last_call: usize,
}

/// Owns the thread's [`NativeThread`]; its destructor ends the thread's tree in a native session
/// (no runtime reports a thread's end there).
struct Tls(std::cell::Cell<*mut NativeThread>);

impl Drop for Tls {
    fn drop(&mut self) {
        let state = self.0.replace(std::ptr::null_mut());
        if !state.is_null() {
            // SAFETY: made by `Box::into_raw` in `with_thread`, owned by this thread-local only.
            drop(unsafe { Box::from_raw(state) });
        }
        if OWN_SESSION.load(Relaxed) {
            running::guarded((), || session::thread_ended(threads::gettid()));
        }
    }
}

thread_local! {
    static TLS: Tls = const { Tls(std::cell::Cell::new(std::ptr::null_mut())) };
}

/// Runs `f` with this thread's state (`None` once the thread's thread-locals are gone: its
/// instrumented destructors run after them).
fn with_thread<R>(f: impl FnOnce(&mut NativeThread) -> R) -> Option<R> {
    TLS.try_with(|tls| {
        let mut state = tls.0.get();
        if state.is_null() {
            state = Box::into_raw(Box::default());
            tls.0.set(state);
        }
        // SAFETY: this thread's own box, alive until the thread-local's destructor; the hooks do
        // not re-enter (the agent is not instrumented), so no other reference exists meanwhile.
        f(unsafe { &mut *state })
    })
    .ok()
}

/// Names native functions by address, for every thread.
static NAMES: Mutex<Option<crate::sampling::NativeNames>> = Mutex::new(None);

/// GCC/Clang's function-entry hook (`-finstrument-functions`).
#[unsafe(no_mangle)]
pub extern "C" fn __cyg_profile_func_enter(this_fn: *mut c_void, call_site: *mut c_void) {
    let state = STATE.load(Relaxed);
    if state >= OFF || state == STARTING {
        return;
    }
    let sp = stack_pointer();
    let state = if state == UNKNOWN { start() } else { state };
    if state != ON_TIMED && state != ON_UNTIMED {
        return;
    }
    // SAFETY: `sp` is this hook's own frame record (frame pointers are kept: .cargo/config.toml),
    // whose second word is the hook's return address.
    let from = unsafe { *((sp + std::mem::size_of::<usize>()) as *const usize) };
    let call = Call { function: this_fn as usize, sp, call_site: call_site as usize, from };
    running::guarded((), || enter(call, state == ON_TIMED));
}

/// One entry hook call.
#[derive(Clone, Copy)]
struct Call {
    function: usize,
    /// The hook's frame position.
    sp: usize,
    /// The hook's second argument.
    call_site: usize,
    /// Where the hook was called from: its own return address, inside the code the compiler
    /// put the hook call in (the entered function's, or the function it was inlined into).
    from: usize,
}

/// GCC/Clang's function-exit hook.
#[unsafe(no_mangle)]
pub extern "C" fn __cyg_profile_func_exit(this_fn: *mut c_void, _call_site: *mut c_void) {
    let state = STATE.load(Relaxed);
    if state != ON_TIMED && state != ON_UNTIMED {
        return;
    }
    let sp = stack_pointer();
    running::guarded((), || exit(this_fn as usize, sp, state == ON_TIMED));
}

fn tick(timed: bool) -> u64 {
    if timed { clock::ticks() } else { 0 }
}

// (A thread's instrumented destructors may run after its thread-locals are gone: the tree then
// sees the calls without the shadow stack's repairs.)

/// The method id of a function the filter leaves out (`--include`/`--exclude`): its hooks return
/// after the look-up, and its callees count under its nearest traced caller.
const EXCLUDED: u32 = u32::MAX;

fn enter(call: Call, timed: bool) {
    let state = threads::current();
    let (tree, ring) = (&state.tree, state.trace_ring());
    let function = call.function;
    let entered = with_thread(|thread| {
        let site = match thread.sites.get(&call.from) {
            Some(&site) => site,
            None => new_site(thread, &call),
        };
        if site.id == EXCLUDED {
            return;
        }
        let id = site.id;
        close_gone(&mut thread.shadow, call.sp, tree, ring, timed);
        close_abandoned(thread, &call, site.frame_of, tree, ring, timed);
        if thread.shadow.len() < MAX_SHADOW {
            thread.shadow.push(Entry {
                function,
                id,
                sp: call.sp,
                call_site: call.call_site,
                frame_of: site.frame_of,
                last_call: 0,
            });
        }
        let tick = tick(timed);
        tree.enter(id, tick);
        if let Some(ring) = ring {
            ring.push(tick, id, thread.shadow.len() as u32, false);
        }
    });
    if entered.is_none() {
        let id = method_id(function);
        if id != EXCLUDED {
            tree.enter(id, tick(timed));
        }
    }
}

/// What an entry hook's call site tells, the first time the thread meets it.
#[cold]
fn new_site(thread: &mut NativeThread, call: &Call) -> Site {
    let site = Site { id: method_id(call.function), frame_of: code_of(&mut thread.code_of, call.from) };
    thread.sites.insert(call.from, site);
    site
}

/// The start of the function whose code holds the call instruction that returns to
/// `return_address` (0 when the symbol tables do not tell), through the thread's map. The byte
/// before it is looked up: a call to a function the compiler knows never returns (one that
/// always `longjmp`s) can be the last instruction of its function, and then its return address
/// is the next function's first byte.
fn code_of(known: &mut crate::sampling::AddressMap<usize, usize>, return_address: usize) -> usize {
    *known.entry(return_address).or_insert_with(|| {
        let mut names = NAMES.lock().unwrap_or_else(|e| e.into_inner());
        names.get_or_insert_with(Default::default).function_start(return_address.wrapping_sub(1)).unwrap_or(0)
    })
}

fn exit(function: usize, sp: usize, timed: bool) {
    let state = threads::current();
    let (tree, ring) = (&state.tree, state.trace_ring());
    let exited = with_thread(|thread| {
        close_gone(&mut thread.shadow, sp, tree, ring, timed);
        // The call this exit ends, and any left above it without their exits (an excluded
        // function is never on the shadow stack).
        let Some(at) = thread.shadow.iter().rposition(|e| e.function == function) else { return };
        while thread.shadow.len() > at {
            leave_top(&mut thread.shadow, tree, ring, tick(timed));
        }
    });
    if exited.is_none() {
        let id = method_id(function);
        if id != EXCLUDED {
            tree.leave(id, tick(timed));
        }
    }
}

/// Ends the innermost call of the shadow stack at `tick`.
#[inline(always)]
fn leave_top(shadow: &mut Vec<Entry>, tree: &CallTree, ring: Option<&Ring>, tick: u64) {
    let depth = shadow.len() as u32;
    let Some(Entry { id, .. }) = shadow.pop() else { return };
    tree.leave(id, tick);
    if let Some(ring) = ring {
        ring.push(tick, id, depth, true);
    }
}

/// Closes the calls whose frames are gone: entered with a stack pointer below `sp` (the stack
/// grows down), so the thread has returned past them without their exit hooks (`longjmp`).
fn close_gone(shadow: &mut Vec<Entry>, sp: usize, tree: &CallTree, ring: Option<&Ring>, timed: bool) {
    while shadow.last().is_some_and(|entered| entered.sp < sp) {
        leave_top(shadow, tree, ring, tick(timed));
    }
}

/// Closes the calls a `longjmp` abandoned that frame positions cannot tell: a function called
/// after the jump, from the frame it returned to, has about the position of the abandoned call
/// (both were called from one frame) — the same, or below it when its own frame is larger.
///
/// The call's origin decides. A function with a frame of its own (its entry hook is called from
/// its own code, `frame_of`) was called from the code of the function at its call site; an
/// inlined one runs in the frame of the function it was inlined into (`frame_of`). When that
/// function is not the top of the shadow stack but a call below it, that call is the one running
/// and everything above it is gone. Nothing is decided when the symbols do not tell, or when no
/// call on the shadow stack runs that code (a callback from a library that is not instrumented,
/// such as `qsort`'s comparison function, or from a function the filter leaves out): then only
/// the call sites are compared, for the calls at the same position (an inlined callee is given
/// its caller's call site; a sibling its own).
#[inline(always)]
fn close_abandoned(
    thread: &mut NativeThread,
    call: &Call,
    frame_of: usize,
    tree: &CallTree,
    ring: Option<&Ring>,
    timed: bool,
) {
    let Some(top) = thread.shadow.last_mut() else { return };
    let own = frame_of != 0 && frame_of == call.function;
    if own && top.last_call == call.call_site {
        return;
    }
    let caller = if own { code_of(&mut thread.code_of, call.call_site) } else { frame_of };
    let top = thread.shadow.last_mut().expect("checked above");
    if caller != 0 && caller == top.frame_of {
        if own {
            top.last_call = call.call_site;
        }
        return;
    }
    let running = (caller != 0).then(|| thread.shadow.iter().rposition(|e| e.frame_of == caller)).flatten();
    match running {
        Some(at) => {
            while thread.shadow.len() > at + 1 {
                leave_top(&mut thread.shadow, tree, ring, tick(timed));
            }
        }
        None if frame_of == 0 || caller == 0 => {
            while thread.shadow.last().is_some_and(|top| top.sp == call.sp && top.call_site != call.call_site) {
                leave_top(&mut thread.shadow, tree, ring, tick(timed));
            }
        }
        None => {}
    }
}

/// The method id of the native function at `function` (`[native] library!name`).
fn method_id(function: usize) -> u32 {
    let id = {
        let mut names = NAMES.lock().unwrap_or_else(|e| e.into_inner());
        names
            .get_or_insert_with(Default::default)
            .frame(methods(), function)
            .unwrap_or_else(|| methods().pseudo("[native]", "", ""))
    };
    if traced(&methods().name(id)) { id } else { EXCLUDED }
}

/// Whether the session's filter traces the native function named `name` (`[native] lib!symbol`):
/// its globs match the symbol as the linker wrote it, as reports show it (C++ demangled, without
/// parameters), or the library's file name. Everything is traced by default (native code has no
/// framework to leave out).
fn traced(name: &str) -> bool {
    let Some(session) = session::get() else { return true };
    let filter = &session.config.filter;
    if filter.include.is_empty() && filter.exclude.is_empty() {
        return true;
    }
    let (library, symbol) = name.strip_prefix("[native] ").and_then(|n| n.split_once('!')).unwrap_or(("", name));
    let shown = sonde_profile::display_name(name, "", &[], &[]);
    let demangled = shown.split_once('!').map_or(symbol, |(_, s)| s);
    let hit = |patterns: &[String]| {
        patterns.iter().any(|p| [symbol, demangled, library].iter().any(|text| sonde_protocol::filter::glob(p, text)))
    };
    !hit(&filter.exclude) && (filter.include.is_empty() || hit(&filter.include))
}

/// The first hook call: join a tracing session, start a native one, or switch the hooks off.
#[cold]
fn start() -> u8 {
    if STATE.compare_exchange(UNKNOWN, STARTING, AcqRel, Acquire).is_err() {
        return STATE.load(Acquire);
    }
    let decided = running::guarded(OFF, decide);
    STATE.store(decided, Release);
    decided
}

fn decide() -> u8 {
    if let Some(session) = session::get() {
        // A runtime's session: its trees, in tracing mode only (sampling sees native frames).
        return match (session.config.mode, session.config.timing) {
            (Mode::Tracing, Timing::Exact) => {
                start_call_trace(session.config.call_trace);
                ON_TIMED
            }
            (Mode::Tracing, Timing::Sampled) => ON_UNTIMED,
            (Mode::Sampling | Mode::Coverage, _) => OFF,
        };
    }
    if std::env::var_os(sonde_protocol::config::ENV_NATIVE).is_none_or(|v| v != "1") {
        return OFF;
    }
    let runtime = RuntimeId { kind: "native", loaded_by: "LD_PRELOAD (compiler-inserted hooks)" };
    let started = session::start(runtime, session::ConfigSource::Environment, String::new, |config| {
        if config.mode != Mode::Tracing {
            return Err(session::StartError::runtime(
                "a native program",
                "is profiled through its compiler-inserted hooks: record it with --mode tracing",
            ));
        }
        session::start_sampled_timing(config)?;
        if config.timing == Timing::Exact {
            start_call_trace(config.call_trace);
            crate::calibration::use_probe(&COST_PROBE);
            let cost = COST_PROBE.measure();
            log!("hook cost: {:.1} ticks inside a call, {:.1} around it", cost.inner_ticks, cost.outer_ticks);
        }
        Ok(session::tracing_facts(config, false, false))
    });
    OWN_SESSION.store(started.is_ok(), Relaxed);
    match started {
        Ok(session) if session.config.timing == Timing::Exact => ON_TIMED,
        Ok(_) => ON_UNTIMED,
        Err(_) => OFF,
    }
}

/// Keeps a call trace of `events` per thread, if asked (exact timing only: the controller refuses
/// `--call-trace` with sampled timing, whose hooks read no clock).
fn start_call_trace(events: u32) {
    if events > 0 {
        let size = crate::tree::trace::enable(events);
        log!("call trace: the latest {size} events per thread");
    }
}

/// The hooks' own cost, measured through the real entry points with two functions of this
/// library as the parent and child calls.
static COST_PROBE: crate::calibration::CostProbe =
    crate::calibration::CostProbe::new(probe_enter, probe_leave, probe_pair);

// Two bodies that differ, so that the linker cannot fold them into one address.
#[inline(never)]
extern "C" fn probe_parent() {
    std::hint::black_box(1);
}
#[inline(never)]
extern "C" fn probe_child() {
    std::hint::black_box(2);
}

fn probe_fn(id: usize) -> *mut c_void {
    let f: extern "C" fn() = if id == 1 { probe_parent } else { probe_child };
    f as *mut c_void
}

// The probes call what the hooks call (the hooks themselves return early while the session
// starts, which is when it first measures). Each probe function has a frame position of its own,
// the child's below the parent's, as real nested calls have.
#[inline(never)]
fn probe_enter(id: usize) {
    // Each probe function's hook is called from its own code; the child is called from the
    // parent's (the common case of real calls).
    let (function, parent) = (probe_fn(id) as usize, probe_fn(1) as usize);
    let call_site = if id == 1 { 0 } else { parent + 1 };
    let site = Site { id: id as u32, frame_of: function };
    let known = with_thread(|thread| {
        thread.sites.insert(function + 1, site);
        thread.code_of.insert(parent + 1, parent);
    });
    if known.is_none() {
        return;
    }
    let call = Call { function, sp: probe_sp(id), call_site, from: function + 1 };
    running::guarded((), || enter(call, true));
}

#[inline(never)]
fn probe_leave(id: usize) {
    running::guarded((), || exit(probe_fn(id) as usize, probe_sp(id), true));
}

#[inline(always)]
fn probe_sp(id: usize) -> usize {
    stack_pointer() - 64 * id
}

fn probe_pair(id: usize) {
    probe_enter(id);
    probe_leave(id);
}

/// Where the instrumented function's frame is: the hook's own frame pointer (the agent is built
/// with frame pointers), which is the caller's stack pointer at the call minus the return address
/// and the saved frame pointer — the same distance for both hooks, whatever their frame sizes.
#[inline(always)]
#[cfg(target_arch = "x86_64")]
fn stack_pointer() -> usize {
    let fp: usize;
    // SAFETY: reads one register, touches nothing.
    unsafe { std::arch::asm!("mov {}, rbp", out(reg) fp, options(nomem, nostack, preserves_flags)) };
    fp
}

#[inline(always)]
#[cfg(target_arch = "aarch64")]
fn stack_pointer() -> usize {
    let fp: usize;
    // SAFETY: reads one register, touches nothing.
    unsafe { std::arch::asm!("mov {}, x29", out(reg) fp, options(nomem, nostack, preserves_flags)) };
    fp
}
