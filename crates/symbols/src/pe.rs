//! What the symbol readers need from the assembly itself (PE/COFF and ECMA-335 II.24): its debug
//! directory — the CodeView entry that names and identifies its PDB, and a PDB embedded in it —
//! and its module's MVID, which a Mono `.mdb` must repeat.
//!
//! The file is read piecewise at the offsets its headers give (an assembly may be large and only
//! a few kilobytes of it matter here), each piece checked against the file's real length before
//! a buffer is allocated for it.

use crate::bytes::{Damaged, Fault, guid_at, slice, u16_at, u32_at};
use std::fs::File;
use std::os::unix::fs::FileExt;

/// The largest metadata or embedded PDB read into memory; real ones are a few megabytes.
const MAX_PIECE: usize = 256 << 20;
/// Headers (MZ, PE, optional header, section table) lie in the first few hundred bytes of a
/// managed assembly; more than this is not one.
const HEADERS: usize = 4096;
/// A managed assembly has three or four debug directory entries; more than this is damage.
const MAX_DEBUG_ENTRIES: usize = 64;
/// The CodeView record: "RSDS", GUID, age, then the PDB path (a path longer than this is damage).
const MAX_CODEVIEW: usize = 24 + 4096;

const DEBUG_TYPE_CODEVIEW: u32 = 2;
const DEBUG_TYPE_EMBEDDED_PORTABLE_PDB: u32 = 17;
/// The minor version Roslyn gives the CodeView entry of a portable PDB (`'PM'`).
const PORTABLE_CODEVIEW_MINOR: u16 = 0x504d;

/// One opened assembly: its file and the parts of its headers that locate everything else.
pub(crate) struct Image {
    file: File,
    len: u64,
    head: Vec<u8>,
    /// (virtual address, virtual size, raw size, raw offset) of each section.
    sections: Vec<(u32, u32, u32, u32)>,
    /// The data directories' offset in `head`, and how many there are.
    directories: (usize, usize),
}

/// The CodeView debug directory entry: which PDB the compiler wrote for this build.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CodeView {
    pub(crate) guid: [u8; 16],
    /// The entry's TimeDateStamp: for a portable PDB, the last four bytes of the PDB id.
    pub(crate) stamp: u32,
    /// The PDB path as the compiler wrote it (often a build machine's absolute path).
    pub(crate) path: String,
    /// Whether the entry says the PDB is a portable one (rather than a Windows MSF PDB).
    pub(crate) portable: bool,
}

/// One debug directory entry (PE/COFF "Debug Directory (Image Only)").
struct DebugEntry {
    kind: u32,
    stamp: u32,
    minor: u16,
    size: u32,
    /// File offset of the entry's data.
    pointer: u64,
}

impl Image {
    /// Reads the headers of the PE file `file`.
    pub(crate) fn new(file: File) -> Result<Image, Fault> {
        let len = file.metadata()?.len();
        let mut head = vec![0; len.min(HEADERS as u64) as usize];
        file.read_exact_at(&mut head, 0)?;
        if head.get(..2) != Some(b"MZ") {
            return Err(Damaged("not a PE file").into());
        }
        let pe = u32_at(&head, 0x3c)? as usize;
        if u32_at(&head, pe)? != 0x0000_4550 {
            return Err(Damaged("no PE signature").into());
        }
        let section_count = usize::from(u16_at(&head, pe + 6)?);
        let optional_size = usize::from(u16_at(&head, pe + 20)?);
        let optional = pe + 24;
        let (directories_at, count_at) = match u16_at(&head, optional)? {
            0x10b => (optional + 96, optional + 92),
            0x20b => (optional + 112, optional + 108),
            _ => return Err(Damaged("an unknown optional header").into()),
        };
        let directory_count = (u32_at(&head, count_at)? as usize).min(16);
        let section_table = optional + optional_size;
        let sections = (0..section_count)
            .map(|i| {
                let s = section_table + i * 40;
                Ok((u32_at(&head, s + 12)?, u32_at(&head, s + 8)?, u32_at(&head, s + 16)?, u32_at(&head, s + 20)?))
            })
            .collect::<Result<Vec<_>, Damaged>>()?;
        Ok(Image { file, len, head, sections, directories: (directories_at, directory_count) })
    }

    /// The file offset of relative virtual address `rva`.
    fn offset_of(&self, rva: u32) -> Result<u64, Damaged> {
        self.sections
            .iter()
            .find(|&&(address, virtual_size, raw_size, _)| rva >= address && rva - address < virtual_size.max(raw_size))
            .map(|&(address, _, _, raw)| u64::from(raw) + u64::from(rva - address))
            .ok_or(Damaged("an address outside every section"))
    }

