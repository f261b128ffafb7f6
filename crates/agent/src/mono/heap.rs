//! Heap snapshots on Mono (`sonde heap -- mono …`, `sonde snapshot --heap`): the way Mono's log
//! profiler takes its heapshots (`sonde_mono::HeapShots`: a major collection forced on the
//! finalizer thread, its roots, the heap walked before the world restarts), written in CoreCLR's
//! bulk layouts (`sonde_heap::bulk`) so that the controller decodes them as it decodes CoreCLR's.
//!
//! Streamed, never held: the walk's objects and references go out in payloads of under 64 KB as
//! the walk runs (`ipc::heap::piece`), from buffers allocated before the collection. What the
//! agent keeps is per class and per static root (bounded: [`MAX_CLASSES`], [`MAX_STATICS`]),
//! never per object.
//!
//! Roots: Mono reports each with the address it was found at; the ranges Mono registered as
//! roots ([`RANGES`], kept from the start of the run: a class's statics are registered when it is
//! initialised) say what that address is — a thread's stack (`stack`), the finalizer queues, a
//! `GCHandle` (`strong handle`), a class's static data: a static field, named after the
//! collection by its offset in that data (`Acme.Cache.Items`). Roots found nowhere else (the
//! runtime's own, thread statics) are `other`. Mono's stack roots are conservative, and its
//! reports do not say which frame holds them: a stack root is named `stack`.
//!
//! World stopped: the roots and the walk run on the collecting thread while the program's
//! threads are suspended anywhere, so no lock a program thread may hold is waited for (the
//! ranges are read with `try_lock`: held, the roots are all `other`), and no buffer grows. The
//! pieces go out as CoreCLR's do, from the collecting thread (`Link::send_heap`).

use crate::base::log::log;
use crate::base::running;
use sonde_heap::bulk::{self, BulkWriter, RootKind, StaticVar};
use sonde_heap::clr::{STATIC_PREFIX, keyword, strip_arity};
use sonde_mono::{ClassKey, HeapShot, HeapShots, Mono, Naming, RootSource, TypeName, VTableKey};
use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicU8, Ordering::SeqCst};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// Classes named per snapshot at most (a class seen past it keeps its address for a name):
/// about 300 KB allocated for the snapshot.
const MAX_CLASSES: usize = 32_768;
/// Static roots named per snapshot at most (more are `other` roots): 512 KB.
const MAX_STATICS: usize = 16_384;
/// How long the IPC thread waits for the finalizer thread to start the snapshot (a program that
/// is shutting down no longer runs it), and then for the snapshot to end.
const START_PATIENCE: Duration = Duration::from_secs(20);
const END_PATIENCE: Duration = Duration::from_secs(300);

/// Where a snapshot stands: asked for by the IPC thread, taken by the finalizer thread.
static STATE: AtomicU8 = AtomicU8::new(IDLE);
const IDLE: u8 = 0;
const REQUESTED: u8 = 1;
const TAKING: u8 = 2;

/// The ranges Mono registered as roots: start → (end, what).
static RANGES: Mutex<BTreeMap<usize, (usize, RootSource)>> = Mutex::new(BTreeMap::new());

/// The snapshot being taken: its writers, allocated before the collection.
static WALK: Mutex<Option<Walk>> = Mutex::new(None);

/// The finalizer thread's answer, for the IPC thread.
static OUTCOME: Mutex<Option<crate::ipc::heap::Taken>> = Mutex::new(None);
static OUTCOME_READY: Condvar = Condvar::new();

struct Walk {
    nodes: BulkWriter,
    edges: BulkWriter,
    roots: BulkWriter,
    /// The object whose references are still coming: address, class, size, references so far.
    pending: Option<(usize, ClassKey, u64, u64)>,
    classes: HashSet<ClassKey>,
    /// Static roots: slot, object, the class's static data, the slot's offset in it.
    statics: Vec<(usize, usize, VTableKey, usize)>,
    objects: u64,
    /// Roots in a range of another kind (by Mono's `MonoGCRootSource`), and roots in no
    /// registered range.
    other_roots: [u64; 32],
    unregistered_roots: u64,
}

impl Walk {
    fn new() -> Self {
        Walk {
            nodes: BulkWriter::nodes(),
            edges: BulkWriter::edges(),
            roots: BulkWriter::roots(),
            pending: None,
            classes: HashSet::with_capacity(MAX_CLASSES),
            statics: Vec::with_capacity(MAX_STATICS),
            objects: 0,
            other_roots: [0; 32],
            unregistered_roots: 0,
        }
    }

    fn flush_pending(&mut self) {
        if let Some((address, class, size, edges)) = self.pending.take() {
            self.nodes.node(address as u64, size, class.value() as u64, edges, &mut send);
            self.objects += 1;
        }
    }
}

