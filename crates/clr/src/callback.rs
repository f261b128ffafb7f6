//! The profiler object the runtime talks to: a class factory and an `ICorProfilerCallback11`
//! implementation whose slots forward to a safe [`ProfilerCallback`].
//!
//! There is one profiler per process, so both COM objects are statics (their reference counts are
//! fixed at 1 and `Release` never frees anything), and the handler is a `&'static` set once.
//! Every slot runs its handler inside [`guard`]: a panic is caught, the handler is told to stop
//! (`disable`) and the runtime gets an error HRESULT — a panic never unwinds into the runtime.

use crate::callback_slots::VTABLE;
use crate::hresult::HResult;
use crate::info::ProfilerInfo;
use core::ffi::c_void;
use sonde_clr_sys::*;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

/// What Sonde does when the runtime calls. Only the callbacks selected by the event mask arrive.
pub trait ProfilerCallback: Send + Sync + 'static {
    /// The runtime loaded the profiler. Returning an error makes the runtime unload it and run the
    /// program unprofiled.
    fn initialize(&self, info: ProfilerInfo) -> Result<(), HResult>;
    /// The runtime loaded the profiler into a running process (`AttachProfiler` over its
    /// diagnostics IPC), with the bytes the attaching tool sent. The default refuses.
    fn initialize_for_attach(&self, _info: ProfilerInfo, _client_data: &[u8]) -> Result<(), HResult> {
        Err(HResult(E_NOTIMPL))
    }
    /// After an attach: the runtime now sends the events asked for (threads that existed before
    /// are not reported: enumerate them here).
    fn attach_complete(&self) {}
    /// The detach asked for (`ProfilerInfo::request_detach`) is done: no callback runs any more
    /// and none will; the runtime releases the profiler next.
    fn detach_succeeded(&self) {}
    fn shutdown(&self) {}
    fn thread_created(&self, _thread: ThreadID) {}
    fn thread_destroyed(&self, _thread: ThreadID) {}
    fn thread_assigned_to_os_thread(&self, _thread: ThreadID, _os_tid: u32) {}
    fn thread_name_changed(&self, _thread: ThreadID, _name: String) {}
    /// An object was allocated (`COR_PRF_ENABLE_OBJECT_ALLOCATED`, start-up only), on the
    /// allocating thread; `object` is valid during the callback only
    /// (`ProfilerInfo::object_size`, `ProfilerInfo::type_name`).
    fn object_allocated(&self, _object: ObjectID, _class: ClassID) {}
    /// An exception was thrown (first chance); `exception` is valid during the callback only
    /// (`ProfilerInfo::class_of_object`).
    fn exception_thrown(&self, _exception: ObjectID) {}
    fn exception_unwind_function_enter(&self, _function: FunctionID) {}
    fn exception_unwind_function_leave(&self) {}
    /// A catch block is about to run in `function` for `exception` (valid during the callback).
    fn exception_catcher_enter(&self, _function: FunctionID, _exception: ObjectID) {}
    /// A catch block finished; the program continues after it.
    fn exception_catcher_leave(&self) {}
    /// The runtime starts suspending the program's threads (`COR_PRF_MONITOR_SUSPENDS`).
    fn runtime_suspend_started(&self, _reason: COR_PRF_SUSPEND_REASON) {}
    /// The threads run again: the suspension ended (or was aborted before it completed).
    fn runtime_resumed(&self) {}
    /// A collection starts: `generations[g]` says whether generation `g` is collected (0–2, then
    /// the large-object and pinned-object heaps). `COR_PRF_HIGH_BASIC_GC` or
    /// `COR_PRF_MONITOR_GC`.
    fn gc_started(&self, _generations: &[bool], _reason: COR_PRF_GC_REASON) {}
    fn gc_finished(&self) {}
    /// The JIT starts compiling `function` (`COR_PRF_MONITOR_JIT_COMPILATION`), on the compiling
    /// thread.
    fn jit_compilation_started(&self, _function: FunctionID) {}
    /// The JIT considers inlining `callee` into `caller` (`COR_PRF_MONITOR_JIT_COMPILATION`);
    /// `false` keeps `callee` a call of its own.
    fn jit_inlining(&self, _caller: FunctionID, _callee: FunctionID) -> bool {
        true
    }
    /// The JIT finished `function` (compiled, or failed with `status`).
    fn jit_compilation_finished(&self, _function: FunctionID, _status: HRESULT) {}
    /// The JIT starts compiling a method without metadata: a dynamic method
    /// (`System.Reflection.Emit.DynamicMethod`) or a stub the runtime generated in IL
    /// (`COR_PRF_MONITOR_JIT_COMPILATION`), on the compiling thread.
    fn dynamic_method_jit_started(&self, _function: FunctionID) {}
    /// The JIT finished a method without metadata.
    fn dynamic_method_jit_finished(&self, _function: FunctionID) {}
    /// A module finished loading (`COR_PRF_MONITOR_MODULE_LOADS`), or failed to with `status`.
    fn module_load_finished(&self, _module: ModuleID, _status: HRESULT) {}
    /// The runtime looked for precompiled (ReadyToRun) code for `function`
    /// (`COR_PRF_MONITOR_CACHE_SEARCHES`), and `found` it: its code is handed out from now on.
    fn jit_cached_function_search_finished(&self, _function: FunctionID, _found: bool) {}
    /// An event of the profiler's EventPipe session (`ProfilerInfo::event_pipe_start_session`),
    /// on the thread that wrote it (the allocating thread for an allocation tick, the waiting one
    /// for contention). The runtime's own events come without a stack.
    fn event_pipe_event(&self, _event: &EventPipeEvent<'_>) {}
    /// A callback panicked: stop doing anything that could panic again.
    fn disable(&self) {}
}

