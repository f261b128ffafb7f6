//! CoreCLR's own record of a heap walk, decoded into a [`HeapBuilder`].
//!
//! At the end of a blocking collection with the `GCHeapDump` keyword on, the runtime walks its
//! roots and every live object and writes them as bulk events of `Microsoft-Windows-DotNETRuntime`
//! (the events `dotnet-gcdump` and PerfView read; layouts from the runtime's `ClrEtwAll.man`,
//! little-endian). The agent passes them on undecoded, in their order; this module reads them:
//!
//! - `GCBulkNode` (18): objects — address, size, type id, number of references.
//! - `GCBulkEdge` (19): the references, in the nodes' order: the first node's `EdgeCount`
//!   targets, then the next node's, … (the two streams are flushed separately, each when its
//!   buffer fills, so either may run ahead: the nodes still owed references wait in one queue,
//!   references that came before their node in another).
//! - `GCBulkRootEdge` (16): roots — the object, the kind (stack, finalizer queue, handle, other),
//!   flags (pinning, weak) and an id (a stack root's method, a handle's address).
//! - `GCBulkRootConditionalWeakTableElementEdge` (17): dependent handles — the key keeps the
//!   value alive: a reference from key to value.
//! - `BulkType` (15): each type once — id, name, element type, type arguments (ids of types
//!   described in the same way). The runtime spells a nested type by its own name alone
//!   (`Entry`) and an array by its element's name; the agent names the ids again after the
//!   collection, from the metadata (`Namespace.Outer+Inner`, [`ClrHeapDecoder::names`]), and the
//!   type arguments come from here.
//! - `GCBulkRootStaticVar` (38): static fields holding objects — the slot's address, the
//!   object, the *object's* type id (not the declaring type's) and the field's bare name
//!   (`Items`). The declaring type is the agent's to find, from the slot's address
//!   ([`IdKind::Static`]); the root is then named `Acme.Cache.Items`, else by the object's type
//!   (`Dictionary<string, Acme.Session>.Items`).
//!
//! [`ids_to_name`] tells the agent which ids a record refers to, for it to name after the
//! collection (types; stack roots' methods; static slots' declaring types).
//!
//! The runtime writes the bulk arrays from its own structures, padding included; the element
//! size is read from the payload (its length over the count), never assumed. A payload that
//! does not fit its layout is skipped and counted, never read past.

use crate::builder::{BuildError, HeapBuilder};
use crate::model::{HeapSnapshot, RootKind, RunFacts};
use std::collections::{HashMap, VecDeque};

pub const BULK_TYPE: u32 = 15;
pub const GC_BULK_ROOT_EDGE: u32 = 16;
pub const GC_BULK_ROOT_CWT_EDGE: u32 = 17;
pub const GC_BULK_NODE: u32 = 18;
pub const GC_BULK_EDGE: u32 = 19;
pub const GC_BULK_ROOT_STATIC_VAR: u32 = 38;

/// The events of a heap walk.
pub fn is_heap_event(id: u32) -> bool {
    matches!(
        id,
        BULK_TYPE | GC_BULK_ROOT_EDGE | GC_BULK_ROOT_CWT_EDGE | GC_BULK_NODE | GC_BULK_EDGE | GC_BULK_ROOT_STATIC_VAR
    )
}

/// How the agent marks a method's name among the names it sends ([`ClrHeapDecoder::names`]):
/// type and method ids are both addresses, never equal, but the two kinds are named apart.
pub const METHOD_PREFIX: &str = "method:";

/// How the agent marks a static slot's declaring type among the names it sends
/// ([`ClrHeapDecoder::names`]): the id is the slot's address (`GCRootID`), the name the type's
/// (`Acme.Cache`), the field's name comes from the record.
pub const STATIC_PREFIX: &str = "static:";

/// `Index u32, Count u32, ClrInstanceID u16` before a bulk array.
const BULK_HEADER: usize = 10;

