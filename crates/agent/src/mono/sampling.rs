//! Sampling mode on Mono: Mono's own sampler raises the samples, Sonde's `sampling` module keeps
//! them.
//!
//! Mono has a sampling thread of its own (`mono_profiler_enable_sampling`, which must be called in
//! the init function): every tick of its clock it signals every thread attached to the runtime,
//! and its signal handler calls the profiler's `sample_hit` callback on the sampled thread. So on
//! Mono there is no Sonde sampler thread and no Sonde signal handler (both would fight Mono's for
//! the threads); `sampling::start_external` starts the drain thread only, and `sample_hit` writes
//! into the thread's ring through `sampling::record_for_current_thread`.
//!
//! * **The rate** is Mono's frequency in `MONO_PROFILER_SAMPLE_MODE_REAL` (monotonic clock: its
//!   `PROCESS` mode ticks on the process's CPU clock, which the kernel advances at its scheduler
//!   tick, so it delivers ~250 Hz whatever was asked). `--clock` only decides how a sample is
//!   weighted, on the sampled thread (`record_for_current_thread`): `wall` by the wall time since
//!   the thread's last sample, `cpu` by the CPU time the thread ran since — a thread that has not
//!   run records nothing and is not walked. See `docs/SAMPLING.md`.
//! * **The walk** (`sample_hit`, in the signal handler): `mono_stack_walk_async_safe` reports the
//!   managed frames, leaf first. Each becomes one value in the ring. Without Mono's debug mode
//!   (the usual case) that is the frame's code start, tagged, which the drain looks up among
//!   the code the compiling threads noted (`Seen::deferred`). In debug mode it is the method's
//!   index in the table of compiled methods (below), found through lock-free tables by
//!   `MonoMethod*` or, for AOT code (which the async-safe walk cannot map to a method) and
//!   shared generic code, by the code's start address; failing both, the `MonoMethod*` or the
//!   code address, tagged. When the thread was interrupted outside the leaf managed frame
//!   (native code: a system call, the runtime), the interrupted address comes first, tagged, so
//!   the drain can name the native code as the CoreCLR backend does. In debug mode a compiled
//!   method's value also says where in its code the frame was (the interrupted instruction, or a
//!   caller's call instruction), for lines. No allocation,
//!   lock, Mono call other than the walk, or panic path. A stack with no managed frame is not
//!   recorded (counted as `no_managed_frames`).
//! * **Lines** need Mono's debug mode (`mono --debug`, or `--debug` in `MONO_ENV_OPTIONS`), the
//!   only mode in which its JIT keeps a table from native code back to IL. Sonde never switches
//!   it on (it changes how the program runs); when the program's owner did, the compiling thread
//!   copies each method's table (`Method::line_table`, in `jit_done`), and the drain maps each
//!   frame's native offset to its IL offset with it, without calling Mono, as the CoreCLR
//!   backend's drain does with the runtime's maps. Without debug mode nothing is copied and
//!   frames have no offset (`docs/SAMPLING.md`, "Source lines").
//! * **Names** are built on the drain thread, from the metadata of the file each method's image
//!   was loaded from (`sampling::module_files`), the first time a sample shows the method — so
//!   the profile lists sampled methods only, as on CoreCLR. The compiling thread (`jit_done`,
//!   attached to the runtime, for every method Mono compiles or loads from an AOT image) only
//!   notes where the method's metadata is: its image and MethodDef token (a few field reads; it
//!   used to name every method there, ~6% of the samples of Mono's C# compiler), appended to a
//!   list with where its code starts, which the drain takes in at each pass (it used to insert
//!   each method and code start into two lock-free tables: 1–3% more). Methods without
//!   a row (wrappers, dynamic methods) and images without a file are named there, with Mono's
//!   API: never in the signal handler, never on the drain thread, which is not attached to the
//!   runtime (a Mono call there aborts the process).

use crate::base::log::log;
use crate::base::running;
use crate::ipc::link::SnapshotFacts;
use crate::sampling::{self, Frame, FrameResolver, native_symbol, ring};
use crate::session::{self, StartError};
use crate::tree::ids::MethodIds;
use crate::tree::methods::methods;
use crate::tree::threads;
use sonde_metadata::MethodNames;
use sonde_mono::{Events, Method, Mono, Profiler, Sample, SampleHit};
use sonde_protocol::AgentConfig;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};
use std::sync::{Arc, Mutex};

/// Ring values: the top two bits say what the rest is.
const TAG_SHIFT: u32 = 62;
/// An index into [`Seen::compiled`] (the low 32 bits), and above it, from bit [`OFFSET_SHIFT`], the
/// frame's native offset in the method's code plus one (0: not known).
const TAG_COMPILED: u64 = 0;
const OFFSET_SHIFT: u32 = 32;
/// A `MonoMethod*` that no compiled-method table knows.
const TAG_METHOD: u64 = 1;
/// The start of managed code that no compiled-method table knows (AOT code, typically).
const TAG_CODE: u64 = 2;
/// The interrupted instruction, outside managed code (the leaf of a thread in native code).
const TAG_NATIVE: u64 = 3;
const PAYLOAD: u64 = (1 << TAG_SHIFT) - 1;

