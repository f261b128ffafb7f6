//! Whom the agent and the controller trust: the files, directories and sockets between them.
//!
//! The agent runs inside other people's processes, often as root, and the environment that names
//! its socket outlives the controller (a daemon started by the profiled program inherits it). So
//! both ends check, every time, that what they are about to use belongs to *the recording user*
//! and that nobody else can change it:
//!
//! * the socket's directory is a real directory (not a symlink) owned by the user, mode `0700`
//!   ([`check_private_dir`]), and the socket in it is owned by the user ([`check_socket`]);
//! * the process at the other end of the connection runs as the user ([`check_peer`], from the
//!   kernel's `SO_PEERCRED`, which a squatter cannot forge — this also closes the race between
//!   checking a path and connecting to it);
//! * a library to be loaded, and every directory above it, is owned by the user and writable by
//!   nobody else ([`check_not_writable_by_others`]; a sticky directory such as `/tmp` is fine above
//!   it, as others cannot rename what is ours there).
//!
//! "The user" is this process's effective uid. Root is trusted too: it can read and change any
//! process anyway, so trusting it opens nothing.

use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};

/// Why a path or a peer is not trusted.
#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    #[error("cannot inspect {}: {source}", path.display())]
    Inspect { path: PathBuf, source: std::io::Error },
    #[error("{} is not a directory", .0.display())]
    NotADirectory(PathBuf),
    #[error("{} is not a socket", .0.display())]
    NotASocket(PathBuf),
    #[error("{} belongs to uid {owner}, not to this user (uid {user})", path.display())]
    Owner { path: PathBuf, owner: u32, user: u32 },
    #[error("{} has mode {mode:o}: other users can enter it (expected 700)", path.display())]
    NotPrivate { path: PathBuf, mode: u32 },
    #[error("{} has mode {mode:o}: other users can write it", path.display())]
    Writable { path: PathBuf, mode: u32 },
    #[error("cannot ask who is at the other end of the socket: {0}")]
    PeerUnknown(std::io::Error),
    #[error("the other end of the socket runs as uid {peer}, not as this user (uid {user})")]
    Peer { peer: u32, user: u32 },
}

/// This process's effective uid: the user whose files and peers are trusted.
pub fn user() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// The user, or root.
pub fn trusted_uid(uid: u32) -> bool {
    uid == user() || uid == 0
}

fn lstat(path: &Path) -> Result<std::fs::Metadata, TrustError> {
    std::fs::symlink_metadata(path).map_err(|source| TrustError::Inspect { path: path.to_path_buf(), source })
}

fn owned(path: &Path, meta: &std::fs::Metadata) -> Result<(), TrustError> {
    if trusted_uid(meta.uid()) {
        Ok(())
    } else {
        Err(TrustError::Owner { path: path.to_path_buf(), owner: meta.uid(), user: user() })
    }
}

/// `path` is a directory (a symlink is refused), owned by the user, that no one else can enter.
pub fn check_private_dir(path: &Path) -> Result<(), TrustError> {
    let meta = lstat(path)?;
    if !meta.is_dir() {
        return Err(TrustError::NotADirectory(path.to_path_buf()));
    }
    owned(path, &meta)?;
    let mode = meta.mode() & 0o7777;
    if mode & 0o077 != 0 {
        return Err(TrustError::NotPrivate { path: path.to_path_buf(), mode });
    }
    Ok(())
}

/// `socket` is a socket owned by the user, in a private directory of the user's.
pub fn check_socket(socket: &Path) -> Result<(), TrustError> {
    let dir = match socket.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    check_private_dir(dir)?;
    let meta = lstat(socket)?;
    if !meta.file_type().is_socket() {
        return Err(TrustError::NotASocket(socket.to_path_buf()));
    }
    owned(socket, &meta)
}

/// The uid of the process at the other end of a connected Unix socket, from the kernel.
///
/// Only the uid is read: the pid is 0 when the peer is outside this process's PID namespace (an
/// agent in a container whose controller runs on the host), which some wrappers cannot represent.
pub fn peer_uid(stream: &UnixStream) -> std::io::Result<u32> {
    use nix::sys::socket::{getsockopt, sockopt::PeerCredentials};
    Ok(getsockopt(stream, PeerCredentials).map_err(std::io::Error::from)?.uid())
}

/// The process at the other end of `stream` runs as the user (or root).
pub fn check_peer(stream: &UnixStream) -> Result<(), TrustError> {
    let peer = peer_uid(stream).map_err(TrustError::PeerUnknown)?;
    if trusted_uid(peer) { Ok(()) } else { Err(TrustError::Peer { peer, user: user() }) }
}