/// One event delivered to the profiler's EventPipe session.
#[derive(Debug, Clone, Copy)]
pub struct EventPipeEvent<'a> {
    /// The provider's handle (the session's providers only).
    pub provider: EVENTPIPE_PROVIDER,
    pub id: u32,
    pub version: u32,
    /// The payload, in the layout the event's manifest declares (packed, little-endian).
    pub data: &'a [u8],
}

static HANDLER: OnceLock<&'static dyn ProfilerCallback> = OnceLock::new();
static DISABLED: AtomicBool = AtomicBool::new(false);

/// Runs `f` with the handler unless profiling was switched off; never lets a panic escape.
fn guard(f: impl FnOnce(&'static dyn ProfilerCallback) -> HRESULT) -> HRESULT {
    let Some(&handler) = HANDLER.get() else { return E_FAIL };
    if DISABLED.load(Relaxed) {
        return S_OK;
    }
    match catch_unwind(AssertUnwindSafe(|| f(handler))) {
        Ok(hr) => hr,
        Err(_) => {
            DISABLED.store(true, Relaxed);
            let _ = catch_unwind(AssertUnwindSafe(|| handler.disable()));
            E_FAIL
        }
    }
}

/// A COM object: a pointer to its vtable, nothing else (the state lives in the handler).
#[repr(C)]
struct ComObject<V: 'static> {
    vtbl: &'static V,
}

static CALLBACK: ComObject<ICorProfilerCallback11Vtbl> = ComObject { vtbl: &VTABLE };

static FACTORY_VTABLE: IClassFactoryVtbl = IClassFactoryVtbl {
    QueryInterface: factory_query_interface,
    AddRef: factory_add_ref,
    Release: factory_release,
    CreateInstance: factory_create_instance,
    LockServer: factory_lock_server,
};
static FACTORY: ComObject<IClassFactoryVtbl> = ComObject { vtbl: &FACTORY_VTABLE };

fn guid_eq(a: &GUID, b: &GUID) -> bool {
    (a.data1, a.data2, a.data3, a.data4) == (b.data1, b.data2, b.data3, b.data4)
}

