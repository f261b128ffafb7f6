//! `ICorProfilerInfo*`: what the profiler may ask of the runtime.

use crate::hresult::HResult;
use crate::metadata;
use sonde_clr_sys::*;
use sonde_metadata::MethodNames;
use std::ffi::c_void;
use std::ptr::{NonNull, null_mut};

/// The runtime's `ICorProfilerInfo` interface, at the highest version it offers (3 at least).
///
/// The runtime documents these interfaces as free-threaded: any thread may call them, which is
/// why the wrapper is `Send + Sync`.
pub struct ProfilerInfo {
    ptr: NonNull<ICorProfilerInfo14>,
    /// The highest `ICorProfilerInfoN` the runtime handed out; slots beyond it are never called.
    pub version: u32,
}

// SAFETY: ICorProfilerInfo is free-threaded (CoreCLR's profiling design doc: "all of the
// ICorProfilerInfo methods may be called from any thread"), and the pointer stays valid until the
// runtime unloads the profiler, which outlives every caller (it only happens at process exit).
unsafe impl Send for ProfilerInfo {}
unsafe impl Sync for ProfilerInfo {}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimeInfo {
    /// `COR_PRF_CORE_CLR` or `COR_PRF_DESKTOP_CLR`.
    pub runtime_type: u32,
    pub major: u16,
    pub minor: u16,
    pub build: u16,
    pub qfe: u16,
}

macro_rules! call {
    ($self:ident . $method:ident ( $($arg:expr),* )) => {{
        // SAFETY: `ptr` is a live ICorProfilerInfo whose vtable has this slot (callers check
        // `version` for slots newer than ICorProfilerInfo3); the arguments follow corprof.idl.
        let hr = unsafe { ((*(*$self.ptr.as_ptr()).vtbl).$method)($self.ptr.as_ptr() $(, $arg)*) };
        HResult::check(hr)
    }};
}

/// Every id a runtime enumerator (`ICorProfilerThreadEnum`, `ICorProfilerModuleEnum`) gives, in
/// batches of 64, then its reference released: `Ok(Vec<$id>)`, or `E_POINTER` for a null one.
macro_rules! drain_ids {
    ($enumerator:ident, $id:ty) => {{
        let enumerator = NonNull::new($enumerator).ok_or(HResult(E_POINTER))?;
        let mut ids = Vec::new();
        let mut batch = [0 as $id; 64];
        loop {
            let mut fetched: ULONG = 0;
            // SAFETY: a live enumerator the runtime just handed us; `Next` writes at most `celt`
            // ids into `batch` and the count into `fetched`.
            let hr = unsafe {
                ((*(*enumerator.as_ptr()).vtbl).Next)(
                    enumerator.as_ptr(),
                    batch.len() as ULONG,
                    batch.as_mut_ptr(),
                    &mut fetched,
                )
            };
            ids.extend_from_slice(&batch[..(fetched as usize).min(batch.len())]);
            if hr != S_OK || fetched == 0 {
                break;
            }
        }
        // SAFETY: releases the one reference the enumerating call gave us.
        unsafe { ((*(*enumerator.as_ptr()).vtbl).Release)(enumerator.as_ptr()) };
        Ok(ids)
    }};
}

impl ProfilerInfo {
    /// Queries the runtime's IUnknown (given to `ICorProfilerCallback::Initialize`) for the
    /// highest ICorProfilerInfo version it supports.
    ///
    /// # Safety
    /// `unknown` must be the live interface pointer the runtime passed to `Initialize`.
    pub unsafe fn from_unknown(unknown: *mut IUnknown) -> Result<ProfilerInfo, HResult> {
        let unknown = NonNull::new(unknown).ok_or(HResult(E_POINTER))?;
        let versions: [(u32, &GUID); 12] = [
            (14, &IID_ICorProfilerInfo14),
            (13, &IID_ICorProfilerInfo13),
            (12, &IID_ICorProfilerInfo12),
            (11, &IID_ICorProfilerInfo11),
            (10, &IID_ICorProfilerInfo10),
            (9, &IID_ICorProfilerInfo9),
            (8, &IID_ICorProfilerInfo8),
            (7, &IID_ICorProfilerInfo7),
            (6, &IID_ICorProfilerInfo6),
            (5, &IID_ICorProfilerInfo5),
            (4, &IID_ICorProfilerInfo4),
            (3, &IID_ICorProfilerInfo3),
        ];
        for (version, iid) in versions {
            let mut out: *mut c_void = null_mut();
            // SAFETY: `unknown` is live (caller contract); QueryInterface writes `out` and AddRefs
            // it on success. We keep that reference for the life of the process.
            let hr = unsafe { ((*(*unknown.as_ptr()).vtbl).QueryInterface)(unknown.as_ptr(), iid, &mut out) };
            if let Some(ptr) = NonNull::new(out.cast::<ICorProfilerInfo14>()).filter(|_| hr >= 0) {
                return Ok(ProfilerInfo { ptr, version });
            }
        }
        Err(HResult(E_NOINTERFACE))
    }

    pub fn set_event_mask(&self, low: u32, high: u32) -> Result<(), HResult> {
        if self.version >= 5 { call!(self.SetEventMask2(low, high)) } else { call!(self.SetEventMask(low)) }
    }

