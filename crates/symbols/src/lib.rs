//! Source lines of managed methods: maps a method's IL offset to the file and line the compiler
//! recorded, from the symbols real .NET and Mono compilers write — a portable PDB beside the
//! assembly or embedded in it (Roslyn), or a Mono `.mdb` (`mcs -debug`).
//!
//! # Design constraints
//!
//! This runs in the controller, which may be root, on files that belong to the profiled
//! program: every byte is untrusted. A damaged or hostile file is an [`Error`] or a missing line,
//! never a panic; no buffer is sized from a length in a file before that length is checked
//! against the bytes really there (or a fixed cap); the work of reading a file is bounded by its
//! size. A symbol file is used only when it provably belongs to the assembly (PDB id against the
//! CodeView entry, `.mdb` GUID against the module's MVID): a stale one must never give wrong
//! lines. Source paths are returned as the compiler wrote them and never opened. No `unsafe`.

#![forbid(unsafe_code)]

mod bytes;
mod mdb;
mod native;
mod parts;
mod pe;
mod ppdb;

pub use native::{DEBUG_ROOT, ENTRY_HOOK, NativeOrigin, NativeSymbols, imports_any, instrumented_functions};

use bytes::{Damaged, Fault};
use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The largest symbol file read: real ones are a few megabytes.
const MAX_SYMBOL_FILE: u64 = 256 << 20;
/// The line of hidden sequence points, code that belongs to no line (the Portable PDB spec's
/// convention, which Mono's runtime follows too).
pub(crate) const HIDDEN_LINE: u32 = 0xfe_efee;
/// The longest source path accepted. A Portable PDB builds names from shared parts, so a few
/// bytes could otherwise describe a name of gigabytes; an `.mdb` could claim one as long as itself.
pub(crate) const MAX_PATH: usize = 64 << 10;

/// The symbols of one assembly, opened and checked to match it by [`AssemblySymbols::open`].
pub struct AssemblySymbols {
    kind: SymbolsKind,
    reader: Reader,
}

enum Reader {
    Portable(ppdb::PortablePdb),
    Mono(mdb::MonoSymbols),
}

/// Where an assembly's symbols came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SymbolsKind {
    /// A portable PDB file beside the assembly.
    PortablePdb,
    /// A portable PDB compressed into the assembly itself.
    EmbeddedPortablePdb,
    /// A Mono `.mdb` file beside the assembly.
    Mdb,
}

/// A place in the source: the file as the compiler wrote its path (absolute or not, `\` on
/// Windows builds), and a 1-based line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceLine {
    pub file: String,
    pub line: u32,
}

/// Why an assembly's symbols exist but cannot be used; each says which file and why, in one line.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file could not be read.
    #[error("cannot read {}: {error}", path.display())]
    Io { path: PathBuf, error: std::io::Error },
    /// A file is damaged, or is not what its name says.
    #[error("{} is damaged: {reason}", path.display())]
    Damaged { path: PathBuf, reason: &'static str },
    /// A symbol file written for another build of the assembly.
    #[error("{} does not match {}: {reason}", path.display(), assembly.display())]
    Mismatch { path: PathBuf, assembly: PathBuf, reason: &'static str },
    /// Symbols in a format this crate does not read.
    #[error("{} is {what}, which Sonde cannot read", path.display())]
    Unsupported { path: PathBuf, what: &'static str },
}

impl Error {
    fn from_fault(path: &Path, fault: Fault) -> Error {
        match fault {
            Fault::Io(error) => Error::Io { path: path.to_owned(), error },
            Fault::Damaged(Damaged(reason)) => Error::Damaged { path: path.to_owned(), reason },
        }
    }

    fn mismatch(path: &Path, assembly: &Path, reason: &'static str) -> Error {
        Error::Mismatch { path: path.to_owned(), assembly: assembly.to_owned(), reason }
    }
}

/// One sequence point, whichever format it came from; `file` is the format's own file index.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Point {
    pub(crate) il_offset: u32,
    pub(crate) line: u32,
    pub(crate) file: u32,
    pub(crate) hidden: bool,
}

/// A method's sequence points in IL order.
enum Points<'a> {
    Portable(ppdb::Points<'a>),
    Mono(mdb::Points<'a>),
}

impl Iterator for Points<'_> {
    type Item = bytes::Result<Point>;

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Points::Portable(points) => points.next(),
            Points::Mono(points) => points.next(),
        }
    }
}

