//! Golden tests: each renderer's output for small hand-built profiles, compared with files under
//! `tests/golden/`. After an intended change, re-bless them with
//! `SONDE_BLESS=1 cargo test -p sonde-render` and review the diff.
//!
//! The HTML goldens hold the page's markup and data only: its script and stylesheet, the same in
//! every report, are left out (`HtmlRenderer::no_static_assets`) and checked by
//! `tests/page_script.rs` and the browser test instead.

use std::path::PathBuf;

use sonde_profile::testkit::{nodes, run_info};
use sonde_profile::{
    AllocSampling, AllocationCount, Allocations, Compensation, ExceptionCount, GcCollection, GcKind, GcReason,
    Instantiation, LineSamples, Loading, Method, Mode, ModuleLoad, NodeEvents, NodeLine, Profile, RunInfo,
    RuntimeEvents, SourceLine, Sources, Thread, Timing,
};
use sonde_render::{Format, HtmlRenderer, Renderer, renderer};

#[path = "support/pprof_text.rs"]
mod pprof_text;

fn method(name: &str, signature: &str) -> Method {
    Method { name: name.into(), signature: signature.into(), assembly: "Acme".into(), module: "Acme.dll".into() }
}

fn thread(os_tid: u32, name: Option<&str>, wall_ns: u64) -> Thread {
    Thread { os_tid, name: name.map(Into::into), wall_ns, cpu_user_ns: wall_ns / 2, cpu_kernel_ns: wall_ns / 10 }
}

fn methods() -> Vec<Method> {
    vec![
        method("Acme.Program.Main", "(string[]) -> void"),
        method("Acme.Outer+Inner.Run", "() -> void"),
        method("Acme.Collections.Node`1..ctor", "(!0) -> void"),
        method("Acme.Parser.<Parse>g__Quote\"'|4_0", "(char) -> string"),
        method("Acme.Größe.Überprüfen", "(string) -> bool"),
        method("Acme.Math.Fib", "(int32) -> int64"),
        method("Acme.Unused.Never", "() -> void"),
    ]
}

/// [`methods`], and the runtime's work frames a sampling agent records (`[jit] …`, `[gc]`) with
/// the native code below them.
fn sampled_methods() -> Vec<Method> {
    let mut methods = methods();
    methods.push(method("[jit] Acme.Outer+Inner.Run", "() -> void"));
    methods.push(Method {
        name: "[gc]".into(),
        signature: String::new(),
        assembly: String::new(),
        module: String::new(),
    });
    methods.push(Method {
        name: "[native] libclrjit.so!compileMethod".into(),
        signature: String::new(),
        assembly: "libclrjit.so".into(),
        module: "/usr/share/dotnet/shared/Microsoft.NETCore.App/8.0.4/libclrjit.so".into(),
    });
    methods
}

fn run(mode: Mode) -> RunInfo {
    RunInfo {
        timing: None,
        command: vec!["dotnet".into(), "Acme.dll".into(), "--name".into(), "two words".into()],
        wall_ns: 12_500_000,
        ..run_info(mode)
    }
}

/// Exact tracing on two threads, with self recursion (Fib) and every awkward kind of name.
fn tracing_profile() -> Profile {
    let mut run = run(Mode::Tracing);
    run.timing = Some(Timing::Exact);
    run.compensation = Some(Compensation { inner_ns_per_call: 14.25, outer_ns_per_call: 3.5 });
    run.lost = 3;
    Profile {
        sources: sources(false),
        instantiations: Vec::new(),
        framework: None,
        coverage: Default::default(),
        events: Default::default(),
        run,
        methods: methods(),
        threads: vec![thread(4242, None, 12_000_000), thread(4250, Some("Worker «1»"), 900_000)],
        nodes: nodes(&[
            (0, None, 0, 1, 200_000, 0),
            (0, Some(0), 1, 2, 1_500_000, 0),
            (0, Some(1), 2, 40, 30_000, 0),
            (0, Some(1), 5, 1, 2_000, 0),
            (0, Some(3), 5, 2, 3_000, 0),
            (0, Some(4), 5, 4, 5_000, 0),
            (0, Some(0), 4, 3, 45_000, 0),
            (0, Some(0), 3, 5, 12_345, 0),
            (1, None, 1, 1, 800_000, 0),
            (1, Some(8), 4, 1, 9_999, 0),
        ]),
    }
}

