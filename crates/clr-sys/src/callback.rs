//! `ICorProfilerCallback` .. `ICorProfilerCallback11`: the interface the
//! profiler implements and the runtime calls.
//!
//! One flat vtable holds every slot of the inheritance chain IUnknown ->
//! ICorProfilerCallback -> ... -> ICorProfilerCallback11, in corprof.idl
//! declaration order. Methods added per interface (counted in corprof.idl):
//!
//! | interface              | methods | slots      |
//! |------------------------|---------|------------|
//! | IUnknown               | 3       | 0..=2      |
//! | ICorProfilerCallback   | 69      | 3..=71     |
//! | ICorProfilerCallback2  | 8       | 72..=79    |
//! | ICorProfilerCallback3  | 3       | 80..=82    |
//! | ICorProfilerCallback4  | 6       | 83..=88    |
//! | ICorProfilerCallback5  | 1       | 89         |
//! | ICorProfilerCallback6  | 1       | 90         |
//! | ICorProfilerCallback7  | 1       | 91         |
//! | ICorProfilerCallback8  | 2       | 92..=93    |
//! | ICorProfilerCallback9  | 1       | 94         |
//! | ICorProfilerCallback10 | 2       | 95..=96    |
//! | ICorProfilerCallback11 | 1       | 97         |
//!
//! 3 + 69 + 8 + 3 + 6 + 1 + 1 + 1 + 2 + 1 + 2 + 1 = 98 slots.

use core::ffi::c_void;

use crate::info::{ICorProfilerAssemblyReferenceProvider, ICorProfilerFunctionControl};
use crate::types::*;
use crate::unknown::IUnknown;

/// Number of pointer-sized slots in [`ICorProfilerCallback11Vtbl`].
pub const ICOR_PROFILER_CALLBACK11_SLOTS: usize = 98;

/// A pointer to an object implementing `ICorProfilerCallback11` (and so every
/// earlier callback interface): its first word is the vtable pointer.
#[repr(C)]
pub struct ICorProfilerCallback11 {
    pub vtbl: *const ICorProfilerCallback11Vtbl,
}

#[repr(C)]
pub struct ICorProfilerCallback11Vtbl {
    // ---- IUnknown: 3 methods, slots 0..=2 ----
    /// Slot 0.
    pub QueryInterface: unsafe extern "system" fn(
        this: *mut ICorProfilerCallback11,
        riid: REFIID,
        ppvObject: *mut *mut c_void,
    ) -> HRESULT,
    /// Slot 1.
    pub AddRef: unsafe extern "system" fn(this: *mut ICorProfilerCallback11) -> ULONG,
    /// Slot 2.
    pub Release: unsafe extern "system" fn(this: *mut ICorProfilerCallback11) -> ULONG,

