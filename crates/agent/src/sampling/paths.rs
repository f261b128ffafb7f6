//! From a sample's values to a path of method ids, root first: each value resolved by the
//! backend's [`FrameResolver`], a run of native frames folded into one, recursion kept, the
//! runtime's work (`[jit]`, `[gc]`) put where it ran. The drain (samples, event stacks, walks)
//! and the async stitching use these; no state of their own.

use super::lines::NONE;
use super::work::Work;

/// A resolved stack frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame {
    pub method: u32,
    /// Managed code (a real method), as opposed to native code, stubs or markers.
    pub managed: bool,
}

/// Turns an instruction pointer into a method id (runtime-specific: `coreclr::frames`, `mono::sampling`).
pub trait FrameResolver: Send {
    /// `ip` is the interrupted instruction for the leaf, a return address minus one for callers.
    /// (With [`raw_addresses`](Self::raw_addresses) false, `ip` is the value the sampler wrote,
    /// unchanged.)
    fn resolve(&mut self, ip: usize) -> Frame;
    /// True when the sampled values are instruction pointers and return addresses (Sonde's own
    /// handler); false when an external sampler wrote values of its own (method ids, tagged
    /// pointers) that must reach [`resolve`](Self::resolve) as they are.
    fn raw_addresses(&self) -> bool {
        true
    }
    /// True when the call that returns to `return_address` is a call into the runtime itself (a
    /// JIT helper such as the on-stack-replacement patchpoint) rather than to managed code: a
    /// managed frame "called" from there continues the caller's invocation (the OSR version of
    /// the same method), it is not a recursive call.
    fn calls_runtime(&mut self, _return_address: usize) -> bool {
        false
    }
    /// The IL offset the managed code at `ip` (as for [`resolve`](Self::resolve): with
    /// [`raw_addresses`](Self::raw_addresses) false, the sampler's value) was compiled from,
    /// where the runtime maps it back: what the controller turns into a source line.
    fn il_offset(&mut self, _ip: usize) -> Option<u32> {
        None
    }
    /// A drain pass begins: what the backend learnt since the last one can be taken in before
    /// any of the pass's values is resolved.
    fn begin_pass(&mut self) {}
    /// The pseudo-method for the root of a stack cut short by [`super::ring::MAX_FRAMES`].
    fn truncated(&mut self) -> u32;
    /// The method of a function the runtime named itself, in a stack walk of its own
    /// (`drain::record_walk`); `None` where the runtime has no such walk.
    fn function(&mut self, _function: usize) -> Option<u32> {
        None
    }
    /// The `[jit] …` pseudo-method of the method the JIT was compiling (`id` as the backend's
    /// callbacks put it in the work word: `sampling::work`).
    fn compiling(&mut self, _id: usize) -> u32 {
        super::work::unnamed_compilation()
    }
}

/// The method path, root first, of an event's stack, without the runtime's own frames inside the
/// innermost managed one (the allocator, the lock, the exception dispatch are not the program's
/// code; a stack of native frames only keeps them). Recursion kept, native runs folded.
pub(super) fn event_path(frames: &[u64], truncated: bool, resolver: &mut dyn FrameResolver, path: &mut Vec<u32>) {
    let resolved: Vec<Frame> = frames.iter().map(|&value| resolver.resolve(value as usize)).collect();
    let skip = resolved.iter().position(|f| f.managed).unwrap_or(0);
    let marker = truncated.then(|| resolver.truncated());
    fold_path(marker, resolved[skip..].iter().rev().copied(), path);
}

/// One frame of a stack the runtime walked: a managed function with its instruction pointer,
/// or (`function` 0) a run of native frames at `ip` (0 when the runtime does not say where).
#[derive(Debug, Clone, Copy)]
pub struct WalkedFrame {
    pub function: usize,
    pub ip: usize,
}

/// The method path, root first, of a runtime walk (`frames` innermost first): managed frames by
/// the function the runtime named, native runs by address (a run without an address left out),
/// folded as [`fold_path`] does.
pub(super) fn walk_path(
    frames: &[WalkedFrame],
    truncated: bool,
    resolver: &mut dyn FrameResolver,
    path: &mut Vec<u32>,
) {
    let marker = truncated.then(|| resolver.truncated());
    let resolved = frames.iter().rev().filter_map(|frame| match resolver.function(frame.function) {
        Some(method) => Some(Frame { method, managed: true }),
        None if frame.ip == 0 => None,
        None => Some(resolver.resolve(frame.ip)),
    });
    fold_path(marker, resolved, path);
}

/// [`stack_path`] of a stack walked at an event (`walk_this_thread`: every value a return
/// address already inside its call).
pub(super) fn event_stack_path(
    frames: &[u64],
    resolver: &mut dyn FrameResolver,
    path: &mut Vec<u32>,
    offsets: &mut Vec<u32>,
) {
    stack_path(frames, false, true, resolver, path, offsets);
}

