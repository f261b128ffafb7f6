//! Which sampled addresses the runtime may be asked about (`GetFunctionFromIP`), on the drain
//! thread.
//!
//! A sampled stack holds addresses the frame-pointer walk read from the stack, and where a
//! native function keeps something else in RBP some of them are not return addresses at all. The
//! runtime takes most bad addresses in its stride, but not one inside a ReadyToRun image: its
//! lookup there (`ReadyToRunJitManager::JitCodeToMethodInfo`) finds the image's runtime function
//! at or before the address and then walks the table backwards until it meets the entry point
//! of a method it has already prepared (whose precompiled code it handed out). When no prepared
//! method precedes the address — an image just loaded, an address in its headers or metadata —
//! the walk runs off the table's start and the process dies of SIGSEGV. That was the "one crash
//! in a thousand runs" of issue 11: the drain asked about an address in `System.Console.dll`'s
//! metadata while that image was being loaded (its core dump, docs/SAMPLING.md).
//!
//! So an address in a file-backed mapping that is not a library the dynamic linker loaded (those
//! are resolved before this is asked) is a PE image, and the runtime is asked about it only when
//! - the image has ReadyToRun code and the address lies inside one of its runtime functions
//!   (a method body or funclet: `sonde_metadata::ready_to_run`), and
//! - a method the runtime has prepared starts in the same image at or before the address, which
//!   stops the runtime's walk before it leaves the table. The agent learns prepared methods from
//!   the runtime's `JITCachedFunctionSearchFinished` callbacks (a program Sonde launched: every
//!   one, see [`complete`]) and from every address resolved before; after an attach, where that
//!   callback is not available, an address that follows a call instruction (a return address
//!   whose call ran, so its method was prepared) counts as well.
//!
//! Anything else in an image is `[unknown code]`. Addresses in executable anonymous memory (JIT
//! code heaps, stubs) are asked about as before: the runtime's lookup there checks what it reads.
//! Addresses in memory without code are not — but the runtime reserves address space and maps
//! images into it later (a second crash, found by the test of this: an address read as reserved
//! memory from an older reading of the mappings was in an image by then), so an address that was
//! reserved or unmapped at the last reading waits for a fresh one; code, files and data are
//! taken from the last reading. Memory reserved in the runtime's `memfd` (its double-mapped
//! executable memory) is not waited for: the runtime commits code heaps and stubs there, never
//! an image. Neither is code the JIT compiled since: a method's later compilations report their
//! code as they finish, its first ones are queued and their code looked up by the drain when an
//! address needs it (or the mappings read again when many wait).
//!
//! Not covered: an image unloaded (a collectible load context) and another mapped at its address
//! keeps the first one's prepared methods; hot/cold-split ReadyToRun code (not produced by
//! default) is looked up from its hot part's entry, which may lie above the address.

use sonde_metadata::ready_to_run::CodeMap;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

/// What to do with an address that is not in a native library.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Verdict {
    /// The runtime may be asked.
    Ask,
    /// Never code the runtime knows: data, an image's headers or metadata, an image without
    /// ReadyToRun code.
    Never,
    /// Not now, perhaps later (not to be remembered): ReadyToRun code with no prepared method
    /// known to start at or before it yet, or memory that was reserved or unmapped at the last
    /// reading of the mappings.
    NotYet,
}

/// What backs a mapping of `/proc/self/maps`.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Backing {
    /// Executable anonymous memory, or a `memfd` (the runtime's double-mapped JIT code heaps and
    /// stubs).
    Code,
    /// A file, mapped from `offset`.
    File { path: String, offset: u64 },
    /// Address space reserved (inaccessible anonymous memory): the runtime maps images and code
    /// heaps into it later, so this may be out of date: see [`Images::backing`].
    Reserved,
    /// Address space reserved in a `memfd` (inaccessible): the runtime's double-mapped
    /// executable memory, whose parts it commits as code heaps and stubs (and their writable
    /// views) — never an image, which the runtime maps from its file into anonymous reserved
    /// memory or free address space. Asked about as [`Backing::Code`] is (the runtime's lookup
    /// reads its own tables there, not the address), with no reading or lookup for the code
    /// committed since, most of a JIT-heavy program's new code.
    ReservedCode,
    /// Anything else: data (the heaps, stacks), the kernel's own (`[vvar]`).
    Other,
}

