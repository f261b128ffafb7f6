//! Writing a module's metadata (`IMetaDataEmit`, `IMetaDataAssemblyEmit`) and reading its
//! assembly's identity (`IMetaDataAssemblyImport`): what rewritten IL needs to name a type or
//! method the module did not reference before (the error simulator's exception constructors,
//! its call signature).
//!
//! The runtime's metadata is thread-safe for a profiler (it takes its own reader/writer lock);
//! callers still serialise their writes to one module so that two threads never define the same
//! reference twice.

use crate::hresult::HResult;
use crate::info::{ProfilerInfo, read_string, wide};
use crate::metadata::Import;
use sonde_clr_sys::*;
use std::ffi::c_void;
use std::ptr::{NonNull, null, null_mut};

/// An assembly's identity as an AssemblyRef names it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AssemblyIdentity {
    pub name: String,
    pub version: [u16; 4],
    /// The full public key (empty for an assembly without a strong name).
    pub public_key: Vec<u8>,
    /// Empty for the neutral culture.
    pub locale: String,
}

/// A public type with a public constructor taking no arguments, found in a loaded module.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConstructibleType {
    pub type_def: u32,
    /// The constructor's MethodDef.
    pub ctor: u32,
}

/// `instance void .ctor()`.
pub const DEFAULT_CTOR_SIG: [u8; 3] = [0x20, 0x00, 0x01];

/// One reference-counted interface pointer, released on drop.
struct Com<T> {
    ptr: NonNull<T>,
    release: unsafe extern "system" fn(*mut T) -> ULONG,
}

impl<T> Drop for Com<T> {
    fn drop(&mut self) {
        // SAFETY: we own one reference to a live interface.
        unsafe { (self.release)(self.ptr.as_ptr()) };
    }
}

/// A module's metadata opened for writing.
pub struct ModuleWriter {
    import: Import,
    emit: Com<IMetaDataEmit>,
    assembly_emit: Com<IMetaDataAssemblyEmit>,
}

macro_rules! com {
    ($com:expr, $method:ident ( $($arg:expr),* )) => {{
        let p = $com.ptr.as_ptr();
        // SAFETY: `p` is a live interface we hold a reference to, whose vtable declares this
        // slot (cor.h); out-pointers point to live locals, in-pointers to live buffers.
        let hr = unsafe { ((*(*p).vtbl).$method)(p $(, $arg)*) };
        HResult::check(hr)
    }};
}

impl ProfilerInfo {
    /// Opens `module`'s metadata for writing (`GetModuleMetaData(ofRead | ofWrite)`).
    pub fn module_writer(&self, module: ModuleID) -> Result<ModuleWriter, HResult> {
        let emit: NonNull<IMetaDataEmit> = self.module_interface(module, ofRead | ofWrite, &IID_IMetaDataEmit)?;
        // SAFETY: `emit` is a live IMetaDataEmit holding one reference we now own.
        let emit = Com { ptr: emit, release: unsafe { (*(*emit.as_ptr()).vtbl).Release } };
        let import: NonNull<IMetaDataImport> = query(&emit, &IID_IMetaDataImport)?;
        let import = Import::new(import.as_ptr()).ok_or(HResult(E_FAIL))?;
        let assembly_emit: NonNull<IMetaDataAssemblyEmit> = query(&emit, &IID_IMetaDataAssemblyEmit)?;
        // SAFETY: as for `emit`.
        let assembly_emit = Com { ptr: assembly_emit, release: unsafe { (*(*assembly_emit.as_ptr()).vtbl).Release } };
        Ok(ModuleWriter { import, emit, assembly_emit })
    }

    /// The public type `name` (`Namespace.Type`) of `module`, if it has a public constructor that
    /// takes no arguments.
    pub fn constructible_type(&self, module: ModuleID, name: &str) -> Option<ConstructibleType> {
        let import: NonNull<IMetaDataImport> = self.module_interface(module, ofRead, &IID_IMetaDataImport).ok()?;
        let import = Import::new(import.as_ptr())?;
        import.constructible_type(name)
    }

