//! The error simulator (`sonde record --inject`, issue 16; docs/INJECT.md), on the real runtime
//! with tests/apps/Inject.cs: the matched methods throw exactly on the calls their rules choose,
//! the rest of the program is untouched, and the profile says where each fault was caught — or
//! that the program died of it.

mod support;

use serde_json::Value;
use std::ffi::OsString;
use support::*;

fn faults(report: &Value) -> Vec<(String, String, Option<String>)> {
    arr(report, "faults")
        .iter()
        .map(|f| {
            (
                str_of(f, "method").to_string(),
                str_of(f, "exception").to_string(),
                f["caught_in"].as_str().map(str::to_string),
            )
        })
        .collect()
}

fn fault(method: &str, exception: &str, caught_in: Option<&str>) -> (String, String, Option<String>) {
    (method.to_string(), exception.to_string(), caught_in.map(str::to_string))
}

/// Query is called 10 times: `@every:5` throws on calls 5 and 10, each caught by its caller.
/// Save is called 3 times: `@after:1` lets the first through; the second is caught by the
/// handler around it in Store, the third by Main. One rule comes from a rules file.
#[test]
fn faults_are_thrown_on_the_calls_the_rules_choose_and_followed_to_their_handlers() {
    every_rule_applies(&[]);
}

/// With tiered compilation off, Store is compiled optimised before Save ever is, and would
/// inline Save's original IL: the agent keeps Save out until it is rewritten.
#[test]
fn a_method_is_not_inlined_before_it_is_rewritten() {
    every_rule_applies(&[("DOTNET_TieredCompilation", "0".into())]);
}

fn every_rule_applies(env: &[(&str, OsString)]) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let file = dir.path().join("inject.sonde");
    let rules = dir.path().join("faults.txt");
    std::fs::write(&rules, "# the database fails every fifth query\nAcme.Db.Query=System.TimeoutException@every:5\n")
        .unwrap();
    let opts = ["--inject-file", rules.to_str().unwrap(), "--inject", "Acme.Db.Save=System.IO.IOException@after:1"];
    let args = record_args(&file, &opts, &app_command("Inject", &[]));
    let out = Running::spawn_with_env(sonde(), &args, env).wait(DEADLINE);
    assert_eq!(out.code(), 0, "{}", out.describe());
    assert_eq!(
        out.stdout_str(),
        "store 3: System.IO.IOException\nfetched 8 failed 2 / stored 1\n",
        "{}",
        out.describe()
    );
    assert!(out.stderr_str().contains("sonde: 4 faults injected by 2 rules\n"), "{}", out.describe());
    let report = report_json(&file);
    assert_eq!(
        faults(&report),
        [
            fault("Acme.Db.Query", "System.TimeoutException", Some("Acme.Service.Fetch")),
            fault("Acme.Db.Query", "System.TimeoutException", Some("Acme.Service.Fetch")),
            fault("Acme.Db.Save", "System.IO.IOException", Some("Acme.Service.Store")),
            fault("Acme.Db.Save", "System.IO.IOException", Some("Acme.Program.Main")),
        ]
    );
    // All on the main thread (whose id is the process's), in time order.
    let times: Vec<u64> = arr(&report, "faults").iter().map(|f| u64_of(f, "at_ns")).collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
    for f in arr(&report, "faults") {
        assert_eq!(u64_of(f, "thread"), u64_of(&report, "pid"), "{f}");
    }
    // `--inject` rules first, then the file's.
    let rules = arr(&report, "fault_rules");
    assert_eq!(rules.len(), 2);
    assert_eq!(rules[1]["rule"], "Acme.Db.Query=System.TimeoutException@every:5");
    assert_eq!(rules[1]["methods"], serde_json::json!(["Acme.Db.Query"]));
    assert_eq!((rules[0]["faults"].as_u64(), rules[1]["faults"].as_u64()), (Some(2), Some(2)));
    assert_eq!(report["faults_dropped"], 0);
    // Nothing else was touched: the methods no rule matches are not in any rule's list.
    let text = report_text(&file);
    assert!(
        text.stdout_str().contains(
            "Injected faults: 4 (2 rules); every one caught\n  Acme.Db.Save=System.IO.IOException@after:1\n           1  from Acme.Db.Save, caught in Acme.Service.Store\n"
        ),
        "{}",
        text.describe()
    );
    assert!(text.stdout_str().contains("           1  from Acme.Db.Save, caught in Acme.Program.Main\n"));
    assert!(text.stdout_str().contains("           2  from Acme.Db.Query, caught in Acme.Service.Fetch\n"));
}

