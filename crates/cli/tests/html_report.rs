//! The HTML report in a real headless browser: records real .NET programs (tracing and
//! sampling), builds a profile whose names try to inject markup, renders each with
//! `sonde report --format html`, then runs `tests/js/html-report.test.mjs` (node's test runner,
//! playwright-core driving Debian's chromium) on the pages.
//!
//! Needs what `scripts/setup.sh` installs — node, `tests/js/node_modules` and /usr/bin/chromium —
//! besides the .NET runtime of every integration test; FAILS, never skips, when any is missing.
//! The screenshots land in `target/test-artifacts/`.

mod support;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use sonde_profile::{
    AllocSampling, AllocationCount, Allocations, CallTrace, ExceptionCount, GcCollection, GcKind, GcReason, GcSummary,
    Loading, Method, Mode, ModuleLoad, NodeEvents, Profile, RunInfo, Runtime, RuntimeEvents, Thread, ThreadTrace,
    Timeline, TimelineEvent, TimelineKind, Timing, TraceEvent,
};
use support::*;

const CHROMIUM: &str = "/usr/bin/chromium";
const SETUP_HINT: &str = "run scripts/setup.sh (scripts/setup-web.sh installs chromium and the npm packages)";
/// Browser start, five pages and their interactions.
const NODE_DEADLINE: Duration = Duration::from_secs(300);

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("the repository root")
}

/// `node` on PATH, or a failure that says how to get it.
fn node() -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join("node"))
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("node is not on PATH: the HTML report's browser test needs it; {SETUP_HINT}"))
}

/// The names `tests/js/html-report.test.mjs` expects (its `NASTY`): each tries to become markup.
const NASTY_METHODS: [&str; 3] =
    ["Acme.Program.<Main>b__0_0", "\"><img src=x onerror=alert(1)>", "<script>alert(2)</script>"];
const NASTY_THREAD: &str = "<svg onload=alert(4)>";

fn method(name: &str, signature: &str, module: &str) -> Method {
    Method { name: name.into(), signature: signature.into(), assembly: module.into(), module: format!("{module}.dll") }
}

/// Two threads; on the first, Main → `<Main>b__0_0` → the `<img>` name → the `<script>` name,
/// heavy enough that the hot path opens all of them in the call tree.
fn nasty_profile() -> Profile {
    let methods = vec![
        method("Acme.Program.Main", "(string[]) -> void", "Acme"),
        method(NASTY_METHODS[0], "() -> void", "Acme"),
        method(NASTY_METHODS[1], "(<img src=y onerror=alert(3)>) -> void", "<iframe src=javascript:alert(7)>"),
        method(NASTY_METHODS[2], "() -> </script><script>alert(8)</script>", "Acme"),
        method("Acme.Text.Line\u{2028}Separator&amp;</style>", "() -> void", "Acme"),
    ];
    // (thread, parent, method, calls, self_ns, self_samples)
    let nodes = sonde_profile::testkit::nodes(&[
        (0, None, 0, 1, 100_000, 0),
        (0, Some(0), 1, 3, 500_000, 0),
        (0, Some(1), 2, 5, 300_000, 0),
        (0, Some(2), 3, 7, 200_000, 0),
        (0, Some(0), 4, 2, 50_000, 0),
        (1, None, 2, 1, 150_000, 0),
        (1, Some(5), 3, 4, 90_000, 0),
    ]);
    let wall_ns = 2_000_000;
    Profile {
        events: nasty_events(),
        run: RunInfo {
            mode: Mode::Tracing,
            timing: Some(Timing::Exact),
            runtime: Runtime { kind: "coreclr".into(), version: "8.0.4<script>alert(6)</script>".into() },
            command: vec!["dotnet".into(), "<img src=z onerror=alert(5)>.dll".into()],
            pid: 4242,
            exit_code: Some(0),
            signal: None,
            wall_ns,
            started_unix_ms: 1_700_000_000_000,
            sample_interval_ns: 0,
            compensation: None,
            incomplete: true,
            lost: 1,
            sample_clock: None,
            samples_taken: 0,
            samples_lost: Vec::new(),
            agent_version: "<b>0.1.0</b>".into(),
            attach: None,
            sampler: None,
        },
        methods,
        threads: [(4242, None), (4243, Some(NASTY_THREAD))]
            .into_iter()
            .map(|(os_tid, name)| Thread {
                os_tid,
                name: name.map(Into::into),
                wall_ns,
                cpu_user_ns: wall_ns / 2,
                cpu_kernel_ns: 0,
            })
            .collect(),
        nodes,
        ..sonde_profile::testkit::blank()
    }
}

