//! `sonde heap`: what holds the memory of a .NET process — a heap snapshot written to a file
//! (`sonde report FILE.heap` reads it again, `sonde diff A.heap B.heap` compares two), with a
//! summary: the types that retain the most, the roots, the top of the dominator tree, and with
//! `--paths TYPE` the retention paths of a type's instances.
//!
//! `--pid PID` attaches to a running CoreCLR process (as `sonde record --pid` does), has the
//! agent force a full blocking collection with the runtime's heap walk (`coreclr/heap.rs` in the
//! agent), and detaches. `-- CMD --after SECS` starts the program with the agent and takes the
//! snapshot after that long, while it runs. A recording that runs (`sonde record`) gives one at
//! any moment through its control socket: `sonde snapshot --heap`.
//!
//! Why not at the program's exit: the walk comes through an event session, and CoreCLR ends its
//! event sessions (`EventPipeAdapter::Shutdown`) before it tells a profiler it shuts down. The one
//! notice before that — the loader's enumeration at shutdown, delivered to a session asking for
//! loader events — comes on the exiting thread while it holds what a collection needs: forcing one
//! from there deadlocks the process (tried, 2026-11-28). The profiling API's own walk
//! (`ObjectReferences`) needs background collections off for the whole run.

use crate::cli::{DiffArgs, DiffFormatArg, HeapArgs, ReportArgs};
use anyhow::{Context, Result, bail};
use sonde_client::collector::{Session, TakenHeap};
use sonde_client::control::Served;
use sonde_client::{End, Options, Recording, Signals, Watch};
use sonde_heap::text::TextLimits;
use sonde_heap::{Analysis, FileKind, HeapReport, HeapSnapshot, PathIndex, TreeLimits};
use sonde_render::Format;
use sonde_render::heap_html;
use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::Duration;
use std::time::Instant;

/// How long the controller waits for the next piece of a snapshot before giving up on it (the
/// agent gives up after 10 s without the controller reading).
const STALL: Duration = Duration::from_secs(30);

pub fn heap(args: HeapArgs) -> Result<i32> {
    match args.pid {
        Some(pid) => attached(pid, &args),
        None => launched(&args),
    }
}

/// `--pid`: attach, take it, detach.
fn attached(pid: u32, args: &HeapArgs) -> Result<i32> {
    let output = args.output.clone().unwrap_or_else(|| PathBuf::from(format!("heap-{pid}.heap")));
    check_output(&output, args.force)?;
    let (recording, _) = Recording::attach(pid, &options(args))?;
    let taken = recording.take_heap(STALL);
    let sessions = recording.finish_sessions(Duration::from_secs(5));
    let heap = taken_or_why(taken, pid, &sessions)?;
    sonde_heap::save_heap(&output, &heap).with_context(|| format!("cannot write {}", output.display()))?;
    summary(&heap, args.paths.as_deref(), &output)?;
    Ok(0)
}

/// `-- COMMAND`: run it with the agent, take the snapshot after `--after` seconds (or at once when
/// the program ends sooner: then there is none, see the module doc), let the program run on to
/// its end; sonde exits with the program's status (as `sonde record` does).
fn launched(args: &HeapArgs) -> Result<i32> {
    let Some(after) = args.after else {
        bail!(
            "sonde heap -- COMMAND needs --after SECS: CoreCLR stops its event sessions before a profiler \
             hears of the exit, so a snapshot is taken while the program runs (or use sonde record and \
             sonde snapshot --heap)"
        );
    };
    let output = args.output.clone().unwrap_or_else(|| PathBuf::from("heap.heap"));
    check_output(&output, args.force)?;
    let signals = Signals::install()?;
    let mut recording = Recording::launch(&args.command, &options(args))?;
    let pid = recording.pid();
    let stop = AtomicBool::new(false);
    let until = Some(Instant::now() + Duration::from_secs_f64(after));
    let watch = Watch { signals: &signals, stop: &stop, wake: None, until };
    let end = recording.watch(watch, |_| {})?;
    let taken = matches!(end, End::Stopped).then(|| recording.take_heap(STALL));
    let mut child = recording.take_child().context("the program sonde started is not there")?;
    let sessions = recording.finish_sessions(Duration::from_secs(5));
    let written = match taken {
        Some(taken) => taken_or_why(taken, pid, &sessions).and_then(|heap| {
            sonde_heap::save_heap(&output, &heap).with_context(|| format!("cannot write {}", output.display()))?;
            summary(&heap, args.paths.as_deref(), &output)
        }),
        None => Err(anyhow::anyhow!("process {pid} ended before --after {after}s: no heap snapshot")),
    };
    if let Err(e) = &written {
        // Now, not after the program's end, which may be far.
        crate::say!("sonde: {}", sonde_render::fmt::Clean(&crate::chain(e)));
    }
    let status = match end {
        End::Exited(status) => status,
        _ => child.wait().context("cannot wait for the program")?,
    };
    Ok(match written {
        Ok(()) => status.code().unwrap_or_else(|| 128 + status.signal().unwrap_or(0)),
        Err(_) => 2,
    })
}

