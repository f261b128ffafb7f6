//! `sonde diff BASE NEW`: two runs compared ([`sonde_profile::diff`]) as text, as the JSON
//! contract `sonde.diff/1`, or as one HTML page — the change table and a differential flame
//! graph (the new run's shape; red where a stack grew, blue where it shrank, by how much).
//!
//! Names from the profiles are untrusted: the text goes through [`Clean`], the JSON through
//! serde, the page's table through HTML escaping, and the flame graph (inferno's SVG, which
//! escapes its names) sits in a sandboxed frame.

use std::collections::HashMap;
use std::io::{self, Write};

use serde::Serialize;
use sonde_profile::Profile;
use sonde_profile::diff::{Diff, MethodDiff, Normalize, Renamed, Side, Weight, Z_SIGNIFICANT};

use crate::collapsed::FoldedStacks;
use crate::flamegraph::MAX_FLAMEGRAPH_STACK_BYTES;
use crate::fmt::{Clean, command_line, count, duration, xml_escape};
use crate::stacks::too_large;

/// The schema name of the diff's JSON.
pub const DIFF_SCHEMA: &str = "sonde.diff/1";
/// Rows of the text table (the JSON has every method).
const TEXT_ROWS: usize = 40;
/// Rows of the page's table.
const HTML_ROWS: usize = 1000;

/// How `sonde diff` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiffFormat {
    Text,
    Json,
    Html,
}

/// Writes the comparison of `base` and `new` in `format`.
pub fn write_diff(
    base: &Profile,
    new: &Profile,
    normalize: Normalize,
    format: DiffFormat,
    out: &mut dyn Write,
) -> io::Result<()> {
    crate::check(base)?;
    crate::check(new)?;
    let diff = Diff::new(base, new, normalize);
    match format {
        DiffFormat::Text => text(base, new, &diff, out),
        DiffFormat::Json => json(base, new, &diff, out),
        DiffFormat::Html => html(base, new, &diff, out),
    }
}

/// A figure in the diff's weight.
fn figure(diff: &Diff, w: f64) -> String {
    match diff.weight {
        Weight::Ns => duration(w.round().max(0.0) as u64),
        Weight::Samples => count(w.round().max(0.0) as u64),
    }
}

/// A change, signed.
fn change(diff: &Diff, w: f64) -> String {
    let sign = if w > 0.0 {
        "+"
    } else if w < 0.0 {
        "−"
    } else {
        "±"
    };
    format!("{sign}{}", figure(diff, w.abs()))
}

fn calls_text(m: &MethodDiff) -> String {
    let (b, n) = (m.base.map_or(0, |s| s.calls), m.new.map_or(0, |s| s.calls));
    let d = m.calls_change();
    match d {
        0 => count(n),
        d if d > 0 => format!("{} → {} (+{})", count(b), count(n), count(d as u64)),
        d => format!("{} → {} (−{})", count(b), count(n), count(d.unsigned_abs() as u64)),
    }
}

/// Whether a row says anything: a method in one run only, or whose figures changed.
fn changed(m: &MethodDiff) -> bool {
    m.status() != "both" || m.self_change() != 0.0 || m.total_change() != 0.0 || m.calls_change() != 0
}

fn scale_line(diff: &Diff) -> String {
    match diff.normalize {
        Normalize::Total => format!(
            "by total: the base's {} scaled ×{:.3} to the new run's {}",
            figure(diff, diff.base_total as f64),
            diff.base_scale,
            figure(diff, diff.new_total as f64)
        ),
        Normalize::None => {
            format!("none: base {}, new {}", figure(diff, diff.base_total as f64), figure(diff, diff.new_total as f64))
        }
    }
}

/// What matching the renamed program's methods by name means, in one line.
fn renamed_line(r: &Renamed) -> String {
    format!(
        "the program's assembly is {} in the base and {} in the new run: its methods are matched by type and method name ({} in both)",
        r.base,
        r.new,
        count(r.matched as u64)
    )
}

