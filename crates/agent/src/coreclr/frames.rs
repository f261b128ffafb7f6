//! Sampled stacks on CoreCLR: instruction pointers to methods (managed code through the runtime,
//! native code through the dynamic linker), and the x86-64 call decoding that tells an
//! on-stack-replacement transition (a call into the runtime) from recursion.

use super::info::{info, with_type_arguments};
use crate::sampling;
use crate::tree::methods::methods;
use sonde_clr::sys::FunctionID;

/// Resolves sampled instruction pointers to methods: managed code through the runtime, native
/// code through the dynamic linker's symbols, anything else as unknown code (stubs, JIT helpers).
#[derive(Default)]
pub(super) struct ClrFrames {
    /// Each sampled address's frame and IL offset (`lines::NONE`: none).
    cache: sampling::AddressMap<usize, (sampling::Frame, u32)>,
    /// The last address looked up and its answer: a managed frame's IL offset is asked for
    /// right after its frame (`sampling::paths`), without a second lookup.
    last: Option<(usize, (sampling::Frame, u32))>,
    runtime_calls: sampling::AddressMap<usize, bool>,
    /// The `[jit] …` frame of each function sampled while being compiled.
    compiling: sampling::AddressMap<usize, u32>,
    native: sampling::NativeNames,
    modules: ModuleFiles,
    /// The code versions sampled, by region start: an address inside one needs no question to
    /// the runtime.
    code: std::collections::BTreeMap<usize, std::sync::Arc<IlMap>>,
    /// Which addresses outside native libraries the runtime may be asked about.
    images: super::images::Images,
}

/// Methods whose precompiled code the runtime handed out since the drain last looked
/// (`JITCachedFunctionSearchFinished`, on the program's threads: a push, nothing else).
static PREPARED: std::sync::Mutex<Vec<FunctionID>> = std::sync::Mutex::new(Vec::new());

/// The runtime handed out `function`'s precompiled code (see [`super::images`]).
pub(super) fn prepared(function: FunctionID) {
    PREPARED.lock().unwrap_or_else(|e| e.into_inner()).push(function);
}

/// One code version sampled: its hot and cold regions, and how they map back to IL.
struct IlMap {
    /// `(start, end, offset of the region's first byte in the version's native offsets)`.
    regions: Vec<(usize, usize, u32)>,
    /// `(native start, native end, IL offset)`, by native start; special IL offsets as the
    /// runtime gives them (`NO_MAPPING`, `PROLOG`, `EPILOG`).
    entries: Vec<(u32, u32, u32)>,
}

impl IlMap {
    /// The IL offset of the code at `ip`, in one of the regions.
    fn il_offset_at(&self, ip: usize) -> Option<u32> {
        let &(start, _, base) = self.regions.iter().find(|&&(start, end, _)| start <= ip && ip < end)?;
        self.il_offset(base.checked_add(u32::try_from(ip - start).ok()?)?)
    }

    /// The IL offset of native offset `native`: the entry covering it, else the nearest before it
    /// (an epilogue, a gap the JIT left unmapped, belongs to the code before it); a prologue is
    /// the method's start.
    fn il_offset(&self, native: u32) -> Option<u32> {
        use sonde_clr::sys::{EPILOG, NO_MAPPING, PROLOG};
        let at = self.entries.partition_point(|&(start, _, _)| start <= native);
        let covering = self.entries[..at].iter().rev().find(|&&(_, end, _)| native < end);
        let entry = covering.or_else(|| self.entries[..at].last())?;
        match entry.2 {
            PROLOG => Some(0),
            NO_MAPPING | EPILOG => self.entries[..at]
                .iter()
                .rev()
                .map(|e| e.2)
                .find(|&il| il != NO_MAPPING && il != EPILOG && il != PROLOG),
            il => Some(il),
        }
    }
}

