//! `sonde dump --pid PID [--json]`: the current stack of every thread of a running .NET process,
//! once, like `py-spy dump` — then detach.
//!
//! How: attach (as `sonde record --pid` does) and ask the agent to have the runtime walk every
//! managed thread's stack (`WalkStacks`): the runtime stops the process as for a GC — a thread
//! running managed code at its next safe point, a thread in native code (blocked in a wait, a
//! read) where it is, its managed frames found through the runtime's own transition frames —
//! walks each thread and resumes. The stacks are one instant of the whole process, exact, each
//! from its thread's walked node up to the root; then detach.
//!
//! Fallback: the agent also samples with the wall clock at 100 Hz (each thread is signalled at
//! least once whatever its state), and a thread the walk did not reach (not yet known to the
//! runtime, or a walk that failed) shows its latest sample (`last_sample`), whose frame-pointer
//! walk stops at native code without frame pointers (the C library's waits).

use crate::cli::DumpArgs;
use anyhow::{Context, Result};
use serde_json::json;
use sonde_client::collector::Session;
use sonde_client::{Options, Recording};
use sonde_profile::SampleClock;
use sonde_render::fmt::Clean;
use std::io::Write;
use std::time::{Duration, Instant};

/// How long to wait for the walk (and for every thread's first sample, where it did not reach).
const PATIENCE: Duration = Duration::from_secs(3);

struct ThreadStack {
    os_tid: u32,
    name: Option<String>,
    /// Innermost first: (method, module).
    frames: Vec<(String, String)>,
}

pub fn dump(args: DumpArgs) -> Result<i32> {
    let mut options = Options { verbose: false, ..Options::sampling_with(100, SampleClock::Wall) };
    options.config.log = args.agent_log.clone();
    let (recording, _) = Recording::attach(args.pid, &options)?;
    let agents = recording.agents();
    let ns_pid = recording.ns_pid();
    agents.walk_stacks();
    let until = Instant::now() + PATIENCE;
    loop {
        agents.refresh(ns_pid, Duration::from_millis(300));
        let done = agents.with_session(ns_pid, |s| {
            s.latest.as_ref().is_some_and(|l| {
                l.stacks_walked > 0 && l.threads.iter().all(|t| t.os_tid == 0 || t.walked.or(t.last_sample).is_some())
            })
        });
        if done == Some(true) || Instant::now() >= until {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let (stacks, runtime) = agents
        .with_session(ns_pid, |s| (stacks(s), s.hello.as_ref().map(|h| h.runtime.clone())))
        .context("the agent sent no stacks")?;
    let sessions = recording.finish_sessions(Duration::from_secs(5));
    let detached = sessions.iter().any(|s| s.complete);
    let runtime = runtime.context("the agent sent no handshake")?;
    let mut out = std::io::stdout().lock();
    if args.json {
        let threads: Vec<_> = stacks
            .iter()
            .map(|t| {
                json!({
                    "os_tid": t.os_tid,
                    "name": t.name,
                    "frames": t.frames.iter().map(|(method, module)| json!({"method": method, "module": module})).collect::<Vec<_>>(),
                })
            })
            .collect();
        let doc = json!({
            "schema": "sonde.dump/1",
            "pid": args.pid,
            "runtime": {"kind": runtime.kind, "version": runtime.version},
            "threads": threads,
        });
        writeln!(out, "{}", serde_json::to_string_pretty(&doc)?)?;
    } else {
        writeln!(out, "Process {} ({} {})", args.pid, Clean(&runtime.kind), Clean(&runtime.version))?;
        for t in &stacks {
            let name = t.name.as_deref().map(|n| format!(" \"{}\"", Clean(n))).unwrap_or_default();
            writeln!(out, "\nThread {}{name}", t.os_tid)?;
            if t.frames.is_empty() {
                writeln!(out, "    (no stack sampled)")?;
            }
            for (method, module) in &t.frames {
                writeln!(out, "    {} ({})", Clean(method), Clean(module))?;
            }
        }
    }
    if !detached {
        crate::say!("sonde: process {} did not confirm the detach in time", args.pid);
    }
    Ok(0)
}

/// Each thread's walked stack, else its latest sampled one, innermost frame first; threads in id
/// order.
fn stacks(session: &Session) -> Vec<ThreadStack> {
    let Some(latest) = session.latest.as_ref() else { return Vec::new() };
    let mut stacks: Vec<ThreadStack> = latest
        .threads
        .iter()
        .filter(|t| t.os_tid != 0)
        .map(|t| {
            let mut frames = Vec::new();
            let mut node = t.walked.or(t.last_sample);
            // Parents come first in the list, so each step goes to a smaller index: the walk ends.
            while let Some(index) = node {
                let Some(record) = t.nodes.get(index as usize) else { break };
                let (method, module) = match session.methods.get(&record.method) {
                    Some(m) => (m.names.name.clone(), m.names.module.clone()),
                    None => (format!("<unknown method {}>", record.method), String::new()),
                };
                frames.push((method, module));
                node = record.parent.filter(|&p| p < index);
            }
            ThreadStack { os_tid: t.os_tid, name: t.name.clone(), frames }
        })
        .collect();
    stacks.sort_by_key(|t| t.os_tid);
    stacks
}
