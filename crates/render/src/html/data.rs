//! The JSON data block of the HTML report (`sonde.html/1`): what the page's script reads.
//!
//! It is written by hand rather than through serde for two reasons. Size: node figures go out as
//! parallel arrays, parents as the distance back to them, threads only for top-level nodes and
//! totals only where they differ from self + the children's totals, which keeps a million-node
//! profile to a few tens of MB. Safety: the block sits inside a `<script>` element, so every
//! string escapes `<`, `>` and `&` (no `</script>` or `<!--` can appear) and U+2028/U+2029
//! (which older JavaScript parsers treat as line ends) besides JSON's own escapes.

use std::collections::HashMap;
use std::io::{self, Write};

use sonde_profile::{Mode, Node, Profile, RuntimeEvents, TimelineKind, thread_totals};

pub(super) fn write(out: &mut impl Write, profile: &Profile) -> io::Result<()> {
    let run = &profile.run;
    let by_samples = weighs_samples(profile);
    out.write_all(b"{\"schema\":\"sonde.html/1\",\n\"weight\":")?;
    out.write_all(if by_samples { b"\"samples\"" } else { b"\"ns\"" })?;

    out.write_all(b",\n\"run\":{\"mode\":")?;
    string(out, run.mode.as_str())?;
    out.write_all(b",\"timing\":")?;
    match run.timing {
        Some(t) => string(out, t.as_str())?,
        None => out.write_all(b"null")?,
    }
    out.write_all(b",\"runtime\":[")?;
    string(out, &run.runtime.kind)?;
    out.write_all(b",")?;
    string(out, &run.runtime.version)?;
    out.write_all(b"],\"command\":[")?;
    for (i, arg) in run.command.iter().enumerate() {
        if i > 0 {
            out.write_all(b",")?;
        }
        string(out, arg)?;
    }
    write!(out, "],\"pid\":{},\"exit_code\":", run.pid)?;
    optional(out, run.exit_code)?;
    out.write_all(b",\"signal\":")?;
    optional(out, run.signal)?;
    write!(
        out,
        ",\"wall_ns\":{},\"started_unix_ms\":{},\"sample_interval_ns\":{},\"compensation\":",
        run.wall_ns, run.started_unix_ms, run.sample_interval_ns
    )?;
    match run.compensation {
        Some(c) => {
            out.write_all(b"[")?;
            float(out, c.inner_ns_per_call)?;
            out.write_all(b",")?;
            float(out, c.outer_ns_per_call)?;
            out.write_all(b"]")?;
        }
        None => out.write_all(b"null")?,
    }
    write!(out, ",\"incomplete\":{},\"lost\":{},\"sample_clock\":", run.incomplete, run.lost)?;
    match run.sample_clock {
        Some(c) => string(out, c.as_str())?,
        None => out.write_all(b"null")?,
    }
    write!(out, ",\"samples_taken\":{},\"samples_lost\":[", run.samples_taken)?;
    for (i, lost) in run.samples_lost.iter().enumerate() {
        out.write_all(if i > 0 { b",[" } else { b"[" })?;
        string(out, &lost.reason)?;
        write!(out, ",{}]", lost.count)?;
    }
    out.write_all(b"],\"agent_version\":")?;
    string(out, &run.agent_version)?;
    out.write_all(b"},\n")?;

    let (calls, total_ns, total_samples) = thread_totals(profile).iter().fold((0u64, 0u64, 0u64), |(c, t, s), x| {
        (c.saturating_add(x.calls), t.saturating_add(x.total_ns), s.saturating_add(x.total_samples))
    });
    writeln!(out, "\"totals\":[{calls},{total_ns},{total_samples}],")?;

    // Assembly and module repeat for every method of an assembly: intern them.
    let mut modules: HashMap<(&str, &str), usize> = HashMap::new();
    let mut module_list: Vec<(&str, &str)> = Vec::new();
    let module_of: Vec<usize> = profile
        .methods
        .iter()
        .map(|m| {
            *modules.entry((&m.assembly, &m.module)).or_insert_with(|| {
                module_list.push((&m.assembly, &m.module));
                module_list.len() - 1
            })
        })
        .collect();
    out.write_all(b"\"modules\":[")?;
    for (i, (assembly, module)) in module_list.iter().enumerate() {
        out.write_all(if i > 0 { b",\n[" } else { b"\n[" })?;
        string(out, assembly)?;
        out.write_all(b",")?;
        string(out, module)?;
        out.write_all(b"]")?;
    }
    out.write_all(b"],\n\"methods\":[")?;
    for (i, m) in profile.methods.iter().enumerate() {
        out.write_all(if i > 0 { b",\n[" } else { b"\n[" })?;
        string(out, &profile.display_name(i as u32))?;
        out.write_all(b",")?;
        string(out, &m.signature)?;
        write!(out, ",{}]", module_of[i])?;
    }
    out.write_all(b"],\n\"threads\":[")?;
    for (i, t) in profile.threads.iter().enumerate() {
        write!(out, "{}\n[{},", if i > 0 { "," } else { "" }, t.os_tid)?;
        match &t.name {
            Some(name) => string(out, name)?,
            None => out.write_all(b"null")?,
        }
        write!(out, ",{},{},{}]", t.wall_ns, t.cpu_user_ns, t.cpu_kernel_ns)?;
    }
    out.write_all(b"],\n")?;
    nodes(out, &profile.nodes, by_samples)?;
    out.write_all(b",\n")?;
    events(out, &profile.events)?;
    out.write_all(b",\n")?;
    sources(out, profile)?;
    coverage(out, profile)?;
    out.write_all(b"}\n")
}