fn send(event: u32, payload: &[u8]) {
    crate::ipc::heap::piece(event, 0, payload);
}

/// Sets up heap snapshots in Mono's init function and registers the taker.
pub fn install(mono: &'static Mono) {
    let shots = HeapShots::install::<Shot>(mono);
    crate::ipc::heap::on_heap(move || take(&shots));
}

/// Takes one snapshot (on the IPC thread): asks the finalizer thread for it and waits.
fn take(shots: &HeapShots) -> crate::ipc::heap::Taken {
    if STATE.load(SeqCst) != IDLE {
        return Err("a heap snapshot is already being taken".to_string());
    }
    *WALK.lock().unwrap_or_else(|e| e.into_inner()) = Some(Walk::new());
    *OUTCOME.lock().unwrap_or_else(|e| e.into_inner()) = None;
    STATE.store(REQUESTED, SeqCst);
    shots.wake_finalizer();
    let start = Instant::now();
    let mut outcome = OUTCOME.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        if let Some(taken) = outcome.take() {
            return taken;
        }
        let waited = start.elapsed();
        if waited > START_PATIENCE && STATE.compare_exchange(REQUESTED, IDLE, SeqCst, SeqCst).is_ok() {
            *WALK.lock().unwrap_or_else(|e| e.into_inner()) = None;
            return Err("Mono's finalizer thread did not take the snapshot (is the program exiting?)".to_string());
        }
        if waited > END_PATIENCE {
            return Err("the heap snapshot did not end".to_string());
        }
        outcome = OUTCOME_READY.wait_timeout(outcome, Duration::from_millis(200)).unwrap_or_else(|e| e.into_inner()).0;
    }
}

/// What part of which root range holds `address`.
fn range_of(ranges: &BTreeMap<usize, (usize, RootSource)>, address: usize) -> Option<(usize, RootSource)> {
    let (&start, &(end, source)) = ranges.range(..=address).next_back()?;
    (address < end).then_some((start, source))
}

struct Shot;

impl HeapShot for Shot {
    /// Not in a child the program forked (`running::enabled`), whose copy of the lock may be
    /// held by a thread that did not survive the fork.
    fn root_registered(start: usize, size: usize, source: RootSource) {
        if !running::enabled() {
            return;
        }
        RANGES.lock().unwrap_or_else(|e| e.into_inner()).insert(start, (start.saturating_add(size.max(1)), source));
    }

    fn root_unregistered(start: usize) {
        if !running::enabled() {
            return;
        }
        RANGES.lock().unwrap_or_else(|e| e.into_inner()).remove(&start);
    }

    fn wanted() -> bool {
        STATE.compare_exchange(REQUESTED, TAKING, SeqCst, SeqCst).is_ok()
    }

    fn roots(addresses: &[usize], objects: &[usize]) {
        let mut walk = WALK.lock().unwrap_or_else(|e| e.into_inner());
        let Some(walk) = walk.as_mut() else { return };
        let ranges = RANGES.try_lock().ok();
        for (&address, &object) in addresses.iter().zip(objects) {
            let kind = match ranges.as_ref().and_then(|r| range_of(r, address)) {
                Some((start, RootSource::Static(vtable))) if walk.statics.len() < walk.statics.capacity() => {
                    walk.statics.push((address, object, vtable, address - start));
                    continue;
                }
                Some((_, RootSource::Stack | RootSource::HandleStack)) => RootKind::Stack,
                Some((_, RootSource::FinalizerQueue)) => RootKind::Finalizer,
                Some((_, RootSource::Handle)) => RootKind::Handle,
                Some((_, RootSource::Other(source))) => {
                    walk.other_roots[source.clamp(0, 31) as usize] += 1;
                    RootKind::Other
                }
                Some((_, RootSource::Static(_))) => {
                    walk.other_roots[3] += 1;
                    RootKind::Other
                }
                None => {
                    walk.unregistered_roots += 1;
                    RootKind::Other
                }
            };
            walk.roots.root(object as u64, kind, 0, &mut send);
        }
    }

    fn object(address: usize, class: ClassKey, size: u64, references: &[usize], first: bool) {
        let mut walk = WALK.lock().unwrap_or_else(|e| e.into_inner());
        let Some(walk) = walk.as_mut() else { return };
        if first {
            walk.flush_pending();
            walk.pending = Some((address, class, size, 0));
            if walk.classes.len() < walk.classes.capacity() {
                walk.classes.insert(class);
            }
        }
        for &target in references {
            walk.edges.edge(target as u64, &mut send);
        }
        if let Some(pending) = walk.pending.as_mut() {
            pending.3 += references.len() as u64;
        }
    }