/// The process's mappings and the PE images among them, as far as the drain has looked.
#[derive(Default)]
pub(super) struct Images {
    /// `(start, end, backing)`, sorted by start: the last reading of `/proc/self/maps`.
    maps: Vec<(usize, usize, Backing)>,
    /// When it was read.
    read_at: Option<std::time::Instant>,
    /// Code the JIT compiled ([`compiled`]), by start: its end.
    compiled: BTreeMap<usize, usize>,
    /// PE images by base address: their ReadyToRun code (`None`: none, or unreadable).
    images: BTreeMap<usize, Option<(usize, CodeMap)>>,
    /// Code versions the runtime handed out, by start address (ReadyToRun entry points among
    /// them).
    prepared: BTreeSet<usize>,
}

/// How many entries a queue the program's threads fill ([`compiled`], `frames::prepared`) holds
/// before the drain takes them in whether it needs them or not.
pub(super) const QUEUE_BOUND: usize = 4096;

/// Code the JIT compiled, as `(start, size)` regions, since the drain last looked (pushed on the
/// compiling thread, by `frames::learn_osr`, which reads them anyway).
static COMPILED: Mutex<Vec<(usize, usize)>> = Mutex::new(Vec::new());

/// The JIT compiled code in `regions`: an address in them is code without a new reading of the
/// mappings (most of what a JIT-heavy program's new mappings hold).
pub(super) fn compiled(regions: &[(usize, usize)]) {
    COMPILED.lock().unwrap_or_else(|e| e.into_inner()).extend_from_slice(regions);
}

/// The functions the JIT compiled: every one seen (from start-up, [`complete`]), and those whose
/// code the drain has not looked up yet.
#[derive(Default)]
struct Jitted {
    seen: crate::sampling::AddressMap<usize, ()>,
    pending: Vec<usize>,
}

static JITTED: Mutex<Option<Jitted>> = Mutex::new(None);

/// How many functions [`Jitted::pending`] holds at most (a pointer each).
const PENDING_BOUND: usize = 1 << 16;

/// The JIT compiled `function` (on the compiling thread, from `frames::learn_osr`); `true` when
/// it had never compiled it before. A first compilation is never an on-stack-replacement
/// version (that needs the method's tier-0 code, compiled before): the function is only queued,
/// and its code regions are asked of the runtime by the drain if an address outside the
/// mappings it knows needs them and the mappings are not read instead ([`Images::verdict`]),
/// not at every compilation on the program's thread (two runtime calls and a read of the code:
/// 2.4% of a JIT-heavy program's CPU, issue 39). Meaningful only when every compilation is seen
/// ([`complete`]).
pub(super) fn first_compilation(function: usize) -> bool {
    let mut jitted = JITTED.lock().unwrap_or_else(|e| e.into_inner());
    let jitted = jitted.get_or_insert_with(Default::default);
    if jitted.seen.insert(function, ()).is_some() {
        return false;
    }
    jitted.pending.push(function);
    true
}

/// How many functions [`first_compilation`] queued.
fn pending() -> usize {
    JITTED.lock().unwrap_or_else(|e| e.into_inner()).as_ref().map_or(0, |jitted| jitted.pending.len())
}

/// At most how many queued functions' code is looked up for one address while the mappings may
/// be read again instead.
const LOOK_UP_AT_MOST: usize = 128;

/// The functions queued by [`first_compilation`], when at least `at_least` wait.
fn take_pending(at_least: usize) -> Vec<usize> {
    let mut jitted = JITTED.lock().unwrap_or_else(|e| e.into_inner());
    match jitted.as_mut() {
        Some(jitted) if jitted.pending.len() >= at_least.max(1) => std::mem::take(&mut jitted.pending),
        _ => Vec::new(),
    }
}

/// Set when the runtime reports every ReadyToRun method it prepares (`COR_PRF_MONITOR_CACHE_SEARCHES`
/// from start-up: a launched program; not after an attach).
static COMPLETE: AtomicBool = AtomicBool::new(false);

/// The runtime reports every method it prepares from now on, from the start.
pub(super) fn set_complete() {
    COMPLETE.store(true, Relaxed);
}

