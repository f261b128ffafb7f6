//! The heap snapshot's and the heap diff's HTML pages in a real headless browser: snapshots of
//! `tests/apps/Leak.cs` holding 1,000 and 3,000 sessions (`sonde heap --pid`), and hand-made
//! snapshots whose type, field and root names try to inject markup, rendered with
//! `sonde report FILE.heap --format html` and `sonde diff A.heap B.heap --format html`, then
//! `tests/js/heap-report.test.mjs` (node's test runner, playwright-core driving Debian's
//! chromium) clicks through them.
//!
//! Needs what `scripts/setup.sh` installs — node, `tests/js/node_modules` and /usr/bin/chromium —
//! besides the .NET runtime of every integration test; FAILS, never skips, when any is missing.
//! The screenshots land in `target/test-artifacts/`.

mod support;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use sonde_heap::{HeapBuilder, HeapSnapshot, RootKind, RunFacts};
use sonde_render::heap_html::PATH_TYPES;
use support::*;

const CHROMIUM: &str = "/usr/bin/chromium";
const SETUP_HINT: &str = "run scripts/setup.sh (scripts/setup-web.sh installs chromium and the npm packages)";
const NODE_DEADLINE: Duration = Duration::from_secs(240);

/// The names `tests/js/heap-report.test.mjs` expects (its `NASTY`).
const NASTY_TYPE: &str = "</script><img src=x onerror=alert(1)>";
const NASTY_FIELD: &str = "<!--<script>alert(2)//";
const NASTY_ROOT: &str = "Acme.</SCRIPT ><svg onload=alert(3)>";
const NASTY_HOLDER: &str = "Acme.Holder'\"<iframe src=javascript:alert(4)>";

fn os(args: &[&str]) -> Vec<OsString> {
    args.iter().map(OsString::from).collect()
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("the repository root")
}

/// `node` on PATH, or a failure that says how to get it.
fn node() -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join("node"))
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("node is not on PATH: the heap page's browser test needs it; {SETUP_HINT}"))
}

/// A static root (named [`NASTY_ROOT`]) holding a holder, which holds `n` objects of the hostile
/// type through the hostile field.
fn nasty_heap(n: u64) -> HeapSnapshot {
    let mut b = HeapBuilder::new(RunFacts { runtime: "coreclr".into(), pid: 7, pause_ns: 1_000_000 });
    let holder = b.intern_type(NASTY_HOLDER);
    let nasty = b.intern_type(NASTY_TYPE);
    let field = b.intern_field(NASTY_FIELD);
    b.add_root(RootKind::StaticField, NASTY_ROOT, 0x1000);
    b.add_object(0x1000, holder, 24);
    for i in 0..n {
        let object = 0x10_0000 + i * 0x40;
        b.add_reference(0x1000, object, Some(field));
        b.add_object(object, nasty, 32);
    }
    b.finish().expect("a consistent snapshot")
}

/// Leak.exe holding `sessions` sessions, snapshotted with `sonde heap --pid` into `file`.
fn leak_snapshot(dir: &Path, sessions: u32) -> PathBuf {
    let stop = dir.join(format!("stop-{sessions}"));
    let mut leak = Running::spawn(dotnet(), &[app("Leak").into(), sessions.to_string().into(), stop.clone().into()]);
    leak.wait_for_line("ready", Duration::from_secs(60));
    let file = dir.join(format!("leak-{sessions}.heap"));
    let out = sonde_cmd(&os(&["heap", "--pid", &leak.pid().to_string(), "-o", file.to_str().unwrap()]));
    assert_eq!(out.code(), 0, "{}", out.describe());
    std::fs::write(&stop, "").unwrap();
    let end = leak.wait(Duration::from_secs(60));
    assert_eq!(end.code(), 0, "{}", end.describe());
    file
}

