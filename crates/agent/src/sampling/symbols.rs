//! Names for native code on sampled stacks, from the libraries' ELF symbol tables and the
//! dynamic linker (`dladdr`): what neither runtime can name (its own code, the libraries a
//! program calls, stubs).

use crate::tree::methods::MethodTable;
use sonde_symbols::{NativeOrigin, NativeSymbols};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A map keyed by addresses (or other integers that need no protection from crafted keys: they
/// come from this process's own code and the runtime), hashed with one folded multiplication
/// instead of SipHash — the drain looks up every frame of every sample.
pub type AddressMap<K, V> = HashMap<K, V, BuildHasherDefault<AddressHasher>>;

#[derive(Default)]
pub struct AddressHasher(u64);

impl Hasher for AddressHasher {
    fn finish(&self) -> u64 {
        let full = u128::from(self.0) * 0x9e37_79b9_7f4a_7c15;
        (full as u64) ^ ((full >> 64) as u64)
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }

    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = self.0.rotate_left(29) ^ n;
    }

    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
}

/// Names native code at addresses: `dladdr` finds the library, the library's ELF symbol tables
/// (read once per library, on the drain thread, never in a signal handler: see
/// `sonde_symbols::NativeSymbols`) name the function — static functions from `.symtab` or an
/// installed debug file included — and `dladdr`'s exported symbol is the fallback. The name is
/// built once per library and function.
///
/// Two objects are not where the loader's name says: the main program, which it names by
/// `argv[0]` (`mono`, found on `PATH`; a symlink), is read from its real path
/// (`/proc/self/exe` → `/usr/bin/mono-sgen`: a debug file is found beside the real file's
/// directory, by its `.gnu_debuglink`); and the vDSO (`linux-vdso.so.1`), which no file holds,
/// is read from its image in memory. Any other name that is not an absolute path gets no table
/// (`dladdr`'s symbol only): reading some other file would name the wrong functions.
#[derive(Default)]
pub struct NativeNames {
    /// (library base, function address or 0) → pseudo-method.
    known: AddressMap<(usize, usize), u32>,
    /// Library base → its functions (None: unreadable, named by `dladdr` alone).
    libraries: AddressMap<usize, Option<Arc<NativeSymbols>>>,
    /// The objects met so far, by address.
    objects: Objects,
}

/// Library path → its functions, for the process's life: a library unloaded and loaded again,
/// or named again by an agent attached again, is read once (and held once).
static BY_PATH: std::sync::Mutex<Option<HashMap<String, Option<Arc<NativeSymbols>>>>> = std::sync::Mutex::new(None);

impl NativeNames {
    /// The pseudo-method of the native code at `ip` (`[native] lib!symbol` or `[native] lib`);
    /// `None` when no object the dynamic linker loaded contains `ip` (JIT code, stubs, images
    /// the runtime maps itself).
    pub fn frame(&mut self, methods: &MethodTable, ip: usize) -> Option<u32> {
        let (base, library, path) = self.objects.containing(ip)?;
        let symbols = self.symbols(base, &path);
        let named = symbols.as_deref().and_then(|table| {
            let bias = table.load_bias(base as u64);
            let (start, name) = table.function((ip as u64).wrapping_sub(bias))?;
            Some((start.wrapping_add(bias) as usize, name))
        });
        // `dladdr`'s exported symbol only when the table does not name the function.
        let found = if named.is_none() { Dladdr::lookup(ip) } else { None };
        let key = (base, named.map_or_else(|| found.as_ref().map_or(0, Dladdr::symbol_address), |(start, _)| start));
        if let Some(&id) = self.known.get(&key) {
            return Some(id);
        }
        let name = match named.map(|(_, name)| name.to_string()).or_else(|| found.as_ref().and_then(Dladdr::symbol)) {
            Some(symbol) => format!("[native] {library}!{symbol}"),
            None => format!("[native] {library}"),
        };
        let id = methods.pseudo(&name, &library, &path);
        self.known.insert(key, id);
        Some(id)
    }

