//! Where a frame's return address is, for code whose frame pointer does not say (x86-64).
//!
//! The signal handler walks the frame-pointer chain: `[rbp]` is the caller's frame pointer and
//! `[rbp + 8]` the return address. That is true inside the body of a method with an RBP frame
//! (what the JIT gives most methods on Unix), and wrong in three places, each of which silently
//! drops the caller from the stack:
//! * **the prologue and epilogue**: before `push rbp; mov rbp, rsp` (or `lea rbp, [rsp+d]`) has
//!   run, or after `pop rbp`, RBP is still the caller's. [`leaf_return_slot`] decodes forward
//!   from the interrupted instruction (JIT prologues and epilogues are short, fixed sequences)
//!   and says where the return address is relative to the stack pointer;
//! * **frameless methods** (the JIT omits the frame of small methods without loops, and
//!   ReadyToRun code has many): RBP is the caller's throughout. The return address sits at a
//!   fixed distance above the stack pointer of the method's body, which [`frameless_size`]
//!   reads from the method's prologue;
//! * **on-stack-replacement (OSR) methods**: entered with the original (tier-0) frame still on
//!   the stack, they copy the saved RBP and make a frame of their own below it, so `[rbp + 8]` is
//!   a slot of the tier-0 frame; the return address is further up, where the OSR method's
//!   epilogue finds it ([`osr_return_offset`]).
//!
//! The decoders are pure functions over code bytes (safe in a signal handler). The last two
//! need the method's first byte, which only the runtime knows: the drain learns them per code
//! range (off the signal path) and publishes them in a small lock-free [`Table`] the handler
//! reads. Everything not recognised is left to the frame-pointer chain, as before.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::*};

/// How a code range's frames find their return address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// No frame pointer: the return address is this many bytes above the body's stack pointer.
    Frameless(u32),
    /// On-stack replacement: the return address is `ret` bytes above RBP, and RBP is `rbp`
    /// bytes above the body's stack pointer. The walk finds RBP from the stack pointer rather
    /// than trusting the frame-pointer register or chain: a runtime helper the OSR code called
    /// may have left neither pointing at the OSR frame. The caller's frame pointer is the one
    /// saved just below the return address (the original frame's).
    Osr { ret: u32, rbp: u32 },
    /// A tier-0 method's return site from its patchpoint call (a one-byte range), whose method
    /// continues in an OSR version whose `ret` offset is this. The OSR method entered
    /// with its stack pointer at the slot of that return address and laid its frame out from
    /// there, so wherever a walk reads the patchpoint's return address (through the OSR frame's
    /// chain, or a frameless callee's), the tier-0 frame's own return address — the method's
    /// caller — is `offset - 8` bytes above that slot, its saved RBP just below.
    Patchpoint(u32),
}

/// The largest frame a shape may describe (bigger ones are left to the chain).
const MAX_FRAME: u32 = 1 << 16;

/// Bytes the decoders look at from an instruction on (enough for the longest prologue or
/// epilogue sequence they follow).
pub const WINDOW: usize = 24;

/// Where the return address is, relative to the stack pointer, when the interrupted instruction
/// (`code` starts there) is in a prologue before the frame pointer is set, or in an epilogue
/// after it was restored; `None` when the frame-pointer chain is right (inside the body, or in
/// an epilogue before `pop rbp`) or the code is not recognised.
pub fn leaf_return_slot(code: &[u8]) -> Option<usize> {
    let mut offset: i64 = 0; // the simulated stack pointer, relative to the real one
    let mut at = 0;
    let mut unwinding = false; // an epilogue instruction was seen
    let slot = |offset: i64| usize::try_from(offset).ok().filter(|&o| o < MAX_FRAME as usize);
    for _ in 0..8 {
        let rest = code.get(at..)?;
        match decode(rest)? {
            (Op::PushRbp, _) => return slot(offset),
            (Op::SetFrame(d), _) => return slot(offset + i64::from(d) + 8),
            (Op::PopRbp | Op::RestoreFromFrame, _) => return None,
            (Op::Ret, _) => return slot(offset),
            (Op::Jmp, _) if unwinding => return slot(offset),
            (Op::Jmp, _) => return None,
            (Op::Push, len) => {
                offset -= 8;
                at += len;
            }
            (Op::Pop, len) => {
                offset += 8;
                unwinding = true;
                at += len;
            }
            (Op::SubRsp(n), len) => {
                offset -= i64::from(n);
                at += len;
            }
            (Op::AddRsp(n), len) => {
                offset += i64::from(n);
                unwinding = true;
                at += len;
            }
            (Op::Nop, len) => at += len,
            (Op::LoadRaxFromRbp, _) => return None,
        }
    }
    None
}

