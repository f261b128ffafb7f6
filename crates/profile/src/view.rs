//! Just my code: the call trees as human-readable reports show them, with what the user did not
//! write folded or hidden (`sonde report --native hide|fold|show --framework hide|fold|show`).
//!
//! Every frame is one of: the program's own managed code (always shown), framework managed code
//! (`--framework`, decided by where its assembly was loaded from: `crate::origin`), or native and
//! runtime code (`--native`: `[native] …` frames, the runtime's wrappers and stubs,
//! `[unknown code]`). `[truncated stack]` markers are always shown, and so is the runtime's work
//! (`[jit] …`, `[gc]`: `crate::names::Work`), which says what the native frames below it do.
//!
//! - **show**: every frame as recorded.
//! - **fold** (the default): a run of frames of one class, caller to callee, becomes one frame
//!   named after its entry point (the run's outermost frame), holding the run's own time; what
//!   the run called outside the class hangs below it; a runtime wrapper inside a framework run
//!   (Mono's `(wrapper runtime-invoke)` of a class constructor the framework needed) does not
//!   end it. A native run right below a work frame folds into the work frame
//!   (`Caller → [jit] Acme.Orders.Load`, holding the JIT's time), as a hidden one would. The
//!   native run a thread starts with — the
//!   host's start-up (`libc → dotnet → hostfxr → hostpolicy → coreclr_execute_assembly`), or a
//!   native thread's entry — becomes one `[runtime]` frame.
//! - **hide**: the frames disappear; their own time goes to the nearest frame above them that is
//!   shown, and what they called hangs below that frame. Hidden frames at the top of a thread,
//!   which have no such frame, fold into one `[runtime]` (native) or `[framework]` frame.
//!
//! Frames that end up with the same caller and method merge (their times and counts add: they
//! are separate calls). Totals are unchanged: a thread's time and samples are the same in every
//! view. The JSON report keeps every frame and marks each with `kind` and `user_code`.

use crate::model::{Method, Node, NodeEvents, Profile};
use crate::names::Kind;
use std::borrow::Cow;
use std::collections::HashMap;

/// What a report does with one class of frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Show {
    Hide,
    #[default]
    Fold,
    Show,
}

/// What to do with native and runtime frames, and with framework frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct View {
    pub native: Show,
    pub framework: Show,
}

impl View {
    /// Every frame as recorded.
    pub const ALL: View = View { native: Show::Show, framework: Show::Show };
}

/// The name of the frame the host's start-up folds into.
pub const RUNTIME_FRAME: &str = "[runtime]";

/// Whether `method`, at the top of a thread, is where a process or a thread starts: the C
/// library's start-up and thread entry, the program's executable itself when it has no symbols
/// (`[native] dotnet`), or Mono's entry into managed code (`(wrapper runtime-invoke) …`: Mono's
/// walk starts there).
fn starts_a_thread(profile: &Profile, method: u32) -> bool {
    let name = &profile.methods[method as usize].name;
    if name.starts_with("(wrapper runtime-invoke)") {
        return true;
    }
    let Some(frame) = name.strip_prefix("[native] ") else { return false };
    let (library, symbol) = frame.split_once('!').unwrap_or((frame, ""));
    const ENTRIES: [&str; 6] = ["__libc_start", "_start", "start_thread", "clone", "__clone", "thread_start"];
    let program = profile.run.command.first().map(|c| c.rsplit('/').next().unwrap_or(c));
    ENTRIES.iter().any(|e| symbol.starts_with(e)) || (symbol.is_empty() && program == Some(library))
}

/// A runtime-generated wrapper (Mono's `(wrapper runtime-invoke) …`, `(wrapper managed-to-native)
/// …`): code neither the program nor a library wrote, between two frames of one of them.
fn is_runtime_glue(profile: &Profile, method: u32) -> bool {
    profile.methods[method as usize].name.starts_with("(wrapper ")
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    User,
    Framework,
    Native,
    /// The runtime's work for the program (`[jit] …`, `[gc]`): always shown.
    Work,
}

