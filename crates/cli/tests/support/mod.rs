//! Shared helpers for the integration tests that profile real .NET programs.
//!
//! - The toolchain comes from `SONDE_DOTNET` and `SONDE_MCS`, and for the Mono tests `SONDE_MONO`
//!   (written to `target/sonde-env.sh` by `scripts/setup-runtime.sh`). When one a test needs is
//!   missing the test FAILS, never skips. The same compiled `<Name>.exe` runs on both runtimes.
//! - Test apps (`tests/apps/<Name>.cs`) are compiled with `mcs` once per test process (a mutex
//!   serialises compilations) into `$CARGO_TARGET_TMPDIR/sonde-test-apps/<Name>-<hash>/`, keyed by
//!   a hash of the source, so an unchanged app is reused by later runs too. A compilation goes to
//!   a private directory first and is renamed into place, so concurrent test processes never
//!   see a half-written app.
//! - A scenario that concerns both runtimes is written once as `fn scenario(rt: Runtime)` and
//!   becomes one test per runtime through `on_both_runtimes!` (`scenario::coreclr`,
//!   `scenario::mono`).
//! - Every process a test starts runs in its own process group and under a deadline; the whole
//!   group is killed on timeout and on drop, so no test leaves a `dotnet` behind.
#![allow(dead_code)] // each test binary uses a different subset

use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::ffi::{OsStr, OsString};
use std::hash::{Hash, Hasher};
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// How long any single process may run before the test gives up on it.
pub const DEADLINE: Duration = Duration::from_secs(60);

const RUNTIME_CONFIG: &str =
    r#"{"runtimeOptions":{"tfm":"net8.0","framework":{"name":"Microsoft.NETCore.App","version":"8.0.0"}}}"#;

const SETUP_HINT: &str = "run `bash scripts/setup-runtime.sh`, then `source target/sonde-env.sh` before `cargo test`";

/// Variables that configure a profiler; none may leak in from the caller's environment.
const PROFILER_VARS: &[&str] =
    &["CORECLR_ENABLE_PROFILING", "CORECLR_PROFILER", "CORECLR_PROFILER_PATH", "SONDE_AGENT", "MONO_ENV_OPTIONS"];

/// The value of a required toolchain variable, checked to name an existing file.
fn tool(var: &str) -> PathBuf {
    let value = std::env::var_os(var).filter(|v| !v.is_empty()).unwrap_or_else(|| {
        panic!("{var} is not set: these tests need real .NET 8 and Mono runtimes and the mcs compiler; {SETUP_HINT}")
    });
    let path = PathBuf::from(value);
    assert!(path.is_file(), "{var}={} does not exist; {SETUP_HINT}", path.display());
    path
}

/// The `dotnet` host (`$SONDE_DOTNET`).
pub fn dotnet() -> PathBuf {
    tool("SONDE_DOTNET")
}

/// The Mono runtime (`$SONDE_MONO`).
pub fn mono() -> PathBuf {
    tool("SONDE_MONO")
}

/// A Python with pythonnet, hosting CoreCLR without ever shutting it down (`$SONDE_PYTHON`).
pub fn python() -> PathBuf {
    tool("SONDE_PYTHON")
}

/// tmux, the real terminal `sonde top` is tested in (`$SONDE_TMUX`).
pub fn tmux() -> PathBuf {
    tool("SONDE_TMUX")
}

/// A file of the repository (`tests/apps/host.py`, …).
pub fn repo_file(relative: &str) -> PathBuf {
    repo_root().join(relative)
}

/// The C# compiler (`$SONDE_MCS`).
pub fn mcs() -> PathBuf {
    tool("SONDE_MCS")
}

/// The `sonde` binary under test, after checking that the agent library sits next to it.
pub fn sonde() -> PathBuf {
    static CHECKED: OnceLock<PathBuf> = OnceLock::new();
    CHECKED
        .get_or_init(|| {
            let exe = PathBuf::from(env!("CARGO_BIN_EXE_sonde"));
            let agent = exe.with_file_name("libsonde_agent.so");
            assert!(
                agent.is_file(),
                "the agent library {} is missing: build the whole workspace first (`cargo build --workspace`)",
                agent.display()
            );
            exe
        })
        .clone()
}

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// How a test app is compiled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Build {
    /// Debian's `mcs -optimize+`: no symbols.
    Mcs,
    /// `mcs -optimize+ -debug`: Mono's symbols, `<name>.exe.mdb` beside the program.
    McsMdb,
    /// Roslyn, the compiler .NET ships (`csc`): a portable PDB, `<name>.pdb` beside the program.
    RoslynPdb,
    /// Roslyn with the portable PDB embedded in the program.
    RoslynEmbedded,
}

impl Build {
    /// The compiler, and its arguments before the output and the source.
    fn compiler(self) -> (PathBuf, &'static [&'static str]) {
        match self {
            Build::Mcs => (mcs(), &["-optimize+"]),
            Build::McsMdb => (mcs(), &["-optimize+", "-debug"]),
            Build::RoslynPdb => (csc(), &[]),
            Build::RoslynEmbedded => (csc(), &["-embed"]),
        }
    }

    /// The symbol file the compiler writes beside `<name>.exe`, if any.
    fn symbols(self, name: &str) -> Option<String> {
        match self {
            Build::McsMdb => Some(format!("{name}.exe.mdb")),
            Build::RoslynPdb => Some(format!("{name}.pdb")),
            Build::Mcs | Build::RoslynEmbedded => None,
        }
    }
}

