//! Turns what an agent sent (its latest cumulative snapshot and the method table) into a
//! [`Profile`]: flattens the per-thread trees, corrects exact times for the hooks' own cost and
//! derives self/total times.
//!
//! Hook-cost compensation (exact timing). The agent measures, at start-up and through the real
//! hook entry points, `inner` (hook time inside a call's own enter→leave interval) and `outer`
//! (hook time a caller sees around each call it makes). A node with `c` calls and `d` calls below
//! it therefore measured `true_total + c·inner + d·outer`; we subtract exactly that, and self time
//! is the corrected total minus the children's corrected totals.

use crate::collector::Session;
use sonde_profile::{
    Compensation, Instantiation, Loading, Method, Mode, Node, NodeEvents, Profile, RunInfo, Runtime, RuntimeEvents,
    Thread, Timing,
};
use sonde_protocol::{HookCost, NodeRecord};

pub struct RunFacts {
    pub command: Vec<String>,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
}

/// `None` when the agent never sent anything usable (no handshake or no snapshot).
pub fn assemble(session: &Session, facts: RunFacts) -> Option<Profile> {
    let hello = session.hello.as_ref()?;
    let snapshot = session.latest.as_ref()?;
    let max_id = session.methods.keys().next_back().map_or(0, |&id| id as usize + 1);
    let mut methods: Vec<Method> = (0..max_id as u32).map(Method::unknown).collect();
    for (&id, m) in &session.methods {
        methods[id as usize] = Method::from(m);
    }
    // Sampling mode's times come from samples, exactly like tracing with sampled timing.
    let timing = match hello.mode {
        Mode::Sampling => Timing::Sampled,
        Mode::Tracing | Mode::Coverage => hello.timing,
    };
    let cost = match (hello.mode, timing) {
        (Mode::Tracing, Timing::Exact) => snapshot.hook_cost,
        _ => None,
    };
    let mut threads = Vec::new();
    let mut nodes = Vec::new();
    let mut node_events = Vec::new();
    let mut node_offsets = Vec::new();
    // Every thread the agent reported, sampled or not: a named thread that never got a sample (it
    // ran too briefly) still ran, and a report that drops it would hide it.
    for t in &snapshot.threads {
        let thread = threads.len() as u32;
        threads.push(Thread {
            os_tid: t.os_tid,
            name: t.name.clone(),
            wall_ns: t.wall_ns,
            cpu_user_ns: t.cpu_user_ns,
            cpu_kernel_ns: t.cpu_kernel_ns,
        });
        let base = nodes.len() as u32;
        for (record, (self_ns, total_ns, total_samples)) in t.nodes.iter().zip(times(&t.nodes, timing, cost)) {
            // A method id the table lacks (a snapshot cut short) still gets a placeholder row.
            while record.method as usize >= methods.len() {
                methods.push(Method::unknown(methods.len() as u32));
            }
            nodes.push(Node {
                thread,
                parent: record.parent.map(|p| base + p),
                method: record.method,
                calls: record.calls,
                self_ns,
                total_ns,
                self_samples: record.self_samples,
                total_samples,
            });
        }
        // A node's offsets never claim more samples than the node has.
        let count = t.nodes.len() as u32;
        let mut claimed: (u32, u64) = (u32::MAX, 0);
        for o in &t.leaf_offsets {
            let Some(record) = t.nodes.get(o.node as usize) else { continue };
            if claimed.0 != o.node {
                claimed = (o.node, 0);
            }
            let samples = o.samples.min(record.self_samples.saturating_sub(claimed.1));
            claimed.1 += samples;
            if samples > 0 {
                node_offsets.push(crate::sources::NodeOffset {
                    node: base + o.node,
                    method: record.method,
                    il_offset: o.il_offset,
                    samples,
                });
            }
        }
        // Ascending within a thread, and threads in node order: the profile's list stays sorted.
        let mut previous = None;
        for e in &t.events {
            if e.node < count && previous.is_none_or(|p| p < e.node) && !e.is_empty() {
                node_events.push(NodeEvents { node: base + e.node, ..*e });
                previous = Some(e.node);
            }
        }
    }
    let run = RunInfo {
        mode: hello.mode,
        timing: (hello.mode == Mode::Tracing).then_some(hello.timing),
        runtime: Runtime { kind: hello.runtime.kind.clone(), version: hello.runtime.version.clone() },
        command: facts.command,
        pid: hello.pid,
        exit_code: facts.exit_code,
        signal: facts.signal,
        wall_ns: snapshot.wall_ns,
        started_unix_ms: hello.started_unix_ms,
        sample_interval_ns: snapshot.sample_interval_ns,
        compensation: cost.map(|c| Compensation { inner_ns_per_call: c.inner_ns, outer_ns_per_call: c.outer_ns }),
        incomplete: !session.complete,
        lost: snapshot.lost,
        sample_clock: hello.clock,
        sampler: Some(snapshot.sampler.clone()).filter(|s| !s.is_empty()),
        samples_taken: snapshot.samples_taken,
        samples_lost: snapshot.samples_lost.clone(),
        agent_version: hello.agent_version.clone(),
        attach: None,
    };
    // Every field named (no `..`): a field added to the events must be carried here too.
    let events = RuntimeEvents {
        exceptions: snapshot.events.exceptions.clone(),
        catches_counted: snapshot.events.catches_counted,
        gc: snapshot.events.gc.clone(),
        allocations: sonde_profile::Allocations {
            exact_by_type: snapshot.allocations_exact_by_type,
            ..snapshot.allocations.clone()
        },
        nodes: node_events,
        loading: Loading { precompiled: snapshot.precompiled.clone(), ..snapshot.loading.clone() },
        timeline: snapshot.timeline.clone(),
        call_trace: snapshot.call_trace.clone(),
        faults: snapshot.faults.clone(),
    };
    // Coverage mode: the covered assemblies' methods that never ran, as methods with no block run.
    let mut blocks = snapshot.coverage.clone();
    let uncalled = match hello.mode {
        Mode::Coverage => crate::coverage::uncalled(&session.methods, &blocks, methods.len() as u32),
        _ => Vec::new(),
    };
    for r in &uncalled {
        methods.push(Method::from(r));
        blocks.push(sonde_profile::MethodBlocks { method: r.id, blocks: Vec::new() });
    }
    let (sources, coverage_lines) =
        crate::sources::resolve(session.methods.values().chain(&uncalled), &snapshot.lines, &node_offsets, &blocks);
    // session.methods is a BTreeMap: ascending ids, as the profile wants them.
    let instantiations = session
        .methods
        .iter()
        .map(|(&method, m)| (method, &m.names))
        .filter(|(_, m)| !m.type_args.is_empty() || !m.method_args.is_empty())
        .map(|(method, m)| Instantiation { method, type_args: m.type_args.clone(), method_args: m.method_args.clone() })
        .collect();
    // The files both the user's command and the process's own command line name: the agent
    // decided what to trace from the latter (a wrapper script such as Debian's `mcs` names the
    // assembly only there).
    let named: Vec<String> = run.command.iter().chain(&hello.command_line).cloned().collect();
    let framework = Some(framework_methods(session, &named, hello.pid));
    let mut coverage = if run.mode == Mode::Tracing { native_coverage(&methods) } else { Default::default() };
    coverage.managed = blocks;
    coverage.managed.sort_by_key(|b| b.method);
    coverage.lines = coverage_lines;
    let profile = Profile { sources, events, run, methods, threads, nodes, instantiations, framework, coverage };
    profile.validate().ok()?;
    Some(profile)
}