/// `GCRootKind` values.
const ROOT_STACK: u8 = 0;
const ROOT_FINALIZER: u8 = 1;
const ROOT_HANDLE: u8 = 2;
/// `GCRootFlag` bits.
const FLAG_PINNING: u32 = 0x1;
const FLAG_WEAK: u32 = 0x2;

/// `CorElementType`s that name a type by its kind rather than its name.
const ELEMENT_ARRAY: u8 = 0x14;
const ELEMENT_SZARRAY: u8 = 0x1d;

/// What a `BulkType` says of one type.
#[derive(Debug, Clone, Default)]
struct TypeRecord {
    name: String,
    element: u8,
    args: Vec<u64>,
}

/// Decodes one snapshot's events, in the order the runtime wrote them.
#[derive(Debug, Default)]
pub struct ClrHeapDecoder {
    builder: HeapBuilder,
    /// The builder's type index of each runtime type id seen on an object.
    type_index: HashMap<u64, u32>,
    types: HashMap<u64, TypeRecord>,
    /// Nodes still owed references: (address, how many).
    owed: VecDeque<(u64, u64)>,
    /// References that came before their node (the edge stream ran ahead): their targets.
    ahead: VecDeque<u64>,
    /// Events whose payload did not fit their layout.
    malformed: u64,
    /// Names for root ids (a stack root's method), given by the agent.
    root_names: HashMap<u64, String>,
    /// The declaring type of each static slot the agent found, by the slot's address.
    static_owners: HashMap<u64, String>,
    /// Static roots, named when the snapshot is finished.
    statics: Vec<StaticRoot>,
    /// Stack roots, named when the snapshot is finished: (the frame's method id, object).
    stack_roots: Vec<(u64, u64)>,
}

/// What an id in a heap walk's record stands for, for the agent to name it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum IdKind {
    /// A type (`TypeID`: CoreCLR's `MethodTable`, the profiling API's `ClassID`).
    Type,
    /// The method of a stack root's frame (its `MethodDesc`, the profiling API's `FunctionID`).
    Method,
    /// A static field's slot (the id: its address, `GCRootID`), whose declaring type the record
    /// does not say: the agent finds the static field of that name whose address is the slot
    /// (named with [`STATIC_PREFIX`]). `object` is the object the slot held at the walk (a value
    /// type's static is a box, and the runtime gives its address as the box's contents), of
    /// type `type_id`: the field's declared type is that type or one it derives from.
    Static { field: String, object: u64, type_id: u64 },
}

/// The ids `event`'s record refers to that the agent can name better than the record does.
pub fn ids_to_name(event: u32, payload: &[u8]) -> Vec<(IdKind, u64)> {
    let mut ids = Vec::new();
    match event {
        BULK_TYPE => {
            for (id, _) in type_records(payload).unwrap_or_default() {
                ids.push((IdKind::Type, id));
            }
        }
        GC_BULK_ROOT_STATIC_VAR => {
            for root in static_roots(payload).unwrap_or_default() {
                ids.push((IdKind::Type, root.type_id));
                if root.object != 0 {
                    let kind = IdKind::Static { field: root.field, object: root.object, type_id: root.type_id };
                    ids.push((kind, root.slot));
                }
            }
        }
        GC_BULK_ROOT_EDGE => {
            for root in root_edges(payload).into_iter().flatten() {
                if root.kind == ROOT_STACK && root.id != 0 {
                    ids.push((IdKind::Method, root.id));
                }
            }
        }
        _ => {}
    }
    ids
}

/// One `GCBulkRootEdge` value.
#[derive(Debug, Clone, Copy)]
struct RootEdge {
    object: u64,
    kind: u8,
    flags: u32,
    id: u64,
}

