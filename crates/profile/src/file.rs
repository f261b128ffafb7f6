//! The profile file: a small fixed header, a postcard payload and a checksum.
//!
//! ```text
//! offset  size  field
//!      0     8  magic, b"SONDEPRF"
//!      8     4  format version, little-endian u32 (currently 2)
//!     12     8  payload length in bytes, little-endian u64
//!     20     n  payload: the postcard-serialized `Profile`, then (version 2) its extensions
//!   20+n     4  CRC-32 (IEEE) of the payload, little-endian u32
//! ```
//!
//! The magic and version come first so that a reader can refuse a foreign or newer file with a
//! precise message before it looks at anything else. The checksum exists because postcard has no
//! redundancy: a flipped bit in a varint silently becomes another number, and we would rather say
//! "corrupt" than render a plausible but wrong profile.
//!
//! **Growing the format.** The postcard encoding of `Profile` is positional: a field added to it
//! would change every byte after it. So the version-1 layout of `Profile` is frozen, and facts
//! added since travel in **extensions**: after the `Profile`, a version-2 payload holds a postcard
//! list of `(name, bytes)` pairs, each the postcard encoding of one added fact (its model field is
//! `#[serde(skip)]` in the `Profile` encoding). A reader ignores names it does not know, so a
//! file from a newer build still loads in an older version-2 build, without the facts it cannot
//! show; a version-1 file (no extensions) loads with those facts absent. Extensions so far:
//!
//! | name | model field | since |
//! |---|---|---|
//! | `attach` | `RunInfo::attach` ([`crate::model::Attach`]) | version 2 |
//! | `sampler` | `RunInfo::sampler` (which sampler raised the samples) | version 2 |
//! | `events` | `Profile::events` ([`crate::model::RuntimeEvents`]): exceptions, catches counted, collections | version 2 |
//! | `allocations` | `RuntimeEvents::allocations` ([`crate::model::Allocations`]) | version 2 |
//! | `allocations_exact` | `Allocations::exact_by_type` (the totals by type count every allocation) | version 2 |
//! | `node_events` | `RuntimeEvents::nodes` ([`crate::model::NodeEvents`] per node) | version 2 |
//! | `loading` | `RuntimeEvents::loading` ([`crate::model::Loading`]: JIT, modules) | version 2 |
//! | `timeline` | `RuntimeEvents::timeline` ([`crate::model::Timeline`]: throws, compilations) | version 2 |
//! | `sources` | `Profile::sources` ([`crate::model::Sources`]: first lines, samples by line) | version 2 |
//! | `instantiations` | `Profile::instantiations` ([`crate::model::Instantiation`]: generic type arguments) | version 2 |
//! | `framework` | `Profile::framework` (ids of managed framework methods, `crate::origin`) | version 2 |
//! | `node_lines` | `Sources::node_lines` ([`crate::model::NodeLine`]: each node's samples by line) | version 2 |
//! | `coverage` | `Profile::coverage` ([`crate::model::Coverage`]: the instrumented functions that could have run) | version 2 |
//! | `coverage_blocks` | `Coverage::managed` ([`crate::model::MethodBlocks`]: coverage mode's blocks) | version 2 |
//! | `coverage_lines` | `Coverage::lines` ([`crate::model::LineHits`]: coverage mode's lines) | version 2 |
//! | `call_trace` | `RuntimeEvents::call_trace` ([`crate::trace::CallTrace`]: each thread's latest calls) | version 2 |
//! | `faults` | `RuntimeEvents::faults` ([`crate::model::Faults`]: the error simulator's rules and faults) | version 2 |
//! | `precompiled` | `Loading::precompiled` (Mono AOT images whose code ran untraced) | version 2 |

use std::fs::{self, File};
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use crate::model::{Allocations, Coverage, InvalidProfile, Profile, RuntimeEvents};

/// The first eight bytes of every profile file.
pub const MAGIC: [u8; 8] = *b"SONDEPRF";

/// The format version this build writes. It reads this one and version 1 (no extensions).
pub const FORMAT_VERSION: u32 = 2;

/// The largest payload a reader accepts. The length field is untrusted, so it is checked against
/// this cap before anything is read; 1 GiB is tens of millions of nodes, far beyond a real run.
pub const MAX_PAYLOAD_LEN: u64 = 1 << 30;

/// Magic + version + length.
const HEADER_LEN: usize = 8 + 4 + 8;

