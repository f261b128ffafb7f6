//! Just my code (issue 14, part 4): reports fold what the user did not write — the host's
//! start-up into one `[runtime]` frame, runs of framework or native frames into their entry
//! point — or hide it (`--native`/`--framework hide`), or show everything (`show`); the JSON
//! keeps every frame, marked with `kind` and `user_code`. "User code" is decided by where an
//! assembly was loaded from, for reports and for the tracing filter's default alike (Mono's own
//! C# compiler, run by the user, is traced). Real runtimes; FAILS when one is missing.

mod support;

use serde_json::Value;
use std::ffi::OsString;
use std::path::Path;
use support::*;

/// The collapsed stacks of `file` with `opts`, as (frames, samples).
fn collapsed(file: &Path, opts: &[&str]) -> Vec<(Vec<String>, u64)> {
    let mut args: Vec<OsString> = vec!["report".into(), file.into(), "--format".into(), "collapsed".into()];
    args.extend(opts.iter().map(OsString::from));
    let out = sonde_cmd(&args);
    assert_eq!(out.code(), 0, "{}", out.describe());
    out.stdout_str()
        .lines()
        .map(|line| {
            let (stack, n) = line.rsplit_once(' ').expect("`stack count`");
            (stack.split(';').map(str::to_string).collect(), n.parse().expect("a count"))
        })
        .collect()
}

/// Samples of the stacks that contain `frame`, and of those where `frame` sits below `caller`.
fn under(stacks: &[(Vec<String>, u64)], caller: &str, frame: &str) -> (u64, u64) {
    let mut all = 0;
    let mut below = 0;
    for (frames, n) in stacks {
        if let Some(at) = frames.iter().position(|f| f == frame) {
            all += n;
            if at > 0 && frames[at - 1] == caller {
                below += n;
            }
        }
    }
    (all, below)
}

fn jmc_views(rt: Runtime) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let file = dir.path().join("jmc.sonde");
    let out = rt.record_app(&file, &[], "Jmc", &["800"]);
    assert_eq!(out.code(), 0, "{}", out.describe());
    // (Both runtimes name the instantiation's type arguments, sampled or traced.)
    let (main, compare, sort) =
        ("Acme.Jmc.Main", "Acme.Jmc.Compare", "System.Collections.Generic.List<System.Int32>.Sort");

    // Fold (the default): the host's start-up is one `[runtime]` frame above Main, and the
    // framework's sort helpers are the one frame Main called (List.Sort), above Compare.
    let folded = collapsed(&file, &[]);
    let (with_main, rooted) = under(&folded, "[runtime]", main);
    assert!(with_main > 100, "{folded:?}");
    assert!(rooted * 100 >= with_main * 95, "Main under [runtime] in {rooted} of {with_main}: {folded:?}");
    let (with_compare, via_sort) = under(&folded, sort, compare);
    assert!(with_compare > 50, "{folded:?}");
    assert!(via_sort * 100 >= with_compare * 90, "Compare under Sort in {via_sort} of {with_compare}: {folded:?}");
    // (The JIT compiling the helpers is named, below Sort: `[jit] …ArraySortHelper…` is the
    // runtime's work, not a frame of the helpers.)
    let helper = |f: &String| f.contains("ArraySortHelper") && !f.starts_with("[jit] ");
    assert!(!folded.iter().any(|(f, _)| f.iter().any(helper)), "{folded:?}");

    // Hide: Compare right under Main, and no framework frame anywhere below Main.
    let hidden = collapsed(&file, &["--framework", "hide", "--native", "hide"]);
    let (with_compare, direct) = under(&hidden, main, compare);
    assert!(direct * 100 >= with_compare * 90, "Compare under Main in {direct} of {with_compare}: {hidden:?}");
    assert!(!hidden.iter().any(|(f, _)| f.iter().any(|f| f.starts_with("System."))), "{hidden:?}");

    // Show: every frame as recorded, the sort helpers and (on CoreCLR) the host's libraries.
    let shown = collapsed(&file, &["--framework", "show", "--native", "show"]);
    assert!(shown.iter().any(|(f, _)| f.iter().any(|f| f.contains("ArraySortHelper"))), "{shown:?}");
    if rt == Runtime::CoreClr {
        assert!(shown.iter().any(|(f, _)| f.iter().any(|f| f.starts_with("[native] libhostpolicy.so"))), "{shown:?}");
        assert!(!shown.iter().any(|(f, _)| f.iter().any(|f| f == "[runtime]")), "{shown:?}");
    }
    // The totals are the same in every view.
    let sum = |s: &[(Vec<String>, u64)]| s.iter().map(|(_, n)| n).sum::<u64>();
    assert_eq!(sum(&folded), sum(&shown));
    assert_eq!(sum(&hidden), sum(&shown));

    // The JSON keeps every frame and says whose code each is.
    let report = report_json(&file);
    let methods = arr(&report, "methods");
    let find = |name: &str| methods.iter().find(|m| str_of(m, "name") == name).unwrap_or_else(|| panic!("{name}"));
    assert_eq!(find(compare)["user_code"], Value::Bool(true));
    assert_eq!(find(main)["user_code"], Value::Bool(true));
    // (Not the JIT compiling them: `[jit] …`, the runtime's work, `kind` `runtime`.)
    let helpers: Vec<&Value> = methods
        .iter()
        .filter(|m| str_of(m, "name").contains("ArraySortHelper") && m["runtime_work"].is_null())
        .collect();
    assert!(!helpers.is_empty());
    for m in helpers {
        assert_eq!(m["user_code"], Value::Bool(false), "{m}");
        assert_eq!(m["kind"], "managed", "{m}");
    }
    for m in methods.iter().filter(|m| m["kind"] != "managed") {
        assert_eq!(m["user_code"], Value::Bool(false), "{m}");
    }
}

