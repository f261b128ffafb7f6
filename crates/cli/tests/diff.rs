//! `sonde diff BASE NEW` on real recordings of `tests/apps/Shift.cs`: the base calls Parse and
//! Sort twice each, the new run Sort six times and Extra once. Sampled, Sort's growth and Parse's
//! shrinking share are larger than sampling noise, Extra appeared; traced, the call counts
//! change exactly. Also: the JSON contract `sonde.diff/1`, `--normalize none`, the HTML page,
//! one-line errors, and two builds of Shift.cs whose assemblies are named differently.

mod support;

use serde_json::Value;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use support::*;

fn recorded(dir: &Path, name: &str, mode: &str, args: &[&str]) -> PathBuf {
    let file = dir.join(format!("{name}.sonde"));
    let out = record_app(&file, &["--mode", mode], "Shift", args);
    assert_eq!(out.code(), 0, "{}", out.describe());
    assert!(out.stdout_str().contains("done"), "{}", out.describe());
    file
}

fn diff(base: &Path, new: &Path, opts: &[&str]) -> support::Output {
    let mut args: Vec<OsString> = vec!["diff".into(), base.into(), new.into()];
    args.extend(opts.iter().map(OsString::from));
    sonde_cmd(&args)
}

fn diff_json(base: &Path, new: &Path, opts: &[&str]) -> Value {
    let mut opts = opts.to_vec();
    opts.extend(["--format", "json"]);
    let out = diff(base, new, &opts);
    assert_eq!(out.code(), 0, "{}", out.describe());
    let json: Value = serde_json::from_slice(&out.stdout).expect("sonde diff --format json prints JSON");
    assert_eq!(json["schema"], "sonde.diff/1");
    json
}

fn method<'a>(json: &'a Value, name: &str) -> &'a Value {
    arr(json, "methods").iter().find(|m| m["name"] == name).unwrap_or_else(|| panic!("no {name} in {json:#}"))
}

fn f64_of(v: &Value, key: &str) -> f64 {
    v[key].as_f64().unwrap_or_else(|| panic!("{key} is not a number: {v}"))
}

#[test]
fn sampled_runs_separate_real_changes_from_noise() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let base = recorded(dir.path(), "base", "sampling", &["2", "2"]);
    let new = recorded(dir.path(), "new", "sampling", &["2", "6", "extra"]);
    let json = diff_json(&base, &new, &[]);
    assert_eq!(json["normalize"], "total");
    assert_eq!(json["noise_test"]["z_threshold"], 3.29);
    // Sort went from half of the work to two thirds, Parse from half to under a quarter: in their
    // totals (their work is Burn's, their callee).
    let sort = method(&json, "Acme.Shift.Sort");
    assert!(f64_of(sort, "total_change") > 0.0 && f64_of(sort, "z_total") > 3.29, "{sort}");
    assert_eq!(sort["significant"], true);
    let parse = method(&json, "Acme.Shift.Parse");
    assert!(f64_of(parse, "total_change") < 0.0 && f64_of(parse, "z_total") < -3.29, "{parse}");
    let extra = method(&json, "Acme.Shift.Extra");
    assert_eq!(extra["status"], "appeared");
    assert!(extra["base"].is_null() && f64_of(&extra["new"], "raw_total") > 0.0, "{extra}");
    // Sampling counts no calls.
    assert!(sort["calls_change"].is_null());

    // Without normalising, the base's figures are its own.
    let raw = diff_json(&base, &new, &["--normalize", "none"]);
    let raw_sort = method(&raw, "Acme.Shift.Sort");
    assert_eq!(f64_of(&raw_sort["base"], "self"), f64_of(&raw_sort["base"], "raw_self"));
    assert_eq!(raw["base_scale"], 1.0);

    // The text table: Sort's change is real, Extra is new.
    let out = diff(&base, &new, &[]);
    assert_eq!(out.code(), 0, "{}", out.describe());
    let text = out.stdout_str();
    let line =
        |name: &str| text.lines().find(|l| l.ends_with(name) || l.contains(&format!("{name}  ["))).map(str::to_string);
    assert!(line("Acme.Shift.Sort").is_some_and(|l| l.contains(" real ") && l.contains('+')), "{text}");
    assert!(text.contains("self and on total samples"), "{text}");
    assert!(line("Acme.Shift.Extra").is_some_and(|l| l.ends_with("[new]")), "{text}");
}

