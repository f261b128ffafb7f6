//! What reports call a method: the name its programmer wrote, not its compiler's.
//!
//! C# compilers turn an `async` method, an iterator, a lambda and a local function into methods
//! of types of their own, with names no programmer wrote. [`display_name`] maps them back:
//!
//! | compiler's name (`Method::name`) | compiler | display name |
//! |---|---|---|
//! | `Acme.Orders+<ReadAsync>d__5.MoveNext`, `() -> void` | Roslyn | `Acme.Orders.ReadAsync [async]` |
//! | `Acme.Orders+<ReadAsync>c__async2.MoveNext` | mcs | `Acme.Orders.ReadAsync [async]` |
//! | `Acme.Orders+<Squares>d__6.MoveNext`, `() -> bool` | Roslyn | `Acme.Orders.Squares [iterator]` |
//! | `Acme.Orders+<Squares>c__Iterator3.MoveNext` | mcs | `Acme.Orders.Squares [iterator]` |
//! | `Acme.Orders+<>c.<Main>b__7_0`, `…+<>c__DisplayClass7_0.<Main>b__1` | Roslyn | `Acme.Orders.Main.<lambda>` |
//! | `Acme.Orders.<Main>m__0`, `Acme.Orders+<Main>c__AnonStorey0.<>m__0` | mcs | `Acme.Orders.Main.<lambda>` |
//! | `System.Console.<get_Out>g__EnsureInitialized\|26_0` | Roslyn | `System.Console.get_Out.EnsureInitialized` |
//! | `Acme.Orders+<>c+<<Main>b__7_1>d.MoveNext` | Roslyn | `Acme.Orders.Main.<lambda> [async]` |
//!
//! Roslyn names the state machines of async methods and of iterators alike (`<X>d__N`); their
//! `MoveNext` tells them apart: `IAsyncStateMachine.MoveNext` returns nothing,
//! `IEnumerator.MoveNext` a `bool`. Generic arity markers become the instantiation's type
//! arguments when the agent knew them (`` Acme.Table`1.Fill `` with `Acme.Row`:
//! `Acme.Table<Acme.Row>.Fill`). Anything else is shown as it is named. The compiler's name stays
//! in `Method::name` and the JSON's `name`.

use std::borrow::Cow;

/// What a frame is, for a report that folds what the user did not write (JSON: `kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Managed code: a method with metadata.
    Managed,
    /// Native code, named `[native] library` or `[native] library!symbol`.
    Native,
    /// What neither the program nor a library wrote as such: the runtime's wrappers and stubs,
    /// unknown code, cut or truncated stacks (`[unknown code]`, `(wrapper runtime-invoke) …`).
    Runtime,
}

impl Kind {
    pub fn of(name: &str) -> Kind {
        if name.starts_with("[native]") {
            Kind::Native
        } else if name.starts_with('[') || name.starts_with("(wrapper") {
            Kind::Runtime
        } else {
            Kind::Managed
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Managed => "managed",
            Kind::Native => "native",
            Kind::Runtime => "runtime",
        }
    }
}

/// Work the runtime did for the program's thread, shown as a frame of its own in sampling
/// profiles (JSON: `runtime_work`): `[jit] Ns.Type.Method` (the JIT compiling that method),
/// `[gc]` (a garbage collection, or the runtime suspended for one), `[type load] Ns.Type` (the
/// runtime loading that type; no backend records it yet, see docs/SAMPLING.md). They are
/// [`Kind::Runtime`] frames, which reports never fold away: they say what the runtime's native
/// frames below them were doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Work {
    Jit,
    Gc,
    TypeLoad,
}

impl Work {
    const JIT: &'static str = "[jit] ";
    const GC: &'static str = "[gc]";
    const TYPE_LOAD: &'static str = "[type load] ";

    /// The work a frame named `name` stands for, if it is a work frame.
    pub fn of(name: &str) -> Option<Work> {
        if name.starts_with(Work::JIT) {
            Some(Work::Jit)
        } else if name == Work::GC {
            Some(Work::Gc)
        } else if name.starts_with(Work::TYPE_LOAD) {
            Some(Work::TypeLoad)
        } else {
            None
        }
    }