/// Coverage mode (`coverage`, only in a coverage profile): each covered method's calls
/// `[method, calls]`, and each of its source lines with how often it ran
/// `[method, file, line, hits]` (files index `sources.files`; their text is embedded with the
/// sampled files').
fn coverage(out: &mut impl Write, profile: &Profile) -> io::Result<()> {
    let coverage = &profile.coverage;
    if coverage.lines.is_empty() {
        return Ok(());
    }
    out.write_all(b",\n\"coverage\":{\"methods\":[")?;
    for (i, m) in coverage.managed.iter().enumerate() {
        write!(out, "{}[{},{}]", if i > 0 { "," } else { "" }, m.method, m.calls())?;
    }
    out.write_all(b"],\n\"lines\":[")?;
    for (i, l) in coverage.lines.iter().enumerate() {
        write!(out, "{}[{},{},{},{}]", if i > 0 { ",\n" } else { "" }, l.method, l.at.file, l.at.line, l.hits)?;
    }
    out.write_all(b"]}")
}

/// The most source text embedded in a page, over all files.
const MAX_EMBEDDED_SOURCE: usize = 16 << 20;

/// Source lines (`sources`): the files' names, each method's first line `[method, file, line]`,
/// the samples by line `[method, file, line, self, total]`, and the text of the files that hold
/// sampled or covered lines, where each is readable now (`text::lines::source_lines`: a regular C#, F# or
/// VB file of at most 4 MB), `[file, [line, …]]` — the page shows it beside the counts.
fn sources(out: &mut impl Write, profile: &Profile) -> io::Result<()> {
    let sources = &profile.sources;
    out.write_all(b"\"sources\":{\"files\":[")?;
    for (i, f) in sources.files.iter().enumerate() {
        if i > 0 {
            out.write_all(b",")?;
        }
        string(out, f)?;
    }
    out.write_all(b"],\"first\":[")?;
    for (i, (m, at)) in sources.methods.iter().enumerate() {
        write!(out, "{}[{m},{},{}]", if i > 0 { "," } else { "" }, at.file, at.line)?;
    }
    out.write_all(b"],\n\"lines\":[")?;
    for (i, l) in sources.lines.iter().enumerate() {
        write!(
            out,
            "{}[{},{},{},{},{}]",
            if i > 0 { ",\n" } else { "" },
            l.method,
            l.at.file,
            l.at.line,
            l.self_samples,
            l.total_samples
        )?;
    }
    out.write_all(b"],\n\"text\":[")?;
    let covered = profile.coverage.lines.iter().map(|l| l.at.file);
    let mut files: Vec<u32> = sources.lines.iter().map(|l| l.at.file).chain(covered).collect();
    files.sort_unstable();
    files.dedup();
    let (mut embedded, mut first) = (0usize, true);
    for file in files {
        let Some(text) = sources.files.get(file as usize).and_then(|path| crate::text::lines::source_lines(path))
        else {
            continue;
        };
        let size: usize = text.iter().map(|l| l.len() + 1).sum();
        if embedded + size > MAX_EMBEDDED_SOURCE {
            continue;
        }
        embedded += size;
        write!(out, "{}[{file},[", if first { "\n" } else { ",\n" })?;
        first = false;
        for (i, line) in text.iter().enumerate() {
            if i > 0 {
                out.write_all(b",")?;
            }
            string(out, line)?;
        }
        out.write_all(b"]]")?;
    }
    out.write_all(b"]}")
}

