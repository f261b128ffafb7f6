//! Turning the runtime's stream of objects, references and roots into a [`HeapSnapshot`].
//!
//! The agent streams what the runtime reports, in the runtime's order: an object's references can
//! name objects the stream has not reached yet, and the same object can be named by many. Objects
//! are known by the runtime's id (an address), which the builder maps to dense indices by sorting
//! once at the end, rather than through a hash map (a map entry costs 20–30 bytes; a sorted
//! 16-byte record and a binary search cost nothing more).

use std::collections::HashMap;

use crate::model::{EdgeFields, HeapSnapshot, MAX_OBJECTS, NONE, ObjectIndex, Root, RootKind, RunFacts};

/// Why the builder could not make a snapshot.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    #[error("the heap has {0} objects, above the {MAX_OBJECTS} a snapshot can hold")]
    TooManyObjects(usize),
    #[error("the heap has {0} references, above the 4,294,967,295 a snapshot can hold")]
    TooManyReferences(usize),
}

/// An object as reported: the runtime's id, its type, its size (16 bytes, see the module doc).
#[derive(Debug, Clone, Copy)]
struct RawObject {
    id: u64,
    ty: u32,
    size: u32,
}

/// A reference as reported, 20 bytes (no padding: `u64`s split in halves).
#[derive(Debug, Clone, Copy)]
struct RawReference {
    from: [u32; 2],
    to: [u32; 2],
    field: u32,
}

fn split(id: u64) -> [u32; 2] {
    [id as u32, (id >> 32) as u32]
}

fn join(halves: [u32; 2]) -> u64 {
    halves[0] as u64 | (halves[1] as u64) << 32
}

/// Collects objects, references and roots in any order, then [`HeapBuilder::finish`]es them into
/// a compact [`HeapSnapshot`]. References and roots to objects never added are dropped and
/// counted ([`HeapSnapshot::missing_references`]); an object added twice keeps its first record.
#[derive(Debug, Default)]
pub struct HeapBuilder {
    run: RunFacts,
    types: Vec<String>,
    type_index: HashMap<String, u32>,
    fields: Vec<String>,
    field_index: HashMap<String, u32>,
    objects: Vec<RawObject>,
    large_sizes: Vec<(u64, u64)>,
    references: Vec<RawReference>,
    any_field: bool,
    roots: Vec<(RootKind, String, u64)>,
}

impl HeapBuilder {
    pub fn new(run: RunFacts) -> Self {
        HeapBuilder { run, ..Default::default() }
    }

    /// The index of the type named `name`, added on first use.
    pub fn intern_type(&mut self, name: &str) -> u32 {
        intern(&mut self.types, &mut self.type_index, name)
    }

    /// A new type index, named later ([`HeapBuilder::name_type`]): for a stream that refers to
    /// types by the runtime's id before it describes them. Types that end up with one name are
    /// merged when the snapshot is finished.
    pub fn add_type(&mut self) -> u32 {
        self.types.push(String::new());
        (self.types.len() - 1) as u32
    }

    /// Names (or renames) type `ty`.
    pub fn name_type(&mut self, ty: u32, name: &str) {
        if let Some(slot) = self.types.get_mut(ty as usize) {
            self.type_index.remove(slot.as_str());
            *slot = name.to_string();
            self.type_index.entry(name.to_string()).or_insert(ty);
        }
    }

    /// The index of the field named `name`, added on first use.
    pub fn intern_field(&mut self, name: &str) -> u32 {
        intern(&mut self.fields, &mut self.field_index, name)
    }

    /// An object: the runtime's id for it, its type (from [`HeapBuilder::intern_type`]) and its
    /// shallow size in bytes.
    pub fn add_object(&mut self, id: u64, ty: u32, size: u64) {
        let small = u32::try_from(size).ok().filter(|&s| s != u32::MAX);
        if small.is_none() {
            self.large_sizes.push((id, size));
        }
        self.objects.push(RawObject { id, ty, size: small.unwrap_or(u32::MAX) });
    }

