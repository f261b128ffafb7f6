//! Raw FFI declarations of the parts of Mono's embedding API that Sonde uses: the profiler API
//! (`mono/metadata/profiler.h`, `profiler-events.h`, API version 3, Mono 6.x), the collector's
//! heap walk and root reports (`mono-gc.h`), the async-safe
//! stack walk, a few metadata and loader getters (`loader.h`, `class.h`, `image.h`,
//! `metadata.h`, `row-indexes.h`, `blob.h`, `appdomain.h`, `debug-helpers.h`, `jit.h`,
//! `utils/mono-publib.h`), and the JIT's line tables of debug mode (`mono-debug.h`).
//!
//! # Design constraints
//!
//! * Declarations only, no logic: opaque handle types, callback signatures, constants and one
//!   table of function pointers ([`MonoApi`]). The safe wrapper is `sonde-mono`, which also
//!   resolves the table in the running process.
//! * **Nothing here is linked.** The agent library is one `cdylib` that both runtimes load. Under
//!   Mono the `mono_*` functions are exported by the `mono` executable itself (the runtime is
//!   built in; linking `libmonosgen-2.0` would load a second runtime). Under CoreCLR they do not
//!   exist at all, and rustc links shared libraries with `-z now` (BIND_NOW), so a single undefined
//!   `mono_*` symbol would make CoreCLR's `dlopen` of the agent fail. So the functions are looked
//!   up with `dlsym` when Mono calls the profiler's entry point (`sonde_mono::Mono::from_process`), and
//!   the agent library has no undefined `mono_*` symbols.
//! * Signatures are transcribed from the headers of Mono 6.8 (Debian's `libmono-2.0-dev`); names
//!   keep the headers' spelling.
#![allow(non_camel_case_types)]

use std::ffi::{CStr, c_char, c_int, c_void};

pub type mono_bool = i32;

macro_rules! opaque {
    ($($name:ident),* $(,)?) => {
        $(
            #[repr(C)]
            pub struct $name {
                _private: [u8; 0],
            }
        )*
    };
}

opaque!(
    MonoProfiler,
    MonoProfilerDesc,
    MonoMethod,
    MonoClass,
    MonoImage,
    MonoObject,
    MonoTableInfo,
    MonoProfilerCallContext,
    MonoJitInfo,
    MonoDomain,
    MonoAssembly,
    MonoThreadInfo,
    MonoType,
    MonoVTable,
    MonoClassField
);

/// `MONO_TYPE_GENERICINST` (metadata/blob.h): a generic type instantiated (`Table<Row>`).
pub const MONO_TYPE_GENERICINST: c_int = 0x15;

/// `typedef struct _MonoProfilerDesc *MonoProfilerHandle;`
pub type MonoProfilerHandle = *mut MonoProfilerDesc;

/// `MonoThreadInfoFlags` (utils/mono-threads.h): which of the runtime's thread-wide operations
/// skip a thread.
pub type MonoThreadInfoFlags = c_int;
/// Mono's sampler does not signal the thread.
pub const MONO_THREAD_INFO_FLAGS_NO_SAMPLE: c_int = 2;

/// `MonoProfilerCallInstrumentationFlags` (profiler.h).
pub type MonoProfilerCallInstrumentationFlags = c_int;
pub const MONO_PROFILER_CALL_INSTRUMENTATION_NONE: c_int = 0;
pub const MONO_PROFILER_CALL_INSTRUMENTATION_ENTER: c_int = 1 << 1;
pub const MONO_PROFILER_CALL_INSTRUMENTATION_ENTER_CONTEXT: c_int = 1 << 2;
pub const MONO_PROFILER_CALL_INSTRUMENTATION_LEAVE: c_int = 1 << 3;
pub const MONO_PROFILER_CALL_INSTRUMENTATION_LEAVE_CONTEXT: c_int = 1 << 4;
pub const MONO_PROFILER_CALL_INSTRUMENTATION_TAIL_CALL: c_int = 1 << 5;
pub const MONO_PROFILER_CALL_INSTRUMENTATION_EXCEPTION_LEAVE: c_int = 1 << 6;

