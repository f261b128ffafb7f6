//! Times every format on a call chain `depth` frames deep, the shape that made the stack
//! exports quadratic (issue item 14): `Main` calling `Recurse` recursively, one call per
//! level, 100 ns of self time each (tracing) or one sample each (sampling).
//!
//! `cargo run --release -p sonde-render --example deep_export -- 50000 [tracing|sampling [FORMAT [DIR]]]`
//! prints one line per format (or for FORMAT alone): seconds and bytes written, to a counting
//! sink, or to `DIR/deep.FORMAT` when DIR is given.

use std::io::{self, Write};
use std::time::Instant;

use sonde_profile::{Method, Mode, Node, Profile, RunInfo, Runtime, Thread, Timing};
use sonde_render::{Format, renderer};

/// A sink that only counts.
struct Count(u64);

impl Write for Count {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn chain(depth: u32, mode: Mode) -> Profile {
    let method = |name: &str| Method {
        name: name.into(),
        signature: "(int32) -> int32".into(),
        assembly: "Deep".into(),
        module: "Deep.dll".into(),
    };
    let mut nodes: Vec<Node> = (0..depth)
        .map(|i| Node {
            thread: 0,
            parent: i.checked_sub(1),
            method: u32::from(i > 0),
            calls: 1,
            self_ns: 100,
            total_ns: 0,
            self_samples: 1,
            total_samples: 0,
        })
        .collect();
    let (mut ns, mut samples) = (0, 0);
    for n in nodes.iter_mut().rev() {
        ns += n.self_ns;
        samples += n.self_samples;
        (n.total_ns, n.total_samples) = (ns, samples);
    }
    Profile {
        run: RunInfo {
            mode,
            timing: (mode == Mode::Tracing).then_some(Timing::Exact),
            runtime: Runtime { kind: "coreclr".into(), version: "8.0.4".into() },
            command: vec!["dotnet".into(), "Deep.dll".into()],
            pid: 1,
            exit_code: Some(0),
            signal: None,
            wall_ns: ns,
            started_unix_ms: 1_700_000_000_000,
            sample_interval_ns: if mode == Mode::Sampling { 1_000_000 } else { 0 },
            compensation: None,
            incomplete: false,
            lost: 0,
            sample_clock: None,
            samples_taken: samples,
            samples_lost: Vec::new(),
            agent_version: "0.1.0".into(),
        },
        methods: vec![method("Deep.Program.Main"), method("Deep.Program.Recurse")],
        threads: vec![Thread { os_tid: 1, name: None, wall_ns: ns, cpu_user_ns: 0, cpu_kernel_ns: 0 }],
        nodes,
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let depth: u32 = args.next().and_then(|a| a.parse().ok()).unwrap_or(50_000);
    let mode = match args.next().as_deref() {
        Some("sampling") => Mode::Sampling,
        _ => Mode::Tracing,
    };
    let only: Option<Format> = args.next().and_then(|f| f.parse().ok());
    let dir = args.next();
    let profile = chain(depth, mode);
    println!("depth {depth}, {} mode", mode.as_str());
    for format in Format::ALL.into_iter().filter(|f| only.is_none_or(|o| o == *f)) {
        let mut out = Count(0);
        let start = Instant::now();
        let result = match &dir {
            Some(dir) => {
                let mut file = std::fs::File::create(format!("{dir}/deep.{format}")).expect("creating the output");
                renderer(format).render(&profile, &mut file).and_then(|()| file.flush())
            }
            None => renderer(format).render(&profile, &mut out),
        };
        let secs = start.elapsed().as_secs_f64();
        match result {
            Ok(()) if dir.is_some() => println!("{:<11} {secs:>8.3} s", format.name()),
            Ok(()) => println!("{:<11} {secs:>8.3} s {:>15} bytes", format.name(), out.0),
            Err(e) => println!("{:<11} {secs:>8.3} s error: {e}", format.name()),
        }
    }
}
