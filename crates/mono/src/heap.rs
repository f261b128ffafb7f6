//! Heap snapshots, the way Mono's own log profiler takes its heapshots (`mono/profiler/log.c`):
//! a major collection forced on the finalizer thread, the roots the collection reports
//! (`gc_roots`, on only for that collection) and, before the world restarts, every live object
//! with its references (`mono_gc_walk_heap`).
//!
//! Why the finalizer thread: `mono_gc_collect` must run on a thread attached to the runtime, and
//! the agent's threads are not (attaching one would give the program a `Thread` object of ours,
//! and Mono would suspend it at every collection). `mono_gc_finalize_notify` only posts the
//! finalizer's semaphore, from any thread; the finalizer thread wakes, runs what is pending and
//! raises `gc_finalized`, where [`HeapShot::wanted`] says whether to collect — what `log.c` does
//! for an on-demand heapshot (`trigger_heapshot`, `process_heapshot`). The names are taken there
//! too, after the collection, on a thread that may call the metadata API.
//!
//! What runs with the world stopped ([`HeapShot::roots`], [`HeapShot::object`],
//! [`HeapShot::walk_end`]) runs on the collecting thread while every other thread of the program
//! is suspended, anywhere (Mono suspends preemptively): no Mono API there, and nothing that may
//! wait for a lock a program thread holds.

use crate::{api, c_string};
use sonde_mono_sys::*;
use std::ffi::{c_char, c_int, c_void};
use std::marker::PhantomData;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::ptr::null_mut;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, AtomicUsize, Ordering::Relaxed};

/// A class, as a key: what the heap walk gives for each object. Only this crate makes one (from
/// the walk), so [`Naming::type_name`] only ever sees a class of the runtime.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ClassKey(usize);

impl ClassKey {
    pub fn value(self) -> usize {
        self.0
    }
}

/// A class's static data as a key (its `MonoVTable*`): what the registration of a static root
/// range gives, for [`Naming::static_field`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct VTableKey(usize);

/// How deep an array of arrays is named.
const MAX_ARRAY_NESTING: usize = 8;

/// A type of the heap, for the agent to spell: an array's innermost element type, by its
/// definition (`System.Collections.Generic.Dictionary`2+Entry`: namespace, enclosing classes
/// after a `+`, the arity of a generic one) and by Mono's own name of it, which gives the type
/// arguments (`System.Collections.Generic.Dictionary`2.Entry<System.String,Acme.Session>`: its
/// nested types after a `.`, so the definition comes from the class); then the array's ranks,
/// outermost first (`[1]` for `T[]`, `[2, 1]` for `T[][,]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeName {
    pub definition: String,
    pub il_name: String,
    pub ranks: Vec<u32>,
}

/// What registered a root range (`MonoGCRootSource`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RootSource {
    /// A thread's stack (its conservative roots are reported at the stack's start).
    Stack,
    /// A thread's handle stack: the runtime's own references on that thread.
    HandleStack,
    /// The finalizer queues: objects waiting for their finalizer.
    FinalizerQueue,
    /// A class's static fields; the range is its static data, a field's slot at its offset.
    Static(VTableKey),
    /// `GCHandle`s, toggle references.
    Handle,
    /// Anything else (the runtime's domains, the JIT's, thread statics…): Mono's
    /// `MonoGCRootSource` value.
    Other(i32),
}

/// The agent's side of a snapshot. Every method runs behind a guard: a panic switches heap
/// snapshots off for the rest of the run.
pub trait HeapShot: 'static {
    /// A root range was registered, on the thread that registered it (from the start: a class's
    /// statics are registered when it is initialised).
    fn root_registered(start: usize, size: usize, source: RootSource);
    fn root_unregistered(start: usize);
    /// On the finalizer thread, after its finalizers: whether to take a snapshot now.
    fn wanted() -> bool;
    /// Roots of the snapshot's collection: the address each was found at, the object. The world
    /// is stopped (see the module's docs).
    fn roots(addresses: &[usize], objects: &[usize]);
    /// One object of the walk, world stopped: its address, class, size (aligned to 8 bytes, as
    /// the heap lays objects out) and references. An object with many references comes in
    /// several calls, `first` only on the first (with the size).
    fn object(address: usize, class: ClassKey, size: u64, references: &[usize], first: bool);
    /// The walk is over; the world is still stopped.
    fn walk_end();
    /// After the collection, on the finalizer thread, the program running again: whether the heap
    /// was walked, how long the program was stopped for it, and what can name its classes.
    fn taken(walked: bool, pause_ns: u64, naming: &Naming<'_>);
}

