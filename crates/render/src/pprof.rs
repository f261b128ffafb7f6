//! `--format pprof` (being written).

use crate::Renderer;
use sonde_profile::Profile;
use std::io;

pub struct PprofRenderer;

impl Renderer for PprofRenderer {
    fn render(&self, _profile: &Profile, _out: &mut dyn io::Write) -> io::Result<()> {
        Err(io::Error::new(io::ErrorKind::Unsupported, "the pprof format is not available yet"))
    }
}
