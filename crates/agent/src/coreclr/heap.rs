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
//!
//! Static roots: the walk gives each static's slot address, the object, the object's type and
//! the field's bare name, never the declaring type. After the collection, on the IPC thread,
//! [`static_owners`] finds it: in each loaded module's metadata, the static fields of those names
//! that can hold the slots' objects (by declared type: a name index first, so only candidate
//! fields reach the runtime), each candidate's class (`GetClassFromToken`) and its address
//! (`GetAppDomainStaticAddress`), matched to the slots. Leak.exe: 325 of 325 static roots named,
//! 325 classes asked for, 20–80 ms on the IPC thread (debug build, a loaded machine), most of it
//! reading the metadata; the program runs meanwhile.
//! Why not from the slot's address alone: the profiling API has no address-to-field lookup; why
//! not from the module files (`sonde_metadata::tables`, which spares the runtime its metadata
//! interfaces): that reader does not read the field table yet — and the snapshot's type names
//! already ask for the interfaces of the modules whose types are on the heap
//! (`ProfilerInfo::type_name`). Generic classes' statics (each instantiation's own) keep the
//! walk's name, by the object's type.

use super::eventpipe;
use crate::base::log::log;
use sonde_clr::sys::FunctionID;
use sonde_clr::{Holds, ProfilerInfo};
use sonde_heap::clr::{IdKind, METHOD_PREFIX, STATIC_PREFIX, ids_to_name};
use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::time::Instant;

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
    let start = std::time::Instant::now();
    let collected = info.force_gc();
    let pause_ns = start.elapsed().as_nanos() as u64;
    if let Err(e) = info.event_pipe_stop_session(session) {
        log!("EventPipeStopSession (heap walk) failed: {e}");
    }
    let ids = TO_NAME.lock().unwrap_or_else(|e| e.into_inner()).take().unwrap_or_default();
    collected.map_err(|e| format!("the runtime refused the collection ({e})"))?;
    let mut names = Vec::with_capacity(ids.len());
    let mut slots = Vec::new();
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
            IdKind::Static { field, object, type_id } => slots.push(StaticSlot { address: id, object, type_id, field }),
        }
    }
    names.extend(static_owners(info, &slots));
    Ok(crate::ipc::heap::Names { names, pause_ns })
}

/// A static root as the walk reported it.
struct StaticSlot {
    /// The slot's address (`GCRootID`).
    address: u64,
    /// The object it held: a value type's static is a box.
    object: u64,
    /// The object's type (a `ClassID`).
    type_id: u64,
    field: String,
}

/// How many base classes of an object's type are named to match a field's declared type.
const MAX_BASES: usize = 16;

