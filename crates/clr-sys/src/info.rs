//! `ICorProfilerInfo` .. `ICorProfilerInfo14`: the interface the runtime
//! implements and hands to the profiler in `Initialize`, plus the small
//! helper interfaces its methods return (enumerators, `IMethodMalloc`,
//! `ICorProfilerFunctionControl`, `ICorProfilerAssemblyReferenceProvider`).
//!
//! One flat vtable holds every slot of IUnknown -> ICorProfilerInfo -> ... ->
//! ICorProfilerInfo14, in corprof.idl declaration order. Methods added per
//! interface (counted in corprof.idl):
//!
//! | interface          | methods | slots      |
//! |--------------------|---------|------------|
//! | IUnknown           | 3       | 0..=2      |
//! | ICorProfilerInfo   | 33      | 3..=35     |
//! | ICorProfilerInfo2  | 21      | 36..=56    |
//! | ICorProfilerInfo3  | 14      | 57..=70    |
//! | ICorProfilerInfo4  | 10      | 71..=80    |
//! | ICorProfilerInfo5  | 2       | 81..=82    |
//! | ICorProfilerInfo6  | 1       | 83         |
//! | ICorProfilerInfo7  | 3       | 84..=86    |
//! | ICorProfilerInfo8  | 3       | 87..=89    |
//! | ICorProfilerInfo9  | 3       | 90..=92    |
//! | ICorProfilerInfo10 | 6       | 93..=98    |
//! | ICorProfilerInfo11 | 2       | 99..=100   |
//! | ICorProfilerInfo12 | 7       | 101..=107  |
//! | ICorProfilerInfo13 | 3       | 108..=110  |
//! | ICorProfilerInfo14 | 3       | 111..=113  |
//!
//! 3 + 33 + 21 + 14 + 10 + 2 + 1 + 3 + 3 + 3 + 6 + 2 + 7 + 3 + 3 = 114 slots.
//! (The runtime also defines ICorProfilerInfo15, adding one slot,
//! `EnumerateGCHeapObjects`; it is not declared here.)
//!
//! Only QueryInterface for `IID_ICorProfilerInfo14` (or a later IID)
//! guarantees that every slot below exists; with an older runtime, stop at
//! the last slot of the interface QueryInterface succeeded for.

use core::ffi::c_void;

use crate::hooks::*;
use crate::types::*;
use crate::unknown::IUnknown;

/// Number of pointer-sized slots in [`ICorProfilerInfo14Vtbl`].
pub const ICOR_PROFILER_INFO14_SLOTS: usize = 114;

#[repr(C)]
pub struct ICorProfilerInfo14 {
    pub vtbl: *const ICorProfilerInfo14Vtbl,
}

#[repr(C)]
pub struct ICorProfilerInfo14Vtbl {
    // ---- IUnknown: 3 methods, slots 0..=2 ----
    /// Slot 0.
    pub QueryInterface:
        unsafe extern "system" fn(this: *mut ICorProfilerInfo14, riid: REFIID, ppvObject: *mut *mut c_void) -> HRESULT,
    /// Slot 1.
    pub AddRef: unsafe extern "system" fn(this: *mut ICorProfilerInfo14) -> ULONG,
    /// Slot 2.
    pub Release: unsafe extern "system" fn(this: *mut ICorProfilerInfo14) -> ULONG,

