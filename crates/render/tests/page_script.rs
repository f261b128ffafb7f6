//! The HTML report's page script (`src/html/*.js`) outside a browser. ESLint holds each file to
//! the header that says which other files' objects and which browser globals it uses
//! (`tests/js/lint-page-script.mjs`), and `model.js`, run under node on the data block of a real
//! report (`tests/js/page-model.mjs`), must compute the figures that `--format json` reports and
//! that `sonde_profile::analysis` computes for the same profile: per-node totals decoded from the
//! compact block, per-method calls, self and recursion-aware totals, every caller and callee
//! edge, and each thread's hot path. The whole page runs in a real browser in
//! `crates/cli/tests/html_report.rs`.
//!
//! Needs `node` and `tests/js/node_modules` (`scripts/setup.sh` installs both); without them the
//! tests fail, they never skip.

#[path = "support/profiles.rs"]
mod profiles;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use sonde_profile::{Analysis, Edge, Mode, NodeEvents, Profile, hot_path, node_alloc_totals};
use sonde_render::{Format, renderer};

const SETUP: &str = "run scripts/setup.sh (it installs Node.js and the npm packages of tests/js)";

fn js_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/js")
}

/// `node SCRIPT`, or a failure that says what to install.
fn node(script: &str, packages: &[&str]) -> Command {
    match Command::new("node").arg("--version").output() {
        Ok(out) if out.status.success() => {}
        Ok(out) => panic!("`node --version` failed ({}): {SETUP}", out.status),
        Err(e) => panic!("cannot run `node` ({e}): the page-script tests need Node.js; {SETUP}"),
    }
    for package in packages {
        let path = js_dir().join("node_modules").join(package).join("package.json");
        assert!(path.exists(), "{} is missing: {SETUP}", path.display());
    }
    let mut node = Command::new("node");
    node.arg(js_dir().join(script));
    node
}

/// Runs `command`; its stdout, or a failure with everything it printed.
fn run(mut command: Command, what: &str) -> String {
    let out = command.output().unwrap_or_else(|e| panic!("cannot run {what}: {e}; {SETUP}"));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{what} failed ({}):\n{stdout}{stderr}", out.status);
    stdout
}

#[test]
fn page_script_files_pass_eslint_with_their_declared_globals() {
    let stdout = run(node("lint-page-script.mjs", &["eslint"]), "ESLint on crates/render/src/html/*.js");
    assert!(stdout.starts_with("ok: 8 page-script files"), "{stdout}");
    print!("{stdout}");
}

/// The heap page's own script part (`html/heap/heap.js`, beside `fmt.js`), held to the same rules.
#[test]
fn the_heap_page_script_passes_eslint_with_its_declared_globals() {
    let heap_js = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/html/heap/heap.js");
    let mut lint = node("lint-page-script.mjs", &["eslint"]);
    lint.arg(heap_js);
    let stdout = run(lint, "ESLint on crates/render/src/html/heap/heap.js");
    assert!(stdout.starts_with("ok: 1 page-script files (heap.js)"), "{stdout}");
}

fn render(format: Format, profile: &Profile) -> String {
    let mut out = Vec::new();
    renderer(format).render(profile, &mut out).expect("rendering");
    String::from_utf8(out).expect("UTF-8")
}

/// The page's `sonde-data` block, as the browser's `textContent` reads it.
fn data_block(html: &str) -> &str {
    const OPEN: &str = "<script type=\"application/json\" id=\"sonde-data\">";
    let start = html.find(OPEN).expect("the data block") + OPEN.len();
    let len = html[start..].find("</script>").expect("the end of the data block");
    &html[start..start + len]
}

/// A figure the page computed: a float, but always a whole number on these profiles.
fn whole_number(value: &Value) -> u64 {
    let x = value.as_f64().unwrap_or_else(|| panic!("{value} is not a number"));
    assert!(x >= 0.0 && x.fract() == 0.0 && x < 2f64.powi(53), "{x} is not an exact count");
    x as u64
}

fn numbers(value: &Value) -> Vec<u64> {
    value.as_array().expect("an array").iter().map(whole_number).collect()
}

/// A page edge `[method, calls, total]` as [`Edge`] fields, -1 standing for no caller.
fn page_edges(value: &Value) -> Vec<(Option<u32>, u64, u64)> {
    value
        .as_array()
        .expect("edges")
        .iter()
        .map(|e| {
            let method = e[0].as_i64().expect("a method id");
            (u32::try_from(method).ok(), whole_number(&e[1]), whole_number(&e[2]))
        })
        .collect()
}

