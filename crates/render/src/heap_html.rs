//! `sonde report FILE.heap --format html` and `sonde diff A.heap B.heap --format html`: one
//! self-contained page per heap snapshot (or per pair), drawn from the same `sonde.heap/1` and
//! `sonde.heapdiff/1` structs as the text and JSON reports.
//!
//! A snapshot's page has its totals, the types table (count, bytes, retained; sortable and
//! filterable), the top of the dominator tree to open and close, the roots, and the retention
//! paths of the type clicked. Paths cost a walk of the whole heap, so the page embeds those of
//! the [`PATH_TYPES`] types that retain the most (plus the type of `--paths`), computed in one
//! pass ([`type_paths`]), and says for any other type which command lists its paths. A diff's
//! page has the change table and, for the types that grew most, where their new instances hang.
//!
//! # Design constraints
//!
//! The profile's page (`html.rs`) sets them, and this one keeps them: it loads nothing; names
//! (types, fields, roots, file names) are untrusted and travel only inside the JSON data block,
//! escaped so that they cannot end its `<script>` element ([`write_data`]), and the script
//! inserts them with `textContent`, never as markup; a Content-Security-Policy lets only the
//! page's own script and stylesheet apply, named by their SHA-256. The script is `fmt.js` (shared
//! with the profile's page) and `html/heap/heap.js`, one function scope.

use std::io::{self, BufWriter, Write};

use serde::Serialize;
use sonde_heap::report::{PathRow, path_row};
use sonde_heap::{HeapDiff, HeapReport, HeapSnapshot, PathIndex};

use crate::html::sha256_base64;

/// The types whose paths a snapshot's page embeds: the first this many of the report's types,
/// which retain the most.
pub const PATH_TYPES: usize = 50;
/// Path groups embedded per type, the most bytes first; the rest are counted.
pub const PATHS_PER_TYPE: usize = 20;

/// The page's data schema (what `heap.js` reads).
const PAGE_SCHEMA: &str = "sonde.heaphtml/1";

const STYLE: [&str; 2] = [include_str!("html/report.css"), include_str!("html/heap/heap.css")];
const BODY: &str = include_str!("html/heap/body.html");
const SCRIPT: [&str; 4] = [
    "(function () {\n'use strict';\n",
    include_str!("html/fmt.js"),
    include_str!("html/heap/heap.js"),
    "Heap.start();\n})();\n",
];

/// The retention paths of one type, as the page embeds them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TypePaths {
    #[serde(rename = "type")]
    pub ty: String,
    /// The first [`PATHS_PER_TYPE`] groups, the most bytes first.
    pub paths: Vec<PathRow>,
    /// The groups left out, and their objects and bytes.
    pub more_paths: u64,
    pub more_objects: u64,
    pub more_bytes: u64,
}

/// The paths of the first `types` types of `report` (made from `heap`), at most `per_type`
/// groups each: one breadth-first walk and one pass over the objects. The walk's index holds 4
/// bytes per object: build this after the report's [`sonde_heap::Analysis`] is dropped.
pub fn type_paths(heap: &HeapSnapshot, report: &HeapReport, types: usize, per_type: usize) -> Vec<TypePaths> {
    let wanted: Vec<(&str, u32)> =
        report.types.iter().take(types).filter_map(|t| Some((t.name.as_str(), heap.type_named(&t.name)?))).collect();
    if wanted.is_empty() {
        return Vec::new();
    }
    let index = PathIndex::new(heap);
    let ids: Vec<u32> = wanted.iter().map(|&(_, ty)| ty).collect();
    wanted
        .iter()
        .zip(index.groups_of(heap, &ids))
        .map(|(&(name, _), groups)| {
            let rest = groups.get(per_type..).unwrap_or_default();
            TypePaths {
                ty: name.to_string(),
                paths: groups.iter().take(per_type).map(|g| path_row(heap, g)).collect(),
                more_paths: rest.len() as u64,
                more_objects: rest.iter().map(|g| g.objects).sum(),
                more_bytes: rest.iter().map(|g| g.bytes).sum(),
            }
        })
        .collect()
}

/// What the page's script reads: a snapshot's report, or a diff.
#[derive(Serialize)]
struct PageData<'a> {
    schema: &'static str,
    kind: &'static str,
    /// The files the page was made from, as given on the command line (for the commands it
    /// suggests).
    files: &'a [&'a str],
    #[serde(skip_serializing_if = "Option::is_none")]
    report: Option<&'a HeapReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    type_paths: Option<&'a [TypePaths]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    path_types: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    diff: Option<&'a HeapDiff>,
}

/// Writes the page of one snapshot's `report` (read from `file`), with the retention paths of
/// `paths` (from [`type_paths`]).
pub fn write_heap_html(out: &mut dyn Write, report: &HeapReport, paths: &[TypePaths], file: &str) -> io::Result<()> {
    let data = PageData {
        schema: PAGE_SCHEMA,
        kind: "heap",
        files: &[file],
        report: Some(report),
        type_paths: Some(paths),
        path_types: Some(paths.len()),
        diff: None,
    };
    write_page(out, "Sonde heap snapshot", &data)
}

