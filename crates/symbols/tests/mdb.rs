//! Mono `.mdb` symbols, written by a real `mcs -debug` from `tests/data/Lines.cs`: exact lines
//! for known IL offsets, and a stale `.mdb` refused.
//!
//! What mcs 6.8 writes, which the expectations below follow: a method's first entry is its
//! opening brace (the `nop` at IL 0), its `ret` is the closing brace, a constructor's base call
//! is the declaration's line, an implicit constructor has no entries, and hidden code gets no
//! entry at all (mcs writes neither Mono's hidden flag nor line 0xFEEFEE).

mod support;

use sonde_symbols::{AssemblySymbols, Error, SourceLine, SymbolsKind};
use support::{
    RuntimeMethod, compile, compile_with_mcs, lines_source, marker, metadata_methods, method, runtime_methods,
};

/// The lines of `method` at each of its IL offsets, in IL order, repeats collapsed.
fn lines_in_il_order(symbols: &AssemblySymbols, method: &RuntimeMethod) -> Vec<u32> {
    let mut lines: Vec<u32> = (0..method.il_size)
        .map(|offset| {
            symbols
                .line(method.token, offset)
                .unwrap_or_else(|| panic!("{} has no line at IL {offset}", method.name))
                .line
        })
        .collect();
    lines.dedup();
    lines
}

#[test]
fn mcs_symbols_give_the_lines_of_the_source() {
    let dir = tempfile::tempdir().expect("temp dir");
    let exe = compile_with_mcs(&lines_source(), dir.path());
    let symbols = AssemblySymbols::open(&exe).expect("symbols open").expect("mcs -debug wrote symbols");
    assert_eq!(symbols.kind(), SymbolsKind::Mdb);
    let methods = runtime_methods(&exe);

    // The runtime and sonde-metadata agree on every token, so the tokens below are the right ones.
    let named = metadata_methods(&exe);
    assert_eq!(named.len(), methods.len(), "{named:?}");
    for m in &methods {
        let (_, name, _) = named.iter().find(|(token, _, _)| *token == m.token).expect("a MethodDef");
        assert_eq!(name, &m.name, "{:#x}", m.token);
    }

    // Paths are what mcs wrote: the source path it was given.
    let file = lines_source().display().to_string();
    let at = |line: &str| Some(SourceLine { file: file.clone(), line: marker(line) });

    // Where each method "is", and the line of its first and last IL instruction.
    let cases = [
        ("Acme.Lines.Main", "main-open", "main-close"),
        ("Acme.Lines.Loop", "loop-open", "loop-close"),
        ("Acme.Outer+Inner.Twice", "twice-open", "twice-close"),
        ("Acme.Outer+Inner..ctor", "inner-ctor", "inner-ctor-close"),
    ];
    for (name, first, last) in cases {
        let m = method(&methods, name);
        assert_eq!(symbols.first_line(m.token), at(first), "{name}");
        assert_eq!(symbols.line(m.token, 0), at(first), "{name}");
        assert_eq!(symbols.line(m.token, m.il_size - 1), at(last), "{name}");
        // Past the end of the method: still its last line, never another method's.
        assert_eq!(symbols.line(m.token, m.il_size + 1000), at(last), "{name}");
    }

    // The first statement follows the opening brace.
    let main = method(&methods, "Acme.Lines.Main");
    assert_eq!(lines_in_il_order(&symbols, main)[..2], [marker("main-open"), marker("main-first")]);
    let twice = method(&methods, "Acme.Outer+Inner.Twice");
    assert_eq!(
        lines_in_il_order(&symbols, twice),
        [marker("twice-open"), marker("twice-first"), marker("twice-last"), marker("twice-close")]
    );
    let ctor = method(&methods, "Acme.Outer+Inner..ctor");
    assert_eq!(
        lines_in_il_order(&symbols, ctor),
        [marker("inner-ctor"), marker("inner-ctor") + 1, marker("inner-ctor-first"), marker("inner-ctor-close")]
    );

    // The loop: its body's line, then the condition's again (the back edge), all inside the method.
    let lines = lines_in_il_order(&symbols, method(&methods, "Acme.Lines.Loop"));
    let (body, condition) = (marker("loop-body"), marker("loop-for"));
    let at_body = lines.iter().position(|&l| l == body).unwrap_or_else(|| panic!("no loop body in {lines:?}"));
    assert!(lines[at_body..].contains(&condition), "the condition after the body: {lines:?}");
    assert!(lines.contains(&marker("loop-first")) && lines.contains(&marker("loop-last")), "{lines:?}");
    assert!(lines.iter().all(|l| (marker("loop-open")..=marker("loop-close")).contains(l)), "{lines:?}");

    // The lambda is its own method, all on its line.
    let lambda = methods.iter().find(|m| m.name.starts_with("Acme.Lines.<Main>")).expect("the lambda's method");
    assert_eq!(symbols.first_line(lambda.token), at("lambda"));
    assert_eq!(lines_in_il_order(&symbols, lambda), [marker("lambda")]);

    // An implicit constructor has code but no source.
    let implicit = method(&methods, "Acme.Outer..ctor");
    assert!(implicit.il_size > 0);
    assert_eq!(symbols.first_line(implicit.token), None);
    assert_eq!(symbols.line(implicit.token, 0), None);

    // Tokens that name no method of the file.
    assert_eq!(symbols.line(0x0600_0000 | 0xff_ffff, 0), None);
    assert_eq!(symbols.line(0x0600_0000, 0), None);
    assert_eq!(symbols.first_line(0x0200_0002), None, "a TypeDef token");
}