    // ---- ICorProfilerCallback: 69 methods, slots 3..=71 ----
    /// Slot 3.
    pub Initialize:
        unsafe extern "system" fn(this: *mut ICorProfilerCallback11, pICorProfilerInfoUnk: *mut IUnknown) -> HRESULT,
    /// Slot 4.
    pub Shutdown: unsafe extern "system" fn(this: *mut ICorProfilerCallback11) -> HRESULT,
    /// Slot 5.
    pub AppDomainCreationStarted:
        unsafe extern "system" fn(this: *mut ICorProfilerCallback11, appDomainId: AppDomainID) -> HRESULT,
    /// Slot 6.
    pub AppDomainCreationFinished: unsafe extern "system" fn(
        this: *mut ICorProfilerCallback11,
        appDomainId: AppDomainID,
        hrStatus: HRESULT,
    ) -> HRESULT,
    /// Slot 7.
    pub AppDomainShutdownStarted:
        unsafe extern "system" fn(this: *mut ICorProfilerCallback11, appDomainId: AppDomainID) -> HRESULT,
    /// Slot 8.
    pub AppDomainShutdownFinished: unsafe extern "system" fn(
        this: *mut ICorProfilerCallback11,
        appDomainId: AppDomainID,
        hrStatus: HRESULT,
    ) -> HRESULT,
    /// Slot 9.
    pub AssemblyLoadStarted:
        unsafe extern "system" fn(this: *mut ICorProfilerCallback11, assemblyId: AssemblyID) -> HRESULT,
    /// Slot 10.
    pub AssemblyLoadFinished: unsafe extern "system" fn(
        this: *mut ICorProfilerCallback11,
        assemblyId: AssemblyID,
        hrStatus: HRESULT,
    ) -> HRESULT,
    /// Slot 11.
    pub AssemblyUnloadStarted:
        unsafe extern "system" fn(this: *mut ICorProfilerCallback11, assemblyId: AssemblyID) -> HRESULT,
    /// Slot 12.
    pub AssemblyUnloadFinished: unsafe extern "system" fn(
        this: *mut ICorProfilerCallback11,
        assemblyId: AssemblyID,
        hrStatus: HRESULT,
    ) -> HRESULT,
    /// Slot 13.
    pub ModuleLoadStarted: unsafe extern "system" fn(this: *mut ICorProfilerCallback11, moduleId: ModuleID) -> HRESULT,
    /// Slot 14.
    pub ModuleLoadFinished:
        unsafe extern "system" fn(this: *mut ICorProfilerCallback11, moduleId: ModuleID, hrStatus: HRESULT) -> HRESULT,
    /// Slot 15.
    pub ModuleUnloadStarted:
        unsafe extern "system" fn(this: *mut ICorProfilerCallback11, moduleId: ModuleID) -> HRESULT,
    /// Slot 16.
    pub ModuleUnloadFinished:
        unsafe extern "system" fn(this: *mut ICorProfilerCallback11, moduleId: ModuleID, hrStatus: HRESULT) -> HRESULT,
    /// Slot 17.
    pub ModuleAttachedToAssembly: unsafe extern "system" fn(
        this: *mut ICorProfilerCallback11,
        moduleId: ModuleID,
        AssemblyId: AssemblyID,
    ) -> HRESULT,
    /// Slot 18.
    pub ClassLoadStarted: unsafe extern "system" fn(this: *mut ICorProfilerCallback11, classId: ClassID) -> HRESULT,
    /// Slot 19.
    pub ClassLoadFinished:
        unsafe extern "system" fn(this: *mut ICorProfilerCallback11, classId: ClassID, hrStatus: HRESULT) -> HRESULT,
    /// Slot 20.
    pub ClassUnloadStarted: unsafe extern "system" fn(this: *mut ICorProfilerCallback11, classId: ClassID) -> HRESULT,
    /// Slot 21.
    pub ClassUnloadFinished:
        unsafe extern "system" fn(this: *mut ICorProfilerCallback11, classId: ClassID, hrStatus: HRESULT) -> HRESULT,
    /// Slot 22.
    pub FunctionUnloadStarted:
        unsafe extern "system" fn(this: *mut ICorProfilerCallback11, functionId: FunctionID) -> HRESULT,
    /// Slot 23.
    pub JITCompilationStarted: unsafe extern "system" fn(
        this: *mut ICorProfilerCallback11,
        functionId: FunctionID,
        fIsSafeToBlock: BOOL,
    ) -> HRESULT,
    /// Slot 24.
    pub JITCompilationFinished: unsafe extern "system" fn(
        this: *mut ICorProfilerCallback11,
        functionId: FunctionID,
        hrStatus: HRESULT,
        fIsSafeToBlock: BOOL,
    ) -> HRESULT,
    /// Slot 25.
    pub JITCachedFunctionSearchStarted: unsafe extern "system" fn(
        this: *mut ICorProfilerCallback11,
        functionId: FunctionID,
        pbUseCachedFunction: *mut BOOL,
    ) -> HRESULT,
    /// Slot 26.
    pub JITCachedFunctionSearchFinished: unsafe extern "system" fn(
        this: *mut ICorProfilerCallback11,
        functionId: FunctionID,
        result: COR_PRF_JIT_CACHE,
    ) -> HRESULT,
    /// Slot 27.
    pub JITFunctionPitched:
        unsafe extern "system" fn(this: *mut ICorProfilerCallback11, functionId: FunctionID) -> HRESULT,
    /// Slot 28.
    pub JITInlining: unsafe extern "system" fn(
        this: *mut ICorProfilerCallback11,
        callerId: FunctionID,
        calleeId: FunctionID,
        pfShouldInline: *mut BOOL,
    ) -> HRESULT,
    /// Slot 29.
    pub ThreadCreated: unsafe extern "system" fn(this: *mut ICorProfilerCallback11, threadId: ThreadID) -> HRESULT,
    /// Slot 30.
    pub ThreadDestroyed: unsafe extern "system" fn(this: *mut ICorProfilerCallback11, threadId: ThreadID) -> HRESULT,
    /// Slot 31.
    pub ThreadAssignedToOSThread: unsafe extern "system" fn(
        this: *mut ICorProfilerCallback11,
        managedThreadId: ThreadID,
        osThreadId: DWORD,
    ) -> HRESULT,
    /// Slot 32.
    pub RemotingClientInvocationStarted: unsafe extern "system" fn(this: *mut ICorProfilerCallback11) -> HRESULT,
    /// Slot 33.
    pub RemotingClientSendingMessage:
        unsafe extern "system" fn(this: *mut ICorProfilerCallback11, pCookie: *mut GUID, fIsAsync: BOOL) -> HRESULT,
    /// Slot 34.
    pub RemotingClientReceivingReply:
        unsafe extern "system" fn(this: *mut ICorProfilerCallback11, pCookie: *mut GUID, fIsAsync: BOOL) -> HRESULT,
    /// Slot 35.
    pub RemotingClientInvocationFinished: unsafe extern "system" fn(this: *mut ICorProfilerCallback11) -> HRESULT,
    /// Slot 36.
    pub RemotingServerReceivingMessage:
        unsafe extern "system" fn(this: *mut ICorProfilerCallback11, pCookie: *mut GUID, fIsAsync: BOOL) -> HRESULT,
    /// Slot 37.
    pub RemotingServerInvocationStarted: unsafe extern "system" fn(this: *mut ICorProfilerCallback11) -> HRESULT,
    /// Slot 38.
    pub RemotingServerInvocationReturned: unsafe extern "system" fn(this: *mut ICorProfilerCallback11) -> HRESULT,
    /// Slot 39.
    pub RemotingServerSendingReply:
        unsafe extern "system" fn(this: *mut ICorProfilerCallback11, pCookie: *mut GUID, fIsAsync: BOOL) -> HRESULT,
    /// Slot 40.
    pub UnmanagedToManagedTransition: unsafe extern "system" fn(
        this: *mut ICorProfilerCallback11,
        functionId: FunctionID,
        reason: COR_PRF_TRANSITION_REASON,
    ) -> HRESULT,
    /// Slot 41.
    pub ManagedToUnmanagedTransition: unsafe extern "system" fn(
        this: *mut ICorProfilerCallback11,
        functionId: FunctionID,
        reason: COR_PRF_TRANSITION_REASON,
    ) -> HRESULT,
    /// Slot 42.
    pub RuntimeSuspendStarted:
        unsafe extern "system" fn(this: *mut ICorProfilerCallback11, suspendReason: COR_PRF_SUSPEND_REASON) -> HRESULT,
    /// Slot 43.
    pub RuntimeSuspendFinished: unsafe extern "system" fn(this: *mut ICorProfilerCallback11) -> HRESULT,
    /// Slot 44.
    pub RuntimeSuspendAborted: unsafe extern "system" fn(this: *mut ICorProfilerCallback11) -> HRESULT,
    /// Slot 45.
    pub RuntimeResumeStarted: unsafe extern "system" fn(this: *mut ICorProfilerCallback11) -> HRESULT,
    /// Slot 46.
    pub RuntimeResumeFinished: unsafe extern "system" fn(this: *mut ICorProfilerCallback11) -> HRESULT,
    /// Slot 47.
    pub RuntimeThreadSuspended:
        unsafe extern "system" fn(this: *mut ICorProfilerCallback11, threadId: ThreadID) -> HRESULT,
    /// Slot 48.
    pub RuntimeThreadResumed:
        unsafe extern "system" fn(this: *mut ICorProfilerCallback11, threadId: ThreadID) -> HRESULT,
    /// Slot 49.
    pub MovedReferences: unsafe extern "system" fn(
        this: *mut ICorProfilerCallback11,
        cMovedObjectIDRanges: ULONG,
        oldObjectIDRangeStart: *const ObjectID,
        newObjectIDRangeStart: *const ObjectID,
        cObjectIDRangeLength: *const ULONG,
    ) -> HRESULT,
    /// Slot 50.
    pub ObjectAllocated:
        unsafe extern "system" fn(this: *mut ICorProfilerCallback11, objectId: ObjectID, classId: ClassID) -> HRESULT,
    /// Slot 51.
    pub ObjectsAllocatedByClass: unsafe extern "system" fn(
        this: *mut ICorProfilerCallback11,
        cClassCount: ULONG,
        classIds: *const ClassID,
        cObjects: *const ULONG,
    ) -> HRESULT,
    /// Slot 52.
    pub ObjectReferences: unsafe extern "system" fn(
        this: *mut ICorProfilerCallback11,
        objectId: ObjectID,
        classId: ClassID,
        cObjectRefs: ULONG,
        objectRefIds: *const ObjectID,
    ) -> HRESULT,
    /// Slot 53.
    pub RootReferences: unsafe extern "system" fn(
        this: *mut ICorProfilerCallback11,
        cRootRefs: ULONG,
        rootRefIds: *const ObjectID,
    ) -> HRESULT,
    /// Slot 54.
    pub ExceptionThrown:
        unsafe extern "system" fn(this: *mut ICorProfilerCallback11, thrownObjectId: ObjectID) -> HRESULT,
    /// Slot 55.
    pub ExceptionSearchFunctionEnter:
        unsafe extern "system" fn(this: *mut ICorProfilerCallback11, functionId: FunctionID) -> HRESULT,
    /// Slot 56.
    pub ExceptionSearchFunctionLeave: unsafe extern "system" fn(this: *mut ICorProfilerCallback11) -> HRESULT,
    /// Slot 57.
    pub ExceptionSearchFilterEnter:
        unsafe extern "system" fn(this: *mut ICorProfilerCallback11, functionId: FunctionID) -> HRESULT,
    /// Slot 58.
    pub ExceptionSearchFilterLeave: unsafe extern "system" fn(this: *mut ICorProfilerCallback11) -> HRESULT,
    /// Slot 59.
    pub ExceptionSearchCatcherFound:
        unsafe extern "system" fn(this: *mut ICorProfilerCallback11, functionId: FunctionID) -> HRESULT,
    /// Slot 60.
    pub ExceptionOSHandlerEnter:
        unsafe extern "system" fn(this: *mut ICorProfilerCallback11, __unused: UINT_PTR) -> HRESULT,
    /// Slot 61.
    pub ExceptionOSHandlerLeave:
        unsafe extern "system" fn(this: *mut ICorProfilerCallback11, __unused: UINT_PTR) -> HRESULT,
    /// Slot 62.
    pub ExceptionUnwindFunctionEnter:
        unsafe extern "system" fn(this: *mut ICorProfilerCallback11, functionId: FunctionID) -> HRESULT,
    /// Slot 63.
    pub ExceptionUnwindFunctionLeave: unsafe extern "system" fn(this: *mut ICorProfilerCallback11) -> HRESULT,
    /// Slot 64.
    pub ExceptionUnwindFinallyEnter:
        unsafe extern "system" fn(this: *mut ICorProfilerCallback11, functionId: FunctionID) -> HRESULT,
    /// Slot 65.
    pub ExceptionUnwindFinallyLeave: unsafe extern "system" fn(this: *mut ICorProfilerCallback11) -> HRESULT,
    /// Slot 66.
    pub ExceptionCatcherEnter: unsafe extern "system" fn(
        this: *mut ICorProfilerCallback11,
        functionId: FunctionID,
        objectId: ObjectID,
    ) -> HRESULT,
    /// Slot 67.
    pub ExceptionCatcherLeave: unsafe extern "system" fn(this: *mut ICorProfilerCallback11) -> HRESULT,
    /// Slot 68.
    pub COMClassicVTableCreated: unsafe extern "system" fn(
        this: *mut ICorProfilerCallback11,
        wrappedClassId: ClassID,
        implementedIID: REFGUID,
        pVTable: *mut c_void,
        cSlots: ULONG,
    ) -> HRESULT,
    /// Slot 69.
    pub COMClassicVTableDestroyed: unsafe extern "system" fn(
        this: *mut ICorProfilerCallback11,
        wrappedClassId: ClassID,
        implementedIID: REFGUID,
        pVTable: *mut c_void,
    ) -> HRESULT,
    /// Slot 70.
    pub ExceptionCLRCatcherFound: unsafe extern "system" fn(this: *mut ICorProfilerCallback11) -> HRESULT,
    /// Slot 71.
    pub ExceptionCLRCatcherExecute: unsafe extern "system" fn(this: *mut ICorProfilerCallback11) -> HRESULT,