    /// Where the function containing `ip` starts, when a library's symbol table tells (native
    /// tracing's `close_replaced`: was an entry hook called from the entered function's own
    /// code?).
    pub fn function_start(&mut self, ip: usize) -> Option<usize> {
        let found = Dladdr::lookup(ip)?;
        let (_, path) = found.library();
        let table = self.symbols(found.base(), &path)?;
        let bias = table.load_bias(found.base() as u64);
        let (start, _) = table.function((ip as u64).wrapping_sub(bias))?;
        Some(start.wrapping_add(bias) as usize)
    }

    /// The functions of the library mapped at `base` from `path`, read at its first sample.
    fn symbols(&mut self, base: usize, path: &str) -> Option<Arc<NativeSymbols>> {
        if let Some(known) = self.libraries.get(&base) {
            return known.clone();
        }
        // The agent's own frames (its work on the program's threads) keep their exported names:
        // its symbol table is the largest of all, and reading it would cost the program most.
        static OWN_BASE: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
        let own = *OWN_BASE
            .get_or_init(|| Dladdr::lookup(read_symbols as fn(&str, &Path) -> _ as usize).map_or(0, |d| d.base()));
        if base == own {
            self.libraries.insert(base, None);
            return None;
        }
        let read = match Object::at(base, path) {
            Object::File(file) => {
                let known =
                    BY_PATH.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert_default().get(path).cloned();
                match known {
                    Some(known) => known,
                    None => {
                        // Read without the lock (a large table takes a while).
                        let read = read_symbols(path, &file);
                        let mut by_path = BY_PATH.lock().unwrap_or_else(|e| e.into_inner());
                        by_path.get_or_insert_default().entry(path.to_string()).or_insert(read).clone()
                    }
                }
            }
            Object::Vdso => read_vdso(base, path),
            Object::Unknown => None,
        };
        self.libraries.insert(base, read.clone());
        read
    }
}

/// The objects the dynamic linker loaded that sampled addresses were in: their segments'
/// address ranges, and what `dladdr` said of them, so that it is asked once per object rather
/// than once per address — it scans the object's whole dynamic symbol table for the nearest
/// export each time (tens of µs in the runtime's or libc's). Emptied when the loader unloaded
/// an object since (another may be mapped where it was).
#[derive(Default)]
struct Objects {
    /// `(start, end, index into objects)` of every loadable segment, sorted by start.
    segments: Vec<(usize, usize, usize)>,
    objects: Vec<LoadedObject>,
    /// The loader's count of objects unloaded when `segments` was filled.
    unloads: u64,
}

struct LoadedObject {
    /// Where its first segment is mapped (`dladdr`'s base).
    base: usize,
    /// Its file name and path, as the loader names it.
    library: String,
    path: String,
}

impl Objects {
    /// `(base, file name, path)` of the object whose segments hold `ip`; `None` when no object
    /// the loader loaded does.
    fn containing(&mut self, ip: usize) -> Option<(usize, String, String)> {
        let unloads = loader_unloads();
        if unloads != self.unloads {
            self.segments.clear();
            self.objects.clear();
            self.unloads = unloads;
        }
        let at = self.segments.partition_point(|&(start, _, _)| start <= ip);
        let known = at.checked_sub(1).and_then(|at| self.segments.get(at)).filter(|&&(_, end, _)| ip < end);
        if let Some(object) = known.and_then(|&(_, _, index)| self.objects.get(index)) {
            return Some((object.base, object.library.clone(), object.path.clone()));
        }
        let found = Dladdr::lookup(ip)?;
        let (library, path) = found.library();
        let segments = segments_holding(ip);
        // (None found again: unloaded meanwhile, so named this once and not kept.)
        if !segments.is_empty() {
            let index = self.objects.len();
            self.objects.push(LoadedObject { base: found.base(), library: library.clone(), path: path.clone() });
            for (start, end) in segments {
                let at = self.segments.partition_point(|&(s, _, _)| s <= start);
                self.segments.insert(at, (start, end, index));
            }
        }
        Some((found.base(), library, path))
    }
}

