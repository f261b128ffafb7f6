//! A reader of portable PDBs (the Portable PDB v1.0 spec, dotnet/runtime
//! `docs/design/specs/PortablePdb-Metadata.md`): the `#Pdb` stream's id, the Document table and
//! the MethodDebugInformation table's sequence points — nothing else.
//!
//! Why not `symbolic-ppdb`: it looks lines up only through a cache it serialises first, has no
//! way to ask for a method's first sequence point, and decodes IL offsets with an unchecked
//! addition that a hostile file overflows (a panic in debug builds). The part needed here is a
//! few hundred lines over the same ECMA-335 metadata layout `sonde-metadata` already reads.

use crate::bytes::{Cursor, Damaged, Result, slice, u16_at, u32_at};
use crate::{HIDDEN_LINE, MAX_PATH, Point};
use std::ops::Range;

/// IL offsets, lines and columns are below 2^29 (compressed integers cannot say more).
const LIMIT: u32 = 0x2000_0000;

const DOCUMENT: u32 = 0x30;
const METHOD_DEBUG_INFORMATION: u32 = 0x31;

/// The streams of an ECMA-335 metadata root (II.24.2.1), which a portable PDB shares with an
/// assembly's metadata: each stream's name and its byte range in `root`.
pub(crate) fn streams(root: &[u8]) -> Result<Vec<(&[u8], Range<usize>)>> {
    if u32_at(root, 0)? != 0x424a_5342 {
        return Err(Damaged("no metadata signature (BSJB)"));
    }
    let version_len = u32_at(root, 12)? as usize;
    let mut cursor = Cursor::at(root, 16usize.checked_add(version_len).ok_or(Damaged("a bad version length"))?)?;
    cursor.take(2)?; // flags
    let count = cursor.u16()?;
    let mut streams = Vec::new();
    for _ in 0..count {
        let (offset, size) = (cursor.u32()? as usize, cursor.u32()? as usize);
        // The name: NUL-terminated, at most 32 bytes, padded to a multiple of four.
        let start = cursor.position();
        let name_len = root[start..].iter().take(32).position(|&b| b == 0).ok_or(Damaged("a bad stream name"))?;
        let name = &root[start..start + name_len];
        cursor.take((name_len + 4) & !3)?;
        slice(root, offset, size)?;
        streams.push((name, offset..offset + size));
    }
    Ok(streams)
}

/// Where a table's rows lie in the file.
#[derive(Clone, Copy, Default)]
struct Table {
    start: usize,
    rows: u32,
    row_size: usize,
}

/// One portable PDB, checked for shape at [`PortablePdb::parse`]; lines are decoded from its
/// bytes on demand.
pub(crate) struct PortablePdb {
    bytes: Vec<u8>,
    id: [u8; 20],
    blob: Range<usize>,
    documents: Table,
    methods: Table,
    /// Width of #Blob heap indexes (2 or 4).
    blob_width: usize,
    /// Width of Document table indexes (2 or 4).
    document_width: usize,
}