impl ClrFrames {
    fn managed(&mut self, function: FunctionID) -> u32 {
        if let Some(id) = methods().id_of(function) {
            return id;
        }
        match self.names(function) {
            Some(names) => methods().insert(function, names),
            None => methods().pseudo("[unnamed managed code]", "", ""),
        }
    }

    /// The names of `function`, with the type arguments of its instantiation.
    fn names(&mut self, function: FunctionID) -> Option<sonde_metadata::MethodNames> {
        let info = info()?;
        // From the module's file first; the runtime's metadata interface only for modules without
        // one (see `sonde_metadata::tables`: asking for it slows the runtime down).
        let from_file = self.modules.method_names(info, function);
        sampling::module_files::count(from_file.is_some());
        // Type arguments named from the argument types' modules' files too (the runtime only says
        // which classes they are); for methods the runtime's metadata interface named, by it.
        match from_file {
            // A generic class's method (an arity marker), or a generic method (its signature
            // names a method type parameter, `!!0`, in all but the rarest cases).
            Some(mut names) if names.name.contains('`') || names.signature.contains("!!") => {
                let modules = &mut self.modules;
                let mut namer = |module: usize, type_def: u32| modules.type_name(info, module, type_def);
                if let Ok((type_args, method_args)) = info.type_arguments_with(function, &mut namer) {
                    names.type_args = type_args;
                    names.method_args = method_args;
                }
                Some(names)
            }
            Some(names) => Some(names),
            None => info.method_names(function).ok().map(|n| with_type_arguments(n, function)),
        }
    }
}

/// The metadata of the modules whose methods were sampled, read from the files they were loaded
/// from (`sonde_metadata::tables`), by module.
#[derive(Default)]
struct ModuleFiles {
    modules: sampling::AddressMap<usize, Option<std::sync::Arc<ModuleFile>>>,
}

use sampling::module_files::ModuleFile;

impl ModuleFiles {
    /// A method's names from its module's file; `None` when the module has no readable file
    /// (dynamic, loaded from bytes, gone, damaged) or the method is not found there.
    fn method_names(
        &mut self,
        info: &sonde_clr::ProfilerInfo,
        function: FunctionID,
    ) -> Option<sonde_metadata::MethodNames> {
        let (_, module, token) = info.function_info(function).ok()?;
        self.file(info, module)?.method_names(token)
    }

    /// The name of TypeDef `type_def` of `module`, from the module's file.
    fn type_name(&mut self, info: &sonde_clr::ProfilerInfo, module: usize, type_def: u32) -> Option<String> {
        self.file(info, module)?.type_name(type_def)
    }

    fn file(&mut self, info: &sonde_clr::ProfilerInfo, module: usize) -> Option<&ModuleFile> {
        self.modules
            .entry(module)
            .or_insert_with(|| {
                let (path, assembly) = info.module_path_and_assembly(module).ok()?;
                ModuleFile::shared(&path, Some(assembly))
            })
            .as_deref()
    }
}

impl ClrFrames {
    /// The code version of `function` containing `ip`, asked of the runtime once per version:
    /// its regions and IL map, and its shape published on the way ([`learn_shape`](Self::learn_shape)).
    fn code(&mut self, function: FunctionID, ip: usize) -> Option<std::sync::Arc<IlMap>> {
        if let Some((_, code)) = self.code.range(..=ip).next_back()
            && code.regions.iter().any(|&(start, end, _)| start <= ip && ip < end)
        {
            return Some(code.clone());
        }
        let info = info()?;
        let regions = info.code_containing(function, ip)?;
        learn_shape(function, &regions);
        let mut entries = info.il_to_native_map(function, regions.first()?.0).unwrap_or_default();
        entries.sort_unstable_by_key(|e| e.0);
        // Native offsets run on from the hot region into the cold one.
        let mut base = 0u32;
        let regions: Vec<_> = regions
            .iter()
            .map(|&(start, size)| {
                let region = (start, start + size, base);
                base = base.saturating_add(size as u32);
                region
            })
            .collect();
        let code = std::sync::Arc::new(IlMap { regions, entries });
        for &(start, _, _) in &code.regions {
            self.code.insert(start, code.clone());
        }
        Some(code)
    }
}

