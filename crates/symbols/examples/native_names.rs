//! How long naming a library's functions takes (what the agent's drain thread does once per
//! library, at its first sample in it): `cargo run --release -p sonde-symbols --example
//! native_names -- LIBRARY...` prints, per library, the table used, the functions named, and the
//! time to read them (best of 5).

use sonde_symbols::NativeSymbols;
use std::time::Instant;

fn main() {
    for path in std::env::args().skip(1) {
        let mut best = f64::MAX;
        let mut found = None;
        for _ in 0..5 {
            let start = Instant::now();
            let symbols = NativeSymbols::open(path.as_ref());
            best = best.min(start.elapsed().as_secs_f64());
            found = Some(symbols);
        }
        match found.expect("ran") {
            Ok(symbols) => {
                println!("{path}: {} functions from {:?} in {:.2} ms", symbols.len(), symbols.origin(), best * 1e3)
            }
            Err(e) => println!("{path}: {e}"),
        }
    }
}