fn text(base: &Profile, new: &Profile, diff: &Diff, out: &mut dyn Write) -> io::Result<()> {
    let mut out = io::BufWriter::new(out);
    writeln!(out, "Sonde diff")?;
    writeln!(out, "  base         {} ({})", Clean(&command_line(&base.run.command)), base.run.mode.as_str())?;
    writeln!(out, "  new          {} ({})", Clean(&command_line(&new.run.command)), new.run.mode.as_str())?;
    writeln!(out, "  weights      {}", if diff.weight == Weight::Ns { "time" } else { "samples" })?;
    writeln!(out, "  normalized   {}", scale_line(diff))?;
    if let Some(r) = &diff.renamed {
        writeln!(out, "  matched      {}", Clean(&renamed_line(r)))?;
    }
    if diff.sampled {
        writeln!(
            out,
            "  noise        two-proportion z-test on self and on total samples: a change is real when |z| ≥ {Z_SIGNIFICANT} (two-sided p < 0.001)"
        )?;
    }
    let rows: Vec<&MethodDiff> = diff.methods.iter().filter(|m| changed(m)).collect();
    let what = if diff.weight == Weight::Ns { "time" } else { "samples" };
    writeln!(out, "\nMethods by change in {what}, largest first (self or total)")?;
    if rows.is_empty() {
        writeln!(out, "  no change")?;
    } else {
        let calls_col = if diff.traced { "  calls (base → new)" } else { "" };
        let noise_col = if diff.sampled { "  noise?" } else { "" };
        writeln!(
            out,
            "{:>12} {:>12} {:>12} {:>12}{calls_col}{noise_col}  method",
            "base self", "new self", "self change", "total change"
        )?;
        for m in rows.iter().take(TEXT_ROWS) {
            let side = |s: Option<Side>| s.map_or_else(|| "-".to_string(), |s| figure(diff, s.self_w));
            let mut line = format!(
                "{:>12} {:>12} {:>12} {:>12}",
                side(m.base),
                side(m.new),
                change(diff, m.self_change()),
                change(diff, m.total_change())
            );
            if diff.traced {
                line.push_str(&format!("  {:>19}", calls_text(m)));
            }
            if diff.sampled {
                line.push_str(match m.significant() {
                    Some(true) => "  real  ",
                    Some(false) => "  noise ",
                    None => "        ",
                });
            }
            let status = match m.status() {
                "appeared" => "  [new]",
                "vanished" => "  [gone]",
                _ => "",
            };
            writeln!(out, "{line}  {}{status}", Clean(&m.name))?;
        }
        if rows.len() > TEXT_ROWS {
            writeln!(out, "  … and {} more (sonde diff --format json)", rows.len() - TEXT_ROWS)?;
        }
    }
    let appeared = diff.methods.iter().filter(|m| m.status() == "appeared").count();
    let vanished = diff.methods.iter().filter(|m| m.status() == "vanished").count();
    let unchanged = diff.methods.len() - rows.len();
    writeln!(out, "\n{appeared} methods appeared, {vanished} vanished, {unchanged} unchanged")?;
    out.flush()
}

#[derive(Serialize)]
struct JsonDiff<'a> {
    schema: &'static str,
    weight: &'static str,
    normalize: &'static str,
    base_scale: f64,
    base: RunView<'a>,
    new: RunView<'a>,
    noise_test: Option<NoiseView>,
    /// Added to `sonde.diff/1`: the program's assembly renamed between the runs, its methods
    /// matched by name (null otherwise).
    program_renamed: Option<RenamedView<'a>>,
    methods: Vec<MethodView<'a>>,
}

#[derive(Serialize)]
struct RenamedView<'a> {
    base: &'a str,
    new: &'a str,
    matched: usize,
}

#[derive(Serialize)]
struct RunView<'a> {
    command: &'a [String],
    mode: &'static str,
    runtime: &'a str,
    total: u64,
}

#[derive(Serialize)]
struct NoiseView {
    test: &'static str,
    z_threshold: f64,
}

#[derive(Serialize)]
struct MethodView<'a> {
    name: &'a str,
    assembly: &'a str,
    signature: &'a str,
    status: &'static str,
    base: Option<SideView>,
    new: Option<SideView>,
    self_change: f64,
    total_change: f64,
    calls_change: Option<i128>,
    z: Option<f64>,
    z_total: Option<f64>,
    significant: Option<bool>,
}

#[derive(Serialize)]
struct SideView {
    #[serde(rename = "self")]
    self_w: f64,
    total: f64,
    raw_self: u64,
    raw_total: u64,
    calls: u64,
    self_samples: u64,
    total_samples: u64,
}

