//! Safe wrapper over the parts of Mono's embedding and profiler API that Sonde uses.
//!
//! # Design constraints
//!
//! This crate and `sonde-mono-sys` are where the `unsafe` of Sonde's Mono backend lives, as
//! `sonde-clr` and `sonde-clr-sys` are for CoreCLR. Above this line nothing touches a raw Mono
//! pointer:
//! * the runtime's functions are found once in the running process ([`Mono::from_process`]; they
//!   are never linked, see `sonde-mono-sys`) and kept in a process-wide table;
//! * Mono's callbacks arrive as methods of safe traits ([`Events`], [`CallHooks`],
//!   [`SampleHit`]), through `extern "C"` trampolines generated per implementing type — static
//!   dispatch, so a hot callback costs what a hand-written one does;
//! * a method arrives either as a [`MethodKey`] (its identity only: what the hot callbacks get) or
//!   as a [`Method`] borrowed for the callback's duration, which can be named
//!   ([`Method::describe`]) because the callback runs on a thread attached to the runtime;
//! * the sampled thread's stack is walked with [`Sample::walk`], async-signal-safely;
//! * in Mono's debug mode, a compiled method's line table is copied at JIT time
//!   ([`Method::line_table`]), for sampled offsets to be mapped back to IL later;
//! * a heap snapshot is a collection forced on the finalizer thread and walked before the world
//!   restarts ([`HeapShots`], `heap.rs`), its classes and statics named after it ([`Naming`]).
//!
//! Cold callbacks ([`Events`]) run behind a guard: a panic never unwinds into Mono; the first one
//! switches them off and calls [`Events::disable`]. Hot callbacks ([`CallHooks`],
//! [`SampleHit`]) have no guard of their own — an implementation guards its own slow path, so
//! that its fast path stays a few instructions. Every `unsafe` block says why it holds.

mod debug;
mod heap;
mod metadata;
mod profiler;

pub use heap::{ClassKey, HeapShot, HeapShots, Naming, RootSource, TypeName, VTableKey};
pub use metadata::Definition;
pub use profiler::{
    CallHooks, Events, Exception, GcEvent, Object, Profiler, SampleHit, invoke, main_returned, walk_stack,
};
pub use sonde_metadata::MethodNames;

use sonde_mono_sys::{MonoApi, MonoMethod, RUNTIME_LIBRARIES};
use std::ffi::{CStr, c_char, c_int, c_void};
use std::marker::PhantomData;
use std::ptr::NonNull;
use std::sync::OnceLock;

/// Why Mono cannot be profiled.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum Error {
    #[error("the Mono runtime's function {0} is not in this process")]
    MissingFunction(&'static str),
    #[error("Mono refused to enable sampling")]
    SamplingRefused,
    #[error("another profiler controls Mono's sampling parameters")]
    SamplingTaken,
}

/// The Mono runtime of this process.
pub struct Mono {
    api: MonoApi,
}

static MONO: OnceLock<Mono> = OnceLock::new();

/// The resolved API, for the trampolines (which only run once a profiler was created from it).
fn api() -> Option<&'static MonoApi> {
    MONO.get().map(|m| &m.api)
}

impl Mono {
    /// Finds the runtime's functions in the running process: first among the global symbols (the
    /// `mono` executable exports the whole API), then in an already loaded runtime library. Never
    /// loads anything new. Resolved once; later calls return the same runtime.
    pub fn from_process() -> Result<&'static Mono, Error> {
        if let Some(mono) = MONO.get() {
            return Ok(mono);
        }
        let api = resolve_in_process()?;
        Ok(MONO.get_or_init(|| Mono { api }))
    }

    /// `6.8.0.105`, from `mono_get_runtime_build_info` (`6.8.0.105 (Debian 6.8.0.105+dfsg-3.3 …)`).
    pub fn runtime_version(&self) -> String {
        // SAFETY: returns a fresh string (or null) that the caller frees with mono_free; safe to
        // call before the runtime is initialised (it only formats build constants).
        let info = unsafe { (self.api.mono_get_runtime_build_info)() };
        // SAFETY: null or a NUL-terminated string owned by us until freed below.
        let text = unsafe { c_string(info) };
        if !info.is_null() {
            // SAFETY: allocated by Mono for the caller, freed once.
            unsafe { (self.api.mono_free)(info.cast::<c_void>()) };
        }
        text.split_whitespace().next().unwrap_or("unknown").to_string()
    }

    /// Whether Mono runs in its debug mode (`mono --debug`, or `--debug` in `MONO_ENV_OPTIONS`),
    /// in which its JIT keeps line tables ([`Method::line_table`]).
    pub fn debug_enabled(&self) -> bool {
        // SAFETY: a getter of a static, callable from any thread at any time.
        unsafe { (self.api.mono_debug_enabled)() != 0 }
    }

    /// A new profiler handle to register callbacks on (`mono_profiler_create`). Mono requires
    /// this, and everything registered on it, to happen in the profiler module's init function.
    pub fn create_profiler(&'static self) -> Profiler {
        // SAFETY: Mono's profiler API with a null `MonoProfiler*`, which it documents as allowed;
        // the handle lives as long as the runtime.
        let handle = unsafe { (self.api.mono_profiler_create)(std::ptr::null_mut()) };
        Profiler::new(&self.api, handle)
    }
}