#[test]
fn traced_runs_change_call_counts_exactly() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let base = recorded(dir.path(), "base", "tracing", &["2", "2"]);
    let new = recorded(dir.path(), "new", "tracing", &["2", "6", "extra"]);
    let json = diff_json(&base, &new, &[]);
    assert!(json["noise_test"].is_null(), "traces have no sampling noise");
    let calls = |name: &str| {
        let m = method(&json, name);
        (m["base"]["calls"].as_u64(), m["new"]["calls"].as_u64(), m["calls_change"].as_i64())
    };
    assert_eq!(calls("Acme.Shift.Sort"), (Some(2), Some(6), Some(4)));
    assert_eq!(calls("Acme.Shift.Parse"), (Some(2), Some(2), Some(0)));
    assert_eq!(calls("Acme.Shift.Extra"), (None, Some(1), Some(1)));
    assert_eq!(calls("Acme.Shift.Burn"), (Some(4), Some(9), Some(5)));
    let out = diff(&base, &new, &[]);
    assert!(out.stdout_str().contains("2 → 6 (+4)"), "{}", out.describe());

    // The page: the differential flame graph in a sandboxed frame, and the table.
    let page = dir.path().join("diff.html");
    let out = diff(&base, &new, &["--format", "html", "-o", page.to_str().unwrap()]);
    assert_eq!(out.code(), 0, "{}", out.describe());
    let html = std::fs::read_to_string(&page).expect("the page");
    assert!(html.contains("<iframe id=\"flame\" sandbox=\"allow-scripts\""), "no flame graph frame");
    assert!(html.contains("data:image/svg+xml;charset=utf-8,%3C%3Fxml"), "the frame holds no SVG");
    assert!(html.contains("Acme.Shift.Sort</td>") && html.contains("Acme.Shift.Extra [new]</td>"), "no table rows");
}

/// `tests/apps/Shift.cs` compiled as `dir/<name>.exe` (assembly `<name>`), with its runtimeconfig.
fn shift_as(dir: &Path, name: &str) -> PathBuf {
    let exe = dir.join(format!("{name}.exe"));
    let mut out_arg = OsString::from("-out:");
    out_arg.push(&exe);
    let out = run(mcs(), &["-optimize+".into(), out_arg, repo_file("tests/apps/Shift.cs").into()]);
    assert_eq!(out.code(), 0, "mcs: {}", out.describe());
    let config = app("Shift").with_file_name("Shift.runtimeconfig.json");
    std::fs::copy(config, dir.join(format!("{name}.runtimeconfig.json"))).expect("the runtimeconfig");
    exe
}

/// Two builds of one project whose assemblies are named differently (`app-v1.exe`,
/// `app-v2.exe`): their methods are matched by type and method name, and the diff says so.
#[test]
fn a_renamed_program_assembly_is_matched_by_method_names() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let record_build = |name: &str, args: &[&str]| {
        let exe = shift_as(dir.path(), name);
        let file = dir.path().join(format!("{name}.sonde"));
        let mut command: Vec<OsString> = vec![dotnet().into(), exe.into()];
        command.extend(args.iter().map(OsString::from));
        let out = record(&file, &["--mode", "tracing"], &command);
        assert_eq!(out.code(), 0, "{}", out.describe());
        file
    };
    let base = record_build("app-v1", &["2", "2"]);
    let new = record_build("app-v2", &["2", "6", "extra"]);
    let json = diff_json(&base, &new, &[]);
    assert_eq!(json["program_renamed"]["base"], "app-v1", "{:#}", json["program_renamed"]);
    assert_eq!(json["program_renamed"]["new"], "app-v2");
    assert!(json["program_renamed"]["matched"].as_u64().is_some_and(|n| n >= 4), "{:#}", json["program_renamed"]);
    let sort = method(&json, "Acme.Shift.Sort");
    assert_eq!(
        (&sort["status"], &sort["assembly"], sort["calls_change"].as_i64()),
        (&"both".into(), &"app-v2".into(), Some(4))
    );
    assert_eq!(method(&json, "Acme.Shift.Burn")["calls_change"], 5);
    assert_eq!(method(&json, "Acme.Shift.Extra")["status"], "appeared");
    let vanished: Vec<&Value> = arr(&json, "methods").iter().filter(|m| m["status"] == "vanished").collect();
    assert!(vanished.is_empty(), "{vanished:#?}");

    let out = diff(&base, &new, &[]);
    assert_eq!(out.code(), 0, "{}", out.describe());
    let text = out.stdout_str();
    assert!(
        text.contains("the program's assembly is app-v1 in the base and app-v2 in the new run: its methods are matched by type and method name"),
        "{text}"
    );
    assert!(text.contains("2 → 6 (+4)") && text.contains("0 vanished"), "{text}");
}

#[test]
fn unreadable_profiles_are_one_line_errors() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let junk = dir.path().join("junk.sonde");
    std::fs::write(&junk, b"not a profile").unwrap();
    let missing = dir.path().join("missing.sonde");
    for (base, new) in [(&junk, &junk), (&missing, &junk)] {
        let out = diff(base, new, &[]);
        assert_ne!(out.code(), 0, "{}", out.describe());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("cannot read") && err.trim().lines().count() == 1, "{err}");
    }
}
