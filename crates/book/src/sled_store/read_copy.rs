//! Reading a store without writing a byte of it.
//!
//! sled 0.34 has no read-only mode: every open recovers its log, rewrites the
//! `db` file and may add `snap.*` files, and on a store whose files were cut
//! short that recovery makes the loss permanent (put the missing tail back and
//! the store would have read whole; after a recovery it no longer does). So a
//! store opened only for reading ([`SledStore::open_read_only`],
//! [`SledStore::check`]) is copied first, file by file, into a private
//! temporary directory (`TMPDIR`, the system's by default), and sled opens the
//! copy; the store itself is only read, under a shared `flock` on its `db` that
//! keeps a writer (which holds sled's exclusive lock) out while it is copied.
//! The copy is removed when the last handle on it ([`SledStore`], its
//! [`SledReader`](super::SledReader)s) is gone; one that a killed reader left
//! behind (its name carries the reader's process id, see
//! `stera_formats::leftovers`) is removed by the next reader.
//!
//! The cost is one copy of the store's files (`copy_file_range`, a reflink where
//! the file system has them) and that much free room in the temporary
//! directory, checked first.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use stera_formats::leftovers;

use crate::BookError;

use super::open::LOCK_WAIT;
use super::store_error;

/// A private copy of a store's files, removed when dropped.
#[derive(Debug)]
pub(crate) struct ReadCopy {
    dir: tempfile::TempDir,
}

impl ReadCopy {
    /// Where the copied files are.
    pub(crate) fn path(&self) -> &Path {
        self.dir.path()
    }
}

fn io_error(path: &Path, e: std::io::Error) -> BookError {
    store_error(path, sled::Error::Io(e))
}

/// Copies the files of the store at `store` into a new temporary directory,
/// holding a shared lock on its `db` meanwhile.
///
/// # Errors
/// [`BookError::InUse`] when a process has the store open for writing; no room
/// for the copy; an I/O error reading the store or writing the copy.
pub(crate) fn copy_of(store: &Path) -> Result<Arc<ReadCopy>, BookError> {
    let db = std::fs::File::open(store.join("db")).map_err(|e| io_error(store, e))?;
    lock_shared(store, &db)?;
    let size = crate::store_path::directory_size(store).map_err(|e| io_error(store, e))?;
    let temp = std::env::temp_dir();
    // A reader killed before it removed its copy (Ctrl-C) left it behind: the
    // copies of readers that no longer run go first.
    let _ = leftovers::clean_stale(&temp);
    let dir = tempfile::Builder::new()
        .prefix(&format!("stera-read-copy.{}", leftovers::tag()))
        .tempdir_in(&temp)
        .map_err(|e| io_error(&temp, e))?;
    // The mark of an unfinished store of ours, by which `clean_stale` knows it.
    std::fs::write(dir.path().join(leftovers::INCOMPLETE_MARKER), b"")
        .map_err(|e| io_error(dir.path(), e))?;
    crate::space::ensure_room(dir.path(), dir.path(), size)?;
    copy_tree(store, dir.path())?;
    // The lock goes with `db`'s handle, once the copy is whole.
    drop(db);
    Ok(Arc::new(ReadCopy { dir }))
}

/// Takes a shared `flock` on the store's `db`, waiting up to [`LOCK_WAIT`] for
/// a writer that holds sled's exclusive one (as a writing open waits).
fn lock_shared(store: &Path, db: &std::fs::File) -> Result<(), BookError> {
    let deadline = std::time::Instant::now() + LOCK_WAIT;
    let mut pause = std::time::Duration::from_millis(5);
    loop {
        match db.try_lock_shared() {
            Ok(()) => return Ok(()),
            Err(std::fs::TryLockError::WouldBlock) if std::time::Instant::now() < deadline => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(std::time::Duration::from_millis(100));
            }
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(BookError::InUse {
                    path: store.display().to_string(),
                });
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(io_error(store, e)),
        }
    }
}

/// Copies the regular files and directories under `from` into `to` (which
/// exists); anything else (a symbolic link, a socket) is not sled's and is
/// left out.
fn copy_tree(from: &Path, to: &Path) -> Result<(), BookError> {
    let mut pending: Vec<(PathBuf, PathBuf)> = vec![(from.to_owned(), to.to_owned())];
    while let Some((src, dst)) = pending.pop() {
        for entry in std::fs::read_dir(&src).map_err(|e| io_error(from, e))? {
            let entry = entry.map_err(|e| io_error(from, e))?;
            let kind = entry.file_type().map_err(|e| io_error(from, e))?;
            let target = dst.join(entry.file_name());
            if kind.is_dir() {
                std::fs::create_dir(&target).map_err(|e| io_error(to, e))?;
                pending.push((entry.path(), target));
            } else if kind.is_file() {
                std::fs::copy(entry.path(), &target).map_err(|e| io_error(to, e))?;
            }
        }
    }
    Ok(())
}
