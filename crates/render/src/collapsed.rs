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
//! * A line holds at most [`MAX_STACK_FRAMES`] frames and one marker: deeper frames are cut
//!   and a single `[… N frames cut]` frame takes the weight of everything below, `N` being the
//!   most frames any stack lost there (see [`crate::stacks`]). Every line is written out in
//!   full, so without the cut a recursion 50,000 deep would take 1.25 billion frames.
//! * The whole output is at most [`MAX_COLLAPSED_BYTES`]; a profile that would need more is
//!   refused with an error before anything is written.
//!
//! The stacks are merged in a trie of frame names built in one pass over the nodes (parents
//! precede children), then written by a depth-first walk that keeps one line buffer: memory is
//! linear in the number of nodes, never in the total length of the output.

use std::collections::HashMap;
use std::io::{self, BufWriter, Write};

use sonde_profile::Profile;

use crate::Renderer;
use crate::stacks::{MAX_STACK_FRAMES, cut_frame_name, self_weight, too_large};

/// The largest folded-stacks output, in bytes (2 GiB): about a minute of disk writes, and far
/// more than `flamegraph.pl` or speedscope can open. With stacks cut at [`MAX_STACK_FRAMES`]
/// only a profile with very many very deep stacks comes near it.
pub const MAX_COLLAPSED_BYTES: u64 = 2 << 30;

/// Renders folded stacks.
#[derive(Debug, Clone, Copy, Default)]
pub struct CollapsedRenderer;

impl Renderer for CollapsedRenderer {
    fn render(&self, profile: &Profile, out: &mut dyn Write) -> io::Result<()> {
        crate::check(profile)?;
        let folded = FoldedStacks::new(profile);
        let len = folded.output_len();
        if len > MAX_COLLAPSED_BYTES {
            return Err(too_large("collapsed", len, MAX_COLLAPSED_BYTES, "bytes"));
        }
        let mut out = BufWriter::new(out);
        folded.for_each(|stack, weight| writeln!(out, "{stack} {weight}"))?;
        out.flush()
    }
}

/// No parent: a root of the trie.
const NONE: u32 = u32::MAX;
/// The frame name of a cut marker while the trie is built; it gets its real name at the end.
const CUT: u32 = u32::MAX - 1;

/// A profile's stacks merged by frame name, cut at [`MAX_STACK_FRAMES`], as described in the
/// module docs: one trie entry per distinct stack.
pub(crate) struct FoldedStacks {
    /// Frame names: cleaned method names, then the cut markers' names.
    names: Vec<String>,
    /// Per entry: its parent entry (or [`NONE`]), its frame name and its self weight. A parent
    /// always has a smaller id than its children.
    parent: Vec<u32>,
    name: Vec<u32>,
    weight: Vec<u64>,
    /// `children[first[e]..first[e + 1]]` are entry `e`'s children, sorted by name.
    first: Vec<usize>,
    children: Vec<u32>,
    /// The entries without a parent, sorted by name.
    roots: Vec<u32>,
}