/// `MonoProfilerSampleMode` (profiler.h): what drives Mono's sampling thread.
pub type MonoProfilerSampleMode = c_int;
/// No sampling: the sampling thread sleeps.
pub const MONO_PROFILER_SAMPLE_MODE_NONE: c_int = 0;
/// Ticks on the process's CPU-time clock (falls back to REAL without one).
pub const MONO_PROFILER_SAMPLE_MODE_PROCESS: c_int = 1;
/// Ticks on the monotonic (wall) clock.
pub const MONO_PROFILER_SAMPLE_MODE_REAL: c_int = 2;

/// `MonoMetaTableEnum` (blob.h): the tables Sonde reads.
pub const MONO_TABLE_TYPEREF: c_int = 0x01;
pub const MONO_TABLE_TYPEDEF: c_int = 0x02;
pub const MONO_TABLE_METHOD: c_int = 0x06;
pub const MONO_TABLE_TYPESPEC: c_int = 0x1b;

/// Column indexes (row-indexes.h).
pub const MONO_TYPEDEF_FLAGS: usize = 0;
pub const MONO_TYPEDEF_NAME: usize = 1;
pub const MONO_TYPEDEF_NAMESPACE: usize = 2;
pub const MONO_TYPEDEF_SIZE: usize = 6;
pub const MONO_TYPEREF_SCOPE: usize = 0;
pub const MONO_TYPEREF_NAME: usize = 1;
pub const MONO_TYPEREF_NAMESPACE: usize = 2;
pub const MONO_TYPEREF_SIZE: usize = 3;
pub const MONO_METHOD_NAME: usize = 3;
pub const MONO_METHOD_SIGNATURE: usize = 4;
pub const MONO_METHOD_SIZE: usize = 6;
pub const MONO_TYPESPEC_SIGNATURE: usize = 0;
pub const MONO_TYPESPEC_SIZE: usize = 1;

/// ResolutionScope coded index (ECMA-335 II.24.2.6): 2 tag bits; tag 3 is a TypeRef (a nested type).
pub const MONO_RESOLUTION_SCOPE_BITS: u32 = 2;
pub const MONO_RESOLUTION_SCOPE_TYPEREF: u32 = 3;

// Callback types (profiler.h expands profiler-events.h into `MonoProfiler<Type>Callback`).
pub type MonoProfilerCallInstrumentationFilterCallback =
    unsafe extern "C" fn(prof: *mut MonoProfiler, method: *mut MonoMethod) -> MonoProfilerCallInstrumentationFlags;
pub type MonoProfilerMethodEnterCallback =
    unsafe extern "C" fn(prof: *mut MonoProfiler, method: *mut MonoMethod, context: *mut MonoProfilerCallContext);
pub type MonoProfilerMethodLeaveCallback =
    unsafe extern "C" fn(prof: *mut MonoProfiler, method: *mut MonoMethod, context: *mut MonoProfilerCallContext);
pub type MonoProfilerMethodTailCallCallback =
    unsafe extern "C" fn(prof: *mut MonoProfiler, method: *mut MonoMethod, target: *mut MonoMethod);
pub type MonoProfilerMethodExceptionLeaveCallback =
    unsafe extern "C" fn(prof: *mut MonoProfiler, method: *mut MonoMethod, exception: *mut MonoObject);
pub type MonoProfilerRuntimeInitializedCallback = unsafe extern "C" fn(prof: *mut MonoProfiler);
pub type MonoProfilerRuntimeShutdownBeginCallback = unsafe extern "C" fn(prof: *mut MonoProfiler);
pub type MonoProfilerRuntimeShutdownEndCallback = unsafe extern "C" fn(prof: *mut MonoProfiler);
pub type MonoProfilerThreadStartedCallback = unsafe extern "C" fn(prof: *mut MonoProfiler, tid: usize);
pub type MonoProfilerThreadStoppedCallback = unsafe extern "C" fn(prof: *mut MonoProfiler, tid: usize);
pub type MonoProfilerThreadNameCallback =
    unsafe extern "C" fn(prof: *mut MonoProfiler, tid: usize, name: *const c_char);