/// A method's frame size when its prologue (`code` starts at its first byte) makes no frame
/// pointer: the bytes its pushes and `sub rsp` take, so that the return address is that far above
/// the body's stack pointer. `None` for a method with a frame pointer (or an unrecognised one).
pub fn frameless_size(code: &[u8]) -> Option<u32> {
    let mut size: u32 = 0;
    let mut at = 0;
    for _ in 0..12 {
        match decode(code.get(at..)?) {
            Some((Op::Push, len)) => {
                size += 8;
                at += len;
            }
            Some((Op::SubRsp(n), len)) => {
                size = size.checked_add(n)?;
                at += len;
            }
            Some((Op::Nop, len)) => at += len,
            Some((Op::PushRbp | Op::SetFrame(_) | Op::LoadRaxFromRbp, _)) => return None,
            // The body starts (or a return: a method that does nothing).
            _ => return (size < MAX_FRAME).then_some(size),
        }
    }
    None
}

/// True when `code` (a method's first bytes) begins as an on-stack-replacement method does
/// (`mov rax, [rbp]`): [`osr_return_offset`] then wants the whole of it.
pub fn starts_osr(code: &[u8]) -> bool {
    matches!(decode(code), Some((Op::LoadRaxFromRbp, _)))
}

/// The return sites (offsets in `code`, a tier-0 method's whole code) of its patchpoint calls,
/// as the .NET 8 JIT emits them: `lea rdi, [rbp-d]; mov esi, <IL offset>; call <helper>` (the
/// call direct, `E8 rel32`, or through a cell, `FF 15 disp32`). Whether the target is the
/// runtime's helper is for the caller to check.
pub fn patchpoint_returns(code: &[u8]) -> Vec<usize> {
    let mut found = Vec::new();
    let mut at = 0;
    while at + 4 <= code.len() {
        // lea rdi, [rbp+disp8] (48 8D 7D d8) or [rbp+disp32] (48 8D BD d32).
        let lea = match code.get(at..at + 3) {
            Some([0x48, 0x8D, 0x7D]) => 4,
            Some([0x48, 0x8D, 0xBD]) => 7,
            _ => {
                at += 1;
                continue;
            }
        };
        let mov = at + lea;
        let call = mov + 5;
        let ret = match (code.get(mov), code.get(call..call + 2)) {
            (Some(0xBE), Some([0xE8, _])) => call + 5,
            (Some(0xBE), Some([0xFF, 0x15])) => call + 6,
            _ => {
                at += 1;
                continue;
            }
        };
        if ret <= code.len() {
            found.push(ret);
        }
        at = ret;
    }
    found
}

/// For an on-stack-replacement method (`code` is its whole code, from its first byte: `mov rax,
/// [rbp]; push rax`, a frame of its own, and an epilogue that pops the original frame too):
/// how far above RBP its return address is. `None` for any other code.
pub fn osr_return_offset(code: &[u8]) -> Option<u32> {
    osr_frame(code).map(|(ret, _)| ret)
}

