//! Coverage mode (`sonde record --mode coverage`, issue 16). On CoreCLR the agent rewrites each
//! method's IL before its first compilation with a counter per basic block; on Mono, Mono's JIT
//! inserts its own. The controller turns blocks into source lines through the program's symbols.
//!
//! - `tests/apps/Cover.cs` (Roslyn and a portable PDB on CoreCLR, mcs and an `.mdb` on Mono):
//!   every line marked `// HITS n` ran exactly n times, every `// NEVER` line did not; the calls
//!   of each method are exact; the method never called is listed.
//! - Real programs rewritten whole, framework included (`--all`: precompiled framework code is
//!   JIT-compiled and rewritten too), print exactly what they print unprofiled and exit the same.

mod support;

use serde_json::Value;
use std::collections::BTreeMap;
use std::ffi::OsString;
use support::*;

/// The `// HITS n` and `// NEVER` marks of tests/apps/Cover.cs: line → expected hits.
fn marks() -> BTreeMap<u64, u64> {
    let source = std::fs::read_to_string(repo_file("tests/apps/Cover.cs")).expect("Cover.cs");
    source
        .lines()
        .enumerate()
        .filter_map(|(i, l)| {
            let line = i as u64 + 1;
            if l.trim_end().ends_with("// NEVER") {
                return Some((line, 0));
            }
            let n = l.split("// HITS ").nth(1)?.trim().parse().ok()?;
            Some((line, n))
        })
        .collect()
}

fn coverage_of<'a>(report: &'a Value, method: &str) -> Option<&'a Value> {
    arr(report, "coverage").iter().find(|c| c["method"] == method)
}

#[test]
fn every_line_runs_as_often_as_it_says_coreclr() {
    every_line_runs_as_often_as_it_says(Runtime::CoreClr, Build::RoslynPdb);
}

/// Mono's own coverage counters, read at shutdown; the lines from mcs's `.mdb`.
#[test]
fn every_line_runs_as_often_as_it_says_mono() {
    every_line_runs_as_often_as_it_says(Runtime::Mono, Build::McsMdb);
}

fn every_line_runs_as_often_as_it_says(rt: Runtime, build: Build) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let file = dir.path().join("cover.sonde");
    let exe = built_app("Cover", build);
    let out = record(&file, &["--mode", "coverage"], &[rt.host().into(), exe.into()]);
    assert_eq!(out.code(), 0, "{}", out.describe());
    assert_eq!(out.stdout_str().trim(), "done 24", "{}", out.describe());
    assert!(out.stderr_str().contains("3 of 4 methods ran"), "{}", out.describe());
    let report = report_json(&file);
    assert_eq!(report["mode"], "coverage");
    // Every line of the covered methods, by line.
    let mut hits: BTreeMap<u64, u64> = BTreeMap::new();
    for c in arr(&report, "coverage") {
        assert_eq!(c["kind"], "managed");
        assert!(str_of(c, "file").ends_with("Cover.cs"), "{c}");
        for l in arr(c, "lines") {
            hits.insert(u64_of(l, "line"), u64_of(l, "hits"));
        }
    }
    for (line, expected) in marks() {
        assert_eq!(hits.get(&line).copied().unwrap_or(0), expected, "{rt:?}: Cover.cs:{line}: {hits:?}");
    }
    let calls = |m: &str| coverage_of(&report, m).map(|c| u64_of(c, "calls"));
    assert_eq!(
        (calls("Acme.Cover.Main"), calls("Acme.Cover.Classify"), calls("Acme.Cover.Guarded")),
        (Some(1), Some(10), Some(2))
    );
    // Never called, so never compiled nor rewritten: listed from the assembly's metadata, with
    // its lines from the symbols, none run.
    let unused = coverage_of(&report, "Acme.Cover.Unused").expect("Unused is listed");
    assert_eq!(u64_of(unused, "calls"), 0);
    assert!(
        !arr(unused, "lines").is_empty() && arr(unused, "lines").iter().all(|l| u64_of(l, "hits") == 0),
        "{unused}"
    );
    // The text report: each file's share of lines that ran, and the lines that never did.
    let text = report_text(&file).stdout_str();
    assert!(text.contains("Line coverage"), "{text}");
    let never = marks().into_iter().filter(|&(_, n)| n == 0).map(|(l, _)| l).find(|&l| hits.contains_key(&l));
    let never = never.expect("a NEVER line in a covered method");
    assert!(text.contains(&format!("Cover.cs:{never}")), "{text}");
}

