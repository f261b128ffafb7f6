//! Facts about the profiled process the agent needs in several places: its command line, the
//! file the agent itself was loaded from, and whether this is the process that opened the session.
//!
//! A child the program forks inherits the socket, the agent's threads' locks in whatever state
//! they were (its threads are not), and the runtime's exit callbacks: it must stay silent
//! ([`forked_child`]), or two processes would write one stream.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering::Relaxed};

/// The process that opened the session (0: none yet).
static OWNER: AtomicU32 = AtomicU32::new(0);
/// Set in a child by the fork handler (see [`claim_session`]).
static FORKED: AtomicBool = AtomicBool::new(false);

/// The session was opened by this process. From now on a child forked by the program switches
/// the agent off the moment it starts (a `pthread_atfork` child handler): the agent's locks may
/// be held by its threads, which do not exist in the child (a Mono child compiling the `exit` it
/// calls once hung forever on the method table's lock, which the parent's drain thread held).
pub fn claim_session() {
    static REGISTERED: std::sync::Once = std::sync::Once::new();
    OWNER.store(std::process::id(), Relaxed);
    extern "C" fn in_child() {
        FORKED.store(true, Relaxed);
        crate::base::running::switch_off_quietly();
    }
    REGISTERED.call_once(|| {
        // SAFETY: registers a function of this library (never unloaded) that only stores atomics.
        unsafe { libc::pthread_atfork(None, None, Some(in_child)) };
    });
}

/// True in a child forked by the profiled process (a copy of the agent whose session is its
/// parent's). Async-signal-safe. (A child made by a raw `clone` skips the fork handlers: the
/// process id tells it then.)
pub fn forked_child() -> bool {
    if FORKED.load(Relaxed) {
        return true;
    }
    let owner = OWNER.load(Relaxed);
    // SAFETY: getpid(2) has no preconditions (and is async-signal-safe).
    owner != 0 && owner != unsafe { libc::getpid() } as u32
}

/// Whether a managed method's assembly, loaded from `path`, is framework code
/// (`sonde_profile::origin`): what `--mode tracing` leaves out by default. The files the command
/// line names are read once.
pub fn is_framework(path: &str, assembly: &str) -> bool {
    static PROGRAMS: std::sync::LazyLock<Vec<String>> = std::sync::LazyLock::new(|| {
        let cwd = std::env::current_dir().unwrap_or_default();
        sonde_profile::origin::programs(&command_line(), &cwd)
    });
    sonde_profile::origin::is_framework(path, assembly, &PROGRAMS)
}

/// The process's own command line (`/proc/self/cmdline`), for the handshake.
pub fn command_line() -> Vec<String> {
    std::fs::read("/proc/self/cmdline")
        .map(|bytes| {
            bytes
                .split(|&b| b == 0)
                .filter(|s| !s.is_empty())
                .map(|s| String::from_utf8_lossy(s).into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// Opens `path` for writing as a file of this user's alone: created with mode 0600, never
/// through a symlink (a name that came through the environment may be someone else's link),
/// appended to or truncated.
pub fn open_private(path: &std::path::Path, append: bool) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut options = std::fs::OpenOptions::new();
    if append {
        options.append(true);
    } else {
        options.write(true).truncate(true);
    }
    options.create(true).mode(0o600).custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC).open(path)
}

/// The file this agent library was loaded from: the path the runtime gave the dynamic loader
/// (`dladdr`, absolute), else the mapping of `/proc/self/maps` that holds this very function's
/// code. `dladdr` first: `/proc/self/maps` of a starting .NET process is a few hundred lines the
/// kernel formats on the program's start path.
pub fn own_library() -> Option<std::path::PathBuf> {
    let here = own_library as fn() -> Option<std::path::PathBuf> as usize;
    loaded_from(here).or_else(|| mapped_from(here))
}

/// The path the dynamic loader opened the library holding `address` by, when it is an absolute
/// one and not the main program's (which the loader names by `argv[0]`).
fn loaded_from(address: usize) -> Option<std::path::PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    // SAFETY: dladdr only reads the loader's tables and fills `info`; getauxval only reads the
    // auxiliary vector.
    let (info, main) = unsafe {
        let mut info: libc::Dl_info = std::mem::zeroed();
        let mut main: libc::Dl_info = std::mem::zeroed();
        let found = libc::dladdr(address as *const libc::c_void, &mut info) != 0 && !info.dli_fname.is_null();
        let program = libc::getauxval(libc::AT_PHDR) as *const libc::c_void;
        (found.then_some(info)?, (libc::dladdr(program, &mut main) != 0).then_some(main.dli_fbase))
    };
    if main == Some(info.dli_fbase) {
        return None;
    }
    // SAFETY: a NUL-terminated string of a loaded object (checked non-null above), copied at once.
    let name = unsafe { std::ffi::CStr::from_ptr(info.dli_fname) };
    let path = std::path::Path::new(std::ffi::OsStr::from_bytes(name.to_bytes()));
    path.is_absolute().then(|| path.to_path_buf())
}

/// The file mapped at `address`, from `/proc/self/maps`.
fn mapped_from(here: usize) -> Option<std::path::PathBuf> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    maps.lines().find_map(|line| {
        let mut fields = line.split_whitespace();
        let (start, end) = fields.next()?.split_once('-')?;
        let (start, end) = (usize::from_str_radix(start, 16).ok()?, usize::from_str_radix(end, 16).ok()?);
        let path = fields.nth(4)?;
        (start <= here && here < end && path.starts_with('/')).then(|| path.into())
    })
}