    /// A reference from object `from` to object `to`, through the field `field` (from
    /// [`HeapBuilder::intern_field`]) when the runtime tells it.
    pub fn add_reference(&mut self, from: u64, to: u64, field: Option<u32>) {
        self.any_field |= field.is_some();
        self.references.push(RawReference { from: split(from), to: split(to), field: field.unwrap_or(NONE) });
    }

    /// A root of `kind`, named `name`, pointing at the object `to`.
    pub fn add_root(&mut self, kind: RootKind, name: &str, to: u64) {
        self.roots.push((kind, name.to_string(), to));
    }

    /// The compact snapshot. Sorts the objects by id, maps each reference's ends to indices by
    /// binary search, and lays the references out by source (each source's references in the
    /// order they came).
    pub fn finish(self) -> Result<HeapSnapshot, BuildError> {
        let HeapBuilder { run, types, fields, mut objects, large_sizes, mut references, any_field, roots, .. } = self;
        let types = merge_types(types, &mut objects);
        objects.sort_by_key(|o| o.id); // stable: the first record of a duplicate id wins
        objects.dedup_by_key(|o| o.id);
        let n = objects.len();
        if n > MAX_OBJECTS {
            return Err(BuildError::TooManyObjects(n));
        }
        let index_of = |id: u64| objects.binary_search_by_key(&id, |o| o.id).ok().map(|i| i as u32);

        // Map both ends in place (index in the low half, NONE for a missing object), counting
        // each source's references into `offsets[from + 1]`.
        let mut offsets = vec![0u32; n + 1];
        let mut missing = 0u64;
        let mut last = (u64::MAX, None);
        for r in references.iter_mut() {
            let from_id = join(r.from);
            if last.0 != from_id {
                // The runtime reports an object's references together: one search per object.
                last = (from_id, index_of(from_id));
            }
            match (last.1, index_of(join(r.to))) {
                (Some(from), Some(to)) => {
                    r.from[0] = from;
                    r.to[0] = to;
                    offsets[from as usize + 1] += 1;
                }
                _ => {
                    r.from[0] = NONE;
                    missing += 1;
                }
            }
        }
        let kept = references.len() - missing as usize;
        if kept > u32::MAX as usize {
            return Err(BuildError::TooManyReferences(kept));
        }
        for i in 1..=n {
            offsets[i] += offsets[i - 1];
        }
        // Fill with `offsets[from]` as each source's cursor, then shift the offsets back.
        let mut edges = vec![0u32; kept];
        let mut edge_fields = EdgeFields::new(if any_field { kept } else { 0 }, fields.len());
        for r in references.iter().filter(|r| r.from[0] != NONE) {
            let slot = offsets[r.from[0] as usize] as usize;
            edges[slot] = r.to[0];
            if any_field {
                edge_fields.set(slot, r.field);
            }
            offsets[r.from[0] as usize] += 1;
        }
        drop(references);
        offsets.copy_within(0..n, 1);
        offsets[0] = 0;

        let mut large: Vec<(ObjectIndex, u64)> = large_sizes
            .into_iter()
            .filter_map(|(id, size)| {
                let i = index_of(id)?;
                (objects[i as usize].size == u32::MAX).then_some((i, size))
            })
            .collect();
        large.sort_by_key(|&(i, _)| i);
        large.dedup_by_key(|&mut (i, _)| i);
        let roots: Vec<Root> = roots
            .into_iter()
            .filter_map(|(kind, name, id)| match index_of(id) {
                Some(object) => Some(Root { kind, name, object }),
                None => {
                    missing += 1;
                    None
                }
            })
            .collect();
        let object_types = objects.iter().map(|o| o.ty).collect();
        let sizes = objects.iter().map(|o| o.size).collect();
        drop(objects);

        Ok(HeapSnapshot {
            run,
            types,
            fields,
            roots,
            missing_references: missing,
            object_types,
            sizes,
            large_sizes: large,
            offsets,
            edges,
            edge_fields: any_field.then_some(edge_fields),
        })
    }
}