impl FoldedStacks {
    pub(crate) fn new(profile: &Profile) -> FoldedStacks {
        // Frame names, interned after cleaning so that names which clean to the same text merge.
        let mut name_ids: HashMap<String, u32> = HashMap::new();
        let mut names: Vec<String> = Vec::new();
        let method_name: Vec<u32> = (0..profile.methods.len() as u32)
            .map(|m| {
                let clean = frame_name(&profile.display_name(m));
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

        // The trie: one entry per distinct (parent entry, frame name). A node deeper than
        // MAX_STACK_FRAMES adds its weight to the marker entry under its ancestor at that
        // depth, and `cut_frames` keeps the most frames cut under each marker.
        let mut entry_ids: HashMap<(u32, u32), u32> = HashMap::new();
        let mut parent: Vec<u32> = Vec::new();
        let mut name: Vec<u32> = Vec::new();
        let mut weight: Vec<u64> = Vec::new();
        let mut cut_frames: HashMap<u32, u32> = HashMap::new();
        let mut entry_of_node: Vec<u32> = Vec::with_capacity(profile.nodes.len());
        let mut depth_of_node: Vec<u32> = Vec::with_capacity(profile.nodes.len());
        for node in &profile.nodes {
            let depth = node.parent.map_or(1, |p| depth_of_node[p as usize].saturating_add(1));
            let up = node.parent.map_or(NONE, |p| entry_of_node[p as usize]);
            let entry = if depth > MAX_STACK_FRAMES + 1 {
                up
            } else {
                let frame = if depth > MAX_STACK_FRAMES { CUT } else { method_name[node.method as usize] };
                *entry_ids.entry((up, frame)).or_insert_with(|| {
                    parent.push(up);
                    name.push(frame);
                    weight.push(0);
                    parent.len() as u32 - 1
                })
            };
            if depth > MAX_STACK_FRAMES {
                let frames = cut_frames.entry(entry).or_default();
                *frames = (*frames).max(depth - MAX_STACK_FRAMES);
            }
            entry_of_node.push(entry);
            depth_of_node.push(depth);
            let w = &mut weight[entry as usize];
            *w = w.saturating_add(self_weight(profile.run.mode, node));
        }
        drop((entry_ids, entry_of_node, depth_of_node));

        // Markers get their names. A marker is its parent's only child, so its rank is moot.
        let mut marker_names: HashMap<u32, u32> = HashMap::new();
        for (&entry, &frames) in &cut_frames {
            name[entry as usize] = *marker_names.entry(frames).or_insert_with(|| {
                names.push(cut_frame_name(frames));
                rank.push(0);
                names.len() as u32 - 1
            });
        }

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
        FoldedStacks { names, parent, name, weight, first, children, roots }
    }

    /// The sum of all weights (in `u128`, which cannot overflow).
    pub(crate) fn total_weight(&self) -> u128 {
        self.weight.iter().map(|&w| u128::from(w)).sum()
    }

    /// The bytes of all `stack weight\n` lines that [`for_each`](Self::for_each) gives,
    /// computed without writing them.
    pub(crate) fn output_len(&self) -> u64 {
        let mut prefix_len = vec![0u64; self.parent.len()];
        let mut total = 0u64;
        for e in 0..self.parent.len() {
            let name_len = self.names[self.name[e] as usize].len() as u64;
            prefix_len[e] = match self.parent[e] {
                NONE => name_len,
                p => prefix_len[p as usize] + 1 + name_len,
            };
            if self.weight[e] > 0 {
                total = total.saturating_add(prefix_len[e] + 2 + self.weight[e].to_string().len() as u64);
            }
        }
        total
    }

    /// Calls `emit(stack, weight)` for every distinct stack with a non-zero weight, in the
    /// order described in the module docs. `stack` is the frame names joined by `;`, root first.
    pub(crate) fn for_each(&self, mut emit: impl FnMut(&str, u64) -> io::Result<()>) -> io::Result<()> {
        // Depth-first, with the line so far and where each depth's prefix ends.
        let mut line = String::new();
        let mut prefix_end: Vec<usize> = Vec::new();
        let mut pending: Vec<(u32, usize)> = self.roots.iter().rev().map(|&r| (r, 0)).collect();
        while let Some((entry, depth)) = pending.pop() {
            prefix_end.truncate(depth);
            line.truncate(prefix_end.last().copied().unwrap_or(0));
            if depth > 0 {
                line.push(';');
            }
            let e = entry as usize;
            line.push_str(&self.names[self.name[e] as usize]);
            prefix_end.push(line.len());
            if self.weight[e] > 0 {
                emit(&line, self.weight[e])?;
            }
            pending.extend(self.children[self.first[e]..self.first[e + 1]].iter().rev().map(|&c| (c, depth + 1)));
        }
        Ok(())
    }
}

/// A method name as a frame: `;` would split it, control characters would break the line (or
/// drive the terminal it is printed to), bidi controls would reorder it.
fn frame_name(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c == ';' {
                ':'
            } else if crate::fmt::unsafe_in_terminal(c) {
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