    // ---- ICorProfilerInfo: 33 methods, slots 3..=35 ----
    /// Slot 3.
    pub GetClassFromObject:
        unsafe extern "system" fn(this: *mut ICorProfilerInfo14, objectId: ObjectID, pClassId: *mut ClassID) -> HRESULT,
    /// Slot 4.
    pub GetClassFromToken: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        moduleId: ModuleID,
        typeDef: mdTypeDef,
        pClassId: *mut ClassID,
    ) -> HRESULT,
    /// Slot 5.
    pub GetCodeInfo: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        functionId: FunctionID,
        pStart: *mut LPCBYTE,
        pcSize: *mut ULONG,
    ) -> HRESULT,
    /// Slot 6.
    pub GetEventMask: unsafe extern "system" fn(this: *mut ICorProfilerInfo14, pdwEvents: *mut DWORD) -> HRESULT,
    /// Slot 7.
    pub GetFunctionFromIP:
        unsafe extern "system" fn(this: *mut ICorProfilerInfo14, ip: LPCBYTE, pFunctionId: *mut FunctionID) -> HRESULT,
    /// Slot 8.
    pub GetFunctionFromToken: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        moduleId: ModuleID,
        token: mdToken,
        pFunctionId: *mut FunctionID,
    ) -> HRESULT,
    /// Slot 9.
    pub GetHandleFromThread:
        unsafe extern "system" fn(this: *mut ICorProfilerInfo14, threadId: ThreadID, phThread: *mut HANDLE) -> HRESULT,
    /// Slot 10.
    pub GetObjectSize:
        unsafe extern "system" fn(this: *mut ICorProfilerInfo14, objectId: ObjectID, pcSize: *mut ULONG) -> HRESULT,
    /// Slot 11.
    pub IsArrayClass: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        classId: ClassID,
        pBaseElemType: *mut CorElementType,
        pBaseClassId: *mut ClassID,
        pcRank: *mut ULONG,
    ) -> HRESULT,
    /// Slot 12.
    pub GetThreadInfo: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        threadId: ThreadID,
        pdwWin32ThreadId: *mut DWORD,
    ) -> HRESULT,
    /// Slot 13.
    pub GetCurrentThreadID:
        unsafe extern "system" fn(this: *mut ICorProfilerInfo14, pThreadId: *mut ThreadID) -> HRESULT,
    /// Slot 14.
    pub GetClassIDInfo: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        classId: ClassID,
        pModuleId: *mut ModuleID,
        pTypeDefToken: *mut mdTypeDef,
    ) -> HRESULT,
    /// Slot 15.
    pub GetFunctionInfo: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        functionId: FunctionID,
        pClassId: *mut ClassID,
        pModuleId: *mut ModuleID,
        pToken: *mut mdToken,
    ) -> HRESULT,
    /// Slot 16.
    pub SetEventMask: unsafe extern "system" fn(this: *mut ICorProfilerInfo14, dwEvents: DWORD) -> HRESULT,
    /// Slot 17.
    pub SetEnterLeaveFunctionHooks: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        pFuncEnter: Option<FunctionEnter>,
        pFuncLeave: Option<FunctionLeave>,
        pFuncTailcall: Option<FunctionTailcall>,
    ) -> HRESULT,
    /// Slot 18.
    pub SetFunctionIDMapper:
        unsafe extern "system" fn(this: *mut ICorProfilerInfo14, pFunc: Option<FunctionIDMapper>) -> HRESULT,
    /// Slot 19.
    pub GetTokenAndMetaDataFromFunction: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        functionId: FunctionID,
        riid: REFIID,
        ppImport: *mut *mut IUnknown,
        pToken: *mut mdToken,
    ) -> HRESULT,
    /// Slot 20.
    pub GetModuleInfo: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        moduleId: ModuleID,
        ppBaseLoadAddress: *mut LPCBYTE,
        cchName: ULONG,
        pcchName: *mut ULONG,
        szName: *mut WCHAR,
        pAssemblyId: *mut AssemblyID,
    ) -> HRESULT,
    /// Slot 21.
    pub GetModuleMetaData: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        moduleId: ModuleID,
        dwOpenFlags: DWORD,
        riid: REFIID,
        ppOut: *mut *mut IUnknown,
    ) -> HRESULT,
    /// Slot 22.
    pub GetILFunctionBody: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        moduleId: ModuleID,
        methodId: mdMethodDef,
        ppMethodHeader: *mut LPCBYTE,
        pcbMethodSize: *mut ULONG,
    ) -> HRESULT,
    /// Slot 23.
    pub GetILFunctionBodyAllocator: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        moduleId: ModuleID,
        ppMalloc: *mut *mut IMethodMalloc,
    ) -> HRESULT,
    /// Slot 24.
    pub SetILFunctionBody: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        moduleId: ModuleID,
        methodid: mdMethodDef,
        pbNewILMethodHeader: LPCBYTE,
    ) -> HRESULT,
    /// Slot 25.
    pub GetAppDomainInfo: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        appDomainId: AppDomainID,
        cchName: ULONG,
        pcchName: *mut ULONG,
        szName: *mut WCHAR,
        pProcessId: *mut ProcessID,
    ) -> HRESULT,
    /// Slot 26.
    pub GetAssemblyInfo: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        assemblyId: AssemblyID,
        cchName: ULONG,
        pcchName: *mut ULONG,
        szName: *mut WCHAR,
        pAppDomainId: *mut AppDomainID,
        pModuleId: *mut ModuleID,
    ) -> HRESULT,
    /// Slot 27.
    pub SetFunctionReJIT: unsafe extern "system" fn(this: *mut ICorProfilerInfo14, functionId: FunctionID) -> HRESULT,
    /// Slot 28.
    pub ForceGC: unsafe extern "system" fn(this: *mut ICorProfilerInfo14) -> HRESULT,
    /// Slot 29.
    pub SetILInstrumentedCodeMap: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        functionId: FunctionID,
        fStartJit: BOOL,
        cILMapEntries: ULONG,
        rgILMapEntries: *const COR_IL_MAP,
    ) -> HRESULT,
    /// Slot 30.
    pub GetInprocInspectionInterface:
        unsafe extern "system" fn(this: *mut ICorProfilerInfo14, ppicd: *mut *mut IUnknown) -> HRESULT,
    /// Slot 31.
    pub GetInprocInspectionIThisThread:
        unsafe extern "system" fn(this: *mut ICorProfilerInfo14, ppicd: *mut *mut IUnknown) -> HRESULT,
    /// Slot 32.
    pub GetThreadContext: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        threadId: ThreadID,
        pContextId: *mut ContextID,
    ) -> HRESULT,
    /// Slot 33.
    pub BeginInprocDebugging: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        fThisThreadOnly: BOOL,
        pdwProfilerContext: *mut DWORD,
    ) -> HRESULT,
    /// Slot 34.
    pub EndInprocDebugging:
        unsafe extern "system" fn(this: *mut ICorProfilerInfo14, dwProfilerContext: DWORD) -> HRESULT,
    /// Slot 35.
    pub GetILToNativeMapping: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        functionId: FunctionID,
        cMap: ULONG32,
        pcMap: *mut ULONG32,
        map: *mut COR_DEBUG_IL_TO_NATIVE_MAP,
    ) -> HRESULT,

    // ---- ICorProfilerInfo2: 21 methods, slots 36..=56 ----
    /// Slot 36.
    pub DoStackSnapshot: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        thread: ThreadID,
        callback: Option<StackSnapshotCallback>,
        infoFlags: ULONG32,
        clientData: *mut c_void,
        context: *const BYTE,
        contextSize: ULONG32,
    ) -> HRESULT,
    /// Slot 37.
    pub SetEnterLeaveFunctionHooks2: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        pFuncEnter: Option<FunctionEnter2>,
        pFuncLeave: Option<FunctionLeave2>,
        pFuncTailcall: Option<FunctionTailcall2>,
    ) -> HRESULT,
    /// Slot 38.
    pub GetFunctionInfo2: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        funcId: FunctionID,
        frameInfo: COR_PRF_FRAME_INFO,
        pClassId: *mut ClassID,
        pModuleId: *mut ModuleID,
        pToken: *mut mdToken,
        cTypeArgs: ULONG32,
        pcTypeArgs: *mut ULONG32,
        typeArgs: *mut ClassID,
    ) -> HRESULT,
    /// Slot 39.
    pub GetStringLayout: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        pBufferLengthOffset: *mut ULONG,
        pStringLengthOffset: *mut ULONG,
        pBufferOffset: *mut ULONG,
    ) -> HRESULT,
    /// Slot 40.
    pub GetClassLayout: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        classID: ClassID,
        rFieldOffset: *mut COR_FIELD_OFFSET,
        cFieldOffset: ULONG,
        pcFieldOffset: *mut ULONG,
        pulClassSize: *mut ULONG,
    ) -> HRESULT,
    /// Slot 41.
    pub GetClassIDInfo2: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        classId: ClassID,
        pModuleId: *mut ModuleID,
        pTypeDefToken: *mut mdTypeDef,
        pParentClassId: *mut ClassID,
        cNumTypeArgs: ULONG32,
        pcNumTypeArgs: *mut ULONG32,
        typeArgs: *mut ClassID,
    ) -> HRESULT,
    /// Slot 42.
    pub GetCodeInfo2: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        functionID: FunctionID,
        cCodeInfos: ULONG32,
        pcCodeInfos: *mut ULONG32,
        codeInfos: *mut COR_PRF_CODE_INFO,
    ) -> HRESULT,
    /// Slot 43.
    pub GetClassFromTokenAndTypeArgs: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        moduleID: ModuleID,
        typeDef: mdTypeDef,
        cTypeArgs: ULONG32,
        typeArgs: *const ClassID,
        pClassID: *mut ClassID,
    ) -> HRESULT,
    /// Slot 44.
    pub GetFunctionFromTokenAndTypeArgs: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        moduleID: ModuleID,
        funcDef: mdMethodDef,
        classId: ClassID,
        cTypeArgs: ULONG32,
        typeArgs: *const ClassID,
        pFunctionID: *mut FunctionID,
    ) -> HRESULT,
    /// Slot 45.
    pub EnumModuleFrozenObjects: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        moduleID: ModuleID,
        ppEnum: *mut *mut ICorProfilerObjectEnum,
    ) -> HRESULT,
    /// Slot 46.
    pub GetArrayObjectInfo: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        objectId: ObjectID,
        cDimensions: ULONG32,
        pDimensionSizes: *mut ULONG32,
        pDimensionLowerBounds: *mut i32,
        ppData: *mut *mut BYTE,
    ) -> HRESULT,
    /// Slot 47.
    pub GetBoxClassLayout: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        classId: ClassID,
        pBufferOffset: *mut ULONG32,
    ) -> HRESULT,
    /// Slot 48.
    pub GetThreadAppDomain: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        threadId: ThreadID,
        pAppDomainId: *mut AppDomainID,
    ) -> HRESULT,
    /// Slot 49.
    pub GetRVAStaticAddress: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        classId: ClassID,
        fieldToken: mdFieldDef,
        ppAddress: *mut *mut c_void,
    ) -> HRESULT,
    /// Slot 50.
    pub GetAppDomainStaticAddress: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        classId: ClassID,
        fieldToken: mdFieldDef,
        appDomainId: AppDomainID,
        ppAddress: *mut *mut c_void,
    ) -> HRESULT,
    /// Slot 51.
    pub GetThreadStaticAddress: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        classId: ClassID,
        fieldToken: mdFieldDef,
        threadId: ThreadID,
        ppAddress: *mut *mut c_void,
    ) -> HRESULT,
    /// Slot 52.
    pub GetContextStaticAddress: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        classId: ClassID,
        fieldToken: mdFieldDef,
        contextId: ContextID,
        ppAddress: *mut *mut c_void,
    ) -> HRESULT,
    /// Slot 53.
    pub GetStaticFieldInfo: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        classId: ClassID,
        fieldToken: mdFieldDef,
        pFieldInfo: *mut COR_PRF_STATIC_TYPE,
    ) -> HRESULT,
    /// Slot 54.
    pub GetGenerationBounds: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        cObjectRanges: ULONG,
        pcObjectRanges: *mut ULONG,
        ranges: *mut COR_PRF_GC_GENERATION_RANGE,
    ) -> HRESULT,
    /// Slot 55.
    pub GetObjectGeneration: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        objectId: ObjectID,
        range: *mut COR_PRF_GC_GENERATION_RANGE,
    ) -> HRESULT,
    /// Slot 56.
    pub GetNotifiedExceptionClauseInfo:
        unsafe extern "system" fn(this: *mut ICorProfilerInfo14, pinfo: *mut COR_PRF_EX_CLAUSE_INFO) -> HRESULT,

    // ---- ICorProfilerInfo3: 14 methods, slots 57..=70 ----
    /// Slot 57.
    pub EnumJITedFunctions:
        unsafe extern "system" fn(this: *mut ICorProfilerInfo14, ppEnum: *mut *mut ICorProfilerFunctionEnum) -> HRESULT,
    /// Slot 58.
    pub RequestProfilerDetach:
        unsafe extern "system" fn(this: *mut ICorProfilerInfo14, dwExpectedCompletionMilliseconds: DWORD) -> HRESULT,
    /// Slot 59.
    pub SetFunctionIDMapper2: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        pFunc: Option<FunctionIDMapper2>,
        clientData: *mut c_void,
    ) -> HRESULT,
    /// Slot 60.
    pub GetStringLayout2: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        pStringLengthOffset: *mut ULONG,
        pBufferOffset: *mut ULONG,
    ) -> HRESULT,
    /// Slot 61.
    pub SetEnterLeaveFunctionHooks3: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        pFuncEnter3: Option<FunctionEnter3>,
        pFuncLeave3: Option<FunctionLeave3>,
        pFuncTailcall3: Option<FunctionTailcall3>,
    ) -> HRESULT,
    /// Slot 62.
    pub SetEnterLeaveFunctionHooks3WithInfo: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        pFuncEnter3WithInfo: Option<FunctionEnter3WithInfo>,
        pFuncLeave3WithInfo: Option<FunctionLeave3WithInfo>,
        pFuncTailcall3WithInfo: Option<FunctionTailcall3WithInfo>,
    ) -> HRESULT,
    /// Slot 63.
    pub GetFunctionEnter3Info: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        functionId: FunctionID,
        eltInfo: COR_PRF_ELT_INFO,
        pFrameInfo: *mut COR_PRF_FRAME_INFO,
        pcbArgumentInfo: *mut ULONG,
        pArgumentInfo: *mut COR_PRF_FUNCTION_ARGUMENT_INFO,
    ) -> HRESULT,
    /// Slot 64.
    pub GetFunctionLeave3Info: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        functionId: FunctionID,
        eltInfo: COR_PRF_ELT_INFO,
        pFrameInfo: *mut COR_PRF_FRAME_INFO,
        pRetvalRange: *mut COR_PRF_FUNCTION_ARGUMENT_RANGE,
    ) -> HRESULT,
    /// Slot 65.
    pub GetFunctionTailcall3Info: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        functionId: FunctionID,
        eltInfo: COR_PRF_ELT_INFO,
        pFrameInfo: *mut COR_PRF_FRAME_INFO,
    ) -> HRESULT,
    /// Slot 66.
    pub EnumModules:
        unsafe extern "system" fn(this: *mut ICorProfilerInfo14, ppEnum: *mut *mut ICorProfilerModuleEnum) -> HRESULT,
    /// Slot 67.
    pub GetRuntimeInformation: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        pClrInstanceId: *mut USHORT,
        pRuntimeType: *mut COR_PRF_RUNTIME_TYPE,
        pMajorVersion: *mut USHORT,
        pMinorVersion: *mut USHORT,
        pBuildNumber: *mut USHORT,
        pQFEVersion: *mut USHORT,
        cchVersionString: ULONG,
        pcchVersionString: *mut ULONG,
        szVersionString: *mut WCHAR,
    ) -> HRESULT,
    /// Slot 68.
    pub GetThreadStaticAddress2: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        classId: ClassID,
        fieldToken: mdFieldDef,
        appDomainId: AppDomainID,
        threadId: ThreadID,
        ppAddress: *mut *mut c_void,
    ) -> HRESULT,
    /// Slot 69.
    pub GetAppDomainsContainingModule: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        moduleId: ModuleID,
        cAppDomainIds: ULONG32,
        pcAppDomainIds: *mut ULONG32,
        appDomainIds: *mut AppDomainID,
    ) -> HRESULT,
    /// Slot 70.
    pub GetModuleInfo2: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        moduleId: ModuleID,
        ppBaseLoadAddress: *mut LPCBYTE,
        cchName: ULONG,
        pcchName: *mut ULONG,
        szName: *mut WCHAR,
        pAssemblyId: *mut AssemblyID,
        pdwModuleFlags: *mut DWORD,
    ) -> HRESULT,

    // ---- ICorProfilerInfo4: 10 methods, slots 71..=80 ----
    /// Slot 71.
    pub EnumThreads:
        unsafe extern "system" fn(this: *mut ICorProfilerInfo14, ppEnum: *mut *mut ICorProfilerThreadEnum) -> HRESULT,
    /// Slot 72.
    pub InitializeCurrentThread: unsafe extern "system" fn(this: *mut ICorProfilerInfo14) -> HRESULT,
    /// Slot 73.
    pub RequestReJIT: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        cFunctions: ULONG,
        moduleIds: *const ModuleID,
        methodIds: *const mdMethodDef,
    ) -> HRESULT,
    /// Slot 74.
    pub RequestRevert: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        cFunctions: ULONG,
        moduleIds: *const ModuleID,
        methodIds: *const mdMethodDef,
        status: *mut HRESULT,
    ) -> HRESULT,
    /// Slot 75.
    pub GetCodeInfo3: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        functionID: FunctionID,
        reJitId: ReJITID,
        cCodeInfos: ULONG32,
        pcCodeInfos: *mut ULONG32,
        codeInfos: *mut COR_PRF_CODE_INFO,
    ) -> HRESULT,
    /// Slot 76.
    pub GetFunctionFromIP2: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        ip: LPCBYTE,
        pFunctionId: *mut FunctionID,
        pReJitId: *mut ReJITID,
    ) -> HRESULT,
    /// Slot 77.
    pub GetReJITIDs: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        functionId: FunctionID,
        cReJitIds: ULONG,
        pcReJitIds: *mut ULONG,
        reJitIds: *mut ReJITID,
    ) -> HRESULT,
    /// Slot 78.
    pub GetILToNativeMapping2: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        functionId: FunctionID,
        reJitId: ReJITID,
        cMap: ULONG32,
        pcMap: *mut ULONG32,
        map: *mut COR_DEBUG_IL_TO_NATIVE_MAP,
    ) -> HRESULT,
    /// Slot 79.
    pub EnumJITedFunctions2:
        unsafe extern "system" fn(this: *mut ICorProfilerInfo14, ppEnum: *mut *mut ICorProfilerFunctionEnum) -> HRESULT,
    /// Slot 80.
    pub GetObjectSize2:
        unsafe extern "system" fn(this: *mut ICorProfilerInfo14, objectId: ObjectID, pcSize: *mut SIZE_T) -> HRESULT,

    // ---- ICorProfilerInfo5: 2 methods, slots 81..=82 ----
    /// Slot 81.
    pub GetEventMask2: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        pdwEventsLow: *mut DWORD,
        pdwEventsHigh: *mut DWORD,
    ) -> HRESULT,
    /// Slot 82.
    pub SetEventMask2:
        unsafe extern "system" fn(this: *mut ICorProfilerInfo14, dwEventsLow: DWORD, dwEventsHigh: DWORD) -> HRESULT,

    // ---- ICorProfilerInfo6: 1 methods, slots 83..=83 ----
    /// Slot 83.
    pub EnumNgenModuleMethodsInliningThisMethod: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        inlinersModuleId: ModuleID,
        inlineeModuleId: ModuleID,
        inlineeMethodId: mdMethodDef,
        incompleteData: *mut BOOL,
        ppEnum: *mut *mut ICorProfilerMethodEnum,
    ) -> HRESULT,

    // ---- ICorProfilerInfo7: 3 methods, slots 84..=86 ----
    /// Slot 84.
    pub ApplyMetaData: unsafe extern "system" fn(this: *mut ICorProfilerInfo14, moduleId: ModuleID) -> HRESULT,
    /// Slot 85.
    pub GetInMemorySymbolsLength: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        moduleId: ModuleID,
        pCountSymbolBytes: *mut DWORD,
    ) -> HRESULT,
    /// Slot 86.
    pub ReadInMemorySymbols: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        moduleId: ModuleID,
        symbolsReadOffset: DWORD,
        pSymbolBytes: *mut BYTE,
        countSymbolBytes: DWORD,
        pCountSymbolBytesRead: *mut DWORD,
    ) -> HRESULT,

    // ---- ICorProfilerInfo8: 3 methods, slots 87..=89 ----
    /// Slot 87.
    pub IsFunctionDynamic: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        functionId: FunctionID,
        isDynamic: *mut BOOL,
    ) -> HRESULT,
    /// Slot 88.
    pub GetFunctionFromIP3: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        ip: LPCBYTE,
        functionId: *mut FunctionID,
        pReJitId: *mut ReJITID,
    ) -> HRESULT,
    /// Slot 89.
    pub GetDynamicFunctionInfo: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        functionId: FunctionID,
        moduleId: *mut ModuleID,
        ppvSig: *mut PCCOR_SIGNATURE,
        pbSig: *mut ULONG,
        cchName: ULONG,
        pcchName: *mut ULONG,
        wszName: *mut WCHAR,
    ) -> HRESULT,

    // ---- ICorProfilerInfo9: 3 methods, slots 90..=92 ----
    /// Slot 90.
    pub GetNativeCodeStartAddresses: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        functionID: FunctionID,
        reJitId: ReJITID,
        cCodeStartAddresses: ULONG32,
        pcCodeStartAddresses: *mut ULONG32,
        codeStartAddresses: *mut UINT_PTR,
    ) -> HRESULT,
    /// Slot 91.
    pub GetILToNativeMapping3: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        pNativeCodeStartAddress: UINT_PTR,
        cMap: ULONG32,
        pcMap: *mut ULONG32,
        map: *mut COR_DEBUG_IL_TO_NATIVE_MAP,
    ) -> HRESULT,
    /// Slot 92.
    pub GetCodeInfo4: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        pNativeCodeStartAddress: UINT_PTR,
        cCodeInfos: ULONG32,
        pcCodeInfos: *mut ULONG32,
        codeInfos: *mut COR_PRF_CODE_INFO,
    ) -> HRESULT,

    // ---- ICorProfilerInfo10: 6 methods, slots 93..=98 ----
    /// Slot 93.
    pub EnumerateObjectReferences: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        objectId: ObjectID,
        callback: Option<ObjectReferenceCallback>,
        clientData: *mut c_void,
    ) -> HRESULT,
    /// Slot 94.
    pub IsFrozenObject:
        unsafe extern "system" fn(this: *mut ICorProfilerInfo14, objectId: ObjectID, pbFrozen: *mut BOOL) -> HRESULT,
    /// Slot 95.
    pub GetLOHObjectSizeThreshold:
        unsafe extern "system" fn(this: *mut ICorProfilerInfo14, pThreshold: *mut DWORD) -> HRESULT,
    /// Slot 96.
    pub RequestReJITWithInliners: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        dwRejitFlags: DWORD,
        cFunctions: ULONG,
        moduleIds: *const ModuleID,
        methodIds: *const mdMethodDef,
    ) -> HRESULT,
    /// Slot 97.
    pub SuspendRuntime: unsafe extern "system" fn(this: *mut ICorProfilerInfo14) -> HRESULT,
    /// Slot 98.
    pub ResumeRuntime: unsafe extern "system" fn(this: *mut ICorProfilerInfo14) -> HRESULT,

    // ---- ICorProfilerInfo11: 2 methods, slots 99..=100 ----
    /// Slot 99.
    pub GetEnvironmentVariable: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        szName: *const WCHAR,
        cchValue: ULONG,
        pcchValue: *mut ULONG,
        szValue: *mut WCHAR,
    ) -> HRESULT,
    /// Slot 100.
    pub SetEnvironmentVariable: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        szName: *const WCHAR,
        szValue: *const WCHAR,
    ) -> HRESULT,

    // ---- ICorProfilerInfo12: 7 methods, slots 101..=107 ----
    /// Slot 101.
    pub EventPipeStartSession: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        cProviderConfigs: UINT32,
        pProviderConfigs: *const COR_PRF_EVENTPIPE_PROVIDER_CONFIG,
        requestRundown: BOOL,
        pSession: *mut EVENTPIPE_SESSION,
    ) -> HRESULT,
    /// Slot 102.
    pub EventPipeAddProviderToSession: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        session: EVENTPIPE_SESSION,
        providerConfig: COR_PRF_EVENTPIPE_PROVIDER_CONFIG,
    ) -> HRESULT,
    /// Slot 103.
    pub EventPipeStopSession:
        unsafe extern "system" fn(this: *mut ICorProfilerInfo14, session: EVENTPIPE_SESSION) -> HRESULT,
    /// Slot 104.
    pub EventPipeCreateProvider: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        providerName: *const WCHAR,
        pProvider: *mut EVENTPIPE_PROVIDER,
    ) -> HRESULT,
    /// Slot 105.
    pub EventPipeGetProviderInfo: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        provider: EVENTPIPE_PROVIDER,
        cchName: ULONG,
        pcchName: *mut ULONG,
        providerName: *mut WCHAR,
    ) -> HRESULT,
    /// Slot 106.
    pub EventPipeDefineEvent: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        provider: EVENTPIPE_PROVIDER,
        eventName: *const WCHAR,
        eventID: UINT32,
        keywords: UINT64,
        eventVersion: UINT32,
        level: UINT32,
        opcode: UINT8,
        needStack: BOOL,
        cParamDescs: UINT32,
        pParamDescs: *const COR_PRF_EVENTPIPE_PARAM_DESC,
        pEvent: *mut EVENTPIPE_EVENT,
    ) -> HRESULT,
    /// Slot 107.
    pub EventPipeWriteEvent: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        event: EVENTPIPE_EVENT,
        cData: UINT32,
        data: *const COR_PRF_EVENT_DATA,
        pActivityId: LPCGUID,
        pRelatedActivityId: LPCGUID,
    ) -> HRESULT,

    // ---- ICorProfilerInfo13: 3 methods, slots 108..=110 ----
    /// Slot 108.
    pub CreateHandle: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        object: ObjectID,
        r#type: COR_PRF_HANDLE_TYPE,
        pHandle: *mut ObjectHandleID,
    ) -> HRESULT,
    /// Slot 109.
    pub DestroyHandle: unsafe extern "system" fn(this: *mut ICorProfilerInfo14, handle: ObjectHandleID) -> HRESULT,
    /// Slot 110.
    pub GetObjectIDFromHandle: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        handle: ObjectHandleID,
        pObject: *mut ObjectID,
    ) -> HRESULT,

    // ---- ICorProfilerInfo14: 3 methods, slots 111..=113 ----
    /// Slot 111.
    pub EnumerateNonGCObjects:
        unsafe extern "system" fn(this: *mut ICorProfilerInfo14, ppEnum: *mut *mut ICorProfilerObjectEnum) -> HRESULT,
    /// Slot 112.
    pub GetNonGCHeapBounds: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        cObjectRanges: ULONG,
        pcObjectRanges: *mut ULONG,
        ranges: *mut COR_PRF_NONGC_HEAP_RANGE,
    ) -> HRESULT,
    /// Slot 113.
    pub EventPipeCreateProvider2: unsafe extern "system" fn(
        this: *mut ICorProfilerInfo14,
        providerName: *const WCHAR,
        pCallback: Option<EventPipeProviderCallback>,
        pProvider: *mut EVENTPIPE_PROVIDER,
    ) -> HRESULT,
}

