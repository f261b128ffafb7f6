//! Metadata declarations from cor.h / corhdr.h: `IMetaDataImport`,
//! `IMetaDataImport2`, element types, token types and type attributes.
//!
//! cor.h declares these interfaces with `DECLARE_INTERFACE_` / `STDMETHOD`;
//! `STDMETHODCALLTYPE` is `__cdecl`, which the PAL defines as nothing outside
//! 32-bit x86, so the vtable entries are plain C calls.
//!
//! Slot counts (counted in cor.h): IUnknown 3 + IMetaDataImport 62 = 65;
//! IMetaDataImport2 adds 8 = 73.

use core::ffi::c_void;

use crate::types::*;
use crate::unknown::IUnknown;

/// `typedef void *HCORENUM;`: an enumeration cursor, released with `CloseEnum`.
pub type HCORENUM = *mut c_void;
/// `typedef const char *MDUTF8CSTR;`
pub type MDUTF8CSTR = *const u8;
/// `typedef UNALIGNED void const *UVCP_CONSTANT;`
pub type UVCP_CONSTANT = *const c_void;

/// Number of pointer-sized slots in [`IMetaDataImportVtbl`].
pub const IMETADATA_IMPORT_SLOTS: usize = 65;
/// Number of pointer-sized slots in [`IMetaDataImport2Vtbl`].
pub const IMETADATA_IMPORT2_SLOTS: usize = 73;

// ---------------------------------------------------------------------------
// CorOpenFlags (for ICorProfilerInfo::GetModuleMetaData's dwOpenFlags)
// ---------------------------------------------------------------------------

pub const ofRead: DWORD = 0x0000_0000;
pub const ofWrite: DWORD = 0x0000_0001;

// ---------------------------------------------------------------------------
// CorElementType values. The enum is `int`-sized when passed through the API
// (`types::CorElementType`), but signature blobs encode each value in one
// byte, which is why these are `u8`.
// ---------------------------------------------------------------------------

pub const ELEMENT_TYPE_END: u8 = 0x00;
pub const ELEMENT_TYPE_VOID: u8 = 0x01;
pub const ELEMENT_TYPE_BOOLEAN: u8 = 0x02;
pub const ELEMENT_TYPE_CHAR: u8 = 0x03;
pub const ELEMENT_TYPE_I1: u8 = 0x04;
pub const ELEMENT_TYPE_U1: u8 = 0x05;
pub const ELEMENT_TYPE_I2: u8 = 0x06;
pub const ELEMENT_TYPE_U2: u8 = 0x07;
pub const ELEMENT_TYPE_I4: u8 = 0x08;
pub const ELEMENT_TYPE_U4: u8 = 0x09;
pub const ELEMENT_TYPE_I8: u8 = 0x0A;
pub const ELEMENT_TYPE_U8: u8 = 0x0B;
pub const ELEMENT_TYPE_R4: u8 = 0x0C;
pub const ELEMENT_TYPE_R8: u8 = 0x0D;
pub const ELEMENT_TYPE_STRING: u8 = 0x0E;
pub const ELEMENT_TYPE_PTR: u8 = 0x0F;
pub const ELEMENT_TYPE_BYREF: u8 = 0x10;
pub const ELEMENT_TYPE_VALUETYPE: u8 = 0x11;
pub const ELEMENT_TYPE_CLASS: u8 = 0x12;
pub const ELEMENT_TYPE_VAR: u8 = 0x13;
pub const ELEMENT_TYPE_ARRAY: u8 = 0x14;
pub const ELEMENT_TYPE_GENERICINST: u8 = 0x15;
pub const ELEMENT_TYPE_TYPEDBYREF: u8 = 0x16;
pub const ELEMENT_TYPE_I: u8 = 0x18;
pub const ELEMENT_TYPE_U: u8 = 0x19;
pub const ELEMENT_TYPE_FNPTR: u8 = 0x1B;
pub const ELEMENT_TYPE_OBJECT: u8 = 0x1C;
pub const ELEMENT_TYPE_SZARRAY: u8 = 0x1D;
pub const ELEMENT_TYPE_MVAR: u8 = 0x1E;
pub const ELEMENT_TYPE_CMOD_REQD: u8 = 0x1F;
pub const ELEMENT_TYPE_CMOD_OPT: u8 = 0x20;
pub const ELEMENT_TYPE_INTERNAL: u8 = 0x21;
pub const ELEMENT_TYPE_MAX: u8 = 0x22;
pub const ELEMENT_TYPE_MODIFIER: u8 = 0x40;
pub const ELEMENT_TYPE_SENTINEL: u8 = 0x01 | ELEMENT_TYPE_MODIFIER;
pub const ELEMENT_TYPE_PINNED: u8 = 0x05 | ELEMENT_TYPE_MODIFIER;

// ---------------------------------------------------------------------------
// CorTokenType: the high byte of an mdToken.
// ---------------------------------------------------------------------------