impl PortablePdb {
    /// Reads the layout of the portable PDB in `bytes` and decodes every method's sequence
    /// points once, so that damage is reported now rather than as missing lines later.
    pub(crate) fn parse(bytes: Vec<u8>) -> Result<PortablePdb> {
        let streams = streams(&bytes)?;
        let find = |name: &[u8]| streams.iter().find(|s| s.0 == name).map(|s| s.1.clone());
        let pdb = find(b"#Pdb").ok_or(Damaged("no #Pdb stream: not a portable PDB"))?;
        let tables = find(b"#~").ok_or(Damaged("no #~ tables stream"))?;
        let blob = find(b"#Blob").unwrap_or(0..0);
        let mut id = [0; 20];
        id.copy_from_slice(slice(&bytes[pdb], 0, 20)?);

        let t = &bytes[tables.clone()];
        let heap_sizes = *t.get(6).ok_or(Damaged("a truncated tables stream"))?;
        let valid = u64::from(u32_at(t, 8)?) | u64::from(u32_at(t, 12)?) << 32;
        if valid & ((1 << DOCUMENT) - 1) != 0 {
            // A standalone PDB holds debug tables only; the type system's are the assembly's.
            return Err(Damaged("type-system tables in a PDB"));
        }
        let mut at = 24;
        let mut rows = |table: u32| -> Result<u32> {
            if valid & (1 << table) == 0 {
                return Ok(0);
            }
            let count = u32_at(t, at)?;
            at += 4;
            Ok(count)
        };
        let (document_rows, method_rows) = (rows(DOCUMENT)?, rows(METHOD_DEBUG_INFORMATION)?);
        let mut start = 24 + 4 * valid.count_ones() as usize;
        if heap_sizes & 0x40 != 0 {
            start += 4; // an extra word some writers add after the row counts
        }
        let blob_width = if heap_sizes & 0x04 != 0 { 4 } else { 2 };
        let guid_width = if heap_sizes & 0x02 != 0 { 4 } else { 2 };
        let document_width = if document_rows < 1 << 16 { 2 } else { 4 };
        let document_size = 2 * blob_width + 2 * guid_width;
        let method_size = document_width + blob_width;
        let start = tables.start + start;
        let end = start as u64
            + document_size as u64 * u64::from(document_rows)
            + method_size as u64 * u64::from(method_rows);
        if end > tables.end as u64 {
            return Err(Damaged("tables run past their stream"));
        }
        let documents = Table { start, rows: document_rows, row_size: document_size };
        let methods =
            Table { start: start + document_size * document_rows as usize, rows: method_rows, row_size: method_size };
        let pdb = PortablePdb { bytes, id, blob, documents, methods, blob_width, document_width };
        pdb.check_sequence_points()?;
        Ok(pdb)
    }

    /// The PDB id: a GUID and a stamp that the assembly's CodeView entry repeats.
    pub(crate) fn id(&self) -> [u8; 20] {
        self.id
    }

    /// Decodes every method's sequence points. The work is bounded by the file's size: rows may
    /// share a blob (Roslyn deduplicates them), but not thousands of times over.
    fn check_sequence_points(&self) -> Result<()> {
        let mut budget = self.bytes.len().saturating_mul(4).saturating_add(1 << 16);
        for row in 1..=self.methods.rows {
            let Some(points) = self.method_points(row)? else { continue };
            let len = points.data.remaining();
            budget = budget.checked_sub(len).ok_or(Damaged("sequence points shared implausibly often"))?;
            for point in points {
                let point = point?;
                if point.file == 0 || point.file > self.documents.rows {
                    return Err(Damaged("a sequence point in a document that does not exist"));
                }
            }
        }
        Ok(())
    }

    fn cell(&self, table: Table, row: u32, at: usize, width: usize) -> Result<u32> {
        if row == 0 || row > table.rows {
            return Err(Damaged("a row out of range"));
        }
        let offset = table.start + (row as usize - 1) * table.row_size + at;
        if width == 2 { u16_at(&self.bytes, offset).map(u32::from) } else { u32_at(&self.bytes, offset) }
    }

    fn blob(&self, index: u32) -> Result<&[u8]> {
        let heap = &self.bytes[self.blob.clone()];
        let mut cursor = Cursor::at(heap, index as usize)?;
        let len = cursor.compressed_u32()? as usize;
        cursor.take(len)
    }