fn class_of(profile: &Profile, method: u32) -> Class {
    if profile.work(method).is_some() {
        return Class::Work;
    }
    match profile.kind(method) {
        Kind::Managed if profile.is_framework(method) => Class::Framework,
        Kind::Managed => Class::User,
        // A native program's own instrumented functions are its code (runtime `native`: every
        // frame came from the compiler's hooks in the program's own code).
        Kind::Native if profile.run.runtime.kind == "native" => Class::User,
        Kind::Native => Class::Native,
        Kind::Runtime if profile.methods[method as usize].name == "[truncated stack]" => Class::User,
        Kind::Runtime => Class::Native,
    }
}

/// `profile` as `view` shows it: borrowed unchanged when the view shows everything.
pub fn apply(profile: &Profile, view: View) -> Cow<'_, Profile> {
    if view == View::ALL {
        return Cow::Borrowed(profile);
    }
    let mut methods = profile.methods.clone();
    // The frames this view adds, made at their first use.
    let mut added: HashMap<&'static str, u32> = HashMap::new();
    let mut pseudo = |name: &'static str| -> u32 {
        *added.entry(name).or_insert_with(|| {
            methods.push(Method {
                name: name.to_string(),
                signature: String::new(),
                assembly: String::new(),
                module: String::new(),
            });
            (methods.len() - 1) as u32
        })
    };

    let mut nodes: Vec<Node> = Vec::with_capacity(profile.nodes.len());
    // (thread, new parent, method) → new node.
    let mut index: HashMap<(u32, Option<u32>, u32), u32> = HashMap::new();
    // Old node → (the new node its time went to, its class, whether it was folded into a run).
    let mut placed: Vec<(u32, Class, bool)> = Vec::with_capacity(profile.nodes.len());
    for old in &profile.nodes {
        let class = class_of(profile, old.method);
        let policy = match class {
            Class::User | Class::Work => Show::Show,
            Class::Framework => view.framework,
            Class::Native => view.native,
        };
        let parent = old.parent.map(|p| placed[p as usize]);
        let new_parent = parent.map(|(node, _, _)| node);
        let (target, folded) = match (policy, parent) {
            (Show::Show, _) => (old.method, false),
            // The runtime's native code doing the work the frame above names: the run goes into
            // that frame.
            (Show::Fold, Some((node, Class::Work, _))) if class == Class::Native => {
                absorb(&mut nodes[node as usize], old);
                placed.push((node, Class::Native, true));
                continue;
            }
            // Mono's glue inside a framework run (a class constructor the runtime invokes, a
            // call into the runtime) is part of that run: the framework frames it leads to go
            // on with it instead of starting a run of their own.
            (Show::Fold, Some((node, Class::Framework, true))) if is_runtime_glue(profile, old.method) => {
                absorb(&mut nodes[node as usize], old);
                placed.push((node, Class::Framework, true));
                continue;
            }
            // The run goes on: this frame's time joins the run's frame.
            (Show::Fold, Some((node, parent_class, true))) if parent_class == class => {
                absorb(&mut nodes[node as usize], old);
                placed.push((node, class, true));
                continue;
            }
            // Hidden: into the nearest shown caller, which a run below may go on from.
            (Show::Hide, Some(caller)) => {
                absorb(&mut nodes[caller.0 as usize], old);
                placed.push(caller);
                continue;
            }
            // The top of a thread: fold, whether folding or hiding.
            (_, None) if class == Class::Native && starts_a_thread(profile, old.method) => {
                (pseudo(RUNTIME_FRAME), true)
            }
            (Show::Fold | Show::Hide, _) => (old.method, true),
        };
        let key = (old.thread, new_parent, target);
        let at = *index.entry(key).or_insert_with(|| {
            nodes.push(zeroed(old, new_parent, target));
            (nodes.len() - 1) as u32
        });
        merge(&mut nodes[at as usize], old);
        placed.push((at, class, folded));
    }

    let mut events: HashMap<u32, NodeEvents> = HashMap::new();
    for e in &profile.events.nodes {
        let node = placed[e.node as usize].0;
        events.entry(node).or_insert(NodeEvents { node, ..Default::default() }).add(e);
    }
    let mut node_events: Vec<NodeEvents> = events.into_values().collect();
    node_events.sort_by_key(|e| e.node);

    // A node's lines stay with it where its time went to a node of the same method (a node
    // merged into its twin); a frame folded or hidden into another method's takes none along:
    // they are lines of a method the view does not show there.
    let mut node_lines: std::collections::BTreeMap<(u32, crate::SourceLine), u64> = Default::default();
    for l in &profile.sources.node_lines {
        let node = placed[l.node as usize].0;
        if nodes[node as usize].method == profile.nodes[l.node as usize].method {
            *node_lines.entry((node, l.at)).or_default() += l.samples;
        }
    }

    let mut shown = profile.clone();
    shown.methods = methods;
    shown.nodes = nodes;
    shown.events.nodes = node_events;
    shown.sources.node_lines =
        node_lines.into_iter().map(|((node, at), samples)| crate::NodeLine { node, at, samples }).collect();
    Cow::Owned(shown)
}

