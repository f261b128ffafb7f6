//! Fault injection's rules and what happened to each fault (`sonde record --inject`;
//! docs/INJECT.md), the same for every runtime: which rule a method gets, each call's decision
//! ([`Site::hit`]), the faults thrown and the method that caught each, and the snapshot's
//! `faults`. A backend applies the rules to code (CoreCLR: `coreclr::inject`, a prologue before
//! the method's first instruction) or, where it cannot, says why for each rule ([`configure`]'s
//! `unsupported`: Mono).
//!
//! **What happened next** is followed on the throwing thread: the decision marks the thread, the
//! runtime's `ExceptionThrown` that follows is the fault's ([`thrown`]), and the first
//! `ExceptionCatcherEnter` after it ([`caught`], not counting exceptions thrown and caught
//! meanwhile, e.g. in a `finally` the fault runs) names the method that caught it. A fault
//! nothing catches kills the program: its `caught_in` stays empty.

use crate::base::log::log;
use crate::tree::clock;
use crate::tree::threads::gettid;
use sonde_profile::{Fault, FaultRule, Faults};
use sonde_protocol::{AgentConfig, InjectRule};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

/// One rewritten method's fault site: what a backend's prologue asks [`Site::hit`] about.
pub struct Site {
    rule: u32,
    method: u32,
    /// The rule's trigger (a copy: the decision takes no lock).
    trigger: InjectRule,
    calls: AtomicU64,
    /// xorshift64 state for `@p`, seeded from the method's name.
    random: AtomicU64,
}

impl Site {
    /// The site of rule `rule` in method `method` (a methods-table id, named `name`), or None
    /// when the rule is gone. Leaked: the rewritten code points at it for the process's life.
    pub fn leak(rule: u32, method: u32, name: &str) -> Option<&'static Site> {
        let trigger = state().as_ref()?.rules.get(rule as usize)?.rule.clone();
        Some(Box::leak(Box::new(Site {
            rule,
            method,
            trigger,
            calls: AtomicU64::new(0),
            random: AtomicU64::new(seed(name)),
        })))
    }

    /// The exception the site's rule throws.
    pub fn exception(&self) -> &str {
        &self.trigger.exception
    }

    /// Does this call fail? Counts the call, applies the rule and, for a fault, records it and
    /// marks the thread (the `ExceptionThrown` that follows is the fault's). Takes no runtime
    /// call: it runs in the program's code, wherever the backend's prologue asks.
    pub fn hit(&self) -> bool {
        let calls = self.calls.fetch_add(1, Relaxed) + 1;
        let trigger = &self.trigger;
        if !trigger.chooses(calls) || (trigger.probability < 1.0 && next_random(&self.random) >= trigger.probability) {
            return false;
        }
        let at_ns = clock::elapsed_ns();
        let mut guard = state();
        let Some(state) = guard.as_mut() else { return false };
        let os_tid = gettid();
        let fault = Fault { rule: self.rule, method: self.method, os_tid, at_ns, caught_in: None };
        if state.injected.len() < Faults::MAX_INJECTED {
            let index = state.injected.len() as u32;
            state.track(os_tid).pending = Some(index);
            state.injected.push(fault);
        } else {
            state.dropped += 1;
        }
        true
    }
}

struct Rule {
    rule: InjectRule,
    report: FaultRule,
}

#[derive(Default)]
struct State {
    rules: Vec<Rule>,
    injected: Vec<Fault>,
    dropped: u64,
    /// Threads with a fault in progress, by OS thread id (few: removed once caught).
    tracks: Vec<(u32, Track)>,
}

impl State {
    fn track(&mut self, tid: u32) -> &mut Track {
        let at = match self.tracks.iter().position(|(t, _)| *t == tid) {
            Some(at) => at,
            None => {
                self.tracks.push((tid, Track::default()));
                self.tracks.len() - 1
            }
        };
        &mut self.tracks[at].1
    }

    fn forget(&mut self, tid: u32) {
        self.tracks.retain(|(t, track)| *t != tid || track.pending.is_some() || track.in_flight.is_some());
    }
}

static STATE: Mutex<Option<State>> = Mutex::new(None);

fn state() -> std::sync::MutexGuard<'static, Option<State>> {
    STATE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Whether rules are active: the exception callbacks look no further when not.
static ACTIVE: AtomicBool = AtomicBool::new(false);

/// A thread's fault in progress. Kept in the state by OS thread id, not in thread-local
/// storage: an attached agent takes its thread-locals from the small static reserve glibc keeps
/// for libraries loaded after start-up, and faults are rare.
#[derive(Clone, Copy, Default)]
struct Track {
    /// A fault this thread decided to throw, not yet seen by `ExceptionThrown`.
    pending: Option<u32>,
    /// The fault this thread is unwinding, and how many other exceptions were thrown since
    /// (each caught before the fault is).
    in_flight: Option<(u32, u32)>,
}

