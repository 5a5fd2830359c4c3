//! Which directories hold a store, and the one rule of the commands that make
//! one: a `--db` that holds none is made only when asked.

use std::path::{Path, PathBuf};

use thiserror::Error;

use super::INCOMPLETE_MARKER;

/// Bytes of all files under `dir` (recursively; symbolic links not followed).
///
/// # Errors
/// A directory that cannot be read. Files that vanish meanwhile (sled rewrites its
/// segments) are skipped.
pub fn directory_size(dir: &Path) -> std::io::Result<u64> {
    let mut total = 0u64;
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        for entry in std::fs::read_dir(&d)? {
            let Ok(entry) = entry else { continue };
            let Ok(meta) = entry.metadata() else { continue };
            if meta.is_dir() {
                pending.push(entry.path());
            } else if meta.is_file() {
                total = total.saturating_add(meta.len());
            }
        }
    }
    Ok(total)
}

/// Whether `dir` holds a sled store: sled writes `conf` beside `db` (and `blobs/`)
/// at its top; an unfinished backup holds [`INCOMPLETE_MARKER`] from before
/// sled's first file.
#[must_use]
pub fn is_store_dir(dir: &Path) -> bool {
    dir.join(INCOMPLETE_MARKER).is_file()
        || (dir.join("conf").is_file() && (dir.join("db").is_file() || dir.join("blobs").is_dir()))
}

/// A `--db` that holds no store, given without `--create`: a typo must not start
/// a new, empty book.
#[derive(Debug, Error)]
#[error("`{}` {what}: check --db, or give --create to make a new store there", .db.display())]
pub struct NoStoreError {
    pub db: PathBuf,
    /// "does not exist", or "is not a book store" where something else is there
    /// (a file, an unrelated directory).
    pub what: &'static str,
}

/// The one rule of every command that writes a store: `db` is a store (`Ok(false)`),
/// or holds none and `create` says to make one (`Ok(true)`).
///
/// # Errors
/// [`NoStoreError`] when `db` holds no store and `create` is false.
pub fn must_create_store(db: &Path, create: bool) -> Result<bool, NoStoreError> {
    if is_store_dir(db) {
        return Ok(false);
    }
    if !create {
        return Err(NoStoreError {
            db: db.to_path_buf(),
            what: if db.exists() {
                "is not a book store"
            } else {
                "does not exist"
            },
        });
    }
    Ok(true)
}