/// What the Mono backend knows to name samples, one per process: written on the compiling threads
/// (`jit_done`: the methods, their code and line tables), read by the drain thread (which never
/// calls Mono) through the values Mono's walk wrote. Only grows, bounded by the methods Mono
/// compiles; `any_debug` and `deferred` are set once, at start-up.
struct Seen {
    /// Every method Mono compiled (or loaded precompiled), where its names are, and the images
    /// they came from: one lock per method noted.
    notes: Mutex<Notes>,
    /// Code start → index into [`Notes::compiled`] (the methods compiled eagerly: see
    /// [`Seen::deferred`]).
    code: MethodIds,
    line_tables: Mutex<Option<LineTables>>,
    /// Set once a table is kept: until then the drain looks for none.
    any_line_table: AtomicBool,
    /// Counts the tables withdrawn, for the drain to drop its copies.
    line_tables_withdrawn: AtomicU64,
    /// Method `index` compiled again, with `table`: its table stays only if it is the same.
    /// Methods noted when their compilation began (`code` 0: the runtime's work names them) whose
    /// compilation has not finished yet, in Mono's debug mode only.
    noted_before_compiling: Mutex<std::collections::BTreeSet<u32>>,
    /// Mono runs in its debug mode (line tables exist).
    any_debug: AtomicBool,
    /// Sampling without Mono's debug mode: the compiling threads only append what they note to
    /// [`Notes::code`], the walk writes each frame's code start as it is, and the drain looks the
    /// code up in what was noted ([`noted`]). Inserting every method and code start into the
    /// lock-free tables the walk read was most of the compiling threads' work (thousands of
    /// methods loaded precompiled in a short run; a few cache and TLB misses each, 1–5 µs here),
    /// and the walk's look-ups most of its own. The walk's method for a frame is the one its
    /// code was compiled for (the async-safe walk does not look up the instantiation a shared
    /// generic frame runs for), so the code names the same method. Frames then carry no native
    /// offset, which only Mono's debug mode has a use for (lines): with it, the tables as before.
    deferred: AtomicBool,
}

static SEEN: Seen = Seen {
    notes: Mutex::new(Notes { compiled: Chunks::new(), images: None, code: Vec::new() }),
    code: MethodIds::new(),
    line_tables: Mutex::new(None),
    any_line_table: AtomicBool::new(false),
    line_tables_withdrawn: AtomicU64::new(0),
    noted_before_compiling: Mutex::new(std::collections::BTreeSet::new()),
    any_debug: AtomicBool::new(false),
    deferred: AtomicBool::new(false),
};

struct Notes {
    /// `(MonoMethod*, where its names are)`, indexed by the values [`IDS`] (by method),
    /// [`Seen::code`] (by code start) and [`noted`] hold in sampling mode.
    compiled: Chunks<(usize, Names)>,
    images: Option<Images>,
    /// What was noted since the drain last looked ([`Seen::deferred`]), in order.
    code: Vec<CodeNote>,
}

/// A method noted for the drain ([`Seen::deferred`]).
struct CodeNote {
    /// The `MonoMethod*`.
    method: usize,
    /// Where its code starts (0: its compilation began).
    code: usize,
    /// Its index into [`Notes::compiled`] (a method noted twice keeps its first).
    index: u32,
    /// Code just compiled (its `jit_begin` was on this thread): new code, which replaces any the
    /// same address held before (code freed, e.g. a dynamic method's). Other notes (a method
    /// loaded precompiled, a P/Invoke noted with its wrapper's code) leave an address's method
    /// as it was.
    fresh: bool,
}

fn notes() -> std::sync::MutexGuard<'static, Notes> {
    SEEN.notes.lock().unwrap_or_else(|e| e.into_inner())
}

/// Append-only, in chunks that never move: a push never copies what is already there (the
/// table reaches thousands of entries in a short run, and a growing `Vec` copied them, faulting
/// in fresh pages, on the compiling thread).
struct Chunks<T> {
    chunks: Vec<Vec<T>>,
}

const CHUNK: usize = 1024;

impl<T> Chunks<T> {
    const fn new() -> Chunks<T> {
        Chunks { chunks: Vec::new() }
    }

    fn len(&self) -> usize {
        self.chunks.last().map_or(0, |last| (self.chunks.len() - 1) * CHUNK + last.len())
    }

    /// Appends `value`; its index.
    fn push(&mut self, value: T) -> usize {
        let index = self.len();
        match self.chunks.last_mut() {
            Some(last) if last.len() < CHUNK => last.push(value),
            _ => {
                let mut chunk = Vec::with_capacity(CHUNK);
                chunk.push(value);
                self.chunks.push(chunk);
            }
        }
        index
    }

    fn get(&self, index: usize) -> Option<&T> {
        self.chunks.get(index / CHUNK)?.get(index % CHUNK)
    }
}