/// First lines of Main (in a file whose name would clear a terminal) and Fib, and (`samples`)
/// Fib's samples on two lines.
fn sources(samples: bool) -> Sources {
    let at = |file, line| SourceLine { file, line };
    Sources {
        files: vec!["/src/Acme/Math.cs".into(), "C:\\src\\Program\u{1b}[2J.cs".into()],
        methods: vec![(0, at(1, 10)), (5, at(0, 42))],
        lines: if samples {
            vec![
                LineSamples { method: 5, at: at(0, 43), self_samples: 5, total_samples: 7 },
                LineSamples { method: 5, at: at(0, 44), self_samples: 2, total_samples: 2 },
            ]
        } else {
            Vec::new()
        },
        // Fib's two sampled nodes, by line (they sum to the method's lines above).
        node_lines: if samples {
            vec![
                NodeLine { node: 1, at: at(0, 43), samples: 1 },
                NodeLine { node: 1, at: at(0, 44), samples: 1 },
                NodeLine { node: 2, at: at(0, 43), samples: 4 },
                NodeLine { node: 2, at: at(0, 44), samples: 1 },
            ]
        } else {
            Vec::new()
        },
    }
}

/// Sampling at 1 ms: no calls, time estimated from samples; the run ended early.
fn sampling_profile() -> Profile {
    let mut run = run(Mode::Sampling);
    run.sample_interval_ns = 1_000_000;
    run.incomplete = true;
    run.exit_code = None;
    let ms = 1_000_000;
    let mut events = RuntimeEvents {
        exceptions: vec![
            ExceptionCount { type_name: "System.IO.IOException".into(), thrown: 12, caught: 12 },
            ExceptionCount { type_name: "Acme.Parser+BadToken\u{1b}[2J".into(), thrown: 3, caught: 1 },
        ],
        catches_counted: true,
        ..RuntimeEvents::default()
    };
    events.gc.count_by_gen = [2, 0, 1];
    events.gc.pause_ns_total = 3 * ms;
    events.gc.pause_ns_max = 2 * ms;
    for (generation, reason, start, pause, heap) in [
        (0, GcReason::Other, ms, ms / 2, 1 << 20),
        (0, GcReason::Other, 4 * ms, ms / 2, 2 << 20),
        (2, GcReason::Induced, 8 * ms, 2 * ms, 1 << 19),
    ] {
        events.gc.collections.push(GcCollection {
            generation,
            reason,
            kind: GcKind::Blocking,
            start_ns: start,
            end_ns: start + pause,
            pause_ns: pause,
            heap_bytes_after: heap,
        });
    }
    events.allocations = Allocations {
        sampling: AllocSampling::Sampled,
        sample_bytes: 100 * 1024,
        samples: 3,
        by_type: vec![
            AllocationCount { type_name: "System.Byte[]".into(), bytes: 300 * 1024, count: 300 },
            AllocationCount { type_name: "Acme.Token\u{1b}]0;owned\u{7}".into(), bytes: 100 * 1024, count: 4_266 },
        ],
        exact_by_type: false,
    };
    events.loading = Loading {
        methods_compiled: 321,
        jit_ns: 45 * ms,
        precompiled: Vec::new(),
        modules: vec![
            ModuleLoad {
                name: "System.Private.CoreLib.dll".into(),
                path: "/usr/share/dotnet/System.Private.CoreLib.dll".into(),
                loaded_ns: ms,
            },
            ModuleLoad { name: "Acme.dll".into(), path: "/srv/acme/Acme.dll".into(), loaded_ns: 3 * ms },
        ],
    };
    events.nodes = vec![
        NodeEvents { node: 1, alloc_bytes: 100 * 1024, alloc_count: 4_266, wait_ns: 0, exceptions_thrown: 3 },
        NodeEvents { node: 2, alloc_bytes: 300 * 1024, alloc_count: 300, wait_ns: 7 * ms, exceptions_thrown: 12 },
    ];
    Profile {
        sources: sources(true),
        // Node`1 instantiated over an `int`: its name shows the argument.
        instantiations: vec![Instantiation {
            method: 2,
            type_args: vec!["System.Int32".into()],
            method_args: Vec::new(),
        }],
        framework: None,
        coverage: Default::default(),
        events,
        run,
        methods: sampled_methods(),
        threads: vec![thread(4242, Some("Main"), 12_000_000)],
        nodes: nodes(&[
            (0, None, 0, 0, ms, 1),
            (0, Some(0), 5, 0, 2 * ms, 2),
            (0, Some(1), 5, 0, 5 * ms, 5),
            (0, Some(0), 4, 0, 3 * ms, 3),
            // The runtime's work for Main: compiling Inner.Run (the JIT's native code below), and
            // a collection.
            (0, Some(0), 7, 0, 0, 0),
            (0, Some(4), 9, 0, 4 * ms, 4),
            (0, Some(0), 8, 0, ms, 1),
        ]),
    }
}