    /// The sequence points of MethodDef row `row`, or None when it has none. Err only when the
    /// row does not exist or its blob's header is damaged.
    pub(crate) fn method_points(&self, row: u32) -> Result<Option<Points<'_>>> {
        let document = self.cell(self.methods, row, 0, self.document_width)?;
        let index = self.cell(self.methods, row, self.document_width, self.blob_width)?;
        if index == 0 {
            return Ok(None);
        }
        let blob = self.blob(index)?;
        if blob.is_empty() {
            return Ok(None);
        }
        let mut data = Cursor::at(blob, 0)?;
        data.compressed_u32()?; // the local signature
        let document = if document == 0 { data.compressed_u32()? } else { document };
        Ok(Some(Points { data, first: true, il_offset: 0, previous: None, document, failed: false }))
    }

    /// The name of document `row` as the compiler wrote it: parts joined by a separator.
    pub(crate) fn document_name(&self, row: u32) -> Result<String> {
        let mut blob = Cursor::at(self.blob(self.cell(self.documents, row, 0, self.blob_width)?)?, 0)?;
        let separator = blob.u8()?;
        if separator >= 0x80 {
            return Err(Damaged("a document name separator that is not one character"));
        }
        let mut name = Vec::new();
        let mut first = true;
        while !blob.is_empty() {
            if !first && separator != 0 {
                name.push(separator);
            }
            first = false;
            let part = match blob.compressed_u32()? {
                0 => &[][..],
                index => self.blob(index)?,
            };
            if name.len() + part.len() > MAX_PATH {
                return Err(Damaged("a document name longer than 64 KiB"));
            }
            name.extend_from_slice(part);
        }
        String::from_utf8(name).map_err(|_| Damaged("a document name that is not UTF-8"))
    }
}

/// The sequence points of one method, decoded from its blob in IL order (the spec's
/// "Sequence Points Blob"); `file` is a Document row.
pub(crate) struct Points<'a> {
    data: Cursor<'a>,
    first: bool,
    il_offset: u32,
    /// Start line and column of the previous non-hidden point: later ones are deltas from it.
    previous: Option<(u32, u32)>,
    document: u32,
    failed: bool,
}

impl Points<'_> {
    fn next_point(&mut self) -> Result<Option<Point>> {
        loop {
            if self.data.is_empty() {
                return Ok(None);
            }
            if !self.first && self.data.peek() == Some(0) {
                // A document record: δILOffset 0, then the Document row of the points after it.
                self.data.u8()?;
                self.document = self.data.compressed_u32()?;
                continue;
            }
            let delta = self.data.compressed_u32()?;
            self.il_offset = if self.first { delta } else { self.il_offset.checked_add(delta).unwrap_or(LIMIT) };
            self.first = false;
            if self.il_offset >= LIMIT {
                return Err(Damaged("an IL offset out of range"));
            }
            let delta_lines = self.data.compressed_u32()?;
            let delta_columns = if delta_lines == 0 {
                i64::from(self.data.compressed_u32()?)
            } else {
                i64::from(self.data.compressed_i32()?)
            };
            if delta_lines == 0 && delta_columns == 0 {
                return Ok(Some(Point {
                    il_offset: self.il_offset,
                    line: HIDDEN_LINE,
                    file: self.document,
                    hidden: true,
                }));
            }
            let (line, column) = match self.previous {
                None => (i64::from(self.data.compressed_u32()?), i64::from(self.data.compressed_u32()?)),
                Some((line, column)) => (
                    i64::from(line) + i64::from(self.data.compressed_i32()?),
                    i64::from(column) + i64::from(self.data.compressed_i32()?),
                ),
            };
            let end_line = line + i64::from(delta_lines);
            let in_range = |v: i64, limit: i64| (0..limit).contains(&v);
            // Line 0 is accepted but, like a hidden point, names no line (Mono's rule too).
            if !in_range(line, LIMIT.into())
                || !in_range(end_line, LIMIT.into())
                || !in_range(column, 0x1_0000)
                || !in_range(column + delta_columns, 0x1_0000)
                || line == i64::from(HIDDEN_LINE)
            {
                return Err(Damaged("a sequence point out of range"));
            }
            self.previous = Some((line as u32, column as u32));
            let point = Point { il_offset: self.il_offset, line: line as u32, file: self.document, hidden: line == 0 };
            return Ok(Some(point));
        }
    }
}

impl Iterator for Points<'_> {
    type Item = Result<Point>;

    fn next(&mut self) -> Option<Result<Point>> {
        if self.failed {
            return None;
        }
        let next = self.next_point().transpose();
        self.failed = matches!(next, Some(Err(_)));
        next
    }
}
