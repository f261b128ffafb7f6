//! Naming Mono methods the way the CoreCLR backend names them, from the same ECMA-335 metadata.
//!
//! CoreCLR's names come from `IMetaDataImport` (`sonde-clr`'s `metadata.rs`): the TypeDef's
//! `Namespace.Name`, enclosing types joined with `+`, then `.Method`; the signature is the
//! MethodDef's signature blob decoded by `sonde_metadata::signature`. Mono's public metadata API
//! reads the very same tables and heaps, so this module reads the same rows and feeds the same
//! blobs to the same decoder: names and signatures come out byte for byte as on CoreCLR
//! (`Acme.Node`1..ctor`, `(!!0) -> !!0`), instead of Mono's own display forms
//! (`Acme.Node<T>:.ctor`, `System.Int32`).
//!
//! Only methods with a MethodDef token are named by [`Method::describe`]: Mono's wrappers
//! (runtime-invoke, managed-to-native, delegate-invoke…) and dynamic methods have no metadata row
//! ([`Method::describe_wrapper`] names those by Mono's display name, for sampling).
//!
//! Everything here runs in a callback on a thread that is compiling a method: attached to the
//! runtime, which is what Mono's API requires (a [`Method`] exists only there).

use crate::{Method, api, c_string};
use sonde_metadata::token::{KIND_MASK, METHOD_DEF, ROW_MASK, TYPE_DEF, TYPE_REF, TYPE_SPEC};
use sonde_metadata::{
    MAX_NESTING, MethodNames, TypeNames, UNREADABLE_SIGNATURE, module_file_name, nested, qualified, signature,
};
use sonde_mono_sys::*;
use std::ffi::{c_char, c_int};

/// One image's metadata.
struct Metadata<'a> {
    api: &'a MonoApi,
    image: *mut MonoImage,
}

impl Method<'_> {
    /// Names the method, or `None` when it has no metadata of its own (wrappers, dynamic methods).
    pub fn describe(&self) -> Option<MethodNames> {
        let (api, image, token, class_token) = self.rows()?;
        let md = Metadata { api, image };
        let row = md.row::<MONO_METHOD_SIZE>(MONO_TABLE_METHOD, token)?;
        let method_name = md.string(row[MONO_METHOD_NAME])?;
        let name = format!("{}.{method_name}", md.type_def_name(class_token)?);
        let signature = md
            .blob(row[MONO_METHOD_SIGNATURE])
            .and_then(|blob| signature::method_signature(blob, &md))
            .unwrap_or_else(|| UNREADABLE_SIGNATURE.into());
        let (assembly, module, path) = md.assembly_and_module();
        Some(MethodNames { name, signature, assembly, module, path, token, ..Default::default() })
    }

    /// Names code that has no metadata of its own (Mono's wrappers, dynamic methods), for sampling
    /// mode, where such frames are on real stacks: Mono's own display name (`(wrapper
    /// managed-to-native) System.Threading.Thread:SleepInternal (int)`), no signature, and the
    /// assembly of the class it hangs off.
    pub fn describe_wrapper(&self) -> Option<MethodNames> {
        let api = api()?;
        let method = self.ptr.as_ptr();
        // SAFETY: the live method; the string is Mono's, freed once below.
        let full = unsafe { (api.mono_method_full_name)(method, 1) };
        if full.is_null() {
            return None;
        }
        // SAFETY: a NUL-terminated string owned by us until freed.
        let name = unsafe { c_string(full) };
        // SAFETY: allocated by Mono for the caller, freed once.
        unsafe { (api.mono_free)(full.cast()) };
        let (assembly, module, path) = match self.image() {
            Some(image) => Metadata { api, image }.assembly_and_module(),
            None => Default::default(),
        };
        Some(MethodNames { name, assembly, module, path, ..Default::default() })
    }

    /// The method's image, MethodDef token and its class's TypeDef token; `None` for code without
    /// a metadata row (wrappers, dynamic methods). A generic instance (`Node<int>`) shares its
    /// definition's image and TypeDef token.
    fn rows(&self) -> Option<(&'static MonoApi, *mut MonoImage, u32, u32)> {
        let api = api()?;
        let method = self.ptr.as_ptr();
        // SAFETY: getters on the live method (see `Method`); they only read the runtime's
        // structures.
        let (token, class) = unsafe { ((api.mono_method_get_token)(method), (api.mono_method_get_class)(method)) };
        if token & KIND_MASK != METHOD_DEF || class.is_null() {
            return None;
        }
        // SAFETY: getters on its live class.
        let (image, class_token) =
            unsafe { ((api.mono_class_get_image)(class), (api.mono_class_get_type_token)(class)) };
        (!image.is_null() && class_token & KIND_MASK == TYPE_DEF).then_some((api, image, token, class_token))
    }

    /// The image of the method's class (null class or image: `None`).
    fn image(&self) -> Option<*mut MonoImage> {
        let api = api()?;
        // SAFETY: getters on the live method and its live class.
        let image = unsafe {
            let class = (api.mono_method_get_class)(self.ptr.as_ptr());
            if class.is_null() {
                return None;
            }
            (api.mono_class_get_image)(class)
        };
        (!image.is_null()).then_some(image)
    }
}