/// `ICorProfilerObjectEnum` (IUnknown + 5 methods = 8 slots).
#[repr(C)]
pub struct ICorProfilerObjectEnum {
    pub vtbl: *const ICorProfilerObjectEnumVtbl,
}

#[repr(C)]
pub struct ICorProfilerObjectEnumVtbl {
    /// Slot 0.
    pub QueryInterface: unsafe extern "system" fn(
        this: *mut ICorProfilerObjectEnum,
        riid: REFIID,
        ppvObject: *mut *mut c_void,
    ) -> HRESULT,
    /// Slot 1.
    pub AddRef: unsafe extern "system" fn(this: *mut ICorProfilerObjectEnum) -> ULONG,
    /// Slot 2.
    pub Release: unsafe extern "system" fn(this: *mut ICorProfilerObjectEnum) -> ULONG,
    // ---- ICorProfilerObjectEnum: 5 methods, slots 3..=7 ----
    /// Slot 3.
    pub Skip: unsafe extern "system" fn(this: *mut ICorProfilerObjectEnum, celt: ULONG) -> HRESULT,
    /// Slot 4.
    pub Reset: unsafe extern "system" fn(this: *mut ICorProfilerObjectEnum) -> HRESULT,
    /// Slot 5.
    pub Clone: unsafe extern "system" fn(
        this: *mut ICorProfilerObjectEnum,
        ppEnum: *mut *mut ICorProfilerObjectEnum,
    ) -> HRESULT,
    /// Slot 6.
    pub GetCount: unsafe extern "system" fn(this: *mut ICorProfilerObjectEnum, pcelt: *mut ULONG) -> HRESULT,
    /// Slot 7.
    pub Next: unsafe extern "system" fn(
        this: *mut ICorProfilerObjectEnum,
        celt: ULONG,
        objects: *mut ObjectID,
        pceltFetched: *mut ULONG,
    ) -> HRESULT,
}