pub const mdtModule: mdToken = 0x0000_0000;
pub const mdtTypeRef: mdToken = 0x0100_0000;
pub const mdtTypeDef: mdToken = 0x0200_0000;
pub const mdtFieldDef: mdToken = 0x0400_0000;
pub const mdtMethodDef: mdToken = 0x0600_0000;
pub const mdtParamDef: mdToken = 0x0800_0000;
pub const mdtInterfaceImpl: mdToken = 0x0900_0000;
pub const mdtMemberRef: mdToken = 0x0A00_0000;
pub const mdtCustomAttribute: mdToken = 0x0C00_0000;
pub const mdtPermission: mdToken = 0x0E00_0000;
pub const mdtSignature: mdToken = 0x1100_0000;
pub const mdtEvent: mdToken = 0x1400_0000;
pub const mdtProperty: mdToken = 0x1700_0000;
pub const mdtMethodImpl: mdToken = 0x1900_0000;
pub const mdtModuleRef: mdToken = 0x1A00_0000;
pub const mdtTypeSpec: mdToken = 0x1B00_0000;
pub const mdtAssembly: mdToken = 0x2000_0000;
pub const mdtAssemblyRef: mdToken = 0x2300_0000;
pub const mdtFile: mdToken = 0x2600_0000;
pub const mdtExportedType: mdToken = 0x2700_0000;
pub const mdtManifestResource: mdToken = 0x2800_0000;
pub const mdtNestedClass: mdToken = 0x2900_0000;
pub const mdtGenericParam: mdToken = 0x2A00_0000;
pub const mdtMethodSpec: mdToken = 0x2B00_0000;
pub const mdtGenericParamConstraint: mdToken = 0x2C00_0000;
pub const mdtString: mdToken = 0x7000_0000;
pub const mdtName: mdToken = 0x7100_0000;
pub const mdtBaseType: mdToken = 0x7200_0000;

/// `mdTokenNil`; every other `mdXxxNil` is the bare table type (`mdtXxx`).
pub const mdTokenNil: mdToken = 0;

// ---------------------------------------------------------------------------
// CorTypeAttr (the subset a profiler uses to name types).
// ---------------------------------------------------------------------------

pub const tdVisibilityMask: DWORD = 0x0000_0007;
pub const tdNotPublic: DWORD = 0x0000_0000;
pub const tdPublic: DWORD = 0x0000_0001;
pub const tdNestedPublic: DWORD = 0x0000_0002;
pub const tdNestedPrivate: DWORD = 0x0000_0003;
pub const tdNestedFamily: DWORD = 0x0000_0004;
pub const tdNestedAssembly: DWORD = 0x0000_0005;
pub const tdNestedFamANDAssem: DWORD = 0x0000_0006;
pub const tdNestedFamORAssem: DWORD = 0x0000_0007;
pub const tdClassSemanticsMask: DWORD = 0x0000_0020;
pub const tdClass: DWORD = 0x0000_0000;
pub const tdInterface: DWORD = 0x0000_0020;
pub const tdAbstract: DWORD = 0x0000_0080;
pub const tdSealed: DWORD = 0x0000_0100;
pub const tdSpecialName: DWORD = 0x0000_0400;

// ---------------------------------------------------------------------------
// CorMethodAttr (the member access a profiler checks before referencing a method).
// ---------------------------------------------------------------------------

pub const mdMemberAccessMask: DWORD = 0x0007;
pub const mdPublic: DWORD = 0x0006;

// ---------------------------------------------------------------------------
// IMetaDataImport
// ---------------------------------------------------------------------------

#[repr(C)]
pub struct IMetaDataImport {
    pub vtbl: *const IMetaDataImportVtbl,
}

#[repr(C)]
pub struct IMetaDataImportVtbl {
    // ---- IUnknown: 3 methods, slots 0..=2 ----
    /// Slot 0.
    pub QueryInterface:
        unsafe extern "system" fn(this: *mut IMetaDataImport, riid: REFIID, ppvObject: *mut *mut c_void) -> HRESULT,
    /// Slot 1.
    pub AddRef: unsafe extern "system" fn(this: *mut IMetaDataImport) -> ULONG,
    /// Slot 2.
    pub Release: unsafe extern "system" fn(this: *mut IMetaDataImport) -> ULONG,

