//! Base types, HRESULTs, `GUID`, the profiler ID types and the plain structs
//! that appear in `corprof.idl` signatures.
//!
//! Widths are those of the CoreCLR PAL on 64-bit Linux (`pal_mstypes.h`),
//! which deliberately differs from `windows.h`: `LONG`/`ULONG`/`DWORD` are
//! 32-bit and `WCHAR` is a 16-bit `char16_t`.

use core::ffi::c_void;

// ---------------------------------------------------------------------------
// Base types (pal_mstypes.h)
// ---------------------------------------------------------------------------

/// `LONG HRESULT`; `LONG` is `int` in the PAL.
pub type HRESULT = i32;
pub type BOOL = i32;
pub type BYTE = u8;
pub type USHORT = u16;
pub type UINT = u32;
pub type LONG = i32;
pub type ULONG = u32;
pub type DWORD = u32;
pub type LONG32 = i32;
pub type ULONG32 = u32;
pub type UINT8 = u8;
pub type UINT32 = u32;
pub type UINT64 = u64;
pub type UINT_PTR = usize;
pub type SIZE_T = usize;
/// `char16_t` on Linux (not the 32-bit `wchar_t`).
pub type WCHAR = u16;
pub type LPWSTR = *mut WCHAR;
pub type LPCWSTR = *const WCHAR;
pub type LPCBYTE = *const BYTE;
pub type LPBYTE = *mut BYTE;
pub type HANDLE = *mut c_void;
pub type PVOID = *mut c_void;

pub const TRUE: BOOL = 1;
pub const FALSE: BOOL = 0;

// ---------------------------------------------------------------------------
// HRESULTs (palrt.h, corerror.h)
// ---------------------------------------------------------------------------

pub const S_OK: HRESULT = 0;
pub const S_FALSE: HRESULT = 1;
pub const E_NOTIMPL: HRESULT = 0x8000_4001_u32 as HRESULT;
pub const E_NOINTERFACE: HRESULT = 0x8000_4002_u32 as HRESULT;
pub const E_POINTER: HRESULT = 0x8000_4003_u32 as HRESULT;
pub const E_FAIL: HRESULT = 0x8000_4005_u32 as HRESULT;
pub const E_OUTOFMEMORY: HRESULT = 0x8007_000E_u32 as HRESULT;
pub const E_INVALIDARG: HRESULT = 0x8007_0057_u32 as HRESULT;
pub const CLASS_E_NOAGGREGATION: HRESULT = 0x8004_0110_u32 as HRESULT;
pub const CLASS_E_CLASSNOTAVAILABLE: HRESULT = 0x8004_0111_u32 as HRESULT;

