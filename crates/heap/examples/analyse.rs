//! The controller's side of a heap snapshot, timed on synthetic heaps of realistic shape:
//!
//!     cargo run --release -p sonde-heap --example analyse -- 1000000 10000000
//!
//! Each heap has a few hundred roots (static fields, threads' stacks, strong handles) over
//! dictionaries of sessions (each with its name, often a buffer, sometimes orders; some names
//! shared, some sessions pointing back at their dictionary: cycles), doubly linked lists (cycles
//! everywhere), trees of assorted types with references across to objects made earlier (shared
//! objects), and 5% garbage no root reaches. It prints the time to build the compact snapshot
//! from the stream, the dominators and retained sizes, the paths for the type retaining most, and
//! the peak memory while analysing (VmHWM, reset once the snapshot is built) per object.

use std::time::Instant;

use sonde_heap::{Analysis, HeapBuilder, HeapReport, PathIndex, RootKind, RunFacts, TreeLimits};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--from-file") {
        return from_file(&args[2]);
    }
    let sizes: Vec<usize> = std::env::args().skip(1).map(|a| a.replace('_', "").parse().expect("a count")).collect();
    let sizes = if sizes.is_empty() { vec![1_000_000, 10_000_000] } else { sizes };
    for n in sizes {
        run(n);
    }
}

fn run(target: usize) {
    let before_build = peak_reset();
    let start = Instant::now();
    let mut synthetic = Synthetic::new(target);
    synthetic.generate();
    let streamed = start.elapsed();
    let builder = synthetic.builder;
    let start = Instant::now();
    let heap = builder.finish().expect("the heap builds");
    let build = start.elapsed();
    let build_peak = vm_kb("VmHWM:") - before_build;
    let n = heap.objects();
    println!(
        "{} objects, {} references ({:.2} per object), {} roots, {} types",
        n,
        heap.references(),
        heap.references() as f64 / n as f64,
        heap.roots.len(),
        heap.types.len()
    );
    println!(
        "  stream generated in {:.2} s; built (sort, map, lay out) in {:.2} s; builder's peak {:.1} bytes/object",
        streamed.as_secs_f64(),
        build.as_secs_f64(),
        build_peak as f64 * 1024.0 / n as f64
    );

    // The order `sonde report --paths TYPE` would use: the paths' walk first, keeping only the
    // groups (its 4 bytes per object gone before the analysis starts), then the analysis.
    let model = peak_reset();
    let start = Instant::now();
    let paths_type = "Acme.Session";
    let index = PathIndex::new(&heap);
    let groups = index.groups(&heap, heap.type_named(paths_type).expect("a type of the heap"));
    drop(index);
    let paths = start.elapsed();
    let paths_peak = vm_kb("VmHWM:");
    let start = Instant::now();
    let analysis = Analysis::new(&heap, TreeLimits::default());
    let report = HeapReport::new(&heap, &analysis, Some((paths_type, &groups)));
    let dominators = start.elapsed();
    let peak = vm_kb("VmHWM:");
    println!(
        "  paths (walk + groups of {paths_type}): {:.2} s; dominators + retained sizes + by type + top of the tree + \
         report: {:.2} s; total {:.2} s",
        paths.as_secs_f64(),
        dominators.as_secs_f64(),
        (dominators + paths).as_secs_f64()
    );
    println!(
        "  {} reachable, {} unreachable; {} path groups for {paths_type}, the largest: {} objects",
        analysis.reachable_objects,
        analysis.unreachable_objects,
        groups.len(),
        groups[0].objects
    );
    println!(
        "  peak while analysing (VmHWM): {} MB = {:.1} bytes/object (paths' walk: {} MB; the snapshot's tables: {:.1} \
         bytes/object; the process before: {} MB)",
        peak / 1024,
        peak as f64 * 1024.0 / n as f64,
        paths_peak / 1024,
        heap.table_bytes() as f64 / n as f64,
        model / 1024
    );
    drop((groups, report, analysis));

    // Holding the analysis while walking the paths (a diff's grown types) costs more.
    peak_reset();
    let analysis = Analysis::new(&heap, TreeLimits::default());
    let index = PathIndex::new(&heap);
    println!(
        "  with the analysis held during the paths' walk: peak {:.1} bytes/object",
        vm_kb("VmHWM:") as f64 * 1024.0 / n as f64
    );
    drop((index, analysis));

    // The file, and the analysis as `sonde report FILE` runs it: in a fresh process, reading the
    // file, with no builder's memory left in the allocator.
    let path = std::env::temp_dir().join(format!("sonde-heap-bench-{}.heap", std::process::id()));
    let start = Instant::now();
    sonde_heap::save_heap(&path, &heap).expect("writes");
    let write = start.elapsed();
    println!(
        "  file: {:.1} MB ({:.1} bytes/object), written in {:.2} s",
        std::fs::metadata(&path).expect("written").len() as f64 / 1e6,
        std::fs::metadata(&path).expect("written").len() as f64 / n as f64,
        write.as_secs_f64()
    );
    drop(heap);
    let status = std::process::Command::new(std::env::current_exe().expect("this program"))
        .arg("--from-file")
        .arg(&path)
        .status()
        .expect("runs");
    std::fs::remove_file(&path).expect("removed");
    assert!(status.success());
}