    // ---- IMetaDataImport: 62 methods, slots 3..=64 ----
    /// Slot 3. Returns `void`, not an HRESULT.
    pub CloseEnum: unsafe extern "system" fn(this: *mut IMetaDataImport, hEnum: HCORENUM),
    /// Slot 4.
    pub CountEnum:
        unsafe extern "system" fn(this: *mut IMetaDataImport, hEnum: HCORENUM, pulCount: *mut ULONG) -> HRESULT,
    /// Slot 5.
    pub ResetEnum: unsafe extern "system" fn(this: *mut IMetaDataImport, hEnum: HCORENUM, ulPos: ULONG) -> HRESULT,
    /// Slot 6.
    pub EnumTypeDefs: unsafe extern "system" fn(
        this: *mut IMetaDataImport,
        phEnum: *mut HCORENUM,
        rTypeDefs: *mut mdTypeDef,
        cMax: ULONG,
        pcTypeDefs: *mut ULONG,
    ) -> HRESULT,
    /// Slot 7.
    pub EnumInterfaceImpls: unsafe extern "system" fn(
        this: *mut IMetaDataImport,
        phEnum: *mut HCORENUM,
        td: mdTypeDef,
        rImpls: *mut mdInterfaceImpl,
        cMax: ULONG,
        pcImpls: *mut ULONG,
    ) -> HRESULT,
    /// Slot 8.
    pub EnumTypeRefs: unsafe extern "system" fn(
        this: *mut IMetaDataImport,
        phEnum: *mut HCORENUM,
        rTypeRefs: *mut mdTypeRef,
        cMax: ULONG,
        pcTypeRefs: *mut ULONG,
    ) -> HRESULT,
    /// Slot 9.
    pub FindTypeDefByName: unsafe extern "system" fn(
        this: *mut IMetaDataImport,
        szTypeDef: LPCWSTR,
        tkEnclosingClass: mdToken,
        ptd: *mut mdTypeDef,
    ) -> HRESULT,
    /// Slot 10.
    pub GetScopeProps: unsafe extern "system" fn(
        this: *mut IMetaDataImport,
        szName: LPWSTR,
        cchName: ULONG,
        pchName: *mut ULONG,
        pmvid: *mut GUID,
    ) -> HRESULT,
    /// Slot 11.
    pub GetModuleFromScope: unsafe extern "system" fn(this: *mut IMetaDataImport, pmd: *mut mdModule) -> HRESULT,
    /// Slot 12.
    pub GetTypeDefProps: unsafe extern "system" fn(
        this: *mut IMetaDataImport,
        td: mdTypeDef,
        szTypeDef: LPWSTR,
        cchTypeDef: ULONG,
        pchTypeDef: *mut ULONG,
        pdwTypeDefFlags: *mut DWORD,
        ptkExtends: *mut mdToken,
    ) -> HRESULT,
    /// Slot 13.
    pub GetInterfaceImplProps: unsafe extern "system" fn(
        this: *mut IMetaDataImport,
        iiImpl: mdInterfaceImpl,
        pClass: *mut mdTypeDef,
        ptkIface: *mut mdToken,
    ) -> HRESULT,
    /// Slot 14.
    pub GetTypeRefProps: unsafe extern "system" fn(
        this: *mut IMetaDataImport,
        tr: mdTypeRef,
        ptkResolutionScope: *mut mdToken,
        szName: LPWSTR,
        cchName: ULONG,
        pchName: *mut ULONG,
    ) -> HRESULT,
    /// Slot 15.
    pub ResolveTypeRef: unsafe extern "system" fn(
        this: *mut IMetaDataImport,
        tr: mdTypeRef,
        riid: REFIID,
        ppIScope: *mut *mut IUnknown,
        ptd: *mut mdTypeDef,
    ) -> HRESULT,
    /// Slot 16.
    pub EnumMembers: unsafe extern "system" fn(
        this: *mut IMetaDataImport,
        phEnum: *mut HCORENUM,
        cl: mdTypeDef,
        rMembers: *mut mdToken,
        cMax: ULONG,
        pcTokens: *mut ULONG,
    ) -> HRESULT,
    /// Slot 17.
    pub EnumMembersWithName: unsafe extern "system" fn(
        this: *mut IMetaDataImport,
        phEnum: *mut HCORENUM,
        cl: mdTypeDef,
        szName: LPCWSTR,
        rMembers: *mut mdToken,
        cMax: ULONG,
        pcTokens: *mut ULONG,
    ) -> HRESULT,
    /// Slot 18.
    pub EnumMethods: unsafe extern "system" fn(
        this: *mut IMetaDataImport,
        phEnum: *mut HCORENUM,
        cl: mdTypeDef,
        rMethods: *mut mdMethodDef,
        cMax: ULONG,
        pcTokens: *mut ULONG,
    ) -> HRESULT,
    /// Slot 19.
    pub EnumMethodsWithName: unsafe extern "system" fn(
        this: *mut IMetaDataImport,
        phEnum: *mut HCORENUM,
        cl: mdTypeDef,
        szName: LPCWSTR,
        rMethods: *mut mdMethodDef,
        cMax: ULONG,
        pcTokens: *mut ULONG,
    ) -> HRESULT,
    /// Slot 20.
    pub EnumFields: unsafe extern "system" fn(
        this: *mut IMetaDataImport,
        phEnum: *mut HCORENUM,
        cl: mdTypeDef,
        rFields: *mut mdFieldDef,
        cMax: ULONG,
        pcTokens: *mut ULONG,
    ) -> HRESULT,
    /// Slot 21.
    pub EnumFieldsWithName: unsafe extern "system" fn(
        this: *mut IMetaDataImport,
        phEnum: *mut HCORENUM,
        cl: mdTypeDef,
        szName: LPCWSTR,
        rFields: *mut mdFieldDef,
        cMax: ULONG,
        pcTokens: *mut ULONG,
    ) -> HRESULT,
    /// Slot 22.
    pub EnumParams: unsafe extern "system" fn(
        this: *mut IMetaDataImport,
        phEnum: *mut HCORENUM,
        mb: mdMethodDef,
        rParams: *mut mdParamDef,
        cMax: ULONG,
        pcTokens: *mut ULONG,
    ) -> HRESULT,
    /// Slot 23.
    pub EnumMemberRefs: unsafe extern "system" fn(
        this: *mut IMetaDataImport,
        phEnum: *mut HCORENUM,
        tkParent: mdToken,
        rMemberRefs: *mut mdMemberRef,
        cMax: ULONG,
        pcTokens: *mut ULONG,
    ) -> HRESULT,
    /// Slot 24.
    pub EnumMethodImpls: unsafe extern "system" fn(
        this: *mut IMetaDataImport,
        phEnum: *mut HCORENUM,
        td: mdTypeDef,
        rMethodBody: *mut mdToken,
        rMethodDecl: *mut mdToken,
        cMax: ULONG,
        pcTokens: *mut ULONG,
    ) -> HRESULT,
    /// Slot 25.
    pub EnumPermissionSets: unsafe extern "system" fn(
        this: *mut IMetaDataImport,
        phEnum: *mut HCORENUM,
        tk: mdToken,
        dwActions: DWORD,
        rPermission: *mut mdPermission,
        cMax: ULONG,
        pcTokens: *mut ULONG,
    ) -> HRESULT,
    /// Slot 26.
    pub FindMember: unsafe extern "system" fn(
        this: *mut IMetaDataImport,
        td: mdTypeDef,
        szName: LPCWSTR,
        pvSigBlob: PCCOR_SIGNATURE,
        cbSigBlob: ULONG,
        pmb: *mut mdToken,
    ) -> HRESULT,
    /// Slot 27.
    pub FindMethod: unsafe extern "system" fn(
        this: *mut IMetaDataImport,
        td: mdTypeDef,
        szName: LPCWSTR,
        pvSigBlob: PCCOR_SIGNATURE,
        cbSigBlob: ULONG,
        pmb: *mut mdMethodDef,
    ) -> HRESULT,
    /// Slot 28.
    pub FindField: unsafe extern "system" fn(
        this: *mut IMetaDataImport,
        td: mdTypeDef,
        szName: LPCWSTR,
        pvSigBlob: PCCOR_SIGNATURE,
        cbSigBlob: ULONG,
        pmb: *mut mdFieldDef,
    ) -> HRESULT,
    /// Slot 29.
    pub FindMemberRef: unsafe extern "system" fn(
        this: *mut IMetaDataImport,
        td: mdTypeRef,
        szName: LPCWSTR,
        pvSigBlob: PCCOR_SIGNATURE,
        cbSigBlob: ULONG,
        pmr: *mut mdMemberRef,
    ) -> HRESULT,
    /// Slot 30.
    pub GetMethodProps: unsafe extern "system" fn(
        this: *mut IMetaDataImport,
        mb: mdMethodDef,
        pClass: *mut mdTypeDef,
        szMethod: LPWSTR,
        cchMethod: ULONG,
        pchMethod: *mut ULONG,
        pdwAttr: *mut DWORD,
        ppvSigBlob: *mut PCCOR_SIGNATURE,
        pcbSigBlob: *mut ULONG,
        pulCodeRVA: *mut ULONG,
        pdwImplFlags: *mut DWORD,
    ) -> HRESULT,
    /// Slot 31.
    pub GetMemberRefProps: unsafe extern "system" fn(
        this: *mut IMetaDataImport,
        mr: mdMemberRef,
        ptk: *mut mdToken,
        szMember: LPWSTR,
        cchMember: ULONG,
        pchMember: *mut ULONG,
        ppvSigBlob: *mut PCCOR_SIGNATURE,
        pbSig: *mut ULONG,
    ) -> HRESULT,
    /// Slot 32.
    pub EnumProperties: unsafe extern "system" fn(
        this: *mut IMetaDataImport,
        phEnum: *mut HCORENUM,
        td: mdTypeDef,
        rProperties: *mut mdProperty,
        cMax: ULONG,
        pcProperties: *mut ULONG,
    ) -> HRESULT,
    /// Slot 33.
    pub EnumEvents: unsafe extern "system" fn(
        this: *mut IMetaDataImport,
        phEnum: *mut HCORENUM,
        td: mdTypeDef,
        rEvents: *mut mdEvent,
        cMax: ULONG,
        pcEvents: *mut ULONG,
    ) -> HRESULT,
    /// Slot 34. cor.h declares `szEvent` as `LPCWSTR`, but it is an `[OUT]` buffer.
    pub GetEventProps: unsafe extern "system" fn(
        this: *mut IMetaDataImport,
        ev: mdEvent,
        pClass: *mut mdTypeDef,
        szEvent: *mut WCHAR,
        cchEvent: ULONG,
        pchEvent: *mut ULONG,
        pdwEventFlags: *mut DWORD,
        ptkEventType: *mut mdToken,
        pmdAddOn: *mut mdMethodDef,
        pmdRemoveOn: *mut mdMethodDef,
        pmdFire: *mut mdMethodDef,
        rmdOtherMethod: *mut mdMethodDef,
        cMax: ULONG,
        pcOtherMethod: *mut ULONG,
    ) -> HRESULT,
    /// Slot 35.
    pub EnumMethodSemantics: unsafe extern "system" fn(
        this: *mut IMetaDataImport,
        phEnum: *mut HCORENUM,
        mb: mdMethodDef,
        rEventProp: *mut mdToken,
        cMax: ULONG,
        pcEventProp: *mut ULONG,
    ) -> HRESULT,
    /// Slot 36.
    pub GetMethodSemantics: unsafe extern "system" fn(
        this: *mut IMetaDataImport,
        mb: mdMethodDef,
        tkEventProp: mdToken,
        pdwSemanticsFlags: *mut DWORD,
    ) -> HRESULT,
    /// Slot 37.
    pub GetClassLayout: unsafe extern "system" fn(
        this: *mut IMetaDataImport,
        td: mdTypeDef,
        pdwPackSize: *mut DWORD,
        rFieldOffset: *mut COR_FIELD_OFFSET,
        cMax: ULONG,
        pcFieldOffset: *mut ULONG,
        pulClassSize: *mut ULONG,
    ) -> HRESULT,
    /// Slot 38.
    pub GetFieldMarshal: unsafe extern "system" fn(
        this: *mut IMetaDataImport,
        tk: mdToken,
        ppvNativeType: *mut PCCOR_SIGNATURE,
        pcbNativeType: *mut ULONG,
    ) -> HRESULT,
    /// Slot 39.
    pub GetRVA: unsafe extern "system" fn(
        this: *mut IMetaDataImport,
        tk: mdToken,
        pulCodeRVA: *mut ULONG,
        pdwImplFlags: *mut DWORD,
    ) -> HRESULT,
    /// Slot 40.
    pub GetPermissionSetProps: unsafe extern "system" fn(
        this: *mut IMetaDataImport,
        pm: mdPermission,
        pdwAction: *mut DWORD,
        ppvPermission: *mut *const c_void,
        pcbPermission: *mut ULONG,
    ) -> HRESULT,
    /// Slot 41.
    pub GetSigFromToken: unsafe extern "system" fn(
        this: *mut IMetaDataImport,
        mdSig: mdSignature,
        ppvSig: *mut PCCOR_SIGNATURE,
        pcbSig: *mut ULONG,
    ) -> HRESULT,
    /// Slot 42.
    pub GetModuleRefProps: unsafe extern "system" fn(
        this: *mut IMetaDataImport,
        mur: mdModuleRef,
        szName: LPWSTR,
        cchName: ULONG,
        pchName: *mut ULONG,
    ) -> HRESULT,
    /// Slot 43.
    pub EnumModuleRefs: unsafe extern "system" fn(
        this: *mut IMetaDataImport,
        phEnum: *mut HCORENUM,
        rModuleRefs: *mut mdModuleRef,
        cmax: ULONG,
        pcModuleRefs: *mut ULONG,
    ) -> HRESULT,
    /// Slot 44.
    pub GetTypeSpecFromToken: unsafe extern "system" fn(
        this: *mut IMetaDataImport,
        typespec: mdTypeSpec,
        ppvSig: *mut PCCOR_SIGNATURE,
        pcbSig: *mut ULONG,
    ) -> HRESULT,
    /// Slot 45.
    pub GetNameFromToken:
        unsafe extern "system" fn(this: *mut IMetaDataImport, tk: mdToken, pszUtf8NamePtr: *mut MDUTF8CSTR) -> HRESULT,
    /// Slot 46.
    pub EnumUnresolvedMethods: unsafe extern "system" fn(
        this: *mut IMetaDataImport,
        phEnum: *mut HCORENUM,
        rMethods: *mut mdToken,
        cMax: ULONG,
        pcTokens: *mut ULONG,
    ) -> HRESULT,
    /// Slot 47.
    pub GetUserString: unsafe extern "system" fn(
        this: *mut IMetaDataImport,
        stk: mdString,
        szString: LPWSTR,
        cchString: ULONG,
        pchString: *mut ULONG,
    ) -> HRESULT,
    /// Slot 48.
    pub GetPinvokeMap: unsafe extern "system" fn(
        this: *mut IMetaDataImport,
        tk: mdToken,
        pdwMappingFlags: *mut DWORD,
        szImportName: LPWSTR,
        cchImportName: ULONG,
        pchImportName: *mut ULONG,
        pmrImportDLL: *mut mdModuleRef,
    ) -> HRESULT,
    /// Slot 49.
    pub EnumSignatures: unsafe extern "system" fn(
        this: *mut IMetaDataImport,
        phEnum: *mut HCORENUM,
        rSignatures: *mut mdSignature,
        cmax: ULONG,
        pcSignatures: *mut ULONG,
    ) -> HRESULT,
    /// Slot 50.
    pub EnumTypeSpecs: unsafe extern "system" fn(
        this: *mut IMetaDataImport,
        phEnum: *mut HCORENUM,
        rTypeSpecs: *mut mdTypeSpec,
        cmax: ULONG,
        pcTypeSpecs: *mut ULONG,
    ) -> HRESULT,
    /// Slot 51.
    pub EnumUserStrings: unsafe extern "system" fn(
        this: *mut IMetaDataImport,
        phEnum: *mut HCORENUM,
        rStrings: *mut mdString,
        cmax: ULONG,
        pcStrings: *mut ULONG,
    ) -> HRESULT,
    /// Slot 52.
    pub GetParamForMethodIndex: unsafe extern "system" fn(
        this: *mut IMetaDataImport,
        md: mdMethodDef,
        ulParamSeq: ULONG,
        ppd: *mut mdParamDef,
    ) -> HRESULT,
    /// Slot 53.
    pub EnumCustomAttributes: unsafe extern "system" fn(
        this: *mut IMetaDataImport,
        phEnum: *mut HCORENUM,
        tk: mdToken,
        tkType: mdToken,
        rCustomAttributes: *mut mdCustomAttribute,
        cMax: ULONG,
        pcCustomAttributes: *mut ULONG,
    ) -> HRESULT,
    /// Slot 54.
    pub GetCustomAttributeProps: unsafe extern "system" fn(
        this: *mut IMetaDataImport,
        cv: mdCustomAttribute,
        ptkObj: *mut mdToken,
        ptkType: *mut mdToken,
        ppBlob: *mut *const c_void,
        pcbSize: *mut ULONG,
    ) -> HRESULT,
    /// Slot 55.
    pub FindTypeRef: unsafe extern "system" fn(
        this: *mut IMetaDataImport,
        tkResolutionScope: mdToken,
        szName: LPCWSTR,
        ptr: *mut mdTypeRef,
    ) -> HRESULT,
    /// Slot 56.
    pub GetMemberProps: unsafe extern "system" fn(
        this: *mut IMetaDataImport,
        mb: mdToken,
        pClass: *mut mdTypeDef,
        szMember: LPWSTR,
        cchMember: ULONG,
        pchMember: *mut ULONG,
        pdwAttr: *mut DWORD,
        ppvSigBlob: *mut PCCOR_SIGNATURE,
        pcbSigBlob: *mut ULONG,
        pulCodeRVA: *mut ULONG,
        pdwImplFlags: *mut DWORD,
        pdwCPlusTypeFlag: *mut DWORD,
        ppValue: *mut UVCP_CONSTANT,
        pcchValue: *mut ULONG,
    ) -> HRESULT,
    /// Slot 57.
    pub GetFieldProps: unsafe extern "system" fn(
        this: *mut IMetaDataImport,
        mb: mdFieldDef,
        pClass: *mut mdTypeDef,
        szField: LPWSTR,
        cchField: ULONG,
        pchField: *mut ULONG,
        pdwAttr: *mut DWORD,
        ppvSigBlob: *mut PCCOR_SIGNATURE,
        pcbSigBlob: *mut ULONG,
        pdwCPlusTypeFlag: *mut DWORD,
        ppValue: *mut UVCP_CONSTANT,
        pcchValue: *mut ULONG,
    ) -> HRESULT,
    /// Slot 58. cor.h declares `szProperty` as `LPCWSTR`, but it is an `[OUT]` buffer.
    pub GetPropertyProps: unsafe extern "system" fn(
        this: *mut IMetaDataImport,
        prop: mdProperty,
        pClass: *mut mdTypeDef,
        szProperty: *mut WCHAR,
        cchProperty: ULONG,
        pchProperty: *mut ULONG,
        pdwPropFlags: *mut DWORD,
        ppvSig: *mut PCCOR_SIGNATURE,
        pbSig: *mut ULONG,
        pdwCPlusTypeFlag: *mut DWORD,
        ppDefaultValue: *mut UVCP_CONSTANT,
        pcchDefaultValue: *mut ULONG,
        pmdSetter: *mut mdMethodDef,
        pmdGetter: *mut mdMethodDef,
        rmdOtherMethod: *mut mdMethodDef,
        cMax: ULONG,
        pcOtherMethod: *mut ULONG,
    ) -> HRESULT,
    /// Slot 59.
    pub GetParamProps: unsafe extern "system" fn(
        this: *mut IMetaDataImport,
        tk: mdParamDef,
        pmd: *mut mdMethodDef,
        pulSequence: *mut ULONG,
        szName: LPWSTR,
        cchName: ULONG,
        pchName: *mut ULONG,
        pdwAttr: *mut DWORD,
        pdwCPlusTypeFlag: *mut DWORD,
        ppValue: *mut UVCP_CONSTANT,
        pcchValue: *mut ULONG,
    ) -> HRESULT,
    /// Slot 60.
    pub GetCustomAttributeByName: unsafe extern "system" fn(
        this: *mut IMetaDataImport,
        tkObj: mdToken,
        szName: LPCWSTR,
        ppData: *mut *const c_void,
        pcbData: *mut ULONG,
    ) -> HRESULT,
    /// Slot 61. Returns `BOOL`, not an HRESULT.
    pub IsValidToken: unsafe extern "system" fn(this: *mut IMetaDataImport, tk: mdToken) -> BOOL,
    /// Slot 62.
    pub GetNestedClassProps: unsafe extern "system" fn(
        this: *mut IMetaDataImport,
        tdNestedClass: mdTypeDef,
        ptdEnclosingClass: *mut mdTypeDef,
    ) -> HRESULT,
    /// Slot 63.
    pub GetNativeCallConvFromSig: unsafe extern "system" fn(
        this: *mut IMetaDataImport,
        pvSig: *const c_void,
        cbSig: ULONG,
        pCallConv: *mut ULONG,
    ) -> HRESULT,
    /// Slot 64.
    pub IsGlobal: unsafe extern "system" fn(this: *mut IMetaDataImport, pd: mdToken, pbGlobal: *mut i32) -> HRESULT,
}