#[test]
fn coreclr_reports_fold_hide_and_show_what_the_user_did_not_write() {
    jmc_views(Runtime::CoreClr);
}

#[test]
fn mono_reports_fold_hide_and_show_what_the_user_did_not_write() {
    jmc_views(Runtime::Mono);
}

/// Mono's C# compiler lives beside Mono's class libraries (`/usr/lib/mono/4.5/mcs.exe`) and is
/// precompiled (AOT): tracing it by default traces the compiler (the program the user ran), not
/// a library, and none of the framework — however it is started: Mono named by its path, Mono
/// found through `PATH`, or Debian's `mcs` wrapper script, which names the assembly itself
/// (issue 37, item 1: the last two traced only the 183 methods the JIT compiled at run time).
#[test]
fn tracing_mono_s_compiler_traces_the_compiler() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let source = dir.path().join("Hello.cs");
    std::fs::write(&source, "class Hello { static void Main() { System.Console.WriteLine(42); } }").unwrap();
    let out_arg = OsString::from(format!("-out:{}", dir.path().join("Hello.exe").display()));
    let mcs_exe: OsString = mcs_exe().into();
    for (how, command) in [
        ("mono by its path", vec![mono().into(), mcs_exe.clone(), out_arg.clone(), source.clone().into()]),
        ("mono through PATH", vec!["mono".into(), mcs_exe.clone(), out_arg.clone(), source.clone().into()]),
        ("the mcs wrapper script", vec![mcs().into(), out_arg.clone(), source.clone().into()]),
    ] {
        let file = dir.path().join("mcs.sonde");
        let out = record(&file, &["--mode", "tracing"], &command);
        assert_eq!(out.code(), 0, "{how}: {}", out.describe());
        assert!(!out.stderr_str().contains("precompiled"), "{how}: {}", out.describe());
        let report = report_json(&file);
        let methods = arr(&report, "methods");
        let compiler = methods.iter().filter(|m| str_of(m, "name").starts_with("Mono.CSharp.")).count();
        assert!(compiler >= 1000, "{how}: {compiler} Mono.CSharp methods traced");
        let driver = methods.iter().find(|m| str_of(m, "name").starts_with("Mono.CSharp.Driver.")).expect("the driver");
        assert!(u64_of(driver, "calls") > 0, "{how}: {driver}");
        assert!(methods.iter().all(|m| str_of(m, "assembly") != "mscorlib"), "{how}: the framework was traced");
        let framework = methods.iter().find(|m| m["kind"] == "managed" && m["user_code"] != Value::Bool(true));
        assert!(framework.is_none(), "{how}: marked framework: {framework:?}");
        assert!(report.get("precompiled").is_none(), "{how}: {}", report["precompiled"]);
    }
}

/// When the program's own options switch Mono's AOT back on (`mono -O=all`), the compiler's code
/// runs from its precompiled image, untraced: the summary and the profile say so.
#[test]
fn mono_code_that_ran_precompiled_is_named_in_the_summary_and_the_profile() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let source = dir.path().join("Hello.cs");
    std::fs::write(&source, "class Hello { static void Main() { System.Console.WriteLine(42); } }").unwrap();
    let out_arg = format!("-out:{}", dir.path().join("Hello.exe").display());
    let command: Vec<OsString> = vec![mono().into(), "-O=all".into(), mcs_exe().into(), out_arg.into(), source.into()];
    let file = dir.path().join("aot.sonde");
    let out = record(&file, &["--mode", "tracing"], &command);
    assert_eq!(out.code(), 0, "{}", out.describe());
    let stderr = out.stderr_str();
    let line = stderr.lines().find(|l| l.contains("precompiled (AOT) images")).unwrap_or_else(|| panic!("{stderr}"));
    assert!(line.contains("mcs.exe.so") && !line.contains("mscorlib"), "{line}");
    let report = report_json(&file);
    let images: Vec<&str> = arr(&report, "precompiled").iter().map(|p| p.as_str().unwrap()).collect();
    assert!(images.len() == 1 && images[0].ends_with("/mcs.exe.so"), "{images:?}");
}

/// The compiler's assembly, as Debian's `mcs` wrapper script names it.
fn mcs_exe() -> String {
    let mcs_exe = std::fs::read_to_string(mcs())
        .ok()
        .and_then(|script| script.split_whitespace().find(|w| w.ends_with("mcs.exe")).map(str::to_string));
    mcs_exe.unwrap_or_else(|| "/usr/lib/mono/4.5/mcs.exe".to_string())
}