/// A node for `method` under `parent` on `old`'s thread, with nothing counted yet.
fn zeroed(old: &Node, parent: Option<u32>, method: u32) -> Node {
    Node { thread: old.thread, parent, method, calls: 0, self_ns: 0, total_ns: 0, self_samples: 0, total_samples: 0 }
}

/// Adds `old`'s own time to the frame it folds or hides into (which already counts it in its
/// total, being its caller).
fn absorb(into: &mut Node, old: &Node) {
    into.self_ns = into.self_ns.saturating_add(old.self_ns);
    into.self_samples = into.self_samples.saturating_add(old.self_samples);
}

/// Adds a node that becomes (part of) a new frame of its own: separate calls, so everything adds.
fn merge(into: &mut Node, old: &Node) {
    into.calls = into.calls.saturating_add(old.calls);
    into.self_ns = into.self_ns.saturating_add(old.self_ns);
    into.total_ns = into.total_ns.saturating_add(old.total_ns);
    into.self_samples = into.self_samples.saturating_add(old.self_samples);
    into.total_samples = into.total_samples.saturating_add(old.total_samples);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{Builder, arb_profile};
    use proptest::prelude::*;

    /// (depth, display name, calls, self_ns, total_ns) of every node, depth-first in node order.
    fn shape(profile: &Profile) -> Vec<(usize, String, u64, u64, u64)> {
        let depth = |n: &Node| {
            let (mut d, mut parent) = (0, n.parent);
            while let Some(p) = parent {
                parent = profile.nodes[p as usize].parent;
                d += 1;
            }
            d
        };
        let mut rows: Vec<_> = profile
            .nodes
            .iter()
            .map(|n| (depth(n), profile.display_name(n.method).into_owned(), n.calls, n.self_ns, n.total_ns))
            .collect();
        rows.sort_by(|a, b| a.1.cmp(&b.1).then(a.0.cmp(&b.0)));
        rows
    }

    fn row(depth: usize, name: &str, calls: u64, self_ns: u64, total_ns: u64) -> (usize, String, u64, u64, u64) {
        (depth, name.to_string(), calls, self_ns, total_ns)
    }

    /// The host's start-up, Main, a native library with a callback into managed code, and a
    /// framework sort calling a user comparison through two framework paths.
    fn program() -> Profile {
        let mut b = Builder::new();
        let t = b.thread();
        let names = [
            "[native] libc.so.6!__libc_start_call_main",
            "[native] dotnet",
            "[native] libhostpolicy.so!corehost_main",
            "Acme.Program.Main",
            "[native] libcodec.so!compress",
            "[native] libcodec.so!huff_encode",
            "Acme.Program.OnBlock",
            "System.Collections.Generic.List`1.Sort",
            "System.Collections.Generic.ArraySortHelper`1.IntroSort",
            "System.Collections.Generic.ArraySortHelper`1.InsertionSort",
            "Acme.Program.Compare",
        ];
        let m: Vec<u32> = names.iter().map(|n| b.method(n)).collect();
        let libc = b.node(t, None, m[0], 1, 1, 0);
        let dotnet = b.node(t, Some(libc), m[1], 1, 2, 0);
        let host = b.node(t, Some(dotnet), m[2], 1, 3, 0);
        let main = b.node(t, Some(host), m[3], 1, 10, 0);
        let compress = b.node(t, Some(main), m[4], 2, 20, 0);
        let huff = b.node(t, Some(compress), m[5], 5, 30, 0);
        b.node(t, Some(huff), m[6], 5, 40, 0);
        let sort = b.node(t, Some(main), m[7], 1, 50, 0);
        let intro = b.node(t, Some(sort), m[8], 3, 60, 0);
        b.node(t, Some(intro), m[10], 7, 70, 0);
        let insertion = b.node(t, Some(intro), m[9], 2, 80, 0);
        b.node(t, Some(insertion), m[10], 4, 90, 0);
        let mut profile = b.finish();
        profile.framework = Some(vec![m[7], m[8], m[9]]);
        profile
    }

    #[test]
    fn fold_makes_the_host_one_runtime_frame_and_each_run_its_entry_point() {
        let profile = program();
        let shown = apply(&profile, View::default());
        shown.validate().unwrap();
        assert_eq!(
            shape(&shown),
            vec![
                row(3, "Acme.Program.Compare", 11, 160, 160),
                row(1, "Acme.Program.Main", 1, 10, 450),
                row(3, "Acme.Program.OnBlock", 5, 40, 40),
                row(2, "System.Collections.Generic.List`1.Sort", 1, 190, 350),
                row(2, "[native] libcodec.so!compress", 2, 50, 90),
                row(0, "[runtime]", 1, 6, 456),
            ]
        );
    }

    #[test]
    fn hide_gives_the_time_to_the_nearest_shown_caller() {
        let profile = program();
        let shown = apply(&profile, View { native: Show::Hide, framework: Show::Hide });
        shown.validate().unwrap();
        assert_eq!(
            shape(&shown),
            vec![
                row(2, "Acme.Program.Compare", 11, 160, 160),
                row(1, "Acme.Program.Main", 1, 10 + 50 + 190, 450),
                row(2, "Acme.Program.OnBlock", 5, 40, 40),
                row(0, "[runtime]", 1, 6, 456),
            ]
        );
    }

    #[test]
    fn a_stack_cut_short_in_native_code_keeps_its_entry_point_s_name() {
        let mut b = Builder::new();
        let t = b.thread();
        let sort = b.method("[native] libc.so.6!msort_with_tmp.part.0");
        let compare = b.method("[native] libcodec.so!compare");
        let root = b.node(t, None, sort, 1, 5, 0);
        b.node(t, Some(root), compare, 1, 7, 0);
        let thread = b.method("[native] libc.so.6!start_thread");
        let worker = b.node(t, None, thread, 1, 1, 0);
        b.node(t, Some(worker), compare, 1, 2, 0);
        let profile = b.finish();
        for view in [View::default(), View { native: Show::Hide, framework: Show::Hide }] {
            let shown = apply(&profile, view);
            assert_eq!(
                shape(&shown),
                vec![row(0, "[native] libc.so.6!msort_with_tmp.part.0", 1, 12, 12), row(0, "[runtime]", 1, 3, 3)]
            );
        }
    }

    #[test]
    fn show_all_is_the_profile_itself() {
        let profile = program();
        assert!(matches!(apply(&profile, View::ALL), Cow::Borrowed(_)));
        let native_only = apply(&profile, View { native: Show::Show, framework: Show::Fold });
        // IntroSort and InsertionSort join Sort's frame, and the two Compare frames merge.
        assert_eq!(native_only.nodes.len(), profile.nodes.len() - 3);
    }

    #[test]
    fn node_events_follow_their_frames() {
        let mut profile = program();
        // Allocations in IntroSort and InsertionSort (nodes 8 and 10) land in the folded Sort.
        profile.events.nodes = vec![
            NodeEvents { node: 8, alloc_bytes: 100, ..Default::default() },
            NodeEvents { node: 10, alloc_bytes: 20, ..Default::default() },
        ];
        let shown = apply(&profile, View::default());
        shown.validate().unwrap();
        assert_eq!(shown.events.nodes.len(), 1);
        let sort = shown.events.nodes[0].node as usize;
        assert_eq!(shown.display_name(shown.nodes[sort].method), "System.Collections.Generic.List`1.Sort");
        assert_eq!(shown.events.nodes[0].alloc_bytes, 120);
    }

    /// A node's lines follow it into the node its time went to when that node is of the same
    /// method (the two Compare frames merge); a framework frame folded into its run's entry point
    /// takes none along (they are IntroSort's lines, not Sort's).
    #[test]
    fn node_lines_follow_their_frames_within_their_method() {
        use crate::{NodeLine, SourceLine};
        let mut profile = program();
        let at = |line| SourceLine { file: 0, line };
        profile.sources.files = vec!["/src/Program.cs".into()];
        profile.sources.node_lines = vec![
            NodeLine { node: 8, at: at(5), samples: 1 },
            NodeLine { node: 9, at: at(20), samples: 2 },
            NodeLine { node: 11, at: at(20), samples: 3 },
            NodeLine { node: 11, at: at(21), samples: 1 },
        ];
        let shown = apply(&profile, View::default());
        let lines: Vec<(String, u32, u64)> = shown
            .sources
            .node_lines
            .iter()
            .map(|l| (shown.display_name(shown.nodes[l.node as usize].method).into_owned(), l.at.line, l.samples))
            .collect();
        assert_eq!(lines, vec![("Acme.Program.Compare".into(), 20, 5), ("Acme.Program.Compare".into(), 21, 1)]);
        // Shown in full, every node keeps its own.
        let all = apply(&profile, View::ALL);
        assert_eq!(all.sources.node_lines, profile.sources.node_lines);
    }

    /// Mono: a sample in a framework class constructor the runtime invoked while the framework
    /// ran (List.Sort → runtime-invoke → ArraySortHelper's .cctor) folds into the framework's
    /// entry point; one invoked from the program's own code starts a run of its own.
    #[test]
    fn a_runtime_wrapper_inside_a_framework_run_does_not_end_it() {
        let mut b = Builder::new();
        let t = b.thread();
        let names = [
            "Acme.Jmc.Main",
            "System.Collections.Generic.List<System.Int32>.Sort",
            "(wrapper runtime-invoke) object:runtime_invoke_void (object,intptr,intptr,intptr)",
            "System.Collections.Generic.ArraySortHelper<System.Int32>..cctor",
            "[native] mono",
            "System.Console..cctor",
        ];
        let m: Vec<u32> = names.iter().map(|n| b.method(n)).collect();
        let main = b.node(t, None, m[0], 1, 10, 0);
        let sort = b.node(t, Some(main), m[1], 1, 20, 0);
        let invoke = b.node(t, Some(sort), m[2], 1, 30, 0);
        let cctor = b.node(t, Some(invoke), m[3], 1, 40, 0);
        b.node(t, Some(cctor), m[4], 1, 50, 0);
        let from_main = b.node(t, Some(main), m[2], 1, 60, 0);
        b.node(t, Some(from_main), m[5], 1, 70, 0);
        let mut profile = b.finish();
        profile.framework = Some(vec![m[1], m[3], m[5]]);
        let shown = apply(&profile, View::default());
        shown.validate().unwrap();
        let rows: Vec<(usize, String)> = shape(&shown).into_iter().map(|r| (r.0, r.1)).collect();
        let want = [
            (1, names[2]), // the runtime invoking Console's .cctor for Main: a run of its own
            (0, names[0]),
            (1, names[1]), // Sort, with the .cctor it needed
            (2, names[5]),
            (2, names[4]),
        ];
        assert_eq!(rows, want.map(|(d, n)| (d, n.to_string())));
    }

    /// The runtime compiling a method for Main (with a class constructor the JIT ran, which
    /// called into the runtime in turn), and a thread of the runtime's own collecting garbage.
    #[test]
    fn the_runtime_s_work_is_shown_with_its_native_run_inside() {
        let mut b = Builder::new();
        let t = b.thread();
        let names = [
            "Acme.Program.Main",
            "[jit] Acme.Program.Load",
            "[native] libcoreclr.so!ThePreStub",
            "[native] libclrjit.so!compileMethod",
            "Acme.Program..cctor",
            "[native] libcoreclr.so!JIT_New",
            "[native] libc.so.6!start_thread",
            "[native] libcoreclr.so!gc_thread_function",
            "[gc]",
        ];
        let m: Vec<u32> = names.iter().map(|n| b.method(n)).collect();
        let main = b.node(t, None, m[0], 1, 10, 0);
        let jit = b.node(t, Some(main), m[1], 1, 1, 0);
        let stub = b.node(t, Some(jit), m[2], 1, 20, 0);
        let compile = b.node(t, Some(stub), m[3], 1, 300, 0);
        let cctor = b.node(t, Some(compile), m[4], 1, 5, 0);
        b.node(t, Some(cctor), m[5], 1, 7, 0);
        let gc_thread = b.thread();
        let start = b.node(gc_thread, None, m[6], 1, 2, 0);
        let gc_loop = b.node(gc_thread, Some(start), m[7], 1, 3, 0);
        b.node(gc_thread, Some(gc_loop), m[8], 1, 40, 0);
        let profile = b.finish();

        let shown = apply(&profile, View::default());
        shown.validate().unwrap();
        assert_eq!(
            shape(&shown),
            vec![
                row(2, "Acme.Program..cctor", 1, 5, 12),
                row(0, "Acme.Program.Main", 1, 10, 343),
                row(1, "[gc]", 1, 40, 40),
                row(1, "[jit] Acme.Program.Load", 1, 321, 333),
                row(3, "[native] libcoreclr.so!JIT_New", 1, 7, 7),
                row(0, "[runtime]", 1, 5, 45),
            ]
        );
        let hidden = apply(&profile, View { native: Show::Hide, framework: Show::Hide });
        assert_eq!(
            shape(&hidden),
            vec![
                row(2, "Acme.Program..cctor", 1, 12, 12),
                row(0, "Acme.Program.Main", 1, 10, 343),
                row(1, "[gc]", 1, 40, 40),
                row(1, "[jit] Acme.Program.Load", 1, 321, 333),
                row(0, "[runtime]", 1, 5, 45),
            ]
        );
    }

    const NAMES: [&str; 8] = [
        "Acme.A",
        "System.Linq.Enumerable.Sum",
        "[native] libc.so.6!memcpy",
        "Acme.B",
        "(wrapper managed-to-native) X",
        "[truncated stack]",
        "[jit] Acme.C",
        "[gc]",
    ];

    fn views() -> impl Strategy<Value = View> {
        let show = prop_oneof![Just(Show::Hide), Just(Show::Fold), Just(Show::Show)];
        (show.clone(), show).prop_map(|(native, framework)| View { native, framework })
    }

    proptest! {
        /// Every view keeps each thread's time and samples, and the tree's arithmetic: a frame's
        /// total is its own time plus its callees' totals.
        #[test]
        fn views_keep_every_thread_s_time(mut profile in arb_profile(), view in views()) {
            for (i, m) in profile.methods.iter_mut().enumerate() {
                m.name = NAMES[i % NAMES.len()].to_string();
            }
            profile.framework = Some((0..profile.methods.len() as u32).filter(|&i| i % 6 == 1).collect());
            let shown = apply(&profile, view);
            prop_assert!(shown.validate().is_ok());
            for thread in 0..profile.threads.len() as u32 {
                let sums = |p: &Profile| {
                    p.nodes.iter().filter(|n| n.thread == thread).fold((0, 0, 0, 0), |s, n| {
                        let root = n.parent.is_none();
                        (s.0 + n.self_ns, s.1 + n.self_samples, s.2 + if root { n.total_ns } else { 0 },
                         s.3 + if root { n.total_samples } else { 0 })
                    })
                };
                prop_assert_eq!(sums(&profile), sums(&shown));
            }
            let mut children = vec![(0u64, 0u64); shown.nodes.len()];
            for n in &shown.nodes {
                if let Some(p) = n.parent {
                    children[p as usize].0 += n.total_ns;
                    children[p as usize].1 += n.total_samples;
                }
            }
            for (n, (ns, samples)) in shown.nodes.iter().zip(children) {
                prop_assert_eq!(n.total_ns, n.self_ns + ns);
                prop_assert_eq!(n.total_samples, n.self_samples + samples);
            }
            if view.framework != Show::Show {
                prop_assert!(shown.nodes.iter().all(|n| !shown.methods[n.method as usize].name.starts_with("System.")
                    || n.parent.is_none_or(|p| !shown.methods[shown.nodes[p as usize].method as usize].name.starts_with("System."))));
            }
        }
    }
}
