//! Where `sonde record` writes its profiles, decided before the program runs and checked again
//! when it ends, so that what was collected is never lost nor written over something else.
//!
//! * Before launch ([`Output::prepare`]): `-o` must be creatable — a file is created and removed
//!   beside it — and must not name a directory, nor an existing file that is not a Sonde profile
//!   (unless `--force`): a run whose profile cannot be written is a run for nothing, and the
//!   program's own exit code must not be replaced by sonde's complaint afterwards.
//! * At the end ([`Output::save`]): each profile is written to a temporary file and renamed
//!   (`sonde_profile::save`). When `-o` changed during the run (another recording wrote it), this
//!   one goes to `STEM.PID.EXT` beside it, with a note, instead of silently replacing the other.
//!   A per-process name (`STEM.PID.EXT`, several .NET processes) that is taken by something other
//!   than a profile gets a `.N` suffix. When the directory cannot be written any more (removed,
//!   full), the profile goes to the temporary directory, with a note.

use anyhow::{Result, bail};
use sonde_profile::Profile;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

#[derive(Debug)]
pub struct Output {
    path: PathBuf,
    force: bool,
    /// What was at `path` before the run, to notice another writer.
    before: Option<FileId>,
}

/// Enough of a file's identity to notice that it was replaced or rewritten.
#[derive(Debug, PartialEq, Eq)]
struct FileId {
    dev: u64,
    ino: u64,
    len: u64,
    mtime_ns: i128,
}

fn file_id(path: &Path) -> Option<FileId> {
    let m = std::fs::metadata(path).ok()?;
    Some(FileId {
        dev: m.dev(),
        ino: m.ino(),
        len: m.len(),
        mtime_ns: i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec()),
    })
}

/// True when `path` starts like a Sonde profile (or is empty: nothing to lose).
fn replaceable(path: &Path) -> bool {
    let Ok(file) = std::fs::File::open(path) else { return false };
    let mut head = Vec::new();
    if file.take(sonde_profile::MAGIC.len() as u64).read_to_end(&mut head).is_err() {
        return false;
    }
    head.is_empty() || head == sonde_profile::MAGIC
}

impl Output {
    /// Checks that `path` can be written (see the module docs) before anything runs.
    pub fn prepare(path: &Path, force: bool) -> Result<Output> {
        match std::fs::metadata(path) {
            Ok(m) if m.is_dir() => bail!("{} is a directory: -o names the profile file to write", path.display()),
            Ok(_) if !force && !replaceable(path) => bail!(
                "{} exists and is not a Sonde profile; not overwriting it (--force overwrites it)",
                path.display()
            ),
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => bail!("cannot write {}: {e}", path.display()),
        }
        let dir = match path.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir,
            _ => Path::new("."),
        };
        // Creating a file is the only reliable test (permissions, read-only mounts, ACLs, quotas).
        tempfile::Builder::new()
            .prefix(".sonde-probe-")
            .tempfile_in(dir)
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
        Ok(Output { path: path.to_path_buf(), force, before: file_id(path) })
    }

    /// Writes the profile of process `pid`: to `-o` when it is the only one, else to
    /// `STEM.PID.EXT`, following the rules of the module docs. Returns where it went.
    pub fn save(&self, profile: &Profile, pid: u32, only: bool) -> Result<PathBuf> {
        let mut path = if only { self.path.clone() } else { with_pid(&self.path, pid) };
        if only && file_id(&path) != self.before {
            let other = with_pid(&self.path, pid);
            crate::say!(
                "sonde: {} was written by someone else during this recording; this profile goes to {}",
                self.path.display(),
                other.display()
            );
            path = other;
        }
        if path != self.path && !self.force && path.exists() && !replaceable(&path) {
            path = (1..).map(|n| suffixed(&path, n)).find(|p| !p.exists()).expect("a free name");
        }
        match sonde_profile::save(&path, profile) {
            Ok(()) => Ok(path),
            Err(e) => {
                let fallback = std::env::temp_dir().join(format!("sonde-{pid}-{}.sonde", profile.run.started_unix_ms));
                match sonde_profile::save(&fallback, profile) {
                    Ok(()) => {
                        crate::say!(
                            "sonde: cannot write {}: {}; the profile was saved as {}",
                            path.display(),
                            crate::chain(&e.into()),
                            fallback.display()
                        );
                        Ok(fallback)
                    }
                    Err(_) => bail!("cannot write {}: {}", path.display(), crate::chain(&e.into())),
                }
            }
        }
    }
}

/// `out/profile.sonde` → `out/profile.1234.sonde`.
fn with_pid(path: &Path, pid: u32) -> PathBuf {
    suffixed_stem(path, &pid.to_string())
}

/// `out/p.1234.sonde` → `out/p.1234.2.sonde`.
fn suffixed(path: &Path, n: u32) -> PathBuf {
    suffixed_stem(path, &n.to_string())
}

fn suffixed_stem(path: &Path, suffix: &str) -> PathBuf {
    let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "profile".into());
    let name = match path.extension() {
        Some(ext) => format!("{stem}.{suffix}.{}", ext.to_string_lossy()),
        None => format!("{stem}.{suffix}"),
    };
    path.with_file_name(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pid_goes_before_the_extension() {
        assert_eq!(with_pid(Path::new("out/p.sonde"), 42), PathBuf::from("out/p.42.sonde"));
        assert_eq!(with_pid(Path::new("p"), 7), PathBuf::from("p.7"));
        assert_eq!(suffixed(Path::new("out/p.42.sonde"), 2), PathBuf::from("out/p.42.2.sonde"));
    }

    #[test]
    fn an_output_is_checked_before_the_run() {
        let dir = tempfile::tempdir().unwrap();
        let fresh = dir.path().join("p.sonde");
        assert!(Output::prepare(&fresh, false).is_ok());
        assert!(!fresh.exists(), "the check leaves nothing behind");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        let missing = dir.path().join("no/such/dir/p.sonde");
        assert!(Output::prepare(&missing, false).unwrap_err().to_string().starts_with("cannot write"));
        assert!(Output::prepare(dir.path(), false).unwrap_err().to_string().contains("is a directory"));
        let text = dir.path().join("notes.txt");
        std::fs::write(&text, "precious").unwrap();
        assert!(Output::prepare(&text, false).unwrap_err().to_string().contains("is not a Sonde profile"));
        assert!(Output::prepare(&text, true).is_ok());
        let empty = dir.path().join("empty");
        std::fs::write(&empty, "").unwrap();
        assert!(Output::prepare(&empty, false).is_ok(), "an empty file holds nothing to lose");
        let old = dir.path().join("old.sonde");
        std::fs::write(&old, sonde_profile::MAGIC).unwrap();
        assert!(Output::prepare(&old, false).is_ok(), "an older profile is replaced");
    }
}
