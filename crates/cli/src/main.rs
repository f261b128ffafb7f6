//! `sonde`: records .NET programs with Sonde's agent and renders their profiles.
//!
//! Only this file exits the process; everything else returns errors, printed here on one line.
#![forbid(unsafe_code)]

mod attached;
mod cli;
mod control;
mod daemon;
mod dump;
mod heap;
mod options;
mod output;
mod push;
mod record;
mod report;
mod summary;
mod top;

use clap::Parser;
use cli::{Cli, Command};
use sonde_protocol::control::ControlCommand;

/// `eprintln!` that never panics: stderr may be a terminal that was closed (SIGHUP) or a pipe
/// nobody reads any more, and a profile must still be written after that.
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

fn main() {
    let cli = Cli::parse();
    let verbosity = options::Verbosity { quiet: cli.quiet, verbose: cli.verbose };
    let result = match cli.command {
        Command::Record(args) => record::record(args, &verbosity),
        Command::Report(args) => report::report(args).map(|()| 0),
        Command::Diff(args) => report::diff(args).map(|()| 0),
        Command::Top(args) => top::top(args),
        Command::Dump(args) => dump::dump(args),
        Command::Heap(args) => heap::heap(args),
        Command::Daemon(args) => daemon::daemon(args),
        Command::Sessions => control::sessions(),
        Command::Snapshot(args) => control::take_snapshot(args),
        Command::Stop(args) => control::command(args, ControlCommand::Stop),
        Command::Pause(args) => control::command(args, ControlCommand::Pause),
        Command::Resume(args) => control::command(args, ControlCommand::Resume),
    };
    match result {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            // Errors may quote a profile's contents or a program's arguments: escaped, as all output is.
            say!("sonde: {}", sonde_render::fmt::Clean(&chain(&e)));
            std::process::exit(2);
        }
    }
}

/// `outer: inner: innermost`, each cause once.
pub(crate) fn chain(e: &anyhow::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if !parts.last().is_some_and(|last| last.contains(&text)) {
            parts.push(text);
        }
    }
    parts.join(": ")
}
