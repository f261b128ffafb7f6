//! Every method body of real assemblies through the editor: .NET's own `System.Private.CoreLib`
//! (the runtime `scripts/setup.sh` provides, named by `SONDE_DOTNET`) and Mono's C# compiler.
//! Each body is read, cut into instructions, given a probe before every instruction where one
//! may go, written and read back: the same instructions, in the same order, each after its
//! probe, with every clause still on instruction boundaries.

use sonde_il::MethodBody;
use sonde_il::opcodes::{Operand, long_form};
use sonde_metadata::tables::{pe_metadata, pe_rva_to_offset};
use std::path::{Path, PathBuf};

const PROBE: &[u8] = &[0x14, 0x26]; // ldnull; pop

/// System.Private.CoreLib.dll of the .NET 8 runtime beside `SONDE_DOTNET`.
fn corelib() -> PathBuf {
    let dotnet = std::env::var_os("SONDE_DOTNET")
        .expect("SONDE_DOTNET is not set: run scripts/setup.sh, then `source target/sonde-env.sh`");
    let shared = Path::new(&dotnet).parent().expect("the dotnet host's directory").join("shared/Microsoft.NETCore.App");
    let mut versions: Vec<PathBuf> = std::fs::read_dir(&shared)
        .unwrap_or_else(|e| panic!("{}: {e}", shared.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("8.")))
        .collect();
    versions.sort();
    versions.pop().expect("a .NET 8 runtime").join("System.Private.CoreLib.dll")
}

/// Edits every method of the assembly at `path`; returns (methods, probes inserted).
fn edit_every_method(path: &Path) -> (usize, usize) {
    let file = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let md = pe_metadata(&file).expect("a .NET assembly's metadata");
    let (mut methods, mut probes) = (0, 0);
    for row in 1..=md.method_count() {
        let rva = md.method_rva(row).expect("an RVA");
        if rva == 0 {
            continue;
        }
        let at = pe_rva_to_offset(&file, rva).expect("a body inside a section") as usize;
        let body = MethodBody::parse(&file[at..]).unwrap_or_else(|e| panic!("method {row:#x}: {e}"));
        let instructions = body.instructions().unwrap_or_else(|e| panic!("method {row:#x}: {e}"));
        // A probe before every instruction that may have one.
        let wanted: Vec<(u32, &[u8])> =
            body.insertable().expect("decodes").into_iter().map(|offset| (offset, PROBE)).collect();
        let edited = body.insert(&wanted, 2).unwrap_or_else(|e| panic!("method {row:#x}: {e}"));
        let back = MethodBody::parse(&edited.encode()).expect("the edited body reads back");
        assert_eq!(back, edited, "method {row:#x}");
        let after = back.instructions().expect("the edited body decodes");
        assert_eq!(after.len(), instructions.len() + 2 * wanted.len(), "method {row:#x}");
        // Walk the edited code: each probed instruction right after its probe, every original
        // instruction in order (short branches in their long form).
        let opcode_at: std::collections::HashMap<u32, (u16, u32)> =
            after.iter().map(|x| (x.offset, (x.opcode, x.len))).collect();
        let probed: std::collections::HashSet<u32> = wanted.iter().map(|w| w.0).collect();
        let mut at = 0u32;
        for ins in &instructions {
            if probed.contains(&ins.offset) {
                assert_eq!(&back.code[at as usize..at as usize + 2], PROBE, "method {row:#x} at {}", ins.offset);
                at += 2;
            }
            let expected = match ins.operand {
                Operand::ShortBranch => u16::from(long_form(ins.opcode as u8)),
                _ => ins.opcode,
            };
            let (opcode, len) = opcode_at[&at];
            assert_eq!(opcode, expected, "method {row:#x} at {}", ins.offset);
            at += len;
        }
        assert_eq!(at as usize, back.code.len(), "method {row:#x}");
        assert_eq!(back.clauses.len(), body.clauses.len());
        methods += 1;
        probes += wanted.len();
    }
    (methods, probes)
}

#[test]
fn every_method_of_corelib_is_edited_and_reads_back() {
    let (methods, probes) = edit_every_method(&corelib());
    assert!(methods > 20_000, "{methods} method bodies");
    println!("System.Private.CoreLib: {methods} method bodies, {probes} probes");
}

#[test]
fn every_method_of_mcs_is_edited_and_reads_back() {
    let (methods, probes) = edit_every_method(Path::new("/usr/lib/mono/4.5/mcs.exe"));
    assert!(methods > 5_000, "{methods} method bodies");
    println!("mcs.exe: {methods} method bodies, {probes} probes");
}