/// The body of the profiler library's exported `DllGetClassObject`: hands out the class factory
/// when `rclsid` is `clsid`, and remembers `handler` for every later callback.
///
/// # Safety
/// The pointers are the runtime's arguments to `DllGetClassObject`: `rclsid` and `riid` point to
/// GUIDs, `ppv` to writable storage for one pointer (each may be null, which is refused).
pub unsafe fn class_factory(
    clsid: &GUID,
    handler: &'static dyn ProfilerCallback,
    rclsid: *const GUID,
    riid: *const GUID,
    ppv: *mut *mut c_void,
) -> HRESULT {
    if ppv.is_null() || rclsid.is_null() || riid.is_null() {
        return E_POINTER;
    }
    // SAFETY: checked non-null above; the runtime passes valid GUIDs.
    let (rclsid, riid) = unsafe { (&*rclsid, &*riid) };
    if !guid_eq(rclsid, clsid) {
        return CLASS_E_CLASSNOTAVAILABLE;
    }
    if !guid_eq(riid, &IID_IClassFactory) && !guid_eq(riid, &IID_IUnknown) {
        return E_NOINTERFACE;
    }
    let _ = HANDLER.set(handler);
    // A new load of the library (an attach after a detach: the same mapped library serves it)
    // gets a handler that runs again, even if a panic switched the last one off.
    DISABLED.store(false, Relaxed);
    // SAFETY: `ppv` is non-null and writable (caller contract).
    unsafe { *ppv = &FACTORY as *const _ as *mut c_void };
    S_OK
}

unsafe extern "system" fn factory_query_interface(
    _this: *mut IClassFactory,
    riid: REFIID,
    ppv: *mut *mut c_void,
) -> HRESULT {
    if ppv.is_null() || riid.is_null() {
        return E_POINTER;
    }
    // SAFETY: checked non-null; the runtime passes a valid GUID and writable storage.
    unsafe {
        if guid_eq(&*riid, &IID_IClassFactory) || guid_eq(&*riid, &IID_IUnknown) {
            *ppv = &FACTORY as *const _ as *mut c_void;
            return S_OK;
        }
        *ppv = std::ptr::null_mut();
    }
    E_NOINTERFACE
}

unsafe extern "system" fn factory_add_ref(_this: *mut IClassFactory) -> ULONG {
    1
}

unsafe extern "system" fn factory_release(_this: *mut IClassFactory) -> ULONG {
    1
}

unsafe extern "system" fn factory_create_instance(
    _this: *mut IClassFactory,
    outer: *mut IUnknown,
    riid: REFIID,
    ppv: *mut *mut c_void,
) -> HRESULT {
    if !outer.is_null() {
        return CLASS_E_NOAGGREGATION;
    }
    // SAFETY: same arguments, same contract as QueryInterface.
    unsafe { query_interface(std::ptr::null_mut(), riid, ppv) }
}

unsafe extern "system" fn factory_lock_server(_this: *mut IClassFactory, _lock: BOOL) -> HRESULT {
    S_OK
}

const CALLBACK_IIDS: [&GUID; 12] = [
    &IID_IUnknown,
    &IID_ICorProfilerCallback,
    &IID_ICorProfilerCallback2,
    &IID_ICorProfilerCallback3,
    &IID_ICorProfilerCallback4,
    &IID_ICorProfilerCallback5,
    &IID_ICorProfilerCallback6,
    &IID_ICorProfilerCallback7,
    &IID_ICorProfilerCallback8,
    &IID_ICorProfilerCallback9,
    &IID_ICorProfilerCallback10,
    &IID_ICorProfilerCallback11,
];

