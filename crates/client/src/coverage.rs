//! Coverage mode's methods that never ran: the runtime compiles only what runs, so the agent
//! never sees the rest. They come from the metadata of each assembly that had a method
//! rewritten: every MethodDef with a body that was not rewritten.
//!
//! Paths come from the profiled process: a module is only read when its path is absolute and
//! names a regular file of at most 256 MiB; its metadata is untrusted input (an unreadable one
//! adds nothing).

use sonde_metadata::tables::{Metadata, pe_metadata};
use sonde_profile::MethodBlocks;
use sonde_protocol::{MethodNames, MethodRecord};
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::Path;

/// The largest module read.
const MAX_MODULE: u64 = 256 << 20;

/// Records for the methods of the covered assemblies that `blocks` does not cover, with ids from
/// `next_id` on (what `sources::resolve` needs to find their lines).
pub fn uncalled(methods: &BTreeMap<u32, MethodRecord>, blocks: &[MethodBlocks], next_id: u32) -> Vec<MethodRecord> {
    let covered: HashSet<(&str, u32)> = blocks
        .iter()
        .filter_map(|b| methods.get(&b.method).map(|m| &m.names))
        .filter(|m| m.token != 0 && !m.path.is_empty())
        .map(|m| (m.path.as_str(), m.token))
        .collect();
    let modules: BTreeSet<(&str, &str, &str)> = blocks
        .iter()
        .filter_map(|b| methods.get(&b.method).map(|m| &m.names))
        .filter(|m| !m.path.is_empty())
        .map(|m| (m.path.as_str(), m.assembly.as_str(), m.module.as_str()))
        .collect();
    let mut out = Vec::new();
    for (path, assembly, module) in modules {
        let Some(md) = metadata(path) else { continue };
        for row in 1..=md.method_count() {
            let token = 0x0600_0000 | row;
            if md.method_rva(row).unwrap_or(0) == 0 || covered.contains(&(path, token)) {
                continue;
            }
            let Ok((name, signature)) = md.method_name_and_signature(token) else { continue };
            let names = MethodNames {
                name,
                signature,
                assembly: assembly.to_string(),
                module: module.to_string(),
                path: path.to_string(),
                token,
                ..MethodNames::default()
            };
            out.push(MethodRecord { id: next_id + out.len() as u32, names });
        }
    }
    out
}

/// The metadata of the module at `path`.
fn metadata(path: &str) -> Option<Metadata> {
    let file = Path::new(path);
    let meta = std::fs::metadata(file).ok()?;
    if !file.is_absolute() || !meta.is_file() || meta.len() > MAX_MODULE {
        return None;
    }
    pe_metadata(&std::fs::read(file).ok()?).ok()
}