// ---------------------------------------------------------------------------
// IMetaDataImport2
// ---------------------------------------------------------------------------

/// An `IMetaDataImport2*` is also a valid `IMetaDataImport*`, so the inherited
/// slots are the embedded `base` vtable; cast `this` to `*mut IMetaDataImport`
/// when calling them.
#[repr(C)]
pub struct IMetaDataImport2 {
    pub vtbl: *const IMetaDataImport2Vtbl,
}

#[repr(C)]
pub struct IMetaDataImport2Vtbl {
    /// Slots 0..=64.
    pub base: IMetaDataImportVtbl,

    // ---- IMetaDataImport2: 8 methods, slots 65..=72 ----
    /// Slot 65.
    pub EnumGenericParams: unsafe extern "system" fn(
        this: *mut IMetaDataImport2,
        phEnum: *mut HCORENUM,
        tk: mdToken,
        rGenericParams: *mut mdGenericParam,
        cMax: ULONG,
        pcGenericParams: *mut ULONG,
    ) -> HRESULT,
    /// Slot 66.
    pub GetGenericParamProps: unsafe extern "system" fn(
        this: *mut IMetaDataImport2,
        gp: mdGenericParam,
        pulParamSeq: *mut ULONG,
        pdwParamFlags: *mut DWORD,
        ptOwner: *mut mdToken,
        reserved: *mut DWORD,
        wzname: LPWSTR,
        cchName: ULONG,
        pchName: *mut ULONG,
    ) -> HRESULT,
    /// Slot 67.
    pub GetMethodSpecProps: unsafe extern "system" fn(
        this: *mut IMetaDataImport2,
        mi: mdMethodSpec,
        tkParent: *mut mdToken,
        ppvSigBlob: *mut PCCOR_SIGNATURE,
        pcbSigBlob: *mut ULONG,
    ) -> HRESULT,
    /// Slot 68.
    pub EnumGenericParamConstraints: unsafe extern "system" fn(
        this: *mut IMetaDataImport2,
        phEnum: *mut HCORENUM,
        tk: mdGenericParam,
        rGenericParamConstraints: *mut mdGenericParamConstraint,
        cMax: ULONG,
        pcGenericParamConstraints: *mut ULONG,
    ) -> HRESULT,
    /// Slot 69.
    pub GetGenericParamConstraintProps: unsafe extern "system" fn(
        this: *mut IMetaDataImport2,
        gpc: mdGenericParamConstraint,
        ptGenericParam: *mut mdGenericParam,
        ptkConstraintType: *mut mdToken,
    ) -> HRESULT,
    /// Slot 70.
    pub GetPEKind: unsafe extern "system" fn(
        this: *mut IMetaDataImport2,
        pdwPEKind: *mut DWORD,
        pdwMAchine: *mut DWORD,
    ) -> HRESULT,
    /// Slot 71.
    pub GetVersionString: unsafe extern "system" fn(
        this: *mut IMetaDataImport2,
        pwzBuf: LPWSTR,
        ccBufSize: DWORD,
        pccBufSize: *mut DWORD,
    ) -> HRESULT,
    /// Slot 72.
    pub EnumMethodSpecs: unsafe extern "system" fn(
        this: *mut IMetaDataImport2,
        phEnum: *mut HCORENUM,
        tk: mdToken,
        rMethodSpecs: *mut mdMethodSpec,
        cMax: ULONG,
        pcMethodSpecs: *mut ULONG,
    ) -> HRESULT,
}

