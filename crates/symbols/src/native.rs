//! Names of native functions from ELF symbol tables: the library's `.symtab` when it kept one,
//! else the `.symtab` of its separate debug file when one is installed (found by build-id under
//! `/usr/lib/debug/.build-id/`, or by `.gnu_debuglink` beside the library, in its `.debug/`
//! directory or under `/usr/lib/debug/`), else its `.dynsym` (exported functions only).
//!
//! A debug file is used only when it provably belongs to the library: the same build-id, or —
//! when the library has none — the CRC-32 its debuglink records. A stale one would name the
//! wrong functions. Of a file only the parts the tables need are read (`parts`: the headers,
//! notes, symbol and string tables), up to 256 MiB each; a debug file matched by its CRC-32 is
//! read whole. An image no file holds (the vDSO) is read from a copy of its memory
//! ([`NativeSymbols::from_image`]).

use crate::parts::Parts;
use crate::{Error, MAX_SYMBOL_FILE};
use object::{Object, ObjectSegment, ObjectSymbol, ObjectSymbolTable, ReadRef, SymbolKind};
use std::path::{Path, PathBuf};

/// Where debug files are installed (Debian's `*-dbg` packages, Fedora's `debuginfo`).
pub const DEBUG_ROOT: &str = "/usr/lib/debug";
/// The most functions kept from one file: the largest real libraries have a few hundred thousand.
const MAX_FUNCTIONS: usize = 4 << 20;
/// Longer names are cut: C++ template names can run to kilobytes, and a report needs less.
const MAX_NAME: usize = 1024;

/// Which table named a library's functions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NativeOrigin {
    /// The library's own `.symtab`.
    Symtab,
    /// The `.symtab` of a separate debug file.
    DebugFile(PathBuf),
    /// Only the exported functions (`.dynsym`).
    Dynsym,
}

/// The functions of one ELF file, by address.
#[derive(Debug)]
pub struct NativeSymbols {
    /// Sorted by start; at most one per start address.
    functions: Vec<Function>,
    names: String,
    first_load: u64,
    build_id: Option<Vec<u8>>,
    origin: NativeOrigin,
}

#[derive(Debug, Clone, Copy)]
struct Function {
    start: u64,
    /// 0 when the table gave no size: the function then ends where the next one starts.
    size: u64,
    name: (u32, u32),
}

/// A symbol as read, before the best of several at one address is chosen.
struct Candidate<'a> {
    start: u64,
    size: u64,
    name: &'a str,
    /// Lower is preferred at one address: global, then weak, then local.
    rank: u8,
}

/// One function per address, the best symbol's, with the names in one string: what a symbol
/// table gave, owned (the file's bytes it was read from are gone).
#[derive(Default)]
struct Table {
    functions: Vec<Function>,
    names: String,
}

impl Table {
    fn of(read: Vec<Candidate<'_>>) -> Table {
        // At one address: by rank, then the shortest name, then the table's order.
        let mut order: Vec<u32> = (0..read.len() as u32).collect();
        order.sort_unstable_by_key(|&i| {
            let c = &read[i as usize];
            (c.start, c.rank, c.name.len(), i)
        });
        order.dedup_by_key(|&mut i| read[i as usize].start);
        let mut names = String::with_capacity(order.iter().map(|&i| read[i as usize].name.len()).sum());
        let functions = order
            .into_iter()
            .map(|i| {
                let c = &read[i as usize];
                let at = names.len() as u32;
                names.push_str(c.name);
                Function { start: c.start, size: c.size, name: (at, c.name.len() as u32) }
            })
            .collect();
        Table { functions, names }
    }

    fn len(&self) -> usize {
        self.functions.len()
    }
}

impl NativeSymbols {
    /// The functions of the ELF file at `path` (a loaded library or executable), from the best
    /// table available, looking for debug files under [`DEBUG_ROOT`].
    pub fn open(path: &Path) -> Result<NativeSymbols, Error> {
        NativeSymbols::open_with(path, Path::new(DEBUG_ROOT))
    }

