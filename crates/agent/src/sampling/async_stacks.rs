//! Async call stacks (`sonde record --async`, CoreCLR sampling; docs/ASYNC.md): the samples of
//! the code after an `await` are counted under the stack of the code that awaited, not under the
//! thread pool's dispatch loop that happened to resume it.
//!
//! The runtime's task events (`System.Threading.Tasks.TplEventSource`, through the profiler's
//! EventPipe session, on the thread that raises each one) say when a continuation is registered
//! and when it runs:
//! * **await** ([`awaiting`]): `TaskWaitBegin` (an `await` of a task that is not finished) or
//!   `AwaitTaskContinuationScheduled` (`await Task.Yield()` and other queued continuations), on
//!   the awaiting thread. Its stack, walked there (frame pointers, as for allocation events),
//!   becomes a *context*: the logical stack of the awaiting code. When that code is itself a
//!   continuation, its context's parent is the one it runs in.
//! * **resume** ([`resumed`]): `TaskWaitEnd` / `TaskWaitContinuationStarted`, on the thread
//!   that runs the continuation, just before it does: the context becomes the thread's current
//!   one (a stack of them: a continuation that completes a task runs the next one inside it).
//! * **done** ([`completed`]): `TaskWaitContinuationComplete`, once it returned.
//!
//! The signal handler copies the thread's current context (an atomic in its slot) into each
//! sample; the drain ([`Stitcher`]) turns the context's frames into a method path once, and puts
//! a sample taken in a continuation under it: the path's frames up to the innermost continuation
//! wrapper (the runtime's `<OutputWaitEtwEvents>b__` / `<OutputCorrelationEtwEvent>b__`
//! lambdas, whose presence on the stack tells where the resumed code begins) are replaced by the
//! context's path, which ends just outside the awaiting state machine's `MoveNext`. So a stack
//! reads `Main → HandleRequestAsync → LoadOrderAsync → ReadAsync → work` on whichever thread the
//! work ran.
//!
//! Contexts are freed by the drain after their continuation completed (every sample taken in it
//! was written before, so the drain that frees it has read them); a context whose continuation
//! never runs is dropped when [`MAX_PENDING`] newer ones wait.

use super::paths::FrameResolver;
use crate::tree::methods::{Role, methods};
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};

/// Async stitching's state, one per process: `enabled` for the session (before its EventPipe
/// session starts), the contexts awaits created (`state`, bounded by [`MAX_PENDING`] and
/// [`MAX_CREATED`]) and the drain's pass over them (`stitcher`).
struct Stitching {
    enabled: AtomicBool,
    /// Awaits whose stack was not kept (the drain fell behind), for the agent log.
    dropped: AtomicU64,
    state: Mutex<Option<State>>,
    /// Return addresses (as walked: `- 1`) inside the continuation wrappers' code, learnt by the
    /// drain ([`Stitcher::learn_wrappers`]): a handful, one per wrapper and code version.
    wrapper_returns: [AtomicUsize; 8],
    stitcher: Mutex<Option<Stitcher>>,
}

static STITCHING: Stitching = Stitching {
    enabled: AtomicBool::new(false),
    dropped: AtomicU64::new(0),
    state: Mutex::new(None),
    wrapper_returns: [const { AtomicUsize::new(0) }; 8],
    stitcher: Mutex::new(None),
};

/// Contexts waiting for their continuation at most; an older one is dropped.
const MAX_PENDING: usize = 1 << 16;
/// Contexts created and not yet read by the drain, at most; past that an await is not stitched.
const MAX_CREATED: usize = 1 << 16;
/// Contexts current on one thread at most (continuations run inside continuations).
const MAX_NESTED: usize = 64;

/// Turns stitching on (before the EventPipe session starts).
pub fn enable() {
    STITCHING.enabled.store(true, Relaxed);
}

/// A new session: stitching off until the session turns it on, nothing pending or dropped.
pub(super) fn reset() {
    STITCHING.enabled.store(false, Relaxed);
    STITCHING.dropped.store(0, Relaxed);
    *STITCHING.state.lock().unwrap_or_else(|e| e.into_inner()) = None;
    *STITCHING.stitcher.lock().unwrap_or_else(|e| e.into_inner()) = None;
}

pub fn enabled() -> bool {
    STITCHING.enabled.load(Relaxed)
}

/// A context as an event created it: the awaiting thread's stack, for the drain to resolve.
struct Created {
    id: u32,
    /// The context the awaiting code itself ran in (0: none).
    parent: u32,
    /// Innermost first, return addresses already inside their calls (`walk_this_thread`).
    frames: Vec<u64>,
}