/// A fault nothing catches ends the program as a real one would (the runtime's unhandled
/// exception, SIGABRT), and the profile keeps it with no handler. The exception is the
/// program's own type (the module's TypeDef, no new assembly reference).
#[test]
fn a_fault_nothing_catches_kills_the_program_and_says_so() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let file = dir.path().join("fragile.sonde");
    let opts = ["--inject", "Acme.Fragile.Run=Acme.DbUnavailableException"];
    let out = record_app(&file, &opts, "Inject", &["fragile"]);
    assert_eq!(out.code(), 134, "{}", out.describe());
    assert!(out.stdout_str().contains("fetched 10 failed 0 / stored 3\n"), "{}", out.describe());
    assert!(!out.stdout_str().contains("fragile 7"), "{}", out.describe());
    assert!(
        out.stderr_str().contains("Unhandled exception. Acme.DbUnavailableException: the database is unavailable"),
        "{}",
        out.describe()
    );
    assert!(out.stderr_str().contains("sonde: 1 faults injected by 1 rules, 1 not caught"), "{}", out.describe());
    let report = report_json(&file);
    assert_eq!(faults(&report), [fault("Acme.Fragile.Run", "Acme.DbUnavailableException", None)]);
    assert!(report_text(&file).stdout_str().contains("1 not caught: the program died of it"));
}

/// Framework code is precompiled; a rule that names it has the runtime compile it instead, and
/// the fault comes out of `File.ReadAllText` as a real I/O error would. `@p:1` throws every time.
#[test]
fn a_framework_method_can_fail_too() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let file = dir.path().join("file.sonde");
    let readable = dir.path().join("data.txt");
    std::fs::write(&readable, "twelve bytes").unwrap();
    let out = record_app(
        &file,
        &["--inject", "System.IO.File.ReadAllText=System.IO.IOException@p:1"],
        "Inject",
        &["file", readable.to_str().unwrap()],
    );
    assert_eq!(out.code(), 0, "{}", out.describe());
    assert!(out.stdout_str().contains("read failed: System.IO.IOException\n"), "{}", out.describe());
    let report = report_json(&file);
    assert_eq!(
        faults(&report),
        [fault("System.IO.File.ReadAllText", "System.IO.IOException", Some("Acme.Program.Main"))]
    );
    // Unprofiled, the same program reads the file.
    let plain = run_app("Inject", &["file", readable.to_str().unwrap()]);
    assert!(plain.stdout_str().contains("read 12\n"), "{}", plain.describe());
}

/// An exception type no loaded assembly defines is not injected: the program runs as it would
/// unprofiled, and the profile and the summary say why.
#[test]
fn an_unknown_exception_type_injects_nothing_and_says_why() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let file = dir.path().join("unknown.sonde");
    let out = record_app(&file, &["--inject", "Acme.Db.Query=Acme.NoSuchException"], "Inject", &[]);
    assert_eq!(out.code(), 0, "{}", out.describe());
    assert_eq!(out.stdout_str(), "fetched 10 failed 0 / stored 3\n");
    assert!(out.stderr_str().contains("1 rules not applied (sonde report)"), "{}", out.describe());
    let report = report_json(&file);
    assert!(arr(&report, "faults").is_empty());
    let problems = arr(&arr(&report, "fault_rules")[0], "problems");
    assert!(
        problems[0].as_str().unwrap().contains("no loaded assembly defines a public Acme.NoSuchException"),
        "{problems:?}"
    );
}

/// A bad rule, an unreadable rules file or a runtime that cannot inject stops `sonde` before
/// the program runs; the first line says why.
#[test]
fn bad_rules_stop_before_the_program_starts() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let file = dir.path().join("never.sonde");
    let refused = |opts: &[&str], command: Vec<OsString>, says: &str| {
        let out = record(&file, opts, &command);
        assert_eq!(out.code(), 2, "{opts:?}: {}", out.describe());
        assert!(out.stdout_str().is_empty(), "the program ran: {}", out.describe());
        let stderr = out.stderr_str();
        assert!(stderr.lines().next().unwrap_or_default().contains(says), "{opts:?}: {}", out.describe());
        assert!(!file.exists());
    };
    let app = app_command("Inject", &[]);
    refused(&["--inject", "Acme.Db.Query"], app.clone(), "expected METHODS=EXCEPTION");
    refused(&["--inject", "Acme.Db.Query=System.TimeoutException@every:0"], app.clone(), "from 1");
    refused(&["--inject", "Acme.Db.Query=System.TimeoutException@sometimes"], app.clone(), "unknown modifier");
    let rules = dir.path().join("rules.txt");
    std::fs::write(&rules, "Acme.Db.Query=System.TimeoutException\n\nAcme.Db.Save=\n").unwrap();
    refused(&["--inject-file", rules.to_str().unwrap()], app.clone(), "rules.txt:3: `Acme.Db.Save=`");
    refused(&["--inject-file", "/nonexistent/rules.txt"], app.clone(), "cannot read /nonexistent/rules.txt");
    let mono = Runtime::Mono.app_command("Inject", &[]);
    refused(&["--inject", "Acme.Db.Query=System.TimeoutException"], mono, "--inject needs CoreCLR");
}