/// `ICorProfilerFunctionEnum` (IUnknown + 5 methods = 8 slots).
#[repr(C)]
pub struct ICorProfilerFunctionEnum {
    pub vtbl: *const ICorProfilerFunctionEnumVtbl,
}

#[repr(C)]
pub struct ICorProfilerFunctionEnumVtbl {
    /// Slot 0.
    pub QueryInterface: unsafe extern "system" fn(
        this: *mut ICorProfilerFunctionEnum,
        riid: REFIID,
        ppvObject: *mut *mut c_void,
    ) -> HRESULT,
    /// Slot 1.
    pub AddRef: unsafe extern "system" fn(this: *mut ICorProfilerFunctionEnum) -> ULONG,
    /// Slot 2.
    pub Release: unsafe extern "system" fn(this: *mut ICorProfilerFunctionEnum) -> ULONG,
    // ---- ICorProfilerFunctionEnum: 5 methods, slots 3..=7 ----
    /// Slot 3.
    pub Skip: unsafe extern "system" fn(this: *mut ICorProfilerFunctionEnum, celt: ULONG) -> HRESULT,
    /// Slot 4.
    pub Reset: unsafe extern "system" fn(this: *mut ICorProfilerFunctionEnum) -> HRESULT,
    /// Slot 5.
    pub Clone: unsafe extern "system" fn(
        this: *mut ICorProfilerFunctionEnum,
        ppEnum: *mut *mut ICorProfilerFunctionEnum,
    ) -> HRESULT,
    /// Slot 6.
    pub GetCount: unsafe extern "system" fn(this: *mut ICorProfilerFunctionEnum, pcelt: *mut ULONG) -> HRESULT,
    /// Slot 7.
    pub Next: unsafe extern "system" fn(
        this: *mut ICorProfilerFunctionEnum,
        celt: ULONG,
        ids: *mut COR_PRF_FUNCTION,
        pceltFetched: *mut ULONG,
    ) -> HRESULT,
}

