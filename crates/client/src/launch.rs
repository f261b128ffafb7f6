//! How a program is started with the agent attached: the environment each runtime needs.
//!
//! CoreCLR loads a profiler named by three environment variables (`CORECLR_ENABLE_PROFILING`,
//! `CORECLR_PROFILER` = our CLSID, `CORECLR_PROFILER_PATH` = the agent library). Mono loads
//! `libmono-profiler-<name>.so` for `--profile=<name>`, searching `LD_LIBRARY_PATH` (it refuses an
//! absolute path), so a `mono/` directory beside the agent library holds a
//! `libmono-profiler-sonde.so` symlink to it (made on first use when that directory is ours to
//! write; an installation ships it), and the controller prepends that directory to
//! `LD_LIBRARY_PATH` and appends `--profile=sonde` to `MONO_ENV_OPTIONS`. The agent's own
//! configuration travels in `SONDE_*` variables ([`AgentConfig::to_env`]).
//!
//! These variables outlive the recording: a daemon the program starts keeps them after `sonde`
//! has exited. So nothing they name may be a place someone else could fill later: the module
//! directory is beside the installed agent, never in the session's temporary directory (which is
//! deleted at the end, and whose name another user could then take), and the agent library and
//! every directory above it must be writable by nobody but this user or root, checked before
//! launch ([`trust::check_not_writable_by_others`]). The socket the variables name is checked by
//! the agent itself (owner, mode, and the peer's uid), so a late child whose socket is gone, or
//! re-created by someone else, runs unprofiled.
//!
//! Both runtimes' variables are always set, whatever the command: every process the program
//! starts inherits them, so .NET children are profiled too — a Mono program started by a shell
//! script (how Debian ships Mono tools) or by a CoreCLR program included. Each runtime ignores the
//! other's variables. Whether the command itself is Mono (its file name is `mono` or `mono-*`,
//! e.g. `mono-sgen`) only changes the errors: a missing Mono, and what to say when no agent
//! connected. No `--runtime` flag is needed.

use sonde_profile::Mode;
use sonde_protocol::trust::{self, TrustError};
use sonde_protocol::{AgentConfig, config};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};

/// Why a program cannot be started with the agent: each message is one line for a user.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LaunchError {
    #[error("no command to run")]
    NoCommand,
    /// The program is not there (not on `PATH`, or no such file).
    #[error("cannot run `{program}`: command not found")]
    NotFound { program: String },
    /// A Mono command, and no Mono to run it.
    #[error(
        "cannot run `{program}`: command not found; is Mono installed? (Debian/Ubuntu: apt-get install mono-runtime)"
    )]
    MonoNotFound { program: String },
    /// The program exists but could not be started (permissions, not executable, …).
    #[error("cannot run `{program}`: {source}")]
    Spawn { program: String, source: std::io::Error },
    /// The agent library, or a directory above it, can be written by others.
    #[error("refusing to load the agent {} into the program: {source} (chmod go-w fixes it)", .agent.display())]
    UntrustedAgent { agent: PathBuf, source: TrustError },
    /// Mono's module directory beside the agent cannot be used (only an error for a Mono command).
    #[error(transparent)]
    MonoModule(#[from] MonoModuleError),
    #[error(transparent)]
    AgentNotFound(#[from] AgentNotFound),
}

/// Why the agent library was not found ([`locate_agent`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AgentNotFound {
    #[error("SONDE_AGENT points to {}, which does not exist", .0.display())]
    BadVariable(PathBuf),
    #[error("cannot find the sonde executable: {0}")]
    NoExecutable(std::io::Error),
    #[error(
        "cannot find the agent library {AGENT_LIBRARY} next to {} (build it with `cargo build -p sonde-agent`, or set SONDE_AGENT)",
        .exe.display()
    )]
    NotBeside { exe: PathBuf },
}