/// The names `tests/js/html-report.test.mjs` expects on the Memory and Timeline tabs (its
/// `NASTY.types`, `NASTY.exception`): a type, an exception type and a module that try to become
/// markup.
const NASTY_TYPE: &str = "<img src=q onerror=alert(9)>[]";
const NASTY_EXCEPTION: &str = "Acme.<script>alert(10)</script>Exception";
const NASTY_MODULE: &str = "<iframe src=javascript:alert(11)>.dll";

/// Allocations, a lock wait, an exception, a collection, a module load and a JIT span, named to
/// inject markup.
fn nasty_events() -> RuntimeEvents {
    RuntimeEvents {
        exceptions: vec![ExceptionCount { type_name: NASTY_EXCEPTION.into(), thrown: 2, caught: 1 }],
        catches_counted: true,
        gc: GcSummary {
            count_by_gen: [1, 0, 0],
            pause_ns_total: 30_000,
            pause_ns_max: 30_000,
            collections: vec![GcCollection {
                generation: 0,
                reason: GcReason::Induced,
                kind: GcKind::Blocking,
                start_ns: 500_000,
                end_ns: 600_000,
                pause_ns: 30_000,
                heap_bytes_after: 1 << 20,
            }],
        },
        allocations: Allocations {
            sampling: AllocSampling::Sampled,
            sample_bytes: 102_400,
            samples: 3,
            by_type: vec![AllocationCount { type_name: NASTY_TYPE.into(), bytes: 307_200, count: 30 }],
            exact_by_type: false,
        },
        nodes: vec![
            NodeEvents { node: 2, alloc_bytes: 307_200, alloc_count: 30, wait_ns: 0, exceptions_thrown: 2 },
            NodeEvents { node: 3, wait_ns: 40_000, ..Default::default() },
        ],
        loading: Loading {
            methods_compiled: 1,
            jit_ns: 100_000,
            precompiled: Vec::new(),
            modules: vec![ModuleLoad {
                name: NASTY_MODULE.into(),
                path: format!("/tmp/{NASTY_MODULE}"),
                loaded_ns: 100_000,
            }],
        },
        timeline: Timeline {
            events: vec![
                TimelineEvent { kind: TimelineKind::Jit, os_tid: 4242, start_ns: 200_000, end_ns: 300_000 },
                TimelineEvent {
                    kind: TimelineKind::Exception { type_index: 0 },
                    os_tid: 4243,
                    start_ns: 700_000,
                    end_ns: 700_000,
                },
                // A type that is not there: drawn as "?".
                TimelineEvent {
                    kind: TimelineKind::Exception { type_index: 7 },
                    os_tid: 4243,
                    start_ns: 800_000,
                    end_ns: 800_000,
                },
            ],
            dropped: 0,
        },
        // Hostile method names on the call trace's rows (the fifth and sixth).
        call_trace: CallTrace {
            events_per_thread: 8,
            threads: vec![ThreadTrace {
                os_tid: 4242,
                overwritten: 0,
                events: vec![
                    TraceEvent { ns: 100_000, method: 2, depth: 1, exit: false },
                    TraceEvent { ns: 200_000, method: 3, depth: 2, exit: false },
                    TraceEvent { ns: 400_000, method: 3, depth: 2, exit: true },
                    TraceEvent { ns: 900_000, method: 2, depth: 1, exit: true },
                ],
            }],
        },
        faults: Default::default(),
    }
}