/// `GCBulkRootEdge`'s values: packed (21 bytes: address, kind, flags, id) or as the runtime's
/// structure lays them out (24: the flags aligned after the kind byte).
fn root_edges(payload: &[u8]) -> Option<Vec<RootEdge>> {
    let values = bulk(payload, 21)?;
    let (flags_at, id_at) = if values.stride == 21 { (9, 13) } else { (12, 16) };
    values
        .map(|v| {
            Some(RootEdge {
                object: u64_at(v, 0)?,
                kind: *v.get(8)?,
                flags: u32_at(v, flags_at)?,
                id: u64_at(v, id_at)?,
            })
        })
        .collect()
}

/// One `GCBulkRootStaticVar` value.
#[derive(Debug, Clone)]
struct StaticRoot {
    /// The static's slot (`GCRootID`).
    slot: u64,
    object: u64,
    type_id: u64,
    field: String,
}

/// `Count u32, AppDomainID u64, ClrInstanceID u16`, then per static: `GCRootID u64, ObjectID
/// u64, TypeID u64, Flags u32, FieldName (UTF-16, NUL-terminated)`, packed.
fn static_roots(payload: &[u8]) -> Option<Vec<StaticRoot>> {
    let count = u32_at(payload, 0)?;
    let mut at = 14;
    let mut roots = Vec::with_capacity((count as usize).min(payload.len() / 30));
    for _ in 0..count {
        let slot = u64_at(payload, at)?;
        let object = u64_at(payload, at + 8)?;
        let type_id = u64_at(payload, at + 16)?;
        let (field, after) = utf16z(payload, at + 28)?;
        at = after;
        roots.push(StaticRoot { slot, object, type_id, field });
    }
    Some(roots)
}

impl ClrHeapDecoder {
    pub fn new(run: RunFacts) -> Self {
        ClrHeapDecoder { builder: HeapBuilder::new(run), ..Default::default() }
    }

    /// Payloads that did not fit their event's layout so far (skipped).
    pub fn malformed(&self) -> u64 {
        self.malformed
    }

    /// One event of the walk. Events of other ids are ignored.
    pub fn event(&mut self, id: u32, payload: &[u8]) {
        let ok = match id {
            GC_BULK_NODE => self.nodes(payload),
            GC_BULK_EDGE => self.edges(payload),
            GC_BULK_ROOT_EDGE => self.roots(payload),
            GC_BULK_ROOT_CWT_EDGE => self.dependent_handles(payload),
            BULK_TYPE => self.bulk_types(payload),
            GC_BULK_ROOT_STATIC_VAR => self.static_vars(payload),
            _ => Some(()),
        };
        if ok.is_none() {
            self.malformed += 1;
        }
    }

    /// Names the agent gave the ids [`ids_to_name`] found: types by their metadata's full name
    /// (which wins over the record's), stack roots' methods, static slots' declaring types.
    pub fn names(&mut self, names: &[(u64, String)]) {
        for (id, name) in names {
            if let Some(method) = name.strip_prefix(METHOD_PREFIX) {
                self.root_names.insert(*id, method.to_string());
            } else if let Some(owner) = name.strip_prefix(STATIC_PREFIX) {
                self.static_owners.insert(*id, owner.to_string());
            } else {
                self.types.entry(*id).or_default().name = name.clone();
            }
        }
    }

    /// The snapshot: every type named (`Namespace.Type<Arg, …>`, arrays by their element type),
    /// the static roots by their declaring type and field.
    pub fn finish(mut self) -> Result<HeapSnapshot, BuildError> {
        for (method, object) in std::mem::take(&mut self.stack_roots) {
            let name = match self.root_names.get(&method) {
                Some(method) => format!("stack: {method}"),
                None => "stack".to_string(),
            };
            self.builder.add_root(RootKind::Stack, &name, object);
        }
        for root in std::mem::take(&mut self.statics) {
            let name = match self.static_owners.get(&root.slot) {
                Some(owner) => format!("{owner}.{}", root.field),
                // Not found (a generic class's static, a module the agent could not read): by
                // the object's type, which is what the record says.
                None => format!("{}.{}", display_name(&self.types, root.type_id, 0), root.field),
            };
            self.builder.add_root(RootKind::StaticField, &name, root.object);
        }
        let mut names: Vec<(u32, String)> =
            self.type_index.iter().map(|(&id, &ty)| (ty, display_name(&self.types, id, 0))).collect();
        names.sort();
        for (ty, name) in names {
            self.builder.name_type(ty, &name);
        }
        self.builder.finish()
    }