/// Why the `mono/` directory beside the agent cannot be used ([`mono_module_dir`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MonoModuleError {
    #[error("cannot resolve {}: {source}", .path.display())]
    Resolve { path: PathBuf, source: std::io::Error },
    #[error("{} has no directory", .0.display())]
    NoDirectory(PathBuf),
    #[error("cannot set the mode of {}: {source}", .path.display())]
    Mode { path: PathBuf, source: std::io::Error },
    #[error("cannot create {}: {source}", .path.display())]
    Create { path: PathBuf, source: std::io::Error },
    #[error("{} is not a link to the agent {}", .module.display(), .agent.display())]
    NotOurs { module: PathBuf, agent: PathBuf },
    #[error(transparent)]
    Untrusted(#[from] TrustError),
}

/// The CLSID the agent answers to in `DllGetClassObject` (`sonde_agent::CLSID_SONDE`).
pub const PROFILER_CLSID: &str = "{9E2B6C4A-5D0F-4E8B-A1C3-7F5D2E9B0A61}";

/// The file name of the agent library.
pub const AGENT_LIBRARY: &str = "libsonde_agent.so";

/// The name under which Mono loads the agent (`--profile=sonde`; entry point
/// `mono_profiler_init_sonde`).
pub const MONO_MODULE: &str = "libmono-profiler-sonde.so";
/// What the controller adds to `MONO_ENV_OPTIONS`.
pub const MONO_OPTION: &str = "--profile=sonde";

/// True when `program` names the Mono runtime (`mono`, `/usr/bin/mono`, `mono-sgen`, …).
pub fn is_mono(program: &str) -> bool {
    let name = Path::new(program).file_name().and_then(|n| n.to_str()).unwrap_or("");
    name == "mono" || name.starts_with("mono-")
}

/// A command ready to spawn: `program args…` with the agent's environment, once the agent
/// library and its Mono module directory are found trustworthy.
pub fn command(program: &[String], agent: &Path, config: &AgentConfig) -> Result<Command, LaunchError> {
    let Some(name) = program.first() else { return Err(LaunchError::NoCommand) };
    if is_mono(name) && find_program(name).is_none() {
        return Err(LaunchError::MonoNotFound { program: name.clone() });
    }
    trust::check_not_writable_by_others(agent)
        .map_err(|source| LaunchError::UntrustedAgent { agent: agent.to_path_buf(), source })?;
    let mono_dir = match mono_module_dir(agent) {
        Ok(dir) => Some(dir),
        Err(e) if is_mono(name) => return Err(e.into()),
        Err(e) => {
            crate::note!("sonde: Mono programs this command starts will not be profiled: {e}");
            None
        }
    };
    let mut command = Command::new(&program[0]);
    command.args(&program[1..]);
    for var in config::ALL_VARS {
        command.env_remove(var);
    }
    command.envs(environment(agent, mono_dir.as_deref(), config));
    // Preloaded, the agent's compiler hooks come before glibc's empty ones: a native program
    // built with -finstrument-functions is traced through them (a native session: agent
    // `native`), and with --native-hooks in tracing mode an instrumented library a .NET program
    // calls joins the runtime's trees (the runtime's own load of the agent finds this copy).
    // Only then: a preloaded library is in every process the program starts too.
    let native = is_instrumented_native(&program[0]);
    if native || (config.native_hooks && config.mode == Mode::Tracing) {
        command.env("LD_PRELOAD", prepend(agent.as_os_str(), std::env::var_os("LD_PRELOAD"), " "));
    }
    if native {
        command.env(config::ENV_NATIVE, "1");
    }
    Ok(command)
}

/// Starts `command` (made by [`command`] for `program`): a program that is not there is
/// [`LaunchError::NotFound`].
pub fn spawn(command: &mut Command, program: &str) -> Result<Child, LaunchError> {
    command.spawn().map_err(|source| match source.kind() {
        std::io::ErrorKind::NotFound => LaunchError::NotFound { program: program.to_string() },
        _ => LaunchError::Spawn { program: program.to_string(), source },
    })
}

