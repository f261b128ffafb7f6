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

/// A static field that can hold an object (`GCBulkRootStaticVar` reports those holding one): of
/// a class, object or value type (a value type's static is a box), never a literal nor RVA data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StaticField {
    pub type_def: mdTypeDef,
    pub field: mdFieldDef,
    pub name: String,
    /// What its signature says it holds.
    pub holds: Holds,
    /// Declared by a generic type (its name, or an enclosing type's, has an arity marker: the
    /// statics are each instantiation's, and the definition has no class of its own).
    pub generic: bool,
}

/// What a static field can hold, by its declared type: the object in its slot is of that type,
/// or derives from it (or implements it, for an interface).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Holds {
    /// `object`, a type parameter, or a type whose name could not be read.
    Anything,
    /// An array.
    Array,
    /// The type of this name (`Namespace.Outer+Inner`; a generic type by its definition's name,
    /// ``System.Collections.Generic.Dictionary`2``). A value type's static holds its box.
    Type(String),
}

/// `CorFieldAttr` (cor.h): `fdStatic`, `fdLiteral` (a constant: no storage), `fdHasFieldRVA`
/// (data in the image, never an object).
const FD_STATIC: DWORD = 0x0010;
const FD_LITERAL: DWORD = 0x0040;
const FD_HAS_FIELD_RVA: DWORD = 0x0100;

/// `IMAGE_CEE_CS_CALLCONV_FIELD`, the first byte of a field's signature.
const FIELD_SIG: u8 = 0x06;

/// Tokens per `Enum*` call.
const ENUM_BATCH: usize = 256;

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

    /// The static fields of the module's types that can hold an object and whose name
    /// `wanted` accepts (`EnumTypeDefs`, `EnumFields`, `GetFieldProps`): each field's name is
    /// read into a buffer reused for the whole module, and decoded only for a static field that
    /// can hold an object (most fields are instance fields or hold primitives).
    pub(crate) fn static_fields(&self, wanted: &mut dyn FnMut(&str) -> bool) -> Result<Vec<StaticField>, HResult> {
        let mut found = Vec::new();
        let mut name = vec![0u16; 256];
        let mut text = String::new();
        for type_def in self.tokens(|e, buf, cap, n| call!(self.EnumTypeDefs(e, buf, cap, n)))? {
            let Ok(fields) = self.tokens(|e, buf, cap, n| call!(self.EnumFields(e, type_def, buf, cap, n))) else {
                continue;
            };
            for field in fields {
                let Some((len, attr, signature)) = self.field_props(field, &mut name) else { continue };
                if attr & (FD_STATIC | FD_LITERAL | FD_HAS_FIELD_RVA) != FD_STATIC {
                    continue;
                }
                let Some(declared) = field_type(signature) else { continue };
                text.clear();
                text.extend(char::decode_utf16(name[..len].iter().copied()).map(|c| c.unwrap_or('\u{fffd}')));
                if !wanted(&text) {
                    continue;
                }
                let holds = match declared {
                    FieldType::Anything => Holds::Anything,
                    FieldType::Array => Holds::Array,
                    FieldType::String => Holds::Type("System.String".to_string()),
                    // (A TypeSpec here would be named as a signature, not as the runtime names types.)
                    FieldType::Token(token) if token & TOKEN_TYPE_MASK == MD_TYPE_SPEC => Holds::Anything,
                    FieldType::Token(token) => self.type_name(token).map_or(Holds::Anything, Holds::Type),
                };
                let generic = self.type_def_name(type_def).map_or(true, |name| name.contains('`'));
                found.push(StaticField { type_def, field, name: text.clone(), holds, generic });
            }
        }
        Ok(found)
    }

    /// A field's attributes and signature (`GetFieldProps`), its name read into `name` (grown
    /// once when too short), with the name's length.
    fn field_props<'a>(&'a self, field: mdFieldDef, name: &mut Vec<u16>) -> Option<(usize, DWORD, &'a [u8])> {
        let (mut class, mut attr, mut sig, mut sig_len, mut flag, mut value, mut value_len) =
            (0u32, 0u32, std::ptr::null(), 0u32, 0u32, std::ptr::null(), 0u32);
        let mut len: ULONG = 0;
        let mut get = |buf: &mut Vec<u16>, len: &mut ULONG| {
            call!(self.GetFieldProps(
                field,
                &mut class,
                buf.as_mut_ptr(),
                buf.len() as ULONG,
                len,
                &mut attr,
                &mut sig,
                &mut sig_len,
                &mut flag,
                &mut value,
                &mut value_len
            ))
        };
        get(name, &mut len).ok()?;
        if len as usize > name.len() {
            name.resize((len as usize).min(1 << 16), 0);
            get(name, &mut len).ok()?;
        }
        let text = &name[..(len as usize).min(name.len())];
        let end = text.iter().position(|&c| c == 0).unwrap_or(text.len());
        let signature: &[u8] = if sig.is_null() {
            &[]
        } else {
            // SAFETY: as for method signatures: `sig_len` bytes owned by the module's metadata.
            unsafe { std::slice::from_raw_parts(sig, sig_len as usize) }
        };
        Some((end, attr, signature))
    }

    /// Every token an `Enum*` method gives, `ENUM_BATCH` per call; the enumeration closed after.
    fn tokens(
        &self,
        mut next: impl FnMut(*mut HCORENUM, *mut mdToken, ULONG, *mut ULONG) -> Result<(), HResult>,
    ) -> Result<Vec<mdToken>, HResult> {
        let mut cursor: HCORENUM = null_mut();
        let mut tokens = Vec::new();
        let mut batch = [0 as mdToken; ENUM_BATCH];
        let result = loop {
            let mut count: ULONG = 0;
            if let Err(e) = next(&mut cursor, batch.as_mut_ptr(), ENUM_BATCH as ULONG, &mut count) {
                break Err(e);
            }
            let count = (count as usize).min(ENUM_BATCH);
            tokens.extend_from_slice(&batch[..count]);
            if count < ENUM_BATCH {
                break Ok(tokens);
            }
        };
        if !cursor.is_null() {
            // SAFETY: `cursor` is the enumeration the calls above opened, closed once.
            unsafe { ((*(*self.ptr.as_ptr()).vtbl).CloseEnum)(self.ptr.as_ptr(), cursor) };
        }
        result
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

/// A field's declared type, as far as telling which objects it can hold goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FieldType {
    Anything,
    Array,
    String,
    /// A class or value type (a generic instantiation: its definition): TypeDef, TypeRef or
    /// TypeSpec token.
    Token(mdToken),
}