/// `sonde snapshot --heap`: a heap snapshot of a running recording's process, written to `to`
/// (on the recording's control thread).
pub fn snapshot(served: &Served, to: &Path, force: bool) -> Result<String> {
    check_output(to, force)?;
    let taken = served.agents.take_heap(served.ns_pid, STALL);
    let heap = taken_or_why(taken, served.pid, &[])?;
    sonde_heap::save_heap(to, &heap).with_context(|| format!("cannot write {}", to.display()))?;
    Ok(format!(
        "wrote {}: {} objects of process {} (paused {:.1} ms)",
        to.display(),
        sonde_render::fmt::count(heap.objects() as u64),
        served.pid,
        heap.run.pause_ns as f64 / 1e6
    ))
}

/// The agent samples once a second meanwhile: a recording needs a mode, this one costs nothing.
fn options(args: &HeapArgs) -> Options {
    let mut options = Options { verbose: false, ..Options::sampling(1) };
    options.config.log = args.agent_log.clone();
    options
}

fn taken_or_why(taken: Option<TakenHeap>, pid: u32, sessions: &[Session]) -> Result<HeapSnapshot> {
    let Some(taken) = taken else { bail!("process {pid} sent no heap snapshot{}", first_error(sessions)) };
    if taken.malformed > 0 {
        crate::say!("sonde: {} records of the runtime's heap walk were not understood and left out", taken.malformed);
    }
    taken.heap.map_err(|e| anyhow::anyhow!("process {pid}: {e}"))
}

fn first_error(sessions: &[Session]) -> String {
    sessions.iter().flat_map(|s| &s.errors).next().map_or(String::new(), |e| format!(" ({e})"))
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

/// Whether `path` holds a heap snapshot (by its first bytes).
pub fn is_heap_file(path: &Path) -> bool {
    matches!(sonde_heap::file_kind_of(path), Ok(Some(FileKind::Heap)))
}

/// `sonde report FILE.heap [--paths TYPE] [--format text|json|html]`.
pub fn report_file(args: &ReportArgs) -> Result<()> {
    let heap = sonde_heap::load_heap(&args.file).with_context(|| format!("cannot read {}", args.file.display()))?;
    let report = report(&heap, args.paths.as_deref())?;
    let mut buf = Vec::new();
    match args.format {
        Format::Text => sonde_heap::text::write_report(&mut buf, &report, TextLimits::default())?,
        Format::Json => {
            buf = report.to_json().into_bytes();
            buf.push(b'\n');
        }
        Format::Html => {
            // After `report`, whose analysis is dropped: the paths' walk then adds to the
            // snapshot alone (sonde_heap's design constraints).
            let paths = heap_html::type_paths(&heap, &report, heap_html::PATH_TYPES, heap_html::PATHS_PER_TYPE);
            heap_html::write_heap_html(&mut buf, &report, &paths, &args.file.to_string_lossy())?;
        }
        other => bail!("a heap snapshot renders as text, json or html, not {other:?}"),
    }
    emit(&buf, args.output.as_deref(), "the report")
}

/// `sonde diff A.heap B.heap`: per type, both snapshots and the change, largest growth first, and
/// for the types that grew most, where their new instances are held.
pub fn diff_files(args: &DiffArgs) -> Result<()> {
    let load = |path: &Path| sonde_heap::load_heap(path).with_context(|| format!("cannot read {}", path.display()));
    let (base, new) = (load(&args.base)?, load(&args.new)?);
    let (base_report, new_report) = (report(&base, None)?, report(&new, None)?);
    // The page has room for more suspects than a terminal.
    let (types, paths) = if matches!(args.format, DiffFormatArg::Html) { (10, 10) } else { (3, 5) };
    let diff = sonde_heap::HeapDiff::new(&base_report, &new_report).with_suspects(&base, &new, types, paths);
    let mut buf = Vec::new();
    match args.format {
        DiffFormatArg::Text => sonde_heap::text::write_diff(&mut buf, &diff, 25)?,
        DiffFormatArg::Json => {
            buf = diff.to_json().into_bytes();
            buf.push(b'\n');
        }
        DiffFormatArg::Html => {
            heap_html::write_heap_diff_html(&mut buf, &diff, &args.base.to_string_lossy(), &args.new.to_string_lossy())?
        }
    }
    emit(&buf, args.output.as_deref(), "the diff")
}

fn emit(buf: &[u8], output: Option<&Path>, what: &str) -> Result<()> {
    match output {
        Some(path) => std::fs::write(path, buf).with_context(|| format!("cannot write {}", path.display())),
        None => match std::io::stdout().lock().write_all(buf) {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
            other => other.with_context(|| format!("cannot write {what}")),
        },
    }
}