fn resolve_in_process() -> Result<MonoApi, Error> {
    let global = |name: &CStr| {
        // SAFETY: dlsym with RTLD_DEFAULT and a NUL-terminated name only reads.
        unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) }
    };
    // SAFETY: symbols named `mono_*` in a process running Mono are Mono's API functions.
    let first = match unsafe { MonoApi::resolve(global) } {
        Ok(api) => return Ok(api),
        Err(missing) => missing,
    };
    for library in RUNTIME_LIBRARIES {
        // SAFETY: RTLD_NOLOAD only returns a handle to a library that is already loaded.
        let handle = unsafe { libc::dlopen(library.as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD) };
        if handle.is_null() {
            continue;
        }
        // SAFETY: dlsym on a valid handle with a NUL-terminated name; see above for the
        // signatures. The handle is kept open (the runtime stays loaded anyway).
        if let Ok(api) = unsafe { MonoApi::resolve(|name| libc::dlsym(handle, name.as_ptr())) } {
            return Ok(api);
        }
    }
    Err(Error::MissingFunction(first))
}

/// A method's identity (its `MonoMethod*` as a number): what the hot callbacks receive. It can be
/// compared and used as a key, nothing else, so any value is harmless (the calibration and tests
/// use stand-ins).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MethodKey(pub usize);

/// A method Mono passed to a callback that is still running, on a thread attached to the
/// runtime: it can be named.
#[derive(Clone, Copy)]
pub struct Method<'cb> {
    ptr: NonNull<MonoMethod>,
    _callback: PhantomData<&'cb MonoMethod>,
}

impl Method<'_> {
    /// # Safety
    /// `ptr` is a method the runtime passed to a callback that outlives the returned value, on a
    /// thread attached to the runtime.
    unsafe fn new(ptr: *mut MonoMethod) -> Option<Self> {
        NonNull::new(ptr).map(|ptr| Method { ptr, _callback: PhantomData })
    }

    pub fn key(&self) -> MethodKey {
        MethodKey(self.ptr.as_ptr() as usize)
    }
}

/// One managed frame of a sampled stack, leaf first.
#[derive(Debug, Clone, Copy)]
pub struct Frame {
    /// None for code whose method cannot be looked up async-safely (AOT code).
    pub method: Option<MethodKey>,
    /// The start of the frame's code.
    pub code_start: usize,
    /// The frame's instruction, as an offset from `code_start`.
    pub offset: isize,
}

/// A sample Mono's sampler raised: valid during its [`SampleHit::sample_hit`] call, on the
/// sampled thread, inside Mono's signal handler.
pub struct Sample<'h> {
    ip: usize,
    context: NonNull<c_void>,
    _handler: PhantomData<&'h c_void>,
}

impl Sample<'_> {
    /// The interrupted instruction.
    pub fn ip(&self) -> usize {
        self.ip
    }

    /// Walks the managed frames, leaf first, with Mono's async-signal-safe walk; `frame` returns
    /// true to stop. No allocation, no lock.
    pub fn walk<F: FnMut(Frame) -> bool>(&self, mut frame: F) {
        let Some(api) = api() else { return };
        // SAFETY: Mono's async-safe walk, called from its own signal handler (this sample is only
        // handed out there) with the signal's context, as documented; `frame` outlives the walk
        // and is only used by `walk_frame::<F>`.
        unsafe { (api.mono_stack_walk_async_safe)(walk_frame::<F>, self.context.as_ptr(), (&raw mut frame).cast()) };
    }
}

unsafe extern "C" fn walk_frame<F: FnMut(Frame) -> bool>(
    method: *mut MonoMethod,
    _domain: *mut sonde_mono_sys::MonoDomain,
    base_address: *mut c_void,
    offset: c_int,
    data: *mut c_void,
) -> sonde_mono_sys::mono_bool {
    // SAFETY: `data` is the closure `Sample::walk` passed to this walk, alive until it returns.
    let frame = unsafe { &mut *data.cast::<F>() };
    let method = (!method.is_null()).then_some(MethodKey(method as usize));
    sonde_mono_sys::mono_bool::from(frame(Frame { method, code_start: base_address as usize, offset: offset as isize }))
}

/// A C string owned by the runtime, copied (lossily for invalid UTF-8); empty for null.
///
/// # Safety
/// `s` is null or a NUL-terminated string that stays valid during the call.
unsafe fn c_string(s: *const c_char) -> String {
    if s.is_null() {
        return String::new();
    }
    // SAFETY: the caller's contract.
    unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_mono_outside_mono() {
        // A test binary is not Mono: nothing resolves, and nothing is loaded to make it so.
        assert!(matches!(Mono::from_process(), Err(Error::MissingFunction(name)) if name.starts_with("mono_")));
    }
}
