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
//!   managed frames, leaf first. Each becomes one value in the ring: the method's index in the
//!   table of compiled methods (below), found through lock-free tables by `MonoMethod*` or, for
//!   AOT code (which the async-safe walk cannot map to a method) and shared generic code, by the
//!   code's start address; failing both, the `MonoMethod*` or the code address, tagged. When the
//!   thread was interrupted outside the leaf managed frame (native code: a system call, the
//!   runtime), the interrupted address comes first, tagged, so the drain can name the native code
//!   as the CoreCLR backend does. No allocation, lock, Mono call other than the walk, or panic
//!   path. A stack with no managed frame is not recorded (counted as `no_managed_frames`).
//! * **Names** are gathered on the compiling thread (`jit_done`, attached to the runtime, for
//!   every method Mono compiles or loads from an AOT image), never in the signal handler and never
//!   on the drain thread, which is not attached to the runtime (a Mono call there aborts the
//!   process). The drain turns an index into a profile method id the first time a sample shows it,
//!   so the profile lists sampled methods only, as on CoreCLR.

use super::ids::MethodIds;
use super::metadata::{self, MethodNames};
use super::{BACKEND, ENABLED, IDS, guarded, methods};
use crate::sampling::native_symbol;
use crate::sampling::{self, Frame, FrameResolver, ring};
use sonde_mono_sys::*;
use sonde_protocol::MethodRecord;
use std::collections::HashMap;
use std::ffi::{c_int, c_void};
use std::sync::Mutex;
use std::sync::atomic::Ordering::Relaxed;

/// Ring values: the top two bits say what the rest is.
const TAG_SHIFT: u32 = 62;
/// An index into [`COMPILED`].
const TAG_COMPILED: u64 = 0;
/// A `MonoMethod*` that no compiled-method table knows.
const TAG_METHOD: u64 = 1;
/// The start of managed code that no compiled-method table knows (AOT code, typically).
const TAG_CODE: u64 = 2;
/// The interrupted instruction, outside managed code (the leaf of a thread in native code).
const TAG_NATIVE: u64 = 3;
const PAYLOAD: u64 = (1 << TAG_SHIFT) - 1;

/// Every method Mono compiled (or loaded precompiled), named at that moment: `(MonoMethod*,
/// names)`, indexed by the values [`IDS`] (by method) and [`CODE`] (by code start) hold in
/// sampling mode.
static COMPILED: Mutex<Vec<(usize, MethodNames)>> = Mutex::new(Vec::new());
/// Code start → index into [`COMPILED`].
static CODE: MethodIds = MethodIds::new();

/// Asks Mono for samples at `freq` Hz and registers the callbacks. Must run in the init function.
/// `empty`: a benchmark floor (`SONDE_BENCH_HOOKS=empty`) — Mono's sampler with a sample
/// callback that returns at once, so nothing is recorded.
pub fn register(api: &MonoApi, handle: MonoProfilerHandle, freq: u32, empty: bool) -> Result<(), String> {
    let hit: MonoProfilerSampleHitCallback = if empty { empty_sample_hit } else { sample_hit };
    // SAFETY: Mono's profiler API, from the init function as `enable_sampling` requires, with
    // callbacks of the header's types.
    unsafe {
        (api.mono_profiler_set_jit_done_callback)(handle, Some(jit_done));
        (api.mono_profiler_set_sample_hit_callback)(handle, Some(hit));
        if (api.mono_profiler_enable_sampling)(handle) == 0 {
            return Err("Mono refused to enable sampling".into());
        }
        if (api.mono_profiler_set_sample_mode)(handle, MONO_PROFILER_SAMPLE_MODE_REAL, freq) == 0 {
            return Err("another profiler controls Mono's sampling parameters".into());
        }
    }
    Ok(())
}

/// The resolver the drain uses on Mono.
pub fn resolver() -> Box<dyn FrameResolver> {
    Box::new(MonoFrames::default())
}

// --- On the compiling thread: names. ----------------------------------------------------------

unsafe extern "C" fn jit_done(_prof: *mut MonoProfiler, method: *mut MonoMethod, jinfo: *mut MonoJitInfo) {
    guarded((), || compiled(method, jinfo));
}

fn compiled(method: *mut MonoMethod, jinfo: *mut MonoJitInfo) {
    let Some(backend) = BACKEND.get() else { return };
    let key = method as usize;
    let code = if jinfo.is_null() {
        0
    } else {
        // SAFETY: the jit info Mono passed to this callback, which is still running.
        unsafe { (backend.api.mono_jit_info_get_code_start)(jinfo) as usize }
    };
    let index = match IDS.get(key) {
        Some(index) => index, // compiled again (another domain, a recompilation): new code
        None => {
            // SAFETY: Mono passed `method` to this callback, on the compiling (attached) thread.
            let names = unsafe {
                metadata::describe(&backend.api, method).or_else(|| metadata::describe_wrapper(&backend.api, method))
            };
            let Some(names) = names else { return };
            let mut compiled = COMPILED.lock().unwrap_or_else(|e| e.into_inner());
            let Ok(index) = u32::try_from(compiled.len()) else { return };
            compiled.push((key, names));
            drop(compiled);
            if !IDS.insert(key, index) {
                return;
            }
            index
        }
    };
    if code != 0 {
        CODE.insert(code, index);
    }
}