    /// Registers the fast enter/leave/tailcall hooks (`SetEnterLeaveFunctionHooks3`) or, when
    /// `with_info`, the `...WithInfo` variants.
    ///
    /// # Safety
    /// The addresses must be functions that follow the runtime's hook convention for this
    /// architecture (fast hooks: the JIT's custom register convention; WithInfo hooks: the C ABI
    /// with `(FunctionIDOrClientID, COR_PRF_ELT_INFO)`), and stay valid for the process lifetime.
    pub unsafe fn set_enter_leave_hooks(
        &self,
        enter: usize,
        leave: usize,
        tailcall: usize,
        with_info: bool,
    ) -> Result<(), HResult> {
        if with_info {
            // SAFETY: the caller guarantees these are WithInfo hooks (C ABI, two arguments).
            let (e, l, t) = unsafe {
                (
                    std::mem::transmute::<usize, FunctionEnter3WithInfo>(enter),
                    std::mem::transmute::<usize, FunctionLeave3WithInfo>(leave),
                    std::mem::transmute::<usize, FunctionTailcall3WithInfo>(tailcall),
                )
            };
            call!(self.SetEnterLeaveFunctionHooks3WithInfo(Some(e), Some(l), Some(t)))
        } else {
            // SAFETY: the caller guarantees these follow the fast-hook convention; the runtime
            // only stores the addresses and has JIT-ed code call them.
            let (e, l, t) = unsafe {
                (
                    std::mem::transmute::<usize, FunctionEnter3>(enter),
                    std::mem::transmute::<usize, FunctionLeave3>(leave),
                    std::mem::transmute::<usize, FunctionTailcall3>(tailcall),
                )
            };
            call!(self.SetEnterLeaveFunctionHooks3(Some(e), Some(l), Some(t)))
        }
    }

    /// Registers the function-ID mapper: `map` decides, once per function, whether it gets
    /// enter/leave hooks (`Some(client_id)`, the value the hooks then receive) or not (`None`).
    /// Only the first mapper registered in a process is used.
    pub fn set_function_mapper(&self, map: fn(FunctionID) -> Option<usize>) -> Result<(), HResult> {
        let _ = MAPPER.set(map);
        call!(self.SetFunctionIDMapper2(Some(map_function), null_mut()))
    }

    pub fn current_thread_id(&self) -> Result<ThreadID, HResult> {
        let mut id: ThreadID = 0;
        call!(self.GetCurrentThreadID(&mut id))?;
        Ok(id)
    }

    /// The managed function whose code contains `ip`, if any (`None` for native code and stubs).
    pub fn function_from_ip(&self, ip: usize) -> Option<FunctionID> {
        let mut function: FunctionID = 0;
        call!(self.GetFunctionFromIP(ip as LPCBYTE, &mut function)).ok()?;
        (function != 0).then_some(function)
    }

    /// The code of `function` that contains `ip`, as `(start, size)` regions, the method's entry
    /// first (hot and cold parts): its current code (`GetCodeInfo2`), else any of its other
    /// native code versions (tiers: `GetNativeCodeStartAddresses` + `GetCodeInfo4`).
    pub fn code_containing(&self, function: FunctionID, ip: usize) -> Option<Vec<(usize, usize)>> {
        let contains =
            |regions: &[(usize, usize)]| regions.iter().any(|&(start, size)| start <= ip && ip - start < size);
        let current = self.code_regions(|cap, len, out| call!(self.GetCodeInfo2(function, cap, len, out)));
        if current.as_deref().is_some_and(contains) {
            return current;
        }
        // (A method has a handful of versions: tier 0, tier 1, an OSR version, a ReJIT or two.)
        self.code_versions(function).into_iter().find(|regions| contains(regions))
    }

    /// The code regions of each native code version of `function` (tier 0, tier 1, OSR
    /// versions, ReJITs: `GetNativeCodeStartAddresses`, ICorProfilerInfo9), at most 16.
    pub fn code_versions(&self, function: FunctionID) -> Vec<Vec<(usize, usize)>> {
        if self.version < 9 {
            return Vec::new();
        }
        self.code_version_starts(function)
            .into_iter()
            .filter_map(|start| self.code_regions(|cap, len, out| call!(self.GetCodeInfo4(start, cap, len, out))))
            .collect()
    }

    /// The entry address of each native code version of `function` (at most 16,
    /// `GetNativeCodeStartAddresses`, ICorProfilerInfo9; before it, its current code's,
    /// `GetCodeInfo2`): its precompiled (ReadyToRun) code among them once the runtime handed that
    /// out, even after a tier replaced it.
    pub fn code_version_starts(&self, function: FunctionID) -> Vec<usize> {
        if self.version < 9 {
            let current = self.code_regions(|cap, len, out| call!(self.GetCodeInfo2(function, cap, len, out)));
            return current.and_then(|regions| regions.first().map(|&(start, _)| start)).into_iter().collect();
        }
        let mut starts: [UINT_PTR; 16] = [0; 16];
        let mut count: ULONG32 = 0;
        if call!(self.GetNativeCodeStartAddresses(function, 0, 16, &mut count, starts.as_mut_ptr())).is_err() {
            return Vec::new();
        }
        starts[..(count as usize).min(16)].to_vec()
    }