    /// The name of what the work was for (`Ns.Type.Method` of `[jit] Ns.Type.Method`), if any.
    pub fn subject(name: &str) -> Option<&str> {
        name.strip_prefix(Work::JIT).or_else(|| name.strip_prefix(Work::TYPE_LOAD))
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Work::Jit => "jit",
            Work::Gc => "gc",
            Work::TypeLoad => "type_load",
        }
    }
}

/// A native frame's name (`[native] lib!symbol`) with a C++ symbol demangled as written, without
/// its parameter list or return type (`_ZN3WKS7gc_heap18mark_object_simpleEPPh` →
/// `WKS::gc_heap::mark_object_simple`); any other name as it is.
fn demangled(name: &str) -> Cow<'_, str> {
    let Some((library, symbol)) = name.split_once('!') else { return Cow::Borrowed(name) };
    // GCC's clones (`f.part.0`, `f.constprop.1`, `f.cold`) keep their suffix after the name.
    let (mangled, suffix) = match symbol.find('.') {
        Some(at) => symbol.split_at(at),
        None => (symbol, ""),
    };
    if !mangled.starts_with("_Z") {
        return Cow::Borrowed(name);
    }
    let options = cpp_demangle::DemangleOptions::new().no_params().no_return_type();
    match cpp_demangle::Symbol::new(mangled).ok().and_then(|s| s.demangle(&options).ok()) {
        Some(plain) => Cow::Owned(format!("{library}!{plain}{suffix}")),
        None => Cow::Borrowed(name),
    }
}

/// The display name of a method named `name` with signature `signature`, and the type arguments
/// of its instantiation (`type_args`: its type's, outermost first; `method_args`: its own), empty
/// when unknown or not generic.
pub fn display_name<'a>(name: &'a str, signature: &str, type_args: &[String], method_args: &[String]) -> Cow<'a, str> {
    match Kind::of(name) {
        Kind::Managed => {}
        Kind::Native => return demangled(name),
        // `[jit] Acme.Orders+<ReadAsync>d__5.MoveNext` → `[jit] Acme.Orders.ReadAsync [async]`.
        Kind::Runtime => {
            return match (Work::of(name), Work::subject(name)) {
                (Some(Work::Jit), Some(method)) if Kind::of(method) == Kind::Managed => {
                    match display_name(method, signature, type_args, method_args) {
                        Cow::Borrowed(_) => Cow::Borrowed(name),
                        Cow::Owned(shown) => Cow::Owned(format!("{}{shown}", Work::JIT)),
                    }
                }
                _ => Cow::Borrowed(name),
            };
        }
    }
    let Some((owner, method)) = split_method(name) else { return Cow::Borrowed(name) };
    let generated = owner.contains('<') || method.contains('<');
    if !generated && type_args.is_empty() && method_args.is_empty() {
        return Cow::Borrowed(name);
    }
    let readable = |args: &[String]| -> Vec<String> { args.iter().map(|a| display_type(a).into_owned()).collect() };
    let owner = with_type_args(owner, &readable(type_args));
    let mut shown = if generated { friendly(&owner, method, signature) } else { format!("{owner}.{method}") };
    if !method_args.is_empty() {
        // The method's own type arguments go after its name, before any marker.
        let at = shown.find(" [").unwrap_or(shown.len());
        shown.insert_str(at, &format!("<{}>", readable(method_args).join(", ")));
    }
    Cow::Owned(shown)
}

/// `(owner type, method)`: split at the last `.` outside angle brackets; `.ctor` and `.cctor`
/// keep their dot.
fn split_method(name: &str) -> Option<(&str, &str)> {
    let dot = last_outside_brackets(name, |c| c == '.')?;
    let dot = if dot > 0 && name.as_bytes()[dot - 1] == b'.' { dot - 1 } else { dot };
    (dot > 0).then(|| (&name[..dot], &name[dot + 1..]))
}