/// Where a compiled method's names are.
#[derive(Clone)]
enum Names {
    /// Named when compiled (no metadata row, or an image without a file).
    Known(Box<MethodNames>),
    /// MethodDef `token` of the image file [`Notes::images`] holds at `image`; the type arguments
    /// of its class when it is a generic instance.
    InFile { image: u32, token: u32, type_args: Vec<String> },
}

/// The images whose methods were compiled: image → index of its file's path, or `None` when it
/// has no file to read (loaded from memory).
struct Images {
    by_image: sampling::AddressMap<usize, Option<u32>>,
    paths: Vec<String>,
    /// The last image looked up (methods come image by image).
    last: Option<(usize, Option<u32>)>,
}

impl Notes {
    /// The index of `method`'s image file (the image's first method looks its path up, once).
    fn image_file(&mut self, image: usize, method: &Method<'_>) -> Option<u32> {
        let images =
            self.images.get_or_insert_with(|| Images { by_image: Default::default(), paths: Vec::new(), last: None });
        if let Some((last, file)) = images.last
            && last == image
        {
            return file;
        }
        let file = match images.by_image.get(&image) {
            Some(&known) => known,
            None => {
                let file = method
                    .image_path()
                    .filter(|p| p.starts_with('/') && std::fs::metadata(p).is_ok_and(|m| m.is_file()))
                    .and_then(|path| {
                        let index = u32::try_from(images.paths.len()).ok()?;
                        images.paths.push(path);
                        Some(index)
                    });
                images.by_image.insert(image, file);
                file
            }
        };
        images.last = Some((image, file));
        file
    }

    /// Notes `method` (`key`) with its names; its index.
    fn push(&mut self, key: usize, names: Names) -> Option<u32> {
        let index = u32::try_from(self.compiled.len()).ok()?;
        self.compiled.push((key, names));
        Some(index)
    }
}

/// The path of image file `index`.
fn image_path(index: u32) -> Option<String> {
    notes().images.as_ref()?.paths.get(index as usize).cloned()
}

/// Notes `method` (`key`) with where its names are: in its image's file when it has one (a few
/// field reads), else built now with Mono's API; its index into [`Notes::compiled`]. With
/// `for_drain` (`(code, fresh)`), a [`CodeNote`] too, under the same lock.
fn note(method: &Method<'_>, key: usize, for_drain: Option<(usize, bool)>) -> Option<u32> {
    let definition = method.definition();
    // Without a metadata row (a wrapper) there are no class type arguments to name either.
    let type_args = if definition.is_some() { method.class_type_args() } else { Vec::new() };
    let mut held = notes();
    let names = match definition.and_then(|d| Some((held.image_file(d.image, method)?, d.token))) {
        Some((image, token)) => Names::InFile { image, token, type_args },
        None => {
            drop(held);
            let described = method.describe().map(|names| MethodNames { type_args, ..names });
            let names = Names::Known(Box::new(described.or_else(|| method.describe_wrapper())?));
            held = notes();
            names
        }
    };
    let index = held.push(key, names)?;
    if let Some((code, fresh)) = for_drain {
        held.code.push(CodeNote { method: key, code, index, fresh });
    }
    Some(index)
}

/// `MonoMethod*` → the method's id in the method table (tracing: `mono::start_tracing`), or
/// its index among the compiled methods (sampling: [`Seen::compiled`]).
pub(super) static IDS: MethodIds = MethodIds::new();

/// Sampling mode: Mono's sampler signals the threads, [`Walker`] walks their stacks; Sonde runs
/// the drain thread only. No filter, no enter/leave, no JIT option changed. In the init function;
/// `A` gets the runtime's callbacks (the backend's `Agent`). The profiler returned is where the
/// backend sets the runtime's events.
pub(super) fn start<A: Events>(
    mono: &'static Mono,
    config: &AgentConfig,
) -> Result<(Profiler, SnapshotFacts), StartError> {
    let interval = session::interval(config);
    // Mono ticks at a whole frequency; the weighting and the times use the interval asked for.
    let freq = ((1_000_000 + config.interval_us / 2) / config.interval_us.max(1)).clamp(1, u32::MAX as u64) as u32;
    let clock = session::sampling_clock(config);
    sampling::start_external(interval, clock, Box::new(MonoFrames::default()))
        .map_err(|e| StartError::runtime("starting the sampling drain thread", e))?;
    let profiler = mono.create_profiler();
    let empty = config.bench_hooks == Some(crate::calibration::Floor::Empty);
    if empty {
        log!("benchmark floor: Mono's sampler with an empty sample callback; nothing is recorded");
        profiler.enable_sampling::<A, EmptyHit>(freq)
    } else {
        profiler.enable_sampling::<A, Walker>(freq)
    }
    .map_err(|e| StartError::runtime("enabling Mono's sampler", e))?;
    // The thread running the init function initialises the runtime and runs Main.
    session::sample_thread(threads::gettid());
    log!("sampling at {freq} Hz (Mono's sampler, real-time mode), {clock:?} clock");
    let debug = mono.debug_enabled();
    SEEN.any_debug.store(debug, Relaxed);
    SEEN.deferred.store(!debug, Relaxed);
    log!(
        "Mono's debug mode is {}",
        if debug { "on: samples by line" } else { "off: no samples by line (mono --debug)" }
    );
    Ok((profiler, session::sampling_facts(config)))
}