/// `ICorProfilerModuleEnum` (IUnknown + 5 methods = 8 slots).
#[repr(C)]
pub struct ICorProfilerModuleEnum {
    pub vtbl: *const ICorProfilerModuleEnumVtbl,
}

#[repr(C)]
pub struct ICorProfilerModuleEnumVtbl {
    /// Slot 0.
    pub QueryInterface: unsafe extern "system" fn(
        this: *mut ICorProfilerModuleEnum,
        riid: REFIID,
        ppvObject: *mut *mut c_void,
    ) -> HRESULT,
    /// Slot 1.
    pub AddRef: unsafe extern "system" fn(this: *mut ICorProfilerModuleEnum) -> ULONG,
    /// Slot 2.
    pub Release: unsafe extern "system" fn(this: *mut ICorProfilerModuleEnum) -> ULONG,
    // ---- ICorProfilerModuleEnum: 5 methods, slots 3..=7 ----
    /// Slot 3.
    pub Skip: unsafe extern "system" fn(this: *mut ICorProfilerModuleEnum, celt: ULONG) -> HRESULT,
    /// Slot 4.
    pub Reset: unsafe extern "system" fn(this: *mut ICorProfilerModuleEnum) -> HRESULT,
    /// Slot 5.
    pub Clone: unsafe extern "system" fn(
        this: *mut ICorProfilerModuleEnum,
        ppEnum: *mut *mut ICorProfilerModuleEnum,
    ) -> HRESULT,
    /// Slot 6.
    pub GetCount: unsafe extern "system" fn(this: *mut ICorProfilerModuleEnum, pcelt: *mut ULONG) -> HRESULT,
    /// Slot 7.
    pub Next: unsafe extern "system" fn(
        this: *mut ICorProfilerModuleEnum,
        celt: ULONG,
        ids: *mut ModuleID,
        pceltFetched: *mut ULONG,
    ) -> HRESULT,
}

