//! Heap snapshots on CoreCLR (`sonde heap`): a full, blocking collection forced from the IPC
//! thread (one of the agent's, which never ran managed code), with an EventPipe session asking
//! for the runtime's own heap walk — the one `dotnet-gcdump` and PerfView read: the GC, at the
//! end of a blocking collection, walks its roots and every live object and writes them as bulk
//! events (`GCBulkNode`: address, size, type, reference count; `GCBulkEdge`: the references, in
//! the nodes' order; `GCBulkRootEdge`: the roots with their kind; `BulkType`: each type's name
//! once). The events reach `event_pipe_event` on the collecting thread while the program is
//! stopped; each goes to the controller as it comes (`ipc::heap::piece`), undecoded.
//!
//! Why not the profiling API's own `ObjectReferences`/`RootReferences2`: they need
//! `COR_PRF_MONITOR_GC`, which a profiler may turn on after start-up only when concurrent
//! collections are off (`CORPROF_E_CONCURRENT_GC_NOT_PROFILABLE`; .NET turns them on by
//! default), and which, turned on at start-up, would turn them off for the whole run. The
//! EventPipe walk needs neither, and only the collection the snapshot forces pays for it: the
//! session runs for that collection alone.

use super::eventpipe;
use crate::base::log::log;
use sonde_clr::ProfilerInfo;
use sonde_clr::sys::FunctionID;
use sonde_heap::clr::{IdKind, METHOD_PREFIX, ids_to_name};
use std::collections::HashSet;
use std::sync::Mutex;

pub use sonde_heap::clr::is_heap_event;

/// `GCHeapDump`: the walk of roots and objects at the next blocking collection.
const GC_HEAP_DUMP_KEYWORD: u64 = 0x10_0000;
/// `Type`: `BulkType`, each type the walk meets described once.
const TYPE_KEYWORD: u64 = 0x8_0000;
/// `GCHeapAndTypeNames`: the types' names in `BulkType`.
const GC_HEAP_AND_TYPE_NAMES_KEYWORD: u64 = 0x100_0000;
/// `GC`: the collection's own start and end events (the walk's frame).
const GC_KEYWORD: u64 = 0x1;

/// The ids the walk's records refer to that the agent names after the collection (types by
/// their metadata, stack roots' methods): a few hundred to a few thousand, never per object.
static TO_NAME: Mutex<Option<HashSet<(IdKind, u64)>>> = Mutex::new(None);

/// One of the walk's events, on the collecting thread: sent on as it is, its ids noted.
pub fn event(id: u32, version: u32, data: &[u8]) {
    let ids = ids_to_name(id, data);
    if !ids.is_empty()
        && let Some(set) = TO_NAME.lock().unwrap_or_else(|e| e.into_inner()).as_mut()
    {
        set.extend(ids);
    }
    crate::ipc::heap::piece(id, version, data);
}

/// Takes one snapshot (on the IPC thread): the session, the collection, the session's end, then
/// the names of what the walk referred to (types, stack roots' methods), now that the program
/// runs again.
pub fn take(info: &ProfilerInfo) -> crate::ipc::heap::Taken {
    *TO_NAME.lock().unwrap_or_else(|e| e.into_inner()) = Some(HashSet::new());
    let keywords = GC_KEYWORD | GC_HEAP_DUMP_KEYWORD | TYPE_KEYWORD | GC_HEAP_AND_TYPE_NAMES_KEYWORD;
    let session = info
        .event_pipe_start_session(&[(eventpipe::PROVIDER, keywords, eventpipe::LEVEL_INFORMATIONAL)])
        .map_err(|e| format!("the runtime refused the heap walk's event session ({e})"))?;
    let collected = info.force_gc();
    if let Err(e) = info.event_pipe_stop_session(session) {
        log!("EventPipeStopSession (heap walk) failed: {e}");
    }
    let ids = TO_NAME.lock().unwrap_or_else(|e| e.into_inner()).take().unwrap_or_default();
    collected.map_err(|e| format!("the runtime refused the collection ({e})"))?;
    let mut names = Vec::with_capacity(ids.len());
    for (kind, id) in ids {
        match kind {
            IdKind::Type => {
                if let Ok(name) = info.type_name(id as usize) {
                    names.push((id, name));
                }
            }
            IdKind::Method => {
                if let Ok(method) = info.method_names(id as FunctionID) {
                    names.push((id, format!("{METHOD_PREFIX}{}", method.name)));
                }
            }
        }
    }
    Ok(names)
}
