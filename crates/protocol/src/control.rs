//! The control socket of a running `sonde record` (launched or attached): what `sonde sessions`,
//! `sonde snapshot`, `sonde stop`, `sonde pause` and `sonde resume` say to it.
//!
//! One request per connection, one reply; the same length-prefixed framing as the agent's
//! channel. The recording checks that the client runs as its user (`SO_PEERCRED`), and its socket
//! sits in a private directory of the user's (see `sonde_client::control`).

use serde::{Deserialize, Serialize};
use sonde_profile::Mode;
use std::path::PathBuf;

/// Bumped on any incompatible change below; a request of another version gets
/// [`ControlReply::Error`].
pub const CONTROL_VERSION: u32 = 2;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ControlRequest {
    pub version: u32,
    pub command: ControlCommand,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ControlCommand {
    /// Who the session is ([`SessionStatus`]).
    Status,
    /// Take a snapshot now and write it as a profile file at `to` (an absolute path; the
    /// recording writes it, as the same user). `force`: overwrite a file that is not a profile.
    /// `heap` (since version 2): a heap snapshot instead, written as a `.heap` file.
    Snapshot {
        to: PathBuf,
        force: bool,
        heap: bool,
    },
    /// Finish the recording as Ctrl-C would for an attached one: write the profile; the program
    /// runs on unprofiled.
    Stop,
    /// Stop or restart adding samples (sampling mode).
    Pause,
    Resume,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ControlReply {
    Status(SessionStatus),
    /// Done; a line for the user (e.g. "wrote snap.sonde: 1,234 samples").
    Done(String),
    /// Refused or failed; a line for the user.
    Error(String),
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionStatus {
    /// The session id (the recording `sonde`'s own pid).
    pub id: u32,
    /// The profiled process (the program sonde started, or the one it attached to).
    pub pid: u32,
    pub command: Vec<String>,
    pub mode: Mode,
    pub attached: bool,
    pub paused: bool,
    /// Where the final profile goes.
    pub output: PathBuf,
    pub started_unix_ms: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::{read_frame, write_frame};

    #[test]
    fn requests_and_replies_round_trip() {
        let requests = [
            ControlCommand::Status,
            ControlCommand::Snapshot { to: "/tmp/x.sonde".into(), force: true, heap: false },
            ControlCommand::Stop,
            ControlCommand::Pause,
            ControlCommand::Resume,
        ];
        for command in requests {
            let request = ControlRequest { version: CONTROL_VERSION, command };
            let mut bytes = Vec::new();
            write_frame(&mut bytes, &request).unwrap();
            assert_eq!(read_frame::<ControlRequest>(&mut bytes.as_slice()).unwrap(), request);
        }
        let status = ControlReply::Status(SessionStatus {
            id: 7,
            pid: 9,
            command: vec!["dotnet".into(), "app.dll".into()],
            mode: Mode::Sampling,
            attached: true,
            paused: false,
            output: "/tmp/p.sonde".into(),
            started_unix_ms: 1,
        });
        let mut bytes = Vec::new();
        write_frame(&mut bytes, &status).unwrap();
        assert_eq!(read_frame::<ControlReply>(&mut bytes.as_slice()).unwrap(), status);
    }
}
