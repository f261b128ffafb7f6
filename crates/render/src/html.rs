//! `--format html`: one self-contained, interactive page — a flame graph (or icicle) on a
//! canvas, a sortable hot-methods table, a call tree, a caller/callee panel per method and a
//! thread selector — that works offline in any browser. Tabs weigh those views by CPU, by bytes
//! allocated (Memory, with the allocations by type) or by lock wait, a Timeline tab draws the
//! run's collections, module loads, JIT compilations and throws per thread, zoomable, and a
//! Coverage tab shows a coverage profile's source files with each line coloured by whether it ran.
//!
//! # Design constraints
//!
//! * **Self-contained.** The page loads nothing: no network, no fonts, no images. Its script and
//!   stylesheet are the hand-written files under `html/`, compiled in with `include_str!`.
//! * **Names are untrusted.** Method, thread and command names come from the profiled program
//!   (compiler-generated names contain `<` and `>`). They travel only inside the JSON data block
//!   ([`data`]), escaped so that it cannot end its `<script>` element, and the page's script
//!   inserts them with `textContent` or canvas `fillText`, never as markup. As a second line of
//!   defence a Content-Security-Policy lets only the page's own script run, named by its SHA-256
//!   hash: even an injected element could execute nothing.
//! * **Parts that say what they use.** The script is eight files concatenated into one function
//!   scope (`SCRIPT`). Each declares exactly one object named after it (`Fmt`, `Model`, `Flame`,
//!   `Tables`, `Tree`, `Events`, `Coverage`, `Main`) and lists at its top, in `/* global … */`, the other parts'
//!   objects and the browser globals it uses; `crates/render/tests/page_script.rs` holds them to
//!   that with ESLint (`no-undef`, `no-unused-vars`), and checks `model.js`'s figures against
//!   [`sonde_profile::analysis`]. A part may use at load time only the parts before it.
//! * **Fast on big profiles.** Rust only streams the model out in a compact form (a million
//!   nodes make about 17 MB in a quarter of a second, `scripts/bench-html.py`); the page
//!   aggregates in typed arrays in linear time, draws only the frames wide enough to see, and
//!   creates call-tree rows only when they are opened.

mod data;

use std::io::{self, BufWriter, Write};

use sha2::{Digest, Sha256};
use sonde_profile::Profile;

use crate::Renderer;

/// Renders the interactive HTML report.
#[derive(Debug, Clone, Copy, Default)]
pub struct HtmlRenderer {
    /// Leaves out the page's script, stylesheet and static markup (`html/body.html`), which are
    /// the same in every report, and keeps its head and data: for golden tests, which then change
    /// only when the data does (inferno has `no_javascript` for the same reason). Such a page
    /// does nothing in a browser.
    pub no_static_assets: bool,
}

const STYLE: &str = include_str!("html/report.css");
const BODY: &str = include_str!("html/body.html");

/// The page's one script: these parts concatenated, in order, in one function scope, then started.
const SCRIPT: [&str; 10] = [
    "(function () {\n'use strict';\n",
    include_str!("html/fmt.js"),
    include_str!("html/model.js"),
    include_str!("html/flame.js"),
    include_str!("html/tables.js"),
    include_str!("html/tree.js"),
    include_str!("html/events.js"),
    include_str!("html/coverage.js"),
    include_str!("html/main.js"),
    "Main.start();\n})();\n",
];

impl Renderer for HtmlRenderer {
    fn render(&self, profile: &Profile, out: &mut dyn Write) -> io::Result<()> {
        crate::check(profile)?;
        let mut out = BufWriter::with_capacity(1 << 16, out);
        out.write_all(b"<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n")?;
        let assets = !self.no_static_assets;
        writeln!(out, "<meta http-equiv=\"Content-Security-Policy\" content=\"{}\">", content_security_policy(assets))?;
        out.write_all(
            b"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
              <meta name=\"referrer\" content=\"no-referrer\">\n\
              <meta name=\"generator\" content=\"Sonde\">\n\
              <title>Sonde profile</title>\n",
        )?;
        if assets {
            out.write_all(b"<style>")?;
            out.write_all(STYLE.as_bytes())?;
            out.write_all(b"</style>\n")?;
        }
        out.write_all(b"</head>\n<body>\n")?;
        if assets {
            out.write_all(BODY.as_bytes())?;
        }
        out.write_all(b"<script type=\"application/json\" id=\"sonde-data\">")?;
        data::write(&mut out, profile)?;
        out.write_all(b"</script>\n")?;
        if assets {
            out.write_all(b"<script>")?;
            for part in SCRIPT {
                out.write_all(part.as_bytes())?;
            }
            out.write_all(b"</script>\n")?;
        }
        out.write_all(b"</body>\n</html>\n")?;
        out.flush()
    }
}

/// Nothing may load; only the page's own script and stylesheet, named by hash, may apply (and
/// nothing at all when they are left out).
fn content_security_policy(assets: bool) -> String {
    let (script, style) = if assets {
        (format!("'sha256-{}'", sha256_base64(&SCRIPT)), format!("'sha256-{}'", sha256_base64(&[STYLE])))
    } else {
        ("'none'".to_owned(), "'none'".to_owned())
    };
    format!("default-src 'none'; script-src {script}; style-src {style}; base-uri 'none'; form-action 'none'")
}

/// The base64 SHA-256 of the concatenated `parts`, as CSP hash sources spell it.
pub(crate) fn sha256_base64(parts: &[&str]) -> String {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update(part.as_bytes());
    }
    base64(&hasher.finalize())
}

/// Standard base64 with padding (RFC 4648 §4).
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [chunk[0], chunk.get(1).copied().unwrap_or(0), chunk.get(2).copied().unwrap_or(0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for (i, shift) in [18, 12, 6, 0].into_iter().enumerate() {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> shift) as usize & 63] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_rfc_4648_vectors() {
        let cases =
            [("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foob", "Zm9vYg=="), ("foobar", "Zm9vYmFy")];
        for (input, encoded) in cases {
            assert_eq!(base64(input.as_bytes()), encoded);
        }
        // echo -n abc | openssl dgst -sha256 -binary | base64
        assert_eq!(sha256_base64(&["a", "bc"]), "ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0=");
    }

    #[test]
    fn every_page_script_file_is_in_the_script() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/html");
        let mut files = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "js") {
                let text = std::fs::read_to_string(&path).unwrap();
                assert!(SCRIPT.contains(&text.as_str()), "{} is not part of SCRIPT", path.display());
                files += 1;
            }
        }
        assert_eq!(files, SCRIPT.len() - 2, "SCRIPT holds a part that is not a file of src/html");
    }

    #[test]
    fn script_and_style_cannot_end_their_elements() {
        let script: String = SCRIPT.concat().to_ascii_lowercase();
        assert!(!script.contains("</script") && !script.contains("<!--"), "the script must not close its element");
        assert!(!STYLE.to_ascii_lowercase().contains("</style"), "the stylesheet must not close its element");
    }

    #[test]
    fn the_page_uses_no_markup_sinks_and_loads_nothing() {
        let script = SCRIPT.concat();
        for sink in ["innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"] {
            assert!(!script.contains(sink), "the page's script must not use {sink}");
        }
        for fetch in ["fetch(", "XMLHttpRequest", "import(", "http://", "https://"] {
            assert!(!script.contains(fetch), "the page must load nothing ({fetch})");
        }
        for source in [STYLE, BODY] {
            assert!(!source.contains("http://") && !source.contains("https://") && !source.contains("url("));
            assert!(!source.contains("style=\""), "inline style attributes would break the CSP");
        }
    }
}
