//! Source lines for a profile: each method's first line, and the agent's samples by IL offset
//! turned into samples by line, through the symbols of the modules the methods came from
//! (`sonde-symbols`: portable PDBs, embedded or beside the module, and Mono's `.mdb`).
//!
//! The paths come from the profiled process: a module's path is only opened when it is an
//! absolute path to a regular file, and its symbols are read as untrusted input. Each module's
//! symbols are read once per controller process; a file that cannot be used (damaged, or built
//! from another version of the module) gives no lines, never wrong ones, and one warning.

use sonde_profile::{LineHits, LineSamples, MethodBlocks, NodeLine, SourceLine, Sources};
use sonde_protocol::{LineRecord, MethodRecord};
use sonde_symbols::AssemblySymbols;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::{Arc, Mutex};

/// Module path → its symbols (`None`: it has none, or they cannot be used).
static SYMBOLS: Mutex<Option<HashMap<String, Option<Arc<AssemblySymbols>>>>> = Mutex::new(None);
/// Why symbols were ignored, not yet reported ([`take_warnings`]).
static WARNINGS: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// The symbols of the module at `path`, read once.
fn symbols(path: &str) -> Option<Arc<AssemblySymbols>> {
    let mut cache = SYMBOLS.lock().unwrap_or_else(|e| e.into_inner());
    let cache = cache.get_or_insert_with(HashMap::new);
    if let Some(found) = cache.get(path) {
        return found.clone();
    }
    let file = Path::new(path);
    let opened = if file.is_absolute() && std::fs::metadata(file).is_ok_and(|m| m.is_file()) {
        match AssemblySymbols::open(file) {
            Ok(symbols) => symbols.map(Arc::new),
            Err(e) => {
                WARNINGS.lock().unwrap_or_else(|e| e.into_inner()).push(format!("symbols of {path} ignored: {e}"));
                None
            }
        }
    } else {
        None
    };
    cache.insert(path.to_string(), opened.clone());
    opened
}

/// Why symbols found since the last call were ignored, one line each.
pub fn take_warnings() -> Vec<String> {
    std::mem::take(&mut *WARNINGS.lock().unwrap_or_else(|e| e.into_inner()))
}

/// A node's samples at an IL offset of its method, for [`resolve`].
pub struct NodeOffset {
    pub node: u32,
    pub method: u32,
    pub il_offset: u32,
    pub samples: u64,
}