/// The instrumented functions of each instrumented native file whose functions the hooks named
/// (tracing mode: the only native methods there come from the hooks), for function coverage. A
/// file that cannot be read any more is left out.
fn native_coverage(methods: &[Method]) -> sonde_profile::Coverage {
    let modules: std::collections::BTreeSet<&str> = methods
        .iter()
        .filter(|m| m.name.starts_with("[native] ") && m.module.starts_with('/'))
        .map(|m| m.module.as_str())
        .collect();
    let native = modules
        .into_iter()
        .flat_map(|module| {
            let symbols = sonde_symbols::instrumented_functions(std::path::Path::new(module)).unwrap_or_default();
            symbols.into_iter().map(|symbol| sonde_profile::NativeFunction { module: module.to_string(), symbol })
        })
        .collect();
    sonde_profile::Coverage { native, ..Default::default() }
}

/// The ids of the managed methods that are framework code, ascending (`sonde_profile::origin`):
/// by the path each method's module was loaded from, against the files the command lines named
/// (relative ones resolved in the process's working directory while it runs, else this one's,
/// which a launched program inherits).
fn framework_methods(session: &Session, command: &[String], pid: u32) -> Vec<u32> {
    use sonde_profile::origin;
    let cwd = std::fs::read_link(format!("/proc/{pid}/cwd")).or_else(|_| std::env::current_dir()).unwrap_or_default();
    let programs = origin::programs(command, &cwd);
    let mut by_path: std::collections::HashMap<&str, bool> = std::collections::HashMap::new();
    session
        .methods
        .iter()
        .map(|(&id, m)| (id, &m.names))
        .filter(|(_, m)| sonde_profile::Kind::of(&m.name) == sonde_profile::Kind::Managed)
        .filter(|(_, m)| {
            let named = *by_path.entry(&m.path).or_insert_with(|| {
                let real = std::fs::canonicalize(&m.path).ok().and_then(|p| p.to_str().map(str::to_string));
                real.is_some_and(|real| programs.contains(&real))
            });
            !named && origin::is_framework(&m.path, &m.assembly, &programs)
        })
        .map(|(id, _)| id)
        .collect()
}

