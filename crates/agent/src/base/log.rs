//! The agent's log: a file named by `SONDE_LOG`, or nothing. Never the target's stdout/stderr.

use std::io::Write;
use std::sync::Mutex;

static FILE: Mutex<Option<std::fs::File>> = Mutex::new(None);

/// Opens (or creates, mode 0600) the log. Never through a symlink, and only a file of the
/// user's: the variable naming it outlives the recording, and a root process must not append to
/// whatever another user put at that path.
pub fn open(path: &std::path::Path) {
    use std::os::unix::fs::MetadataExt;
    let Ok(file) = crate::base::process::open_private(path, true) else { return };
    let ours = file.metadata().is_ok_and(|m| m.is_file() && sonde_protocol::trust::trusted_uid(m.uid()));
    if ours {
        *FILE.lock().unwrap_or_else(|e| e.into_inner()) = Some(file);
    }
}

pub fn write(args: std::fmt::Arguments) {
    if let Some(file) = FILE.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
        let _ = writeln!(file, "sonde-agent[{}]: {args}", std::process::id());
    }
}

/// Makes the agent's panics quiet: the message goes to the log, never to the program's stderr
/// (the default hook's). Every panic is caught where it happens (`running::guarded`, the
/// runtime wrappers, `running::spawn_thread`) and switches profiling off; the controller says so.
/// The hook is the agent's own: a `cdylib` links its own copy of std.
pub fn install_panic_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        std::panic::set_hook(Box::new(|info| {
            // `try_lock`: the panic may have happened while this thread held the log.
            if let Ok(mut file) = FILE.try_lock()
                && let Some(file) = file.as_mut()
            {
                let _ = writeln!(file, "sonde-agent[{}]: panic: {info}", std::process::id());
            }
        }));
    });
}

macro_rules! log {
    ($($arg:tt)*) => { $crate::base::log::write(format_args!($($arg)*)) };
}
pub(crate) use log;