/// Whether `program` (a path, or a name on `PATH`) is a native program built with
/// `-finstrument-functions`: it imports the compiler's entry hook.
pub fn is_instrumented_native(program: &str) -> bool {
    find_program(program)
        .is_some_and(|path| sonde_symbols::imports_any(&path, &["__cyg_profile_func_enter", "__cyg_profile_func_exit"]))
}

/// Among `files` (what a traced .NET process mapped executable: its snapshots' `mapped_files`),
/// the libraries built with `-finstrument-functions`: they import the compiler's entry hook,
/// which without `--native-hooks` is glibc's empty one, so their functions were not traced.
pub fn instrumented_libraries(files: &[String]) -> Vec<String> {
    files.iter().filter(|f| sonde_symbols::imports_any(Path::new(f), &[sonde_symbols::ENTRY_HOOK])).cloned().collect()
}

/// `<agent's directory>/mono/`, holding `libmono-profiler-sonde.so` → the agent: found there, or
/// made (a directory of mode 0755 whatever the umask, and a relative symlink), then checked to
/// point at this agent and to be writable by nobody else.
fn mono_module_dir(agent: &Path) -> Result<PathBuf, MonoModuleError> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    let agent =
        agent.canonicalize().map_err(|source| MonoModuleError::Resolve { path: agent.to_path_buf(), source })?;
    let (Some(home), Some(name)) = (agent.parent(), agent.file_name()) else {
        return Err(MonoModuleError::NoDirectory(agent));
    };
    let dir = home.join("mono");
    let module = dir.join(MONO_MODULE);
    if std::fs::symlink_metadata(&module).is_err() {
        let made = std::fs::DirBuilder::new().mode(0o755).create(&dir);
        match made {
            Ok(()) => std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755))
                .map_err(|source| MonoModuleError::Mode { path: dir.clone(), source })?,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(source) => return Err(MonoModuleError::Create { path: dir, source }),
        }
        match std::os::unix::fs::symlink(Path::new("..").join(name), &module) {
            Ok(()) => {}
            // Another sonde made it at the same moment: checked below like any other.
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(source) => return Err(MonoModuleError::Create { path: module, source }),
        }
    }
    if module.canonicalize().ok().as_deref() != Some(agent.as_path()) {
        return Err(MonoModuleError::NotOurs { module, agent });
    }
    trust::check_not_writable_by_others(&module)?;
    Ok(dir)
}

fn environment(agent: &Path, mono_dir: Option<&Path>, config: &AgentConfig) -> Vec<(String, OsString)> {
    let mut env: Vec<(String, OsString)> = vec![
        ("CORECLR_ENABLE_PROFILING".into(), "1".into()),
        ("CORECLR_PROFILER".into(), PROFILER_CLSID.into()),
        ("CORECLR_PROFILER_PATH".into(), agent.as_os_str().to_owned()),
    ];
    if let Some(dir) = mono_dir {
        env.push(("LD_LIBRARY_PATH".into(), prepend(dir.as_os_str(), std::env::var_os("LD_LIBRARY_PATH"), ":")));
        env.push((
            "MONO_ENV_OPTIONS".into(),
            append_option(std::env::var_os("MONO_ENV_OPTIONS"), &mono_options(config)),
        ));
    }
    env.extend(config.to_env().into_iter().map(|(k, v)| (k.to_string(), v.into())));
    env
}