impl AssemblySymbols {
    /// Finds and opens the symbols of the assembly at `assembly` (a .dll/.exe path): in order, a
    /// portable PDB embedded in the PE file (debug directory entry type 17, deflate-compressed),
    /// the portable PDB named by the PE's CodeView debug entry if it sits next to the assembly,
    /// `<stem>.pdb` next to the assembly, and Mono's `<assembly file name>.mdb` (e.g.
    /// `App.exe.mdb`). The first that opens and matches is used. Ok(None) when there are none;
    /// Err with a one-line reason (the first candidate's) when files exist but none can be used:
    /// damaged, or not matching the assembly (a PDB whose id differs from the assembly's CodeView
    /// entry; an .mdb whose GUID differs from the module's MVID) — a stale symbol file must never
    /// give wrong lines.
    pub fn open(assembly: &Path) -> Result<Option<AssemblySymbols>, Error> {
        let fail = |fault| Error::from_fault(assembly, fault);
        let file = open_regular(assembly).map_err(|error| fail(error.into()))?;
        let image = pe::Image::new(file).map_err(fail)?;
        let mut first_error = None;
        let mut note = |error: Error| {
            first_error.get_or_insert(error);
        };
        let codeview = image.codeview().unwrap_or_else(|fault| {
            note(fail(fault));
            None
        });

        match image.embedded_pdb() {
            Ok(Some(bytes)) => match portable(bytes, codeview.as_ref(), assembly, assembly) {
                Ok(pdb) => return Ok(Some(AssemblySymbols { kind: SymbolsKind::EmbeddedPortablePdb, reader: pdb })),
                Err(error) => note(error),
            },
            Ok(None) => {}
            Err(fault) => note(fail(fault)),
        }

        let beside = |name: &str| assembly.parent().unwrap_or(Path::new("")).join(name);
        let mut candidates = Vec::new();
        if let Some(name) = codeview.as_ref().and_then(|cv| pdb_file_name(&cv.path)) {
            candidates.push(beside(name));
        }
        candidates.push(assembly.with_extension("pdb"));
        candidates.dedup();
        for path in candidates {
            match read_symbol_file(&path)
                .and_then(|bytes| bytes.map(|b| portable(b, codeview.as_ref(), &path, assembly)).transpose())
            {
                Ok(Some(pdb)) => return Ok(Some(AssemblySymbols { kind: SymbolsKind::PortablePdb, reader: pdb })),
                Ok(None) => {}
                Err(error) => note(error),
            }
        }

        let mut mdb_path = assembly.as_os_str().to_owned();
        mdb_path.push(".mdb");
        let mdb_path = PathBuf::from(mdb_path);
        match read_symbol_file(&mdb_path)
            .and_then(|bytes| bytes.map(|b| mono(b, &image, &mdb_path, assembly)).transpose())
        {
            Ok(Some(mdb)) => return Ok(Some(AssemblySymbols { kind: SymbolsKind::Mdb, reader: mdb })),
            Ok(None) => {}
            Err(error) => note(error),
        }
        first_error.map_or(Ok(None), Err)
    }

    /// Where these symbols came from.
    pub fn kind(&self) -> SymbolsKind {
        self.kind
    }