pub(super) fn complete() -> bool {
    COMPLETE.load(Relaxed)
}

impl Images {
    /// Whether the runtime may be asked about `ip` (see the module docs). `complete`: every
    /// prepared method is reported ([`complete`]); `read` reads this process's memory without
    /// faulting; `follows_call(return_address)` tells whether a call instruction ends there.
    pub fn verdict(
        &mut self,
        ip: usize,
        complete: bool,
        read: &dyn Fn(usize, &mut [u8]) -> bool,
        follows_call: &dyn Fn(usize) -> bool,
    ) -> Verdict {
        let path = match self.backing(ip) {
            (Some(Backing::Code | Backing::ReservedCode), _) => return Verdict::Ask,
            (Some(Backing::File { path, .. }), _) => path,
            (_, true) => return Verdict::Never,
            // A mapping made since the last look, perhaps.
            (_, false) => return Verdict::NotYet,
        };
        let Some(base) =
            self.image(ip, &path, read).filter(|(base, map)| map.is_code((ip - base) as u32)).map(|(b, _)| b)
        else {
            return Verdict::Never;
        };
        if self.prepared.range(base..=ip).next_back().is_some() || (!complete && follows_call(ip + 1)) {
            Verdict::Ask
        } else {
            Verdict::NotYet
        }
    }

    /// Code starting at `start` was handed out by the runtime (prepared, or compiled).
    pub fn prepared(&mut self, start: usize) {
        self.prepared.insert(start);
    }

    /// The backing of the mapping containing `ip` (`None`: unmapped), and whether that is up to
    /// date. Code, files and data are taken from the last reading of `/proc/self/maps` (the
    /// runtime maps code into reserved or free address space, never over any of those); an
    /// address reserved or unmapped then is read again, at most every [`REREAD`] (an address in
    /// memory reserved then may be in an image mapped since: asking about it as code was a
    /// crash).
    fn backing(&mut self, ip: usize) -> (Option<Backing>, bool) {
        let found = find(&self.maps, ip).cloned();
        if matches!(found, Some(Backing::Code | Backing::ReservedCode | Backing::File { .. } | Backing::Other)) {
            // (Taken in now and then, so that the list stays small whatever the JIT does.)
            self.take_compiled(QUEUE_BOUND);
            return (found, true);
        }
        // Mapped since: code the JIT compiled, most often.
        self.take_compiled(0);
        if self.compiled.range(..=ip).next_back().is_some_and(|(_, &end)| ip < end) {
            return (Some(Backing::Code), true);
        }
        // Still inaccessible (or unmapped): no code now, nothing to read the mappings for.
        if !readable(ip) {
            return (found, false);
        }
        // The code of the functions compiled for the first time since the last reading: looked up
        // when they are few, or when the mappings may not be read again yet; else the mappings
        // are read (one reading costs what a few hundred lookups do).
        let may_read = self.read_at.is_none_or(|at| at.elapsed() >= REREAD);
        if (!may_read || pending() <= LOOK_UP_AT_MOST) && self.first_compilations_hold(ip) {
            return (Some(Backing::Code), true);
        }
        if !may_read {
            return (found, false);
        }
        // Code compiled before this reading is in its mappings.
        take_pending(0);
        let Ok(text) = std::fs::read_to_string("/proc/self/maps") else { return (found, false) };
        crate::sampling::module_files::count_maps_read();
        self.maps = parse_maps(&text);
        self.read_at = Some(std::time::Instant::now());
        (find(&self.maps, ip).cloned(), true)
    }

    /// Takes in the code the JIT compiled since the last look, when at least `at_least` regions
    /// wait.
    fn take_compiled(&mut self, at_least: usize) {
        let regions = {
            let mut queue = COMPILED.lock().unwrap_or_else(|e| e.into_inner());
            if queue.len() >= at_least.max(1) { std::mem::take(&mut *queue) } else { Vec::new() }
        };
        for (start, size) in regions {
            self.compiled.insert(start, start.saturating_add(size));
        }
        // (Bounded: past that many, they are forgotten, and the next address outside the
        // mappings known has them read again.)
        if at_least > 0 && !take_pending(PENDING_BOUND).is_empty() {
            self.read_at = None;
        }
    }

