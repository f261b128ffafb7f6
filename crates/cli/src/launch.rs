//! How a program is started with the agent attached: the environment each runtime needs.
//!
//! CoreCLR loads a profiler named by three environment variables (`CORECLR_ENABLE_PROFILING`,
//! `CORECLR_PROFILER` = our CLSID, `CORECLR_PROFILER_PATH` = the agent library); the agent's own
//! configuration travels in `SONDE_*` variables ([`AgentConfig::to_env`]). Every process the
//! program starts inherits them, so .NET children are profiled too.

use anyhow::{Result, bail};
use sonde_protocol::{AgentConfig, config};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The CLSID the agent answers to in `DllGetClassObject` (`sonde_agent::CLSID_SONDE`).
pub const PROFILER_CLSID: &str = "{9E2B6C4A-5D0F-4E8B-A1C3-7F5D2E9B0A61}";

/// The file name of the agent library.
pub const AGENT_LIBRARY: &str = "libsonde_agent.so";

/// A command ready to spawn: `program args…` with the agent's environment.
pub fn command(program: &[String], agent: &Path, config: &AgentConfig) -> Command {
    let mut command = Command::new(&program[0]);
    command.args(&program[1..]);
    for var in config::ALL_VARS {
        command.env_remove(var);
    }
    command.envs(environment(agent, config));
    command
}

fn environment(agent: &Path, config: &AgentConfig) -> Vec<(String, OsString)> {
    let mut env: Vec<(String, OsString)> = vec![
        ("CORECLR_ENABLE_PROFILING".into(), "1".into()),
        ("CORECLR_PROFILER".into(), PROFILER_CLSID.into()),
        ("CORECLR_PROFILER_PATH".into(), agent.as_os_str().to_owned()),
    ];
    env.extend(config.to_env().into_iter().map(|(k, v)| (k.to_string(), v.into())));
    env
}

/// The agent library: `$SONDE_AGENT`, else beside the `sonde` executable, else in `../lib/sonde/`.
pub fn locate_agent() -> Result<PathBuf> {
    if let Some(path) = std::env::var_os("SONDE_AGENT") {
        let path = PathBuf::from(path);
        if path.is_file() {
            return Ok(path);
        }
        bail!("SONDE_AGENT points to {}, which does not exist", path.display());
    }
    let exe = std::env::current_exe().map_err(|e| anyhow::anyhow!("cannot find the sonde executable: {e}"))?;
    let dir = exe.parent().unwrap_or(Path::new("."));
    for candidate in [dir.join(AGENT_LIBRARY), dir.join("../lib/sonde").join(AGENT_LIBRARY)] {
        if candidate.is_file() {
            return Ok(candidate.canonicalize().unwrap_or(candidate));
        }
    }
    bail!(
        "cannot find the agent library {AGENT_LIBRARY} next to {} (build it with `cargo build -p sonde-agent`, or set SONDE_AGENT)",
        exe.display()
    )
}

/// Sends `signal` to process `pid`; a process that is already gone is not an error.
pub fn send_signal(pid: u32, signal: rustix::process::Signal) {
    if let Some(pid) = rustix::process::Pid::from_raw(pid as i32) {
        let _ = rustix::process::kill_process(pid, signal);
    }
}
