//! Comparing two profiles (`sonde diff BASE NEW`): per method, self and total time (or samples)
//! in both runs and the change, the methods that appeared or vanished, exact call-count changes
//! for traces, and for sampling profiles whether a change is larger than sampling noise.
//!
//! **Matching.** A method is the same in both runs when its name as reports show it (type
//! arguments included), its signature and its assembly are: ids differ from run to run. One
//! exception: two builds of one project whose program assembly was renamed (`app-v1.exe`,
//! `app-v2.exe`) share no assembly name, so nothing of the program would match. When the
//! program's own assembly differs between the runs ([`program_assembly`]), neither run has the
//! other's, and at least half of the methods of the one with fewer have a namesake (name and
//! signature) in the other, the program's methods are matched without their assembly
//! ([`Diff::renamed`] says so).
//!
//! **Normalising** (`Normalize::Total`, the default): runs of different lengths compare by
//! share. The base's figures are scaled by `new total / base total`, so every figure reads in
//! the new run's units and a method that kept its share shows no change. `Normalize::None`
//! compares the raw figures.
//!
//! **Noise** (both runs sampled): a method's self samples are `a` of `A` in the base and `b` of
//! `B` in the new run (and likewise its total samples: the samples with it on the stack). Under "nothing changed" both are draws of one proportion; the
//! two-proportion z statistic `z = (b/B − a/A) / √(p(1−p)(1/A + 1/B))`, `p = (a+b)/(A+B)`,
//! tells how many standard errors apart the shares are. A change is *significant* when
//! `|z| ≥` [`Z_SIGNIFICANT`] for its self or its total samples (two-sided p < 0.001 for one method; with many methods, about one
//! in a thousand unchanged methods is still flagged). Samples of one run are not quite
//! independent (a long call spans consecutive samples), so this errs towards calling changes
//! significant; it is a filter against chasing noise, not a proof.

use std::collections::HashMap;

use crate::{Analysis, Mode, Profile};

/// `|z|` at or above which a sampled change is larger than sampling noise.
pub const Z_SIGNIFICANT: f64 = 3.29;

/// How two runs' figures are put on one scale.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Normalize {
    /// By each run's total (the base scaled to the new run's total).
    #[default]
    Total,
    /// Raw figures.
    None,
}

impl Normalize {
    pub fn as_str(self) -> &'static str {
        match self {
            Normalize::Total => "total",
            Normalize::None => "none",
        }
    }
}

/// What the figures count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Weight {
    /// Nanoseconds (traces, or sampling profiles' estimates), when both runs measured time.
    Ns,
    /// Samples, when a run has samples but no time.
    Samples,
}

/// One method's figures in one run.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Side {
    /// Self and total in the diff's weight, after normalising (the base's scaled).
    pub self_w: f64,
    pub total_w: f64,
    /// As recorded.
    pub raw_self: u64,
    pub raw_total: u64,
    /// Calls (traces; 0 in sampling mode).
    pub calls: u64,
    pub self_samples: u64,
    pub total_samples: u64,
}

/// One method of either run.
#[derive(Debug, Clone, PartialEq)]
pub struct MethodDiff {
    /// As reports show it.
    pub name: String,
    pub assembly: String,
    pub signature: String,
    /// `None`: the method is not in that run.
    pub base: Option<Side>,
    pub new: Option<Side>,
    /// The z statistic of its self samples (both runs sampled), see the module's documentation.
    pub z: Option<f64>,
    /// The same for its total samples (the share of samples with the method on the stack): a
    /// caller whose callees' work grew has no self samples to test.
    pub z_total: Option<f64>,
}

impl MethodDiff {
    /// New self minus base self (normalised), a method missing from a run counting 0.
    pub fn self_change(&self) -> f64 {
        self.new.map_or(0.0, |s| s.self_w) - self.base.map_or(0.0, |s| s.self_w)
    }

    pub fn total_change(&self) -> f64 {
        self.new.map_or(0.0, |s| s.total_w) - self.base.map_or(0.0, |s| s.total_w)
    }