/// Every file this process has mapped executable so far (`/proc/self/maps`, read at each call;
/// one that was unmapped since stays listed), sorted. For tracing without `--native-hooks`: the
/// controller looks among them for libraries built with `-finstrument-functions`
/// (docs/NATIVE.md). A snapshot's work, never a hot path's.
pub fn executable_files() -> Vec<String> {
    static SEEN: std::sync::Mutex<std::collections::BTreeSet<String>> =
        std::sync::Mutex::new(std::collections::BTreeSet::new());
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
    for line in maps.lines() {
        let mut fields = line.split_whitespace();
        let executable = fields.nth(1).is_some_and(|perms| perms.contains('x'));
        // The path is the rest of the line (it may hold spaces); a file deleted since is skipped.
        let path = line.find(" /").map(|at| &line[at + 1..]);
        if let Some(path) = path.filter(|p| executable && !p.ends_with(" (deleted)"))
            && !seen.contains(path)
        {
            seen.insert(path.to_string());
        }
    }
    seen.iter().cloned().collect()
}

/// Keeps this library mapped for the rest of the process (`RTLD_NODELETE`), whatever the runtime
/// does with it: after a detach CoreCLR `dlclose`s its profiler, but a signal handler of ours may
/// still be running, a thread-local destructor of ours is still registered on every thread that
/// was sampled, and an `atexit` handler too. An attached agent is loaded from a copy of its own
/// (a path per attach, `sonde record --pid`), so a later attach gets fresh state; this one stays
/// inert.
pub fn stay_loaded() -> bool {
    let Some(path) = own_library() else { return false };
    let Ok(path) = std::ffi::CString::new(path.into_os_string().into_encoded_bytes()) else { return false };
    // SAFETY: dlopen(3) with RTLD_NOLOAD only looks up a library that is already loaded (this
    // one) and, with RTLD_NODELETE, marks it never to be unloaded; the extra reference it takes
    // is never dropped, on purpose.
    !unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD | libc::RTLD_NODELETE) }.is_null()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_library_holding_this_code_is_found() {
        // In a test, "the library" is the test executable itself: the main program, which the
        // loader names by argv[0], so found in the mappings.
        let found = super::own_library().unwrap();
        assert_eq!(found, std::env::current_exe().unwrap());
        let here = super::own_library as fn() -> Option<std::path::PathBuf> as usize;
        assert_eq!(super::loaded_from(here), None);
        // A library: by the path the loader opened it by.
        let libc = super::loaded_from(libc::getpid as *const () as usize).expect("libc, by its path");
        assert!(libc.is_absolute() && libc.to_string_lossy().contains("libc.so"), "{}", libc.display());
    }

    #[test]
    fn executable_files_include_this_program_and_libc() {
        let files = super::executable_files();
        let exe = std::env::current_exe().unwrap();
        assert!(files.iter().any(|f| std::path::Path::new(f) == exe), "{files:?}");
        assert!(files.iter().any(|f| f.contains("/libc.so")), "{files:?}");
        assert!(files.iter().all(|f| f.starts_with('/')), "{files:?}");
    }
}
