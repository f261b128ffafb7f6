//! Layout tests. Every number below was counted by hand in the headers
//! (dotnet/runtime `src/coreclr/inc/corprof.idl` and `src/coreclr/inc/cor.h`),
//! not derived from the Rust declarations.

use core::mem::{offset_of, size_of};

use crate::*;

const PTR: usize = size_of::<usize>();

/// Slot index of a vtable field.
macro_rules! slot {
    ($vtbl:ty, $field:ident) => {
        offset_of!($vtbl, $field) / PTR
    };
}

/// Parses the `XXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX` text of an idl `uuid()`.
fn guid_from_text(s: &str) -> GUID {
    let s = s.trim_matches(|c| c == '{' || c == '}');
    let parts: Vec<&str> = s.split('-').collect();
    assert_eq!(parts.len(), 5, "{s}");
    let tail = format!("{}{}", parts[3], parts[4]);
    assert_eq!(tail.len(), 16, "{s}");
    let mut data4 = [0u8; 8];
    for (i, b) in data4.iter_mut().enumerate() {
        *b = u8::from_str_radix(&tail[2 * i..2 * i + 2], 16).unwrap();
    }
    GUID::new(
        u32::from_str_radix(parts[0], 16).unwrap(),
        u16::from_str_radix(parts[1], 16).unwrap(),
        u16::from_str_radix(parts[2], 16).unwrap(),
        data4,
    )
}

// ---------------------------------------------------------------------------
// Slot counts
// ---------------------------------------------------------------------------

// ICorProfilerCallback11Vtbl: IUnknown 3, ICorProfilerCallback 69,
// Callback2 8, Callback3 3, Callback4 6, Callback5 1, Callback6 1,
// Callback7 1, Callback8 2, Callback9 1, Callback10 2, Callback11 1.
const CALLBACK11_COUNTED: usize = 3 + 69 + 8 + 3 + 6 + 1 + 1 + 1 + 2 + 1 + 2 + 1;

// ICorProfilerInfo14Vtbl: IUnknown 3, ICorProfilerInfo 33, Info2 21,
// Info3 14, Info4 10, Info5 2, Info6 1, Info7 3, Info8 3, Info9 3,
// Info10 6, Info11 2, Info12 7, Info13 3, Info14 3.
const INFO14_COUNTED: usize = 3 + 33 + 21 + 14 + 10 + 2 + 1 + 3 + 3 + 3 + 6 + 2 + 7 + 3 + 3;

// IMetaDataImport: IUnknown 3 + 62; IMetaDataImport2 adds 8.
const METADATA_IMPORT_COUNTED: usize = 3 + 62;
const METADATA_IMPORT2_COUNTED: usize = METADATA_IMPORT_COUNTED + 8;

#[test]
fn slot_count_constants_match_the_header_counts() {
    assert_eq!(CALLBACK11_COUNTED, 98);
    assert_eq!(INFO14_COUNTED, 114);
    assert_eq!(ICOR_PROFILER_CALLBACK11_SLOTS, CALLBACK11_COUNTED);
    assert_eq!(ICOR_PROFILER_INFO14_SLOTS, INFO14_COUNTED);
    assert_eq!(IMETADATA_IMPORT_SLOTS, METADATA_IMPORT_COUNTED);
    assert_eq!(IMETADATA_IMPORT2_SLOTS, METADATA_IMPORT2_COUNTED);
    assert_eq!(IUNKNOWN_SLOTS, 3);
    assert_eq!(ICLASS_FACTORY_SLOTS, 3 + 2);
}

