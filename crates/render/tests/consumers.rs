//! The exports checked by independent consumers, not by our own reading of them: speedscope
//! JSON against the schema shipped in speedscope's npm package (with ajv), and pprof decoded by
//! Datadog's `pprof-format` after node's own gunzip, the Chrome trace by DevTools' own trace
//! engine (`@paulirish/trace_engine`). `tests/js/validate-exports.mjs` does the
//! checking; this test writes the files, and next to each the expectations computed here
//! straight from the profile model (stacks by name, weights, sample types, labels).
//!
//! Needs `node` and `tests/js/node_modules` (`scripts/setup.sh` installs both); without them the
//! test fails, it never skips. The files stay in Cargo's target tmp dir for inspection.

#[path = "support/profiles.rs"]
mod profiles;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};
use sonde_profile::{Mode, Profile};
use sonde_render::{Format, renderer};

const SETUP: &str = "run scripts/setup.sh (it installs Node.js and the npm packages of tests/js)";

fn js_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/js")
}

/// Fails, with what to do, when node or the npm packages are missing.
fn node() -> Command {
    match Command::new("node").arg("--version").output() {
        Ok(out) if out.status.success() => {}
        Ok(out) => panic!("`node --version` failed ({}): {SETUP}", out.status),
        Err(e) => panic!("cannot run `node` ({e}): the export tests need Node.js; {SETUP}"),
    }
    for needed in [
        "ajv",
        "pprof-format",
        "speedscope/dist/release/file-format-schema.json",
        "@paulirish/trace_engine/models/trace/trace.js",
    ] {
        let path = js_dir().join("node_modules").join(needed);
        assert!(path.exists(), "{} is missing: {SETUP}", path.display());
    }
    let mut node = Command::new("node");
    node.arg(js_dir().join("validate-exports.mjs"));
    node
}

fn out_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("exports");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn write(path: &Path, format: Format, profile: &Profile) {
    let mut out = Vec::new();
    renderer(format).render(profile, &mut out).expect("rendering");
    std::fs::write(path, out).unwrap();
}

fn weight(profile: &Profile, node: usize) -> u64 {
    let n = &profile.nodes[node];
    match profile.run.mode {
        Mode::Tracing | Mode::Coverage => n.self_ns,
        Mode::Sampling => n.self_samples,
    }
}

/// Method names from the root down to `node`.
fn stack(profile: &Profile, node: usize) -> Vec<String> {
    let mut names = Vec::new();
    let mut at = Some(node as u32);
    while let Some(i) = at {
        let n = &profile.nodes[i as usize];
        names.push(profile.display_name(n.method).into_owned());
        at = n.parent;
    }
    names.reverse();
    names
}

fn thread_name(profile: &Profile, thread: u32) -> String {
    let t = &profile.threads[thread as usize];
    match &t.name {
        Some(name) => format!("{} ({name})", t.os_tid),
        None => t.os_tid.to_string(),
    }
}

/// The profiles are built in depth-first order, so the exports' stacks come in node order.
fn speedscope_expectation(profile: &Profile) -> Value {
    let unit = if profile.run.mode == Mode::Tracing { "nanoseconds" } else { "none" };
    let sampled = |name: String, thread: Option<u32>| {
        let nodes: Vec<usize> = (0..profile.nodes.len())
            .filter(|&i| weight(profile, i) > 0 && thread.is_none_or(|t| profile.nodes[i].thread == t))
            .collect();
        json!({
            "name": name,
            "unit": unit,
            "stacks": nodes.iter().map(|&i| stack(profile, i)).collect::<Vec<_>>(),
            "weights": nodes.iter().map(|&i| weight(profile, i)).collect::<Vec<_>>(),
        })
    };
    let mut profiles = vec![sampled("all threads".into(), None)];
    for t in 0..profile.threads.len() as u32 {
        if profile.nodes.iter().enumerate().any(|(i, n)| n.thread == t && weight(profile, i) > 0) {
            profiles.push(sampled(format!("thread {}", thread_name(profile, t)), Some(t)));
        }
    }
    json!({ "activeProfileIndex": 0, "profiles": profiles })
}

