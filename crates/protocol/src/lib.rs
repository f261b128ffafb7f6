//! What Sonde's agent (inside the profiled process) and controller (`sonde`) say to each other.
//!
//! Design constraints: shared verbatim by both sides, so a message is one Rust type, never a
//! hand-packed byte array; every frame is length-prefixed and bounded, and a malformed frame is an
//! error, never a panic (the agent runs inside somebody else's program). No `unsafe`.
//!
//! * [`config`] — the agent's configuration, passed through environment variables (or, to an
//!   agent attached to a running process, the attach command's client data).
//! * [`filter`] — which methods get enter/leave hooks.
//! * [`message`] — the messages and the version handshake.
//! * [`frame`] — length-prefixed framing over any `Read`/`Write`.
//! * [`control`] — the control socket of a running recording (`sonde snapshot` and friends).
//! * [`trust`] — the ownership and permission checks both ends make before trusting a path or a peer.
#![forbid(unsafe_code)]

pub mod config;
pub mod control;
pub mod filter;
pub mod frame;
pub mod inject;
pub mod message;
pub mod trust;

pub use config::{AgentConfig, BenchHooks, ConfigError};
pub use filter::MethodFilter;
pub use frame::{FrameError, encode_frame, read_frame, write_frame};
pub use inject::InjectRule;
pub use message::*;