    /// The source line of IL offset `il_offset` in the method with metadata token `token`
    /// (0x06xxxxxx): the last non-hidden sequence point at or before the offset (hidden points,
    /// line 0xFEEFEE, skipped).
    pub fn line(&self, token: u32, il_offset: u32) -> Option<SourceLine> {
        let mut found = None;
        for point in self.points(token)? {
            let point = point.ok()?;
            if point.il_offset > il_offset {
                break;
            }
            if !point.hidden {
                found = Some(point);
            }
        }
        self.source_line(found?)
    }

    /// The method's non-hidden sequence points in IL order, `(IL offset, file, line)` with the
    /// file as [`file_name`](Self::file_name) takes it: what [`line`](Self::line) searches, for
    /// a caller that looks up many offsets of one method (the last point at or before an offset
    /// is its line). `None` when the method has no points.
    pub fn method_points(&self, token: u32) -> Option<Vec<(u32, u32, u32)>> {
        let points: Vec<(u32, u32, u32)> = self
            .points(token)?
            .map_while(Result::ok)
            .filter(|p| !p.hidden)
            .map(|p| (p.il_offset, p.file, p.line))
            .collect();
        (!points.is_empty()).then_some(points)
    }

    /// The name of a file of [`method_points`](Self::method_points), as the compiler wrote it.
    pub fn file_name(&self, file: u32) -> Option<String> {
        match &self.reader {
            Reader::Portable(pdb) => pdb.document_name(file).ok(),
            Reader::Mono(mdb) => mdb.source_name(file).ok(),
        }
    }

    /// The method's first non-hidden sequence point (where a method "is").
    pub fn first_line(&self, token: u32) -> Option<SourceLine> {
        let point = self.points(token)?.map_while(Result::ok).find(|point| !point.hidden)?;
        self.source_line(point)
    }

    fn points(&self, token: u32) -> Option<Points<'_>> {
        const METHOD_DEF: u32 = 0x0600_0000;
        if token & 0xff00_0000 != METHOD_DEF {
            return None;
        }
        match &self.reader {
            Reader::Portable(pdb) => pdb.method_points(token & 0x00ff_ffff).ok()?.map(Points::Portable),
            Reader::Mono(mdb) => mdb.method_points(token).ok()?.map(Points::Mono),
        }
    }

    fn source_line(&self, point: Point) -> Option<SourceLine> {
        let file = match &self.reader {
            Reader::Portable(pdb) => pdb.document_name(point.file),
            Reader::Mono(mdb) => mdb.source_name(point.file),
        };
        Some(SourceLine { file: file.ok()?, line: point.line })
    }
}

impl fmt::Debug for AssemblySymbols {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AssemblySymbols").field("kind", &self.kind).finish_non_exhaustive()
    }
}

/// The file name of the PDB path in a CodeView entry (written on Windows or Unix, so either
/// separator), if it is a plain name that can sit beside the assembly.
fn pdb_file_name(path: &str) -> Option<&str> {
    let name = path.rsplit(['/', '\\']).next()?;
    (!name.is_empty() && name != "." && name != "..").then_some(name)
}

/// Opens `path` for reading if it is a regular file. Never blocks: a FIFO someone left where a
/// symbol file belongs would otherwise hang the controller in `open`.
fn open_regular(path: &Path) -> std::io::Result<File> {
    let file = OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path)?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a regular file"));
    }
    Ok(file)
}

/// The bytes of the symbol file at `path`, or None when there is no such file.
fn read_symbol_file(path: &Path) -> Result<Option<Vec<u8>>, Error> {
    let io = |error: std::io::Error| Error::Io { path: path.to_owned(), error };
    let file = match open_regular(path) {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(io(error)),
    };
    let mut bytes = Vec::new();
    file.take(MAX_SYMBOL_FILE + 1).read_to_end(&mut bytes).map_err(io)?;
    if bytes.len() as u64 > MAX_SYMBOL_FILE {
        return Err(Error::Damaged { path: path.to_owned(), reason: "larger than any symbol file (256 MiB)" });
    }
    Ok(Some(bytes))
}

