//! The runtime's work for the program in a sampling profile, summed: how much of the run the JIT
//! compiled (and the code of which assemblies), and how much went to garbage collections — what
//! the `[jit] …` and `[gc]` frames (`crate::names::Work`) hold, for the first screen of a report
//! (text: "Runtime work"; JSON: `runtime_work`).
//!
//! A work frame's figures are its totals: the runtime's native frames below it, and any managed
//! code it ran (a class constructor the JIT ran). Nested work counts once per kind, the
//! outermost frame: a compilation inside a compilation (the class constructor needed compiling)
//! is not counted twice; a collection inside a compilation counts in both.

use std::collections::{HashMap, HashSet};

use crate::model::Profile;
use crate::names::Work;

/// One kind of work's figures.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WorkTotals {
    pub samples: u64,
    pub ns: u64,
    /// Distinct frames: for the JIT, the methods sampled while being compiled.
    pub frames: u64,
}

/// The JIT's work on the methods of one assembly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AssemblyWork {
    /// The assembly of the methods compiled (empty: not known).
    pub assembly: String,
    pub samples: u64,
    pub ns: u64,
    /// Its methods sampled while being compiled.
    pub methods: u64,
}

/// The runtime's work in a profile.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RuntimeWork {
    pub jit: WorkTotals,
    pub gc: WorkTotals,
    pub type_load: WorkTotals,
    /// The JIT's work by the assembly of the method compiled, heaviest first (ties by name).
    pub jit_by_assembly: Vec<AssemblyWork>,
}

impl RuntimeWork {
    /// One pass over the nodes (parents precede children). Expects a profile that passes
    /// [`Profile::validate`].
    pub fn new(profile: &Profile) -> RuntimeWork {
        let work: Vec<Option<Work>> = (0..profile.methods.len() as u32).map(|m| profile.work(m)).collect();
        let bit = |w: Work| -> u8 {
            match w {
                Work::Jit => 1,
                Work::Gc => 2,
                Work::TypeLoad => 4,
            }
        };
        // The kinds of work on each node's path, itself included.
        let mut within = vec![0u8; profile.nodes.len()];
        let mut summary = RuntimeWork::default();
        let mut frames: [HashSet<u32>; 3] = Default::default();
        let mut by_assembly: HashMap<&str, (AssemblyWork, HashSet<u32>)> = HashMap::new();
        for (i, node) in profile.nodes.iter().enumerate() {
            let above = node.parent.map_or(0, |p| within[p as usize]);
            let Some(kind) = work[node.method as usize] else {
                within[i] = above;
                continue;
            };
            within[i] = above | bit(kind);
            let (totals, seen) = match kind {
                Work::Jit => (&mut summary.jit, &mut frames[0]),
                Work::Gc => (&mut summary.gc, &mut frames[1]),
                Work::TypeLoad => (&mut summary.type_load, &mut frames[2]),
            };
            seen.insert(node.method);
            let outermost = above & bit(kind) == 0;
            if outermost {
                totals.samples = totals.samples.saturating_add(node.total_samples);
                totals.ns = totals.ns.saturating_add(node.total_ns);
            }
            if kind == Work::Jit {
                let assembly = profile.methods[node.method as usize].assembly.as_str();
                let (entry, methods) = by_assembly.entry(assembly).or_insert_with(|| {
                    let entry = AssemblyWork { assembly: assembly.to_string(), samples: 0, ns: 0, methods: 0 };
                    (entry, HashSet::new())
                });
                methods.insert(node.method);
                if outermost {
                    entry.samples = entry.samples.saturating_add(node.total_samples);
                    entry.ns = entry.ns.saturating_add(node.total_ns);
                }
            }
        }
        summary.jit.frames = frames[0].len() as u64;
        summary.gc.frames = frames[1].len() as u64;
        summary.type_load.frames = frames[2].len() as u64;
        summary.jit_by_assembly = by_assembly
            .into_values()
            .map(|(mut entry, methods)| {
                entry.methods = methods.len() as u64;
                entry
            })
            .collect();
        summary
            .jit_by_assembly
            .sort_by(|a, b| (b.samples, b.ns).cmp(&(a.samples, a.ns)).then(a.assembly.cmp(&b.assembly)));
        summary
    }

    /// True when the profile holds no work frame.
    pub fn is_empty(&self) -> bool {
        self.jit == WorkTotals::default() && self.gc == WorkTotals::default() && self.type_load == WorkTotals::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::Builder;

    #[test]
    fn work_is_summed_by_kind_once_per_nesting_and_by_assembly() {
        let mut b = Builder::new();
        let t = b.thread();
        let main = b.method("Acme.Program.Main");
        let load = b.method("[jit] Acme.Program.Load");
        let cctor = b.method("Acme.Program..cctor");
        let inner = b.method("[jit] Acme.Program.Helper");
        let gc = b.method("[gc]");
        let parse = b.method("[jit] Other.Parser.Parse");
        let native = b.method("[native] libcoreclr.so");
        let root = b.node(t, None, main, 0, 0, 10);
        let jit = b.node(t, Some(root), load, 0, 0, 20);
        let c = b.node(t, Some(jit), cctor, 0, 0, 1);
        let nested = b.node(t, Some(c), inner, 0, 0, 5);
        b.node(t, Some(nested), gc, 0, 0, 3);
        b.node(t, Some(root), parse, 0, 0, 7);
        b.node(t, Some(root), gc, 0, 0, 4);
        b.node(t, Some(root), native, 0, 0, 100);
        let mut profile = b.finish();
        profile.methods[parse as usize].assembly = "Other".into();

        let work = RuntimeWork::new(&profile);
        assert_eq!(work.jit, WorkTotals { samples: 20 + 1 + 5 + 3 + 7, ns: 0, frames: 3 });
        assert_eq!(work.gc, WorkTotals { samples: 3 + 4, ns: 0, frames: 1 });
        assert_eq!(work.type_load, WorkTotals::default());
        let by: Vec<(&str, u64, u64)> =
            work.jit_by_assembly.iter().map(|a| (a.assembly.as_str(), a.samples, a.methods)).collect();
        assert_eq!(by, vec![("App", 29, 2), ("Other", 7, 1)]);
        assert!(!work.is_empty());
        assert!(RuntimeWork::new(&Builder::new().finish()).is_empty());
    }
}
