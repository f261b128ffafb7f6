//! `sonde report`: render a profile file.

use crate::cli::{DiffArgs, DiffFormatArg, NormalizeArg, ReportArgs};
use anyhow::{Context, Result};
use sonde_render::{Format, renderer};
use std::io::{BufWriter, Write};

pub fn report(args: ReportArgs) -> Result<()> {
    if crate::heap::is_heap_file(&args.file) {
        return crate::heap::report_file(&args);
    }
    if args.paths.is_some() {
        anyhow::bail!("--paths is for heap snapshots (sonde heap); {} is a profile", args.file.display());
    }
    let profile = sonde_profile::load(&args.file).with_context(|| format!("cannot read {}", args.file.display()))?;
    if let Some(method) = &args.lines {
        return lines(&args, &profile, method);
    }
    let format = args.format;
    // Just my code (sonde_profile::view): the JSON keeps every frame, marked with its kind.
    let view = match format {
        Format::Json => sonde_profile::view::View::ALL,
        _ => sonde_profile::view::View { native: args.native.into(), framework: args.framework.into() },
    };
    let profile = sonde_profile::view::apply(&profile, view);
    let renderer = renderer(format);
    match &args.output {
        Some(path) => {
            let file = std::fs::File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
            let mut out = BufWriter::new(file);
            renderer
                .render(&profile, &mut out)
                .and_then(|()| out.flush())
                .with_context(|| format!("cannot write {}", path.display()))?;
        }
        None => {
            let stdout = std::io::stdout();
            let mut out = BufWriter::new(stdout.lock());
            match renderer.render(&profile, &mut out).and_then(|()| out.flush()) {
                // `sonde report … | head` is not an error.
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
                other => other.context("cannot write the report")?,
            }
        }
    }
    Ok(())
}

/// `sonde diff BASE NEW`.
pub fn diff(args: DiffArgs) -> Result<()> {
    match (crate::heap::is_heap_file(&args.base), crate::heap::is_heap_file(&args.new)) {
        (true, true) => return crate::heap::diff_files(&args),
        (false, false) => {}
        _ => anyhow::bail!("sonde diff compares two profiles or two heap snapshots, not one of each"),
    }
    let load =
        |path: &std::path::Path| sonde_profile::load(path).with_context(|| format!("cannot read {}", path.display()));
    let (base, new) = (load(&args.base)?, load(&args.new)?);
    let format = match args.format {
        DiffFormatArg::Text => sonde_render::DiffFormat::Text,
        DiffFormatArg::Json => sonde_render::DiffFormat::Json,
        DiffFormatArg::Html => sonde_render::DiffFormat::Html,
    };
    let normalize = match args.normalize {
        NormalizeArg::Total => sonde_profile::diff::Normalize::Total,
        NormalizeArg::None => sonde_profile::diff::Normalize::None,
    };
    let mut buf = Vec::new();
    sonde_render::write_diff(&base, &new, normalize, format, &mut buf).context("cannot compare the profiles")?;
    match &args.output {
        Some(path) => std::fs::write(path, &buf).with_context(|| format!("cannot write {}", path.display())),
        None => match std::io::stdout().lock().write_all(&buf) {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
            other => other.context("cannot write the diff"),
        },
    }
}

/// `--lines METHOD`: the line table of the methods it names.
fn lines(args: &ReportArgs, profile: &sonde_profile::Profile, method: &str) -> Result<()> {
    if !matches!(args.format, Format::Text) {
        anyhow::bail!("--lines writes a text table: leave out --format (or use --format text)");
    }
    let mut buf = Vec::new();
    if !sonde_render::write_lines(profile, method, &mut buf).context("cannot write the line table")? {
        anyhow::bail!(
            "no method matches {:?} in {}",
            sonde_render::fmt::Clean(method).to_string(),
            args.file.display()
        );
    }
    match &args.output {
        Some(path) => std::fs::write(path, &buf).with_context(|| format!("cannot write {}", path.display())),
        None => match std::io::stdout().lock().write_all(&buf) {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
            other => other.context("cannot write the line table"),
        },
    }
}