/// One sample per node with values — split by line where the profile has the node's lines: a
/// sample per line (its samples, their share of the time, the innermost frame `Name:line`),
/// then one with the rest.
fn pprof_expectation(profile: &Profile) -> Value {
    let run = &profile.run;
    let samples: Vec<Value> = (0..profile.nodes.len())
        .flat_map(|i| {
            let n = &profile.nodes[i];
            let mut values = match run.mode {
                Mode::Tracing | Mode::Coverage => [n.calls, n.self_ns],
                Mode::Sampling => [n.self_samples, n.self_ns],
            };
            let mut leaf_first = stack(profile, i);
            leaf_first.reverse();
            let labels = json!({ "thread": thread_name(profile, n.thread) });
            let mut out = Vec::new();
            for l in profile.sources.node_lines.iter().filter(|l| l.node as usize == i) {
                let line = [l.samples, n.self_ns * l.samples / n.self_samples];
                let mut stack = leaf_first.clone();
                stack[0] = format!("{}:{}", stack[0], l.at.line);
                out.push(json!({ "stack": stack, "values": line, "labels": labels }));
                values = [values[0] - line[0], values[1] - line[1]];
            }
            if values != [0, 0] {
                out.push(json!({ "stack": leaf_first, "values": values, "labels": labels }));
            }
            out
        })
        .collect();
    let (types, default) = match run.mode {
        Mode::Tracing | Mode::Coverage => (["calls/count", "wall/nanoseconds"], "wall"),
        Mode::Sampling => (["samples/count", "cpu/nanoseconds"], "cpu"),
    };
    json!({
        "sampleTypes": types,
        "defaultSampleType": default,
        "samples": samples,
        "durationNanos": run.wall_ns,
        "timeNanos": run.started_unix_ms * 1_000_000,
    })
}

#[test]
fn speedscope_and_pprof_exports_satisfy_independent_consumers() {
    let mut node = node();
    let dir = out_dir();
    for (name, profile) in
        [("tracing", profiles::tracing()), ("sampling", profiles::sampling()), ("lines", profiles::sampling_lines())]
    {
        let exports = [
            (format!("{name}.speedscope.json"), Format::Speedscope, speedscope_expectation(&profile)),
            (format!("{name}.pb.gz"), Format::Pprof, pprof_expectation(&profile)),
        ];
        for (file, format, expect) in exports {
            let path = dir.join(file);
            write(&path, format, &profile);
            let expect_path = format!("{}.expect.json", path.display());
            std::fs::write(expect_path, serde_json::to_string_pretty(&expect).unwrap()).unwrap();
            node.arg(&path);
        }
    }
    // Without expectations: structure only, on an empty profile.
    let empty = Profile {
        run: profiles::run(Mode::Sampling),
        methods: vec![],
        threads: vec![],
        nodes: vec![],
        ..sonde_profile::testkit::blank()
    };
    for (file, format) in [("empty.speedscope.json", Format::Speedscope), ("empty.pb.gz", Format::Pprof)] {
        let path = dir.join(file);
        let _ = std::fs::remove_file(format!("{}.expect.json", path.display()));
        write(&path, format, &empty);
        node.arg(&path);
    }

    let out = node.output().expect("running node");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "validate-exports.mjs failed ({}):\n{stdout}{stderr}", out.status);
    assert_eq!(stdout.lines().filter(|l| l.starts_with("ok ")).count(), 8, "{stdout}");
    print!("{stdout}");
}

/// The timeline export read by Chrome DevTools' own trace engine: its threads, named by the
/// metadata, hold the collections (the `GC` track) and each thread's compilations, at the
/// exported times (microseconds).
#[test]
fn the_chrome_trace_satisfies_devtools_trace_engine() {
    use sonde_profile::{ExceptionCount, GcCollection, GcKind, GcReason, ModuleLoad, TimelineEvent, TimelineKind};
    let mut profile = profiles::sampling();
    let events = &mut profile.events;
    events.exceptions.push(ExceptionCount { type_name: "System.IO.IOException".into(), thrown: 1, caught: 1 });
    for (generation, start, end) in [(0u8, 1_000_000u64, 1_500_000u64), (2, 9_000_000, 12_000_000)] {
        events.gc.collections.push(GcCollection {
            generation,
            reason: GcReason::Induced,
            kind: GcKind::Blocking,
            start_ns: start,
            end_ns: end,
            pause_ns: end - start,
            heap_bytes_after: 1 << 20,
        });
    }
    events.gc.count_by_gen = [1, 0, 1];
    events.loading.modules.push(ModuleLoad { name: "Acme.dll".into(), path: "/srv/Acme.dll".into(), loaded_ns: 500 });
    let jit = |os_tid, start_ns, end_ns| TimelineEvent { kind: TimelineKind::Jit, os_tid, start_ns, end_ns };
    events.timeline.events = vec![
        jit(777, 100_000, 250_000),
        jit(790, 2_000_000, 2_000_500),
        TimelineEvent { kind: TimelineKind::Exception { type_index: 0 }, os_tid: 777, start_ns: 3_000, end_ns: 3_000 },
    ];
    let path = out_dir().join("timeline.trace.json");
    write(&path, Format::Chrome, &profile);
    let expect = json!({"threads": {
        "GC": [["GC gen0 (induced, blocking)", 1000, 500], ["GC gen2 (induced, blocking)", 9000, 3000]],
        "Main": [["JIT", 100, 150]],
        "<Worker> \"1\"": [["JIT", 2000, 0.5]],
    }});
    std::fs::write(format!("{}.expect.json", path.display()), serde_json::to_string_pretty(&expect).unwrap()).unwrap();
    let out = node().arg(&path).output().expect("running node");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "validate-exports.mjs failed ({}):\n{stdout}{stderr}", out.status);
    assert!(stdout.starts_with("ok ") && stdout.contains("as expected"), "{stdout}");
}
