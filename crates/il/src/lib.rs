//! A small editor of ECMA-335 method bodies (partition II §25.4), for instrumentation: read a
//! body as the runtime hands it to a profiler (`ICorProfilerInfo::GetILFunctionBody`), insert
//! code before chosen instructions, and write a body the runtime accepts
//! (`SetILFunctionBody`).
//!
//! **What an insertion does.** Code inserted before the instruction at offset `o` runs whenever
//! that instruction would: falling through into `o`, branching to `o` (every branch, `leave`
//! and `switch` target at `o` now lands on the inserted code) and entering an exception clause
//! region or handler that starts at `o` (the region now starts with the inserted code). A
//! region that ended at `o` still ends before it.
//!
//! **What the output looks like.** Always a fat header (the max stack raised by what the
//! insertions need), the locals signature and init-locals flag kept, every short branch written
//! in its long form (offsets grow), and one fat exception section with every clause. The
//! result is as valid as the input: the editor checks the structure (every instruction known,
//! every branch and clause offset on an instruction boundary) and refuses a body it cannot
//! keep valid, rather than guess.
//!
//! **Where nothing may be inserted:** between a prefix (`tail.`, `volatile.`, `constrained.`, …)
//! and its instruction, and between a `tail.`-prefixed call and its `ret`. Such offsets are
//! refused (`Error::NotInsertable`); callers skip them.

#![forbid(unsafe_code)]

pub mod opcodes;

use opcodes::{Operand, PREFIX};

/// Why a body cannot be read or edited.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    #[error("the method body is truncated")]
    Truncated,
    #[error("unknown method header format {0:#x}")]
    BadHeader(u8),
    #[error("unknown opcode {0:#06x} at IL offset {1}")]
    UnknownOpcode(u16, u32),
    #[error("a branch at IL offset {0} targets {1}, which is not an instruction")]
    BadTarget(u32, i64),
    #[error("an exception clause names IL offset {0}, which is not an instruction boundary")]
    BadClause(u32),
    #[error("unknown method data section kind {0:#x}")]
    BadSection(u8),
    #[error("IL offset {0} is not an instruction, or code may not be inserted there")]
    NotInsertable(u32),
    #[error("the edited method would be too large")]
    TooLarge,
}

/// An exception-handling clause (the fat form's fields; offsets from the code's start).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Clause {
    /// 0 catch (typed), 1 filter, 2 finally, 4 fault.
    pub flags: u32,
    pub try_offset: u32,
    pub try_length: u32,
    pub handler_offset: u32,
    pub handler_length: u32,
    /// The catch type's token, or the filter's offset (flag 1).
    pub class_or_filter: u32,
}

impl Clause {
    pub const FILTER: u32 = 1;
}

/// A method body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MethodBody {
    pub max_stack: u16,
    /// The `StandAloneSig` token of the locals, 0 for none.
    pub local_var_sig: u32,
    pub init_locals: bool,
    pub code: Vec<u8>,
    pub clauses: Vec<Clause>,
}

/// One instruction of a body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Instruction {
    pub offset: u32,
    /// Opcode bytes plus operand.
    pub len: u32,
    /// The opcode; two-byte ones as `0xFE00 | second byte`.
    pub opcode: u16,
    pub operand: Operand,
}

const TINY: u8 = 0x2;
const FAT: u8 = 0x3;
const MORE_SECTS: u16 = 0x8;
const INIT_LOCALS: u16 = 0x10;
const SECT_EH: u8 = 0x1;
const SECT_FAT: u8 = 0x40;
const SECT_MORE: u8 = 0x80;

fn u16_at(b: &[u8], at: usize) -> Result<u16, Error> {
    Ok(u16::from_le_bytes(b.get(at..at + 2).ok_or(Error::Truncated)?.try_into().expect("2 bytes")))
}

fn u32_at(b: &[u8], at: usize) -> Result<u32, Error> {
    Ok(u32::from_le_bytes(b.get(at..at + 4).ok_or(Error::Truncated)?.try_into().expect("4 bytes")))
}