    /// How the native code starting at `start` (a version of `function`, from
    /// [`code_containing`](Self::code_containing)) maps back to IL: `(native start offset, native
    /// end offset, IL offset or one of `NO_MAPPING`/`PROLOG`/`EPILOG`)`, as the JIT recorded it.
    /// Offsets are from `start`. `GetILToNativeMapping3` names the code version; before
    /// ICorProfilerInfo9, `GetILToNativeMapping` gives the function's current code.
    pub fn il_to_native_map(&self, function: FunctionID, start: usize) -> Option<Vec<(u32, u32, u32)>> {
        let get = |cap: ULONG32, len: *mut ULONG32, out: *mut COR_DEBUG_IL_TO_NATIVE_MAP| {
            if self.version >= 9 {
                call!(self.GetILToNativeMapping3(start, cap, len, out))
            } else {
                call!(self.GetILToNativeMapping(function, cap, len, out))
            }
        };
        // One call for most methods (the drain asks for each code version it samples); a map
        // that may not have fit is asked for again: its length, then whole.
        // (A method's map has an entry per IL offset the JIT tracked: bounded by its IL size.)
        const FIRST: ULONG32 = 256;
        let empty = COR_DEBUG_IL_TO_NATIVE_MAP { ilOffset: 0, nativeStartOffset: 0, nativeEndOffset: 0 };
        let mut map = vec![empty; FIRST as usize];
        let mut len: ULONG32 = 0;
        get(FIRST, &mut len, map.as_mut_ptr()).ok()?;
        if len >= FIRST {
            get(0, &mut len, null_mut()).ok()?;
            let cap = len.min(1 << 20);
            map.resize(cap as usize, empty);
            get(cap, &mut len, map.as_mut_ptr()).ok()?;
        }
        map.truncate((len as usize).min(map.len()));
        Some(map.iter().map(|m| (m.nativeStartOffset, m.nativeEndOffset, m.ilOffset)).collect())
    }

    /// The regions a `GetCodeInfo*` method reports (a method's code has one or two: hot, cold).
    fn code_regions(
        &self,
        get: impl Fn(ULONG32, *mut ULONG32, *mut COR_PRF_CODE_INFO) -> Result<(), HResult>,
    ) -> Option<Vec<(usize, usize)>> {
        let mut infos = [COR_PRF_CODE_INFO { startAddress: 0, size: 0 }; 4];
        let mut count: ULONG32 = 0;
        get(4, &mut count, infos.as_mut_ptr()).ok()?;
        let regions: Vec<_> = infos[..(count as usize).min(4)].iter().map(|i| (i.startAddress, i.size)).collect();
        (!regions.is_empty()).then_some(regions)
    }

    /// The OS thread id of a managed thread.
    pub fn os_thread_id(&self, thread: ThreadID) -> Result<u32, HResult> {
        let mut tid: DWORD = 0;
        call!(self.GetThreadInfo(thread, &mut tid))?;
        Ok(tid)
    }

    /// Every managed thread the runtime knows now (`EnumThreads`, ICorProfilerInfo4): after an
    /// attach, the threads that started before it.
    pub fn threads(&self) -> Result<Vec<ThreadID>, HResult> {
        if self.version < 4 {
            return Err(HResult(E_NOTIMPL));
        }
        let mut threads: *mut ICorProfilerThreadEnum = null_mut();
        call!(self.EnumThreads(&mut threads))?;
        drain_ids!(threads, ThreadID)
    }

    /// Every managed thread's stack as the runtime itself walks it, at one instant: the runtime
    /// is suspended (`SuspendRuntime`, ICorProfilerInfo10: as for a GC, each thread stops at a
    /// safe point or stays in the native code it is in), each thread enumerated then walked
    /// (`DoStackSnapshot`, which walks other threads on Linux only while the runtime is
    /// suspended), and the runtime resumed, whatever happened. Frames innermost first, at most
    /// `max_frames` each; a thread the runtime cannot walk gets its error. Not from a callback,
    /// nor from a managed thread: the calling thread is first made known to the runtime
    /// (`InitializeCurrentThread`) so that the suspension cannot wait on it.
    pub fn walk_all_threads(&self, max_frames: usize) -> Result<Vec<ThreadWalk>, HResult> {
        if self.version < 10 {
            return Err(HResult(E_NOTIMPL));
        }
        call!(self.InitializeCurrentThread())?;
        call!(self.SuspendRuntime())?;
        let walks = self.threads().map(|threads| {
            threads
                .into_iter()
                .map(|thread| {
                    let mut frames: Vec<WalkFrame> = Vec::with_capacity(max_frames);
                    // SAFETY: `walk_frame` matches StackSnapshotCallback and only pushes into the
                    // vector behind `clientData`, which outlives the call (the runtime calls it
                    // synchronously, on this thread); no register context is passed in.
                    let walked = call!(self.DoStackSnapshot(
                        thread,
                        Some(walk_frame),
                        COR_PRF_SNAPSHOT_DEFAULT,
                        (&mut frames as *mut Vec<WalkFrame>).cast(),
                        std::ptr::null(),
                        0
                    ));
                    ThreadWalk { thread, frames, walked }
                })
                .collect()
        });
        let resumed = call!(self.ResumeRuntime());
        let walks = walks?;
        resumed?;
        Ok(walks)
    }

