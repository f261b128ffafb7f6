//! Hand-built heaps whose every figure is known.

use crate::text::{TextLimits, path_text, write_diff, write_report};
use crate::*;

const SESSION_BYTES: u64 = 64;
const NAME_BYTES: u64 = 40;

/// `static Acme.Cache.Items → Dictionary<string, Acme.Session> →_entries Entry[] → n ×
/// Acme.Session →_name string`, plus a thread holding a `Acme.Worker` on its stack.
fn cache_heap(n: u64) -> HeapSnapshot {
    let mut b = HeapBuilder::new(RunFacts { runtime: "coreclr".into(), pid: 42, pause_ns: 1_500_000 });
    let dict = b.intern_type("Dictionary<string, Acme.Session>");
    let array = b.intern_type("Entry[]");
    let session = b.intern_type("Acme.Session");
    let string = b.intern_type("string");
    let worker = b.intern_type("Acme.Worker");
    let entries = b.intern_field("_entries");
    let name = b.intern_field("_name");
    // Objects after the references that name them: the stream's order is free.
    b.add_root(RootKind::StaticField, "Acme.Cache.Items", 0x1000);
    b.add_reference(0x1000, 0x2000, Some(entries));
    for i in 0..n {
        b.add_reference(0x2000, 0x10_0000 + i * 0x100, None);
        b.add_reference(0x10_0000 + i * 0x100, 0x10_0080 + i * 0x100, Some(name));
    }
    b.add_object(0x1000, dict, 80);
    b.add_object(0x2000, array, 24 + 8 * n);
    for i in 0..n {
        b.add_object(0x10_0080 + i * 0x100, string, NAME_BYTES);
        b.add_object(0x10_0000 + i * 0x100, session, SESSION_BYTES);
    }
    b.add_object(0x9000, worker, 32);
    b.add_root(RootKind::Stack, "worker-1 (tid 4242)", 0x9000);
    b.finish().unwrap()
}

fn report(heap: &HeapSnapshot, paths_for: Option<&str>) -> HeapReport {
    let analysis = Analysis::new(heap, TreeLimits::default());
    match paths_for {
        Some(name) => {
            let groups = PathIndex::new(heap).groups(heap, heap.type_named(name).unwrap());
            HeapReport::new(heap, &analysis, Some((name, &groups)))
        }
        None => HeapReport::new(heap, &analysis, None),
    }
}

fn row<'a>(report: &'a HeapReport, name: &str) -> &'a report::TypeRow {
    report.types.iter().find(|t| t.name == name).unwrap_or_else(|| panic!("no type {name}"))
}

#[test]
fn a_static_dictionary_holds_its_objects() {
    let n = 1000;
    let heap = cache_heap(n);
    let report = report(&heap, Some("Acme.Session"));
    let sessions = row(&report, "Acme.Session");
    assert_eq!((sessions.count, sessions.bytes), (n, n * SESSION_BYTES));
    assert_eq!(sessions.retained_bytes, n * (SESSION_BYTES + NAME_BYTES), "each session holds its name");
    let dict = row(&report, "Dictionary<string, Acme.Session>");
    assert!(dict.retained_bytes >= n * SESSION_BYTES);
    assert_eq!(dict.retained_bytes, 80 + 24 + 8 * n + n * (SESSION_BYTES + NAME_BYTES));
    assert_eq!(report.types[0].name, "Dictionary<string, Acme.Session>", "the most retained first");
    assert_eq!(report.objects, 2 + 2 * n + 1);
    assert_eq!(report.unreachable_objects, 0);

    let static_root = &report.roots[0];
    assert_eq!((static_root.kind.as_str(), static_root.name.as_str()), ("static", "Acme.Cache.Items"));
    assert_eq!((static_root.count, static_root.bytes), (1, dict.retained_bytes));

    let top = &report.dominators[0];
    assert_eq!((top.ty.as_str(), top.retained_bytes), ("Dictionary<string, Acme.Session>", dict.retained_bytes));
    assert_eq!(top.children[0].ty, "Entry[]");
    assert_eq!(top.children[0].children.len(), TreeLimits::default().width, "bounded width");

    let paths = report.paths.as_ref().unwrap();
    assert_eq!(paths.len(), 1, "one shape for every session");
    assert_eq!((paths[0].objects, paths[0].bytes), (n, n * SESSION_BYTES));
    assert_eq!(
        path_text(&paths[0]),
        "static Acme.Cache.Items → Dictionary<string, Acme.Session>._entries → Entry[] → Acme.Session"
    );
    let steps = &paths[0].steps;
    assert_eq!((steps[0].kind.as_str(), steps[0].root_kind.as_deref()), ("root", Some("static")));
    assert_eq!(steps[2].field.as_deref(), Some("_entries"));
    assert_eq!(steps[3].field, None, "an array's element has no field");
}