/// The loader's count of objects unloaded so far (`dl_iterate_phdr`'s `dlpi_subs`, read from its
/// first object).
fn loader_unloads() -> u64 {
    unsafe extern "C" fn first(info: *mut libc::dl_phdr_info, _size: usize, data: *mut libc::c_void) -> libc::c_int {
        // SAFETY: the loader passes a valid `info` for the call; `data` is the `u64` below.
        unsafe { *data.cast::<u64>() = (*info).dlpi_subs };
        1
    }
    let mut subs: u64 = 0;
    // SAFETY: `first` matches the callback's type and writes only through `data`, which points to
    // `subs` for the whole call.
    unsafe { libc::dl_iterate_phdr(Some(first), (&raw mut subs).cast()) };
    subs
}

/// The address ranges of the loadable segments of the object that holds `ip` (empty: none does).
fn segments_holding(ip: usize) -> Vec<(usize, usize)> {
    struct Search {
        ip: usize,
        found: Vec<(usize, usize)>,
    }
    unsafe extern "C" fn each(info: *mut libc::dl_phdr_info, _size: usize, data: *mut libc::c_void) -> libc::c_int {
        // SAFETY: the loader passes a valid `info`, whose `dlpi_phnum` program headers are at
        // `dlpi_phdr`, for the call; `data` is the `Search` below.
        let (info, search) = unsafe { (&*info, &mut *data.cast::<Search>()) };
        let headers: &[libc::Elf64_Phdr] = if info.dlpi_phdr.is_null() {
            &[]
        } else {
            // SAFETY: as above.
            unsafe { std::slice::from_raw_parts(info.dlpi_phdr, usize::from(info.dlpi_phnum)) }
        };
        let segments: Vec<(usize, usize)> = headers
            .iter()
            .filter(|h| h.p_type == libc::PT_LOAD && h.p_memsz > 0)
            .map(|h| {
                let start = (info.dlpi_addr as usize).wrapping_add(h.p_vaddr as usize);
                (start, start.saturating_add(h.p_memsz as usize))
            })
            .collect();
        if segments.iter().any(|&(start, end)| start <= search.ip && search.ip < end) {
            search.found = segments;
            return 1;
        }
        0
    }
    let mut search = Search { ip, found: Vec::new() };
    // SAFETY: `each` matches the callback's type and uses `data` only as the `Search`, which
    // outlives the call.
    unsafe { libc::dl_iterate_phdr(Some(each), (&raw mut search).cast()) };
    search.found
}

/// Where the symbols of an object the dynamic linker loaded are read from.
enum Object {
    /// A file (the main program's by its real path).
    File(PathBuf),
    /// The vDSO, mapped by the kernel: from memory.
    Vdso,
    /// A name that is not a path (a library loaded by a relative name).
    Unknown,
}

impl Object {
    /// The object mapped at `base`, which the loader calls `path`.
    fn at(base: usize, path: &str) -> Object {
        // SAFETY: getauxval only reads the auxiliary vector the kernel gave the process.
        let (vdso, program_headers) =
            unsafe { (libc::getauxval(libc::AT_SYSINFO_EHDR), libc::getauxval(libc::AT_PHDR)) };
        if vdso != 0 && base == vdso as usize {
            return Object::Vdso;
        }
        // The main program: where its program headers are mapped.
        static MAIN_BASE: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
        let main = *MAIN_BASE.get_or_init(|| Dladdr::lookup(program_headers as usize).map_or(0, |d| d.base()));
        if base == main {
            return match std::fs::read_link("/proc/self/exe") {
                // Replaced since it started: the running file is only reachable through the link.
                Ok(exe) if !exe.to_string_lossy().ends_with(" (deleted)") => Object::File(exe),
                _ => Object::File(PathBuf::from("/proc/self/exe")),
            };
        }
        if !path.starts_with('/') {
            return Object::Unknown;
        }
        Object::File(PathBuf::from(path))
    }
}

/// The function table of the library the loader calls `path`, read from `file`.
fn read_symbols(path: &str, file: &Path) -> Option<Arc<NativeSymbols>> {
    let symbols = NativeSymbols::open(file).ok()?;
    let read_from = if file == Path::new(path) { String::new() } else { format!(" ({})", file.display()) };
    log_symbols(&format!("{path}{read_from}"), &symbols);
    Some(Arc::new(symbols))
}

