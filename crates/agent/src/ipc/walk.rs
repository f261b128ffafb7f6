//! The controller's request for every thread's exact stack at one instant (`sonde dump`,
//! `ControllerMessage::WalkStacks`): the backend that can walk them (CoreCLR attached:
//! `ProfilerInfo::walk_all_threads`) says how ([`on_walk`]); the link runs it ([`walk_stacks`]);
//! snapshots count the requests ([`stacks_walked`]).

use crate::base::log::log;
use crate::base::running;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

/// How the backend walks every thread's stack at one instant (CoreCLR attached:
/// `ProfilerInfo::walk_all_threads`), set where it can.
static WALKER: OnceLock<Box<dyn Fn() + Send + Sync>> = OnceLock::new();

/// `ControllerMessage::WalkStacks` requests done, walked or not.
static STACKS_WALKED: AtomicU32 = AtomicU32::new(0);

/// Sets how [`walk_stacks`] walks the stacks.
pub fn on_walk(walk: impl Fn() + Send + Sync + 'static) {
    let _ = WALKER.set(Box::new(walk));
}

/// The controller asked for every thread's exact stack (`sonde dump`): the backend's walker
/// records them (`sampling::record_walk`); without one, nothing but the count changes. On the
/// IPC thread.
pub fn walk_stacks() {
    match WALKER.get() {
        Some(walk) => running::guarded((), walk),
        None => log!("this runtime cannot walk stacks on request; the sampled stacks stand"),
    }
    STACKS_WALKED.fetch_add(1, Relaxed);
}

/// See [`walk_stacks`].
pub fn stacks_walked() -> u32 {
    STACKS_WALKED.load(Relaxed)
}
