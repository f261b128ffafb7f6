//! The messages. The agent speaks first ([`Hello`]); the controller answers [`ControllerMessage::Welcome`]
//! or [`ControllerMessage::Reject`]; after that the controller may ask for snapshots at any time and
//! the agent sends a final snapshot on its own when the runtime shuts down.
//!
//! Snapshots are cumulative: each one carries the complete call trees (counters only grow), so a
//! lost or skipped snapshot loses nothing but freshness. Method metadata is incremental: a snapshot
//! carries the methods that no snapshot delivered earlier on this connection carried (it may
//! repeat some: the receiver keeps one record per id).

use serde::{Deserialize, Serialize};
pub use sonde_metadata::MethodNames;
use sonde_profile::{
    Allocations, Loading, LostSamples, Mode, NodeEvents, Runtime, RuntimeEvents, SampleClock, Timeline, Timing,
};

/// Bumped on any incompatible change to the messages below.
pub const PROTOCOL_VERSION: u32 = 15;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hello {
    pub protocol: u32,
    pub agent_version: String,
    pub pid: u32,
    pub runtime: Runtime,
    pub mode: Mode,
    pub timing: Timing,
    /// Sampling mode: the clock driving the sampler.
    pub clock: Option<SampleClock>,
    /// The process's own command line (`/proc/self/cmdline`).
    pub command_line: Vec<String>,
    pub started_unix_ms: u64,
}

// A snapshot is the message that matters, and one at a time is in flight: its size on the stack
// costs nothing worth a box on every use.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum AgentMessage {
    Hello(Hello),
    Snapshot(Snapshot),
    /// Something went wrong in the agent; profiling of this process stopped.
    Error(String),
    /// A piece of a heap snapshot ([`ControllerMessage::TakeHeap`]), in the order the runtime
    /// gave it. Since protocol 15.
    HeapChunk(HeapChunk),
    /// The heap snapshot is complete (or failed): nothing more of it follows.
    HeapEnd(HeapEnd),
}

/// One of the runtime's own records of its heap walk, passed on as it came (CoreCLR: the
/// payload of a `GCBulkNode`, `GCBulkEdge`, `GCBulkRootEdge`, … event of
/// `Microsoft-Windows-DotNETRuntime`, in the manifest's layout; the controller decodes it,
/// `sonde_heap::clr`). The agent neither decodes nor keeps the graph: it streams it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeapChunk {
    /// The event's id in its provider's manifest.
    pub event: u32,
    pub version: u32,
    pub payload: Vec<u8>,
}

impl HeapChunk {
    /// The most bytes [`HeapChunk::write_frame`] adds to a payload: the frame's length (4), the
    /// message's variant (1) and three varints (5 each at most).
    pub const FRAME_OVERHEAD: usize = 4 + 1 + 3 * 5;

    /// Writes the frame of `AgentMessage::HeapChunk { event, version, payload }` — the bytes
    /// `encode_frame` gives it (`tests::a_heap_chunk_frame_is_encode_frame_s`) — into `out`, after
    /// what it holds, without allocating when `out` has `payload.len() + FRAME_OVERHEAD` to spare:
    /// the agent writes pieces of a heap walk while the runtime's world is stopped, where a
    /// thread stopped inside `malloc` could hold its lock.
    pub fn write_frame(out: &mut Vec<u8>, event: u32, version: u32, payload: &[u8]) {
        fn varint(out: &mut Vec<u8>, mut n: u64) {
            while n >= 0x80 {
                out.push((n as u8) | 0x80);
                n >>= 7;
            }
            out.push(n as u8);
        }
        let start = out.len();
        out.extend_from_slice(&[0; 4]);
        varint(out, AgentMessage::HEAP_CHUNK_VARIANT);
        varint(out, event.into());
        varint(out, version.into());
        varint(out, payload.len() as u64);
        out.extend_from_slice(payload);
        let len = (out.len() - start - 4) as u32;
        out[start..start + 4].copy_from_slice(&len.to_le_bytes());
    }
}

impl AgentMessage {
    /// [`AgentMessage::HeapChunk`]'s place among the variants (postcard writes it as the tag).
    const HEAP_CHUNK_VARIANT: u64 = 3;
}

