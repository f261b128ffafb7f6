//! Deep call trees in the export formats (issue item 14): every format grows at most linearly
//! with the tree, stacks deeper than 1,000 frames end in one `[… N frames cut]` frame that
//! keeps the weight of everything below it, and a profile that would still be too large for a
//! format is refused before anything is written.

#[path = "support/pprof_text.rs"]
mod pprof_text;
#[path = "support/profiles.rs"]
mod profiles;

use std::io;
use std::time::{Duration, Instant};

use sonde_profile::{Mode, Profile, Thread};
use sonde_render::{
    Format, MAX_COLLAPSED_BYTES, MAX_FLAMEGRAPH_STACK_BYTES, MAX_PPROF_LOCATION_IDS, MAX_STACK_FRAMES, renderer,
};

/// `App.Math.Fib` in [`profiles::methods`].
const FIB: u32 = 7;
/// `App.Render.Html` in [`profiles::methods`].
const HTML: u32 = 2;
const CUT: usize = MAX_STACK_FRAMES as usize;

fn profile(mode: Mode, rows: &[profiles::Row]) -> Profile {
    let thread = |os_tid| Thread { os_tid, name: None, wall_ns: 1, cpu_user_ns: 0, cpu_kernel_ns: 0 };
    Profile {
        run: profiles::run(mode),
        methods: profiles::methods(),
        threads: vec![thread(1), thread(2)],
        nodes: profiles::nodes(rows),
        ..sonde_profile::testkit::blank()
    }
}

/// `Fib` calling itself `depth` deep on thread 0, one call, 100 ns and one sample per level.
fn chain(depth: u32) -> Vec<profiles::Row> {
    (0..depth).map(|i| (0, i.checked_sub(1), FIB, 1, 100, 1)).collect()
}

fn render(format: Format, profile: &Profile) -> Vec<u8> {
    let mut out = Vec::new();
    renderer(format).render(profile, &mut out).unwrap_or_else(|e| panic!("{format}: {e}"));
    out
}

fn weight(profile: &Profile, node: usize) -> u64 {
    let n = &profile.nodes[node];
    match profile.run.mode {
        Mode::Tracing | Mode::Coverage => n.self_ns,
        Mode::Sampling => n.self_samples,
    }
}

/// Each node's depth in frames (1 for a root).
fn depths(profile: &Profile) -> Vec<usize> {
    let mut depth = Vec::with_capacity(profile.nodes.len());
    for n in &profile.nodes {
        depth.push(n.parent.map_or(1, |p| depth[p as usize] + 1));
    }
    depth
}

/// The self weight of all nodes, and of those deeper than the cut.
fn weights(profile: &Profile) -> (u64, u64) {
    let depth = depths(profile);
    let all = (0..profile.nodes.len()).map(|i| weight(profile, i)).sum();
    let deep = (0..profile.nodes.len()).filter(|&i| depth[i] > CUT).map(|i| weight(profile, i)).sum();
    (all, deep)
}

#[test]
fn every_format_grows_at_most_linearly_with_a_deep_recursion() {
    for mode in [Mode::Tracing, Mode::Sampling] {
        let (shallow, deep) = (profile(mode, &chain(5_000)), profile(mode, &chain(50_000)));
        for format in Format::ALL {
            let start = Instant::now();
            let big = render(format, &deep).len();
            let took = start.elapsed();
            let small = render(format, &shallow).len();
            // Ten times the depth: linear is about ten times the bytes, quadratic a hundred.
            assert!(big <= 11 * small, "{format}, {mode:?}: {small} bytes at depth 5,000, {big} at 50,000");
            assert!(big < 16 << 20, "{format}, {mode:?}: {big} bytes at depth 50,000");
            // Before the cut, collapsed took 48 s and the flame graph ran out of memory.
            assert!(took < Duration::from_secs(5), "{format}, {mode:?}: {took:?} at depth 50,000");
        }
    }
}