    /// The identity of the assembly whose manifest `module` holds.
    pub fn assembly_identity(&self, module: ModuleID) -> Result<AssemblyIdentity, HResult> {
        let assembly_import: NonNull<IMetaDataAssemblyImport> =
            self.module_interface(module, ofRead, &IID_IMetaDataAssemblyImport)?;
        // SAFETY: a live IMetaDataAssemblyImport holding one reference we now own.
        let assembly_import =
            Com { ptr: assembly_import, release: unsafe { (*(*assembly_import.as_ptr()).vtbl).Release } };
        let mut assembly: mdAssembly = 0;
        com!(assembly_import, GetAssemblyFromScope(&mut assembly))?;
        let (mut key, mut key_len, mut hash_alg, mut flags) = (null::<c_void>(), 0u32, 0u32, 0u32);
        let mut locale = [0u16; 64];
        let mut meta = ASSEMBLYMETADATA {
            usMajorVersion: 0,
            usMinorVersion: 0,
            usBuildNumber: 0,
            usRevisionNumber: 0,
            szLocale: locale.as_mut_ptr(),
            cbLocale: locale.len() as ULONG,
            rProcessor: null_mut(),
            ulProcessor: 0,
            rOS: null_mut(),
            ulOS: 0,
        };
        let name = read_string(|cap, len, buf| {
            com!(
                assembly_import,
                GetAssemblyProps(assembly, &mut key, &mut key_len, &mut hash_alg, buf, cap, len, &mut meta, &mut flags)
            )
        })?;
        let public_key = if key.is_null() {
            Vec::new()
        } else {
            // SAFETY: `key_len` bytes of the module's metadata, alive as long as the module.
            unsafe { std::slice::from_raw_parts(key.cast::<u8>(), key_len as usize) }.to_vec()
        };
        let locale_len = (meta.cbLocale as usize).min(locale.len());
        let locale = &locale[..locale_len];
        let end = locale.iter().position(|&c| c == 0).unwrap_or(locale.len());
        Ok(AssemblyIdentity {
            name,
            version: [meta.usMajorVersion, meta.usMinorVersion, meta.usBuildNumber, meta.usRevisionNumber],
            public_key,
            locale: String::from_utf16_lossy(&locale[..end]),
        })
    }

    fn module_interface<T>(&self, module: ModuleID, flags: DWORD, iid: &GUID) -> Result<NonNull<T>, HResult> {
        let mut out: *mut IUnknown = null_mut();
        self.module_metadata(module, flags, iid, &mut out)?;
        NonNull::new(out.cast::<T>()).ok_or(HResult(E_FAIL))
    }
}

/// Queries `from` for another interface of the same object.
fn query<F, T>(from: &Com<F>, iid: &GUID) -> Result<NonNull<T>, HResult> {
    let mut out: *mut c_void = null_mut();
    let p = from.ptr.as_ptr().cast::<IUnknown>();
    // SAFETY: every COM interface starts with IUnknown's vtable; `p` is live.
    let hr = unsafe { ((*(*p).vtbl).QueryInterface)(p, iid, &mut out) };
    HResult::check(hr)?;
    NonNull::new(out.cast::<T>()).ok_or(HResult(E_FAIL))
}

impl ModuleWriter {
    /// The module's own public type `name` with a constructor that takes no arguments.
    pub fn constructible_type(&self, name: &str) -> Option<ConstructibleType> {
        self.import.constructible_type(name)
    }

    /// A new AssemblyRef to `assembly` (full public key, `afPublicKey`).
    pub fn define_assembly_ref(&self, assembly: &AssemblyIdentity) -> Result<u32, HResult> {
        let name = wide(&assembly.name);
        let mut locale = wide(&assembly.locale);
        let meta = ASSEMBLYMETADATA {
            usMajorVersion: assembly.version[0],
            usMinorVersion: assembly.version[1],
            usBuildNumber: assembly.version[2],
            usRevisionNumber: assembly.version[3],
            szLocale: if assembly.locale.is_empty() { null_mut() } else { locale.as_mut_ptr() },
            cbLocale: if assembly.locale.is_empty() { 0 } else { locale.len() as ULONG },
            rProcessor: null_mut(),
            ulProcessor: 0,
            rOS: null_mut(),
            ulOS: 0,
        };
        let flags = if assembly.public_key.is_empty() { 0 } else { afPublicKey };
        let mut token: mdAssemblyRef = 0;
        com!(
            self.assembly_emit,
            DefineAssemblyRef(
                assembly.public_key.as_ptr().cast(),
                assembly.public_key.len() as ULONG,
                name.as_ptr(),
                &meta,
                null(),
                0,
                flags,
                &mut token
            )
        )?;
        Ok(token)
    }

    /// A TypeRef to `name` (`Namespace.Type`) in `scope` (an AssemblyRef).
    pub fn define_type_ref(&self, scope: u32, name: &str) -> Result<u32, HResult> {
        let name = wide(name);
        let mut token: mdTypeRef = 0;
        com!(self.emit, DefineTypeRefByName(scope, name.as_ptr(), &mut token))?;
        Ok(token)
    }

    /// A MemberRef to method `name` of `parent` (TypeDef or TypeRef) with signature `sig`.
    pub fn define_member_ref(&self, parent: u32, name: &str, sig: &[u8]) -> Result<u32, HResult> {
        let name = wide(name);
        let mut token: mdMemberRef = 0;
        com!(self.emit, DefineMemberRef(parent, name.as_ptr(), sig.as_ptr(), sig.len() as ULONG, &mut token))?;
        Ok(token)
    }

    /// The StandAloneSig token of `sig` (for `calli`).
    pub fn signature_token(&self, sig: &[u8]) -> Result<u32, HResult> {
        let mut token: mdSignature = 0;
        com!(self.emit, GetTokenFromSig(sig.as_ptr(), sig.len() as ULONG, &mut token))?;
        Ok(token)
    }
}