    fn nodes(&mut self, payload: &[u8]) -> Option<()> {
        for value in bulk(payload, 32)? {
            let address = u64_at(value, 0)?;
            let size = u64_at(value, 8)?;
            let type_id = u64_at(value, 16)?;
            let edges = u64_at(value, 24)?;
            let ty = match self.type_index.get(&type_id) {
                Some(&ty) => ty,
                None => {
                    let ty = self.builder.add_type();
                    self.type_index.insert(type_id, ty);
                    ty
                }
            };
            self.builder.add_object(address, ty, size);
            let mut left = edges;
            while left > 0 {
                let Some(target) = self.ahead.pop_front() else { break };
                self.reference(address, target);
                left -= 1;
            }
            if left > 0 {
                self.owed.push_back((address, left));
            }
        }
        Some(())
    }

    fn edges(&mut self, payload: &[u8]) -> Option<()> {
        for value in bulk(payload, 12)? {
            let target = u64_at(value, 0)?;
            let Some((from, left)) = self.owed.front_mut() else {
                self.ahead.push_back(target);
                continue;
            };
            let from = *from;
            *left -= 1;
            if *left == 0 {
                self.owed.pop_front();
            }
            self.reference(from, target);
        }
        Some(())
    }

    fn reference(&mut self, from: u64, to: u64) {
        if to != 0 {
            self.builder.add_reference(from, to, None);
        }
    }

    fn roots(&mut self, payload: &[u8]) -> Option<()> {
        for RootEdge { object, kind, flags, id } in root_edges(payload)? {
            let (kind, name) = match kind {
                // Named at the end: the agent names the methods after the collection.
                ROOT_STACK if object != 0 => {
                    self.stack_roots.push((id, object));
                    continue;
                }
                ROOT_STACK => continue,
                ROOT_FINALIZER => (RootKind::FinalizerQueue, "finalizer queue".to_string()),
                ROOT_HANDLE if flags & FLAG_WEAK != 0 => (RootKind::WeakHandle, "weak handle".to_string()),
                ROOT_HANDLE if flags & FLAG_PINNING != 0 => (RootKind::PinnedHandle, "pinned handle".to_string()),
                ROOT_HANDLE => (RootKind::StrongHandle, "strong handle".to_string()),
                _ => (RootKind::Other, "other".to_string()),
            };
            if object != 0 {
                self.builder.add_root(kind, &name, object);
            }
        }
        Some(())
    }

    fn static_vars(&mut self, payload: &[u8]) -> Option<()> {
        for root in static_roots(payload)? {
            if root.object != 0 {
                self.statics.push(root);
            }
        }
        Some(())
    }

    fn dependent_handles(&mut self, payload: &[u8]) -> Option<()> {
        for value in bulk(payload, 24)? {
            let (key, value_object) = (u64_at(value, 0)?, u64_at(value, 8)?);
            if key != 0 && value_object != 0 {
                self.builder.add_reference(key, value_object, None);
            }
        }
        Some(())
    }

    fn bulk_types(&mut self, payload: &[u8]) -> Option<()> {
        for (id, record) in type_records(payload)? {
            let known = self.types.entry(id).or_default();
            // A name the agent gave stays; the element type and arguments are the record's.
            if known.name.is_empty() {
                known.name = record.name;
            }
            known.element = record.element;
            known.args = record.args;
        }
        Some(())
    }
}

