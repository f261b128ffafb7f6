//! Length-prefixed frames: a little-endian `u32` payload length, then a postcard-encoded message.

use serde::{Serialize, de::DeserializeOwned};
use std::io::{self, Read, Write};

/// Frames larger than this are refused: a snapshot of a few million nodes fits easily, a corrupt
/// length prefix does not make us allocate gigabytes.
pub const MAX_FRAME: u32 = 1 << 30;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FrameError {
    #[error("connection closed")]
    Closed,
    #[error("frame of {0} bytes exceeds the {MAX_FRAME}-byte limit")]
    TooLarge(u64),
    #[error("undecodable message: {0}")]
    Decode(#[from] postcard::Error),
    #[error(transparent)]
    Io(#[from] io::Error),
}

pub fn write_frame<T: Serialize>(w: &mut impl Write, message: &T) -> Result<(), FrameError> {
    w.write_all(&encode_frame(message)?)?;
    w.flush()?;
    Ok(())
}

/// `message` as the bytes [`write_frame`] would write: for a writer that sends them later.
pub fn encode_frame<T: Serialize>(message: &T) -> Result<Vec<u8>, FrameError> {
    let payload = postcard::to_stdvec(message)?;
    let len = u32::try_from(payload.len())
        .ok()
        .filter(|&l| l <= MAX_FRAME)
        .ok_or(FrameError::TooLarge(payload.len() as u64))?;
    let mut buf = Vec::with_capacity(4 + payload.len());
    buf.extend_from_slice(&len.to_le_bytes());
    buf.extend_from_slice(&payload);
    Ok(buf)
}

pub fn read_frame<T: DeserializeOwned>(r: &mut impl Read) -> Result<T, FrameError> {
    let mut len = [0u8; 4];
    match r.read_exact(&mut len) {
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Err(FrameError::Closed),
        other => other?,
    }
    let len = u32::from_le_bytes(len);
    if len > MAX_FRAME {
        return Err(FrameError::TooLarge(len.into()));
    }
    let mut payload = Vec::new();
    r.take(len.into()).read_to_end(&mut payload)?;
    if payload.len() != len as usize {
        return Err(FrameError::Io(io::ErrorKind::UnexpectedEof.into()));
    }
    Ok(postcard::from_bytes(&payload)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::*;
    use proptest::prelude::*;

    fn snapshot() -> AgentMessage {
        AgentMessage::Snapshot(Snapshot {
            seq: 3,
            last: true,
            wall_ns: 1_000,
            sample_interval_ns: 0,
            hook_cost: Some(HookCost { inner_ns: 1.5, outer_ns: 9.0 }),
            new_methods: vec![MethodRecord {
                id: 0,
                names: MethodNames {
                    name: "Acme.Outer+Inner.Grüße".into(),
                    signature: "() -> void".into(),
                    assembly: "Calls".into(),
                    module: "Calls.exe".into(),
                    path: "/app/Calls.exe".into(),
                    token: 0x0600_0002,
                    type_args: vec!["Acme.Row".into()],
                    method_args: vec![],
                },
            }],
            threads: vec![ThreadSnapshot {
                os_tid: 42,
                name: Some("worker".into()),
                wall_ns: 10,
                cpu_user_ns: 5,
                cpu_kernel_ns: 1,
                nodes: vec![NodeRecord {
                    parent: None,
                    method: 0,
                    calls: 7,
                    raw_total_ns: 99,
                    self_samples: 0,
                    sampled_self_ns: 0,
                }],
                last_sample: Some(0),
                walked: Some(0),
                events: vec![sonde_profile::NodeEvents {
                    node: 0,
                    alloc_bytes: 100_000,
                    alloc_count: 3,
                    wait_ns: 0,
                    exceptions_thrown: 1,
                }],
                leaf_offsets: vec![LeafOffset { node: 0, il_offset: 12, samples: 3 }],
            }],
            lost: 0,
            samples_taken: 0,
            samples_lost: Vec::new(),
            superseded: 0,
            fatal_signal: None,
            stacks_walked: 1,
            events: sonde_profile::RuntimeEvents {
                exceptions: vec![sonde_profile::ExceptionCount {
                    type_name: "System.InvalidOperationException".into(),
                    thrown: 4,
                    caught: 3,
                }],
                catches_counted: true,
                gc: sonde_profile::GcSummary {
                    count_by_gen: [3, 1, 0],
                    pause_ns_total: 700,
                    pause_ns_max: 400,
                    collections: vec![sonde_profile::GcCollection {
                        generation: 1,
                        reason: sonde_profile::GcReason::Other,
                        kind: sonde_profile::GcKind::Blocking,
                        start_ns: 5,
                        end_ns: 9,
                        pause_ns: 400,
                        heap_bytes_after: 4096,
                    }],
                },
                ..Default::default()
            },
            allocations: sonde_profile::Allocations {
                sampling: sonde_profile::AllocSampling::Sampled,
                sample_bytes: 100_000,
                samples: 1,
                by_type: vec![sonde_profile::AllocationCount {
                    type_name: "System.String".into(),
                    bytes: 100_000,
                    count: 3,
                }],
                exact_by_type: false,
            },
            allocations_exact_by_type: true,
            timeline: sonde_profile::Timeline {
                events: vec![sonde_profile::TimelineEvent {
                    kind: sonde_profile::TimelineKind::Exception { type_index: 0 },
                    os_tid: 42,
                    start_ns: 7,
                    end_ns: 7,
                }],
                dropped: 0,
            },
            loading: sonde_profile::Loading {
                methods_compiled: 9,
                jit_ns: 1_000_000,
                precompiled: Vec::new(),
                modules: vec![sonde_profile::ModuleLoad {
                    name: "Calls.exe".into(),
                    path: "/t/Calls.exe".into(),
                    loaded_ns: 5,
                }],
            },
            lines: vec![LineRecord { method: 0, il_offset: 12, self_samples: 3, total_samples: 5 }],
            precompiled: vec!["/usr/lib/mono/aot-cache/amd64/Calls.exe.so".into()],
            mapped_files: vec!["/app/libcodec.so".into()],
            sampler: "kernel".into(),
            coverage: vec![sonde_profile::MethodBlocks { method: 0, blocks: vec![(0, 3), (12, 1)] }],
            faults: sonde_profile::Faults {
                rules: vec![sonde_profile::FaultRule {
                    rule: "A.B=System.Exception".into(),
                    exception: "System.Exception".into(),
                    methods: vec![0],
                    problems: Vec::new(),
                }],
                injected: vec![sonde_profile::Fault { rule: 0, method: 0, os_tid: 42, at_ns: 9, caught_in: None }],
                dropped: 1,
            },
            call_trace: sonde_profile::CallTrace {
                events_per_thread: 8,
                threads: vec![sonde_profile::ThreadTrace {
                    os_tid: 42,
                    overwritten: 1,
                    events: vec![sonde_profile::TraceEvent { ns: 3, method: 0, depth: 1, exit: true }],
                }],
            },
        })
    }

    #[test]
    fn frames_round_trip_back_to_back() {
        let mut buf = Vec::new();
        write_frame(&mut buf, &snapshot()).unwrap();
        write_frame(&mut buf, &ControllerMessage::RequestSnapshot).unwrap();
        write_frame(&mut buf, &ControllerMessage::WalkStacks).unwrap();
        let mut r = &buf[..];
        assert_eq!(read_frame::<AgentMessage>(&mut r).unwrap(), snapshot());
        assert_eq!(read_frame::<ControllerMessage>(&mut r).unwrap(), ControllerMessage::RequestSnapshot);
        assert_eq!(read_frame::<ControllerMessage>(&mut r).unwrap(), ControllerMessage::WalkStacks);
        assert!(matches!(read_frame::<ControllerMessage>(&mut r), Err(FrameError::Closed)));
    }

    #[test]
    fn oversized_length_is_refused_before_allocating() {
        let buf = u32::MAX.to_le_bytes();
        assert!(matches!(read_frame::<AgentMessage>(&mut &buf[..]), Err(FrameError::TooLarge(_))));
    }

    proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
            let _ = read_frame::<AgentMessage>(&mut &bytes[..]);
        }

        #[test]
        fn truncated_frames_are_errors(cut in 0usize..64) {
            let mut buf = Vec::new();
            write_frame(&mut buf, &snapshot()).unwrap();
            let cut = cut.min(buf.len() - 1);
            prop_assert!(read_frame::<AgentMessage>(&mut &buf[..cut]).is_err());
        }
    }
}