/// Why a profile could not be read or written. Each message is one line.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FileError {
    #[error("not a Sonde profile: the file is empty")]
    Empty,
    #[error("not a Sonde profile: it does not start with \"SONDEPRF\"")]
    NotAProfile,
    #[error("unsupported profile format version {found} (this build reads versions 1 to {FORMAT_VERSION})")]
    UnsupportedVersion { found: u32 },
    #[error("truncated profile: the file ends inside the {part}")]
    Truncated { part: &'static str },
    #[error("corrupt profile: it declares a {len}-byte payload, above the {max}-byte limit")]
    TooLarge { len: u64, max: u64 },
    #[error("corrupt profile: checksum mismatch (stored {stored:#010x}, computed {computed:#010x})")]
    ChecksumMismatch { stored: u32, computed: u32 },
    #[error("corrupt profile: the payload does not decode: {0}")]
    Undecodable(String),
    #[error("invalid profile: {0}")]
    Invalid(InvalidProfile),
    #[error("profile I/O failed")]
    Io(#[from] io::Error),
}

/// Writes `profile` as a complete profile file. Refuses a profile that fails
/// [`Profile::validate`], since no reader would accept it.
pub fn write_profile(mut w: impl Write, profile: &Profile) -> Result<(), FileError> {
    profile.validate().map_err(FileError::Invalid)?;
    // The length precedes the payload, so the payload is serialized up front.
    let mut payload = postcard::to_stdvec(profile).map_err(io::Error::other)?;
    payload.extend(postcard::to_stdvec(&extensions(profile)).map_err(io::Error::other)?);
    w.write_all(&MAGIC)?;
    w.write_all(&FORMAT_VERSION.to_le_bytes())?;
    w.write_all(&(payload.len() as u64).to_le_bytes())?;
    w.write_all(&payload)?;
    w.write_all(&crc32(&payload).to_le_bytes())?;
    w.flush()?;
    Ok(())
}

/// Reads one profile file from `r`, consuming exactly its bytes.
pub fn read_profile(mut r: impl Read) -> Result<Profile, FileError> {
    let mut header = [0u8; HEADER_LEN];
    let got = read_full(&mut r, &mut header)?;
    let magic_got = got.min(MAGIC.len());
    if got == 0 {
        return Err(FileError::Empty);
    }
    if header[..magic_got] != MAGIC[..magic_got] {
        return Err(FileError::NotAProfile);
    }
    if got < HEADER_LEN {
        return Err(FileError::Truncated { part: "header" });
    }
    let version = u32::from_le_bytes(header[8..12].try_into().expect("4-byte slice"));
    if !(1..=FORMAT_VERSION).contains(&version) {
        return Err(FileError::UnsupportedVersion { found: version });
    }
    let len = u64::from_le_bytes(header[12..20].try_into().expect("8-byte slice"));
    if len > MAX_PAYLOAD_LEN {
        return Err(FileError::TooLarge { len, max: MAX_PAYLOAD_LEN });
    }

    // `take` plus `read_to_end` grows the buffer only as bytes actually arrive, so a lying length
    // on a short file costs nothing.
    let mut payload = Vec::new();
    r.by_ref().take(len).read_to_end(&mut payload)?;
    if payload.len() as u64 != len {
        return Err(FileError::Truncated { part: "payload" });
    }
    let mut stored = [0u8; 4];
    if read_full(&mut r, &mut stored)? != stored.len() {
        return Err(FileError::Truncated { part: "checksum" });
    }
    let stored = u32::from_le_bytes(stored);
    let computed = crc32(&payload);
    if stored != computed {
        return Err(FileError::ChecksumMismatch { stored, computed });
    }

    let undecodable = |e: postcard::Error| FileError::Undecodable(e.to_string());
    let (mut profile, mut rest) = postcard::take_from_bytes::<Profile>(&payload).map_err(undecodable)?;
    if version >= 2 {
        let (list, after) = postcard::take_from_bytes::<Vec<(String, Vec<u8>)>>(rest).map_err(undecodable)?;
        apply_extensions(&mut profile, &list).map_err(undecodable)?;
        rest = after;
    }
    if !rest.is_empty() {
        return Err(FileError::Undecodable(format!("{} bytes follow the profile", rest.len())));
    }
    profile.validate().map_err(FileError::Invalid)?;
    Ok(profile)
}

/// The facts of `profile` that travel as extensions (see the module's documentation).
fn extensions(profile: &Profile) -> Vec<(String, Vec<u8>)> {
    fn encode(value: &impl serde::Serialize) -> Vec<u8> {
        postcard::to_stdvec(value).expect("a plain struct encodes")
    }
    let mut list = Vec::new();
    if let Some(attach) = &profile.run.attach {
        list.push(("attach".to_string(), encode(attach)));
    }
    if let Some(sampler) = &profile.run.sampler {
        list.push(("sampler".to_string(), encode(sampler)));
    }
    let events = &profile.events;
    // `events` encodes the fields it had when it was introduced; the later ones are `skip` there.
    if !events.exceptions.is_empty() || events.catches_counted || events.gc != Default::default() {
        list.push(("events".to_string(), encode(events)));
    }
    if events.allocations != Allocations::default() {
        list.push(("allocations".to_string(), encode(&events.allocations)));
    }
    if events.allocations.exact_by_type {
        list.push(("allocations_exact".to_string(), encode(&true)));
    }
    if !events.nodes.is_empty() {
        list.push(("node_events".to_string(), encode(&events.nodes)));
    }
    if events.loading != Default::default() {
        list.push(("loading".to_string(), encode(&events.loading)));
    }
    if !events.loading.precompiled.is_empty() {
        list.push(("precompiled".to_string(), encode(&events.loading.precompiled)));
    }
    if events.timeline != Default::default() {
        list.push(("timeline".to_string(), encode(&events.timeline)));
    }
    if !events.call_trace.threads.is_empty() {
        list.push(("call_trace".to_string(), encode(&events.call_trace)));
    }
    if events.faults != Default::default() {
        list.push(("faults".to_string(), encode(&events.faults)));
    }
    if profile.sources != Default::default() {
        list.push(("sources".to_string(), encode(&profile.sources)));
    }
    if !profile.sources.node_lines.is_empty() {
        list.push(("node_lines".to_string(), encode(&profile.sources.node_lines)));
    }
    if !profile.instantiations.is_empty() {
        list.push(("instantiations".to_string(), encode(&profile.instantiations)));
    }
    if let Some(framework) = &profile.framework {
        list.push(("framework".to_string(), encode(framework)));
    }
    if !profile.coverage.native.is_empty() {
        list.push(("coverage".to_string(), encode(&profile.coverage)));
    }
    if !profile.coverage.managed.is_empty() {
        list.push(("coverage_blocks".to_string(), encode(&profile.coverage.managed)));
    }
    if !profile.coverage.lines.is_empty() {
        list.push(("coverage_lines".to_string(), encode(&profile.coverage.lines)));
    }
    list
}

/// Puts the extensions this build knows back into `profile`; others are ignored.
fn apply_extensions(profile: &mut Profile, list: &[(String, Vec<u8>)]) -> Result<(), postcard::Error> {
    for (name, bytes) in list {
        match name.as_str() {
            "attach" => profile.run.attach = Some(postcard::from_bytes(bytes)?),
            "sampler" => profile.run.sampler = Some(postcard::from_bytes(bytes)?),
            "events" => {
                let RuntimeEvents { exceptions, catches_counted, gc, .. } = postcard::from_bytes(bytes)?;
                profile.events.exceptions = exceptions;
                profile.events.catches_counted = catches_counted;
                profile.events.gc = gc;
            }
            "allocations" => {
                // Its own extension carries `exact_by_type` (read before or after this one).
                let exact_by_type = profile.events.allocations.exact_by_type;
                profile.events.allocations = postcard::from_bytes(bytes)?;
                profile.events.allocations.exact_by_type = exact_by_type;
            }
            "allocations_exact" => profile.events.allocations.exact_by_type = postcard::from_bytes(bytes)?,
            "node_events" => profile.events.nodes = postcard::from_bytes(bytes)?,
            "loading" => {
                // Its own extension carries `precompiled` (read before or after this one).
                let precompiled = std::mem::take(&mut profile.events.loading.precompiled);
                profile.events.loading = postcard::from_bytes(bytes)?;
                profile.events.loading.precompiled = precompiled;
            }
            "precompiled" => profile.events.loading.precompiled = postcard::from_bytes(bytes)?,
            "timeline" => profile.events.timeline = postcard::from_bytes(bytes)?,
            "call_trace" => profile.events.call_trace = postcard::from_bytes(bytes)?,
            "faults" => profile.events.faults = postcard::from_bytes(bytes)?,
            "sources" => {
                // Its own extension carries `node_lines` (read before or after this one).
                let node_lines = std::mem::take(&mut profile.sources.node_lines);
                profile.sources = postcard::from_bytes(bytes)?;
                profile.sources.node_lines = node_lines;
            }
            "node_lines" => profile.sources.node_lines = postcard::from_bytes(bytes)?,
            "instantiations" => profile.instantiations = postcard::from_bytes(bytes)?,
            "framework" => profile.framework = Some(postcard::from_bytes(bytes)?),
            "coverage" => {
                let Coverage { native, .. } = postcard::from_bytes(bytes)?;
                profile.coverage.native = native;
            }
            "coverage_blocks" => profile.coverage.managed = postcard::from_bytes(bytes)?,
            "coverage_lines" => profile.coverage.lines = postcard::from_bytes(bytes)?,
            _ => {}
        }
    }
    Ok(())
}

/// Writes `profile` to `path` atomically: into a temporary file beside it, then renamed over it,
/// so an interrupted save never leaves a half-written profile under the real name.
///
/// Not synced to the disk before the rename, unlike the files [`save_atomically`] writes. The
/// rename alone makes the save atomic for every reader: the old file or the whole new one, never
/// a part. What the sync adds is durability: a power loss or a kernel crash in the seconds after
/// the save returned could otherwise leave an empty or cut-short file under the name — which is
/// refused when read (the header's length, the checksum), never misread — or the old one (over
/// an existing profile, an `-o` used again, ext4 and XFS write the new data before the rename:
/// their replace-by-rename rule). It costs a wait for the disk where the user waits, after the
/// program ended and before `sonde record` returns: 1–30 ms of wall on a shared disk, more on a
/// slow one (BENCHMARKS.md, "Start-up, continued"). For a file a crash would have cost anyway
/// had it come a little earlier, not worth that wait.
pub fn save(path: impl AsRef<Path>, profile: &Profile) -> Result<(), FileError> {
    replace(path.as_ref(), false, |w| write_profile(w, profile))
}

/// Writes a file at `path` atomically with `write`: into a temporary file beside it (see
/// `temp_path`), synced, then renamed over it; the temporary file is removed on failure. How
/// every file Sonde saves is written (heap snapshots; profiles the same way but unsynced: [`save`]).
pub fn save_atomically<E: From<io::Error>>(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<File>) -> Result<(), E>,
) -> Result<(), E> {
    replace(path, true, write)
}

