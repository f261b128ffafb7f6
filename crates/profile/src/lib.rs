//! Sonde's profile: the model of one profiled process, the file it is stored in, and the
//! analyses every renderer shares.
//!
//! # Design constraints
//!
//! This crate knows nothing about the runtime that produced a profile: CoreCLR and Mono agents
//! fill the same [`Profile`], and readers never need to ask which one did. It contains no
//! `unsafe` code. Input read from a file is untrusted: a truncated, corrupt or hostile file is a
//! [`FileError`], never a panic, and reading it allocates no more than a fixed cap
//! ([`MAX_PAYLOAD_LEN`]). The analyses are linear or `n log n` in the number of nodes, because a
//! traced call tree can hold millions of them.

#![forbid(unsafe_code)]

pub mod analysis;
pub mod clean;
pub mod delta;
pub mod diff;
pub mod file;
pub mod model;
pub mod names;
pub mod origin;
pub mod trace;
pub mod view;
pub mod work;

#[cfg(feature = "clap")]
mod args;
#[cfg(any(test, feature = "testkit"))]
pub mod testkit;

pub use analysis::{
    Analysis, CallTree, Edge, MethodStats, ThreadTotals, Totals, hot_path, node_alloc_totals, thread_totals,
};
pub use file::{FORMAT_VERSION, FileError, MAGIC, MAX_PAYLOAD_LEN, load, read_profile, save, write_profile};
pub use model::{
    AllocSampling, AllocationCount, Allocations, Attach, Compensation, Coverage, ExceptionCount, Fault, FaultRule,
    Faults, FunctionCoverage, GcCollection, GcKind, GcReason, GcSummary, Instantiation, InvalidProfile, LineHits,
    LineSamples, Loading, LostSamples, Method, MethodBlocks, MethodCoverage, Mode, ModuleLoad, NativeFunction, Node,
    NodeEvents, NodeLine, Profile, RunInfo, Runtime, RuntimeEvents, SampleClock, SourceLine, Sources, Thread, Timeline,
    TimelineEvent, TimelineKind, Timing,
};
pub use names::{Kind, Work, display_name};
pub use trace::{CallTrace, ThreadTrace, TraceEvent, TracedCall};
pub use work::{AssemblyWork, RuntimeWork, WorkTotals};