/// The runtime's heap snapshots, set up in the profiler's init function (their root ranges must
/// be seen from the start).
pub struct HeapShots {
    api: &'static MonoApi,
}

/// The heap snapshots' own profiler handle: its GC-event and roots callbacks are set only while
/// a snapshot's collection runs.
static HANDLE: OnceLock<usize> = OnceLock::new();
/// Cleared by a panic in a heap callback: no more snapshots.
static DISABLED: AtomicBool = AtomicBool::new(false);
/// The next major, serial collection is the snapshot's.
static ARMED: AtomicBool = AtomicBool::new(false);
/// The current collection is the snapshot's: roots on, walk before the restart.
static WALKING: AtomicBool = AtomicBool::new(false);
static WALKED: AtomicBool = AtomicBool::new(false);
static MAX_GENERATION: AtomicI32 = AtomicI32::new(1);
/// When the world began to stop, and how long the snapshot's collection kept it stopped (ns).
static STOPPING_AT: AtomicU64 = AtomicU64::new(0);
static PAUSE_NS: AtomicU64 = AtomicU64::new(0);
/// The walk's previous object: a continuation of it is not a new object.
static LAST_OBJECT: AtomicUsize = AtomicUsize::new(0);

/// How many forced collections a snapshot tries: one that only finishes a concurrent collection
/// already under way is not serial, and is not walked (`log.c` waits for the next one too).
const ATTEMPTS: usize = 3;

impl HeapShots {
    /// Creates the snapshots' profiler handle with `H`'s callbacks. Must run in the init function.
    pub fn install<H: HeapShot>(mono: &'static crate::Mono) -> HeapShots {
        let api = &mono.api;
        // SAFETY: Mono's profiler API with a null `MonoProfiler*` (allowed); registration
        // functions on the new handle with trampolines of the header's callback types.
        unsafe {
            let handle = (api.mono_profiler_create)(null_mut());
            let _ = HANDLE.set(handle as usize);
            (api.mono_profiler_set_gc_root_register_callback)(handle, Some(root_register::<H>));
            (api.mono_profiler_set_gc_root_unregister_callback)(handle, Some(root_unregister::<H>));
            (api.mono_profiler_set_gc_finalized_callback)(handle, Some(finalized::<H>));
        }
        HeapShots { api }
    }

    /// Wakes the finalizer thread, which asks [`HeapShot::wanted`] (from any thread: it posts a
    /// semaphore).
    pub fn wake_finalizer(&self) {
        // SAFETY: a semaphore post, callable from any thread.
        unsafe { (self.api.mono_gc_finalize_notify)() }
    }
}

fn handle() -> MonoProfilerHandle {
    HANDLE.get().copied().unwrap_or(0) as MonoProfilerHandle
}

fn guard<R>(default: R, f: impl FnOnce() -> R) -> R {
    if DISABLED.load(Relaxed) {
        return default;
    }
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|_| {
        DISABLED.store(true, Relaxed);
        default
    })
}

fn now_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: writes the current time into `ts`; no allocation, no lock (vDSO).
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

unsafe extern "C" fn root_register<H: HeapShot>(
    _prof: *mut MonoProfiler,
    start: *const u8,
    size: usize,
    source: MonoGCRootSource,
    key: *const c_void,
    _name: *const c_char,
) {
    let source = match source {
        MONO_ROOT_SOURCE_STACK => RootSource::Stack,
        MONO_ROOT_SOURCE_HANDLE => RootSource::HandleStack,
        MONO_ROOT_SOURCE_FINALIZER_QUEUE => RootSource::FinalizerQueue,
        MONO_ROOT_SOURCE_STATIC if !key.is_null() => RootSource::Static(VTableKey(key as usize)),
        MONO_ROOT_SOURCE_GC_HANDLE | MONO_ROOT_SOURCE_TOGGLEREF => RootSource::Handle,
        other => RootSource::Other(other),
    };
    guard((), || H::root_registered(start as usize, size, source));
}