// corerror.h: EMAKEHR(x) = MAKE_HRESULT(SEVERITY_ERROR, FACILITY_URT = 0x13, x).
pub const CORPROF_E_FUNCTION_NOT_COMPILED: HRESULT = 0x8013_1350_u32 as HRESULT;
pub const CORPROF_E_DATAINCOMPLETE: HRESULT = 0x8013_1351_u32 as HRESULT;
pub const CORPROF_E_FUNCTION_NOT_IL: HRESULT = 0x8013_1354_u32 as HRESULT;
pub const CORPROF_E_NOT_MANAGED_THREAD: HRESULT = 0x8013_1355_u32 as HRESULT;
pub const CORPROF_E_CALL_ONLY_FROM_INIT: HRESULT = 0x8013_1356_u32 as HRESULT;
pub const CORPROF_E_NOT_YET_AVAILABLE: HRESULT = 0x8013_135B_u32 as HRESULT;
pub const CORPROF_E_STACKSNAPSHOT_INVALID_TGT_THREAD: HRESULT = 0x8013_135E_u32 as HRESULT;
pub const CORPROF_E_STACKSNAPSHOT_UNMANAGED_CTX: HRESULT = 0x8013_135F_u32 as HRESULT;
pub const CORPROF_E_STACKSNAPSHOT_UNSAFE: HRESULT = 0x8013_1360_u32 as HRESULT;
pub const CORPROF_E_STACKSNAPSHOT_ABORTED: HRESULT = 0x8013_1361_u32 as HRESULT;
pub const CORPROF_E_UNSUPPORTED_CALL_SEQUENCE: HRESULT = 0x8013_1363_u32 as HRESULT;
pub const CORPROF_E_ASYNCHRONOUS_UNSAFE: HRESULT = 0x8013_1364_u32 as HRESULT;
pub const CORPROF_E_PROFILER_DETACHING: HRESULT = 0x8013_1367_u32 as HRESULT;
pub const CORPROF_E_PROFILER_NOT_ATTACHABLE: HRESULT = 0x8013_1368_u32 as HRESULT;
pub const CORPROF_E_RUNTIME_UNINITIALIZED: HRESULT = 0x8013_1371_u32 as HRESULT;
pub const CORPROF_E_IMMUTABLE_FLAGS_SET: HRESULT = 0x8013_1372_u32 as HRESULT;
pub const CORPROF_E_PROFILER_NOT_YET_INITIALIZED: HRESULT = 0x8013_1373_u32 as HRESULT;
pub const CORPROF_E_INCONSISTENT_WITH_FLAGS: HRESULT = 0x8013_1374_u32 as HRESULT;
pub const CORPROF_E_PROFILER_CANCEL_ACTIVATION: HRESULT = 0x8013_1375_u32 as HRESULT;
pub const CORPROF_E_MODULE_IS_DYNAMIC: HRESULT = 0x8013_137A_u32 as HRESULT;
pub const CORPROF_E_SUSPENSION_IN_PROGRESS: HRESULT = 0x8013_1388_u32 as HRESULT;
pub const CORPROF_E_NOT_GC_OBJECT: HRESULT = 0x8013_1389_u32 as HRESULT;

// ---------------------------------------------------------------------------
// GUID
// ---------------------------------------------------------------------------

/// `struct _GUID { ULONG Data1; USHORT Data2; USHORT Data3; UCHAR Data4[8]; }`.
#[repr(C)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct GUID {
    pub data1: u32,
    pub data2: u16,
    pub data3: u16,
    pub data4: [u8; 8],
}

impl GUID {
    pub const fn new(data1: u32, data2: u16, data3: u16, data4: [u8; 8]) -> Self {
        Self { data1, data2, data3, data4 }
    }
}

pub type IID = GUID;
pub type CLSID = GUID;
/// `const IID &` in C++ is passed as a pointer.
pub type REFIID = *const GUID;
pub type REFGUID = *const GUID;
pub type REFCLSID = *const GUID;
pub type LPCGUID = *const GUID;

// ---------------------------------------------------------------------------
// Profiler ID types (corprof.idl: all `UINT_PTR`)
// ---------------------------------------------------------------------------

pub type ProcessID = UINT_PTR;
pub type AssemblyID = UINT_PTR;
pub type AppDomainID = UINT_PTR;
pub type ModuleID = UINT_PTR;
pub type ClassID = UINT_PTR;
pub type ThreadID = UINT_PTR;
pub type ContextID = UINT_PTR;
pub type FunctionID = UINT_PTR;
pub type ObjectID = UINT_PTR;
pub type GCHandleID = UINT_PTR;
pub type COR_PRF_ELT_INFO = UINT_PTR;
pub type ReJITID = UINT_PTR;
/// The idl declares `union { FunctionID functionID; UINT_PTR clientID; }`.
/// Both members are `UINT_PTR`, so the union is one pointer-sized integer
/// and is passed exactly like one (INTEGER class on SysV x86_64, an X
/// register on AAPCS64).
pub type FunctionIDOrClientID = UINT_PTR;
/// Opaque handle for one stack frame, only valid inside the callback that
/// received it.
pub type COR_PRF_FRAME_INFO = UINT_PTR;