    /// Asks the runtime to detach the profiler (`RequestProfilerDetach`, ICorProfilerInfo3): once
    /// no callback is running, after about `expected_ms`, it calls `ProfilerDetachSucceeded` and
    /// releases the profiler. Not from inside a callback. The profiler must have stopped
    /// everything of its own first: its threads, its signal sources.
    pub fn request_detach(&self, expected_ms: u32) -> Result<(), HResult> {
        call!(self.RequestProfilerDetach(expected_ms))
    }

    pub fn runtime_information(&self) -> Result<RuntimeInfo, HResult> {
        let (mut instance, mut runtime_type) = (0u16, 0 as COR_PRF_RUNTIME_TYPE);
        let (mut major, mut minor, mut build, mut qfe) = (0u16, 0u16, 0u16, 0u16);
        let mut len: ULONG = 0;
        call!(self.GetRuntimeInformation(
            &mut instance,
            &mut runtime_type,
            &mut major,
            &mut minor,
            &mut build,
            &mut qfe,
            0,
            &mut len,
            null_mut()
        ))?;
        Ok(RuntimeInfo { runtime_type, major, minor, build, qfe })
    }

    /// Names a function: its method, declaring type (nested types resolved), signature, module and
    /// assembly.
    pub fn method_names(&self, function: FunctionID) -> Result<MethodNames, HResult> {
        let (_, module, token) = self.function_info(function)?;
        let mut import: *mut IUnknown = null_mut();
        let mut token2 = 0u32;
        call!(self.GetTokenAndMetaDataFromFunction(function, &IID_IMetaDataImport, &mut import, &mut token2))?;
        let import = metadata::Import::new(import.cast()).ok_or(HResult(E_POINTER))?;
        let (name, signature) = import.method_name_and_signature(token)?;
        let (path, assembly) = self.module_path_and_assembly(module)?;
        let module = sonde_metadata::module_file_name(&path);
        Ok(MethodNames { name, signature, assembly, module, path, token, ..Default::default() })
    }

    /// A full, blocking collection (`ForceGC`). Only from a thread that never ran managed code
    /// and is not inside a callback (one of the profiler's own); the collection runs before it
    /// returns, its GC events (and an EventPipe heap walk, when a session asks for one) on the
    /// collecting threads.
    pub fn force_gc(&self) -> Result<(), HResult> {
        call!(self.ForceGC())?;
        Ok(())
    }

    /// The class of an object the runtime passed to the running callback.
    pub fn class_of_object(&self, object: ObjectID) -> Result<ClassID, HResult> {
        let mut class: ClassID = 0;
        call!(self.GetClassFromObject(object, &mut class))?;
        Ok(class)
    }

    /// The size in bytes of an object the runtime passed to the running callback
    /// (`GetObjectSize2`, `ICorProfilerInfo4`).
    pub fn object_size(&self, object: ObjectID) -> Result<u64, HResult> {
        if self.version < 4 {
            return Err(HResult(E_NOTIMPL));
        }
        let mut size: SIZE_T = 0;
        call!(self.GetObjectSize2(object, &mut size))?;
        Ok(size as u64)
    }

    /// A type's name as the runtime's own events spell it: `Namespace.Outer+Inner`, arrays by
    /// their element type (`System.Byte[]`, `Acme.Point[,]`, `System.String[][]`).
    pub fn type_name(&self, class: ClassID) -> Result<String, HResult> {
        self.type_name_with(class, &mut |module, type_def| self.runtime_type_def_name(module, type_def))
    }

    /// [`type_name`](Self::type_name), each TypeDef named by `namer` (module, token): the
    /// sampler names them from the modules' files instead of asking the runtime.
    pub fn type_name_with(&self, class: ClassID, namer: &mut TypeDefNamer<'_>) -> Result<String, HResult> {
        let (mut element, mut element_class, mut rank) = (0 as CorElementType, 0 as ClassID, 0 as ULONG);
        // SAFETY: as `call!`; IsArrayClass answers S_OK for an array class, S_FALSE otherwise.
        let hr = unsafe {
            ((*(*self.ptr.as_ptr()).vtbl).IsArrayClass)(
                self.ptr.as_ptr(),
                class,
                &mut element,
                &mut element_class,
                &mut rank,
            )
        };
        HResult::check(hr)?;
        if hr != S_OK {
            return self.class_name_with(class, namer);
        }
        let inner = match primitive_name(element) {
            Some(name) => name.to_string(),
            None if element_class != 0 => self.type_name_with(element_class, namer)?,
            None => return Err(HResult(E_FAIL)),
        };
        let commas = ",".repeat((rank as usize).saturating_sub(1).min(31));
        Ok(format!("{inner}[{commas}]"))
    }

    /// A class's name, `Namespace.Outer+Inner` (a generic instantiation by its definition's name,
    /// ``Acme.Box`1``). Fails for classes without a TypeDef (arrays, pointers).
    pub fn class_name(&self, class: ClassID) -> Result<String, HResult> {
        self.class_name_with(class, &mut |module, type_def| self.runtime_type_def_name(module, type_def))
    }