/// The declaring type of each static slot found (`(slot, "static:Acme.Cache")`): in every
/// loaded module, the static fields of the slots' names; each one's address matched to a slot —
/// the slot itself for a reference type's field, the box's contents (one pointer past the
/// object) for a value type's, as `GetAppDomainStaticAddress` gives them.
///
/// Only a field that can hold one of its name's objects is asked about: one declared as `object`
/// or a type parameter, as an array for an array, else as the object's type or one of its base
/// classes (by name). An interface-typed static is not found (the profiling API does not list a
/// class's interfaces) and keeps the walk's name. Why be choosy: `GetClassFromToken` loads a
/// class the program has not loaded — and with it, its parent's and its fields' assemblies,
/// which may run the program's own resolve handlers: a field named like a root (`<>9`, the C#
/// compiler's lambda cache, is in every class with lambdas) is no reason to load its class, a
/// field that can hold the root's object seldom is. A name is no longer looked for once as many
/// of its slots as the walk had are found, and the search ends when none is left.
/// The collection ran on this thread (`ForceGC` set it up as a runtime thread, which the
/// class lookups need).
fn static_owners(info: &ProfilerInfo, slots: &[StaticSlot]) -> Vec<(u64, String)> {
    if slots.is_empty() {
        return Vec::new();
    }
    let start = Instant::now();
    let mut left: HashMap<&str, usize> = HashMap::new();
    let mut by_address: HashMap<u64, &StaticSlot> = HashMap::new();
    // Per field name, the names of its objects' types and their base classes.
    let mut holds: HashMap<&str, HashSet<String>> = HashMap::new();
    let mut lineage: HashMap<u64, Vec<String>> = HashMap::new();
    for slot in slots {
        *left.entry(slot.field.as_str()).or_default() += 1;
        by_address.insert(slot.address, slot);
        by_address.entry(box_contents(slot.object)).or_insert(slot);
        let types = lineage.entry(slot.type_id).or_insert_with(|| type_lineage(info, slot.type_id));
        holds.entry(slot.field.as_str()).or_default().extend(types.iter().cloned());
    }
    let modules = match info.modules() {
        Ok(modules) => modules,
        Err(e) => {
            log!("heap snapshot: static roots unnamed: EnumModules failed ({e})");
            return Vec::new();
        }
    };
    let lineages = start.elapsed();
    let (mut modules_read, mut candidates, mut classes) = (0usize, 0usize, 0usize);
    let mut reading = std::time::Duration::ZERO;
    let mut owners = Vec::new();
    for module in modules {
        if left.is_empty() {
            break;
        }
        let read = Instant::now();
        let fields = info.static_fields(module, &mut |name| left.contains_key(name));
        reading += read.elapsed();
        let Ok(fields) = fields else { continue };
        modules_read += 1;
        candidates += fields.len();
        let mut fields = fields.into_iter().filter(|f| !f.generic && can_hold(&holds, f)).peekable();
        if fields.peek().is_none() {
            continue;
        }
        let Some(&domain) = info.app_domains_of_module(module).ok().as_ref().and_then(|d| d.first()) else {
            continue;
        };
        for field in fields {
            if !left.contains_key(field.name.as_str()) {
                continue;
            }
            classes += 1;
            let Ok(class) = info.class_from_token(module, field.type_def) else { continue };
            let Ok(address) = info.app_domain_static_address(class, field.field, domain) else { continue };
            let Some(&slot) = by_address.get(&(address as u64)).filter(|slot| slot.field == field.name) else {
                continue;
            };
            by_address.remove(&slot.address);
            by_address.remove(&box_contents(slot.object));
            let Ok(owner) = info.type_name(class) else { continue };
            owners.push((slot.address, format!("{STATIC_PREFIX}{owner}")));
            if let Some(n) = left.get_mut(slot.field.as_str()) {
                *n -= 1;
                if *n == 0 {
                    left.remove(slot.field.as_str());
                }
            }
        }
    }
    log!(
        "heap snapshot: {} of {} static roots' declaring types found in {:?} (objects' types {lineages:?}; \
         {modules_read} modules' metadata read in {reading:?}: {candidates} fields of their names; {classes} classes \
         asked for)",
        owners.len(),
        slots.len(),
        start.elapsed()
    );
    owners
}

/// Where `GetAppDomainStaticAddress` puts a value type's static held in box `object`: its
/// contents, after the object's header pointer.
fn box_contents(object: u64) -> u64 {
    object.wrapping_add(size_of::<usize>() as u64)
}

/// The names of a type and its base classes, as metadata names them (`Namespace.Outer+Inner`,
/// a generic type by its definition's name), `[]` for an array.
fn type_lineage(info: &ProfilerInfo, mut class: u64) -> Vec<String> {
    let mut names = Vec::new();
    if info.type_name(class as usize).is_ok_and(|name| name.ends_with(']')) {
        names.push("[]".to_string());
    }
    for _ in 0..MAX_BASES {
        if class == 0 {
            break;
        }
        if let Ok(name) = info.class_name(class as usize) {
            names.push(name);
        }
        class = info.base_class(class as usize).unwrap_or(0) as u64;
    }
    names
}

/// Whether static field `field` can hold an object its name's slots held.
fn can_hold(holds: &HashMap<&str, HashSet<String>>, field: &sonde_clr::StaticField) -> bool {
    let Some(types) = holds.get(field.name.as_str()) else { return false };
    match &field.holds {
        Holds::Anything => true,
        Holds::Array => types.contains("[]"),
        Holds::Type(name) => types.contains(name),
    }
}