/// [`osr_return_offset`], and how far above the body's stack pointer RBP is: `(ret, rbp)`.
pub fn osr_frame(code: &[u8]) -> Option<(u32, u32)> {
    // The prologue: offsets relative to the stack pointer at entry.
    let mut at = match decode(code)? {
        (Op::LoadRaxFromRbp, len) => len,
        _ => return None,
    };
    let mut sp: i64 = 0;
    let mut fp: Option<i64> = None;
    for _ in 0..12 {
        let Some((op, len)) = decode(code.get(at..)?) else { break };
        match op {
            Op::Push => sp -= 8,
            Op::SubRsp(n) => sp -= i64::from(n),
            Op::Nop => {}
            Op::SetFrame(d) => fp = Some(sp + i64::from(d)),
            _ => break,
        }
        at += len;
    }
    let fp = fp?;
    // The epilogue: `add rsp, N` or `lea rsp, [rbp+d]`, pops, `pop rbp`, `ret`.
    let mut start = at;
    while start + 2 <= code.len() {
        if let Some(offset) = osr_epilogue(&code[start..], sp - fp) {
            let ret = u32::try_from(offset).ok().filter(|o| (16..MAX_FRAME).contains(o))?;
            let rbp = u32::try_from(fp - sp).ok().filter(|o| *o < MAX_FRAME)?;
            return Some((ret, rbp));
        }
        start += 1;
    }
    None
}

/// An OSR epilogue at the start of `code`: the return address's offset above RBP, given the
/// body's stack pointer relative to RBP.
fn osr_epilogue(code: &[u8], body_sp_from_fp: i64) -> Option<i64> {
    let (first, mut at) = decode(code)?;
    let mut offset = match first {
        Op::AddRsp(n) => body_sp_from_fp + i64::from(n),
        Op::RestoreFromFrame => lea_rsp_rbp(code)?,
        _ => return None,
    };
    for _ in 0..8 {
        match decode(code.get(at..)?)? {
            (Op::Pop, len) => {
                offset += 8;
                at += len;
            }
            (Op::PopRbp, len) => {
                return matches!(decode(code.get(at + len..)?)?, (Op::Ret, _)).then_some(offset + 8);
            }
            _ => return None,
        }
    }
    None
}

/// The displacement of `lea rsp, [rbp+d]`.
fn lea_rsp_rbp(code: &[u8]) -> Option<i64> {
    match code {
        [0x48, 0x8D, 0x65, d, ..] => Some(i64::from(*d as i8)),
        [0x48, 0x8D, 0xA5, a, b, c, d, ..] => Some(i64::from(i32::from_le_bytes([*a, *b, *c, *d]))),
        _ => None,
    }
}

/// The instructions of JIT prologues and epilogues.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    PushRbp,
    /// `mov rbp, rsp` (0) or `lea rbp, [rsp+d]`: RBP now points at the saved RBP.
    SetFrame(u32),
    PopRbp,
    /// `lea rsp, [rbp+d]`: an epilogue that restores the stack pointer from RBP.
    RestoreFromFrame,
    Push,
    Pop,
    SubRsp(u32),
    AddRsp(u32),
    Ret,
    /// `jmp` (a tail call, in an epilogue).
    Jmp,
    /// `vzeroupper`, `nop`s.
    Nop,
    /// `mov rax, [rbp]`: the first instruction of an OSR method.
    LoadRaxFromRbp,
}