    fn class_name_with(&self, class: ClassID, namer: &mut TypeDefNamer<'_>) -> Result<String, HResult> {
        let (mut module, mut type_def, mut parent, mut type_args) = (0usize, 0u32, 0usize, 0u32);
        call!(self.GetClassIDInfo2(class, &mut module, &mut type_def, &mut parent, 0, &mut type_args, null_mut()))?;
        if type_def == 0 {
            return Err(HResult(E_FAIL));
        }
        namer(module, type_def).ok_or(HResult(E_FAIL))
    }

    /// `GetModuleMetaData`: one reference to interface `iid` of `module`'s metadata in `out`.
    pub(crate) fn module_metadata(
        &self,
        module: ModuleID,
        flags: DWORD,
        iid: &GUID,
        out: &mut *mut IUnknown,
    ) -> Result<(), HResult> {
        call!(self.GetModuleMetaData(module, flags, iid, out))
    }

    /// A TypeDef's name through the module's metadata interface (`GetModuleMetaData`: see
    /// `sonde_metadata::tables` for what asking for it costs).
    fn runtime_type_def_name(&self, module: ModuleID, type_def: u32) -> Option<String> {
        let mut import: *mut IUnknown = null_mut();
        call!(self.GetModuleMetaData(module, ofRead, &IID_IMetaDataImport, &mut import)).ok()?;
        let import = metadata::Import::new(import.cast())?;
        import.type_def_name(type_def).ok()
    }

    /// Starts the profiler's own EventPipe session (`ICorProfilerInfo12`, .NET 5 and later):
    /// providers by name, each `(name, keywords, level)` (level 0 critical … 5 verbose). Its events
    /// reach [`crate::ProfilerCallback::event_pipe_event`] on the threads that write them; the
    /// event mask must hold `COR_PRF_HIGH_MONITOR_EVENT_PIPE`. No rundown (stopping would run it
    /// on the stopping thread).
    pub fn event_pipe_start_session(&self, providers: &[(&str, u64, u32)]) -> Result<u64, HResult> {
        if self.version < 12 {
            return Err(HResult(E_NOTIMPL));
        }
        let names: Vec<Vec<u16>> = providers.iter().map(|(name, _, _)| wide(name)).collect();
        let configs: Vec<COR_PRF_EVENTPIPE_PROVIDER_CONFIG> = providers
            .iter()
            .zip(&names)
            .map(|(&(_, keywords, level), name)| COR_PRF_EVENTPIPE_PROVIDER_CONFIG {
                providerName: name.as_ptr(),
                keywords,
                loggingLevel: level,
                filterData: std::ptr::null(),
            })
            .collect();
        let mut session: EVENTPIPE_SESSION = 0;
        call!(self.EventPipeStartSession(configs.len() as UINT32, configs.as_ptr(), 0, &mut session))?;
        Ok(session)
    }

    /// Stops an EventPipe session [`event_pipe_start_session`](Self::event_pipe_start_session)
    /// started (`EventPipeStopSession`): no more of its events are delivered.
    pub fn event_pipe_stop_session(&self, session: u64) -> Result<(), HResult> {
        if self.version < 12 {
            return Err(HResult(E_NOTIMPL));
        }
        call!(self.EventPipeStopSession(session))?;
        Ok(())
    }

    /// The name of an EventPipe provider (`EventPipeGetProviderInfo`): tells the providers of
    /// [`crate::EventPipeEvent::provider`] apart.
    pub fn event_pipe_provider_name(&self, provider: EVENTPIPE_PROVIDER) -> Result<String, HResult> {
        if self.version < 12 {
            return Err(HResult(E_NOTIMPL));
        }
        let mut name = [0u16; 128];
        let mut len: ULONG = 0;
        call!(self.EventPipeGetProviderInfo(provider, name.len() as ULONG, &mut len, name.as_mut_ptr()))?;
        let len = (len as usize).min(name.len());
        let units = &name[..len];
        let units = units.split(|&u| u == 0).next().unwrap_or_default();
        Ok(String::from_utf16_lossy(units))
    }

    /// The bytes the managed heap's generations hold (`GetGenerationBounds`: the sum of the
    /// ranges' lengths). Consistent during a garbage-collection callback.
    pub fn heap_bytes(&self) -> Result<u64, HResult> {
        let mut count: ULONG = 0;
        call!(self.GetGenerationBounds(0, &mut count, null_mut()))?;
        let mut ranges: Vec<COR_PRF_GC_GENERATION_RANGE> = Vec::with_capacity(count as usize + 16);
        let mut written: ULONG = 0;
        let capacity = ranges.capacity() as ULONG;
        call!(self.GetGenerationBounds(capacity, &mut written, ranges.as_mut_ptr()))?;
        // SAFETY: the runtime wrote `written` ranges (at most `capacity`) into the buffer.
        unsafe { ranges.set_len(written.min(capacity) as usize) };
        Ok(ranges.iter().map(|r| r.rangeLength as u64).sum())
    }

    /// A function's class, module and MethodDef token (`GetFunctionInfo`). Asks for no metadata
    /// interface (see `sonde_metadata::tables`).
    pub fn function_info(&self, function: FunctionID) -> Result<(ClassID, ModuleID, u32), HResult> {
        let (mut class, mut module, mut token) = (0usize, 0usize, 0u32);
        call!(self.GetFunctionInfo(function, &mut class, &mut module, &mut token))?;
        Ok((class, module, token))
    }