#[derive(Default)]
struct State {
    next: u32,
    /// The task (or continuation) id an await waits for → its context.
    pending: HashMap<i32, u32>,
    /// Insertion order of `pending`'s keys, to drop the oldest; keys resumed since stay until
    /// the queue is compacted (at twice [`MAX_PENDING`]).
    order: std::collections::VecDeque<i32>,
    created: Vec<Created>,
    /// Contexts whose continuation completed (or that were dropped): freed by the next drain.
    retired: Vec<u32>,
}

fn with<R>(f: impl FnOnce(&mut State) -> R) -> R {
    f(STITCHING.state.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert_with(State::default))
}

thread_local! {
    /// The contexts current on this thread, innermost last, each with the task id that resumed
    /// it.
    static ACTIVE: RefCell<Vec<(i32, u32)>> = const { RefCell::new(Vec::new()) };
}

fn publish_current(active: &[(i32, u32)]) {
    super::slots::set_current_async(active.last().map_or(0, |&(_, ctx)| ctx));
}

/// An `await` of `task` (or a queued continuation `task`) on this thread: its stack becomes the
/// context the continuation will run in.
pub fn awaiting(task: i32) {
    if !enabled() {
        return;
    }
    let parent = ACTIVE.with(|a| a.borrow().last().map_or(0, |&(_, ctx)| ctx));
    let mut frames = Vec::with_capacity(64);
    if parent == 0 {
        super::stack_walk::walk_this_thread(&mut frames);
    } else {
        // Inside a continuation only the frames above its wrapper matter (the parent's context
        // stands for the rest): the walk ends at the wrapper's return address, once known.
        super::stack_walk::walk_this_thread_until(&mut frames, is_wrapper_return);
    }
    if frames.is_empty() {
        return;
    }
    with(|s| {
        if s.created.len() >= MAX_CREATED {
            STITCHING.dropped.fetch_add(1, Relaxed);
            return;
        }
        // Ids fit beside the sample's other flags (`ring::MAX_CONTEXT`); one wraps after 2^31
        // awaits, long after its context was freed.
        s.next = ((s.next + 1) % super::ring::MAX_CONTEXT).max(1);
        let id = s.next;
        s.created.push(Created { id, parent, frames });
        s.pend(task, id);
    });
}

impl State {
    /// Context `id` waits for `task`'s continuation: a context that waited for the same task
    /// before, or the oldest beyond [`MAX_PENDING`], is retired.
    fn pend(&mut self, task: i32, id: u32) {
        if let Some(old) = self.pending.insert(task, id) {
            self.retired.push(old);
        } else {
            self.order.push_back(task);
        }
        while self.pending.len() > MAX_PENDING {
            let Some(oldest) = self.order.pop_front() else { break };
            if let Some(old) = self.pending.remove(&oldest) {
                self.retired.push(old);
            }
        }
        // Most awaits are resumed: without this the queue would grow by one key per await.
        if self.order.len() > 2 * MAX_PENDING {
            let pending = &self.pending;
            self.order.retain(|task| pending.contains_key(task));
        }
    }
}

/// The continuation of `task` starts on this thread.
pub fn resumed(task: i32) {
    if !enabled() {
        return;
    }
    let Some(ctx) = with(|s| s.pending.remove(&task)) else { return };
    ACTIVE.with(|a| {
        let mut active = a.borrow_mut();
        if active.len() >= MAX_NESTED {
            let (_, dropped) = active.remove(0);
            with(|s| s.retired.push(dropped));
        }
        active.push((task, ctx));
        publish_current(&active);
    });
}

/// The continuation of `task` returned (on this thread).
pub fn completed(task: i32) {
    if !enabled() {
        return;
    }
    ACTIVE.with(|a| {
        let mut active = a.borrow_mut();
        let Some(at) = active.iter().rposition(|&(t, _)| t == task) else { return };
        let ended: Vec<u32> = active.drain(at..).map(|(_, ctx)| ctx).collect();
        publish_current(&active);
        with(|s| s.retired.extend(ended));
    });
}

fn is_wrapper_return(value: u64) -> bool {
    STITCHING.wrapper_returns.iter().any(|r| r.load(Relaxed) as u64 == value && value != 0)
}

/// Awaits not stitched because the drain fell behind.
pub fn dropped() -> u64 {
    STITCHING.dropped.load(Relaxed)
}