/// Pages that must still load cleanly: an empty profile, and one whose figures are all u64::MAX
/// (sums overflow, JavaScript numbers lose precision).
fn edge_profiles() -> [(&'static str, Profile); 2] {
    let mut empty = nasty_profile();
    empty.methods.clear();
    empty.threads.clear();
    empty.nodes.clear();
    empty.events = RuntimeEvents::default();
    let mut absurd = nasty_profile();
    for n in &mut absurd.nodes {
        (n.calls, n.self_ns, n.total_ns) = (u64::MAX, u64::MAX, u64::MAX);
    }
    for e in &mut absurd.events.nodes {
        (e.alloc_bytes, e.wait_ns) = (u64::MAX, u64::MAX);
    }
    for c in &mut absurd.events.gc.collections {
        (c.start_ns, c.end_ns, c.pause_ns) = (u64::MAX - 1, u64::MAX, u64::MAX);
    }
    absurd.run.wall_ns = u64::MAX;
    [("empty", empty), ("absurd", absurd)]
}

/// `sonde report FILE --format html -o FILE.html`, checked.
fn render_html(profile: &Path) -> PathBuf {
    let html = profile.with_extension("html");
    let out = sonde_cmd(&[
        OsString::from("report"),
        profile.into(),
        "--format".into(),
        "html".into(),
        "-o".into(),
        html.clone().into(),
    ]);
    assert_eq!(out.code(), 0, "sonde report --format html {} failed:\n{}", profile.display(), out.describe());
    let page = std::fs::read_to_string(&html).expect("the HTML report");
    assert!(page.starts_with("<!DOCTYPE html>") && page.contains("Content-Security-Policy"));
    html
}

fn record_checked(file: &Path, opts: &[&str], app: &str, args: &[&str]) -> PathBuf {
    let out = record_app(file, opts, app, args);
    assert_eq!(out.code(), 0, "sonde record {opts:?} -- {app}.exe:\n{}", out.describe());
    file.to_path_buf()
}

#[test]
fn html_report_in_a_real_browser() {
    let root = repo_root();
    let node = node();
    let playwright = root.join("tests/js/node_modules/playwright-core/package.json");
    assert!(playwright.is_file(), "{} is missing: {SETUP_HINT}", playwright.display());
    assert!(Path::new(CHROMIUM).is_file(), "{CHROMIUM} is missing: {SETUP_HINT}");

    let dir = tempfile::Builder::new().prefix("sonde-html-").tempdir().expect("a temp dir");
    // The first is the screenshot's: the demo's mix of parsing, sorting and a sieve.
    let demo = record_checked(&dir.path().join("demo.sonde"), &["--mode", "tracing"], "Demo", &[]);
    let traced = record_checked(&dir.path().join("calls.sonde"), &["--mode", "tracing"], "Calls", &[]);
    let sampled_timing = record_checked(
        &dir.path().join("calls-sampled-timing.sonde"),
        &["--mode", "tracing", "--timing", "sampled", "--interval-us", "200"],
        "Calls",
        &[],
    );
    let sampling = record_checked(&dir.path().join("demo-sampling.sonde"), &["--mode", "sampling"], "Demo", &[]);
    // The runtime's events: allocations (Memory), a contended lock (Lock waits), collections,
    // JIT and module loads (Timeline).
    let events = [
        record_checked(
            &dir.path().join("alloc.sonde"),
            &["--mode", "sampling", "--events", "all"],
            "Alloc",
            &["alloc"],
        ),
        record_checked(
            &dir.path().join("contend.sonde"),
            &["--mode", "tracing", "--events", "all"],
            "Alloc",
            &["contend", "5", "20"],
        ),
    ];
    let events = std::env::join_paths(events.iter().map(|f| render_html(f))).expect("joinable paths");
    let nasty = dir.path().join("nasty.sonde");
    sonde_profile::save(&nasty, &nasty_profile()).expect("cannot write the nasty profile");

    let real = std::env::join_paths([render_html(&demo), render_html(&traced), render_html(&sampled_timing)])
        .expect("joinable paths");
    let edge: Vec<PathBuf> = edge_profiles()
        .into_iter()
        .map(|(name, profile)| {
            let file = dir.path().join(format!("{name}.sonde"));
            sonde_profile::save(&file, &profile).expect("cannot write an edge-case profile");
            render_html(&file)
        })
        .collect();
    let edge = std::env::join_paths(edge).expect("joinable paths");
    let sampling = render_html(&sampling);
    let nasty = render_html(&nasty);
    // Source lines: Lines.exe with its portable PDB, sampled; the page embeds Lines.cs.
    let lines_file = dir.path().join("lines.sonde");
    let lines_app: Vec<OsString> =
        vec![support::Runtime::CoreClr.host().into(), built_app("Lines", Build::RoslynPdb).into(), "60".into()];
    let out = record(&lines_file, &["--rate", "1000"], &lines_app);
    assert_eq!(out.code(), 0, "{}", out.describe());
    let lines = render_html(&lines_file);
    // A call trace: calls.c built with the hooks, each thread's latest 4,096 events.
    let calls_exe = compile_native("gcc", "calls.c", &dir.path().join("calls"), &["-pthread"]);
    let calls_file = dir.path().join("call-trace.sonde");
    let out = record(&calls_file, &["--call-trace=4096"], &[calls_exe.into()]);
    assert_eq!(out.code(), 0, "{}", out.describe());
    let call_trace = render_html(&calls_file);
    // Coverage: Cover.exe built by Roslyn with its PDB; the marked lines of Cover.cs.
    let cover_file = dir.path().join("cover.sonde");
    let cover_app: Vec<OsString> =
        vec![support::Runtime::CoreClr.host().into(), built_app("Cover", Build::RoslynPdb).into()];
    let out = record(&cover_file, &["--mode", "coverage"], &cover_app);
    assert_eq!(out.code(), 0, "{}", out.describe());
    let coverage = render_html(&cover_file);
    let cover_source = std::fs::read_to_string(root.join("tests/apps/Cover.cs")).expect("Cover.cs");
    let marks: Vec<String> = cover_source
        .lines()
        .enumerate()
        .filter_map(|(i, l)| {
            let hits: u64 =
                if l.trim_end().ends_with("// NEVER") { 0 } else { l.split("// HITS ").nth(1)?.trim().parse().ok()? };
            Some(format!("{}={hits}", i + 1))
        })
        .collect();
    let source = std::fs::read_to_string(root.join("tests/apps/Lines.cs")).expect("Lines.cs");
    let hot = source.lines().position(|l| l.trim_end().ends_with("// HOT")).expect("a // HOT line") + 1;
    let artifacts = Path::new(env!("CARGO_TARGET_TMPDIR")).join("../test-artifacts");
    std::fs::create_dir_all(&artifacts).expect("cannot create target/test-artifacts");

    // Output goes to files, so that a chatty run cannot fill a pipe and stall.
    let log_out = dir.path().join("node.stdout");
    let log_err = dir.path().join("node.stderr");
    let mut command = Command::new(&node);
    command
        .arg("--test")
        .arg("--test-reporter=spec")
        .arg(root.join("tests/js/html-report.test.mjs"))
        .current_dir(root.join("tests/js"))
        .env("SONDE_HTML_REAL", &real)
        .env("SONDE_HTML_SAMPLING", &sampling)
        .env("SONDE_HTML_NASTY", &nasty)
        .env("SONDE_HTML_EDGE", &edge)
        .env("SONDE_HTML_EVENTS", &events)
        .env("SONDE_HTML_LINES", &lines)
        .env("SONDE_HTML_CALLS", &call_trace)
        .env("SONDE_HTML_COVERAGE", &coverage)
        .env("SONDE_HTML_COVERAGE_MARKS", marks.join(","))
        .env("SONDE_HTML_LINES_HOT", hot.to_string())
        .env("SONDE_TEST_ARTIFACTS", &artifacts)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&log_out).expect("a log file"))
        .stderr(std::fs::File::create(&log_err).expect("a log file"));
    // Its own process group, so that a timeout also ends the browser it started.
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let mut child = command.spawn().unwrap_or_else(|e| panic!("cannot run {}: {e}; {SETUP_HINT}", node.display()));
    let deadline = Instant::now() + NODE_DEADLINE;
    let status = loop {
        if let Some(status) = child.try_wait().expect("waiting for node") {
            break Some(status);
        }
        if Instant::now() >= deadline {
            kill_group(child.id(), libc::SIGKILL);
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let logs = format!(
        "--- stdout ---\n{}\n--- stderr ---\n{}",
        std::fs::read_to_string(&log_out).unwrap_or_default(),
        std::fs::read_to_string(&log_err).unwrap_or_default()
    );
    let status = status.unwrap_or_else(|| panic!("the browser test did not finish within {NODE_DEADLINE:?}\n{logs}"));
    assert!(status.success(), "the browser test failed ({status})\n{logs}");
    let screenshot = artifacts.join("html-report.png");
    assert!(screenshot.is_file(), "no screenshot at {}\n{logs}", screenshot.display());
    println!("{logs}\nscreenshot: {}", screenshot.canonicalize().unwrap_or(screenshot).display());
}
