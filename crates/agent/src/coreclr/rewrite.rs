//! IL rewriting at JIT time, for coverage mode (`super::coverage`: a counter per block) and the
//! error simulator (`super::inject`: a throwing prologue), together when both apply: before a
//! method's first compilation (`JITCompilationStarted`) its IL is read once, edited for each, and
//! set once (`SetILFunctionBody`). Later compilations of the method (higher tiers, generic
//! instantiations) use the rewritten IL.
//!
//! **Inlining.** A method the JIT inlines into a caller compiled before the method itself was
//! would run its original IL there. So while a method that is to be rewritten has not been, it
//! is not inlined (`JITInlining`); once rewritten, it may be (the JIT inlines the new IL). With
//! tiered compilation the first compilation of every method is unoptimised and inlines nothing,
//! so this matters for code compiled optimised at once (`AggressiveOptimization`, tiering off).

use super::rewrite_error::RewriteError;
use super::{coverage, inject};
use crate::base::log::log;
use crate::base::running;
use crate::faults;
use crate::session;
use crate::tree::methods::methods;
use sonde_clr::ProfilerInfo;
use sonde_clr::sys::*;
use sonde_il::MethodBody;
use sonde_profile::Mode;
use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Methods rewritten, and the time spent rewriting them (reading, editing, defining references,
/// setting the body), for the log at shutdown and the benchmarks.
static REWRITTEN: AtomicU64 = AtomicU64::new(0);
static REWRITE_NS: AtomicU64 = AtomicU64::new(0);

/// Logs how many methods were rewritten and the mean time each took.
pub fn log_stats() {
    let (n, ns) = (REWRITTEN.load(Relaxed), REWRITE_NS.load(Relaxed));
    if n > 0 {
        log!("IL rewriting: {n} methods in {:.1} ms, {:.1} us each", ns as f64 / 1e6, ns as f64 / 1e3 / n as f64);
    }
}

/// What was decided for a MethodDef.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Decision {
    /// A thread is rewriting it.
    Rewriting,
    /// Its IL is the rewritten one.
    Rewritten,
    /// Nothing applies, or it could not be rewritten.
    LeftAlone,
}

/// Per (module, MethodDef token).
static DECIDED: Mutex<Option<HashMap<(ModuleID, u32), Decision>>> = Mutex::new(None);

fn decided(key: (ModuleID, u32)) -> Option<Decision> {
    DECIDED.lock().unwrap_or_else(|e| e.into_inner()).as_ref().and_then(|d| d.get(&key).copied())
}

/// Records a first decision; false if one was already there (another thread got there first).
fn decide(key: (ModuleID, u32), decision: Decision) -> bool {
    let mut guard = DECIDED.lock().unwrap_or_else(|e| e.into_inner());
    let map = guard.get_or_insert_with(HashMap::new);
    if map.contains_key(&key) {
        return false;
    }
    map.insert(key, decision);
    true
}

fn settle(key: (ModuleID, u32), decision: Decision) {
    if let Some(map) = DECIDED.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
        map.insert(key, decision);
    }
}

/// Whether this session rewrites IL at all.
pub fn active() -> bool {
    running::mode() == Some(Mode::Coverage) || faults::active()
}

/// What applies to a method: coverage, and the index of the rule that injects into it.
fn wanted(info: &ProfilerInfo, function: FunctionID) -> Option<(sonde_metadata::MethodNames, bool, Option<u32>)> {
    let session = session::get()?;
    let names = info.method_names(function).ok()?;
    let framework = crate::base::process::is_framework(&names.path, &names.assembly);
    let cover =
        session.config.mode == Mode::Coverage && session.config.filter.traces(&names.name, &names.assembly, framework);
    let rule = faults::rule_for(&names.name);
    (cover || rule.is_some()).then_some((names, cover, rule))
}

/// `JITCompilationStarted`: rewrites `function`'s IL if coverage or a rule applies and it has
/// not been rewritten. A body that cannot be rewritten is left as it is (logged; for a rule, in
/// the profile).
pub fn compiling(info: &ProfilerInfo, function: FunctionID) {
    let Ok((_, module, token)) = info.function_info(function) else { return };
    if decided((module, token)).is_some() {
        return;
    }
    let Some((names, cover, rule)) = wanted(info, function) else {
        decide((module, token), Decision::LeftAlone);
        return;
    };
    if !decide((module, token), Decision::Rewriting) {
        return;
    }
    let started = std::time::Instant::now();
    let name = names.name.clone();
    let method = methods().insert(function, names);
    // Err(None): nothing to change after all (the rule's problem is recorded already).
    let edited = (|| -> Result<_, Option<RewriteError>> {
        let original = info.il_function_body(module, token).map_err(RewriteError::runtime("GetILFunctionBody"))?;
        let mut body = MethodBody::parse(&original).map_err(RewriteError::from)?;
        let mut counters = None;
        if cover {
            let instrumented = coverage::instrument(&body)?;
            body = instrumented.body;
            counters = Some((instrumented.offsets, instrumented.counters));
        }
        let mut injected = None;
        if let Some(rule) = rule {
            match inject::prologue(info, module, rule, method, &name)
                .and_then(|code| Ok(body.prepend(&code, inject::PROLOGUE_STACK)?))
            {
                Ok(with_prologue) => {
                    body = with_prologue;
                    injected = Some(rule);
                }
                // Coverage still applies when the fault cannot be injected.
                Err(why) => faults::problem(rule, &name, &why.to_string()),
            }
        }
        if counters.is_none() && injected.is_none() {
            return Err(None);
        }
        info.set_il_function_body(module, token, &body.encode()).map_err(RewriteError::runtime("SetILFunctionBody"))?;
        if let Some(rule) = injected {
            faults::applied(rule, method);
        }
        Ok(counters)
    })();
    settle((module, token), if edited.is_ok() { Decision::Rewritten } else { Decision::LeftAlone });
    if edited.is_ok() {
        REWRITTEN.fetch_add(1, Relaxed);
        REWRITE_NS.fetch_add(started.elapsed().as_nanos() as u64, Relaxed);
    }
    match edited {
        Ok(Some((offsets, counters))) => coverage::covered(method, offsets, counters),
        Ok(None) => {}
        Err(None) => {}
        Err(Some(why)) => match rule {
            Some(rule) => faults::problem(rule, &name, &why.to_string()),
            None => log!("coverage: {name} left as it is: {why}"),
        },
    }
}

/// `JITInlining`: keeps `callee` out of its callers while it is to be rewritten but has not
/// been yet.
pub fn may_inline(info: &ProfilerInfo, callee: FunctionID) -> bool {
    let Ok((_, module, token)) = info.function_info(callee) else { return true };
    match decided((module, token)) {
        Some(Decision::Rewriting) => false,
        Some(Decision::Rewritten | Decision::LeftAlone) => true,
        None => {
            let alone = wanted(info, callee).is_none();
            if alone {
                decide((module, token), Decision::LeftAlone);
            }
            alone
        }
    }
}
