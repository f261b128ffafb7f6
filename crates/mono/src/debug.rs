//! The JIT's line tables, which Mono keeps in its debug mode only (`mono --debug`, or `--debug`
//! in `MONO_ENV_OPTIONS`): for each compiled method, where in its native code each IL offset's
//! code begins — what maps a sampled instruction back to IL, and through the symbols to a line.
//!
//! Mono's own look-ups (`mono_debug_il_offset_from_address`) take its debugger lock and allocate,
//! so they can run neither in the sampling signal handler nor on a thread that is not attached to
//! the runtime. [`Method::line_table`] copies a method's table instead, once, on the compiling
//! thread (in `jit_done`), for the agent to search later wherever it likes.

use crate::{Method, api};

impl Method<'_> {
    /// The line table of the code just compiled for this method in the current domain: (native
    /// offset, IL offset) pairs sorted by native offset, each meaning "code from this native
    /// offset on was compiled from that IL offset" (the last pair at or before an offset is its
    /// IL offset, as in Mono's `il_offset_from_address`). `None` when Mono is not in debug mode or
    /// recorded no table for the method (AOT code without debug information, wrappers).
    pub fn line_table(&self) -> Option<Vec<(u32, u32)>> {
        let api = api()?;
        // SAFETY: a getter of a static, callable from any thread.
        if unsafe { (api.mono_debug_enabled)() } == 0 {
            return None;
        }
        // SAFETY: on the compiling thread, attached to the runtime (a `Method` exists only in a
        // callback there), whose current domain is the one the method was compiled for.
        let domain = unsafe { (api.mono_domain_get)() };
        if domain.is_null() {
            return None;
        }
        // SAFETY: a live method and domain; debug mode is on, so the domain has its debug data
        // (Mono creates it with every domain once `mono_debug_init` ran, which precedes the
        // domains). The result is null or a fresh copy that the caller frees, once, below.
        let info = unsafe { (api.mono_debug_find_method)(self.ptr.as_ptr(), domain) };
        if info.is_null() {
            return None;
        }
        // SAFETY: `info` is Mono's `MonoDebugMethodJitInfo`, alive until freed below; its
        // `line_numbers` holds `num_line_numbers` entries (or is null when there are none).
        let entries = unsafe {
            let info = &*info;
            if info.line_numbers.is_null() || info.num_line_numbers == 0 {
                &[][..]
            } else {
                std::slice::from_raw_parts(info.line_numbers, info.num_line_numbers as usize)
            }
        };
        let table = sorted_table(entries.iter().map(|e| (e.native_offset, e.il_offset)));
        // SAFETY: freed once, with the function Mono documents for it; `entries` is not used after.
        unsafe { (api.mono_debug_free_method_jit_info)(info) };
        (!table.is_empty()).then_some(table)
    }
}

/// (native, IL) pairs sorted by native offset, stably (at one native offset the pair recorded
/// last wins a look-up, as in Mono's search from the end), without the pairs whose IL offset is
/// negative (Mono records -1 for code that belongs to no IL).
fn sorted_table(entries: impl Iterator<Item = (u32, u32)>) -> Vec<(u32, u32)> {
    let mut table: Vec<(u32, u32)> = entries.filter(|&(_, il)| i32::try_from(il).is_ok()).collect();
    table.sort_by_key(|&(native, _)| native);
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_come_out_sorted_by_native_offset_without_negative_offsets() {
        let entries = [(40, 2), (0, 0), (40, 5), (12, u32::MAX), (90, 11)];
        assert_eq!(sorted_table(entries.into_iter()), vec![(0, 0), (40, 2), (40, 5), (90, 11)]);
    }
}
