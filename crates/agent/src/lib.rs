//! Sonde's in-process agent: the .NET runtime loads this library as its profiler.
//!
//! # Design constraints
//!
//! Everything here runs inside somebody else's program. The agent must never change what the
//! program does, never crash it and never block it on the controller:
//! * no output to the program's stdout/stderr (a log file only when `SONDE_LOG` asks for one);
//! * every runtime callback runs behind a panic guard (`sonde-clr`), and so do the hooks;
//! * the hot path (enter/leave) allocates nothing once a call path is known, takes no lock and
//!   makes no system call — see [`calltree`] and [`hooks`];
//! * configuration is read once, from the environment, at start-up;
//! * no analysis and no formatting: the agent sends counters and ids, the controller does the rest.
//!
//! `unsafe` is confined to the hook trampolines and the clock (`hooks`, `clock`), `gettid`, and the
//! exported `DllGetClassObject`; the COM plumbing lives in `sonde-clr`.

pub mod calltree;
pub mod clock;
pub mod hooks;
mod link;
mod log;
mod mono;
mod profiler;
mod sampler;
pub mod sampling;
mod signals;
mod snapshot;
pub mod threads;

use sonde_clr::sys::GUID;
use std::ffi::c_void;

/// `{9E2B6C4A-5D0F-4E8B-A1C3-7F5D2E9B0A61}`: the value of `CORECLR_PROFILER` that selects Sonde.
pub const CLSID_SONDE: GUID = GUID::new(0x9E2B6C4A, 0x5D0F, 0x4E8B, [0xA1, 0xC3, 0x7F, 0x5D, 0x2E, 0x9B, 0x0A, 0x61]);

static PROFILER: profiler::Profiler = profiler::Profiler;

/// Called by the runtime (on `CORECLR_ENABLE_PROFILING=1`) to obtain the profiler's class factory.
///
/// # Safety
/// Called by the runtime with valid GUID pointers and a writable out-pointer.
#[unsafe(no_mangle)]
pub unsafe extern "system" fn DllGetClassObject(rclsid: *const GUID, riid: *const GUID, ppv: *mut *mut c_void) -> i32 {
    // SAFETY: the runtime's arguments, passed through unchanged.
    unsafe { sonde_clr::class_factory(&CLSID_SONDE, &PROFILER, rclsid, riid, ppv) }
}
