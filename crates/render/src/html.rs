//! `--format html` (being written).

use crate::Renderer;
use sonde_profile::Profile;
use std::io;

pub struct HtmlRenderer;

impl Renderer for HtmlRenderer {
    fn render(&self, _profile: &Profile, _out: &mut dyn io::Write) -> io::Result<()> {
        Err(io::Error::new(io::ErrorKind::Unsupported, "the html format is not available yet"))
    }
}
