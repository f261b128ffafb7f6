//! Properties of the export formats (speedscope, pprof, collapsed, flamegraph) that goldens do
//! not show: weight is conserved, threads are split and merged correctly, untrusted names
//! cannot break a format, and hostile or huge profiles render without panicking.

#[path = "support/pprof_text.rs"]
mod pprof_text;
#[path = "support/profiles.rs"]
mod profiles;

use sonde_profile::{Mode, Profile};
use sonde_render::{Format, renderer};

const EXPORTS: [Format; 4] = [Format::Speedscope, Format::Pprof, Format::Collapsed, Format::Flamegraph];

fn render(format: Format, profile: &Profile) -> Vec<u8> {
    let mut out = Vec::new();
    renderer(format).render(profile, &mut out).unwrap_or_else(|e| panic!("{format}: {e}"));
    out
}

fn text(format: Format, profile: &Profile) -> String {
    String::from_utf8(render(format, profile)).unwrap()
}

fn self_weight_sum(profile: &Profile) -> u64 {
    profile
        .nodes
        .iter()
        .map(|n| match profile.run.mode {
            Mode::Tracing | Mode::Coverage => n.self_ns,
            Mode::Sampling => n.self_samples,
        })
        .sum()
}

#[test]
fn collapsed_merges_threads_and_conserves_weight() {
    for profile in [profiles::tracing(), profiles::sampling()] {
        let folded = text(Format::Collapsed, &profile);
        let mut stacks = std::collections::HashSet::new();
        let mut sum = 0;
        for line in folded.lines() {
            let (stack, n) = line.rsplit_once(' ').expect("`stack count`");
            let n: u64 = n.parse().unwrap();
            assert!(n > 0, "{line}");
            assert!(stacks.insert(stack.to_owned()), "stack {stack} appears twice");
            sum += n;
        }
        assert_eq!(sum, self_weight_sum(&profile));
        let mut sorted: Vec<&str> = folded.lines().collect();
        sorted.sort_by_key(|l| l.rsplit_once(' ').unwrap().0.split(';').collect::<Vec<_>>());
        assert_eq!(folded.lines().collect::<Vec<_>>(), sorted, "lines are in frame order");
    }
    // The two overloads of Html share a name, so they share one line; `;` in a name is not a
    // frame separator.
    let folded = text(Format::Collapsed, &profiles::tracing());
    assert!(folded.contains("App.Program.Main;App.Program.Main.<lambda>;App.Render.Html 11000\n"), "{folded}");
    assert!(folded.contains("App.Program.Main;App.Weird:Name 30000\n"), "{folded}");
}

#[test]
fn speedscope_profiles_split_threads_and_sum_up() {
    for profile in [profiles::tracing(), profiles::sampling()] {
        let json: serde_json::Value = serde_json::from_slice(&render(Format::Speedscope, &profile)).unwrap();
        let profiles = json["profiles"].as_array().unwrap();
        let names: Vec<&str> = profiles.iter().map(|p| p["name"].as_str().unwrap()).collect();
        // Thread 791 did nothing and is left out.
        assert_eq!(names, ["all threads", "thread 777 (Main)", "thread 790 (<Worker> \"1\")"]);
        let end = |p: &serde_json::Value| p["endValue"].as_u64().unwrap();
        assert_eq!(end(&profiles[0]), self_weight_sum(&profile));
        assert_eq!(end(&profiles[0]), end(&profiles[1]) + end(&profiles[2]));
        assert_eq!(json["shared"]["frames"][4]["name"], "\"><img src=x onerror=alert(1)>");
        assert!(json["shared"]["frames"][6].get("file").is_none(), "no empty file names");
    }
}

