//! Names for native code on sampled stacks, from the dynamic linker's symbols (`dladdr`): what
//! neither runtime can name (its own code, the libraries a program calls, stubs).

use crate::tree::methods::MethodTable;

/// (library file name, library path, symbol) for native code, from `dladdr`.
pub fn native_symbol(ip: usize) -> Option<(String, String, Option<String>)> {
    // SAFETY: dladdr only reads the loader's tables and fills `info`; the strings it returns
    // belong to loaded objects and are copied before returning.
    unsafe {
        let mut info: libc::Dl_info = std::mem::zeroed();
        if libc::dladdr(ip as *const libc::c_void, &mut info) == 0 || info.dli_fname.is_null() {
            return None;
        }
        let path = std::ffi::CStr::from_ptr(info.dli_fname).to_string_lossy().into_owned();
        let library = path.rsplit('/').next().unwrap_or(&path).to_string();
        let symbol = (!info.dli_sname.is_null())
            .then(|| std::ffi::CStr::from_ptr(info.dli_sname).to_string_lossy().into_owned());
        Some((library, path, symbol))
    }
}

/// The pseudo-method for native code at `ip`: `[native] lib!symbol`, `[native] lib`, or
/// `[unknown code]` (stubs and helpers in anonymous memory).
pub fn native_frame(methods: &MethodTable, ip: usize) -> u32 {
    match native_symbol(ip) {
        Some((library, path, Some(symbol))) => methods.pseudo(&format!("[native] {library}!{symbol}"), &library, &path),
        Some((library, path, None)) => methods.pseudo(&format!("[native] {library}"), &library, &path),
        None => methods.pseudo("[unknown code]", "", ""),
    }
}