/// The source locations of `methods` (by id), of the samples in `lines`, of the nodes' samples
/// in `node_offsets`, and the lines of coverage mode's `blocks` with how often each ran (a line
/// ran as often as the block holding its sequence point; of several points, the most).
pub fn resolve<'a>(
    methods: impl Iterator<Item = &'a MethodRecord>,
    lines: &[LineRecord],
    node_offsets: &[NodeOffset],
    blocks: &[MethodBlocks],
) -> (Sources, Vec<LineHits>) {
    let mut files = Files::default();
    let mut tokens: HashMap<u32, (Arc<AssemblySymbols>, u32)> = HashMap::new();
    let mut method_lines = Vec::new();
    for MethodRecord { id, names: m } in methods {
        if m.token == 0 || m.path.is_empty() {
            continue;
        }
        let Some(symbols) = symbols(&m.path) else { continue };
        if let Some(first) = symbols.first_line(m.token) {
            method_lines.push((*id, files.line(&first.file, first.line)));
        }
        tokens.insert(*id, (symbols, m.token));
    }
    method_lines.sort_unstable_by_key(|&(id, _)| id);
    method_lines.dedup_by_key(|&mut (id, _)| id);
    // Each method's points decoded once, each file named once (offsets of one method are many).
    let mut tables = Tables::default();
    let mut line_of = |method: u32, il_offset: u32, files: &mut Files| -> Option<SourceLine> {
        let (symbols, token) = tokens.get(&method)?;
        tables.line(method, symbols, *token, il_offset, files)
    };
    // Several IL offsets make one line: summed.
    let mut by_line: BTreeMap<(u32, SourceLine), (u64, u64)> = BTreeMap::new();
    for record in lines {
        let Some(at) = line_of(record.method, record.il_offset, &mut files) else { continue };
        let counts = by_line.entry((record.method, at)).or_default();
        counts.0 += record.self_samples;
        counts.1 += record.total_samples;
    }
    let lines = by_line
        .into_iter()
        .map(|((method, at), (self_samples, total_samples))| LineSamples { method, at, self_samples, total_samples })
        .collect();
    let mut by_node: BTreeMap<(u32, SourceLine), u64> = BTreeMap::new();
    for n in node_offsets {
        let Some(at) = line_of(n.method, n.il_offset, &mut files) else { continue };
        *by_node.entry((n.node, at)).or_default() += n.samples;
    }
    let node_lines = by_node.into_iter().map(|((node, at), samples)| NodeLine { node, at, samples }).collect();
    let mut hits: BTreeMap<(u32, SourceLine), u64> = BTreeMap::new();
    for b in blocks {
        let Some((symbols, token)) = tokens.get(&b.method) else { continue };
        let Some(points) = tables.points(b.method, symbols, *token, &mut files) else { continue };
        for &(offset, at) in points {
            let h = hits.entry((b.method, at)).or_default();
            *h = (*h).max(b.hits_at(offset));
        }
    }
    let hits = hits.into_iter().map(|((method, at), hits)| LineHits { method, at, hits }).collect();
    (Sources { files: files.names, methods: method_lines, lines, node_lines }, hits)
}

/// Methods' sequence points, decoded at their first lookup, with their files in the profile's
/// file table.
#[derive(Default)]
struct Tables {
    /// Method id → its points `(IL offset, line)` in IL order (`None`: it has none).
    points: HashMap<u32, Option<Vec<(u32, SourceLine)>>>,
    /// (symbols, their file index) → the profile's file index.
    files: HashMap<(usize, u32), u32>,
}

impl Tables {
    /// The line of `il_offset` in `method` (`token` in `symbols`): the last point at or before
    /// it, as `AssemblySymbols::line` finds it.
    fn line(
        &mut self,
        method: u32,
        symbols: &Arc<AssemblySymbols>,
        token: u32,
        il_offset: u32,
        files: &mut Files,
    ) -> Option<SourceLine> {
        let points = self.points(method, symbols, token, files)?;
        let after = points.partition_point(|&(offset, _)| offset <= il_offset);
        after.checked_sub(1).map(|i| points[i].1)
    }

    /// The points `(IL offset, line)` of `method`, in IL order, decoded at the first call.
    fn points(
        &mut self,
        method: u32,
        symbols: &Arc<AssemblySymbols>,
        token: u32,
        files: &mut Files,
    ) -> Option<&[(u32, SourceLine)]> {
        let known = &mut self.files;
        let points = self.points.entry(method).or_insert_with(|| {
            let key = Arc::as_ptr(symbols) as usize;
            let points = symbols.method_points(token)?;
            let mut table = Vec::with_capacity(points.len());
            for (offset, file, line) in points {
                let file = match known.get(&(key, file)) {
                    Some(&index) => index,
                    None => {
                        let index = files.line(&symbols.file_name(file)?, line).file;
                        known.insert((key, file), index);
                        index
                    }
                };
                table.push((offset, SourceLine { file, line }));
            }
            Some(table)
        });
        points.as_deref()
    }
}

/// The file table being built.
#[derive(Default)]
struct Files {
    names: Vec<String>,
    index: HashMap<String, u32>,
}

impl Files {
    fn line(&mut self, file: &str, line: u32) -> SourceLine {
        let next = self.names.len() as u32;
        let file = *self.index.entry(file.to_string()).or_insert_with(|| {
            self.names.push(file.to_string());
            next
        });
        SourceLine { file, line }
    }
}