/// `ICorProfilerThreadEnum` (IUnknown + 5 methods = 8 slots).
#[repr(C)]
pub struct ICorProfilerThreadEnum {
    pub vtbl: *const ICorProfilerThreadEnumVtbl,
}

#[repr(C)]
pub struct ICorProfilerThreadEnumVtbl {
    /// Slot 0.
    pub QueryInterface: unsafe extern "system" fn(
        this: *mut ICorProfilerThreadEnum,
        riid: REFIID,
        ppvObject: *mut *mut c_void,
    ) -> HRESULT,
    /// Slot 1.
    pub AddRef: unsafe extern "system" fn(this: *mut ICorProfilerThreadEnum) -> ULONG,
    /// Slot 2.
    pub Release: unsafe extern "system" fn(this: *mut ICorProfilerThreadEnum) -> ULONG,
    // ---- ICorProfilerThreadEnum: 5 methods, slots 3..=7 ----
    /// Slot 3.
    pub Skip: unsafe extern "system" fn(this: *mut ICorProfilerThreadEnum, celt: ULONG) -> HRESULT,
    /// Slot 4.
    pub Reset: unsafe extern "system" fn(this: *mut ICorProfilerThreadEnum) -> HRESULT,
    /// Slot 5.
    pub Clone: unsafe extern "system" fn(
        this: *mut ICorProfilerThreadEnum,
        ppEnum: *mut *mut ICorProfilerThreadEnum,
    ) -> HRESULT,
    /// Slot 6.
    pub GetCount: unsafe extern "system" fn(this: *mut ICorProfilerThreadEnum, pcelt: *mut ULONG) -> HRESULT,
    /// Slot 7.
    pub Next: unsafe extern "system" fn(
        this: *mut ICorProfilerThreadEnum,
        celt: ULONG,
        ids: *mut ThreadID,
        pceltFetched: *mut ULONG,
    ) -> HRESULT,
}

