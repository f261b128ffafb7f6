use proptest::prelude::*;

use super::*;
use crate::model::{
    AllocSampling, AllocationCount, Attach, Compensation, ExceptionCount, GcCollection, GcKind, GcReason,
    InvalidProfile, LineSamples, Loading, ModuleLoad, NodeEvents, NodeLine, SourceLine, Sources, Timeline,
    TimelineEvent, TimelineKind,
};
use crate::testkit::{Builder, arb_profile};

fn sample_profile() -> Profile {
    let mut b = Builder::new();
    let main = b.method("App.Program.Main");
    let fib = b.method("App.Math.Fib");
    let t = b.thread();
    let root = b.node(t, None, main, 1, 100, 1);
    let f1 = b.node(t, Some(root), fib, 1, 50, 2);
    b.node(t, Some(f1), fib, 2, 30, 3);
    let mut p = b.finish();
    p.run.compensation = Some(Compensation { inner_ns_per_call: 12.5, outer_ns_per_call: 3.25 });
    p.threads[0].name = Some("Main thread — ünïcode".into());
    p
}

fn encode(profile: &Profile) -> Vec<u8> {
    let mut bytes = Vec::new();
    write_profile(&mut bytes, profile).expect("write to a Vec");
    bytes
}

/// A version-1 file as version-1 builds wrote it: the `Profile` alone, no extensions.
fn encode_v1(profile: &Profile) -> Vec<u8> {
    let payload = postcard::to_stdvec(profile).unwrap();
    let mut bytes = MAGIC.to_vec();
    bytes.extend(1u32.to_le_bytes());
    bytes.extend((payload.len() as u64).to_le_bytes());
    bytes.extend(&payload);
    bytes.extend(crc32(&payload).to_le_bytes());
    bytes
}

#[test]
fn version_1_files_still_load() {
    let profile = sample_profile();
    assert_eq!(read_profile(&encode_v1(&profile)[..]).unwrap(), profile);
}