#[test]
fn pprof_keeps_every_node_with_values_and_the_thread() {
    let profile = profiles::tracing();
    let decoded = pprof_text::decode(&render(Format::Pprof, &profile));
    // Every node made calls, so every node is a sample, even those without time of their own.
    assert_eq!(decoded.sample.len(), profile.nodes.len());
    let calls: i64 = decoded.sample.iter().map(|s| s.value[0]).sum();
    let ns: i64 = decoded.sample.iter().map(|s| s.value[1]).sum();
    assert_eq!(calls as u64, profile.nodes.iter().map(|n| n.calls).sum::<u64>());
    assert_eq!(ns as u64, self_weight_sum(&profile));
    let system_names: Vec<&str> = decoded.function.iter().map(|f| decoded.str(f.system_name)).collect();
    assert!(system_names.contains(&"App.Render.Html(string) -> string"));
    assert!(system_names.contains(&"App.Render.Html(int32) -> string"));

    let profile = profiles::sampling();
    let decoded = pprof_text::decode(&render(Format::Pprof, &profile));
    assert_eq!(decoded.sample.len(), profile.nodes.iter().filter(|n| n.self_samples > 0).count());
    assert_eq!(decoded.sample.iter().map(|s| s.value[0]).sum::<i64>() as u64, self_weight_sum(&profile));
}