impl MethodBody {
    /// Reads a body: its header, code and exception sections.
    pub fn parse(bytes: &[u8]) -> Result<MethodBody, Error> {
        let first = *bytes.first().ok_or(Error::Truncated)?;
        match first & 0x3 {
            TINY => {
                let size = usize::from(first >> 2);
                let code = bytes.get(1..1 + size).ok_or(Error::Truncated)?.to_vec();
                Ok(MethodBody { max_stack: 8, local_var_sig: 0, init_locals: false, code, clauses: Vec::new() })
            }
            FAT => {
                let flags = u16_at(bytes, 0)?;
                let header = usize::from(flags >> 12) * 4;
                if header < 12 {
                    return Err(Error::BadHeader(first));
                }
                let max_stack = u16_at(bytes, 2)?;
                let size = u32_at(bytes, 4)? as usize;
                let local_var_sig = u32_at(bytes, 8)?;
                let code =
                    bytes.get(header..header.checked_add(size).ok_or(Error::Truncated)?).ok_or(Error::Truncated)?;
                let mut body = MethodBody {
                    max_stack,
                    local_var_sig,
                    init_locals: flags & INIT_LOCALS != 0,
                    code: code.to_vec(),
                    clauses: Vec::new(),
                };
                if flags & MORE_SECTS != 0 {
                    body.clauses = sections(bytes, header + size)?;
                }
                Ok(body)
            }
            _ => Err(Error::BadHeader(first)),
        }
    }

    /// The body's instructions, in order; an error for an opcode that does not exist or code that
    /// ends inside an instruction.
    pub fn instructions(&self) -> Result<Vec<Instruction>, Error> {
        let code = &self.code;
        let mut out = Vec::new();
        let mut at = 0usize;
        while at < code.len() {
            let (opcode, op_len, operand) = if code[at] == PREFIX {
                let second = *code.get(at + 1).ok_or(Error::Truncated)?;
                let opcode = 0xFE00 | u16::from(second);
                (opcode, 2, opcodes::two_byte(second).ok_or(Error::UnknownOpcode(opcode, at as u32))?)
            } else {
                let opcode = u16::from(code[at]);
                (opcode, 1, opcodes::one_byte(code[at]).ok_or(Error::UnknownOpcode(opcode, at as u32))?)
            };
            let operand_len = match operand {
                Operand::None => 0,
                Operand::U8 | Operand::ShortBranch => 1,
                Operand::U16 => 2,
                Operand::U32 | Operand::Branch => 4,
                Operand::U64 => 8,
                Operand::Switch => {
                    let n = u32_at(code, at + op_len)? as usize;
                    4usize.checked_add(n.checked_mul(4).ok_or(Error::Truncated)?).ok_or(Error::Truncated)?
                }
            };
            let len = op_len + operand_len;
            if at + len > code.len() {
                return Err(Error::Truncated);
            }
            out.push(Instruction { offset: at as u32, len: len as u32, opcode, operand });
            at += len;
        }
        Ok(out)
    }

    /// The offsets where code may be inserted: every instruction's but those that follow a
    /// prefix or a `tail.` call.
    pub fn insertable(&self) -> Result<Vec<u32>, Error> {
        let instructions = self.instructions()?;
        let may = insertable(&instructions);
        Ok(instructions.iter().zip(may).filter(|(_, may)| *may).map(|(i, _)| i.offset).collect())
    }

