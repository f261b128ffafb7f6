//! `--format collapsed`: folded stacks, the input format of Brendan Gregg's `flamegraph.pl`,
//! inferno and many other tools. One line per distinct stack, `Root;Child;Leaf N`, where `N` is
//! the stack's self weight: nanoseconds of self time for tracing, self samples for sampling.
//!
//! * Stacks are merged across threads: identical stacks (same frame names, root first) are one
//!   line with their weights summed. Overloads of a method share a name and so share a frame.
//! * Frames are method names. A `;` separates frames and a newline ends a line, so inside a
//!   name `;` becomes `:` and control characters become `?` (.NET metadata names contain
//!   neither in practice, but they are untrusted text).
//! * Stacks that weigh nothing are left out, so an empty profile gives an empty file.
//! * Lines come in lexicographic order of their frame lists (children sorted by name), so the
//!   output is deterministic.
//!
//! The stacks are merged in a trie of frame names built in one pass over the nodes (parents
//! precede children), then written by a depth-first walk that keeps one line buffer: memory is
//! linear in the number of nodes, never in the total length of the output.

use std::collections::HashMap;
use std::io::{self, BufWriter, Write};

use sonde_profile::Profile;

use crate::Renderer;
use crate::stacks::self_weight;

/// Renders folded stacks.
#[derive(Debug, Clone, Copy, Default)]
pub struct CollapsedRenderer;

impl Renderer for CollapsedRenderer {
    fn render(&self, profile: &Profile, out: &mut dyn Write) -> io::Result<()> {
        crate::check(profile)?;
        let mut out = BufWriter::new(out);
        fold(profile, |stack, weight| writeln!(out, "{stack} {weight}"))?;
        out.flush()
    }
}

/// No parent: a root of the trie.
const NONE: u32 = u32::MAX;

/// Calls `emit(stack, weight)` for every distinct stack with a non-zero weight, in the order
/// described in the module docs. `stack` is the frame names joined by `;`, root first.
pub(crate) fn fold(profile: &Profile, mut emit: impl FnMut(&str, u64) -> io::Result<()>) -> io::Result<()> {
    // Frame names, interned after cleaning so that names which clean to the same text merge.
    let mut name_ids: HashMap<String, u32> = HashMap::new();
    let mut names: Vec<String> = Vec::new();
    let method_name: Vec<u32> = profile
        .methods
        .iter()
        .map(|m| {
            let clean = frame_name(&m.name);
            *name_ids.entry(clean).or_insert_with_key(|clean| {
                names.push(clean.clone());
                names.len() as u32 - 1
            })
        })
        .collect();
    drop(name_ids);
    let mut by_name: Vec<u32> = (0..names.len() as u32).collect();
    by_name.sort_unstable_by(|&a, &b| names[a as usize].cmp(&names[b as usize]));
    let mut rank = vec![0u32; names.len()];
    for (r, &name) in by_name.iter().enumerate() {
        rank[name as usize] = r as u32;
    }

    // The trie: one entry per distinct (parent entry, frame name).
    let mut entry_ids: HashMap<(u32, u32), u32> = HashMap::new();
    let mut parent: Vec<u32> = Vec::new();
    let mut name: Vec<u32> = Vec::new();
    let mut weight: Vec<u64> = Vec::new();
    let mut entry_of_node: Vec<u32> = Vec::with_capacity(profile.nodes.len());
    for node in &profile.nodes {
        let up = node.parent.map_or(NONE, |p| entry_of_node[p as usize]);
        let frame = method_name[node.method as usize];
        let entry = *entry_ids.entry((up, frame)).or_insert_with(|| {
            parent.push(up);
            name.push(frame);
            weight.push(0);
            parent.len() as u32 - 1
        });
        entry_of_node.push(entry);
        let w = &mut weight[entry as usize];
        *w = w.saturating_add(self_weight(profile.run.mode, node));
    }
    drop((entry_ids, entry_of_node));

    // Children lists, each sorted by name.
    let n = parent.len();
    let mut first = vec![0usize; n + 1];
    let mut roots = Vec::new();
    for (e, &p) in parent.iter().enumerate() {
        if p == NONE {
            roots.push(e as u32);
        } else {
            first[p as usize + 1] += 1;
        }
    }
    for i in 1..first.len() {
        first[i] += first[i - 1];
    }
    let mut next = first.clone();
    let mut children = vec![0u32; n - roots.len()];
    for (e, &p) in parent.iter().enumerate() {
        if p != NONE {
            children[next[p as usize]] = e as u32;
            next[p as usize] += 1;
        }
    }
    let by_rank = |a: &u32, b: &u32| rank[name[*a as usize] as usize].cmp(&rank[name[*b as usize] as usize]);
    roots.sort_unstable_by(by_rank);
    for i in 0..n {
        children[first[i]..first[i + 1]].sort_unstable_by(by_rank);
    }

    // Depth-first, with the line so far and where each depth's prefix ends.
    let mut line = String::new();
    let mut prefix_end: Vec<usize> = Vec::new();
    let mut pending: Vec<(u32, usize)> = roots.iter().rev().map(|&r| (r, 0)).collect();
    while let Some((entry, depth)) = pending.pop() {
        prefix_end.truncate(depth);
        line.truncate(prefix_end.last().copied().unwrap_or(0));
        if depth > 0 {
            line.push(';');
        }
        line.push_str(&names[name[entry as usize] as usize]);
        prefix_end.push(line.len());
        let e = entry as usize;
        if weight[e] > 0 {
            emit(&line, weight[e])?;
        }
        pending.extend(children[first[e]..first[e + 1]].iter().rev().map(|&c| (c, depth + 1)));
    }
    Ok(())
}

/// A method name as a frame: `;` would split it and control characters would break the line.
fn frame_name(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c == ';' {
                ':'
            } else if c.is_control() {
                '?'
            } else {
                c
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_names_cannot_split_a_stack_or_a_line() {
        assert_eq!(frame_name("A.B<int;string>\n\tC"), "A.B<int:string>??C");
        assert_eq!(frame_name("Acme.Node`1..ctor"), "Acme.Node`1..ctor");
    }
}
