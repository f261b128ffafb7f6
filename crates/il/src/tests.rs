use super::*;
use proptest::prelude::*;

/// A probe that cannot be mistaken for the test programs' own code: `ldnull; pop`.
const PROBE: &[u8] = &[0x14, 0x26];

fn tiny(code: &[u8]) -> Vec<u8> {
    let mut out = vec![(code.len() as u8) << 2 | TINY];
    out.extend_from_slice(code);
    out
}

#[test]
fn a_tiny_body_reads_and_writes_back_as_a_fat_one() {
    let body = MethodBody::parse(&tiny(&[0x17, 0x26, 0x2A])).unwrap();
    assert_eq!(body.max_stack, 8);
    assert_eq!(body.code, [0x17, 0x26, 0x2A]);
    let again = MethodBody::parse(&body.encode()).unwrap();
    assert_eq!(again, body);
    assert_eq!(MethodBody::parse(&[]), Err(Error::Truncated));
    assert_eq!(MethodBody::parse(&tiny(&[0x17])[..1]), Err(Error::Truncated));
}

#[test]
fn a_branch_to_a_probed_instruction_runs_the_probe() {
    // 0 ldc.i4.0; 1 brfalse.s 5; 3 ldc.i4.1; 4 pop; 5 ret
    let body = MethodBody::parse(&tiny(&[0x16, 0x2C, 0x02, 0x17, 0x26, 0x2A])).unwrap();
    let edited = body.insert(&[(5, PROBE)], 1).unwrap();
    // The branch became brfalse (long) to the probe at 8: offset 8 − (1 + 5) = 2.
    assert_eq!(edited.code, [0x16, 0x39, 2, 0, 0, 0, 0x17, 0x26, 0x14, 0x26, 0x2A]);
    assert_eq!(edited.max_stack, 9);
    assert_eq!(MethodBody::parse(&edited.encode()).unwrap(), edited);
}

#[test]
fn switch_targets_and_backward_branches_follow() {
    // 0 ldc.i4.0; 1 switch (2) → 15, 16; 14 nop; 15 nop; 16 br.s → 0; 18 ret
    let mut code = vec![0x16, 0x45, 2, 0, 0, 0];
    code.extend_from_slice(&1i32.to_le_bytes()); // 14 + 1 = 15
    code.extend_from_slice(&2i32.to_le_bytes()); // 16
    code.extend_from_slice(&[0x00, 0x00, 0x2B, (-18i8) as u8, 0x2A]);
    let body = MethodBody::parse(&tiny(&code)).unwrap();
    let edited = body.insert(&[(0, PROBE), (16, PROBE)], 1).unwrap();
    // Probe at 0 (2 bytes), ldc at 2, switch at 3..16, nop 16, nop 17, probe 18, br at 20, ret 25.
    let ins = edited.instructions().unwrap();
    let offsets: Vec<u32> = ins.iter().map(|i| i.offset).collect();
    assert_eq!(offsets, [0, 1, 2, 3, 16, 17, 18, 19, 20, 25]);
    let sw = &edited.code[3..16];
    let targets: Vec<i32> = (0..2).map(|k| i32::from_le_bytes(sw[5 + 4 * k..9 + 4 * k].try_into().unwrap())).collect();
    assert_eq!(targets, [17 - 16, 18 - 16], "the second case lands on the probe");
    assert_eq!(&edited.code[20..25], &[0x38, 0xE7, 0xFF, 0xFF, 0xFF], "br −25: from 25 back to the probe at 0");
}

#[test]
fn clauses_cover_the_probes_of_the_regions_they_start() {
    // try { 0 nop; 1 leave.s 6 } catch { 3 pop; 4 leave.s 6 } 6 ret; small EH section.
    let code = [0x00, 0xDE, 0x03, 0x26, 0xDE, 0x00, 0x2A];
    let mut bytes = vec![0x0B, 0x30, 2, 0]; // fat, MoreSects, header 3 dwords; max stack 2
    bytes.extend_from_slice(&(code.len() as u32).to_le_bytes());
    bytes.extend_from_slice(&0u32.to_le_bytes());
    bytes.extend_from_slice(&code);
    bytes.push(0); // align to 4 (12 + 7 = 19 → 20)
    bytes.extend_from_slice(&[0x01, 16, 0, 0]); // small EH section of one clause
    bytes.extend_from_slice(&0u16.to_le_bytes()); // catch
    bytes.extend_from_slice(&0u16.to_le_bytes()); // try 0
    bytes.push(3); // try length 3
    bytes.extend_from_slice(&3u16.to_le_bytes()); // handler 3
    bytes.push(3); // handler length 3
    bytes.extend_from_slice(&0x0100_0001u32.to_le_bytes()); // type token
    let body = MethodBody::parse(&bytes).unwrap();
    assert!(!body.init_locals);
    assert_eq!(
        body.clauses,
        [Clause {
            flags: 0,
            try_offset: 0,
            try_length: 3,
            handler_offset: 3,
            handler_length: 3,
            class_or_filter: 0x0100_0001
        }]
    );
    let edited = body.insert(&[(0, PROBE), (3, PROBE), (6, PROBE)], 1).unwrap();
    // probe 0, nop 2, leave 3 (5 bytes), probe 8, pop 10, leave 11, probe 16, ret 18
    assert_eq!(
        edited.clauses,
        [Clause {
            flags: 0,
            try_offset: 0,
            try_length: 8,
            handler_offset: 8,
            handler_length: 8,
            class_or_filter: 0x0100_0001
        }]
    );
    assert_eq!(MethodBody::parse(&edited.encode()).unwrap(), edited);
}

