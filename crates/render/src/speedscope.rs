//! `--format speedscope`: speedscope's file format
//! (<https://www.speedscope.app/file-format-schema.json>), opened by dropping the file on
//! speedscope.app or with `speedscope FILE` from its npm package.
//!
//! * One shared frame per method (frame index = method id): the method name, and its module as
//!   the `file` speedscope shows in the tooltip.
//! * Profiles of type `"sampled"` with weights: every call-tree node with a non-zero weight is
//!   one stack (frame indices root first) weighing its self time in nanoseconds for tracing, its
//!   self samples (unit `"none"`) for sampling. Weighted stacks are how speedscope takes
//!   aggregated data; its "left heavy" and "sandwich" views are exact, and the "time order" view
//!   shows the call tree in node order (a tracing profile keeps no timeline).
//! * The first profile merges all threads and is the one opened (`activeProfileIndex` 0); one
//!   profile per thread follows, named `thread <os tid> (<managed name>)`. Threads without any
//!   weight are left out: speedscope would only show them empty.
//!
//! Written by hand rather than through serde so that stacks stream: nothing is built per node
//! except its weight. Every stack and frame starts a line, which keeps goldens diffable.

use std::io::{self, BufWriter, Write};

use sonde_profile::{CallTree, Mode, Profile};

use crate::Renderer;
use crate::fmt::command_line;
use crate::stacks::{roots_by_thread, self_weight, thread_label, walk};

/// The `$schema` value speedscope recognises its files by.
const SCHEMA: &str = "https://www.speedscope.app/file-format-schema.json";

/// Renders speedscope's JSON file format.
#[derive(Debug, Clone, Copy, Default)]
pub struct SpeedscopeRenderer;

impl Renderer for SpeedscopeRenderer {
    fn render(&self, profile: &Profile, out: &mut dyn Write) -> io::Result<()> {
        crate::check(profile)?;
        let mode = profile.run.mode;
        let tree = CallTree::new(profile);
        let mut thread_weight = vec![0u64; profile.threads.len()];
        for node in &profile.nodes {
            let w = &mut thread_weight[node.thread as usize];
            *w = w.saturating_add(self_weight(mode, node));
        }

        let mut out = BufWriter::new(out);
        write!(out, "{{\"$schema\":\"{SCHEMA}\",\n\"name\":")?;
        string(&mut out, &format!("Sonde: {}", command_line(&profile.run.command)))?;
        write!(out, ",\n\"exporter\":\"sonde\",\n\"activeProfileIndex\":0,\n\"shared\":{{\"frames\":[")?;
        for (i, method) in profile.methods.iter().enumerate() {
            out.write_all(if i == 0 { b"\n" } else { b",\n" })?;
            out.write_all(b"{\"name\":")?;
            string(&mut out, &method.name)?;
            if !method.module.is_empty() {
                out.write_all(b",\"file\":")?;
                string(&mut out, &method.module)?;
            }
            out.write_all(b"}")?;
        }
        out.write_all(b"]},\n\"profiles\":[")?;
        write_profile(&mut out, profile, &tree, "all threads", tree.roots())?;
        for (thread, roots) in roots_by_thread(profile, &tree).iter().enumerate() {
            if thread_weight[thread] > 0 {
                out.write_all(b",")?;
                write_profile(&mut out, profile, &tree, &thread_label(profile, thread), roots)?;
            }
        }
        out.write_all(b"]}\n")?;
        out.flush()
    }
}

/// One sampled profile over the trees under `roots`.
fn write_profile(
    out: &mut impl Write,
    profile: &Profile,
    tree: &CallTree,
    name: &str,
    roots: &[u32],
) -> io::Result<()> {
    let mode = profile.run.mode;
    let unit = match mode {
        Mode::Tracing => "nanoseconds",
        Mode::Sampling => "none",
    };
    out.write_all(b"\n{\"type\":\"sampled\",\"name\":")?;
    string(out, name)?;
    write!(out, ",\"unit\":\"{unit}\",\"startValue\":0,\n\"samples\":[")?;
    let mut weights: Vec<u64> = Vec::new();
    walk(profile, tree, roots, |node, stack| {
        let weight = self_weight(mode, &profile.nodes[node as usize]);
        if weight == 0 {
            return Ok(());
        }
        out.write_all(if weights.is_empty() { b"\n[" } else { b",\n[" })?;
        for (i, frame) in stack.iter().enumerate() {
            if i > 0 {
                out.write_all(b",")?;
            }
            write!(out, "{frame}")?;
        }
        weights.push(weight);
        out.write_all(b"]")
    })?;
    out.write_all(b"],\n\"weights\":[")?;
    let mut end = 0u64;
    for (i, w) in weights.iter().enumerate() {
        if i > 0 {
            out.write_all(b",")?;
        }
        write!(out, "{w}")?;
        end = end.saturating_add(*w);
    }
    write!(out, "],\n\"endValue\":{end}}}")
}

/// A JSON string literal.
fn string(out: &mut impl Write, s: &str) -> io::Result<()> {
    serde_json::to_writer(&mut *out, s).map_err(io::Error::from)
}