/// Nobody but the user (or root) can change `path` or what it resolves to: the file and every
/// directory above it are owned by the user or root and not writable by group or others — except
/// a sticky directory above the first, where others cannot remove or rename entries that are not
/// theirs. Both the path as given and its resolution are checked: a symlink in a directory others
/// can write could be re-pointed after the check. (A symlink's own mode means nothing.)
pub fn check_not_writable_by_others(path: &Path) -> Result<(), TrustError> {
    let inspect = |source| TrustError::Inspect { path: path.to_path_buf(), source };
    let given = std::path::absolute(path).map_err(inspect)?;
    let resolved = path.canonicalize().map_err(inspect)?;
    check_chain(&given)?;
    check_chain(&resolved)
}

fn check_chain(path: &Path) -> Result<(), TrustError> {
    let mut current = Some(path);
    let mut first = true;
    while let Some(p) = current {
        let meta = lstat(p)?;
        owned(p, &meta)?;
        let mode = meta.mode() & 0o7777;
        let sticky_dir = meta.is_dir() && mode & 0o1000 != 0;
        if !meta.file_type().is_symlink() && mode & 0o022 != 0 && (first || !sticky_dir) {
            return Err(TrustError::Writable { path: p.to_path_buf(), mode });
        }
        first = false;
        current = p.parent();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn chmod(path: &Path, mode: u32) {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn a_private_directory_is_0700_and_not_a_symlink() {
        let top = tempfile::tempdir().unwrap();
        let dir = top.path().join("d");
        std::fs::create_dir(&dir).unwrap();
        chmod(&dir, 0o700);
        check_private_dir(&dir).unwrap();
        for mode in [0o750, 0o705, 0o755, 0o777, 0o1777] {
            chmod(&dir, mode);
            assert!(matches!(check_private_dir(&dir), Err(TrustError::NotPrivate { .. })), "{mode:o}");
        }
        chmod(&dir, 0o700);
        let link = top.path().join("l");
        std::os::unix::fs::symlink(&dir, &link).unwrap();
        assert!(matches!(check_private_dir(&link), Err(TrustError::NotADirectory(_))));
        assert!(matches!(check_private_dir(&top.path().join("missing")), Err(TrustError::Inspect { .. })));
    }

    #[test]
    fn a_socket_must_be_a_socket_in_a_private_directory() {
        let top = tempfile::tempdir().unwrap();
        chmod(top.path(), 0o700);
        let socket = top.path().join("s.sock");
        let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
        check_socket(&socket).unwrap();
        let file = top.path().join("f");
        std::fs::write(&file, b"").unwrap();
        assert!(matches!(check_socket(&file), Err(TrustError::NotASocket(_))));
        chmod(top.path(), 0o777);
        assert!(matches!(check_socket(&socket), Err(TrustError::NotPrivate { .. })));
        chmod(top.path(), 0o700);
    }

    #[test]
    fn the_peer_of_a_socket_pair_is_this_user() {
        let (a, _b) = UnixStream::pair().unwrap();
        assert_eq!(peer_uid(&a).unwrap(), user());
        check_peer(&a).unwrap();
    }

    #[test]
    fn a_library_must_not_be_writable_by_others_nor_any_directory_above_it() {
        let top = tempfile::tempdir().unwrap();
        chmod(top.path(), 0o755);
        let lib = top.path().join("lib.so");
        std::fs::write(&lib, b"").unwrap();
        chmod(&lib, 0o755);
        check_not_writable_by_others(&lib).unwrap();
        chmod(&lib, 0o775);
        assert!(matches!(check_not_writable_by_others(&lib), Err(TrustError::Writable { .. })));
        chmod(&lib, 0o755);
        chmod(top.path(), 0o777);
        let err = check_not_writable_by_others(&lib).unwrap_err();
        assert!(matches!(&err, TrustError::Writable { path, .. } if path == &top.path().canonicalize().unwrap()));
        // Sticky (as /tmp is): others cannot replace our entries in it.
        chmod(top.path(), 0o1777);
        check_not_writable_by_others(&lib).unwrap();
        // ... but a sticky file itself is no protection.
        chmod(top.path(), 0o755);
        let link = top.path().join("link.so");
        std::os::unix::fs::symlink(&lib, &link).unwrap();
        check_not_writable_by_others(&link).unwrap();
        // A symlink in a directory others can write could be re-pointed.
        let open = top.path().join("open");
        std::fs::create_dir(&open).unwrap();
        chmod(&open, 0o777);
        let exposed = open.join("link.so");
        std::os::unix::fs::symlink(&lib, &exposed).unwrap();
        assert!(
            matches!(check_not_writable_by_others(&exposed), Err(TrustError::Writable { path, .. }) if path == open)
        );
    }
}