    /// `len` bytes at file offset `offset`, once they are known to lie inside the file.
    fn read(&self, offset: u64, len: usize) -> Result<Vec<u8>, Fault> {
        if len > MAX_PIECE || offset.checked_add(len as u64).is_none_or(|end| end > self.len) {
            return Err(Damaged("a piece of the file lies past its end").into());
        }
        let mut buf = vec![0; len];
        self.file.read_exact_at(&mut buf, offset)?;
        Ok(buf)
    }

    /// Data directory `index` (RVA and size), or None when the file has none.
    fn directory(&self, index: usize) -> Result<Option<(u32, u32)>, Damaged> {
        if index >= self.directories.1 {
            return Ok(None);
        }
        let at = self.directories.0 + index * 8;
        let (rva, size) = (u32_at(&self.head, at)?, u32_at(&self.head, at + 4)?);
        Ok((rva != 0 && size != 0).then_some((rva, size)))
    }

    fn debug_entries(&self) -> Result<Vec<DebugEntry>, Fault> {
        let Some((rva, size)) = self.directory(6)? else {
            return Ok(Vec::new());
        };
        let count = (size as usize / 28).min(MAX_DEBUG_ENTRIES);
        let table = self.read(self.offset_of(rva)?, count * 28)?;
        let entry = |e: usize| -> Result<DebugEntry, Damaged> {
            // The data's file offset; or, where a writer left that out, its address.
            let (address, pointer) = (u32_at(&table, e + 20)?, u32_at(&table, e + 24)?);
            Ok(DebugEntry {
                stamp: u32_at(&table, e + 4)?,
                minor: u16_at(&table, e + 10)?,
                kind: u32_at(&table, e + 12)?,
                size: u32_at(&table, e + 16)?,
                pointer: if pointer != 0 || address == 0 { pointer.into() } else { self.offset_of(address)? },
            })
        };
        Ok((0..count).map(|i| entry(i * 28)).collect::<Result<_, _>>()?)
    }

    /// The CodeView entry (preferring one that names a portable PDB), if the assembly has one.
    pub(crate) fn codeview(&self) -> Result<Option<CodeView>, Fault> {
        let mut found: Option<CodeView> = None;
        for entry in self.debug_entries()?.iter().filter(|e| e.kind == DEBUG_TYPE_CODEVIEW) {
            let record = self.read(entry.pointer, (entry.size as usize).min(MAX_CODEVIEW))?;
            let codeview = parse_codeview(&record, entry)?;
            if found.as_ref().is_none_or(|f| !f.portable && codeview.portable) {
                found = Some(codeview);
            }
        }
        Ok(found)
    }

    /// The portable PDB embedded in the assembly (debug entry type 17), decompressed.
    pub(crate) fn embedded_pdb(&self) -> Result<Option<Vec<u8>>, Fault> {
        let entries = self.debug_entries()?;
        let Some(entry) = entries.iter().find(|e| e.kind == DEBUG_TYPE_EMBEDDED_PORTABLE_PDB) else {
            return Ok(None);
        };
        let blob = self.read(entry.pointer, entry.size as usize)?;
        Ok(Some(inflate_embedded(&blob)?))
    }

    /// The module's MVID: the GUID the Module table's one row names (ECMA-335 II.22.30).
    pub(crate) fn mvid(&self) -> Result<[u8; 16], Fault> {
        let mut io_error = None;
        let mut read_at = |offset: u64, buf: &mut [u8]| match self.file.read_exact_at(buf, offset) {
            Ok(()) => true,
            Err(error) => {
                io_error = Some(error);
                false
            }
        };
        let range = sonde_metadata::tables::pe_metadata_range(self.len, &mut read_at);
        // A read past the end is damage (reported below); any other failure is the disk's.
        if let Some(error) = io_error.filter(|e| e.kind() != std::io::ErrorKind::UnexpectedEof) {
            return Err(error.into());
        }
        let (offset, size) = range.map_err(|unreadable| Damaged(unreadable.0))?;
        Ok(module_mvid(&self.read(offset, size)?)?)
    }
}

fn parse_codeview(record: &[u8], entry: &DebugEntry) -> Result<CodeView, Damaged> {
    if slice(record, 0, 4)? != b"RSDS" {
        return Err(Damaged("a CodeView entry without the RSDS signature"));
    }
    let path = record.get(24..).unwrap_or_default();
    let path = path.split(|&b| b == 0).next().unwrap_or_default();
    Ok(CodeView {
        guid: guid_at(record, 4)?,
        stamp: entry.stamp,
        path: String::from_utf8_lossy(path).into_owned(),
        portable: entry.minor == PORTABLE_CODEVIEW_MINOR,
    })
}

