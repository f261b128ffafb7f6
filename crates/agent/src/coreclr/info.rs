//! The runtime's `ICorProfilerInfo` of this process (set once, by `Initialize` or
//! `InitializeForAttach`), and the names it gives that every part of the backend needs.

use sonde_clr::ProfilerInfo;
use sonde_clr::sys::FunctionID;
use std::sync::atomic::{AtomicPtr, Ordering::*};

/// The runtime's `ICorProfilerInfo` of the current session, from `Initialize` (or
/// `InitializeForAttach`) on: a `ProfilerInfo` leaked by [`set_info`], or null.
static INFO: AtomicPtr<ProfilerInfo> = AtomicPtr::new(std::ptr::null_mut());

pub(super) fn info() -> Option<&'static ProfilerInfo> {
    // SAFETY: null or a `ProfilerInfo` leaked by `set_info`, never freed.
    unsafe { INFO.load(Acquire).as_ref() }
}

/// The session's `ICorProfilerInfo`. Each attach gets a new one from the runtime (the last one's
/// is gone with its detach), so it is replaced, not kept: the old one is leaked (a few words
/// an attach) rather than freed under a reader that may still hold it, and never used again.
pub(super) fn set_info(info: ProfilerInfo) -> &'static ProfilerInfo {
    let info: &'static ProfilerInfo = Box::leak(Box::new(info));
    INFO.store(std::ptr::from_ref(info).cast_mut(), Release);
    info
}

/// `names` with the type arguments of the instantiation `function` is, if it is one: what tells
/// `Table<Row>.Fill` from `Table<Col>.Fill` in reports. Once per function, when it is named.
pub(super) fn with_type_arguments(
    mut names: sonde_metadata::MethodNames,
    function: FunctionID,
) -> sonde_metadata::MethodNames {
    if let Some(Ok((type_args, method_args))) = info().map(|info| info.type_arguments(function)) {
        names.type_args = type_args;
        names.method_args = method_args;
    }
    names
}