/// Compiles `tests/apps/<name>.cs` with `mcs` (once per process; reused across runs while the
/// source is unchanged) and returns the path of `<name>.exe`, with its runtimeconfig beside it.
pub fn app(name: &str) -> PathBuf {
    built_app(name, Build::Mcs)
}

/// [`app`] compiled by Roslyn, with a real portable PDB: `<name>.pdb` beside `<name>.exe`, or
/// embedded in it when `embedded`.
pub fn roslyn_app(name: &str, embedded: bool) -> PathBuf {
    built_app(name, if embedded { Build::RoslynEmbedded } else { Build::RoslynPdb })
}

/// [`app`] built as `build` says.
pub fn built_app(name: &str, build: Build) -> PathBuf {
    static APPS: Mutex<Option<HashMap<(String, Build), PathBuf>>> = Mutex::new(None);
    let mut apps = APPS.lock().unwrap_or_else(|e| e.into_inner());
    let key = (name.to_string(), build);
    if let Some(exe) = apps.get_or_insert_with(HashMap::new).get(&key) {
        return exe.clone();
    }
    let exe = compile(name, build);
    apps.get_or_insert_with(HashMap::new).insert(key, exe.clone());
    exe
}

/// Compiles into a directory keyed by the source, the build and the compiler (its path and
/// content: Roslyn's wrapper script names the Roslyn package and driver), staged then renamed so
/// that concurrent test processes share one copy.
fn compile(name: &str, build: Build) -> PathBuf {
    let source = repo_root().join("tests/apps").join(format!("{name}.cs"));
    let text = std::fs::read(&source).unwrap_or_else(|e| panic!("cannot read {}: {e}", source.display()));
    let (compiler, args) = build.compiler();
    let wrapper = std::fs::read(&compiler).unwrap_or_default();
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    (&text, &compiler, &wrapper, build, RUNTIME_CONFIG).hash(&mut hasher);
    let base = Path::new(env!("CARGO_TARGET_TMPDIR")).join("sonde-test-apps");
    let dir = base.join(format!("{name}-{build:?}-{:016x}", hasher.finish()));
    let exe = dir.join(format!("{name}.exe"));
    let done = |dir: &Path| {
        dir.join(format!("{name}.exe")).is_file()
            && dir.join(format!("{name}.runtimeconfig.json")).is_file()
            && build.symbols(name).is_none_or(|file| dir.join(file).is_file())
    };
    if done(&dir) {
        return exe;
    }
    std::fs::create_dir_all(&base).unwrap_or_else(|e| panic!("cannot create {}: {e}", base.display()));
    let staging = tempfile::Builder::new()
        .prefix(&format!(".{name}-"))
        .tempdir_in(&base)
        .unwrap_or_else(|e| panic!("cannot create a directory in {}: {e}", base.display()));
    let mut out_arg = OsString::from("-out:");
    out_arg.push(staging.path().join(format!("{name}.exe")));
    let output = Command::new(&compiler)
        .args(args)
        .arg(out_arg)
        .arg(&source)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}; {SETUP_HINT}", compiler.display()));
    std::fs::write(staging.path().join(format!("{name}.runtimeconfig.json")), RUNTIME_CONFIG)
        .expect("cannot write the runtimeconfig");
    assert!(
        output.status.success() && done(staging.path()),
        "{} failed to compile {} ({}):\n{}{}",
        compiler.display(),
        source.display(),
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let staged = staging.keep();
    if std::fs::rename(&staged, &dir).is_err() {
        // Another test process won the race: use its copy.
        let _ = std::fs::remove_dir_all(&staged);
        assert!(done(&dir), "cannot move the compiled {name} into {}", dir.display());
    }
    exe
}

/// Roslyn, the real C# compiler (`$SONDE_CSC`: a script running `tests/tools/Csc.cs` on .NET 8).
pub fn csc() -> PathBuf {
    tool("SONDE_CSC")
}

/// What a finished process left behind.
#[derive(Debug)]
pub struct Output {
    pub status: ExitStatus,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

impl Output {
    /// The exit code as a shell reports it (128 + N for a death by signal N).
    pub fn code(&self) -> i32 {
        use std::os::unix::process::ExitStatusExt;
        self.status.code().unwrap_or_else(|| 128 + self.status.signal().unwrap_or(0))
    }

    pub fn stdout_str(&self) -> String {
        String::from_utf8(self.stdout.clone()).expect("stdout is not UTF-8")
    }

    pub fn stderr_str(&self) -> String {
        String::from_utf8(self.stderr.clone()).expect("stderr is not UTF-8")
    }