/// The instruction at the start of `code`, and its length, if it is one of [`Op`]'s.
fn decode(code: &[u8]) -> Option<(Op, usize)> {
    let imm32 = |b: &[u8]| -> Option<u32> {
        let v = i32::from_le_bytes(b.get(..4)?.try_into().ok()?);
        u32::try_from(v).ok()
    };
    Some(match code {
        [0x55, ..] => (Op::PushRbp, 1),
        [0x5D, ..] => (Op::PopRbp, 1),
        [0xC3, ..] => (Op::Ret, 1),
        [0xC2, _, _, ..] => (Op::Ret, 3),
        [0x50..=0x57, ..] => (Op::Push, 1),
        [0x41, 0x50..=0x57, ..] => (Op::Push, 2),
        [0x58..=0x5F, ..] => (Op::Pop, 1),
        [0x41, 0x58..=0x5F, ..] => (Op::Pop, 2),
        [0x48, 0x8B, 0xEC, ..] | [0x48, 0x89, 0xE5, ..] => (Op::SetFrame(0), 3),
        [0x48, 0x8D, 0x6C, 0x24, d, ..] if *d < 0x80 => (Op::SetFrame(u32::from(*d)), 5),
        [0x48, 0x8D, 0xAC, 0x24, rest @ ..] => (Op::SetFrame(imm32(rest)?), 8),
        [0x48, 0x8D, 0x65, _, ..] => (Op::RestoreFromFrame, 4),
        [0x48, 0x8D, 0xA5, _, _, _, _, ..] => (Op::RestoreFromFrame, 7),
        [0x48, 0x83, 0xEC, n, ..] if *n < 0x80 => (Op::SubRsp(u32::from(*n)), 4),
        [0x48, 0x81, 0xEC, rest @ ..] => (Op::SubRsp(imm32(rest)?), 7),
        [0x48, 0x83, 0xC4, n, ..] if *n < 0x80 => (Op::AddRsp(u32::from(*n)), 4),
        [0x48, 0x81, 0xC4, rest @ ..] => (Op::AddRsp(imm32(rest)?), 7),
        [0xC5, 0xF8, 0x77, ..] => (Op::Nop, 3),
        // `mov [rsp+d], reg`: an OSR prologue saving callee-saved registers in the original
        // frame (no effect on the stack pointer).
        [0x48 | 0x4C, 0x89, m, 0x24, _, ..] if m & 0xC7 == 0x44 => (Op::Nop, 5),
        [0x48 | 0x4C, 0x89, m, 0x24, _, _, _, _, ..] if m & 0xC7 == 0x84 => (Op::Nop, 8),
        [0x90, ..] => (Op::Nop, 1),
        [0x66, 0x90, ..] => (Op::Nop, 2),
        [0x0F, 0x1F, 0x00, ..] => (Op::Nop, 3),
        [0x0F, 0x1F, 0x40, _, ..] => (Op::Nop, 4),
        [0x0F, 0x1F, 0x44, 0x00, 0x00, ..] => (Op::Nop, 5),
        [0xE9, _, _, _, _, ..] => (Op::Jmp, 5),
        [0xEB, _, ..] => (Op::Jmp, 2),
        [0xFF, 0xE0..=0xE7, ..] => (Op::Jmp, 2),
        [0xFF, 0x25, _, _, _, _, ..] => (Op::Jmp, 6),
        [0x48, 0x8B, 0x45, 0x00, ..] => (Op::LoadRaxFromRbp, 4),
        _ => return None,
    })
}

/// Code ranges with a [`Shape`], learned by the drain and read by the signal handler: entries
/// are only ever appended (each written before the count that publishes it), so a reader sees
/// whole entries without a lock.
pub struct Table {
    entries: [Entry; TABLE_SIZE],
    count: AtomicUsize,
    /// Writers one at a time (the drain, and the JIT's threads for OSR code); readers never
    /// take it.
    writer: std::sync::Mutex<()>,
    /// A bit per hashed code page that some entry covers: most addresses (every frame of a
    /// walk is looked up) are on no such page and skip the scan of the entries.
    pages: [AtomicU64; PAGE_WORDS],
}

const PAGE_WORDS: usize = 64;

/// The bit of `page` (an address >> 12) in [`Table::pages`]: (word, mask).
fn page_bit(page: u64) -> (usize, u64) {
    let bit = (page.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 52) as usize % (PAGE_WORDS * 64);
    (bit / 64, 1 << (bit % 64))
}

const TABLE_SIZE: usize = 512;

struct Entry {
    start: AtomicU64,
    end: AtomicU64,
    /// Kind in the top bit (1: OSR), size below.
    shape: AtomicU64,
}

#[allow(clippy::declare_interior_mutable_const)]
const EMPTY: Entry = Entry { start: AtomicU64::new(0), end: AtomicU64::new(0), shape: AtomicU64::new(0) };

const OSR_BIT: u64 = 1 << 63;
const PATCHPOINT_BIT: u64 = 1 << 62;