/// The method path, root first, of one raw sample (`frames`: leaf IP, then return addresses;
/// with `adjusted`, return addresses all already moved inside their calls), and beside it each
/// frame's IL offset (`lines::NONE` where there is none). Returns where the sample's runtime
/// work goes in the path ([`RuntimeRun`]).
pub(super) fn stack_path(
    frames: &[u64],
    truncated: bool,
    adjusted: bool,
    resolver: &mut dyn FrameResolver,
    path: &mut Vec<u32>,
    offsets: &mut Vec<u32>,
) -> Option<usize> {
    path.clear();
    offsets.clear();
    if truncated {
        path.push(resolver.truncated());
        offsets.push(NONE);
    }
    let mut run = RuntimeRun::default();
    let mut last: Option<Frame> = None;
    for (depth, &ip) in frames.iter().enumerate().rev() {
        // Callers' return addresses point after the call: look up ip - 1.
        let ip = if depth == 0 || adjusted { ip as usize } else { (ip as usize).saturating_sub(1) };
        let frame = resolver.resolve(ip);
        if last.is_some_and(|l| l.method == frame.method) {
            // A run of the same native code (no symbols to tell functions apart) is one frame; so
            // is a method continuing in its OSR version. Real recursion stays.
            let outer_return = frames.get(depth + 1).map_or(0, |&r| r as usize + usize::from(adjusted));
            if !frame.managed {
                continue;
            }
            if resolver.calls_runtime(outer_return) {
                // The OSR version runs where the caller's patchpoint left off: its offset is the
                // one that says where the method is.
                if let (Some(last), Some(offset)) = (offsets.last_mut(), resolver.il_offset(ip)) {
                    *last = offset;
                }
                continue;
            }
        }
        run.push(frame, path.len());
        path.push(frame.method);
        offsets.push(if frame.managed { resolver.il_offset(ip).unwrap_or(NONE) } else { NONE });
        last = Some(frame);
    }
    run.at(path.len())
}

/// [`stack_path`] for values an external sampler wrote (not addresses: no `ip - 1`, no call
/// decoding): root first, a run of the same non-managed pseudo-frame collapsed, recursion kept;
/// each managed frame's IL offset beside it, as the resolver reads it from the value (the
/// sampler wrote where in its code the frame was). Returns where runtime work goes in the path
/// ([`RuntimeRun`]).
pub(super) fn resolved_path(
    frames: &[u64],
    truncated: bool,
    resolver: &mut dyn FrameResolver,
    path: &mut Vec<u32>,
    offsets: &mut Vec<u32>,
) -> Option<usize> {
    let marker = truncated.then(|| resolver.truncated());
    let resolved = frames.iter().rev().map(|&value| {
        let frame = resolver.resolve(value as usize);
        let offset = if frame.managed { resolver.il_offset(value as usize).unwrap_or(NONE) } else { NONE };
        (frame, offset)
    });
    fold(marker, resolved, path, offsets)
}

/// `frames` (root first) into `path`, after the truncation `marker` if any: a run of the same
/// pseudo-frame that is not managed code (one native library) is one frame; recursion stays.
/// Returns where runtime work goes in the path ([`RuntimeRun`]).
fn fold_path(marker: Option<u32>, frames: impl Iterator<Item = Frame>, path: &mut Vec<u32>) -> Option<usize> {
    fold(marker, frames.map(|frame| (frame, NONE)), path, &mut Vec::new())
}

/// [`fold_path`] with each kept frame's IL offset (`lines::NONE`: none) into `offsets`.
fn fold(
    marker: Option<u32>,
    frames: impl Iterator<Item = (Frame, u32)>,
    path: &mut Vec<u32>,
    offsets: &mut Vec<u32>,
) -> Option<usize> {
    path.clear();
    offsets.clear();
    if let Some(marker) = marker {
        path.push(marker);
        offsets.push(NONE);
    }
    let mut run = RuntimeRun::default();
    let mut last: Option<Frame> = None;
    for (frame, offset) in frames {
        if !frame.managed && last.is_some_and(|l| l.method == frame.method) {
            continue;
        }
        run.push(frame, path.len());
        path.push(frame.method);
        offsets.push(offset);
        last = Some(frame);
    }
    run.at(path.len())
}

/// Where a sample's runtime work (`sampling::work`) goes in its path, found while the path is
/// built root first: just above the innermost run of frames that are not managed code below a
/// managed one — the runtime's frames the managed caller entered (a stub, the runtime, the
/// JIT), so that the work reads `Caller → [jit] M → libcoreclr → libclrjit …`. A stack with no
/// managed frame (a thread the runtime runs: the tiered compiler's, a collection's) gets it at the
/// leaf, below the thread's native frames. A stack whose leaf run is managed code with nothing
/// of the runtime below any managed frame gets none: a thread running only managed code is not
/// inside the runtime, whatever its word says.
#[derive(Default)]
struct RuntimeRun {
    /// The index of the first frame of the innermost runtime run below a managed frame.
    start: Option<usize>,
    managed_seen: bool,
    native_seen: bool,
    last_managed: bool,
}

