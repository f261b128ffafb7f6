//! Coverage mode on Mono (`sonde record --mode coverage`; docs/COVERAGE.md): Mono's own coverage
//! support. Its JIT gives each method the filter accepts ([`cover`]) a counter per basic block;
//! the final snapshot reads them (`mono_profiler_get_coverage_data`), as Mono's log profiler does
//! at shutdown: the read is not async-safe and wants a thread the runtime knows, which the
//! periodic snapshots' thread is not. A Mono program killed before it shuts down leaves no
//! coverage.

use crate::ipc::link::SnapshotFacts;
use crate::session::{self, StartError};
use crate::tree::methods::methods;
use sonde_mono::{Method, MethodKey, Mono, Profiler};
use sonde_profile::MethodBlocks;
use sonde_protocol::AgentConfig;
use std::sync::{Mutex, OnceLock};

/// The profiler coverage was enabled on (read at the final snapshot).
static PROFILER: OnceLock<Profiler> = OnceLock::new();
/// The covered methods: Mono's key and the method's id.
static COVERED: Mutex<Vec<(MethodKey, u32)>> = Mutex::new(Vec::new());

/// Sets coverage mode up (in the init function, as Mono requires).
pub fn start<A: sonde_mono::Events>(mono: &'static Mono, _config: &AgentConfig) -> Result<SnapshotFacts, StartError> {
    let profiler = mono.create_profiler();
    if !profiler.enable_coverage::<A>() {
        return Err(StartError::runtime("coverage mode", "Mono refused to enable coverage (too late)"));
    }
    profiler.set_events::<A>(false);
    let _ = PROFILER.set(profiler);
    crate::ipc::snapshot::contribute(contribute);
    Ok(SnapshotFacts { sample_interval_ns: 0, exact_timing: false, sampling: false, mapped_files: false })
}

/// The coverage filter: the methods the session's filter traces (the program's own by default).
pub fn cover(method: Method<'_>) -> bool {
    let Some(session) = session::get() else { return false };
    let Some(names) = method.describe() else { return false };
    let framework = crate::base::process::is_framework(&names.path, &names.assembly);
    if !session.config.filter.traces(&names.name, &names.assembly, framework) {
        return false;
    }
    let key = method.key();
    let mut covered = COVERED.lock().unwrap_or_else(|e| e.into_inner());
    if !covered.iter().any(|&(k, _)| k == key) {
        let id = methods().insert(key.0, names);
        covered.push((key, id));
    }
    true
}

/// Every covered method's blocks and counts, into the final snapshot only (`last`, see the
/// module's documentation): a `snapshot::Contribution`, registered by [`start`].
fn contribute(snapshot: &mut sonde_protocol::Snapshot, last: bool) {
    let Some(profiler) = PROFILER.get().filter(|_| last) else { return };
    let covered = COVERED.lock().unwrap_or_else(|e| e.into_inner()).clone();
    snapshot.coverage.extend(covered.into_iter().map(|(key, method)| {
        let mut blocks = profiler.coverage_data(key);
        blocks.sort_unstable();
        blocks.dedup_by_key(|b| b.0);
        MethodBlocks { method, blocks }
    }));
}