/// `sonde report FILE --paths Acme.Session`'s work, in a fresh process.
fn from_file(path: &str) {
    let start = Instant::now();
    let heap = sonde_heap::load_heap(path).expect("reads");
    let n = heap.objects();
    println!(
        "  fresh process: read and checked in {:.2} s, peak while reading {:.1} bytes/object",
        start.elapsed().as_secs_f64(),
        vm_kb("VmHWM:") as f64 * 1024.0 / n as f64
    );
    let before = peak_reset();
    let start = Instant::now();
    let index = PathIndex::new(&heap);
    let groups = index.groups(&heap, heap.type_named("Acme.Session").expect("a type of the heap"));
    drop(index);
    let analysis = Analysis::new(&heap, TreeLimits::default());
    let report = HeapReport::new(&heap, &analysis, Some(("Acme.Session", &groups)));
    let elapsed = start.elapsed();
    let peak = vm_kb("VmHWM:");
    println!(
        "  fresh process: paths + analysis + report {:.2} s; peak while analysing {:.1} bytes/object \
         (the process before: {:.1}; the analysis's own: {:.1})",
        elapsed.as_secs_f64(),
        peak as f64 * 1024.0 / n as f64,
        before as f64 * 1024.0 / n as f64,
        (peak - before) as f64 * 1024.0 / n as f64
    );
    assert_eq!(report.objects, analysis.reachable_objects);
}

/// Resets the peak resident size to the current one (`/proc/self/clear_refs`, Linux 4.0+) and
/// returns it, in KB.
fn peak_reset() -> u64 {
    std::fs::write("/proc/self/clear_refs", "5").expect("clear_refs");
    vm_kb("VmHWM:")
}

fn vm_kb(key: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let line = status.lines().find(|l| l.starts_with(key)).expect("the key");
    line[key.len()..].trim().trim_end_matches(" kB").trim().parse().expect("a number")
}

/// A deterministic stream of objects, references and roots, as an agent would send them.
struct Synthetic {
    builder: HeapBuilder,
    target: usize,
    objects: usize,
    next_address: u64,
    rng: u64,
    /// Some earlier objects, for shared references.
    earlier: Vec<u64>,
    shared_names: Vec<u64>,
    roots: usize,
    t: Types,
    f: Fields,
}

struct Types {
    dict: u32,
    entries: u32,
    session: u32,
    string: u32,
    bytes: u32,
    list: u32,
    orders: u32,
    order: u32,
    line: u32,
    node: u32,
    event: u32,
    filler: Vec<u32>,
}

struct Fields {
    entries: u32,
    name: u32,
    buffer: u32,
    owner: u32,
    orders: u32,
    items: u32,
    lines: u32,
    next: u32,
    prev: u32,
    value: u32,
    head: u32,
    filler: Vec<u32>,
}

