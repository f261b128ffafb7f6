//! The `ICorProfilerCallback11` vtable: every slot in `corprof.idl` order (the order and the
//! signatures come from `sonde_clr_sys::ICorProfilerCallback11Vtbl`, so a mismatch fails to
//! compile). Slots Sonde handles point to `crate::callback`; every other callback is a no-op that returns
//! S_OK: the runtime only calls those it was asked for through the event mask.

// Every slot is spelled out, including `Name: Name`, so the table reads as the idl does.
#![allow(clippy::redundant_field_names)]

use crate::callback::*;
use core::ffi::c_void;
use sonde_clr_sys::*;

macro_rules! ignored {
    ($($name:ident($($arg:ident: $ty:ty),*);)*) => {
        $(
            #[allow(non_snake_case)]
            unsafe extern "system" fn $name(_this: *mut ICorProfilerCallback11 $(, $arg: $ty)*) -> HRESULT {
                $(let _ = $arg;)*
                S_OK
            }
        )*
    };
}

ignored! {
    AppDomainCreationStarted(appDomainId: AppDomainID);
    AppDomainCreationFinished(appDomainId: AppDomainID, hrStatus: HRESULT);
    AppDomainShutdownStarted(appDomainId: AppDomainID);
    AppDomainShutdownFinished(appDomainId: AppDomainID, hrStatus: HRESULT);
    AssemblyLoadStarted(assemblyId: AssemblyID);
    AssemblyLoadFinished(assemblyId: AssemblyID, hrStatus: HRESULT);
    AssemblyUnloadStarted(assemblyId: AssemblyID);
    AssemblyUnloadFinished(assemblyId: AssemblyID, hrStatus: HRESULT);
    ModuleLoadStarted(moduleId: ModuleID);
    ModuleUnloadStarted(moduleId: ModuleID);
    ModuleUnloadFinished(moduleId: ModuleID, hrStatus: HRESULT);
    ModuleAttachedToAssembly(moduleId: ModuleID, AssemblyId: AssemblyID);
    ClassLoadStarted(classId: ClassID);
    ClassLoadFinished(classId: ClassID, hrStatus: HRESULT);
    ClassUnloadStarted(classId: ClassID);
    ClassUnloadFinished(classId: ClassID, hrStatus: HRESULT);
    FunctionUnloadStarted(functionId: FunctionID);
    JITFunctionPitched(functionId: FunctionID);
    RemotingClientInvocationStarted();
    RemotingClientSendingMessage(pCookie: *mut GUID, fIsAsync: BOOL);
    RemotingClientReceivingReply(pCookie: *mut GUID, fIsAsync: BOOL);
    RemotingClientInvocationFinished();
    RemotingServerReceivingMessage(pCookie: *mut GUID, fIsAsync: BOOL);
    RemotingServerInvocationStarted();
    RemotingServerInvocationReturned();
    RemotingServerSendingReply(pCookie: *mut GUID, fIsAsync: BOOL);
    UnmanagedToManagedTransition(functionId: FunctionID, reason: COR_PRF_TRANSITION_REASON);
    ManagedToUnmanagedTransition(functionId: FunctionID, reason: COR_PRF_TRANSITION_REASON);
    RuntimeSuspendFinished();
    RuntimeResumeStarted();
    RuntimeThreadSuspended(threadId: ThreadID);
    RuntimeThreadResumed(threadId: ThreadID);
    MovedReferences(cMovedObjectIDRanges: ULONG, oldObjectIDRangeStart: *const ObjectID, newObjectIDRangeStart: *const ObjectID, cObjectIDRangeLength: *const ULONG);
    ObjectsAllocatedByClass(cClassCount: ULONG, classIds: *const ClassID, cObjects: *const ULONG);
    ObjectReferences(objectId: ObjectID, classId: ClassID, cObjectRefs: ULONG, objectRefIds: *const ObjectID);
    RootReferences(cRootRefs: ULONG, rootRefIds: *const ObjectID);
    ExceptionSearchFunctionEnter(functionId: FunctionID);
    ExceptionSearchFunctionLeave();
    ExceptionSearchFilterEnter(functionId: FunctionID);
    ExceptionSearchFilterLeave();
    ExceptionSearchCatcherFound(functionId: FunctionID);
    ExceptionOSHandlerEnter(__unused: UINT_PTR);
    ExceptionOSHandlerLeave(__unused: UINT_PTR);
    ExceptionUnwindFinallyEnter(functionId: FunctionID);
    ExceptionUnwindFinallyLeave();
    COMClassicVTableCreated(wrappedClassId: ClassID, implementedIID: REFGUID, pVTable: *mut c_void, cSlots: ULONG);
    COMClassicVTableDestroyed(wrappedClassId: ClassID, implementedIID: REFGUID, pVTable: *mut c_void);
    ExceptionCLRCatcherFound();
    ExceptionCLRCatcherExecute();
    SurvivingReferences(cSurvivingObjectIDRanges: ULONG, objectIDRangeStart: *const ObjectID, cObjectIDRangeLength: *const ULONG);
    FinalizeableObjectQueued(finalizerFlags: DWORD, objectID: ObjectID);
    RootReferences2(cRootRefs: ULONG, rootRefIds: *const ObjectID, rootKinds: *const COR_PRF_GC_ROOT_KIND, rootFlags: *const COR_PRF_GC_ROOT_FLAGS, rootIds: *const UINT_PTR);
    HandleCreated(handleId: GCHandleID, initialObjectId: ObjectID);
    HandleDestroyed(handleId: GCHandleID);
    ReJITCompilationStarted(functionId: FunctionID, rejitId: ReJITID, fIsSafeToBlock: BOOL);
    GetReJITParameters(moduleId: ModuleID, methodId: mdMethodDef, pFunctionControl: *mut ICorProfilerFunctionControl);
    ReJITCompilationFinished(functionId: FunctionID, rejitId: ReJITID, hrStatus: HRESULT, fIsSafeToBlock: BOOL);
    ReJITError(moduleId: ModuleID, methodId: mdMethodDef, functionId: FunctionID, hrStatus: HRESULT);
    MovedReferences2(cMovedObjectIDRanges: ULONG, oldObjectIDRangeStart: *const ObjectID, newObjectIDRangeStart: *const ObjectID, cObjectIDRangeLength: *const SIZE_T);
    SurvivingReferences2(cSurvivingObjectIDRanges: ULONG, objectIDRangeStart: *const ObjectID, cObjectIDRangeLength: *const SIZE_T);
    ConditionalWeakTableElementReferences(cRootRefs: ULONG, keyRefIds: *const ObjectID, valueRefIds: *const ObjectID, rootIds: *const GCHandleID);
    GetAssemblyReferences(wszAssemblyPath: *const WCHAR, pAsmRefProvider: *mut ICorProfilerAssemblyReferenceProvider);
    ModuleInMemorySymbolsUpdated(moduleId: ModuleID);
    DynamicMethodUnloaded(functionId: FunctionID);
    EventPipeProviderCreated(provider: EVENTPIPE_PROVIDER);
}