pub type MonoProfilerExceptionThrowCallback = unsafe extern "C" fn(prof: *mut MonoProfiler, exception: *mut MonoObject);
/// `MonoExceptionEnum` (metadata/metadata.h): the kind of clause a handler belongs to.
pub type MonoExceptionEnum = c_int;
/// A typed `catch` clause.
pub const MONO_EXCEPTION_CLAUSE_NONE: c_int = 0;
/// A `catch … when (filter)` clause whose filter accepted the exception.
pub const MONO_EXCEPTION_CLAUSE_FILTER: c_int = 1;
pub const MONO_EXCEPTION_CLAUSE_FINALLY: c_int = 2;
pub const MONO_EXCEPTION_CLAUSE_FAULT: c_int = 4;
pub type MonoProfilerExceptionClauseCallback = unsafe extern "C" fn(
    prof: *mut MonoProfiler,
    method: *mut MonoMethod,
    clause_num: u32,
    clause_type: MonoExceptionEnum,
    exception: *mut MonoObject,
);
/// `MonoProfilerGCEvent` (metadata/profiler.h), in the order SGen raises them for a collection.
pub type MonoProfilerGCEvent = c_int;
pub const MONO_GC_EVENT_PRE_STOP_WORLD: c_int = 6;
/// The GC and suspend locks are held from here to `MONO_GC_EVENT_POST_START_WORLD_UNLOCKED`.
pub const MONO_GC_EVENT_PRE_STOP_WORLD_LOCKED: c_int = 10;
pub const MONO_GC_EVENT_POST_STOP_WORLD: c_int = 7;
pub const MONO_GC_EVENT_START: c_int = 0;
pub const MONO_GC_EVENT_END: c_int = 5;
pub const MONO_GC_EVENT_PRE_START_WORLD: c_int = 8;
pub const MONO_GC_EVENT_POST_START_WORLD: c_int = 9;
pub const MONO_GC_EVENT_POST_START_WORLD_UNLOCKED: c_int = 11;
pub type MonoProfilerGCEventCallback =
    unsafe extern "C" fn(prof: *mut MonoProfiler, event: MonoProfilerGCEvent, generation: u32, is_serial: mono_bool);
/// `MonoGCRootSource` (metadata/mono-gc.h): what registered a root range
/// (`gc_root_register`). The ones Sonde tells apart:
pub type MonoGCRootSource = c_int;
/// A thread's stack (`key`: its thread id).
pub const MONO_ROOT_SOURCE_STACK: c_int = 1;
/// The finalizer queues (pseudo-roots at addresses 1 and 2).
pub const MONO_ROOT_SOURCE_FINALIZER_QUEUE: c_int = 2;
/// A class's static fields (`key`: its `MonoVTable*`; the range is its static data).
pub const MONO_ROOT_SOURCE_STATIC: c_int = 3;
/// `GCHandle` structures.
pub const MONO_ROOT_SOURCE_GC_HANDLE: c_int = 6;
/// A thread's handle stack (the runtime's own handles; a pseudo-root).
pub const MONO_ROOT_SOURCE_HANDLE: c_int = 14;
/// Toggle references (a pseudo-root).
pub const MONO_ROOT_SOURCE_TOGGLEREF: c_int = 16;
/// `gc_root_register`: a range of memory holding object references became a root.
pub type MonoProfilerGCRootRegisterCallback = unsafe extern "C" fn(
    prof: *mut MonoProfiler,
    start: *const u8,
    size: usize,
    source: MonoGCRootSource,
    key: *const c_void,
    name: *const c_char,
);
/// `gc_root_unregister`: the range starting at `start` is no longer a root.
pub type MonoProfilerGCRootUnregisterCallback = unsafe extern "C" fn(prof: *mut MonoProfiler, start: *const u8);
/// `gc_roots`: during a collection (the world stopped), `count` roots: the address each was found
/// at (a slot of a registered range, a thread's stack start, a pseudo-root's address) and the
/// object it holds.
pub type MonoProfilerGCRootsCallback = unsafe extern "C" fn(
    prof: *mut MonoProfiler,
    count: u64,
    addresses: *const *const u8,
    objects: *const *mut MonoObject,
);
/// `gc_finalized`: the finalizer thread ran the pending finalizers (on that thread, each time it
/// wakes up).
pub type MonoProfilerGCFinalizedCallback = unsafe extern "C" fn(prof: *mut MonoProfiler);
/// `MonoGCReferences` (mono-gc.h): one object of `mono_gc_walk_heap` with `num` of its references
/// (`refs`, at `offsets` in the object). An object with more than 128 references comes in several
/// calls, `size` 0 in all but the first. Returns 0 to go on.
pub type MonoGCReferences = unsafe extern "C" fn(
    obj: *mut MonoObject,
    klass: *mut MonoClass,
    size: usize,
    num: usize,
    refs: *mut *mut MonoObject,
    offsets: *mut usize,
    data: *mut c_void,
) -> c_int;
/// `FIELD_ATTRIBUTE_STATIC`, `FIELD_ATTRIBUTE_LITERAL` (tabledefs.h).
pub const FIELD_ATTRIBUTE_STATIC: u32 = 0x10;
pub const FIELD_ATTRIBUTE_LITERAL: u32 = 0x40;
/// `gc_allocation`, and the monitor events (`monitor_contention`, `monitor_acquired`,
/// `monitor_failed`): an object, on the thread that allocated it or contends for its lock.
pub type MonoProfilerObjectCallback = unsafe extern "C" fn(prof: *mut MonoProfiler, object: *mut MonoObject);
/// `MonoStackWalk` (metadata/loader.h): one frame of `mono_stack_walk_no_il`, innermost first;
/// returning true stops the walk.
pub type MonoStackWalk = unsafe extern "C" fn(
    method: *mut MonoMethod,
    native_offset: i32,
    il_offset: i32,
    managed: mono_bool,
    data: *mut c_void,
) -> mono_bool;
/// `jit_begin`: the JIT starts compiling `method`, on the compiling thread.
pub type MonoProfilerJitBeginCallback = unsafe extern "C" fn(prof: *mut MonoProfiler, method: *mut MonoMethod);
/// `jit_failed`: the JIT gave up compiling `method`, on the compiling thread.
pub type MonoProfilerJitFailedCallback = unsafe extern "C" fn(prof: *mut MonoProfiler, method: *mut MonoMethod);
/// `image_loaded`: an image (an assembly's module) was loaded.
pub type MonoProfilerImageLoadedCallback = unsafe extern "C" fn(prof: *mut MonoProfiler, image: *mut MonoImage);
pub type MonoProfilerJitDoneCallback =
    unsafe extern "C" fn(prof: *mut MonoProfiler, method: *mut MonoMethod, jinfo: *mut MonoJitInfo);