/// What Mono is asked for: the profiler module, and in tracing and coverage modes no precompiled
/// (AOT) code. AOT code has no enter/leave instrumentation and no coverage counters, and Mono
/// runs from AOT images more often than not: Debian's `mono-runtime` builds them for `mscorlib`
/// and its own programs (`mcs.exe`) when they are installed. Whether the program has an image
/// cannot be told from the command (`mono` found through `PATH`, a wrapper script such as `mcs`
/// that names the assembly itself, a Mono program started by another program), so the rule is
/// the mode's, whatever the command — CoreCLR's equivalent is `COR_PRF_DISABLE_ALL_NGEN_IMAGES`.
/// It costs start-up: the JIT compiles what the images held (BENCHMARKS.md, "Mono: tracing
/// without AOT images"). The program's own options can still turn AOT on (`mono -O=all`); the
/// agent then reports the images whose code ran unseen (`agent/src/mono/precompiled.rs`).
/// Sampling changes no code generation: AOT code is sampled like the rest.
fn mono_options(config: &AgentConfig) -> String {
    if matches!(config.mode, Mode::Tracing | Mode::Coverage) {
        format!("-O=-aot {MONO_OPTION}")
    } else {
        MONO_OPTION.to_string()
    }
}

/// `first`, `separator`, `existing` — or `first` alone when there is nothing (an empty entry of
/// `LD_LIBRARY_PATH` would mean the current directory to the dynamic loader).
fn prepend(first: &std::ffi::OsStr, existing: Option<OsString>, separator: &str) -> OsString {
    let mut value = first.to_owned();
    if let Some(existing) = existing.filter(|e| !e.is_empty()) {
        value.push(separator);
        value.push(existing);
    }
    value
}

/// `existing option`, keeping what the user already asked Mono for.
fn append_option(existing: Option<OsString>, option: &str) -> OsString {
    match existing.filter(|e| !e.is_empty()) {
        Some(mut value) => {
            value.push(" ");
            value.push(option);
            value
        }
        None => option.into(),
    }
}

/// Where `program` would be found: itself when it has a slash, else the first match on `PATH`.
fn find_program(program: &str) -> Option<PathBuf> {
    if program.contains('/') {
        return Path::new(program).is_file().then(|| PathBuf::from(program));
    }
    std::env::split_paths(&std::env::var_os("PATH")?).map(|dir| dir.join(program)).find(|p| p.is_file())
}

/// Why no agent connected, in one line, for the command that was run.
pub fn no_agent_reason(program: &[String]) -> String {
    if is_mono(&program[0]) {
        format!(
            "no .NET runtime loaded the agent: Mono did not load Sonde's profiler module {MONO_MODULE} \
             (requested with MONO_ENV_OPTIONS={MONO_OPTION}, found through LD_LIBRARY_PATH)"
        )
    } else {
        format!(
            "no .NET runtime loaded the agent: is `{}` a .NET (CoreCLR or Mono) program? (a native program is \
             profiled when it is built with -finstrument-functions)",
            program[0]
        )
    }
}

/// The agent library: `$SONDE_AGENT`, else beside the `sonde` executable, else in `../lib/sonde/`,
/// else in the directory above (a program of the build's `examples/`, using this library).
pub fn locate_agent() -> Result<PathBuf, AgentNotFound> {
    if let Some(path) = std::env::var_os("SONDE_AGENT") {
        let path = PathBuf::from(path);
        if path.is_file() {
            return Ok(path);
        }
        return Err(AgentNotFound::BadVariable(path));
    }
    let exe = std::env::current_exe().map_err(AgentNotFound::NoExecutable)?;
    let dir = exe.parent().unwrap_or(Path::new("."));
    for candidate in
        [dir.join(AGENT_LIBRARY), dir.join("../lib/sonde").join(AGENT_LIBRARY), dir.join("..").join(AGENT_LIBRARY)]
    {
        if candidate.is_file() {
            return Ok(candidate.canonicalize().unwrap_or(candidate));
        }
    }
    Err(AgentNotFound::NotBeside { exe })
}

