//! Decoding ECMA-335 method signature blobs (II.23.2.1) into readable text such as
//! `(int, string[], List`1<!!0>) -> void`. Pure code: type names come from a [`TypeNames`]
//! implementation, so the decoder is tested without a runtime.

/// Resolves TypeDef/TypeRef/TypeSpec tokens to names.
pub trait TypeNames {
    fn type_name(&self, token: u32) -> Option<String>;
}

use crate::token::{TYPE_DEF as TYPEDEF, TYPE_REF as TYPEREF, TYPE_SPEC as TYPESPEC};

struct Reader<'a> {
    blob: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn byte(&mut self) -> Option<u8> {
        let b = *self.blob.get(self.at)?;
        self.at += 1;
        Some(b)
    }

    /// A compressed unsigned integer (II.23.2).
    fn uint(&mut self) -> Option<u32> {
        let b0 = u32::from(self.byte()?);
        if b0 & 0x80 == 0 {
            Some(b0)
        } else if b0 & 0xC0 == 0x80 {
            Some(((b0 & 0x3F) << 8) | u32::from(self.byte()?))
        } else if b0 & 0xE0 == 0xC0 {
            let (b1, b2, b3) = (u32::from(self.byte()?), u32::from(self.byte()?), u32::from(self.byte()?));
            Some(((b0 & 0x1F) << 24) | (b1 << 16) | (b2 << 8) | b3)
        } else {
            None
        }
    }

    fn type_def_or_ref(&mut self) -> Option<u32> {
        let coded = self.uint()?;
        let table = match coded & 3 {
            0 => TYPEDEF,
            1 => TYPEREF,
            2 => TYPESPEC,
            _ => return None,
        };
        Some(table | (coded >> 2))
    }
}

/// Decodes a method signature into `(params) -> return`. Returns `None` for a malformed blob.
pub fn method_signature(blob: &[u8], names: &dyn TypeNames) -> Option<String> {
    let mut r = Reader { blob, at: 0 };
    Decoder { names, depth: 0 }.method(&mut r)
}

/// Decodes a single type (a TypeSpec blob), e.g. `List`1<int>`.
pub fn type_signature(blob: &[u8], names: &dyn TypeNames) -> Option<String> {
    let mut r = Reader { blob, at: 0 };
    Decoder { names, depth: 0 }.ty(&mut r)
}

struct Decoder<'a> {
    names: &'a dyn TypeNames,
    depth: u32,
}