/// The byte index of the last character matching `is` at bracket depth 0.
fn last_outside_brackets(text: &str, is: impl Fn(char) -> bool) -> Option<usize> {
    let mut depth = 0i32;
    let mut found = None;
    for (i, c) in text.char_indices() {
        match c {
            '<' => depth += 1,
            '>' => depth -= 1,
            c if depth == 0 && is(c) => found = Some(i),
            _ => {}
        }
    }
    found
}

/// `(enclosing type, last component)` of a type name (nested types are joined with `+`).
fn split_nested(owner: &str) -> (Option<&str>, &str) {
    match last_outside_brackets(owner, |c| c == '+') {
        Some(plus) => (Some(&owner[..plus]), &owner[plus + 1..]),
        None => (None, owner),
    }
}

/// `<X>rest` → `(X, rest)`, brackets balanced (X may itself be generated: `<<Main>b__7_1>d`).
fn generated(name: &str) -> Option<(&str, &str)> {
    let rest = name.strip_prefix('<')?;
    let mut depth = 1;
    for (i, c) in rest.char_indices() {
        match c {
            '<' => depth += 1,
            '>' => {
                depth -= 1;
                if depth == 0 {
                    return Some((&rest[..i], &rest[i + 1..]));
                }
            }
            _ => {}
        }
    }
    None
}

/// The programmer's name for `method` of type `owner`, one of which the compiler generated.
fn friendly(owner: &str, method: &str, signature: &str) -> String {
    let (enclosing, last) = split_nested(owner);
    // A state machine's MoveNext: the method it was made of.
    if method == "MoveNext"
        && let (Some(enclosing), Some((original, kind))) = (enclosing, generated(last))
    {
        let marker = if kind.starts_with("c__async") {
            Some("async")
        } else if kind.starts_with("c__Iterator") {
            Some("iterator")
        } else if kind.starts_with("d__") || kind == "d" {
            Some(if signature.trim_end().ends_with("-> bool") { "iterator" } else { "async" })
        } else {
            None
        };
        if let Some(marker) = marker {
            return format!("{} [{marker}]", member(enclosing, original));
        }
    }
    // A lambda or local function in a closure class: the class's owner is the method's type.
    let closure = generated(last).is_some_and(|(inner, kind)| {
        (inner.is_empty() && (kind == "c" || kind.starts_with("c__DisplayClass"))) || kind.starts_with("c__AnonStorey")
    });
    if closure && let Some(enclosing) = enclosing {
        // mcs names a closure's lambdas `<>m__N` and the method in the closure's own name.
        if let (Some(("", kind)), Some((original, _))) = (generated(method), generated(last))
            && kind.starts_with("m__")
        {
            return format!("{}.<lambda>", member(enclosing, original));
        }
        if generated(method).is_some_and(|(original, _)| !original.is_empty()) {
            return member(enclosing, method);
        }
    }
    match generated(method) {
        Some((original, _)) if !original.is_empty() => member(owner, method),
        _ => format!("{}.{method}", display_type(owner)),
    }
}

/// A type name as the programmer would know it: a state machine is its method
/// (`Acme.Orders+<ReadAsync>d__5` → `Acme.Orders.ReadAsync`), a closure class `<closure>` of its
/// type or method (`Acme.Orders+<>c` → `Acme.Orders.<closure>`); other names as they are.
pub fn display_type(name: &str) -> Cow<'_, str> {
    let (Some(enclosing), last) = split_nested(name) else { return Cow::Borrowed(name) };
    let Some((original, kind)) = generated(last) else { return Cow::Borrowed(name) };
    let outer = display_type(enclosing);
    let state_machine =
        kind.starts_with("d__") || kind == "d" || kind.starts_with("c__async") || kind.starts_with("c__Iterator");
    Cow::Owned(if !original.is_empty() && state_machine {
        format!("{outer}.{}", member_name(original))
    } else if original.is_empty() && (kind == "c" || kind.starts_with("c__DisplayClass")) {
        format!("{outer}.<closure>")
    } else if !original.is_empty() && kind.starts_with("c__AnonStorey") {
        format!("{outer}.{}.<closure>", member_name(original))
    } else {
        return Cow::Borrowed(name);
    })
}

