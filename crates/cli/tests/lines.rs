//! Source lines from real symbols made by real compilers: Mono's `.mdb` (`mcs -debug`) and
//! portable PDBs (Roslyn, separate and embedded). `tests/apps/Lines.cs` marks its hot line
//! `// HOT` and each method's first statement `// FIRST <method>`; the expected line numbers are
//! read from those markers. Like every integration test, FAILS when a runtime is missing.

mod support;

#[path = "../../render/tests/support/pprof_text.rs"]
mod pprof_text;

use serde_json::Value;
use std::ffi::OsString;
use support::*;

/// The 1-based line of `tests/apps/Lines.cs` that holds `marker`.
fn marked(marker: &str) -> u32 {
    let source = std::fs::read_to_string(repo_root().join("tests/apps/Lines.cs")).expect("Lines.cs");
    let found = source.lines().position(|l| l.trim_end().ends_with(marker)).unwrap_or_else(|| panic!("no {marker}"));
    found as u32 + 1
}

/// The report's entry for the method named `name`.
fn method<'a>(report: &'a Value, name: &str) -> &'a Value {
    arr(report, "methods").iter().find(|m| m["name"] == name).unwrap_or_else(|| panic!("no method {name}"))
}

/// Records `Lines.exe` built as `build` on `rt` with `opts`; the JSON report.
fn record_lines(rt: Runtime, build: Build, opts: &[&str], calls: &str) -> Value {
    record_lines_with_pprof(&Host::plain(rt), build, opts, calls).0
}

/// How the runtime runs the program: its options before the program, and its environment.
struct Host {
    command: Vec<OsString>,
    env: Vec<(&'static str, OsString)>,
}

impl Host {
    fn plain(rt: Runtime) -> Host {
        Host { command: vec![rt.host().into()], env: Vec::new() }
    }
}

/// [`record_lines`] run by `host`, and the profile's pprof export, decoded.
fn record_lines_with_pprof(host: &Host, build: Build, opts: &[&str], calls: &str) -> (Value, pprof_text::Profile) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let file = dir.path().join("lines.sonde");
    let mut command = host.command.clone();
    command.extend([built_app("Lines", build).into(), calls.into()]);
    let out = Running::spawn_with_env(sonde(), &record_args(&file, opts, &command), &host.env).wait(DEADLINE);
    assert_eq!(out.code(), 0, "{}", out.describe());
    assert!(!out.stderr_str().contains("mono --debug"), "no hint when lines were recorded: {}", out.describe());
    assert!(!String::from_utf8_lossy(&out.stderr).contains("symbols of"), "{}", out.describe());
    let pprof = dir.path().join("lines.pb.gz");
    let export = sonde_cmd(&[
        "report".into(),
        file.clone().into(),
        "--format".into(),
        "pprof".into(),
        "-o".into(),
        pprof.clone().into(),
    ]);
    assert_eq!(export.code(), 0, "{}", export.describe());
    (report_json(&file), pprof_text::decode(&std::fs::read(&pprof).expect("the pprof file")))
}

/// Sampled on CoreCLR, the hottest line of `Lines.Work` is the line that does the work, and
/// both methods start where their first statement is.
fn hottest_line_is_the_work(build: Build) {
    hottest_line_is_the_work_on(&Host::plain(Runtime::CoreClr), build);
}