/// Decompresses an embedded portable PDB: "MPDB", its size, then raw deflate (the Portable PDB
/// spec's "Embedded Portable PDB Debug Directory Entry").
fn inflate_embedded(blob: &[u8]) -> Result<Vec<u8>, Damaged> {
    if slice(blob, 0, 4)? != b"MPDB" {
        return Err(Damaged("an embedded PDB without the MPDB signature"));
    }
    let size = u32_at(blob, 4)? as usize;
    // Deflate cannot expand data more than ~1032 times: a larger claim is a lie, refused before
    // anything is allocated for it.
    let compressed = &blob[8..];
    if size > MAX_PIECE || size > compressed.len().saturating_mul(1032) {
        return Err(Damaged("an embedded PDB claims an impossible size"));
    }
    let pdb = miniz_oxide::inflate::decompress_to_vec_with_limit(compressed, size)
        .map_err(|_| Damaged("an embedded PDB that does not inflate"))?;
    if pdb.len() != size {
        return Err(Damaged("an embedded PDB of another size than it claims"));
    }
    Ok(pdb)
}

/// The MVID in `metadata` (the bytes the CLI header points at): the `#GUID` heap entry that the
/// Module table's row names. The Module table comes first among the tables, so no other
/// table's layout is needed to find it.
fn module_mvid(metadata: &[u8]) -> Result<[u8; 16], Damaged> {
    let streams = crate::ppdb::streams(metadata)?;
    let find = |name: &[u8]| streams.iter().find(|s| s.0 == name).map(|s| s.1.clone());
    let (tables, guids) = match (find(b"#~").or_else(|| find(b"#-")), find(b"#GUID")) {
        (Some(tables), Some(guids)) => (tables, guids),
        _ => return Err(Damaged("metadata without tables or a #GUID heap")),
    };
    let tables = &metadata[tables];
    let heap_sizes = *tables.get(6).ok_or(Damaged("a truncated tables stream"))?;
    let valid = u64::from(u32_at(tables, 8)?) | u64::from(u32_at(tables, 12)?) << 32;
    if valid & 1 == 0 {
        return Err(Damaged("metadata without a Module table"));
    }
    let mut row = 24 + 4 * valid.count_ones() as usize;
    if heap_sizes & 0x40 != 0 {
        row += 4; // an extra word in edit-and-continue metadata
    }
    // Module: Generation (2), Name (#Strings index), Mvid (#GUID index), ...
    let string_width = if heap_sizes & 0x01 != 0 { 4 } else { 2 };
    let mvid_at = row + 2 + string_width;
    let index = if heap_sizes & 0x02 != 0 { u32_at(tables, mvid_at)? } else { u32::from(u16_at(tables, mvid_at)?) };
    let index = (index as usize).checked_sub(1).ok_or(Damaged("a module without an MVID"))?;
    guid_at(&metadata[guids], index.checked_mul(16).ok_or(Damaged("a bad GUID index"))?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn embedded(size: usize, deflated: &[u8]) -> Vec<u8> {
        [b"MPDB".as_slice(), &(size as u32).to_le_bytes(), deflated].concat()
    }

    #[test]
    fn an_embedded_pdb_inflates_to_exactly_the_size_it_claims() {
        // Any bytes show the packaging ("MPDB", size, raw deflate); the PDB inside is the
        // reader's business, tested on real PDBs.
        let data = include_bytes!("ppdb.rs");
        let deflated = miniz_oxide::deflate::compress_to_vec(data, 6);
        assert_eq!(inflate_embedded(&embedded(data.len(), &deflated)).as_deref(), Ok(data.as_slice()));

        for lie in [data.len() - 1, data.len() + 1, 0, u32::MAX as usize] {
            assert!(inflate_embedded(&embedded(lie, &deflated)).is_err(), "claimed size {lie}");
        }
        assert!(inflate_embedded(&embedded(data.len(), &deflated[..deflated.len() / 2])).is_err());
        assert!(inflate_embedded(&embedded(data.len(), &[])).is_err());
        assert!(inflate_embedded(b"MPDB\x10").is_err());
        let mut wrong = embedded(data.len(), &deflated);
        wrong[0] = b'X';
        assert!(inflate_embedded(&wrong).is_err());
    }
}