    /// Everything, for assertion messages.
    pub fn describe(&self) -> String {
        format!(
            "exit: {}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.status,
            String::from_utf8_lossy(&self.stdout),
            String::from_utf8_lossy(&self.stderr)
        )
    }
}

/// A process started in its own process group (pgid == pid). Dropping it kills the whole group.
pub struct Running {
    child: Child,
    reaped: Option<ExitStatus>,
    /// stdout, one chunk per line (the last chunk may lack its newline).
    lines: Receiver<Vec<u8>>,
    stdout: Vec<u8>,
    stderr: Receiver<Vec<u8>>,
    what: String,
}

/// Sends `signal` to every process of the group led by `pgid`.
pub fn kill_group(pgid: u32, signal: i32) {
    let pgid = libc::pid_t::try_from(pgid).expect("pid out of range");
    // SAFETY: kill(2) with a negative pid only sends a signal to that process group; it touches
    // no memory of ours. The group is one this test created with `process_group(0)`.
    unsafe {
        libc::kill(-pgid, signal);
    }
}

/// True while any process of group `pgid` still exists (zombies included).
fn group_alive(pgid: u32) -> bool {
    let pgid = libc::pid_t::try_from(pgid).expect("pid out of range");
    // SAFETY: signal 0 only checks for existence and permission; nothing is delivered.
    unsafe { libc::kill(-pgid, 0) == 0 }
}

impl Running {
    pub fn spawn(program: impl AsRef<OsStr>, args: &[OsString]) -> Running {
        Running::spawn_with_env(program, args, &[])
    }

    /// [`spawn`](Self::spawn) with extra environment variables (set after the profiler variables
    /// of the caller's environment were removed, so `env` may set them on purpose).
    pub fn spawn_with_env(program: impl AsRef<OsStr>, args: &[OsString], env: &[(&str, OsString)]) -> Running {
        let program = program.as_ref();
        let what = std::iter::once(program.to_string_lossy().into_owned())
            .chain(args.iter().map(|a| a.to_string_lossy().into_owned()))
            .collect::<Vec<_>>()
            .join(" ");
        let mut command = Command::new(program);
        command.args(args).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
        // Never let a profiler configuration from the caller's environment leak in.
        for var in PROFILER_VARS {
            command.env_remove(var);
        }
        command.envs(env.iter().map(|(k, v)| (k, v)));
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        let mut child = command.spawn().unwrap_or_else(|e| panic!("cannot start `{what}`: {e}"));
        let stdout = child.stdout.take().expect("piped stdout");
        let err_pipe = child.stderr.take().expect("piped stderr");
        let (line_tx, lines) = channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            loop {
                let mut line = Vec::new();
                match reader.read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        if line_tx.send(line).is_err() {
                            break;
                        }
                    }
                }
            }
        });
        let (err_tx, stderr) = channel();
        std::thread::spawn(move || {
            let mut all = Vec::new();
            let mut err_pipe = err_pipe;
            let _ = err_pipe.read_to_end(&mut all);
            let _ = err_tx.send(all);
        });
        Running { child, reaped: None, lines, stdout: Vec::new(), stderr, what }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The stdout lines read so far (by [`wait_for_line`](Self::wait_for_line)).
    pub fn stdout_so_far(&self) -> &[u8] {
        &self.stdout
    }

    /// Waits up to `timeout` for a stdout line equal to `want` (without its newline).
    pub fn wait_for_line(&mut self, want: &str, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    let done = line.strip_suffix(b"\n").unwrap_or(&line) == want.as_bytes();
                    self.stdout.extend_from_slice(&line);
                    if done {
                        return;
                    }
                }
                Err(RecvTimeoutError::Timeout) => {
                    panic!("`{}` did not print `{want}` within {timeout:?}", self.what)
                }
                Err(RecvTimeoutError::Disconnected) => panic!(
                    "`{}` closed its stdout without printing `{want}`; stdout so far:\n{}",
                    self.what,
                    String::from_utf8_lossy(&self.stdout)
                ),
            }
        }
    }

    /// Waits until `done()` holds, checking every 20 ms, while this process runs: panics with
    /// its output if it exits first, and naming `what` after [`DEADLINE`].
    pub fn wait_while_running(&mut self, what: &str, mut done: impl FnMut() -> bool) {
        let deadline = Instant::now() + DEADLINE;
        while !done() {
            if let Ok(Some(_)) = self.child.try_wait() {
                let out = self.collect(Duration::from_secs(10));
                panic!("`{}` exited while waiting for {what}: {}", self.what, out.describe());
            }
            if Instant::now() >= deadline {
                kill_group(self.pid(), libc::SIGTERM);
                let out = self.collect(Duration::from_secs(10));
                panic!("timed out waiting for {what}; `{}` stopped with SIGTERM: {}", self.what, out.describe());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits up to `timeout` for the process to exit, then collects its output. Panics (after
    /// killing the group) on timeout, and if the process exited but left others of its group
    /// running with its stdout or stderr still open.
    pub fn wait(mut self, timeout: Duration) -> Output {
        self.collect(timeout)
    }

    /// [`wait`](Self::wait) without giving up `self` (whose drop then only cleans up).
    fn collect(&mut self, timeout: Duration) -> Output {
        let deadline = Instant::now() + timeout;
        let status = loop {
            match self.child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) if Instant::now() >= deadline => {
                    kill_group(self.pid(), libc::SIGKILL);
                    panic!("`{}` did not finish within {timeout:?}; killed", self.what);
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(5)),
                Err(e) => panic!("cannot wait for `{}`: {e}", self.what),
            }
        };
        self.reaped = Some(status);
        // The pipes close once every process of the group has exited.
        let drain = Instant::now() + Duration::from_secs(5);
        loop {
            match self.lines.recv_timeout(drain.saturating_duration_since(Instant::now())) {
                Ok(line) => self.stdout.extend_from_slice(&line),
                Err(RecvTimeoutError::Disconnected) => break,
                Err(RecvTimeoutError::Timeout) => {
                    kill_group(self.pid(), libc::SIGKILL);
                    // Killed, the group lets go of stderr: show what it said (e.g. a crash report).
                    let stderr = self.stderr.recv_timeout(Duration::from_secs(5)).unwrap_or_default();
                    panic!(
                        "`{}` exited ({status}) but left a process holding its stdout open; stdout:\n{}\nstderr:\n{}",
                        self.what,
                        String::from_utf8_lossy(&self.stdout),
                        String::from_utf8_lossy(&stderr)
                    );
                }
            }
        }
        let stderr = match self.stderr.recv_timeout(drain.saturating_duration_since(Instant::now())) {
            Ok(stderr) => stderr,
            Err(_) => {
                kill_group(self.pid(), libc::SIGKILL);
                panic!("`{}` exited ({status}) but left a process holding its stderr open", self.what);
            }
        };
        Output { status, stdout: std::mem::take(&mut self.stdout), stderr }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        // Whatever happened (a failed assertion included), leave no process of this group behind.
        if group_alive(self.pid()) {
            kill_group(self.pid(), libc::SIGKILL);
        }
        if self.reaped.is_none() {
            let _ = self.child.wait();
        }
    }
}

fn os(args: &[&str]) -> Vec<OsString> {
    args.iter().map(OsString::from).collect()
}

/// Waits until `done()` holds, checking every 20 ms; panics naming `what` after [`DEADLINE`].
pub fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + DEADLINE;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The first line a program wrote to `path`, once it is whole (newline included).
pub fn wait_for_line_in(path: &Path, what: &str) -> String {
    wait_until(what, || std::fs::read_to_string(path).is_ok_and(|s| s.contains('\n')));
    std::fs::read_to_string(path).unwrap().lines().next().unwrap_or_default().to_string()
}

/// Runs `program args` to completion (under [`DEADLINE`]).
pub fn run(program: impl AsRef<OsStr>, args: &[OsString]) -> Output {
    Running::spawn(program, args).wait(DEADLINE)
}

/// A runtime that runs the test apps. The same compiled `<Name>.exe` runs on both.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Runtime {
    /// .NET 8 (`$SONDE_DOTNET`).
    CoreClr,
    /// Mono 6.8 (`$SONDE_MONO`).
    Mono,
}