#[test]
fn vtable_sizes_are_slot_counts() {
    assert_eq!(size_of::<IUnknownVtbl>(), IUNKNOWN_SLOTS * PTR);
    assert_eq!(size_of::<IClassFactoryVtbl>(), ICLASS_FACTORY_SLOTS * PTR);
    assert_eq!(size_of::<ICorProfilerCallback11Vtbl>(), ICOR_PROFILER_CALLBACK11_SLOTS * PTR);
    assert_eq!(size_of::<ICorProfilerInfo14Vtbl>(), ICOR_PROFILER_INFO14_SLOTS * PTR);
    assert_eq!(size_of::<IMetaDataImportVtbl>(), IMETADATA_IMPORT_SLOTS * PTR);
    assert_eq!(size_of::<IMetaDataImport2Vtbl>(), IMETADATA_IMPORT2_SLOTS * PTR);
    // Helper interfaces from corprof.idl: IUnknown + Skip, Reset, Clone,
    // GetCount, Next for the enumerators; + Alloc; + SetCodegenFlags,
    // SetILFunctionBody, SetILInstrumentedCodeMap; + AddAssemblyReference.
    assert_eq!(size_of::<ICorProfilerObjectEnumVtbl>(), 8 * PTR);
    assert_eq!(size_of::<ICorProfilerFunctionEnumVtbl>(), 8 * PTR);
    assert_eq!(size_of::<ICorProfilerModuleEnumVtbl>(), 8 * PTR);
    assert_eq!(size_of::<ICorProfilerThreadEnumVtbl>(), 8 * PTR);
    assert_eq!(size_of::<ICorProfilerMethodEnumVtbl>(), 8 * PTR);
    assert_eq!(size_of::<IMethodMallocVtbl>(), 4 * PTR);
    assert_eq!(size_of::<ICorProfilerFunctionControlVtbl>(), 6 * PTR);
    assert_eq!(size_of::<ICorProfilerAssemblyReferenceProviderVtbl>(), 4 * PTR);
    // An interface pointer points at one word: the vtable pointer.
    assert_eq!(size_of::<ICorProfilerInfo14>(), PTR);
    assert_eq!(size_of::<ICorProfilerCallback11>(), PTR);
    assert_eq!(size_of::<IMetaDataImport>(), PTR);
}

// ---------------------------------------------------------------------------
// Slot offsets
// ---------------------------------------------------------------------------

#[test]
fn iunknown_slots() {
    assert_eq!(slot!(IUnknownVtbl, QueryInterface), 0);
    assert_eq!(slot!(IUnknownVtbl, AddRef), 1);
    assert_eq!(slot!(IUnknownVtbl, Release), 2);
    assert_eq!(slot!(IClassFactoryVtbl, CreateInstance), 3);
    assert_eq!(slot!(IClassFactoryVtbl, LockServer), 4);
    assert_eq!(slot!(ICorProfilerCallback11Vtbl, Release), 2);
    assert_eq!(slot!(ICorProfilerInfo14Vtbl, Release), 2);
    assert_eq!(slot!(IMetaDataImportVtbl, Release), 2);
}

#[test]
fn callback_slots() {
    type V = ICorProfilerCallback11Vtbl;
    // ICorProfilerCallback starts at slot 3.
    assert_eq!(slot!(V, Initialize), 3);
    assert_eq!(slot!(V, Shutdown), 4);
    // 21st method of ICorProfilerCallback (index 20).
    assert_eq!(slot!(V, JITCompilationStarted), 3 + 20);
    assert_eq!(slot!(V, ThreadCreated), 3 + 26);
    assert_eq!(slot!(V, MovedReferences), 3 + 46);
    assert_eq!(slot!(V, ExceptionThrown), 3 + 51);
    // Index 60: after ExceptionUnwindFunctionEnter (59).
    assert_eq!(slot!(V, ExceptionUnwindFunctionLeave), 3 + 60);
    assert_eq!(offset_of!(V, ExceptionUnwindFunctionLeave), 63 * PTR);
    // Last method of ICorProfilerCallback (index 68).
    assert_eq!(slot!(V, ExceptionCLRCatcherExecute), 3 + 68);
    // ICorProfilerCallback2 starts at 3 + 69 = 72.
    assert_eq!(slot!(V, ThreadNameChanged), 72);
    assert_eq!(offset_of!(V, ThreadNameChanged), 72 * PTR);
    assert_eq!(slot!(V, GarbageCollectionStarted), 73);
    assert_eq!(slot!(V, HandleDestroyed), 79);
    // Callback3 at 80, Callback4 at 83.
    assert_eq!(slot!(V, InitializeForAttach), 80);
    assert_eq!(slot!(V, ProfilerDetachSucceeded), 82);
    assert_eq!(slot!(V, ReJITCompilationStarted), 83);
    assert_eq!(slot!(V, SurvivingReferences2), 88);
    // Callback5..11.
    assert_eq!(slot!(V, ConditionalWeakTableElementReferences), 89);
    assert_eq!(slot!(V, GetAssemblyReferences), 90);
    assert_eq!(slot!(V, ModuleInMemorySymbolsUpdated), 91);
    assert_eq!(slot!(V, DynamicMethodJITCompilationStarted), 92);
    assert_eq!(slot!(V, DynamicMethodJITCompilationFinished), 93);
    assert_eq!(slot!(V, DynamicMethodUnloaded), 94);
    assert_eq!(slot!(V, EventPipeEventDelivered), 95);
    assert_eq!(slot!(V, EventPipeProviderCreated), 96);
    assert_eq!(slot!(V, LoadAsNotificationOnly), 97);
    assert_eq!(slot!(V, LoadAsNotificationOnly), ICOR_PROFILER_CALLBACK11_SLOTS - 1);
}