/// Writes the page of `diff`, the snapshot `new` compared with `base`.
pub fn write_heap_diff_html(out: &mut dyn Write, diff: &HeapDiff, base: &str, new: &str) -> io::Result<()> {
    let data = PageData {
        schema: PAGE_SCHEMA,
        kind: "heapdiff",
        files: &[base, new],
        report: None,
        type_paths: None,
        path_types: None,
        diff: Some(diff),
    };
    write_page(out, "Sonde heap diff", &data)
}

fn write_page(out: &mut dyn Write, title: &str, data: &PageData) -> io::Result<()> {
    let mut out = BufWriter::with_capacity(1 << 16, out);
    out.write_all(b"<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n")?;
    writeln!(out, "<meta http-equiv=\"Content-Security-Policy\" content=\"{}\">", content_security_policy())?;
    out.write_all(
        b"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
          <meta name=\"referrer\" content=\"no-referrer\">\n\
          <meta name=\"generator\" content=\"Sonde\">\n",
    )?;
    // A fixed title: the names go into the page through its script only.
    writeln!(out, "<title>{title}</title>")?;
    out.write_all(b"<style>")?;
    for part in STYLE {
        out.write_all(part.as_bytes())?;
    }
    out.write_all(b"</style>\n</head>\n<body>\n")?;
    out.write_all(BODY.as_bytes())?;
    out.write_all(b"<script type=\"application/json\" id=\"sonde-data\">")?;
    write_data(&mut out, data)?;
    out.write_all(b"</script>\n<script>")?;
    for part in SCRIPT {
        out.write_all(part.as_bytes())?;
    }
    out.write_all(b"</script>\n</body>\n</html>\n")?;
    out.flush()
}

/// Nothing may load; only the page's own script and stylesheet, named by hash, may apply.
fn content_security_policy() -> String {
    format!(
        "default-src 'none'; script-src 'sha256-{}'; style-src 'sha256-{}'; base-uri 'none'; form-action 'none'",
        sha256_base64(&SCRIPT),
        sha256_base64(&STYLE)
    )
}

/// `data` as JSON that cannot leave its `<script>` element: `<`, `>` and `&` as `\u003c`,
/// `\u003e`, `\u0026` (no `</script>` or `<!--`), and U+2028/U+2029 escaped as older JavaScript
/// parsers want. JSON has these characters only inside strings, where the escapes mean the same.
/// Serialized in memory first: the data grows with the number of types, not of objects.
fn write_data(out: &mut impl Write, data: &impl Serialize) -> io::Result<()> {
    let json = serde_json::to_vec(data).map_err(io::Error::other)?;
    let mut start = 0;
    for (i, &b) in json.iter().enumerate() {
        let escape: &[u8] = match b {
            b'<' => b"\\u003c",
            b'>' => b"\\u003e",
            b'&' => b"\\u0026",
            // U+2028 and U+2029 are E2 80 A8 and E2 80 A9 in UTF-8.
            0xA8 if i >= 2 && json[i - 2] == 0xE2 && json[i - 1] == 0x80 => b"\\u2028",
            0xA9 if i >= 2 && json[i - 2] == 0xE2 && json[i - 1] == 0x80 => b"\\u2029",
            _ => continue,
        };
        let char_start = if b >= 0x80 { i - 2 } else { i };
        out.write_all(&json[start..char_start])?;
        out.write_all(escape)?;
        start = i + 1;
    }
    out.write_all(&json[start..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn script_and_style_cannot_end_their_elements_and_use_no_markup_sinks() {
        let script = SCRIPT.concat();
        let lower = script.to_ascii_lowercase();
        assert!(!lower.contains("</script") && !lower.contains("<!--"));
        assert!(!STYLE.concat().to_ascii_lowercase().contains("</style"));
        for sink in ["innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"] {
            assert!(!script.contains(sink), "the page's script must not use {sink}");
        }
        for fetch in ["fetch(", "XMLHttpRequest", "import(", "http://", "https://"] {
            assert!(!script.contains(fetch), "the page must load nothing ({fetch})");
        }
        for source in [STYLE[1], BODY] {
            assert!(!source.contains("http://") && !source.contains("https://") && !source.contains("url("));
            assert!(!source.contains("style=\""), "inline style attributes would break the CSP");
        }
    }

    #[test]
    fn the_data_escapes_what_could_end_its_element() {
        let nasty = "</script><img src=x onerror=alert(1)><!-- a&b\u{2028}c\u{2029}d \u{20a8}";
        let mut out = Vec::new();
        write_data(&mut out, &serde_json::json!({ "name": nasty })).unwrap();
        let text = String::from_utf8(out).unwrap();
        for forbidden in ["<", ">", "&", "\u{2028}", "\u{2029}"] {
            assert!(!text.contains(forbidden), "{forbidden:?} left in {text}");
        }
        assert!(text.contains('\u{20a8}'), "other characters ending in A8 pass unchanged");
        let back: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back["name"], nasty);
    }
}