impl Default for Table {
    fn default() -> Self {
        Self::new()
    }
}

impl Table {
    pub const fn new() -> Table {
        #[allow(clippy::declare_interior_mutable_const)]
        const ZERO: AtomicU64 = AtomicU64::new(0);
        Table {
            entries: [EMPTY; TABLE_SIZE],
            count: AtomicUsize::new(0),
            writer: std::sync::Mutex::new(()),
            pages: [ZERO; PAGE_WORDS],
        }
    }

    /// The shape of the code at `ip`, if learned. Async-signal-safe.
    #[inline]
    pub fn lookup(&self, ip: usize) -> Option<Shape> {
        let count = self.count.load(Acquire).min(TABLE_SIZE);
        let ip = ip as u64;
        // After `count` (acquired): the bits of every entry it publishes are set.
        let (word, mask) = page_bit(ip >> 12);
        if count == 0 || self.pages[word].load(Relaxed) & mask == 0 {
            return None;
        }
        self.entries[..count].iter().find(|e| e.start.load(Relaxed) <= ip && ip < e.end.load(Relaxed)).map(|e| {
            let shape = e.shape.load(Relaxed);
            let size = (shape & 0xffff_ffff) as u32;
            if shape & OSR_BIT != 0 {
                Shape::Osr { ret: size & 0xffff, rbp: ((shape >> 32) & 0xffff) as u32 }
            } else if shape & PATCHPOINT_BIT != 0 {
                Shape::Patchpoint(size)
            } else {
                Shape::Frameless(size)
            }
        })
    }

    /// Publishes `[start, end)`'s shape. False when the table is full.
    pub fn insert(&self, start: usize, end: usize, shape: Shape) -> bool {
        let _writer = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        let index = self.count.load(Relaxed);
        let Some(entry) = self.entries.get(index) else { return false };
        let value = match shape {
            Shape::Frameless(size) => u64::from(size),
            Shape::Osr { ret, rbp } => OSR_BIT | u64::from(rbp & 0xffff) << 32 | u64::from(ret & 0xffff),
            Shape::Patchpoint(size) => PATCHPOINT_BIT | u64::from(size),
        };
        // The pages' bits before the count that publishes the entry (a range spanning more
        // pages than the filter has bits sets them all).
        let (first, last) = (start as u64 >> 12, (end.max(start + 1) as u64 - 1) >> 12);
        for page in first..=last.min(first + (PAGE_WORDS * 64) as u64) {
            let (word, mask) = page_bit(page);
            self.pages[word].fetch_or(mask, Relaxed);
        }
        entry.start.store(start as u64, Relaxed);
        entry.end.store(end as u64, Relaxed);
        entry.shape.store(value, Relaxed);
        self.count.store(index + 1, Release);
        true
    }
}

/// The code ranges the handler treats specially.
pub static SHAPES: Table = Table::new();