/// Where a method's metadata is: its image (an opaque key, the same for every method of the
/// image) and its MethodDef token. What [`Method::definition`] gives for naming later, off the
/// compiling thread, from the image's file (`sonde_metadata::tables`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Definition {
    pub image: usize,
    pub token: u32,
}

impl Method<'_> {
    /// The method's image and MethodDef token: four field reads, no name built. `None` for code
    /// without a metadata row (wrappers, dynamic methods).
    pub fn definition(&self) -> Option<Definition> {
        let (_, image, token, _) = self.rows()?;
        Some(Definition { image: image as usize, token })
    }

    /// The type arguments of the method's class when it is an instantiation of a generic type
    /// (`Acme.Table<Acme.Row>`: `["Acme.Row"]`), as Mono names types; empty otherwise. Mono
    /// builds the name only for an instantiation.
    pub fn class_type_args(&self) -> Vec<String> {
        let Some(api) = api() else { return Vec::new() };
        // SAFETY: getters on the live method, its class and its type; the name is Mono's, copied
        // and freed once.
        let name = unsafe {
            let class = (api.mono_method_get_class)(self.ptr.as_ptr());
            if class.is_null() {
                return Vec::new();
            }
            let ty = (api.mono_class_get_type)(class);
            if ty.is_null() || (api.mono_type_get_type)(ty) != MONO_TYPE_GENERICINST {
                return Vec::new();
            }
            let full = (api.mono_type_get_name)(ty);
            if full.is_null() {
                return Vec::new();
            }
            let name = c_string(full);
            (api.mono_free)(full.cast());
            name
        };
        type_arguments(&name)
    }

    /// Whether the method is its image's entry point (the `Main` of an executable), from the
    /// image's header: a few getters, no name built. A dynamic image (`AssemblyBuilder`) has no
    /// header — Mono's getter crashes on one — and no entry point that `mono` runs.
    pub fn is_entry_point(&self) -> bool {
        let Some((api, image, token, _)) = self.rows() else { return false };
        // SAFETY: getters on the live image; the entry point only of an image with a header.
        unsafe { (api.mono_image_is_dynamic)(image) == 0 && token == (api.mono_image_get_entry_point)(image) }
    }

    /// Whether the method's image is the main assembly's (the program `mono PROGRAM.exe` runs).
    pub fn in_main_assembly(&self) -> bool {
        let (Some(api), Some(image)) = (api(), self.image()) else { return false };
        // SAFETY: getters on the runtime's main assembly (null before one is set) and its image.
        let main = unsafe {
            let assembly = (api.mono_assembly_get_main)();
            if assembly.is_null() {
                return false;
            }
            (api.mono_assembly_get_image)(assembly)
        };
        main == image
    }

    /// Whether the method is code the runtime generated for itself — a wrapper (`runtime-invoke`,
    /// `managed-to-native`, `native-to-managed`, `delegate-invoke`…) — rather than code of the
    /// program or a library. A method with a MethodDef token is not one (a getter, no name
    /// built); of the methods without one, every wrapper but a `DynamicMethod` (Mono's
    /// `dynamic-method` wrapper, which the program emitted) is. Mono's API has no getter for a
    /// method's wrapper type, so the rest is told by the prefix Mono's display name gives every
    /// wrapper (`mono_method_full_name`: `(wrapper runtime-invoke) …`): one name built, for the
    /// rare caller off the hot path (a catch).
    pub fn is_runtime_wrapper(&self) -> bool {
        if self.rows().is_some() {
            return false;
        }
        let Some(api) = api() else { return false };
        // SAFETY: the live method; the string is Mono's, copied and freed once below.
        let name = unsafe {
            let full = (api.mono_method_full_name)(self.ptr.as_ptr(), 0);
            if full.is_null() {
                return false;
            }
            let name = c_string(full);
            (api.mono_free)(full.cast());
            name
        };
        is_runtime_wrapper_name(&name)
    }

    /// The path of the file the method's image was loaded from (empty for an image loaded from
    /// memory). Once per image: the string is copied.
    pub fn image_path(&self) -> Option<String> {
        let api = api()?;
        let image = self.image()?;
        // SAFETY: a getter on the live image; the string belongs to it and is copied here.
        Some(unsafe { c_string((api.mono_image_get_filename)(image)) })
    }
}