#[test]
fn info_slots() {
    type V = ICorProfilerInfo14Vtbl;
    // ICorProfilerInfo starts at slot 3.
    assert_eq!(slot!(V, GetClassFromObject), 3);
    assert_eq!(slot!(V, GetEventMask), 3 + 3);
    assert_eq!(slot!(V, GetFunctionInfo), 3 + 12);
    // SetEventMask is the 14th method of ICorProfilerInfo (index 13).
    assert_eq!(slot!(V, SetEventMask), 3 + 13);
    assert_eq!(offset_of!(V, SetEventMask), 16 * PTR);
    assert_eq!(slot!(V, GetTokenAndMetaDataFromFunction), 3 + 16);
    assert_eq!(slot!(V, GetModuleInfo), 3 + 17);
    assert_eq!(slot!(V, GetModuleMetaData), 3 + 18);
    assert_eq!(slot!(V, GetILToNativeMapping), 3 + 32);
    // ICorProfilerInfo2 starts at 3 + 33 = 36.
    assert_eq!(slot!(V, DoStackSnapshot), 36);
    assert_eq!(slot!(V, GetFunctionInfo2), 38);
    assert_eq!(slot!(V, GetClassIDInfo2), 41);
    assert_eq!(slot!(V, GetCodeInfo2), 42);
    assert_eq!(slot!(V, GetNotifiedExceptionClauseInfo), 56);
    // ICorProfilerInfo3 starts at 36 + 21 = 57.
    assert_eq!(slot!(V, EnumJITedFunctions), 57);
    assert_eq!(slot!(V, RequestProfilerDetach), 58);
    assert_eq!(slot!(V, SetFunctionIDMapper2), 59);
    assert_eq!(offset_of!(V, SetFunctionIDMapper2), 59 * PTR);
    assert_eq!(slot!(V, GetStringLayout2), 60);
    assert_eq!(slot!(V, SetEnterLeaveFunctionHooks3), 61);
    assert_eq!(offset_of!(V, SetEnterLeaveFunctionHooks3), 61 * PTR);
    assert_eq!(slot!(V, SetEnterLeaveFunctionHooks3WithInfo), 62);
    assert_eq!(slot!(V, GetFunctionEnter3Info), 63);
    assert_eq!(slot!(V, GetFunctionLeave3Info), 64);
    assert_eq!(slot!(V, GetFunctionTailcall3Info), 65);
    assert_eq!(slot!(V, EnumModules), 66);
    assert_eq!(slot!(V, GetRuntimeInformation), 67);
    assert_eq!(offset_of!(V, GetRuntimeInformation), 67 * PTR);
    assert_eq!(slot!(V, GetModuleInfo2), 70);
    // ICorProfilerInfo4 starts at 57 + 14 = 71.
    assert_eq!(slot!(V, EnumThreads), 71);
    assert_eq!(slot!(V, InitializeCurrentThread), 72);
    assert_eq!(slot!(V, GetFunctionFromIP2), 76);
    assert_eq!(slot!(V, GetObjectSize2), 80);
    // Info5 at 81.
    assert_eq!(slot!(V, GetEventMask2), 81);
    assert_eq!(slot!(V, SetEventMask2), 82);
    // Info6 83, Info7 84..=86, Info8 87..=89, Info9 90..=92.
    assert_eq!(slot!(V, EnumNgenModuleMethodsInliningThisMethod), 83);
    assert_eq!(slot!(V, ApplyMetaData), 84);
    assert_eq!(slot!(V, IsFunctionDynamic), 87);
    assert_eq!(slot!(V, GetFunctionFromIP3), 88);
    assert_eq!(slot!(V, GetNativeCodeStartAddresses), 90);
    assert_eq!(slot!(V, GetCodeInfo4), 92);
    // Info10 93..=98.
    assert_eq!(slot!(V, EnumerateObjectReferences), 93);
    assert_eq!(slot!(V, SuspendRuntime), 97);
    assert_eq!(slot!(V, ResumeRuntime), 98);
    // Info11 99..=100.
    assert_eq!(slot!(V, GetEnvironmentVariable), 99);
    assert_eq!(slot!(V, SetEnvironmentVariable), 100);
    // Info12 101..=107, Info13 108..=110, Info14 111..=113.
    assert_eq!(slot!(V, EventPipeStartSession), 101);
    assert_eq!(slot!(V, EventPipeWriteEvent), 107);
    assert_eq!(slot!(V, CreateHandle), 108);
    assert_eq!(slot!(V, GetObjectIDFromHandle), 110);
    assert_eq!(slot!(V, EnumerateNonGCObjects), 111);
    assert_eq!(slot!(V, EventPipeCreateProvider2), 113);
    assert_eq!(slot!(V, EventPipeCreateProvider2), ICOR_PROFILER_INFO14_SLOTS - 1);
}

