//! Times every format on a call chain `depth` frames deep, the shape that made the stack
//! exports quadratic (issue item 14): `Main` calling `Recurse` recursively, one call per
//! level, 100 ns of self time each (tracing) or one sample each (sampling).
//!
//! `cargo run --release -p sonde-render --example deep_export -- 50000 [tracing|sampling [FORMAT [DIR]]]`
//! prints one line per format (or for FORMAT alone): seconds and bytes written, to a counting
//! sink, or to `DIR/deep.FORMAT` when DIR is given.

use std::io::{self, Write};
use std::time::Instant;

use sonde_profile::{Mode, Profile, Thread};
use sonde_render::{Format, renderer};

// The export tests' hand-built profiles: their `run`, `method` and `nodes` (totals from selves).
#[path = "../tests/support/profiles.rs"]
mod profiles;

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
    // Main (method 0) at the root, Recurse (method 1) below it, each level one call, 100 ns and
    // one sample.
    let rows: Vec<profiles::Row> = (0..depth).map(|i| (0, i.checked_sub(1), u32::from(i > 0), 1, 100, 1)).collect();
    let nodes = profiles::nodes(&rows);
    let (ns, samples) = nodes.first().map_or((0, 0), |root| (root.total_ns, root.total_samples));
    let mut run = profiles::run(mode);
    run.command = vec!["dotnet".into(), "Deep.dll".into()];
    run.pid = 1;
    run.wall_ns = ns;
    run.samples_taken = samples;
    let method = |name| profiles::method(name, "(int32) -> int32", "Deep.dll");
    Profile {
        run,
        methods: vec![method("Deep.Program.Main"), method("Deep.Program.Recurse")],
        threads: vec![Thread { os_tid: 1, name: None, wall_ns: ns, cpu_user_ns: 0, cpu_kernel_ns: 0 }],
        nodes,
        ..sonde_profile::testkit::blank()
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
