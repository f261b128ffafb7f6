//! `IMetaDataImport`: names of types and methods, and their signature blobs.

use crate::hresult::HResult;
use crate::info::{read_string, wide};
use sonde_clr_sys::*;
use sonde_metadata::token::{
    KIND_MASK as TOKEN_TYPE_MASK, TYPE_DEF as MD_TYPE_DEF, TYPE_REF as MD_TYPE_REF, TYPE_SPEC as MD_TYPE_SPEC,
};
use sonde_metadata::{MAX_NESTING, TypeNames, UNREADABLE_SIGNATURE, nested, signature};
use std::ptr::{NonNull, null_mut};

/// What `GetMethodProps` says of a MethodDef (the signature borrowed from the module's metadata).
struct MethodProps<'a> {
    class: mdTypeDef,
    name: String,
    attr: DWORD,
    signature: &'a [u8],
}

/// An owned IMetaDataImport reference, released on drop.
pub(crate) struct Import {
    ptr: NonNull<IMetaDataImport>,
}

macro_rules! call {
    ($self:ident . $method:ident ( $($arg:expr),* )) => {{
        // SAFETY: `ptr` is a live IMetaDataImport we hold a reference to; the arguments follow
        // cor.h, and out-pointers point to live locals or buffers of the stated capacity.
        let hr = unsafe { ((*(*$self.ptr.as_ptr()).vtbl).$method)($self.ptr.as_ptr() $(, $arg)*) };
        HResult::check(hr)
    }};
}

impl Import {
    /// Takes ownership of one reference (as returned by `GetTokenAndMetaDataFromFunction`).
    pub(crate) fn new(ptr: *mut IMetaDataImport) -> Option<Import> {
        NonNull::new(ptr).map(|ptr| Import { ptr })
    }

    /// A MethodDef's own properties (`GetMethodProps`).
    fn method_props(&self, method: mdMethodDef) -> Result<MethodProps<'_>, HResult> {
        let mut class: mdTypeDef = 0;
        let (mut attr, mut sig, mut sig_len, mut rva, mut impl_flags) = (0u32, std::ptr::null(), 0u32, 0u32, 0u32);
        let name = read_string(|cap, len, buf| {
            call!(self.GetMethodProps(
                method,
                &mut class,
                buf,
                cap,
                len,
                &mut attr,
                &mut sig,
                &mut sig_len,
                &mut rva,
                &mut impl_flags
            ))
        })?;
        let signature: &[u8] = if sig.is_null() {
            &[]
        } else {
            // SAFETY: the runtime returned a pointer to `sig_len` bytes of signature blob that
            // live as long as the module's metadata, which outlives `self`.
            unsafe { std::slice::from_raw_parts(sig, sig_len as usize) }
        };
        Ok(MethodProps { class, name, attr, signature })
    }

    /// `Namespace.Type.Method` and the decoded signature of a MethodDef.
    pub(crate) fn method_name_and_signature(&self, method: mdMethodDef) -> Result<(String, String), HResult> {
        let MethodProps { class, name, signature: blob, .. } = self.method_props(method)?;
        let signature = signature::method_signature(blob, self).unwrap_or_else(|| UNREADABLE_SIGNATURE.into());
        let full = if class == 0 || class & !TOKEN_TYPE_MASK == 0 {
            name // a global function: no declaring type (`<Module>`)
        } else {
            format!("{}.{name}", self.type_def_name(class)?)
        };
        Ok((full, signature))
    }

    /// The public top-level type `name` (`Namespace.Type`) if it has a public constructor taking
    /// no arguments (`newobj` of it then never fails to resolve).
    pub(crate) fn constructible_type(&self, name: &str) -> Option<crate::emit::ConstructibleType> {
        let name = wide(name);
        let mut type_def: mdTypeDef = 0;
        call!(self.FindTypeDefByName(name.as_ptr(), 0, &mut type_def)).ok()?;
        let (mut flags, mut extends) = (0u32, 0u32);
        read_string(|cap, len, buf| call!(self.GetTypeDefProps(type_def, buf, cap, len, &mut flags, &mut extends)))
            .ok()?;
        if flags & tdVisibilityMask != tdPublic {
            return None;
        }
        let ctor = wide(".ctor");
        let sig = crate::emit::DEFAULT_CTOR_SIG;
        let mut method: mdMethodDef = 0;
        call!(self.FindMethod(type_def, ctor.as_ptr(), sig.as_ptr(), sig.len() as ULONG, &mut method)).ok()?;
        let attr = self.method_props(method).ok()?.attr;
        (attr & mdMemberAccessMask == mdPublic).then_some(crate::emit::ConstructibleType { type_def, ctor: method })
    }

    /// A TypeDef's name with its enclosing types: `Namespace.Outer+Inner`.
    pub(crate) fn type_def_name(&self, mut class: mdTypeDef) -> Result<String, HResult> {
        let mut parts = Vec::new();
        for _ in 0..MAX_NESTING {
            let (mut flags, mut extends) = (0u32, 0u32);
            parts.push(read_string(|cap, len, buf| {
                call!(self.GetTypeDefProps(class, buf, cap, len, &mut flags, &mut extends))
            })?);
            if flags & tdVisibilityMask < tdNestedPublic {
                break;
            }
            let mut enclosing: mdTypeDef = 0;
            if call!(self.GetNestedClassProps(class, &mut enclosing)).is_err() || enclosing == 0 {
                break;
            }
            class = enclosing;
        }
        Ok(nested(parts))
    }

    fn type_ref_name(&self, mut reference: mdTypeRef) -> Result<String, HResult> {
        let mut parts = Vec::new();
        for _ in 0..MAX_NESTING {
            let mut scope: mdToken = 0;
            parts.push(read_string(|cap, len, buf| call!(self.GetTypeRefProps(reference, &mut scope, buf, cap, len)))?);
            // A TypeRef scoped by another TypeRef is a nested type.
            if scope & TOKEN_TYPE_MASK != MD_TYPE_REF {
                break;
            }
            reference = scope;
        }
        Ok(nested(parts))
    }

    fn type_spec_name(&self, spec: mdTypeSpec) -> Option<String> {
        let (mut sig, mut len) = (std::ptr::null(), 0u32);
        call!(self.GetTypeSpecFromToken(spec, &mut sig, &mut len)).ok()?;
        if sig.is_null() {
            return None;
        }
        // SAFETY: as for method signatures: `len` bytes owned by the module's metadata.
        let blob = unsafe { std::slice::from_raw_parts(sig, len as usize) };
        signature::type_signature(blob, self)
    }
}

impl TypeNames for Import {
    fn type_name(&self, token: u32) -> Option<String> {
        match token & TOKEN_TYPE_MASK {
            MD_TYPE_DEF => self.type_def_name(token).ok(),
            MD_TYPE_REF => self.type_ref_name(token).ok(),
            MD_TYPE_SPEC => self.type_spec_name(token),
            _ => None,
        }
    }
}

impl Drop for Import {
    fn drop(&mut self) {
        // SAFETY: we own one reference to a live interface.
        unsafe { ((*(*self.ptr.as_ptr()).vtbl).Release)(self.ptr.as_ptr()) };
    }
}

#[allow(dead_code)]
fn _assert_null_is_not_an_import() {
    assert!(Import::new(null_mut()).is_none());
}
