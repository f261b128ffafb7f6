use proptest::prelude::*;

use super::*;
use crate::testkit::{Builder, arb_profile};

fn edge(method: Option<u32>, calls: u64, total_ns: u64, total_samples: u64) -> Edge {
    Edge { method, calls, total_ns, total_samples }
}

#[test]
fn plain_tree() {
    let mut b = Builder::new();
    let (main, work, io) = (b.method("Main"), b.method("Work"), b.method("Io"));
    let t = b.thread();
    let root = b.node(t, None, main, 1, 10, 1);
    let w = b.node(t, Some(root), work, 3, 60, 6);
    b.node(t, Some(w), io, 5, 25, 2);
    b.node(t, Some(root), io, 1, 5, 0);
    let p = b.finish();
    let a = Analysis::new(&p);

    assert_eq!(
        *a.method(main),
        MethodStats { calls: 1, self_ns: 10, total_ns: 100, self_samples: 1, total_samples: 9, ..Default::default() }
    );
    assert_eq!(
        *a.method(io),
        MethodStats { calls: 6, self_ns: 30, total_ns: 30, self_samples: 2, total_samples: 2, ..Default::default() }
    );
    assert_eq!(a.totals(), Totals { calls: 10, total_ns: 100, total_samples: 9 });
    assert_eq!(a.callers(main), [edge(None, 1, 100, 9)]);
    assert_eq!(a.callers(io), [edge(Some(work), 5, 25, 2), edge(Some(main), 1, 5, 0)]);
    assert_eq!(a.callees(main), [edge(Some(work), 3, 85, 8), edge(Some(io), 1, 5, 0)]);
    assert_eq!(hot_path(&p), [root, w]);
}

#[test]
fn self_recursion_counts_the_outermost_call_once() {
    // Main → Fib → Fib → Fib: node totals 100 ⊃ 90 ⊃ 60 ⊃ 30.
    let mut b = Builder::new();
    let (main, fib) = (b.method("Main"), b.method("Fib"));
    let t = b.thread();
    let root = b.node(t, None, main, 1, 10, 0);
    let f1 = b.node(t, Some(root), fib, 1, 30, 0);
    let f2 = b.node(t, Some(f1), fib, 2, 30, 0);
    b.node(t, Some(f2), fib, 4, 30, 0);
    let p = b.finish();
    let a = Analysis::new(&p);

    assert_eq!(*a.method(fib), MethodStats { calls: 7, self_ns: 90, total_ns: 90, ..Default::default() });
    assert_eq!(a.method(main).total_ns, 100);
    // The recursive edge carries its outermost occurrence (f2, 60 ns) and every recursive call.
    assert_eq!(a.callers(fib), [edge(Some(main), 1, 90, 0), edge(Some(fib), 6, 60, 0)]);
    assert_eq!(a.callees(fib), [edge(Some(fib), 6, 60, 0)]);
    assert_eq!(a.callees(main), [edge(Some(fib), 1, 90, 0)]);
}

#[test]
fn events_sum_per_method_and_allocations_include_callees_once_under_recursion() {
    // Main → Fib → Fib, and Main → Io; allocations in every node, waits and throws in some.
    let mut b = Builder::new();
    let (main, fib, io) = (b.method("Main"), b.method("Fib"), b.method("Io"));
    let t = b.thread();
    let root = b.node(t, None, main, 1, 10, 0);
    let f1 = b.node(t, Some(root), fib, 1, 10, 0);
    let f2 = b.node(t, Some(f1), fib, 1, 10, 0);
    let i = b.node(t, Some(root), io, 1, 10, 0);
    let mut p = b.finish();
    let ev = |node, alloc_bytes, wait_ns, exceptions_thrown| crate::model::NodeEvents {
        node,
        alloc_bytes,
        alloc_count: alloc_bytes / 10,
        wait_ns,
        exceptions_thrown,
    };
    p.events.nodes = vec![ev(root, 1, 0, 0), ev(f1, 10, 0, 1), ev(f2, 100, 7, 2), ev(i, 1000, 5, 0)];
    p.validate().unwrap();
    assert_eq!(node_alloc_totals(&p), [1111, 110, 100, 1000]);
    let a = Analysis::new(&p);
    let fib = a.method(fib);
    assert_eq!((fib.alloc_bytes, fib.alloc_count, fib.total_alloc_bytes), (110, 11, 110));
    assert_eq!((fib.wait_ns, fib.exceptions_thrown), (7, 3));
    assert_eq!(a.method(main).total_alloc_bytes, 1111);
    assert_eq!((a.method(io).alloc_bytes, a.method(io).wait_ns), (1000, 5));
}