#[test]
fn metadata_import_slots() {
    type V = IMetaDataImportVtbl;
    assert_eq!(slot!(V, CloseEnum), 3);
    assert_eq!(slot!(V, FindTypeDefByName), 3 + 6);
    assert_eq!(slot!(V, GetScopeProps), 3 + 7);
    assert_eq!(slot!(V, GetTypeDefProps), 3 + 9);
    assert_eq!(slot!(V, GetTypeRefProps), 3 + 11);
    // GetMethodProps is the 28th method (index 27), after FindMemberRef.
    assert_eq!(slot!(V, GetMethodProps), 3 + 27);
    assert_eq!(offset_of!(V, GetMethodProps), 30 * PTR);
    assert_eq!(slot!(V, GetMemberRefProps), 31);
    assert_eq!(slot!(V, GetSigFromToken), 41);
    assert_eq!(slot!(V, GetModuleRefProps), 42);
    assert_eq!(slot!(V, GetTypeSpecFromToken), 44);
    assert_eq!(slot!(V, GetNameFromToken), 45);
    assert_eq!(slot!(V, GetNestedClassProps), 62);
    assert_eq!(slot!(V, IsGlobal), 64);
    assert_eq!(slot!(V, IsGlobal), IMETADATA_IMPORT_SLOTS - 1);
    assert_eq!(slot!(IMetaDataImport2Vtbl, EnumGenericParams), 65);
    assert_eq!(slot!(IMetaDataImport2Vtbl, EnumMethodSpecs), 72);
}

/// cor.h: IMetaDataEmit's 10th method is DefineTypeRefByName, its 12th DefineMemberRef, its 21st
/// GetTokenFromSig; IMetaDataAssemblyEmit's 2nd DefineAssemblyRef; IMetaDataAssemblyImport's 1st
/// GetAssemblyProps and 10th GetAssemblyFromScope (each after IUnknown's 3).
#[test]
fn metadata_emit_slots() {
    assert_eq!(slot!(IMetaDataEmitVtbl, DefineTypeRefByName), 3 + 9);
    assert_eq!(slot!(IMetaDataEmitVtbl, DefineMemberRef), 3 + 11);
    assert_eq!(slot!(IMetaDataEmitVtbl, GetTokenFromSig), 3 + 20);
    assert_eq!(size_of::<IMetaDataEmitVtbl>(), IMETADATA_EMIT_DECLARED_SLOTS * PTR);
    assert_eq!(slot!(IMetaDataAssemblyEmitVtbl, DefineAssemblyRef), 3 + 1);
    assert_eq!(slot!(IMetaDataAssemblyImportVtbl, GetAssemblyProps), 3);
    assert_eq!(slot!(IMetaDataAssemblyImportVtbl, GetAssemblyFromScope), 3 + 9);
}

// ---------------------------------------------------------------------------
// GUIDs, checked against the header text
// ---------------------------------------------------------------------------