impl Runtime {
    /// `runtime.kind` in a report; the text report names the runtime the same way.
    pub fn kind(self) -> &'static str {
        match self {
            Runtime::CoreClr => "coreclr",
            Runtime::Mono => "mono",
        }
    }

    /// The program that runs an `.exe`: `$SONDE_DOTNET` or `$SONDE_MONO`.
    pub fn host(self) -> PathBuf {
        match self {
            Runtime::CoreClr => dotnet(),
            Runtime::Mono => mono(),
        }
    }

    /// The command line that runs a test app: `<host> <Name>.exe args`.
    pub fn app_command(self, name: &str, args: &[&str]) -> Vec<OsString> {
        let mut all = vec![self.host().into_os_string(), app(name).into_os_string()];
        all.extend(os(args));
        all
    }

    /// Runs a test app on its own (without sonde): `<host> <Name>.exe args`.
    pub fn run_app(self, name: &str, args: &[&str]) -> Output {
        let command = self.app_command(name, args);
        run(&command[0], &command[1..])
    }

    /// `sonde record -o <out> [opts] -- <host> <Name>.exe args`, to completion.
    pub fn record_app(self, out: &Path, opts: &[&str], name: &str, args: &[&str]) -> Output {
        record(out, opts, &self.app_command(name, args))
    }

    /// Asserts that `report` was recorded on this runtime: its kind, and its version (8.x for
    /// .NET; for Mono the one `mono --version` prints).
    pub fn assert_recorded_on(self, report: &Value) {
        assert_eq!(report["runtime"]["kind"], self.kind(), "runtime: {}", report["runtime"]);
        let version = str_of(&report["runtime"], "version");
        match self {
            Runtime::CoreClr => assert!(version.starts_with("8."), "runtime.version is {version:?}, expected 8.x"),
            Runtime::Mono => assert_eq!(version, mono_version(), "runtime.version"),
        }
    }

    /// The exit status (as a shell reports it) of Crash.exe, whose exception is unhandled: .NET
    /// aborts (SIGABRT, 128 + 6); Mono prints the exception and exits with status 1.
    pub fn crash_code(self) -> i32 {
        match self {
            Runtime::CoreClr => 134,
            Runtime::Mono => 1,
        }
    }

    /// Asserts how a profile of Crash.exe records the end of the process. .NET aborts without a
    /// shutdown callback: no final snapshot, so the profile is incomplete (it holds the last
    /// snapshot, sent when the exception was thrown). Mono exits, and the agent's exit handler
    /// still sends the final snapshot.
    pub fn assert_crash_end(self, report: &Value) {
        match self {
            Runtime::CoreClr => {
                assert_eq!(report["incomplete"], true, "a crashed process cannot have sent its final snapshot");
                assert_eq!(report["signal"], 6, "the process died by SIGABRT");
                assert!(report["exit_code"].is_null(), "exit_code: {}", report["exit_code"]);
            }
            Runtime::Mono => {
                assert_eq!(report["incomplete"], false, "the exit handler sends the final snapshot");
                assert_eq!(report["exit_code"], 1);
                assert!(report["signal"].is_null(), "signal: {}", report["signal"]);
            }
        }
    }
}

