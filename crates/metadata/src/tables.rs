//! A reader of an assembly's own metadata (ECMA-335 II.24: the `BSJB` root, the `#~` tables, the
//! `#Strings` and `#Blob` heaps), for names only: a method's declaring type, name and signature.
//!
//! Why not the runtime's `IMetaDataImport`: on CoreCLR, handing a profiler a metadata interface
//! converts the module's metadata to its read/write form for good, and the runtime's own
//! metadata reads in that module (type loads, the JIT) become slower for the rest of the run —
//! 5–10% of a JIT-heavy program's CPU time (`BENCHMARKS.md`). Reading the file the module was
//! loaded from leaves the runtime alone. Every read is bounds-checked: a damaged or hostile file
//! gives an error, never a panic.

use crate::signature::{self, TypeNames};
use crate::{MAX_NESTING, UNREADABLE_SIGNATURE, nested, qualified, token};

/// Why metadata could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreadable(pub &'static str);

type Result<T> = std::result::Result<T, Unreadable>;

const TYPE_REF: usize = 0x01;
const TYPE_DEF: usize = 0x02;
const FIELD: usize = 0x04;
const METHOD_PTR: usize = 0x05;
const METHOD_DEF: usize = 0x06;
const PARAM: usize = 0x08;
const TYPE_SPEC: usize = 0x1b;
const ASSEMBLY: usize = 0x20;
const NESTED_CLASS: usize = 0x29;
/// The tables names are read from ([`read_for_names`]).
const NAMING: [usize; 6] = [TYPE_REF, TYPE_DEF, METHOD_DEF, TYPE_SPEC, ASSEMBLY, NESTED_CLASS];
/// The tables an assembly may hold (0x00–0x2C); anything beyond has an unknown layout here.
const TABLES: usize = 0x2d;