// ---------------------------------------------------------------------------
// IMetaDataEmit, IMetaDataAssemblyEmit, IMetaDataAssemblyImport: the slots the error simulator
// uses to reference an exception's constructor from the module it rewrites. Only the leading
// slots up to the last one called are declared; slots that are never called are plain pointers
// (their signatures do not change the layout).
// ---------------------------------------------------------------------------

/// `afPublicKey` (CorAssemblyFlags): the AssemblyRef carries the full public key, not its token.
pub const afPublicKey: DWORD = 0x0001;

/// Number of IMetaDataEmit slots declared in [`IMetaDataEmitVtbl`] (IUnknown 3 + 21).
pub const IMETADATA_EMIT_DECLARED_SLOTS: usize = 24;

#[repr(C)]
pub struct IMetaDataEmit {
    pub vtbl: *const IMetaDataEmitVtbl,
}

#[repr(C)]
pub struct IMetaDataEmitVtbl {
    /// Slot 0.
    pub QueryInterface:
        unsafe extern "system" fn(this: *mut IMetaDataEmit, riid: REFIID, ppvObject: *mut *mut c_void) -> HRESULT,
    /// Slot 1.
    pub AddRef: unsafe extern "system" fn(this: *mut IMetaDataEmit) -> ULONG,
    /// Slot 2.
    pub Release: unsafe extern "system" fn(this: *mut IMetaDataEmit) -> ULONG,
    /// Slots 3..=11: SetModuleProps, Save, SaveToStream, GetSaveSize, DefineTypeDef,
    /// DefineNestedType, SetHandler, DefineMethod, DefineMethodImpl (never called).
    pub _SetModuleProps_to_DefineMethodImpl: [*const c_void; 9],
    /// Slot 12.
    pub DefineTypeRefByName: unsafe extern "system" fn(
        this: *mut IMetaDataEmit,
        tkResolutionScope: mdToken,
        szName: LPCWSTR,
        ptr: *mut mdTypeRef,
    ) -> HRESULT,
    /// Slot 13: DefineImportType (never called).
    pub _DefineImportType: *const c_void,
    /// Slot 14.
    pub DefineMemberRef: unsafe extern "system" fn(
        this: *mut IMetaDataEmit,
        tkImport: mdToken,
        szName: LPCWSTR,
        pvSigBlob: PCCOR_SIGNATURE,
        cbSigBlob: ULONG,
        pmr: *mut mdMemberRef,
    ) -> HRESULT,
    /// Slots 15..=22: DefineImportMember, DefineEvent, SetClassLayout, DeleteClassLayout,
    /// SetFieldMarshal, DeleteFieldMarshal, DefinePermissionSet, SetRVA (never called).
    pub _DefineImportMember_to_SetRVA: [*const c_void; 8],
    /// Slot 23.
    pub GetTokenFromSig: unsafe extern "system" fn(
        this: *mut IMetaDataEmit,
        pvSig: PCCOR_SIGNATURE,
        cbSig: ULONG,
        pmsig: *mut mdSignature,
    ) -> HRESULT,
}