    // ---- ICorProfilerCallback2: 8 methods, slots 72..=79 ----
    /// Slot 72.
    pub ThreadNameChanged: unsafe extern "system" fn(
        this: *mut ICorProfilerCallback11,
        threadId: ThreadID,
        cchName: ULONG,
        name: *const WCHAR,
    ) -> HRESULT,
    /// Slot 73.
    pub GarbageCollectionStarted: unsafe extern "system" fn(
        this: *mut ICorProfilerCallback11,
        cGenerations: i32,
        generationCollected: *const BOOL,
        reason: COR_PRF_GC_REASON,
    ) -> HRESULT,
    /// Slot 74.
    pub SurvivingReferences: unsafe extern "system" fn(
        this: *mut ICorProfilerCallback11,
        cSurvivingObjectIDRanges: ULONG,
        objectIDRangeStart: *const ObjectID,
        cObjectIDRangeLength: *const ULONG,
    ) -> HRESULT,
    /// Slot 75.
    pub GarbageCollectionFinished: unsafe extern "system" fn(this: *mut ICorProfilerCallback11) -> HRESULT,
    /// Slot 76.
    pub FinalizeableObjectQueued: unsafe extern "system" fn(
        this: *mut ICorProfilerCallback11,
        finalizerFlags: DWORD,
        objectID: ObjectID,
    ) -> HRESULT,
    /// Slot 77.
    pub RootReferences2: unsafe extern "system" fn(
        this: *mut ICorProfilerCallback11,
        cRootRefs: ULONG,
        rootRefIds: *const ObjectID,
        rootKinds: *const COR_PRF_GC_ROOT_KIND,
        rootFlags: *const COR_PRF_GC_ROOT_FLAGS,
        rootIds: *const UINT_PTR,
    ) -> HRESULT,
    /// Slot 78.
    pub HandleCreated: unsafe extern "system" fn(
        this: *mut ICorProfilerCallback11,
        handleId: GCHandleID,
        initialObjectId: ObjectID,
    ) -> HRESULT,
    /// Slot 79.
    pub HandleDestroyed: unsafe extern "system" fn(this: *mut ICorProfilerCallback11, handleId: GCHandleID) -> HRESULT,