fn render_bytes(format: Format, profile: &Profile) -> Vec<u8> {
    let mut out = Vec::new();
    renderer(format).render(profile, &mut out).expect("rendering to a Vec");
    out
}

fn render(format: Format, profile: &Profile) -> String {
    String::from_utf8(render_bytes(format, profile)).expect("renderers write UTF-8")
}

fn check_golden(file: &str, actual: &str) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden").join(file);
    if std::env::var_os("SONDE_BLESS").is_some_and(|v| v == "1") {
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}; run with SONDE_BLESS=1 to create it", path.display()));
    if expected != actual {
        let line = expected.lines().zip(actual.lines()).position(|(e, a)| e != a);
        panic!(
            "{} differs from the output (first difference at line {}); \
             rerun with SONDE_BLESS=1 if the change is intended.\n--- output ---\n{actual}",
            path.display(),
            line.map_or_else(|| "end".to_owned(), |l| (l + 1).to_string()),
        );
    }
}

#[test]
fn text_tracing() {
    check_golden("tracing.txt", &render(Format::Text, &tracing_profile()));
}

#[test]
fn text_sampling() {
    check_golden("sampling.txt", &render(Format::Text, &sampling_profile()));
}

#[test]
fn json_tracing() {
    check_golden("tracing.json", &render(Format::Json, &tracing_profile()));
}

#[test]
fn json_sampling() {
    check_golden("sampling.json", &render(Format::Json, &sampling_profile()));
}

#[test]
fn collapsed_tracing() {
    check_golden("tracing.collapsed", &render(Format::Collapsed, &tracing_profile()));
}

#[test]
fn collapsed_sampling() {
    check_golden("sampling.collapsed", &render(Format::Collapsed, &sampling_profile()));
}

#[test]
fn speedscope_tracing() {
    check_golden("tracing.speedscope.json", &render(Format::Speedscope, &tracing_profile()));
}

#[test]
fn speedscope_sampling() {
    check_golden("sampling.speedscope.json", &render(Format::Speedscope, &sampling_profile()));
}

#[test]
fn flamegraph_tracing() {
    check_golden("tracing.svg", &render(Format::Flamegraph, &tracing_profile()));
}

#[test]
fn flamegraph_sampling() {
    check_golden("sampling.svg", &render(Format::Flamegraph, &sampling_profile()));
}

/// pprof is gzip: the golden is the decoded profile, which is what a consumer sees.
#[test]
fn pprof_tracing() {
    check_golden(
        "tracing.pprof.txt",
        &pprof_text::text(&pprof_text::decode(&render_bytes(Format::Pprof, &tracing_profile()))),
    );
}