    /// As [`NativeSymbols::open`], with debug files under `debug_root`. Only the parts of the
    /// files that the tables need are read (`parts`).
    pub fn open_with(path: &Path, debug_root: &Path) -> Result<NativeSymbols, Error> {
        let io = |error| Error::Io { path: path.to_owned(), error };
        let mut parts = Parts::open(path, MAX_SYMBOL_FILE).map_err(io)?;
        let library = parts.parse(|parts| Library::read(parts, path)).map_err(io)??;
        if let Some((debug, functions)) = debug_functions(&library, Some(path), debug_root) {
            return Ok(NativeSymbols::new(
                functions,
                library.first_load,
                library.build_id,
                NativeOrigin::DebugFile(debug),
            ));
        }
        let (functions, origin) = parts.parse(|parts| own_functions(parts)).map_err(io)?;
        Ok(NativeSymbols::new(functions, library.first_load, library.build_id, origin))
    }

    /// The functions of an ELF image that exists only in memory, copied into `image` — the
    /// vDSO, which the kernel maps into every process whole (its section headers and tables
    /// included) and which no file holds. `name` is for errors. A debug file is looked for by
    /// build-id only (there is no directory for a debuglink).
    pub fn from_image(image: &[u8], name: &str) -> Result<NativeSymbols, Error> {
        let library = Library::read(image, Path::new(name))?;
        let (functions, origin) = match debug_functions(&library, None, Path::new(DEBUG_ROOT)) {
            Some((debug, functions)) => (functions, NativeOrigin::DebugFile(debug)),
            None => own_functions(image),
        };
        Ok(NativeSymbols::new(functions, library.first_load, library.build_id, origin))
    }

    fn new(table: Table, first_load: u64, build_id: Option<Vec<u8>>, origin: NativeOrigin) -> Self {
        NativeSymbols { functions: table.functions, names: table.names, first_load, build_id, origin }
    }

    /// The function containing `address` (an address in the file's own layout: a loaded
    /// address minus [`NativeSymbols::load_bias`]): its start and (mangled) name.
    pub fn function(&self, address: u64) -> Option<(u64, &str)> {
        let at = self.functions.partition_point(|f| f.start <= address).checked_sub(1)?;
        let f = self.functions[at];
        if f.size != 0 && address - f.start >= f.size {
            return None;
        }
        let (from, len) = (f.name.0 as usize, f.name.1 as usize);
        Some((f.start, &self.names[from..from + len]))
    }

    /// How far the file was moved when loaded, from where its first segment was mapped
    /// (`dladdr`'s `dli_fbase`, glibc's `l_map_start`): 0 for a fixed-address executable.
    pub fn load_bias(&self, mapped_at: u64) -> u64 {
        mapped_at.wrapping_sub(self.first_load & !0xfff)
    }

    /// The file's GNU build-id, when it has one.
    pub fn build_id(&self) -> Option<&[u8]> {
        self.build_id.as_deref()
    }

    pub fn origin(&self) -> &NativeOrigin {
        &self.origin
    }

    /// Every function: its start, size (0 when the table gave none) and (mangled) name.
    pub fn functions(&self) -> impl Iterator<Item = (u64, u64, &str)> {
        self.functions.iter().map(|f| {
            let (from, len) = (f.name.0 as usize, f.name.1 as usize);
            (f.start, f.size, &self.names[from..from + len])
        })
    }

    /// How many functions are named.
    pub fn len(&self) -> usize {
        self.functions.len()
    }

    pub fn is_empty(&self) -> bool {
        self.functions.is_empty()
    }
}

fn damaged(path: &Path, reason: &'static str) -> Error {
    Error::Damaged { path: path.to_owned(), reason }
}

/// The table of the function symbols with an address.
fn table<'a>(symbols: impl Iterator<Item = impl ObjectSymbol<'a>>) -> Table {
    Table::of(candidates(symbols))
}

/// Function symbols with an address.
fn candidates<'a>(symbols: impl Iterator<Item = impl ObjectSymbol<'a>>) -> Vec<Candidate<'a>> {
    let mut found = Vec::new();
    for symbol in symbols {
        if found.len() == MAX_FUNCTIONS {
            break;
        }
        if symbol.kind() != SymbolKind::Text || symbol.is_undefined() || symbol.address() == 0 {
            continue;
        }
        let Ok(name) = symbol.name() else { continue };
        if name.is_empty() {
            continue;
        }
        let rank = if symbol.is_global() {
            0
        } else if symbol.is_weak() {
            1
        } else {
            2
        };
        let name = match name.char_indices().nth(MAX_NAME) {
            Some((cut, _)) => &name[..cut],
            None => name,
        };
        found.push(Candidate { start: symbol.address(), size: symbol.size(), name, rank });
    }
    found
}