    /// Whether the code of a function compiled for the first time since the drain last looked
    /// holds `ip`: their code is looked up newest first (a sampled address in code the drain does
    /// not know yet is most often in code just compiled), until one holds it; the others stay
    /// queued.
    fn first_compilations_hold(&mut self, ip: usize) -> bool {
        let pending = take_pending(0);
        if pending.is_empty() {
            return false;
        }
        let (found, older) = self.look_up(pending, ip);
        if !older.is_empty() {
            let mut jitted = JITTED.lock().unwrap_or_else(|e| e.into_inner());
            let jitted = jitted.get_or_insert_with(Default::default);
            let newer = std::mem::replace(&mut jitted.pending, older);
            jitted.pending.extend(newer);
        }
        found
    }

    /// Takes in the code of `functions`, newest first, stopping after the one whose code holds
    /// `ip`: whether one did, and the functions not looked up.
    fn look_up(&mut self, functions: Vec<usize>, ip: usize) -> (bool, Vec<usize>) {
        let Some(info) = super::info::info() else { return (false, functions) };
        self.look_up_with(functions, ip, &|function| info.code_versions(function))
    }

    /// [`look_up`](Self::look_up), each function's code versions' `(start, size)` regions from
    /// `versions`.
    fn look_up_with(
        &mut self,
        mut functions: Vec<usize>,
        ip: usize,
        versions: &dyn Fn(usize) -> Vec<Vec<(usize, usize)>>,
    ) -> (bool, Vec<usize>) {
        while let Some(function) = functions.pop() {
            let mut holds = false;
            for (start, size) in versions(function).into_iter().flatten() {
                let end = start.saturating_add(size);
                self.compiled.insert(start, end);
                holds |= start <= ip && ip < end;
            }
            if holds {
                return (true, functions);
            }
        }
        (false, functions)
    }

    /// The ReadyToRun image of file `path` that holds `ip`, and its base. The runtime maps the
    /// file more than once: whole (shared, for its metadata), and as an image, sections at their
    /// RVAs, where the code section is mapped from the file's start too; an assembly inside a
    /// single-file bundle is mapped from its offset in the bundle. So each mapping of the file
    /// at or below `ip` is a candidate base — those of the file's start first, then the others,
    /// nearest first (an image's sections may be split into many mappings) — and the image is
    /// the first whose headers, read as mapped, lead to ReadyToRun code spanning `ip` (each
    /// candidate read once).
    fn image(&mut self, ip: usize, path: &str, read: &dyn Fn(usize, &mut [u8]) -> bool) -> Option<(usize, &CodeMap)> {
        let mut candidates: Vec<(bool, usize)> = self
            .maps
            .iter()
            .rev()
            .filter_map(|(start, _, b)| match b {
                Backing::File { path: p, offset } if p == path && *start <= ip => Some((*offset != 0, *start)),
                _ => None,
            })
            .collect();
        // Stable: nearest first within each kind.
        candidates.sort_by_key(|&(elsewhere, _)| elsewhere);
        let candidates = candidates.into_iter().map(|(_, start)| start);
        let base = candidates.into_iter().find(|&base| {
            let image = self.images.entry(base).or_insert_with(|| {
                let map = CodeMap::read(&mut |rva, buf| base.checked_add(rva as usize).is_some_and(|at| read(at, buf)));
                if let Ok(Some(map)) = &map {
                    crate::base::log::log!("ReadyToRun code: {path} at {base:#x}, {} runtime functions", map.len());
                }
                map.ok().flatten().map(|map| (base.saturating_add(map.size_of_image() as usize), map))
            });
            image.as_ref().is_some_and(|(end, _)| ip < *end)
        })?;
        self.images.get(&base)?.as_ref().map(|(_, map)| (base, map))
    }
}

/// How often `/proc/self/maps` is read at most: a reading of a .NET process's costs 0.2 to
/// 0.7 ms here, and Mono's C# compiler on .NET met new mappings 27 times in 0.7 s (2% of its CPU)
/// before the JIT's code was learnt from the JIT and inaccessible memory was told by a probe.
const REREAD: std::time::Duration = std::time::Duration::from_millis(100);

