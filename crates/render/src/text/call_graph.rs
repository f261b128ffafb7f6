//! The call graph, in the spirit of gprof's and of Figure 3 of the 1999 "Automatic Code
//! Instrumentation" article: one block per method, its callers above it and its callees below,
//! so that a reader sees both who made a method expensive and where its time went.

use std::io::{self, Write};

use sonde_profile::Edge;

use super::View;
use crate::fmt::{count, duration, percent};

const RULE: &str = "--------------------------------------------------------------------------------";

pub(super) fn write(out: &mut impl Write, view: &View) -> io::Result<()> {
    let methods = view.analysis.methods();
    let mut listed: Vec<u32> =
        (0..methods.len() as u32).filter(|&id| view.total_of(&methods[id as usize]) > 0).collect();
    if listed.is_empty() {
        return Ok(());
    }
    listed.sort_unstable_by_key(|&id| {
        let m = &methods[id as usize];
        (std::cmp::Reverse((view.total_of(m), view.measure(m.self_ns, m.self_samples))), id)
    });
    // index[method] is its 1-based place in the graph, 0 for methods without a block.
    let mut index = vec![0usize; methods.len()];
    for (place, &id) in listed.iter().enumerate() {
        index[id as usize] = place + 1;
    }
    let name = |method: Option<u32>| match method {
        None => "<thread root>".to_owned(),
        Some(m) if index[m as usize] > 0 => format!("{} [{}]", view.name(m), index[m as usize]),
        Some(m) => view.name(m).to_string(),
    };

    writeln!(out)?;
    writeln!(out, "Call graph (methods by total, heaviest first)")?;
    writeln!(out, "  Above each method, the methods that called it (\"called by\": their calls and the")?;
    writeln!(out, "  time this method spent on their behalf); below it, the methods it called (\"calls")?;
    writeln!(out, "  into\": its calls and the time spent in each). \"self\" excludes callees. A recursive")?;
    writeln!(out, "  method's time is counted once, at its outermost frame.")?;
    writeln!(out)?;
    writeln!(
        out,
        "{:>7}  {:>7}  {:>10}  {:>10}  {:>10}  {:>12}  method",
        "index",
        "total %",
        "total",
        "self",
        "per call",
        view.count_label()
    )?;
    writeln!(out, "{RULE}")?;

    let whole = view.whole();
    let edge_line = |out: &mut dyn Write, edge: &Edge, label: &str| {
        let n = if view.counts_calls { edge.calls } else { edge.total_samples };
        writeln!(
            out,
            "{:>7}  {:>7}  {:>10}  {:>10}  {:>10}  {:>12}      {label} {}",
            "",
            "",
            view.amount(edge.total_ns, edge.total_samples),
            "",
            "",
            count(n),
            name(edge.method),
        )
    };
    for &id in &listed {
        let m = view.analysis.method(id);
        for edge in view.analysis.callers(id) {
            edge_line(out, edge, "called by ")?;
        }
        let (n, per_call) = if view.counts_calls {
            let per_call = if m.calls > 0 && view.has_time { duration(m.total_ns / m.calls) } else { "-".to_owned() };
            (m.calls, per_call)
        } else {
            (m.total_samples, "-".to_owned())
        };
        writeln!(
            out,
            "{:>7}  {:>7}  {:>10}  {:>10}  {:>10}  {:>12}  {}",
            format!("[{}]", index[id as usize]),
            percent(view.total_of(m), whole),
            view.amount(m.total_ns, m.total_samples),
            view.amount(m.self_ns, m.self_samples),
            per_call,
            count(n),
            name(Some(id)),
        )?;
        for edge in view.analysis.callees(id) {
            edge_line(out, edge, "calls into")?;
        }
        writeln!(out, "{RULE}")?;
    }
    Ok(())
}