/// `Count u32, ClrInstanceID u16`, then per type: `TypeID u64, ModuleID u64, TypeNameID u32,
/// Flags u32, CorElementType u8, Name (UTF-16, NUL-terminated), TypeParameterCount u32,
/// TypeParameters u64 × count` — packed, one after another.
fn type_records(payload: &[u8]) -> Option<Vec<(u64, TypeRecord)>> {
    let count = u32_at(payload, 0)?;
    let mut at = 6;
    let mut records = Vec::with_capacity((count as usize).min(payload.len() / 31));
    for _ in 0..count {
        let id = u64_at(payload, at)?;
        let element = *payload.get(at + 24)?;
        let (name, after) = utf16z(payload, at + 25)?;
        at = after;
        let params = u32_at(payload, at)? as usize;
        at += 4;
        let mut args = Vec::with_capacity(params.min(64));
        for _ in 0..params {
            args.push(u64_at(payload, at)?);
            at += 8;
        }
        records.push((id, TypeRecord { name, element, args }));
    }
    Some(records)
}

/// A bulk event's values: `count` elements of the payload's own element size (at least `min`).
struct Bulk<'a> {
    data: &'a [u8],
    stride: usize,
}

impl<'a> Iterator for Bulk<'a> {
    type Item = &'a [u8];
    fn next(&mut self) -> Option<&'a [u8]> {
        if self.data.len() < self.stride {
            return None;
        }
        let (value, rest) = self.data.split_at(self.stride);
        self.data = rest;
        Some(value)
    }
}

fn bulk(payload: &[u8], min: usize) -> Option<Bulk<'_>> {
    let count = u32_at(payload, 4)? as usize;
    let data = payload.get(BULK_HEADER..)?;
    if count == 0 {
        return Some(Bulk { data: &[], stride: min });
    }
    let stride = data.len() / count;
    (stride >= min && stride <= 4 * min).then_some(Bulk { data: &data[..stride * count], stride })
}

fn u64_at(data: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(data.get(at..at + 8)?.try_into().ok()?))
}

fn u32_at(data: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(data.get(at..at + 4)?.try_into().ok()?))
}

/// A NUL-terminated UTF-16 string at `at`, and the offset after its terminator.
fn utf16z(data: &[u8], at: usize) -> Option<(String, usize)> {
    let rest = data.get(at..)?;
    let units: Vec<u16> =
        rest.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).take_while(|&u| u != 0).collect();
    if rest.len() < (units.len() + 1) * 2 {
        return None;
    }
    Some((String::from_utf16_lossy(&units), at + (units.len() + 1) * 2))
}

/// How deep type arguments are spelt out (`List<List<…>>` beyond it).
const MAX_NESTING: usize = 8;

/// A type's name as C# spells it: keywords for the primitive types, generic arguments in angle
/// brackets instead of the arity suffix (`Dictionary<string, Acme.Session>`), arrays by element
/// type as the runtime names them (`Acme.Session[]`).
fn display_name(types: &HashMap<u64, TypeRecord>, id: u64, depth: usize) -> String {
    let Some(record) = types.get(&id) else { return format!("<type 0x{id:x}>") };
    let base = record.name.as_str();
    if matches!(record.element, ELEMENT_ARRAY | ELEMENT_SZARRAY) {
        // The element as named here, then the rank as the runtime spells it (`[]`, `[,]`).
        let rank = base.rfind('[').map_or("[]", |i| &base[i..]);
        return match record.args.first() {
            Some(&element) if depth < MAX_NESTING && rank.bytes().all(|b| b"[,]".contains(&b)) => {
                format!("{}{rank}", display_name(types, element, depth + 1))
            }
            _ => base.to_string(),
        };
    }
    if record.args.is_empty() {
        return keyword(base).map_or_else(|| base.to_string(), str::to_string);
    }
    if depth >= MAX_NESTING {
        return format!("{}<…>", strip_arity(base));
    }
    // A name that already spells its arguments (`List`1[[System.Int32, …]]`) loses them first.
    let base = base.split('[').next().unwrap_or(base);
    let args: Vec<String> = record.args.iter().map(|&a| display_name(types, a, depth + 1)).collect();
    format!("{}<{}>", strip_arity(base), args.join(", "))
}