/// Whether the byte at `ip` can be read (mapped, and not inaccessible), without faulting.
fn readable(ip: usize) -> bool {
    let mut byte = [0u8; 1];
    let local = libc::iovec { iov_base: byte.as_mut_ptr().cast(), iov_len: 1 };
    let remote = libc::iovec { iov_base: ip as *mut libc::c_void, iov_len: 1 };
    // SAFETY: the kernel reads one byte of this process at `ip` into `byte`, or fails cleanly.
    unsafe { libc::process_vm_readv(libc::getpid(), &local, 1, &remote, 1, 0) == 1 }
}

fn find(maps: &[(usize, usize, Backing)], ip: usize) -> Option<&Backing> {
    let at = maps.partition_point(|&(start, _, _)| start <= ip);
    let (_, end, backing) = maps.get(at.checked_sub(1)?)?;
    (ip < *end).then_some(backing)
}

/// The mappings of a `/proc/PID/maps` text, sorted by start.
fn parse_maps(text: &str) -> Vec<(usize, usize, Backing)> {
    let mut maps: Vec<_> = text
        .lines()
        .filter_map(|line| {
            let mut fields = line.splitn(6, ' ');
            let (range, perms, offset) = (fields.next()?, fields.next()?, fields.next()?);
            let (_device, inode) = (fields.next()?, fields.next()?);
            let path = fields.next().unwrap_or("").trim_start();
            let (start, end) = range.split_once('-')?;
            let (start, end) = (usize::from_str_radix(start, 16).ok()?, usize::from_str_radix(end, 16).ok()?);
            let anonymous = path.is_empty() || path.starts_with("/memfd:") || path.starts_with("[anon");
            let backing = if anonymous && perms.as_bytes().get(2) == Some(&b'x') {
                Backing::Code
            } else if anonymous && perms.starts_with("---") {
                if path.starts_with("/memfd:") { Backing::ReservedCode } else { Backing::Reserved }
            } else if !anonymous && path.starts_with('/') && inode != "0" {
                Backing::File { path: path.to_string(), offset: u64::from_str_radix(offset, 16).ok()? }
            } else {
                Backing::Other
            };
            Some((start, end, backing))
        })
        .collect();
    maps.sort_unstable_by_key(|&(start, _, _)| start);
    maps
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAPS: &str = "\
55d0c0000000-55d0c0021000 r-xp 00000000 08:01 123 /usr/bin/dotnet
7e0000000000-7e0000030000 r--s 00000000 08:01 77 /opt/dotnet/System.Console.dll
7f0000000000-7f0000001000 r--p 00000000 08:01 77 /opt/dotnet/System.Console.dll
7f0000010000-7f0000012000 r-xp 00000000 08:01 77 /opt/dotnet/System.Console.dll
7f0000012000-7f0000014000 r--p 00003000 08:01 77 /opt/dotnet/System.Console.dll
7f0000020000-7f0000030000 rwxp 00000000 00:00 0
7f0000030000-7f0000038000 ---p 00000000 00:00 0
7f0000040000-7f0000050000 r-xs 00040000 00:01 2049 /memfd:doublemapper (deleted)
7f0000050000-7f0000058000 rw-s 00050000 00:01 2049 /memfd:doublemapper (deleted)
7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                          [stack]
";

    /// System.Console.dll as CoreCLR maps it: whole at 0x7e0000000000, and as an image at
    /// 0x7f0000000000 (its code section mapped from the file's start too), code from RVA 0x10000
    /// to 0x11800 in two runtime functions, metadata after it; `prepared` entry points given.
    fn console(prepared: &[usize]) -> Images {
        let mut images = Images { maps: parse_maps(MAPS), ..Images::default() };
        let map = CodeMap::new(vec![(0x10000, 0x10800), (0x10800, 0x11800)], 0x14000);
        images.images.insert(0x7f0000000000, Some((0x7f0000014000, map)));
        for &p in prepared {
            images.prepared(p);
        }
        images
    }

    const NO_MEMORY: &dyn Fn(usize, &mut [u8]) -> bool = &|_, _| false;
    const NO_CALL: &dyn Fn(usize) -> bool = &|_| false;
    const A_CALL: &dyn Fn(usize) -> bool = &|_| true;

    #[test]
    fn memory_reserved_in_the_runtime_s_executable_memfd_is_asked_about() {
        // Memory of this test, read as reserved at the last reading: in a `memfd` (the runtime's
        // double-mapped executable memory) it is asked about; in anonymous memory it may be an
        // image mapped since (not asked about before a new reading).
        let page = vec![0u8; 0x3000];
        let start = (page.as_ptr() as usize + 0xfff) & !0xfff;
        let ip = start + 0x10;
        for (line, verdict) in [
            ("---s 00002000 00:01 2049 /memfd:doublemapper (deleted)", Verdict::Ask),
            ("---p 00000000 00:00 0", Verdict::NotYet),
        ] {
            let maps = format!("{start:x}-{:x} {line}\n", start + 0x1000);
            let mut images = Images { maps: parse_maps(&maps), ..Images::default() };
            images.read_at = Some(std::time::Instant::now());
            assert_eq!(images.verdict(ip, true, NO_MEMORY, A_CALL), verdict, "{line}");
        }
        // Not committed yet: asked about all the same (never an image).
        let mut images = Images {
            maps: parse_maps("7f0000030000-7f0000038000 ---s 00000000 00:01 2049 /memfd:doublemapper (deleted)\n"),
            read_at: Some(std::time::Instant::now()),
            ..Images::default()
        };
        assert_eq!(images.verdict(0x7f0000030010, true, NO_MEMORY, A_CALL), Verdict::Ask);
    }

    #[test]
    fn first_compilations_are_looked_up_newest_first_until_one_holds_the_address() {
        // Function n's code: 0x1000 * n, 0x100 bytes.
        let versions = |function: usize| vec![vec![(function * 0x1000, 0x100)]];
        let mut images = Images::default();
        let (found, older) = images.look_up_with(vec![1, 2, 3, 4], 0x3010, &versions);
        assert!(found);
        assert_eq!(older, vec![1, 2], "not looked up: still queued");
        assert_eq!(images.compiled.keys().copied().collect::<Vec<_>>(), vec![0x3000, 0x4000]);
        let (found, older) = images.look_up_with(older, 0x9000, &versions);
        assert!(!found);
        assert!(older.is_empty());
        assert_eq!(images.compiled.len(), 4);
    }

    #[test]
    fn a_function_is_queued_at_its_first_compilation_only() {
        // (Ids of this test's own: the queue is the process's.)
        assert!(first_compilation(0xdead_0001));
        assert!(!first_compilation(0xdead_0001), "a later tier, or an OSR version");
        assert!(first_compilation(0xdead_0002));
    }

    #[test]
    fn mappings_are_told_apart() {
        let maps = parse_maps(MAPS);
        assert_eq!(find(&maps, 0x7f0000020010), Some(&Backing::Code));
        assert_eq!(find(&maps, 0x7f0000040010), Some(&Backing::Code), "a memfd code heap");
        assert_eq!(find(&maps, 0x7f0000050010), Some(&Backing::Other), "the heap's writable view");
        assert_eq!(find(&maps, 0x7f0000030010), Some(&Backing::Reserved));
        assert_eq!(find(&maps, 0x7ffd00000010), Some(&Backing::Other));
        assert!(matches!(find(&maps, 0x7f0000012010), Some(Backing::File { offset: 0x3000, .. })));
        assert_eq!(find(&maps, 0x7f0000014000), None);
        assert_eq!(find(&maps, 0x10), None);
    }

    #[test]
    fn jit_code_is_asked_about_and_memory_without_code_never() {
        let mut images = console(&[]);
        assert_eq!(images.verdict(0x7f0000040010, true, NO_MEMORY, NO_CALL), Verdict::Ask);
        assert_eq!(images.verdict(0x7f0000020010, true, NO_MEMORY, NO_CALL), Verdict::Ask);
        // Data is never code.
        assert_eq!(images.verdict(0x7ffd00000010, true, NO_MEMORY, A_CALL), Verdict::Never, "a stack");
        assert_eq!(images.verdict(0x7f0000050010, true, NO_MEMORY, A_CALL), Verdict::Never, "a heap's writable view");
        // Read just now: reserved memory, nothing, may be code by the next reading.
        images.maps = parse_maps(MAPS);
        images.read_at = Some(std::time::Instant::now());
        for ip in [0x7f0000030010, 0x10] {
            assert_eq!(images.verdict(ip, true, NO_MEMORY, A_CALL), Verdict::NotYet, "{ip:#x}: maybe mapped since");
        }
        // Unmapped (nothing to read the mappings again for); a stack mapped since the last
        // reading (read again, and then known).
        images.read_at = None;
        assert_eq!(images.verdict(0x10, true, NO_MEMORY, A_CALL), Verdict::NotYet, "unmapped");
        assert!(images.read_at.is_none(), "read again for an unmapped address");
        let local = 0u64;
        let on_stack = std::ptr::from_ref(&local) as usize;
        images.maps.clear();
        assert_eq!(images.verdict(on_stack, true, NO_MEMORY, A_CALL), Verdict::Never, "read again");
        assert!(images.read_at.is_some());
        // Code the JIT compiled since: known without a reading.
        images.maps.clear();
        images.read_at = Some(std::time::Instant::now());
        let jitted = on_stack & !0xfff;
        compiled(&[(jitted, 0x1000)]);
        assert_eq!(images.verdict(on_stack, true, NO_MEMORY, A_CALL), Verdict::Ask, "compiled");
    }

    #[test]
    fn ready_to_run_code_is_asked_about_only_above_a_prepared_method() {
        let mut images = console(&[]);
        // The crash: an address in the image's metadata, and nothing prepared.
        assert_eq!(images.verdict(0x7f0000012100, true, NO_MEMORY, A_CALL), Verdict::Never);
        assert_eq!(images.verdict(0x7f0000000010, true, NO_MEMORY, A_CALL), Verdict::Never, "headers");
        assert_eq!(images.verdict(0x7f0000010010, true, NO_MEMORY, A_CALL), Verdict::NotYet);
        images.prepared(0x7f0000010800);
        assert_eq!(images.verdict(0x7f0000010010, true, NO_MEMORY, A_CALL), Verdict::NotYet, "below the prepared one");
        assert_eq!(images.verdict(0x7f0000010800, true, NO_MEMORY, NO_CALL), Verdict::Ask);
        assert_eq!(images.verdict(0x7f0000011000, true, NO_MEMORY, NO_CALL), Verdict::Ask);
        // Prepared code elsewhere (another image, the JIT's heaps) does not count.
        let mut others = console(&[0x7f0000040000, 0x55d0c0000000]);
        assert_eq!(others.verdict(0x7f0000011000, true, NO_MEMORY, NO_CALL), Verdict::NotYet);
    }

    #[test]
    fn an_image_split_into_many_mappings_is_found() {
        let mut maps =
            String::from("7f0000000000-7f0000001000 r--p 00000000 08:01 77 /opt/dotnet/System.Console.dll\n");
        for page in 0x10..0x30 {
            let perms = if page % 2 == 0 { "r-xp" } else { "rw-p" };
            maps += &format!(
                "7f00000{page:02x}000-7f00000{:02x}000 {perms} {:08x} 08:01 77 /opt/dotnet/System.Console.dll\n",
                page + 1,
                (page - 0x10) * 0x1000
            );
        }
        let mut images = Images { maps: parse_maps(&maps), ..Images::default() };
        let map = CodeMap::new(vec![(0x10000, 0x30000)], 0x30000);
        images.images.insert(0x7f0000000000, Some((0x7f0000030000, map)));
        images.prepared(0x7f0000010000);
        assert_eq!(images.verdict(0x7f000002f010, true, NO_MEMORY, NO_CALL), Verdict::Ask);
    }

    #[test]
    fn after_an_attach_a_return_address_counts_as_prepared() {
        let mut images = console(&[]);
        assert_eq!(images.verdict(0x7f0000010010, false, NO_MEMORY, A_CALL), Verdict::Ask);
        assert_eq!(images.verdict(0x7f0000010010, false, NO_MEMORY, NO_CALL), Verdict::NotYet);
        assert_eq!(images.verdict(0x7f0000012100, false, NO_MEMORY, A_CALL), Verdict::Never);
        // With every prepared method reported, a call before it proves nothing.
        assert_eq!(images.verdict(0x7f0000010010, true, NO_MEMORY, A_CALL), Verdict::NotYet);
    }
}
