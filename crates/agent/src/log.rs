//! The agent's log: a file named by `SONDE_LOG`, or nothing. Never the target's stdout/stderr.

use std::io::Write;
use std::sync::Mutex;

static FILE: Mutex<Option<std::fs::File>> = Mutex::new(None);

pub fn open(path: &std::path::Path) {
    if let Ok(file) = std::fs::OpenOptions::new().create(true).append(true).open(path) {
        *FILE.lock().unwrap_or_else(|e| e.into_inner()) = Some(file);
    }
}

pub fn write(args: std::fmt::Arguments) {
    if let Some(file) = FILE.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
        let _ = writeln!(file, "sonde-agent[{}]: {args}", std::process::id());
    }
}

macro_rules! log {
    ($($arg:tt)*) => { $crate::log::write(format_args!($($arg)*)) };
}
pub(crate) use log;