/// Mono's version as `mono --version` prints it (`Mono JIT compiler version 6.8.0.105 (...)`).
pub fn mono_version() -> String {
    static VERSION: OnceLock<String> = OnceLock::new();
    VERSION
        .get_or_init(|| {
            let out = run(mono(), &[OsString::from("--version")]);
            assert_eq!(out.code(), 0, "mono --version failed:\n{}", out.describe());
            let first = out.stdout_str().lines().next().unwrap_or_default().to_string();
            first
                .split_whitespace()
                .skip_while(|w| *w != "version")
                .nth(1)
                .unwrap_or_else(|| panic!("no version in `mono --version`: {first}"))
                .to_string()
        })
        .clone()
}

/// One `#[test]` per runtime for each scenario `fn <name>(rt: Runtime)` of the calling file:
/// `<name>::coreclr` and `<name>::mono` (so `cargo test mono` selects the Mono runs).
#[allow(unused_macros)] // not every test binary has scenarios for both runtimes
macro_rules! on_both_runtimes {
    ($($scenario:ident),+ $(,)?) => {$(
        mod $scenario {
            #[test]
            fn coreclr() {
                super::$scenario($crate::support::Runtime::CoreClr)
            }

            #[test]
            fn mono() {
                super::$scenario($crate::support::Runtime::Mono)
            }
        }
    )+};
}
#[allow(unused_imports)] // likewise
pub(crate) use on_both_runtimes;

/// Runs a test app on CoreCLR: `$SONDE_DOTNET <Name>.exe args`.
pub fn run_app(name: &str, args: &[&str]) -> Output {
    Runtime::CoreClr.run_app(name, args)
}

/// The arguments of `sonde record -o <out> [opts] -- command...`.
pub fn record_args(out: &Path, opts: &[&str], command: &[OsString]) -> Vec<OsString> {
    let mut all = os(&["record", "-o"]);
    all.push(out.into());
    all.extend(os(opts));
    all.push("--".into());
    all.extend(command.iter().cloned());
    all
}

/// The command line that runs a test app on CoreCLR: `$SONDE_DOTNET <Name>.exe args`.
pub fn app_command(name: &str, args: &[&str]) -> Vec<OsString> {
    Runtime::CoreClr.app_command(name, args)
}

/// `sonde record -o <out> [opts] -- command...`, to completion.
pub fn record(out: &Path, opts: &[&str], command: &[OsString]) -> Output {
    run(sonde(), &record_args(out, opts, command))
}

/// `sonde record -o <out> [opts] -- $SONDE_DOTNET <Name>.exe args`, to completion.
pub fn record_app(out: &Path, opts: &[&str], name: &str, args: &[&str]) -> Output {
    Runtime::CoreClr.record_app(out, opts, name, args)
}

/// [`record_app`] with the CPU clock sampled by the sampler thread (`SONDE_SAMPLER=signal`,
/// `SONDE_CPU_TIMERS=0`) instead of the kernel's sampler or per-thread timers: the fallback
/// where `perf_event_open` is not allowed.
pub fn record_app_thread_sampler(out: &Path, opts: &[&str], name: &str, args: &[&str]) -> Output {
    let args = record_args(out, opts, &app_command(name, args));
    let env = [("SONDE_SAMPLER", "signal".into()), ("SONDE_CPU_TIMERS", "0".into())];
    Running::spawn_with_env(sonde(), &args, &env).wait(DEADLINE)
}

/// [`record_app`] with the CPU clock sampled by Sonde's signal, raised by per-thread timers
/// (`SONDE_SAMPLER=signal`): the fallback where the kernel refuses its rings.
pub fn record_app_signal_sampler(out: &Path, opts: &[&str], name: &str, args: &[&str]) -> Output {
    let args = record_args(out, opts, &app_command(name, args));
    Running::spawn_with_env(sonde(), &args, &[("SONDE_SAMPLER", "signal".into())]).wait(DEADLINE)
}

/// `sonde <args>`, to completion.
pub fn sonde_cmd(args: &[OsString]) -> Output {
    run(sonde(), args)
}

/// `sonde report <file> --format json`, parsed. Panics (with sonde's stderr) if it fails.
pub fn report_json(file: &Path) -> Value {
    let out = sonde_cmd(&[OsString::from("report"), file.into(), "--format".into(), "json".into()]);
    assert_eq!(out.code(), 0, "sonde report --format json {} failed:\n{}", file.display(), out.describe());
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("sonde report --format json printed invalid JSON: {e}\n{}", out.describe()))
}

/// `sonde report <file>` (text), to completion.
pub fn report_text(file: &Path) -> Output {
    sonde_cmd(&[OsString::from("report"), file.into()])
}

