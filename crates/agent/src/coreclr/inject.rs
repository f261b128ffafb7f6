//! The error simulator on CoreCLR (`sonde record --inject`; docs/INJECT.md): a method a rule
//! matches gets, before its first compilation, a prologue that asks the agent whether this call
//! fails and, if so, throws the rule's exception before the method's own first instruction:
//!
//! ```text
//! ldc.i8 &site; conv.i            // this method's counters
//! ldc.i8 &site_hit; conv.i        // the agent's decision function
//! calli unmanaged cdecl int32(native int)
//! brfalse.s +6                    // 0: run the method
//! newobj instance void Exception::.ctor()
//! throw
//! ```
//!
//! The prologue is outside every exception region of the method (`MethodBody::prepend`): the
//! fault leaves the method, as if it had failed inside. The exception's constructor is named
//! through metadata the module gets for it (`IMetaDataEmit`): its own TypeDef when the module
//! defines the type, else an AssemblyRef to the loaded assembly that defines it, a TypeRef and a
//! MemberRef. The `calli` signature is a StandAloneSig of the module.
//!
//! **What happened next** is followed on the throwing thread: the decision marks the thread, the
//! runtime's `ExceptionThrown` that follows is the fault's, and the first `ExceptionCatcherEnter`
//! after it (not counting exceptions thrown and caught meanwhile, e.g. in a `finally` the fault
//! runs) names the method that caught it. A fault nothing catches kills the program: its
//! `caught_in` stays empty.

use crate::log::log;
use crate::tree::clock;
use crate::tree::methods::methods;
use crate::tree::threads::gettid;
use sonde_clr::sys::*;
use sonde_clr::{AssemblyIdentity, ProfilerInfo};
use sonde_profile::{Fault, FaultRule, Faults};
use sonde_protocol::{AgentConfig, InjectRule};
use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

/// One rewritten method's fault site: what its prologue passes to [`site_hit`].
pub struct Site {
    rule: u32,
    method: u32,
    /// The rule's trigger (a copy: the decision takes no lock).
    trigger: InjectRule,
    calls: AtomicU64,
    /// xorshift64 state for `@p`, seeded from the method's name.
    random: AtomicU64,
}

struct Rule {
    rule: InjectRule,
    report: FaultRule,
}

/// Per module: the `calli` signature token, and each rule's constructor token.
#[derive(Default)]
struct ModuleRefs {
    calli_sig: Option<u32>,
    ctors: HashMap<u32, u32>,
    assembly_refs: HashMap<String, u32>,
}

#[derive(Default)]
struct State {
    rules: Vec<Rule>,
    injected: Vec<Fault>,
    dropped: u64,
    /// Modules loaded so far, where exception types are looked for.
    modules: Vec<ModuleID>,
    refs: HashMap<ModuleID, ModuleRefs>,
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
/// storage: each copy of the agent an attach loads takes static TLS, of which glibc keeps
/// little (README, attach limits), and faults are rare.
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
}

/// Whether rules are active.
pub fn active() -> bool {
    state().as_ref().is_some_and(|s| !s.rules.is_empty())
}

/// The event-mask flags the rules need: compilations (to rewrite), exceptions (to follow the
/// faults), module loads (to find exception types), and precompiled code ignored when a rule
/// may match framework methods.
pub fn event_mask(config: &AgentConfig) -> u32 {
    if config.inject.is_empty() {
        return 0;
    }
    let mut mask = COR_PRF_MONITOR_JIT_COMPILATION | COR_PRF_MONITOR_EXCEPTIONS | COR_PRF_MONITOR_MODULE_LOADS;
    if config.inject.iter().any(InjectRule::may_match_framework) {
        mask |= COR_PRF_DISABLE_ALL_NGEN_IMAGES;
    }
    mask
}

/// The first rule matching method `name`, if any.
pub fn rule_for(name: &str) -> Option<u32> {
    let state = state();
    let state = state.as_ref()?;
    state.rules.iter().position(|r| sonde_protocol::filter::glob(&r.rule.methods, name)).map(|i| i as u32)
}

