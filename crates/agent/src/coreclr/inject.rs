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
//! The rules, the decision and what happened to each fault are the same on every runtime:
//! `crate::faults`. This file is what CoreCLR adds: the prologue and the metadata it needs.

use super::rewrite_error::RewriteError;
use crate::faults::{self, Site};
use crate::tree::methods::methods;
use sonde_clr::sys::*;
use sonde_clr::{AssemblyIdentity, ProfilerInfo};
use sonde_protocol::{AgentConfig, InjectRule};
use std::collections::HashMap;
use std::sync::Mutex;

/// Per module: the `calli` signature token, and each rule's constructor token.
#[derive(Default)]
struct ModuleRefs {
    calli_sig: Option<u32>,
    ctors: HashMap<u32, u32>,
    assembly_refs: HashMap<String, u32>,
}

/// What the prologues of each module need, defined once per module.
#[derive(Default)]
struct Modules {
    /// Modules loaded so far, where exception types are looked for.
    loaded: Vec<ModuleID>,
    refs: HashMap<ModuleID, ModuleRefs>,
}

static MODULES: std::sync::LazyLock<Mutex<Modules>> = std::sync::LazyLock::new(Mutex::default);

fn modules() -> std::sync::MutexGuard<'static, Modules> {
    MODULES.lock().unwrap_or_else(|e| e.into_inner())
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

/// A module loaded: where exception types may be found (with rules only).
pub fn module_loaded(module: ModuleID) {
    if faults::active() {
        modules().loaded.push(module);
    }
}

/// The prologue that injects rule `rule`'s faults into method `method` (a methods-table id)
/// of `module`, and its extra stack.
pub fn prologue(
    info: &ProfilerInfo,
    module: ModuleID,
    rule: u32,
    method: u32,
    name: &str,
) -> Result<Vec<u8>, RewriteError> {
    let site = Site::leak(rule, method, name).ok_or(RewriteError::NoRule)?;
    let loaded = modules().loaded.clone();
    let (ctor, sig) = references(info, module, rule, site.exception(), &loaded)?;
    Ok(code(site, ctor, sig))
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
    loaded: &[ModuleID],
) -> Result<(u32, u32), RewriteError> {
    // One writer at a time (the modules' lock is not held while the runtime is called, but this
    // lock is: metadata calls never call back into the profiler).
    static EMIT: Mutex<()> = Mutex::new(());
    let _emit = EMIT.lock().unwrap_or_else(|e| e.into_inner());
    let known = modules().refs.get(&module).map(|r| (r.ctors.get(&rule).copied(), r.calli_sig));
    if let Some((Some(ctor), Some(sig))) = known {
        return Ok((ctor, sig));
    }
    let writer = info.module_writer(module).map_err(RewriteError::runtime("cannot write the module's metadata"))?;
    let sig = match known.and_then(|k| k.1) {
        Some(sig) => sig,
        None => writer.signature_token(&CALLI_SIG).map_err(RewriteError::runtime("GetTokenFromSig"))?,
    };
    let ctor = match known.and_then(|k| k.0) {
        Some(ctor) => ctor,
        None => {
            if let Some(own) = writer.constructible_type(exception) {
                own.ctor
            } else {
                let (defining, _) = loaded
                    .iter()
                    .find_map(|&m| info.constructible_type(m, exception).map(|t| (m, t)))
                    .ok_or_else(|| RewriteError::NoException(exception.to_string()))?;
                let assembly: AssemblyIdentity = info
                    .assembly_identity(defining)
                    .map_err(RewriteError::runtime(format!("reading {exception}'s assembly")))?;
                let cached = modules().refs.get(&module).and_then(|r| r.assembly_refs.get(&assembly.name).copied());
                let scope = match cached {
                    Some(scope) => scope,
                    None => {
                        let scope = writer
                            .define_assembly_ref(&assembly)
                            .map_err(RewriteError::runtime("DefineAssemblyRef"))?;
                        modules().refs.entry(module).or_default().assembly_refs.insert(assembly.name.clone(), scope);
                        scope
                    }
                };
                let type_ref =
                    writer.define_type_ref(scope, exception).map_err(RewriteError::runtime("DefineTypeRefByName"))?;
                writer
                    .define_member_ref(type_ref, ".ctor", &sonde_clr::DEFAULT_CTOR_SIG)
                    .map_err(RewriteError::runtime("DefineMemberRef"))?
            }
        }
    };
    let mut modules = modules();
    let refs = modules.refs.entry(module).or_default();
    refs.calli_sig = Some(sig);
    refs.ctors.insert(rule, ctor);
    Ok((ctor, sig))
}

/// The prologue's question: does this call fail? Called from managed code (`calli`, in the
/// runtime's preemptive mode: it must not call the runtime): [`Site::hit`].
///
/// # Safety
/// `site` is a [`Site`] leaked by [`prologue`] (alive for the process).
unsafe extern "C" fn site_hit(site: *const Site) -> i32 {
    // SAFETY: see above; only ever read.
    let site = unsafe { &*site };
    i32::from(site.hit())
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
        let config =
            AgentConfig { inject: vec![InjectRule::parse("A.B=System.Exception").unwrap()], ..Default::default() };
        faults::configure(&config, None);
        let site = Site::leak(0, 0, "A.B").unwrap();
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
}
