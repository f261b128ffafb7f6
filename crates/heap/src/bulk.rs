//! Writing a heap walk in CoreCLR's bulk layouts ([`crate::clr`] reads them), for an agent
//! whose runtime does not write them itself (Mono): the controller then decodes every runtime's
//! snapshot the same way.
//!
//! A [`BulkWriter`] fills one payload of one event (`GCBulkNode`, `GCBulkEdge`,
//! `GCBulkRootEdge`: the packed layouts) in a buffer allocated once, and hands it to its `flush`
//! before it would outgrow [`PAYLOAD_BYTES`]: on Mono it runs with the world stopped, where the
//! agent must not allocate. [`static_vars`] writes `GCBulkRootStaticVar` payloads, which the agent
//! builds after the collection.

use crate::clr::{GC_BULK_EDGE, GC_BULK_NODE, GC_BULK_ROOT_EDGE};

/// The most a payload holds: under the 64 KB an event of CoreCLR's may hold.
pub const PAYLOAD_BYTES: usize = 60 * 1024;

/// `Index u32, Count u32, ClrInstanceID u16`.
const HEADER: usize = 10;

/// `GCRootKind`: where a root was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum RootKind {
    Stack = 0,
    Finalizer = 1,
    Handle = 2,
    Other = 3,
}

/// One bulk event's payloads, written in turn.
#[derive(Debug)]
pub struct BulkWriter {
    event: u32,
    /// The payload's place in its event's sequence (`Index`).
    index: u32,
    count: u32,
    buffer: Vec<u8>,
}

impl BulkWriter {
    fn new(event: u32) -> Self {
        let mut buffer = Vec::with_capacity(PAYLOAD_BYTES);
        buffer.resize(HEADER, 0);
        BulkWriter { event, index: 0, count: 0, buffer }
    }

    /// `GCBulkNode`: per object `Address, Size, TypeID, EdgeCount` (u64 each).
    pub fn nodes() -> Self {
        Self::new(GC_BULK_NODE)
    }

    /// `GCBulkEdge`: per reference `Value u64, ReferencingFieldID u32`, in the nodes' order.
    pub fn edges() -> Self {
        Self::new(GC_BULK_EDGE)
    }

    /// `GCBulkRootEdge`: per root `RootedNodeAddress u64, GCRootKind u8, GCRootFlag u32,
    /// GCRootID u64`.
    pub fn roots() -> Self {
        Self::new(GC_BULK_ROOT_EDGE)
    }

    pub fn node(&mut self, address: u64, size: u64, type_id: u64, edges: u64, flush: &mut impl FnMut(u32, &[u8])) {
        self.make_room(32, flush);
        for value in [address, size, type_id, edges] {
            self.buffer.extend_from_slice(&value.to_le_bytes());
        }
        self.count += 1;
    }

    pub fn edge(&mut self, target: u64, flush: &mut impl FnMut(u32, &[u8])) {
        self.make_room(12, flush);
        self.buffer.extend_from_slice(&target.to_le_bytes());
        self.buffer.extend_from_slice(&0u32.to_le_bytes());
        self.count += 1;
    }

    pub fn root(&mut self, object: u64, kind: RootKind, id: u64, flush: &mut impl FnMut(u32, &[u8])) {
        self.make_room(21, flush);
        self.buffer.extend_from_slice(&object.to_le_bytes());
        self.buffer.push(kind as u8);
        self.buffer.extend_from_slice(&0u32.to_le_bytes());
        self.buffer.extend_from_slice(&id.to_le_bytes());
        self.count += 1;
    }

    /// Hands the payload written so far (if any) to `flush`.
    pub fn finish(&mut self, flush: &mut impl FnMut(u32, &[u8])) {
        if self.count == 0 {
            return;
        }
        self.buffer[0..4].copy_from_slice(&self.index.to_le_bytes());
        self.buffer[4..8].copy_from_slice(&self.count.to_le_bytes());
        self.buffer[8..10].copy_from_slice(&0u16.to_le_bytes());
        flush(self.event, &self.buffer);
        self.index += 1;
        self.count = 0;
        self.buffer.truncate(HEADER);
    }

    fn make_room(&mut self, element: usize, flush: &mut impl FnMut(u32, &[u8])) {
        if self.buffer.len() + element > PAYLOAD_BYTES {
            self.finish(flush);
        }
    }
}

