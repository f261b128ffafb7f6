//! Native frames are named from the libraries' ELF symbol tables (issue 14, part 3): a C++
//! library built here with g++ (`tests/apps/native/sondehot.cpp`), whose hot function is not
//! exported (its own `.symtab` names it; the report demangles it), and glibc's qsort internals,
//! which only Debian's `libc6-dbg` debug file names (found by build-id). `libcoreclr.so` from
//! PyPI has no `.symtab` and its debug file is on no registry: it is named from its exports.
//! Sampled on both runtimes. Like every integration test, FAILS when a runtime is missing.

mod support;

use serde_json::Value;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use support::*;

/// `NativeHot.exe` with its runtimeconfig and `libsondehot.so` in `dir`.
fn native_app(dir: &Path) -> PathBuf {
    let built = built_app("NativeHot", Build::Mcs);
    for file in ["NativeHot.exe", "NativeHot.runtimeconfig.json"] {
        std::fs::copy(built.with_file_name(file), dir.join(file)).expect("copy the app");
    }
    let lib = dir.join("libsondehot.so");
    let out = Command::new("g++")
        .args(["-O2", "-fno-omit-frame-pointer", "-shared", "-fPIC", "-o"])
        .arg(&lib)
        .arg(repo_file("tests/apps/native/sondehot.cpp"))
        .output()
        .expect("g++ (the C++ compiler; it comes with the Rust toolchain's linker, gcc)");
    assert!(out.status.success(), "g++: {}", String::from_utf8_lossy(&out.stderr));
    dir.join("NativeHot.exe")
}

/// Samples of the methods whose display name is `shown`: (self, total), summed.
fn samples(report: &Value, shown: &str) -> (u64, u64) {
    arr(report, "methods")
        .iter()
        .filter(|m| m["display_name"] == shown)
        .fold((0, 0), |(s, t), m| (s + u64_of(m, "self_samples"), t + u64_of(m, "total_samples")))
}

fn native_frames_are_named(rt: Runtime) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let exe = native_app(dir.path());
    let file = dir.path().join("native.sonde");
    let command: Vec<OsString> = vec![rt.host().into(), exe.into(), "1500".into()];
    let out = record(&file, &[], &command);
    assert_eq!(out.code(), 0, "{}", out.describe());
    assert!(out.stdout_str().contains("done"), "{}", out.describe());
    let report = report_json(&file);
    let names: Vec<&str> = arr(&report, "methods").iter().map(|m| str_of(m, "display_name")).collect();

    // The library's own .symtab: a function it does not export, its C++ name demangled.
    let encode = "[native] libsondehot.so!Acme::Codec::huff_encode";
    let (self_samples, _) = samples(&report, encode);
    assert!(self_samples > 50, "{encode}: {self_samples} samples; methods: {names:?}");
    let mangled = arr(&report, "methods").iter().find(|m| m["display_name"] == encode).unwrap();
    assert_eq!(mangled["name"], "[native] libsondehot.so!_ZN4Acme5Codec11huff_encodeEl", "{mangled}");
    assert_eq!(mangled["kind"], "native", "{mangled}");
    // On CoreCLR the frame-pointer walk goes through it to the exported entry point (Mono's
    // own walk gives the innermost native frame, then managed frames only).
    if rt == Runtime::CoreClr {
        let (_, entry_total) = samples(&report, "[native] libsondehot.so!sonde_hot_encode");
        assert!(entry_total >= self_samples / 2, "sonde_hot_encode: {entry_total}; methods: {names:?}");
    }

    // glibc's qsort internals, named by libc6-dbg's debug file.
    let sort: u64 = names
        .iter()
        .filter(|n| n.starts_with("[native] libc.so.6!msort_with_tmp"))
        .map(|n| samples(&report, n).0)
        .sum();
    assert!(sort > 10, "msort_with_tmp (from libc6-dbg): {sort} samples; methods: {names:?}");

    // The text report shows the same names with every native frame shown; by default a run of
    // native frames is one frame named after its entry point (the exported function).
    let args = |more: &[&str]| {
        let mut args: Vec<OsString> = vec!["report".into(), file.clone().into()];
        args.extend(more.iter().map(OsString::from));
        sonde_cmd(&args).stdout_str()
    };
    let shown = args(&["--native", "show"]);
    assert!(shown.contains("libsondehot.so!Acme::Codec::huff_encode"), "{shown}");
    if rt == Runtime::CoreClr {
        let folded = args(&[]);
        assert!(folded.contains("libsondehot.so!sonde_hot_encode"), "{folded}");
        assert!(!folded.contains("huff_encode"), "{folded}");
    }
}

#[test]
fn coreclr_names_native_frames_from_symbol_tables() {
    native_frames_are_named(Runtime::CoreClr);
}

#[test]
fn mono_names_native_frames_from_symbol_tables() {
    native_frames_are_named(Runtime::Mono);
}

