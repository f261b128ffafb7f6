//! Heap snapshots (issue 40) of real .NET 8 programs: `tests/apps/Leak.cs` keeps every session it
//! opens in a static cache (`Acme.Cache.Items`, a `Dictionary<string, Acme.Session>`, each
//! session holding a 1,000-byte buffer) and a linked list of 500 orders on `Main`'s stack, then
//! waits for a stop file. `sonde heap --pid` attaches, takes the snapshot and detaches; `sonde
//! snapshot --heap` asks a running `sonde record` for one; `sonde heap -- COMMAND --after SECS`
//! starts the program. On Mono (6.8), `sonde snapshot --heap` of a recording. Like every
//! integration test, these FAIL (never skip) without `SONDE_DOTNET`, `SONDE_MONO` and `SONDE_MCS`.

mod support;

use serde_json::Value;
use std::ffi::OsString;
use std::path::Path;
use std::time::Duration;
use support::*;

fn scratch() -> tempfile::TempDir {
    support::scratch("sonde-heap-")
}

fn os(args: &[&str]) -> Vec<OsString> {
    args.iter().map(OsString::from).collect()
}

/// Leak.exe holding `sessions` sessions, waiting for `stop`, its heap built.
fn start_leak(sessions: u32, stop: &Path) -> Running {
    let mut leak = Running::spawn(dotnet(), &[app("Leak").into(), sessions.to_string().into(), stop.into()]);
    leak.wait_for_line("ready", Duration::from_secs(60));
    leak
}

/// `sonde report FILE --format json [--paths TYPE]`.
fn heap_json(file: &Path, paths: Option<&str>) -> Value {
    let mut args = os(&["report", file.to_str().unwrap(), "--format", "json"]);
    if let Some(ty) = paths {
        args.extend(os(&["--paths", ty]));
    }
    let out = sonde_cmd(&args);
    assert_eq!(out.code(), 0, "{}", out.describe());
    serde_json::from_str(&out.stdout_str()).unwrap_or_else(|e| panic!("{e}: {}", out.stdout_str()))
}

fn type_row<'a>(report: &'a Value, name: &str) -> &'a Value {
    arr(report, "types").iter().find(|t| str_of(t, "name") == name).unwrap_or_else(|| panic!("no {name}: {report:#}"))
}

/// What every snapshot of Leak.exe with `sessions` sessions shows: the sessions and their
/// buffers, retained by the cache's dictionary, reached from the static field that holds it.
fn assert_leak(report: &Value, sessions: u64) {
    assert_eq!(report["schema"], "sonde.heap/1");
    assert_eq!(report["runtime"], "coreclr");
    let session = type_row(report, "Acme.Session");
    assert_eq!(u64_of(session, "count"), sessions, "{session:#}");
    // Each session: itself, its name, its 1,000-byte buffer (1,024 with the array's header).
    assert!(u64_of(session, "retained_bytes") >= sessions * 1_024, "{session:#}");
    let dictionary = type_row(report, "System.Collections.Generic.Dictionary<string, Acme.Session>");
    assert!(u64_of(dictionary, "retained_bytes") >= u64_of(session, "retained_bytes"), "{dictionary:#}");
    let orders = type_row(report, "Acme.Order");
    assert_eq!(u64_of(orders, "count"), 500, "{orders:#}");
    let statics: Vec<&str> =
        arr(report, "roots").iter().filter(|r| str_of(r, "kind") == "static").map(|r| str_of(r, "name")).collect();
    assert!(statics.contains(&"Acme.Cache.Items"), "{statics:?}");
    // The orders' list is held by a local of Main: a stack root named by its frame's method.
    let stacks: Vec<&str> =
        arr(report, "roots").iter().filter(|r| str_of(r, "kind") == "stack").map(|r| str_of(r, "name")).collect();
    assert!(stacks.contains(&"stack: Acme.Program.Main"), "{stacks:?}");
    assert!(u64_of(report, "pause_ns") > 0);
}

/// The path from the roots to every session: the static field, the dictionary, its entries.
fn assert_session_paths(report: &Value, sessions: u64) {
    assert_eq!(report["paths_type"], "Acme.Session");
    let paths = arr(report, "paths");
    let first = &paths[0];
    assert_eq!(u64_of(first, "objects"), sessions, "{paths:#?}");
    assert_eq!(
        path_steps(first),
        [
            "static Acme.Cache.Items",
            "System.Collections.Generic.Dictionary<string, Acme.Session>",
            "System.Collections.Generic.Dictionary+Entry<string, Acme.Session>[]",
            "Acme.Session"
        ]
    );
}

/// A path's steps: `KIND NAME` for its root, then the types.
fn path_steps(path: &Value) -> Vec<String> {
    arr(path, "steps")
        .iter()
        .map(|s| match s["kind"].as_str() {
            Some("root") => format!("{} {}", str_of(s, "root_kind"), str_of(s, "root_name")),
            _ => str_of(s, "type").to_string(),
        })
        .collect()
}