impl ClrFrames {
    /// The frame of the code at `ip` and its IL offset (`lines::NONE` for none), once per
    /// address.
    fn resolved(&mut self, ip: usize) -> (sampling::Frame, u32) {
        if let Some((at, found)) = self.last
            && at == ip
        {
            return found;
        }
        let (found, kept) = self.looked_up(ip);
        self.last = kept.then_some((ip, found));
        found
    }

    /// [`resolved`](Self::resolved) from the cache, else asked; `false` when the answer is not
    /// to be remembered.
    fn looked_up(&mut self, ip: usize) -> ((sampling::Frame, u32), bool) {
        if let Some(&found) = self.cache.get(&ip) {
            return (found, true);
        }
        if self.cache.len() > 1 << 20 {
            self.cache.clear();
        }
        // Native code first: code in an object the dynamic linker loaded is never managed (the
        // runtime maps ReadyToRun images and places JIT code itself), and the runtime need not
        // be asked about the many native addresses of a JIT-heavy program's stacks.
        let unknown = || {
            (
                sampling::Frame { method: methods().pseudo("[unknown code]", "", ""), managed: false },
                sampling::lines::NONE,
            )
        };
        let found = if let Some(method) = self.native.frame(methods(), ip) {
            (sampling::Frame { method, managed: false }, sampling::lines::NONE)
        } else {
            match self.verdict(ip) {
                Verdict::Ask => match info().and_then(|info| info.function_from_ip(ip)) {
                    Some(function) => {
                        let code = self.code(function, ip);
                        if let Some(code) = &code {
                            self.images.prepared(code.regions[0].0);
                        }
                        let offset = code.and_then(|code| code.il_offset_at(ip));
                        let method = self.managed(function);
                        (sampling::Frame { method, managed: true }, offset.unwrap_or(sampling::lines::NONE))
                    }
                    None => unknown(),
                },
                Verdict::Never => {
                    sampling::module_files::count_unasked(false);
                    unknown()
                }
                // Not remembered: asked again at its next sample, when more is known.
                Verdict::NotYet => {
                    sampling::module_files::count_unasked(true);
                    return (unknown(), false);
                }
            }
        };
        self.cache.insert(ip, found);
        (found, true)
    }

    /// Whether the runtime may be asked about `ip` (`super::images`), learning first what the
    /// runtime prepared since the last look when that could change the answer.
    fn verdict(&mut self, ip: usize) -> Verdict {
        let complete = super::images::complete();
        let read = |at: usize, buf: &mut [u8]| read_memory(at, buf).is_some();
        let follows_call = |return_address: usize| {
            let mut code = [0u8; 7];
            return_address.checked_sub(7).and_then(|at| read_memory(at, &mut code)).is_some()
                && sampling::shapes::ends_with_call(&code)
        };
        let verdict = self.images.verdict(ip, complete, &read, &follows_call);
        let pending = {
            let mut queue = PREPARED.lock().unwrap_or_else(|e| e.into_inner());
            // (Taken in now and then too, so that the list stays small.)
            let wanted = verdict == Verdict::NotYet || queue.len() >= super::images::QUEUE_BOUND;
            if wanted { std::mem::take(&mut *queue) } else { Vec::new() }
        };
        if pending.is_empty() {
            return verdict;
        }
        let Some(info) = info() else { return verdict };
        sampling::module_files::count_prepared_looked_up(pending.len());
        for function in pending {
            for start in info.code_version_starts(function) {
                self.images.prepared(start);
            }
        }
        if verdict != Verdict::NotYet {
            return verdict;
        }
        self.images.verdict(ip, complete, &read, &follows_call)
    }
}

use super::images::Verdict;

impl sampling::FrameResolver for ClrFrames {
    fn resolve(&mut self, ip: usize) -> sampling::Frame {
        self.resolved(ip).0
    }

