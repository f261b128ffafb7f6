//! A reader of Mono's `.mdb` symbol files (format 50.0, Mono's `MonoSymbolFile`, written by
//! `mcs -debug`): the header's GUID, the method table and each method's line-number table — a
//! DWARF-like statement program (Mono `MonoSymbolTable.cs`, `LineNumberTable`; the runtime's
//! reader is `mono/metadata/debug-mono-symfile.c`). No maintained Rust crate reads this format.
//!
//! Layout: an 8-byte magic, major and minor version, the GUID of the module it was written for,
//! then an offset table of twenty 32-bit fields (where the source, compile-unit and method tables
//! lie and the statement program's three constants). A method-table entry is 12 bytes: token,
//! data offset, line-table offset; a source-table entry is 8: index and the offset of the file
//! name (a .NET `BinaryWriter` string).
//!
//! The GUID is the only link to the assembly. mcs (6.8) builds deterministically — the same code
//! gives a byte-identical assembly, MVID included — so an edit that only moves lines rebuilds the
//! very same assembly: its old `.mdb` passes the check, for Mono's runtime as here, and nothing in
//! the assembly could tell it from the new one.

use crate::bytes::{Cursor, Damaged, Result, guid_at, slice, u32_at};
use crate::{HIDDEN_LINE, MAX_PATH, Point};

const MAGIC: u64 = 0x45e8_2623_fd7f_a614;
const MAJOR_VERSION: u32 = 50;
const HEADER: usize = 32;

// Standard opcodes of the line-number program.
const COPY: u8 = 1;
const ADVANCE_PC: u8 = 2;
const ADVANCE_LINE: u8 = 3;
const SET_FILE: u8 = 4;
const CONST_ADD_PC: u8 = 8;
// Extended opcodes (after a 0 byte and a length).
const END_SEQUENCE: u8 = 1;
const NEGATE_IS_HIDDEN: u8 = 0x40;
const RESERVED_EXTENSIONS: std::ops::RangeInclusive<u8> = 0x41..=0x7f;

/// One `.mdb` file, checked for shape at [`MonoSymbols::parse`]; lines are decoded from its
/// bytes on demand.
pub(crate) struct MonoSymbols {
    bytes: Vec<u8>,
    guid: [u8; 16],
    /// (token, line-table offset) of every method, sorted by token.
    methods: Vec<(u32, u32)>,
    source_table: usize,
    source_count: u32,
    program: Program,
}

/// The constants of the line-number program, from the offset table.
#[derive(Clone, Copy)]
struct Program {
    line_base: i64,
    line_range: i64,
    opcode_base: u8,
    max_address_increment: i64,
}

impl MonoSymbols {
    /// Reads the header and method table of the `.mdb` in `bytes` and decodes every method's
    /// line table once, so that damage is reported now rather than as missing lines later.
    pub(crate) fn parse(bytes: Vec<u8>) -> Result<MonoSymbols> {
        let magic = u64::from(u32_at(&bytes, 0)?) | u64::from(u32_at(&bytes, 4)?) << 32;
        if magic != MAGIC {
            return Err(Damaged("not a Mono symbol file"));
        }
        if u32_at(&bytes, 8)? != MAJOR_VERSION {
            return Err(Damaged("a Mono symbol file of another version than 50"));
        }
        let guid = guid_at(&bytes, 16)?;
        let field = |i: usize| u32_at(&bytes, HEADER + 4 * i);
        // Mono's writer records the file's size: a cheap check that nothing was cut off.
        if field(0)? as usize != bytes.len() {
            return Err(Damaged("a size other than its header records"));
        }
        let (source_count, source_table) = (field(6)?, field(7)? as usize);
        let (method_count, method_table) = (field(9)? as usize, field(10)? as usize);
        let (line_base, line_range, opcode_base) = (field(16)? as i32, field(17)? as i32, field(18)?);
        if !(1..=255).contains(&line_range) || !(1..=255).contains(&opcode_base) {
            return Err(Damaged("line-number program constants out of range"));
        }
        let opcode_base = opcode_base as u8;
        let program = Program {
            line_base: line_base.into(),
            line_range: line_range.into(),
            opcode_base,
            max_address_increment: i64::from(255 - opcode_base) / i64::from(line_range),
        };
        let too_many = Damaged("a table runs past the end of the file");
        slice(&bytes, source_table, (source_count as usize).checked_mul(8).ok_or(too_many)?)?;
        let entries = slice(&bytes, method_table, method_count.checked_mul(12).ok_or(too_many)?)?;
        let mut methods = entries
            .chunks_exact(12)
            .map(|entry| Ok((u32_at(entry, 0)?, u32_at(entry, 8)?)))
            .collect::<Result<Vec<_>>>()?;
        // Mono's writer sorts the methods by token; a reader must not rely on that.
        methods.sort_unstable();
        if methods.windows(2).any(|pair| pair[0].0 == pair[1].0) {
            return Err(Damaged("two entries for one method"));
        }
        let mdb = MonoSymbols { bytes, guid, methods, source_table, source_count, program };
        mdb.check_line_tables()?;
        Ok(mdb)
    }