pub(crate) unsafe extern "system" fn query_interface(
    _this: *mut ICorProfilerCallback11,
    riid: REFIID,
    ppv: *mut *mut c_void,
) -> HRESULT {
    if ppv.is_null() || riid.is_null() {
        return E_POINTER;
    }
    // SAFETY: checked non-null; the runtime passes a valid GUID and writable storage.
    unsafe {
        if CALLBACK_IIDS.iter().any(|iid| guid_eq(&*riid, iid)) {
            *ppv = &CALLBACK as *const _ as *mut c_void;
            return S_OK;
        }
        *ppv = std::ptr::null_mut();
    }
    E_NOINTERFACE
}

pub(crate) unsafe extern "system" fn add_ref(_this: *mut ICorProfilerCallback11) -> ULONG {
    1
}

pub(crate) unsafe extern "system" fn release(_this: *mut ICorProfilerCallback11) -> ULONG {
    1
}

pub(crate) unsafe extern "system" fn initialize(_this: *mut ICorProfilerCallback11, unknown: *mut IUnknown) -> HRESULT {
    guard(|h| {
        // SAFETY: `unknown` is the runtime's argument to Initialize.
        match unsafe { ProfilerInfo::from_unknown(unknown) }.and_then(|info| h.initialize(info)) {
            Ok(()) => S_OK,
            Err(HResult(hr)) => hr,
        }
    })
}

pub(crate) unsafe extern "system" fn initialize_for_attach(
    _this: *mut ICorProfilerCallback11,
    unknown: *mut IUnknown,
    data: *mut c_void,
    len: UINT,
) -> HRESULT {
    guard(|h| {
        let client_data = if data.is_null() {
            &[][..]
        } else {
            // SAFETY: the runtime passes the attaching tool's `len` bytes at `data`, valid during
            // this call (copied out by the handler if it keeps them).
            unsafe { std::slice::from_raw_parts(data.cast::<u8>(), len as usize) }
        };
        // SAFETY: `unknown` is the runtime's argument to InitializeForAttach.
        match unsafe { ProfilerInfo::from_unknown(unknown) }.and_then(|info| h.initialize_for_attach(info, client_data))
        {
            Ok(()) => S_OK,
            Err(HResult(hr)) => hr,
        }
    })
}

#[allow(non_snake_case)]
pub(crate) unsafe extern "system" fn ProfilerAttachComplete(_this: *mut ICorProfilerCallback11) -> HRESULT {
    guard(|h| {
        h.attach_complete();
        S_OK
    })
}

#[allow(non_snake_case)]
pub(crate) unsafe extern "system" fn ProfilerDetachSucceeded(_this: *mut ICorProfilerCallback11) -> HRESULT {
    guard(|h| {
        h.detach_succeeded();
        S_OK
    })
}

pub(crate) unsafe extern "system" fn shutdown(_this: *mut ICorProfilerCallback11) -> HRESULT {
    guard(|h| {
        h.shutdown();
        S_OK
    })
}

pub(crate) unsafe extern "system" fn thread_created(_this: *mut ICorProfilerCallback11, thread: ThreadID) -> HRESULT {
    guard(|h| {
        h.thread_created(thread);
        S_OK
    })
}

pub(crate) unsafe extern "system" fn thread_destroyed(_this: *mut ICorProfilerCallback11, thread: ThreadID) -> HRESULT {
    guard(|h| {
        h.thread_destroyed(thread);
        S_OK
    })
}

pub(crate) unsafe extern "system" fn thread_assigned_to_os_thread(
    _this: *mut ICorProfilerCallback11,
    thread: ThreadID,
    os_tid: DWORD,
) -> HRESULT {
    guard(|h| {
        h.thread_assigned_to_os_thread(thread, os_tid);
        S_OK
    })
}

pub(crate) unsafe extern "system" fn thread_name_changed(
    _this: *mut ICorProfilerCallback11,
    thread: ThreadID,
    len: ULONG,
    name: *const WCHAR,
) -> HRESULT {
    guard(|h| {
        let name = if name.is_null() {
            String::new()
        } else {
            // SAFETY: the runtime passes `len` WCHARs at `name` (not NUL-terminated).
            String::from_utf16_lossy(unsafe { std::slice::from_raw_parts(name, len as usize) })
        };
        h.thread_name_changed(thread, name);
        S_OK
    })
}

