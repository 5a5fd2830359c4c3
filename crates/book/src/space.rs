//! Free space on the file system a store or a copy is written to.
//!
//! sled 0.34 does not fail cleanly when its disk fills: a write that meets
//! `ENOSPC` sets an error inside the database that every later write and flush
//! returns until the database is reopened, and a flush waiting for a buffer
//! that can no longer be written may wait for good. So the product does not
//! let sled meet a full disk where it can avoid it: a copy (backup, migration,
//! import into a new store) first checks that the space it will need is there
//! ([`ensure_room`]), and the coordinator stops handing out jobs while its
//! store's file system has less than a reserve free (see the coordinator's
//! `store_space`).

use std::path::{Path, PathBuf};

use thiserror::Error;

/// Space a write is refused for.
#[derive(Debug, Error)]
pub enum SpaceError {
    /// Less space is free than the write needs.
    #[error(
        "no space left for `{}`: it needs about {needed} bytes, {available} are free on its file system (ENOSPC); free some space or choose another disk",
        path.display()
    )]
    NoSpace {
        path: PathBuf,
        needed: u64,
        available: u64,
    },
    /// The file system's free space cannot be read.
    #[error("cannot read the free space of `{}`: {source}", path.display())]
    Statvfs {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Bytes an unprivileged writer may still write on the file system holding
/// `path` (an existing file or directory): `statvfs`'s `f_bavail * f_frsize`.
///
/// # Errors
/// [`SpaceError::Statvfs`] when it cannot be read.
pub fn available_bytes(path: &Path) -> Result<u64, SpaceError> {
    let st = rustix::fs::statvfs(path).map_err(|e| SpaceError::Statvfs {
        path: path.to_path_buf(),
        source: e.into(),
    })?;
    Ok(st.f_bavail.saturating_mul(st.f_frsize))
}

/// The size of the file system holding `path` and the bytes an unprivileged
/// writer may still write on it (`f_blocks` and `f_bavail`, times `f_frsize`):
/// what a "percent free" alert divides.
///
/// # Errors
/// [`SpaceError::Statvfs`] when it cannot be read.
pub fn filesystem_bytes(path: &Path) -> Result<FilesystemBytes, SpaceError> {
    let st = rustix::fs::statvfs(path).map_err(|e| SpaceError::Statvfs {
        path: path.to_path_buf(),
        source: e.into(),
    })?;
    Ok(FilesystemBytes {
        size: st.f_blocks.saturating_mul(st.f_frsize),
        available: st.f_bavail.saturating_mul(st.f_frsize),
    })
}

/// A file system's size and free space, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FilesystemBytes {
    pub size: u64,
    pub available: u64,
}

/// Room sled needs besides the data it holds: its `conf`, a few segments of
/// slack for the log it writes before it rewrites old segments, and the
/// metadata of a fresh database.
pub const SLED_SLACK: u64 = 8 << 20;

/// Checks that `needed` bytes (plus [`SLED_SLACK`]) are free on the file system
/// of `dir`, before a write starts that sled could not finish.
///
/// # Errors
/// [`SpaceError::NoSpace`] naming `target`, or [`SpaceError::Statvfs`].
pub fn ensure_room(dir: &Path, target: &Path, needed: u64) -> Result<(), SpaceError> {
    // A directory not made yet is on the file system of its nearest ancestor.
    let dir = dir
        .ancestors()
        .find(|d| d.as_os_str().is_empty() || d.exists())
        .map_or(Path::new("."), |d| {
            if d.as_os_str().is_empty() {
                Path::new(".")
            } else {
                d
            }
        });
    let available = available_bytes(dir)?;
    let needed = needed.saturating_add(SLED_SLACK);
    if available < needed {
        return Err(SpaceError::NoSpace {
            path: target.to_path_buf(),
            needed,
            available,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_space_is_read_and_checked() {
        let dir = tempfile::tempdir().unwrap();
        let free = available_bytes(dir.path()).unwrap();
        assert!(free > 0);
        let fs = filesystem_bytes(dir.path()).unwrap();
        assert!(fs.size >= fs.available && fs.available > 0, "{fs:?}");
        let e = ensure_room(dir.path(), &dir.path().join("x"), u64::MAX - 1).unwrap_err();
        assert!(matches!(e, SpaceError::NoSpace { .. }), "{e}");
        assert!(e.to_string().contains("ENOSPC"), "{e}");
        assert!(matches!(
            available_bytes(&dir.path().join("missing")),
            Err(SpaceError::Statvfs { .. })
        ));
    }
}