/// Per method Mono is about to compile: true to give it coverage counters.
pub type MonoProfilerCoverageFilterCallback =
    unsafe extern "C" fn(prof: *mut MonoProfiler, method: *mut MonoMethod) -> mono_bool;

/// One coverage counter of a method (`mono_profiler_get_coverage_data`'s callback argument).
#[repr(C)]
pub struct MonoProfilerCoverageData {
    pub method: *mut MonoMethod,
    pub il_offset: u32,
    pub counter: u32,
    pub file_name: *const c_char,
    pub line: u32,
    pub column: u32,
}

pub type MonoProfilerCoverageCallback =
    unsafe extern "C" fn(prof: *mut MonoProfiler, data: *const MonoProfilerCoverageData);
/// Runs in Mono's profiling signal handler, on the sampled thread; `context` is the signal's
/// `ucontext_t`.
pub type MonoProfilerSampleHitCallback =
    unsafe extern "C" fn(prof: *mut MonoProfiler, ip: *const u8, context: *const c_void);
/// `MonoStackWalkAsyncSafe` (loader.h): one managed frame; `method` is null for code whose method
/// cannot be looked up async-safely (AOT code). Returning true stops the walk.
pub type MonoStackWalkAsyncSafe = unsafe extern "C" fn(
    method: *mut MonoMethod,
    domain: *mut MonoDomain,
    base_address: *mut c_void,
    offset: c_int,
    data: *mut c_void,
) -> mono_bool;

/// The start of `MonoDebugMethodJitInfo` (metadata/mono-debug.h): what the JIT recorded of one
/// method's code in debug mode (`mono --debug`). Only this prefix is read (the fields after
/// `line_numbers` changed between Mono versions; these did not); Mono allocates the whole.
#[repr(C)]
pub struct MonoDebugMethodJitInfo {
    pub code_start: *const u8,
    pub code_size: u32,
    pub prologue_end: u32,
    pub epilogue_begin: u32,
    pub wrapper_addr: *const u8,
    pub num_line_numbers: u32,
    /// `num_line_numbers` entries, in the order the JIT emitted the code.
    pub line_numbers: *const MonoDebugLineNumberEntry,
}