pub(crate) static VTABLE: ICorProfilerCallback11Vtbl = ICorProfilerCallback11Vtbl {
    QueryInterface: query_interface,
    AddRef: add_ref,
    Release: release,
    Initialize: initialize,
    Shutdown: shutdown,
    AppDomainCreationStarted: AppDomainCreationStarted,
    AppDomainCreationFinished: AppDomainCreationFinished,
    AppDomainShutdownStarted: AppDomainShutdownStarted,
    AppDomainShutdownFinished: AppDomainShutdownFinished,
    AssemblyLoadStarted: AssemblyLoadStarted,
    AssemblyLoadFinished: AssemblyLoadFinished,
    AssemblyUnloadStarted: AssemblyUnloadStarted,
    AssemblyUnloadFinished: AssemblyUnloadFinished,
    ModuleLoadStarted: ModuleLoadStarted,
    ModuleLoadFinished: module_load_finished,
    ModuleUnloadStarted: ModuleUnloadStarted,
    ModuleUnloadFinished: ModuleUnloadFinished,
    ModuleAttachedToAssembly: ModuleAttachedToAssembly,
    ClassLoadStarted: ClassLoadStarted,
    ClassLoadFinished: ClassLoadFinished,
    ClassUnloadStarted: ClassUnloadStarted,
    ClassUnloadFinished: ClassUnloadFinished,
    FunctionUnloadStarted: FunctionUnloadStarted,
    JITCompilationStarted: jit_compilation_started,
    JITCompilationFinished: jit_compilation_finished,
    JITCachedFunctionSearchStarted: jit_cached_function_search_started,
    JITCachedFunctionSearchFinished: jit_cached_function_search_finished,
    JITFunctionPitched: JITFunctionPitched,
    JITInlining: jit_inlining,
    ThreadCreated: thread_created,
    ThreadDestroyed: thread_destroyed,
    ThreadAssignedToOSThread: thread_assigned_to_os_thread,
    RemotingClientInvocationStarted: RemotingClientInvocationStarted,
    RemotingClientSendingMessage: RemotingClientSendingMessage,
    RemotingClientReceivingReply: RemotingClientReceivingReply,
    RemotingClientInvocationFinished: RemotingClientInvocationFinished,
    RemotingServerReceivingMessage: RemotingServerReceivingMessage,
    RemotingServerInvocationStarted: RemotingServerInvocationStarted,
    RemotingServerInvocationReturned: RemotingServerInvocationReturned,
    RemotingServerSendingReply: RemotingServerSendingReply,
    UnmanagedToManagedTransition: UnmanagedToManagedTransition,
    ManagedToUnmanagedTransition: ManagedToUnmanagedTransition,
    RuntimeSuspendStarted: runtime_suspend_started,
    RuntimeSuspendFinished: RuntimeSuspendFinished,
    RuntimeSuspendAborted: runtime_suspend_aborted,
    RuntimeResumeStarted: RuntimeResumeStarted,
    RuntimeResumeFinished: runtime_resume_finished,
    RuntimeThreadSuspended: RuntimeThreadSuspended,
    RuntimeThreadResumed: RuntimeThreadResumed,
    MovedReferences: MovedReferences,
    ObjectAllocated: object_allocated,
    ObjectsAllocatedByClass: ObjectsAllocatedByClass,
    ObjectReferences: ObjectReferences,
    RootReferences: RootReferences,
    ExceptionThrown: exception_thrown,
    ExceptionSearchFunctionEnter: ExceptionSearchFunctionEnter,
    ExceptionSearchFunctionLeave: ExceptionSearchFunctionLeave,
    ExceptionSearchFilterEnter: ExceptionSearchFilterEnter,
    ExceptionSearchFilterLeave: ExceptionSearchFilterLeave,
    ExceptionSearchCatcherFound: ExceptionSearchCatcherFound,
    ExceptionOSHandlerEnter: ExceptionOSHandlerEnter,
    ExceptionOSHandlerLeave: ExceptionOSHandlerLeave,
    ExceptionUnwindFunctionEnter: exception_unwind_function_enter,
    ExceptionUnwindFunctionLeave: exception_unwind_function_leave,
    ExceptionUnwindFinallyEnter: ExceptionUnwindFinallyEnter,
    ExceptionUnwindFinallyLeave: ExceptionUnwindFinallyLeave,
    ExceptionCatcherEnter: exception_catcher_enter,
    ExceptionCatcherLeave: exception_catcher_leave,
    COMClassicVTableCreated: COMClassicVTableCreated,
    COMClassicVTableDestroyed: COMClassicVTableDestroyed,
    ExceptionCLRCatcherFound: ExceptionCLRCatcherFound,
    ExceptionCLRCatcherExecute: ExceptionCLRCatcherExecute,
    ThreadNameChanged: thread_name_changed,
    GarbageCollectionStarted: garbage_collection_started,
    SurvivingReferences: SurvivingReferences,
    GarbageCollectionFinished: garbage_collection_finished,
    FinalizeableObjectQueued: FinalizeableObjectQueued,
    RootReferences2: RootReferences2,
    HandleCreated: HandleCreated,
    HandleDestroyed: HandleDestroyed,
    InitializeForAttach: initialize_for_attach,
    ProfilerAttachComplete: ProfilerAttachComplete,
    ProfilerDetachSucceeded: ProfilerDetachSucceeded,
    ReJITCompilationStarted: ReJITCompilationStarted,
    GetReJITParameters: GetReJITParameters,
    ReJITCompilationFinished: ReJITCompilationFinished,
    ReJITError: ReJITError,
    MovedReferences2: MovedReferences2,
    SurvivingReferences2: SurvivingReferences2,
    ConditionalWeakTableElementReferences: ConditionalWeakTableElementReferences,
    GetAssemblyReferences: GetAssemblyReferences,
    ModuleInMemorySymbolsUpdated: ModuleInMemorySymbolsUpdated,
    DynamicMethodJITCompilationStarted: dynamic_method_jit_compilation_started,
    DynamicMethodJITCompilationFinished: dynamic_method_jit_compilation_finished,
    DynamicMethodUnloaded: DynamicMethodUnloaded,
    EventPipeEventDelivered: event_pipe_event_delivered,
    EventPipeProviderCreated: EventPipeProviderCreated,
    LoadAsNotificationOnly: load_as_notification_only,
};