#[test]
fn the_mdb_of_another_build_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (old, new) = (dir.path().join("old"), dir.path().join("new"));
    std::fs::create_dir_all(&old).and_then(|()| std::fs::create_dir_all(&new)).expect("dirs");
    let old_exe = compile_with_mcs(&lines_source(), &old);

    // The next build moved every line down by one and changed a constant; its `.mdb` is lost
    // and the old one left beside it. (The constant matters: mcs builds deterministically, so an
    // edit that only moves lines rebuilds a byte-identical assembly, MVID included, whose old
    // `.mdb` no check on the assembly could tell from the new one.)
    let edited = new.join("Lines.cs");
    let source = std::fs::read_to_string(lines_source()).expect("Lines.cs");
    assert!(source.contains("Loop(10)"), "Lines.cs calls Loop(10)");
    std::fs::write(&edited, format!("// edited\n{}", source.replace("Loop(10)", "Loop(12)"))).expect("write");
    let new_exe = compile_with_mcs(&edited, &new);
    std::fs::copy(old.join("Lines.exe.mdb"), new.join("Lines.exe.mdb")).expect("copy the stale .mdb");

    match AssemblySymbols::open(&new_exe) {
        Err(error @ Error::Mismatch { .. }) => {
            let message = error.to_string();
            assert!(message.contains("Lines.exe.mdb") && message.contains("MVID"), "{message}");
        }
        other => panic!("a stale .mdb must be refused, got {other:?}"),
    }
    // The old pair still matches.
    assert_eq!(AssemblySymbols::open(&old_exe).expect("old symbols").expect("some").kind(), SymbolsKind::Mdb);
}

#[test]
fn an_assembly_without_symbols_has_none_and_a_damaged_mdb_is_an_error() {
    let dir = tempfile::tempdir().expect("temp dir");
    let exe = compile(&lines_source(), dir.path(), false);
    assert!(AssemblySymbols::open(&exe).expect("no error").is_none());

    let with = tempfile::tempdir().expect("temp dir");
    let exe = compile_with_mcs(&lines_source(), with.path());
    let mdb = with.path().join("Lines.exe.mdb");
    let bytes = std::fs::read(&mdb).expect("the .mdb");
    std::fs::write(&mdb, &bytes[..bytes.len() / 2]).expect("truncate");
    match AssemblySymbols::open(&exe) {
        Err(error @ Error::Damaged { .. }) => assert!(error.to_string().contains("Lines.exe.mdb"), "{error}"),
        other => panic!("a truncated .mdb must be an error, got {other:?}"),
    }
    let missing = with.path().join("Missing.exe");
    assert!(matches!(AssemblySymbols::open(&missing), Err(Error::Io { .. })));
}