/// Whether the seven bytes before a return address (`code`, the last one just before it) end
/// with a call instruction, in any x86-64 form a compiler emits: `call rel32`, and `call r/m64`
/// (`FF /2`, a REX prefix or not) through a register, `[reg]`, `[reg+disp8]`, `[reg+disp32]`,
/// `[rip+disp32]`, with or without a SIB byte. A value on the stack that is not a return address
/// rarely passes: code just after a call is what a return address points to.
pub fn ends_with_call(code: &[u8; 7]) -> bool {
    if code[2] == 0xE8 {
        return true;
    }
    (2..=7).any(|len| {
        let at = 7 - len;
        if code[at] != 0xFF || at + 1 >= 7 {
            return false;
        }
        let modrm = code[at + 1];
        let (mode, reg, rm) = (modrm >> 6, (modrm >> 3) & 7, modrm & 7);
        if reg != 2 {
            return false;
        }
        let sib = usize::from(mode != 3 && rm == 4);
        let expected = match mode {
            3 => 2,
            // [rip+disp32]; a SIB with no base register (base 5) carries a disp32 too.
            0 if rm == 5 => 6,
            0 if rm == 4 && code.get(at + 2).is_some_and(|s| s & 7 == 5) => 7,
            0 => 2 + sib,
            1 => 3 + sib,
            _ => 6 + sib,
        };
        expected == len
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_are_told_from_other_code() {
        let ends = |bytes: &[u8]| {
            let mut code = [0x90u8; 7];
            code[7 - bytes.len()..].copy_from_slice(bytes);
            ends_with_call(&code)
        };
        let calls: [&[u8]; 11] = [
            &[0xE8, 1, 2, 3, 4],             // call rel32
            &[0xFF, 0x15, 1, 2, 3, 4],       // call [rip+disp32]
            &[0xFF, 0xD0],                   // call rax
            &[0x41, 0xFF, 0xD3],             // call r11
            &[0xFF, 0x10],                   // call [rax]
            &[0xFF, 0x50, 0x08],             // call [rax+8]
            &[0x41, 0xFF, 0x53, 0x18],       // call [r11+0x18]
            &[0xFF, 0x14, 0x24],             // call [rsp]
            &[0xFF, 0x54, 0x24, 0x08],       // call [rsp+8]
            &[0xFF, 0x90, 1, 2, 0, 0],       // call [rax+disp32]
            &[0xFF, 0x94, 0xC8, 1, 2, 0, 0], // call [rax+rcx*8+disp32]
        ];
        for call in calls {
            assert!(ends(call), "{call:02x?}");
        }
        let others: [&[u8]; 6] = [
            &[],
            &[0xC3],                            // ret
            &[0xFF, 0xE0],                      // jmp rax
            &[0xFF, 0x50],                      // a call [rax+disp8] cut short
            &[0x42, 0x53, 0x4A, 0x42, 0, 0, 0], // metadata ("BSJB")
            &[0xFF, 0x30],                      // push [rax]
        ];
        for other in others {
            assert!(!ends(other), "{other:02x?}");
        }
    }

    // Sequences as the .NET 8 JIT emits them (from `DOTNET_JitDisasm` listings).
    const TIER0_PROLOGUE: &[u8] = &[
        0x55, // push rbp
        0x48, 0x83, 0xEC, 0x50, // sub rsp, 80
        0xC5, 0xF8, 0x77, // vzeroupper
        0x48, 0x8D, 0x6C, 0x24, 0x50, // lea rbp, [rsp+0x50]
        0x33, 0xC0, // xor eax, eax (the body)
    ];
    const TIER1_EPILOGUE: &[u8] = &[0x48, 0x83, 0xC4, 0x08, 0x5B, 0x5D, 0xC3]; // add rsp,8; pop rbx; pop rbp; ret

    #[test]
    fn the_prologue_before_the_frame_pointer_is_set() {
        assert_eq!(leaf_return_slot(TIER0_PROLOGUE), Some(0), "at the first byte: [rsp]");
        assert_eq!(leaf_return_slot(&TIER0_PROLOGUE[1..]), Some(8), "after push rbp");
        // After sub rsp, 80: the saved RBP is at rsp+0x50, the return address above it.
        assert_eq!(leaf_return_slot(&TIER0_PROLOGUE[5..]), Some(0x58));
        assert_eq!(leaf_return_slot(&TIER0_PROLOGUE[8..]), Some(0x58));
        assert_eq!(leaf_return_slot(&TIER0_PROLOGUE[13..]), None, "the body: the chain is right");
        // push rbp; vzeroupper; mov rbp, rsp (tier 1)
        assert_eq!(leaf_return_slot(&[0xC5, 0xF8, 0x77, 0x48, 0x8B, 0xEC]), Some(8));
    }

    #[test]
    fn the_epilogue_after_the_frame_pointer_is_restored() {
        assert_eq!(leaf_return_slot(TIER1_EPILOGUE), None, "before pop rbp, RBP is still the frame's");
        assert_eq!(leaf_return_slot(&TIER1_EPILOGUE[6..]), Some(0), "at ret");
        assert_eq!(leaf_return_slot(&[0xC3]), Some(0));
        // A frameless epilogue: add rsp, 0x28; pop rbx; ret.
        assert_eq!(leaf_return_slot(&[0x48, 0x83, 0xC4, 0x28, 0x5B, 0xC3]), Some(0x30));
        // A tail call after the epilogue: pop rbx; jmp rel32. A jmp alone is the body's.
        assert_eq!(leaf_return_slot(&[0x5B, 0xE9, 0, 0, 0, 0]), Some(8));
        assert_eq!(leaf_return_slot(&[0xE9, 0, 0, 0, 0]), None);
        assert_eq!(leaf_return_slot(&[0x48, 0x8D, 0x65, 0x00, 0x5D, 0xC3]), None, "lea rsp, [rbp]");
    }

    #[test]
    fn unknown_code_is_left_to_the_chain() {
        assert_eq!(leaf_return_slot(&[0x33, 0xC0, 0xC3]), None);
        assert_eq!(leaf_return_slot(&[]), None);
        assert_eq!(leaf_return_slot(&[0x48, 0x83]), None, "cut short");
    }

    #[test]
    fn frameless_methods_and_their_size() {
        assert_eq!(frameless_size(TIER0_PROLOGUE), None);
        assert_eq!(frameless_size(&[0x33, 0xC0, 0xC3]), Some(0), "no stack at all");
        // push rbx; sub rsp, 0x20; (body)
        assert_eq!(frameless_size(&[0x53, 0x48, 0x83, 0xEC, 0x20, 0x8B, 0xC7]), Some(0x28));
        // push r15; push rbx; push rax (alignment); (body)
        assert_eq!(frameless_size(&[0x41, 0x57, 0x53, 0x50, 0x8B, 0xC7]), Some(24));
    }

    #[test]
    fn osr_methods_find_the_original_frames_return_address() {
        // From a .NET 8 OSR listing: mov rax,[rbp]; push rax; vzeroupper; mov rbp,rsp; (body);
        // add rsp, 96; pop rbp; ret.
        let mut code = vec![0x48, 0x8B, 0x45, 0x00, 0x50, 0xC5, 0xF8, 0x77, 0x48, 0x8B, 0xEC];
        code.extend_from_slice(&[0x8B, 0x7D, 0x34, 0x3B, 0xC7, 0x7D, 0x10]); // body
        code.extend_from_slice(&[0x48, 0x83, 0xC4, 0x60, 0x5D, 0xC3]);
        assert_eq!(osr_return_offset(&code), Some(0x60 + 8));
        // With a callee-saved register of its own and locals: push rbx; sub rsp, 0x10;
        // lea rbp, [rsp+0x18]... epilogue: add rsp, 0x70; pop rbx; pop rbp; ret.
        let mut code = vec![0x48, 0x8B, 0x45, 0x00, 0x50, 0x53, 0x48, 0x83, 0xEC, 0x10, 0x48, 0x8D, 0x6C, 0x24, 0x18];
        code.extend_from_slice(&[0x8B, 0x7D, 0x34]);
        code.extend_from_slice(&[0x48, 0x83, 0xC4, 0x70, 0x5B, 0x5D, 0xC3]);
        // body sp = fp - 0x18; + 0x70 + 8 (pop rbx) + 8 (pop rbp) = fp + 0x68.
        assert_eq!(osr_return_offset(&code), Some(0x68));
        assert_eq!(osr_return_offset(TIER0_PROLOGUE), None, "not an OSR method");
        assert!(starts_osr(&code) && !starts_osr(TIER0_PROLOGUE));
        // A real one (tests/apps/Leaves.cs's Delta, .NET 8.0.4): callee-saved registers stored
        // into the original frame before the frame pointer is set.
        let code = [
            0x48, 0x8B, 0x45, 0x00, 0x50, 0x48, 0x83, 0xEC, 0x20, 0x4C, 0x89, 0x7C, 0x24, 0x68, 0x4C, 0x89, 0x74, 0x24,
            0x60, 0x48, 0x89, 0x5C, 0x24, 0x58, 0x48, 0x8D, 0x6C, 0x24, 0x20, 0x8B, 0x5D, 0x24, 0x44, 0x8B, 0x75, 0x20,
            0x44, 0x8B, 0x7D, 0x1C, 0x44, 0x3B, 0xFB, 0x7D, 0x15, 0x43, 0x8D, 0x3C, 0x37, 0xFF, 0x15, 0xB1, 0x51, 0x09,
            0x00, 0x44, 0x03, 0xF0, 0x41, 0xFF, 0xC7, 0x44, 0x3B, 0xFB, 0x7C, 0xEB, 0x41, 0x8B, 0xC6, 0x48, 0x83, 0xC4,
            0x58, 0x5B, 0x41, 0x5E, 0x41, 0x5F, 0x5D, 0xC3,
        ];
        // Entry E: rbp = E-8 after the prologue; the epilogue reads the return address at E+80.
        assert_eq!(osr_return_offset(&code), Some(88));
        // The body's stack pointer: E-40 (push rax; sub rsp, 0x20), RBP 0x20 above it.
        assert_eq!(osr_frame(&code), Some((88, 0x20)));
    }

    #[test]
    fn the_table_publishes_whole_entries() {
        let table = Table::new();
        assert_eq!(table.lookup(100), None);
        assert!(table.insert(100, 200, Shape::Frameless(24)));
        assert!(table.insert(300, 400, Shape::Osr { ret: 104, rbp: 0x20 }));
        assert_eq!(table.lookup(150), Some(Shape::Frameless(24)));
        assert_eq!(table.lookup(200), None);
        assert_eq!(table.lookup(399), Some(Shape::Osr { ret: 104, rbp: 0x20 }));
        for i in 2..TABLE_SIZE {
            assert!(table.insert(1000 + i, 1001 + i, Shape::Frameless(0)));
        }
        assert!(!table.insert(5000, 5001, Shape::Frameless(0)), "full");
    }

    /// The tier-0 listing of a loop's patchpoint (`lea rdi, [rbp-0x40]; mov esi, 38; call
    /// CORINFO_HELP_PATCHPOINT`), among other calls: its return site is found, no other.
    #[test]
    fn patchpoint_return_sites() {
        let code = [
            0xE8, 1, 2, 3, 4, // call (a helper, no patchpoint set-up)
            0x48, 0x8D, 0x7D, 0xC0, // lea rdi, [rbp-0x40]
            0xBE, 0x26, 0, 0, 0, // mov esi, 38
            0xE8, 9, 9, 9, 9,    // call rel32
            0x90, // the return site: offset 19
            0x48, 0x8D, 0xBD, 0x00, 0xFF, 0xFF, 0xFF, // lea rdi, [rbp-0x100]
            0xBE, 0x10, 0, 0, 0, // mov esi, 16
            0xFF, 0x15, 1, 2, 3, 4, // call [rip+disp32]
        ];
        assert_eq!(patchpoint_returns(&code), vec![19, 38]);
        assert_eq!(patchpoint_returns(&code[..37]), vec![19]);
        let table = Table::new();
        assert!(table.insert(0x1000, 0x1001, Shape::Patchpoint(0x58)));
        assert_eq!(table.lookup(0x1000), Some(Shape::Patchpoint(0x58)));
        assert_eq!(table.lookup(0x1001), None);
    }

    /// The page filter never hides an entry: ranges across pages are found on each of them, and
    /// addresses on other pages are not.
    #[test]
    fn ranges_across_pages_are_found_on_every_page() {
        let table = Table::new();
        let start = 0x7f00_0000_0ff0;
        assert!(table.insert(start, start + 3 * 4096, Shape::Frameless(8)));
        for ip in [start, start + 0x10, start + 4096, start + 2 * 4096 + 100, start + 3 * 4096 - 1] {
            assert_eq!(table.lookup(ip), Some(Shape::Frameless(8)), "{ip:#x}");
        }
        assert_eq!(table.lookup(start + 3 * 4096), None);
        assert_eq!(table.lookup(start - 1), None);
        assert_eq!(table.lookup(0x5555_0000_0000), None);
    }
}
