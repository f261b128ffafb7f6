//! `--format cobertura`: coverage mode as Cobertura XML (coverage-04 DTD), what CI services
//! (GitLab, Azure DevOps, Jenkins) and coverlet's users read: one package per assembly, one class
//! per type and source file, each method with its lines, line rates throughout. Branch rates are 0:
//! Sonde counts blocks and lines, not branch outcomes. Names and paths from the program are XML
//! text (`fmt::xml_escape`).

use std::collections::BTreeMap;
use std::io::{self, BufWriter, Write};

use sonde_profile::Profile;

use crate::Renderer;
use crate::fmt::xml_escape;

/// Renders Cobertura XML.
#[derive(Debug, Clone, Copy, Default)]
pub struct CoberturaRenderer;

fn rate(covered: usize, valid: usize) -> String {
    if valid == 0 { "1".to_string() } else { format!("{:.4}", covered as f64 / valid as f64) }
}

/// Lines and how many ran, from `(line, hits)` lists (a line in several lists counts once, with
/// its most hits).
fn merged<'a>(lists: impl Iterator<Item = &'a [(u32, u64)]>) -> BTreeMap<u32, u64> {
    let mut lines = BTreeMap::new();
    for list in lists {
        for &(line, hits) in list {
            let h = lines.entry(line).or_default();
            *h = u64::max(*h, hits);
        }
    }
    lines
}

impl Renderer for CoberturaRenderer {
    fn render(&self, profile: &Profile, out: &mut dyn Write) -> io::Result<()> {
        crate::check(profile)?;
        // assembly → (type, file) → methods (name, signature, lines)
        type Methods<'a> = Vec<(&'a str, &'a str, Vec<(u32, u64)>)>;
        let mut packages: BTreeMap<&str, BTreeMap<(&str, &str), Methods<'_>>> = BTreeMap::new();
        for m in profile.method_coverage() {
            let Some(file) = m.file else { continue };
            let method = &profile.methods[m.method as usize];
            let (class, name) = method.name.rsplit_once('.').unwrap_or(("", &method.name));
            packages.entry(&method.assembly).or_default().entry((class, file)).or_default().push((
                name,
                &method.signature,
                m.lines,
            ));
        }
        let all = merged(packages.values().flat_map(|p| p.values()).flatten().map(|m| &m.2[..]));
        let covered = all.values().filter(|&&h| h > 0).count();
        let mut out = BufWriter::new(out);
        writeln!(out, "<?xml version=\"1.0\" ?>")?;
        writeln!(out, "<!DOCTYPE coverage SYSTEM \"http://cobertura.sourceforge.net/xml/coverage-04.dtd\">")?;
        writeln!(
            out,
            "<coverage line-rate=\"{}\" branch-rate=\"0\" lines-covered=\"{covered}\" lines-valid=\"{}\" branches-covered=\"0\" branches-valid=\"0\" complexity=\"0\" version=\"sonde {}\" timestamp=\"{}\">",
            rate(covered, all.len()),
            all.len(),
            xml_escape(&profile.run.agent_version),
            profile.run.started_unix_ms / 1000
        )?;
        // File names are absolute as the compiler wrote them: the source root is empty.
        writeln!(out, "  <sources><source></source></sources>\n  <packages>")?;
        for (assembly, classes) in &packages {
            let lines = merged(classes.values().flatten().map(|m| &m.2[..]));
            let hit = lines.values().filter(|&&h| h > 0).count();
            writeln!(
                out,
                "    <package name=\"{}\" line-rate=\"{}\" branch-rate=\"0\" complexity=\"0\">\n      <classes>",
                xml_escape(assembly),
                rate(hit, lines.len())
            )?;
            for ((class, file), methods) in classes {
                let lines = merged(methods.iter().map(|m| &m.2[..]));
                let hit = lines.values().filter(|&&h| h > 0).count();
                writeln!(
                    out,
                    "        <class name=\"{}\" filename=\"{}\" line-rate=\"{}\" branch-rate=\"0\" complexity=\"0\">\n          <methods>",
                    xml_escape(class),
                    xml_escape(file),
                    rate(hit, lines.len())
                )?;
                for (name, signature, method_lines) in methods {
                    let hit = method_lines.iter().filter(|l| l.1 > 0).count();
                    writeln!(
                        out,
                        "            <method name=\"{}\" signature=\"{}\" line-rate=\"{}\" branch-rate=\"0\" complexity=\"0\">\n              <lines>",
                        xml_escape(name),
                        xml_escape(signature),
                        rate(hit, method_lines.len())
                    )?;
                    for (line, hits) in method_lines {
                        writeln!(out, "                <line number=\"{line}\" hits=\"{hits}\" branch=\"false\"/>")?;
                    }
                    writeln!(out, "              </lines>\n            </method>")?;
                }
                writeln!(out, "          </methods>\n          <lines>")?;
                for (line, hits) in &lines {
                    writeln!(out, "            <line number=\"{line}\" hits=\"{hits}\" branch=\"false\"/>")?;
                }
                writeln!(out, "          </lines>\n        </class>")?;
            }
            writeln!(out, "      </classes>\n    </package>")?;
        }
        writeln!(out, "  </packages>\n</coverage>")?;
        out.flush()
    }
}
