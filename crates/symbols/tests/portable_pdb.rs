//! Portable PDBs, as Roslyn writes them: `Python.Runtime.pdb` of PyPI's pythonnet 3.0.3 (a
//! Release build). Expected lines come from pythonnet's source at tag `v3.0.3`, quoted below.

mod support;

use sonde_symbols::{AssemblySymbols, Error, SourceLine, SymbolsKind};
use std::path::Path;
use support::{compile_with_mcs, copy_into, lines_source, metadata_methods, python_runtime};

/// Where the build that PyPI published compiled pythonnet's sources: the paths Roslyn wrote.
const SOURCES: &str = "/tmp/build-via-sdist-h3j67_wc/pythonnet-3.0.3/src/runtime/";

fn token_of(methods: &[(u32, String, String)], name: &str, signature: &str) -> u32 {
    methods
        .iter()
        .find(|(_, n, s)| n == name && s == signature)
        .unwrap_or_else(|| panic!("no method {name} {signature}"))
        .0
}

#[test]
fn every_method_with_sequence_points_has_a_line_in_a_cs_file() {
    let dll = python_runtime();
    let symbols = AssemblySymbols::open(&dll).expect("symbols open").expect("Python.Runtime.pdb is beside the dll");
    assert_eq!(symbols.kind(), SymbolsKind::PortablePdb);
    let methods = metadata_methods(&dll);
    let mut with_lines = 0;
    for (token, name, signature) in &methods {
        let first = symbols.first_line(*token);
        // A method with any line at all has a first one, and the other way round.
        assert_eq!(first.is_some(), symbols.line(*token, u32::MAX).is_some(), "{name} {signature}");
        let Some(first) = first else { continue };
        with_lines += 1;
        // Sources of the project, or C# files that a NuGet package adds to it ("contentFiles"),
        // compiled from the build machine's package cache.
        let in_cache = first.file.contains("/.nuget/packages/");
        assert!((first.file.starts_with(SOURCES) || in_cache) && first.file.ends_with(".cs"), "{name}: {first:?}");
        assert!(first.line > 0, "{name}: {first:?}");
        // Hidden sequence points (Roslyn writes them in every foreach and using) never show.
        for offset in (0..400).step_by(3) {
            let line = symbols.line(*token, offset).map_or(1, |l| l.line);
            assert!(line > 0 && line < 0xfe_efee, "{name} at IL {offset}: line {line}");
        }
    }
    // 3,906 methods; the rest are abstract, interface, delegate or compiler-generated members.
    assert!(with_lines > 3500, "{with_lines} of {} methods have lines", methods.len());
}

#[test]
fn lines_match_pythonnet_3_0_3_sources() {
    let dll = python_runtime();
    let symbols = AssemblySymbols::open(&dll).expect("symbols open").expect("symbols");
    let methods = metadata_methods(&dll);
    let at = |file: &str, line: u32| Some(SourceLine { file: format!("{SOURCES}{file}"), line });

    // AssemblyManager.cs:
    //   50  internal static void Initialize()
    //   51  {
    //   52      pypath.Clear();
    //   ...
    //   63      foreach (Assembly a in items)
    //   ...
    //   75  }
    // A Release build has no sequence point on the opening brace: the method "is" its first
    // statement; its final `ret` is the closing brace.
    let initialize = token_of(&methods, "Python.Runtime.AssemblyManager.Initialize", "() -> void");
    assert_eq!(symbols.first_line(initialize), at("AssemblyManager.cs", 52));
    assert_eq!(symbols.line(initialize, 0), at("AssemblyManager.cs", 52));
    assert_eq!(symbols.line(initialize, u32::MAX), at("AssemblyManager.cs", 75));
    for offset in 0..200 {
        let line = symbols.line(initialize, offset).expect("a line").line;
        assert!((52..=75).contains(&line), "IL {offset}: line {line}");
    }

    // PythonEngine.cs:
    //   181  public static void Initialize()
    //   182  {
    //   183      Initialize(setSysArgv: true);
    //   184  }
    //   ...
    //   201  public static void Initialize(IEnumerable<string> args, bool setSysArgv = true, bool initSigs = false)
    //   202  {
    //   203      if (initialized)
    //   ...
    //   274  }
    let overload = token_of(&methods, "Python.Runtime.PythonEngine.Initialize", "() -> void");
    assert_eq!(symbols.first_line(overload), at("PythonEngine.cs", 183));
    assert_eq!(symbols.line(overload, u32::MAX), at("PythonEngine.cs", 184));
    let full = token_of(
        &methods,
        "Python.Runtime.PythonEngine.Initialize",
        "(System.Collections.Generic.IEnumerable`1<string>, bool, bool) -> void",
    );
    assert_eq!(symbols.first_line(full), at("PythonEngine.cs", 203));
    assert_eq!(symbols.line(full, u32::MAX), at("PythonEngine.cs", 274));

    // Py.cs: an expression-bodied member, and a nested class's constructor.
    //   13  public static GILState GIL() => PythonEngine.DebugGIL ? new DebugGILState() : new GILState();
    //   ...
    //   25  internal GILState()
    //   26  {
    //   27      state = PythonEngine.AcquireLock();
    //   28  }
    let gil = token_of(&methods, "Python.Runtime.Py.GIL", "() -> Python.Runtime.Py+GILState");
    assert_eq!(symbols.first_line(gil), at("Py.cs", 13));
    let gil_state = token_of(&methods, "Python.Runtime.Py+GILState..ctor", "() -> void");
    assert_eq!(symbols.first_line(gil_state), at("Py.cs", 25), "the base constructor call");
    assert_eq!(symbols.line(gil_state, u32::MAX), at("Py.cs", 28));

    // No source: an interface method, and a delegate's runtime-implemented Invoke.
    let interface =
        token_of(&methods, "Python.Runtime.IPyObjectDecoder.CanDecode", "(Python.Runtime.PyType, System.Type) -> bool");
    assert_eq!(symbols.first_line(interface), None);
    let invoke = methods.iter().find(|(_, n, _)| n == "Python.Runtime.GetBufferProc.Invoke").expect("a delegate").0;
    assert_eq!(symbols.line(invoke, 0), None);
}

