//! `sonde dump --pid PID [--json]`: the current stack of every thread of a running .NET process,
//! once, like `py-spy dump` — then detach.
//!
//! How: attach (as `sonde record --pid` does) with the wall clock at 100 Hz, so that every thread
//! is signalled at least once whatever its state (a blocked thread too: the sampler signals each
//! thread once when it first sees it), and ask for snapshots until every thread the runtime
//! knows has a sample (each snapshot names each thread's latest sample: `last_sample`) or a
//! second has passed; then detach. Each thread's stack is the path from its latest sample's node
//! up to the root. The process is never stopped: the stacks are each thread's latest within the
//! dump's fraction of a second, not one instant of the whole process.

use crate::cli::DumpArgs;
use anyhow::{Context, Result};
use serde_json::json;
use sonde_client::collector::Session;
use sonde_client::{Options, Recording};
use sonde_profile::SampleClock;
use sonde_render::fmt::Clean;
use std::io::Write;
use std::time::{Duration, Instant};

/// How long to wait for every thread's first sample.
const PATIENCE: Duration = Duration::from_secs(1);

struct ThreadStack {
    os_tid: u32,
    name: Option<String>,
    /// Innermost first: (method, module).
    frames: Vec<(String, String)>,
}

pub fn dump(args: DumpArgs) -> Result<i32> {
    let options = Options { verbose: false, ..Options::sampling_with(100, SampleClock::Wall) };
    let (recording, _) = Recording::attach(args.pid, &options)?;
    let agents = recording.agents();
    let ns_pid = recording.ns_pid();
    let until = Instant::now() + PATIENCE;
    loop {
        agents.refresh(ns_pid, Duration::from_millis(300));
        let all = agents.with_session(ns_pid, |s| {
            s.latest.as_ref().is_some_and(|l| l.threads.iter().all(|t| t.os_tid == 0 || t.last_sample.is_some()))
        });
        if all == Some(true) || Instant::now() >= until {
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

/// Each thread's latest sampled stack, innermost frame first; threads in id order.
fn stacks(session: &Session) -> Vec<ThreadStack> {
    let Some(latest) = session.latest.as_ref() else { return Vec::new() };
    let mut stacks: Vec<ThreadStack> = latest
        .threads
        .iter()
        .filter(|t| t.os_tid != 0)
        .map(|t| {
            let mut frames = Vec::new();
            let mut node = t.last_sample;
            // Parents come first in the list, so each step goes to a smaller index: the walk ends.
            while let Some(index) = node {
                let Some(record) = t.nodes.get(index as usize) else { break };
                let (method, module) = match session.methods.get(&record.method) {
                    Some(m) => (m.name.clone(), m.module.clone()),
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