/// A context's logical stack, as the drain resolved it: the path from the root to the awaiting
/// state machine's caller, with each frame's IL offset.
struct Prefix {
    path: Vec<u32>,
    offsets: Vec<u32>,
}

/// The drain's side: resolved contexts (`None`: the await's stack had no state machine to cut
/// at), and each method's [`Role`], cached.
#[derive(Default)]
pub struct Stitcher {
    contexts: HashMap<u32, Option<Prefix>>,
    roles: Vec<Option<Role>>,
}

impl Stitcher {
    fn role(&mut self, method: u32) -> Role {
        let i = method as usize;
        if self.roles.len() <= i {
            self.roles.resize(i + 1, None);
        }
        *self.roles[i].get_or_insert_with(|| methods().role(method))
    }

    /// Puts a path taken inside the continuation of context `ctx` under the context's stack.
    /// A path without a continuation wrapper (the walk did not reach it) stays as it is.
    fn apply(&mut self, ctx: u32, path: &mut Vec<u32>, offsets: &mut Vec<u32>) {
        let Some(wrapper) = path.iter().rposition(|&m| self.role(m) == Role::ContinuationWrapper) else { return };
        let after = wrapper + 1;
        // From the resumed state machine's MoveNext on: the runtime's frames between it and the
        // wrapper (the box's MoveNext, the execution context) are the dispatch, not the program.
        let start = (after..path.len()).find(|&i| self.role(path[i]) == Role::AsyncMoveNext).unwrap_or(after);
        let Some(Some(prefix)) = self.contexts.get(&ctx) else { return };
        // Offsets beside the path where there are any (an external sampler's paths have none).
        if offsets.len() == path.len() {
            offsets.splice(..start, prefix.offsets.iter().copied());
        }
        path.splice(..start, prefix.path.iter().copied());
    }

    /// Notes the return addresses inside continuation wrappers among `frames` (an await's walk),
    /// so that later walks inside continuations end there. Only while the walk did not end at
    /// one already known.
    fn learn_wrappers(&mut self, frames: &[u64], resolver: &mut dyn FrameResolver) {
        if frames.last().is_some_and(|&last| is_wrapper_return(last)) {
            return;
        }
        for &value in frames {
            if is_wrapper_return(value) {
                continue;
            }
            let method = resolver.resolve(value as usize);
            if !method.managed || self.role(method.method) != Role::ContinuationWrapper {
                continue;
            }
            if let Some(free) = STITCHING.wrapper_returns.iter().find(|r| r.load(Relaxed) == 0) {
                free.store(value as usize, Relaxed);
            }
        }
    }

    /// Resolves a context created by an await: its stack, stitched into its parent's, cut just
    /// outside the innermost state machine (the awaiting one).
    fn resolve(&mut self, created: Created, resolver: &mut dyn FrameResolver) {
        if created.parent != 0 {
            self.learn_wrappers(&created.frames, resolver);
        }
        let (mut path, mut offsets) = (Vec::new(), Vec::new());
        super::paths::event_stack_path(&created.frames, resolver, &mut path, &mut offsets);
        if created.parent != 0 {
            self.apply(created.parent, &mut path, &mut offsets);
        }
        let cut = path.iter().rposition(|&m| self.role(m) == Role::AsyncMoveNext);
        let prefix = cut.map(|cut| {
            path.truncate(cut);
            offsets.truncate(cut);
            Prefix { path, offsets }
        });
        self.contexts.insert(created.id, prefix);
    }
}

/// One drain's view of the contexts: the ones retired before it began are freed when it ends
/// ([`end_drain`]), once every ring has been read.
pub struct DrainPass {
    retired: Vec<u32>,
    stitcher: std::sync::MutexGuard<'static, Option<Stitcher>>,
}

impl DrainPass {
    /// A sample's path (and offsets) under its context `ctx`, if it was taken in one (not 0).
    pub fn stitch(&mut self, ctx: u32, resolver: &mut dyn FrameResolver, path: &mut Vec<u32>, offsets: &mut Vec<u32>) {
        if ctx == 0 {
            return;
        }
        let Some(stitcher) = self.stitcher.as_mut() else { return };
        if !stitcher.contexts.contains_key(&ctx) {
            // Created after this drain began (the drain reads the rings while the program
            // runs): resolve the contexts created since.
            for c in with(|s| std::mem::take(&mut s.created)) {
                stitcher.resolve(c, resolver);
            }
        }
        stitcher.apply(ctx, path, offsets);
    }
}