#[test]
fn extensions_round_trip_and_unknown_ones_are_skipped() {
    let mut profile = sample_profile();
    profile.run.attach = Some(Attach { attached_at_ns: 1_700_000_000_000_000_000, detached_at_ns: Some(7) });
    profile.events.exceptions.push(ExceptionCount { type_name: "System.IO.IOException".into(), thrown: 3, caught: 2 });
    profile.events.catches_counted = true;
    profile.events.gc.count_by_gen = [5, 1, 1];
    profile.events.gc.pause_ns_total = 9_000_000;
    profile.events.gc.collections.push(GcCollection {
        generation: 2,
        reason: GcReason::Induced,
        kind: GcKind::Blocking,
        start_ns: 10,
        end_ns: 20,
        pause_ns: 15,
        heap_bytes_after: 1 << 20,
    });
    profile.events.allocations = Allocations {
        sampling: AllocSampling::Sampled,
        sample_bytes: 100_000,
        samples: 2,
        by_type: vec![AllocationCount { type_name: "System.Byte[]".into(), bytes: 200_000, count: 20 }],
        exact_by_type: true,
    };
    profile.events.nodes = vec![
        NodeEvents { node: 0, exceptions_thrown: 3, ..Default::default() },
        NodeEvents { node: 2, alloc_bytes: 200_000, alloc_count: 20, wait_ns: 5, exceptions_thrown: 0 },
    ];
    profile.events.loading = Loading {
        methods_compiled: 1234,
        jit_ns: 56_000_000,
        modules: vec![ModuleLoad { name: "Acme.dll".into(), path: "/srv/acme/Acme.dll".into(), loaded_ns: 42 }],
        precompiled: vec!["/srv/acme/Acme.dll.so".into()],
    };
    profile.events.timeline = Timeline {
        events: vec![
            TimelineEvent { kind: TimelineKind::Jit, os_tid: 7, start_ns: 10, end_ns: 90 },
            TimelineEvent { kind: TimelineKind::Exception { type_index: 0 }, os_tid: 7, start_ns: 95, end_ns: 95 },
        ],
        dropped: 3,
    };
    profile.coverage = crate::model::Coverage {
        native: vec![crate::model::NativeFunction { module: "/srv/app".into(), symbol: "_Z6unusedv".into() }],
        managed: vec![crate::model::MethodBlocks { method: 1, blocks: vec![(0, 5), (7, 0)] }],
        lines: vec![crate::model::LineHits { method: 1, at: SourceLine { file: 0, line: 12 }, hits: 5 }],
    };
    profile.events.call_trace = crate::trace::CallTrace {
        events_per_thread: 4,
        threads: vec![crate::trace::ThreadTrace {
            os_tid: 7,
            overwritten: 9,
            events: vec![
                crate::trace::TraceEvent { ns: 100, method: 1, depth: 1, exit: false },
                crate::trace::TraceEvent { ns: 150, method: 1, depth: 1, exit: true },
            ],
        }],
    };
    profile.events.faults = crate::model::Faults {
        rules: vec![crate::model::FaultRule {
            rule: "Acme.*=System.TimeoutException@every:5".into(),
            exception: "System.TimeoutException".into(),
            methods: vec![1],
            problems: vec!["Acme.Big: the method body is truncated".into()],
        }],
        injected: vec![
            crate::model::Fault { rule: 0, method: 1, os_tid: 7, at_ns: 120, caught_in: Some(0) },
            crate::model::Fault { rule: 0, method: 1, os_tid: 7, at_ns: 130, caught_in: None },
        ],
        dropped: 0,
    };
    let mut broken = profile.clone();
    broken.events.faults.injected[0].rule = 1;
    assert!(matches!(broken.validate(), Err(InvalidProfile::FaultRuleOutOfRange)));
    broken.events.faults.injected[0] =
        crate::model::Fault { rule: 0, method: 99, os_tid: 7, at_ns: 1, caught_in: None };
    assert!(matches!(broken.validate(), Err(InvalidProfile::TraceMethodOutOfRange { method: 99, .. })));
    let at = |line| SourceLine { file: 0, line };
    profile.sources = Sources {
        files: vec!["/src/App/Math.cs".into()],
        methods: vec![(1, at(10))],
        lines: vec![LineSamples { method: 1, at: at(11), self_samples: 5, total_samples: 5 }],
        node_lines: vec![NodeLine { node: 1, at: at(11), samples: 2 }, NodeLine { node: 2, at: at(11), samples: 3 }],
    };
    let bytes = encode(&profile);
    assert_eq!(&bytes[8..12], &FORMAT_VERSION.to_le_bytes());
    assert_eq!(read_profile(&bytes[..]).unwrap(), profile);
    // Node lines beyond a node's own samples, or naming a node that is not there, are refused.
    for node_lines in
        [vec![NodeLine { node: 1, at: at(11), samples: 3 }], vec![NodeLine { node: 9, at: at(11), samples: 1 }]]
    {
        let mut broken = profile.clone();
        broken.sources.node_lines = node_lines;
        assert!(matches!(broken.validate(), Err(InvalidProfile::NodeLinesOutOfRange { .. })), "{:?}", broken.sources);
    }

    // A newer build's file: one more extension this build does not know.
    let mut payload = postcard::to_stdvec(&profile).unwrap();
    let mut list = extensions(&profile);
    list.push(("from-the-future".into(), vec![1, 2, 3]));
    payload.extend(postcard::to_stdvec(&list).unwrap());
    let mut newer = MAGIC.to_vec();
    newer.extend(2u32.to_le_bytes());
    newer.extend((payload.len() as u64).to_le_bytes());
    newer.extend(&payload);
    newer.extend(crc32(&payload).to_le_bytes());
    assert_eq!(read_profile(&newer[..]).unwrap(), profile);
}

#[test]
fn crc32_matches_the_standard_check_value() {
    assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
    assert_eq!(crc32(b""), 0);
}

#[test]
fn round_trip() {
    let profile = sample_profile();
    let bytes = encode(&profile);
    assert_eq!(&bytes[..8], b"SONDEPRF");
    assert_eq!(read_profile(&bytes[..]).unwrap(), profile);
}

#[test]
fn reads_exactly_one_profile_from_a_stream() {
    let profile = sample_profile();
    let mut bytes = encode(&profile);
    let len = bytes.len();
    bytes.extend_from_slice(b"trailing");
    let mut reader = &bytes[..];
    assert_eq!(read_profile(&mut reader).unwrap(), profile);
    assert_eq!(reader, b"trailing", "read {} bytes too many", bytes.len() - len - reader.len());
}

#[test]
fn save_and_load() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.sonde");
    let profile = sample_profile();
    save(&path, &profile).unwrap();
    save(&path, &profile).unwrap(); // overwriting works too
    assert_eq!(load(&path).unwrap(), profile);
    let names: Vec<_> = fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names, ["run.sonde"], "the temporary file was left behind");
}