/// How a heap snapshot ended.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeapEnd {
    /// Why there is no snapshot (or only part of one); `None` when it is whole.
    pub error: Option<String>,
    /// How long the program was stopped for the collection and the walk, in nanoseconds.
    pub pause_ns: u64,
    /// The [`HeapChunk`]s sent for this snapshot.
    pub chunks: u64,
    /// Names of types the walk referred to without describing (`TypeID` → name), found by the
    /// agent after the collection.
    pub type_names: Vec<(u64, String)>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ControllerMessage {
    Welcome {
        protocol: u32,
    },
    /// The controller cannot talk to this agent (e.g. protocol version mismatch).
    Reject {
        reason: String,
    },
    RequestSnapshot,
    /// Stop profiling this process: send the final snapshot (`last`), then stop sampling and
    /// leave the process as it was — an attached CoreCLR agent asks the runtime to detach it.
    /// The process runs on.
    Finish,
    /// Stop adding samples to the call trees until [`ControllerMessage::Resume`] (sampling mode;
    /// the timers keep running, the handler returns at once). A tracing agent ignores it: its
    /// enter/leave pairs must stay balanced.
    Pause,
    Resume,
    /// Have the runtime walk every managed thread's stack at one instant (CoreCLR: the runtime
    /// suspended as for a GC), record each in its thread's tree without counting it as a sample
    /// (`ThreadSnapshot::walked`), then send a snapshot (`Snapshot::stacks_walked` counts these
    /// requests, answered or failed). `sonde dump`'s exact stacks; an agent whose runtime cannot
    /// do it answers with the snapshot alone.
    WalkStacks,
    /// Take a heap snapshot: a full, blocking collection, its object graph streamed as
    /// [`AgentMessage::HeapChunk`]s, then [`AgentMessage::HeapEnd`]. Since protocol 15.
    TakeHeap,
}

/// A method the agent traced or saw, identified by the agent's dense method id: its names as
/// the agent's metadata readers spelt them (a pseudo-method's name, assembly and module, the rest
/// empty: no signature, path or token).
///
/// Encoded as the id followed by the names' fields in their order (postcard writes a nested
/// struct's fields in place): the layout of the flat record protocol 13 defined, so this type
/// changed no byte on the wire (`tests::a_method_record_keeps_its_layout`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MethodRecord {
    pub id: u32,
    pub names: MethodNames,
}

/// What a profile keeps of a method: its name, signature, assembly and module (the path, token
/// and type arguments serve the controller: symbols, framework detection, instantiations).
impl From<&MethodRecord> for sonde_profile::Method {
    fn from(record: &MethodRecord) -> Self {
        let names = &record.names;
        sonde_profile::Method {
            name: names.name.clone(),
            signature: names.signature.clone(),
            assembly: names.assembly.clone(),
            module: names.module.clone(),
        }
    }
}

/// Samples at one IL offset of one method, cumulative (sampling mode). Resolved to a source line
/// by the controller, through the method's symbols.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LineRecord {
    pub method: u32,
    pub il_offset: u32,
    /// Samples whose innermost frame was at this offset.
    pub self_samples: u64,
    /// Samples with this method at this offset anywhere on the stack (once per sample).
    pub total_samples: u64,
}

/// One call-tree node. Nodes of a thread are listed parents first; `parent` is an index into the
/// same list, `None` for the thread's top-level calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeRecord {
    pub parent: Option<u32>,
    pub method: u32,
    pub calls: u64,
    /// Inclusive wall time measured by the hooks, not yet corrected for their own cost.
    pub raw_total_ns: u64,
    /// Sampler ticks in which this node was the thread's innermost traced frame.
    pub self_samples: u64,
    /// Time attributed by those ticks.
    pub sampled_self_ns: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadSnapshot {
    pub os_tid: u32,
    pub name: Option<String>,
    pub wall_ns: u64,
    pub cpu_user_ns: u64,
    pub cpu_kernel_ns: u64,
    pub nodes: Vec<NodeRecord>,
    /// Sampling mode: the node (index into `nodes`) of the thread's latest sample — with its
    /// parents, the stack it was last seen in (`sonde dump`). `None` before its first sample.
    pub last_sample: Option<u32>,
    /// The node of the thread's stack in the latest runtime walk ([`ControllerMessage::WalkStacks`]),
    /// with its parents; `None` when no walk found the thread.
    pub walked: Option<u32>,
    /// Allocations, waits and throws attributed to nodes (`node` an index into `nodes`),
    /// ascending, only nodes with something to count.
    pub events: Vec<NodeEvents>,
    /// Sampling mode: each node's own samples by the IL offset its method was at (the innermost
    /// frame's), by node (an index into `nodes`) then offset; offsets the runtime did not map
    /// are left out.
    pub leaf_offsets: Vec<LeafOffset>,
}

/// Samples of one call-tree node at one IL offset of its method (sampling mode).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeafOffset {
    pub node: u32,
    pub il_offset: u32,
    pub samples: u64,
}

