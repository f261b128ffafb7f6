//! `sonde heap`: what holds the memory of a .NET process — a heap snapshot written to a file
//! (`sonde report FILE.heap` reads it again, `sonde diff A.heap B.heap` compares two), with a
//! summary: the types that retain the most, the roots, the top of the dominator tree, and with
//! `--paths TYPE` the retention paths of a type's instances.
//!
//! `--pid PID` attaches to a running CoreCLR process (as `sonde record --pid` does), has the
//! agent force a full blocking collection with the runtime's heap walk (`coreclr/heap.rs` in the
//! agent), and detaches. `-- CMD` starts the program with the agent and takes the snapshot as it
//! exits.

use crate::cli::HeapArgs;
use anyhow::{Context, Result, bail};
use sonde_client::{Options, Recording};
use sonde_heap::text::TextLimits;
use sonde_heap::{Analysis, FileKind, HeapReport, HeapSnapshot, PathIndex, TreeLimits};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long the controller waits for the next piece of a snapshot before giving up on it (the
/// agent gives up after 10 s without the controller reading).
const STALL: Duration = Duration::from_secs(30);

pub fn heap(args: HeapArgs) -> Result<i32> {
    let Some(pid) = args.pid else { bail!("sonde heap -- COMMAND is not supported yet: attach with --pid") };
    let output = args.output.clone().unwrap_or_else(|| PathBuf::from(format!("heap-{pid}.heap")));
    check_output(&output, args.force)?;
    // The agent samples once a second meanwhile: an attach needs a mode, this one costs nothing.
    let mut options = Options { verbose: false, ..Options::sampling(1) };
    options.config.log = args.agent_log.clone();
    let (recording, _) = Recording::attach(pid, &options)?;
    let taken = recording.take_heap(STALL);
    let sessions = recording.finish_sessions(Duration::from_secs(5));
    let errors: Vec<String> = sessions.iter().flat_map(|s| s.errors.iter().cloned()).collect();
    let Some(taken) = taken else {
        bail!("pid {pid} sent no heap snapshot{}", errors.first().map_or(String::new(), |e| format!(" ({e})")));
    };
    let heap = taken.heap.map_err(|e| anyhow::anyhow!("pid {pid}: {e}"))?;
    if taken.malformed > 0 {
        crate::say!("sonde: {} records of the runtime's heap walk were not understood and left out", taken.malformed);
    }
    sonde_heap::save_heap(&output, &heap).with_context(|| format!("cannot write {}", output.display()))?;
    summary(&heap, args.paths.as_deref(), &output)?;
    Ok(0)
}

/// Refuses, before anything runs, an output that is a directory or a file other than a heap
/// snapshot (unless `--force`).
fn check_output(path: &Path, force: bool) -> Result<()> {
    if path.is_dir() {
        bail!("{} is a directory", path.display());
    }
    if path.exists() && !force {
        match sonde_heap::file_kind_of(path) {
            Ok(Some(FileKind::Heap)) => {}
            _ => bail!("{} exists and is not a heap snapshot (--force replaces it)", path.display()),
        }
    }
    Ok(())
}

/// The text report of a snapshot just taken, and where it went.
fn summary(heap: &HeapSnapshot, paths: Option<&str>, output: &Path) -> Result<()> {
    let report = report(heap, paths)?;
    let mut out = std::io::stdout().lock();
    let limits = TextLimits { types: 15, roots: 8, paths: 10 };
    match sonde_heap::text::write_report(&mut out, &report, limits) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        other => other.context("cannot write the summary")?,
    }
    crate::say!("sonde: heap snapshot written to {}", output.display());
    Ok(())
}

/// The report of `heap`, with the retention paths of the type named `paths` (which must exist).
pub fn report(heap: &HeapSnapshot, paths: Option<&str>) -> Result<HeapReport> {
    let groups = match paths {
        Some(name) => {
            let ty = heap.type_named(name).with_context(|| {
                format!("no type named {:?} in the snapshot", sonde_render::fmt::Clean(name).to_string())
            })?;
            Some((name, PathIndex::new(heap).groups(heap, ty)))
        }
        None => None,
    };
    let analysis = Analysis::new(heap, TreeLimits::default());
    Ok(HeapReport::new(heap, &analysis, groups.as_ref().map(|(n, g)| (*n, g.as_slice()))))
}