    fn walk_end() {
        let mut walk = WALK.lock().unwrap_or_else(|e| e.into_inner());
        let Some(walk) = walk.as_mut() else { return };
        walk.flush_pending();
        walk.nodes.finish(&mut send);
        walk.edges.finish(&mut send);
        walk.roots.finish(&mut send);
    }

    /// On the finalizer thread, the program running: names the classes and the static roots,
    /// sends the static roots, and hands the outcome to the IPC thread.
    fn taken(walked: bool, pause_ns: u64, naming: &Naming<'_>) {
        let walk = WALK.lock().unwrap_or_else(|e| e.into_inner()).take();
        let outcome = match walk {
            Some(walk) if walked => Ok(name(walk, pause_ns, naming)),
            _ => Err("Mono did not run the snapshot's collection".to_string()),
        };
        *OUTCOME.lock().unwrap_or_else(|e| e.into_inner()) = Some(outcome);
        STATE.store(IDLE, SeqCst);
        OUTCOME_READY.notify_all();
    }
}

/// The names of what the walk saw, and its static roots (sent now: `GCBulkRootStaticVar`).
fn name(mut walk: Walk, pause_ns: u64, naming: &Naming<'_>) -> crate::ipc::heap::Names {
    let start = Instant::now();
    let mut names: Vec<(u64, String)> = Vec::with_capacity(walk.classes.len() + walk.statics.len());
    for &class in &walk.classes {
        if let Some(name) = naming.type_name(class) {
            names.push((class.value() as u64, csharp_name(&name)));
        }
    }
    // A forced collection that first finishes a concurrent one under way reports the roots of
    // both (seen with 100,000 sessions of Leak.exe): each static slot once.
    walk.statics.sort_unstable_by_key(|s| s.0);
    walk.statics.dedup_by_key(|s| s.0);
    let mut vars = Vec::with_capacity(walk.statics.len());
    let mut unnamed = 0usize;
    for &(slot, object, vtable, offset) in &walk.statics {
        match naming.static_field(vtable, offset) {
            Some((owner, field)) => {
                if let Some(owner) = naming.type_name(owner) {
                    names.push((slot as u64, format!("{STATIC_PREFIX}{}", csharp_name(&owner))));
                }
                vars.push(StaticVar { slot: slot as u64, object: object as u64, type_id: 0, field });
            }
            None => {
                unnamed += 1;
                walk.roots.root(object as u64, RootKind::Other, 0, &mut send);
            }
        }
    }
    walk.roots.finish(&mut send);
    for payload in bulk::static_vars(&vars) {
        send(sonde_heap::clr::GC_BULK_ROOT_STATIC_VAR, &payload);
    }
    log!(
        "heap snapshot (Mono): {} objects, {} classes, {} static roots ({unnamed} not found among their class's \
         fields), other roots by Mono's root source {:?}, {} in no registered range; named in {:?}",
        walk.objects,
        walk.classes.len(),
        vars.len(),
        walk.other_roots.iter().enumerate().filter(|(_, n)| **n > 0).collect::<Vec<_>>(),
        walk.unregistered_roots,
        start.elapsed()
    );
    crate::ipc::heap::Names { names, pause_ns }
}

/// A type's name as C# (and CoreCLR's snapshots) spells it: generic arguments in angle brackets
/// without the arity markers, keywords for the primitive types, nested types after a `+`, arrays
/// by their element type (`System.Collections.Generic.Dictionary+Entry<string, Acme.Session>[]`).
fn csharp_name(name: &TypeName) -> String {
    // Only a generic type, or one nested in a generic type, has arguments.
    let arguments = if name.definition.contains('`') { generic_arguments(&name.il_name) } else { None };
    let base = match arguments {
        Some(args) => {
            let args: Vec<String> = args.iter().map(|a| il_to_csharp(a, 0)).collect();
            format!("{}<{}>", strip_arity(&name.definition), args.join(", "))
        }
        None => keyword(&name.definition).map_or_else(|| strip_arity(&name.definition), str::to_string),
    };
    let ranks: String = name.ranks.iter().map(|&r| format!("[{}]", ",".repeat(r.saturating_sub(1) as usize))).collect();
    base + &ranks
}

/// How deep type arguments are spelt out.
const MAX_NESTING: usize = 8;

/// A type argument as Mono's IL-style name spells it (`System.Collections.Generic.List`1<System.Int32>`,
/// `System.Int32[,]`, a nested type after a `.`), as C# does. A nested type is told from a
/// namespace only after a generic one (`Outer`1.Inner`).
fn il_to_csharp(il: &str, depth: usize) -> String {
    let il = il.trim();
    if depth >= MAX_NESTING {
        return strip_arity(il);
    }
    // Array ranks at the end: `T[]`, `T[,]`.
    if il.ends_with(']')
        && let Some(open) = il.rfind('[')
        && il[open + 1..il.len() - 1].bytes().all(|b| b == b',')
    {
        return format!("{}{}", il_to_csharp(&il[..open], depth + 1), &il[open..]);
    }
    let definition = nested_after_arity(&il[..arguments_open(il).unwrap_or(il.len())]);
    match generic_arguments(il) {
        Some(args) => {
            let args: Vec<String> = args.iter().map(|a| il_to_csharp(a, depth + 1)).collect();
            format!("{}<{}>", strip_arity(&definition), args.join(", "))
        }
        None => keyword(&definition).map_or_else(|| strip_arity(&definition), str::to_string),
    }
}

