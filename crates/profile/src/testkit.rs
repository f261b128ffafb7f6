//! Profiles for tests: a builder for hand-made trees, nodes from rows and a proptest strategy
//! for random ones. All fill node totals from the selves (total = self + children's totals,
//! saturating), as an agent would.
//!
//! This crate's own tests use it; other crates' tests take it through the `testkit` feature (a
//! dev-dependency on `sonde-profile` with `features = ["testkit"]`).

use proptest::prelude::*;

use crate::model::{Method, Mode, Node, Profile, RunInfo, Runtime, Thread, Timing};

pub fn run_info(mode: Mode) -> RunInfo {
    RunInfo {
        mode,
        timing: (mode == Mode::Tracing).then_some(Timing::Exact),
        runtime: Runtime { kind: "coreclr".into(), version: "8.0.4".into() },
        command: vec!["dotnet".into(), "app.dll".into()],
        pid: 4242,
        exit_code: Some(0),
        signal: None,
        wall_ns: 1_000_000,
        started_unix_ms: 1_700_000_000_000,
        sample_interval_ns: 0,
        compensation: None,
        incomplete: false,
        lost: 0,
        sample_clock: None,
        samples_taken: 0,
        samples_lost: Vec::new(),
        agent_version: "0.1.0".into(),
        attach: None,
        sampler: None,
    }
}

/// A profile with nothing in it but [`run_info`]`(Mode::Tracing)`: no methods, threads or
/// nodes, no events, sources or other extensions. Tests name what they need and take the rest
/// from it (`Profile { methods, threads, nodes, ..blank() }`).
pub fn blank() -> Profile {
    Profile {
        run: run_info(Mode::Tracing),
        methods: Vec::new(),
        threads: Vec::new(),
        nodes: Vec::new(),
        events: Default::default(),
        sources: Default::default(),
        instantiations: Vec::new(),
        framework: None,
        coverage: Default::default(),
    }
}

/// `(thread, parent, method, calls, self_ns, self_samples)`: one node of [`nodes`].
pub type Row = (u32, Option<u32>, u32, u64, u64, u64);

/// Nodes from rows (parents before children), with their totals filled in.
pub fn nodes(rows: &[Row]) -> Vec<Node> {
    let mut nodes: Vec<Node> = rows.iter().copied().map(node).collect();
    crate::delta::fill_totals(&mut nodes);
    nodes
}

/// A node from a row, its totals left for [`crate::delta::fill_totals`].
fn node((thread, parent, method, calls, self_ns, self_samples): Row) -> Node {
    Node { thread, parent, method, calls, self_ns, total_ns: 0, self_samples, total_samples: 0 }
}

pub struct Builder {
    profile: Profile,
}

impl Default for Builder {
    fn default() -> Self {
        Builder::new()
    }
}

impl Builder {
    pub fn new() -> Builder {
        Builder { profile: blank() }
    }

    pub fn method(&mut self, name: &str) -> u32 {
        self.profile.methods.push(Method {
            name: name.into(),
            signature: "() -> void".into(),
            assembly: "App".into(),
            module: "App.dll".into(),
        });
        self.profile.methods.len() as u32 - 1
    }

    pub fn thread(&mut self) -> u32 {
        let os_tid = 100 + self.profile.threads.len() as u32;
        self.profile.threads.push(Thread { os_tid, name: None, wall_ns: 0, cpu_user_ns: 0, cpu_kernel_ns: 0 });
        os_tid - 100
    }

    /// Adds a node with the given calls, self time and self samples; totals come from `finish`.
    pub fn node(
        &mut self,
        thread: u32,
        parent: Option<u32>,
        method: u32,
        calls: u64,
        self_ns: u64,
        self_samples: u64,
    ) -> u32 {
        self.profile.nodes.push(node((thread, parent, method, calls, self_ns, self_samples)));
        self.profile.nodes.len() as u32 - 1
    }

    pub fn finish(mut self) -> Profile {
        crate::delta::fill_totals(&mut self.profile.nodes);
        self.profile
    }
}

/// Random valid profiles: few methods (so recursion is common), a few threads, small trees.
pub fn arb_profile() -> impl Strategy<Value = Profile> {
    let node = (any::<u32>(), any::<u32>(), any::<u32>(), 0..5u64, 0..1_000u64, 0..10u64);
    (1..5u32, 1..4u32, prop::collection::vec(node, 0..60)).prop_map(|(n_methods, n_threads, raw)| {
        let mut b = Builder::new();
        for m in 0..n_methods {
            b.method(&format!("M{m}"));
        }
        for _ in 0..n_threads {
            b.thread();
        }
        let mut on_thread: Vec<Vec<u32>> = vec![Vec::new(); n_threads as usize];
        for (t, p, m, calls, self_ns, self_samples) in raw {
            let thread = t % n_threads;
            let earlier = &on_thread[thread as usize];
            // One choice in four starts a new root; otherwise any earlier node of the thread.
            let parent = (p % 4 != 0 && !earlier.is_empty()).then(|| earlier[(p / 4) as usize % earlier.len()]);
            let id = b.node(thread, parent, m % n_methods, calls, self_ns, self_samples);
            on_thread[thread as usize].push(id);
        }
        b.finish()
    })
}