/// `MonoDebugLineNumberEntry` (mono-debug.h): code from `native_offset` on was compiled from the
/// IL at `il_offset`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct MonoDebugLineNumberEntry {
    pub il_offset: u32,
    pub native_offset: u32,
}

/// Declares [`MonoApi`]: one function pointer per Mono function, named as Mono exports it.
macro_rules! mono_api {
    ($($name:ident: fn($($arg:ty),* $(,)?) $(-> $ret:ty)?;)*) => {
        /// The Mono functions Sonde calls, resolved in the running process.
        #[derive(Clone, Copy)]
        pub struct MonoApi {
            $(pub $name: unsafe extern "C" fn($($arg),*) $(-> $ret)?,)*
        }

        impl MonoApi {
            /// Every function name, in declaration order.
            pub const NAMES: &[&str] = &[$(stringify!($name)),*];

            /// Builds the table from `lookup`, which returns the address of the named function or
            /// null. Fails with the first name it cannot find.
            ///
            /// # Safety
            /// Every non-null address `lookup` returns must be the Mono function of that name,
            /// whose C signature is the one declared here.
            pub unsafe fn resolve(mut lookup: impl FnMut(&CStr) -> *mut c_void) -> Result<MonoApi, &'static str> {
                Ok(MonoApi {
                    $($name: {
                        let name = CStr::from_bytes_with_nul(concat!(stringify!($name), "\0").as_bytes())
                            .map_err(|_| stringify!($name))?;
                        let address = lookup(name);
                        if address.is_null() {
                            return Err(stringify!($name));
                        }
                        // SAFETY: per this function's contract, `address` is the function of
                        // this name with this signature; function and data pointers have the
                        // same size and representation on the targets Mono supports.
                        unsafe {
                            std::mem::transmute::<*mut c_void, unsafe extern "C" fn($($arg),*) $(-> $ret)?>(address)
                        }
                    },)*
                })
            }
        }
    };
}