#[test]
fn nothing_goes_between_a_prefix_and_its_instruction() {
    // 0 tail. 2 call tok; 7 ret — and volatile. ldind.i4 elsewhere.
    let code = [0xFE, 0x14, 0x28, 1, 0, 0, 0x0A, 0x2A];
    let body = MethodBody::parse(&tiny(&code)).unwrap();
    assert_eq!(body.insert(&[(2, PROBE)], 1), Err(Error::NotInsertable(2)));
    assert_eq!(body.insert(&[(7, PROBE)], 1), Err(Error::NotInsertable(7)), "between a tail call and its ret");
    assert_eq!(body.insert(&[(1, PROBE)], 1), Err(Error::NotInsertable(1)), "not an instruction");
    assert!(body.insert(&[(0, PROBE)], 1).is_ok());
    assert_eq!(body.insertable().unwrap(), [0]);
}

#[test]
fn unknown_opcodes_and_bad_targets_are_refused() {
    assert_eq!(MethodBody::parse(&tiny(&[0x24])).unwrap().instructions(), Err(Error::UnknownOpcode(0x24, 0)));
    let body = MethodBody::parse(&tiny(&[0x2B, 0x01, 0x00, 0x2A])).unwrap(); // br.s into the middle? 2 + 1 = 3: ret, fine
    assert!(body.insert(&[(3, PROBE)], 1).is_ok());
    let bad = MethodBody::parse(&tiny(&[0x2B, 0x05, 0x2A])).unwrap(); // br.s to 7: past the end
    assert_eq!(bad.insert(&[], 0), Err(Error::BadTarget(0, 7)));
}

/// A test program: `nop`s, branches and switches to other instructions, `ret`.
#[derive(Debug, Clone)]
enum Op {
    Nop,
    Br(usize),
    Switch(Vec<usize>),
    Ret,
}

fn len(op: &Op) -> usize {
    match op {
        Op::Nop | Op::Ret => 1,
        Op::Br(_) => 5,
        Op::Switch(t) => 5 + 4 * t.len(),
    }
}

fn assemble(ops: &[Op]) -> Vec<u8> {
    let mut at = Vec::new();
    let mut o = 0;
    for op in ops {
        at.push(o);
        o += len(op);
    }
    let mut code = Vec::new();
    for (i, op) in ops.iter().enumerate() {
        let next = (at[i] + len(op)) as i64;
        match op {
            Op::Nop => code.push(0x00),
            Op::Ret => code.push(0x2A),
            Op::Br(t) => {
                code.push(0x38);
                code.extend_from_slice(&((at[*t] as i64 - next) as i32).to_le_bytes());
            }
            Op::Switch(ts) => {
                code.push(0x45);
                code.extend_from_slice(&(ts.len() as u32).to_le_bytes());
                for t in ts {
                    code.extend_from_slice(&((at[*t] as i64 - next) as i32).to_le_bytes());
                }
            }
        }
    }
    code
}

/// Runs `body` for `steps` instructions from offset 0 (branches taken; the k-th switch executed
/// takes case `k % (n + 1)`, n meaning fall through), returning the visited offsets.
fn run(body: &MethodBody, steps: usize) -> Vec<u32> {
    let ins = body.instructions().unwrap();
    let index: std::collections::HashMap<u32, usize> = ins.iter().enumerate().map(|(i, x)| (x.offset, i)).collect();
    let mut visited = Vec::new();
    let mut pc = 0u32;
    let mut switches = 0;
    for _ in 0..steps {
        let Some(&i) = index.get(&pc) else { break };
        let x = ins[i];
        visited.push(pc);
        let c = &body.code[pc as usize..(pc + x.len) as usize];
        let next = pc + x.len;
        pc = match c[0] {
            0x2A => break,
            0x38 => (i64::from(next) + i64::from(i32::from_le_bytes(c[1..5].try_into().unwrap()))) as u32,
            0x45 => {
                let n = u32::from_le_bytes(c[1..5].try_into().unwrap()) as usize;
                let k = switches % (n + 1);
                switches += 1;
                if k == n {
                    next
                } else {
                    (i64::from(next) + i64::from(i32::from_le_bytes(c[5 + 4 * k..9 + 4 * k].try_into().unwrap())))
                        as u32
                }
            }
            _ => next,
        };
    }
    visited
}

