//! Sonde against a hostile local user (issue 11, items 1 and 2): the agent socket's directory is
//! private whatever the umask, neither end talks to a process of another user, and the
//! environment a program inherits cannot be turned against a process started after `sonde` has
//! exited — the late process runs unprofiled and says nothing to whoever waits at the old socket.
//!
//! The attacker is a real second, unprivileged user (`nobody`, through `setpriv`), so these tests
//! need root to become it, as CI has. Run as another user they fail, unless
//! `SONDE_SKIP_SECOND_USER_TESTS=1` says on purpose that they cannot run here.

mod support;

use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use support::*;

const NOBODY: &str = "65534";
const SQUATTER: &str = include_str!("support/squatter.py");

/// True when the second-user tests can run; panics when they cannot and nobody said so.
fn second_user_available() -> bool {
    if rustix::process::geteuid().is_root() {
        return true;
    }
    if std::env::var_os("SONDE_SKIP_SECOND_USER_TESTS").is_some_and(|v| v == "1") {
        eprintln!("NOT RUN: this test needs root to act as a second user (SONDE_SKIP_SECOND_USER_TESTS=1)");
        return false;
    }
    panic!(
        "this test acts as a second, unprivileged user and needs root to become it; run the suite as root \
         (as CI does), or set SONDE_SKIP_SECOND_USER_TESTS=1 to leave it out knowingly"
    );
}

/// A scratch directory under the system's temporary directory that `nobody` can use too.
fn shared_scratch() -> tempfile::TempDir {
    let dir = tempfile::Builder::new().prefix("sonde-sec-").tempdir_in(std::env::temp_dir()).unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    dir
}

/// `command args` as `nobody` (no supplementary groups).
fn as_nobody(program: &str, args: &[&OsString]) -> Command {
    let mut command = Command::new("setpriv");
    command
        .args(["--reuid", NOBODY, "--regid", NOBODY, "--clear-groups", "--", program])
        .args(args)
        .stdin(Stdio::null())
        .current_dir("/");
    command
}

/// A Python 3 that `nobody` can run: the first on `PATH` (then the system's) that answers as
/// `nobody` — a user's own installation, e.g. under `/root`, is out of its reach.
fn nobody_python() -> &'static str {
    static PYTHON: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    PYTHON.get_or_init(|| {
        let path = std::env::var_os("PATH").unwrap_or_default();
        let candidates = std::env::split_paths(&path)
            .map(|d| d.join("python3"))
            .chain(["/usr/bin/python3".into(), "/usr/local/bin/python3".into()]);
        for candidate in candidates.filter(|c| c.is_file()) {
            let candidate = candidate.to_string_lossy().into_owned();
            let answers = as_nobody(&candidate, &[&"-c".into(), &"pass".into()])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if answers {
                return candidate;
            }
        }
        panic!("no python3 that the user nobody can run (the squatter is a Python script)");
    })
}

/// Runs the squatter script as `nobody` (`connect SOCKET LOG` or `listen SOCKET LOG STOP`).
fn squatter(args: &[&Path]) -> Command {
    let mut all: Vec<OsString> = vec!["-c".into(), SQUATTER.into()];
    all.extend(args.iter().map(|a| a.as_os_str().to_owned()));
    as_nobody(nobody_python(), &all.iter().collect::<Vec<_>>())
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

#[test]
fn the_socket_directory_is_private_whatever_the_umask() {
    // The program (a shell) prints the mode and owner of the directory holding the agent's
    // socket, while `sonde record` runs it; sonde itself starts under each umask.
    let uid = rustix::process::geteuid().as_raw().to_string();
    for umask in ["000", "002", "022", "077"] {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("x.sonde");
        let probe = r#"stat -c %a:%u "$(dirname "$SONDE_SOCKET")""#;
        let script = format!("umask {umask}; exec \"$0\" record -q -o \"$1\" -- sh -c '{probe}'");
        let out = run("sh", &["-c".into(), script.into(), sonde().into(), file.into()]);
        assert_eq!(
            out.stdout_str().trim(),
            format!("700:{uid}"),
            "umask {umask}: the socket directory is not private:\n{}",
            out.describe()
        );
    }
}

#[test]
fn another_user_can_neither_reach_nor_talk_to_the_controller() {
    if !second_user_available() {
        return;
    }
    let scratch = shared_scratch();
    let s = scratch.path();
    let (socket_file, go, profile) = (s.join("socket"), s.join("go"), s.join("p.sonde"));
    // The program tells where the socket is, waits for the test, then runs a real .NET program.
    let script = r#"echo "$SONDE_SOCKET" > "$1"; while [ ! -e "$2" ]; do sleep 0.02; done; exec "$3" "$4""#;
    let mut args = record_args(&profile, &[], &["sh".into(), "-c".into(), script.into(), "sh".into()]);
    args.extend([socket_file.clone().into(), go.clone().into(), dotnet().into(), app("Calls").into()]);
    let recording = Running::spawn(sonde(), &args);
    let socket = PathBuf::from(wait_for_line_in(&socket_file, "the program to name its socket"));

    // 1. The directory keeps the other user out.
    let log = s.join("connect-1.log");
    assert!(squatter(&[Path::new("connect"), &socket, &log]).status().unwrap().success());
    assert_eq!(read(&log).trim(), "connect failed: Permission denied", "the socket is reachable by another user");

    // 2. Even through a hole in the directory (opened here on purpose), the controller hangs up
    //    on a peer of another user without reading a byte.
    let dir = socket.parent().unwrap();
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o777)).unwrap();
    let log = s.join("connect-2.log");
    assert!(squatter(&[Path::new("connect"), &socket, &log]).status().unwrap().success());
    assert_eq!(read(&log).trim(), "closed by the listener", "the controller kept another user's connection");
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).unwrap();

    // 3. The recording itself is unharmed.
    std::fs::write(&go, b"").unwrap();
    let out = recording.wait(DEADLINE);
    assert_eq!(out.code(), 0, "{}", out.describe());
    assert!(
        out.stderr_str()
            .contains("refused a connection to the agent socket: the other end of the socket runs as uid 65534"),
        "no word of the refused connection:\n{}",
        out.describe()
    );
    let report = report_json(&profile);
    Runtime::CoreClr.assert_recorded_on(&report);
}