/// `sonde heap --pid`: the snapshot of a running program, which runs on unharmed after the
/// detach and can be snapshotted again.
#[test]
fn a_running_program_s_heap_shows_what_holds_its_memory() {
    let dir = scratch();
    let stop = dir.path().join("stop");
    let leak = start_leak(2_000, &stop);
    let pid = leak.pid().to_string();
    let file = dir.path().join("leak.heap");
    let out = sonde_cmd(&os(&["heap", "--pid", &pid, "-o", file.to_str().unwrap(), "--paths", "Acme.Session"]));
    assert_eq!(out.code(), 0, "{}", out.describe());
    let text = out.stdout_str();
    assert!(
        text.contains("static Acme.Cache.Items → System.Collections.Generic.Dictionary<string, Acme.Session>"),
        "{text}"
    );
    assert!(out.stderr_str().contains("heap snapshot written to"), "{}", out.describe());
    let report = heap_json(&file, Some("Acme.Session"));
    assert_leak(&report, 2_000);
    assert_session_paths(&report, 2_000);
    // Again: the agent was detached and can be loaded anew.
    let again = dir.path().join("again.heap");
    let out = sonde_cmd(&os(&["heap", "--pid", &pid, "-o", again.to_str().unwrap()]));
    assert_eq!(out.code(), 0, "{}", out.describe());
    assert_leak(&heap_json(&again, None), 2_000);
    std::fs::write(&stop, "").unwrap();
    let end = leak.wait(Duration::from_secs(60));
    assert_eq!(end.code(), 0, "{}", end.describe());
}

/// `sonde snapshot --heap` through a running recording's control socket, twice as the cache
/// grows... here two programs: `sonde diff` of their snapshots names the growth and where the new
/// objects hang.
#[test]
fn a_recording_gives_a_heap_snapshot_on_request_and_two_compare() {
    let dir = scratch();
    let mut files = Vec::new();
    for sessions in [300u32, 1_300] {
        let stop = dir.path().join(format!("stop-{sessions}"));
        let profile = dir.path().join(format!("leak-{sessions}.sonde"));
        let mut args =
            record_args(&profile, &[], &app_command("Leak", &[&sessions.to_string(), stop.to_str().unwrap()]));
        args.insert(0, "-v".into());
        let mut recording = Running::spawn(sonde(), &args);
        recording.wait_for_line("ready", Duration::from_secs(60));
        let session = recording.pid().to_string();
        let file = dir.path().join(format!("leak-{sessions}.heap"));
        let out = sonde_cmd(&os(&["snapshot", "--heap", "--to", file.to_str().unwrap(), "--session", &session]));
        assert_eq!(out.code(), 0, "{}", out.describe());
        assert!(out.stderr_str().contains("objects of process"), "{}", out.describe());
        std::fs::write(&stop, "").unwrap();
        let end = recording.wait(Duration::from_secs(60));
        assert_eq!(end.code(), 0, "{}", end.describe());
        assert_leak(&heap_json(&file, None), sessions as u64);
        // The recording's own profile is there too.
        assert!(report_json(&profile)["samples_taken"].as_u64().is_some());
        files.push(file);
    }
    let out = sonde_cmd(&os(&["diff", files[0].to_str().unwrap(), files[1].to_str().unwrap(), "--format", "json"]));
    assert_eq!(out.code(), 0, "{}", out.describe());
    let diff: Value = serde_json::from_str(&out.stdout_str()).unwrap();
    assert_eq!(diff["schema"], "sonde.heapdiff/1");
    let session = arr(&diff, "types").iter().find(|t| str_of(t, "name") == "Acme.Session").expect("Acme.Session");
    assert_eq!(session["count_change"], 1_000, "{session:#}");
    let suspect = arr(&diff, "suspects").iter().find(|s| str_of(s, "name") == "Acme.Session").expect("a suspect");
    let path = &arr(suspect, "paths")[0];
    assert_eq!(path["objects_change"], 1_000, "{suspect:#}");
    assert_eq!(arr(path, "steps")[0]["root_name"], "Acme.Cache.Items", "{suspect:#}");
    let text = sonde_cmd(&os(&["diff", files[0].to_str().unwrap(), files[1].to_str().unwrap()]));
    assert!(text.stdout_str().contains("Where the +1,000 new Acme.Session are held"), "{}", text.describe());
}