/// The runtime's events (`events`): allocations by type, the allocation bytes and lock waits of
/// each node as sparse `[node, figure]` lists (the page builds the Memory and Lock-wait views of
/// the tree from them), and what the timeline draws — collections, module loads, JIT spans and
/// throws, and the call trace's calls — with times in nanoseconds from the agent's start.
fn events(out: &mut impl Write, events: &RuntimeEvents) -> io::Result<()> {
    let alloc = &events.allocations;
    out.write_all(b"\"events\":{\"alloc\":{\"sampling\":")?;
    string(out, alloc.sampling.as_str())?;
    write!(
        out,
        ",\"exact_by_type\":{},\"sample_bytes\":{},\"samples\":{},\"types\":[",
        alloc.exact_by_type, alloc.sample_bytes, alloc.samples
    )?;
    for (i, t) in alloc.by_type.iter().enumerate() {
        out.write_all(if i > 0 { b",\n[" } else { b"\n[" })?;
        string(out, &t.type_name)?;
        write!(out, ",{},{}]", t.bytes, t.count)?;
    }
    out.write_all(b"]},\n\"node_alloc\":[")?;
    sparse(out, events.nodes.iter().map(|e| (e.node, e.alloc_bytes)))?;
    out.write_all(b"],\n\"node_wait\":[")?;
    sparse(out, events.nodes.iter().map(|e| (e.node, e.wait_ns)))?;
    let gc = &events.gc;
    let [g0, g1, g2] = gc.count_by_gen;
    write!(
        out,
        "],\n\"gc\":{{\"count_by_gen\":[{g0},{g1},{g2}],\"pause_ns_total\":{},\"pause_ns_max\":{},\"collections\":[",
        gc.pause_ns_total, gc.pause_ns_max
    )?;
    for (i, c) in gc.collections.iter().enumerate() {
        out.write_all(if i > 0 { b",\n[" } else { b"\n[" })?;
        write!(out, "{},", c.generation)?;
        string(out, c.reason.as_str())?;
        out.write_all(b",")?;
        string(out, c.kind.as_str())?;
        write!(out, ",{},{},{},{}]", c.start_ns, c.end_ns, c.pause_ns, c.heap_bytes_after)?;
    }
    out.write_all(b"]},\n\"exceptions\":[")?;
    for (i, x) in events.exceptions.iter().enumerate() {
        out.write_all(if i > 0 { b",\n[" } else { b"\n[" })?;
        string(out, &x.type_name)?;
        write!(out, ",{},{}]", x.thrown, x.caught)?;
    }
    let loading = &events.loading;
    write!(out, "],\n\"jit\":[{},{}],\n\"modules\":[", loading.methods_compiled, loading.jit_ns)?;
    for (i, m) in loading.modules.iter().enumerate() {
        out.write_all(if i > 0 { b",\n[" } else { b"\n[" })?;
        string(out, &m.name)?;
        write!(out, ",{}]", m.loaded_ns)?;
    }
    // [kind (0 JIT, 1 throw), OS thread id, start, end, exception type index or -1]
    write!(out, "],\n\"timeline\":{{\"dropped\":{},\"events\":[", events.timeline.dropped)?;
    for (i, e) in events.timeline.events.iter().enumerate() {
        let (kind, type_index) = match e.kind {
            TimelineKind::Jit => (0, -1),
            TimelineKind::Exception { type_index } => (1, i64::from(type_index)),
        };
        write!(
            out,
            "{}[{kind},{},{},{},{type_index}]",
            if i > 0 { ",\n" } else { "\n" },
            e.os_tid,
            e.start_ns,
            e.end_ns
        )?;
    }
    // The call trace, per thread: [OS thread id, overwritten events, [[method, depth, start,
    // end, flags (1: entered before the trace, 2: still running)], ...]].
    write!(out, "]}},\n\"calls\":{{\"per_thread\":{},\"threads\":[", events.call_trace.events_per_thread)?;
    for (i, t) in events.call_trace.threads.iter().enumerate() {
        write!(out, "{}[{},{},[", if i > 0 { ",\n" } else { "\n" }, t.os_tid, t.overwritten)?;
        for (j, c) in t.calls().iter().enumerate() {
            let flags = u8::from(c.entered_before) | u8::from(c.still_open) << 1;
            write!(
                out,
                "{}[{},{},{},{},{flags}]",
                if j > 0 { "," } else { "" },
                c.method,
                c.depth,
                c.start_ns,
                c.end_ns
            )?;
        }
        out.write_all(b"]]")?;
    }
    out.write_all(b"]}}")
}