/// `ICorProfilerMethodEnum` (IUnknown + 5 methods = 8 slots).
#[repr(C)]
pub struct ICorProfilerMethodEnum {
    pub vtbl: *const ICorProfilerMethodEnumVtbl,
}

#[repr(C)]
pub struct ICorProfilerMethodEnumVtbl {
    /// Slot 0.
    pub QueryInterface: unsafe extern "system" fn(
        this: *mut ICorProfilerMethodEnum,
        riid: REFIID,
        ppvObject: *mut *mut c_void,
    ) -> HRESULT,
    /// Slot 1.
    pub AddRef: unsafe extern "system" fn(this: *mut ICorProfilerMethodEnum) -> ULONG,
    /// Slot 2.
    pub Release: unsafe extern "system" fn(this: *mut ICorProfilerMethodEnum) -> ULONG,
    // ---- ICorProfilerMethodEnum: 5 methods, slots 3..=7 ----
    /// Slot 3.
    pub Skip: unsafe extern "system" fn(this: *mut ICorProfilerMethodEnum, celt: ULONG) -> HRESULT,
    /// Slot 4.
    pub Reset: unsafe extern "system" fn(this: *mut ICorProfilerMethodEnum) -> HRESULT,
    /// Slot 5.
    pub Clone: unsafe extern "system" fn(
        this: *mut ICorProfilerMethodEnum,
        ppEnum: *mut *mut ICorProfilerMethodEnum,
    ) -> HRESULT,
    /// Slot 6.
    pub GetCount: unsafe extern "system" fn(this: *mut ICorProfilerMethodEnum, pcelt: *mut ULONG) -> HRESULT,
    /// Slot 7.
    pub Next: unsafe extern "system" fn(
        this: *mut ICorProfilerMethodEnum,
        celt: ULONG,
        elements: *mut COR_PRF_METHOD,
        pceltFetched: *mut ULONG,
    ) -> HRESULT,
}