// --- In the signal handler: the walk. ---------------------------------------------------------

struct Walk<'w, 'r> {
    writer: &'w mut ring::Writer<'r>,
    /// The interrupted instruction.
    ip: usize,
    truncated: bool,
}

/// Mono's sample callback: runs in its signal handler, on the sampled thread.
unsafe extern "C" fn sample_hit(_prof: *mut MonoProfiler, ip: *const u8, context: *const c_void) {
    if !ENABLED.load(Relaxed) || context.is_null() {
        return;
    }
    let Some(backend) = BACKEND.get() else { return };
    let walk_stack = backend.api.mono_stack_walk_async_safe;
    sampling::record_for_current_thread(|writer| {
        let mut walk = Walk { writer, ip: ip as usize, truncated: false };
        // SAFETY: Mono's async-safe walk, called from its own signal handler with the signal's
        // context, as documented; `walk` outlives the call and is only used by `walk_frame`.
        unsafe { walk_stack(walk_frame, context.cast_mut(), (&raw mut walk).cast()) };
        if walk.truncated { ring::FLAG_TRUNCATED } else { 0 }
    });
}

/// The benchmark floor: what Mono's sampler costs with a profiler that does nothing.
unsafe extern "C" fn empty_sample_hit(_prof: *mut MonoProfiler, _ip: *const u8, _context: *const c_void) {}

/// One managed frame, leaf first. Returns true (stop) when the sample is full.
unsafe extern "C" fn walk_frame(
    method: *mut MonoMethod,
    _domain: *mut MonoDomain,
    base_address: *mut c_void,
    offset: c_int,
    data: *mut c_void,
) -> mono_bool {
    // SAFETY: `data` is the `Walk` that `sample_hit` passed to this walk.
    let walk = unsafe { &mut *data.cast::<Walk>() };
    let code = base_address as usize;
    if walk.writer.is_empty() {
        // The first managed frame: was the thread interrupted in it, or further in (native code)?
        let here = code.wrapping_add(offset as isize as usize);
        if here != walk.ip && walk.ip != 0 {
            walk.writer.push((TAG_NATIVE << TAG_SHIFT) | (walk.ip as u64 & PAYLOAD));
        }
    }
    if walk.writer.is_full() {
        walk.truncated = true;
        return 1;
    }
    walk.writer.push(frame_value(method as usize, code));
    0
}

/// The ring value of a managed frame. Lock-free look-ups only.
#[inline]
fn frame_value(method: usize, code: usize) -> u64 {
    let known = if method != 0 { IDS.get(method) } else { None };
    match known.or_else(|| CODE.get(code)) {
        Some(index) => (TAG_COMPILED << TAG_SHIFT) | u64::from(index),
        None if method != 0 => (TAG_METHOD << TAG_SHIFT) | (method as u64 & PAYLOAD),
        None => (TAG_CODE << TAG_SHIFT) | (code as u64 & PAYLOAD),
    }
}

// --- On the drain thread: ids and names, without calling Mono. --------------------------------

#[derive(Default)]
struct MonoFrames {
    /// Index into COMPILED → profile method id.
    ids: HashMap<u32, u32>,
    /// Tagged values that are not compiled methods → their pseudo-frames.
    others: HashMap<u64, Frame>,
}

impl MonoFrames {
    fn compiled(&mut self, index: u32) -> Frame {
        if let Some(&method) = self.ids.get(&index) {
            return Frame { method, managed: true };
        }
        let entry = COMPILED.lock().unwrap_or_else(|e| e.into_inner()).get(index as usize).cloned();
        let method = match entry {
            Some((key, names)) => methods().insert(key, |id| MethodRecord {
                id,
                name: names.name,
                signature: names.signature,
                assembly: names.assembly,
                module: names.module,
            }),
            None => methods().pseudo("[unknown managed code]", "", ""),
        };
        self.ids.insert(index, method);
        Frame { method, managed: true }
    }

    fn other(&mut self, tag: u64, payload: usize) -> Frame {
        let method = match tag {
            TAG_NATIVE => crate::sampling::native_frame(methods(), payload),
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

    fn resolve(&mut self, value: usize) -> Frame {
        let value = value as u64;
        let (tag, payload) = (value >> TAG_SHIFT, (value & PAYLOAD) as usize);
        if tag == TAG_COMPILED {
            return self.compiled(payload as u32);
        }
        // Compiled since the sample was taken (the tables are filled before code first runs, so
        // rarely): the same look-ups again.
        let late = match tag {
            TAG_METHOD => IDS.get(payload),
            TAG_CODE => CODE.get(payload),
            _ => None,
        };
        if let Some(index) = late {
            return self.compiled(index);
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

    fn truncated(&mut self) -> u32 {
        methods().pseudo("[truncated stack]", "", "")
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
        CODE.insert(0x7f00_dead_0000, 7);
        assert_eq!(frame_value(0, 0x7f00_dead_0000), 7);
        assert_eq!(frame_value(0x5555_0000_2000, 0x7f00_dead_0000), 7);
    }
}