/// Types named alike become one (the first index's), and the objects follow.
fn merge_types(types: Vec<String>, objects: &mut [RawObject]) -> Vec<String> {
    let mut first: HashMap<&str, u32> = HashMap::with_capacity(types.len());
    let mut merged = Vec::with_capacity(types.len());
    let mut remap = Vec::with_capacity(types.len());
    for name in &types {
        let next = merged.len() as u32;
        let index = *first.entry(name.as_str()).or_insert_with(|| {
            merged.push(name.clone());
            next
        });
        remap.push(index);
    }
    if merged.len() < types.len() {
        for o in objects.iter_mut() {
            if let Some(&to) = remap.get(o.ty as usize) {
                o.ty = to;
            }
        }
    }
    merged
}

fn intern(names: &mut Vec<String>, index: &mut HashMap<String, u32>, name: &str) -> u32 {
    if let Some(&i) = index.get(name) {
        return i;
    }
    let i = names.len() as u32;
    names.push(name.to_string());
    index.insert(name.to_string(), i);
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_named_later_alike_are_merged() {
        let mut b = HeapBuilder::new(RunFacts::default());
        let (a, c, d) = (b.add_type(), b.add_type(), b.add_type());
        b.add_object(0x10, a, 24);
        b.add_object(0x20, c, 24);
        b.add_object(0x30, d, 24);
        b.name_type(a, "Acme.Box<int>");
        b.name_type(c, "string");
        b.name_type(d, "Acme.Box<int>");
        let heap = b.finish().unwrap();
        heap.validate().unwrap();
        assert_eq!(heap.types, ["Acme.Box<int>", "string"]);
        assert_eq!(
            [heap.type_name(0), heap.type_name(1), heap.type_name(2)],
            ["Acme.Box<int>", "string", "Acme.Box<int>"]
        );
    }

    #[test]
    fn references_may_come_before_their_objects_and_missing_ones_are_counted() {
        let mut b = HeapBuilder::new(RunFacts::default());
        let t = b.intern_type("Node");
        let next = b.intern_field("next");
        b.add_reference(0x30, 0x10, Some(next));
        b.add_reference(0x10, 0x20, None);
        b.add_reference(0x10, 0x99, None); // never added
        b.add_root(RootKind::StaticField, "Acme.Head", 0x30);
        b.add_root(RootKind::Stack, "main", 0x98); // never added
        b.add_object(0x20, t, 24);
        b.add_object(0x10, t, 5 << 32);
        b.add_object(0x30, t, 32);
        b.add_object(0x30, t, 999); // a duplicate: the first record wins
        let heap = b.finish().unwrap();
        heap.validate().unwrap();
        assert_eq!(heap.objects(), 3);
        assert_eq!(heap.missing_references, 2);
        // Indices follow the ids: 0x10 → 0, 0x20 → 1, 0x30 → 2.
        assert_eq!(heap.references_of(2), &[0]);
        assert_eq!(heap.references_of(0), &[1]);
        assert_eq!(heap.references_with_fields(2).collect::<Vec<_>>(), vec![(0, next)]);
        assert_eq!(heap.references_with_fields(0).collect::<Vec<_>>(), vec![(1, NONE)]);
        assert_eq!(heap.size_of(0), 5 << 32);
        assert_eq!(heap.size_of(2), 32);
        assert_eq!(heap.roots, vec![Root { kind: RootKind::StaticField, name: "Acme.Head".into(), object: 2 }]);
    }

    #[test]
    fn field_indices_widen_beyond_65534_names() {
        let mut b = HeapBuilder::new(RunFacts::default());
        let t = b.intern_type("T");
        let last = (0..70_000).map(|i| b.intern_field(&format!("f{i}"))).last().unwrap();
        b.add_object(1, t, 8);
        b.add_object(2, t, 8);
        b.add_reference(1, 2, Some(last));
        b.add_reference(2, 1, None);
        let heap = b.finish().unwrap();
        heap.validate().unwrap();
        assert!(matches!(heap.edge_fields, Some(EdgeFields::Wide(_))));
        assert_eq!(heap.references_with_fields(0).collect::<Vec<_>>(), vec![(1, 69_999)]);
        assert_eq!(heap.references_with_fields(1).collect::<Vec<_>>(), vec![(0, NONE)]);
        assert_eq!(heap.field_name(last), Some("f69999"));
    }
}