pub fn module_loaded(module: ModuleID) {
    if let Some(state) = state().as_mut() {
        state.modules.push(module);
    }
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

/// The prologue that injects rule `rule`'s faults into method `method` (a methods-table id)
/// of `module`, and its extra stack.
pub fn prologue(info: &ProfilerInfo, module: ModuleID, rule: u32, method: u32, name: &str) -> Result<Vec<u8>, String> {
    let (trigger, modules) = {
        let state = state();
        let state = state.as_ref().ok_or("no rules")?;
        let r = state.rules.get(rule as usize).ok_or("no such rule")?;
        (r.rule.clone(), state.modules.clone())
    };
    let (ctor, sig) = references(info, module, rule, &trigger.exception, &modules)?;
    let site: &'static Site = Box::leak(Box::new(Site {
        rule,
        method,
        trigger,
        calls: AtomicU64::new(0),
        random: AtomicU64::new(seed(name)),
    }));
    Ok(code(site, ctor, sig))
}

/// Method `method` now runs with rule `rule`'s prologue.
pub fn applied(rule: u32, method: u32) {
    if let Some(r) = state().as_mut().and_then(|s| s.rules.get_mut(rule as usize)) {
        r.report.methods.push(method);
    }
}

/// The prologue's bytes (see the module's documentation).
fn code(site: &'static Site, ctor: u32, calli_sig: u32) -> Vec<u8> {
    let hit: unsafe extern "C" fn(*const Site) -> i32 = site_hit;
    let mut code = Vec::with_capacity(PROLOGUE_LEN);
    code.push(0x21); // ldc.i8
    code.extend_from_slice(&(site as *const Site as u64).to_le_bytes());
    code.push(0xD3); // conv.i
    code.push(0x21); // ldc.i8
    code.extend_from_slice(&(hit as usize as u64).to_le_bytes());
    code.push(0xD3); // conv.i
    code.push(0x29); // calli
    code.extend_from_slice(&calli_sig.to_le_bytes());
    code.extend_from_slice(&[0x2C, 0x06]); // brfalse.s over newobj and throw
    code.push(0x73); // newobj
    code.extend_from_slice(&ctor.to_le_bytes());
    code.push(0x7A); // throw
    code
}

const PROLOGUE_LEN: usize = 33;

/// Stack the prologue needs (two pointers before the `calli`).
pub const PROLOGUE_STACK: u16 = 2;

/// `unmanaged cdecl int32 (native int)`: the signature of [`site_hit`] for `calli`.
const CALLI_SIG: [u8; 4] = [0x01, 0x01, ELEMENT_TYPE_I4, ELEMENT_TYPE_I];

/// The tokens `module` needs for rule `rule`: its exception's constructor and the `calli`
/// signature, defined once per module.
fn references(
    info: &ProfilerInfo,
    module: ModuleID,
    rule: u32,
    exception: &str,
    modules: &[ModuleID],
) -> Result<(u32, u32), String> {
    // One writer at a time (the state lock is not held while the runtime is called, but this
    // lock is: metadata calls never call back into the profiler).
    static EMIT: Mutex<()> = Mutex::new(());
    let _emit = EMIT.lock().unwrap_or_else(|e| e.into_inner());
    let known = state().as_ref().and_then(|s| s.refs.get(&module)).map(|r| (r.ctors.get(&rule).copied(), r.calli_sig));
    if let Some((Some(ctor), Some(sig))) = known {
        return Ok((ctor, sig));
    }
    let writer = info.module_writer(module).map_err(|e| format!("cannot write the module's metadata: {e}"))?;
    let sig = match known.and_then(|k| k.1) {
        Some(sig) => sig,
        None => writer.signature_token(&CALLI_SIG).map_err(|e| format!("GetTokenFromSig: {e}"))?,
    };
    let ctor = match known.and_then(|k| k.0) {
        Some(ctor) => ctor,
        None => {
            if let Some(own) = writer.constructible_type(exception) {
                own.ctor
            } else {
                let (defining, _) = modules
                    .iter()
                    .find_map(|&m| info.constructible_type(m, exception).map(|t| (m, t)))
                    .ok_or_else(|| {
                        format!(
                            "no loaded assembly defines a public {exception} with a public constructor taking no arguments"
                        )
                    })?;
                let assembly: AssemblyIdentity =
                    info.assembly_identity(defining).map_err(|e| format!("reading {exception}'s assembly: {e}"))?;
                let cached =
                    state().as_ref().and_then(|s| s.refs.get(&module)?.assembly_refs.get(&assembly.name).copied());
                let scope = match cached {
                    Some(scope) => scope,
                    None => {
                        let scope =
                            writer.define_assembly_ref(&assembly).map_err(|e| format!("DefineAssemblyRef: {e}"))?;
                        if let Some(s) = state().as_mut() {
                            s.refs.entry(module).or_default().assembly_refs.insert(assembly.name.clone(), scope);
                        }
                        scope
                    }
                };
                let type_ref =
                    writer.define_type_ref(scope, exception).map_err(|e| format!("DefineTypeRefByName: {e}"))?;
                writer
                    .define_member_ref(type_ref, ".ctor", &sonde_clr::DEFAULT_CTOR_SIG)
                    .map_err(|e| format!("DefineMemberRef: {e}"))?
            }
        }
    };
    if let Some(s) = state().as_mut() {
        let refs = s.refs.entry(module).or_default();
        refs.calli_sig = Some(sig);
        refs.ctors.insert(rule, ctor);
    }
    Ok((ctor, sig))
}

