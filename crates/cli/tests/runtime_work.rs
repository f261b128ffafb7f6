//! The runtime's work, named (issue 37, item 9): sampling shows the samples taken while the JIT
//! compiled a method as `[jit] Ns.Type.Method` and those taken in a garbage collection as `[gc]`,
//! under the managed frame that caused them, with the runtime's native frames below (folded into
//! them by default, shown with `--native show`, kept in the JSON). Real runtimes; FAILS when one
//! is missing.

mod support;

use serde_json::Value;
use std::ffi::OsString;
use std::path::Path;
use support::*;

/// A profile's nodes as (method name, method kind, parent node), and its nodes' children.
struct Tree {
    names: Vec<String>,
    kinds: Vec<String>,
    method: Vec<usize>,
    parent: Vec<Option<usize>>,
    children: Vec<Vec<usize>>,
}

impl Tree {
    fn of(report: &Value) -> Tree {
        let methods = arr(report, "methods");
        let names = methods.iter().map(|m| str_of(m, "name").to_string()).collect();
        let kinds = methods.iter().map(|m| str_of(m, "kind").to_string()).collect();
        let nodes = arr(report, "nodes");
        let method: Vec<usize> = nodes.iter().map(|n| u64_of(n, "method") as usize).collect();
        let parent: Vec<Option<usize>> = nodes.iter().map(|n| n["parent"].as_u64().map(|p| p as usize)).collect();
        let mut children = vec![Vec::new(); nodes.len()];
        for (i, p) in parent.iter().enumerate() {
            if let Some(p) = p {
                children[*p].push(i);
            }
        }
        Tree { names, kinds, method, parent, children }
    }

    fn name(&self, node: usize) -> &str {
        &self.names[self.method[node]]
    }

    fn kind(&self, node: usize) -> &str {
        &self.kinds[self.method[node]]
    }

    /// The nodes whose method's name starts with `prefix`.
    fn named(&self, prefix: &str) -> Vec<usize> {
        (0..self.method.len()).filter(|&n| self.name(n).starts_with(prefix)).collect()
    }

    fn parent_name(&self, node: usize) -> Option<&str> {
        self.parent[node].map(|p| self.name(p))
    }

    fn ancestors(&self, node: usize) -> impl Iterator<Item = usize> + '_ {
        std::iter::successors(self.parent[node], |&n| self.parent[n])
    }

    fn descendants(&self, node: usize) -> Vec<usize> {
        let mut all = Vec::new();
        let mut stack = self.children[node].clone();
        while let Some(n) = stack.pop() {
            all.push(n);
            stack.extend(&self.children[n]);
        }
        all
    }
}

/// The stacks of `sonde report <file> --format collapsed [opts]`, root first.
fn collapsed(file: &Path, opts: &[&str]) -> Vec<Vec<String>> {
    let mut args: Vec<OsString> = vec!["report".into(), file.into(), "--format".into(), "collapsed".into()];
    args.extend(opts.iter().map(OsString::from));
    let out = sonde_cmd(&args);
    assert_eq!(out.code(), 0, "{}", out.describe());
    out.stdout_str()
        .lines()
        .map(|line| line.rsplit_once(' ').expect("`stack count`").0.split(';').map(str::to_string).collect())
        .collect()
}

/// The JIT compiling the methods `Work.exe jit` emitted, each called from `Acme.Work.CallEach`.
fn compilations_are_named_under_their_caller(rt: Runtime) {
    let dir = scratch("sonde-work-jit");
    let file = dir.path().join("jit.sonde");
    let out = rt.record_app(&file, &[], "Work", &["jit", "100"]);
    assert_eq!(out.code(), 0, "{}", out.describe());
    let report = report_json(&file);
    let tree = Tree::of(&report);

    // The JSON: `[jit] Acme.Generated…` frames right under CallEach, marked as work, with the
    // runtime's native frames below them.
    let compiling = tree.named("[jit] Acme.Generated");
    let under_caller: Vec<usize> =
        compiling.iter().copied().filter(|&n| tree.parent_name(n) == Some("Acme.Work.CallEach")).collect();
    assert!(!under_caller.is_empty(), "no [jit] Acme.Generated… frame under CallEach; [jit] frames: {:?}", {
        let mut names: Vec<String> =
            tree.named("[jit]").iter().map(|&n| format!("{} under {:?}", tree.name(n), tree.parent_name(n))).collect();
        names.dedup();
        names
    });
    assert!(
        under_caller.iter().any(|&n| tree.descendants(n).iter().any(|&d| tree.kind(d) == "native")),
        "the JIT's native frames are kept below its frames in the JSON"
    );
    for m in arr(&report, "methods").iter().filter(|m| str_of(m, "name").starts_with("[jit] ")) {
        assert_eq!(m["runtime_work"], "jit", "{m}");
        assert_eq!(m["kind"], "runtime", "{m}");
    }
    let work = &report["runtime_work"]["jit"];
    assert!(u64_of(work, "samples") > 0, "{work}");
    let generated = arr(work, "by_assembly").iter().find(|a| a["assembly"] == "Acme.Generated");
    assert!(generated.is_some_and(|a| u64_of(a, "methods") > 0), "{work}");

    // The default view: the compilation is the leaf under CallEach, the JIT's native code folded
    // into it; `--native show` has the native frames below it.
    let folded = collapsed(&file, &[]);
    let leaf_under_caller = |s: &Vec<String>| {
        s.len() >= 2 && s[s.len() - 1].starts_with("[jit] Acme.Generated") && s[s.len() - 2] == "Acme.Work.CallEach"
    };
    assert!(folded.iter().any(leaf_under_caller), "{folded:?}");
    assert!(
        !folded.iter().any(|s| s.windows(2).any(|w| w[0].starts_with("[jit] ") && w[1].starts_with("[native] "))),
        "a native run right below a compilation folds into it"
    );
    let shown = collapsed(&file, &["--native", "show"]);
    assert!(
        shown
            .iter()
            .any(|s| s.windows(2).any(|w| w[0].starts_with("[jit] Acme.Generated") && w[1].starts_with("[native] "))),
        "{shown:?}"
    );

    // The text report's first table.
    let text = report_text(&file);
    assert_eq!(text.code(), 0, "{}", text.describe());
    let text = text.stdout_str();
    let work = text.find("Runtime work").expect("a Runtime work table");
    assert!(work < text.find("Hot methods").expect("a hot-methods table"), "{text}");
    assert!(
        text.contains("JIT compiling") && text.contains("of Acme.Generated (") && text.contains(" sampled)"),
        "{text}"
    );
}