/// Only `thread`'s nodes (parents renumbered), and for each new node its id in `profile`.
fn only_thread(profile: &Profile, thread: u32) -> (Profile, Vec<u32>) {
    let ids: Vec<u32> =
        (0..profile.nodes.len() as u32).filter(|&i| profile.nodes[i as usize].thread == thread).collect();
    let nodes = ids
        .iter()
        .map(|&i| {
            let mut node = profile.nodes[i as usize];
            node.parent = node.parent.map(|p| ids.binary_search(&p).expect("a parent on the same thread") as u32);
            node
        })
        .collect();
    (Profile { nodes, ..profile.clone() }, ids)
}

/// `profile` with allocations and lock waits on some nodes, in and under recursion, and one node
/// with neither.
fn with_events(mut profile: Profile) -> Profile {
    let at = |node: u32, alloc_bytes: u64, wait_ns: u64| NodeEvents {
        node,
        alloc_bytes,
        alloc_count: alloc_bytes / 24,
        wait_ns,
        exceptions_thrown: 0,
    };
    profile.events.nodes =
        vec![at(0, 1_000, 0), at(2, 24_000, 50), at(3, 0, 7_000), at(4, 480, 0), at(9, 96, 0), at(13, 2_400, 300)];
    profile.events.allocations.sampling = sonde_profile::AllocSampling::Sampled;
    profile
}

/// The Memory and Lock-wait tabs' figures (`measures`) against the JSON report: each node's own
/// bytes and wait, its bytes with everything under it (`node_alloc_totals`), and each method's
/// `alloc_bytes`, `total_alloc_bytes` and `wait_ns`.
fn check_measures(name: &str, profile: &Profile, json: &Value, measures: &Value) {
    let has = |f: fn(&NodeEvents) -> u64| profile.events.nodes.iter().any(|e| f(e) > 0);
    assert_eq!(measures.get("alloc").is_some(), has(|e| e.alloc_bytes), "{name}: the Memory tab");
    assert_eq!(measures.get("wait").is_some(), has(|e| e.wait_ns), "{name}: the Lock-wait tab");
    if let Some(alloc) = measures.get("alloc") {
        assert_eq!(alloc["unit"], "bytes");
        let nodes = json["nodes"].as_array().unwrap();
        let own: Vec<u64> = nodes.iter().map(|n| n["alloc_bytes"].as_u64().unwrap()).collect();
        assert_eq!(numbers(&alloc["nodes"]["self"]), own, "{name}: bytes per node");
        assert_eq!(numbers(&alloc["nodes"]["total"]), node_alloc_totals(profile), "{name}: bytes under each node");
        let expected: Vec<Vec<u64>> = json["methods"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| vec![m["alloc_bytes"].as_u64().unwrap(), m["total_alloc_bytes"].as_u64().unwrap()])
            .collect();
        let actual: Vec<Vec<u64>> = alloc["methods"].as_array().unwrap().iter().map(numbers).collect();
        assert_eq!(actual, expected, "{name}: per-method bytes, own and total");
    }
    if let Some(wait) = measures.get("wait") {
        assert_eq!(wait["unit"], "ns");
        let own: Vec<u64> =
            json["methods"].as_array().unwrap().iter().map(|m| m["wait_ns"].as_u64().unwrap()).collect();
        let actual: Vec<u64> = wait["methods"].as_array().unwrap().iter().map(|m| whole_number(&m[0])).collect();
        assert_eq!(actual, own, "{name}: per-method lock wait");
        let all: u64 = profile.events.nodes.iter().map(|e| e.wait_ns).sum();
        assert_eq!(whole_number(&wait["whole"]), all, "{name}: lock wait of all threads");
    }
}

