//! The agent's side of the channel to the controller: the session's socket ([`link`]: handshake,
//! the IPC thread answering snapshot requests, errors) what a snapshot holds ([`snapshot`]:
//! the trees, and what each part of the agent contributes), and the stack walks the controller
//! asks for ([`walk`]), and its heap snapshots ([`heap`]).

pub mod heap;
pub mod link;
pub mod snapshot;
pub mod walk;
