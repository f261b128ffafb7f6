//! The runtime's `ICorProfilerInfo` of this process (set once, by `Initialize` or
//! `InitializeForAttach`), and the names it gives that every part of the backend needs.

use sonde_clr::ProfilerInfo;
use sonde_clr::sys::FunctionID;
use std::sync::OnceLock;

/// The runtime's `ICorProfilerInfo`, from `Initialize` on.
pub(super) static INFO: OnceLock<ProfilerInfo> = OnceLock::new();

pub(super) fn info() -> Option<&'static ProfilerInfo> {
    INFO.get()
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
