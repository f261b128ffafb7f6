//! Raw FFI declarations of the CoreCLR profiling API.
//!
//! # Design constraints
//!
//! This crate holds raw declarations only and no logic: type aliases, plain
//! `#[repr(C)]` structs, constants and COM vtable layouts, transcribed from
//! dotnet/runtime's `src/coreclr/inc/corprof.idl` and `src/coreclr/inc/cor.h`
//! (plus `corhdr.h` and the PAL's `pal_mstypes.h` / `palrt.h` / `unknwn.h`
//! for base types). Safe wrappers belong in `sonde-clr`.
//!
//! * Types are as CoreCLR sees them on 64-bit Linux (x86_64, aarch64): the
//!   PAL's `LONG`/`ULONG`/`DWORD` are 32-bit and `WCHAR` is 16-bit.
//! * Each vtable is one flat `#[repr(C)]` struct of function pointers named
//!   for the most derived interface declared, holding IUnknown's 3 slots,
//!   then every base interface's methods, then each derived interface's, in
//!   header order. These are called by (or call into) the real runtime, so
//!   the order is never guessed: the tests pin the slot counts and the
//!   offsets of selected slots, counted from the headers.
//! * Vtable entries use `extern "system"` (the headers' `STDMETHODCALLTYPE`,
//!   which is the C convention on these targets); the standalone hooks use
//!   `extern "C"`.
//! * Names keep the headers' spelling, hence the lint allowances below,
//!   which stay inside this crate.

#![allow(non_snake_case, non_camel_case_types, non_upper_case_globals, clippy::upper_case_acronyms)]

pub mod callback;
pub mod flags;
pub mod guids;
pub mod hooks;
pub mod info;
pub mod metadata;
pub mod types;
pub mod unknown;

pub use callback::*;
pub use flags::*;
pub use guids::*;
pub use hooks::*;
pub use info::*;
pub use metadata::*;
pub use types::*;
pub use unknown::*;

#[cfg(test)]
mod tests;