    /// How large the change is, for ordering: the larger of the self and total changes (a
    /// caller whose callees' work moved has only a total change).
    pub fn size(&self) -> f64 {
        self.self_change().abs().max(self.total_change().abs())
    }

    /// The z statistic of larger magnitude, self or total.
    pub fn z_max(&self) -> Option<f64> {
        match (self.z, self.z_total) {
            (Some(a), Some(b)) => Some(if b.abs() > a.abs() { b } else { a }),
            (a, b) => a.or(b),
        }
    }

    /// New calls minus base calls (exact, traces).
    pub fn calls_change(&self) -> i128 {
        i128::from(self.new.map_or(0, |s| s.calls)) - i128::from(self.base.map_or(0, |s| s.calls))
    }

    /// Whether the self or the total change is larger than sampling noise: `None` unless both
    /// runs sampled.
    pub fn significant(&self) -> Option<bool> {
        let real = |z: Option<f64>| z.is_some_and(|z| z.abs() >= Z_SIGNIFICANT);
        self.z.map(|_| real(self.z) || real(self.z_total))
    }

    pub fn status(&self) -> &'static str {
        match (self.base, self.new) {
            (None, Some(_)) => "appeared",
            (Some(_), None) => "vanished",
            _ => "both",
        }
    }
}

/// Two runs compared.
#[derive(Debug, Clone, PartialEq)]
pub struct Diff {
    pub weight: Weight,
    pub normalize: Normalize,
    /// Each run's total (the sum of its methods' self figures), as recorded.
    pub base_total: u64,
    pub new_total: u64,
    /// What the base's figures were multiplied by (1 without normalising).
    pub base_scale: f64,
    /// Both runs are sampling profiles: changes have a noise test.
    pub sampled: bool,
    /// Both runs are traces: call counts are exact.
    pub traced: bool,
    /// Largest change first ([`MethodDiff::size`]), then by name.
    pub methods: Vec<MethodDiff>,
    /// The program's assembly has another name in each run, and its methods were matched by
    /// name and signature alone (see the module's documentation).
    pub renamed: Option<Renamed>,
}

/// The program's assembly, renamed between the runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Renamed {
    pub base: String,
    pub new: String,
    /// Its methods found in both runs.
    pub matched: usize,
}

/// The assembly of the program a run's command line names: the first argument whose file name,
/// without a `.dll` or `.exe` extension, is the assembly of one of its methods (`dotnet
/// /srv/app-v1.dll`, `mono app-v1.exe`, an app host `./app-v1`).
pub fn program_assembly(p: &Profile) -> Option<&str> {
    let assemblies: std::collections::HashSet<&str> = p.methods.iter().map(|m| m.assembly.as_str()).collect();
    p.run.command.iter().find_map(|arg| {
        let name = arg.rsplit('/').next()?;
        let stem = name.strip_suffix(".dll").or_else(|| name.strip_suffix(".exe")).unwrap_or(name);
        assemblies.get(stem).copied()
    })
}

/// The program's assembly when it was renamed between `base` and `new` and its methods are
/// still the same program's (see the module's documentation).
fn renamed_program(base: &Profile, new: &Profile) -> Option<Renamed> {
    let (a, b) = (program_assembly(base)?, program_assembly(new)?);
    let has = |p: &Profile, assembly: &str| p.methods.iter().any(|m| m.assembly == assembly);
    if a == b || has(base, b) || has(new, a) {
        return None;
    }
    let keys = |p: &Profile, assembly: &str| -> std::collections::HashSet<(String, String)> {
        (0..p.methods.len() as u32)
            .filter(|&id| p.methods[id as usize].assembly == assembly)
            .map(|id| (p.display_name(id).into_owned(), p.methods[id as usize].signature.clone()))
            .collect()
    };
    let (ka, kb) = (keys(base, a), keys(new, b));
    let matched = ka.intersection(&kb).count();
    (matched > 0 && 2 * matched >= ka.len().min(kb.len())).then(|| Renamed {
        base: a.to_string(),
        new: b.to_string(),
        matched,
    })
}