// --- On the compiling thread: names. ----------------------------------------------------------

/// A method Mono compiled (or loaded precompiled; `code` 0: is about to compile), on the
/// compiling thread: noted now, named by the drain.
pub(super) fn compiled(method: Method<'_>, code: usize) {
    if session::get().is_none() {
        return;
    }
    let key = method.key().0;
    let deferred = SEEN.deferred.load(Relaxed);
    if code == 0 {
        let index =
            if deferred { note(&method, key, Some((0, true))) } else { compiled_eagerly(&method, key, 0, None) };
        if let Some(index) = index {
            begun::push(key, index);
        }
        return;
    }
    let begun = begun::take(key);
    if !deferred {
        compiled_eagerly(&method, key, code, begun);
        return;
    }
    // For the drain: the code, and the method too when it was not noted as its compilation
    // began (loaded precompiled).
    match begun {
        Some(index) => notes().code.push(CodeNote { method: key, code, index, fresh: true }),
        None => {
            note(&method, key, Some((code, false)));
        }
    }
}

/// [`compiled`] into the lock-free tables the walk reads: [`IDS`] and [`Seen::code`]. `begun`:
/// the method's index when this thread noted its compilation's beginning. The method's index.
fn compiled_eagerly(method: &Method<'_>, key: usize, code: usize, begun: Option<u32>) -> Option<u32> {
    // Before the compilation (`code` 0) there is no table yet: the first one comes when it is
    // done, and counts as the method's first (not as a second that withdraws it).
    let table = if code != 0 { method.line_table() } else { None };
    let index = match begun.or_else(|| IDS.get(key)) {
        Some(index) => {
            if code != 0 && !first_compilation_done(index, table.as_ref()) {
                // Compiled again (another domain, a recompilation): new code.
                line_table_again(index, table);
            }
            index
        }
        None => {
            let index = note(method, key, None)?;
            // Before the index is published: no sample has it without its table.
            if let Some(table) = table {
                line_tables(|tables| tables.insert(index, Some(table.into())));
                SEEN.any_line_table.store(true, Release);
            }
            if code == 0 && SEEN.any_debug.load(Relaxed) {
                SEEN.noted_before_compiling.lock().unwrap_or_else(|e| e.into_inner()).insert(index);
            }
            if !IDS.insert(key, index) {
                return None;
            }
            index
        }
    };
    if code != 0 {
        SEEN.code.insert(code, index);
    }
    Some(index)
}

/// The compilations this thread began lately, `(MonoMethod*, index)`: its `jit_done` then knows
/// the method was noted, and its index, without a look-up. An entry left behind (a compilation
/// that failed) stays true: nothing noted is forgotten.
mod begun {
    use std::cell::Cell;

    const KEPT: usize = 4;

    thread_local! {
        static BEGUN: Cell<([(usize, u32); KEPT], usize)> = const { Cell::new(([(0, 0); KEPT], 0)) };
    }

    pub(super) fn push(key: usize, index: u32) {
        BEGUN.with(|b| {
            let (mut kept, next) = b.get();
            kept[next % KEPT] = (key, index);
            b.set((kept, (next + 1) % KEPT));
        });
    }

    /// The index of `key` if this thread began compiling it lately (forgotten then).
    pub(super) fn take(key: usize) -> Option<u32> {
        BEGUN.with(|b| {
            let (mut kept, next) = b.get();
            let at = kept.iter().position(|&(k, _)| k == key)?;
            let index = kept[at].1;
            kept[at] = (0, 0);
            b.set((kept, next));
            Some(index)
        })
    }
}

/// The JIT's line table of each compiled method, by index into [`Seen::compiled`] (Mono's debug mode
/// only): (native offset, IL offset), sorted. `None`: compiled again with another table, or
/// first without one (AOT code) and then with one — a sample's native offset could belong to
/// either code, so it is mapped by neither (no line rather than a wrong one).
type LineTables = sampling::AddressMap<u32, Option<Arc<[(u32, u32)]>>>;

fn line_tables<R>(f: impl FnOnce(&mut LineTables) -> R) -> R {
    f(SEEN.line_tables.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert_with(Default::default))
}

/// Whether method `index`, noted when its compilation began, just finished its first one: its
/// `table` is then its first (kept, when there is one).
fn first_compilation_done(index: u32, table: Option<&Vec<(u32, u32)>>) -> bool {
    if !SEEN.any_debug.load(Relaxed)
        || !SEEN.noted_before_compiling.lock().unwrap_or_else(|e| e.into_inner()).remove(&index)
    {
        return false;
    }
    if let Some(table) = table {
        line_tables(|tables| tables.insert(index, Some(table.as_slice().into())));
        SEEN.any_line_table.store(true, Release);
    }
    true
}