#[test]
fn an_object_held_only_by_a_stack_is_named_by_its_thread() {
    let heap = cache_heap(3);
    let report = report(&heap, Some("Acme.Worker"));
    let stack = report.roots.iter().find(|r| r.kind == "stack").unwrap();
    assert_eq!((stack.name.as_str(), stack.count, stack.bytes), ("worker-1 (tid 4242)", 1, 32));
    let paths = report.paths.as_ref().unwrap();
    assert_eq!(path_text(&paths[0]), "stack worker-1 (tid 4242) → Acme.Worker");
    assert_eq!(row(&report, "Acme.Worker").retained_bytes, 32);
}

#[test]
fn an_unreachable_cycle_is_left_out_and_counted() {
    let mut b = HeapBuilder::new(RunFacts::default());
    let held = b.intern_type("Held");
    let lost = b.intern_type("Lost");
    b.add_object(1, held, 10);
    b.add_object(2, lost, 100);
    b.add_object(3, lost, 200);
    b.add_reference(2, 3, None);
    b.add_reference(3, 2, None);
    b.add_reference(3, 1, None); // the cycle points at a live object: it still holds nothing
    b.add_root(RootKind::StrongHandle, "strong handle", 1);
    let heap = b.finish().unwrap();
    let analysis = Analysis::new(&heap, TreeLimits::default());
    assert!(!analysis.is_reachable(1) && !analysis.is_reachable(2));
    assert_eq!(analysis.immediate_dominator(1), None);
    let report = HeapReport::new(&heap, &analysis, None);
    assert_eq!(report.types.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["Held"]);
    assert_eq!((report.objects, report.bytes), (1, 10));
    assert_eq!((report.unreachable_objects, report.unreachable_bytes), (2, 300));
    assert!(PathIndex::new(&heap).groups(&heap, lost).is_empty());
}

#[test]
fn a_diamond_is_retained_by_its_top_only() {
    // top → left, top → right, left → bottom, right → bottom.
    let mut b = HeapBuilder::new(RunFacts::default());
    let t = b.intern_type("T");
    for (id, size) in [(1, 1), (2, 10), (3, 100), (4, 1000)] {
        b.add_object(id, t, size);
    }
    for (from, to) in [(1, 2), (1, 3), (2, 4), (3, 4)] {
        b.add_reference(from, to, None);
    }
    b.add_root(RootKind::Stack, "main", 1);
    let heap = b.finish().unwrap();
    let a = Analysis::new(&heap, TreeLimits::default());
    assert_eq!(a.immediate_dominator(0), Some(Dominator::Roots));
    assert_eq!(a.immediate_dominator(3), Some(Dominator::Object(0)), "bottom: neither side alone holds it");
    assert_eq!([a.retained(0), a.retained(1), a.retained(2), a.retained(3)], [1111, 10, 100, 1000]);
    assert_eq!(a.types[0].retained, 1111, "one type: the top counts, what it dominates is not counted twice");
    let top = &a.top[0];
    assert_eq!(top.children.iter().map(|c| c.object).collect::<Vec<_>>(), [3, 2, 1], "children by retained size");
}

#[test]
fn a_linked_list_is_one_repeated_step_and_counted_once_by_type() {
    let mut b = HeapBuilder::new(RunFacts::default());
    let node = b.intern_type("Node");
    let next = b.intern_field("next");
    for i in 1..=100u64 {
        b.add_object(i, node, 10);
        if i < 100 {
            b.add_reference(i, i + 1, Some(next));
        }
    }
    b.add_root(RootKind::StaticField, "List.Head", 1);
    let heap = b.finish().unwrap();
    let a = Analysis::new(&heap, TreeLimits::default());
    assert_eq!(a.types[node as usize].retained, 1000);
    let groups = PathIndex::new(&heap).groups(&heap, node);
    assert_eq!(groups.len(), 1);
    assert_eq!(groups[0].objects, 100);
}