    /// The type arguments of a function that instantiates generic code, named as [`type_name`]
    /// names them (`System.__Canon` for code shared by reference types): its class's, outermost
    /// type first, and its own. Both empty for a function that is not generic.
    ///
    /// [`type_name`]: Self::type_name
    pub fn type_arguments(&self, function: FunctionID) -> Result<(Vec<String>, Vec<String>), HResult> {
        self.type_arguments_with(function, &mut |module, type_def| self.runtime_type_def_name(module, type_def))
    }

    /// [`type_arguments`](Self::type_arguments), each TypeDef named by `namer`.
    pub fn type_arguments_with(
        &self,
        function: FunctionID,
        namer: &mut TypeDefNamer<'_>,
    ) -> Result<(Vec<String>, Vec<String>), HResult> {
        /// More would be a damaged answer: C# allows far fewer in practice.
        const MAX_ARGS: u32 = 64;
        let (mut class, mut module, mut token, mut count) = (0usize, 0usize, 0u32, 0u32);
        call!(self.GetFunctionInfo2(function, 0, &mut class, &mut module, &mut token, 0, &mut count, null_mut()))?;
        let mut own = vec![0 as ClassID; count.min(MAX_ARGS) as usize];
        if !own.is_empty() {
            let capacity = own.len() as u32;
            call!(self.GetFunctionInfo2(
                function,
                0,
                &mut class,
                &mut module,
                &mut token,
                capacity,
                &mut count,
                own.as_mut_ptr()
            ))?;
            own.truncate(count.min(capacity) as usize);
        }
        let of_class = if class != 0 { self.class_type_args(class, MAX_ARGS)? } else { Vec::new() };
        let mut name = |class: &ClassID| self.instantiated_type_name(*class, 0, namer);
        let of_class = of_class.iter().map(&mut name).collect();
        Ok((of_class, own.iter().map(name).collect()))
    }

    /// A class's type arguments (`GetClassIDInfo2`), outermost type first, at most `max`; empty
    /// for a class that is not a generic instantiation.
    fn class_type_args(&self, class: ClassID, max: u32) -> Result<Vec<ClassID>, HResult> {
        let (mut module, mut type_def, mut parent, mut n) = (0usize, 0u32, 0usize, 0u32);
        call!(self.GetClassIDInfo2(class, &mut module, &mut type_def, &mut parent, 0, &mut n, null_mut()))?;
        let mut args = vec![0 as ClassID; n.min(max) as usize];
        if !args.is_empty() {
            let capacity = args.len() as u32;
            call!(self.GetClassIDInfo2(
                class,
                &mut module,
                &mut type_def,
                &mut parent,
                capacity,
                &mut n,
                args.as_mut_ptr()
            ))?;
            args.truncate(n.min(capacity) as usize);
        }
        Ok(args)
    }

    /// [`type_name`](Self::type_name) with a generic instantiation's type arguments after it, arity
    /// markers dropped (`System.Collections.Generic.List<System.Int32>`), nested arguments too,
    /// to a few levels; `?` for a type the runtime would not name.
    fn instantiated_type_name(&self, class: ClassID, depth: u32, namer: &mut TypeDefNamer<'_>) -> String {
        const MAX_DEPTH: u32 = 4;
        const MAX_ARGS: u32 = 16;
        let Ok(name) = self.type_name_with(class, namer) else { return "?".to_string() };
        if !name.contains('`') {
            return name;
        }
        let args = match self.class_type_args(class, MAX_ARGS) {
            Ok(args) if !args.is_empty() => args,
            _ => return name,
        };
        let mut bare = String::with_capacity(name.len());
        let mut rest = name.as_str();
        while let Some(tick) = rest.find('`') {
            bare.push_str(&rest[..tick]);
            rest = rest[tick + 1..].trim_start_matches(|c: char| c.is_ascii_digit());
        }
        bare.push_str(rest);
        let inner: Vec<String> =
            args.iter()
                .map(|&arg| {
                    if depth < MAX_DEPTH {
                        self.instantiated_type_name(arg, depth + 1, namer)
                    } else {
                        "…".to_string()
                    }
                })
                .collect();
        format!("{bare}<{}>", inner.join(", "))
    }

    /// A copy of the IL body of MethodDef `token` in `module` (`GetILFunctionBody`): its header,
    /// code and exception sections.
    pub fn il_function_body(&self, module: ModuleID, token: u32) -> Result<Vec<u8>, HResult> {
        let (mut body, mut size): (LPCBYTE, ULONG) = (std::ptr::null(), 0);
        call!(self.GetILFunctionBody(module, token, &mut body, &mut size))?;
        if body.is_null() {
            return Err(HResult(E_FAIL));
        }
        // SAFETY: the runtime returned `size` readable bytes at `body`, alive with the module.
        Ok(unsafe { std::slice::from_raw_parts(body, size as usize) }.to_vec())
    }

