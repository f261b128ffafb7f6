//! Renderers: every output format of a Sonde report, behind one small trait.
//!
//! # Design constraints
//!
//! A renderer sees only the runtime-independent [`Profile`] model and streams to a
//! [`Write`](std::io::Write): no format builds its whole output in memory, because a traced
//! profile can have millions of nodes. All aggregation (recursion-aware totals, callers and
//! callees) comes from [`sonde_profile::analysis`], so every format reports the same numbers.
//! A profile that fails [`Profile::validate`] is refused with an `InvalidData` error, never a
//! panic. No `unsafe` code.
//!
//! One module stands apart from the trait: [`heap_html`] draws a heap snapshot's report and a heap
//! diff (`sonde-heap`'s `sonde.heap/1` and `sonde.heapdiff/1` structs) as the HTML page.
//!
//! Every format is linear in the number of nodes, however deep the tree. Folded stacks, the
//! flame graph and pprof write each stack out in full, which grows with the square of the depth,
//! so they and speedscope cut stacks at [`MAX_STACK_FRAMES`] frames, with one marker frame
//! `[… N frames cut]` carrying the weight of what was cut; the first three also refuse, with a
//! `FileTooLarge` error and before writing anything, a profile that would exceed their stated
//! limits ([`MAX_COLLAPSED_BYTES`], [`MAX_FLAMEGRAPH_STACK_BYTES`], [`MAX_PPROF_LOCATION_IDS`]).

#![forbid(unsafe_code)]

mod chrome;
mod cobertura;
mod collapsed;
mod diff;
mod flamegraph;
pub mod fmt;
pub mod heap_html;
mod html;
mod json;
mod lcov;
mod pprof;
mod speedscope;
mod stacks;
mod text;

use std::io;
use std::str::FromStr;

use sonde_profile::Profile;

pub use chrome::ChromeRenderer;
pub use cobertura::CoberturaRenderer;
pub use collapsed::{CollapsedRenderer, MAX_COLLAPSED_BYTES};
pub use diff::{DIFF_SCHEMA, DiffFormat, write_diff};
pub use flamegraph::{FlamegraphRenderer, MAX_FLAMEGRAPH_STACK_BYTES};
pub use html::HtmlRenderer;
pub use json::{JsonRenderer, SCHEMA};
pub use lcov::LcovRenderer;
pub use pprof::{MAX_PPROF_LOCATION_IDS, PprofRenderer, PprofSeries, has_series};
pub use speedscope::SpeedscopeRenderer;
pub use stacks::MAX_STACK_FRAMES;
pub use text::TextRenderer;
pub use text::lines::{MONO_DEBUG_HINT, mono_without_debug_mode, write as write_lines};

/// One output format.
pub trait Renderer {
    fn render(&self, profile: &Profile, out: &mut dyn io::Write) -> io::Result<()>;
}

/// The formats a user can ask for by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// Header, hot-methods table, hot path and call graph, for people.
    Text,
    /// The `sonde.report/1` JSON contract, for programs.
    Json,
    /// One self-contained interactive HTML page.
    Html,
    /// speedscope's file format (speedscope.app).
    Speedscope,
    /// gzip-compressed `profile.proto` (go tool pprof, Pyroscope).
    Pprof,
    /// Folded stacks, one `a;b;c N` line per stack.
    Collapsed,
    /// A flame graph as SVG.
    Flamegraph,
    /// The run's timeline in Chrome's trace event format (Perfetto, chrome://tracing).
    Chrome,
    /// Coverage mode's lines as an lcov tracefile (genhtml, CI services).
    Lcov,
    /// Coverage mode's lines as Cobertura XML (CI services).
    Cobertura,
}