/// [`hottest_line_is_the_work`], run by `host`.
fn hottest_line_is_the_work_on(host: &Host, build: Build) {
    let (report, pprof) = record_lines_with_pprof(host, build, &["--rate", "1000"], "60");
    let work = method(&report, "Lines.Work");
    let source = repo_root().join("tests/apps/Lines.cs").canonicalize().expect("Lines.cs");
    let same_file =
        |v: &Value| v.as_str().and_then(|f| std::path::Path::new(f).canonicalize().ok()) == Some(source.clone());
    assert!(same_file(&work["file"]), "{work}");
    assert_eq!(work["line"].as_u64(), Some(marked("// FIRST Work").into()), "{work}");
    let main = method(&report, "Lines.Main");
    assert_eq!(main["line"].as_u64(), Some(marked("// FIRST Main").into()), "{main}");
    let lines = arr(work, "lines");
    let hottest = lines.iter().max_by_key(|l| u64_of(l, "self_samples")).expect("Work has samples by line");
    assert_eq!(hottest["line"].as_u64(), Some(marked("// HOT").into()), "{lines:?}");
    // Nearly all of the method's own samples are on that line, and the lines account for them.
    let by_line: u64 = lines.iter().map(|l| u64_of(l, "self_samples")).sum();
    assert!(by_line <= u64_of(work, "self_samples") && by_line * 10 >= u64_of(work, "self_samples") * 9, "{work}");
    assert!(u64_of(hottest, "self_samples") * 10 >= by_line * 7, "{lines:?}");
    for l in lines {
        assert!(same_file(&l["file"]), "{l}");
        assert_eq!(u64_of(l, "self_ns"), u64_of(l, "self_samples") * 1_000_000);
        assert!(u64_of(l, "total_samples") >= u64_of(l, "self_samples"));
    }
    // The pprof export, as `pprof -list Lines.Work` reads it: the flat samples by line are the
    // method's own by line, the hot line first.
    let listed = pprof.list("Lines.Work");
    let flat: u64 = listed.values().map(|&(flat, _)| flat as u64).sum();
    assert_eq!(flat, by_line, "{listed:?} vs {lines:?}");
    for l in lines {
        let line = l["line"].as_u64().unwrap() as i64;
        assert_eq!(listed.get(&line).map_or(0, |&(flat, _)| flat as u64), u64_of(l, "self_samples"), "{listed:?}");
    }
    let work_function = pprof.function.iter().find(|f| pprof.str(f.name) == "Lines.Work").expect("Work's function");
    assert!(std::path::Path::new(pprof.str(work_function.filename)).canonicalize().ok() == Some(source), "{work}");
}

#[test]
fn sampled_lines_from_a_portable_pdb() {
    hottest_line_is_the_work(Build::RoslynPdb);
}

#[test]
fn sampled_lines_from_an_embedded_portable_pdb() {
    hottest_line_is_the_work(Build::RoslynEmbedded);
}

#[test]
fn sampled_lines_from_an_mdb_on_coreclr() {
    hottest_line_is_the_work(Build::McsMdb);
}

/// Traced methods carry the file and line of their first statement (Mono's `.mdb` on both
/// runtimes); tracing counts calls, not lines.
fn traced_methods_start_at_their_first_line(rt: Runtime) {
    let report = record_lines(rt, Build::McsMdb, &["--mode", "tracing"], "3");
    for name in ["Main", "Work"] {
        let m = method(&report, &format!("Lines.{name}"));
        assert_eq!(m["line"].as_u64(), Some(marked(&format!("// FIRST {name}")).into()), "{m}");
        assert!(m["file"].as_str().is_some_and(|f| f.ends_with("tests/apps/Lines.cs")), "{m}");
        assert_eq!(arr(m, "lines").len(), 0, "{m}");
    }
}

on_both_runtimes!(traced_methods_start_at_their_first_line);

/// Without symbols there are no lines, and nothing pretends otherwise.
#[test]
fn no_symbols_no_lines() {
    let report = record_lines(Runtime::CoreClr, Build::Mcs, &[], "5");
    let work = method(&report, "Lines.Work");
    assert_eq!((&work["file"], &work["line"]), (&Value::Null, &Value::Null));
    assert_eq!(arr(work, "lines").len(), 0);
}

/// Symbols of another build of the program are refused with one warning: a stale `.mdb` must
/// never give wrong lines.
#[test]
fn symbols_of_another_build_are_refused() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let built = built_app("Lines", Build::McsMdb);
    let other = built_app("Lines", Build::RoslynPdb);
    for file in ["Lines.exe", "Lines.runtimeconfig.json"] {
        std::fs::copy(other.with_file_name(file), dir.path().join(file)).expect("copy");
    }
    // Roslyn's program beside mcs's symbols.
    std::fs::copy(built.with_file_name("Lines.exe.mdb"), dir.path().join("Lines.exe.mdb")).expect("copy");
    let file = dir.path().join("lines.sonde");
    let command: Vec<OsString> = vec![dotnet().into(), dir.path().join("Lines.exe").into(), "5".into()];
    let out = record(&file, &[], &command);
    assert_eq!(out.code(), 0, "{}", out.describe());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.matches("symbols of").count(), 1, "{stderr}");
    let work_report = report_json(&file);
    let work = method(&work_report, "Lines.Work");
    assert_eq!((&work["line"], arr(work, "lines").len()), (&Value::Null, 0), "{work}");
}