/// One series alone (what `sonde record --push` sends as a profile type of its own): only its
/// sample types, named as Grafana's .NET profiler names them, and only the samples with a value
/// of that series, which add up to the node events.
#[test]
fn a_pprof_series_carries_only_its_own_types_and_samples() {
    use sonde_profile::NodeEvents;
    use sonde_render::{PprofRenderer, PprofSeries, Renderer, has_series};
    let mut profile = profiles::sampling();
    let event = |node, exceptions_thrown, alloc_bytes| NodeEvents {
        node,
        exceptions_thrown,
        alloc_bytes,
        alloc_count: alloc_bytes / 8,
        wait_ns: 0,
    };
    profile.events.nodes = vec![event(1, 3, 0), event(2, 4, 800)];
    let types = |d: &pprof_text::Profile| -> Vec<String> {
        d.sample_type.iter().map(|t| format!("{}/{}", d.str(t.r#type), d.str(t.unit))).collect()
    };
    let pprof = |series| {
        let mut out = Vec::new();
        PprofRenderer { series }.render(&profile, &mut out).unwrap();
        pprof_text::decode(&out)
    };

    let thrown = pprof(PprofSeries::Exceptions);
    assert_eq!(types(&thrown), ["exception/count"]);
    let stacks: std::collections::BTreeSet<u64> =
        thrown.sample.iter().flat_map(|s| s.location_id.iter().copied()).collect();
    let locations: std::collections::BTreeSet<u64> = thrown.location.iter().map(|l| l.id).collect();
    assert_eq!(locations, stacks, "only the locations its samples use");
    assert_eq!(thrown.sample.iter().map(|s| s.value[0]).collect::<Vec<_>>(), [3, 4]);
    assert_eq!(thrown.str(thrown.default_sample_type), "exception");

    let allocated = pprof(PprofSeries::Allocations);
    assert_eq!(types(&allocated), ["alloc_samples/count", "alloc_size/bytes"]);
    assert_eq!(allocated.sample.len(), 1);
    assert_eq!(allocated.sample[0].value, [100, 800]);
    assert_eq!(allocated.str(allocated.period_type.as_ref().unwrap().r#type), "space");

    let cpu = pprof(PprofSeries::Cpu);
    assert_eq!(types(&cpu), ["samples/count", "cpu/nanoseconds"]);
    assert_eq!(cpu.sample.iter().map(|s| s.value[0]).sum::<i64>() as u64, self_weight_sum(&profile));

    assert!(!has_series(&profile, PprofSeries::Contention), "no lock wait");
    assert!(pprof(PprofSeries::Contention).sample.is_empty());
    assert!(
        [PprofSeries::Cpu, PprofSeries::Allocations, PprofSeries::Exceptions].iter().all(|&s| has_series(&profile, s))
    );
    // `--format pprof` keeps all of them under Go's names.
    let all = pprof_text::decode(&render(Format::Pprof, &profile));
    assert_eq!(
        types(&all),
        ["samples/count", "cpu/nanoseconds", "alloc_objects/count", "alloc_space/bytes", "exceptions/count"]
    );
}

#[test]
fn pprof_estimates_cpu_time_from_samples_when_the_profile_has_none() {
    let mut profile = profiles::sampling();
    for n in &mut profile.nodes {
        n.self_ns = 0;
        n.total_ns = 0;
    }
    let decoded = pprof_text::decode(&render(Format::Pprof, &profile));
    for s in &decoded.sample {
        assert_eq!(s.value[1], s.value[0] * 1_000_000);
    }
}

#[test]
fn the_flame_graph_is_deterministic_and_escapes_names() {
    let profile = profiles::tracing();
    let svg = text(Format::Flamegraph, &profile);
    assert_eq!(svg, text(Format::Flamegraph, &profile));
    assert!(svg.contains("&quot;&gt;&lt;img src=x onerror=alert(1)&gt;"), "names are escaped");
    assert!(!svg.contains("<img"), "no markup from the profile");
    assert!(svg.contains("Sonde: dotnet App.dll"));
}

#[test]
fn an_empty_profile_exports_empty_but_valid_files() {
    let profile = Profile {
        run: profiles::run(Mode::Tracing),
        methods: vec![],
        threads: vec![],
        nodes: vec![],
        ..sonde_profile::testkit::blank()
    };
    assert_eq!(text(Format::Collapsed, &profile), "");
    let json: serde_json::Value = serde_json::from_slice(&render(Format::Speedscope, &profile)).unwrap();
    assert_eq!(json["profiles"].as_array().unwrap().len(), 1);
    assert!(text(Format::Flamegraph, &profile).contains("nothing to draw"));
    let decoded = pprof_text::decode(&render(Format::Pprof, &profile));
    assert!(decoded.sample.is_empty());
    assert_eq!(decoded.string_table[0], "");
}

#[test]
fn absurd_values_saturate_instead_of_panicking() {
    for mut profile in [profiles::tracing(), profiles::sampling()] {
        for n in &mut profile.nodes {
            (n.calls, n.self_ns, n.total_ns, n.self_samples, n.total_samples) =
                (u64::MAX, u64::MAX, u64::MAX, u64::MAX, u64::MAX);
        }
        profile.run.wall_ns = u64::MAX;
        profile.run.started_unix_ms = u64::MAX;
        profile.run.sample_interval_ns = u64::MAX;
        for format in EXPORTS {
            assert!(!render(format, &profile).is_empty(), "{format}");
        }
        let decoded = pprof_text::decode(&render(Format::Pprof, &profile));
        pprof_text::text(&decoded); // resolves every reference
        assert!(decoded.sample.iter().all(|s| s.value.iter().all(|&v| v == i64::MAX)));
        assert_eq!(decoded.time_nanos, i64::MAX);
    }
}

#[test]
fn deep_recursion_renders() {
    let depth: u32 = 1_000;
    let rows: Vec<profiles::Row> = (0..depth).map(|i| (0, i.checked_sub(1), 7, 1, 10, 1)).collect();
    for mode in [Mode::Tracing, Mode::Sampling] {
        let profile = Profile {
            run: profiles::run(mode),
            methods: profiles::methods(),
            threads: vec![sonde_profile::Thread {
                os_tid: 1,
                name: None,
                wall_ns: 1,
                cpu_user_ns: 0,
                cpu_kernel_ns: 0,
            }],
            nodes: profiles::nodes(&rows),
            ..sonde_profile::testkit::blank()
        };
        for format in EXPORTS {
            assert!(!render(format, &profile).is_empty(), "{format}");
        }
        assert_eq!(text(Format::Collapsed, &profile).lines().count(), depth as usize);
    }
}