#[test]
fn refuses_to_write_an_invalid_profile() {
    let mut profile = sample_profile();
    profile.nodes[0].method = 99;
    let e = write_profile(Vec::new(), &profile).unwrap_err();
    assert!(matches!(e, FileError::Invalid(InvalidProfile::MethodOutOfRange { node: 0, method: 99, .. })), "{e:?}");
    assert_eq!(e.to_string(), "invalid profile: node 0 names method 99 of 2");
}

#[test]
fn header_errors_are_specific() {
    let valid = encode(&sample_profile());
    let read = |bytes: &[u8]| read_profile(bytes).unwrap_err();

    assert!(matches!(read(b""), FileError::Empty));
    assert!(matches!(read(b"SONDE"), FileError::Truncated { part: "header" }));
    assert!(matches!(read(b"PK\x03\x04 not a profile"), FileError::NotAProfile));
    assert!(matches!(read(&valid[..15]), FileError::Truncated { part: "header" }));
    assert!(matches!(read(&valid[..valid.len() - 2]), FileError::Truncated { part: "checksum" }));
    assert!(matches!(read(&valid[..25]), FileError::Truncated { part: "payload" }));

    let mut v3 = valid.clone();
    v3[8] = 3;
    let err = read(&v3);
    assert!(matches!(err, FileError::UnsupportedVersion { found: 3 }));
    assert_eq!(err.to_string(), "unsupported profile format version 3 (this build reads versions 1 to 2)");

    let mut huge = valid.clone();
    huge[12..20].copy_from_slice(&u64::MAX.to_le_bytes());
    assert!(matches!(read(&huge), FileError::TooLarge { len: u64::MAX, .. }));

    let mut flipped = valid;
    flipped[HEADER_LEN] ^= 0x01;
    assert!(matches!(read(&flipped), FileError::ChecksumMismatch { .. }));
}

#[test]
fn a_checksummed_payload_that_does_not_decode_is_reported() {
    let payload = [0xFFu8; 7]; // a varint that never ends
    let mut bytes = MAGIC.to_vec();
    bytes.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    bytes.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    bytes.extend_from_slice(&payload);
    bytes.extend_from_slice(&crc32(&payload).to_le_bytes());
    assert!(matches!(read_profile(&bytes[..]), Err(FileError::Undecodable(_))));
}

#[test]
fn every_truncation_and_byte_flip_of_a_valid_file_is_an_error() {
    let valid = encode(&sample_profile());
    for len in 0..valid.len() {
        assert!(read_profile(&valid[..len]).is_err(), "truncation to {len} bytes was accepted");
    }
    for i in 0..valid.len() {
        for flip in [0x01, 0x80, 0xFF] {
            let mut bytes = valid.clone();
            bytes[i] ^= flip;
            assert!(read_profile(&bytes[..]).is_err(), "flip {flip:#x} at byte {i} was accepted");
        }
    }
}

proptest! {
    #[test]
    fn random_profiles_round_trip(profile in arb_profile()) {
        prop_assert_eq!(read_profile(&encode(&profile)[..]).unwrap(), profile);
    }

    #[test]
    fn arbitrary_bytes_are_an_error(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        prop_assert!(read_profile(&bytes[..]).is_err());
    }

    /// Garbage behind a well-formed header and a correct checksum reaches the decoder and
    /// `validate`; all that is asked of them is not to panic.
    #[test]
    fn arbitrary_payloads_do_not_panic(payload in prop::collection::vec(any::<u8>(), 0..256)) {
        let mut bytes = MAGIC.to_vec();
        bytes.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        bytes.extend_from_slice(&(payload.len() as u64).to_le_bytes());
        bytes.extend_from_slice(&payload);
        bytes.extend_from_slice(&crc32(&payload).to_le_bytes());
        let _ = read_profile(&bytes[..]);
    }

    #[test]
    fn truncations_are_an_error(profile in arb_profile(), cut in any::<prop::sample::Index>()) {
        let bytes = encode(&profile);
        let len = cut.index(bytes.len());
        prop_assert!(read_profile(&bytes[..len]).is_err());
    }

    #[test]
    fn single_byte_corruptions_are_an_error(
        profile in arb_profile(),
        at in any::<prop::sample::Index>(),
        flip in 1..=255u8,
    ) {
        let mut bytes = encode(&profile);
        let i = at.index(bytes.len());
        bytes[i] ^= flip;
        prop_assert!(read_profile(&bytes[..]).is_err());
    }
}