/// The start of a drain: the contexts created since the last one are resolved (in order: a
/// parent before its children), and the ones retired so far noted, to be freed by [`end_drain`].
pub fn begin_drain(resolver: &mut dyn FrameResolver) -> Option<DrainPass> {
    if !enabled() {
        return None;
    }
    let (retired, created) = with(|s| (std::mem::take(&mut s.retired), std::mem::take(&mut s.created)));
    let mut stitcher = STITCHING.stitcher.lock().unwrap_or_else(|e| e.into_inner());
    let resolving = stitcher.get_or_insert_with(Stitcher::default);
    for c in created {
        resolving.resolve(c, resolver);
    }
    Some(DrainPass { retired, stitcher })
}

/// The end of a drain: every sample of the contexts retired before it began has been read.
pub fn end_drain(pass: Option<DrainPass>) {
    let Some(mut pass) = pass else { return };
    if let Some(stitcher) = pass.stitcher.as_mut() {
        for ctx in pass.retired {
            stitcher.contexts.remove(&ctx);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stitcher(roles: &[(u32, Role)]) -> Stitcher {
        let mut s = Stitcher::default();
        for &(m, role) in roles {
            s.roles.resize(s.roles.len().max(m as usize + 1), None);
            s.roles[m as usize] = Some(role);
        }
        s
    }

    /// Methods: 1 Main, 2 A.MoveNext, 3 B.MoveNext (state machines), 4 builder plumbing, 5 pool
    /// dispatch, 6 the continuation wrapper, 7 the box's MoveNext, 8 work.
    fn roles() -> Vec<(u32, Role)> {
        let mut r: Vec<(u32, Role)> = (1..=8).map(|m| (m, Role::Other)).collect();
        r[1].1 = Role::AsyncMoveNext;
        r[2].1 = Role::AsyncMoveNext;
        r[5].1 = Role::ContinuationWrapper;
        r
    }

    #[test]
    fn a_continuation_goes_under_the_stack_that_awaited() {
        let mut s = stitcher(&roles());
        s.contexts.insert(9, Some(Prefix { path: vec![1, 4, 2, 4], offsets: vec![10, 0, 20, 0] }));
        // pool → wrapper → box → B.MoveNext → work
        let (mut path, mut offsets) = (vec![5, 6, 7, 3, 8], vec![0, 0, 0, 30, 40]);
        s.apply(9, &mut path, &mut offsets);
        assert_eq!(path, vec![1, 4, 2, 4, 3, 8]);
        assert_eq!(offsets, vec![10, 0, 20, 0, 30, 40]);
        // No wrapper on the stack (a broken walk): unchanged.
        let (mut path, mut offsets) = (vec![5, 3, 8], vec![0, 30, 40]);
        s.apply(9, &mut path, &mut offsets);
        assert_eq!(path, vec![5, 3, 8]);
        // An unknown context: unchanged.
        let (mut path, mut offsets) = (vec![5, 6, 3, 8], vec![0; 4]);
        s.apply(10, &mut path, &mut offsets);
        assert_eq!(path, vec![5, 6, 3, 8]);
    }

    /// Awaits resumed one after another keep the queue of waiting tasks bounded; past
    /// `MAX_PENDING` waiting ones, the oldest is dropped.
    #[test]
    fn waiting_tasks_stay_bounded() {
        let mut s = State::default();
        for task in 0..(5 * MAX_PENDING as i32) {
            s.pend(task, task as u32 + 1);
            s.pending.remove(&task); // resumed
        }
        assert!(s.order.len() <= 2 * MAX_PENDING + 1, "{}", s.order.len());
        for task in 0..(MAX_PENDING as i32 + 3) {
            s.pend(-task - 1, 7);
        }
        assert_eq!(s.pending.len(), MAX_PENDING);
        assert!(!s.pending.contains_key(&-1) && s.pending.contains_key(&-4), "the oldest went first");
        assert_eq!(s.retired.len(), 3);
    }

    #[test]
    fn nested_continuations_take_the_innermost_wrapper() {
        let mut s = stitcher(&roles());
        s.contexts.insert(1, Some(Prefix { path: vec![1, 2], offsets: vec![0, 0] }));
        // pool → wrapper → B.MoveNext (completing) → wrapper → A.MoveNext → work
        let (mut path, mut offsets) = (vec![5, 6, 3, 6, 2, 8], vec![0; 6]);
        s.apply(1, &mut path, &mut offsets);
        assert_eq!(path, vec![1, 2, 2, 8]);
        assert_eq!(offsets.len(), path.len());
    }
}