/// A column of a table row.
#[derive(Clone, Copy)]
enum Col {
    U16,
    U32,
    Str,
    Guid,
    Blob,
    /// An index into one table.
    Table(usize),
    /// A coded index over these tables (`usize::MAX`: an unused tag).
    Coded(&'static [usize]),
}

const NONE: usize = usize::MAX;
const TYPE_DEF_OR_REF: &[usize] = &[0x02, 0x01, 0x1b];
const HAS_CONSTANT: &[usize] = &[0x04, 0x08, 0x17];
const HAS_CUSTOM_ATTRIBUTE: &[usize] = &[
    0x06, 0x04, 0x01, 0x02, 0x08, 0x09, 0x0a, 0x00, 0x0e, 0x17, 0x14, 0x11, 0x1a, 0x1b, 0x20, 0x23, 0x26, 0x27, 0x28,
    0x2a, 0x2c, 0x2b,
];
const HAS_FIELD_MARSHAL: &[usize] = &[0x04, 0x08];
const HAS_DECL_SECURITY: &[usize] = &[0x02, 0x06, 0x20];
const MEMBER_REF_PARENT: &[usize] = &[0x02, 0x01, 0x1a, 0x06, 0x1b];
const HAS_SEMANTICS: &[usize] = &[0x14, 0x17];
const METHOD_DEF_OR_REF: &[usize] = &[0x06, 0x0a];
const MEMBER_FORWARDED: &[usize] = &[0x04, 0x06];
const IMPLEMENTATION: &[usize] = &[0x26, 0x23, 0x27];
const CUSTOM_ATTRIBUTE_TYPE: &[usize] = &[NONE, NONE, 0x06, 0x0a, NONE];
const RESOLUTION_SCOPE: &[usize] = &[0x00, 0x1a, 0x23, 0x01];
const TYPE_OR_METHOD_DEF: &[usize] = &[0x02, 0x06];

/// The columns of every table an assembly may hold (ECMA-335 II.22).
fn schema(table: usize) -> &'static [Col] {
    use Col::*;
    match table {
        0x00 => &[U16, Str, Guid, Guid, Guid],
        0x01 => &[Coded(RESOLUTION_SCOPE), Str, Str],
        0x02 => &[U32, Str, Str, Coded(TYPE_DEF_OR_REF), Table(FIELD), Table(METHOD_DEF)],
        0x03 => &[Table(FIELD)],
        0x04 => &[U16, Str, Blob],
        0x05 => &[Table(METHOD_DEF)],
        0x06 => &[U32, U16, U16, Str, Blob, Table(PARAM)],
        0x07 => &[Table(PARAM)],
        0x08 => &[U16, U16, Str],
        0x09 => &[Table(TYPE_DEF), Coded(TYPE_DEF_OR_REF)],
        0x0a => &[Coded(MEMBER_REF_PARENT), Str, Blob],
        0x0b => &[U16, Coded(HAS_CONSTANT), Blob],
        0x0c => &[Coded(HAS_CUSTOM_ATTRIBUTE), Coded(CUSTOM_ATTRIBUTE_TYPE), Blob],
        0x0d => &[Coded(HAS_FIELD_MARSHAL), Blob],
        0x0e => &[U16, Coded(HAS_DECL_SECURITY), Blob],
        0x0f => &[U16, U32, Table(TYPE_DEF)],
        0x10 => &[U32, Table(FIELD)],
        0x11 => &[Blob],
        0x12 => &[Table(TYPE_DEF), Table(0x14)],
        0x13 => &[Table(0x14)],
        0x14 => &[U16, Str, Coded(TYPE_DEF_OR_REF)],
        0x15 => &[Table(TYPE_DEF), Table(0x17)],
        0x16 => &[Table(0x17)],
        0x17 => &[U16, Str, Blob],
        0x18 => &[U16, Table(METHOD_DEF), Coded(HAS_SEMANTICS)],
        0x19 => &[Table(TYPE_DEF), Coded(METHOD_DEF_OR_REF), Coded(METHOD_DEF_OR_REF)],
        0x1a => &[Str],
        0x1b => &[Blob],
        0x1c => &[U16, Coded(MEMBER_FORWARDED), Str, Table(0x1a)],
        0x1d => &[U32, Table(FIELD)],
        0x1e => &[U32, U32],
        0x1f => &[U32],
        0x20 => &[U32, U16, U16, U16, U16, U32, Blob, Str, Str],
        0x21 => &[U32],
        0x22 => &[U32, U32, U32],
        0x23 => &[U16, U16, U16, U16, U32, Blob, Str, Str, Blob],
        0x24 => &[U32, Table(0x23)],
        0x25 => &[U32, U32, U32, Table(0x23)],
        0x26 => &[U32, Str, Blob],
        0x27 => &[U32, U32, Str, Str, Coded(IMPLEMENTATION)],
        0x28 => &[U32, U32, Str, Coded(IMPLEMENTATION)],
        0x29 => &[Table(TYPE_DEF), Table(TYPE_DEF)],
        0x2a => &[U16, U16, Coded(TYPE_OR_METHOD_DEF), Str],
        0x2b => &[Coded(METHOD_DEF_OR_REF), Blob],
        0x2c => &[Table(0x2a), Coded(TYPE_DEF_OR_REF)],
        _ => &[],
    }
}

#[derive(Clone, Copy, Default)]
struct Table {
    rows: u32,
    /// Offset of the first row in `bytes`.
    start: usize,
    row_size: usize,
    /// Offset of each column within a row, and its width (2 or 4; constants 2 or 4 too).
    columns: [(u8, u8); 9],
}

/// One module's metadata: its bytes (the metadata root and everything after it) and where its
/// tables and heaps lie.
pub struct Metadata {
    bytes: Vec<u8>,
    strings: (usize, usize),
    blob: (usize, usize),
    /// Where the tables stream starts.
    tables_at: usize,
    tables: [Table; TABLES],
    /// The tables whose rows were read, a bit each: all of them, or those of [`NAMING`] after
    /// [`read_for_names`]. A cell of another is an error, never the zeros in its place.
    readable: u64,
}

pub(crate) fn u16_at(bytes: &[u8], at: usize) -> Result<u16> {
    let b = bytes.get(at..at.checked_add(2).ok_or(Unreadable("offset"))?).ok_or(Unreadable("truncated"))?;
    Ok(u16::from_le_bytes([b[0], b[1]]))
}