    fn il_offset(&mut self, ip: usize) -> Option<u32> {
        Some(self.resolved(ip).1).filter(|&offset| offset != sampling::lines::NONE)
    }

    fn calls_runtime(&mut self, return_address: usize) -> bool {
        if let Some(&answer) = self.runtime_calls.get(&return_address) {
            return answer;
        }
        let answer = calls_runtime(return_address);
        self.runtime_calls.insert(return_address, answer);
        answer
    }

    fn function(&mut self, function: usize) -> Option<u32> {
        (function != 0).then(|| self.managed(function))
    }

    fn truncated(&mut self) -> u32 {
        // (a marker, not a method: see `sampling::Frame::managed`)
        methods().pseudo("[truncated stack]", "", "")
    }

    /// Named as the method would be (`JITCompilationStarted`'s function: a method with
    /// metadata, or a dynamic method or IL stub, which has none to name it by).
    fn compiling(&mut self, function: usize) -> u32 {
        if let Some(&method) = self.compiling.get(&function) {
            return method;
        }
        let method = match self.names(function) {
            Some(names) => methods().compiling(function, names),
            None => sampling::work::unnamed_compilation(),
        };
        self.compiling.insert(function, method);
        method
    }
}

/// Code versions whose shape was looked at, by entry address: by the drain at their first sample,
/// or (OSR code) when the JIT finished them ([`learn_osr`]).
static LOOKED_AT: std::sync::Mutex<Option<std::collections::HashSet<usize>>> = std::sync::Mutex::new(None);
static TABLE_FULL: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The JIT finished code for `function` (on the compiling thread): an on-stack-replacement
/// version's shape is published now, before it runs — learnt at its first sample instead, the
/// samples taken meanwhile (up to a drain period's) were walked by the chain alone, which skips
/// the method's caller.
///
/// A method's first compilation, seen from start-up, cannot be one (an OSR version continues
/// the method's tier-0 code): it costs the compiling thread a set insert and a push only, its
/// code is looked up by the drain if ever needed (`images::first_compilation`). The runtime is
/// asked for the versions, and their code read, at a method's later compilations (tier 1, OSR),
/// and after an attach, where earlier compilations were not seen.
pub(super) fn learn_osr(function: FunctionID) {
    if super::images::complete() && super::images::first_compilation(function) {
        return;
    }
    let Some(info) = info() else { return };
    for regions in info.code_versions(function) {
        super::images::compiled(&regions);
        let Some(&(entry, _)) = regions.first() else { continue };
        let mut start = [0u8; 8];
        if read_memory(entry, &mut start).is_some() && sampling::shapes::starts_osr(&start) {
            learn_shape(function, &regions);
            // This thread compiles the OSR version at the patchpoint it reached: its stack holds
            // the original frame, which the kernel's chain skips (`sampling::kernel`).
            sampling::kernel::learn_from_this_thread();
        }
    }
}

/// Publishes the shape of a code version (its `(start, size)` regions, the entry first) for
/// the sampling handler, once, when its frames are not what the frame-pointer chain assumes:
/// frameless code, or an on-stack-replacement method (and then the return sites of the
/// patchpoints in the method's other versions: see `sampling::shapes`). Samples taken before it
/// is known were walked by the chain alone.
fn learn_shape(function: FunctionID, regions: &[(usize, usize)]) {
    use sampling::shapes::{self, SHAPES, Shape};
    use std::sync::atomic::Ordering::Relaxed;
    if TABLE_FULL.load(Relaxed) {
        return;
    }
    let Some(&(entry, size)) = regions.first() else { return };
    if !LOOKED_AT.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert_with(Default::default).insert(entry) {
        return;
    }
    // The prologue tells frameless code; an OSR method's epilogue is anywhere in its code,
    // which is then read whole (bounded).
    let mut code = vec![0u8; size.min(64)];
    if read_memory(entry, &mut code).is_none() {
        return;
    }
    let shape = if shapes::starts_osr(&code) {
        code.resize(size.min(1 << 16), 0);
        if read_memory(entry, &mut code).is_none() {
            return;
        }
        match shapes::osr_frame(&code) {
            Some((ret, rbp)) => Shape::Osr { ret, rbp },
            None => return,
        }
    } else {
        match shapes::frameless_size(&code) {
            Some(size) => Shape::Frameless(size),
            None => return,
        }
    };
    let mut ranges: Vec<(usize, usize, Shape)> =
        regions.iter().map(|&(start, size)| (start, start + size, shape)).collect();
    if let Shape::Osr { ret, .. } = shape {
        ranges.extend(patchpoint_sites(function).into_iter().map(|r| (r - 1, r, Shape::Patchpoint(ret))));
    }
    for (start, end, shape) in ranges {
        if !SHAPES.insert(start, end, shape) {
            TABLE_FULL.store(true, Relaxed);
            crate::base::log::log!(
                "sampling: the table of frameless and OSR code is full; later ones are walked by the frame-pointer chain"
            );
            return;
        }
    }
}