impl Synthetic {
    fn new(target: usize) -> Self {
        let mut b = HeapBuilder::new(RunFacts { runtime: "coreclr".into(), pid: 1, pause_ns: 0 });
        let t = Types {
            dict: b.intern_type("Dictionary<string, Acme.Session>"),
            entries: b.intern_type("Dictionary<string, Acme.Session>+Entry[]"),
            session: b.intern_type("Acme.Session"),
            string: b.intern_type("string"),
            bytes: b.intern_type("byte[]"),
            list: b.intern_type("List<Acme.Order>"),
            orders: b.intern_type("Acme.Order[]"),
            order: b.intern_type("Acme.Order"),
            line: b.intern_type("Acme.LineItem"),
            node: b.intern_type("LinkedListNode<Acme.Event>"),
            event: b.intern_type("Acme.Event"),
            filler: (0..300).map(|i| b.intern_type(&format!("Acme.Model.Type{i}"))).collect(),
        };
        let f = Fields {
            entries: b.intern_field("_entries"),
            name: b.intern_field("_name"),
            buffer: b.intern_field("_buffer"),
            owner: b.intern_field("_owner"),
            orders: b.intern_field("_orders"),
            items: b.intern_field("_items"),
            lines: b.intern_field("_lines"),
            next: b.intern_field("next"),
            prev: b.intern_field("prev"),
            value: b.intern_field("item"),
            head: b.intern_field("head"),
            filler: (0..40).map(|i| b.intern_field(&format!("_field{i}"))).collect(),
        };
        Synthetic {
            builder: b,
            target,
            objects: 0,
            next_address: 0x7f00_0000_0000,
            rng: 0x9E37_79B9_7F4A_7C15,
            earlier: Vec::new(),
            shared_names: Vec::new(),
            roots: 0,
            t,
            f,
        }
    }

    fn random(&mut self, below: u64) -> u64 {
        // xorshift64*
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        (self.rng.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) % below.max(1)
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.random(100) < percent
    }

    fn object(&mut self, ty: u32, size: u64) -> u64 {
        let address = self.next_address;
        self.next_address += size.div_ceil(8) * 8;
        self.builder.add_object(address, ty, size);
        self.objects += 1;
        if self.earlier.len() < 100_000 {
            self.earlier.push(address);
        } else if self.chance(1) {
            let i = self.random(self.earlier.len() as u64) as usize;
            self.earlier[i] = address;
        }
        address
    }

    fn root(&mut self, to: u64) {
        self.roots += 1;
        let (kind, name) = match self.random(10) {
            0..6 => (RootKind::StaticField, format!("Acme.Module{}.Instance", self.roots)),
            6..9 => (RootKind::Stack, format!("worker-{} (tid {})", self.roots % 16, 1000 + self.roots % 16)),
            _ => (RootKind::StrongHandle, "strong handle".to_string()),
        };
        self.builder.add_root(kind, &name, to);
    }

    fn generate(&mut self) {
        for _ in 0..64 {
            let name = self.object(self.t.string, 40);
            self.shared_names.push(name);
        }
        let garbage = self.target / 20;
        while self.objects < self.target - garbage {
            let left = (self.target - garbage - self.objects) as u64;
            let top = match self.random(10) {
                0..4 => {
                    let entries = 1 + self.random(left.min(20_000) / 2);
                    self.dictionary(entries)
                }
                4 => {
                    let length = 1 + self.random(left.min(50_000));
                    self.linked_list(length)
                }
                _ => {
                    let size = 1 + self.random(left.min(5_000));
                    self.tree(size)
                }
            };
            self.root(top);
            if self.chance(20) && !self.earlier.is_empty() {
                // A thread's local holding something already held elsewhere.
                let shared = {
                    let i = self.random(self.earlier.len() as u64) as usize;
                    self.earlier[i]
                };
                self.root(shared);
            }
        }
        while self.objects < self.target {
            // Garbage: trees no root holds (their cross references still point at live objects).
            let left = (self.target - self.objects) as u64;
            let size = 1 + self.random(left.min(1_000));
            self.tree(size);
        }
    }

