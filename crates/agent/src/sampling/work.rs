//! What runtime work a thread is doing for the program — compiling a method, collecting garbage —
//! so that the samples taken meanwhile are named after it: `Caller → [jit] Ns.Type.Method`,
//! `Caller → [gc]`, instead of an anonymous run of the runtime's native frames
//! (`docs/SAMPLING.md`, "Runtime work").
//!
//! One word per thread, the *work word*, set and cleared by the backend's callbacks on the
//! thread doing the work (CoreCLR's `JITCompilationStarted`/`Finished`, the collection and
//! suspension callbacks; Mono's `jit_begin`/`jit_done`, its GC events). A compilation starts and
//! ends for every method the JIT compiles (tens of thousands a second at start-up), so each call
//! is a load and a store of an initial-exec TLS word (`tree::tls`); only a compilation nested in
//! another one touches more (the outer ones are kept in the thread's sampling slot, a rare path). The signal
//! handler reads the word with one instruction and stores it in the sample ([`current`]); the
//! drain names it ([`Work`], `drain`), never the handler.
//!
//! The word: the innermost compilation's id (a `FunctionID`, a `MonoMethod*`) in the low 56
//! bits, how many compilations are open on the thread above them, and two bits for a
//! collection: the thread suspended the runtime for one (until the runtime resumes), or runs one.
//! A collection inside a compilation keeps both (`[jit] M → [gc]`); a compilation inside a
//! compilation (a class constructor the JIT ran, which needed compiling itself) keeps the
//! innermost, and the outer one's again once it ends.
//!
//! x86-64 only: elsewhere the handler has no word it may read, and no sample carries work.

/// The innermost compilation's id.
const ID_MASK: u64 = (1 << 56) - 1;
/// Compilations open on the thread: bits 56..=60 (counted up to [`MAX_DEPTH`]).
const DEPTH_SHIFT: u32 = 56;
const DEPTH_MASK: u64 = 0b1_1111 << DEPTH_SHIFT;
const MAX_DEPTH: u64 = 31;
/// The thread suspended the runtime for a collection, and has not resumed it yet.
const SUSPENDING: u64 = 1 << 61;
/// The thread runs a collection.
const COLLECTING: u64 = 1 << 62;

/// What a sample's thread was doing for the runtime, decoded from its word (0: nothing).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Work {
    /// The method being compiled (a `FunctionID`, a `MonoMethod*`: the backend's resolver names it).
    pub compiling: Option<usize>,
    /// A collection (or the suspension of the runtime for one).
    pub collecting: bool,
}

impl Work {
    pub fn decode(word: u64) -> Work {
        let depth = (word & DEPTH_MASK) >> DEPTH_SHIFT;
        let id = (word & ID_MASK) as usize;
        Work { compiling: (depth > 0 && id != 0).then_some(id), collecting: word & (SUSPENDING | COLLECTING) != 0 }
    }

    pub fn is_none(self) -> bool {
        self == Work::default()
    }
}

/// The `[gc]` pseudo-frame: a collection, or the suspension of the runtime for one.
pub fn gc_frame() -> u32 {
    crate::tree::methods::methods().pseudo("[gc]", "", "")
}

/// The `[jit] …` frame of a compilation whose method the backend cannot name.
pub fn unnamed_compilation() -> u32 {
    crate::tree::methods::methods().pseudo("[jit] [unnamed method]", "", "")
}

/// The calling thread's work word, for the sample being taken. Async-signal-safe.
#[inline(always)]
pub fn current() -> u64 {
    word::get() as u64
}

/// The JIT starts compiling `id` on this thread.
#[inline]
pub fn jit_started(id: usize) {
    let w = word::get() as u64;
    let depth = (w & DEPTH_MASK) >> DEPTH_SHIFT;
    if depth > 0 {
        outer::push(depth, w & ID_MASK);
    }
    let depth = (depth + 1).min(MAX_DEPTH);
    set_word(((w & !(ID_MASK | DEPTH_MASK)) | depth << DEPTH_SHIFT | (id as u64 & ID_MASK)) as usize);
}

/// The JIT finished (or gave up) compiling `id` on this thread: the innermost compilation ends.
/// A finish of another method (Mono reports some compilations twice, and some precompiled
/// methods without a start) or with none open changes nothing.
#[inline]
pub fn jit_finished(id: usize) {
    let w = word::get() as u64;
    let depth = (w & DEPTH_MASK) >> DEPTH_SHIFT;
    let innermost = w & ID_MASK;
    // (An innermost id not kept, 0, matches any: outer ones are kept up to
    // `slots::OUTER_COMPILATIONS` deep; nesting deeper than that is unheard of, and the
    // compilations in between are counted, unnamed while they are the innermost.)
    if depth == 0 || (innermost != 0 && innermost != id as u64 & ID_MASK) {
        return;
    }
    let rest = w & !(ID_MASK | DEPTH_MASK);
    let next = match depth {
        1 => rest,
        _ => rest | (depth - 1) << DEPTH_SHIFT | outer::pop(depth - 1),
    };
    set_word(next as usize);
}

/// This thread suspends the runtime for a collection (`true`), or the runtime resumed
/// (`false`: the collection this thread ran, if any, is over too — a background collection this
/// thread started goes on without it).
pub fn suspended_for_gc(suspended: bool) {
    let w = word::get() as u64;
    let next = if suspended { w | SUSPENDING } else { w & !(SUSPENDING | COLLECTING) };
    if next != w {
        set_word(next as usize);
    }
}