    /// The body with `probes` inserted: each `(offset, code)` puts `code` before the instruction
    /// at `offset` (several at one offset run in the order given). `extra_stack` is the most
    /// stack slots an inserted piece needs beyond what the method had there.
    ///
    /// Inserted code must not branch (it is copied as is) and must leave the stack as it found
    /// it.
    pub fn insert(&self, probes: &[(u32, &[u8])], extra_stack: u16) -> Result<MethodBody, Error> {
        let instructions = self.instructions()?;
        let starts: std::collections::HashMap<u32, usize> =
            instructions.iter().enumerate().map(|(i, ins)| (ins.offset, i)).collect();
        let end = self.code.len() as u32;
        let insertable = insertable(&instructions);
        let mut inserted: Vec<Vec<&[u8]>> = vec![Vec::new(); instructions.len()];
        for &(offset, probe) in probes {
            match starts.get(&offset) {
                Some(&i) if insertable[i] => inserted[i].push(probe),
                _ => return Err(Error::NotInsertable(offset)),
            }
        }
        // New offsets: of each instruction's inserted code (what targets at it now reach), and
        // of the instruction itself; the end maps to the end.
        let long_len = |ins: &Instruction| match ins.operand {
            Operand::ShortBranch => ins.len + 3,
            _ => ins.len,
        };
        let mut target_of: std::collections::HashMap<u32, u32> = std::collections::HashMap::new();
        let mut at_instruction = Vec::with_capacity(instructions.len());
        let mut new_at: u64 = 0;
        for (i, ins) in instructions.iter().enumerate() {
            target_of.insert(ins.offset, new_at as u32);
            new_at += inserted[i].iter().map(|p| p.len() as u64).sum::<u64>();
            at_instruction.push(new_at as u32);
            new_at += u64::from(long_len(ins));
            if new_at > u64::from(u32::MAX >> 2) {
                return Err(Error::TooLarge);
            }
        }
        target_of.insert(end, new_at as u32);
        let map = |old: i64, from: u32| -> Result<u32, Error> {
            u32::try_from(old).ok().and_then(|o| target_of.get(&o).copied()).ok_or(Error::BadTarget(from, old))
        };

        let mut code = Vec::with_capacity(new_at as usize);
        for (i, ins) in instructions.iter().enumerate() {
            for probe in &inserted[i] {
                code.extend_from_slice(probe);
            }
            let old = &self.code[ins.offset as usize..(ins.offset + ins.len) as usize];
            let next_old = i64::from(ins.offset + ins.len);
            let next_new = i64::from(at_instruction[i] + long_len(ins));
            match ins.operand {
                Operand::ShortBranch => {
                    let target = map(next_old + i64::from(old[1] as i8), ins.offset)?;
                    code.push(opcodes::long_form(old[0]));
                    code.extend_from_slice(&((i64::from(target) - next_new) as i32).to_le_bytes());
                }
                Operand::Branch => {
                    let delta = i32::from_le_bytes(old[1..5].try_into().expect("4 bytes"));
                    let target = map(next_old + i64::from(delta), ins.offset)?;
                    code.push(old[0]);
                    code.extend_from_slice(&((i64::from(target) - next_new) as i32).to_le_bytes());
                }
                Operand::Switch => {
                    code.extend_from_slice(&old[..5]);
                    for k in 0..(old.len() - 5) / 4 {
                        let delta = i32::from_le_bytes(old[5 + 4 * k..9 + 4 * k].try_into().expect("4 bytes"));
                        let target = map(next_old + i64::from(delta), ins.offset)?;
                        code.extend_from_slice(&((i64::from(target) - next_new) as i32).to_le_bytes());
                    }
                }
                _ => code.extend_from_slice(old),
            }
        }
        let boundary = |offset: u32| target_of.get(&offset).copied().ok_or(Error::BadClause(offset));
        let clauses = self
            .clauses
            .iter()
            .map(|c| {
                let try_start = boundary(c.try_offset)?;
                let try_end = boundary(c.try_offset.checked_add(c.try_length).ok_or(Error::BadClause(c.try_offset))?)?;
                let handler_start = boundary(c.handler_offset)?;
                let handler_end = boundary(
                    c.handler_offset.checked_add(c.handler_length).ok_or(Error::BadClause(c.handler_offset))?,
                )?;
                let class_or_filter =
                    if c.flags & Clause::FILTER != 0 { boundary(c.class_or_filter)? } else { c.class_or_filter };
                Ok(Clause {
                    flags: c.flags,
                    try_offset: try_start,
                    try_length: try_end - try_start,
                    handler_offset: handler_start,
                    handler_length: handler_end - handler_start,
                    class_or_filter,
                })
            })
            .collect::<Result<Vec<_>, Error>>()?;
        Ok(MethodBody {
            max_stack: self.max_stack.saturating_add(extra_stack),
            local_var_sig: self.local_var_sig,
            init_locals: self.init_locals,
            code,
            clauses,
        })
    }

    /// The body with `code` run first, once per call: before the first instruction, outside
    /// every exception region, and not reached by any branch (a loop back to the start lands
    /// after it). `code` may branch within itself (its branches are relative and copied as
    /// is) and may end the call (`throw`, `ret`); when it falls through, it must leave the stack
    /// empty. `extra_stack`: the most stack slots it needs.
    pub fn prepend(&self, code: &[u8], extra_stack: u16) -> Result<MethodBody, Error> {
        // Every branch of the body is relative to its own position, so moving the whole body
        // keeps it right; only the clauses' absolute offsets move.
        let shift = u32::try_from(code.len()).map_err(|_| Error::TooLarge)?;
        if u64::from(shift) + self.code.len() as u64 > u64::from(u32::MAX >> 2) {
            return Err(Error::TooLarge);
        }
        self.instructions()?;
        let mut out = self.clone();
        out.code = [code, &self.code].concat();
        for c in &mut out.clauses {
            c.try_offset += shift;
            c.handler_offset += shift;
            if c.flags & Clause::FILTER != 0 {
                c.class_or_filter += shift;
            }
        }
        out.max_stack = out.max_stack.max(extra_stack);
        Ok(out)
    }