#[test]
fn the_pdb_named_by_the_codeview_entry_is_found_under_another_assembly_name() {
    let dll = python_runtime();
    let dir = tempfile::tempdir().expect("temp dir");
    copy_into(dir.path(), &[&dll.with_extension("pdb")]);
    let renamed = dir.path().join("Renamed.dll");
    std::fs::copy(&dll, &renamed).expect("copy");
    let symbols = AssemblySymbols::open(&renamed).expect("open").expect("found through the CodeView entry");
    assert_eq!(symbols.kind(), SymbolsKind::PortablePdb);
}

/// The GUID of the CodeView entry of the PE file `bytes`: the 16 bytes after "RSDS".
fn codeview_guid(bytes: &[u8]) -> &[u8] {
    let at = bytes.windows(4).position(|w| w == b"RSDS").expect("a CodeView record");
    &bytes[at + 4..at + 20]
}

#[test]
fn a_pdb_whose_id_differs_from_the_codeview_entry_is_refused() {
    let dll = python_runtime();
    let dir = tempfile::tempdir().expect("temp dir");
    copy_into(dir.path(), &[&dll]);
    let (copy, pdb) = (dir.path().join("Python.Runtime.dll"), dir.path().join("Python.Runtime.pdb"));

    // The PDB id starts with the CodeView GUID; a PDB from another build has another one.
    let assembly = std::fs::read(&dll).expect("dll");
    let mut bytes = std::fs::read(dll.with_extension("pdb")).expect("pdb");
    let guid = codeview_guid(&assembly).to_vec();
    let at = bytes.windows(16).position(|w| w == guid.as_slice()).expect("the PDB id holds the CodeView GUID");
    bytes[at] ^= 1;
    std::fs::write(&pdb, &bytes).expect("write");
    match AssemblySymbols::open(&copy) {
        Err(error @ Error::Mismatch { .. }) => assert!(error.to_string().contains("CodeView"), "{error}"),
        other => panic!("a PDB of another build must be refused, got {other:?}"),
    }

    // The stamp (the id's last four bytes) is checked too.
    let mut bytes = std::fs::read(dll.with_extension("pdb")).expect("pdb");
    bytes[at + 16] ^= 1;
    std::fs::write(&pdb, &bytes).expect("write");
    assert!(matches!(AssemblySymbols::open(&copy), Err(Error::Mismatch { .. })));
}

#[test]
fn a_pdb_beside_an_assembly_that_names_none_is_never_trusted() {
    let dir = tempfile::tempdir().expect("temp dir");
    let exe = compile_with_mcs(&lines_source(), dir.path());
    let stray = dir.path().join("Lines.pdb");
    std::fs::copy(python_runtime().with_extension("pdb"), &stray).expect("copy");

    // mcs writes no CodeView entry, so the PDB cannot be checked; the matching .mdb is used.
    let symbols = AssemblySymbols::open(&exe).expect("open").expect("symbols");
    assert_eq!(symbols.kind(), SymbolsKind::Mdb);

    std::fs::remove_file(dir.path().join("Lines.exe.mdb")).expect("remove the .mdb");
    match AssemblySymbols::open(&exe) {
        Err(error @ Error::Mismatch { .. }) => {
            assert!(error.to_string().contains(&stray.display().to_string()), "{error}")
        }
        other => panic!("an unverifiable PDB must be refused, got {other:?}"),
    }
    assert!(!Path::new(&dir.path().join("Lines.exe.mdb")).exists());
}