/// The vDSO's function table, from its image in memory (the kernel maps it whole at `base`: the
/// `[vdso]` mapping, which says how long it is).
fn read_vdso(base: usize, path: &str) -> Option<Arc<NativeSymbols>> {
    const MAX_VDSO: usize = 1 << 20;
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    let end = maps.lines().filter(|l| l.ends_with("[vdso]")).find_map(|l| {
        let (start, end) = l.split_whitespace().next()?.split_once('-')?;
        let start = usize::from_str_radix(start, 16).ok()?;
        (start == base).then(|| usize::from_str_radix(end, 16).ok()).flatten()
    })?;
    let mut image = vec![0u8; end.checked_sub(base)?.min(MAX_VDSO)];
    read_memory(base, &mut image)?;
    let symbols = NativeSymbols::from_image(&image, path).ok()?;
    log_symbols(&format!("{path} (the vDSO, from memory)"), &symbols);
    Some(Arc::new(symbols))
}

fn log_symbols(what: &str, symbols: &NativeSymbols) {
    crate::base::log::write(format_args!(
        "native symbols: {what}: {} functions from {}",
        symbols.len(),
        match symbols.origin() {
            NativeOrigin::Symtab => "its .symtab".to_string(),
            NativeOrigin::DebugFile(debug) => debug.display().to_string(),
            NativeOrigin::Dynsym => "its exports (.dynsym)".to_string(),
        }
    ));
}

/// Copies this process's memory at `address` into `buf`, or fails without faulting.
fn read_memory(address: usize, buf: &mut [u8]) -> Option<()> {
    let local = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() };
    let remote = libc::iovec { iov_base: address as *mut libc::c_void, iov_len: buf.len() };
    // SAFETY: the kernel writes at most `buf.len()` bytes into `buf` and only reads the remote
    // range, failing cleanly where it is not mapped.
    let read = unsafe { libc::process_vm_readv(libc::getpid(), &local, 1, &remote, 1, 0) };
    (read == buf.len() as isize).then_some(())
}

/// (library file name, library path, symbol) for native code, from `dladdr`.
pub fn native_symbol(ip: usize) -> Option<(String, String, Option<String>)> {
    let found = Dladdr::lookup(ip)?;
    let (library, path) = found.library();
    Some((library, path, found.symbol()))
}

/// What `dladdr` says of an address inside an object the dynamic linker loaded.
struct Dladdr(libc::Dl_info);

impl Dladdr {
    fn lookup(ip: usize) -> Option<Dladdr> {
        // SAFETY: dladdr only reads the loader's tables and fills `info`.
        unsafe {
            let mut info: libc::Dl_info = std::mem::zeroed();
            (libc::dladdr(ip as *const libc::c_void, &mut info) != 0 && !info.dli_fname.is_null())
                .then_some(Dladdr(info))
        }
    }

    /// Where the library's first segment is mapped.
    fn base(&self) -> usize {
        self.0.dli_fbase as usize
    }

    /// The exported symbol's address, or 0: the same for every address of one function.
    fn symbol_address(&self) -> usize {
        if self.0.dli_sname.is_null() { 0 } else { self.0.dli_saddr as usize }
    }

    /// (library file name, library path).
    fn library(&self) -> (String, String) {
        // SAFETY: a NUL-terminated string of a loaded object (checked non-null by `lookup`),
        // copied at once.
        let path = unsafe { std::ffi::CStr::from_ptr(self.0.dli_fname) }.to_string_lossy().into_owned();
        let library = path.rsplit('/').next().unwrap_or(&path).to_string();
        (library, path)
    }

    fn symbol(&self) -> Option<String> {
        // SAFETY: null or a NUL-terminated string of a loaded object, copied at once.
        (!self.0.dli_sname.is_null())
            .then(|| unsafe { std::ffi::CStr::from_ptr(self.0.dli_sname) }.to_string_lossy().into_owned())
    }
}