/// Full collections `Acme.Work.Collect` asks for, on its own thread.
fn collections_are_named_under_their_caller(rt: Runtime) {
    let dir = scratch("sonde-work-gc");
    let file = dir.path().join("gc.sonde");
    let out = rt.record_app(&file, &[], "Work", &["gc", "20"]);
    assert_eq!(out.code(), 0, "{}", out.describe());
    let report = report_json(&file);
    let tree = Tree::of(&report);
    let collecting: Vec<usize> = tree
        .named("[gc]")
        .into_iter()
        .filter(|&n| tree.ancestors(n).any(|a| tree.name(a) == "Acme.Work.Collect"))
        .collect();
    assert!(!collecting.is_empty(), "no [gc] frame below Acme.Work.Collect");
    // Right under the managed method that asked for it (on Mono, under its wrapper for the
    // runtime's call).
    let caller = |n: usize| tree.ancestors(n).find(|&a| tree.kind(a) == "managed").map(|a| tree.name(a));
    assert!(
        collecting.iter().any(
            |&n| caller(n) == Some("System.GC.Collect") && tree.parent[n].is_some_and(|p| tree.kind(p) != "native")
        ),
        "[gc] right under the managed frame that asked for it: {:?}",
        collecting.iter().map(|&n| (tree.parent_name(n), caller(n))).collect::<Vec<_>>()
    );
    if rt == Runtime::CoreClr {
        assert!(
            collecting.iter().any(|&n| tree.descendants(n).iter().any(|&d| tree.kind(d) == "native")),
            "the collector's native frames are kept below [gc] in the JSON"
        );
    }
    assert!(u64_of(&report["runtime_work"]["gc"], "samples") > 0, "{}", report["runtime_work"]);
    let folded = collapsed(&file, &[]);
    assert!(folded.iter().any(|s| s.ends_with(&["System.GC.Collect".to_string(), "[gc]".to_string()])), "{folded:?}");
    let text = report_text(&file).stdout_str();
    assert!(text.contains("garbage collection"), "{text}");
}

on_both_runtimes!(compilations_are_named_under_their_caller, collections_are_named_under_their_caller);

/// Roslyn compiling one file on .NET 8: the report's first table says the run is the JIT
/// compiling Roslyn's own code, and the JSON has its compilations under Roslyn's methods.
#[test]
fn roslyn_s_start_up_reads_as_compiling_roslyn() {
    let dir = scratch("sonde-work-roslyn");
    let file = dir.path().join("csc.sonde");
    let source = repo_file("tests/apps/Calls.cs");
    let program = dir.path().join("Calls.exe");
    let mut out_arg = OsString::from("-out:");
    out_arg.push(&program);
    let out = record(&file, &[], &[csc().into_os_string(), out_arg, source.into_os_string()]);
    assert_eq!(out.code(), 0, "{}", out.describe());
    assert!(program.is_file(), "Roslyn wrote no program");
    let report = report_json(&file);
    let jit = &report["runtime_work"]["jit"];
    let heaviest = arr(jit, "by_assembly").first().map(|a| str_of(a, "assembly").to_string());
    assert!(
        heaviest.as_deref().is_some_and(|a| a.starts_with("Microsoft.CodeAnalysis")),
        "the JIT's heaviest assembly: {heaviest:?} ({jit})"
    );
    let tree = Tree::of(&report);
    assert!(
        tree.named("[jit] Microsoft.CodeAnalysis.")
            .iter()
            .any(|&n| tree.parent[n].is_some_and(|p| tree.kind(p) == "managed")
                && tree.descendants(n).iter().any(|&d| tree.name(d).starts_with("[native] libclrjit.so"))),
        "a Roslyn method compiled under a managed caller, with the JIT's frames below"
    );
    let text = report_text(&file).stdout_str();
    let work = text.find("Runtime work").expect("a Runtime work table");
    assert!(work < text.find("Hot methods").expect("a hot-methods table"), "{text}");
    assert!(text.contains("  of Microsoft.CodeAnalysis"), "{text}");
}
