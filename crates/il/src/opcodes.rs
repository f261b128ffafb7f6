//! The CIL instruction set as the editor needs it: each opcode's operand (ECMA-335 partition
//! III), so that a body can be cut into instructions, and which ones branch.

/// What follows an opcode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operand {
    None,
    /// One byte (`ldarg.s`, `ldc.i4.s`, `unaligned.`, `no.`).
    U8,
    /// Two bytes (`ldarg`, `ldloc` and the other long variable forms).
    U16,
    /// Four bytes: a constant, a token or a `float32`.
    U32,
    /// Eight bytes: `ldc.i8`, `ldc.r8`.
    U64,
    /// A one-byte branch offset, from the end of the instruction (`br.s`, `leave.s`, …).
    ShortBranch,
    /// A four-byte branch offset, from the end of the instruction.
    Branch,
    /// `switch`: a count `n`, then `n` four-byte offsets from the end of the instruction.
    Switch,
}

/// The opcode byte that introduces the two-byte opcodes.
pub const PREFIX: u8 = 0xFE;

/// The operand of the one-byte opcode `op`; `None` for an opcode that does not exist.
pub fn one_byte(op: u8) -> Option<Operand> {
    use Operand::*;
    Some(match op {
        0x00..=0x0D => None,
        0x0E..=0x13 => U8,
        0x14..=0x1E => None,
        0x1F => U8,
        0x20 => U32,
        0x21 => U64,
        0x22 => U32,
        0x23 => U64,
        0x25 | 0x26 => None,
        0x27..=0x29 => U32,
        0x2A => None,
        0x2B..=0x37 => ShortBranch,
        0x38..=0x44 => Branch,
        0x45 => Switch,
        0x46..=0x6E => None,
        0x6F..=0x75 => U32,
        0x76 => None,
        0x79 => U32,
        0x7A => None,
        0x7B..=0x81 => U32,
        0x82..=0x8B => None,
        0x8C | 0x8D => U32,
        0x8E => None,
        0x8F => U32,
        0x90..=0xA2 => None,
        0xA3..=0xA5 => U32,
        0xB3..=0xBA => None,
        0xC2 => U32,
        0xC3 => None,
        0xC6 => U32,
        0xD0 => U32,
        0xD1..=0xDC => None,
        0xDD => Branch,
        0xDE => ShortBranch,
        0xDF | 0xE0 => None,
        _ => return Option::None,
    })
}

/// The operand of the two-byte opcode `0xFE op`; `None` for one that does not exist.
pub fn two_byte(op: u8) -> Option<Operand> {
    use Operand::*;
    Some(match op {
        0x00..=0x05 => None,
        0x06 | 0x07 => U32,
        0x09..=0x0E => U16,
        0x0F => None,
        0x11 => None,
        0x12 => U8,
        0x13 | 0x14 => None,
        0x15 | 0x16 => U32,
        0x17 | 0x18 => None,
        0x19 => U8,
        0x1A => None,
        0x1C => U32,
        0x1D | 0x1E => None,
        _ => return Option::None,
    })
}

/// Whether the opcode (two-byte ones as `0xFE00 | op`) is a prefix of the next instruction
/// (`unaligned.`, `volatile.`, `tail.`, `constrained.`, `no.`, `readonly.`): nothing may come
/// between a prefix and its instruction.
pub fn is_prefix(opcode: u16) -> bool {
    matches!(opcode, 0xFE12 | 0xFE13 | 0xFE14 | 0xFE16 | 0xFE19 | 0xFE1E)
}

/// The `tail.` prefix: its call must be followed by `ret`.
pub const TAIL: u16 = 0xFE14;

/// The long form of a short branch opcode (`br.s` → `br`, `leave.s` → `leave`).
pub fn long_form(short: u8) -> u8 {
    match short {
        0xDE => 0xDD,
        op => op + 0x0D,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_branches_have_long_forms_that_branch() {
        for op in (0x2B..=0x37).chain([0xDE]) {
            assert_eq!(one_byte(op), Some(Operand::ShortBranch), "{op:#x}");
            assert_eq!(one_byte(long_form(op)), Some(Operand::Branch), "{op:#x}");
        }
    }

    #[test]
    fn unused_opcodes_are_unknown() {
        for op in [0x24, 0x77, 0x78, 0xA6, 0xB2, 0xBB, 0xC1, 0xC4, 0xC5, 0xC7, 0xCF, 0xE1, 0xFF] {
            assert_eq!(one_byte(op), None, "{op:#x}");
        }
        for op in [0x08, 0x10, 0x1B, 0x1F, 0xFF] {
            assert_eq!(two_byte(op), None, "FE {op:#x}");
        }
    }
}
