//! `--format flamegraph` (being written).

use crate::Renderer;
use sonde_profile::Profile;
use std::io;

pub struct FlamegraphRenderer;

impl Renderer for FlamegraphRenderer {
    fn render(&self, _profile: &Profile, _out: &mut dyn io::Write) -> io::Result<()> {
        Err(io::Error::new(io::ErrorKind::Unsupported, "the flamegraph format is not available yet"))
    }
}