/// Mono (issue 40's Mono side): `sonde snapshot --heap` of a recording of `mono Leak.exe` — the
/// agent forces a major collection on Mono's finalizer thread, walks the heap before the world
/// restarts and writes it in CoreCLR's layouts. The sessions, their buffers and the path to them
/// from the static field that holds the cache, as on CoreCLR.
#[test]
fn a_mono_recording_gives_a_heap_snapshot_on_request() {
    let dir = scratch();
    let stop = dir.path().join("stop");
    let profile = dir.path().join("leak.sonde");
    let command = Runtime::Mono.app_command("Leak", &["1000", stop.to_str().unwrap()]);
    let mut recording = Running::spawn(sonde(), &record_args(&profile, &[], &command));
    recording.wait_for_line("ready", Duration::from_secs(60));
    let session = recording.pid().to_string();
    let file = dir.path().join("leak.heap");
    let out = sonde_cmd(&os(&["snapshot", "--heap", "--to", file.to_str().unwrap(), "--session", &session]));
    assert_eq!(out.code(), 0, "{}", out.describe());
    std::fs::write(&stop, "").unwrap();
    let end = recording.wait(Duration::from_secs(60));
    assert_eq!(end.code(), 0, "{}", end.describe());

    let report = heap_json(&file, Some("Acme.Session"));
    assert_eq!(report["schema"], "sonde.heap/1");
    assert_eq!(report["runtime"], "mono");
    let session = type_row(&report, "Acme.Session");
    assert_eq!(u64_of(session, "count"), 1_000, "{session:#}");
    assert!(u64_of(session, "retained_bytes") >= 1_000 * 1_024, "{session:#}");
    let dictionary = type_row(&report, "System.Collections.Generic.Dictionary<string, Acme.Session>");
    assert!(u64_of(dictionary, "retained_bytes") >= u64_of(session, "retained_bytes"), "{dictionary:#}");
    assert_eq!(u64_of(type_row(&report, "Acme.Order"), "count"), 500);
    assert!(u64_of(&report, "pause_ns") > 0);
    // Mono scans the threads' stacks conservatively: a word that still holds the last session's
    // address (in `Main`'s frame, a register) roots it directly, so a few sessions may take a
    // shorter path from `stack`. The rest hang from the static field, as on CoreCLR.
    let paths = arr(&report, "paths");
    assert_eq!(paths.iter().map(|p| u64_of(p, "objects")).sum::<u64>(), 1_000, "{paths:#?}");
    let through_cache = &paths[0];
    assert!(u64_of(through_cache, "objects") >= 990, "{paths:#?}");
    assert_eq!(
        path_steps(through_cache),
        [
            "static Acme.Cache.Items",
            "System.Collections.Generic.Dictionary<string, Acme.Session>",
            "System.Collections.Generic.Dictionary+Entry<string, Acme.Session>[]",
            "Acme.Session"
        ]
    );
}

/// `sonde heap --after SECS -- COMMAND`: the snapshot while the program runs, the program's exit
/// status as sonde's; a program that ends first leaves no snapshot and a non-zero exit.
#[test]
fn a_launched_program_is_snapshotted_while_it_runs() {
    let dir = scratch();
    let stop = dir.path().join("stop");
    let file = dir.path().join("launched.heap");
    let mut args = os(&["heap", "--after", "0.5", "-o", file.to_str().unwrap(), "--"]);
    args.extend(app_command("Leak", &["100", stop.to_str().unwrap()]));
    let mut sonde = Running::spawn(sonde(), &args);
    // The summary (stdout) comes once the snapshot is written; the program waits meanwhile.
    sonde.wait_for_line("Types by retained size", Duration::from_secs(60));
    std::fs::write(&stop, "").unwrap();
    let out = sonde.wait(Duration::from_secs(60));
    assert_eq!(out.code(), 0, "{}", out.describe());
    let report = heap_json(&file, None);
    assert_eq!(report["schema"], "sonde.heap/1");
    assert!(u64_of(&report, "objects") > 100, "{report:#}");

    let early = dir.path().join("early.heap");
    let mut args = os(&["heap", "--after", "60", "-o", early.to_str().unwrap(), "--"]);
    args.extend(app_command("Leak", &["10"]));
    let out = sonde_cmd(&args);
    assert_eq!(out.code(), 2, "{}", out.describe());
    assert!(out.stderr_str().contains("ended before --after"), "{}", out.describe());
    assert!(!early.exists());
}

/// Wrong uses get one line and a non-zero exit before anything runs.
#[test]
fn wrong_uses_are_refused_in_one_line() {
    let dir = scratch();
    let profile = dir.path().join("not-a-heap.txt");
    std::fs::write(&profile, "precious").unwrap();
    let cases: Vec<(Vec<OsString>, &str)> = vec![
        (os(&["heap", "--pid", "1", "-o", profile.to_str().unwrap()]), "is not a heap snapshot"),
        (
            {
                let mut a = os(&["heap", "--"]);
                a.extend(app_command("Leak", &["10"]));
                a
            },
            "needs --after",
        ),
        (os(&["report", profile.to_str().unwrap(), "--paths", "X"]), "--paths is for heap snapshots"),
    ];
    for (args, want) in cases {
        let out = sonde_cmd(&args);
        assert_ne!(out.code(), 0, "{}", out.describe());
        let stderr = out.stderr_str();
        assert!(stderr.contains(want), "{want:?} not in: {}", out.describe());
        assert_eq!(stderr.trim_end().lines().count(), 1, "{}", out.describe());
    }
    assert_eq!(std::fs::read_to_string(&profile).unwrap(), "precious");
}
