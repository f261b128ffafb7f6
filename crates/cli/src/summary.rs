//! The short summary `sonde record` prints on stderr: where the profile went and the top methods
//! by self time (tracing) or self samples (sampling). Names come from the program: every one is
//! printed through [`Clean`], so none can drive the terminal.

use sonde_profile::{Analysis, Mode, Profile};
use sonde_render::fmt::{Clean, count, duration};
use std::path::Path;

const TOP: usize = 5;

pub fn print(profile: &Profile, path: &Path) {
    let mono_lines_hint = sonde_render::mono_without_debug_mode(profile);
    // As `sonde report` shows it by default: native and framework runs folded.
    let profile = &*sonde_profile::view::apply(profile, sonde_profile::view::View::default());
    let analysis = Analysis::new(profile);
    let totals = analysis.totals();
    faults(profile);
    precompiled(profile);
    if profile.run.mode == Mode::Coverage {
        let lines = &profile.coverage.lines;
        let ran = lines.iter().filter(|l| l.hits > 0).count();
        let entered = profile.coverage.managed.iter().filter(|m| m.calls() > 0).count();
        crate::say!(
            "sonde: pid {}: {entered} of {} methods ran; {ran} of {} source lines → {}",
            profile.run.pid,
            count(profile.coverage.managed.len() as u64),
            count(lines.len() as u64),
            Clean(&path.display().to_string())
        );
        return;
    }
    let sampling = profile.run.mode == Mode::Sampling;
    let what = if sampling {
        format!("{} samples", count(totals.total_samples))
    } else {
        format!(
            "{} calls to {} methods",
            count(totals.calls),
            analysis.methods().iter().filter(|m| m.calls > 0).count()
        )
    };
    crate::say!(
        "sonde: pid {}: {what} on {} threads in {} → {}",
        profile.run.pid,
        profile.threads.len(),
        duration(profile.run.wall_ns),
        Clean(&path.display().to_string())
    );
    if mono_lines_hint {
        crate::say!("sonde: no samples by line: {}", sonde_render::MONO_DEBUG_HINT);
    }
    if sampling {
        runtime_work(profile, totals.total_samples);
    }
    // (method, self weight, self time)
    let mut top: Vec<(usize, u64, u64)> = analysis
        .methods()
        .iter()
        .enumerate()
        .map(|(i, m)| (i, if sampling { m.self_samples } else { m.self_ns }, m.self_ns))
        .filter(|&(_, weight, _)| weight > 0)
        .collect();
    top.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    if top.is_empty() {
        crate::say!(
            "sonde: {}",
            if sampling {
                "no samples were taken (did the program run long enough?)"
            } else {
                "no traced method was called (see --include / --all)"
            }
        );
        return;
    }
    let total = if sampling { totals.total_samples } else { totals.total_ns };
    let (label, unit) = if sampling { ("samples", "self") } else { ("calls", "self") };
    crate::say!(
        "{label:>12} {unit:>10} {:>6}  top methods by self {}",
        "self%",
        if sampling { "samples" } else { "time" }
    );
    for &(id, weight, self_ns) in top.iter().take(TOP) {
        let pct = if total == 0 { 0.0 } else { 100.0 * weight as f64 / total as f64 };
        let first = if sampling { count(weight) } else { count(analysis.methods()[id].calls) };
        crate::say!("{first:>12} {:>10} {pct:>5.1}%  {}", duration(self_ns), Clean(&profile.methods[id].name));
    }
}

/// A traced .NET program mapped libraries built with `-finstrument-functions` (`libraries`, as
/// [`sonde_client::launch::instrumented_libraries`] finds them) while `--native-hooks` was off:
/// their functions ran untraced, and one line says what would trace them.
pub fn unhooked(pid: u32, libraries: &[String]) {
    const NAMED: usize = 3;
    if libraries.is_empty() {
        return;
    }
    let names: Vec<String> =
        libraries.iter().take(NAMED).map(|l| Clean(l.rsplit('/').next().unwrap_or(l)).to_string()).collect();
    let more = match libraries.len().saturating_sub(NAMED) {
        0 => String::new(),
        n => format!(" and {n} more"),
    };
    let (names, were) = (names.join(", "), if libraries.len() == 1 { "was" } else { "were" });
    crate::say!(
        "sonde: pid {pid}: {names}{more} {were} built with -finstrument-functions: --native-hooks would trace its functions under their managed callers (docs/NATIVE.md)"
    );
}

/// The runtime's work in one line, when samples named any: `sonde: runtime work: JIT 69.9% (most
/// for Microsoft.CodeAnalysis.CSharp: 41.9%), GC 0.1%`.
fn runtime_work(profile: &Profile, total: u64) {
    let work = sonde_profile::RuntimeWork::new(profile);
    if work.is_empty() || total == 0 {
        return;
    }
    let share = |samples: u64| format!("{:.1}%", 100.0 * samples as f64 / total as f64);
    let mut parts = Vec::new();
    if work.jit.samples > 0 {
        let most = work.jit_by_assembly.first().filter(|a| !a.assembly.is_empty());
        let most = most.map_or(String::new(), |a| format!(" (most for {}: {})", Clean(&a.assembly), share(a.samples)));
        parts.push(format!("JIT {}{most}", share(work.jit.samples)));
    }
    if work.gc.samples > 0 {
        parts.push(format!("GC {}", share(work.gc.samples)));
    }
    crate::say!("sonde: runtime work: {}", parts.join(", "));
}

/// The error simulator in one line: how many faults, how many caught, and the rules that were
/// not applied (`sonde report` lists them all).
fn faults(profile: &Profile) {
    let faults = &profile.events.faults;
    if faults.rules.is_empty() {
        return;
    }
    let thrown = faults.injected.len() as u64 + faults.dropped;
    let uncaught = faults.injected.iter().filter(|f| f.caught_in.is_none()).count();
    let outcome = match uncaught {
        0 => String::new(),
        n => format!(", {n} not caught"),
    };
    let unapplied = faults.rules.iter().filter(|r| r.methods.is_empty() && !r.problems.is_empty()).count();
    let unapplied = match unapplied {
        0 => String::new(),
        n => format!("; {n} rules not applied (sonde report)"),
    };
    crate::say!("sonde: {} faults injected by {} rules{outcome}{unapplied}", count(thrown), faults.rules.len());
}

/// Mono code that ran from precompiled (AOT) images, unseen by tracing and coverage, in one line.
fn precompiled(profile: &Profile) {
    let images = &profile.events.loading.precompiled;
    if images.is_empty() {
        return;
    }
    let names: Vec<&str> = images.iter().map(|p| p.rsplit('/').next().unwrap_or(p)).collect();
    let what = if profile.run.mode == Mode::Coverage { "covered" } else { "traced" };
    crate::say!(
        "sonde: pid {}: code from {} precompiled (AOT) images ran without being {what}: {} (the program's own Mono options turned AOT back on: -O=all or --full-aot)",
        profile.run.pid,
        names.len(),
        Clean(&names.join(", "))
    );
}