    /// The GUID of the module this file was written for: the assembly's MVID.
    pub(crate) fn guid(&self) -> [u8; 16] {
        self.guid
    }

    /// Decodes every method's line table. Entries may point at one table, but the work stays
    /// bounded by the file's size.
    fn check_line_tables(&self) -> Result<()> {
        let mut budget = self.bytes.len().saturating_mul(4).saturating_add(1 << 16);
        for &(token, _) in &self.methods {
            let Some(mut points) = self.method_points(token)? else { continue };
            let start = points.data.position();
            for point in points.by_ref() {
                point?;
            }
            let used = points.data.position() - start;
            budget = budget.checked_sub(used).ok_or(Damaged("line tables shared implausibly often"))?;
        }
        Ok(())
    }

    /// The line table of the method with metadata token `token`, or None when it has none.
    pub(crate) fn method_points(&self, token: u32) -> Result<Option<Points<'_>>> {
        let Ok(index) = self.methods.binary_search_by_key(&token, |&(t, _)| t) else {
            return Ok(None);
        };
        let offset = self.methods[index].1 as usize;
        if offset == 0 {
            return Ok(None);
        }
        Ok(Some(Points {
            data: Cursor::at(&self.bytes, offset)?,
            program: self.program,
            source_count: self.source_count,
            line: 1,
            il_offset: 0,
            file: 1,
            hidden: false,
            last_offset: 0,
            done: false,
        }))
    }

    /// The name of source file `index` (1-based) as the compiler wrote it.
    pub(crate) fn source_name(&self, index: u32) -> Result<String> {
        if index == 0 || index > self.source_count {
            return Err(Damaged("a source file that does not exist"));
        }
        let entry = self.source_table + (index as usize - 1) * 8;
        let mut data = Cursor::at(&self.bytes, u32_at(&self.bytes, entry + 4)? as usize)?;
        let len = usize::try_from(data.leb128_i32()?).map_err(|_| Damaged("a negative string length"))?;
        if len > MAX_PATH {
            return Err(Damaged("a source file name longer than 64 KiB"));
        }
        let name = data.take(len)?;
        String::from_utf8(name.to_vec()).map_err(|_| Damaged("a source file name that is not UTF-8"))
    }
}

/// The line entries of one method, decoded from its statement program in table order; `file`
/// is a source-table index.
pub(crate) struct Points<'a> {
    data: Cursor<'a>,
    program: Program,
    source_count: u32,
    line: i64,
    il_offset: i64,
    file: i64,
    hidden: bool,
    last_offset: i64,
    done: bool,
}

impl Points<'_> {
    fn next_point(&mut self) -> Result<Option<Point>> {
        loop {
            let opcode = self.data.u8()?;
            if opcode == 0 {
                let len = usize::from(self.data.u8()?);
                let extended = *self.data.take(len)?.first().ok_or(Damaged("an empty extended opcode"))?;
                match extended {
                    END_SEQUENCE => return Ok(None),
                    NEGATE_IS_HIDDEN => self.hidden = !self.hidden,
                    e if RESERVED_EXTENSIONS.contains(&e) => {}
                    _ => return Err(Damaged("an unknown extended opcode")),
                }
                continue;
            }
            if opcode < self.program.opcode_base {
                match opcode {
                    COPY => return self.row().map(Some),
                    ADVANCE_PC => self.il_offset = self.il_offset.saturating_add(self.data.leb128_i32()?.into()),
                    ADVANCE_LINE => self.line = self.line.saturating_add(self.data.leb128_i32()?.into()),
                    SET_FILE => self.file = i64::from(self.data.leb128_i32()?),
                    CONST_ADD_PC => self.il_offset = self.il_offset.saturating_add(self.program.max_address_increment),
                    _ => return Err(Damaged("an unknown standard opcode")),
                }
                continue;
            }
            // A special opcode advances both the IL offset and the line, then adds a row.
            let special = i64::from(opcode - self.program.opcode_base);
            self.il_offset = self.il_offset.saturating_add(special / self.program.line_range);
            self.line = self.line.saturating_add(self.program.line_base + special % self.program.line_range);
            return self.row().map(Some);
        }
    }

    /// The row the state machine stands on now.
    fn row(&mut self) -> Result<Point> {
        if self.il_offset < self.last_offset || self.il_offset > i64::from(u32::MAX) {
            return Err(Damaged("an IL offset out of order or out of range"));
        }
        self.last_offset = self.il_offset;
        let hidden = self.hidden || self.line <= 0 || self.line == i64::from(HIDDEN_LINE);
        if !hidden && (self.line > i64::from(i32::MAX) || self.file < 1 || self.file > i64::from(self.source_count)) {
            return Err(Damaged("a line entry out of range"));
        }
        Ok(Point {
            il_offset: self.il_offset as u32,
            line: if hidden { HIDDEN_LINE } else { self.line as u32 },
            file: if hidden { 0 } else { self.file as u32 },
            hidden,
        })
    }
}

impl Iterator for Points<'_> {
    type Item = Result<Point>;

    fn next(&mut self) -> Option<Result<Point>> {
        if self.done {
            return None;
        }
        let next = self.next_point().transpose();
        self.done = !matches!(next, Some(Ok(_)));
        next
    }
}