/// Thread 0: a `Fib` trunk 1,500 deep with an `Html` leaf at every level, and a second branch
/// (`Html` calling itself 300 deep) starting right at the cut under the 1,000th `Fib`; a
/// weightless chain below the cut on the same trunk. Thread 1: a shallow tree.
fn cut_profile(mode: Mode) -> Profile {
    let mut rows: Vec<profiles::Row> = Vec::new();
    let mut trunk = Vec::new();
    for _ in 0..1_500 {
        let id = rows.len() as u32;
        rows.push((0, trunk.last().copied(), FIB, 1, 100, 1));
        trunk.push(id);
        rows.push((0, Some(id), HTML, 2, 7, 1));
    }
    let mut parent = trunk[CUT - 1];
    for _ in 0..300 {
        let id = rows.len() as u32;
        rows.push((0, Some(parent), HTML, 1, 3, 1));
        parent = id;
    }
    let mut parent = trunk[CUT + 10];
    for _ in 0..50 {
        let id = rows.len() as u32;
        rows.push((0, Some(parent), 4, 0, 0, 0));
        parent = id;
    }
    rows.push((1, None, 0, 1, 1_000, 10));
    rows.push((1, Some(rows.len() as u32 - 1), FIB, 1, 500, 5));
    profile(mode, &rows)
}

/// The deepest stack of `cut_profile` is the `Html` leaf under the 1,500th `Fib`: 1,501 frames.
const DEEPEST_CUT: &str = "[… 501 frames cut]";

#[test]
fn collapsed_and_flamegraph_cut_deep_stacks_and_keep_their_weight() {
    for mode in [Mode::Tracing, Mode::Sampling] {
        let profile = cut_profile(mode);
        let (all, deep) = weights(&profile);
        let folded = String::from_utf8(render(Format::Collapsed, &profile)).unwrap();
        let mut sum = 0;
        let mut markers = Vec::new();
        for line in folded.lines() {
            let (stack, n) = line.rsplit_once(' ').unwrap();
            let n: u64 = n.parse().unwrap();
            let frames: Vec<&str> = stack.split(';').collect();
            assert!(frames.len() <= CUT + 1, "{} frames", frames.len());
            if frames.len() == CUT + 1 {
                markers.push((frames[CUT], n));
            }
            assert!(frames[..frames.len().min(CUT)].iter().all(|f| !f.starts_with("[…")));
            sum += n;
        }
        assert_eq!(sum, all, "{mode:?}: the weights add up");
        // Everything below the 1,000th Fib, both branches and the weightless chain, is one frame.
        assert_eq!(markers, [(DEEPEST_CUT, deep)], "{mode:?}");

        let svg = String::from_utf8(render(Format::Flamegraph, &profile)).unwrap();
        assert!(svg.contains(&format!("<title>{DEEPEST_CUT} (")), "{mode:?}: the marker is drawn");
    }
}

#[test]
fn pprof_cuts_deep_stacks_and_keeps_every_value() {
    for mode in [Mode::Tracing, Mode::Sampling] {
        let profile = cut_profile(mode);
        let depth = depths(&profile);
        let decoded = pprof_text::decode(&render(Format::Pprof, &profile));
        let values = |n: &sonde_profile::Node| match mode {
            Mode::Tracing | Mode::Coverage => [n.calls, n.self_ns],
            Mode::Sampling => [n.self_samples, n.self_ns],
        };
        let sum = |deep: bool| {
            profile.nodes.iter().enumerate().filter(|&(i, _)| !deep || depth[i] > CUT).fold([0, 0], |s, (_, n)| {
                let v = values(n);
                [s[0] + v[0], s[1] + v[1]]
            })
        };
        let (mut total, mut cut) = ([0u64; 2], [0u64; 2]);
        let mut markers = Vec::new();
        for s in &decoded.sample {
            let stack = decoded.stack(s); // resolves every location and function

            assert!(stack.len() <= CUT + 1, "{} frames", stack.len());
            let v = [s.value[0] as u64, s.value[1] as u64];
            total = [total[0] + v[0], total[1] + v[1]];
            if stack[0].starts_with("[…") {
                assert_eq!(stack.len(), CUT + 1, "a marker ends a stack cut at the limit");
                markers.push(stack[0].clone());
                cut = [cut[0] + v[0], cut[1] + v[1]];
            }
        }
        assert_eq!(total, sum(false), "{mode:?}: the values add up");
        assert_eq!(cut, sum(true), "{mode:?}: the markers hold what was cut");
        // One sample per cut subtree: the next Fib, the 1,000th Fib's Html leaf and the Html
        // branch; the weightless chain is under the next Fib.
        markers.sort_unstable();
        assert_eq!(markers, ["[… 1 frames cut]", "[… 300 frames cut]", DEEPEST_CUT], "{mode:?}");
        let comments: Vec<&str> = decoded.comment.iter().map(|&c| decoded.str(c)).collect();
        assert!(
            comments
                .contains(&"stacks deeper than 1000 frames are cut: a \"[… N frames cut]\" frame stands for the rest")
        );
    }
}