    /// Gives MethodDef `token` of `module` the IL body `body` before its first compilation
    /// (`SetILFunctionBody`), copied into memory from the module's allocator (the runtime keeps
    /// it for the module's lifetime).
    pub fn set_il_function_body(&self, module: ModuleID, token: u32, body: &[u8]) -> Result<(), HResult> {
        let mut malloc: *mut IMethodMalloc = std::ptr::null_mut();
        call!(self.GetILFunctionBodyAllocator(module, &mut malloc))?;
        let Some(malloc) = NonNull::new(malloc) else { return Err(HResult(E_FAIL)) };
        let size = ULONG::try_from(body.len()).map_err(|_| HResult(E_FAIL))?;
        // SAFETY: `malloc` is a live IMethodMalloc the runtime just handed out (one reference,
        // released below); Alloc returns `size` writable bytes or null.
        let memory = unsafe { ((*(*malloc.as_ptr()).vtbl).Alloc)(malloc.as_ptr(), size) }.cast::<u8>();
        let result = if memory.is_null() {
            Err(HResult(E_FAIL))
        } else {
            // SAFETY: `memory` holds `size` bytes, which nothing else uses yet.
            unsafe { std::ptr::copy_nonoverlapping(body.as_ptr(), memory, body.len()) };
            call!(self.SetILFunctionBody(module, token, memory))
        };
        // SAFETY: releases the reference GetILFunctionBodyAllocator gave us.
        unsafe { ((*(*malloc.as_ptr()).vtbl).Release)(malloc.as_ptr()) };
        result
    }

    /// Every module the runtime has loaded (`EnumModules`, ICorProfilerInfo3).
    pub fn modules(&self) -> Result<Vec<ModuleID>, HResult> {
        let mut modules: *mut ICorProfilerModuleEnum = null_mut();
        call!(self.EnumModules(&mut modules))?;
        drain_ids!(modules, ModuleID)
    }

    /// The static fields of `module`'s types that can hold an object, of the names `wanted`
    /// accepts, read through the module's metadata interface (`GetModuleMetaData`: see
    /// `sonde_metadata::tables` for what asking for it costs the runtime).
    pub fn static_fields(
        &self,
        module: ModuleID,
        wanted: &mut dyn FnMut(&str) -> bool,
    ) -> Result<Vec<metadata::StaticField>, HResult> {
        let mut import: *mut IUnknown = null_mut();
        call!(self.GetModuleMetaData(module, ofRead, &IID_IMetaDataImport, &mut import))?;
        let import = metadata::Import::new(import.cast()).ok_or(HResult(E_POINTER))?;
        import.static_fields(wanted)
    }

    /// The class of TypeDef `type_def` of `module` (`GetClassFromToken`). The runtime loads the
    /// type if it has not yet (it does not run its static constructor); a generic type's
    /// definition has no class (`CORPROF_E_TYPE_IS_PARAMETERIZED`).
    pub fn class_from_token(&self, module: ModuleID, type_def: mdTypeDef) -> Result<ClassID, HResult> {
        let mut class: ClassID = 0;
        call!(self.GetClassFromToken(module, type_def, &mut class))?;
        Ok(class)
    }

    /// The class `class` derives from (`GetClassIDInfo2`): 0 for `System.Object`, an interface,
    /// or a type without a parent class (an array's is `System.Array`).
    pub fn base_class(&self, class: ClassID) -> Result<ClassID, HResult> {
        let (mut module, mut type_def, mut parent, mut n) = (0usize, 0u32, 0usize, 0u32);
        call!(self.GetClassIDInfo2(class, &mut module, &mut type_def, &mut parent, 0, &mut n, null_mut()))?;
        Ok(parent)
    }

    /// The app domains `module` is loaded in (`GetAppDomainsContainingModule`, ICorProfilerInfo3;
    /// one on .NET Core). Not from a callback: it may trigger a collection.
    pub fn app_domains_of_module(&self, module: ModuleID) -> Result<Vec<AppDomainID>, HResult> {
        let mut domains = [0 as AppDomainID; 4];
        let mut count: ULONG32 = 0;
        call!(self.GetAppDomainsContainingModule(module, domains.len() as ULONG32, &mut count, domains.as_mut_ptr()))?;
        Ok(domains[..(count as usize).min(domains.len())].to_vec())
    }

    /// The address of static field `field` of `class` in `domain` (`GetAppDomainStaticAddress`):
    /// the slot holding the object for a field of a reference type, the box's contents for a
    /// value type's. `CORPROF_E_DATAINCOMPLETE` until the class is initialized.
    pub fn app_domain_static_address(
        &self,
        class: ClassID,
        field: mdFieldDef,
        domain: AppDomainID,
    ) -> Result<usize, HResult> {
        let mut address: *mut c_void = null_mut();
        call!(self.GetAppDomainStaticAddress(class, field, domain, &mut address))?;
        Ok(address as usize)
    }

    /// A module's path as the runtime loaded it (empty or a display name for a module that has
    /// no file: dynamic, or loaded from bytes), and its assembly's name.
    pub fn module_path_and_assembly(&self, module: ModuleID) -> Result<(String, String), HResult> {
        let mut base: LPCBYTE = std::ptr::null();
        let mut assembly: AssemblyID = 0;
        let path =
            read_string(|cap, len, buf| call!(self.GetModuleInfo(module, &mut base, cap, len, buf, &mut assembly)))?;
        let (mut domain, mut module2) = (0usize, 0usize);
        let assembly_name = read_string(|cap, len, buf| {
            call!(self.GetAssemblyInfo(assembly, cap, len, buf, &mut domain, &mut module2))
        })?;
        Ok((path, assembly_name))
    }
}