fn arb_program() -> impl Strategy<Value = (Vec<Op>, Vec<usize>)> {
    (2usize..30).prop_flat_map(|n| {
        let op = prop_oneof![
            4 => Just(Op::Nop),
            2 => (0..n).prop_map(Op::Br),
            1 => prop::collection::vec(0..n, 1..4).prop_map(Op::Switch),
        ];
        (prop::collection::vec(op, n - 1), prop::collection::vec(0..n, 0..10)).prop_map(|(mut ops, probes)| {
            ops.push(Op::Ret);
            (ops, probes)
        })
    })
}

proptest! {
    /// Whatever the program and wherever the probes go, the edited program visits the original
    /// instructions in the same order, and each probed instruction is entered through its probe
    /// (by falling through or by any branch).
    #[test]
    fn edited_programs_run_the_same_path_through_their_probes((ops, probes) in arb_program()) {
        let code = assemble(&ops);
        let body = MethodBody { max_stack: 8, local_var_sig: 0, init_locals: false, code, clauses: Vec::new() };
        let offsets: Vec<u32> = body.instructions().unwrap().iter().map(|i| i.offset).collect();
        let probes: Vec<(u32, &[u8])> = probes.iter().map(|&i| (offsets[i], PROBE)).collect();
        let edited = body.insert(&probes, 1).unwrap();
        prop_assert_eq!(MethodBody::parse(&edited.encode()).unwrap(), edited.clone());

        // The edited program's instructions: probes (ldnull; pop) and the originals in order.
        let ins = edited.instructions().unwrap();
        let mut original_of = std::collections::HashMap::new();
        let mut probe_before = std::collections::HashMap::new();
        let mut k = 0;
        let mut last_probe_pop = None;
        for x in &ins {
            match edited.code[x.offset as usize] {
                0x14 => {}
                0x26 => last_probe_pop = Some(x.offset),
                _ => {
                    original_of.insert(x.offset, k);
                    if let Some(p) = last_probe_pop.take() {
                        probe_before.insert(x.offset, p);
                    }
                    k += 1;
                }
            }
        }
        let steps = 200;
        let before: Vec<usize> = run(&body, steps).iter().map(|o| offsets.iter().position(|x| x == o).unwrap()).collect();
        let trace = run(&edited, steps * 4);
        let after: Vec<usize> = trace.iter().filter_map(|o| original_of.get(o).copied()).collect();
        let n = before.len().min(after.len());
        prop_assert_eq!(&before[..n], &after[..n]);
        for (w, o) in trace.iter().enumerate() {
            if let Some(p) = probe_before.get(o) {
                prop_assert!(w > 0 && trace[w - 1] == *p, "offset {} entered without its probe", o);
            }
        }
    }
}

#[test]
fn prepended_code_runs_once_outside_every_region() {
    // try { 0 nop; 1 leave.s 6 } catch { 3 pop; 4 leave.s 6 } 6 br.s 0 (a loop to the start)
    let code = vec![0x00, 0xDE, 0x03, 0x26, 0xDE, 0x00, 0x2B, 0xF8];
    let clause =
        Clause { flags: 0, try_offset: 0, try_length: 3, handler_offset: 3, handler_length: 3, class_or_filter: 1 };
    let body = MethodBody { max_stack: 1, local_var_sig: 0, init_locals: true, code, clauses: vec![clause] };
    let edited = body.prepend(PROBE, 2).unwrap();
    assert_eq!(&edited.code[..2], PROBE);
    assert_eq!(&edited.code[2..], &body.code[..], "branches are relative: the body moves unchanged");
    assert_eq!(edited.clauses[0], Clause { try_offset: 2, handler_offset: 5, ..clause });
    assert_eq!(edited.max_stack, 2);
    // The loop's br.s −8 from 10 lands on 2: the original first instruction, not the prologue.
    assert_eq!(10 + i64::from(edited.code[9] as i8), 2);
    assert_eq!(MethodBody::parse(&edited.encode()).unwrap(), edited);
}

proptest! {
    /// Prepending leaves the original program's path as it was, after the prologue.
    #[test]
    fn prepended_programs_run_the_same_path((ops, _) in arb_program()) {
        let code = assemble(&ops);
        let body = MethodBody { max_stack: 8, local_var_sig: 0, init_locals: false, code, clauses: Vec::new() };
        let edited = body.prepend(&[0x00, 0x00, 0x00], 0).unwrap();
        let before = run(&body, 200);
        let after: Vec<u32> = run(&edited, 203).into_iter().skip(3).map(|o| o - 3).collect();
        prop_assert_eq!(before, after);
    }
}
