//! Hand-built profiles for the export tests: two threads, recursion, an overload pair, and the
//! names that break naive exporters (generics, compiler-generated `<...>` names, quotes, HTML,
//! non-ASCII, a `;`).

// Each test crate that includes this module uses only part of it.
#![allow(dead_code, unused_imports)]

use sonde_profile::testkit::run_info;
pub use sonde_profile::testkit::{Row, nodes};
use sonde_profile::{Method, Mode, Profile, RunInfo, Thread};

pub fn method(name: &str, signature: &str, module: &str) -> Method {
    Method {
        name: name.into(),
        signature: signature.into(),
        assembly: module.trim_end_matches(".dll").into(),
        module: module.into(),
    }
}

pub fn methods() -> Vec<Method> {
    vec![
        method("App.Program.Main", "(string[]) -> void", "App.dll"),
        method("App.Program.<Main>b__0_0", "() -> void", "App.dll"),
        method("App.Render.Html", "(string) -> string", "App.dll"),
        method("App.Render.Html", "(int32) -> string", "App.dll"),
        method("\"><img src=x onerror=alert(1)>", "() -> void", "Evil.dll"),
        method("App.List`1.Add", "(!0) -> void", "App.dll"),
        method("App.Weird;Name", "() -> void", ""),
        method("App.Math.Fib", "(int32) -> int64", "App.dll"),
        method("System.Threading.Thread.StartCallback", "() -> void", "System.Private.CoreLib.dll"),
    ]
}

pub fn run(mode: Mode) -> RunInfo {
    RunInfo {
        command: vec!["dotnet".into(), "App.dll".into()],
        pid: 777,
        wall_ns: 50_000_000,
        sample_interval_ns: if mode == Mode::Sampling { 1_000_000 } else { 0 },
        ..run_info(mode)
    }
}

fn threads() -> Vec<Thread> {
    let thread = |os_tid, name: Option<&str>| Thread {
        os_tid,
        name: name.map(Into::into),
        wall_ns: 40_000_000,
        cpu_user_ns: 10_000_000,
        cpu_kernel_ns: 1_000_000,
    };
    // The third thread did nothing measurable.
    vec![thread(777, Some("Main")), thread(790, Some("<Worker> \"1\"")), thread(791, None)]
}

/// Exact tracing: recursion, both overloads of `Html` under the same caller, a weightless node.
pub fn tracing() -> Profile {
    Profile {
        run: run(Mode::Tracing),
        methods: methods(),
        threads: threads(),
        nodes: nodes(&[
            (0, None, 0, 1, 100_000, 0),
            (0, Some(0), 1, 3, 20_000, 0),
            (0, Some(1), 2, 5, 7_000, 0),
            (0, Some(1), 3, 2, 4_000, 0),
            (0, Some(0), 7, 1, 1_000, 0),
            (0, Some(4), 7, 2, 2_000, 0),
            (0, Some(5), 7, 4, 0, 0),
            (0, Some(0), 6, 9, 30_000, 0),
            (1, None, 8, 1, 0, 0),
            (1, Some(8), 4, 1, 55_555, 0),
            (1, Some(8), 5, 1000, 66_000, 0),
            (2, None, 8, 1, 0, 0),
        ]),
        ..sonde_profile::testkit::blank()
    }
}

/// Sampling at 1 ms on two threads.
pub fn sampling() -> Profile {
    let ms = 1_000_000;
    Profile {
        run: run(Mode::Sampling),
        methods: methods(),
        threads: threads(),
        nodes: nodes(&[
            (0, None, 0, 0, 4 * ms, 4),
            (0, Some(0), 7, 0, 2 * ms, 2),
            (0, Some(1), 7, 0, 0, 0),
            (0, Some(2), 7, 0, 6 * ms, 6),
            (0, Some(0), 2, 0, ms, 1),
            (0, Some(0), 3, 0, ms, 1),
            (1, None, 8, 0, 0, 0),
            (1, Some(6), 4, 0, 3 * ms, 3),
        ]),
        ..sonde_profile::testkit::blank()
    }
}

/// [`sampling`] with its symbols' lines: method 7's first line, and its two sampled nodes'
/// samples by line — node 3's six with one left without a line.
pub fn sampling_lines() -> Profile {
    use sonde_profile::{NodeLine, SourceLine, Sources};
    let at = |line| SourceLine { file: 0, line };
    let mut profile = sampling();
    profile.sources = Sources {
        files: vec!["/src/Acme/Work.cs".into()],
        methods: vec![(7, at(20))],
        lines: Vec::new(),
        node_lines: vec![
            NodeLine { node: 1, at: at(21), samples: 2 },
            NodeLine { node: 3, at: at(21), samples: 4 },
            NodeLine { node: 3, at: at(23), samples: 1 },
        ],
    };
    profile
}

/// Exact tracing built for the recursion-aware figures: mutual recursion (`Html(string)` ⇄
/// `Html(int32)`), a method recurring below another recursion (Fib), the same root method on two
/// threads (merged in the HTML report's all-threads view), a self-recursive root-level method on
/// a third, and one node whose total exceeds its self plus its children's totals (as a snapshot
/// taken mid-call can have), so the HTML data block carries a total adjustment.
pub fn recursive() -> Profile {
    let mut nodes = nodes(&[
        (0, None, 0, 1, 10_000, 0),
        (0, Some(0), 2, 2, 1_000, 0),
        (0, Some(1), 3, 3, 2_000, 0),
        (0, Some(2), 2, 4, 3_000, 0),
        (0, Some(3), 3, 5, 4_000, 0),
        (0, Some(4), 7, 1, 500, 0),
        (0, Some(5), 7, 2, 600, 0),
        (0, Some(6), 2, 1, 700, 0),
        (0, Some(0), 3, 6, 5_000, 0),
        (0, Some(8), 2, 1, 800, 0),
        (1, None, 0, 1, 20_000, 0),
        (1, Some(10), 2, 7, 9_000, 0),
        (1, Some(11), 3, 1, 1_000, 0),
        (1, Some(12), 2, 1, 1_500, 0),
        (2, None, 8, 1, 0, 0),
        (2, Some(14), 0, 1, 100, 0),
        (2, Some(15), 0, 2, 200, 0),
    ]);
    for i in [4, 3, 2, 1, 0] {
        nodes[i].total_ns += 250;
    }
    Profile {
        run: run(Mode::Tracing),
        methods: methods(),
        threads: threads(),
        nodes,
        ..sonde_profile::testkit::blank()
    }
}