/// The name without its arity markers (`Dictionary`2+Entry` → `Dictionary+Entry`): the
/// arguments follow in angle brackets.
pub fn strip_arity(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut chars = name.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '`' && chars.peek().is_some_and(char::is_ascii_digit) {
            while chars.peek().is_some_and(char::is_ascii_digit) {
                chars.next();
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// C#'s keyword for a primitive type's full name.
pub fn keyword(name: &str) -> Option<&'static str> {
    Some(match name {
        "System.Object" => "object",
        "System.String" => "string",
        "System.Boolean" => "bool",
        "System.Char" => "char",
        "System.SByte" => "sbyte",
        "System.Byte" => "byte",
        "System.Int16" => "short",
        "System.UInt16" => "ushort",
        "System.Int32" => "int",
        "System.UInt32" => "uint",
        "System.Int64" => "long",
        "System.UInt64" => "ulong",
        "System.Single" => "float",
        "System.Double" => "double",
        "System.Decimal" => "decimal",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(count: u32) -> Vec<u8> {
        let mut v = 0u32.to_le_bytes().to_vec();
        v.extend(count.to_le_bytes());
        v.extend(1u16.to_le_bytes());
        v
    }

    fn nodes(list: &[(u64, u64, u64, u64)]) -> Vec<u8> {
        let mut v = header(list.len() as u32);
        for &(a, s, t, e) in list {
            for x in [a, s, t, e] {
                v.extend(x.to_le_bytes());
            }
        }
        v
    }

    /// Edges as the runtime's structure lays them out: 16 bytes (8 of address, 4 of field id, 4 of padding).
    fn edges(list: &[u64]) -> Vec<u8> {
        let mut v = header(list.len() as u32);
        for &a in list {
            v.extend(a.to_le_bytes());
            v.extend([0u8; 8]);
        }
        v
    }

    fn roots(list: &[(u64, u8, u32, u64)]) -> Vec<u8> {
        let mut v = header(list.len() as u32);
        for &(a, k, f, id) in list {
            v.extend(a.to_le_bytes());
            v.push(k);
            v.extend([0u8; 3]);
            v.extend(f.to_le_bytes());
            v.extend(id.to_le_bytes());
        }
        v
    }

    fn types(list: &[(u64, u8, &str, &[u64])]) -> Vec<u8> {
        let mut v = (list.len() as u32).to_le_bytes().to_vec();
        v.extend(1u16.to_le_bytes());
        for &(id, element, name, args) in list {
            v.extend(id.to_le_bytes());
            v.extend(0u64.to_le_bytes());
            v.extend(0u32.to_le_bytes());
            v.extend(0u32.to_le_bytes());
            v.push(element);
            for u in name.encode_utf16().chain([0]) {
                v.extend(u.to_le_bytes());
            }
            v.extend((args.len() as u32).to_le_bytes());
            for a in args {
                v.extend(a.to_le_bytes());
            }
        }
        v
    }

    /// `GCBulkRootStaticVar`: `(slot, object, object's type, field)` each.
    fn static_vars(list: &[(u64, u64, u64, &str)]) -> Vec<u8> {
        let mut v = (list.len() as u32).to_le_bytes().to_vec();
        v.extend(0x7000u64.to_le_bytes());
        v.extend(1u16.to_le_bytes());
        for &(slot, object, type_id, field) in list {
            for x in [slot, object, type_id] {
                v.extend(x.to_le_bytes());
            }
            v.extend(0u32.to_le_bytes());
            for u in field.encode_utf16().chain([0]) {
                v.extend(u.to_le_bytes());
            }
        }
        v
    }

    #[test]
    fn static_roots_are_named_by_the_declaring_type_the_agent_found_for_their_slot() {
        let payload = static_vars(&[(0x9000, 0x100, 1, "Items"), (0x9008, 0x200, 2, "Empty"), (0x9010, 0, 2, "None")]);
        // The agent is asked for the object types and, for each slot holding an object, its owner.
        let ids = ids_to_name(GC_BULK_ROOT_STATIC_VAR, &payload);
        assert!(ids.contains(&(IdKind::Type, 1)));
        assert!(ids.contains(&(IdKind::Static { field: "Items".into(), object: 0x100, type_id: 1 }, 0x9000)));
        assert!(ids.contains(&(IdKind::Static { field: "Empty".into(), object: 0x200, type_id: 2 }, 0x9008)));
        assert!(!ids.iter().any(|(_, id)| *id == 0x9010));

        let mut d = ClrHeapDecoder::new(RunFacts::default());
        d.event(GC_BULK_NODE, &nodes(&[(0x100, 24, 1, 0), (0x200, 24, 2, 0)]));
        d.event(GC_BULK_ROOT_STATIC_VAR, &payload);
        d.event(
            BULK_TYPE,
            &types(&[(1, 0x12, "System.Collections.Generic.Dictionary`2", &[2, 2]), (2, 0x12, "System.String", &[])]),
        );
        // Only the first slot's owner was found (the second's is, say, a generic class).
        d.names(&[(0x9000, format!("{STATIC_PREFIX}Acme.Cache"))]);
        assert_eq!(d.malformed(), 0);
        let heap = d.finish().unwrap();
        let mut names: Vec<&str> = heap.roots.iter().map(|r| r.name.as_str()).collect();
        names.sort();
        assert_eq!(names, ["Acme.Cache.Items", "string.Empty"]);
        assert!(heap.roots.iter().all(|r| r.kind == RootKind::StaticField));
    }

    #[test]
    fn nodes_and_edges_pair_up_whichever_stream_runs_ahead() {
        let mut d = ClrHeapDecoder::new(RunFacts::default());
        // Types after the nodes, edges split over two events, the second after more nodes.
        d.event(GC_BULK_NODE, &nodes(&[(0x100, 24, 1, 2), (0x200, 40, 2, 0)]));
        d.event(GC_BULK_EDGE, &edges(&[0x200]));
        d.event(GC_BULK_NODE, &nodes(&[(0x300, 32, 3, 1)]));
        d.event(GC_BULK_EDGE, &edges(&[0x300, 0x100]));
        d.event(GC_BULK_ROOT_EDGE, &roots(&[(0x100, ROOT_HANDLE, 0, 0x5000), (0x300, ROOT_HANDLE, FLAG_WEAK, 0x5008)]));
        d.event(
            BULK_TYPE,
            &types(&[
                (1, 0x12, "System.Collections.Generic.Dictionary`2", &[4, 3]),
                (2, 0x12, "System.String", &[]),
                (3, 0x12, "Acme.Session", &[]),
                (4, 0x12, "System.String", &[]),
            ]),
        );
        assert_eq!(d.malformed(), 0);
        let heap = d.finish().unwrap();
        heap.validate().unwrap();
        assert_eq!(heap.objects(), 3);
        assert_eq!(heap.type_name(0), "System.Collections.Generic.Dictionary<string, Acme.Session>");
        assert_eq!(heap.type_name(1), "string");
        assert_eq!(heap.references_of(0), [1, 2]);
        assert_eq!(heap.references_of(2), [0]);
        assert_eq!(heap.roots.len(), 2);
        assert_eq!(heap.roots[0].kind, RootKind::StrongHandle);
        assert_eq!(heap.roots[1].kind, RootKind::WeakHandle);
    }

    #[test]
    fn stack_roots_take_the_method_names_that_come_at_the_end() {
        let mut d = ClrHeapDecoder::new(RunFacts::default());
        d.event(GC_BULK_NODE, &nodes(&[(0x100, 24, 1, 0), (0x200, 24, 1, 0)]));
        d.event(GC_BULK_ROOT_EDGE, &roots(&[(0x100, ROOT_STACK, 0, 0x7000), (0x200, ROOT_STACK, 0, 0x7008)]));
        // The agent names the frames' methods after the collection, in `HeapEnd`.
        d.names(&[(0x7000, format!("{METHOD_PREFIX}Acme.Program.Main"))]);
        let heap = d.finish().unwrap();
        let mut names: Vec<&str> = heap.roots.iter().map(|r| r.name.as_str()).collect();
        names.sort();
        assert_eq!(names, ["stack", "stack: Acme.Program.Main"]);
        assert!(heap.roots.iter().all(|r| r.kind == RootKind::Stack));
    }

    #[test]
    fn references_may_come_before_their_nodes() {
        let mut d = ClrHeapDecoder::new(RunFacts::default());
        d.event(GC_BULK_NODE, &nodes(&[(0x100, 24, 1, 1)]));
        // The edge buffer filled first: 0x100's reference and 0x200's two, before 0x200.
        d.event(GC_BULK_EDGE, &edges(&[0x200, 0x100, 0x300]));
        d.event(GC_BULK_NODE, &nodes(&[(0x200, 24, 1, 2), (0x300, 24, 1, 0)]));
        let heap = d.finish().unwrap();
        assert_eq!(heap.references_of(0), [1]);
        assert_eq!(heap.references_of(1), [0, 2]);
        assert!(heap.references_of(2).is_empty());
    }

    #[test]
    fn payloads_that_do_not_fit_are_skipped_and_counted() {
        let mut d = ClrHeapDecoder::new(RunFacts::default());
        let mut short = nodes(&[(0x100, 24, 1, 0)]);
        short.truncate(20);
        d.event(GC_BULK_NODE, &short);
        d.event(BULK_TYPE, &[1, 0, 0, 0, 1, 0, 7]);
        d.event(GC_BULK_EDGE, &[]);
        assert_eq!(d.malformed(), 3);
        assert_eq!(d.finish().unwrap().objects(), 0);
    }

    #[test]
    fn arrays_are_named_by_their_element_and_unknown_types_say_so() {
        let mut t = HashMap::new();
        let record = |name: &str, element, args: &[u64]| TypeRecord { name: name.into(), element, args: args.to_vec() };
        t.insert(1, record("Acme.Session[]", ELEMENT_SZARRAY, &[3]));
        t.insert(2, record("System.Collections.Generic.List`1", 0x12, &[2]));
        t.insert(3, record("Acme.Session", 0x12, &[]));
        // As the runtime names them, and as the agent renamed the nested one.
        t.insert(4, record("Entry[System.String,Acme.Session][]", ELEMENT_SZARRAY, &[5]));
        t.insert(5, record("System.Collections.Generic.Dictionary`2+Entry", 0x11, &[6, 3]));
        t.insert(6, record("System.String", 0x0e, &[]));
        t.insert(7, record("System.String[,]", ELEMENT_ARRAY, &[6]));
        assert_eq!(display_name(&t, 1, 0), "Acme.Session[]");
        assert_eq!(display_name(&t, 4, 0), "System.Collections.Generic.Dictionary+Entry<string, Acme.Session>[]");
        assert_eq!(display_name(&t, 7, 0), "string[,]");
        assert_eq!(display_name(&t, 9, 0), "<type 0x9>");
        assert!(display_name(&t, 2, 0).starts_with("System.Collections.Generic.List<System.Collections.Generic.List<"));
        // Eight levels spelt out, the ninth elided.
        assert!(display_name(&t, 2, 0).ends_with(&format!("List<…>{}", ">".repeat(MAX_NESTING))));
    }
}
