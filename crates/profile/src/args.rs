//! The model's enums as command-line values (the `clap` feature): the CLI takes `--mode`,
//! `--timing`, `--clock` and `--alloc-sampling` as these types, spelt as [`Mode::as_str`] and the
//! like spell them, so the names a user types are the names a report prints.
//!
//! Written by hand rather than derived: the values are offered in the order a user meets them
//! (sampling, the default, first), which is not the variants' order — that order is the
//! encoding of the profile file and the agent protocol, and stays.

use clap::ValueEnum;
use clap::builder::PossibleValue;

use crate::model::{AllocSampling, Mode, SampleClock, Timing};

impl ValueEnum for Mode {
    fn value_variants<'a>() -> &'a [Self] {
        &[Mode::Sampling, Mode::Tracing, Mode::Coverage]
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        let help = match self {
            Mode::Sampling => "Periodic stack samples of every thread: low overhead, no filters needed",
            Mode::Tracing => "Enter/leave hooks on every traced method: exact call counts",
            Mode::Coverage => {
                "Counters inserted into the program's code (CoreCLR, a program sonde starts): which methods, \
                 blocks and source lines ran, and how often (docs/COVERAGE.md)"
            }
        };
        Some(PossibleValue::new(self.as_str()).help(help))
    }
}

impl ValueEnum for Timing {
    fn value_variants<'a>() -> &'a [Self] {
        &[Timing::Exact, Timing::Sampled]
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        let help = match self {
            Timing::Exact => "Timestamps on every enter and leave, hook cost compensated",
            Timing::Sampled => {
                "No clock on the hot path: a sampler thread attributes time to each thread's current call"
            }
        };
        Some(PossibleValue::new(self.as_str()).help(help))
    }
}

impl ValueEnum for SampleClock {
    fn value_variants<'a>() -> &'a [Self] {
        &[SampleClock::Cpu, SampleClock::Wall]
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        let help = match self {
            SampleClock::Cpu => "Thread CPU time: a thread is sampled only while it runs",
            SampleClock::Wall => "Wall time: every thread, running or blocked",
        };
        Some(PossibleValue::new(self.as_str()).help(help))
    }
}

/// `--alloc-sampling`: how to count allocations when they are recorded; whether they are is
/// `--events`' business, so [`AllocSampling::Off`] is no value of it.
impl ValueEnum for AllocSampling {
    fn value_variants<'a>() -> &'a [Self] {
        &[AllocSampling::Sampled, AllocSampling::Exact]
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        match self {
            AllocSampling::Off => None,
            AllocSampling::Sampled | AllocSampling::Exact => Some(PossibleValue::new(self.as_str())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every value a user can type is what the model's `as_str` prints, and parses back.
    #[test]
    fn values_are_spelt_as_the_model_spells_them() {
        for mode in Mode::value_variants() {
            assert_eq!(Mode::from_str(mode.as_str(), false), Ok(*mode));
        }
        for timing in Timing::value_variants() {
            assert_eq!(Timing::from_str(timing.as_str(), false), Ok(*timing));
        }
        for clock in SampleClock::value_variants() {
            assert_eq!(SampleClock::from_str(clock.as_str(), false), Ok(*clock));
        }
        for how in AllocSampling::value_variants() {
            assert_eq!(AllocSampling::from_str(how.as_str(), false), Ok(*how));
        }
        assert!(AllocSampling::from_str("off", false).is_err());
        assert_eq!(Mode::value_variants().len(), 3);
    }
}