/// `owner.method`, where `method` may be a generated lambda or local-function name.
fn member(owner: &str, method: &str) -> String {
    format!("{}.{}", tidy_type(owner), member_name(method))
}

/// A method name as shown: a lambda `<Main>b__7_0` (Roslyn) or `<Main>m__0` (mcs) is
/// `Main.<lambda>`, a local function `<Run>g__Step|3_0` is `Run.Step`, the enclosing method
/// shown the same way (an async lambda's `<Main>b__7_1`); any other name as it is.
fn member_name(method: &str) -> String {
    match generated(method) {
        Some((original, kind)) if !original.is_empty() => {
            if kind.starts_with("b__") || kind.starts_with("m__") {
                format!("{}.<lambda>", member_name(original))
            } else if let Some(local) = kind.strip_prefix("g__") {
                format!("{}.{}", member_name(original), local.split('|').next().unwrap_or(local))
            } else {
                method.to_string()
            }
        }
        _ => method.to_string(),
    }
}

/// A type name with its generated components (a closure or state machine that owns another
/// generated member) dropped: `Acme.Orders+<>c` → `Acme.Orders`.
fn tidy_type(owner: &str) -> String {
    let mut owner = owner;
    for _ in 0..8 {
        let (enclosing, last) = split_nested(owner);
        match (enclosing, generated(last)) {
            (Some(enclosing), Some(_)) => owner = enclosing,
            _ => break,
        }
    }
    owner.to_string()
}