#[test]
fn pprof_sampling() {
    check_golden(
        "sampling.pprof.txt",
        &pprof_text::text(&pprof_text::decode(&render_bytes(Format::Pprof, &sampling_profile()))),
    );
}

/// The HTML report without its static script and stylesheet.
fn html_without_static_assets(profile: &Profile) -> String {
    let mut out = Vec::new();
    HtmlRenderer { no_static_assets: true }.render(profile, &mut out).expect("rendering to a Vec");
    String::from_utf8(out).expect("renderers write UTF-8")
}

#[test]
fn html_tracing() {
    check_golden("tracing.html", &html_without_static_assets(&tracing_profile()));
}

#[test]
fn html_sampling() {
    check_golden("sampling.html", &html_without_static_assets(&sampling_profile()));
}

#[test]
fn html_without_static_assets_differs_only_by_them() {
    let full = render(Format::Html, &tracing_profile());
    let bare = html_without_static_assets(&tracing_profile());
    assert!(full.contains("<style>") && full.contains("<script>(function () {"));
    assert!(!bare.contains("<style") && !bare.contains("<script>") && !bare.contains("sha256-"));
    assert!(bare.contains("script-src 'none'; style-src 'none'"), "nothing may run in the bare page");
    let data =
        |page: &str| page[page.find("id=\"sonde-data\"").unwrap()..].split("</script>").next().unwrap().to_owned();
    assert_eq!(data(&full), data(&bare));
}

fn keys(value: &serde_json::Value) -> Vec<&str> {
    value.as_object().expect("an object").keys().map(String::as_str).collect()
}

#[test]
fn json_parses_back_with_the_contract_keys_in_order() {
    for profile in [tracing_profile(), sampling_profile()] {
        let json: serde_json::Value = serde_json::from_str(&render(Format::Json, &profile)).unwrap();
        #[rustfmt::skip]
        assert_eq!(keys(&json), [
            "schema", "mode", "timing", "runtime", "command", "pid", "exit_code", "signal", "wall_ns",
            "sample_interval_ns", "compensation", "incomplete", "lost", "sample_clock", "sampler",
            "samples_taken", "samples_lost", "attached", "attached_at_ns", "detached_at_ns", "threads", "methods", "nodes",
            "exceptions", "gc", "jit", "modules", "allocation_sampling", "allocations_exact", "allocations", "runtime_work",
        ]);
        assert_eq!(keys(&json["jit"]), ["methods_compiled", "jit_ns"]);
        assert_eq!(keys(&json["runtime_work"]), ["jit", "gc", "type_load"]);
        assert_eq!(keys(&json["runtime_work"]["jit"]), ["samples", "ns", "methods", "by_assembly"]);
        for a in json["runtime_work"]["jit"]["by_assembly"].as_array().unwrap() {
            assert_eq!(keys(a), ["assembly", "samples", "ns", "methods"]);
        }
        assert_eq!(keys(&json["runtime_work"]["gc"]), ["samples", "ns"]);
        assert_eq!(keys(&json["runtime_work"]["type_load"]), ["samples", "ns", "types"]);
        for m in json["modules"].as_array().unwrap() {
            assert_eq!(keys(m), ["name", "path", "loaded_ns"]);
        }
        for a in json["allocations"].as_array().unwrap() {
            assert_eq!(keys(a), ["type", "bytes", "count"]);
        }
        assert_eq!(keys(&json["gc"]), ["count_by_gen", "pause_ns_total", "pause_ns_max", "collections"]);
        for c in json["gc"]["collections"].as_array().unwrap() {
            assert_eq!(keys(c), ["gen", "reason", "kind", "start_ns", "end_ns", "pause_ns", "heap_bytes_after"]);
        }
        for e in json["exceptions"].as_array().unwrap() {
            assert_eq!(keys(e), ["type", "thrown", "caught"]);
        }
        assert_eq!(json["schema"], "sonde.report/1");
        assert_eq!(keys(&json["runtime"]), ["kind", "version"]);
        if !json["compensation"].is_null() {
            assert_eq!(keys(&json["compensation"]), ["inner_ns_per_call", "outer_ns_per_call"]);
        }
        let arrays = [
            (
                "threads",
                &[
                    "id",
                    "pid",
                    "os_tid",
                    "name",
                    "calls",
                    "samples",
                    "wall_ns",
                    "cpu_ns",
                    "cpu_user_ns",
                    "cpu_kernel_ns",
                ][..],
            ),
            (
                "methods",
                &[
                    "id",
                    "name",
                    "display_name",
                    "kind",
                    "user_code",
                    "signature",
                    "assembly",
                    "module",
                    "calls",
                    "self_ns",
                    "total_ns",
                    "self_samples",
                    "total_samples",
                    "alloc_bytes",
                    "alloc_count",
                    "total_alloc_bytes",
                    "wait_ns",
                    "exceptions_thrown",
                    "file",
                    "line",
                    "lines",
                    "runtime_work",
                ],
            ),
            (
                "nodes",
                &[
                    "id",
                    "thread",
                    "parent",
                    "method",
                    "calls",
                    "self_ns",
                    "total_ns",
                    "self_samples",
                    "total_samples",
                    "alloc_bytes",
                    "alloc_count",
                    "total_alloc_bytes",
                    "wait_ns",
                    "exceptions_thrown",
                ],
            ),
        ];
        for (array, expected) in arrays {
            let items = json[array].as_array().unwrap();
            assert!(!items.is_empty());
            for (i, item) in items.iter().enumerate() {
                assert_eq!(keys(item), expected, "{array}[{i}]");
                assert_eq!(item["id"], i, "{array}[{i}]");
            }
        }
    }
}

