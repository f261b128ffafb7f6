//! The controller's request for every thread's exact stack at one instant (`sonde dump`,
//! `ControllerMessage::WalkStacks`): the backend that can walk them (CoreCLR attached:
//! `ProfilerInfo::walk_all_threads`) says how ([`on_walk`]); the link runs it ([`walk_stacks`]);
//! snapshots count the requests ([`stacks_walked`]).

use crate::base::log::log;
use crate::base::running;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

/// How the backend walks every thread's stack at one instant (CoreCLR attached:
/// `ProfilerInfo::walk_all_threads`), set where it can.
static WALKER: Mutex<Option<std::sync::Arc<dyn Fn() + Send + Sync>>> = Mutex::new(None);

/// `ControllerMessage::WalkStacks` requests done, walked or not.
static STACKS_WALKED: AtomicU32 = AtomicU32::new(0);

/// Sets how [`walk_stacks`] walks the stacks.
pub fn on_walk(walk: impl Fn() + Send + Sync + 'static) {
    *WALKER.lock().unwrap_or_else(|e| e.into_inner()) = Some(std::sync::Arc::new(walk));
}

/// The controller asked for every thread's exact stack (`sonde dump`): the backend's walker
/// records them (`sampling::record_walk`); without one, nothing but the count changes. On the
/// IPC thread.
pub fn walk_stacks() {
    let walker = WALKER.lock().unwrap_or_else(|e| e.into_inner()).clone();
    match walker {
        Some(walk) => running::guarded((), || walk()),
        None => log!("this runtime cannot walk stacks on request; the sampled stacks stand"),
    }
    STACKS_WALKED.fetch_add(1, Relaxed);
}

/// A new session: no walker until its backend sets one, no request counted.
pub fn reset() {
    *WALKER.lock().unwrap_or_else(|e| e.into_inner()) = None;
    STACKS_WALKED.store(0, Relaxed);
}

/// See [`walk_stacks`].
pub fn stacks_walked() -> u32 {
    STACKS_WALKED.load(Relaxed)
}