fn line_table_again(index: u32, table: Option<Vec<(u32, u32)>>) {
    line_tables(|tables| match (tables.get(&index), table) {
        (Some(Some(known)), Some(new)) if **known == *new => {}
        (Some(Some(_)), _) => {
            tables.insert(index, None);
            SEEN.line_tables_withdrawn.fetch_add(1, Release);
        }
        (None, Some(_)) => {
            tables.insert(index, None);
        }
        _ => {}
    });
}

/// The IL offset at `native` in code whose line table is `table`: the last entry at or before
/// it; before the first (the prologue), offset 0 — the method's first line, as on CoreCLR.
fn il_offset_in(table: &[(u32, u32)], native: u32) -> Option<u32> {
    match table.partition_point(|&(at, _)| at <= native).checked_sub(1) {
        Some(at) => table.get(at).map(|&(_, il)| il),
        None => (!table.is_empty()).then_some(0),
    }
}

// --- In the signal handler: the walk. ---------------------------------------------------------

/// Mono's sample callback: runs in its signal handler, on the sampled thread.
struct Walker;

impl SampleHit for Walker {
    fn sample_hit(sample: &Sample<'_>) {
        if !running::enabled() {
            return;
        }
        let ip = sample.ip();
        sampling::record_for_current_thread(|writer| {
            let mut truncated = false;
            let mut first = true;
            sample.walk(|frame| {
                // Where the frame is in its code: a caller's return address, moved back into its
                // call instruction (a caller is at its call site)...
                let mut offset = frame.offset.wrapping_sub(1);
                if first {
                    first = false;
                    // The first managed frame: was the thread interrupted in it, or further in
                    // (native code)?
                    let here = frame.code_start.wrapping_add_signed(frame.offset);
                    if here != ip && ip != 0 {
                        writer.push((TAG_NATIVE << TAG_SHIFT) | (ip as u64 & PAYLOAD));
                    } else {
                        // ...or the interrupted instruction itself.
                        offset = frame.offset;
                    }
                }
                if writer.is_full() {
                    truncated = true;
                    return true;
                }
                writer.push(at_offset(frame_value(frame.method.map_or(0, |m| m.0), frame.code_start), offset));
                false
            });
            if truncated { ring::FLAG_TRUNCATED } else { 0 }
        });
    }
}

/// The benchmark floor: what Mono's sampler costs with a profiler that does nothing.
struct EmptyHit;

impl SampleHit for EmptyHit {
    fn sample_hit(_: &Sample<'_>) {}
}

/// The ring value of a managed frame. Lock-free look-ups only, and none when the drain looks
/// the frame up ([`Seen::deferred`]: by its code, or by its method when its code is not known).
#[inline]
pub(super) fn frame_value(method: usize, code: usize) -> u64 {
    if SEEN.deferred.load(Relaxed) {
        return value_for_drain(method, code);
    }
    let known = if method != 0 { IDS.get(method) } else { None };
    match known.or_else(|| SEEN.code.get(code)) {
        Some(index) => (TAG_COMPILED << TAG_SHIFT) | u64::from(index),
        None if method != 0 => (TAG_METHOD << TAG_SHIFT) | (method as u64 & PAYLOAD),
        None => (TAG_CODE << TAG_SHIFT) | (code as u64 & PAYLOAD),
    }
}

/// The ring value of a managed frame for the drain to look up ([`Seen::deferred`]): its code
/// start, or its method when the walk gives no code (the runtime's own walk, for events).
#[inline]
fn value_for_drain(method: usize, code: usize) -> u64 {
    if code == 0 && method != 0 {
        (TAG_METHOD << TAG_SHIFT) | (method as u64 & PAYLOAD)
    } else {
        (TAG_CODE << TAG_SHIFT) | (code as u64 & PAYLOAD)
    }
}

/// `value` with the frame's native `offset` when it is a compiled method's (else as it is).
#[inline]
fn at_offset(value: u64, offset: isize) -> u64 {
    match u64::try_from(offset) {
        Ok(offset) if value >> TAG_SHIFT == TAG_COMPILED && offset < (PAYLOAD >> OFFSET_SHIFT) => {
            value | ((offset + 1) << OFFSET_SHIFT)
        }
        _ => value,
    }
}

// --- On the drain thread: ids and names, without calling Mono. --------------------------------

/// The methods noted for the drain only ([`Seen::deferred`]), by method and by code start, as
/// the drain took them from [`Notes::code`]. Process-wide, like [`Seen`]; the drain's alone.
#[derive(Default)]
struct Noted {
    by_method: sampling::AddressMap<usize, u32>,
    by_code: sampling::AddressMap<usize, u32>,
    /// Counts the addresses whose method changed (code freed and compiled over), for the drain
    /// to drop what it cached by value.
    replaced: u64,
    /// The list taken in last, emptied: the next one the compiling threads append to (its pages
    /// already touched, its capacity grown).
    spare: Vec<CodeNote>,
}

static NOTED: Mutex<Option<Noted>> = Mutex::new(None);

impl Noted {
    fn by_method(&self, key: usize) -> Option<u32> {
        self.by_method.get(&key).copied()
    }