#[test]
fn speedscope_cuts_deep_stacks_into_one_frame_as_long_as_them() {
    for mode in [Mode::Tracing, Mode::Sampling] {
        let profile = cut_profile(mode);
        let (all, deep) = weights(&profile);
        let json: serde_json::Value = serde_json::from_slice(&render(Format::Speedscope, &profile)).unwrap();
        let frames = json["shared"]["frames"].as_array().unwrap();
        let merged = &json["profiles"][0];
        assert_eq!(merged["type"], "evented");
        assert_eq!(merged["endValue"], all);
        // Replay the events as speedscope does: time between two events belongs to the frame on top.
        let mut open: Vec<u64> = Vec::new();
        let (mut last, mut under_markers, mut deepest) = (0, 0, 0);
        for e in merged["events"].as_array().unwrap() {
            let (frame, at) = (e["frame"].as_u64().unwrap(), e["at"].as_u64().unwrap());
            assert!(at >= last);
            if open.last().is_some_and(|&f| frames[f as usize]["name"].as_str().unwrap().starts_with("[…")) {
                under_markers += at - last;
            }
            last = at;
            if e["type"] == "O" {
                open.push(frame);
                deepest = deepest.max(open.len());
            } else {
                assert_eq!(open.pop(), Some(frame));
            }
        }
        assert!(open.is_empty());
        assert_eq!(deepest, CUT + 1, "{mode:?}");
        assert_eq!(under_markers, deep, "{mode:?}: the marker frames last as long as what they replace");
        let names: Vec<&str> = frames.iter().map(|f| f["name"].as_str().unwrap()).collect();
        // One marker per cut subtree with weight, after the methods, fewest frames first.
        assert_eq!(names[profiles::methods().len()..], ["[… 1 frames cut]", "[… 300 frames cut]", DEEPEST_CUT]);
    }
}

fn refusal(format: Format, profile: &Profile) -> String {
    let mut out = Vec::new();
    let err = renderer(format).render(profile, &mut out).expect_err("over the limit");
    assert_eq!(err.kind(), io::ErrorKind::FileTooLarge, "{format}");
    assert!(out.is_empty(), "{format}: nothing is written before the refusal");
    err.to_string()
}

#[test]
fn formats_refuse_what_would_be_over_their_limits() {
    // A 1,000-deep chain of a method with a 10 kB name: 5 GB of folded stacks, computed and
    // refused without being written.
    let mut profile = profile(Mode::Tracing, &chain(1_000));
    profile.methods[FIB as usize].name = "F".repeat(10_000);
    let lines: u64 = (1..=1_000u64).map(|k| k * 10_001 + 4).sum();
    assert!(lines > MAX_COLLAPSED_BYTES);
    assert_eq!(
        refusal(Format::Collapsed, &profile),
        format!(
            "the collapsed export would need {} bytes, over its limit of 2,147,483,648 bytes: the profile has too \
             many deep stacks for this format (text, json, html and speedscope grow only linearly with it)",
            sonde_render::fmt::count(lines)
        )
    );
    assert!(refusal(Format::Flamegraph, &profile).contains(&format!(
        "over its limit of {} bytes of folded stacks",
        sonde_render::fmt::count(MAX_FLAMEGRAPH_STACK_BYTES)
    )));
    for format in [Format::Speedscope, Format::Pprof, Format::Json] {
        render(format, &profile);
    }

    // 100,001 leaves under a 999-deep chain: a thousand location ids each.
    let mut rows = chain(999);
    rows.extend((0..100_001).map(|_| (0, Some(998), HTML, 1, 1, 1)));
    let profile = self::profile(Mode::Tracing, &rows);
    assert!(refusal(Format::Pprof, &profile).starts_with(&format!(
        "the pprof export would need 100,500,500 location ids, over its limit of {} location ids",
        sonde_render::fmt::count(MAX_PPROF_LOCATION_IDS)
    )));
}
