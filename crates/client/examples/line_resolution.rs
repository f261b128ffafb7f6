//! What turning samples into source lines costs the controller (BENCHMARKS.md, "Source lines"):
//! every method of a real module with symbols (`MODULE`, its `.pdb` beside it or embedded, or
//! its `.mdb`) gets samples at `OFFSETS` IL offsets and in `NODES` call-tree nodes, as a large
//! sampled profile would; `sonde_client::sources::resolve` turns them into lines, first with the
//! symbols to read (a recording's first snapshot), then with them read (every later snapshot).
//!
//!     cargo run --release -p sonde-client --example line_resolution -- MODULE [OFFSETS] [NODES]

use sonde_client::sources::{NodeOffset, resolve};
use sonde_protocol::{LineRecord, MethodNames, MethodRecord};
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(module) = args.first() else {
        eprintln!("usage: line_resolution MODULE [OFFSETS] [NODES]");
        std::process::exit(2);
    };
    let offsets: u32 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(32);
    let nodes: u32 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(16);
    let path = std::fs::canonicalize(module).expect("the module").to_string_lossy().into_owned();
    let symbols = sonde_symbols::AssemblySymbols::open(std::path::Path::new(&path))
        .expect("readable symbols")
        .expect("the module has symbols");
    // Every MethodDef with a body that has sequence points.
    let (mut methods, mut misses) = (Vec::new(), 0);
    for row in 1u32.. {
        let token = 0x0600_0000 | row;
        if symbols.first_line(token).is_some() {
            methods.push(token);
            misses = 0;
        } else {
            misses += 1;
            if misses > 5_000 {
                break;
            }
        }
    }
    drop(symbols);
    let records: Vec<MethodRecord> = methods
        .iter()
        .enumerate()
        .map(|(id, &token)| MethodRecord {
            id: id as u32,
            names: MethodNames {
                name: format!("M{id}"),
                assembly: "A".into(),
                module: "A.dll".into(),
                path: path.clone(),
                token,
                ..MethodNames::default()
            },
        })
        .collect();
    let lines: Vec<LineRecord> = (0..methods.len() as u32)
        .flat_map(|method| {
            (0..offsets).map(move |o| LineRecord { method, il_offset: o * 4, self_samples: 3, total_samples: 5 })
        })
        .collect();
    let node_offsets: Vec<NodeOffset> = (0..methods.len() as u32)
        .flat_map(|method| {
            (0..nodes).flat_map(move |n| {
                (0..4).map(move |o| NodeOffset { node: method * nodes + n, method, il_offset: o * offsets, samples: 1 })
            })
        })
        .collect();
    for pass in ["symbols read", "symbols cached"] {
        let start = Instant::now();
        let (sources, _) = resolve(records.iter(), &lines, &node_offsets, &[]);
        let took = start.elapsed();
        println!(
            "{pass}: {} methods, {} offsets, {} node offsets → {} lines, {} node lines in {:.1} ms ({:.0} ns per offset)",
            methods.len(),
            lines.len(),
            node_offsets.len(),
            sources.lines.len(),
            sources.node_lines.len(),
            took.as_secs_f64() * 1e3,
            took.as_secs_f64() * 1e9 / (lines.len() + node_offsets.len()) as f64
        );
    }
}