/// The `expect-calls <Name> <N>` lines a test app printed, in order.
pub fn expected_calls(stdout: &str) -> Vec<(String, u64)> {
    stdout
        .lines()
        .filter_map(|line| line.strip_prefix("expect-calls "))
        .map(|rest| {
            let (name, n) = rest.rsplit_once(' ').unwrap_or_else(|| panic!("bad expect-calls line: {rest}"));
            (name.to_string(), n.parse().unwrap_or_else(|_| panic!("bad count in expect-calls line: {rest}")))
        })
        .collect()
}

/// `methods[].calls` summed by name (overloads and generic instantiations share a name).
pub fn calls_by_name(report: &Value) -> BTreeMap<String, u64> {
    let mut calls = BTreeMap::new();
    for m in arr(report, "methods") {
        *calls.entry(str_of(m, "name").to_string()).or_insert(0) += u64_of(m, "calls");
    }
    calls
}

/// Asserts that every expected name was recorded with exactly its count.
pub fn assert_calls(report: &Value, expected: &[(String, u64)], context: &str) {
    assert!(!expected.is_empty(), "{context}: the program printed no expect-calls lines");
    let actual = calls_by_name(report);
    let wrong: Vec<String> = expected
        .iter()
        .filter(|(name, n)| actual.get(name) != Some(n))
        .map(|(name, n)| format!("  {name}: expected {n}, recorded {:?}", actual.get(name)))
        .collect();
    assert!(
        wrong.is_empty(),
        "{context}: call counts differ from the program's own tallies:\n{}\nrecorded: {actual:#?}",
        wrong.join("\n")
    );
}

pub fn arr<'a>(v: &'a Value, key: &str) -> &'a Vec<Value> {
    v[key].as_array().unwrap_or_else(|| panic!("`{key}` is not an array in {v}"))
}

pub fn u64_of(v: &Value, key: &str) -> u64 {
    v[key].as_u64().unwrap_or_else(|| panic!("`{key}` is not an unsigned integer in {v}"))
}

pub fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v[key].as_str().unwrap_or_else(|| panic!("`{key}` is not a string in {v}"))
}

/// Checks the structural invariants of a `sonde.report/1` document:
/// ids are indices; a node's parent precedes it and runs on the same thread; self <= total;
/// a node's total is its self plus its children's totals (up to rounding), for time and samples;
/// each method's calls/self are the sums over its nodes; each thread's calls are the sum over its
/// nodes; and a method's (recursion-aware) total never exceeds the sum of the roots' totals.
pub fn check_invariants(report: &Value) {
    let threads = arr(report, "threads");
    let methods = arr(report, "methods");
    let nodes = arr(report, "nodes");
    for (list, name) in [(threads, "threads"), (methods, "methods"), (nodes, "nodes")] {
        for (i, item) in list.iter().enumerate() {
            assert_eq!(u64_of(item, "id"), i as u64, "{name}[{i}] has the wrong id");
        }
    }
    let mut method_calls = vec![0u64; methods.len()];
    let mut method_self = vec![0u64; methods.len()];
    let mut method_nodes = vec![0u64; methods.len()];
    let mut thread_calls = vec![0u64; threads.len()];
    let mut children_total = vec![0u64; nodes.len()];
    let mut children_samples = vec![0u64; nodes.len()];
    let mut children = vec![0u64; nodes.len()];
    let mut roots_total = 0u64;
    for (i, n) in nodes.iter().enumerate() {
        let thread = u64_of(n, "thread") as usize;
        let method = u64_of(n, "method") as usize;
        assert!(thread < threads.len(), "node {i}: thread {thread} out of range");
        assert!(method < methods.len(), "node {i}: method {method} out of range");
        let (self_ns, total_ns) = (u64_of(n, "self_ns"), u64_of(n, "total_ns"));
        assert!(self_ns <= total_ns, "node {i}: self_ns {self_ns} > total_ns {total_ns}");
        let (self_samples, total_samples) = (u64_of(n, "self_samples"), u64_of(n, "total_samples"));
        assert!(self_samples <= total_samples, "node {i}: self_samples > total_samples");
        if report["mode"] == "tracing" {
            assert!(u64_of(n, "calls") > 0, "node {i} has no calls: {n}");
        } else {
            assert_eq!(u64_of(n, "calls"), 0, "node {i}: sampling counts no calls: {n}");
        }
        match n["parent"].as_u64() {
            None => {
                assert!(n["parent"].is_null(), "node {i}: parent is neither null nor an id");
                roots_total += total_ns;
            }
            Some(p) => {
                let p = p as usize;
                assert!(p < i, "node {i}: parent {p} does not precede it");
                assert_eq!(u64_of(&nodes[p], "thread") as usize, thread, "node {i}: not on its parent's thread");
                children_total[p] += total_ns;
                children_samples[p] += total_samples;
                children[p] += 1;
            }
        }
        method_calls[method] += u64_of(n, "calls");
        method_self[method] += self_ns;
        method_nodes[method] += 1;
        thread_calls[thread] += u64_of(n, "calls");
    }
    for (i, n) in nodes.iter().enumerate() {
        let (self_ns, total_ns) = (u64_of(n, "self_ns"), u64_of(n, "total_ns"));
        let sum = self_ns + children_total[i];
        // Each of self and the children's totals is rounded separately: allow 1 ns per term.
        assert!(
            sum.abs_diff(total_ns) <= children[i] + 1,
            "node {i}: total_ns {total_ns} != self_ns {self_ns} + children's totals {}",
            children_total[i]
        );
        assert!(children_total[i] <= total_ns + children[i], "node {i}: children's totals exceed its total");
        assert_eq!(
            u64_of(n, "self_samples") + children_samples[i],
            u64_of(n, "total_samples"),
            "node {i}: total_samples != self_samples + children's total_samples"
        );
    }
    for (i, m) in methods.iter().enumerate() {
        assert_eq!(u64_of(m, "calls"), method_calls[i], "method {i} ({}): calls != sum over its nodes", m["name"]);
        assert_eq!(u64_of(m, "self_ns"), method_self[i], "method {i} ({}): self_ns != sum over its nodes", m["name"]);
        // Up to 1 ns of rounding per node (see `check_exact_additivity` for the strict version).
        assert!(
            u64_of(m, "self_ns") <= u64_of(m, "total_ns") + method_nodes[i],
            "method {i} ({}): self_ns {} > total_ns {}",
            m["name"],
            u64_of(m, "self_ns"),
            u64_of(m, "total_ns")
        );
        assert!(
            u64_of(m, "total_ns") <= roots_total,
            "method {i} ({}): total_ns {} exceeds the sum of root totals {roots_total} (recursion counted twice?)",
            m["name"],
            u64_of(m, "total_ns")
        );
    }
    for (i, t) in threads.iter().enumerate() {
        assert_eq!(u64_of(t, "calls"), thread_calls[i], "thread {i}: calls != sum over its nodes");
    }
}

