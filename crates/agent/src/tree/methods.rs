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
    records: Vec<MethodRecord>,
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
        let MethodNames { name, signature, assembly, module, path, token, type_args, method_args } = names;
        inner.records.push(MethodRecord { id, name, signature, assembly, module, path, token, type_args, method_args });
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
        inner.records.push(MethodRecord {
            id,
            name: name.to_string(),
            signature: String::new(),
            assembly: assembly.to_string(),
            module: module.to_string(),
            path: String::new(),
            token: 0,
            type_args: Vec::new(),
            method_args: Vec::new(),
        });
        inner.pseudo.insert(name.to_string(), id);
        id
    }

    /// Records from `from` on (for incremental metadata), and the new count.
    pub fn since(&self, from: usize) -> (Vec<MethodRecord>, usize) {
        let inner = self.lock();
        (inner.records.get(from..).unwrap_or_default().to_vec(), inner.records.len())
    }
}
