//! Safe wrappers over the CoreCLR profiling API.
//!
//! # Design constraints
//!
//! This crate and `sonde-clr-sys` are where Sonde's COM `unsafe` lives. Above this line nothing
//! touches a raw interface pointer: [`ProfilerInfo`] methods return `Result<T, HResult>`,
//! strings arrive as `String`, and the runtime's calls into the profiler arrive as methods of the
//! safe [`ProfilerCallback`] trait, each behind a guard that catches panics (a panic must never
//! unwind into the runtime) and reports an HRESULT instead. Every `unsafe` block says why it holds.

pub mod callback;
mod callback_slots;
mod emit;
mod hresult;
mod info;
mod metadata;

pub use callback::{EventPipeEvent, ProfilerCallback, class_factory};
pub use emit::{AssemblyIdentity, ConstructibleType, DEFAULT_CTOR_SIG, ModuleWriter};
pub use hresult::HResult;
pub use info::{ProfilerInfo, RuntimeInfo, ThreadWalk, TypeDefNamer, WalkFrame};
pub use metadata::{Holds, StaticField};
pub use sonde_clr_sys as sys;
pub use sonde_metadata::MethodNames;
