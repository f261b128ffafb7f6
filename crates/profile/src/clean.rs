//! Names from the profiled program, made safe for a terminal: every report and every crate that
//! prints them (the renderers, the heap snapshots' text) escapes them with this one [`Clean`].

use std::fmt;

/// A string from the profile, with control characters and bidirectional formatting characters
/// escaped: names come from the profiled program's metadata and must not be able to move the
/// cursor, retitle or recolour the terminal, or make text read in another order than it is.
pub struct Clean<'a>(pub &'a str);

/// True for what [`Clean`] escapes: control characters (C0, DEL, C1 — escape sequences start
/// with one) and the bidirectional marks, embeddings, overrides and isolates (U+061C, U+200E/F,
/// U+202A–U+202E, U+2066–U+2069), which reorder the text shown around them.
pub fn unsafe_in_terminal(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{61C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

impl fmt::Display for Clean<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for c in self.0.chars() {
            if unsafe_in_terminal(c) {
                write!(f, "{}", c.escape_default())?;
            } else {
                write!(f, "{c}")?;
            }
        }
        Ok(())
    }
}
