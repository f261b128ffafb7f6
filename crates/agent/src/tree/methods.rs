//! The methods call-tree nodes refer to: every runtime function the agent gave an id (the id the
//! tracing hooks receive, or a sampled frame resolves to), and pseudo-methods for what is not a
//! runtime function (native code, markers). One table per process, shared by both backends; the
//! IPC link sends the records not sent before with each snapshot.

use sonde_metadata::MethodNames;
use sonde_protocol::MethodRecord;
use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};

/// The process's method table.
pub fn methods() -> &'static MethodTable {
    static METHODS: LazyLock<MethodTable> = LazyLock::new(MethodTable::default);
    &METHODS
}

/// Methods the agent has given ids to (the id is the client id the hooks receive).
#[derive(Default)]
pub struct MethodTable {
    inner: Mutex<MethodTableInner>,
}

#[derive(Default)]
struct MethodTableInner {
    by_function: HashMap<usize, u32>,
    pseudo: HashMap<String, u32>,
    /// A runtime function → its `[jit] …` pseudo-method (see [`MethodTable::compiling`]).
    compiling: HashMap<usize, u32>,
    records: Vec<MethodRecord>,
}

/// What a method is to async stack stitching (`sampling::async_stacks`), from its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// A compiler-generated async state machine's `MoveNext` (`Acme.Orders+<LoadAsync>d__4.MoveNext`).
    AsyncMoveNext,
    /// The runtime's wrapper that runs an await's continuation while the task events are on
    /// (`TaskAwaiter+<>c.<OutputWaitEtwEvents>b__12_0`, `YieldAwaitable+YieldAwaiter+<>c.<OutputCorrelationEtwEvent>b__6_0`).
    ContinuationWrapper,
    Other,
}

impl Role {
    /// From a method's name and signature: Roslyn names async and iterator state machines alike
    /// (`<X>d__N`, a local function's `<<X>g__Local|0_0>d`) and tells them apart by `MoveNext`'s
    /// return type (`bool` for an iterator); mcs names them `<X>c__asyncN` and `<X>c__IteratorN`.
    pub fn of(name: &str, signature: &str) -> Role {
        if name.contains("<OutputWaitEtwEvents>b__") || name.contains("<OutputCorrelationEtwEvent>b__") {
            return Role::ContinuationWrapper;
        }
        let Some(ty) = name.strip_suffix(".MoveNext") else { return Role::Other };
        let innermost = ty.rsplit(['+', '.']).next().unwrap_or(ty);
        let Some((_, kind)) = innermost.strip_prefix('<').and_then(|t| t.rsplit_once('>')) else { return Role::Other };
        let roslyn = (kind == "d" || kind.starts_with("d__")) && !signature.ends_with("bool");
        if roslyn || kind.starts_with("c__async") { Role::AsyncMoveNext } else { Role::Other }
    }
}

impl MethodTable {
    fn lock(&self) -> std::sync::MutexGuard<'_, MethodTableInner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The id of a runtime function, if it has one.
    pub fn id_of(&self, function: usize) -> Option<u32> {
        self.lock().by_function.get(&function).copied()
    }

    /// Gives `function` an id, or returns the one it already has (the runtime may ask twice for
    /// the same function, e.g. when tiered compilation re-JITs it).
    pub fn insert(&self, function: usize, names: MethodNames) -> u32 {
        let mut inner = self.lock();
        if let Some(&id) = inner.by_function.get(&function) {
            return id;
        }
        let id = inner.records.len() as u32;
        inner.records.push(MethodRecord { id, names });
        inner.by_function.insert(function, id);
        id
    }

    /// The id of something that is not a runtime function (a native frame, a marker such as
    /// `[truncated stack]`), named `name`, in a separate key space from function ids.
    pub fn pseudo(&self, name: &str, assembly: &str, module: &str) -> u32 {
        let mut inner = self.lock();
        if let Some(&id) = inner.pseudo.get(name) {
            return id;
        }
        let id = inner.records.len() as u32;
        let names = MethodNames {
            name: name.to_string(),
            assembly: assembly.to_string(),
            module: module.to_string(),
            ..MethodNames::default()
        };
        inner.records.push(MethodRecord { id, names });
        inner.pseudo.insert(name.to_string(), id);
        id
    }

    /// The `[jit] Ns.Type.Method` pseudo-method of samples taken while the JIT compiled
    /// `function` (`sampling::work`), named `names`: the method's signature, assembly, module and
    /// type arguments, so that reports name and group it as they do the method; no source file
    /// (no lines belong to it). Once per function.
    pub fn compiling(&self, function: usize, names: MethodNames) -> u32 {
        let mut inner = self.lock();
        if let Some(&id) = inner.compiling.get(&function) {
            return id;
        }
        let id = inner.records.len() as u32;
        let names = MethodNames { name: format!("[jit] {}", names.name), path: String::new(), token: 0, ..names };
        inner.records.push(MethodRecord { id, names });
        inner.compiling.insert(function, id);
        id
    }

    /// The [`Role`] of method `id` (`Other` for an unknown id or a pseudo-method).
    pub fn role(&self, id: u32) -> Role {
        let inner = self.lock();
        inner.records.get(id as usize).map_or(Role::Other, |r| Role::of(&r.names.name, &r.names.signature))
    }

    /// The name of method `id` (empty for an unknown id).
    pub fn name(&self, id: u32) -> String {
        self.lock().records.get(id as usize).map_or_else(String::new, |r| r.names.name.clone())
    }

    /// Records from `from` on (for incremental metadata), and the new count.
    pub fn since(&self, from: usize) -> (Vec<MethodRecord>, usize) {
        let inner = self.lock();
        (inner.records.get(from..).unwrap_or_default().to_vec(), inner.records.len())
    }
}

#[cfg(test)]
mod tests {
    use super::Role;

    #[test]
    fn roles_come_from_the_compilers_names() {
        let void = "() -> void";
        assert_eq!(Role::of("Acme.Orders+<LoadAsync>d__4.MoveNext", void), Role::AsyncMoveNext);
        assert_eq!(Role::of("Acme.Orders+<LoadAsync>c__async1.MoveNext", void), Role::AsyncMoveNext);
        assert_eq!(Role::of("Acme.Orders+<<Main>g__Local|0_0>d.MoveNext", void), Role::AsyncMoveNext);
        // Iterators are state machines too, not async ones.
        assert_eq!(Role::of("Acme.Orders+<Squares>d__6.MoveNext", "() -> bool"), Role::Other);
        assert_eq!(Role::of("Acme.Orders+<Squares>c__Iterator0.MoveNext", "() -> bool"), Role::Other);
        assert_eq!(Role::of("System.Collections.Generic.List`1+Enumerator.MoveNext", "() -> bool"), Role::Other);
        assert_eq!(
            Role::of("System.Runtime.CompilerServices.TaskAwaiter+<>c.<OutputWaitEtwEvents>b__12_0", void),
            Role::ContinuationWrapper
        );
        assert_eq!(
            Role::of(
                "System.Runtime.CompilerServices.YieldAwaitable+YieldAwaiter+<>c.<OutputCorrelationEtwEvent>b__6_0",
                void
            ),
            Role::ContinuationWrapper
        );
        assert_eq!(Role::of("Acme.Orders.LoadAsync", void), Role::Other);
    }
}