unsafe extern "C" fn root_unregister<H: HeapShot>(_prof: *mut MonoProfiler, start: *const u8) {
    guard((), || H::root_unregistered(start as usize));
}

/// On the finalizer thread: the snapshot's collection, when one is wanted.
unsafe extern "C" fn finalized<H: HeapShot>(_prof: *mut MonoProfiler) {
    let Some(api) = api() else { return };
    guard((), || {
        if !H::wanted() {
            return;
        }
        WALKED.store(false, Relaxed);
        PAUSE_NS.store(0, Relaxed);
        // SAFETY: (all) on the finalizer thread, attached to the runtime and outside any
        // collection, as `mono_gc_collect` requires; callbacks of the header's types set on our
        // handle and cleared before returning.
        unsafe {
            MAX_GENERATION.store((api.mono_gc_max_generation)(), Relaxed);
            (api.mono_profiler_set_gc_event_callback)(handle(), Some(gc_event::<H>));
            for _ in 0..ATTEMPTS {
                ARMED.store(true, Relaxed);
                (api.mono_gc_collect)(MAX_GENERATION.load(Relaxed));
                if WALKED.load(Relaxed) {
                    break;
                }
            }
            ARMED.store(false, Relaxed);
            (api.mono_profiler_set_gc_event_callback)(handle(), None);
            (api.mono_profiler_set_gc_roots_callback)(handle(), None);
        }
        let naming = Naming { api, _thread: PhantomData };
        H::taken(WALKED.load(Relaxed), PAUSE_NS.load(Relaxed), &naming);
    });
}

/// The steps of the snapshot's collection, on the collecting thread (as `log.c`'s `gc_event`):
/// the roots callback on from the world's stop, the walk just before its restart.
unsafe extern "C" fn gc_event<H: HeapShot>(
    _prof: *mut MonoProfiler,
    event: MonoProfilerGCEvent,
    generation: u32,
    serial: mono_bool,
) {
    let Some(api) = api() else { return };
    match event {
        MONO_GC_EVENT_PRE_STOP_WORLD => STOPPING_AT.store(now_ns(), Relaxed),
        MONO_GC_EVENT_PRE_STOP_WORLD_LOCKED => {
            let major = generation as i32 == MAX_GENERATION.load(Relaxed);
            if major && serial != 0 && ARMED.swap(false, Relaxed) {
                WALKING.store(true, Relaxed);
                // SAFETY: sets our handle's roots callback (an atomic store in Mono), as `log.c`
                // does at this event.
                unsafe { (api.mono_profiler_set_gc_roots_callback)(handle(), Some(gc_roots::<H>)) };
            }
        }
        MONO_GC_EVENT_PRE_START_WORLD if WALKING.load(Relaxed) => {
            // SAFETY: as above; then the walk, with the world still stopped after a serial major
            // collection, where `log.c` walks; `walk_object::<H>` takes no data.
            unsafe {
                (api.mono_profiler_set_gc_roots_callback)(handle(), None);
                LAST_OBJECT.store(0, Relaxed);
                (api.mono_gc_walk_heap)(0, walk_object::<H>, null_mut());
            }
            guard((), H::walk_end);
            WALKING.store(false, Relaxed);
            WALKED.store(true, Relaxed);
        }
        MONO_GC_EVENT_POST_START_WORLD if WALKED.load(Relaxed) && PAUSE_NS.load(Relaxed) == 0 => {
            PAUSE_NS.store(now_ns().saturating_sub(STOPPING_AT.load(Relaxed)).max(1), Relaxed);
        }
        _ => {}
    }
}

