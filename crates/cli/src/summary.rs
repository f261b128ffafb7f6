//! The short summary `sonde record` prints on stderr: where the profile went and the top methods
//! by self time.

use sonde_profile::{Analysis, Profile};
use sonde_render::fmt::{count, duration};
use std::path::Path;

const TOP: usize = 5;

pub fn print(profile: &Profile, path: &Path) {
    let analysis = Analysis::new(profile);
    let totals = analysis.totals();
    eprintln!(
        "sonde: pid {}: {} calls to {} methods on {} threads in {} → {}",
        profile.run.pid,
        count(totals.calls),
        analysis.methods().iter().filter(|m| m.calls > 0).count(),
        profile.threads.len(),
        duration(profile.run.wall_ns),
        path.display()
    );
    let mut top: Vec<(usize, u64)> =
        analysis.methods().iter().enumerate().filter(|(_, m)| m.calls > 0).map(|(i, m)| (i, m.self_ns)).collect();
    top.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    if top.is_empty() {
        eprintln!("sonde: no traced method was called (see --include / --all)");
        return;
    }
    eprintln!("{:>12} {:>10} {:>6}  top methods by self time", "calls", "self", "self%");
    for &(id, self_ns) in top.iter().take(TOP) {
        let pct = if totals.total_ns == 0 { 0.0 } else { 100.0 * self_ns as f64 / totals.total_ns as f64 };
        eprintln!(
            "{:>12} {:>10} {:>5.1}%  {}",
            count(analysis.methods()[id].calls),
            duration(self_ns),
            pct,
            profile.methods[id].name
        );
    }
}