/// (self_ns, total_ns, total_samples) per node. Nodes list parents before children, so one
/// backward pass accumulates everything bottom-up. Totals are rounded to whole nanoseconds first
/// and self times derived from the rounded figures, so `self + Σ children = total` holds exactly.
fn times(nodes: &[NodeRecord], timing: Timing, cost: Option<HookCost>) -> Vec<(u64, u64, u64)> {
    let n = nodes.len();
    let mut below_calls = vec![0u64; n]; // calls strictly below each node
    let mut children_total = vec![0u64; n];
    let mut subtree_samples: Vec<u64> = nodes.iter().map(|r| r.self_samples).collect();
    let mut subtree_sampled_ns: Vec<u64> = nodes.iter().map(|r| r.sampled_self_ns).collect();
    let mut total = vec![0u64; n];
    let cost = cost.unwrap_or_default();
    for i in (0..n).rev() {
        let r = &nodes[i];
        total[i] = match timing {
            Timing::Exact => {
                let corrected =
                    r.raw_total_ns as f64 - r.calls as f64 * cost.inner_ns - below_calls[i] as f64 * cost.outer_ns;
                // Never below what the children (already corrected) account for, never negative.
                (corrected.max(0.0).round() as u64).max(children_total[i])
            }
            Timing::Sampled => subtree_sampled_ns[i],
        };
        if let Some(p) = r.parent.map(|p| p as usize).filter(|&p| p < i) {
            below_calls[p] += r.calls + below_calls[i];
            children_total[p] += total[i];
            subtree_samples[p] += subtree_samples[i];
            subtree_sampled_ns[p] += subtree_sampled_ns[i];
        }
    }
    (0..n)
        .map(|i| {
            let self_ns = match timing {
                Timing::Exact => total[i] - children_total[i],
                Timing::Sampled => nodes[i].sampled_self_ns,
            };
            (self_ns, total[i], subtree_samples[i])
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(parent: Option<u32>, calls: u64, raw_total_ns: u64) -> NodeRecord {
        NodeRecord { parent, method: 0, calls, raw_total_ns, self_samples: 0, sampled_self_ns: 0 }
    }

    #[test]
    fn compensation_subtracts_hook_cost_per_call() {
        // main (1 call) -> leaf (100 calls). The leaf's body is empty: each call measured only
        // `inner` = 2 ns; main's body took 1000 ns plus `outer` = 10 ns per leaf call.
        let nodes = [node(None, 1, 1000 + 2 + 100 * 10), node(Some(0), 100, 100 * 2)];
        let t = times(&nodes, Timing::Exact, Some(HookCost { inner_ns: 2.0, outer_ns: 10.0 }));
        assert_eq!(t[1], (0, 0, 0));
        assert_eq!(t[0], (1000, 1000, 0));
    }

    #[test]
    fn sampled_timing_sums_subtrees() {
        let mut nodes = [node(None, 1, 0), node(Some(0), 5, 0), node(Some(1), 1, 0)];
        nodes[0].sampled_self_ns = 10;
        nodes[0].self_samples = 1;
        nodes[2].sampled_self_ns = 30;
        nodes[2].self_samples = 3;
        let t = times(&nodes, Timing::Sampled, None);
        assert_eq!(t, vec![(10, 40, 4), (0, 30, 3), (30, 30, 3)]);
    }

    #[test]
    fn overcompensation_never_goes_negative() {
        let nodes = [node(None, 10, 5), node(Some(0), 10, 5)];
        let t = times(&nodes, Timing::Exact, Some(HookCost { inner_ns: 50.0, outer_ns: 50.0 }));
        assert_eq!(t, vec![(0, 0, 0), (0, 0, 0)]);
    }
}