/// `Outer`1.Inner` → `Outer`1+Inner`: a `.` right after an arity marker separates a nested type.
fn nested_after_arity(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut after_arity = false;
    let mut in_arity = false;
    for c in name.chars() {
        if c == '`' {
            in_arity = true;
        } else if in_arity && !c.is_ascii_digit() {
            in_arity = false;
            after_arity = c == '.';
        }
        if after_arity {
            out.push('+');
            after_arity = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// Where the type arguments of a generic instance's name open: the first `<` that does not
/// start a name (`<>c`, `<Main>d__0`: the compiler's own types).
fn arguments_open(name: &str) -> Option<usize> {
    let mut previous = None;
    for (i, c) in name.char_indices() {
        if c == '<' && previous.is_some_and(|p: char| !matches!(p, '.' | '+' | '/')) {
            return Some(i);
        }
        previous = Some(c);
    }
    None
}

/// The type arguments of a generic instance's name (`A`2<B,C<D>>` → `["B", "C<D>"]`), or `None`.
fn generic_arguments(name: &str) -> Option<Vec<&str>> {
    let open = arguments_open(name)?;
    let mut args = Vec::new();
    let (mut depth, mut start) = (0usize, open + 1);
    for (i, c) in name[open + 1..].char_indices().map(|(i, c)| (i + open + 1, c)) {
        match c {
            '<' | '[' => depth += 1,
            '>' | ']' if depth > 0 => depth -= 1,
            '>' => {
                args.push(&name[start..i]);
                return Some(args);
            }
            ',' if depth == 0 => {
                args.push(&name[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spelt(definition: &str, il_name: &str, ranks: &[u32]) -> String {
        csharp_name(&TypeName { definition: definition.into(), il_name: il_name.into(), ranks: ranks.to_vec() })
    }

    #[test]
    fn mono_type_names_are_spelt_as_csharp_spells_them() {
        assert_eq!(
            spelt(
                "System.Collections.Generic.Dictionary`2",
                "System.Collections.Generic.Dictionary`2<System.String,Acme.Session>",
                &[]
            ),
            "System.Collections.Generic.Dictionary<string, Acme.Session>"
        );
        assert_eq!(
            spelt(
                "System.Collections.Generic.Dictionary`2+Entry",
                "System.Collections.Generic.Dictionary`2.Entry<System.String,Acme.Session>",
                &[1]
            ),
            "System.Collections.Generic.Dictionary+Entry<string, Acme.Session>[]"
        );
        assert_eq!(spelt("Acme.Session", "Acme.Session", &[]), "Acme.Session");
        assert_eq!(spelt("System.Byte", "System.Byte", &[1]), "byte[]");
        assert_eq!(spelt("System.Int32", "System.Int32", &[1, 2]), "int[][,]");
        assert_eq!(
            spelt("Acme.Table`1", "Acme.Table`1<System.Collections.Generic.List`1<System.Int32[,]>>", &[]),
            "Acme.Table<System.Collections.Generic.List<int[,]>>"
        );
        assert_eq!(
            spelt("Acme.Map`1", "Acme.Map`1<Acme.Outer`1.Inner<System.Object>>", &[]),
            "Acme.Map<Acme.Outer+Inner<object>>"
        );
        // The compiler's own types: a `<` that starts a name opens no arguments.
        assert_eq!(spelt("Acme.Program+<>c", "Acme.Program.<>c", &[]), "Acme.Program+<>c");
        assert_eq!(spelt("Acme.Outer`1+<>c", "Acme.Outer`1.<>c<System.Int32>", &[]), "Acme.Outer+<>c<int>");
    }

    #[test]
    fn an_address_belongs_to_the_range_that_holds_it() {
        let mut ranges = BTreeMap::new();
        ranges.insert(0x1000, (0x2000, RootSource::Stack));
        ranges.insert(0x3000, (0x3001, RootSource::FinalizerQueue));
        assert_eq!(range_of(&ranges, 0x1800), Some((0x1000, RootSource::Stack)));
        assert_eq!(range_of(&ranges, 0x3000), Some((0x3000, RootSource::FinalizerQueue)));
        assert_eq!(range_of(&ranges, 0x2000), None);
        assert_eq!(range_of(&ranges, 0x10), None);
    }
}