#[repr(C)]
pub struct IMetaDataAssemblyEmit {
    pub vtbl: *const IMetaDataAssemblyEmitVtbl,
}

#[repr(C)]
pub struct IMetaDataAssemblyEmitVtbl {
    /// Slot 0.
    pub QueryInterface: unsafe extern "system" fn(
        this: *mut IMetaDataAssemblyEmit,
        riid: REFIID,
        ppvObject: *mut *mut c_void,
    ) -> HRESULT,
    /// Slot 1.
    pub AddRef: unsafe extern "system" fn(this: *mut IMetaDataAssemblyEmit) -> ULONG,
    /// Slot 2.
    pub Release: unsafe extern "system" fn(this: *mut IMetaDataAssemblyEmit) -> ULONG,
    /// Slot 3: DefineAssembly (never called).
    pub _DefineAssembly: *const c_void,
    /// Slot 4.
    pub DefineAssemblyRef: unsafe extern "system" fn(
        this: *mut IMetaDataAssemblyEmit,
        pbPublicKeyOrToken: *const c_void,
        cbPublicKeyOrToken: ULONG,
        szName: LPCWSTR,
        pMetaData: *const ASSEMBLYMETADATA,
        pbHashValue: *const c_void,
        cbHashValue: ULONG,
        dwAssemblyRefFlags: DWORD,
        pmdar: *mut mdAssemblyRef,
    ) -> HRESULT,
}