/// This thread starts (`true`) or finished (`false`) running a collection.
pub fn collecting(running: bool) {
    let w = word::get() as u64;
    let next = if running { w | COLLECTING } else { w & !COLLECTING };
    if next != w {
        set_word(next as usize);
    }
}

/// Sets the calling thread's work word; the kernel's sampler, which reads no word on the thread,
/// logs the change (`kernel::work_changed`).
#[inline(always)]
fn set_word(value: usize) {
    word::set(value);
    super::kernel::work_changed(value as u64);
}

/// The ids of the compilations a nested one interrupted, by depth, in the thread's sampling slot
/// (not in thread-local storage: an attached agent takes its TLS block from the small static
/// reserve glibc keeps for libraries loaded after start-up). Touched only when compilations
/// nest.
mod outer {
    pub fn push(depth: u64, id: u64) {
        super::super::slots::keep_outer_compilation(depth, id);
    }

    pub fn pop(depth: u64) -> u64 {
        super::super::slots::outer_compilation(depth)
    }
}

/// The work word: an initial-exec TLS word (`tree::tls`), which a signal handler may read.
#[cfg(target_arch = "x86_64")]
mod word {
    crate::tree::tls::tls_word!("sonde_runtime_work");
}

/// Elsewhere: no word the handler could read; no sample carries work.
#[cfg(not(target_arch = "x86_64"))]
mod word {
    pub fn get() -> usize {
        0
    }

    pub fn set(_value: usize) {}
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;

    use crate::sampling::slots;
    use crate::tree::threads;

    const KEPT: u64 = slots::OUTER_COMPILATIONS as u64;

    /// Runs `f` on a fresh thread (the word is the thread's own) with a sampling slot (where the
    /// outer compilations are kept).
    fn on_a_thread(f: impl FnOnce() + Send + 'static) {
        let _serial = slots::TESTS.lock().unwrap_or_else(|e| e.into_inner());
        std::thread::spawn(|| {
            let tid = threads::gettid();
            let (index, _) = slots::claim(tid).expect("a slot");
            slots::activate(index, tid, threads::state_for(tid));
            f();
            slots::unregister(tid);
        })
        .join()
        .unwrap();
        slots::release_ended();
    }

    #[test]
    fn compilations_nest_and_unwind_to_the_outer_one() {
        on_a_thread(|| {
            assert!(Work::decode(current()).is_none());
            jit_started(0x1000);
            assert_eq!(Work::decode(current()).compiling, Some(0x1000));
            jit_started(0x2000);
            jit_started(0x3000);
            assert_eq!(Work::decode(current()).compiling, Some(0x3000), "the innermost");
            // A method finished that is not the innermost (Mono: a precompiled method, reported
            // without a start) ends nothing.
            jit_finished(0x4000);
            assert_eq!(Work::decode(current()).compiling, Some(0x3000));
            jit_finished(0x3000);
            assert_eq!(Work::decode(current()).compiling, Some(0x2000));
            jit_finished(0x2000);
            assert_eq!(Work::decode(current()).compiling, Some(0x1000));
            jit_finished(0x1000);
            assert!(Work::decode(current()).is_none());
            // A finish with nothing open (Mono reports some twice) changes nothing.
            jit_finished(0x1000);
            assert_eq!(current(), 0);
        });
    }

    #[test]
    fn nesting_past_the_ids_kept_still_counts() {
        on_a_thread(|| {
            let deep = KEPT as usize + 3;
            for i in 1..=deep {
                jit_started(i << 4);
            }
            assert_eq!(Work::decode(current()).compiling, Some(deep << 4));
            jit_finished(deep << 4);
            assert_eq!(Work::decode(current()).compiling, None, "an outer id not kept: unnamed");
            for i in (1..deep).rev() {
                jit_finished(i << 4);
            }
            assert_eq!(current(), 0, "balanced starts and finishes leave the word clear");
            // The outermost ones are exact.
            for i in 1..=deep {
                jit_started(i << 4);
            }
            for i in (3..=deep).rev() {
                jit_finished(i << 4);
            }
            assert_eq!(Work::decode(current()).compiling, Some(2 << 4));
            jit_finished(2 << 4);
            assert_eq!(Work::decode(current()).compiling, Some(1 << 4));
            jit_finished(1 << 4);
            assert_eq!(current(), 0);
        });
    }

    #[test]
    fn a_collection_inside_a_compilation_keeps_both_and_a_resume_ends_it() {
        on_a_thread(|| {
            jit_started(0x1000);
            suspended_for_gc(true);
            collecting(true);
            assert_eq!(Work::decode(current()), Work { compiling: Some(0x1000), collecting: true });
            collecting(false);
            assert!(Work::decode(current()).collecting, "still suspended: the restart is the collection's too");
            suspended_for_gc(false);
            assert_eq!(Work::decode(current()), Work { compiling: Some(0x1000), collecting: false });
            // A background collection started here goes on elsewhere: the resume ends it here.
            collecting(true);
            suspended_for_gc(false);
            assert!(!Work::decode(current()).collecting);
            jit_finished(0x1000);
            assert_eq!(current(), 0);
        });
    }
}