#[test]
fn a_weak_handle_holds_nothing() {
    let mut b = HeapBuilder::new(RunFacts::default());
    let t = b.intern_type("T");
    b.add_object(1, t, 8);
    b.add_root(RootKind::WeakHandle, "weak handle", 1);
    let heap = b.finish().unwrap();
    let report = report(&heap, None);
    assert_eq!((report.objects, report.unreachable_objects), (0, 1));
}

#[test]
fn a_diff_names_the_type_that_grew_first() {
    let k = 37;
    let base = report(&cache_heap(100), None);
    let new = report(&cache_heap(100 + k), None);
    let diff = HeapDiff::new(&base, &new);
    assert_eq!(diff.schema, "sonde.heapdiff/1");
    let first = &diff.types[0];
    assert_eq!(first.name, "Acme.Session");
    assert_eq!((first.base_count, first.new_count, first.count_change), (100, 100 + k, k as i64));
    assert_eq!(first.bytes_change, (k * SESSION_BYTES) as i64);
    assert_eq!(first.retained_change, (k * (SESSION_BYTES + NAME_BYTES)) as i64);
    let worker = diff.types.iter().find(|t| t.name == "Acme.Worker").unwrap();
    assert_eq!((worker.count_change, worker.bytes_change), (0, 0));

    let json: serde_json::Value = serde_json::from_str(&diff.to_json()).unwrap();
    for key in [
        "name",
        "base_count",
        "new_count",
        "count_change",
        "base_bytes",
        "new_bytes",
        "bytes_change",
        "retained_change",
    ] {
        assert!(json["types"][0].get(key).is_some(), "{key}");
    }
    let mut text = Vec::new();
    write_diff(&mut text, &diff, 10).unwrap();
    let text = String::from_utf8(text).unwrap();
    assert!(text.lines().nth(1).unwrap().contains("Acme.Session (100 → 137)"), "{text}");
    assert!(!text.contains("Acme.Worker"), "unchanged types are not listed: {text}");
}

#[test]
fn the_json_report_has_the_contracts_keys() {
    let report = report(&cache_heap(5), Some("Acme.Session"));
    let json: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
    assert_eq!(json["schema"], "sonde.heap/1");
    for key in ["runtime", "pid", "objects", "bytes", "pause_ns", "types", "roots", "dominators", "paths"] {
        assert!(json.get(key).is_some(), "{key}");
    }
    assert_eq!(json["runtime"], "coreclr");
    assert_eq!(json["pid"], 42);
    assert_eq!(json["pause_ns"], 1_500_000);
    for key in ["name", "count", "bytes", "retained_bytes"] {
        assert!(json["types"][0].get(key).is_some(), "types.{key}");
    }
    for key in ["kind", "name", "count", "bytes"] {
        assert!(json["roots"][0].get(key).is_some(), "roots.{key}");
    }
    for key in ["type", "retained_bytes", "children"] {
        assert!(json["dominators"][0].get(key).is_some(), "dominators.{key}");
    }
    let step = &json["paths"][0]["steps"][1];
    for key in ["kind", "type", "field", "root_kind", "root_name"] {
        assert!(step.get(key).is_some(), "steps.{key}");
    }
    assert_eq!(json["paths"][0]["objects"], 5);
    let back: HeapReport = serde_json::from_str(&report.to_json()).unwrap();
    assert_eq!(back, report);
    // Without paths asked for, there is no `paths` key.
    let plain: serde_json::Value = serde_json::from_str(&self::report(&cache_heap(5), None).to_json()).unwrap();
    assert!(plain.get("paths").is_none());
}

#[test]
fn the_text_report_escapes_the_programs_names() {
    let mut b = HeapBuilder::new(RunFacts { runtime: "mono".into(), pid: 7, pause_ns: 0 });
    let t = b.intern_type("Evil\u{1b}[2J\u{202E}Type");
    b.add_object(1, t, 8);
    b.add_root(RootKind::StaticField, "Evil.\u{7}Field", 1);
    let heap = b.finish().unwrap();
    let report = report(&heap, Some("Evil\u{1b}[2J\u{202E}Type"));
    let mut text = Vec::new();
    write_report(&mut text, &report, TextLimits::default()).unwrap();
    let text = String::from_utf8(text).unwrap();
    assert!(!text.chars().any(|c| c != '\n' && text::unsafe_in_terminal(c)), "{text}");
    assert!(text.contains("Evil\\u{1b}[2J\\u{202e}Type"), "{text}");
    assert!(text.contains("static Evil.\\u{7}Field → Evil"), "{text}");
}

