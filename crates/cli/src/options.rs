//! How the parsed command line becomes the library's settings: a [`sonde_client::Options`] (the
//! agent's configuration is made there, in one place) and how much `sonde` itself says.

use crate::cli::RecordArgs;
use sonde_client::Options;
use sonde_profile::{AllocSampling, Mode};
use sonde_protocol::MethodFilter;
use sonde_protocol::config::EventKinds;

pub struct Verbosity {
    pub quiet: bool,
    pub verbose: u8,
}

/// What `sonde record` asks of the agent, launched or attached (`--pid`; the agent's socket is
/// filled in by the recording).
pub fn record(args: &RecordArgs, v: &Verbosity) -> Options {
    let mut options = match args.mode() {
        Mode::Sampling => Options::sampling_with(args.rate, args.clock),
        mode => Options::new(mode, args.interval_us),
    };
    options.verbose = v.verbose > 0;
    let exact = args.alloc_sampling == AllocSampling::Exact;
    let config = &mut options.config;
    config.timing = args.timing;
    config.clock = args.clock;
    config.filter = MethodFilter { include: args.include.clone(), exclude: args.exclude.clone(), all: args.all };
    config.log = args.agent_log.clone();
    // `SONDE_MONO_CATCHES=1` in sonde's own environment, what turned them on before `--catches`
    // existed, still does (`Options::new` reads it).
    config.mono_catches |= args.catches;
    config.events = EventKinds { alloc: args.events.alloc || exact, ..args.events };
    config.alloc_exact = exact;
    config.async_stacks = args.async_stacks;
    config.native_hooks = args.native_hooks;
    config.call_trace = args.call_trace.unwrap_or(0);
    config.inject = args.inject.clone();
    options
}