/// Sends `signal` to process `pid`; a process that is already gone is not an error.
pub fn send_signal(pid: u32, signal: rustix::process::Signal) {
    if let Some(pid) = i32::try_from(pid).ok().and_then(rustix::process::Pid::from_raw) {
        let _ = rustix::process::kill_process(pid, signal);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mono_is_recognised_by_file_name() {
        for mono in ["mono", "/usr/bin/mono", "mono-sgen", "/opt/mono/bin/mono-boehm"] {
            assert!(is_mono(mono), "{mono}");
        }
        for other in ["dotnet", "/usr/bin/monodis", "./mono.sh", "/bin/sh"] {
            assert!(!is_mono(other), "{other}");
        }
    }

    /// A caller tells a missing program from one that cannot run; the messages are `sonde`'s.
    #[test]
    fn a_missing_program_is_not_found() {
        let missing = "/nonexistent/sonde-test-program";
        let e = spawn(&mut Command::new(missing), missing).unwrap_err();
        assert!(matches!(&e, LaunchError::NotFound { program } if program == missing), "{e:?}");
        assert_eq!(e.to_string(), format!("cannot run `{missing}`: command not found"));
        let dir = tempfile::tempdir().unwrap();
        let not_a_program = dir.path().to_str().unwrap();
        let e = spawn(&mut Command::new(not_a_program), not_a_program).unwrap_err();
        assert!(matches!(e, LaunchError::Spawn { .. }), "{e:?}");
        assert!(e.to_string().starts_with(&format!("cannot run `{not_a_program}`: ")), "{e}");
    }

    #[test]
    fn paths_and_options_are_added_to_what_was_there() {
        let dir = Path::new("/tmp/s/mono");
        let dir = dir.as_os_str();
        assert_eq!(prepend(dir, None, ":"), "/tmp/s/mono");
        assert_eq!(prepend(dir, Some("".into()), ":"), "/tmp/s/mono");
        assert_eq!(prepend(dir, Some("/a:/b".into()), ":"), "/tmp/s/mono:/a:/b");
        assert_eq!(prepend(dir, Some("/x/libx.so".into()), " "), "/tmp/s/mono /x/libx.so");
        assert_eq!(append_option(None, MONO_OPTION), "--profile=sonde");
        assert_eq!(append_option(Some("--debug".into()), MONO_OPTION), "--debug --profile=sonde");
        let mut config = AgentConfig { mode: Mode::Tracing, ..AgentConfig::default() };
        assert_eq!(mono_options(&config), "-O=-aot --profile=sonde", "whatever the filter");
        config.mode = Mode::Coverage;
        assert_eq!(mono_options(&config), "-O=-aot --profile=sonde");
        config.mode = Mode::Sampling;
        assert_eq!(mono_options(&config), "--profile=sonde", "sampling keeps AOT code");
    }

    #[test]
    fn the_mono_module_links_to_the_agent_from_beside_it() {
        use std::os::unix::fs::PermissionsExt;
        let home = tempfile::tempdir().unwrap();
        std::fs::set_permissions(home.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let agent = home.path().join("libsonde_agent.so");
        std::fs::write(&agent, b"").unwrap();
        let dir = mono_module_dir(&agent).unwrap();
        assert_eq!(dir, home.path().canonicalize().unwrap().join("mono"));
        assert_eq!(std::fs::read_link(dir.join(MONO_MODULE)).unwrap(), Path::new("../libsonde_agent.so"));
        assert_eq!(std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o755);
        // Found, not made, the second time.
        assert_eq!(mono_module_dir(&agent).unwrap(), dir);
        // A module that is not this agent is refused, as is a directory others can write.
        let other = home.path().join("other.so");
        std::fs::write(&other, b"").unwrap();
        let e = mono_module_dir(&other).unwrap_err();
        assert!(matches!(e, MonoModuleError::NotOurs { .. }) && e.to_string().contains("is not a link to the agent"));
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = mono_module_dir(&agent).unwrap_err();
        assert!(matches!(e, MonoModuleError::Untrusted(_)) && e.to_string().contains("other users can write it"));
    }
}