#[test]
fn the_text_report_shows_types_roots_dominators_and_paths() {
    let report = report(&cache_heap(10), Some("Acme.Session"));
    let mut text = Vec::new();
    write_report(&mut text, &report, TextLimits::default()).unwrap();
    let text = String::from_utf8(text).unwrap();
    for part in [
        "Heap of pid 42 (coreclr): 23 objects",
        "Types by retained size",
        "Top dominators",
        "static Acme.Cache.Items",
        "Shortest paths from the roots to Acme.Session (10 objects)",
        "static Acme.Cache.Items → Dictionary<string, Acme.Session>._entries → Entry[] → Acme.Session",
    ] {
        assert!(text.contains(part), "{part} in:\n{text}");
    }
}

mod files {
    use super::*;

    fn bytes_of(heap: &HeapSnapshot) -> Vec<u8> {
        let mut out = Vec::new();
        write_heap(&mut out, heap).unwrap();
        out
    }

    #[test]
    fn a_snapshot_round_trips() {
        let heap = cache_heap(50);
        let data = bytes_of(&heap);
        assert_eq!(file_kind(&data), Some(FileKind::Heap));
        assert_eq!(read_heap(&data[..]).unwrap(), heap);
        let dir = std::env::temp_dir().join(format!("sonde-heap-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("a.heap");
        save_heap(&path, &heap).unwrap();
        assert_eq!(file_kind_of(&path).unwrap(), Some(FileKind::Heap));
        assert_eq!(load_heap(&path).unwrap(), heap);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn corrupt_and_foreign_files_are_refused_with_one_line() {
        let data = bytes_of(&cache_heap(20));
        let err = |bytes: &[u8]| read_heap(bytes).unwrap_err().to_string();
        assert_eq!(err(&[]), "not a Sonde heap snapshot: the file is empty");
        assert!(err(b"SONDEPRF\x02\0\0\0").contains("this is a Sonde profile"));
        assert_eq!(file_kind(b"SONDEPRF...."), Some(FileKind::Profile));
        assert_eq!(file_kind(b"\x7fELF\x02\x01\x01\0"), None);
        assert!(err(b"\x7fELF\x02\x01\x01\0 and more").contains("does not start with \"SONDEHEP\""));
        assert!(err(&data[..10]).contains("truncated"));
        assert!(err(&data[..data.len() - 1]).contains("truncated"));
        let mut flipped = data.clone();
        flipped[40] ^= 0x10;
        assert!(err(&flipped).contains("checksum mismatch"));
        let mut version = data.clone();
        version[8] = 9;
        assert!(err(&version).contains("unsupported heap snapshot format version 9"));
        for message in [err(&flipped), err(&version), err(&data[..30])] {
            assert_eq!(message.lines().count(), 1);
        }
    }

    #[test]
    fn a_payload_with_an_index_out_of_range_is_invalid_not_a_panic() {
        let mut heap = cache_heap(3);
        heap.edges[0] = 1000;
        let payload = postcard::to_stdvec(&heap).unwrap();
        let mut data = Vec::new();
        data.extend(HEAP_MAGIC);
        data.extend(HEAP_FORMAT_VERSION.to_le_bytes());
        data.extend((payload.len() as u64).to_le_bytes());
        data.extend(&payload);
        data.extend(file::tests_crc32(&payload).to_le_bytes());
        let message = read_heap(&data[..]).unwrap_err().to_string();
        assert!(message.starts_with("invalid heap snapshot: a reference to object 1000"), "{message}");
    }
}

#[test]
fn handles_and_the_finalizer_queue_hold_their_objects() {
    let mut b = HeapBuilder::new(RunFacts::default());
    let buffer = b.intern_type("byte[]");
    let finalizable = b.intern_type("Acme.NativeResource");
    b.add_object(1, buffer, 4096);
    b.add_object(2, finalizable, 48);
    b.add_object(3, buffer, 100);
    let scratch = b.intern_field("_scratch");
    b.add_reference(2, 3, Some(scratch));
    b.add_root(RootKind::PinnedHandle, "pinned handle", 1);
    b.add_root(RootKind::FinalizerQueue, "finalizer queue", 2);
    let heap = b.finish().unwrap();
    let report = report(&heap, Some("byte[]"));
    let kinds: Vec<(&str, u64, u64)> = report.roots.iter().map(|r| (r.kind.as_str(), r.count, r.bytes)).collect();
    assert_eq!(kinds, [("pinned_handle", 1, 4096), ("finalizer_queue", 1, 148)]);
    let paths: Vec<String> = report.paths.as_ref().unwrap().iter().map(path_text).collect();
    assert_eq!(paths, ["pinned handle → byte[]", "finalizer queue → Acme.NativeResource._scratch → byte[]"]);
}

#[test]
fn a_long_list_is_analysed_without_recursion() {
    let n = 500_000u64;
    let mut b = HeapBuilder::new(RunFacts::default());
    let node = b.intern_type("Node");
    let value = b.intern_type("Value");
    let next = b.intern_field("next");
    for i in 0..n {
        b.add_object(2 * i, node, 32);
        b.add_object(2 * i + 1, value, 8);
        b.add_reference(2 * i, 2 * i + 1, None);
        if i + 1 < n {
            b.add_reference(2 * i, 2 * i + 2, Some(next));
        }
    }
    b.add_root(RootKind::StaticField, "List.Head", 0);
    let heap = b.finish().unwrap();
    let a = Analysis::new(&heap, TreeLimits { depth: 64, width: 2 });
    assert_eq!(a.retained(0), n * 40);
    assert_eq!(a.types[node as usize].retained, n * 40);
    assert_eq!(a.types[value as usize].retained, n * 8);
    let groups = PathIndex::new(&heap).groups(&heap, value);
    assert_eq!(groups.iter().map(|g| g.objects).sum::<u64>(), n);
    assert!(groups.len() <= 2, "the list's nodes fold into one repeated step");
}

/// The diff's suspects: the type that grew, with the path shape that holds its new instances
/// (and not the shape that did not change).
#[test]
fn a_diff_names_where_the_new_objects_of_a_grown_type_hang() {
    let snapshot = |cached: u64| {
        let mut b = HeapBuilder::new(RunFacts::default());
        let (dict, session, other) = (b.intern_type("Cache"), b.intern_type("Acme.Session"), b.intern_type("Holder"));
        b.add_object(1, dict, 64);
        b.add_root(RootKind::StaticField, "Acme.Cache.Items", 1);
        b.add_object(2, other, 24);
        b.add_root(RootKind::Stack, "stack", 2);
        b.add_object(3, session, 32);
        b.add_reference(2, 3, None);
        for i in 0..cached {
            b.add_object(100 + i, session, 32);
            b.add_reference(1, 100 + i, None);
        }
        b.finish().unwrap()
    };
    let (base, new) = (snapshot(2), snapshot(7));
    let (base_report, new_report) = (report(&base, None), report(&new, None));
    let diff = HeapDiff::new(&base_report, &new_report).with_suspects(&base, &new, 3, 5);
    assert_eq!(diff.suspects.len(), 1, "{diff:#?}");
    let suspect = &diff.suspects[0];
    assert_eq!((suspect.name.as_str(), suspect.count_change), ("Acme.Session", 5));
    assert_eq!(suspect.paths.len(), 1, "the unchanged stack path is left out: {suspect:#?}");
    let path = &suspect.paths[0];
    assert_eq!((path.base_objects, path.new_objects, path.objects_change), (2, 7, 5));
    assert_eq!(path.steps[0].root_name.as_deref(), Some("Acme.Cache.Items"));
    let mut text = Vec::new();
    crate::text::write_diff(&mut text, &diff, 10).unwrap();
    let text = String::from_utf8(text).unwrap();
    assert!(text.contains("Where the +5 new Acme.Session are held"), "{text}");
    assert!(text.contains("static Acme.Cache.Items → Cache → Acme.Session  (2 → 7)"), "{text}");
}

#[test]
fn the_paths_of_several_types_in_one_pass_are_each_types_own() {
    let heap = cache_heap(50);
    let index = PathIndex::new(&heap);
    let names = ["string", "Acme.Worker", "Acme.Session", "string"];
    let types: Vec<u32> = names.iter().map(|n| heap.type_named(n).unwrap()).collect();
    let all = index.groups_of(&heap, &types);
    assert_eq!(all.len(), names.len(), "one list per type asked for, repeats included");
    for (ty, groups) in types.iter().zip(&all) {
        assert_eq!(groups, &index.groups(&heap, *ty));
        assert!(!groups.is_empty());
    }
    assert!(index.groups_of(&heap, &[]).is_empty());
}