/// Opens the portable PDB in `bytes` (read from `path`) for `assembly`, checking its id against
/// the assembly's CodeView entry. Per the Portable PDB spec the id is the entry's GUID followed
/// by the entry's TimeDateStamp; an embedded PDB is checked the same way when the entry exists.
fn portable(bytes: Vec<u8>, codeview: Option<&pe::CodeView>, path: &Path, assembly: &Path) -> Result<Reader, Error> {
    if bytes.starts_with(b"Microsoft C/C++ MSF 7.00") {
        return Err(Error::Unsupported { path: path.to_owned(), what: "a Windows PDB" });
    }
    let pdb = ppdb::PortablePdb::parse(bytes).map_err(|damaged| Error::from_fault(path, damaged.into()))?;
    let id = pdb.id();
    let embedded = path == assembly;
    match codeview {
        Some(cv) if id[..16] != cv.guid || id[16..] != cv.stamp.to_le_bytes() => Err(if embedded {
            // One file that contradicts itself.
            Error::Damaged { path: path.to_owned(), reason: "its embedded PDB's id differs from its CodeView entry" }
        } else {
            Error::mismatch(path, assembly, "its id differs from the one in the assembly's CodeView entry")
        }),
        None if !embedded => {
            Err(Error::mismatch(path, assembly, "the assembly has no CodeView entry to check it against"))
        }
        _ => Ok(Reader::Portable(pdb)),
    }
}

/// Opens the `.mdb` in `bytes` (read from `path`) for `assembly`, checking that it was written
/// for the assembly's module: Mono's runtime compares the same two GUIDs.
fn mono(bytes: Vec<u8>, image: &pe::Image, path: &Path, assembly: &Path) -> Result<Reader, Error> {
    let mdb = mdb::MonoSymbols::parse(bytes).map_err(|damaged| Error::from_fault(path, damaged.into()))?;
    let mvid = image.mvid().map_err(|fault| Error::from_fault(assembly, fault))?;
    if mdb.guid() != mvid {
        return Err(Error::mismatch(path, assembly, "its GUID differs from the assembly's MVID"));
    }
    Ok(Reader::Mono(mdb))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pdb_a_codeview_entry_names_is_looked_for_by_file_name_only() {
        assert_eq!(pdb_file_name(r"C:\src\App\obj\Release\App.pdb"), Some("App.pdb"));
        assert_eq!(pdb_file_name("/_/src/App/obj/Release/net8.0/App.pdb"), Some("App.pdb"));
        assert_eq!(pdb_file_name("App.pdb"), Some("App.pdb"));
        assert_eq!(pdb_file_name(""), None);
        assert_eq!(pdb_file_name("/tmp/"), None);
        assert_eq!(pdb_file_name(r"..\.."), None);
    }

    #[test]
    fn symbols_can_be_shared_between_threads() {
        fn shared<T: Send + Sync>() {}
        shared::<AssemblySymbols>();
    }

    #[test]
    fn only_regular_files_are_read() {
        let dir = tempfile::tempdir().expect("temp dir");
        let fifo = dir.path().join("App.dll");
        let status = std::process::Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
        assert!(status.success());
        // A FIFO would block `open` until someone writes to it; it is refused at once instead.
        let error = AssemblySymbols::open(&fifo).expect_err("a FIFO is no assembly");
        assert!(error.to_string().contains("not a regular file"), "{error}");
        assert!(matches!(AssemblySymbols::open(dir.path()), Err(Error::Io { .. })), "a directory");
    }

    #[test]
    fn errors_are_one_line_and_name_the_file() {
        let error = Error::mismatch(Path::new("/app/App.pdb"), Path::new("/app/App.dll"), "its id differs");
        assert_eq!(error.to_string(), "/app/App.pdb does not match /app/App.dll: its id differs");
        let error = Error::from_fault(Path::new("/app/App.dll"), Damaged("no PE signature").into());
        assert_eq!(error.to_string(), "/app/App.dll is damaged: no PE signature");
    }
}