/// A type name with its arity markers (`` `1 ``) replaced by the instantiation's type arguments,
/// outermost type first; as it is when the arguments do not match the markers.
fn with_type_args<'a>(owner: &'a str, type_args: &[String]) -> Cow<'a, str> {
    if type_args.is_empty() {
        return Cow::Borrowed(owner);
    }
    let mut out = String::with_capacity(owner.len() + 16);
    let mut args = type_args.iter();
    let mut rest = owner;
    while let Some(tick) = rest.find('`') {
        out.push_str(&rest[..tick]);
        let digits = rest[tick + 1..].bytes().take_while(u8::is_ascii_digit).count();
        let Ok(arity) = rest[tick + 1..tick + 1 + digits].parse::<usize>() else { return Cow::Borrowed(owner) };
        let taken: Vec<&str> = args.by_ref().take(arity).map(String::as_str).collect();
        if taken.len() != arity {
            return Cow::Borrowed(owner);
        }
        out.push('<');
        out.push_str(&taken.join(", "));
        out.push('>');
        rest = &rest[tick + 1 + digits..];
    }
    out.push_str(rest);
    if args.next().is_some() {
        return Cow::Borrowed(owner);
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(name: &str, signature: &str) -> String {
        display_name(name, signature, &[], &[]).into_owned()
    }

    #[test]
    fn state_machines_are_named_after_their_methods() {
        // Names as the runtimes reported them for tests/apps/Async.cs (Roslyn 4.8 and mcs).
        assert_eq!(shown("Acme.Orders+<ReadAsync>d__5.MoveNext", "() -> void"), "Acme.Orders.ReadAsync [async]");
        assert_eq!(shown("Acme.Orders+<ReadAsync>c__async2.MoveNext", "() -> void"), "Acme.Orders.ReadAsync [async]");
        assert_eq!(shown("Acme.Orders+<Squares>d__6.MoveNext", "() -> bool"), "Acme.Orders.Squares [iterator]");
        assert_eq!(shown("Acme.Orders+<Squares>c__Iterator3.MoveNext", "() -> bool"), "Acme.Orders.Squares [iterator]");
        // The kickoff method keeps its name: it runs the first part, up to the first await.
        assert_eq!(
            shown("Acme.Orders.ReadAsync", "(int) -> System.Threading.Tasks.Task`1<int>"),
            "Acme.Orders.ReadAsync"
        );
        // An async lambda's state machine.
        assert_eq!(
            shown("Acme.Orders+<>c+<<Main>b__7_1>d.MoveNext", "() -> void"),
            "Acme.Orders.Main.<lambda> [async]"
        );
        // Other members of a state machine or closure: members of the method they were made of.
        assert_eq!(shown("Acme.Orders+<Squares>d__6.Dispose", "() -> void"), "Acme.Orders.Squares.Dispose");
        assert_eq!(
            shown(
                "Acme.Orders+<ReadAsync>c__async2.SetStateMachine",
                "(System.Runtime.CompilerServices.IAsyncStateMachine) -> void"
            ),
            "Acme.Orders.ReadAsync.SetStateMachine"
        );
        assert_eq!(shown("Acme.Orders+<>c..cctor", "() -> void"), "Acme.Orders.<closure>..cctor");
        assert_eq!(shown("Acme.Orders+<Main>c__AnonStorey0..ctor", "() -> void"), "Acme.Orders.Main.<closure>..ctor");
    }

    #[test]
    fn lambdas_and_local_functions_are_named_after_their_enclosing_method() {
        assert_eq!(shown("Acme.Orders+<>c.<Main>b__7_0", "() -> int"), "Acme.Orders.Main.<lambda>");
        assert_eq!(shown("Acme.Orders+<>c__DisplayClass7_0.<Main>b__1", "() -> int"), "Acme.Orders.Main.<lambda>");
        assert_eq!(shown("Acme.Orders.<Main>b__7_0", "() -> int"), "Acme.Orders.Main.<lambda>");
        assert_eq!(shown("Acme.Orders.<Main>m__0", "() -> int"), "Acme.Orders.Main.<lambda>");
        assert_eq!(shown("Acme.Orders+<Main>c__AnonStorey0.<>m__0", "() -> int"), "Acme.Orders.Main.<lambda>");
        assert_eq!(shown("Acme.Foo.<.ctor>b__0_0", "() -> void"), "Acme.Foo..ctor.<lambda>");
        assert_eq!(
            shown("System.Console.<get_Out>g__EnsureInitialized|26_0", "() -> System.IO.TextWriter"),
            "System.Console.get_Out.EnsureInitialized"
        );
        assert_eq!(shown("Acme.Orders+<>c__DisplayClass3_0.<Run>g__Step|0", "() -> void"), "Acme.Orders.Run.Step");
    }

    #[test]
    fn ordinary_and_pseudo_names_are_left_alone() {
        for name in [
            "Acme.Orders.Main",
            "Acme.Node`1..ctor",
            "Acme.Outer+Inner.Run",
            "[native] libc.so.6!__sched_yield",
            "[unknown code]",
            "(wrapper runtime-invoke) <Module>:runtime_invoke_int_object (object,intptr,intptr,intptr)",
            "Main",
            "<Module>.Init",
            "",
            "<",
            "a.<b",
        ] {
            assert_eq!(shown(name, ""), name, "{name}");
        }
    }

    #[test]
    fn instantiations_show_their_type_arguments() {
        let row = ["Acme.Row".to_string()];
        assert_eq!(display_name("Acme.Table`1.Fill", "", &row, &[]), "Acme.Table<Acme.Row>.Fill");
        assert_eq!(display_name("Acme.Node`1..ctor", "", &row, &[]), "Acme.Node<Acme.Row>..ctor");
        let two = ["int".to_string(), "string".to_string()];
        assert_eq!(display_name("Acme.Outer`1+Inner`1.Run", "", &two, &[]), "Acme.Outer<int>+Inner<string>.Run");
        assert_eq!(display_name("Acme.Util.Max", "", &[], &row), "Acme.Util.Max<Acme.Row>");
        // Arguments that do not match the markers are not shown rather than shown wrong.
        assert_eq!(display_name("Acme.Table`1.Fill", "", &two, &[]), "Acme.Table`1.Fill");
        assert_eq!(display_name("Acme.Table.Fill", "", &row, &[]), "Acme.Table.Fill");
        // Type arguments that are generated types read as what they were made of.
        let machine = ["Acme.Orders+<HandleRequestAsync>d__3".to_string()];
        assert_eq!(
            display_name("System.Runtime.CompilerServices.AsyncMethodBuilderCore.Start", "", &[], &machine),
            "System.Runtime.CompilerServices.AsyncMethodBuilderCore.Start<Acme.Orders.HandleRequestAsync>"
        );
        // Generated names and instantiations together.
        assert_eq!(
            display_name("Acme.Box`1+<GetAsync>d__2.MoveNext", "() -> void", &row, &[]),
            "Acme.Box<Acme.Row>.GetAsync [async]"
        );
    }

    #[test]
    fn native_cxx_symbols_are_demangled_without_parameters() {
        let shown = |name| display_name(name, "", &[], &[]).into_owned();
        assert_eq!(
            shown("[native] libcoreclr.so!_ZN3WKS7gc_heap18mark_object_simpleEPPh"),
            "[native] libcoreclr.so!WKS::gc_heap::mark_object_simple"
        );
        assert_eq!(shown("[native] libx.so!_ZN5Codec8compressEPKcm.part.0"), "[native] libx.so!Codec::compress.part.0");
        assert_eq!(shown("[native] libc.so.6!msort_with_tmp.part.0"), "[native] libc.so.6!msort_with_tmp.part.0");
        assert_eq!(shown("[native] libc.so.6"), "[native] libc.so.6");
        assert_eq!(shown("[native] libbad.so!_Z\u{1b}]0;x"), "[native] libbad.so!_Z\u{1b}]0;x");
    }

    #[test]
    fn kinds() {
        assert_eq!(Kind::of("Acme.Orders.Main"), Kind::Managed);
        assert_eq!(Kind::of("[native] libc.so.6"), Kind::Native);
        assert_eq!(Kind::of("[jit] Acme.Orders.Load"), Kind::Runtime);
        assert_eq!(Kind::of("[gc]"), Kind::Runtime);
        assert_eq!(Kind::of("[unknown code]"), Kind::Runtime);
        assert_eq!(Kind::of("(wrapper managed-to-native) X"), Kind::Runtime);
    }

    #[test]
    fn work_frames_are_told_apart_and_name_the_method_as_reports_do() {
        assert_eq!(Work::of("[jit] Acme.Orders.Load"), Some(Work::Jit));
        assert_eq!(Work::of("[gc]"), Some(Work::Gc));
        assert_eq!(Work::of("[type load] Acme.Order"), Some(Work::TypeLoad));
        assert_eq!(Work::of("[gcx]"), None);
        assert_eq!(Work::of("[unknown code]"), None);
        assert_eq!(Work::of("Acme.Orders.Load"), None);
        assert_eq!(Work::subject("[jit] Acme.Orders.Load"), Some("Acme.Orders.Load"));
        assert_eq!(Work::subject("[gc]"), None);
        let void = "() -> void";
        assert_eq!(
            display_name("[jit] Acme.Orders+<ReadAsync>d__5.MoveNext", void, &[], &[]),
            "[jit] Acme.Orders.ReadAsync [async]"
        );
        assert_eq!(
            display_name("[jit] Acme.Table`1.Fill", void, &["Acme.Row".into()], &[]),
            "[jit] Acme.Table<Acme.Row>.Fill"
        );
        assert_eq!(display_name("[jit] Acme.Orders.Load", void, &[], &[]), "[jit] Acme.Orders.Load");
        assert_eq!(display_name("[jit] [unnamed method]", "", &[], &[]), "[jit] [unnamed method]");
        assert_eq!(display_name("[gc]", "", &[], &[]), "[gc]");
    }

    proptest::proptest! {
        #[test]
        fn any_name_is_shown_without_panic(name in "[<>a-zA-Z0-9_.+`|\\[\\] ]{0,40}", sig in "[a-z() >-]{0,12}") {
            let shown = display_name(&name, &sig, &[], &[]);
            proptest::prop_assert!(!shown.is_empty() || name.is_empty());
        }
    }
}
