//! Sonde's in-process agent: the .NET runtime loads this library as its profiler.
//!
//! # Design constraints
//!
//! Everything here runs inside somebody else's program. The agent must never change what the
//! program does, never crash it and never block it on the controller:
//! * no output to the program's stdout/stderr (a log file only when `SONDE_LOG` asks for one);
//! * every runtime callback runs behind a panic guard (`sonde-clr`, `sonde-mono`, [`session`]),
//!   and so do the hooks' slow paths;
//! * the hot path (enter/leave) allocates nothing once a call path is known, takes no lock and
//!   makes no system call — see [`tree::calltree`] and [`coreclr::hooks`];
//! * configuration is read once, from the environment, at start-up;
//! * no analysis and no formatting: the agent sends counters and ids, the controller does the rest.
//!
//! # Map
//!
//! * this file: the two entry points, one per runtime, and nothing else;
//! * [`session`]: what both backends share, from the configuration to the final snapshot;
//! * `coreclr/` and `mono/`: the two backends, sibling rooms over `session`; `native/`: the
//!   compiler-inserted hooks of instrumented native code (`-finstrument-functions`);
//! * [`tree`]: call trees, threads, the method table, the clock;
//! * [`sampling`]: sampling mode (slots and rings, Sonde's signal sampler, the external sampler,
//!   the drain, native symbols); [`sampled_timing`]: tracing's `--timing sampled`;
//! * [`calibration`]: the hooks' own cost; `ipc/`: the link to the controller and snapshots;
//! * `signals`: the last-chance snapshot handlers, and the signals agent threads block;
//!   `process`: this process's command line and whether it owns the session (not a fork).
//!
//! `unsafe` lives where the agent meets the machine: this file's entry points, the CoreCLR hook
//! trampolines (`coreclr/hooks/x86_64.rs`) and `SetEnterLeaveFunctionHooks3`, the TLS slots
//! (`tree::threads`, `sampling::slots`), the clock, `gettid`/`pthread_self`, the signal handlers
//! and `process_vm_readv`/`dladdr` (`sampling`, `signals`, `coreclr::frames`, the agent's own
//! path: `process::own_library`), `atexit`, and the `dlopen` that keeps an attached agent
//! mapped (`process::stay_loaded`). The COM plumbing
//! lives in `sonde-clr`, Mono's in `sonde-mono`; the Mono backend has no `unsafe` of its own.

pub mod base;
pub mod calibration;
pub mod coreclr;
mod events;
mod faults;
mod ipc;
mod mono;
mod native;
pub mod sampled_timing;
pub mod sampling;
pub mod session;
mod signals;
pub mod tree;

use sonde_clr::sys::GUID;
use std::ffi::{CStr, c_char, c_void};

/// `{9E2B6C4A-5D0F-4E8B-A1C3-7F5D2E9B0A61}`: the value of `CORECLR_PROFILER` that selects Sonde.
pub const CLSID_SONDE: GUID = GUID::new(0x9E2B6C4A, 0x5D0F, 0x4E8B, [0xA1, 0xC3, 0x7F, 0x5D, 0x2E, 0x9B, 0x0A, 0x61]);

static CORECLR: coreclr::Clr = coreclr::Clr;

/// CoreCLR's entry point (on `CORECLR_ENABLE_PROFILING=1`): the profiler's class factory.
///
/// # Safety
/// Called by the runtime with valid GUID pointers and a writable out-pointer.
#[unsafe(no_mangle)]
pub unsafe extern "system" fn DllGetClassObject(rclsid: *const GUID, riid: *const GUID, ppv: *mut *mut c_void) -> i32 {
    // SAFETY: the runtime's arguments, passed through unchanged.
    unsafe { sonde_clr::class_factory(&CLSID_SONDE, &CORECLR, rclsid, riid, ppv) }
}

/// Mono's entry point for `--profile=sonde[:ARGS]`; `desc` is the whole option value.
///
/// # Safety
/// Called once by Mono, before the runtime is initialised, with a NUL-terminated string (or null).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mono_profiler_init_sonde(desc: *const c_char) {
    let desc = if desc.is_null() {
        String::new()
    } else {
        // SAFETY: Mono passes the NUL-terminated option value, valid during this call.
        unsafe { CStr::from_ptr(desc) }.to_string_lossy().into_owned()
    };
    base::running::guarded((), || mono::init(&desc));
}
