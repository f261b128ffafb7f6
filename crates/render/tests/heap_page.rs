//! The heap snapshot's HTML page (`sonde_render::heap_html`) holds hostile names as data: a type,
//! a field, a root and a file name that try to end the data block's `<script>` element or become
//! markup must come back, byte for byte, from the JSON the page's script parses, and appear
//! nowhere else in the page. The page in a real browser: `crates/cli/tests/heap_html.rs`.

use serde_json::Value;
use sha2::{Digest, Sha256};
use sonde_heap::{Analysis, HeapBuilder, HeapDiff, HeapReport, HeapSnapshot, RootKind, RunFacts, TreeLimits};
use sonde_render::heap_html::{self, PATH_TYPES, PATHS_PER_TYPE};

const NASTY_TYPE: &str = "</script><img src=x onerror=alert(1)>";
const NASTY_FIELD: &str = "<!--<script>alert(2)//";
const NASTY_ROOT: &str = "Acme.</SCRIPT ><svg onload=alert(3)>\u{2028}Items&amp;";
const NASTY_FILE: &str = "/tmp/<b>snap</b>.heap";

/// A static root holding a `Holder`, which holds `n` objects of the hostile type through the
/// hostile field.
fn nasty_heap(n: u64) -> HeapSnapshot {
    let mut b = HeapBuilder::new(RunFacts { runtime: "coreclr".into(), pid: 7, pause_ns: 1_000_000 });
    let holder = b.intern_type("Holder");
    let nasty = b.intern_type(NASTY_TYPE);
    let field = b.intern_field(NASTY_FIELD);
    b.add_root(RootKind::StaticField, NASTY_ROOT, 0x1000);
    b.add_object(0x1000, holder, 24);
    for i in 0..n {
        let object = 0x10_0000 + i * 0x40;
        b.add_reference(0x1000, object, Some(field));
        b.add_object(object, nasty, 32);
    }
    b.finish().unwrap()
}

fn report(heap: &HeapSnapshot) -> HeapReport {
    let analysis = Analysis::new(heap, TreeLimits::default());
    HeapReport::new(heap, &analysis, None)
}

fn page(heap: &HeapSnapshot) -> String {
    let report = report(heap);
    let paths = heap_html::type_paths(heap, &report, PATH_TYPES, PATHS_PER_TYPE);
    let mut out = Vec::new();
    heap_html::write_heap_html(&mut out, &report, &paths, NASTY_FILE).unwrap();
    String::from_utf8(out).unwrap()
}

/// The data block as the browser's `textContent` reads it, parsed.
fn data(html: &str) -> Value {
    const OPEN: &str = "<script type=\"application/json\" id=\"sonde-data\">";
    let start = html.find(OPEN).expect("the data block") + OPEN.len();
    let len = html[start..].find("</script>").expect("the end of the data block");
    serde_json::from_str(&html[start..start + len]).expect("the data block is JSON")
}

/// Asserts that none of the hostile names, nor any part of them that could open or close an
/// element, is in the page outside the data block's escapes, and that the page has its two
/// script elements only.
fn assert_inert(html: &str) {
    // The page's own script (the same in every page) quotes a hostile name in a comment.
    let start = html.find("<script>").expect("the page's script") + "<script>".len();
    let end = start + html[start..].find("</script>").expect("the end of the page's script");
    let outside_script = format!("{}{}", &html[..start], &html[end..]);
    for name in [NASTY_TYPE, NASTY_FIELD, NASTY_ROOT, NASTY_FILE, "<img", "<svg", "<b>", "<!--"] {
        assert!(!outside_script.contains(name), "{name:?} is in the page as it is");
    }
    assert_eq!(html.to_ascii_lowercase().matches("<script").count(), 2, "the data block and the page's script");
    assert_eq!(html.to_ascii_lowercase().matches("</script").count(), 2);
    assert!(!html.contains('\u{2028}'));
}

#[test]
fn hostile_names_stay_data_in_a_snapshot_s_page() {
    let html = page(&nasty_heap(3));
    assert_inert(&html);
    let data = data(&html);
    assert_eq!(data["schema"], "sonde.heaphtml/1");
    assert_eq!(data["files"][0], NASTY_FILE);
    let types: Vec<&str> =
        data["report"]["types"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(types.contains(&NASTY_TYPE), "{types:?}");
    assert_eq!(data["report"]["roots"][0]["name"], NASTY_ROOT);
    let paths = data["type_paths"].as_array().unwrap().iter().find(|p| p["type"] == NASTY_TYPE).expect("its paths");
    let steps = &paths["paths"][0]["steps"];
    assert_eq!(steps[0]["root_name"], NASTY_ROOT);
    assert_eq!(steps[2]["type"], NASTY_TYPE);
    assert_eq!(steps[2]["field"], NASTY_FIELD);
    assert_eq!(paths["paths"][0]["objects"], 3);
}

#[test]
fn hostile_names_stay_data_in_a_diff_s_page() {
    let (base, new) = (nasty_heap(2), nasty_heap(5));
    let diff = HeapDiff::new(&report(&base), &report(&new)).with_suspects(&base, &new, 10, 10);
    let mut out = Vec::new();
    heap_html::write_heap_diff_html(&mut out, &diff, NASTY_FILE, "b.heap").unwrap();
    let html = String::from_utf8(out).unwrap();
    assert_inert(&html);
    let data = data(&html);
    assert_eq!(data["diff"]["suspects"][0]["name"], NASTY_TYPE);
    assert_eq!(data["diff"]["suspects"][0]["count_change"], 3);
    assert_eq!(data["diff"]["suspects"][0]["paths"][0]["steps"][0]["root_name"], NASTY_ROOT);
}

/// The Content-Security-Policy names the page's script and stylesheet by their hashes, so that
/// the browser runs them (and nothing else).
#[test]
fn the_policy_allows_exactly_the_page_s_script_and_style() {
    let html = page(&nasty_heap(1));
    let between = |open: &str, close: &str| -> String {
        let start = html.rfind(open).expect(open) + open.len();
        let len = html[start..].find(close).expect(close);
        html[start..start + len].to_string()
    };
    let hash = |text: &str| base64(&Sha256::digest(text.as_bytes()));
    let policy = between("Content-Security-Policy\" content=\"", "\"");
    assert!(policy.starts_with("default-src 'none'; "), "{policy}");
    assert!(policy.contains(&format!("script-src 'sha256-{}';", hash(&between("<script>", "</script>")))), "{policy}");
    assert!(policy.contains(&format!("style-src 'sha256-{}';", hash(&between("<style>", "</style>")))), "{policy}");
}

/// Standard base64 with padding (RFC 4648 §4), as CSP hash sources spell it.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
        for i in 0..4 {
            out.push(if i <= chunk.len() { ALPHABET[(n >> (18 - 6 * i)) as usize & 63] as char } else { '=' });
        }
    }
    out
}
