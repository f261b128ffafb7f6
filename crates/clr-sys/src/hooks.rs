//! Function-pointer typedefs from corprof.idl: enter/leave/tailcall hooks,
//! function-ID mappers and the enumeration callbacks.
//!
//! The idl spells these `STDMETHODCALLTYPE` or `__stdcall`; the idl itself
//! defines `STDMETHODCALLTYPE` as nothing, and the PAL (`pal_mstypes.h`)
//! defines `__stdcall` as nothing except on 32-bit x86. On x86_64 and
//! aarch64 Linux every one of them is therefore a plain C function.
//!
//! The C typedefs name *function types*; the API takes pointers to them,
//! which is what these Rust `fn` types are. Where a parameter may be NULL the
//! vtables wrap them in `Option`.

use core::ffi::c_void;

use crate::types::*;

// Deprecated (V1) hooks, taken by `ICorProfilerInfo::SetEnterLeaveFunctionHooks`.
pub type FunctionEnter = unsafe extern "C" fn(funcID: FunctionID);
pub type FunctionLeave = unsafe extern "C" fn(funcID: FunctionID);
pub type FunctionTailcall = unsafe extern "C" fn(funcID: FunctionID);

// Deprecated (V2) hooks, taken by `ICorProfilerInfo2::SetEnterLeaveFunctionHooks2`.
pub type FunctionEnter2 = unsafe extern "C" fn(
    funcId: FunctionID,
    clientData: UINT_PTR,
    func: COR_PRF_FRAME_INFO,
    argumentInfo: *mut COR_PRF_FUNCTION_ARGUMENT_INFO,
);
pub type FunctionLeave2 = unsafe extern "C" fn(
    funcId: FunctionID,
    clientData: UINT_PTR,
    func: COR_PRF_FRAME_INFO,
    retvalRange: *mut COR_PRF_FUNCTION_ARGUMENT_RANGE,
);
pub type FunctionTailcall2 = unsafe extern "C" fn(funcId: FunctionID, clientData: UINT_PTR, func: COR_PRF_FRAME_INFO);

// Hooks taken by `ICorProfilerInfo3::SetEnterLeaveFunctionHooks3`.
//
// The idl's note on every enter/leave/tailcall hook: the runtime saves no
// registers before calling them, so an implementation must preserve every
// register it uses (the idl says `__declspec(naked)`), must not block and
// must not call into managed code or allocate managed memory.
pub type FunctionEnter3 = unsafe extern "C" fn(functionIDOrClientID: FunctionIDOrClientID);
pub type FunctionLeave3 = unsafe extern "C" fn(functionIDOrClientID: FunctionIDOrClientID);
pub type FunctionTailcall3 = unsafe extern "C" fn(functionIDOrClientID: FunctionIDOrClientID);

// Hooks taken by `ICorProfilerInfo3::SetEnterLeaveFunctionHooks3WithInfo`;
// `eltInfo` is only valid during the call and is what
// `GetFunctionEnter3Info` & co. take.
pub type FunctionEnter3WithInfo =
    unsafe extern "C" fn(functionIDOrClientID: FunctionIDOrClientID, eltInfo: COR_PRF_ELT_INFO);
pub type FunctionLeave3WithInfo =
    unsafe extern "C" fn(functionIDOrClientID: FunctionIDOrClientID, eltInfo: COR_PRF_ELT_INFO);
pub type FunctionTailcall3WithInfo =
    unsafe extern "C" fn(functionIDOrClientID: FunctionIDOrClientID, eltInfo: COR_PRF_ELT_INFO);

/// `typedef UINT_PTR __stdcall FunctionIDMapper(FunctionID funcId, BOOL *pbHookFunction);`
/// The returned value replaces the FunctionID given to the hooks; per the
/// idl it must not be 0 unless `*pbHookFunction` is set to FALSE.
pub type FunctionIDMapper = unsafe extern "C" fn(funcId: FunctionID, pbHookFunction: *mut BOOL) -> UINT_PTR;

/// `typedef UINT_PTR __stdcall FunctionIDMapper2(FunctionID funcId, void *clientData, BOOL *pbHookFunction);`
pub type FunctionIDMapper2 =
    unsafe extern "C" fn(funcId: FunctionID, clientData: *mut c_void, pbHookFunction: *mut BOOL) -> UINT_PTR;

/// `typedef HRESULT __stdcall StackSnapshotCallback(...)`, called by
/// `ICorProfilerInfo2::DoStackSnapshot` once per managed frame (`funcId !=
/// 0`) or run of unmanaged frames (`funcId == 0`). `context` is only
/// meaningful when `COR_PRF_SNAPSHOT_REGISTER_CONTEXT` was requested.
/// Note the idl's parameter order: `contextSize` comes *before* `context`.
pub type StackSnapshotCallback = unsafe extern "C" fn(
    funcId: FunctionID,
    ip: UINT_PTR,
    frameInfo: COR_PRF_FRAME_INFO,
    contextSize: ULONG32,
    context: *mut BYTE,
    clientData: *mut c_void,
) -> HRESULT;

/// `typedef BOOL ObjectReferenceCallback(ObjectID root, ObjectID *reference, void *clientData);`
pub type ObjectReferenceCallback =
    unsafe extern "C" fn(root: ObjectID, reference: *mut ObjectID, clientData: *mut c_void) -> BOOL;

/// `typedef BOOL (*ObjectCallback)(ObjectID object, void *callbackState);`
pub type ObjectCallback = unsafe extern "C" fn(object: ObjectID, callbackState: *mut c_void) -> BOOL;

/// `typedef void EventPipeProviderCallback(...)`.
pub type EventPipeProviderCallback = unsafe extern "C" fn(
    source_id: *const UINT8,
    is_enabled: UINT32,
    level: UINT8,
    match_any_keywords: UINT64,
    match_all_keywords: UINT64,
    filter_data: *mut COR_PRF_FILTER_DATA,
    callback_data: *mut c_void,
);