impl RuntimeRun {
    /// `frame` goes to `path[index]` (marker frames included: they are not managed code).
    fn push(&mut self, frame: Frame, index: usize) {
        if frame.managed {
            self.managed_seen = true;
        } else {
            self.native_seen = true;
            if self.last_managed {
                self.start = Some(index);
            }
        }
        self.last_managed = frame.managed;
    }

    /// The index, in a path of `len` frames.
    fn at(&self, len: usize) -> Option<usize> {
        match (self.start, self.managed_seen) {
            (Some(at), _) => Some(at),
            (None, false) if self.native_seen => Some(len),
            _ => None,
        }
    }
}

/// The work frames of one drain: `[jit] …` by the resolver, `[gc]` looked up once.
#[derive(Default)]
pub(super) struct WorkFrames {
    gc: Option<u32>,
}

impl WorkFrames {
    /// Puts `work`'s frames into `path` at `at` (the compilation outside the collection), with no
    /// IL offset in `offsets` (kept in step when it is).
    pub(super) fn insert(
        &mut self,
        work: Work,
        at: usize,
        resolver: &mut dyn FrameResolver,
        path: &mut Vec<u32>,
        offsets: &mut Vec<u32>,
    ) {
        if work.is_none() || at > path.len() {
            return;
        }
        let mut frames = [0u32; 2];
        let mut n = 0;
        if let Some(id) = work.compiling {
            frames[n] = resolver.compiling(id);
            n += 1;
        }
        if work.collecting {
            frames[n] = *self.gc.get_or_insert_with(super::work::gc_frame);
            n += 1;
        }
        let in_step = offsets.len() == path.len();
        path.splice(at..at, frames[..n].iter().copied());
        if in_step {
            offsets.splice(at..at, std::iter::repeat_n(NONE, n));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Addresses 100..199 are method 1, 200..299 method 2 (managed); 900.. native library 9.
    /// A return address of 555 is after a runtime-helper call.
    struct Fake;
    impl FrameResolver for Fake {
        fn resolve(&mut self, ip: usize) -> Frame {
            Frame { method: (ip / 100) as u32, managed: ip < 900 }
        }
        fn truncated(&mut self) -> u32 {
            77
        }
        /// Managed code at `ip` is at IL offset `ip % 100`.
        fn il_offset(&mut self, ip: usize) -> Option<u32> {
            (ip < 900).then_some(ip as u32 % 100)
        }
        fn calls_runtime(&mut self, return_address: usize) -> bool {
            return_address == 555
        }
        /// Functions 1..=99 are methods 1001..=1099.
        fn function(&mut self, function: usize) -> Option<u32> {
            (function != 0).then_some(1000 + function as u32)
        }
        /// Compiling function `id`: method 500 + `id`.
        fn compiling(&mut self, id: usize) -> u32 {
            500 + id as u32
        }
    }

    /// The path of a raw sample (leaf first) taken while the thread did `work`.
    fn path_with_work(frames: &[u64], work: Work) -> Vec<u32> {
        let (mut path, mut offsets) = (Vec::new(), Vec::new());
        let at = stack_path(frames, false, false, &mut Fake, &mut path, &mut offsets);
        if let Some(at) = at {
            WorkFrames::default().insert(work, at, &mut Fake, &mut path, &mut offsets);
        }
        assert_eq!(path.len(), offsets.len());
        path
    }

    #[test]
    fn runtime_work_goes_between_the_managed_caller_and_the_runtime_s_frames() {
        let jit = Work { compiling: Some(7), collecting: false };
        // Method 2 calls method 1, which entered native code 9 (two frames, one run).
        assert_eq!(path_with_work(&[950, 960, 150, 250], jit), vec![2, 1, 507, 9]);
        let gc = super::super::work::gc_frame();
        let both = Work { compiling: Some(7), collecting: true };
        assert_eq!(path_with_work(&[950, 150, 250], both), vec![2, 1, 507, gc, 9], "the collection inside");
        // The innermost runtime run below a managed frame, under native code at the root.
        assert_eq!(path_with_work(&[950, 150, 960], jit), vec![9, 1, 507, 9]);
        // Managed code the runtime ran inside the work (a class constructor the JIT ran).
        assert_eq!(path_with_work(&[150, 950, 250], jit), vec![2, 507, 9, 1]);
        // A thread without managed frames: below its native frames.
        assert_eq!(path_with_work(&[950, 960], jit), vec![9, 507]);
        // Managed code only (whatever the word says, the thread is not in the runtime), or no
        // work: nothing added.
        assert_eq!(path_with_work(&[150, 250], jit), vec![2, 1]);
        assert_eq!(path_with_work(&[950, 150, 250], Work::default()), vec![2, 1, 9]);
    }

    #[test]
    fn runtime_work_finds_its_place_in_an_external_sampler_s_values() {
        // Mono's walk: managed frames, with the interrupted native address first when the thread
        // was outside managed code.
        let mut path = Vec::new();
        let at = resolved_path(&[950, 150, 250], false, &mut Fake, &mut path, &mut Vec::new());
        assert_eq!(path, vec![2, 1, 9]);
        assert_eq!(at, Some(2));
        let at = resolved_path(&[150, 250], false, &mut Fake, &mut path, &mut Vec::new());
        assert_eq!(at, None);
    }

    #[test]
    fn walked_stacks_name_functions_and_fold_native_runs() {
        let f = |function, ip| WalkedFrame { function, ip };
        let mut path = Vec::new();
        // Innermost first: function 2 (recursing), function 1, a native run at 950, another
        // native run without an address, the native root at 960 (same library as 950).
        let frames = [f(2, 0), f(2, 0), f(1, 0), f(0, 950), f(0, 0), f(0, 960)];
        walk_path(&frames, false, &mut Fake, &mut path);
        assert_eq!(path, vec![9, 1001, 1002, 1002]);
        walk_path(&frames[..1], true, &mut Fake, &mut path);
        assert_eq!(path, vec![77, 1002]);
    }

    fn path(frames: &[u64], truncated: bool) -> Vec<u32> {
        let (mut path, mut offsets) = (Vec::new(), Vec::new());
        stack_path(frames, truncated, false, &mut Fake, &mut path, &mut offsets);
        assert_eq!(path.len(), offsets.len());
        path
    }

    #[test]
    fn stacks_come_out_root_first_with_return_addresses_adjusted() {
        // leaf ip 150 (method 1), called from method 2 (return address 201 → 200)
        assert_eq!(path(&[150, 201], false), vec![2, 1]);
        // a return address at the start of a range belongs to the previous function (ip - 1)
        assert_eq!(path(&[150, 200], false), vec![1, 1]);
    }

    #[test]
    fn external_values_pass_through_unchanged() {
        /// Values under 1000 are managed methods (value % 100), whose IL offset is value / 100
        /// when that is not 0; 1000 and over are native code.
        struct Ids;
        impl FrameResolver for Ids {
            fn resolve(&mut self, value: usize) -> Frame {
                Frame { method: (value % 100) as u32, managed: value < 1000 }
            }
            fn raw_addresses(&self) -> bool {
                false
            }
            fn il_offset(&mut self, value: usize) -> Option<u32> {
                (100..1000).contains(&value).then_some(value as u32 / 100)
            }
            fn truncated(&mut self) -> u32 {
                77
            }
        }
        use super::super::lines::NONE;
        let (mut path, mut offsets) = (Vec::new(), Vec::new());
        // Leaf first in, root first out; no `ip - 1`; recursion kept; a run of one pseudo-frame
        // (not managed) collapsed; each managed frame with its own offset.
        resolved_path(&[303, 503, 2, 1009, 1009, 201], true, &mut Ids, &mut path, &mut offsets);
        assert_eq!(path, vec![77, 1, 9, 2, 3, 3]);
        assert_eq!(offsets, vec![NONE, 2, NONE, NONE, 5, 3]);
    }

    #[test]
    fn each_frame_has_its_il_offset_and_an_osr_frame_its_own() {
        let offsets = |frames: &[u64], truncated| {
            let (mut path, mut offsets) = (Vec::new(), Vec::new());
            stack_path(frames, truncated, false, &mut Fake, &mut path, &mut offsets);
            offsets
        };
        use super::super::lines::NONE;
        // leaf 150 (1@50) called from 2@(201 - 1), under a native root: none for the native frame
        assert_eq!(offsets(&[150, 201, 950], false), vec![NONE, 0, 50]);
        // method 5 continuing in its OSR version: where the OSR code is, not the patchpoint
        assert_eq!(offsets(&[520, 555], false), vec![20]);
        assert_eq!(offsets(&[150], true), vec![NONE, 50]);
    }

    #[test]
    fn recursion_stays_native_runs_and_osr_collapse() {
        assert_eq!(path(&[150, 160, 170, 250], false), vec![2, 1, 1, 1]);
        assert_eq!(path(&[950, 960, 970, 150], false), vec![1, 9]);
        // method 5 at the root called through a runtime helper (return address 555): OSR.
        assert_eq!(path(&[520, 555], false), vec![5]);
        assert_eq!(path(&[150], true), vec![77, 1]);
    }
}