    /// The body in the runtime's format: a fat header, the code, and one fat exception section
    /// when there are clauses.
    pub fn encode(&self) -> Vec<u8> {
        let mut flags: u16 = u16::from(FAT) | (3 << 12);
        if self.init_locals {
            flags |= INIT_LOCALS;
        }
        if !self.clauses.is_empty() {
            flags |= MORE_SECTS;
        }
        let mut out = Vec::with_capacity(12 + self.code.len() + 4 + 24 * self.clauses.len() + 3);
        out.extend_from_slice(&flags.to_le_bytes());
        out.extend_from_slice(&self.max_stack.to_le_bytes());
        out.extend_from_slice(&(self.code.len() as u32).to_le_bytes());
        out.extend_from_slice(&self.local_var_sig.to_le_bytes());
        out.extend_from_slice(&self.code);
        if !self.clauses.is_empty() {
            while out.len() % 4 != 0 {
                out.push(0);
            }
            let size = 4 + 24 * self.clauses.len() as u32;
            out.push(SECT_EH | SECT_FAT);
            out.extend_from_slice(&size.to_le_bytes()[..3]);
            for c in &self.clauses {
                for v in [c.flags, c.try_offset, c.try_length, c.handler_offset, c.handler_length, c.class_or_filter] {
                    out.extend_from_slice(&v.to_le_bytes());
                }
            }
        }
        out
    }
}

/// Per instruction, whether code may go before it: not after a prefix, nor between a `tail.`
/// call and its `ret`.
fn insertable(instructions: &[Instruction]) -> Vec<bool> {
    let mut may = vec![true; instructions.len()];
    for i in 1..instructions.len() {
        let after_tail_call = i >= 2 && instructions[i - 2].opcode == opcodes::TAIL;
        if opcodes::is_prefix(instructions[i - 1].opcode) || after_tail_call {
            may[i] = false;
        }
    }
    may
}

/// The exception clauses of the sections that start at `at` (rounded up to 4).
fn sections(bytes: &[u8], mut at: usize) -> Result<Vec<Clause>, Error> {
    let mut clauses = Vec::new();
    loop {
        at = at.next_multiple_of(4);
        let kind = *bytes.get(at).ok_or(Error::Truncated)?;
        if kind & SECT_EH == 0 {
            return Err(Error::BadSection(kind));
        }
        let fat = kind & SECT_FAT != 0;
        let size = if fat {
            u32_at(bytes, at)? as usize >> 8
        } else {
            usize::from(*bytes.get(at + 1).ok_or(Error::Truncated)?)
        };
        let entry = if fat { 24 } else { 12 };
        let count = size.saturating_sub(4) / entry;
        for k in 0..count {
            let e = at + 4 + k * entry;
            clauses.push(if fat {
                Clause {
                    flags: u32_at(bytes, e)?,
                    try_offset: u32_at(bytes, e + 4)?,
                    try_length: u32_at(bytes, e + 8)?,
                    handler_offset: u32_at(bytes, e + 12)?,
                    handler_length: u32_at(bytes, e + 16)?,
                    class_or_filter: u32_at(bytes, e + 20)?,
                }
            } else {
                Clause {
                    flags: u32::from(u16_at(bytes, e)?),
                    try_offset: u32::from(u16_at(bytes, e + 2)?),
                    try_length: u32::from(*bytes.get(e + 4).ok_or(Error::Truncated)?),
                    handler_offset: u32::from(u16_at(bytes, e + 5)?),
                    handler_length: u32::from(*bytes.get(e + 7).ok_or(Error::Truncated)?),
                    class_or_filter: u32_at(bytes, e + 8)?,
                }
            });
        }
        if kind & SECT_MORE == 0 {
            return Ok(clauses);
        }
        at += size.max(4);
    }
}

#[cfg(test)]
mod tests;
