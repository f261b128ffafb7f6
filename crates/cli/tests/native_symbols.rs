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