/// `[node, figure]` pairs for the non-zero figures.
fn sparse(out: &mut impl Write, pairs: impl Iterator<Item = (u32, u64)>) -> io::Result<()> {
    let mut first = true;
    for (node, figure) in pairs.filter(|&(_, f)| f > 0) {
        write!(out, "{}[{node},{figure}]", if first { "" } else { "," })?;
        first = false;
    }
    Ok(())
}

/// Sampling profiles weigh frames by samples, tracing profiles by time; a profile with only one
/// of the two uses that one.
fn weighs_samples(profile: &Profile) -> bool {
    let roots = || profile.nodes.iter().filter(|n| n.parent.is_none());
    let has_time = roots().any(|n| n.total_ns > 0);
    let has_samples = roots().any(|n| n.total_samples > 0);
    match profile.run.mode {
        Mode::Sampling => has_samples || !has_time,
        Mode::Tracing | Mode::Coverage => has_samples && !has_time,
    }
}

fn nodes(out: &mut impl Write, nodes: &[Node], by_samples: bool) -> io::Result<()> {
    let weight = |n: &Node| if by_samples { (n.self_samples, n.total_samples) } else { (n.self_ns, n.total_ns) };

    out.write_all(b"\"nodes\":{\n\"parent\":")?;
    array(out, nodes.iter().enumerate().map(|(i, n)| n.parent.map_or(0, |p| i as u64 - u64::from(p))))?;
    out.write_all(b",\n\"thread\":")?;
    array(out, nodes.iter().filter(|n| n.parent.is_none()).map(|n| u64::from(n.thread)))?;
    out.write_all(b",\n\"method\":")?;
    array(out, nodes.iter().map(|n| u64::from(n.method)))?;
    out.write_all(b",\n\"calls\":")?;
    if nodes.iter().any(|n| n.calls > 0) {
        array(out, nodes.iter().map(|n| n.calls))?;
    } else {
        out.write_all(b"null")?;
    }
    out.write_all(b",\n\"self\":")?;
    array(out, nodes.iter().map(|n| weight(n).0))?;

    // A total the page cannot rebuild as self + children's totals (rounding in the agent's
    // arithmetic, or a hostile file) goes out as its difference. i128 holds any difference of
    // u64 sums.
    let mut children = vec![0i128; nodes.len()];
    for n in nodes {
        if let Some(p) = n.parent {
            children[p as usize] += i128::from(weight(n).1);
        }
    }
    out.write_all(b",\n\"adjust\":[")?;
    let mut first = true;
    for (i, n) in nodes.iter().enumerate() {
        let (self_w, total_w) = weight(n);
        let diff = i128::from(total_w) - i128::from(self_w) - children[i];
        if diff != 0 {
            write!(out, "{}[{i},{diff}]", if first { "" } else { "," })?;
            first = false;
        }
    }
    out.write_all(b"]}")
}