    fn by_code(&self, key: usize) -> Option<u32> {
        self.by_code.get(&key).copied()
    }

    /// What was noted since the last look, in order.
    fn take_in(&mut self) {
        let spare = std::mem::take(&mut self.spare);
        let mut taken = std::mem::replace(&mut notes().code, spare);
        self.by_method.reserve(taken.len());
        self.by_code.reserve(taken.len());
        for CodeNote { method, code, index, fresh } in taken.drain(..) {
            let index = *self.by_method.entry(method).or_insert(index);
            if code == 0 {
                continue;
            }
            match self.by_code.insert(code, index) {
                Some(before) if before != index && !fresh => {
                    self.by_code.insert(code, before);
                }
                Some(before) if before != index => self.replaced += 1,
                _ => {}
            }
        }
        self.spare = taken;
    }
}

/// The index of the method noted for the drain under `key` (`find`: by method or by code
/// start), taking what was noted since the last call first when it is not known yet; and
/// [`Noted::replaced`]. A method noted twice keeps its first index, as the tables do.
fn noted(find: fn(&Noted, usize) -> Option<u32>, key: usize) -> (Option<u32>, u64) {
    let mut noted = NOTED.lock().unwrap_or_else(|e| e.into_inner());
    let noted = noted.get_or_insert_with(Default::default);
    if let Some(index) = find(noted, key) {
        return (Some(index), noted.replaced);
    }
    noted.take_in();
    (find(noted, key), noted.replaced)
}

/// Takes in what was noted since the last look ([`MonoFrames::begin_pass`]: before a drain pass,
/// so that an address compiled over names its new method); [`Noted::replaced`].
fn catch_up() -> u64 {
    let mut noted = NOTED.lock().unwrap_or_else(|e| e.into_inner());
    let noted = noted.get_or_insert_with(Default::default);
    noted.take_in();
    noted.replaced
}

#[derive(Default)]
struct MonoFrames {
    /// Index into [`Notes::compiled`] → profile method id.
    ids: sampling::AddressMap<u32, u32>,
    /// Tagged values that are not compiled methods → their pseudo-frames.
    others: sampling::AddressMap<u64, Frame>,
    /// Tagged values of methods the walk's tables did not know (every frame, when the drain
    /// looks them up: [`Seen::deferred`]) → their frames.
    late: sampling::AddressMap<u64, Frame>,
    /// [`Noted::replaced`] when `late` was last checked.
    replaced: u64,
    native: sampling::NativeNames,
    /// Image files read so far, by [`Seen::images`] index (`None`: unreadable).
    files: sampling::AddressMap<u32, Option<sampling::module_files::ModuleFile>>,
    /// Line tables looked up so far, by index into [`Seen::compiled`], and [`Seen::line_tables_withdrawn`]
    /// when they were.
    line_tables: LineTables,
    withdrawn: u64,
    /// `MonoMethod*` → the `[jit] …` frame of samples taken while it was compiled.
    compiling: sampling::AddressMap<usize, u32>,
}

impl MonoFrames {
    /// [`noted`], dropping the values cached when an address changed methods.
    fn noted(&mut self, find: fn(&Noted, usize) -> Option<u32>, key: usize) -> Option<u32> {
        let (index, replaced) = noted(find, key);
        self.replaced_now(replaced);
        index
    }

    fn replaced_now(&mut self, replaced: u64) {
        if replaced != self.replaced {
            self.replaced = replaced;
            self.late.clear();
        }
    }

    fn compiled(&mut self, index: u32) -> Frame {
        if let Some(&method) = self.ids.get(&index) {
            return Frame { method, managed: true };
        }
        let method = match self.names(index) {
            Some((key, names)) => methods().insert(key, names),
            None => methods().pseudo("[unknown managed code]", "", ""),
        };
        self.ids.insert(index, method);
        Frame { method, managed: true }
    }

    /// The key and names of compiled method `index` (from its image's file when it has one).
    fn names(&mut self, index: u32) -> Option<(usize, MethodNames)> {
        let entry = notes().compiled.get(index as usize).cloned();
        let from_file = matches!(entry, Some((_, Names::InFile { .. })));
        let names = match entry? {
            (key, Names::Known(names)) => Some((key, *names)),
            (key, Names::InFile { image, token, type_args }) => self
                .files
                .entry(image)
                .or_insert_with(|| sampling::module_files::ModuleFile::open(&image_path(image)?, None))
                .as_ref()
                .and_then(|file| file.method_names(token))
                .map(|names| (key, MethodNames { type_args, ..names })),
        };
        if names.is_some() {
            sampling::module_files::count(from_file);
        }
        names
    }