    // ---- ICorProfilerCallback3: 3 methods, slots 80..=82 ----
    /// Slot 80.
    pub InitializeForAttach: unsafe extern "system" fn(
        this: *mut ICorProfilerCallback11,
        pCorProfilerInfoUnk: *mut IUnknown,
        pvClientData: *mut c_void,
        cbClientData: UINT,
    ) -> HRESULT,
    /// Slot 81.
    pub ProfilerAttachComplete: unsafe extern "system" fn(this: *mut ICorProfilerCallback11) -> HRESULT,
    /// Slot 82.
    pub ProfilerDetachSucceeded: unsafe extern "system" fn(this: *mut ICorProfilerCallback11) -> HRESULT,

    // ---- ICorProfilerCallback4: 6 methods, slots 83..=88 ----
    /// Slot 83.
    pub ReJITCompilationStarted: unsafe extern "system" fn(
        this: *mut ICorProfilerCallback11,
        functionId: FunctionID,
        rejitId: ReJITID,
        fIsSafeToBlock: BOOL,
    ) -> HRESULT,
    /// Slot 84.
    pub GetReJITParameters: unsafe extern "system" fn(
        this: *mut ICorProfilerCallback11,
        moduleId: ModuleID,
        methodId: mdMethodDef,
        pFunctionControl: *mut ICorProfilerFunctionControl,
    ) -> HRESULT,
    /// Slot 85.
    pub ReJITCompilationFinished: unsafe extern "system" fn(
        this: *mut ICorProfilerCallback11,
        functionId: FunctionID,
        rejitId: ReJITID,
        hrStatus: HRESULT,
        fIsSafeToBlock: BOOL,
    ) -> HRESULT,
    /// Slot 86.
    pub ReJITError: unsafe extern "system" fn(
        this: *mut ICorProfilerCallback11,
        moduleId: ModuleID,
        methodId: mdMethodDef,
        functionId: FunctionID,
        hrStatus: HRESULT,
    ) -> HRESULT,
    /// Slot 87.
    pub MovedReferences2: unsafe extern "system" fn(
        this: *mut ICorProfilerCallback11,
        cMovedObjectIDRanges: ULONG,
        oldObjectIDRangeStart: *const ObjectID,
        newObjectIDRangeStart: *const ObjectID,
        cObjectIDRangeLength: *const SIZE_T,
    ) -> HRESULT,
    /// Slot 88.
    pub SurvivingReferences2: unsafe extern "system" fn(
        this: *mut ICorProfilerCallback11,
        cSurvivingObjectIDRanges: ULONG,
        objectIDRangeStart: *const ObjectID,
        cObjectIDRangeLength: *const SIZE_T,
    ) -> HRESULT,

