//! The plain text report of a snapshot and of a diff, made from the JSON structs.
//!
//! Names come from the profiled program: every one goes through [`Clean`], the one every report
//! uses (`sonde_profile::clean`, below both this crate and the renderers, which draw the heap
//! pages from this crate).

use std::io::{self, Write};

use crate::diff::HeapDiff;
use crate::report::{DominatorRow, HeapReport, PathRow, StepRow};

/// How many rows of each part the text report shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TextLimits {
    pub types: usize,
    pub roots: usize,
    pub paths: usize,
}

impl Default for TextLimits {
    fn default() -> Self {
        TextLimits { types: 25, roots: 10, paths: 10 }
    }
}

pub use sonde_profile::clean::{Clean, unsafe_in_terminal};

/// Writes the text report of `report`: totals, types by retained size, roots, the top
/// dominators as a tree, and the paths when the report has them.
pub fn write_report(mut w: impl Write, report: &HeapReport, limits: TextLimits) -> io::Result<()> {
    writeln!(
        w,
        "Heap of pid {} ({}): {} objects, {} reachable from the roots; the program paused {}",
        report.pid,
        Clean(&report.runtime),
        count(report.objects),
        bytes(report.bytes),
        duration(report.pause_ns)
    )?;
    if report.unreachable_objects > 0 {
        writeln!(
            w,
            "  left out: {} unreachable objects ({})",
            count(report.unreachable_objects),
            bytes(report.unreachable_bytes)
        )?;
    }
    if report.missing_references > 0 {
        writeln!(w, "  {} references to objects missing from the snapshot", count(report.missing_references))?;
    }

    writeln!(w, "\nTypes by retained size\n{:>12} {:>12} {:>12}  type", "retained", "bytes", "count")?;
    for t in report.types.iter().take(limits.types) {
        writeln!(
            w,
            "{:>12} {:>12} {:>12}  {}",
            bytes(t.retained_bytes),
            bytes(t.bytes),
            count(t.count),
            Clean(&t.name)
        )?;
    }
    more(&mut w, report.types.len(), limits.types, "types")?;

    writeln!(w, "\nRoots\n{:>12} {:>12}  root", "bytes", "objects")?;
    for r in report.roots.iter().take(limits.roots) {
        writeln!(w, "{:>12} {:>12}  {}", bytes(r.bytes), count(r.count), root_label(&r.kind, &r.name))?;
    }
    more(&mut w, report.roots.len(), limits.roots, "roots")?;

    writeln!(w, "\nTop dominators (retained, own bytes)")?;
    for node in &report.dominators {
        write_dominator(&mut w, node, 1)?;
    }

    if let (Some(paths), Some(ty)) = (&report.paths, &report.paths_type) {
        let total: u64 = paths.iter().map(|p| p.objects).sum();
        writeln!(w, "\nShortest paths from the roots to {} ({} objects)", Clean(ty), count(total))?;
        if paths.is_empty() {
            writeln!(w, "  no reachable instance")?;
        }
        for p in paths.iter().take(limits.paths) {
            writeln!(w, "{:>12} {:>12}  {}", bytes(p.bytes), count(p.objects), path_text(p))?;
        }
        more(&mut w, paths.len(), limits.paths, "paths")?;
    }
    Ok(())
}

fn write_dominator(w: &mut impl Write, node: &DominatorRow, depth: usize) -> io::Result<()> {
    writeln!(
        w,
        "{:indent$}{} {} ({})",
        "",
        bytes(node.retained_bytes),
        Clean(&node.ty),
        bytes(node.bytes),
        indent = depth * 2
    )?;
    for child in &node.children {
        write_dominator(w, child, depth + 1)?;
    }
    Ok(())
}

/// `static Acme.Cache.Items → Dictionary<string, Acme.Session>._entries → Entry[] → Acme.Session`:
/// each object step followed by the field the next step is reached through.
pub fn path_text(path: &PathRow) -> String {
    steps_text(&path.steps)
}