/// The strict form of the time invariants: in integer nanoseconds, every node's total is exactly
/// its self time plus its children's totals, and no method's self time exceeds its total.
/// Returns the violations (empty when all hold).
pub fn exact_additivity_violations(report: &Value) -> Vec<String> {
    let methods = arr(report, "methods");
    let nodes = arr(report, "nodes");
    let mut children_total = vec![0u64; nodes.len()];
    for n in nodes {
        if let Some(p) = n["parent"].as_u64() {
            children_total[p as usize] += u64_of(n, "total_ns");
        }
    }
    let mut violations = Vec::new();
    for (i, n) in nodes.iter().enumerate() {
        let (self_ns, total_ns) = (u64_of(n, "self_ns"), u64_of(n, "total_ns"));
        if self_ns + children_total[i] != total_ns {
            violations.push(format!(
                "node {i} ({}): self_ns {self_ns} + children's total_ns {} = {} != total_ns {total_ns}",
                methods[u64_of(n, "method") as usize]["name"],
                children_total[i],
                self_ns + children_total[i]
            ));
        }
    }
    for m in methods {
        let (self_ns, total_ns) = (u64_of(m, "self_ns"), u64_of(m, "total_ns"));
        if self_ns > total_ns {
            violations.push(format!("method {} ({}): self_ns {self_ns} > total_ns {total_ns}", m["id"], m["name"]));
        }
    }
    violations
}

/// Asserts that `stderr` (sonde's) starts with the program's own stderr, byte for byte, and that
/// everything after it is sonde's summary: `sonde: ...` lines or the indented top-methods table.
/// sonde's stderr without its first line when that names the recording's session
/// (`sonde: session ID ...`, printed before the program starts).
pub fn after_session_line(stderr: &[u8]) -> &[u8] {
    if stderr.starts_with(b"sonde: session ") {
        match stderr.iter().position(|&b| b == b'\n') {
            Some(end) => &stderr[end + 1..],
            None => &[],
        }
    } else {
        stderr
    }
}

pub fn assert_stderr_passes_through(sonde_stderr: &[u8], program_stderr: &[u8]) {
    let shown = String::from_utf8_lossy(sonde_stderr);
    let sonde_stderr = after_session_line(sonde_stderr);
    assert!(
        sonde_stderr.starts_with(program_stderr),
        "the program's stderr was not passed through unchanged.\nprogram's own stderr:\n{}\nunder sonde:\n{shown}",
        String::from_utf8_lossy(program_stderr)
    );
    let rest = String::from_utf8(sonde_stderr[program_stderr.len()..].to_vec()).expect("sonde's stderr is not UTF-8");
    for line in rest.lines() {
        assert!(
            is_summary_line(line),
            "unexpected line on stderr (neither the program's nor sonde's): {line:?}\n{shown}"
        );
    }
}

/// `sonde: ...`, the table header, or a table row (`calls|samples self self% name`).
pub fn is_summary_line(line: &str) -> bool {
    if line.starts_with("sonde: ") {
        return true;
    }
    let fields: Vec<&str> = line.split_whitespace().collect();
    if line.ends_with("top methods by self time") {
        return fields.starts_with(&["calls", "self", "self%"]);
    }
    if line.ends_with("top methods by self samples") {
        return fields.starts_with(&["samples", "self", "self%"]);
    }
    line.starts_with(' ')
        && fields.len() >= 5
        && fields[0].chars().all(|c| c.is_ascii_digit() || c == ',')
        && fields[3].ends_with('%')
}