/// What an ELF file's headers say of it: where it is loaded, its build-id, and the debug file
/// its `.gnu_debuglink` names (a plain file name, with the CRC-32 of that file).
struct Library {
    first_load: u64,
    build_id: Option<Vec<u8>>,
    link: Option<(String, u32)>,
}

impl Library {
    fn read<'data, R: ReadRef<'data>>(data: R, name: &Path) -> Result<Library, Error> {
        let elf = object::File::parse(data).map_err(|_| damaged(name, "not an ELF file"))?;
        let build_id = elf.build_id().ok().flatten().map(<[u8]>::to_vec);
        let first_load =
            elf.segments().map(|s| s.address()).min().ok_or_else(|| damaged(name, "no loadable segment"))?;
        let link = elf.gnu_debuglink().ok().flatten().and_then(|(link, crc)| {
            let link = std::str::from_utf8(link).ok().filter(|n| !n.is_empty() && !n.contains('/'))?;
            Some((link.to_string(), crc))
        });
        Ok(Library { first_load, build_id, link })
    }
}

/// An ELF file's own functions: its `.symtab`'s, else its exports (`.dynsym`).
fn own_functions<'data, R: ReadRef<'data>>(data: R) -> (Table, NativeOrigin) {
    let Ok(elf) = object::File::parse(data) else { return (Table::default(), NativeOrigin::Dynsym) };
    if !strings_at_hand(&elf, data, false) {
        return (Table::default(), NativeOrigin::Symtab);
    }
    let own = elf.symbol_table().map(|symbols| table(symbols.symbols()));
    if let Some(functions) = own.filter(|f| f.len() > 0) {
        return (functions, NativeOrigin::Symtab);
    }
    if !strings_at_hand(&elf, data, true) {
        return (Table::default(), NativeOrigin::Dynsym);
    }
    let exported = elf.dynamic_symbol_table().map(|symbols| table(symbols.symbols())).unwrap_or_default();
    (exported, NativeOrigin::Dynsym)
}

/// Asks for the whole string table of the symbol table of `elf` (`dynamic`: of its exports) at
/// once. False while the file's parts lack it (`parts`): its names are then not looked up one by
/// one in vain, and the next parse has them all. True for bytes in memory.
fn strings_at_hand<'data, R: ReadRef<'data>>(elf: &object::File<'data, R>, data: R, dynamic: bool) -> bool {
    use object::read::elf::{ElfFile, FileHeader, SectionHeader};
    fn of<'data, Elf: FileHeader, R: ReadRef<'data>>(elf: &ElfFile<'data, Elf, R>, data: R, dynamic: bool) -> bool {
        let symbols = if dynamic { elf.elf_dynamic_symbol_table() } else { elf.elf_symbol_table() };
        let Ok(strings) = elf.elf_section_table().section(symbols.string_section()) else { return true };
        let Some((offset, size)) = strings.file_range(elf.endian()) else { return true };
        data.read_bytes_at(offset, size).is_ok()
    }
    match elf {
        object::File::Elf32(elf) => of(elf, data, dynamic),
        object::File::Elf64(elf) => of(elf, data, dynamic),
        _ => true,
    }
}

/// The bytes of the ELF file at `path` (None when there is none), read whole: for a debug file
/// matched by its CRC-32, and for [`instrumented_functions`], which reads the code too. Bounded
/// like every symbol file (256 MiB); a larger file is an error and its library is named by what
/// remains.
fn read_elf(path: &Path) -> Result<Option<Vec<u8>>, Error> {
    crate::read_symbol_file(path)
}

