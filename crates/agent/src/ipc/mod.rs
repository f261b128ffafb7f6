//! The agent's side of the channel to the controller: the session's socket ([`link`]: handshake,
//! the IPC thread answering snapshot requests, errors) and what a snapshot holds ([`snapshot`]).

pub mod link;
pub mod snapshot;