pub type EVENTPIPE_PROVIDER = UINT_PTR;
pub type EVENTPIPE_EVENT = UINT_PTR;
pub type EVENTPIPE_SESSION = UINT64;
/// `typedef void** ObjectHandleID;`
pub type ObjectHandleID = *mut *mut c_void;

// ---------------------------------------------------------------------------
// Metadata scalars shared by corprof.idl and cor.h (corhdr.h)
// ---------------------------------------------------------------------------

/// `typedef uint32_t mdToken;` (the idl's `LONG32` typedef is MIDL-only).
pub type mdToken = u32;
pub type mdModule = mdToken;
pub type mdTypeRef = mdToken;
pub type mdTypeDef = mdToken;
pub type mdFieldDef = mdToken;
pub type mdMethodDef = mdToken;
pub type mdParamDef = mdToken;
pub type mdInterfaceImpl = mdToken;
pub type mdMemberRef = mdToken;
pub type mdCustomAttribute = mdToken;
pub type mdPermission = mdToken;
pub type mdSignature = mdToken;
pub type mdEvent = mdToken;
pub type mdProperty = mdToken;
pub type mdModuleRef = mdToken;
pub type mdAssembly = mdToken;
pub type mdAssemblyRef = mdToken;
pub type mdFile = mdToken;
pub type mdExportedType = mdToken;
pub type mdManifestResource = mdToken;
pub type mdTypeSpec = mdToken;
pub type mdGenericParam = mdToken;
pub type mdMethodSpec = mdToken;
pub type mdGenericParamConstraint = mdToken;
pub type mdString = mdToken;
pub type mdCPToken = mdToken;

pub type COR_SIGNATURE = u8;
pub type PCOR_SIGNATURE = *mut COR_SIGNATURE;
pub type PCCOR_SIGNATURE = *const COR_SIGNATURE;

/// `typedef enum CorElementType {...} CorElementType;` A C enum, so 4 bytes
/// wide wherever it is passed or written through a pointer (for example
/// `ICorProfilerInfo::IsArrayClass`). The `ELEMENT_TYPE_*` values themselves
/// are declared as `u8` because that is how signature blobs encode them.
pub type CorElementType = u32;

// ---------------------------------------------------------------------------
// Enumerations passed by value or through pointers: C enums are `int`-sized.
// Their values live in `flags.rs`.
// ---------------------------------------------------------------------------

pub type COR_PRF_MONITOR = u32;
pub type COR_PRF_HIGH_MONITOR = u32;
pub type COR_PRF_SNAPSHOT_INFO = u32;
pub type COR_PRF_STATIC_TYPE = u32;
pub type COR_PRF_JIT_CACHE = u32;
pub type COR_PRF_TRANSITION_REASON = u32;
pub type COR_PRF_SUSPEND_REASON = u32;
pub type COR_PRF_RUNTIME_TYPE = u32;
pub type COR_PRF_REJIT_FLAGS = u32;
pub type COR_PRF_EVENTPIPE_PARAM_TYPE = u32;
pub type COR_PRF_EVENTPIPE_LEVEL = u32;
pub type COR_PRF_HANDLE_TYPE = u32;
pub type COR_PRF_GC_ROOT_KIND = u32;
pub type COR_PRF_GC_ROOT_FLAGS = u32;
pub type COR_PRF_FINALIZER_FLAGS = u32;
pub type COR_PRF_GC_GENERATION = u32;
pub type COR_PRF_CLAUSE_TYPE = u32;
pub type COR_PRF_GC_REASON = u32;
pub type COR_PRF_MODULE_FLAGS = u32;
pub type COR_PRF_CODEGEN_FLAGS = u32;