pub(crate) unsafe extern "system" fn object_allocated(
    _this: *mut ICorProfilerCallback11,
    object: ObjectID,
    class: ClassID,
) -> HRESULT {
    guard(|h| {
        h.object_allocated(object, class);
        S_OK
    })
}

pub(crate) unsafe extern "system" fn exception_thrown(_this: *mut ICorProfilerCallback11, object: ObjectID) -> HRESULT {
    guard(|h| {
        h.exception_thrown(object);
        S_OK
    })
}

pub(crate) unsafe extern "system" fn exception_catcher_enter(
    _this: *mut ICorProfilerCallback11,
    function: FunctionID,
    object: ObjectID,
) -> HRESULT {
    guard(|h| {
        h.exception_catcher_enter(function, object);
        S_OK
    })
}

pub(crate) unsafe extern "system" fn runtime_suspend_started(
    _this: *mut ICorProfilerCallback11,
    reason: COR_PRF_SUSPEND_REASON,
) -> HRESULT {
    guard(|h| {
        h.runtime_suspend_started(reason);
        S_OK
    })
}

pub(crate) unsafe extern "system" fn runtime_suspend_aborted(_this: *mut ICorProfilerCallback11) -> HRESULT {
    guard(|h| {
        h.runtime_resumed();
        S_OK
    })
}

pub(crate) unsafe extern "system" fn runtime_resume_finished(_this: *mut ICorProfilerCallback11) -> HRESULT {
    guard(|h| {
        h.runtime_resumed();
        S_OK
    })
}

pub(crate) unsafe extern "system" fn garbage_collection_started(
    _this: *mut ICorProfilerCallback11,
    count: i32,
    collected: *const BOOL,
    reason: COR_PRF_GC_REASON,
) -> HRESULT {
    guard(|h| {
        let mut generations = [false; 8];
        let n = usize::try_from(count).unwrap_or(0).min(generations.len());
        if !collected.is_null() {
            // SAFETY: the runtime passes `count` BOOLs at `collected`; at most 8 are read.
            let flags = unsafe { std::slice::from_raw_parts(collected, n) };
            for (g, &flag) in generations.iter_mut().zip(flags) {
                *g = flag != 0;
            }
        }
        h.gc_started(&generations[..n], reason);
        S_OK
    })
}

pub(crate) unsafe extern "system" fn garbage_collection_finished(_this: *mut ICorProfilerCallback11) -> HRESULT {
    guard(|h| {
        h.gc_finished();
        S_OK
    })
}

pub(crate) unsafe extern "system" fn exception_unwind_function_enter(
    _this: *mut ICorProfilerCallback11,
    function: FunctionID,
) -> HRESULT {
    guard(|h| {
        h.exception_unwind_function_enter(function);
        S_OK
    })
}

pub(crate) unsafe extern "system" fn exception_unwind_function_leave(_this: *mut ICorProfilerCallback11) -> HRESULT {
    guard(|h| {
        h.exception_unwind_function_leave();
        S_OK
    })
}

pub(crate) unsafe extern "system" fn exception_catcher_leave(_this: *mut ICorProfilerCallback11) -> HRESULT {
    guard(|h| {
        h.exception_catcher_leave();
        S_OK
    })
}

// Callbacks with out-parameters must write them even though Sonde does not care: the runtime
// reads them regardless.

pub(crate) unsafe extern "system" fn jit_cached_function_search_started(
    _this: *mut ICorProfilerCallback11,
    _function: FunctionID,
    use_cached: *mut BOOL,
) -> HRESULT {
    if !use_cached.is_null() {
        // SAFETY: non-null out-parameter from the runtime.
        unsafe { *use_cached = TRUE };
    }
    S_OK
}

