//! Writes a synthetic traced profile of any size, for the HTML report's benchmark
//! (`scripts/bench-html.py`) and for trying the renderers on big inputs.
//!
//! ```text
//! cargo run --release -p sonde-render --example synthetic_profile -- OUT.sonde [NODES] [--html OUT.html]
//! ```
//!
//! The call tree is a random walk of calls and returns (deterministic, fixed seed) on 8 threads:
//! stacks mostly 15 to 35 deep, some self recursion, a few thousand methods whose paths repeat
//! across threads, nodes in the order an agent creates them (a node is added on its first call).
//! With `--html` it also renders the HTML report and prints how long rendering alone took.

use std::time::Instant;

use sonde_profile::testkit::{Row, nodes, run_info};
use sonde_profile::{Compensation, Method, Mode, Profile, RunInfo, Thread};
use sonde_render::{Format, renderer};

const THREADS: u32 = 8;
const METHODS: u32 = 4000;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn profile(n: usize) -> Profile {
    let mut rng = Rng(0x5eed_cafe_f00d_d00d);
    let methods = (0..METHODS)
        .map(|i| Method {
            name: format!("Acme.Module{}.Type{}.Method{}", i % 17, i % 211, i),
            signature: "(int32, string) -> void".into(),
            assembly: format!("Acme.Module{}", i % 17),
            module: format!("Acme.Module{}.dll", i % 17),
        })
        .collect();
    // (thread, parent, method, calls, self_ns, self_samples)
    let mut rows: Vec<Row> = Vec::with_capacity(n);
    let mut path: Vec<u32> = Vec::new();
    let per_thread = n.div_ceil(THREADS as usize);
    while rows.len() < n {
        let thread = (rows.len() / per_thread) as u32;
        if path.last().is_some_and(|&top| rows[top as usize].0 != thread) {
            path.clear();
        }
        // Call deeper while shallow, return more often when deep.
        let call = path.is_empty() || rng.below(100) < if path.len() < 25 { 56 } else { 30 };
        if !call {
            path.pop();
            continue;
        }
        let parent = path.last().copied();
        let method = match parent {
            None => (rng.below(4)) as u32,
            Some(p) => {
                let pm = rows[p as usize].2;
                if rng.below(100) < 4 { pm } else { (pm * 7 + 1 + rng.below(12) as u32) % METHODS }
            }
        };
        let calls = 1 + rng.below(50) * rng.below(20);
        let self_ns = calls * (50 + rng.below(2_000));
        rows.push((thread, parent, method, calls, self_ns, 0));
        path.push(rows.len() as u32 - 1);
    }
    let nodes = nodes(&rows);
    let wall_ns = nodes.iter().filter(|n| n.parent.is_none()).map(|n| n.total_ns).max().unwrap_or(0);
    Profile {
        run: RunInfo {
            command: vec!["dotnet".into(), "Synthetic.dll".into()],
            pid: 1,
            wall_ns,
            compensation: Some(Compensation { inner_ns_per_call: 12.0, outer_ns_per_call: 3.0 }),
            agent_version: "synthetic".into(),
            ..run_info(Mode::Tracing)
        },
        methods,
        threads: (0..THREADS)
            .map(|t| Thread {
                os_tid: 1000 + t,
                name: Some(format!("Worker {t}")),
                wall_ns,
                cpu_user_ns: wall_ns / 2,
                cpu_kernel_ns: 0,
            })
            .collect(),
        nodes,
        ..sonde_profile::testkit::blank()
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: synthetic_profile OUT.sonde [NODES] [--html OUT.html]";
    let out = args.first().filter(|a| !a.starts_with("--")).expect(usage);
    let n: usize = args.get(1).filter(|a| !a.starts_with("--")).map_or(1_000_000, |a| a.parse().expect(usage));
    let html = args.iter().position(|a| a == "--html").map(|i| args.get(i + 1).expect(usage));

    let profile = profile(n);
    let depth = {
        let mut depth = vec![0u32; profile.nodes.len()];
        for (i, node) in profile.nodes.iter().enumerate() {
            depth[i] = node.parent.map_or(0, |p| depth[p as usize] + 1);
        }
        depth.into_iter().max().unwrap_or(0)
    };
    sonde_profile::save(out, &profile).expect("cannot write the profile");
    println!("{out}: {} nodes, {} methods, {} threads, max depth {depth}", profile.nodes.len(), METHODS, THREADS);
    if let Some(html) = html {
        let start = Instant::now();
        let mut file = std::io::BufWriter::new(std::fs::File::create(html).expect("cannot create the HTML file"));
        renderer(Format::Html).render(&profile, &mut file).expect("cannot render");
        std::io::Write::flush(&mut file).expect("cannot write the HTML file");
        println!("{html}: rendered in {:.3} s", start.elapsed().as_secs_f64());
    }
}
