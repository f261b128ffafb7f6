//! The heap snapshot file: the profile file's layout (`sonde-profile`'s `file.rs`) with its own
//! magic, so that neither reader can mistake the other's file.
//!
//! ```text
//! offset  size  field
//!      0     8  magic, b"SONDEHEP"
//!      8     4  format version, little-endian u32 (currently 1)
//!     12     8  payload length in bytes, little-endian u64
//!     20     n  payload: the postcard-serialized `HeapSnapshot`
//!   20+n     4  CRC-32 (IEEE) of the payload, little-endian u32
//! ```
//!
//! The checksum is there because postcard has no redundancy: a flipped bit would become another
//! index, and a wrong retention path is worse than "corrupt". After decoding, every index is
//! checked ([`HeapSnapshot::validate`]) so that the analyses never meet one out of range.

use sonde_profile::file::{crc32, read_full, save_atomically};
use std::fs::File;
use std::io::{self, BufReader, Read, Write};
use std::path::Path;

use crate::model::{HeapSnapshot, InvalidHeap};

/// The first eight bytes of every heap snapshot file.
pub const HEAP_MAGIC: [u8; 8] = *b"SONDEHEP";

/// The first eight bytes of a profile file (`sonde_profile::file::MAGIC`, checked by a test).
pub const PROFILE_MAGIC: [u8; 8] = *b"SONDEPRF";

/// The format version this build writes and reads.
pub const HEAP_FORMAT_VERSION: u32 = 1;

/// The largest payload a reader accepts (the length field is untrusted): 64 GiB, some billions of
/// objects. Bytes are read as they arrive, so a lying length on a short file costs nothing.
pub const MAX_HEAP_PAYLOAD_LEN: u64 = 1 << 36;

const HEADER_LEN: usize = 8 + 4 + 8;

/// What a Sonde file holds, told by its magic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    Heap,
    Profile,
}

/// Whether `start` (a file's first bytes, at least 8) begins a heap snapshot or a profile.
pub fn file_kind(start: &[u8]) -> Option<FileKind> {
    match start.get(..8)? {
        m if m == HEAP_MAGIC => Some(FileKind::Heap),
        m if m == PROFILE_MAGIC => Some(FileKind::Profile),
        _ => None,
    }
}

/// The kind of the file at `path` ([`file_kind`] of its first bytes); `None` for neither.
pub fn file_kind_of(path: impl AsRef<Path>) -> io::Result<Option<FileKind>> {
    let mut start = [0u8; 8];
    let got = read_full(&mut File::open(path)?, &mut start)?;
    Ok(file_kind(&start[..got]))
}

/// Why a heap snapshot could not be read or written. Each message is one line.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HeapFileError {
    #[error("not a Sonde heap snapshot: the file is empty")]
    Empty,
    #[error("not a heap snapshot: this is a Sonde profile (`sonde report` reads it)")]
    IsAProfile,
    #[error("not a Sonde heap snapshot: it does not start with \"SONDEHEP\"")]
    NotAHeap,
    #[error("unsupported heap snapshot format version {found} (this build reads version {HEAP_FORMAT_VERSION})")]
    UnsupportedVersion { found: u32 },
    #[error("truncated heap snapshot: the file ends inside the {part}")]
    Truncated { part: &'static str },
    #[error("corrupt heap snapshot: it declares a {len}-byte payload, above the {max}-byte limit")]
    TooLarge { len: u64, max: u64 },
    #[error("corrupt heap snapshot: checksum mismatch (stored {stored:#010x}, computed {computed:#010x})")]
    ChecksumMismatch { stored: u32, computed: u32 },
    #[error("corrupt heap snapshot: the payload does not decode: {0}")]
    Undecodable(String),
    #[error("invalid heap snapshot: {0}")]
    Invalid(InvalidHeap),
    #[error("heap snapshot I/O failed")]
    Io(#[from] io::Error),
}

/// Writes `heap` as a complete heap snapshot file; refuses one that fails validation.
pub fn write_heap(mut w: impl Write, heap: &HeapSnapshot) -> Result<(), HeapFileError> {
    heap.validate().map_err(HeapFileError::Invalid)?;
    let payload = postcard::to_stdvec(heap).map_err(io::Error::other)?;
    w.write_all(&HEAP_MAGIC)?;
    w.write_all(&HEAP_FORMAT_VERSION.to_le_bytes())?;
    w.write_all(&(payload.len() as u64).to_le_bytes())?;
    w.write_all(&payload)?;
    w.write_all(&crc32(&payload).to_le_bytes())?;
    w.flush()?;
    Ok(())
}

/// Reads one heap snapshot file from `r`, consuming exactly its bytes.
pub fn read_heap(mut r: impl Read) -> Result<HeapSnapshot, HeapFileError> {
    let mut header = [0u8; HEADER_LEN];
    let got = read_full(&mut r, &mut header)?;
    if got == 0 {
        return Err(HeapFileError::Empty);
    }
    let magic_got = got.min(8);
    if header[..magic_got] != HEAP_MAGIC[..magic_got] {
        return Err(match file_kind(&header[..got]) {
            Some(FileKind::Profile) => HeapFileError::IsAProfile,
            _ => HeapFileError::NotAHeap,
        });
    }
    if got < HEADER_LEN {
        return Err(HeapFileError::Truncated { part: "header" });
    }
    let version = u32::from_le_bytes(header[8..12].try_into().expect("4-byte slice"));
    if version != HEAP_FORMAT_VERSION {
        return Err(HeapFileError::UnsupportedVersion { found: version });
    }
    let len = u64::from_le_bytes(header[12..20].try_into().expect("8-byte slice"));
    if len > MAX_HEAP_PAYLOAD_LEN {
        return Err(HeapFileError::TooLarge { len, max: MAX_HEAP_PAYLOAD_LEN });
    }
    let mut payload = Vec::new();
    r.by_ref().take(len).read_to_end(&mut payload)?;
    if payload.len() as u64 != len {
        return Err(HeapFileError::Truncated { part: "payload" });
    }
    let mut stored = [0u8; 4];
    if read_full(&mut r, &mut stored)? != stored.len() {
        return Err(HeapFileError::Truncated { part: "checksum" });
    }
    let stored = u32::from_le_bytes(stored);
    let computed = crc32(&payload);
    if stored != computed {
        return Err(HeapFileError::ChecksumMismatch { stored, computed });
    }
    let (heap, rest) =
        postcard::take_from_bytes::<HeapSnapshot>(&payload).map_err(|e| HeapFileError::Undecodable(e.to_string()))?;
    if !rest.is_empty() {
        return Err(HeapFileError::Undecodable(format!("{} bytes follow the snapshot", rest.len())));
    }
    heap.validate().map_err(HeapFileError::Invalid)?;
    Ok(heap)
}

/// Writes `heap` to `path` atomically (a temporary file beside it, synced, then renamed: the
/// profile file's way, `sonde_profile::file::save_atomically`).
pub fn save_heap(path: impl AsRef<Path>, heap: &HeapSnapshot) -> Result<(), HeapFileError> {
    save_atomically(path.as_ref(), |w| write_heap(w, heap))
}

/// Reads the heap snapshot at `path`.
pub fn load_heap(path: impl AsRef<Path>) -> Result<HeapSnapshot, HeapFileError> {
    read_heap(BufReader::new(File::open(path)?))
}

#[cfg(test)]
pub(crate) fn tests_crc32(bytes: &[u8]) -> u32 {
    crc32(bytes)
}