#[test]
fn guids_match_header_text() {
    // corprof.idl: `uuid(8A8CC829-CCF2-49fe-BBAE-0F022228071A)` on ICorProfilerCallback2.
    assert_eq!(IID_ICorProfilerCallback2, guid_from_text("8A8CC829-CCF2-49fe-BBAE-0F022228071A"));
    // corprof.idl: `uuid(B555ED4F-452A-4E54-8B39-B5360BAD32A0)` on ICorProfilerInfo3.
    assert_eq!(IID_ICorProfilerInfo3, guid_from_text("B555ED4F-452A-4E54-8B39-B5360BAD32A0"));
    // cor.h: `// {7DAC8207-D3AE-4c75-9B67-92801A497D44}` and
    // `EXTERN_GUID(IID_IMetaDataImport, 0x7dac8207, 0xd3ae, 0x4c75, 0x9b, 0x67, 0x92, 0x80, 0x1a, 0x49, 0x7d, 0x44);`
    assert_eq!(IID_IMetaDataImport, guid_from_text("{7DAC8207-D3AE-4c75-9B67-92801A497D44}"));
    assert_eq!(
        IID_IMetaDataImport,
        GUID::new(0x7dac8207, 0xd3ae, 0x4c75, [0x9b, 0x67, 0x92, 0x80, 0x1a, 0x49, 0x7d, 0x44])
    );

    let table: &[(GUID, &str)] = &[
        (IID_IUnknown, "00000000-0000-0000-C000-000000000046"),
        (IID_IClassFactory, "00000001-0000-0000-C000-000000000046"),
        (IID_ICorProfilerCallback, "176FBED1-A55C-4796-98CA-A9DA0EF883E7"),
        (IID_ICorProfilerCallback3, "4FD2ED52-7731-4b8d-9469-03D2CC3086C5"),
        (IID_ICorProfilerCallback4, "7B63B2E3-107D-4d48-B2F6-F61E229470D2"),
        (IID_ICorProfilerCallback5, "8DFBA405-8C9F-45F8-BFFA-83B14CEF78B5"),
        (IID_ICorProfilerCallback6, "FC13DF4B-4448-4F4F-950C-BA8D19D00C36"),
        (IID_ICorProfilerCallback7, "F76A2DBA-1D52-4539-866C-2AA518F9EFC3"),
        (IID_ICorProfilerCallback8, "5BED9B15-C079-4D47-BFE2-215A140C07E0"),
        (IID_ICorProfilerCallback9, "27583EC3-C8F5-482F-8052-194B8CE4705A"),
        (IID_ICorProfilerCallback10, "CEC5B60E-C69C-495F-87F6-84D28EE16FFB"),
        (IID_ICorProfilerCallback11, "42350846-AAED-47F7-B128-FD0C98881CDE"),
        (IID_ICorProfilerInfo, "28B5557D-3F3F-48b4-90B2-5F9EEA2F6C48"),
        (IID_ICorProfilerInfo2, "CC0935CD-A518-487d-B0BB-A93214E65478"),
        (IID_ICorProfilerInfo4, "0d8fdcaa-6257-47bf-b1bf-94dac88466ee"),
        (IID_ICorProfilerInfo5, "07602928-CE38-4B83-81E7-74ADAF781214"),
        (IID_ICorProfilerInfo6, "F30A070D-BFFB-46A7-B1D8-8781EF7B698A"),
        (IID_ICorProfilerInfo7, "9AEECC0D-63E0-4187-8C00-E312F503F663"),
        (IID_ICorProfilerInfo8, "C5AC80A6-782E-4716-8044-39598C60CFBF"),
        (IID_ICorProfilerInfo9, "008170DB-F8CC-4796-9A51-DC8AA0B47012"),
        (IID_ICorProfilerInfo10, "2F1B5152-C869-40C9-AA5F-3ABE026BD720"),
        (IID_ICorProfilerInfo11, "06398876-8987-4154-B621-40A00D6E4D04"),
        (IID_ICorProfilerInfo12, "27b24ccd-1cb1-47c5-96ee-98190dc30959"),
        (IID_ICorProfilerInfo13, "6E6C7EE2-0701-4EC2-9D29-2E8733B66934"),
        (IID_ICorProfilerInfo14, "F460E352-D76D-4FE9-835F-F6AF9D6E862D"),
        (IID_IMetaDataImport2, "FCE5EFA0-8BBA-4f8e-A036-8F2022B08466"),
        (IID_IMetaDataEmit, "BA3FEE4C-ECB9-4e41-83B7-183FA41CD859"),
        (IID_IMetaDataAssemblyEmit, "211EF15B-5317-4438-B196-DEC87B887693"),
        (IID_IMetaDataAssemblyImport, "EE62470B-E94B-424e-9B7C-2F00C9249F93"),
    ];
    for (guid, text) in table {
        assert_eq!(*guid, guid_from_text(text), "{text}");
    }
}