/// Takes the session's rules; `unsupported`: why this runtime cannot apply them (each rule
/// reports it).
pub fn configure(config: &AgentConfig, unsupported: Option<&str>) {
    if config.inject.is_empty() {
        return;
    }
    let rules = config
        .inject
        .iter()
        .map(|rule| Rule {
            report: FaultRule {
                rule: rule.to_string(),
                exception: rule.exception.clone(),
                methods: Vec::new(),
                problems: unsupported.map(str::to_string).into_iter().collect(),
            },
            rule: rule.clone(),
        })
        .collect();
    *state() = Some(State { rules, ..State::default() });
    ACTIVE.store(true, Relaxed);
    crate::ipc::snapshot::contribute(contribute);
}

/// Whether rules are active.
pub fn active() -> bool {
    state().as_ref().is_some_and(|s| !s.rules.is_empty())
}

/// The first rule matching method `name`, if any.
pub fn rule_for(name: &str) -> Option<u32> {
    let state = state();
    let state = state.as_ref()?;
    state.rules.iter().position(|r| sonde_protocol::filter::glob(&r.rule.methods, name)).map(|i| i as u32)
}

/// Records that rule `rule` could not be applied to `method` (a name), once per reason.
pub fn problem(rule: u32, method: &str, why: &str) {
    log!("inject: {method} left as it is: {why}");
    if let Some(r) = state().as_mut().and_then(|s| s.rules.get_mut(rule as usize)) {
        let text = format!("{method}: {why}");
        if r.report.problems.len() < 16 && !r.report.problems.contains(&text) {
            r.report.problems.push(text);
        }
    }
}

/// Method `method` now runs with rule `rule`'s prologue.
pub fn applied(rule: u32, method: u32) {
    if let Some(r) = state().as_mut().and_then(|s| s.rules.get_mut(rule as usize)) {
        r.report.methods.push(method);
    }
}

fn seed(name: &str) -> u64 {
    // FNV-1a, never 0 (xorshift's fixed point).
    let hash = name.bytes().fold(0xCBF2_9CE4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01B3));
    hash | 1
}

/// A uniform draw in [0, 1) from the site's xorshift64 state (racing threads may draw the same
/// number: `@p` is a rate, not a schedule).
fn next_random(state: &AtomicU64) -> f64 {
    let mut x = state.load(Relaxed);
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    state.store(x, Relaxed);
    (x >> 11) as f64 / (1u64 << 53) as f64
}

/// `ExceptionThrown` on this thread.
pub fn thrown() {
    if !ACTIVE.load(Relaxed) {
        return;
    }
    let tid = gettid();
    let mut guard = state();
    let Some(state) = guard.as_mut() else { return };
    let Some((_, track)) = state.tracks.iter_mut().find(|(t, _)| *t == tid) else { return };
    if let Some(fault) = track.pending.take() {
        track.in_flight = Some((fault, 0));
    } else if let Some((fault, nested)) = track.in_flight {
        track.in_flight = Some((fault, nested + 1));
    }
}

/// `ExceptionCatcherEnter` on this thread: `caught_in` names the catching method (a
/// methods-table id), asked for only when it is the fault's catcher.
pub fn caught(caught_in: impl FnOnce() -> Option<u32>) {
    if !ACTIVE.load(Relaxed) {
        return;
    }
    let tid = gettid();
    let fault = {
        let mut guard = state();
        let Some(state) = guard.as_mut() else { return };
        let Some((_, track)) = state.tracks.iter_mut().find(|(t, _)| *t == tid) else { return };
        let Some((fault, nested)) = track.in_flight else { return };
        if nested > 0 {
            track.in_flight = Some((fault, nested - 1));
            return;
        }
        track.in_flight = None;
        state.forget(tid);
        fault
    };
    // Named without the lock: naming calls the runtime.
    let method = caught_in();
    if let Some(f) = state().as_mut().and_then(|s| s.injected.get_mut(fault as usize)) {
        f.caught_in = method;
    }
}

/// The rules and the faults so far: each snapshot's `faults` (a `snapshot::Contribution`,
/// registered by [`configure`]).
fn contribute(snapshot: &mut sonde_protocol::Snapshot, _last: bool) {
    snapshot.faults = faults();
}

fn faults() -> Faults {
    let state = state();
    let Some(state) = state.as_ref() else { return Faults::default() };
    Faults {
        rules: state
            .rules
            .iter()
            .map(|r| {
                let mut report = r.report.clone();
                report.methods.sort_unstable();
                report.methods.dedup();
                report
            })
            .collect(),
        injected: state.injected.clone(),
        dropped: state.dropped,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_are_uniform_enough_for_a_rate() {
        let state = AtomicU64::new(seed("Acme.Db.Query"));
        let hits = (0..100_000).filter(|_| next_random(&state) < 0.05).count();
        assert!((4_500..5_500).contains(&hits), "{hits}");
    }
}