/// Self samples of the native frames whose name starts with `prefix`: (named, all), and the
/// functions named.
fn native_samples(report: &Value, prefix: &str) -> (u64, u64, Vec<String>) {
    let mut named = Vec::new();
    let (mut with_name, mut all) = (0, 0);
    for m in arr(report, "methods") {
        let name = str_of(m, "name");
        let Some(rest) = name.strip_prefix(prefix).filter(|r| r.is_empty() || r.starts_with('!')) else { continue };
        let samples = u64_of(m, "self_samples");
        all += samples;
        if let Some(function) = rest.strip_prefix('!') {
            with_name += samples;
            named.push(function.to_string());
        }
    }
    (with_name, all, named)
}

/// Records `name` with `args` on `rt` into `file`, logging the agent into `log`; Mono started
/// as a user starts it, by its name (`mono`, found on `PATH`: the loader then knows the main
/// program only by that name).
fn record_by_name(rt: Runtime, file: &Path, log: &Path, name: &str, args: &[&str]) -> Output {
    let mut command = rt.app_command(name, args);
    let host = PathBuf::from(&command[0]);
    let mut env = Vec::new();
    if rt == Runtime::Mono {
        command[0] = host.file_name().expect("the host's name").into();
        let path = std::env::var_os("PATH").unwrap_or_default();
        let dirs = std::iter::once(host.parent().expect("the host's directory").to_path_buf());
        env.push(("PATH", std::env::join_paths(dirs.chain(std::env::split_paths(&path))).expect("PATH")));
    }
    let opts = ["--agent-log", log.to_str().expect("a UTF-8 path")];
    Running::spawn_with_env(sonde(), &record_args(file, &opts, &command), &env).wait(DEADLINE)
}

/// The number of functions the agent's log says it read for the object it calls `object`.
fn functions_read(log: &Path, object: &str) -> u64 {
    let text = std::fs::read_to_string(log).expect("the agent's log");
    let line = text
        .lines()
        .find(|l| l.contains(&format!("native symbols: {object}")))
        .unwrap_or_else(|| panic!("no symbols read for {object}: {text}"));
    let (_, rest) = line.split_once("): ").or_else(|| line.split_once(&format!("{object}: "))).expect(line);
    rest.split_whitespace().next().and_then(|n| n.parse().ok()).unwrap_or_else(|| panic!("{line}"))
}

/// Mono's runtime is the `mono` executable itself (Debian's `/usr/bin/mono`, a symlink to
/// `mono-sgen`), which the loader knows by `argv[0]`: its frames are named from the debug file
/// that Debian's `mono-runtime-dbg` installs, found through the real file's `.gnu_debuglink`
/// (`/usr/lib/debug/usr/bin/mono-sgen`), its garbage collector's static functions included. An
/// allocation-heavy program spends a good part of its time there.
#[test]
fn mono_runtime_frames_are_named_from_its_debug_file() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let (file, log) = (dir.path().join("alloc.sonde"), dir.path().join("agent.log"));
    let out = record_by_name(Runtime::Mono, &file, &log, "Alloc", &["alloc", "3"]);
    assert_eq!(out.code(), 0, "{}", out.describe());
    let report = report_json(&file);
    let (named, all, functions) = native_samples(&report, "[native] mono");
    assert!(all > 20, "the runtime's own frames: {all} samples");
    assert!(named * 10 >= all * 9, "{named} of {all} samples in the runtime named: {functions:?}");
    let collector = |f: &String| ["sgen_", "major_", "par_alloc", "pin_"].iter().any(|p| f.starts_with(p));
    assert!(functions.iter().any(collector), "the collector's functions are named: {functions:?}");
    // As the text report shows them with every native frame shown.
    let shown = sonde_cmd(&["report".into(), file.clone().into(), "--native".into(), "show".into()]).stdout_str();
    assert!(shown.contains("[native] mono!sgen_"), "{shown}");
}

/// The vDSO (`linux-vdso.so.1`: kernel code mapped into the process, in no file) is named from
/// its own symbols, read from its image in memory — never from another object's table (the main
/// program's, which the loader's name for it once led to: the agent's log then gave the vDSO the
/// executable's count of functions).
fn vdso_frames_are_named_from_its_own_symbols(rt: Runtime) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let (file, log) = (dir.path().join("clocks.sonde"), dir.path().join("agent.log"));
    let out = record_by_name(rt, &file, &log, "Clocks", &["1000"]);
    assert_eq!(out.code(), 0, "{}", out.describe());
    assert!(out.stdout_str().starts_with("reads "), "{}", out.describe());
    let report = report_json(&file);
    let (named, all, functions) = native_samples(&report, "[native] linux-vdso.so.1");
    assert!(all > 20 && named == all, "{named} of {all} samples in the vDSO named: {functions:?}");
    let vdso = |f: &String| {
        f.starts_with("__vdso_") || ["clock_gettime", "gettimeofday", "time", "getcpu"].contains(&f.as_str())
    };
    assert!(functions.iter().all(vdso), "the vDSO's own functions only: {functions:?}");
    assert!(functions.iter().any(|f| f.contains("clock_gettime")), "{functions:?}");
    // Its own table: a handful of functions (the executable's has hundreds, or none at all).
    let read = functions_read(&log, "linux-vdso.so.1");
    assert!((1..50).contains(&read), "the vDSO's table has {read} functions");
}

on_both_runtimes!(vdso_frames_are_named_from_its_own_symbols);