    // ---- ICorProfilerCallback5: 1 methods, slots 89..=89 ----
    /// Slot 89.
    pub ConditionalWeakTableElementReferences: unsafe extern "system" fn(
        this: *mut ICorProfilerCallback11,
        cRootRefs: ULONG,
        keyRefIds: *const ObjectID,
        valueRefIds: *const ObjectID,
        rootIds: *const GCHandleID,
    ) -> HRESULT,

    // ---- ICorProfilerCallback6: 1 methods, slots 90..=90 ----
    /// Slot 90.
    pub GetAssemblyReferences: unsafe extern "system" fn(
        this: *mut ICorProfilerCallback11,
        wszAssemblyPath: *const WCHAR,
        pAsmRefProvider: *mut ICorProfilerAssemblyReferenceProvider,
    ) -> HRESULT,

    // ---- ICorProfilerCallback7: 1 methods, slots 91..=91 ----
    /// Slot 91.
    pub ModuleInMemorySymbolsUpdated:
        unsafe extern "system" fn(this: *mut ICorProfilerCallback11, moduleId: ModuleID) -> HRESULT,

    // ---- ICorProfilerCallback8: 2 methods, slots 92..=93 ----
    /// Slot 92.
    pub DynamicMethodJITCompilationStarted: unsafe extern "system" fn(
        this: *mut ICorProfilerCallback11,
        functionId: FunctionID,
        fIsSafeToBlock: BOOL,
        pILHeader: LPCBYTE,
        cbILHeader: ULONG,
    ) -> HRESULT,
    /// Slot 93.
    pub DynamicMethodJITCompilationFinished: unsafe extern "system" fn(
        this: *mut ICorProfilerCallback11,
        functionId: FunctionID,
        hrStatus: HRESULT,
        fIsSafeToBlock: BOOL,
    ) -> HRESULT,