/// The variables a profiled program hands down, as `env` printed them.
fn profiler_environment(env_dump: &str) -> Vec<(String, String)> {
    env_dump
        .lines()
        .filter_map(|l| l.split_once('='))
        .filter(|(k, _)| {
            k.starts_with("SONDE_") || k.starts_with("CORECLR_") || *k == "LD_LIBRARY_PATH" || *k == "MONO_ENV_OPTIONS"
        })
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn a_process_started_after_the_recording_runs_unprofiled_whoever_took_the_socket() {
    if !second_user_available() {
        return;
    }
    let scratch = shared_scratch();
    let s = scratch.path();
    // A program whose only act is to leave its environment behind — what a daemon it started
    // would carry on with after `sonde` exits. In the temporary directory, as without
    // $XDG_RUNTIME_DIR (a path another user could then take).
    let env_file = s.join("env");
    let mut args = record_args(&s.join("p.sonde"), &["-q"], &["sh".into(), "-c".into(), r#"env > "$1""#.into()]);
    args.extend(["sh".into(), env_file.clone().into()]);
    let mut command = Command::new(sonde());
    command.args(&args).env_remove("XDG_RUNTIME_DIR").stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
    command.status().unwrap();
    let inherited = profiler_environment(&read(&env_file));
    let var = |name: &str| {
        inherited.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()).unwrap_or_else(|| panic!("no {name}"))
    };
    let socket = PathBuf::from(var("SONDE_SOCKET"));
    let session_dir = socket.parent().unwrap().to_path_buf();
    assert!(!session_dir.exists(), "the session's directory outlived the recording");

    // Nothing the dynamic loader is pointed at can be filled by the other user, now or later.
    for dir in var("LD_LIBRARY_PATH").split(':').filter(|d| Path::new(d).join("libmono-profiler-sonde.so").exists()) {
        assert!(!Path::new(dir).starts_with(&session_dir), "Mono's module lives in the session's directory: {dir}");
        let probe: OsString = Path::new(dir).join("squatted.so").into();
        let wrote = as_nobody("sh", &[&"-c".into(), &r#": > "$1""#.into(), &"sh".into(), &probe])
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert!(!wrote.success(), "another user can write {dir}, where Mono looks for Sonde's module");
    }

    // The other user takes the socket's old path and listens there.
    let (log, stop) = (s.join("squatter.log"), s.join("stop"));
    let mut listener = squatter(&[Path::new("listen"), &socket, &log, &stop]).spawn().unwrap();
    wait_until("the squatter to listen", || {
        assert!(listener.try_wait().unwrap().is_none(), "the squatter could not listen at {}", socket.display());
        std::fs::read_to_string(&log).unwrap_or_default().contains("listening")
    });

    // Late .NET processes of both runtimes with that environment: unharmed, unprofiled, silent.
    for rt in [Runtime::CoreClr, Runtime::Mono] {
        let alone = rt.run_app("Calls", &[]);
        let command = rt.app_command("Calls", &[]);
        let late = Command::new(&command[0]).args(&command[1..]).envs(inherited.iter().cloned()).output().unwrap();
        assert_eq!(late.status.code(), Some(0), "{rt:?}: {}", String::from_utf8_lossy(&late.stderr));
        assert_eq!(String::from_utf8_lossy(&late.stdout), alone.stdout_str(), "{rt:?}: the output changed");
        assert!(late.stderr.is_empty(), "{rt:?} said: {}", String::from_utf8_lossy(&late.stderr));
    }
    std::fs::write(&stop, b"").unwrap();
    assert!(listener.wait().unwrap().success());
    assert_eq!(read(&log).trim(), "listening", "a late process talked to another user's socket");
}

#[test]
fn an_agent_library_others_can_write_is_not_loaded() {
    let home = tempfile::tempdir().unwrap();
    let open = home.path().join("open");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    let agent = open.join("libsonde_agent.so");
    std::fs::copy(sonde().with_file_name("libsonde_agent.so"), &agent).unwrap();
    let profile = home.path().join("p.sonde");
    let out = Running::spawn_with_env(
        sonde(),
        &record_args(&profile, &[], &app_command("Calls", &[])),
        &[("SONDE_AGENT", agent.clone().into())],
    )
    .wait(DEADLINE);
    assert_eq!(out.code(), 2, "{}", out.describe());
    assert!(out.stdout.is_empty(), "the program ran:\n{}", out.describe());
    let stderr = out.stderr_str();
    assert_eq!(stderr.lines().count(), 1, "{}", out.describe());
    assert!(stderr.starts_with("sonde: refusing to load the agent"), "{}", out.describe());
    assert!(stderr.contains("other users can write it"), "{}", out.describe());
    assert!(!profile.exists());
}

/// Hostile.exe names a type and a method with a window-title OSC sequence, a screen-clearing CSI
/// sequence, a C1 control and a right-to-left override, and spends its time there.
fn names_cannot_drive_the_terminal(rt: Runtime) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("h.sonde");
    let out = rt.record_app(&file, &["--mode", "sampling"], "Hostile", &[]);
    assert_eq!(out.code(), 0, "{}", out.describe());
    let report = report_text(&file);
    assert_eq!(report.code(), 0, "{}", report.describe());
    for (what, text) in [("the record summary", out.stderr_str()), ("the text report", report.stdout_str())] {
        let raw: Vec<char> =
            text.chars().filter(|&c| c.is_control() && c != '\n' || ('\u{202A}'..='\u{202E}').contains(&c)).collect();
        assert!(raw.is_empty(), "{rt:?}: {what} prints {raw:?} raw:\n{text}");
        assert!(
            text.contains(r"Spin\u{1b}]0;pwned\u{7}\u{1b}[2J\u{9b}31m\u{202e}gnp.exe"),
            "{rt:?}: {what} does not show the hostile method, escaped:\n{text}"
        );
    }
}

on_both_runtimes!(names_cannot_drive_the_terminal);

/// Another user made the directory where the attach keeps the agent's copy (`sonde-agent-UID`
/// in the process's temporary directory) before the first attach, to have the process load a
/// library of theirs: the attach is refused in one line, and nothing is loaded into the process.
#[test]
fn an_agent_directory_another_user_made_is_not_used() {
    if !second_user_available() {
        return;
    }
    let tmp = shared_scratch();
    let stop = tmp.path().join("stop");
    let service = start_service(&dotnet(), &stop, &[("TMPDIR", tmp.path().into())]);
    let pid = service.pid();
    let user = rustix::process::geteuid().as_raw();
    let squatted = tmp.path().join(format!("sonde-agent-{user}"));
    let made = as_nobody("mkdir", &[&squatted.clone().into_os_string()]).status().unwrap();
    assert!(made.success(), "nobody could not make {}", squatted.display());
    let file = tmp.path().join("p.sonde");
    let args = ["record", "--pid", &pid.to_string(), "--duration", "1", "-o"];
    let mut args: Vec<OsString> = args.iter().map(OsString::from).collect();
    args.push(file.clone().into());
    let out = sonde_cmd(&args);
    assert_eq!(out.code(), 2, "{}", out.describe());
    let stderr = out.stderr_str();
    assert_eq!(stderr.lines().count(), 1, "{}", out.describe());
    assert!(stderr.contains("sonde-agent-") && stderr.contains("belongs to uid"), "{}", out.describe());
    assert!(!file.exists());
    let maps = read(Path::new(&format!("/proc/{pid}/maps")));
    assert!(!maps.contains("libsonde_agent"), "an agent was loaded:\n{maps}");
    stop_service(service, &stop);
}