/// [`save_atomically`], synced to the disk before the rename when `sync`.
fn replace<E: From<io::Error>>(
    path: &Path,
    sync: bool,
    write: impl FnOnce(&mut BufWriter<File>) -> Result<(), E>,
) -> Result<(), E> {
    let tmp = temp_path(path)?;
    let result = (|| {
        let mut w = BufWriter::new(File::create(&tmp)?);
        write(&mut w)?;
        let file = w.into_inner().map_err(io::IntoInnerError::into_error)?;
        if sync {
            file.sync_all()?;
        }
        fs::rename(&tmp, path)?;
        Ok(())
    })();
    if result.is_err() {
        // Best effort: the original error is the one worth reporting.
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// Reads the profile file at `path`.
pub fn load(path: impl AsRef<Path>) -> Result<Profile, FileError> {
    read_profile(BufReader::new(File::open(path)?))
}

/// `dir/.name.<pid>.tmp`: hidden, beside the target (a rename is atomic only within one file
/// system), and distinct per process so that two concurrent saves do not share it.
fn temp_path(path: &Path) -> io::Result<PathBuf> {
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, format!("{} names no file", path.display())))?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".{}.tmp", std::process::id()));
    Ok(path.with_file_name(tmp_name))
}

/// Fills `buf` as far as the reader allows and returns how many bytes it got; unlike
/// `read_exact`, a short count is not an error, so callers can tell "empty" from "truncated".
pub fn read_full(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// CRC-32 with the IEEE polynomial (the one zlib, PNG and gzip use), reflected, table-driven.
/// Small enough that a dependency would cost more than it saves. The heap snapshot's file uses it
/// too.
pub fn crc32(bytes: &[u8]) -> u32 {
    const TABLE: [u32; 256] = {
        let mut table = [0u32; 256];
        let mut i = 0;
        while i < 256 {
            let mut c = i as u32;
            let mut bit = 0;
            while bit < 8 {
                c = if c & 1 != 0 { 0xEDB8_8320 ^ (c >> 1) } else { c >> 1 };
                bit += 1;
            }
            table[i] = c;
            i += 1;
        }
        table
    };
    let mut crc = !0u32;
    for &b in bytes {
        crc = TABLE[((crc ^ b as u32) & 0xFF) as usize] ^ (crc >> 8);
    }
    !crc
}

#[cfg(test)]
mod tests;
