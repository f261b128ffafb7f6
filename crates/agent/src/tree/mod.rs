//! What a profile is made of, inside the process: per-thread call trees ([`calltree`]), the
//! registry of threads ([`threads`]), the table of methods their nodes refer to ([`methods`]), and
//! the clock tracing stamps them with ([`clock`]), and the lock-free table that turns a runtime's
//! handles into those ids on a hot path ([`ids`]). Runtime-independent: both backends and both
//! modes (tracing hooks, sampled stacks) write into these.

pub mod calltree;
pub mod clock;
pub mod ids;
pub mod methods;
pub mod threads;
pub(crate) mod tls;
pub mod trace;