/// The only `.sonde` files in `dir`, sorted.
pub fn sonde_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "sonde"))
        .collect();
    files.sort();
    files
}

/// The split Split.exe measured for samples weighted by `clock`: its `split <Name> <percent>`
/// lines (each method's share of the thread's CPU time) for `cpu`, its `wall-split` lines for
/// `wall`.
pub fn measured_split(stdout: &str, clock: &str) -> BTreeMap<String, f64> {
    let prefix = if clock == "wall" { "wall-split " } else { "split " };
    stdout
        .lines()
        .filter_map(|l| l.strip_prefix(prefix))
        .map(|l| {
            let (name, pct) = l.rsplit_once(' ').expect("split line");
            (name.to_string(), pct.parse().expect("percent"))
        })
        .collect()
}

/// Each named method's share of the self samples of all the named methods, in percent.
pub fn sampled_split(report: &Value, names: &[String]) -> BTreeMap<String, f64> {
    let mut samples: BTreeMap<String, u64> = names.iter().map(|n| (n.clone(), 0)).collect();
    for m in arr(report, "methods") {
        if let Some(s) = samples.get_mut(str_of(m, "name")) {
            *s += u64_of(m, "self_samples");
        }
    }
    let total: u64 = samples.values().sum();
    assert!(total > 0, "no samples in {names:?}");
    samples.into_iter().map(|(n, s)| (n, 100.0 * s as f64 / total as f64)).collect()
}

/// The sampling-mode facts of a `sonde.report/1` document recorded on runtime `kind`
/// ([`Runtime::kind`]) with `clock`, and its invariants.
pub fn assert_sampling_facts(report: &Value, clock: &str, kind: &str) {
    assert_eq!(report["schema"], "sonde.report/1");
    assert_eq!(report["mode"], "sampling");
    assert!(report["timing"].is_null());
    assert_eq!(report["runtime"]["kind"], kind);
    assert_eq!(report["sample_clock"], clock);
    assert!(u64_of(report, "samples_taken") > 0);
    assert!(report["samples_lost"].is_object(), "samples_lost must say why: {}", report["samples_lost"]);
    for m in arr(report, "methods") {
        assert_eq!(u64_of(m, "calls"), 0, "sampling counts no calls: {m}");
        assert!(u64_of(m, "total_samples") >= u64_of(m, "self_samples"));
    }
    check_invariants(report);
}

/// What `tests/apps/Service.cs` prints, whatever happened to it meanwhile, and its exit code.
pub const SERVICE_OUTPUT: &str = "ready\ndone 1416422021842693365\n";
pub const SERVICE_EXIT: i32 = 7;

/// A scratch directory outside /tmp (a private mount namespace gets its own /tmp).
pub fn scratch(prefix: &str) -> tempfile::TempDir {
    tempfile::Builder::new().prefix(prefix).tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

/// Service.exe on `host`, started without Sonde, once it runs.
pub fn start_service(host: &Path, stop: &Path, env: &[(&str, OsString)]) -> Running {
    let mut service = Running::spawn_with_env(host, &[app("Service").into(), stop.into()], env);
    service.wait_for_line("ready", Duration::from_secs(60));
    service
}

/// Creates the stop file and checks that Service.exe ended as it always does.
pub fn stop_service(service: Running, stop: &Path) {
    std::fs::write(stop, b"").unwrap();
    let out = service.wait(Duration::from_secs(60));
    assert_eq!(out.code(), SERVICE_EXIT, "{}", out.describe());
    assert_eq!(out.stdout_str(), SERVICE_OUTPUT, "{}", out.describe());
}

/// The names of process `pid`'s threads.
pub fn thread_names(pid: u32) -> Vec<String> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("comm")).ok())
        .map(|n| n.trim_end().to_string())
        .collect()
}

/// Waits until no thread of the agent's (named `sonde*`) runs in `pid` any more: it detached.
pub fn wait_detached(pid: u32) {
    wait_until("the agent's threads to end after the detach", || {
        !thread_names(pid).iter().any(|n| n.starts_with("sonde"))
    });
}

/// The one child process of `parent` (the program a `sonde record` started).
pub fn child_of(parent: u32) -> u32 {
    let children = std::fs::read_to_string(format!("/proc/{parent}/task/{parent}/children")).unwrap();
    let pids: Vec<u32> = children.split_whitespace().map(|p| p.parse().unwrap()).collect();
    assert_eq!(pids.len(), 1, "children of {parent}: {pids:?}");
    pids[0]
}

/// `source` (under tests/apps/native) built by `compiler` at -O2 with the hooks into `out`, with
/// `flags` (`-shared -fPIC` for a library, `-pthread`, `-ldl`).
pub fn compile_native(compiler: &str, source: &str, out: &Path, flags: &[&str]) -> PathBuf {
    let built = Command::new(compiler)
        .args(["-O2", "-finstrument-functions", "-o"])
        .arg(out)
        .arg(repo_file(&format!("tests/apps/native/{source}")))
        .args(flags)
        .output()
        .unwrap_or_else(|e| panic!("{compiler} (the C/C++ compiler that comes with gcc): {e}"));
    assert!(built.status.success(), "{compiler}: {}", String::from_utf8_lossy(&built.stderr));
    out.to_path_buf()
}