/// The return sites of the patchpoint calls in `function`'s other code versions (its tier-0
/// code), calls into the runtime only: where a walk that read an OSR method's pseudo return
/// address arrives (`sampling::shapes::Shape::Patchpoint`).
fn patchpoint_sites(function: FunctionID) -> Vec<usize> {
    use sampling::shapes;
    let Some(info) = info() else { return Vec::new() };
    let mut sites = Vec::new();
    for regions in info.code_versions(function) {
        let Some(&(entry, size)) = regions.first() else { continue };
        let mut code = vec![0u8; size.min(1 << 16)];
        if read_memory(entry, &mut code).is_none() || shapes::starts_osr(&code) {
            continue;
        }
        for at in shapes::patchpoint_returns(&code) {
            let site = entry + at;
            if calls_runtime(site) {
                sites.push(site);
            }
        }
    }
    sites
}

/// Whether the call that returns to `return_address` is a call into `libcoreclr.so`.
fn calls_runtime(return_address: usize) -> bool {
    call_target(return_address)
        .and_then(sampling::native_symbol)
        .is_some_and(|(library, _, _)| library == "libcoreclr.so")
}

/// The target of the call instruction that ends just before `return_address`, for the forms
/// the JIT emits: `call rel32`, `call [rip+disp32]`, `mov rax, imm64; call rax`.
fn call_target(return_address: usize) -> Option<usize> {
    let mut code = [0u8; 12];
    let start = return_address.checked_sub(code.len())?;
    read_memory(start, &mut code)?;
    let rel32 = |b: &[u8]| i32::from_le_bytes([b[0], b[1], b[2], b[3]]) as isize;
    if code[7] == 0xE8 {
        return Some(return_address.wrapping_add_signed(rel32(&code[8..12])));
    }
    if code[6] == 0xFF && code[7] == 0x15 {
        let cell = return_address.wrapping_add_signed(rel32(&code[8..12]));
        let mut target = [0u8; 8];
        read_memory(cell, &mut target)?;
        return Some(usize::from_le_bytes(target));
    }
    if code[0] == 0x48 && code[1] == 0xB8 && code[10] == 0xFF && code[11] == 0xD0 {
        return Some(usize::from_le_bytes(code[2..10].try_into().ok()?));
    }
    None
}

/// Reads this process's memory without risking a fault (the address may be anything):
/// `process_vm_readv` reports unmapped memory as an error instead.
fn read_memory(address: usize, buf: &mut [u8]) -> Option<()> {
    let local = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() };
    let remote = libc::iovec { iov_base: address as *mut libc::c_void, iov_len: buf.len() };
    // SAFETY: writes at most `buf.len()` bytes into `buf`; the remote range is only read, by the
    // kernel, which fails cleanly on unmapped memory.
    let read = unsafe { libc::process_vm_readv(libc::getpid(), &local, 1, &remote, 1, 0) };
    (read == buf.len() as isize).then_some(())
}
