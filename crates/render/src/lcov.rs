//! `--format lcov`: coverage mode's lines and methods as an lcov tracefile (what `genhtml`, CI
//! services and editors read): per source file an `SF` record with each method (`FN`, `FNDA`)
//! and each line (`DA`) and the totals (`FNF`/`FNH`, `LF`/`LH`). A profile without line coverage
//! gives a tracefile with no records. Names and paths come from the profiled program: a control
//! character in them (which would end an lcov line early) is written as `?`.

use std::collections::BTreeMap;
use std::io::{self, BufWriter, Write};

use sonde_profile::Profile;

use crate::Renderer;

/// Renders an lcov tracefile.
#[derive(Debug, Clone, Copy, Default)]
pub struct LcovRenderer;

/// `text` on one lcov line.
fn one_line(text: &str) -> String {
    text.chars().map(|c| if c.is_control() { '?' } else { c }).collect()
}

/// Coverage mode's methods grouped by source file: (method id, name, calls, lines).
type ByFile<'a> = BTreeMap<&'a str, Vec<(u32, std::borrow::Cow<'a, str>, u64, Vec<(u32, u64)>)>>;

/// The covered methods that have source lines, by file.
fn by_file(profile: &Profile) -> ByFile<'_> {
    let mut files: ByFile<'_> = BTreeMap::new();
    for m in profile.method_coverage() {
        let Some(file) = m.file else { continue };
        files.entry(file).or_default().push((m.method, profile.display_name(m.method), m.calls, m.lines));
    }
    files
}

impl Renderer for LcovRenderer {
    fn render(&self, profile: &Profile, out: &mut dyn Write) -> io::Result<()> {
        crate::check(profile)?;
        let mut out = BufWriter::new(out);
        // A test name is letters, digits and underscores.
        writeln!(out, "TN:sonde")?;
        for (file, methods) in by_file(profile) {
            writeln!(out, "SF:{}", one_line(file))?;
            let mut lines: BTreeMap<u32, u64> = BTreeMap::new();
            for (_, name, _, method_lines) in &methods {
                let first = method_lines.first().map_or(0, |l| l.0);
                writeln!(out, "FN:{first},{}", one_line(name))?;
                for &(line, hits) in method_lines {
                    let h = lines.entry(line).or_default();
                    *h = (*h).max(hits);
                }
            }
            for (_, name, calls, _) in &methods {
                writeln!(out, "FNDA:{calls},{}", one_line(name))?;
            }
            writeln!(out, "FNF:{}", methods.len())?;
            writeln!(out, "FNH:{}", methods.iter().filter(|m| m.2 > 0).count())?;
            for (line, hits) in &lines {
                writeln!(out, "DA:{line},{hits}")?;
            }
            writeln!(out, "LF:{}", lines.len())?;
            writeln!(out, "LH:{}", lines.values().filter(|&&h| h > 0).count())?;
            writeln!(out, "end_of_record")?;
        }
        out.flush()
    }
}