    // ---- ICorProfilerCallback9: 1 methods, slots 94..=94 ----
    /// Slot 94.
    pub DynamicMethodUnloaded:
        unsafe extern "system" fn(this: *mut ICorProfilerCallback11, functionId: FunctionID) -> HRESULT,

    // ---- ICorProfilerCallback10: 2 methods, slots 95..=96 ----
    /// Slot 95.
    pub EventPipeEventDelivered: unsafe extern "system" fn(
        this: *mut ICorProfilerCallback11,
        provider: EVENTPIPE_PROVIDER,
        eventId: DWORD,
        eventVersion: DWORD,
        cbMetadataBlob: ULONG,
        metadataBlob: LPCBYTE,
        cbEventData: ULONG,
        eventData: LPCBYTE,
        pActivityId: LPCGUID,
        pRelatedActivityId: LPCGUID,
        eventThread: ThreadID,
        numStackFrames: ULONG,
        stackFrames: *const UINT_PTR,
    ) -> HRESULT,
    /// Slot 96.
    pub EventPipeProviderCreated:
        unsafe extern "system" fn(this: *mut ICorProfilerCallback11, provider: EVENTPIPE_PROVIDER) -> HRESULT,

    // ---- ICorProfilerCallback11: 1 methods, slots 97..=97 ----
    /// Slot 97.
    pub LoadAsNotificationOnly:
        unsafe extern "system" fn(this: *mut ICorProfilerCallback11, pbNotificationOnly: *mut BOOL) -> HRESULT,
}