/// Programs rewritten whole: their own code and the framework's (`--all`).
#[test]
fn rewritten_programs_behave_as_before() {
    let dir = tempfile::tempdir().expect("a temp dir");
    // Calls.exe: exceptions through finally blocks, threads, generics, virtual calls.
    for (app, args) in [("Calls", &[][..]), ("Jmc", &[][..]), ("Demo", &[][..])] {
        let plain = Runtime::CoreClr.run_app(app, args);
        let file = dir.path().join(format!("{app}.sonde"));
        let out = record(&file, &["--mode", "coverage", "--all"], &app_command(app, args));
        assert_eq!(out.code(), plain.code(), "{app}: {}", out.describe());
        assert_eq!(out.stdout_str(), plain.stdout_str(), "{app}: the same output");
        let report = report_json(&file);
        let covered = arr(&report, "coverage");
        let framework = covered.iter().filter(|c| str_of(c, "assembly") == "System.Private.CoreLib").count();
        assert!(framework > 100, "{app}: {framework} CoreLib methods rewritten of {}", covered.len());
    }
}

#[test]
fn coverage_is_refused_where_it_cannot_work() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let file = dir.path().join("refused.sonde");
    for (opts, command, message) in [
        (
            &["--mode", "coverage", "--call-trace"][..],
            app_command("Calls", &[]),
            "--call-trace goes with --mode tracing",
        ),
        (
            &["--mode", "coverage", "--pid", "1"][..],
            Vec::<OsString>::new(),
            "--mode coverage needs a program sonde starts",
        ),
    ] {
        let mut args: Vec<OsString> = vec!["record".into(), "-o".into(), file.clone().into()];
        args.extend(opts.iter().map(OsString::from));
        if !command.is_empty() {
            args.push("--".into());
            args.extend(command);
        }
        let out = sonde_cmd(&args);
        assert_eq!(out.code(), 2, "{opts:?}: {}", out.describe());
        assert!(out.stderr_str().contains(message), "{opts:?}: {}", out.describe());
    }
}

/// The exports CI services read, checked by real consumers: the lcov tracefile by lcov's own
/// `genhtml`, the Cobertura XML by PyPI's `pycobertura` (both installed by scripts/setup.sh).
#[test]
fn lcov_and_cobertura_exports_are_read_by_their_consumers() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let file = dir.path().join("cover.sonde");
    let exe = built_app("Cover", Build::RoslynPdb);
    let out = record(&file, &["--mode", "coverage"], &[Runtime::CoreClr.host().into(), exe.into()]);
    assert_eq!(out.code(), 0, "{}", out.describe());
    let report = report_json(&file);
    // The lines of Cover.cs and the ones that never ran, from the JSON.
    let mut lines: BTreeMap<u64, u64> = BTreeMap::new();
    for c in arr(&report, "coverage") {
        for l in arr(c, "lines") {
            lines.insert(u64_of(l, "line"), u64_of(l, "hits"));
        }
    }
    let missed: Vec<String> = lines.iter().filter(|(_, h)| **h == 0).map(|(l, _)| l.to_string()).collect();
    assert!(!missed.is_empty());

    let export = |format: &str| {
        let path = dir.path().join(format!("cover.{format}"));
        let out = sonde_cmd(&[
            "report".into(),
            file.clone().into(),
            "--format".into(),
            format.into(),
            "-o".into(),
            path.clone().into(),
        ]);
        assert_eq!(out.code(), 0, "{format}: {}", out.describe());
        path
    };
    let info = export("lcov");
    let html = dir.path().join("genhtml");
    let genhtml = std::process::Command::new("genhtml")
        .arg("-o")
        .arg(&html)
        .arg(&info)
        .output()
        .expect("genhtml (Debian's lcov; scripts/setup.sh installs it)");
    let said = String::from_utf8_lossy(&genhtml.stderr);
    assert!(genhtml.status.success() && !said.contains("WARNING"), "genhtml: {said}");
    let stdout = String::from_utf8_lossy(&genhtml.stdout);
    let hit = lines.values().filter(|&&h| h > 0).count();
    assert!(
        stdout.contains(&format!(
            "lines......: {:.1}% ({hit} of {} lines)",
            hit as f64 * 100.0 / lines.len() as f64,
            lines.len()
        )),
        "{stdout}"
    );
    assert!(stdout.contains("functions..: 75.0% (3 of 4 functions)"), "{stdout}");

    let xml = export("cobertura");
    let python = std::env::var_os("SONDE_PYTHON").expect("SONDE_PYTHON (source target/sonde-env.sh)");
    let pycobertura = std::path::Path::new(&python).with_file_name("pycobertura");
    let shown = std::process::Command::new(&pycobertura)
        .arg("show")
        .arg(&xml)
        .output()
        .expect("pycobertura (scripts/setup.sh)");
    let text = String::from_utf8_lossy(&shown.stdout);
    assert!(shown.status.success(), "pycobertura: {}{text}", String::from_utf8_lossy(&shown.stderr));
    let row = text.lines().find(|l| l.contains("Cover.cs")).unwrap_or_else(|| panic!("no Cover.cs row: {text}"));
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(cells[1..3], [lines.len().to_string(), missed.len().to_string()], "{row}");
    assert_eq!(cells[4..].join(" "), missed.join(", "), "{row}");
}
