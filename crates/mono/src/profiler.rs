//! Callback registration: one `extern "C"` trampoline per callback and implementing type, turning
//! Mono's raw arguments into safe ones.

use crate::{Error, Method, MethodKey, Sample, api};
use sonde_mono_sys::*;
use std::ffi::{CStr, c_char, c_void};
use std::marker::PhantomData;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::ptr::{NonNull, null_mut};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

/// The runtime's cold events, on the thread that raises them (attached to the runtime). Every
/// method defaults to doing nothing; each runs behind a guard (see the crate's docs).
pub trait Events: 'static {
    fn runtime_initialized() {}
    /// The runtime starts shutting down (`Main` returned, or `Environment.Exit`).
    fn runtime_shutdown_begin() {}
    fn runtime_shutdown_end() {}
    /// On the new thread itself; `thread` is Mono's id for it, its `pthread_t`.
    fn thread_started(_thread: usize) {}
    fn thread_stopped(_thread: usize) {}
    /// A thread was named (possibly before it started).
    fn thread_name(_thread: usize, _name: &CStr) {}
    /// An exception was thrown (first chance, rethrows included).
    fn exception_throw(_exception: Object<'_>) {}
    /// A catch handler of the program or a library (typed, or a `when` filter's that accepted) is
    /// about to run for `exception`; a runtime wrapper's is not passed on.
    fn exception_caught(_exception: Object<'_>) {}
    /// A step of a garbage collection (`MONO_GC_EVENT_*`, in SGen's order): `generation` is the
    /// one collected (0: the nursery, 1: the major heap).
    fn gc_event(_event: GcEvent, _generation: u32) {}
    /// An object was allocated, on the allocating thread (only after [`Profiler::set_allocations`]).
    fn allocation(_object: Object<'_>) {}
    /// The thread is about to wait for the lock of `object`, held by another thread (after
    /// [`Profiler::set_monitor_events`]).
    fn monitor_contention(_object: Object<'_>) {}
    /// The thread got the lock of `object` it was waiting for.
    fn monitor_acquired(_object: Object<'_>) {}
    /// The thread gave up waiting for the lock of `object` (timeout, interruption).
    fn monitor_failed(_object: Object<'_>) {}
    /// Per method Mono is about to compile: true to get the [`CallHooks`] on its calls (enter,
    /// leave, tail call, exceptional leave; no call contexts, which cost a copy of the frame).
    fn instrument(_method: Method<'_>) -> bool {
        false
    }
    /// Per method Mono is about to compile (after [`Profiler::enable_coverage`]): true to give it
    /// block counters.
    fn cover(_method: Method<'_>) -> bool {
        false
    }
    /// A method was compiled (or loaded precompiled); `code_start` is 0 when Mono gave no code.
    /// Mono may report one compilation more than once, and some without a `jit_begin`.
    fn jit_done(_method: Method<'_>, _code_start: usize) {}
    /// The JIT starts compiling `method`, on the compiling thread (after
    /// [`Profiler::set_loading_events`] or [`Profiler::enable_sampling`]).
    fn jit_begin(_method: Method<'_>) {}
    /// The JIT gave up compiling `method` (its [`jit_begin`](Self::jit_begin) gets no
    /// [`jit_done`](Self::jit_done)); registered with `jit_begin`.
    fn jit_failed(_method: MethodKey) {}
    /// An image was loaded: its name (the assembly's simple name) and its file (empty when it
    /// has none).
    fn image_loaded(_name: String, _path: String) {}
    /// A callback panicked: the cold callbacks are switched off from now on.
    fn disable() {}
    /// False while the callbacks must do nothing (checked before each cold callback): e.g. in a
    /// child the program forked, whose copies of the agent's locks may be held by threads that
    /// did not survive the fork.
    fn active() -> bool {
        true
    }
}

/// Enter and leave of the methods [`Events::instrument`] selected: the hot path, unguarded.
pub trait CallHooks: 'static {
    fn enter(method: MethodKey);
    fn leave(method: MethodKey);
    /// A tail call ends the caller's frame (the target then enters as the caller's sibling).
    fn tail_call(method: MethodKey) {
        Self::leave(method)
    }
    /// An exception unwinds the frame (Mono reports each unwound frame).
    fn exception_leave(method: MethodKey) {
        Self::leave(method)
    }
}

/// A sample from Mono's sampler, in its signal handler on the sampled thread: async-signal-safe
/// code only, unguarded.
pub trait SampleHit: 'static {
    fn sample_hit(sample: &Sample<'_>);
}

/// A profiler handle: where callbacks are registered, in the init function.
pub struct Profiler {
    api: &'static MonoApi,
    handle: MonoProfilerHandle,
}

// SAFETY: a profiler handle is Mono's, valid for the process's life and usable from any thread
// (its functions take their own locks); the API table is static and read-only.
unsafe impl Send for Profiler {}
// SAFETY: as above; `Profiler` has no interior mutability.
unsafe impl Sync for Profiler {}

impl Profiler {
    pub(crate) fn new(api: &'static MonoApi, handle: MonoProfilerHandle) -> Profiler {
        Profiler { api, handle }
    }

    /// Registers `E`'s runtime, thread, exception and collection events; with `catches`,
    /// [`Events::exception_caught`] too — which makes Mono raise a clause event for every
    /// `finally` block the program runs, thrown or not (~11 ns each). Must run in the init
    /// function.
    pub fn set_events<E: Events>(&self, catches: bool) {
        // SAFETY: (all) Mono's registration functions on our live handle, with trampolines whose
        // signatures are the header's callback types.
        unsafe {
            (self.api.mono_profiler_set_runtime_initialized_callback)(self.handle, Some(runtime_initialized::<E>));
            (self.api.mono_profiler_set_runtime_shutdown_begin_callback)(self.handle, Some(shutdown_begin::<E>));
            (self.api.mono_profiler_set_runtime_shutdown_end_callback)(self.handle, Some(shutdown_end::<E>));
            (self.api.mono_profiler_set_thread_started_callback)(self.handle, Some(thread_started::<E>));
            (self.api.mono_profiler_set_thread_stopped_callback)(self.handle, Some(thread_stopped::<E>));
            (self.api.mono_profiler_set_thread_name_callback)(self.handle, Some(thread_name::<E>));
            (self.api.mono_profiler_set_exception_throw_callback)(self.handle, Some(exception_throw::<E>));
            // Mono raises clause events only once asked to, in the init function (which is where
            // `set_events` runs): the JIT then emits a call before each handler.
            if catches && (self.api.mono_profiler_enable_clauses)() != 0 {
                (self.api.mono_profiler_set_exception_clause_callback)(self.handle, Some(exception_clause::<E>));
            }
            (self.api.mono_profiler_set_gc_event_callback)(self.handle, Some(gc_event::<E>));
        }
    }

    /// [`Events::allocation`] for every object the program allocates. Mono then allocates through
    /// its profiler variant of the managed allocators, which call the profiler after the fast
    /// path: a call per allocation. Must run in the init function; false when Mono refused (too
    /// late).
    pub fn set_allocations<E: Events>(&self) -> bool {
        // SAFETY: as in `set_events`; `enable_allocations` from the init function, as it requires.
        unsafe {
            if (self.api.mono_profiler_enable_allocations)() == 0 {
                return false;
            }
            (self.api.mono_profiler_set_gc_allocation_callback)(self.handle, Some(allocation::<E>));
        }
        true
    }

    /// The JIT's compilations ([`Events::jit_begin`], [`Events::jit_done`]) and the images loaded
    /// ([`Events::image_loaded`]). Set in the init function, so that corlib's load is seen.
    pub fn set_loading_events<E: Events>(&self) {
        // SAFETY: as in `set_events`.
        unsafe {
            (self.api.mono_profiler_set_jit_begin_callback)(self.handle, Some(jit_begin::<E>));
            (self.api.mono_profiler_set_jit_failed_callback)(self.handle, Some(jit_failed::<E>));
            (self.api.mono_profiler_set_jit_done_callback)(self.handle, Some(jit_done::<E>));
            (self.api.mono_profiler_set_image_loaded_callback)(self.handle, Some(image_loaded::<E>));
        }
    }

    /// The monitor events: [`Events::monitor_contention`], `monitor_acquired`, `monitor_failed`.
    pub fn set_monitor_events<E: Events>(&self) {
        // SAFETY: as in `set_events`.
        unsafe {
            (self.api.mono_profiler_set_monitor_contention_callback)(self.handle, Some(monitor_contention::<E>));
            (self.api.mono_profiler_set_monitor_acquired_callback)(self.handle, Some(monitor_acquired::<E>));
            (self.api.mono_profiler_set_monitor_failed_callback)(self.handle, Some(monitor_failed::<E>));
        }
    }

    /// Call instrumentation: `E::instrument` chooses the methods, `H` gets their calls.
    pub fn set_call_instrumentation<E: Events, H: CallHooks>(&self) {
        // SAFETY: as in `set_events`.
        unsafe {
            (self.api.mono_profiler_set_call_instrumentation_filter_callback)(self.handle, Some(filter::<E>));
            (self.api.mono_profiler_set_method_enter_callback)(self.handle, Some(enter::<H>));
            (self.api.mono_profiler_set_method_leave_callback)(self.handle, Some(leave::<H>));
            (self.api.mono_profiler_set_method_tail_call_callback)(self.handle, Some(tail_call::<H>));
            (self.api.mono_profiler_set_method_exception_leave_callback)(self.handle, Some(exception_leave::<H>));
        }
    }

    /// Code coverage: Mono's JIT gives the methods `E::cover` chooses a counter per basic block,
    /// read by [`coverage_data`](Self::coverage_data). Must run in the init function; false when
    /// Mono refused (too late).
    pub fn enable_coverage<E: Events>(&self) -> bool {
        // SAFETY: as in `set_events`; `enable_coverage` from the init function, as it requires.
        unsafe {
            if (self.api.mono_profiler_enable_coverage)() == 0 {
                return false;
            }
            (self.api.mono_profiler_set_coverage_filter_callback)(self.handle, Some(coverage_filter::<E>));
        }
        true
    }

    /// The counters of `method` (a method [`Events::cover`] chose): `(IL offset, count)`, in
    /// Mono's order. Not async-safe; on a thread attached to the runtime.
    pub fn coverage_data(&self, method: MethodKey) -> Vec<(u32, u64)> {
        COVERAGE.with(|c| c.borrow_mut().clear());
        // SAFETY: `method` is a MonoMethod* Mono passed to the coverage filter (methods are never
        // freed while the runtime runs); the callback only copies two fields.
        unsafe { (self.api.mono_profiler_get_coverage_data)(self.handle, method.0 as *mut MonoMethod, coverage_entry) };
        COVERAGE.with(|c| std::mem::take(&mut *c.borrow_mut()))
    }

    /// Mono's sampler at `freq` Hz on the monotonic clock (`MONO_PROFILER_SAMPLE_MODE_REAL`):
    /// `S` gets the samples, `E::jit_done` the compiled methods (to name what samples show),
    /// `E::jit_begin` and `E::jit_failed` the compilations' starts and failures (to name the
    /// samples taken inside them).
    /// Must run in the init function, and excludes [`set_call_instrumentation`] on the same
    /// profiler: it instruments the program's entry point (see "Sampling" below, in the source).
    ///
    /// [`set_call_instrumentation`]: Self::set_call_instrumentation
    pub fn enable_sampling<E: Events, S: SampleHit>(&self, freq: u32) -> Result<(), Error> {
        // SAFETY: as in `set_events`; `enable_sampling` from the init function, as it requires.
        unsafe {
            (self.api.mono_profiler_set_jit_begin_callback)(self.handle, Some(jit_begin::<E>));
            (self.api.mono_profiler_set_jit_failed_callback)(self.handle, Some(jit_failed::<E>));
            (self.api.mono_profiler_set_jit_done_callback)(self.handle, Some(jit_done::<E>));
            (self.api.mono_profiler_set_sample_hit_callback)(self.handle, Some(sample_hit::<S>));
            (self.api.mono_profiler_set_call_instrumentation_filter_callback)(self.handle, Some(entry_point_filter));
            (self.api.mono_profiler_set_method_leave_callback)(self.handle, Some(entry_point_leave));
            (self.api.mono_profiler_set_method_exception_leave_callback)(
                self.handle,
                Some(entry_point_exception_leave),
            );
            if (self.api.mono_profiler_enable_sampling)(self.handle) == 0 {
                return Err(Error::SamplingRefused);
            }
            if (self.api.mono_profiler_set_sample_mode)(self.handle, MONO_PROFILER_SAMPLE_MODE_REAL, freq) == 0 {
                return Err(Error::SamplingTaken);
            }
        }
        Ok(())
    }
}

// --- Cold trampolines: guarded. ----------------------------------------------------------------

/// Cleared by the first panic in a cold callback.
static DISABLED: AtomicBool = AtomicBool::new(false);

fn guard<E: Events, R>(default: R, f: impl FnOnce() -> R) -> R {
    if DISABLED.load(Relaxed) || !E::active() {
        return default;
    }
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(_) => {
            DISABLED.store(true, Relaxed);
            let _ = catch_unwind(E::disable);
            default
        }
    }
}

unsafe extern "C" fn runtime_initialized<E: Events>(_prof: *mut MonoProfiler) {
    guard::<E, _>((), E::runtime_initialized);
}

unsafe extern "C" fn shutdown_begin<E: Events>(_prof: *mut MonoProfiler) {
    guard::<E, _>((), E::runtime_shutdown_begin);
}

unsafe extern "C" fn shutdown_end<E: Events>(_prof: *mut MonoProfiler) {
    guard::<E, _>((), E::runtime_shutdown_end);
}

unsafe extern "C" fn thread_started<E: Events>(_prof: *mut MonoProfiler, tid: usize) {
    guard::<E, _>((), || E::thread_started(tid));
}

unsafe extern "C" fn thread_stopped<E: Events>(_prof: *mut MonoProfiler, tid: usize) {
    guard::<E, _>((), || E::thread_stopped(tid));
}

unsafe extern "C" fn thread_name<E: Events>(_prof: *mut MonoProfiler, tid: usize, name: *const c_char) {
    if name.is_null() {
        return;
    }
    // SAFETY: Mono passes a NUL-terminated name, valid during the callback.
    let name = unsafe { CStr::from_ptr(name) };
    guard::<E, _>((), || E::thread_name(tid, name));
}

unsafe extern "C" fn exception_throw<E: Events>(_prof: *mut MonoProfiler, exception: *mut MonoObject) {
    // SAFETY: the exception Mono passed to this callback, on the throwing (attached) thread.
    let exception = unsafe { Object::new(exception) };
    guard::<E, _>((), || E::exception_throw(exception));
}

unsafe extern "C" fn jit_begin<E: Events>(_prof: *mut MonoProfiler, method: *mut MonoMethod) {
    // SAFETY: as for the filter: the compiling thread, during the callback.
    let Some(method) = (unsafe { Method::new(method) }) else { return };
    guard::<E, _>((), || E::jit_begin(method));
}

unsafe extern "C" fn jit_failed<E: Events>(_prof: *mut MonoProfiler, method: *mut MonoMethod) {
    guard::<E, _>((), || E::jit_failed(MethodKey(method as usize)));
}

unsafe extern "C" fn image_loaded<E: Events>(_prof: *mut MonoProfiler, image: *mut MonoImage) {
    let Some(api) = api() else { return };
    if image.is_null() {
        return;
    }
    // SAFETY: the image Mono passed to this callback, alive during it; the getters return strings
    // the image owns (or null), copied here.
    let (name, path) = unsafe {
        (crate::c_string((api.mono_image_get_name)(image)), crate::c_string((api.mono_image_get_filename)(image)))
    };
    guard::<E, _>((), || E::image_loaded(name, path));
}

unsafe extern "C" fn allocation<E: Events>(_prof: *mut MonoProfiler, object: *mut MonoObject) {
    // SAFETY: the object Mono passed to this callback, on the allocating (attached) thread.
    let object = unsafe { Object::new(object) };
    guard::<E, _>((), || E::allocation(object));
}

unsafe extern "C" fn monitor_contention<E: Events>(_prof: *mut MonoProfiler, object: *mut MonoObject) {
    // SAFETY: as for `allocation`, on the contending thread.
    let object = unsafe { Object::new(object) };
    guard::<E, _>((), || E::monitor_contention(object));
}

unsafe extern "C" fn monitor_acquired<E: Events>(_prof: *mut MonoProfiler, object: *mut MonoObject) {
    // SAFETY: as for `allocation`.
    let object = unsafe { Object::new(object) };
    guard::<E, _>((), || E::monitor_acquired(object));
}

unsafe extern "C" fn monitor_failed<E: Events>(_prof: *mut MonoProfiler, object: *mut MonoObject) {
    // SAFETY: as for `allocation`.
    let object = unsafe { Object::new(object) };
    guard::<E, _>((), || E::monitor_failed(object));
}

/// Walks the calling thread's managed stack, innermost frame first: `frame(method, managed)`
/// for each (`method` a `MonoMethod*` as a key, 0 when Mono gave none) until it returns true.
/// For a thread attached to the runtime, outside a signal handler (Mono's full unwinder; it can
/// raise profiler events of its own, so no lock of the caller's may be held).
pub fn walk_stack(mut frame: impl FnMut(usize, bool) -> bool) {
    let Some(api) = api() else { return };
    unsafe extern "C" fn each(
        method: *mut MonoMethod,
        _native_offset: i32,
        _il_offset: i32,
        managed: mono_bool,
        data: *mut c_void,
    ) -> mono_bool {
        // SAFETY: `data` is the `&mut dyn FnMut` below, alive for the whole walk.
        let frame = unsafe { &mut *(data as *mut &mut dyn FnMut(usize, bool) -> bool) };
        mono_bool::from(catch_unwind(AssertUnwindSafe(|| frame(method as usize, managed != 0))).unwrap_or(true))
    }
    let mut frame: &mut dyn FnMut(usize, bool) -> bool = &mut frame;
    // SAFETY: a documented walk of the current thread; `each` matches `MonoStackWalk`, and the
    // pointer it gets back is `frame`, which outlives the call.
    unsafe { (api.mono_stack_walk_no_il)(each, &mut frame as *mut _ as *mut c_void) };
}

thread_local! {
    /// The last filter clause Mono reported on this thread: `(method, clause, exception)`.
    static LAST_FILTER: std::cell::Cell<(usize, u32, usize)> = const { std::cell::Cell::new((0, 0, 0)) };
}

/// Mono reports a `catch … when` clause twice when its filter accepts — once as the filter runs
/// (first pass), once as the handler runs (second pass) — and once when it rejects. Only the
/// second report of the same clause for the same exception is a catch.
unsafe extern "C" fn exception_clause<E: Events>(
    _prof: *mut MonoProfiler,
    method: *mut MonoMethod,
    clause: u32,
    kind: MonoExceptionEnum,
    exception: *mut MonoObject,
) {
    match kind {
        MONO_EXCEPTION_CLAUSE_NONE => {}
        MONO_EXCEPTION_CLAUSE_FILTER => {
            let this = (method as usize, clause, exception as usize);
            let handler = LAST_FILTER.with(|last| {
                if last.get() == this {
                    last.set((0, 0, 0));
                    true
                } else {
                    last.set(this);
                    false
                }
            });
            if !handler {
                return;
            }
        }
        _ => return, // finally and fault handlers run on the way out, they catch nothing
    }
    // SAFETY: as for `exception_throw`.
    let exception = unsafe { Object::new(exception) };
    // SAFETY: the method whose clause runs, passed to this callback on the (attached) thread
    // that runs it.
    let method = unsafe { Method::new(method) };
    guard::<E, _>((), || {
        // The clause of a runtime wrapper is the runtime's, not the program's: an exception that
        // leaves `Main` or a thread's start method is caught by the `runtime-invoke` wrapper that
        // called it, to report it unhandled.
        if !method.is_some_and(|m| m.is_runtime_wrapper()) {
            E::exception_caught(exception);
        }
    });
}

unsafe extern "C" fn gc_event<E: Events>(
    _prof: *mut MonoProfiler,
    event: MonoProfilerGCEvent,
    generation: u32,
    _serial: mono_bool,
) {
    let event = match event {
        MONO_GC_EVENT_PRE_STOP_WORLD => GcEvent::PreStopWorld,
        MONO_GC_EVENT_START => GcEvent::Start,
        MONO_GC_EVENT_END => GcEvent::End,
        MONO_GC_EVENT_POST_START_WORLD => GcEvent::PostStartWorld,
        _ => return,
    };
    guard::<E, _>((), || E::gc_event(event, generation));
}

/// The steps of a collection that [`Events::gc_event`] receives, in SGen's order (the others are
/// not passed on). Between `PreStopWorld` and `PostStartWorld` the program's threads stop. The
/// collecting thread holds the GC lock through all of them (even past Mono's
/// `POST_START_WORLD_UNLOCKED`, which releases the suspend lock only, in a `GC.Collect`): a call
/// that takes it — `mono_gc_get_used_size`, `mono_gc_get_heap_size` — deadlocks there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GcEvent {
    PreStopWorld,
    Start,
    End,
    PostStartWorld,
}

/// An object (an exception, a new allocation, a contended lock) Mono passed to a callback that
/// is still running, on its (attached) thread.
#[derive(Clone, Copy)]
pub struct Object<'cb> {
    object: *mut MonoObject,
    _callback: PhantomData<&'cb MonoObject>,
}

/// The exception events' name for it.
pub type Exception<'cb> = Object<'cb>;

impl Object<'_> {
    /// # Safety
    /// `object` is null or an object Mono passed to a callback that outlives the value, on a
    /// thread attached to the runtime.
    unsafe fn new(object: *mut MonoObject) -> Self {
        Object { object, _callback: PhantomData }
    }

    fn class(&self) -> *mut MonoClass {
        match api() {
            // SAFETY: a live object (see `new`); the getter only reads its vtable.
            Some(api) if !self.object.is_null() => unsafe { (api.mono_object_get_class)(self.object) },
            _ => null_mut(),
        }
    }

    /// The object's class, as a key (0: unknown).
    pub fn class_key(&self) -> usize {
        self.class() as usize
    }

    /// The object's address, as a key (a lock's identity while it is held).
    pub fn address(&self) -> usize {
        self.object as usize
    }

    /// The object's size in bytes (an array's or a string's with its elements).
    pub fn size(&self) -> u64 {
        match api() {
            // SAFETY: a live object (see `new`); the getter reads its vtable and length.
            Some(api) if !self.object.is_null() => u64::from(unsafe { (api.mono_object_get_size)(self.object) }),
            _ => 0,
        }
    }

    /// `Namespace.Outer+Inner`, from the class and its enclosing classes.
    pub fn type_name(&self) -> Option<String> {
        let api = api()?;
        // SAFETY: the class of a live object (see `new`), on its attached thread.
        unsafe { definition_name(api, self.class()) }
    }
}

/// `Namespace.Outer+Inner` (a generic definition with its arity: `Dictionary`2+Entry`), from the
/// class and its enclosing classes.
///
/// # Safety
/// `class` is null or a class of the runtime, on a thread attached to it.
pub(crate) unsafe fn definition_name(api: &MonoApi, mut class: *mut MonoClass) -> Option<String> {
    let mut parts = Vec::new();
    let mut namespace = String::new();
    for _ in 0..16 {
        if class.is_null() {
            break;
        }
        // SAFETY: getters on a live class (the caller's contract); the strings belong to its
        // image and are copied.
        unsafe {
            parts.push(crate::c_string((api.mono_class_get_name)(class)));
            namespace = crate::c_string((api.mono_class_get_namespace)(class));
            class = (api.mono_class_get_nesting_type)(class);
        }
    }
    if parts.is_empty() {
        return None;
    }
    parts.reverse();
    let name = parts.join("+");
    Some(if namespace.is_empty() { name } else { format!("{namespace}.{name}") })
}

thread_local! {
    /// What `coverage_entry` collects for the `coverage_data` call on this thread.
    static COVERAGE: std::cell::RefCell<Vec<(u32, u64)>> = const { std::cell::RefCell::new(Vec::new()) };
}

unsafe extern "C" fn coverage_entry(_prof: *mut MonoProfiler, data: *const MonoProfilerCoverageData) {
    // SAFETY: Mono passes a valid entry for the duration of the call.
    let Some(data) = (unsafe { data.as_ref() }) else { return };
    let _ = COVERAGE.try_with(|c| c.borrow_mut().push((data.il_offset, u64::from(data.counter))));
}

unsafe extern "C" fn coverage_filter<E: Events>(_prof: *mut MonoProfiler, method: *mut MonoMethod) -> mono_bool {
    // SAFETY: as in `filter`.
    let Some(method) = (unsafe { Method::new(method) }) else { return 0 };
    mono_bool::from(guard::<E, _>(false, || E::cover(method)))
}

unsafe extern "C" fn filter<E: Events>(
    _prof: *mut MonoProfiler,
    method: *mut MonoMethod,
) -> MonoProfilerCallInstrumentationFlags {
    const TRACED: MonoProfilerCallInstrumentationFlags = MONO_PROFILER_CALL_INSTRUMENTATION_ENTER
        | MONO_PROFILER_CALL_INSTRUMENTATION_LEAVE
        | MONO_PROFILER_CALL_INSTRUMENTATION_TAIL_CALL
        | MONO_PROFILER_CALL_INSTRUMENTATION_EXCEPTION_LEAVE;
    // SAFETY: Mono passed `method` to this filter, which runs on the compiling (attached) thread
    // until it returns; the `Method` does not escape the closure.
    let Some(method) = (unsafe { Method::new(method) }) else { return MONO_PROFILER_CALL_INSTRUMENTATION_NONE };
    let traced = guard::<E, _>(false, || E::instrument(method));
    if traced { TRACED } else { MONO_PROFILER_CALL_INSTRUMENTATION_NONE }
}

unsafe extern "C" fn jit_done<E: Events>(_prof: *mut MonoProfiler, method: *mut MonoMethod, jinfo: *mut MonoJitInfo) {
    // SAFETY: as for the filter: the compiling thread, during the callback.
    let Some(method) = (unsafe { Method::new(method) }) else { return };
    let code_start = match api() {
        // SAFETY: the jit info Mono passed to this callback, which is still running.
        Some(api) if !jinfo.is_null() => unsafe { (api.mono_jit_info_get_code_start)(jinfo) as usize },
        _ => 0,
    };
    guard::<E, _>((), || E::jit_done(method, code_start));
}

// --- Sampling: the main thread leaves the sampler when `Main` returns. ---------------------------
//
// Mono's sampler signals every attached thread, and its signal handler asserts that the thread is
// not already in an "async context" (`mono_thread_info_set_is_async_context`). A thread that
// aborts another one is, while it walks the victim's stack for a finally block to protect
// (`mono_install_handler_block_guard`): a sampling signal landing in that walk aborts the whole
// process with `* Assertion at mono-threads.c:1545, condition `!async_context ||
// !info->is_async_context' not met` (Mono 6.8; any profiler that samples hits it). Every program
// with a background thread left when `Main` returns gets there: the main thread then aborts
// those threads (`mono_thread_manage`). Seen in 1 of ~400 runs of a test program that ends with
// thread-pool threads alive, at 2 kHz.
//
// So the entry point is instrumented (leave and exceptional leave only), and when it returns on a
// thread — with the main assembly's `Main`, the runtime's main thread — that thread is no longer
// signalled (`MONO_THREAD_INFO_FLAGS_NO_SAMPLE`, as Mono's own helper threads are). What is lost:
// the samples of the main thread between `Main`'s return and the process's exit (waiting for
// foreground threads, `ProcessExit` handlers). The other ways into the same race — `Thread.Abort`
// and `AppDomain.Unload` from a sampled thread — are not covered (docs/SAMPLING.md).

unsafe extern "C" fn entry_point_filter(
    _prof: *mut MonoProfiler,
    method: *mut MonoMethod,
) -> MonoProfilerCallInstrumentationFlags {
    // SAFETY: as for `filter`.
    let Some(method) = (unsafe { Method::new(method) }) else { return MONO_PROFILER_CALL_INSTRUMENTATION_NONE };
    let entry = catch_unwind(AssertUnwindSafe(|| method.is_entry_point())).unwrap_or(false);
    if entry {
        MONO_PROFILER_CALL_INSTRUMENTATION_LEAVE | MONO_PROFILER_CALL_INSTRUMENTATION_EXCEPTION_LEAVE
    } else {
        MONO_PROFILER_CALL_INSTRUMENTATION_NONE
    }
}

unsafe extern "C" fn entry_point_leave(
    _prof: *mut MonoProfiler,
    method: *mut MonoMethod,
    _ctx: *mut MonoProfilerCallContext,
) {
    // SAFETY: the leave of a method the filter chose runs on its (attached) thread, during the
    // callback.
    unsafe { entry_point_returned(method) }
}

unsafe extern "C" fn entry_point_exception_leave(
    _prof: *mut MonoProfiler,
    method: *mut MonoMethod,
    _exception: *mut MonoObject,
) {
    // SAFETY: as for `entry_point_leave`.
    unsafe { entry_point_returned(method) }
}

/// # Safety
/// `method` is the one Mono passed to a leave callback still running on the current thread.
/// Set when the main assembly's entry point returned (sampling mode, which instruments it).
static MAIN_RETURNED: AtomicBool = AtomicBool::new(false);

/// True once `Main` returned (sampling mode only: [`Profiler::enable_sampling`] watches it): the
/// runtime is on its way out, aborting the background threads.
pub fn main_returned() -> bool {
    MAIN_RETURNED.load(Relaxed)
}

unsafe fn entry_point_returned(method: *mut MonoMethod) {
    // SAFETY: per this function's contract.
    let Some(method) = (unsafe { Method::new(method) }) else { return };
    let Some(api) = api() else { return };
    let _ = catch_unwind(AssertUnwindSafe(|| {
        if !method.in_main_assembly() {
            return; // another executable's `Main`, called as a method
        }
        MAIN_RETURNED.store(true, Relaxed);
        // SAFETY: the current thread is attached (it runs a leave callback), so it has a thread
        // info; setting its flags may take the GC lock, which a leave callback may.
        unsafe {
            let info = (api.mono_thread_info_current_unchecked)();
            if info.is_null() {
                return;
            }
            let flags = (api.mono_thread_info_get_flags)(info);
            if flags & MONO_THREAD_INFO_FLAGS_NO_SAMPLE == 0 {
                (api.mono_thread_info_set_flags)(flags | MONO_THREAD_INFO_FLAGS_NO_SAMPLE);
            }
        }
    }));
}

// --- Hot trampolines: no guard (see `CallHooks`). ------------------------------------------------

unsafe extern "C" fn enter<H: CallHooks>(
    _prof: *mut MonoProfiler,
    method: *mut MonoMethod,
    _ctx: *mut MonoProfilerCallContext,
) {
    H::enter(MethodKey(method as usize));
}

unsafe extern "C" fn leave<H: CallHooks>(
    _prof: *mut MonoProfiler,
    method: *mut MonoMethod,
    _ctx: *mut MonoProfilerCallContext,
) {
    H::leave(MethodKey(method as usize));
}

unsafe extern "C" fn tail_call<H: CallHooks>(_prof: *mut MonoProfiler, method: *mut MonoMethod, _to: *mut MonoMethod) {
    H::tail_call(MethodKey(method as usize));
}

unsafe extern "C" fn exception_leave<H: CallHooks>(
    _prof: *mut MonoProfiler,
    method: *mut MonoMethod,
    _exception: *mut MonoObject,
) {
    H::exception_leave(MethodKey(method as usize));
}

unsafe extern "C" fn sample_hit<S: SampleHit>(_prof: *mut MonoProfiler, ip: *const u8, context: *const c_void) {
    let Some(context) = NonNull::new(context.cast_mut()) else { return };
    S::sample_hit(&Sample { ip: ip as usize, context, _handler: PhantomData });
}

/// Calls `H`'s callbacks the way Mono does — through the registered trampolines, by function
/// pointer — with a stand-in method: for measuring the callbacks' own cost, and for tests.
pub mod invoke {
    use super::*;

    pub fn enter<H: CallHooks>(method: MethodKey) {
        let f = std::hint::black_box(super::enter::<H> as MonoProfilerMethodEnterCallback);
        // SAFETY: the trampoline ignores the profiler and context pointers and passes the method
        // pointer on as a key only.
        unsafe { f(null_mut(), method.0 as *mut MonoMethod, null_mut()) }
    }

    pub fn leave<H: CallHooks>(method: MethodKey) {
        let f = std::hint::black_box(super::leave::<H> as MonoProfilerMethodLeaveCallback);
        // SAFETY: as for `enter`.
        unsafe { f(null_mut(), method.0 as *mut MonoMethod, null_mut()) }
    }

    pub fn tail_call<H: CallHooks>(method: MethodKey) {
        let f = std::hint::black_box(super::tail_call::<H> as MonoProfilerMethodTailCallCallback);
        // SAFETY: as for `enter`; the target is ignored.
        unsafe { f(null_mut(), method.0 as *mut MonoMethod, null_mut()) }
    }

    pub fn exception_leave<H: CallHooks>(method: MethodKey) {
        let f = std::hint::black_box(super::exception_leave::<H> as MonoProfilerMethodExceptionLeaveCallback);
        // SAFETY: as for `enter`; the exception is ignored.
        unsafe { f(null_mut(), method.0 as *mut MonoMethod, null_mut()) }
    }
}
