//! The dominator tree, retained sizes and path groups on random graphs, against their
//! definitions computed the slow way: `d` dominates `v` iff `v` is reachable from the roots and
//! is not once `d` is removed.

use proptest::prelude::*;
use sonde_heap::{Analysis, Dominator, HeapBuilder, HeapSnapshot, PathIndex, RootKind, RunFacts, TreeLimits};

/// A random heap: `n` objects of up to three types, random references (self-references and
/// duplicates included), a few roots of which some are weak.
fn heaps() -> impl Strategy<Value = HeapSnapshot> {
    (1usize..40).prop_flat_map(|n| {
        (
            proptest::collection::vec((0..3u32, 1..100u64), n),
            proptest::collection::vec((0..n as u64, 0..n as u64), 0..n * 3),
            proptest::collection::vec((0..n as u64, any::<bool>()), 1..5),
        )
            .prop_map(|(objects, references, roots)| {
                let mut b = HeapBuilder::new(RunFacts::default());
                for t in ["A", "B", "C"] {
                    b.intern_type(t);
                }
                let field = b.intern_field("f");
                // Reversed ids: the builder's sort must map them back.
                let id = |i: u64| 1_000_000 - i * 8;
                for (i, &(ty, size)) in objects.iter().enumerate() {
                    b.add_object(id(i as u64), ty, size);
                }
                for (from, to) in references {
                    b.add_reference(id(from), id(to), Some(field));
                }
                for (i, (to, weak)) in roots.into_iter().enumerate() {
                    let kind = if weak && i > 0 { RootKind::WeakHandle } else { RootKind::StaticField };
                    b.add_root(kind, "R", id(to));
                }
                b.finish().unwrap()
            })
    })
}

/// The objects reachable from the retaining roots without passing through `removed`.
fn reachable(heap: &HeapSnapshot, removed: Option<u32>) -> Vec<bool> {
    let mut seen = vec![false; heap.objects()];
    let mut stack: Vec<u32> =
        heap.roots.iter().filter(|r| r.kind.retains()).map(|r| r.object).filter(|&o| Some(o) != removed).collect();
    while let Some(v) = stack.pop() {
        if std::mem::replace(&mut seen[v as usize], true) {
            continue;
        }
        stack.extend(heap.references_of(v).iter().copied().filter(|&w| Some(w) != removed && !seen[w as usize]));
    }
    seen
}

/// `dominated[d][v]`: `d` strictly dominates `v`, by the definition.
fn naive_dominance(heap: &HeapSnapshot) -> (Vec<bool>, Vec<Vec<bool>>) {
    let all = reachable(heap, None);
    let dominated = (0..heap.objects() as u32)
        .map(|d| {
            let without = reachable(heap, Some(d));
            (0..heap.objects()).map(|v| v != d as usize && all[v] && all[d as usize] && !without[v]).collect()
        })
        .collect();
    (all, dominated)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn dominators_match_the_definition(heap in heaps()) {
        let analysis = Analysis::new(&heap, TreeLimits::default());
        let (all, dominated) = naive_dominance(&heap);
        for v in 0..heap.objects() as u32 {
            prop_assert_eq!(analysis.is_reachable(v), all[v as usize]);
            // The idom chain is exactly the set of strict dominators.
            let mut chain = vec![false; heap.objects()];
            let mut up = analysis.immediate_dominator(v);
            let mut steps = 0;
            while let Some(Dominator::Object(d)) = up {
                chain[d as usize] = true;
                up = analysis.immediate_dominator(d);
                steps += 1;
                prop_assert!(steps <= heap.objects(), "a cycle in the dominator tree");
            }
            for d in 0..heap.objects() {
                prop_assert_eq!(chain[d], dominated[d][v as usize], "does {} dominate {}?", d, v);
            }
        }
    }

    #[test]
    fn retained_sizes_match_the_definition(heap in heaps()) {
        let analysis = Analysis::new(&heap, TreeLimits::default());
        let (all, dominated) = naive_dominance(&heap);
        let n = heap.objects();
        for v in 0..n {
            let expected: u64 = if all[v] {
                heap.size_of(v as u32) + (0..n).filter(|&w| dominated[v][w]).map(|w| heap.size_of(w as u32)).sum::<u64>()
            } else {
                0
            };
            prop_assert_eq!(analysis.retained(v as u32), expected, "object {}", v);
        }
        // By type: the union of what the type's instances dominate, each object once.
        for t in 0..heap.types.len() as u32 {
            let held = |w: usize| (0..n).any(|v| heap.type_of(v as u32) == t && all[v] && (v == w || dominated[v][w]));
            let expected: u64 = (0..n).filter(|&w| held(w)).map(|w| heap.size_of(w as u32)).sum();
            prop_assert_eq!(analysis.types[t as usize].retained, expected, "type {}", t);
        }
    }

    #[test]
    fn path_groups_cover_every_reachable_instance_once(heap in heaps()) {
        let all = reachable(&heap, None);
        let index = PathIndex::new(&heap);
        for t in 0..heap.types.len() as u32 {
            let groups = index.groups(&heap, t);
            let instances = (0..heap.objects()).filter(|&v| all[v] && heap.type_of(v as u32) == t);
            prop_assert_eq!(groups.iter().map(|g| g.objects).sum::<u64>(), instances.clone().count() as u64);
            prop_assert_eq!(groups.iter().map(|g| g.bytes).sum::<u64>(), instances.map(|v| heap.size_of(v as u32)).sum::<u64>());
            prop_assert!(groups.windows(2).all(|w| w[0].bytes >= w[1].bytes), "the most bytes first");
        }
    }

    #[test]
    fn a_heap_round_trips_through_its_file(heap in heaps()) {
        let mut data = Vec::new();
        sonde_heap::write_heap(&mut data, &heap).unwrap();
        prop_assert_eq!(sonde_heap::read_heap(&data[..]).unwrap(), heap);
    }
}

#[test]
fn the_profile_magic_is_the_profile_files() {
    assert_eq!(sonde_heap::file::PROFILE_MAGIC, sonde_profile::file::MAGIC);
}