fn seed(name: &str) -> u64 {
    // FNV-1a, never 0 (xorshift's fixed point).
    let hash = name.bytes().fold(0xCBF2_9CE4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01B3));
    hash | 1
}

/// The prologue's question: does this call fail? Called from managed code (`calli`, in the
/// runtime's preemptive mode: it must not call the runtime). Counts the call, applies the rule
/// and, for a fault, records it and marks the thread.
///
/// # Safety
/// `site` is a [`Site`] leaked by [`prologue`] (alive for the process).
unsafe extern "C" fn site_hit(site: *const Site) -> i32 {
    // SAFETY: see above; only ever read.
    let site = unsafe { &*site };
    let calls = site.calls.fetch_add(1, Relaxed) + 1;
    let trigger = &site.trigger;
    if !trigger.chooses(calls) || (trigger.probability < 1.0 && next_random(&site.random) >= trigger.probability) {
        return 0;
    }
    let at_ns = clock::elapsed_ns();
    let mut guard = state();
    let Some(state) = guard.as_mut() else { return 0 };
    let os_tid = gettid();
    let fault = Fault { rule: site.rule, method: site.method, os_tid, at_ns, caught_in: None };
    if state.injected.len() < Faults::MAX_INJECTED {
        let index = state.injected.len() as u32;
        state.track(os_tid).pending = Some(index);
        state.injected.push(fault);
    } else {
        state.dropped += 1;
    }
    1
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

/// The rules and the faults so far (snapshots).
pub fn snapshot() -> Faults {
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

/// The catching function's id in the methods table (named now if it was not).
pub fn method_id(info: &ProfilerInfo, function: FunctionID) -> Option<u32> {
    if let Some(id) = methods().id_of(function) {
        return Some(id);
    }
    info.method_names(function).ok().map(|names| methods().insert(function, names))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prologue_decodes_as_documented() {
        let site: &'static Site = Box::leak(Box::new(Site {
            rule: 0,
            method: 0,
            trigger: InjectRule::parse("A.B=System.Exception").unwrap(),
            calls: AtomicU64::new(0),
            random: AtomicU64::new(1),
        }));
        let code = code(site, 0x0A00_0007, 0x1100_0002);
        assert_eq!(code.len(), PROLOGUE_LEN);
        let body = sonde_il::MethodBody {
            max_stack: 8,
            local_var_sig: 0,
            init_locals: false,
            code: code.clone(),
            clauses: Vec::new(),
        };
        let ops: Vec<u16> = body.instructions().unwrap().iter().map(|i| i.opcode).collect();
        assert_eq!(ops, [0x21, 0xD3, 0x21, 0xD3, 0x29, 0x2C, 0x73, 0x7A]);
        // The branch skips exactly the throw: it lands on the end of the prologue.
        assert_eq!(code[code.len() - 8..code.len() - 6], [0x2C, 0x06]);
        assert_eq!(u32::from_le_bytes(code[code.len() - 5..code.len() - 1].try_into().unwrap()), 0x0A00_0007);
    }

    #[test]
    fn draws_are_uniform_enough_for_a_rate() {
        let state = AtomicU64::new(seed("Acme.Db.Query"));
        let hits = (0..100_000).filter(|_| next_random(&state) < 0.05).count();
        assert!((4_500..5_500).contains(&hits), "{hits}");
    }
}