#[test]
fn json_reports_recursion_aware_totals_and_exact_names() {
    let json: serde_json::Value = serde_json::from_str(&render(Format::Json, &tracing_profile())).unwrap();
    let fib = &json["methods"][5];
    assert_eq!(fib["name"], "Acme.Math.Fib");
    assert_eq!(
        (fib["calls"].as_u64(), fib["self_ns"].as_u64(), fib["total_ns"].as_u64()),
        (Some(7), Some(10_000), Some(10_000))
    );
    assert_eq!(json["methods"][3]["name"], "Acme.Parser.<Parse>g__Quote\"'|4_0");
    assert_eq!(json["threads"][1]["name"], "Worker «1»");
    assert_eq!(json["threads"][1]["cpu_ns"], 450_000 + 90_000);
    assert_eq!(json["nodes"][0]["parent"], serde_json::Value::Null);
}

#[test]
fn an_empty_profile_renders() {
    let profile = Profile {
        run: run(Mode::Tracing),
        methods: vec![],
        threads: vec![],
        nodes: vec![],
        ..sonde_profile::testkit::blank()
    };
    for format in Format::ALL {
        // Folded stacks of nothing are no lines at all.
        assert!(!render_bytes(format, &profile).is_empty() || format == Format::Collapsed, "{format}");
    }
}

#[test]
fn absurd_values_render_without_panicking() {
    let mut profile = tracing_profile();
    for n in &mut profile.nodes {
        (n.calls, n.self_ns, n.total_ns, n.self_samples, n.total_samples) = (u64::MAX, u64::MAX, u64::MAX, 1, u64::MAX);
    }
    profile.threads[0].cpu_user_ns = u64::MAX;
    profile.threads[0].cpu_kernel_ns = u64::MAX;
    profile.run.wall_ns = u64::MAX;
    for format in Format::ALL {
        assert!(!render_bytes(format, &profile).is_empty());
    }
}

#[test]
fn an_invalid_profile_is_refused() {
    let mut profile = tracing_profile();
    profile.nodes[3].parent = Some(9);
    for format in Format::ALL {
        let err = renderer(format).render(&profile, &mut Vec::new()).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidData);
    }
}