unsafe extern "C" fn gc_roots<H: HeapShot>(
    _prof: *mut MonoProfiler,
    count: u64,
    addresses: *const *const u8,
    objects: *const *mut MonoObject,
) {
    if addresses.is_null() || objects.is_null() || count == 0 {
        return;
    }
    // SAFETY: Mono passes `count` addresses and `count` objects, valid during the call; pointers
    // and `usize` have the same layout.
    let (addresses, objects) = unsafe {
        (
            std::slice::from_raw_parts(addresses.cast::<usize>(), count as usize),
            std::slice::from_raw_parts(objects.cast::<usize>(), count as usize),
        )
    };
    guard((), || H::roots(addresses, objects));
}

unsafe extern "C" fn walk_object<H: HeapShot>(
    obj: *mut MonoObject,
    klass: *mut MonoClass,
    size: usize,
    num: usize,
    refs: *mut *mut MonoObject,
    _offsets: *mut usize,
    _data: *mut c_void,
) -> c_int {
    let references = if refs.is_null() || num == 0 {
        &[][..]
    } else {
        // SAFETY: the walk passes `num` references, valid during the call.
        unsafe { std::slice::from_raw_parts(refs.cast::<usize>(), num) }
    };
    let address = obj as usize;
    let first = LAST_OBJECT.swap(address, Relaxed) != address;
    // Objects are 8-byte aligned in the heap (log.c counts them so too).
    let size = (size as u64).next_multiple_of(8);
    guard((), || H::object(address, ClassKey(klass as usize), size, references, first));
    0
}

/// Names what a walk saw, on the finalizer thread after the collection ([`HeapShot::taken`]).
pub struct Naming<'cb> {
    api: &'static MonoApi,
    _thread: PhantomData<&'cb ()>,
}

impl Naming<'_> {
    /// What names the class's type: see [`TypeName`].
    pub fn type_name(&self, class: ClassKey) -> Option<TypeName> {
        let mut class = class.0 as *mut MonoClass;
        let mut ranks = Vec::new();
        // SAFETY: (all) a class the walk reported or its element classes (classes live as long as
        // the runtime), on an attached thread; Mono's name is copied and freed once.
        unsafe {
            for _ in 0..MAX_ARRAY_NESTING {
                let rank = (self.api.mono_class_get_rank)(class);
                if rank <= 0 {
                    break;
                }
                ranks.push(rank as u32);
                class = (self.api.mono_class_get_element_class)(class);
                if class.is_null() {
                    return None;
                }
            }
            let definition = crate::profiler::definition_name(self.api, class)?;
            let ty = (self.api.mono_class_get_type)(class);
            if ty.is_null() {
                return None;
            }
            let name = (self.api.mono_type_get_name)(ty);
            if name.is_null() {
                return None;
            }
            let il_name = c_string(name);
            (self.api.mono_free)(name.cast());
            Some(TypeName { definition, il_name, ranks })
        }
    }

    /// The class whose static data `vtable` is, and the name of its static field at `offset` in
    /// that data (`None` when none is there).
    pub fn static_field(&self, vtable: VTableKey, offset: usize) -> Option<(ClassKey, String)> {
        // SAFETY: a vtable Mono registered as a static root's key (vtables live as long as their
        // domain), on an attached thread; the field iteration is Mono's, its strings belong to the
        // class and are copied.
        unsafe {
            let class = (self.api.mono_vtable_class)(vtable.0 as *mut MonoVTable);
            if class.is_null() {
                return None;
            }
            let mut iter: *mut c_void = null_mut();
            loop {
                let field = (self.api.mono_class_get_fields)(class, &mut iter);
                if field.is_null() {
                    return None;
                }
                let flags = (self.api.mono_field_get_flags)(field);
                if flags & FIELD_ATTRIBUTE_STATIC == 0 || flags & FIELD_ATTRIBUTE_LITERAL != 0 {
                    continue;
                }
                if (self.api.mono_field_get_offset)(field) as usize == offset {
                    return Some((ClassKey(class as usize), c_string((self.api.mono_field_get_name)(field))));
                }
            }
        }
    }
}