impl Metadata<'_> {
    /// The image's assembly name, module file name and path.
    fn assembly_and_module(&self) -> (String, String, String) {
        // SAFETY: image getters on a live image; the strings belong to the image.
        let (assembly, path) = unsafe {
            (
                c_string((self.api.mono_image_get_name)(self.image)),
                c_string((self.api.mono_image_get_filename)(self.image)),
            )
        };
        (assembly, module_file_name(&path), path)
    }

    /// The columns of row `token` of `table`, or `None` when the token is not a row of it (the
    /// runtime asserts on out-of-range rows, so they are checked here first).
    fn row<const N: usize>(&self, table: c_int, token: u32) -> Option<[u32; N]> {
        let index = token & ROW_MASK;
        // SAFETY: the image is live (see `describe`); table ids are the header's constants.
        let info = unsafe { (self.api.mono_image_get_table_info)(self.image, table) };
        if info.is_null() || index == 0 {
            return None;
        }
        // SAFETY: `info` is the image's table descriptor.
        let rows = unsafe { (self.api.mono_table_info_get_rows)(info) };
        if index > u32::try_from(rows).ok()? {
            return None;
        }
        let mut columns = [0u32; N];
        // SAFETY: a row index in range (0-based), and room for the table's N columns.
        unsafe { (self.api.mono_metadata_decode_row)(info, index as c_int - 1, columns.as_mut_ptr(), N as c_int) };
        Some(columns)
    }

    /// A string from the `#Strings` heap.
    fn string(&self, index: u32) -> Option<String> {
        // SAFETY: an index read from the image's own tables; the heap lives as long as the image.
        let s = unsafe { (self.api.mono_metadata_string_heap)(self.image, index) };
        // SAFETY: heap strings are NUL-terminated.
        (!s.is_null()).then(|| unsafe { c_string(s) })
    }

    /// A blob from the `#Blob` heap, without its length prefix.
    fn blob(&self, index: u32) -> Option<&[u8]> {
        // SAFETY: as for strings.
        let start = unsafe { (self.api.mono_metadata_blob_heap)(self.image, index) };
        if start.is_null() {
            return None;
        }
        let mut data: *const c_char = std::ptr::null();
        // SAFETY: `start` points at a blob's compressed length; the call reads it and sets `data`
        // to the first byte after it.
        let len = unsafe { (self.api.mono_metadata_decode_blob_size)(start, &mut data) };
        if data.is_null() {
            return None;
        }
        // SAFETY: the blob's `len` bytes follow its length prefix inside the image's heap, which
        // outlives this borrow (images of running code are not unloaded).
        Some(unsafe { std::slice::from_raw_parts(data.cast::<u8>(), len as usize) })
    }

    fn qualified(&self, namespace: u32, name: u32) -> Option<String> {
        Some(qualified(&self.string(namespace)?, &self.string(name)?))
    }

    /// `Namespace.Outer+Inner` for a TypeDef token.
    fn type_def_name(&self, mut token: u32) -> Option<String> {
        let mut parts = Vec::new();
        for _ in 0..MAX_NESTING {
            let row = self.row::<MONO_TYPEDEF_SIZE>(MONO_TABLE_TYPEDEF, token)?;
            parts.push(self.qualified(row[MONO_TYPEDEF_NAMESPACE], row[MONO_TYPEDEF_NAME])?);
            // SAFETY: a TypeDef token of this image; the lookup returns 0 when it is not nested.
            let enclosing = unsafe { (self.api.mono_metadata_nested_in_typedef)(self.image, token) };
            if enclosing & ROW_MASK == 0 {
                break;
            }
            token = enclosing;
        }
        Some(nested(parts))
    }

    /// `Namespace.Outer+Inner` for a TypeRef token (a TypeRef scoped by a TypeRef is nested).
    fn type_ref_name(&self, mut token: u32) -> Option<String> {
        let mut parts = Vec::new();
        for _ in 0..MAX_NESTING {
            let row = self.row::<MONO_TYPEREF_SIZE>(MONO_TABLE_TYPEREF, token)?;
            parts.push(self.qualified(row[MONO_TYPEREF_NAMESPACE], row[MONO_TYPEREF_NAME])?);
            let scope = row[MONO_TYPEREF_SCOPE];
            if scope & ((1 << MONO_RESOLUTION_SCOPE_BITS) - 1) != MONO_RESOLUTION_SCOPE_TYPEREF {
                break;
            }
            token = TYPE_REF | (scope >> MONO_RESOLUTION_SCOPE_BITS);
        }
        Some(nested(parts))
    }

    fn type_spec_name(&self, token: u32) -> Option<String> {
        let row = self.row::<MONO_TYPESPEC_SIZE>(MONO_TABLE_TYPESPEC, token)?;
        signature::type_signature(self.blob(row[MONO_TYPESPEC_SIGNATURE])?, self)
    }
}

