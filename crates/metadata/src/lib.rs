//! What both runtimes' metadata readers share: ECMA-335 signature decoding and the rules that turn
//! metadata rows into the names a profile shows.
//!
//! CoreCLR reads its metadata through `IMetaDataImport` (`sonde-clr`), Mono through its own
//! table API (`sonde-mono`); both read the same tables and heaps of the same assemblies, and both
//! name a method with the code below, so a method is spelt byte for byte the same on either
//! runtime (`Acme.Outer+Inner.Method`, `(int, !!0) -> void`). Pure code, no `unsafe`.
#![forbid(unsafe_code)]

pub mod ready_to_run;
pub mod signature;
pub mod tables;

pub use signature::TypeNames;

/// Names of one method, as metadata spells them: what the agent sends of each method it gives an
/// id (`sonde_protocol::MethodRecord`), so the fields' order is part of the wire format.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct MethodNames {
    /// `Namespace.Type.Method`, nested types joined with `+`.
    pub name: String,
    /// The decoded signature, e.g. `(int, string[]) -> void`.
    pub signature: String,
    pub assembly: String,
    /// The module's file name (no directory).
    pub module: String,
    /// The module's path as the runtime loaded it (empty when it has no file): where its symbols
    /// are looked for (`sonde-symbols`), in the controller.
    pub path: String,
    /// The method's MethodDef token (0 for code without one: wrappers, dynamic methods).
    pub token: u32,
    /// For an instantiation of generic code: its type's type arguments, outermost type first
    /// (empty otherwise, or when not known).
    pub type_args: Vec<String>,
    /// For an instantiation of a generic method: the method's own type arguments.
    pub method_args: Vec<String>,
}

/// Metadata token kinds (ECMA-335 II.22): the top byte of a token names its table.
pub mod token {
    pub const KIND_MASK: u32 = 0xff00_0000;
    pub const ROW_MASK: u32 = 0x00ff_ffff;
    pub const TYPE_REF: u32 = 0x0100_0000;
    pub const TYPE_DEF: u32 = 0x0200_0000;
    pub const METHOD_DEF: u32 = 0x0600_0000;
    pub const TYPE_SPEC: u32 = 0x1b00_0000;
}

/// Nesting and TypeRef chains are finite in valid metadata; readers stop after this many links so
/// that corrupt metadata cannot make them loop.
pub const MAX_NESTING: usize = 64;

/// `Namespace.Name`, or `Name` for a type without a namespace.
pub fn qualified(namespace: &str, name: &str) -> String {
    if namespace.is_empty() { name.to_string() } else { format!("{namespace}.{name}") }
}

/// A nested type's full name from its parts, innermost first (as readers find them by walking
/// outwards): `Namespace.Outer+Inner`.
pub fn nested(mut innermost_first: Vec<String>) -> String {
    innermost_first.reverse();
    innermost_first.join("+")
}

/// The file name of a module path (either separator): what the profile calls its module.
pub fn module_file_name(path: &str) -> String {
    path.rsplit(['/', '\\']).next().unwrap_or(path).to_string()
}

/// What a method's signature says when its blob cannot be decoded.
pub const UNREADABLE_SIGNATURE: &str = "<unreadable signature>";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_joined_as_metadata_readers_expect() {
        assert_eq!(qualified("", "Program"), "Program");
        assert_eq!(qualified("Acme.Orders", "Node`1"), "Acme.Orders.Node`1");
        assert_eq!(nested(vec!["Inner".into(), "Acme.Outer".into()]), "Acme.Outer+Inner");
        assert_eq!(module_file_name("/usr/lib/mono/4.5/mscorlib.dll"), "mscorlib.dll");
        assert_eq!(module_file_name(r"C:\app\App.dll"), "App.dll");
        assert_eq!(module_file_name("App.dll"), "App.dll");
    }
}