/// The `.symtab` functions of the separate debug file of `library` (read from `path`, None: from
/// memory) that provably belongs to it, with the debug file's path: by build-id under
/// `debug_root`, else by the name its `.gnu_debuglink` gives, beside the library, in its
/// `.debug/` directory or under `debug_root` + its directory, matched by build-id or, when the
/// library has none, by the debuglink's CRC-32. `path` must be the file's real path (a symlink's
/// directory, or `/proc/self/exe`'s, is not where its debug file is).
fn debug_functions(library: &Library, path: Option<&Path>, debug_root: &Path) -> Option<(PathBuf, Table)> {
    let mut places = Vec::new();
    if let Some(id) = library.build_id.as_deref().filter(|id| id.len() >= 2) {
        let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
        places.push(debug_root.join(".build-id").join(&hex[..2]).join(format!("{}.debug", &hex[2..])));
    }
    if let Some((name, _)) = &library.link
        && let Some(dir) = path.and_then(Path::parent)
    {
        places.push(dir.join(name));
        places.push(dir.join(".debug").join(name));
        if let Ok(relative) = dir.strip_prefix("/") {
            places.push(debug_root.join(relative).join(name));
        }
    }
    places.into_iter().find_map(|candidate| {
        let functions = match (&library.build_id, &library.link) {
            // A library with a build-id is matched by it, whatever file names it: only the
            // debug file's headers, notes and symbol table are read.
            (Some(id), _) => {
                let mut parts = Parts::open(&candidate, MAX_SYMBOL_FILE).ok()?;
                parts.parse(|parts| debug_symtab(parts, |debug| debug.build_id().ok().flatten() == Some(id))).ok()??
            }
            // Else by the CRC-32 of the whole file.
            (None, Some((_, crc))) => {
                let bytes = read_elf(&candidate).ok().flatten()?;
                let belongs = crc32fast::hash(&bytes) == *crc;
                debug_symtab(&*bytes, |_| belongs)?
            }
            (None, None) => return None,
        };
        (functions.len() > 0).then_some((candidate, functions))
    })
}