pub(crate) unsafe extern "system" fn jit_cached_function_search_finished(
    _this: *mut ICorProfilerCallback11,
    function: FunctionID,
    result: COR_PRF_JIT_CACHE,
) -> HRESULT {
    guard(|h| {
        h.jit_cached_function_search_finished(function, result == COR_PRF_CACHED_FUNCTION_FOUND);
        S_OK
    })
}

pub(crate) unsafe extern "system" fn jit_inlining(
    _this: *mut ICorProfilerCallback11,
    caller: FunctionID,
    callee: FunctionID,
    should_inline: *mut BOOL,
) -> HRESULT {
    if should_inline.is_null() {
        return S_OK;
    }
    let mut inline = true;
    let hr = guard(|h| {
        inline = h.jit_inlining(caller, callee);
        S_OK
    });
    // SAFETY: non-null out-parameter from the runtime.
    unsafe { *should_inline = if inline { TRUE } else { FALSE } };
    hr
}

pub(crate) unsafe extern "system" fn load_as_notification_only(
    _this: *mut ICorProfilerCallback11,
    notification_only: *mut BOOL,
) -> HRESULT {
    if !notification_only.is_null() {
        // SAFETY: non-null out-parameter from the runtime. Sonde needs enter/leave hooks, which a
        // notification-only profiler cannot have.
        unsafe { *notification_only = FALSE };
    }
    S_OK
}

#[allow(clippy::too_many_arguments)]
pub(crate) unsafe extern "system" fn event_pipe_event_delivered(
    _this: *mut ICorProfilerCallback11,
    provider: EVENTPIPE_PROVIDER,
    event_id: DWORD,
    event_version: DWORD,
    _metadata_len: ULONG,
    _metadata: LPCBYTE,
    data_len: ULONG,
    data: LPCBYTE,
    _activity: LPCGUID,
    _related_activity: LPCGUID,
    _thread: ThreadID,
    _frames_len: ULONG,
    _frames: *const UINT_PTR,
) -> HRESULT {
    guard(|h| {
        let data: &[u8] = if data.is_null() || data_len == 0 {
            &[]
        } else {
            // SAFETY: the runtime passes `data_len` bytes of payload at `data`, valid during the
            // callback; the slice does not outlive it.
            unsafe { std::slice::from_raw_parts(data, data_len as usize) }
        };
        h.event_pipe_event(&EventPipeEvent { provider, id: event_id, version: event_version, data });
        S_OK
    })
}

pub(crate) unsafe extern "system" fn jit_compilation_started(
    _this: *mut ICorProfilerCallback11,
    function: FunctionID,
    _safe_to_block: BOOL,
) -> HRESULT {
    guard(|h| {
        h.jit_compilation_started(function);
        S_OK
    })
}

pub(crate) unsafe extern "system" fn jit_compilation_finished(
    _this: *mut ICorProfilerCallback11,
    function: FunctionID,
    status: HRESULT,
    _safe_to_block: BOOL,
) -> HRESULT {
    guard(|h| {
        h.jit_compilation_finished(function, status);
        S_OK
    })
}

pub(crate) unsafe extern "system" fn dynamic_method_jit_compilation_started(
    _this: *mut ICorProfilerCallback11,
    function: FunctionID,
    _safe_to_block: BOOL,
    _il_header: LPCBYTE,
    _il_header_size: ULONG,
) -> HRESULT {
    guard(|h| {
        h.dynamic_method_jit_started(function);
        S_OK
    })
}

pub(crate) unsafe extern "system" fn dynamic_method_jit_compilation_finished(
    _this: *mut ICorProfilerCallback11,
    function: FunctionID,
    _status: HRESULT,
    _safe_to_block: BOOL,
) -> HRESULT {
    guard(|h| {
        h.dynamic_method_jit_finished(function);
        S_OK
    })
}

pub(crate) unsafe extern "system" fn module_load_finished(
    _this: *mut ICorProfilerCallback11,
    module: ModuleID,
    status: HRESULT,
) -> HRESULT {
    guard(|h| {
        h.module_load_finished(module, status);
        S_OK
    })
}
