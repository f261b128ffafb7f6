//! `sonde report FILE --lines METHOD`: where in a method its samples fell, line by line, with the
//! source beside the counts when the file is readable here.

use std::io::{self, Write};

use sonde_profile::{Analysis, Profile};

use super::View;
use crate::fmt::{Clean, count, percent};

/// The methods `query` names: those whose name is `query`, else those whose name ends with
/// `.query` or `+query` (a method or `Type.Method` without its namespace), else those whose name
/// contains it.
pub fn matching(profile: &Profile, query: &str) -> Vec<u32> {
    let ids = |keep: &dyn Fn(&str) -> bool| -> Vec<u32> {
        // The runtime's own frames (`[jit] Lines.Work`, wrappers) have no lines of their own:
        // `--lines Work` means the method, not the frame of its compilation.
        (0..profile.methods.len() as u32)
            .filter(|&id| sonde_profile::Kind::of(&profile.methods[id as usize].name) != sonde_profile::Kind::Runtime)
            .filter(|&id| keep(&profile.methods[id as usize].name) || keep(&profile.display_name(id)))
            .collect()
    };
    let exact = ids(&|name| name == query);
    if !exact.is_empty() {
        return exact;
    }
    let suffix = ids(&|name| name.strip_suffix(query).is_some_and(|head| head.ends_with('.') || head.ends_with('+')));
    if !suffix.is_empty() {
        return suffix;
    }
    ids(&|name| name.contains(query))
}

/// Writes the line table of each method `query` names (see [`matching`]); false when it names
/// none.
pub fn write(profile: &Profile, query: &str, out: &mut dyn Write) -> io::Result<bool> {
    crate::check(profile)?;
    let methods = matching(profile, query);
    if methods.is_empty() {
        return Ok(false);
    }
    let analysis = Analysis::new(profile);
    let view = View::new(profile, &analysis);
    let mut out = io::BufWriter::new(out);
    for (i, &method) in methods.iter().enumerate() {
        if i > 0 {
            writeln!(out)?;
        }
        method_lines(&mut out, &view, method)?;
    }
    out.flush()?;
    Ok(true)
}

/// What Mono needs for samples by line (`docs/SAMPLING.md`, "Source lines").
pub const MONO_DEBUG_HINT: &str = "Mono maps sampled code back to lines only in its debug mode: run the program \
     with `mono --debug` (or MONO_ENV_OPTIONS=--debug) for samples by line";

/// Whether `profile` was sampled on Mono outside its debug mode: sampled methods have symbols
/// (a first line), yet not one sample is by line — in debug mode they would be.
pub fn mono_without_debug_mode(profile: &Profile) -> bool {
    if profile.run.runtime.kind != "mono" || profile.run.mode != sonde_profile::Mode::Sampling {
        return false;
    }
    let sources = &profile.sources;
    sources.lines.is_empty()
        && profile.nodes.iter().any(|n| n.total_samples > 0 && sources.method_line(n.method).is_some())
}

/// The largest source file shown beside the counts.
const MAX_SOURCE: u64 = 4 << 20;

/// The lines of the source file `path`, when it is a readable regular file of C#, F# or Visual
/// Basic source of a sane size: the path comes from the profiled program's symbols, so nothing
/// else is ever read (not a device, not `/etc/shadow` renamed in a PDB).
pub fn source_lines(path: &str) -> Option<Vec<String>> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    if ![".cs", ".fs", ".vb"].iter().any(|ext| path.to_ascii_lowercase().ends_with(ext)) {
        return None;
    }
    // Checked on the open file (a FIFO opened without O_NONBLOCK would block the report).
    let file = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path).ok()?;
    let meta = file.metadata().ok()?;
    if !meta.is_file() || meta.len() > MAX_SOURCE {
        return None;
    }
    let mut text = Vec::new();
    file.take(MAX_SOURCE).read_to_end(&mut text).ok()?;
    Some(String::from_utf8_lossy(&text).lines().map(str::to_owned).collect())
}

fn method_lines(out: &mut impl Write, view: &View, method: u32) -> io::Result<()> {
    let profile = view.profile;
    let sources = &profile.sources;
    let stats = &view.analysis.methods()[method as usize];
    write!(out, "Lines of {}", view.name(method))?;
    match sources.method_line(method) {
        Some(at) => writeln!(out, " ({}:{})", Clean(sources.file(at)), at.line)?,
        None => writeln!(out)?,
    }
    let lines = sources.lines_of(method);
    if lines.is_empty() {
        let why = if profile.run.mode == sonde_profile::Mode::Tracing {
            "tracing counts calls, not lines: record with --mode sampling for samples by line"
        } else if sources.method_line(method).is_none() {
            "no symbols were found for its module when it was recorded (a .pdb or .mdb beside it)"
        } else if mono_without_debug_mode(profile) {
            MONO_DEBUG_HINT
        } else {
            "no sample fell in it"
        };
        return writeln!(out, "  no samples by line: {why}");
    }
    writeln!(out, "  {} self samples, {} in all; by line:", count(stats.self_samples), count(stats.total_samples))?;
    writeln!(out, "{:>7}  {:>10}  {:>7}  {:>10}  {:>7}  source", "line", "self", "self %", "total", "total %")?;
    let mut file = u32::MAX;
    let mut text: Option<Vec<String>> = None;
    for l in lines {
        if l.at.file != file {
            file = l.at.file;
            text = source_lines(sources.file(l.at));
            writeln!(out, "  {}", Clean(sources.file(l.at)))?;
        }
        let source = text
            .as_ref()
            .and_then(|t| t.get((l.at.line as usize).checked_sub(1)?))
            .map_or(String::new(), |s| Clean(s.trim()).to_string());
        writeln!(
            out,
            "{:>7}  {:>10}  {:>7}  {:>10}  {:>7}  {}",
            l.at.line,
            count(l.self_samples),
            percent(l.self_samples, stats.self_samples),
            count(l.total_samples),
            percent(l.total_samples, stats.total_samples),
            source
        )?;
    }
    Ok(())
}
