//! The ground floor: what every other part of the agent uses, and which uses none of them.
//!
//! * [`running`]: whether the agent runs at all and in which mode, the one panic policy
//!   ([`running::guarded`], [`running::disable`]) and the agent's own threads
//!   ([`running::spawn_thread`]);
//! * [`log`]: the agent's log file;
//! * [`process`]: facts about the profiled process (its command line, the agent's own file,
//!   whether this process owns the session or is a fork of it).
//!
//! Nothing here names a backend, the session, the link or the samplers: a part above that must
//! be told something (the controller, of a panic) hands a function down ([`running::on_disable`]).

pub mod log;
pub mod process;
pub mod running;