#[test]
fn page_model_computes_the_json_reports_and_the_analysis_figures() {
    let cases = [
        ("tracing", profiles::tracing()),
        ("sampling", profiles::sampling()),
        ("recursive", profiles::recursive()),
        ("events", with_events(profiles::recursive())),
    ];
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("page-model");
    std::fs::create_dir_all(&dir).unwrap();
    let mut command = node("page-model.mjs", &[]);
    for (name, profile) in &cases {
        let path = dir.join(format!("{name}.data.json"));
        std::fs::write(&path, data_block(&render(Format::Html, profile))).unwrap();
        command.arg(path);
    }
    let page: Value = serde_json::from_str(&run(command, "page-model.mjs")).expect("page-model.mjs prints JSON");

    for ((name, profile), page) in cases.iter().zip(page.as_array().expect("one result per profile")) {
        let json: Value = serde_json::from_str(&render(Format::Json, profile)).unwrap();
        let by_samples = page["weight"] == "samples";
        assert_eq!(by_samples, profile.run.mode == Mode::Sampling, "{name}: the page's weight");
        let unit = if by_samples { "samples" } else { "ns" };
        let weight = |ns: u64, samples: u64| if by_samples { samples } else { ns };
        let field = |item: &Value, key: &str| item[format!("{key}_{unit}")].as_u64().expect("a figure");

        // Node figures, decoded from the compact block, against the JSON report's nodes.
        let nodes = json["nodes"].as_array().unwrap();
        let expected: Vec<u64> = nodes.iter().map(|n| field(n, "total")).collect();
        assert_eq!(numbers(&page["nodes"]["total"]), expected, "{name}: node totals");
        let expected: Vec<u64> = nodes.iter().map(|n| field(n, "self")).collect();
        assert_eq!(numbers(&page["nodes"]["self"]), expected, "{name}: node selves");
        let expected: Vec<u64> = nodes.iter().map(|n| n["calls"].as_u64().unwrap()).collect();
        assert_eq!(numbers(&page["nodes"]["calls"]), expected, "{name}: node calls");

        check_measures(name, profile, &json, &page["measures"]);

        let views = page["views"].as_array().unwrap();
        // All threads: the JSON report's methods and sums.
        let all = &views[0];
        assert_eq!(all["thread"], -1);
        let expected: Vec<Vec<u64>> = json["methods"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| vec![m["calls"].as_u64().unwrap(), field(m, "self"), field(m, "total")])
            .collect();
        let actual: Vec<Vec<u64>> = all["methods"].as_array().unwrap().iter().map(numbers).collect();
        assert_eq!(actual, expected, "{name}: per-method calls, self and total of all threads");
        let calls: u64 = json["threads"].as_array().unwrap().iter().map(|t| t["calls"].as_u64().unwrap()).sum();
        assert_eq!(whole_number(&all["calls"]), calls, "{name}: calls of all threads");
        let whole: u64 = nodes.iter().filter(|n| n["parent"].is_null()).map(|n| field(n, "total")).sum();
        assert_eq!(whole_number(&all["whole"]), whole, "{name}: weight of all threads");

        // Every view, all threads merged or one, against the analysis of the same threads.
        for view in views {
            let thread = view["thread"].as_i64().unwrap();
            let what = format!("{name}, thread {thread}");
            let analysis = match u32::try_from(thread) {
                Ok(t) => Analysis::for_thread(profile, t),
                Err(_) => Analysis::new(profile),
            };
            let totals = analysis.totals();
            assert_eq!(whole_number(&view["whole"]), weight(totals.total_ns, totals.total_samples), "{what}: weight");
            assert_eq!(whole_number(&view["calls"]), totals.calls, "{what}: calls");
            let edges = |list: &[Edge]| -> Vec<(Option<u32>, u64, u64)> {
                list.iter().map(|e| (e.method, e.calls, weight(e.total_ns, e.total_samples))).collect()
            };
            for (m, stats) in analysis.methods().iter().enumerate() {
                let expected = vec![
                    stats.calls,
                    weight(stats.self_ns, stats.self_samples),
                    weight(stats.total_ns, stats.total_samples),
                ];
                assert_eq!(numbers(&view["methods"][m]), expected, "{what}: method {m}'s calls, self and total");
                let m32 = m as u32;
                assert_eq!(
                    page_edges(&view["callers"][m]),
                    edges(analysis.callers(m32)),
                    "{what}: method {m}'s callers"
                );
                assert_eq!(
                    page_edges(&view["callees"][m]),
                    edges(analysis.callees(m32)),
                    "{what}: method {m}'s callees"
                );
            }
            // The hot path of one thread (the merged view's has no counterpart in the analysis).
            if let Ok(t) = u32::try_from(view["viewThread"].as_i64().unwrap()) {
                let (alone, ids) = only_thread(profile, t);
                let expected: Vec<u64> = hot_path(&alone).iter().map(|&k| u64::from(ids[k as usize])).collect();
                assert_eq!(numbers(&view["hotPath"]), expected, "{what}: hot path");
            }
        }
    }
}