impl TypeNames for Metadata<'_> {
    fn type_name(&self, token: u32) -> Option<String> {
        match token & KIND_MASK {
            TYPE_DEF => self.type_def_name(token),
            TYPE_REF => self.type_ref_name(token),
            TYPE_SPEC => self.type_spec_name(token),
            _ => None,
        }
    }
}

/// Whether Mono's display name of a method without metadata (`mono_method_full_name`) names a
/// wrapper the runtime generated: every wrapper's starts with `(wrapper KIND)`, and only
/// `dynamic-method` is code the program made (`System.Reflection.Emit.DynamicMethod`).
fn is_runtime_wrapper_name(name: &str) -> bool {
    name.strip_prefix("(wrapper ").is_some_and(|kind| !kind.starts_with("dynamic-method)"))
}

/// The type arguments in a generic instance's name as Mono spells it (`` Acme.Table`1<Acme.Row> ``,
/// `` System.Collections.Generic.Dictionary`2<string, System.Collections.Generic.List`1<int>> ``):
/// the top-level arguments of its first argument list; empty when it has none.
fn type_arguments(name: &str) -> Vec<String> {
    let Some(open) = name.find('<') else { return Vec::new() };
    let mut args = Vec::new();
    let (mut depth, mut start) = (0usize, open + 1);
    for (i, c) in name.char_indices().skip_while(|&(i, _)| i <= open) {
        match c {
            '<' | '[' => depth += 1,
            '>' | ']' if depth > 0 => depth -= 1,
            '>' => {
                args.push(name[start..i].trim().to_string());
                return args;
            }
            ',' if depth == 0 => {
                args.push(name[start..i].trim().to_string());
                start = i + 1;
            }
            _ => {}
        }
    }
    Vec::new()
}

#[cfg(test)]
mod type_argument_tests {
    use super::{is_runtime_wrapper_name, type_arguments};

    #[test]
    fn wrappers_the_runtime_made_are_told_from_dynamic_methods() {
        assert!(is_runtime_wrapper_name("(wrapper runtime-invoke) object:runtime_invoke_dynamic"));
        assert!(is_runtime_wrapper_name("(wrapper managed-to-native) System.Threading.Thread:SleepInternal"));
        assert!(!is_runtime_wrapper_name("(wrapper dynamic-method) object:Parse"));
        assert!(!is_runtime_wrapper_name("int[]:Get"));
        assert!(!is_runtime_wrapper_name(""));
    }

    #[test]
    fn mono_instance_names_give_their_arguments() {
        assert_eq!(type_arguments("Acme.Table`1<Acme.Row>"), ["Acme.Row"]);
        assert_eq!(
            type_arguments("System.Collections.Generic.Dictionary`2<string, System.Collections.Generic.List`1<int>>"),
            ["string", "System.Collections.Generic.List`1<int>"]
        );
        assert_eq!(type_arguments("Acme.Table`1<int[,]>"), ["int[,]"]);
        assert!(type_arguments("Acme.Table").is_empty());
        assert!(type_arguments("Acme.Table`1<unclosed").is_empty());
    }
}
