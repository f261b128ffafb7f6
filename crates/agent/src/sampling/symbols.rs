//! Names for native code on sampled stacks, from the dynamic linker's symbols (`dladdr`): what
//! neither runtime can name (its own code, the libraries a program calls, stubs).

use crate::tree::methods::MethodTable;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A map keyed by addresses (or other integers that need no protection from crafted keys: they
/// come from this process's own code and the runtime), hashed with one folded multiplication
/// instead of SipHash — the drain looks up every frame of every sample.
pub type AddressMap<K, V> = HashMap<K, V, BuildHasherDefault<AddressHasher>>;

#[derive(Default)]
pub struct AddressHasher(u64);

impl Hasher for AddressHasher {
    fn finish(&self) -> u64 {
        let full = u128::from(self.0) * 0x9e37_79b9_7f4a_7c15;
        (full as u64) ^ ((full >> 64) as u64)
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }

    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = self.0.rotate_left(29) ^ n;
    }

    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
}

/// Names native code at addresses, one `dladdr` per new address: the name is built once per
/// library and symbol.
#[derive(Default)]
pub struct NativeNames {
    /// (library base, symbol address or 0) → pseudo-method.
    known: AddressMap<(usize, usize), u32>,
}

impl NativeNames {
    /// The pseudo-method of the native code at `ip` (`[native] lib!symbol` or `[native] lib`);
    /// `None` when no object the dynamic linker loaded contains `ip` (JIT code, stubs, images
    /// the runtime maps itself).
    pub fn frame(&mut self, methods: &MethodTable, ip: usize) -> Option<u32> {
        let found = Dladdr::lookup(ip)?;
        let key = found.key();
        if let Some(&id) = self.known.get(&key) {
            return Some(id);
        }
        let (library, path) = found.library();
        let name = match found.symbol() {
            Some(symbol) => format!("[native] {library}!{symbol}"),
            None => format!("[native] {library}"),
        };
        let id = methods.pseudo(&name, &library, &path);
        self.known.insert(key, id);
        Some(id)
    }
}

/// (library file name, library path, symbol) for native code, from `dladdr`.
pub fn native_symbol(ip: usize) -> Option<(String, String, Option<String>)> {
    let found = Dladdr::lookup(ip)?;
    let (library, path) = found.library();
    Some((library, path, found.symbol()))
}

/// What `dladdr` says of an address inside an object the dynamic linker loaded.
struct Dladdr(libc::Dl_info);

impl Dladdr {
    fn lookup(ip: usize) -> Option<Dladdr> {
        // SAFETY: dladdr only reads the loader's tables and fills `info`.
        unsafe {
            let mut info: libc::Dl_info = std::mem::zeroed();
            (libc::dladdr(ip as *const libc::c_void, &mut info) != 0 && !info.dli_fname.is_null())
                .then_some(Dladdr(info))
        }
    }

    /// (library base, symbol address or 0): the same for every address of one function.
    fn key(&self) -> (usize, usize) {
        (self.0.dli_fbase as usize, if self.0.dli_sname.is_null() { 0 } else { self.0.dli_saddr as usize })
    }

    /// (library file name, library path).
    fn library(&self) -> (String, String) {
        // SAFETY: a NUL-terminated string of a loaded object (checked non-null by `lookup`),
        // copied at once.
        let path = unsafe { std::ffi::CStr::from_ptr(self.0.dli_fname) }.to_string_lossy().into_owned();
        let library = path.rsplit('/').next().unwrap_or(&path).to_string();
        (library, path)
    }

    fn symbol(&self) -> Option<String> {
        // SAFETY: null or a NUL-terminated string of a loaded object, copied at once.
        (!self.0.dli_sname.is_null())
            .then(|| unsafe { std::ffi::CStr::from_ptr(self.0.dli_sname) }.to_string_lossy().into_owned())
    }
}