// ---------------------------------------------------------------------------
// Structs (corprof.idl, cor.h)
// ---------------------------------------------------------------------------

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct COR_IL_MAP {
    pub oldOffset: ULONG32,
    pub newOffset: ULONG32,
    pub fAccurate: BOOL,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct COR_DEBUG_IL_TO_NATIVE_MAP {
    /// An IL offset, or one of `NO_MAPPING`, `PROLOG`, `EPILOG`.
    pub ilOffset: ULONG32,
    pub nativeStartOffset: ULONG32,
    pub nativeEndOffset: ULONG32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct COR_FIELD_OFFSET {
    pub ridOfField: mdFieldDef,
    pub ulOffset: ULONG,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct COR_PRF_FUNCTION_ARGUMENT_RANGE {
    pub startAddress: UINT_PTR,
    pub length: ULONG,
}

/// Variable-length: `ranges` really holds `numRanges` entries. The caller of
/// `GetFunctionEnter3Info` allocates `*pcbArgumentInfo` bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct COR_PRF_FUNCTION_ARGUMENT_INFO {
    pub numRanges: ULONG,
    pub totalArgumentSize: ULONG,
    pub ranges: [COR_PRF_FUNCTION_ARGUMENT_RANGE; 1],
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct COR_PRF_CODE_INFO {
    pub startAddress: UINT_PTR,
    pub size: SIZE_T,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct COR_PRF_FUNCTION {
    pub functionId: FunctionID,
    pub reJitId: ReJITID,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct COR_PRF_METHOD {
    pub moduleId: ModuleID,
    pub methodId: mdMethodDef,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct OSINFO {
    pub dwOSPlatformId: DWORD,
    pub dwOSMajorVersion: DWORD,
    pub dwOSMinorVersion: DWORD,
}

/// cor.h's definition (the idl carries a MIDL-only copy of the same shape).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ASSEMBLYMETADATA {
    pub usMajorVersion: USHORT,
    pub usMinorVersion: USHORT,
    pub usBuildNumber: USHORT,
    pub usRevisionNumber: USHORT,
    pub szLocale: LPWSTR,
    pub cbLocale: ULONG,
    pub rProcessor: *mut DWORD,
    pub ulProcessor: ULONG,
    pub rOS: *mut OSINFO,
    pub ulOS: ULONG,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct COR_PRF_ASSEMBLY_REFERENCE_INFO {
    pub pbPublicKeyOrToken: *mut c_void,
    pub cbPublicKeyOrToken: ULONG,
    pub szName: LPCWSTR,
    pub pMetaData: *mut ASSEMBLYMETADATA,
    pub pbHashValue: *mut c_void,
    pub cbHashValue: ULONG,
    pub dwAssemblyRefFlags: DWORD,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct COR_PRF_GC_GENERATION_RANGE {
    pub generation: COR_PRF_GC_GENERATION,
    pub rangeStart: ObjectID,
    pub rangeLength: UINT_PTR,
    pub rangeLengthReserved: UINT_PTR,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct COR_PRF_NONGC_HEAP_RANGE {
    pub rangeStart: ObjectID,
    pub rangeLength: UINT_PTR,
    pub rangeLengthReserved: UINT_PTR,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct COR_PRF_EX_CLAUSE_INFO {
    pub clauseType: COR_PRF_CLAUSE_TYPE,
    pub programCounter: UINT_PTR,
    pub framePointer: UINT_PTR,
    pub shadowStackPointer: UINT_PTR,
}

/// Passed by value to `EventPipeAddProviderToSession` (32 bytes, so in
/// memory on both SysV x86_64 and AAPCS64; `extern "C"` handles that).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct COR_PRF_EVENTPIPE_PROVIDER_CONFIG {
    pub providerName: *const WCHAR,
    pub keywords: UINT64,
    pub loggingLevel: UINT32,
    pub filterData: *const WCHAR,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct COR_PRF_EVENTPIPE_PARAM_DESC {
    pub r#type: UINT32,
    pub elementType: UINT32,
    pub name: *const WCHAR,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct COR_PRF_EVENT_DATA {
    pub ptr: UINT64,
    pub size: UINT32,
    pub reserved: UINT32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct COR_PRF_FILTER_DATA {
    pub Ptr: UINT64,
    pub Size: UINT32,
    pub Type: UINT32,
}