/// The `.symtab` functions of a debug file, if `belongs` says it is the library's.
fn debug_symtab<'data, R: ReadRef<'data>>(data: R, belongs: impl Fn(&object::File<'data, R>) -> bool) -> Option<Table> {
    let debug = object::File::parse(data).ok()?;
    if !belongs(&debug) {
        return None;
    }
    if !strings_at_hand(&debug, data, false) {
        return Some(Table::default());
    }
    Some(debug.symbol_table().map(|symbols| table(symbols.symbols())).unwrap_or_default())
}

/// Whether the ELF file at `path` imports (references without defining) one of `names` from its
/// dynamic symbol table: for `sonde record`, whether a program was built with
/// `-finstrument-functions` (it imports `__cyg_profile_func_enter`), and for the libraries a
/// traced .NET program mapped. `false` for anything that is not a readable ELF file. Only the
/// headers and the dynamic symbol table are read, not the whole file (a runtime's libraries, and
/// the managed images a .NET process maps, are megabytes each).
pub fn imports_any(path: &Path, names: &[&str]) -> bool {
    // A regular file only, opened without blocking (a FIFO would block).
    let Ok(mut parts) = Parts::open(path, MAX_SYMBOL_FILE) else { return false };
    parts
        .parse(|parts| {
            let Ok(elf) = object::File::parse(parts) else { return false };
            elf.dynamic_symbols().any(|s| s.is_undefined() && s.name().is_ok_and(|n| names.contains(&n)))
        })
        .unwrap_or(false)
}

/// The compiler's function-entry hook (`-finstrument-functions`).
pub const ENTRY_HOOK: &str = "__cyg_profile_func_enter";

/// The functions of the ELF file at `path` that the compiler instrumented: those whose code calls
/// [`ENTRY_HOOK`], named as [`NativeSymbols`] names them, sorted, once each (function coverage:
/// what could have run). Empty for a file that does not import the hook.
///
/// x86-64 code only (elsewhere: empty). A function calls the hook through its PLT stub
/// (`call rel32` to a 16-byte stub that jumps through the hook's GOT slot) or, built with
/// `-fno-plt`, through the slot itself (`call *disp32(%rip)`). The scan looks for those two
/// encodings in each function's bytes; five bytes that merely look like such a call and land on
/// the stub exactly are not a concern in compiled code.
pub fn instrumented_functions(path: &Path) -> Result<Vec<String>, Error> {
    use object::{ObjectSection, ObjectSymbolTable as _, RelocationTarget};
    let bytes = read_elf(path)?.ok_or_else(|| Error::Io {
        path: path.to_owned(),
        error: std::io::Error::from(std::io::ErrorKind::NotFound),
    })?;
    let elf = object::File::parse(&*bytes).map_err(|_| damaged(path, "not an ELF file"))?;
    if elf.architecture() != object::Architecture::X86_64 {
        return Ok(Vec::new());
    }
    let hook: Vec<object::SymbolIndex> = elf
        .dynamic_symbol_table()
        .map(|t| t.symbols().filter(|s| s.is_undefined() && s.name() == Ok(ENTRY_HOOK)).map(|s| s.index()).collect())
        .unwrap_or_default();
    let slots: Vec<u64> = elf
        .dynamic_relocations()
        .into_iter()
        .flatten()
        .filter(|(_, r)| matches!(r.target(), RelocationTarget::Symbol(i) if hook.contains(&i)))
        .map(|(offset, _)| offset)
        .collect();
    if slots.is_empty() {
        return Ok(Vec::new());
    }
    // `jmp *disp32(%rip)` (ff 25) through a slot: `next` is the instruction after it.
    let through_slot = |code: &[u8], at: usize, next: u64| {
        let disp = i32::from_le_bytes([code[at + 2], code[at + 3], code[at + 4], code[at + 5]]);
        slots.contains(&next.wrapping_add_signed(i64::from(disp)))
    };
    let mut stubs = Vec::new();
    for plt in elf.sections().filter(|s| matches!(s.name(), Ok(".plt" | ".plt.sec"))) {
        let Ok(code) = plt.data() else { continue };
        for at in 0..code.len().saturating_sub(5) {
            if code[at] == 0xff && code[at + 1] == 0x25 && through_slot(code, at, plt.address() + at as u64 + 6) {
                stubs.push(plt.address() + (at as u64 & !15));
            }
        }
    }
    let symbols = NativeSymbols::open(path)?;
    let mut found: Vec<String> = Vec::new();
    for (start, size, name) in symbols.functions() {
        let code = elf.sections().find_map(|s| s.data_range(start, size).ok().flatten());
        let Some(code) = code.filter(|c| c.len() >= 6) else { continue };
        let calls_hook = (0..code.len() - 5).any(|at| {
            let next = |len: u64| start + at as u64 + len;
            match (code[at], code[at + 1]) {
                (0xe8, _) => {
                    let rel = i32::from_le_bytes([code[at + 1], code[at + 2], code[at + 3], code[at + 4]]);
                    stubs.contains(&next(5).wrapping_add_signed(i64::from(rel)))
                }
                (0xff, 0x15) => through_slot(code, at, next(6)),
                _ => false,
            }
        });
        if calls_hook {
            found.push(name.to_string());
        }
    }
    found.sort();
    found.dedup();
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_test_binary_names_its_own_functions() {
        // The test executable keeps its .symtab (cargo does not strip test binaries).
        let exe = std::env::current_exe().unwrap();
        let symbols = NativeSymbols::open(&exe).unwrap();
        assert!(symbols.len() > 100, "{} functions", symbols.len());
        let here = this_test_binary_names_its_own_functions as fn() as usize as u64;
        // Position-independent: find the bias the way the agent would, from the mapping.
        let mapped = mapping_start(&exe);
        let (start, name) = symbols.function(here - symbols.load_bias(mapped)).expect("a name");
        assert!(start <= here - symbols.load_bias(mapped));
        assert!(name.contains("this_test_binary_names_its_own_functions"), "{name}");
    }

    /// `tests/apps/native/SOURCE` built by gcc at -O2 with `flags`, into `dir`.
    fn gcc(dir: &Path, source: &str, flags: &[&str]) -> PathBuf {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let out = dir.join(source.replace('.', "_"));
        let built = std::process::Command::new("gcc")
            .args(["-O2", "-o"])
            .arg(&out)
            .arg(root.join("tests/apps/native").join(source))
            .args(flags)
            .output()
            .expect("gcc (Debian's gcc; scripts/setup.sh installs it)");
        assert!(built.status.success(), "{}", String::from_utf8_lossy(&built.stderr));
        out
    }

    #[test]
    fn finds_the_functions_the_compiler_instrumented() {
        let dir = tempfile::tempdir().unwrap();
        let all = ["deep", "fib", "jumper", "main", "thrice", "twice", "unused", "worker"];
        // Through the PLT, and through the GOT (-fno-plt); `unused` never runs but is there.
        for flags in [&["-finstrument-functions", "-pthread"][..], &["-finstrument-functions", "-fno-plt", "-pthread"]]
        {
            let exe = gcc(dir.path(), "calls.c", flags);
            assert_eq!(instrumented_functions(&exe).unwrap(), all, "{flags:?}");
        }
        // A library: its static functions too.
        let lib = gcc(dir.path(), "codec.c", &["-finstrument-functions", "-shared", "-fPIC"]);
        assert_eq!(instrumented_functions(&lib).unwrap(), ["checksum", "compress_block", "huff_encode"]);
        // Built without the hooks: nothing.
        let plain = gcc(dir.path(), "calls.c", &["-pthread"]);
        assert!(instrumented_functions(&plain).unwrap().is_empty());
        assert!(instrumented_functions(&dir.path().join("missing")).is_err());
    }

    /// Where the first segment of `exe` is mapped in this process (/proc/self/maps).
    fn mapping_start(exe: &Path) -> u64 {
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        let exe = exe.canonicalize().unwrap();
        let line = maps.lines().find(|l| l.ends_with(exe.to_str().unwrap())).unwrap();
        u64::from_str_radix(line.split('-').next().unwrap(), 16).unwrap()
    }

    #[test]
    fn the_vdso_is_named_from_its_own_image() {
        use std::os::unix::fs::FileExt;
        // The kernel maps the whole vDSO image; this process reads its own copy.
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        let line = maps.lines().find(|l| l.ends_with("[vdso]")).expect("a [vdso] mapping");
        let (start, end) = line.split_whitespace().next().unwrap().split_once('-').unwrap();
        let (start, end) = (u64::from_str_radix(start, 16).unwrap(), u64::from_str_radix(end, 16).unwrap());
        let mut image = vec![0u8; (end - start) as usize];
        std::fs::File::open("/proc/self/mem").unwrap().read_exact_at(&mut image, start).unwrap();
        let symbols = NativeSymbols::from_image(&image, "linux-vdso.so.1").unwrap();
        let names: Vec<&str> = symbols.functions().map(|(_, _, name)| name).collect();
        assert!(names.len() < 50, "the vDSO's functions only: {names:?}");
        // `clock_gettime` and `__vdso_clock_gettime` are one function: one of the names.
        let clock = |name: &str| name == "clock_gettime" || name == "__vdso_clock_gettime";
        let (at, _, name) = symbols.functions().find(|f| clock(f.2)).unwrap_or_else(|| panic!("{names:?}"));
        assert_eq!(symbols.function(at + 1).map(|(_, found)| found), Some(name));
        assert!(NativeSymbols::from_image(&image[..32], "cut").is_err());
    }

    #[test]
    fn addresses_outside_a_sized_function_are_not_named() {
        let symbols = NativeSymbols::new(
            Table::of(vec![
                Candidate { start: 0x1000, size: 0x10, name: "__a_alias", rank: 2 },
                Candidate { start: 0x1000, size: 0x10, name: "a", rank: 0 },
                Candidate { start: 0x2000, size: 0, name: "b", rank: 0 },
            ]),
            0,
            None,
            NativeOrigin::Symtab,
        );
        assert_eq!(symbols.len(), 2);
        assert_eq!(symbols.function(0x1008), Some((0x1000, "a")));
        assert_eq!(symbols.function(0x1010), None);
        assert_eq!(symbols.function(0xfff), None);
        assert_eq!(symbols.function(0x9999), Some((0x2000, "b")));
    }

    #[test]
    fn what_is_not_elf_is_a_one_line_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("libfake.so");
        std::fs::write(&path, b"MZ not an ELF file at all").unwrap();
        let error = NativeSymbols::open(&path).unwrap_err().to_string();
        assert!(error.contains("libfake.so") && error.contains("not an ELF file"), "{error}");
        assert!(!error.contains('\n'));
    }

    #[test]
    fn damaged_elf_files_never_panic() {
        let exe = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("libcut.so");
        for cut in [64usize, 200, 4096, exe.len() / 2] {
            std::fs::write(&path, &exe[..cut.min(exe.len())]).unwrap();
            let _ = NativeSymbols::open(&path);
        }
        let mut scrambled = exe.clone();
        for i in (64..scrambled.len()).step_by(97) {
            scrambled[i] ^= 0x5a;
        }
        std::fs::write(&path, &scrambled).unwrap();
        let _ = NativeSymbols::open(&path);
    }
}