fn side_view(s: Option<Side>) -> Option<SideView> {
    s.map(|s| SideView {
        self_w: s.self_w,
        total: s.total_w,
        raw_self: s.raw_self,
        raw_total: s.raw_total,
        calls: s.calls,
        self_samples: s.self_samples,
        total_samples: s.total_samples,
    })
}

fn run_view(p: &Profile, total: u64) -> RunView<'_> {
    RunView { command: &p.run.command, mode: p.run.mode.as_str(), runtime: &p.run.runtime.kind, total }
}

fn json(base: &Profile, new: &Profile, diff: &Diff, out: &mut dyn Write) -> io::Result<()> {
    let report = JsonDiff {
        schema: DIFF_SCHEMA,
        weight: if diff.weight == Weight::Ns { "ns" } else { "samples" },
        normalize: diff.normalize.as_str(),
        base_scale: diff.base_scale,
        base: run_view(base, diff.base_total),
        new: run_view(new, diff.new_total),
        noise_test: diff.sampled.then_some(NoiseView {
            test: "two-proportion z-test on self and on total samples",
            z_threshold: Z_SIGNIFICANT,
        }),
        program_renamed: diff.renamed.as_ref().map(|r| RenamedView { base: &r.base, new: &r.new, matched: r.matched }),
        methods: diff
            .methods
            .iter()
            .map(|m| MethodView {
                name: &m.name,
                assembly: &m.assembly,
                signature: &m.signature,
                status: m.status(),
                base: side_view(m.base),
                new: side_view(m.new),
                self_change: m.self_change(),
                total_change: m.total_change(),
                calls_change: diff.traced.then(|| m.calls_change()),
                z: m.z,
                z_total: m.z_total,
                significant: m.significant(),
            })
            .collect(),
    };
    let mut out = io::BufWriter::new(out);
    serde_json::to_writer_pretty(&mut out, &report).map_err(io::Error::from)?;
    out.write_all(b"\n")?;
    out.flush()
}

/// `text` for a `data:` URL inside an attribute: every byte but letters, digits and `-_.~ /:;=,`
/// as `%XX`.
fn percent_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 3 / 2);
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~ /:;=,".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The differential flame graph's SVG: the new run's stacks, each with the base's weight
/// (normalised like the table) and the new one's; inferno colours by the difference.
fn differential_svg(base: &Profile, new: &Profile, diff: &Diff) -> io::Result<Vec<u8>> {
    let mut stacks: HashMap<String, (f64, u64)> = HashMap::new();
    let mut bytes = 0u64;
    for (profile, is_base) in [(base, true), (new, false)] {
        let folded = FoldedStacks::new(profile);
        bytes += folded.output_len();
        if bytes > MAX_FLAMEGRAPH_STACK_BYTES {
            return Err(too_large("diff flame graph", bytes, MAX_FLAMEGRAPH_STACK_BYTES, "bytes of folded stacks"));
        }
        folded.for_each(|stack, w| {
            let entry = stacks.entry(stack.to_string()).or_default();
            if is_base {
                entry.0 += w as f64 * diff.base_scale;
            } else {
                entry.1 = entry.1.saturating_add(w);
            }
            Ok(())
        })?;
    }
    let mut lines: Vec<String> =
        stacks.into_iter().map(|(stack, (b, n))| format!("{stack} {} {n}", b.round() as u64)).collect();
    lines.sort();
    let mut svg = Vec::new();
    if lines.iter().all(|l| l.ends_with(" 0")) {
        svg.extend_from_slice(b"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"600\" height=\"40\"><text x=\"10\" y=\"25\">The new run has no stack with any weight.</text></svg>");
        return Ok(svg);
    }
    let mut options = inferno::flamegraph::Options::default();
    options.title = "Sonde diff: the new run, red where it grew, blue where it shrank".to_string();
    options.subtitle = Some(format!("normalized {}", diff.normalize.as_str()));
    options.count_name = if diff.weight == Weight::Ns { "ns" } else { "samples" }.to_string();
    inferno::flamegraph::from_lines(&mut options, lines.iter().map(String::as_str), &mut svg)?;
    Ok(svg)
}