#[test]
fn mutual_recursion() {
    // Main → A → B → A → B, each with self 10: totals 50 ⊃ 40 ⊃ 30 ⊃ 20 ⊃ 10.
    let mut b = Builder::new();
    let (main, ma, mb) = (b.method("Main"), b.method("A"), b.method("B"));
    let t = b.thread();
    let n0 = b.node(t, None, main, 1, 10, 0);
    let n1 = b.node(t, Some(n0), ma, 1, 10, 0);
    let n2 = b.node(t, Some(n1), mb, 1, 10, 0);
    let n3 = b.node(t, Some(n2), ma, 1, 10, 0);
    b.node(t, Some(n3), mb, 1, 10, 0);
    let p = b.finish();
    let a = Analysis::new(&p);

    assert_eq!(a.method(ma).total_ns, 40);
    assert_eq!(a.method(mb).total_ns, 30);
    assert_eq!(a.method(ma).self_ns, 20);
    assert_eq!(a.callees(ma), [edge(Some(mb), 2, 30, 0)]);
    assert_eq!(a.callees(mb), [edge(Some(ma), 1, 20, 0)]);
    assert_eq!(a.callers(ma), [edge(Some(main), 1, 40, 0), edge(Some(mb), 1, 20, 0)]);
}

#[test]
fn recursion_split_across_siblings_is_summed() {
    // Two separate outermost Fib subtrees under Main both count.
    let mut b = Builder::new();
    let (main, fib) = (b.method("Main"), b.method("Fib"));
    let t = b.thread();
    let root = b.node(t, None, main, 1, 0, 0);
    let f1 = b.node(t, Some(root), fib, 1, 5, 0);
    b.node(t, Some(f1), fib, 1, 5, 0);
    b.node(t, Some(root), fib, 1, 7, 0);
    let p = b.finish();
    assert_eq!(Analysis::new(&p).method(fib).total_ns, 17);
}

#[test]
fn threads_are_separate_and_add_up() {
    let mut b = Builder::new();
    let (main, work) = (b.method("Main"), b.method("Work"));
    let (t0, t1) = (b.thread(), b.thread());
    let r0 = b.node(t0, None, main, 1, 5, 1);
    b.node(t0, Some(r0), work, 2, 20, 2);
    let r1 = b.node(t1, None, work, 1, 100, 10);
    b.node(t1, Some(r1), work, 4, 50, 5);
    let p = b.finish();

    let all = Analysis::new(&p);
    let only1 = Analysis::for_thread(&p, t1);
    assert_eq!(all.method(work).total_ns, 170);
    assert_eq!(only1.method(work).total_ns, 150);
    assert_eq!(only1.method(work).calls, 5);
    assert_eq!(*only1.method(main), MethodStats::default());
    assert_eq!(only1.totals(), Totals { calls: 5, total_ns: 150, total_samples: 15 });
    assert_eq!(all.totals().total_ns, 175);

    let threads = thread_totals(&p);
    assert_eq!(threads[0], ThreadTotals { calls: 3, self_samples: 3, total_ns: 25, total_samples: 3 });
    assert_eq!(threads[1], ThreadTotals { calls: 5, self_samples: 15, total_ns: 150, total_samples: 15 });
    assert_eq!(hot_path(&p), [r1], "the 50 ns child is below the 75 ns threshold");
}

#[test]
fn hot_path_falls_back_to_samples_and_handles_empty_profiles() {
    assert!(hot_path(&Builder::new().finish()).is_empty());

    let mut b = Builder::new();
    let m = b.method("M");
    let t = b.thread();
    let root = b.node(t, None, m, 0, 0, 1);
    let c = b.node(t, Some(root), m, 0, 0, 3);
    b.node(t, Some(root), m, 0, 0, 2);
    let p = b.finish();
    assert_eq!(hot_path(&p), [root, c]);
}

#[test]
fn deep_recursion_does_not_overflow_the_stack() {
    let mut b = Builder::new();
    let m = b.method("Deep");
    let t = b.thread();
    let mut parent = None;
    for _ in 0..200_000 {
        parent = Some(b.node(t, parent, m, 1, 1, 0));
    }
    let p = b.finish();
    let a = Analysis::new(&p);
    assert_eq!(*a.method(m), MethodStats { calls: 200_000, self_ns: 200_000, total_ns: 200_000, ..Default::default() });
    assert_eq!(hot_path(&p).len(), 200_000);
}