/// The declared type of a field of signature `signature` (`FIELD`, custom modifiers, a type)
/// if it can hold an object — a class, array, generic instantiation, type variable or value
/// type (boxed) — `None` for a primitive or a pointer (ECMA-335 II.23.2.4).
fn field_type(signature: &[u8]) -> Option<FieldType> {
    let mut at = match signature.first() {
        Some(&FIELD_SIG) => 1,
        _ => return None,
    };
    // Custom modifiers (`volatile`): the modifier, then a compressed TypeDefOrRef token.
    while let Some(&(ELEMENT_TYPE_CMOD_REQD | ELEMENT_TYPE_CMOD_OPT)) = signature.get(at) {
        (_, at) = compressed(signature, at + 1)?;
    }
    let element = *signature.get(at)?;
    Some(match element {
        ELEMENT_TYPE_STRING => FieldType::String,
        ELEMENT_TYPE_OBJECT | ELEMENT_TYPE_VAR => FieldType::Anything,
        ELEMENT_TYPE_ARRAY | ELEMENT_TYPE_SZARRAY => FieldType::Array,
        ELEMENT_TYPE_CLASS | ELEMENT_TYPE_VALUETYPE => FieldType::Token(type_def_or_ref(signature, at + 1)?),
        // The generic type (CLASS or VALUETYPE, then its token), then the arguments.
        ELEMENT_TYPE_GENERICINST => FieldType::Token(type_def_or_ref(signature, at + 2)?),
        _ => return None,
    })
}

/// A compressed unsigned integer at `at` (ECMA-335 II.23.2) and the offset after it.
fn compressed(blob: &[u8], at: usize) -> Option<(u32, usize)> {
    let first = *blob.get(at)? as u32;
    if first & 0x80 == 0 {
        Some((first, at + 1))
    } else if first & 0xc0 == 0x80 {
        Some(((first & 0x3f) << 8 | *blob.get(at + 1)? as u32, at + 2))
    } else {
        let rest = blob.get(at + 1..at + 4)?;
        Some(((first & 0x1f) << 24 | (rest[0] as u32) << 16 | (rest[1] as u32) << 8 | rest[2] as u32, at + 4))
    }
}

/// A compressed TypeDefOrRef coded index at `at` as a token (II.23.2.8).
fn type_def_or_ref(blob: &[u8], at: usize) -> Option<mdToken> {
    let (coded, _) = compressed(blob, at)?;
    let table = match coded & 3 {
        0 => MD_TYPE_DEF,
        1 => MD_TYPE_REF,
        2 => MD_TYPE_SPEC,
        _ => return None,
    };
    Some(table | coded >> 2)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_field_signature_tells_what_objects_the_field_can_hold() {
        // Dictionary<,> (GENERICINST of TypeRef 2: coded 0x09), a volatile object (CMOD_REQD,
        // a 1-byte token), a string after a 2-byte modifier token, a struct (TypeDef 4), a
        // TypeRef of a 2-byte index (0x81 0x01: coded 0x101), arrays.
        let field = |rest: &[u8]| field_type(&[&[0x06], rest].concat());
        assert_eq!(
            field(&[ELEMENT_TYPE_GENERICINST, ELEMENT_TYPE_CLASS, 0x09, 2]),
            Some(FieldType::Token(0x0100_0002))
        );
        assert_eq!(field(&[ELEMENT_TYPE_CMOD_REQD, 0x49, ELEMENT_TYPE_OBJECT]), Some(FieldType::Anything));
        assert_eq!(field(&[ELEMENT_TYPE_CMOD_OPT, 0x81, 0x02, ELEMENT_TYPE_STRING]), Some(FieldType::String));
        assert_eq!(field(&[ELEMENT_TYPE_VALUETYPE, 0x10]), Some(FieldType::Token(0x0200_0004)));
        assert_eq!(field(&[ELEMENT_TYPE_CLASS, 0x81, 0x01]), Some(FieldType::Token(0x0100_0040)));
        assert_eq!(field(&[ELEMENT_TYPE_SZARRAY, ELEMENT_TYPE_U1]), Some(FieldType::Array));
        assert_eq!(field(&[ELEMENT_TYPE_VAR, 0]), Some(FieldType::Anything));
        // Primitives, pointers and damaged signatures hold no object.
        assert_eq!(field(&[ELEMENT_TYPE_I4]), None);
        assert_eq!(field(&[ELEMENT_TYPE_PTR, ELEMENT_TYPE_U1]), None);
        assert_eq!(field(&[ELEMENT_TYPE_CMOD_REQD]), None);
        assert_eq!(field(&[ELEMENT_TYPE_CLASS]), None);
        assert_eq!(field_type(&[]), None);
        assert_eq!(field_type(&[0x00, ELEMENT_TYPE_CLASS, 0x10]), None);
    }
}