fn html(base: &Profile, new: &Profile, diff: &Diff, out: &mut dyn Write) -> io::Result<()> {
    let svg = differential_svg(base, new, diff)?;
    let svg = String::from_utf8_lossy(&svg);
    let mut out = io::BufWriter::new(out);
    let title = format!("Sonde diff: {}", command_line(&new.run.command));
    write!(
        out,
        concat!(
            "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">",
            "<title>{}</title><style>",
            "body{{font:14px system-ui,sans-serif;margin:20px;color:#1f2328}} table{{border-collapse:collapse;width:100%}}",
            "th,td{{padding:3px 8px;border-bottom:1px solid #e2e5e9;text-align:right;white-space:nowrap}}",
            "td.m,th.m{{text-align:left;font-family:monospace;white-space:normal}} .up{{color:#c0392b}} .down{{color:#1f5fbf}}",
            ".noise{{color:#888}} iframe{{width:100%;height:640px;border:1px solid #e2e5e9}} dl{{display:grid;grid-template-columns:max-content auto;gap:2px 12px}}",
            "</style></head><body>\n<h1>Sonde diff</h1>\n<dl>"
        ),
        xml_escape(&title)
    )?;
    let row = |out: &mut io::BufWriter<&mut dyn Write>, k: &str, v: &str| {
        writeln!(out, "<dt>{k}</dt><dd>{}</dd>", xml_escape(v))
    };
    row(&mut out, "base", &format!("{} ({})", command_line(&base.run.command), base.run.mode.as_str()))?;
    row(&mut out, "new", &format!("{} ({})", command_line(&new.run.command), new.run.mode.as_str()))?;
    row(&mut out, "normalized", &scale_line(diff))?;
    if let Some(r) = &diff.renamed {
        row(&mut out, "matched", &renamed_line(r))?;
    }
    if diff.sampled {
        row(
            &mut out,
            "noise",
            &format!("two-proportion z-test on self and on total samples: a change is real when |z| ≥ {Z_SIGNIFICANT}"),
        )?;
    }
    writeln!(out, "</dl>\n<h2>Differential flame graph</h2>")?;
    // Inferno's SVG (click to zoom, search) as a document of its own in a sandboxed frame: its
    // script runs there, in an opaque origin, with no access to this page.
    writeln!(
        out,
        "<iframe id=\"flame\" sandbox=\"allow-scripts\" title=\"differential flame graph\" src=\"data:image/svg+xml;charset=utf-8,{}\"></iframe>",
        percent_encode(&svg)
    )?;
    writeln!(out, "<h2>Methods by change, largest first (self or total)</h2>\n<table id=\"changes\"><thead><tr>")?;
    write!(out, "<th>base self</th><th>new self</th><th>self change</th><th>total change</th>")?;
    if diff.traced {
        write!(out, "<th>calls (base → new)</th>")?;
    }
    if diff.sampled {
        write!(out, "<th>z</th>")?;
    }
    writeln!(out, "<th class=\"m\">method</th></tr></thead><tbody>")?;
    for m in diff.methods.iter().filter(|m| changed(m)).take(HTML_ROWS) {
        let side = |s: Option<Side>| s.map_or_else(|| "-".to_string(), |s| figure(diff, s.self_w));
        let moved = if m.self_change() != 0.0 { m.self_change() } else { m.total_change() };
        let class = match (m.significant(), moved) {
            (Some(false), _) => "noise",
            (_, c) if c > 0.0 => "up",
            (_, c) if c < 0.0 => "down",
            _ => "",
        };
        write!(
            out,
            "<tr class=\"{class}\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td>",
            side(m.base),
            side(m.new),
            xml_escape(&change(diff, m.self_change())),
            xml_escape(&change(diff, m.total_change()))
        )?;
        if diff.traced {
            write!(out, "<td>{}</td>", xml_escape(&calls_text(m)))?;
        }
        if diff.sampled {
            write!(out, "<td>{}</td>", m.z_max().map_or(String::new(), |z| format!("{z:.1}")))?;
        }
        let status = match m.status() {
            "appeared" => " [new]",
            "vanished" => " [gone]",
            _ => "",
        };
        writeln!(out, "<td class=\"m\">{}{status}</td></tr>", xml_escape(&m.name))?;
    }
    writeln!(out, "</tbody></table>\n</body></html>")?;
    out.flush()
}