    fn other(&mut self, tag: u64, payload: usize) -> Frame {
        let method = match tag {
            TAG_NATIVE => {
                self.native.frame(methods(), payload).unwrap_or_else(|| methods().pseudo("[unknown code]", "", ""))
            }
            // Managed code Mono reported no method for: name its image at least (an AOT image is
            // a shared object, e.g. `mscorlib.dll.so`).
            TAG_CODE => match native_symbol(payload) {
                Some((library, path, _)) => methods().pseudo(&format!("[managed] {library}"), &library, &path),
                None => methods().pseudo("[unknown managed code]", "", ""),
            },
            _ => methods().pseudo("[unknown managed code]", "", ""),
        };
        Frame { method, managed: false }
    }
}

impl FrameResolver for MonoFrames {
    fn raw_addresses(&self) -> bool {
        false
    }

    fn begin_pass(&mut self) {
        if SEEN.deferred.load(Relaxed) {
            let replaced = catch_up();
            self.replaced_now(replaced);
        }
    }

    fn resolve(&mut self, value: usize) -> Frame {
        let value = value as u64;
        let (tag, payload) = (value >> TAG_SHIFT, (value & PAYLOAD) as usize);
        if tag == TAG_COMPILED {
            return self.compiled(payload as u32);
        }
        if let Some(&frame) = self.late.get(&value) {
            return frame;
        }
        // Noted for the drain ([`Seen::deferred`]), or compiled since the sample was taken (the
        // tables are filled before code first runs, so rarely): the same look-ups again.
        let late = match tag {
            TAG_METHOD => IDS.get(payload).or_else(|| self.noted(Noted::by_method, payload)),
            TAG_CODE => SEEN.code.get(payload).or_else(|| self.noted(Noted::by_code, payload)),
            _ => None,
        };
        if let Some(index) = late {
            if self.late.len() > 1 << 20 {
                self.late.clear();
            }
            let frame = self.compiled(index);
            self.late.insert(value, frame);
            return frame;
        }
        if let Some(&frame) = self.others.get(&value) {
            return frame;
        }
        if self.others.len() > 1 << 20 {
            self.others.clear();
        }
        let frame = self.other(tag, payload);
        self.others.insert(value, frame);
        frame
    }

    /// From the native offset the walk wrote beside a compiled method, through the method's
    /// line table (debug mode only).
    fn il_offset(&mut self, value: usize) -> Option<u32> {
        let value = value as u64;
        if value >> TAG_SHIFT != TAG_COMPILED || !SEEN.any_line_table.load(Acquire) {
            return None;
        }
        let native = u32::try_from((value & PAYLOAD) >> OFFSET_SHIFT).ok()?.checked_sub(1)?;
        let withdrawn = SEEN.line_tables_withdrawn.load(Acquire);
        if withdrawn != self.withdrawn {
            self.line_tables.clear();
            self.withdrawn = withdrawn;
        }
        let index = value as u32;
        let table = self
            .line_tables
            .entry(index)
            .or_insert_with(|| line_tables(|tables| tables.get(&index).cloned().flatten()));
        il_offset_in(table.as_deref()?, native)
    }

    fn truncated(&mut self) -> u32 {
        methods().pseudo("[truncated stack]", "", "")
    }