impl Diff {
    pub fn new(base: &Profile, new: &Profile, normalize: Normalize) -> Diff {
        let (a, b) = (Analysis::new(base), Analysis::new(new));
        let has_time = |p: &Profile, a: &Analysis| a.totals().total_ns > 0 || p.nodes.iter().any(|n| n.self_ns > 0);
        let weight = if has_time(base, &a) && has_time(new, &b) { Weight::Ns } else { Weight::Samples };
        let figures = |p: &Profile, a: &Analysis| -> Vec<(u64, u64)> {
            a.methods()
                .iter()
                .take(p.methods.len())
                .map(|m| match weight {
                    Weight::Ns => (m.self_ns, m.total_ns),
                    Weight::Samples => (m.self_samples, m.total_samples),
                })
                .collect()
        };
        let (fa, fb) = (figures(base, &a), figures(new, &b));
        let sum = |f: &[(u64, u64)]| f.iter().fold(0u64, |s, &(x, _)| s.saturating_add(x));
        let (base_total, new_total) = (sum(&fa), sum(&fb));
        let base_scale = match normalize {
            Normalize::Total if base_total > 0 && new_total > 0 => new_total as f64 / base_total as f64,
            _ => 1.0,
        };
        let sampled = base.run.mode == Mode::Sampling && new.run.mode == Mode::Sampling;
        let traced = base.run.mode == Mode::Tracing && new.run.mode == Mode::Tracing;

        // Methods by identity; a run that has one method several times (it should not) adds up.
        // The renamed program's methods are keyed without their assembly (`None`).
        let renamed = renamed_program(base, new);
        let program = |is_base: bool| renamed.as_ref().map(|r| if is_base { &r.base } else { &r.new });
        let mut by_key: HashMap<(String, String, Option<String>), MethodDiff> = HashMap::new();
        let mut add = |p: &Profile, a: &Analysis, f: &[(u64, u64)], scale: f64, is_base: bool| {
            for (id, m) in p.methods.iter().enumerate() {
                let stats = a.method(id as u32);
                let (raw_self, raw_total) = f[id];
                if stats.calls == 0 && raw_total == 0 && stats.total_samples == 0 {
                    continue;
                }
                let name = p.display_name(id as u32).into_owned();
                let assembly = (program(is_base) != Some(&m.assembly)).then(|| m.assembly.clone());
                let key = (name.clone(), m.signature.clone(), assembly);
                let entry = by_key.entry(key).or_insert_with(|| MethodDiff {
                    name,
                    assembly: m.assembly.clone(),
                    signature: m.signature.clone(),
                    base: None,
                    new: None,
                    z: None,
                    z_total: None,
                });
                if !is_base {
                    // A renamed program's method is shown with its assembly's new name.
                    entry.assembly.clone_from(&m.assembly);
                }
                let side = if is_base { &mut entry.base } else { &mut entry.new };
                let s = side.get_or_insert_with(Side::default);
                s.raw_self = s.raw_self.saturating_add(raw_self);
                s.raw_total = s.raw_total.saturating_add(raw_total);
                s.self_w = s.raw_self as f64 * scale;
                s.total_w = s.raw_total as f64 * scale;
                s.calls = s.calls.saturating_add(stats.calls);
                s.self_samples = s.self_samples.saturating_add(stats.self_samples);
                s.total_samples = s.total_samples.saturating_add(stats.total_samples);
            }
        };
        add(base, &a, &fa, base_scale, true);
        add(new, &b, &fb, 1.0, false);
        let mut methods: Vec<MethodDiff> = by_key.into_values().collect();
        if sampled {
            let samples = |p: &Analysis| p.methods().iter().fold(0u64, |s, m| s.saturating_add(m.self_samples));
            let (sa, sb) = (samples(&a), samples(&b));
            for m in &mut methods {
                let (x, y) = (m.base.map_or(0, |s| s.self_samples), m.new.map_or(0, |s| s.self_samples));
                m.z = z_statistic(x, sa, y, sb);
                let (x, y) = (m.base.map_or(0, |s| s.total_samples), m.new.map_or(0, |s| s.total_samples));
                m.z_total = z_statistic(x.min(sa), sa, y.min(sb), sb);
            }
        }
        methods.sort_by(|x, y| y.size().total_cmp(&x.size()).then_with(|| x.name.cmp(&y.name)));
        Diff { weight, normalize, base_total, new_total, base_scale, sampled, traced, methods, renamed }
    }
}