/// The name of a type of `file` past the first [`PATH_TYPES`] (whose paths every page holds).
fn far_type(file: &Path) -> String {
    let out = sonde_cmd(&os(&["report", file.to_str().unwrap(), "--format", "json"]));
    assert_eq!(out.code(), 0, "{}", out.describe());
    let report: serde_json::Value = serde_json::from_str(&out.stdout_str()).expect("sonde.heap/1");
    let far = &report["types"][PATH_TYPES + 5]["name"];
    far.as_str().unwrap_or_else(|| panic!("fewer than {} types in {}", PATH_TYPES + 6, file.display())).to_string()
}

/// `sonde ARGS… --format html -o OUT`, checked.
fn html(args: &[&Path], out: &Path) -> PathBuf {
    let mut command = vec![OsString::from(if args.len() == 1 { "report" } else { "diff" })];
    command.extend(args.iter().map(|a| a.as_os_str().to_owned()));
    command.extend(os(&["--format", "html", "-o"]));
    command.push(out.into());
    let run = sonde_cmd(&command);
    assert_eq!(run.code(), 0, "sonde {command:?} failed:\n{}", run.describe());
    let page = std::fs::read_to_string(out).expect("the page");
    assert!(page.starts_with("<!DOCTYPE html>") && page.contains("Content-Security-Policy"));
    out.to_path_buf()
}

#[test]
fn heap_pages_in_a_real_browser() {
    let root = repo_root();
    let node = node();
    let playwright = root.join("tests/js/node_modules/playwright-core/package.json");
    assert!(playwright.is_file(), "{} is missing: {SETUP_HINT}", playwright.display());
    assert!(Path::new(CHROMIUM).is_file(), "{CHROMIUM} is missing: {SETUP_HINT}");

    let dir = support::scratch("sonde-heap-html-");
    let (small, large) = (leak_snapshot(dir.path(), 1_000), leak_snapshot(dir.path(), 3_000));
    let real = html(&[&small], &dir.path().join("leak.html"));
    // A type beyond those whose paths every page holds, asked for with --paths.
    let far = far_type(&small);
    let mut args = os(&["report", small.to_str().unwrap(), "--paths", &far, "--format", "html", "-o"]);
    let with_paths = dir.path().join("leak-paths.html");
    args.push(with_paths.clone().into());
    let out = sonde_cmd(&args);
    assert_eq!(out.code(), 0, "{}", out.describe());
    let diff = html(&[&small, &large], &dir.path().join("leak-diff.html"));
    let (nasty_a, nasty_b) = (dir.path().join("nasty-a.heap"), dir.path().join("nasty-b.heap"));
    sonde_heap::save_heap(&nasty_a, &nasty_heap(2)).expect("cannot write a snapshot");
    sonde_heap::save_heap(&nasty_b, &nasty_heap(5)).expect("cannot write a snapshot");
    let nasty = html(&[&nasty_a], &dir.path().join("nasty.html"));
    let nasty_diff = html(&[&nasty_a, &nasty_b], &dir.path().join("nasty-diff.html"));
    let artifacts = Path::new(env!("CARGO_TARGET_TMPDIR")).join("../test-artifacts");
    std::fs::create_dir_all(&artifacts).expect("cannot create target/test-artifacts");

    // Output goes to files, so that a chatty run cannot fill a pipe and stall.
    let log_out = dir.path().join("node.stdout");
    let log_err = dir.path().join("node.stderr");
    let mut command = Command::new(&node);
    command
        .arg("--test")
        .arg("--test-reporter=spec")
        .arg(root.join("tests/js/heap-report.test.mjs"))
        .current_dir(root.join("tests/js"))
        .env("SONDE_HEAP_REAL", &real)
        .env("SONDE_HEAP_PATHS", &with_paths)
        .env("SONDE_HEAP_PATHS_TYPE", &far)
        .env("SONDE_HEAP_DIFF", &diff)
        .env("SONDE_HEAP_NASTY", &nasty)
        .env("SONDE_HEAP_NASTY_DIFF", &nasty_diff)
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
    for shot in ["heap-report.png", "heap-diff.png"] {
        assert!(artifacts.join(shot).is_file(), "no screenshot {shot}\n{logs}");
    }
    println!("{logs}");
}