#[repr(C)]
pub struct IMetaDataAssemblyImport {
    pub vtbl: *const IMetaDataAssemblyImportVtbl,
}

#[repr(C)]
pub struct IMetaDataAssemblyImportVtbl {
    /// Slot 0.
    pub QueryInterface: unsafe extern "system" fn(
        this: *mut IMetaDataAssemblyImport,
        riid: REFIID,
        ppvObject: *mut *mut c_void,
    ) -> HRESULT,
    /// Slot 1.
    pub AddRef: unsafe extern "system" fn(this: *mut IMetaDataAssemblyImport) -> ULONG,
    /// Slot 2.
    pub Release: unsafe extern "system" fn(this: *mut IMetaDataAssemblyImport) -> ULONG,
    /// Slot 3.
    pub GetAssemblyProps: unsafe extern "system" fn(
        this: *mut IMetaDataAssemblyImport,
        mda: mdAssembly,
        ppbPublicKey: *mut *const c_void,
        pcbPublicKey: *mut ULONG,
        pulHashAlgId: *mut ULONG,
        szName: LPWSTR,
        cchName: ULONG,
        pchName: *mut ULONG,
        pMetaData: *mut ASSEMBLYMETADATA,
        pdwAssemblyFlags: *mut DWORD,
    ) -> HRESULT,
    /// Slots 4..=11: GetAssemblyRefProps, GetFileProps, GetExportedTypeProps,
    /// GetManifestResourceProps, EnumAssemblyRefs, EnumFiles, EnumExportedTypes,
    /// EnumManifestResources (never called).
    pub _GetAssemblyRefProps_to_EnumManifestResources: [*const c_void; 8],
    /// Slot 12.
    pub GetAssemblyFromScope:
        unsafe extern "system" fn(this: *mut IMetaDataAssemblyImport, ptkAssembly: *mut mdAssembly) -> HRESULT,
}
