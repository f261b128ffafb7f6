//! Coverage mode on CoreCLR (`sonde record --mode coverage`; docs/COVERAGE.md): before a
//! method's first compilation (`JITCompilationStarted`) its IL gets a counter at the start of
//! every basic block (`sonde_il`), and the runtime compiles that instead (`SetILFunctionBody`).
//! The counters live in the agent; snapshots send them by method and IL offset, and the
//! controller turns blocks into source lines.
//!
//! **The probe** is plain IL, no call and no new metadata: `ldc.i8 &counter; conv.i; dup;
//! ldind.i4; ldc.i4.1; add; stind.i4` (16 bytes, 3 stack slots). An increment is not atomic:
//! two threads running one block at the same instant can count once between them. Whether a
//! block ran is exact; how often is exact on one thread.
//!
//! The rewriting itself (when, which methods, once each) is `super::rewrite`'s.
//!
//! **Which methods:** those the filter traces (`--include`/`--exclude`/`--all`; the program's
//! own code by default), once per MethodDef (generic instantiations share their IL; later tiers
//! compile the rewritten IL again). With `--all`, precompiled framework code is JIT-compiled
//! instead so that it is rewritten too.

use super::rewrite_error::RewriteError;
use crate::ipc::link::SnapshotFacts;
use crate::session::StartError;
use sonde_clr::ProfilerInfo;
use sonde_clr::sys::*;
use sonde_il::MethodBody;
use sonde_il::opcodes::Operand;
use sonde_profile::MethodBlocks;
use sonde_protocol::AgentConfig;
use std::collections::HashSet;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

/// One rewritten method: its id in the methods table, its blocks' IL offsets and counters.
struct Covered {
    method: u32,
    offsets: Box<[u32]>,
    counters: &'static [AtomicU32],
}

#[derive(Default)]
struct State {
    covered: Vec<Covered>,
}

static STATE: Mutex<Option<State>> = Mutex::new(None);

/// Extra stack the probe needs.
const PROBE_STACK: u16 = 3;

/// Sets coverage mode up: JIT compilation events only.
pub fn start(info: &ProfilerInfo, config: &AgentConfig) -> Result<SnapshotFacts, StartError> {
    let mut mask = COR_PRF_MONITOR_JIT_COMPILATION | super::inject::event_mask(config);
    if config.filter.may_trace_framework() {
        // Precompiled (ReadyToRun) framework code is never compiled, so never rewritten.
        mask |= COR_PRF_DISABLE_ALL_NGEN_IMAGES;
    }
    info.set_event_mask(mask, 0).map_err(|e| StartError::runtime("SetEventMask", e))?;
    *STATE.lock().unwrap_or_else(|e| e.into_inner()) = Some(State::default());
    crate::ipc::snapshot::contribute(contribute);
    Ok(SnapshotFacts { sample_interval_ns: 0, exact_timing: false, sampling: false, mapped_files: false })
}

/// A body with a counter per block ([`instrument`]).
pub struct Instrumented {
    pub body: MethodBody,
    /// The blocks' IL offsets in the original body.
    pub offsets: Box<[u32]>,
    pub counters: &'static [AtomicU32],
}

/// Gives `body` a counter per block.
pub fn instrument(body: &MethodBody) -> Result<Instrumented, RewriteError> {
    let offsets: Box<[u32]> = leaders(body)?.into();
    let counters: &'static [AtomicU32] = Box::leak(offsets.iter().map(|_| AtomicU32::new(0)).collect());
    let probes: Vec<[u8; 16]> = counters.iter().map(probe).collect();
    let inserts: Vec<(u32, &[u8])> = offsets.iter().zip(&probes).map(|(&o, p)| (o, &p[..])).collect();
    let edited = body.insert(&inserts, PROBE_STACK)?;
    Ok(Instrumented { body: edited, offsets, counters })
}

/// Method `method` (a methods-table id) now runs with `counters` at `offsets`.
pub fn covered(method: u32, offsets: Box<[u32]>, counters: &'static [AtomicU32]) {
    let mut state = STATE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(state) = state.as_mut() {
        state.covered.push(Covered { method, offsets, counters });
    }
}