/// `IMethodMalloc` (IUnknown + 1 methods = 4 slots).
#[repr(C)]
pub struct IMethodMalloc {
    pub vtbl: *const IMethodMallocVtbl,
}

#[repr(C)]
pub struct IMethodMallocVtbl {
    /// Slot 0.
    pub QueryInterface:
        unsafe extern "system" fn(this: *mut IMethodMalloc, riid: REFIID, ppvObject: *mut *mut c_void) -> HRESULT,
    /// Slot 1.
    pub AddRef: unsafe extern "system" fn(this: *mut IMethodMalloc) -> ULONG,
    /// Slot 2.
    pub Release: unsafe extern "system" fn(this: *mut IMethodMalloc) -> ULONG,
    // ---- IMethodMalloc: 1 methods, slots 3..=3 ----
    /// Slot 3.
    pub Alloc: unsafe extern "system" fn(this: *mut IMethodMalloc, cb: ULONG) -> *mut c_void,
}

/// `ICorProfilerFunctionControl` (IUnknown + 3 methods = 6 slots).
#[repr(C)]
pub struct ICorProfilerFunctionControl {
    pub vtbl: *const ICorProfilerFunctionControlVtbl,
}

#[repr(C)]
pub struct ICorProfilerFunctionControlVtbl {
    /// Slot 0.
    pub QueryInterface: unsafe extern "system" fn(
        this: *mut ICorProfilerFunctionControl,
        riid: REFIID,
        ppvObject: *mut *mut c_void,
    ) -> HRESULT,
    /// Slot 1.
    pub AddRef: unsafe extern "system" fn(this: *mut ICorProfilerFunctionControl) -> ULONG,
    /// Slot 2.
    pub Release: unsafe extern "system" fn(this: *mut ICorProfilerFunctionControl) -> ULONG,
    // ---- ICorProfilerFunctionControl: 3 methods, slots 3..=5 ----
    /// Slot 3.
    pub SetCodegenFlags: unsafe extern "system" fn(this: *mut ICorProfilerFunctionControl, flags: DWORD) -> HRESULT,
    /// Slot 4.
    pub SetILFunctionBody: unsafe extern "system" fn(
        this: *mut ICorProfilerFunctionControl,
        cbNewILMethodHeader: ULONG,
        pbNewILMethodHeader: LPCBYTE,
    ) -> HRESULT,
    /// Slot 5.
    pub SetILInstrumentedCodeMap: unsafe extern "system" fn(
        this: *mut ICorProfilerFunctionControl,
        cILMapEntries: ULONG,
        rgILMapEntries: *const COR_IL_MAP,
    ) -> HRESULT,
}

/// `ICorProfilerAssemblyReferenceProvider` (IUnknown + 1 methods = 4 slots).
#[repr(C)]
pub struct ICorProfilerAssemblyReferenceProvider {
    pub vtbl: *const ICorProfilerAssemblyReferenceProviderVtbl,
}

#[repr(C)]
pub struct ICorProfilerAssemblyReferenceProviderVtbl {
    /// Slot 0.
    pub QueryInterface: unsafe extern "system" fn(
        this: *mut ICorProfilerAssemblyReferenceProvider,
        riid: REFIID,
        ppvObject: *mut *mut c_void,
    ) -> HRESULT,
    /// Slot 1.
    pub AddRef: unsafe extern "system" fn(this: *mut ICorProfilerAssemblyReferenceProvider) -> ULONG,
    /// Slot 2.
    pub Release: unsafe extern "system" fn(this: *mut ICorProfilerAssemblyReferenceProvider) -> ULONG,
    // ---- ICorProfilerAssemblyReferenceProvider: 1 methods, slots 3..=3 ----
    /// Slot 3.
    pub AddAssemblyReference: unsafe extern "system" fn(
        this: *mut ICorProfilerAssemblyReferenceProvider,
        pAssemblyRefInfo: *const COR_PRF_ASSEMBLY_REFERENCE_INFO,
    ) -> HRESULT,
}