/// One static field holding an object: its slot, the object, the object's type id (0: unknown)
/// and the field's name.
#[derive(Debug, Clone)]
pub struct StaticVar {
    pub slot: u64,
    pub object: u64,
    pub type_id: u64,
    pub field: String,
}

/// `GCBulkRootStaticVar` payloads (`Count u32, AppDomainID u64, ClrInstanceID u16`, then per
/// static `GCRootID u64, ObjectID u64, TypeID u64, Flags u32, FieldName` in UTF-16 with its NUL),
/// each under [`PAYLOAD_BYTES`].
pub fn static_vars(vars: &[StaticVar]) -> Vec<Vec<u8>> {
    const STATIC_HEADER: usize = 14;
    let mut payloads = Vec::new();
    let mut payload = vec![0u8; STATIC_HEADER];
    let mut count = 0u32;
    let mut close = |payload: &mut Vec<u8>, count: &mut u32| {
        if *count > 0 {
            payload[0..4].copy_from_slice(&count.to_le_bytes());
            payloads.push(std::mem::replace(payload, vec![0u8; STATIC_HEADER]));
            *count = 0;
        }
    };
    for var in vars {
        let name: Vec<u16> = var.field.encode_utf16().take(1024).chain([0]).collect();
        if payload.len() + 28 + name.len() * 2 > PAYLOAD_BYTES {
            close(&mut payload, &mut count);
        }
        for value in [var.slot, var.object, var.type_id] {
            payload.extend_from_slice(&value.to_le_bytes());
        }
        payload.extend_from_slice(&0u32.to_le_bytes());
        for unit in name {
            payload.extend_from_slice(&unit.to_le_bytes());
        }
        count += 1;
    }
    close(&mut payload, &mut count);
    payloads
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clr::{ClrHeapDecoder, GC_BULK_ROOT_STATIC_VAR, STATIC_PREFIX};
    use crate::model::{RootKind as ModelRootKind, RunFacts};

    #[test]
    fn what_is_written_decodes_as_the_runtime_s_own_records() {
        let mut payloads = Vec::new();
        let mut flush = |event: u32, payload: &[u8]| payloads.push((event, payload.to_vec()));
        let (mut nodes, mut edges, mut roots) = (BulkWriter::nodes(), BulkWriter::edges(), BulkWriter::roots());
        // A chain long enough to fill several payloads of each kind.
        let n = 5_000u64;
        for i in 0..n {
            let address = 0x1000 + i * 0x20;
            nodes.node(address, 32, 7, u64::from(i + 1 < n), &mut flush);
            if i + 1 < n {
                edges.edge(address + 0x20, &mut flush);
            }
        }
        roots.root(0x1000, RootKind::Stack, 0, &mut flush);
        roots.root(0x1000, RootKind::Handle, 0, &mut flush);
        nodes.finish(&mut flush);
        edges.finish(&mut flush);
        roots.finish(&mut flush);
        assert!(payloads.iter().filter(|(e, _)| *e == GC_BULK_NODE).count() > 1);
        assert!(payloads.iter().all(|(_, p)| p.len() <= PAYLOAD_BYTES));
        for static_payload in
            static_vars(&[StaticVar { slot: 0x9000, object: 0x1000, type_id: 0, field: "Items".into() }])
        {
            payloads.push((GC_BULK_ROOT_STATIC_VAR, static_payload));
        }

        let mut decoder = ClrHeapDecoder::new(RunFacts::default());
        // Edges first: the decoder pairs them with their nodes whichever stream runs ahead.
        payloads.sort_by_key(|(e, _)| u32::from(*e != GC_BULK_EDGE));
        for (event, payload) in &payloads {
            decoder.event(*event, payload);
        }
        decoder.names(&[(7, "Acme.Order".into()), (0x9000, format!("{STATIC_PREFIX}Acme.Cache"))]);
        assert_eq!(decoder.malformed(), 0);
        let snapshot = decoder.finish().unwrap();
        assert_eq!(snapshot.objects(), n as usize);
        assert_eq!(snapshot.references(), n as usize - 1);
        let kinds: Vec<ModelRootKind> = snapshot.roots.iter().map(|r| r.kind).collect();
        assert!(kinds.contains(&ModelRootKind::Stack) && kinds.contains(&ModelRootKind::StaticField), "{kinds:?}");
        assert!(snapshot.roots.iter().any(|r| r.name == "Acme.Cache.Items"));
    }
}