/// `counter += 1` in IL: `ldc.i8 &counter; conv.i; dup; ldind.i4; ldc.i4.1; add; stind.i4`.
fn probe(counter: &AtomicU32) -> [u8; 16] {
    let mut code = [0u8; 16];
    code[0] = 0x21; // ldc.i8
    code[1..9].copy_from_slice(&(counter.as_ptr() as u64).to_le_bytes());
    code[9..].copy_from_slice(&[0xD3, 0x25, 0x4A, 0x17, 0x58, 0x54, 0x00]); // conv.i dup ldind.i4 ldc.i4.1 add stind.i4 nop
    code
}

/// The first instruction of every basic block where a probe may go, ascending: the method's
/// start, every branch target, the instruction after every branch or exit, and every exception
/// region's and handler's start.
pub fn leaders(body: &MethodBody) -> Result<Vec<u32>, sonde_il::Error> {
    let instructions = body.instructions()?;
    let mut leaders = vec![0u32];
    for ins in &instructions {
        let next = ins.offset + ins.len;
        let code = &body.code[ins.offset as usize..next as usize];
        let relative = |delta: i64| (i64::from(next) + delta) as u32;
        match ins.operand {
            Operand::ShortBranch => {
                leaders.push(relative(i64::from(code[1] as i8)));
                leaders.push(next);
            }
            Operand::Branch => {
                leaders.push(relative(i64::from(i32::from_le_bytes(code[1..5].try_into().expect("4 bytes")))));
                leaders.push(next);
            }
            Operand::Switch => {
                for k in 0..(code.len() - 5) / 4 {
                    let delta = i32::from_le_bytes(code[5 + 4 * k..9 + 4 * k].try_into().expect("4 bytes"));
                    leaders.push(relative(i64::from(delta)));
                }
                leaders.push(next);
            }
            // ret, throw, rethrow, endfinally, endfilter, jmp: what follows starts a block.
            _ if matches!(ins.opcode, 0x2A | 0x7A | 0xFE1A | 0xDC | 0xFE11 | 0x27) => leaders.push(next),
            _ => {}
        }
    }
    for c in &body.clauses {
        leaders.push(c.try_offset);
        leaders.push(c.handler_offset);
        if c.flags & sonde_il::Clause::FILTER != 0 {
            leaders.push(c.class_or_filter);
        }
    }
    let insertable: HashSet<u32> = body.insertable()?.into_iter().collect();
    leaders.retain(|o| insertable.contains(o));
    leaders.sort_unstable();
    leaders.dedup();
    Ok(leaders)
}

/// Every rewritten method's blocks and their counts so far: each snapshot's coverage
/// (a `snapshot::Contribution`, registered by [`start`]).
fn contribute(snapshot: &mut sonde_protocol::Snapshot, _last: bool) {
    let state = STATE.lock().unwrap_or_else(|e| e.into_inner());
    let Some(state) = state.as_ref() else { return };
    snapshot.coverage.extend(state.covered.iter().map(|c| MethodBlocks {
        method: c.method,
        blocks: c.offsets.iter().zip(c.counters).map(|(&o, n)| (o, u64::from(n.load(Relaxed)))).collect(),
    }));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_start_at_targets_after_branches_and_at_handlers() {
        // 0 ldarg.0; 1 brfalse.s 6; 3 ldc.i4.1; 4 br.s 7; 6 ldc.i4.0; 7 ret
        let code = vec![0x02, 0x2C, 0x03, 0x17, 0x2B, 0x01, 0x16, 0x2A];
        let body = MethodBody { max_stack: 8, local_var_sig: 0, init_locals: false, code, clauses: Vec::new() };
        assert_eq!(leaders(&body).unwrap(), [0, 3, 6, 7]);
    }

    #[test]
    fn the_probe_is_an_increment_of_its_counter() {
        let counter = AtomicU32::new(0);
        let p = probe(&counter);
        assert_eq!(p[0], 0x21);
        assert_eq!(u64::from_le_bytes(p[1..9].try_into().unwrap()), counter.as_ptr() as u64);
        // It decodes as seven instructions and a nop, with no branch.
        let body =
            MethodBody { max_stack: 8, local_var_sig: 0, init_locals: false, code: p.to_vec(), clauses: Vec::new() };
        let ops: Vec<u16> = body.instructions().unwrap().iter().map(|i| i.opcode).collect();
        assert_eq!(ops, [0x21, 0xD3, 0x25, 0x4A, 0x17, 0x58, 0x54, 0x00]);
    }
}