pub(crate) fn u32_at(bytes: &[u8], at: usize) -> Result<u32> {
    let b = bytes.get(at..at.checked_add(4).ok_or(Unreadable("offset"))?).ok_or(Unreadable("truncated"))?;
    Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

impl Metadata {
    /// Reads the metadata root at the start of `bytes` (the range a module's CLI header names).
    pub fn parse(bytes: Vec<u8>) -> Result<Metadata> {
        if u32_at(&bytes, 0)? != 0x424a_5342 {
            return Err(Unreadable("no BSJB signature"));
        }
        let version_len = u32_at(&bytes, 12)? as usize;
        let mut at = 16usize.checked_add(version_len).ok_or(Unreadable("version"))?;
        let streams = u16_at(&bytes, at + 2)?;
        at += 4;
        let (mut strings, mut blob, mut tables) = (None, None, None);
        for _ in 0..streams {
            let offset = u32_at(&bytes, at)? as usize;
            let size = u32_at(&bytes, at + 4)? as usize;
            at += 8;
            let name_len = bytes
                .get(at..)
                .and_then(|b| b.iter().take(32).position(|&c| c == 0))
                .ok_or(Unreadable("stream name"))?;
            let name = &bytes[at..at + name_len];
            at += (name_len + 4) & !3;
            let end =
                offset.checked_add(size).filter(|&e| e <= bytes.len()).ok_or(Unreadable("stream out of range"))?;
            match name {
                b"#Strings" => strings = Some((offset, end)),
                b"#Blob" => blob = Some((offset, end)),
                b"#~" | b"#-" => tables = Some((offset, end)),
                _ => {}
            }
        }
        let (Some(strings), Some((tables_at, tables_end))) = (strings, tables) else {
            return Err(Unreadable("no #Strings or tables stream"));
        };
        let mut metadata = Metadata {
            bytes,
            strings,
            blob: blob.unwrap_or((0, 0)),
            tables_at,
            tables: [Table::default(); TABLES],
            readable: u64::MAX,
        };
        metadata.lay_out(tables_at, tables_end)?;
        Ok(metadata)
    }

    /// Reads the row counts of the tables stream at `at` and computes every table's layout.
    fn lay_out(&mut self, at: usize, end: usize) -> Result<()> {
        let bytes = &self.bytes;
        let heap_sizes = *bytes.get(at + 6).ok_or(Unreadable("truncated"))?;
        let valid = u64::from(u32_at(bytes, at + 8)?) | u64::from(u32_at(bytes, at + 12)?) << 32;
        if valid >> TABLES != 0 {
            return Err(Unreadable("tables of an unknown layout"));
        }
        let mut rows = [0u32; TABLES];
        let mut cursor = at + 24;
        for (table, count) in rows.iter_mut().enumerate() {
            if valid & (1 << table) != 0 {
                *count = u32_at(bytes, cursor)?;
                cursor += 4;
            }
        }
        if heap_sizes & 0x40 != 0 {
            cursor += 4; // an extra word in edit-and-continue metadata
        }
        let wide = |bit: u8| if heap_sizes & bit != 0 { 4 } else { 2 };
        let width = |col: Col| -> usize {
            match col {
                Col::U16 => 2,
                Col::U32 => 4,
                Col::Str => wide(0x01),
                Col::Guid => wide(0x02),
                Col::Blob => wide(0x04),
                Col::Table(t) => {
                    if rows[t] < 1 << 16 {
                        2
                    } else {
                        4
                    }
                }
                Col::Coded(tables) => {
                    let tag_bits = usize::BITS - (tables.len() - 1).leading_zeros();
                    let most = tables.iter().filter(|&&t| t != NONE).map(|&t| rows[t]).max().unwrap_or(0);
                    if u64::from(most) < 1u64 << (16 - tag_bits) { 2 } else { 4 }
                }
            }
        };
        for (table, &count) in rows.iter().enumerate() {
            let mut layout = Table { rows: count, start: cursor, ..Table::default() };
            let mut offset = 0usize;
            for (i, &col) in schema(table).iter().enumerate() {
                let w = width(col);
                layout.columns[i] = (offset as u8, w as u8);
                offset += w;
            }
            layout.row_size = offset;
            cursor = cursor
                .checked_add(offset.checked_mul(count as usize).ok_or(Unreadable("rows"))?)
                .ok_or(Unreadable("rows"))?;
            self.tables[table] = layout;
        }
        if cursor > end {
            return Err(Unreadable("tables run past their stream"));
        }
        Ok(())
    }

    /// Column `col` of row `row` (1-based) of `table`.
    fn cell(&self, table: usize, row: u32, col: usize) -> Result<u32> {
        let t = self.tables.get(table).ok_or(Unreadable("table"))?;
        if self.readable & (1 << table) == 0 {
            return Err(Unreadable("table not read"));
        }
        if row == 0 || row > t.rows {
            return Err(Unreadable("row out of range"));
        }
        let (offset, width) = t.columns[col];
        let at = t.start + (row as usize - 1) * t.row_size + offset as usize;
        if width == 2 { u16_at(&self.bytes, at).map(u32::from) } else { u32_at(&self.bytes, at) }
    }

    fn string(&self, index: u32) -> Result<&str> {
        let (start, end) = self.strings;
        let from = start.checked_add(index as usize).filter(|&f| f < end).ok_or(Unreadable("string index"))?;
        let heap = &self.bytes[from..end];
        let len = heap.iter().position(|&c| c == 0).ok_or(Unreadable("unterminated string"))?;
        std::str::from_utf8(&heap[..len]).map_err(|_| Unreadable("string not UTF-8"))
    }

    fn blob(&self, index: u32) -> Result<&[u8]> {
        let (start, end) = self.blob;
        let from = start.checked_add(index as usize).filter(|&f| f < end).ok_or(Unreadable("blob index"))?;
        let heap = &self.bytes[from..end];
        let first = *heap.first().ok_or(Unreadable("blob"))?;
        let (len, skip) = match first {
            b if b & 0x80 == 0 => (usize::from(b), 1),
            b if b & 0xc0 == 0x80 => {
                ((usize::from(b & 0x3f) << 8) | usize::from(*heap.get(1).ok_or(Unreadable("blob"))?), 2)
            }
            _ => {
                let b = heap.get(..4).ok_or(Unreadable("blob"))?;
                (
                    (usize::from(b[0] & 0x1f) << 24)
                        | (usize::from(b[1]) << 16)
                        | (usize::from(b[2]) << 8)
                        | usize::from(b[3]),
                    4,
                )
            }
        };
        heap.get(skip..skip + len).ok_or(Unreadable("blob out of range"))
    }

    /// How many methods the module defines (MethodDef rows; tokens `0x06000001` on).
    pub fn method_count(&self) -> u32 {
        self.tables[METHOD_DEF].rows
    }

    /// The RVA of MethodDef row `row`'s body (0 for an abstract, runtime or P/Invoke method).
    pub fn method_rva(&self, row: u32) -> Result<u32> {
        self.cell(METHOD_DEF, row, 0)
    }

    /// `Namespace.Type.Method` and the decoded signature of MethodDef `method` (a token), spelt
    /// as the runtimes' readers spell them.
    pub fn method_name_and_signature(&self, method: u32) -> Result<(String, String)> {
        if method & token::KIND_MASK != token::METHOD_DEF {
            return Err(Unreadable("not a MethodDef token"));
        }
        if self.tables[METHOD_PTR].rows != 0 {
            return Err(Unreadable("indirect method table"));
        }
        let row = method & token::ROW_MASK;
        let name = self.string(self.cell(METHOD_DEF, row, 3)?)?.to_string();
        let signature = self
            .blob(self.cell(METHOD_DEF, row, 4)?)
            .ok()
            .and_then(|blob| signature::method_signature(blob, self))
            .unwrap_or_else(|| UNREADABLE_SIGNATURE.into());
        // The declaring type: the last TypeDef whose method list starts at or before the row.
        let types = self.tables[TYPE_DEF].rows;
        let (mut low, mut high) = (1u32, types);
        let mut owner = 0;
        while low <= high {
            let mid = low + (high - low) / 2;
            if self.cell(TYPE_DEF, mid, 5)? <= row {
                owner = mid;
                low = mid + 1;
            } else {
                high = mid - 1;
            }
        }
        // Row 1 is `<Module>`: a global function has no declaring type in its name.
        let full = if owner <= 1 { name } else { format!("{}.{name}", self.type_def_name(owner)?) };
        Ok((full, signature))
    }

    /// The assembly's name (its Assembly row), if the module is an assembly's manifest module.
    pub fn assembly_name(&self) -> Option<String> {
        self.string(self.cell(ASSEMBLY, 1, 7).ok()?).ok().map(str::to_string)
    }

    fn type_def_name(&self, mut row: u32) -> Result<String> {
        let mut parts = Vec::new();
        for _ in 0..MAX_NESTING {
            let flags = self.cell(TYPE_DEF, row, 0)?;
            parts.push(qualified(
                self.string(self.cell(TYPE_DEF, row, 2)?)?,
                self.string(self.cell(TYPE_DEF, row, 1)?)?,
            ));
            // tdVisibilityMask 0x7; nested visibilities are 2 and above.
            if flags & 0x7 < 2 {
                break;
            }
            match self.enclosing(row)? {
                Some(enclosing) => row = enclosing,
                None => break,
            }
        }
        Ok(nested(parts))
    }

    /// The TypeDef enclosing nested TypeDef `row` (the NestedClass table is sorted by its first
    /// column).
    fn enclosing(&self, row: u32) -> Result<Option<u32>> {
        let (mut low, mut high) = (1u32, self.tables[NESTED_CLASS].rows);
        while low <= high {
            let mid = low + (high - low) / 2;
            let nested = self.cell(NESTED_CLASS, mid, 0)?;
            match nested.cmp(&row) {
                std::cmp::Ordering::Equal => return Ok(Some(self.cell(NESTED_CLASS, mid, 1)?)),
                std::cmp::Ordering::Less => low = mid + 1,
                std::cmp::Ordering::Greater => high = mid - 1,
            }
        }
        Ok(None)
    }

    fn type_ref_name(&self, mut row: u32) -> Result<String> {
        let mut parts = Vec::new();
        for _ in 0..MAX_NESTING {
            parts.push(qualified(
                self.string(self.cell(TYPE_REF, row, 2)?)?,
                self.string(self.cell(TYPE_REF, row, 1)?)?,
            ));
            // ResolutionScope: tag 3 (two bits) is a TypeRef: a nested type.
            let scope = self.cell(TYPE_REF, row, 0)?;
            if scope & 3 != 3 {
                break;
            }
            row = scope >> 2;
        }
        Ok(nested(parts))
    }
}

impl TypeNames for Metadata {
    fn type_name(&self, token: u32) -> Option<String> {
        let row = token & token::ROW_MASK;
        match token & token::KIND_MASK {
            token::TYPE_DEF => self.type_def_name(row).ok(),
            token::TYPE_REF => self.type_ref_name(row).ok(),
            token::TYPE_SPEC => signature::type_signature(self.blob(self.cell(TYPE_SPEC, row, 0).ok()?).ok()?, self),
            _ => None,
        }
    }
}

/// The most the metadata root, its stream headers and the tables stream's header (its row
/// counts) take when they come first, as compilers write them: read before anything else.
const HEAD: usize = 4096;

/// The metadata of `size` bytes that `read(offset, buf)` fills from its root on, read in part:
/// the headers, the tables names come from ([`NAMING`]) and the `#Strings` and `#Blob` heaps.
/// The other tables (attributes, parameters, member references…) and the `#US` heap, half of
/// CoreLib's 2.7 MB, are never read — nor backed by memory: the buffer is zeroed memory the
/// kernel provides a page at a time, where written. Their cells are errors. Metadata whose
/// tables stream does not start in its first 4 KB is read whole.
pub fn read_for_names(size: usize, read: &mut dyn FnMut(u64, &mut [u8]) -> bool) -> Result<Metadata> {
    let unread = || Unreadable("cannot read the metadata");
    let mut bytes = vec![0u8; size];
    let head = size.min(HEAD);
    if !read(0, &mut bytes[..head]) {
        return Err(unread());
    }
    let mut metadata = Metadata::parse(bytes)?;
    // The row counts: at most 64, after a 24-byte header and an optional extra word.
    if metadata.tables_at + 24 + 64 * 4 + 4 > head {
        return if read(0, &mut metadata.bytes) { Metadata::parse(metadata.bytes) } else { Err(unread()) };
    }
    let rows = |t: &Table| (t.start, t.start + t.rows as usize * t.row_size);
    let parts = NAMING.iter().map(|&t| rows(&metadata.tables[t])).chain([metadata.strings, metadata.blob]);
    for (from, to) in parts.collect::<Vec<_>>() {
        if from < to && !read(from as u64, &mut metadata.bytes[from..to]) {
            return Err(unread());
        }
    }
    metadata.readable = NAMING.iter().fold(0, |mask, &t| mask | 1 << t);
    Ok(metadata)
}

/// Where the metadata of a PE file of `len` bytes lies: its file offset and size, from the CLI
/// header (data directory 14) through the section table. `read(offset, buf)` fills `buf` from the
/// file, or fails.
pub fn pe_metadata_range(len: u64, read: &mut dyn FnMut(u64, &mut [u8]) -> bool) -> Result<(u64, usize)> {
    // The headers: the first 4 KB, or the whole of a smaller file (a small program is 3.5 KB).
    let mut head = vec![0u8; len.min(4096) as usize];
    if !read(0, &mut head) {
        return Err(Unreadable("cannot read the file's headers"));
    }
    let (_, directories) = pe_headers(&head)?;
    let cli_rva = u32_at(&head, directories + 14 * 8)?;
    let to_offset = |rva: u32| pe_rva_to_offset(&head, rva);
    let mut cli = [0u8; 16];
    if cli_rva == 0 || !read(to_offset(cli_rva)?, &mut cli) {
        return Err(Unreadable("no CLI header"));
    }
    let (metadata_rva, size) = (u32_at(&cli, 8)?, u32_at(&cli, 12)? as usize);
    Ok((to_offset(metadata_rva)?, size))
}

/// Where a PE file's optional header and its data directories start in its headers `head`
/// (checked: the MZ and PE signatures, a PE32 or PE32+ optional header).
pub(crate) fn pe_headers(head: &[u8]) -> Result<(usize, usize)> {
    if head.get(..2) != Some(b"MZ") {
        return Err(Unreadable("not a PE file"));
    }
    let pe = u32_at(head, 0x3c)? as usize;
    if u32_at(head, pe)? != 0x0000_4550 {
        return Err(Unreadable("no PE signature"));
    }
    let optional = pe + 24;
    match u16_at(head, optional)? {
        0x10b => Ok((optional, optional + 96)),
        0x20b => Ok((optional, optional + 112)),
        _ => Err(Unreadable("unknown optional header")),
    }
}

/// The metadata of a whole PE file held in memory (its CLI header's range, read and parsed).
pub fn pe_metadata(file: &[u8]) -> Result<Metadata> {
    let mut read = |offset: u64, buf: &mut [u8]| {
        let at = usize::try_from(offset).unwrap_or(usize::MAX);
        match file.get(at..at.saturating_add(buf.len())) {
            Some(bytes) => {
                buf.copy_from_slice(bytes);
                true
            }
            None => false,
        }
    };
    let (offset, size) = pe_metadata_range(file.len() as u64, &mut read)?;
    let at = usize::try_from(offset).map_err(|_| Unreadable("metadata out of range"))?;
    let bytes = at.checked_add(size).and_then(|end| file.get(at..end)).ok_or(Unreadable("metadata out of range"))?;
    Metadata::parse(bytes.to_vec())
}

/// The file offset of `rva` in a PE file whose headers (at least through the section table) are
/// `head`.
pub fn pe_rva_to_offset(head: &[u8], rva: u32) -> Result<u64> {
    let pe = u32_at(head, 0x3c)? as usize;
    let sections = usize::from(u16_at(head, pe + 6)?);
    let section_table = pe + 24 + usize::from(u16_at(head, pe + 20)?);
    for i in 0..sections {
        let s = section_table + i * 40;
        let (virtual_size, virtual_address) = (u32_at(head, s + 8)?, u32_at(head, s + 12)?);
        let raw = u32_at(head, s + 20)?;
        if rva >= virtual_address && rva - virtual_address < virtual_size.max(u32_at(head, s + 16)?) {
            return Ok(u64::from(raw) + u64::from(rva - virtual_address));
        }
    }
    Err(Unreadable("RVA outside every section"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An assembly from the Mono installation `scripts/setup.sh` provides (its C# compiler).
    fn mcs() -> Metadata {
        let path = "/usr/lib/mono/4.5/mcs.exe";
        let file = std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e} (run scripts/setup.sh)"));
        pe_metadata(&file).expect("metadata")
    }

    #[test]
    fn every_method_of_a_real_assembly_is_named() {
        let md = mcs();
        let methods = md.tables[METHOD_DEF].rows;
        assert!(methods > 5000, "{methods} methods");
        let names: Vec<(String, String)> =
            (1..=methods).map(|row| md.method_name_and_signature(token::METHOD_DEF | row).expect("named")).collect();
        let has = |name: &str, signature: &str| names.iter().any(|(n, s)| n == name && s == signature);
        assert!(has("Mono.CSharp.Driver.Main", "(string[]) -> int"), "{:?}", &names[..20]);
        // Nested types are joined with `+`, generic arity stays in the name.
        assert!(names.iter().any(|(n, _)| n.contains('+')));
        assert!(names.iter().any(|(n, _)| n.contains('`')));
        assert!(names.iter().all(|(_, s)| s != UNREADABLE_SIGNATURE));
        assert_eq!(md.assembly_name().as_deref(), Some("mcs"));
    }

    #[test]
    fn metadata_read_for_names_names_every_method_as_the_whole_does() {
        let whole = mcs();
        let mut reads = 0;
        let mut read = |offset: u64, buf: &mut [u8]| {
            reads += buf.len();
            let at = offset as usize;
            buf.copy_from_slice(&whole.bytes[at..at + buf.len()]);
            true
        };
        let part = read_for_names(whole.bytes.len(), &mut read).expect("read in part");
        assert!(reads < whole.bytes.len() * 3 / 4, "{reads} of {} bytes", whole.bytes.len());
        for row in 1..=whole.tables[METHOD_DEF].rows {
            let method = token::METHOD_DEF | row;
            assert_eq!(part.method_name_and_signature(method), whole.method_name_and_signature(method));
        }
        for row in 1..=whole.tables[TYPE_DEF].rows {
            assert_eq!(part.type_name(token::TYPE_DEF | row), whole.type_name(token::TYPE_DEF | row));
        }
        assert_eq!(part.assembly_name(), whole.assembly_name());
        // A table that was not read: an error, not the zeros in its place.
        assert_eq!(part.cell(PARAM, 1, 2), Err(Unreadable("table not read")));
        assert!(whole.cell(PARAM, 1, 2).is_ok());
        assert!(read_for_names(whole.bytes.len(), &mut |_, _| false).is_err());
    }

    #[test]
    fn damaged_metadata_is_an_error_not_a_panic() {
        let md = mcs();
        let bytes = md.bytes.clone();
        for cut in [0, 4, 16, 64, 200, bytes.len() / 2] {
            let _ = Metadata::parse(bytes[..cut].to_vec()).map(|m| m.method_name_and_signature(token::METHOD_DEF | 1));
        }
        let mut flipped = bytes.clone();
        for i in (0..flipped.len()).step_by(97) {
            flipped[i] ^= 0x5a;
        }
        if let Ok(m) = Metadata::parse(flipped) {
            for row in 1..200 {
                let _ = m.method_name_and_signature(token::METHOD_DEF | row);
            }
        }
        assert!(md.method_name_and_signature(token::TYPE_DEF | 1).is_err());
        assert!(md.method_name_and_signature(token::METHOD_DEF | 0x00ff_ffff).is_err());
    }
}