/// The hooks' own cost, measured by the agent at start-up (see `docs/ARCHITECTURE.md`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct HookCost {
    /// Cost that falls inside a call's own enter→leave interval.
    pub inner_ns: f64,
    /// Cost a caller sees around each call it makes (both hooks, end to end).
    pub outer_ns: f64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    pub seq: u64,
    /// The runtime is shutting down; no snapshot follows.
    pub last: bool,
    pub wall_ns: u64,
    pub sample_interval_ns: u64,
    pub hook_cost: Option<HookCost>,
    pub new_methods: Vec<MethodRecord>,
    pub threads: Vec<ThreadSnapshot>,
    /// Calls the agent could not record (call tree full, or the thread state unavailable).
    pub lost: u64,
    /// Sampling mode: samples taken so far (each counts the periods it stands for).
    pub samples_taken: u64,
    /// Sampling mode: samples lost so far, by reason.
    pub samples_lost: Vec<LostSamples>,
    /// Snapshots the agent built but replaced by a newer one before it could send them, so far:
    /// the controller was not reading (stopped, or slow). Nothing is lost while it lives — each
    /// snapshot holds everything — but a process that dies meanwhile leaves an older one.
    pub superseded: u64,
    /// The process received a signal that is fatal whatever happens next (SIGABRT: `abort()`
    /// never returns). The controller reports that death even when the process's exit status
    /// says otherwise (Mono's sampler can turn an abort into `exit(0)`).
    pub fatal_signal: Option<i32>,
    /// [`ControllerMessage::WalkStacks`] requests done so far (walked or failed).
    pub stacks_walked: u32,
    /// The runtime's events so far (cumulative, like the trees); its `allocations`, `nodes` and
    /// `loading` travel in [`Snapshot::allocations`], [`ThreadSnapshot::events`] and
    /// [`Snapshot::loading`].
    pub events: RuntimeEvents,
    /// Allocations by type so far.
    pub allocations: Allocations,
    /// `allocations.by_type` counts every allocation exactly ([`Allocations::exact_by_type`],
    /// which the encoding of `Allocations` skips).
    pub allocations_exact_by_type: bool,
    /// JIT compilations and module loads so far.
    pub loading: Loading,
    /// The timeline's events so far.
    pub timeline: Timeline,
    /// What each thread's call-trace ring holds now (`--call-trace`; empty without one).
    pub call_trace: sonde_profile::CallTrace,
    /// Coverage mode: every rewritten method's blocks and their counts so far.
    pub coverage: Vec<sonde_profile::MethodBlocks>,
    /// The error simulator's rules and the faults it injected so far (`--inject`).
    pub faults: sonde_profile::Faults,
    /// Sampling mode: samples by method and IL offset so far, where the runtime maps the code
    /// back to IL (managed frames).
    pub lines: Vec<LineRecord>,
    /// Mono, tracing and coverage: the precompiled (AOT) images whose code ran untraced so far
    /// (`Loading::precompiled`, which `loading`'s encoding leaves out).
    pub precompiled: Vec<String>,
    /// Tracing a .NET program without `--native-hooks`: every file the process has mapped
    /// executable so far (`/proc/self/maps`), for the controller to tell the libraries built
    /// with `-finstrument-functions`, whose hooks then run glibc's empty ones (docs/NATIVE.md).
    /// Empty otherwise.
    pub mapped_files: Vec<String>,
    /// Sampling mode: which sampler raises the samples (`kernel`, `signal-timers`,
    /// `signal-thread`, `runtime`: see `RunInfo::sampler`). Empty otherwise. Since protocol 14.
    pub sampler: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bytes protocol 13's flat record (unchanged in 14) (`id, name, signature, assembly, module, path, token,
    /// type_args, method_args`) encoded to, from before the names became one shared type.
    #[test]
    fn a_heap_chunk_frame_is_encode_frame_s() {
        for (event, version, len) in [(18u32, 0u32, 0usize), (19, 1, 127), (16, 300, 128), (15, 0, 65_000)] {
            let payload: Vec<u8> = (0..len).map(|i| i as u8).collect();
            let want =
                crate::encode_frame(&AgentMessage::HeapChunk(HeapChunk { event, version, payload: payload.clone() }))
                    .unwrap();
            let mut out = Vec::with_capacity(len + HeapChunk::FRAME_OVERHEAD);
            let capacity = out.capacity();
            HeapChunk::write_frame(&mut out, event, version, &payload);
            assert_eq!(out, want);
            assert_eq!(out.capacity(), capacity, "no allocation");
        }
    }

    #[test]
    fn a_method_record_keeps_its_layout() {
        let record = MethodRecord {
            id: 7,
            names: MethodNames {
                name: "Acme.Run".into(),
                signature: "() -> void".into(),
                assembly: "Acme".into(),
                module: "Acme.dll".into(),
                path: "/app/Acme.dll".into(),
                token: 0x0600_0002,
                type_args: vec!["int".into()],
                method_args: vec!["string".into(), "bool".into()],
            },
        };
        let flat = b"\x07\x08Acme.Run\x0a() -> void\x04Acme\x08Acme.dll\x0d/app/Acme.dll\x82\x80\x80\x30\x01\x03int\x02\x06string\x04bool";
        assert_eq!(postcard::to_stdvec(&record).unwrap(), flat);
        assert_eq!(postcard::from_bytes::<MethodRecord>(flat).unwrap(), record);
    }
}
