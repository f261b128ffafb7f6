//! Symbol files are untrusted: real ones (Roslyn's `Python.Runtime.pdb`, an `.mdb` from mcs, and
//! the assembly they belong to), with bytes flipped or cut off, never make `open` or a lookup
//! panic. Flips go mostly where a reader takes offsets and counts from: headers, stream and
//! table directories, the debug directory.

mod support;

use proptest::prelude::*;
use proptest::sample::Index;
use sonde_symbols::AssemblySymbols;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use support::{compile_with_mcs, copy_into, lines_source, metadata_methods, python_runtime};

/// The real files, copied into a directory of their own, and every method token of each assembly.
struct Fixture {
    _dir: tempfile::TempDir,
    dll: PathBuf,
    pdb: PathBuf,
    exe: PathBuf,
    mdb: PathBuf,
    dll_bytes: Vec<u8>,
    pdb_bytes: Vec<u8>,
    mdb_bytes: Vec<u8>,
    dll_tokens: Vec<u32>,
    exe_tokens: Vec<u32>,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let dir = tempfile::tempdir().expect("temp dir");
        let dll = python_runtime();
        copy_into(dir.path(), &[&dll, &dll.with_extension("pdb")]);
        let exe = compile_with_mcs(&lines_source(), dir.path());
        let tokens = |path: &Path| metadata_methods(path).into_iter().map(|(token, _, _)| token).collect();
        let read = |path: &Path| std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let fixture = Fixture {
            dll: dir.path().join("Python.Runtime.dll"),
            pdb: dir.path().join("Python.Runtime.pdb"),
            mdb: dir.path().join("Lines.exe.mdb"),
            dll_bytes: read(&dll),
            pdb_bytes: read(&dll.with_extension("pdb")),
            mdb_bytes: read(&dir.path().join("Lines.exe.mdb")),
            dll_tokens: tokens(&dll),
            exe_tokens: tokens(&exe),
            exe,
            _dir: dir,
        };
        // The unmutated files open, so a mutation is what every failure below is about.
        for assembly in [&fixture.dll, &fixture.exe] {
            assert!(AssemblySymbols::open(assembly).expect("open").is_some(), "{}", assembly.display());
        }
        fixture
    })
}

/// Opens `assembly`'s symbols and looks up every `stride`th method, at the start, inside and
/// past the end. (Opening decodes every method's sequence points already.)
fn open_and_look_up(assembly: &Path, tokens: &[u32], stride: usize) {
    let Ok(Some(symbols)) = AssemblySymbols::open(assembly) else { return };
    for &token in tokens.iter().step_by(stride) {
        let _ = symbols.first_line(token);
        for offset in [0, 1, 17, 60, u32::MAX] {
            let _ = symbols.line(token, offset);
        }
    }
}

/// The byte ranges of `bytes` where readers find offsets, sizes and counts.
fn hot_spots(bytes: &[u8]) -> Vec<Range<usize>> {
    let around = |needle: &[u8], before: usize, after: usize| {
        bytes
            .windows(needle.len())
            .position(|w| w == needle)
            .map(|at| at.saturating_sub(before)..(at + after).min(bytes.len()))
    };
    let spots = [
        Some(0..bytes.len().min(1024)),
        around(b"BSJB", 0, 512),  // metadata root, stream directory, tables header
        around(b"RSDS", 256, 64), // debug directory and CodeView record
        around(b"#~", 0, 256),
        Some(0..bytes.len()),
    ];
    spots.into_iter().flatten().collect()
}

/// `bytes` with each (spot, position, mask) flip applied, then cut to `cut` if given.
fn mutate(bytes: &[u8], flips: &[(Index, Index, u8)], cut: Option<Index>) -> Vec<u8> {
    let spots = hot_spots(bytes);
    let mut mutated = bytes.to_vec();
    for (spot, position, mask) in flips {
        let range = spot.get(&spots);
        if !range.is_empty() {
            mutated[range.start + position.index(range.len())] ^= mask;
        }
    }
    if let Some(cut) = cut {
        mutated.truncate(cut.index(bytes.len()));
    }
    mutated
}

fn flips() -> impl Strategy<Value = (Vec<(Index, Index, u8)>, Option<Index>)> {
    (
        prop::collection::vec((any::<Index>(), any::<Index>(), 1u8..=255), 1..8),
        prop::option::weighted(0.2, any::<Index>()),
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn a_damaged_portable_pdb_never_panics((flips, cut) in flips()) {
        let f = fixture();
        std::fs::write(&f.pdb, mutate(&f.pdb_bytes, &flips, cut)).expect("write");
        open_and_look_up(&f.dll, &f.dll_tokens, 5);
    }

    #[test]
    fn a_damaged_mdb_never_panics((flips, cut) in flips()) {
        let f = fixture();
        std::fs::write(&f.mdb, mutate(&f.mdb_bytes, &flips, cut)).expect("write");
        open_and_look_up(&f.exe, &f.exe_tokens, 1);
    }

    #[test]
    fn a_damaged_assembly_never_panics((flips, cut) in flips()) {
        let f = fixture();
        let dir = tempfile::tempdir().expect("temp dir");
        let dll = dir.path().join("Python.Runtime.dll");
        std::fs::write(&dll, mutate(&f.dll_bytes, &flips, cut)).expect("write");
        std::fs::write(dir.path().join("Python.Runtime.pdb"), &f.pdb_bytes).expect("write");
        // The symbols are intact: what matters is reading the assembly's headers.
        open_and_look_up(&dll, &f.dll_tokens, 97);
    }
}

#[test]
fn every_truncation_is_an_error() {
    let f = fixture();
    let dir = tempfile::tempdir().expect("temp dir");
    let (pdb, mdb) = (dir.path().join("Python.Runtime.pdb"), dir.path().join("Lines.exe.mdb"));
    copy_into(dir.path(), &[&f.dll, &f.exe]);
    let (dll, exe) = (dir.path().join("Python.Runtime.dll"), dir.path().join("Lines.exe"));
    let cuts = |len: usize| (0..len.min(300)).chain((300..len).step_by(len / 61 + 1));
    for cut in cuts(f.pdb_bytes.len()) {
        std::fs::write(&pdb, &f.pdb_bytes[..cut]).expect("write");
        assert!(AssemblySymbols::open(&dll).is_err(), "a PDB cut to {cut} bytes must be an error");
    }
    for cut in cuts(f.mdb_bytes.len()) {
        std::fs::write(&mdb, &f.mdb_bytes[..cut]).expect("write");
        assert!(AssemblySymbols::open(&exe).is_err(), "an .mdb cut to {cut} bytes must be an error");
    }
}