mono_api! {
    // profiler.h
    mono_profiler_create: fn(*mut MonoProfiler) -> MonoProfilerHandle;
    mono_profiler_set_call_instrumentation_filter_callback:
        fn(MonoProfilerHandle, Option<MonoProfilerCallInstrumentationFilterCallback>);
    mono_profiler_set_method_enter_callback: fn(MonoProfilerHandle, Option<MonoProfilerMethodEnterCallback>);
    mono_profiler_set_method_leave_callback: fn(MonoProfilerHandle, Option<MonoProfilerMethodLeaveCallback>);
    mono_profiler_set_method_tail_call_callback: fn(MonoProfilerHandle, Option<MonoProfilerMethodTailCallCallback>);
    mono_profiler_set_method_exception_leave_callback:
        fn(MonoProfilerHandle, Option<MonoProfilerMethodExceptionLeaveCallback>);
    mono_profiler_set_runtime_initialized_callback:
        fn(MonoProfilerHandle, Option<MonoProfilerRuntimeInitializedCallback>);
    mono_profiler_set_runtime_shutdown_begin_callback:
        fn(MonoProfilerHandle, Option<MonoProfilerRuntimeShutdownBeginCallback>);
    mono_profiler_set_runtime_shutdown_end_callback:
        fn(MonoProfilerHandle, Option<MonoProfilerRuntimeShutdownEndCallback>);
    mono_profiler_set_thread_started_callback: fn(MonoProfilerHandle, Option<MonoProfilerThreadStartedCallback>);
    mono_profiler_set_thread_stopped_callback: fn(MonoProfilerHandle, Option<MonoProfilerThreadStoppedCallback>);
    mono_profiler_set_thread_name_callback: fn(MonoProfilerHandle, Option<MonoProfilerThreadNameCallback>);
    mono_profiler_set_exception_throw_callback: fn(MonoProfilerHandle, Option<MonoProfilerExceptionThrowCallback>);
    mono_profiler_set_exception_clause_callback: fn(MonoProfilerHandle, Option<MonoProfilerExceptionClauseCallback>);
    mono_profiler_enable_clauses: fn() -> mono_bool;
    mono_profiler_set_gc_event_callback: fn(MonoProfilerHandle, Option<MonoProfilerGCEventCallback>);
    mono_profiler_set_jit_done_callback: fn(MonoProfilerHandle, Option<MonoProfilerJitDoneCallback>);
    mono_profiler_set_jit_begin_callback: fn(MonoProfilerHandle, Option<MonoProfilerJitBeginCallback>);
    mono_profiler_set_jit_failed_callback: fn(MonoProfilerHandle, Option<MonoProfilerJitFailedCallback>);
    mono_profiler_set_image_loaded_callback: fn(MonoProfilerHandle, Option<MonoProfilerImageLoadedCallback>);
    mono_profiler_enable_allocations: fn() -> mono_bool;
    mono_profiler_set_gc_allocation_callback: fn(MonoProfilerHandle, Option<MonoProfilerObjectCallback>);
    mono_profiler_set_monitor_contention_callback: fn(MonoProfilerHandle, Option<MonoProfilerObjectCallback>);
    mono_profiler_set_monitor_acquired_callback: fn(MonoProfilerHandle, Option<MonoProfilerObjectCallback>);
    mono_profiler_set_monitor_failed_callback: fn(MonoProfilerHandle, Option<MonoProfilerObjectCallback>);
    mono_profiler_set_sample_hit_callback: fn(MonoProfilerHandle, Option<MonoProfilerSampleHitCallback>);
    mono_profiler_enable_sampling: fn(MonoProfilerHandle) -> mono_bool;
    mono_profiler_enable_coverage: fn() -> mono_bool;
    mono_profiler_set_coverage_filter_callback: fn(MonoProfilerHandle, Option<MonoProfilerCoverageFilterCallback>);
    // Returns mono_bool in newer Monos, nothing in older ones: declared without a result.
    mono_profiler_get_coverage_data: fn(MonoProfilerHandle, *mut MonoMethod, MonoProfilerCoverageCallback);
    mono_profiler_set_sample_mode: fn(MonoProfilerHandle, MonoProfilerSampleMode, u32) -> mono_bool;
    mono_profiler_set_gc_root_register_callback:
        fn(MonoProfilerHandle, Option<MonoProfilerGCRootRegisterCallback>);
    mono_profiler_set_gc_root_unregister_callback:
        fn(MonoProfilerHandle, Option<MonoProfilerGCRootUnregisterCallback>);
    mono_profiler_set_gc_roots_callback: fn(MonoProfilerHandle, Option<MonoProfilerGCRootsCallback>);
    mono_profiler_set_gc_finalized_callback: fn(MonoProfilerHandle, Option<MonoProfilerGCFinalizedCallback>);
    // mono-gc.h, gc-internals.h (MONO_API)
    mono_gc_collect: fn(c_int);
    mono_gc_max_generation: fn() -> c_int;
    mono_gc_walk_heap: fn(c_int, MonoGCReferences, *mut c_void) -> c_int;
    mono_gc_finalize_notify: fn();
    // object.h, class.h: a static field's class and name
    mono_vtable_class: fn(*mut MonoVTable) -> *mut MonoClass;
    mono_class_get_fields: fn(*mut MonoClass, *mut *mut c_void) -> *mut MonoClassField;
    mono_field_get_name: fn(*mut MonoClassField) -> *const c_char;
    mono_field_get_flags: fn(*mut MonoClassField) -> u32;
    mono_field_get_offset: fn(*mut MonoClassField) -> u32;
    mono_class_get_rank: fn(*mut MonoClass) -> c_int;
    mono_class_get_element_class: fn(*mut MonoClass) -> *mut MonoClass;
    // loader.h (async-signal-safe: callable from the sample-hit callback)
    mono_stack_walk_async_safe: fn(MonoStackWalkAsyncSafe, *mut c_void, *mut c_void);
    // loader.h (not in a signal handler: the allocation and lock events)
    mono_stack_walk_no_il: fn(MonoStackWalk, *mut c_void);
    // appdomain.h
    mono_jit_info_get_code_start: fn(*mut MonoJitInfo) -> *mut c_void;
    // loader.h, class.h
    mono_method_get_token: fn(*mut MonoMethod) -> u32;
    mono_method_get_class: fn(*mut MonoMethod) -> *mut MonoClass;
    mono_class_get_type_token: fn(*mut MonoClass) -> u32;
    mono_class_get_image: fn(*mut MonoClass) -> *mut MonoImage;
    // object.h, class.h: an exception's type
    mono_object_get_class: fn(*mut MonoObject) -> *mut MonoClass;
    mono_object_get_size: fn(*mut MonoObject) -> std::ffi::c_uint;
    mono_class_get_name: fn(*mut MonoClass) -> *const c_char;
    mono_class_get_namespace: fn(*mut MonoClass) -> *const c_char;
    mono_class_get_nesting_type: fn(*mut MonoClass) -> *mut MonoClass;
    mono_class_get_type: fn(*mut MonoClass) -> *mut MonoType;
    mono_type_get_type: fn(*mut MonoType) -> c_int;
    mono_type_get_name: fn(*mut MonoType) -> *mut c_char;
    // image.h, assembly.h
    mono_image_get_entry_point: fn(*mut MonoImage) -> u32;
    mono_image_is_dynamic: fn(*mut MonoImage) -> mono_bool;
    mono_assembly_get_main: fn() -> *mut MonoAssembly;
    mono_assembly_get_image: fn(*mut MonoAssembly) -> *mut MonoImage;
    // utils/mono-threads.h (MONO_API, outside the embedding headers)
    mono_thread_info_current_unchecked: fn() -> *mut MonoThreadInfo;
    mono_thread_info_get_flags: fn(*mut MonoThreadInfo) -> MonoThreadInfoFlags;
    mono_thread_info_set_flags: fn(MonoThreadInfoFlags);
    mono_image_get_name: fn(*mut MonoImage) -> *const c_char;
    mono_image_get_filename: fn(*mut MonoImage) -> *const c_char;
    mono_image_get_table_info: fn(*mut MonoImage, c_int) -> *const MonoTableInfo;
    mono_table_info_get_rows: fn(*const MonoTableInfo) -> c_int;
    // metadata.h
    mono_metadata_decode_row: fn(*const MonoTableInfo, c_int, *mut u32, c_int);
    mono_metadata_string_heap: fn(*mut MonoImage, u32) -> *const c_char;
    mono_metadata_blob_heap: fn(*mut MonoImage, u32) -> *const c_char;
    mono_metadata_decode_blob_size: fn(*const c_char, *mut *const c_char) -> u32;
    mono_metadata_nested_in_typedef: fn(*mut MonoImage, u32) -> u32;
    // debug-helpers.h
    mono_method_full_name: fn(*mut MonoMethod, mono_bool) -> *mut c_char;
    // mono-debug.h (debug mode: `mono --debug`, or `--debug` in MONO_ENV_OPTIONS), appdomain.h
    mono_debug_enabled: fn() -> mono_bool;
    mono_debug_find_method: fn(*mut MonoMethod, *mut MonoDomain) -> *mut MonoDebugMethodJitInfo;
    mono_debug_free_method_jit_info: fn(*mut MonoDebugMethodJitInfo);
    mono_domain_get: fn() -> *mut MonoDomain;
    // jit.h, utils/mono-publib.h
    mono_get_runtime_build_info: fn() -> *mut c_char;
    mono_free: fn(*mut c_void);
}

/// (Token kinds are ECMA-335's, in `sonde_metadata::token`.)
///
/// Shared objects that may hold the runtime when the host is not the `mono` executable (an
/// embedder that loaded libmono with `RTLD_LOCAL`, so its symbols are not global).
pub const RUNTIME_LIBRARIES: &[&CStr] = &[c"libmonosgen-2.0.so.1", c"libmonosgen-2.0.so", c"libmono-2.0.so.1"];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolve_reports_the_first_missing_name() {
        // SAFETY: the lookup never returns a non-null address.
        let result = unsafe { MonoApi::resolve(|_| std::ptr::null_mut()) };
        assert_eq!(result.err(), Some(MonoApi::NAMES[0]));
    }

    #[test]
    fn names_are_mono_functions() {
        assert!(MonoApi::NAMES.iter().all(|n| n.starts_with("mono_")));
        assert_eq!(MonoApi::NAMES.len(), 84);
    }
}
