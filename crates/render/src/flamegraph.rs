//! `--format flamegraph`: an interactive SVG flame graph (click to zoom, Ctrl-F to search) drawn
//! by the `inferno` crate from the same folded stacks as `--format collapsed`, cut the same way
//! at [`MAX_STACK_FRAMES`](crate::stacks::MAX_STACK_FRAMES) frames with a `[… N frames cut]`
//! marker frame.
//!
//! inferno needs every line in memory to sort and merge them, so unlike the other formats this
//! one holds the folded stacks (one line per distinct stack, merged across threads, in one
//! string); the SVG it writes is streamed. Those lines are at most
//! [`MAX_FLAMEGRAPH_STACK_BYTES`]: a profile that would need more is refused with an error
//! before inferno starts. (Without the depth cut, a recursion 50,000 deep needed over 24 GB.)
//! Colours come from a hash of each frame name (inferno's `deterministic` option) rather than
//! from inferno's random generator, so the same profile always gives the same bytes. inferno
//! adds counts up in a `u64`; on an absurd profile whose weights would overflow that, all
//! counts are scaled down by the same factor (widths are unchanged).

use std::io::{self, Write};

use inferno::flamegraph::{self, Options};
use sonde_profile::Profile;

use crate::Renderer;
use crate::collapsed::FoldedStacks;
use crate::fmt::{Clean, command_line, xml_escape};
use crate::stacks::{too_large, weight_unit};

/// The most bytes of folded stacks handed to inferno (256 MiB). inferno keeps them, an index of
/// the lines and a record per merged frame, a few times this size in all; a flame graph of
/// that many stacks is far past what a browser can draw anyway.
pub const MAX_FLAMEGRAPH_STACK_BYTES: u64 = 256 << 20;

/// Renders an SVG flame graph.
#[derive(Debug, Clone, Copy, Default)]
pub struct FlamegraphRenderer;

impl Renderer for FlamegraphRenderer {
    fn render(&self, profile: &Profile, out: &mut dyn Write) -> io::Result<()> {
        crate::check(profile)?;
        let folded = FoldedStacks::new(profile);
        let len = folded.output_len();
        if len > MAX_FLAMEGRAPH_STACK_BYTES {
            return Err(too_large("flamegraph", len, MAX_FLAMEGRAPH_STACK_BYTES, "bytes of folded stacks"));
        }

        let run = &profile.run;
        let title = format!("Sonde: {}", Clean(&command_line(&run.command)));
        if len == 0 {
            // inferno refuses input without counts (an error plus an "ERROR" picture); an empty
            // profile is not an error, so it gets a picture that says what happened.
            return write_empty(out, &title);
        }

        // All lines in one string: no allocation per line.
        let divisor = (folded.total_weight() / u128::from(u64::MAX) + 1) as u64;
        let mut text = String::with_capacity(len as usize);
        let mut ends: Vec<usize> = Vec::new();
        folded.for_each(|stack, w| {
            text.push_str(stack);
            text.push(' ');
            text.push_str(&(w / divisor).to_string());
            ends.push(text.len());
            Ok(())
        })?;
        drop(folded);
        let lines = ends.iter().scan(0, |start, &end| {
            let line = &text[*start..end];
            *start = end;
            Some(line)
        });

        let mut options = Options::default();
        options.title = title;
        options.subtitle = Some(format!(
            "{} profile of pid {} on {} {}; widths are {}",
            run.mode.as_str(),
            run.pid,
            run.runtime.kind,
            run.runtime.version,
            match run.mode {
                sonde_profile::Mode::Tracing | sonde_profile::Mode::Coverage => "time",
                sonde_profile::Mode::Sampling => "samples",
            },
        ));
        options.count_name = weight_unit(run.mode).to_owned();
        options.deterministic = true;
        flamegraph::from_lines(&mut options, lines, out)
    }
}

/// A small SVG in place of a flame graph with nothing to draw.
fn write_empty(out: &mut dyn Write, title: &str) -> io::Result<()> {
    write!(
        out,
        concat!(
            r#"<?xml version="1.0" standalone="no"?>"#,
            "\n",
            r#"<svg version="1.1" width="1200" height="90" viewBox="0 0 1200 90" xmlns="http://www.w3.org/2000/svg">"#,
            r##"<rect x="0" y="0" width="100%" height="100%" fill="#eeeeee"/>"##,
            r#"<text x="600" y="30" text-anchor="middle" font-family="Verdana" font-size="17">{}</text>"#,
            r#"<text x="600" y="65" text-anchor="middle" font-family="Verdana" font-size="12">"#,
            "No stack has any weight in this profile: nothing to draw.</text></svg>\n",
        ),
        xml_escape(title),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles_are_escaped() {
        assert_eq!(xml_escape("a<b & \"c\" 'd'>\u{1}"), "a&lt;b &amp; &quot;c&quot; &apos;d&apos;&gt;?");
    }
}