/// Names TypeDef `token` of module `ModuleID` (see [`ProfilerInfo::type_arguments_with`]).
pub type TypeDefNamer<'a> = dyn FnMut(ModuleID, u32) -> Option<String> + 'a;

static MAPPER: std::sync::OnceLock<fn(FunctionID) -> Option<usize>> = std::sync::OnceLock::new();

/// The `FunctionIDMapper2` the runtime calls (at JIT time, not per call). A panic in `map` means
/// "no hooks for this function".
unsafe extern "C" fn map_function(function: FunctionID, _client_data: *mut c_void, hook: *mut BOOL) -> UINT_PTR {
    let mapped = MAPPER.get().and_then(|map| std::panic::catch_unwind(|| map(function)).ok().flatten());
    if !hook.is_null() {
        // SAFETY: the runtime passes a writable BOOL.
        unsafe { *hook = if mapped.is_some() { TRUE } else { FALSE } };
    }
    mapped.unwrap_or(function)
}

/// Calls a `(cchName, pcchName, szName)`-style getter, growing the buffer once if needed, and
/// decodes the UTF-16 result (WCHAR is 16-bit on every platform CoreCLR supports).
/// `text` as the runtime's `LPCWSTR`: UTF-16, NUL-terminated.
pub(crate) fn wide(text: &str) -> Vec<u16> {
    text.encode_utf16().chain(std::iter::once(0)).collect()
}

pub(crate) fn read_string(
    mut get: impl FnMut(ULONG, *mut ULONG, *mut WCHAR) -> Result<(), HResult>,
) -> Result<String, HResult> {
    let mut buf = vec![0u16; 512];
    let mut len: ULONG = 0;
    get(buf.len() as ULONG, &mut len, buf.as_mut_ptr())?;
    if len as usize > buf.len() {
        buf = vec![0u16; len as usize];
        get(buf.len() as ULONG, &mut len, buf.as_mut_ptr())?;
    }
    let text = &buf[..(len as usize).min(buf.len())];
    let end = text.iter().position(|&c| c == 0).unwrap_or(text.len());
    Ok(String::from_utf16_lossy(&text[..end]))
}

/// One frame of a runtime stack walk: a managed function and the instruction pointer in it (a
/// return address for every frame but the innermost), or (`function` 0) a run of native frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WalkFrame {
    pub function: FunctionID,
    pub ip: usize,
}

/// A thread's stack as [`ProfilerInfo::walk_all_threads`] found it.
#[derive(Debug)]
pub struct ThreadWalk {
    pub thread: ThreadID,
    /// Innermost first; cut at the `max_frames` asked for.
    pub frames: Vec<WalkFrame>,
    /// The walk's own result (an error for a thread the runtime cannot walk; frames found
    /// before a failure are kept).
    pub walked: Result<(), HResult>,
}

/// `StackSnapshotCallback` for [`ProfilerInfo::walk_all_threads`]: one frame into the vector,
/// never beyond its capacity (no allocation while the runtime is suspended); a full vector ends
/// the walk.
unsafe extern "C" fn walk_frame(
    function: FunctionID,
    ip: UINT_PTR,
    _frame: COR_PRF_FRAME_INFO,
    _context_size: ULONG32,
    _context: *mut BYTE,
    client_data: *mut c_void,
) -> HRESULT {
    // SAFETY: `client_data` is the `Vec<WalkFrame>` that `walk_all_threads` passed, alive and
    // not otherwise borrowed for the whole synchronous walk.
    let frames = unsafe { &mut *client_data.cast::<Vec<WalkFrame>>() };
    if frames.len() == frames.capacity() {
        return E_FAIL;
    }
    frames.push(WalkFrame { function, ip });
    S_OK
}

/// The .NET name of a primitive element type (`CorElementType`), as array type names use it.
fn primitive_name(element: CorElementType) -> Option<&'static str> {
    let name = match u8::try_from(element).ok()? {
        ELEMENT_TYPE_BOOLEAN => "System.Boolean",
        ELEMENT_TYPE_CHAR => "System.Char",
        ELEMENT_TYPE_I1 => "System.SByte",
        ELEMENT_TYPE_U1 => "System.Byte",
        ELEMENT_TYPE_I2 => "System.Int16",
        ELEMENT_TYPE_U2 => "System.UInt16",
        ELEMENT_TYPE_I4 => "System.Int32",
        ELEMENT_TYPE_U4 => "System.UInt32",
        ELEMENT_TYPE_I8 => "System.Int64",
        ELEMENT_TYPE_U8 => "System.UInt64",
        ELEMENT_TYPE_R4 => "System.Single",
        ELEMENT_TYPE_R8 => "System.Double",
        ELEMENT_TYPE_STRING => "System.String",
        ELEMENT_TYPE_I => "System.IntPtr",
        ELEMENT_TYPE_U => "System.UIntPtr",
        ELEMENT_TYPE_OBJECT => "System.Object",
        _ => return None,
    };
    Some(name)
}
