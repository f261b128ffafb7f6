//! `--format speedscope` (being written).

use crate::Renderer;
use sonde_profile::Profile;
use std::io;

pub struct SpeedscopeRenderer;

impl Renderer for SpeedscopeRenderer {
    fn render(&self, _profile: &Profile, _out: &mut dyn io::Write) -> io::Result<()> {
        Err(io::Error::new(io::ErrorKind::Unsupported, "the speedscope format is not available yet"))
    }
}