    /// `method` (a `MonoMethod*`) is named once `jit_done` noted it: a sample drained before
    /// then, or of a compilation that failed, shows it unnamed.
    fn compiling(&mut self, method: usize) -> u32 {
        if let Some(&id) = self.compiling.get(&method) {
            return id;
        }
        let index = IDS.get(method).or_else(|| self.noted(Noted::by_method, method));
        match index.and_then(|index| self.names(index)) {
            Some((key, names)) => {
                let id = methods().compiling(key, names);
                self.compiling.insert(method, id);
                id
            }
            None => sampling::work::unnamed_compilation(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_keep_their_tags() {
        assert_eq!(frame_value(0, 0x7f00_1234_5000) >> TAG_SHIFT, TAG_CODE);
        assert_eq!(frame_value(0x5555_0000_1000, 0x7f00_1234_5000) >> TAG_SHIFT, TAG_METHOD);
        assert_eq!(frame_value(0x5555_0000_1000, 0) & PAYLOAD, 0x5555_0000_1000);
        SEEN.code.insert(0x7f00_dead_0000, 7);
        assert_eq!(frame_value(0, 0x7f00_dead_0000), 7);
        assert_eq!(frame_value(0x5555_0000_2000, 0x7f00_dead_0000), 7);
        // A compiled method's value carries its offset; the others' stay as they are.
        assert_eq!(at_offset(7, 0x40), 7 | (0x41 << OFFSET_SHIFT));
        assert_eq!(at_offset(7, -1), 7);
        let code = frame_value(0, 0x7f00_1234_5000);
        assert_eq!(at_offset(code, 0x40), code);
    }

    #[test]
    fn values_for_the_drain_carry_the_code_else_the_method() {
        assert_eq!(value_for_drain(0x5555_0000_1000, 0x7f00_1234_5000), (TAG_CODE << TAG_SHIFT) | 0x7f00_1234_5000);
        assert_eq!(value_for_drain(0, 0x7f00_1234_5000), (TAG_CODE << TAG_SHIFT) | 0x7f00_1234_5000);
        assert_eq!(value_for_drain(0x5555_0000_1000, 0), (TAG_METHOD << TAG_SHIFT) | 0x5555_0000_1000);
    }

    #[test]
    fn the_drain_finds_what_was_noted_and_an_address_keeps_its_method_until_compiled_over() {
        // Keys no other test notes (the tables are the process's).
        let (a, b, c) = (0x7100_0000_0010, 0x7100_0000_0020, 0x7100_0000_0030);
        let (code, other_code) = (0x7200_0000_1000, 0x7200_0000_2000);
        notes().code.extend([
            CodeNote { method: a, code: 0, index: 9000, fresh: true },
            CodeNote { method: a, code, index: 9000, fresh: true },
            // A P/Invoke reported with its wrapper's code: the address stays the wrapper's.
            CodeNote { method: b, code, index: 9001, fresh: false },
            // A method noted twice keeps its first index.
            CodeNote { method: b, code: other_code, index: 9003, fresh: false },
        ]);
        assert_eq!(noted(Noted::by_code, code).0, Some(9000));
        assert_eq!(noted(Noted::by_method, a).0, Some(9000));
        assert_eq!(noted(Noted::by_method, b).0, Some(9001));
        assert_eq!(noted(Noted::by_code, other_code).0, Some(9001));
        assert_eq!(noted(Noted::by_code, 0x7200_0000_3000).0, None);
        // Freed and compiled over: the address names the new method, and says it changed.
        let before = catch_up();
        notes().code.push(CodeNote { method: c, code, index: 9002, fresh: true });
        assert_eq!(catch_up(), before + 1);
        assert_eq!(noted(Noted::by_code, code), (Some(9002), before + 1));
    }

    #[test]
    fn chunks_keep_every_value_at_its_index() {
        let mut chunks = Chunks::new();
        for i in 0..2 * CHUNK + 5 {
            assert_eq!(chunks.push(i * 3), i);
        }
        assert_eq!(chunks.len(), 2 * CHUNK + 5);
        assert_eq!(chunks.get(CHUNK - 1), Some(&((CHUNK - 1) * 3)));
        assert_eq!(chunks.get(CHUNK), Some(&(CHUNK * 3)));
        assert_eq!(chunks.get(2 * CHUNK + 4), Some(&((2 * CHUNK + 4) * 3)));
        assert_eq!(chunks.get(2 * CHUNK + 5), None);
    }

    #[test]
    fn a_thread_remembers_the_compilations_it_began() {
        begun::push(0x10, 1);
        begun::push(0x20, 2);
        assert_eq!(begun::take(0x10), Some(1));
        assert_eq!(begun::take(0x10), None, "taken once");
        for i in 0..8 {
            begun::push(0x100 + i, i as u32);
        }
        assert_eq!(begun::take(0x20), None, "forgotten after four more");
        assert_eq!(begun::take(0x107), Some(7));
    }

    #[test]
    fn native_offsets_map_to_the_last_il_offset_at_or_before_them() {
        let table = [(10, 0), (24, 3), (24, 5), (60, 12)];
        let at = |native| il_offset_in(&table, native);
        assert_eq!(
            (at(0), at(10), at(23), at(24), at(59), at(60), at(900)),
            (Some(0), Some(0), Some(0), Some(5), Some(5), Some(12), Some(12))
        );
        assert_eq!(il_offset_in(&[], 5), None);
    }

    #[test]
    fn the_drain_reads_offsets_only_through_kept_tables() {
        let mut frames = MonoFrames::default();
        let value = |index: u64, native: isize| at_offset(index, native) as usize;
        line_tables(|tables| {
            tables.insert(900, Some(vec![(0, 0), (16, 4)].into()));
            tables.insert(901, Some(vec![(0, 0), (8, 2)].into()));
        });
        SEEN.any_line_table.store(true, Release);
        assert_eq!(frames.il_offset(value(900, 20)), Some(4));
        assert_eq!(frames.il_offset(value(900, -1)), None, "no offset written");
        assert_eq!(frames.il_offset(value(902, 20)), None, "no table");
        // Compiled again with the same table: kept; with another: withdrawn, copies dropped.
        line_table_again(901, Some(vec![(0, 0), (8, 2)]));
        assert_eq!(frames.il_offset(value(901, 9)), Some(2));
        line_table_again(901, Some(vec![(0, 0), (12, 2)]));
        assert_eq!(frames.il_offset(value(901, 9)), None);
        // First without a table (AOT code), then with one: none.
        line_table_again(903, Some(vec![(0, 0)]));
        assert_eq!(frames.il_offset(value(903, 1)), None);
    }
}