/// [`path_text`] of a path's steps.
pub fn steps_text(steps: &[StepRow]) -> String {
    let mut parts: Vec<String> = Vec::new();
    for (i, step) in steps.iter().enumerate() {
        let mut part = match (&step.root_kind, &step.root_name) {
            (Some(kind), Some(name)) => root_label(kind, name),
            _ => Clean(step.ty.as_deref().unwrap_or("?")).to_string(),
        };
        if step.repeated {
            part.push_str(" (repeated)");
        }
        if let Some(field) = steps.get(i + 1).and_then(|next| next.field.as_deref()) {
            part = format!("{part}.{}", Clean(field));
        }
        if step.more {
            part.push_str(" → …");
        }
        parts.push(part);
    }
    parts.join(" → ")
}

/// A root as the text shows it: a static field as `static Acme.Cache.Items`; the others by their
/// name alone when it says the kind already (`weak handle`, `stack: Acme.Program.Main`), else
/// both.
fn root_label(kind: &str, name: &str) -> String {
    let kind_words = kind.replace('_', " ");
    if kind != "static"
        && (name.starts_with(&kind_words) || (kind == "finalizer_queue" && name.starts_with("finalizer")))
    {
        Clean(name).to_string()
    } else {
        format!("{kind_words} {}", Clean(name))
    }
}

/// Writes the text report of a diff: the types that changed, the largest growth first.
pub fn write_diff(mut w: impl Write, diff: &HeapDiff, limit: usize) -> io::Result<()> {
    writeln!(w, "{:>12} {:>12} {:>12}  type (count: base → new)", "bytes", "count", "retained")?;
    let changed: Vec<_> =
        diff.types.iter().filter(|t| t.count_change != 0 || t.bytes_change != 0 || t.retained_change != 0).collect();
    for t in changed.iter().take(limit) {
        writeln!(
            w,
            "{:>12} {:>12} {:>12}  {} ({} → {})",
            signed_bytes(t.bytes_change),
            signed(t.count_change),
            signed_bytes(t.retained_change),
            Clean(&t.name),
            count(t.base_count),
            count(t.new_count)
        )?;
    }
    if changed.is_empty() {
        writeln!(w, "  no type changed")?;
    }
    more(&mut w, changed.len(), limit, "changed types")?;
    for suspect in &diff.suspects {
        writeln!(
            w,
            "\nWhere the {} new {} are held (objects: base → new)",
            signed(suspect.count_change),
            Clean(&suspect.name)
        )?;
        for p in &suspect.paths {
            writeln!(
                w,
                "  {:>10}  {}  ({} → {})",
                signed(p.objects_change),
                steps_text(&p.steps),
                count(p.base_objects),
                count(p.new_objects)
            )?;
        }
    }
    Ok(())
}

fn more(w: &mut impl Write, total: usize, shown: usize, what: &str) -> io::Result<()> {
    if total > shown {
        writeln!(w, "  … {} more {what}", count((total - shown) as u64))?;
    }
    Ok(())
}

/// A count with thousands separators.
fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn signed(n: i64) -> String {
    let sign = if n > 0 {
        "+"
    } else if n < 0 {
        "-"
    } else {
        ""
    };
    format!("{sign}{}", count(n.unsigned_abs()))
}

/// A size in bytes: `512 B`, `1.5 MB` (powers of 1024, one decimal), as the profile reports.
fn bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["KB", "MB", "GB", "TB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut value = n as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

fn signed_bytes(n: i64) -> String {
    let sign = if n > 0 {
        "+"
    } else if n < 0 {
        "-"
    } else {
        ""
    };
    format!("{sign}{}", bytes(n.unsigned_abs()))
}

fn duration(ns: u64) -> String {
    match ns {
        0..1_000_000 => format!("{:.1} µs", ns as f64 / 1e3),
        1_000_000..1_000_000_000 => format!("{:.1} ms", ns as f64 / 1e6),
        _ => format!("{:.2} s", ns as f64 / 1e9),
    }
}