impl Format {
    pub const ALL: [Format; 10] = [
        Format::Text,
        Format::Json,
        Format::Html,
        Format::Speedscope,
        Format::Pprof,
        Format::Collapsed,
        Format::Flamegraph,
        Format::Chrome,
        Format::Lcov,
        Format::Cobertura,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Format::Text => "text",
            Format::Json => "json",
            Format::Html => "html",
            Format::Speedscope => "speedscope",
            Format::Pprof => "pprof",
            Format::Collapsed => "collapsed",
            Format::Flamegraph => "flamegraph",
            Format::Chrome => "chrome",
            Format::Lcov => "lcov",
            Format::Cobertura => "cobertura",
        }
    }

    /// True for formats that are bytes rather than text (not for a terminal).
    pub fn is_binary(self) -> bool {
        matches!(self, Format::Pprof)
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A format name that is not one of [`Format::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown report format {0:?} (expected text, json, html, speedscope, pprof, collapsed, flamegraph, chrome, lcov or cobertura)"
)]
pub struct UnknownFormat(pub String);

impl FromStr for Format {
    type Err = UnknownFormat;

    fn from_str(s: &str) -> Result<Format, UnknownFormat> {
        Format::ALL.into_iter().find(|f| f.name().eq_ignore_ascii_case(s)).ok_or_else(|| UnknownFormat(s.to_owned()))
    }
}

/// `--format` (the `clap` feature): [`Format::ALL`], spelt as [`Format::name`] spells them.
#[cfg(feature = "clap")]
impl clap::ValueEnum for Format {
    fn value_variants<'a>() -> &'a [Self] {
        &Format::ALL
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        let help = match self {
            Format::Text => "Hot methods and a caller/callee report, for a terminal",
            Format::Json => "The `sonde.report/1` JSON contract",
            Format::Html => "One self-contained interactive page (flame graph, tables, call tree, callers/callees)",
            Format::Speedscope => "speedscope's JSON format (open in speedscope.app)",
            Format::Pprof => "gzip-compressed profile.proto (go tool pprof, Pyroscope)",
            Format::Collapsed => "Folded stacks (`a;b;c N`), for flamegraph.pl, inferno and friends",
            Format::Flamegraph => "A flame graph as SVG",
            Format::Chrome => {
                "The run's timeline (collections, module loads, compilations, throws) in Chrome's trace event \
                 format: Perfetto, chrome://tracing"
            }
            Format::Lcov => "Coverage mode's lines as an lcov tracefile (genhtml, CI services)",
            Format::Cobertura => "Coverage mode's lines as Cobertura XML (CI services)",
        };
        Some(clap::builder::PossibleValue::new(self.name()).help(help))
    }
}

/// The renderer for `format`.
pub fn renderer(format: Format) -> Box<dyn Renderer> {
    match format {
        Format::Text => Box::new(TextRenderer),
        Format::Json => Box::new(JsonRenderer),
        Format::Html => Box::new(HtmlRenderer::default()),
        Format::Speedscope => Box::new(SpeedscopeRenderer),
        Format::Pprof => Box::new(PprofRenderer::default()),
        Format::Collapsed => Box::new(CollapsedRenderer),
        Format::Flamegraph => Box::new(FlamegraphRenderer),
        Format::Chrome => Box::new(ChromeRenderer),
        Format::Lcov => Box::new(LcovRenderer),
        Format::Cobertura => Box::new(CoberturaRenderer),
    }
}

/// Renderers index the model's arrays by id, so an inconsistent profile is refused up front.
fn check(profile: &Profile) -> io::Result<()> {
    profile.validate().map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("invalid profile: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_parse_by_name() {
        for f in Format::ALL {
            assert_eq!(f.name().parse::<Format>(), Ok(f));
            assert_eq!(f.to_string(), f.name());
        }
        assert_eq!("JSON".parse::<Format>(), Ok(Format::Json));
        let err = "svg".parse::<Format>().unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown report format \"svg\" (expected text, json, html, speedscope, pprof, collapsed, flamegraph, chrome, lcov or cobertura)"
        );
    }

    /// `--format` offers every format, in `Format::ALL`'s order, by its name (and, unlike
    /// `FromStr`, only as written).
    #[cfg(feature = "clap")]
    #[test]
    fn the_command_line_takes_formats_by_name() {
        use clap::ValueEnum;
        let names: Vec<String> = Format::value_variants()
            .iter()
            .filter_map(|f| Some(f.to_possible_value()?.get_name().to_string()))
            .collect();
        assert_eq!(names, Format::ALL.map(|f| f.name().to_string()));
        assert_eq!(<Format as ValueEnum>::from_str("lcov", false), Ok(Format::Lcov));
        assert!(<Format as ValueEnum>::from_str("JSON", false).is_err());
    }
}