#[test]
fn absurd_values_saturate_instead_of_panicking() {
    // Nothing in a file stops a node from claiming u64::MAX; sums must not overflow.
    let mut b = Builder::new();
    let m = b.method("M");
    let t = b.thread();
    let root = b.node(t, None, m, u64::MAX, 0, 0);
    b.node(t, Some(root), m, u64::MAX, 0, 0);
    b.node(t, None, m, u64::MAX, 0, 0);
    let mut p = b.finish();
    for n in &mut p.nodes {
        (n.self_ns, n.total_ns, n.self_samples, n.total_samples) = (u64::MAX, u64::MAX, u64::MAX, u64::MAX);
    }
    let a = Analysis::new(&p);
    assert_eq!(a.method(m).calls, u64::MAX);
    assert_eq!(a.totals().total_ns, u64::MAX);
    assert_eq!(thread_totals(&p)[0].calls, u64::MAX);
    assert_eq!(hot_path(&p).len(), 2);
}

#[test]
fn call_tree_lists_children_in_order() {
    let mut b = Builder::new();
    let m = b.method("M");
    let t = b.thread();
    let r = b.node(t, None, m, 0, 0, 0);
    let c1 = b.node(t, Some(r), m, 0, 0, 0);
    let r2 = b.node(t, None, m, 0, 0, 0);
    let c2 = b.node(t, Some(r), m, 0, 0, 0);
    let tree = CallTree::new(&b.finish());
    assert_eq!(tree.roots(), [r, r2]);
    assert_eq!(tree.children(r), [c1, c2]);
    assert!(tree.children(c1).is_empty());
}

proptest! {
    #[test]
    fn invariants_hold_on_random_trees(p in arb_profile()) {
        let a = Analysis::new(&p);
        let methods = a.methods();

        let self_ns: u64 = p.nodes.iter().map(|n| n.self_ns).sum();
        let self_samples: u64 = p.nodes.iter().map(|n| n.self_samples).sum();
        prop_assert_eq!(methods.iter().map(|m| m.self_ns).sum::<u64>(), self_ns);
        prop_assert_eq!(methods.iter().map(|m| m.self_samples).sum::<u64>(), self_samples);

        let threads = thread_totals(&p);
        for (id, m) in methods.iter().enumerate() {
            prop_assert!(m.total_ns >= m.self_ns);
            prop_assert!(m.total_samples >= m.self_samples);
            let mut runs_on = vec![false; p.threads.len()];
            for n in p.nodes.iter().filter(|n| n.method as usize == id) {
                runs_on[n.thread as usize] = true;
            }
            let bound: u64 = threads.iter().zip(&runs_on).filter(|(_, on)| **on).map(|(t, _)| t.total_ns).sum();
            prop_assert!(m.total_ns <= bound, "method {} total {} > {}", id, m.total_ns, bound);

            // Every call arrives through exactly one caller edge.
            let id = id as u32;
            prop_assert_eq!(a.callers(id).iter().map(|e| e.calls).sum::<u64>(), m.calls);
            for e in a.callers(id) {
                prop_assert!(e.total_ns <= m.total_ns);
                if let Some(c) = e.method {
                    prop_assert!(e.total_ns <= a.method(c).total_ns);
                }
            }
        }

        // Paths never cross threads, so per-thread analyses add up to the whole.
        let mut summed = vec![MethodStats::default(); methods.len()];
        for t in 0..p.threads.len() as u32 {
            for (s, m) in summed.iter_mut().zip(Analysis::for_thread(&p, t).methods()) {
                s.calls += m.calls;
                s.self_ns += m.self_ns;
                s.total_ns += m.total_ns;
                s.self_samples += m.self_samples;
                s.total_samples += m.total_samples;
            }
        }
        prop_assert_eq!(summed, methods.to_vec());
    }

    #[test]
    fn hot_path_is_a_parent_chain(p in arb_profile()) {
        let path = hot_path(&p);
        if let Some(&first) = path.first() {
            prop_assert!(p.nodes[first as usize].parent.is_none());
        }
        for pair in path.windows(2) {
            prop_assert_eq!(p.nodes[pair[1] as usize].parent, Some(pair[0]));
        }
    }
}