/// The two-proportion z statistic of `b` of `nb` against `a` of `na` (`None` without samples).
pub fn z_statistic(a: u64, na: u64, b: u64, nb: u64) -> Option<f64> {
    if na == 0 || nb == 0 {
        return None;
    }
    let (a, na, b, nb) = (a as f64, na as f64, b as f64, nb as f64);
    let p = (a + b) / (na + nb);
    let se = (p * (1.0 - p) * (1.0 / na + 1.0 / nb)).sqrt();
    if se == 0.0 {
        return Some(0.0);
    }
    Some((b / nb - a / na) / se)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{Builder, arb_profile};
    use proptest::prelude::*;

    #[test]
    fn z_statistic_matches_hand_computation() {
        // 100 of 1,000 against 150 of 1,000: p = 0.125, se = sqrt(0.125·0.875·0.002) ≈ 0.01479.
        let z = z_statistic(100, 1000, 150, 1000).unwrap();
        assert!((z - 3.3806).abs() < 1e-3, "{z}");
        assert_eq!(z_statistic(0, 1000, 0, 1000), Some(0.0));
        assert_eq!(z_statistic(1, 0, 1, 10), None);
    }

    /// A sampled run: `main` with the given self samples of each child method, one thread.
    fn sampled(children: &[(&str, u64)]) -> Profile {
        let mut b = Builder::new();
        let t = b.thread();
        let main = b.method("Acme.Main");
        let root = b.node(t, None, main, 0, 0, 100);
        for &(name, samples) in children {
            let m = b.method(name);
            b.node(t, Some(root), m, 0, 0, samples);
        }
        let mut p = b.finish();
        p.run.mode = Mode::Sampling;
        p.run.timing = None;
        p
    }

    #[test]
    fn sampled_runs_compare_by_share_with_a_noise_test() {
        let base = sampled(&[("Acme.Hot", 900), ("Acme.Gone", 50), ("Acme.Cold", 20)]);
        // Twice as long a run: Hot grew its share, Warm is new, Gone vanished, Cold kept its share.
        let new = sampled(&[("Acme.Hot", 1900), ("Acme.Warm", 100), ("Acme.Cold", 40)]);
        let d = Diff::new(&base, &new, Normalize::Total);
        assert_eq!(
            (d.weight, d.base_total, d.new_total, d.sampled, d.traced),
            (Weight::Samples, 1070, 2140, true, false)
        );
        let get = |name: &str| d.methods.iter().find(|m| m.name == name).unwrap();
        let hot = get("Acme.Hot");
        assert_eq!(hot.base.unwrap().self_w, 1800.0, "scaled by 2140 / 1070");
        // 900/1070 = 84.1% before, 1900/2140 = 88.8% after: z ≈ 3.8, larger than noise.
        assert!(hot.z.unwrap() > Z_SIGNIFICANT, "{hot:?}");
        assert_eq!(get("Acme.Warm").status(), "appeared");
        assert_eq!(get("Acme.Gone").status(), "vanished");
        // 20/1070 against 40/2140: the same share.
        assert_eq!(get("Acme.Cold").significant(), Some(false), "{:?}", get("Acme.Cold"));
        // Main's 100 samples were 9.3% of the base, 4.7% of the new run: it shrank, for real.
        assert!(get("Acme.Main").z.unwrap() < -Z_SIGNIFICANT, "{:?}", get("Acme.Main"));
        // The largest change first (self or total; four of ±100, by name).
        let order: Vec<&str> = d.methods.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(order, ["Acme.Gone", "Acme.Hot", "Acme.Main", "Acme.Warm", "Acme.Cold"]);
        // Without normalising, the figures are the raw ones.
        let raw = Diff::new(&base, &new, Normalize::None);
        assert_eq!(raw.methods.iter().find(|m| m.name == "Acme.Hot").unwrap().self_change(), 1000.0);
    }

    /// A traced run of program `assembly` (its command line names `/srv/{assembly}.dll`): Main
    /// calls each of `children` (name, calls) and the framework's `System.Console.WriteLine`.
    fn build(assembly: &str, children: &[(&str, u64)]) -> Profile {
        let mut b = Builder::new();
        let t = b.thread();
        let main = b.method("Acme.Main");
        let root = b.node(t, None, main, 1, 10, 0);
        for &(name, calls) in children {
            let m = b.method(name);
            b.node(t, Some(root), m, calls, 100 * calls, 0);
        }
        let write = b.method("System.Console.WriteLine");
        b.node(t, Some(root), write, 1, 5, 0);
        let mut p = b.finish();
        for m in &mut p.methods {
            let framework = m.name.starts_with("System.");
            m.assembly = if framework { "System.Console".into() } else { assembly.into() };
            m.module = format!("{}.dll", m.assembly);
        }
        p.run.command = vec!["dotnet".into(), format!("/srv/{assembly}.dll"), "2".into()];
        p
    }

    #[test]
    fn a_renamed_program_assembly_is_matched_by_method_names() {
        let base = build("app-v1", &[("Acme.Sort", 2), ("Acme.Parse", 2)]);
        let new = build("app-v2", &[("Acme.Sort", 6), ("Acme.Parse", 2), ("Acme.Extra", 1)]);
        assert_eq!((program_assembly(&base), program_assembly(&new)), (Some("app-v1"), Some("app-v2")));
        let d = Diff::new(&base, &new, Normalize::None);
        assert_eq!(d.renamed, Some(Renamed { base: "app-v1".into(), new: "app-v2".into(), matched: 3 }));
        let get = |name: &str| d.methods.iter().find(|m| m.name == name).unwrap();
        assert_eq!((get("Acme.Sort").status(), get("Acme.Sort").calls_change()), ("both", 4));
        assert_eq!(get("Acme.Sort").assembly, "app-v2");
        assert_eq!(get("Acme.Extra").status(), "appeared");
        assert_eq!(get("System.Console.WriteLine").status(), "both");
        assert_eq!(d.methods.len(), 5, "{:?}", d.methods);

        // One program against another that merely shares `Main`: nothing is matched across them.
        let other = build("tool", &[("Tool.Run", 1), ("Tool.Load", 1), ("Tool.Save", 1)]);
        let d = Diff::new(&base, &other, Normalize::None);
        assert_eq!(d.renamed, None);
        assert!(d.methods.iter().filter(|m| m.name == "Acme.Main").all(|m| m.status() != "both"));
        // The same name on both sides: matched by identity, as always.
        assert_eq!(Diff::new(&base, &base, Normalize::None).renamed, None);
    }

    proptest! {
        /// A profile against itself: no change, nothing significant, nothing appeared.
        #[test]
        fn a_profile_against_itself_changes_nothing(mut p in arb_profile(), sampling in any::<bool>()) {
            if sampling {
                p.run.mode = Mode::Sampling;
            }
            let d = Diff::new(&p, &p, Normalize::Total);
            for m in &d.methods {
                prop_assert_eq!(m.self_change(), 0.0);
                prop_assert_eq!(m.calls_change(), 0);
                prop_assert_eq!(m.status(), "both");
                prop_assert!(m.significant() != Some(true));
            }
        }
    }
}