    fn dictionary(&mut self, entries: u64) -> u64 {
        let (t, f) = (&self.t, &self.f);
        let (dict_t, entries_t, session_t, string_t, bytes_t) = (t.dict, t.entries, t.session, t.string, t.bytes);
        let (f_entries, f_name, f_buffer, f_owner, f_orders) = (f.entries, f.name, f.buffer, f.owner, f.orders);
        let dict = self.object(dict_t, 80);
        let array = self.object(entries_t, 24 + 24 * entries);
        self.builder.add_reference(dict, array, Some(f_entries));
        for _ in 0..entries {
            let session = self.object(session_t, 64);
            self.builder.add_reference(array, session, None);
            let name = if self.chance(30) {
                let i = self.random(64) as usize;
                self.shared_names[i]
            } else {
                let size = 24 + 2 * self.random(40);
                self.object(string_t, size)
            };
            self.builder.add_reference(session, name, Some(f_name));
            if self.chance(40) {
                let size = 24 + self.random(4096);
                let buffer = self.object(bytes_t, size);
                self.builder.add_reference(session, buffer, Some(f_buffer));
            }
            if self.chance(10) {
                self.builder.add_reference(session, dict, Some(f_owner));
            }
            if self.chance(15) {
                let orders = self.orders();
                self.builder.add_reference(session, orders, Some(f_orders));
            }
        }
        dict
    }

    fn orders(&mut self) -> u64 {
        let (list_t, orders_t, order_t, line_t) = (self.t.list, self.t.orders, self.t.order, self.t.line);
        let (f_items, f_lines) = (self.f.items, self.f.lines);
        let list = self.object(list_t, 32);
        let count = 1 + self.random(4);
        let array = self.object(orders_t, 24 + 8 * count);
        self.builder.add_reference(list, array, Some(f_items));
        for _ in 0..count {
            let order = self.object(order_t, 48);
            self.builder.add_reference(array, order, None);
            for _ in 0..1 + self.random(3) {
                let line = self.object(line_t, 40);
                self.builder.add_reference(order, line, Some(f_lines));
            }
        }
        list
    }

    fn linked_list(&mut self, length: u64) -> u64 {
        let (node_t, event_t, head_t) = (self.t.node, self.t.event, self.t.filler[0]);
        let (f_next, f_prev, f_value, f_head) = (self.f.next, self.f.prev, self.f.value, self.f.head);
        let list = self.object(head_t, 48);
        let mut previous = None;
        for _ in 0..length.div_ceil(2) {
            let node = self.object(node_t, 48);
            let event = self.object(event_t, 32);
            self.builder.add_reference(node, event, Some(f_value));
            match previous {
                Some(p) => {
                    self.builder.add_reference(p, node, Some(f_next));
                    self.builder.add_reference(node, p, Some(f_prev));
                }
                None => self.builder.add_reference(list, node, Some(f_head)),
            }
            previous = Some(node);
        }
        list
    }

    /// A tree of assorted types, breadth first, with some references to earlier objects.
    fn tree(&mut self, size: u64) -> u64 {
        let ty = {
            let i = self.random(300) as usize;
            self.t.filler[i]
        };
        let bytes = 24 + 8 * self.random(8);
        let top = self.object(ty, bytes);
        let mut frontier = std::collections::VecDeque::from([top]);
        let mut made = 1;
        while made < size {
            let Some(parent) = frontier.pop_front() else { break };
            for _ in 0..1 + self.random(4) {
                if made >= size {
                    break;
                }
                let ty = {
                    let i = self.random(300) as usize;
                    self.t.filler[i]
                };
                let size = 24 + 8 * self.random(8);
                let child = self.object(ty, size);
                let field = {
                    let i = self.random(40) as usize;
                    self.f.filler[i]
                };
                self.builder.add_reference(parent, child, Some(field));
                frontier.push_back(child);
                made += 1;
                if self.chance(5) {
                    let shared = {
                        let i = self.random(self.earlier.len() as u64) as usize;
                        self.earlier[i]
                    };
                    let field = {
                        let i = self.random(40) as usize;
                        self.f.filler[i]
                    };
                    self.builder.add_reference(child, shared, Some(field));
                }
            }
        }
        top
    }
}