/// `sonde report --lines METHOD`: the per-line table, with the source beside the counts.
#[test]
fn report_lines_shows_the_table_with_the_source() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let file = dir.path().join("lines.sonde");
    let command: Vec<OsString> = vec![dotnet().into(), built_app("Lines", Build::RoslynPdb).into(), "60".into()];
    let out = record(&file, &[], &command);
    assert_eq!(out.code(), 0, "{}", out.describe());
    let text = sonde_cmd(&[OsString::from("report"), file.clone().into(), "--lines".into(), "Work".into()]);
    assert_eq!(text.code(), 0, "{}", text.describe());
    let stdout = String::from_utf8_lossy(&text.stdout);
    let hot = marked("// HOT");
    assert!(stdout.starts_with("Lines of Lines.Work ("), "{stdout}");
    let row = stdout.lines().find(|l| l.trim_start().starts_with(&format!("{hot} "))).expect("the hot line's row");
    assert!(row.ends_with("// HOT"), "the source is shown beside the counts: {row}");
    // The text report names where hot methods start.
    let report = sonde_cmd(&[OsString::from("report"), file.clone().into()]);
    let first = marked("// FIRST Work");
    assert!(String::from_utf8_lossy(&report.stdout).contains(&format!("Lines.Work (Lines.cs:{first})")));
    // A name that matches nothing, and --lines with another format, are one-line errors.
    for args in [&["--lines", "Nowhere"][..], &["--lines", "Work", "--format", "json"]] {
        let mut all = vec![OsString::from("report"), file.clone().into()];
        all.extend(args.iter().map(OsString::from));
        let out = sonde_cmd(&all);
        assert_eq!(out.code(), 2, "{}", out.describe());
        assert_eq!(String::from_utf8_lossy(&out.stderr).lines().count(), 1, "{}", out.describe());
    }
}

/// Sampled on Mono without its debug mode: first lines from the `.mdb`, no samples by line
/// (Mono maps code back to IL only in its debug mode, which Sonde does not switch on), and both
/// the summary and `--lines` say that `mono --debug` gives them.
#[test]
fn mono_sampled_methods_have_first_lines_and_say_why_not_more() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let file = dir.path().join("lines.sonde");
    let command: Vec<OsString> =
        vec![Runtime::Mono.host().into(), built_app("Lines", Build::McsMdb).into(), "60".into()];
    let out = record(&file, &[], &command);
    assert_eq!(out.code(), 0, "{}", out.describe());
    let hints: Vec<String> =
        out.stderr_str().lines().filter(|l| l.contains("mono --debug")).map(String::from).collect();
    assert_eq!(hints.len(), 1, "one line says how to get lines: {}", out.describe());
    let report = report_json(&file);
    let work = method(&report, "Lines.Work");
    assert_eq!(work["line"].as_u64(), Some(marked("// FIRST Work").into()), "{work}");
    assert!(u64_of(work, "self_samples") > 0 && arr(work, "lines").is_empty(), "{work}");
    let text = sonde_cmd(&[OsString::from("report"), file.clone().into(), "--lines".into(), "Work".into()]);
    assert_eq!(text.code(), 0, "{}", text.describe());
    let stdout = text.stdout_str();
    assert!(stdout.contains("only in its debug mode") && stdout.contains("mono --debug"), "{}", text.describe());
}

/// Sampled on Mono in its debug mode (`mono --debug`, as the program's owner may run it), the
/// samples are by line as on CoreCLR: the JIT's line tables map each frame back to IL.
#[test]
fn mono_debug_mode_gives_sampled_lines() {
    let host = Host { command: vec![Runtime::Mono.host().into(), "--debug".into()], env: Vec::new() };
    hottest_line_is_the_work_on(&host, Build::McsMdb);
}

/// The same with the debug mode asked for in `MONO_ENV_OPTIONS` (which Sonde appends its own
/// option to).
#[test]
fn mono_debug_mode_from_the_environment_gives_sampled_lines() {
    let host = Host { command: vec![Runtime::Mono.host().into()], env: vec![("MONO_ENV_OPTIONS", "--debug".into())] };
    hottest_line_is_the_work_on(&host, Build::McsMdb);
}
