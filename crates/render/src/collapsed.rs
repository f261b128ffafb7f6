//! `--format collapsed` (being written).

use crate::Renderer;
use sonde_profile::Profile;
use std::io;

pub struct CollapsedRenderer;

impl Renderer for CollapsedRenderer {
    fn render(&self, _profile: &Profile, _out: &mut dyn io::Write) -> io::Result<()> {
        Err(io::Error::new(io::ErrorKind::Unsupported, "the collapsed format is not available yet"))
    }
}
