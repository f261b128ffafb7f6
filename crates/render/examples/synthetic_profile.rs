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

use sonde_profile::{Compensation, Method, Mode, Node, Profile, RunInfo, Runtime, Thread, Timing};
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
    let mut nodes: Vec<Node> = Vec::with_capacity(n);
    let mut path: Vec<u32> = Vec::new();
    let per_thread = n.div_ceil(THREADS as usize);
    while nodes.len() < n {
        let thread = (nodes.len() / per_thread) as u32;
        if path.last().is_some_and(|&top| nodes[top as usize].thread != thread) {
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
                let pm = nodes[p as usize].method;
                if rng.below(100) < 4 { pm } else { (pm * 7 + 1 + rng.below(12) as u32) % METHODS }
            }
        };
        let calls = 1 + rng.below(50) * rng.below(20);
        let self_ns = calls * (50 + rng.below(2_000));
        nodes.push(Node {
            thread,
            parent,
            method,
            calls,
            self_ns,
            total_ns: self_ns,
            self_samples: 0,
            total_samples: 0,
        });
        path.push(nodes.len() as u32 - 1);
    }
    for i in (0..nodes.len()).rev() {
        if let Some(p) = nodes[i].parent {
            nodes[p as usize].total_ns += nodes[i].total_ns;
        }
    }
    let wall_ns = nodes.iter().filter(|n| n.parent.is_none()).map(|n| n.total_ns).max().unwrap_or(0);
    Profile {
        sources: Default::default(),
        instantiations: Default::default(),
        framework: None,
        coverage: Default::default(),
        events: Default::default(),
        run: RunInfo {
            mode: Mode::Tracing,
            timing: Some(Timing::Exact),
            runtime: Runtime { kind: "coreclr".into(), version: "8.0.4".into() },
            command: vec!["dotnet".into(), "Synthetic.dll".into()],
            pid: 1,
            exit_code: Some(0),
            signal: None,
            wall_ns,
            started_unix_ms: 1_700_000_000_000,
            sample_interval_ns: 0,
            compensation: Some(Compensation { inner_ns_per_call: 12.0, outer_ns_per_call: 3.0 }),
            incomplete: false,
            lost: 0,
            sample_clock: None,
            samples_taken: 0,
            samples_lost: Vec::new(),
            agent_version: "synthetic".into(),
            attach: None,
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
