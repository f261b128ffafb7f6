//! Sonde as a library — the thesis' `ProfilerAccess`: start a .NET program under Sonde's agent or
//! attach to a running one, receive its profile live as a stream of snapshots, ask for one now,
//! and finish. Every snapshot is a [`sonde_profile::Profile`], the model the reports render.
//!
//! The high-level API is [`Recording`] (see `examples/live.rs` and `docs/CLIENT.md`). Below it,
//! the pieces `sonde` itself is built from: [`collector`] (the controller's side of the agent
//! socket), [`launch`] (the environment a launched program gets), [`attach`] (the runtime's
//! diagnostics IPC), [`assemble`] (an agent's data → a profile) and [`control`] (the control
//! socket of a running recording: `sonde sessions`, `sonde snapshot`), [`push`] (continuous
//! profiling to Grafana Pyroscope) and [`pushing`] (a recording's intervals, pushed).
#![forbid(unsafe_code)]

pub mod assemble;
pub mod attach;
pub mod collector;
pub mod control;
mod coverage;
pub mod launch;
pub mod push;
pub mod pushing;
mod recording;
pub mod sources;

pub use recording::{
    End, Error, Launch, Options, Recording, SNAPSHOT_PERIOD, Signals, Update, Watch, interval_for_rate, running_facts,
    wake_pair,
};

use std::sync::RwLock;

/// Where the library's one-line notes go (a connection refused on the agent socket, a Mono
/// module that cannot be set up): stderr unless [`set_notes`] says otherwise — a full-screen
/// view keeps them for its status line instead.
static NOTES: RwLock<Option<Box<Sink>>> = RwLock::new(None);

type Sink = dyn Fn(&str) + Send + Sync;

/// Sends the library's notes to `sink` instead of stderr.
pub fn set_notes(sink: impl Fn(&str) + Send + Sync + 'static) {
    *NOTES.write().unwrap_or_else(|e| e.into_inner()) = Some(Box::new(sink));
}

#[doc(hidden)]
pub fn note_str(text: &str) {
    match NOTES.read().unwrap_or_else(|e| e.into_inner()).as_ref() {
        Some(sink) => sink(text),
        None => {
            // Never panics: stderr may be closed (SIGHUP) or a pipe nobody reads.
            use std::io::Write as _;
            let _ = writeln!(std::io::stderr(), "{text}");
        }
    }
}

/// `format!` to the notes sink.
#[macro_export]
macro_rules! note {
    ($($arg:tt)*) => { $crate::note_str(&format!($($arg)*)) };
}