impl Decoder<'_> {
    fn method(&mut self, r: &mut Reader) -> Option<String> {
        let conv = r.byte()?;
        if conv & 0x10 != 0 {
            r.uint()?; // generic parameter count
        }
        let count = r.uint()?;
        let ret = self.ty(r)?;
        let mut params = Vec::new();
        for _ in 0..count {
            if r.blob.get(r.at) == Some(&0x41) {
                r.at += 1; // SENTINEL: vararg part follows
                params.push("...".to_string());
            }
            params.push(self.ty(r)?);
        }
        Some(format!("({}) -> {ret}", params.join(", ")))
    }

    fn token(&self, token: u32) -> String {
        self.names.type_name(token).unwrap_or_else(|| format!("<token 0x{token:08x}>"))
    }

    fn ty(&mut self, r: &mut Reader) -> Option<String> {
        // Hostile nesting (e.g. a blob of 0x0f bytes) must not overflow the stack.
        self.depth += 1;
        if self.depth > 64 {
            return None;
        }
        let result = self.ty_inner(r);
        self.depth -= 1;
        result
    }

    fn ty_inner(&mut self, r: &mut Reader) -> Option<String> {
        let simple = |name: &str| Some(name.to_string());
        match r.byte()? {
            0x01 => simple("void"),
            0x02 => simple("bool"),
            0x03 => simple("char"),
            0x04 => simple("sbyte"),
            0x05 => simple("byte"),
            0x06 => simple("short"),
            0x07 => simple("ushort"),
            0x08 => simple("int"),
            0x09 => simple("uint"),
            0x0a => simple("long"),
            0x0b => simple("ulong"),
            0x0c => simple("float"),
            0x0d => simple("double"),
            0x0e => simple("string"),
            0x0f => Some(format!("{}*", self.ty(r)?)),
            0x10 => Some(format!("{}&", self.ty(r)?)),
            0x11 | 0x12 => {
                let token = r.type_def_or_ref()?;
                Some(self.token(token))
            }
            0x13 => Some(format!("!{}", r.uint()?)),
            0x14 => {
                let element = self.ty(r)?;
                let rank = r.uint()?;
                let sizes = r.uint()?;
                for _ in 0..sizes {
                    r.uint()?;
                }
                let bounds = r.uint()?;
                for _ in 0..bounds {
                    r.uint()?; // lower bounds are signed compressed ints; their value is not shown
                }
                Some(format!("{element}[{}]", ",".repeat(rank.saturating_sub(1) as usize)))
            }
            0x15 => {
                let kind = r.byte()?;
                if kind != 0x11 && kind != 0x12 {
                    return None;
                }
                let generic = self.token(r.type_def_or_ref()?);
                let count = r.uint()?;
                let mut args = Vec::new();
                for _ in 0..count {
                    args.push(self.ty(r)?);
                }
                Some(format!("{generic}<{}>", args.join(", ")))
            }
            0x16 => simple("TypedReference"),
            0x18 => simple("nint"),
            0x19 => simple("nuint"),
            0x1b => Some(format!("fnptr {}", self.method(r)?)),
            0x1c => simple("object"),
            0x1d => Some(format!("{}[]", self.ty(r)?)),
            0x1e => Some(format!("!!{}", r.uint()?)),
            0x1f | 0x20 => {
                r.type_def_or_ref()?; // custom modifier (modreq/modopt): not shown
                self.ty(r)
            }
            0x45 => self.ty(r), // pinned
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    struct Names(HashMap<u32, &'static str>);
    impl TypeNames for Names {
        fn type_name(&self, token: u32) -> Option<String> {
            self.0.get(&token).map(|s| s.to_string())
        }
    }

    fn names() -> Names {
        Names(HashMap::from([(0x0200_0002, "Acme.Node`1"), (0x0100_0005, "System.Collections.Generic.List`1")]))
    }

    #[test]
    fn static_and_instance_methods() {
        // static int Fib(int)
        assert_eq!(method_signature(&[0x00, 0x01, 0x08, 0x08], &names()).unwrap(), "(int) -> int");
        // instance void M(string[], ref double)
        assert_eq!(
            method_signature(&[0x20, 0x02, 0x01, 0x1d, 0x0e, 0x10, 0x0d], &names()).unwrap(),
            "(string[], double&) -> void"
        );
    }

    #[test]
    fn generics_and_tokens() {
        // static !!0 Identity<T>(!!0)
        assert_eq!(method_signature(&[0x10, 0x01, 0x01, 0x1e, 0x00, 0x1e, 0x00], &names()).unwrap(), "(!!0) -> !!0");
        // void M(List`1<Node`1<int>>): TypeRef row 5 coded as (5<<2)|1 = 0x15, TypeDef row 2 coded as 0x08
        let blob = [0x20, 0x01, 0x01, 0x15, 0x12, 0x15, 0x01, 0x15, 0x12, 0x08, 0x01, 0x08];
        assert_eq!(
            method_signature(&blob, &names()).unwrap(),
            "(System.Collections.Generic.List`1<Acme.Node`1<int>>) -> void"
        );
    }

    #[test]
    fn malformed_blobs_are_none_not_panics() {
        assert_eq!(method_signature(&[], &names()), None);
        assert_eq!(method_signature(&[0x00, 0x05, 0x01], &names()), None);
        assert_eq!(method_signature(&[0x00, 0x01, 0x01, 0xff], &names()), None);
        let deep: Vec<u8> = [0x00, 0x00].into_iter().chain(std::iter::repeat_n(0x0f, 10_000)).collect();
        assert_eq!(method_signature(&deep, &names()), None);
    }
}