// ---------------------------------------------------------------------------
// Scalars, structs and flags
// ---------------------------------------------------------------------------

#[test]
fn base_type_widths() {
    assert_eq!(size_of::<HRESULT>(), 4);
    assert_eq!(size_of::<ULONG>(), 4);
    assert_eq!(size_of::<DWORD>(), 4);
    assert_eq!(size_of::<BOOL>(), 4);
    assert_eq!(size_of::<WCHAR>(), 2);
    assert_eq!(size_of::<mdToken>(), 4);
    assert_eq!(size_of::<CorElementType>(), 4);
    assert_eq!(size_of::<FunctionID>(), PTR);
    assert_eq!(size_of::<FunctionIDOrClientID>(), PTR);
    assert_eq!(size_of::<GUID>(), 16);
    // Nullable hooks stay one pointer wide.
    assert_eq!(size_of::<Option<FunctionEnter3WithInfo>>(), PTR);
    assert_eq!(size_of::<Option<StackSnapshotCallback>>(), PTR);
    assert_eq!(E_FAIL, 0x8000_4005_u32 as i32);
    assert_eq!(CORPROF_E_NOT_MANAGED_THREAD as u32, 0x8013_1355);
}

#[cfg(target_pointer_width = "64")]
#[test]
fn struct_layouts_on_64_bit() {
    assert_eq!(size_of::<COR_PRF_FUNCTION_ARGUMENT_RANGE>(), 16);
    assert_eq!(size_of::<COR_PRF_FUNCTION_ARGUMENT_INFO>(), 24);
    assert_eq!(offset_of!(COR_PRF_FUNCTION_ARGUMENT_INFO, ranges), 8);
    assert_eq!(size_of::<COR_PRF_CODE_INFO>(), 16);
    assert_eq!(size_of::<COR_PRF_EX_CLAUSE_INFO>(), 32);
    assert_eq!(offset_of!(COR_PRF_EX_CLAUSE_INFO, programCounter), 8);
    assert_eq!(size_of::<COR_PRF_GC_GENERATION_RANGE>(), 32);
    assert_eq!(size_of::<COR_DEBUG_IL_TO_NATIVE_MAP>(), 12);
    assert_eq!(size_of::<COR_IL_MAP>(), 12);
    assert_eq!(size_of::<COR_FIELD_OFFSET>(), 8);
    assert_eq!(size_of::<COR_PRF_FUNCTION>(), 16);
    assert_eq!(size_of::<COR_PRF_METHOD>(), 16);
    assert_eq!(size_of::<COR_PRF_EVENTPIPE_PROVIDER_CONFIG>(), 32);
    assert_eq!(size_of::<ASSEMBLYMETADATA>(), 56);
}

#[test]
fn monitor_flags() {
    assert_eq!(COR_PRF_MONITOR_NONE, 0);
    assert_eq!(COR_PRF_MONITOR_ENTERLEAVE, 0x1000);
    assert_eq!(COR_PRF_MONITOR_ALL, 0x0107_FFFF);
    assert_eq!(COR_PRF_ALL, 0x8FFF_FFFF);
    assert_eq!(COR_PRF_MONITOR_REMOTING_COOKIE, 0x4400);
    assert_eq!(COR_PRF_MONITOR_REMOTING_ASYNC, 0x8400);
    assert_eq!(COR_PRF_REQUIRE_PROFILE_IMAGE, 0x2000_1800);
    assert_eq!(COR_PRF_ALLOWABLE_AFTER_ATTACH, 0x1065_02FE);
    assert_eq!(COR_PRF_MONITOR_IMMUTABLE, 0xEE98_CC00);
    assert_eq!(COR_PRF_MONITOR_IMMUTABLE & COR_PRF_DISABLE_INLINING, 0);
    assert_eq!(COR_PRF_HIGH_MONITOR_IMMUTABLE, COR_PRF_HIGH_DISABLE_TIERED_COMPILATION);
    assert_eq!(COR_PRF_HIGH_MONITOR_PINNEDOBJECT_ALLOCATED, 0x100);
    assert_eq!(COR_PRF_CORE_CLR, 2);
    assert_eq!(NO_MAPPING, 0xFFFF_FFFF);
    assert_eq!(EPILOG, 0xFFFF_FFFD);
    assert_eq!(ELEMENT_TYPE_SENTINEL, 0x41);
    assert_eq!(ELEMENT_TYPE_PINNED, 0x45);
}
