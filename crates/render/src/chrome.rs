//! `--format chrome`: the run's timeline as Chrome's trace event format (the JSON object form,
//! `{"traceEvents": […]}`), opened by Perfetto (ui.perfetto.dev), `chrome://tracing` and Chrome
//! DevTools' performance panel.
//!
//! * One process, the profiled one (`pid`), named by its command line.
//! * One track per profiled thread (`tid` = its OS thread id, named `Main`, `Worker`, … or by id),
//!   holding its JIT compilations as complete events (`"ph": "X"`, name `JIT`) and its throws as
//!   instant events (`"ph": "i"`, scope thread, name = the exception's type).
//! * Two tracks of the runtime's own: `tid` 0, `GC`, with each collection as a complete event
//!   (`GC gen1 (induced, blocking)`, its pause and heap after it in `args`), and `tid` 1,
//!   `loader`, with each module load as an instant event (`load System.Console.dll`, its path in
//!   `args`). No real thread has id 0 or 1 in a .NET process (1 is `init`'s).
//! * Timestamps are microseconds from the agent's start, with three decimals (nanoseconds);
//!   `displayTimeUnit` is `ns`.
//!
//! * With a call trace (`sonde record --call-trace`, instrumented native code), each traced
//!   call on its thread's track as a complete event named by its function, nested by time;
//!   `args.depth` is its depth, and a call cut by the trace's window says so
//!   (`entered_before_trace`: its start is the trace's first event; `still_running`: its end is
//!   the last).
//!
//! What goes on the timeline is what the agent timestamps (`docs/EVENTS.md`): collections,
//! module loads, throws and compilations — the first 65,536 of the last two (a `metadata`
//! entry says how many were left out) — and the call trace's calls. Samples and other calls
//! have no times in a profile (it keeps trees, not event logs).

use std::io::{self, BufWriter, Write};

use sonde_profile::{Profile, TimelineKind};

use crate::Renderer;
use crate::fmt::command_line;

/// Renders Chrome's trace event format.
#[derive(Debug, Clone, Copy, Default)]
pub struct ChromeRenderer;

/// The runtime's own tracks.
const GC_TID: u32 = 0;
const LOADER_TID: u32 = 1;

impl Renderer for ChromeRenderer {
    fn render(&self, profile: &Profile, out: &mut dyn Write) -> io::Result<()> {
        crate::check(profile)?;
        let run = &profile.run;
        let events = &profile.events;
        let pid = run.pid;
        let mut out = BufWriter::new(out);
        let mut first = true;
        let mut event = |out: &mut BufWriter<&mut dyn Write>, value: serde_json::Value| -> io::Result<()> {
            out.write_all(if first { b"\n" } else { b",\n" })?;
            first = false;
            serde_json::to_writer(&mut *out, &value).map_err(io::Error::from)
        };
        out.write_all(b"{\"traceEvents\":[")?;
        let meta = |name: &str, tid: u32, value: &str| serde_json::json!({"name": name, "ph": "M", "pid": pid, "tid": tid, "args": {"name": value}});
        event(&mut out, meta("process_name", GC_TID, &command_line(&run.command)))?;
        event(&mut out, meta("thread_name", GC_TID, "GC"))?;
        event(&mut out, meta("thread_name", LOADER_TID, "loader"))?;
        for thread in profile.threads.iter().filter(|t| t.os_tid > LOADER_TID) {
            let name = thread.name.clone().unwrap_or_else(|| format!("thread {}", thread.os_tid));
            event(&mut out, meta("thread_name", thread.os_tid, &name))?;
        }
        for c in &events.gc.collections {
            let name = format!("GC gen{} ({}, {})", c.generation, c.reason.as_str(), c.kind.as_str());
            event(
                &mut out,
                serde_json::json!({
                    "name": name, "cat": "gc", "ph": "X", "pid": pid, "tid": GC_TID,
                    "ts": micros(c.start_ns), "dur": micros(c.end_ns.saturating_sub(c.start_ns)),
                    "args": {"gen": c.generation, "pause_ns": c.pause_ns, "heap_bytes_after": c.heap_bytes_after},
                }),
            )?;
        }
        for m in &events.loading.modules {
            event(
                &mut out,
                serde_json::json!({
                    "name": format!("load {}", m.name), "cat": "loader", "ph": "i", "s": "t",
                    "pid": pid, "tid": LOADER_TID, "ts": micros(m.loaded_ns), "args": {"path": m.path},
                }),
            )?;
        }
        for e in &events.timeline.events {
            let value = match e.kind {
                TimelineKind::Jit => serde_json::json!({
                    "name": "JIT", "cat": "jit", "ph": "X", "pid": pid, "tid": e.os_tid,
                    "ts": micros(e.start_ns), "dur": micros(e.end_ns.saturating_sub(e.start_ns)),
                }),
                TimelineKind::Exception { type_index } => {
                    let name = events.exceptions.get(type_index as usize).map_or("?", |x| x.type_name.as_str());
                    serde_json::json!({
                        "name": name, "cat": "exception", "ph": "i", "s": "t", "pid": pid, "tid": e.os_tid,
                        "ts": micros(e.start_ns),
                    })
                }
            };
            event(&mut out, value)?;
        }
        for thread in &events.call_trace.threads {
            for call in thread.calls() {
                let mut args = serde_json::json!({"depth": call.depth});
                if call.entered_before {
                    args["entered_before_trace"] = true.into();
                }
                if call.still_open {
                    args["still_running"] = true.into();
                }
                event(
                    &mut out,
                    serde_json::json!({
                        "name": profile.display_name(call.method), "cat": "call", "ph": "X", "pid": pid,
                        "tid": thread.os_tid, "ts": micros(call.start_ns),
                        "dur": micros(call.end_ns.saturating_sub(call.start_ns)), "args": args,
                    }),
                )?;
            }
        }
        out.write_all(b"],\n\"displayTimeUnit\":\"ns\",\n\"metadata\":")?;
        let mut metadata = serde_json::json!({
            "exporter": "sonde",
            "runtime": format!("{} {}", run.runtime.kind, run.runtime.version),
            "timeline_events_dropped": events.timeline.dropped,
        });
        if !events.call_trace.threads.is_empty() {
            let trace = &events.call_trace;
            metadata["call_trace_events_per_thread"] = trace.events_per_thread.into();
            metadata["call_trace_events_overwritten"] = trace.threads.iter().map(|t| t.overwritten).sum::<u64>().into();
        }
        serde_json::to_writer(&mut out, &metadata).map_err(io::Error::from)?;
        out.write_all(b"}\n")?;
        out.flush()
    }
}

/// Nanoseconds as the format's microseconds, to the nanosecond.
fn micros(ns: u64) -> f64 {
    ns as f64 / 1000.0
}