/// `[a,b,c]` with a hand-rolled integer formatter: a million-node profile writes millions of
/// numbers.
fn array(out: &mut impl Write, values: impl Iterator<Item = u64>) -> io::Result<()> {
    out.write_all(b"[")?;
    let mut buf = [0u8; 21];
    for (i, mut n) in values.enumerate() {
        let mut at = buf.len();
        loop {
            at -= 1;
            buf[at] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        if i > 0 {
            at -= 1;
            buf[at] = b',';
        }
        out.write_all(&buf[at..])?;
    }
    out.write_all(b"]")
}

fn optional(out: &mut impl Write, value: Option<i32>) -> io::Result<()> {
    match value {
        Some(v) => write!(out, "{v}"),
        None => out.write_all(b"null"),
    }
}

/// JSON has no NaN or infinity: those become `null`.
fn float(out: &mut impl Write, value: f64) -> io::Result<()> {
    if value.is_finite() { write!(out, "{value}") } else { out.write_all(b"null") }
}

/// A JSON string that is also safe inside an HTML `<script>` element.
fn string(out: &mut impl Write, s: &str) -> io::Result<()> {
    out.write_all(b"\"")?;
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let escape: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            b'<' => b"\\u003c",
            b'>' => b"\\u003e",
            b'&' => b"\\u0026",
            0..0x20 => b"",
            // U+2028 and U+2029 are E2 80 A8 and E2 80 A9 in UTF-8: escape at their last byte.
            0xA8 | 0xA9 if i >= 2 && bytes[i - 2] == 0xE2 && bytes[i - 1] == 0x80 => b"",
            _ => continue,
        };
        let char_start = if b >= 0x80 { i - 2 } else { i };
        out.write_all(&bytes[start..char_start])?;
        if escape.is_empty() {
            let code = if b >= 0x80 { 0x2000 + u32::from(b - 0xA8) + 0x28 } else { u32::from(b) };
            write!(out, "\\u{code:04x}")?;
        } else {
            out.write_all(escape)?;
        }
        start = i + 1;
    }
    out.write_all(&bytes[start..])?;
    out.write_all(b"\"")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json_string(s: &str) -> String {
        let mut out = Vec::new();
        string(&mut out, s).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn strings_are_json_that_cannot_leave_a_script_element() {
        let nasty =
            "\"><img src=x onerror=alert(1)></script><!-- a&b\u{2028}c\u{2029}d\u{1}\n\t\\ <Main>b__0_0 Größe 計算";
        let escaped = json_string(nasty);
        assert_eq!(
            escaped,
            "\"\\\"\\u003e\\u003cimg src=x onerror=alert(1)\\u003e\\u003c/script\\u003e\\u003c!-- a\\u0026b\\u2028c\\u2029d\\u0001\\n\\t\\\\ \\u003cMain\\u003eb__0_0 Größe 計算\""
        );
        for forbidden in ['<', '>', '&', '\u{2028}', '\u{2029}'] {
            assert!(!escaped.contains(forbidden), "{forbidden:?} left unescaped");
        }
        let back: String = serde_json::from_str(&escaped).unwrap();
        assert_eq!(back, nasty);
    }

    #[test]
    fn other_three_byte_characters_pass_unchanged() {
        // U+20A8 (E2 82 A8) and U+2828 (E2 A0 A8) end in A8 but are not line separators.
        for s in ["\u{20a8}", "\u{2828}", "\u{2027}\u{202a}"] {
            assert_eq!(json_string(s), format!("\"{s}\""));
        }
    }

    #[test]
    fn arrays_and_floats() {
        let mut out = Vec::new();
        array(&mut out, [0, 7, 10, u64::MAX].into_iter()).unwrap();
        float(&mut out, 14.25).unwrap();
        float(&mut out, f64::NAN).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "[0,7,10,18446744073709551615]14.25null");
    }
}
