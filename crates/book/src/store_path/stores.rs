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

/// A `--db` where no store is made: it holds none and `--create` was not
/// given (a typo must not start a new, empty book), or `--create` was given for
/// a path that holds something else (a store made among other files would mix
/// with them, and a later removal of the store would take them along).
#[derive(Debug, Error)]
pub enum NoStoreError {
    /// No store there, and no `--create`.
    #[error("`{}` {what}: check --db, or give --create to make a new store there", .db.display())]
    NotCreated {
        db: PathBuf,
        /// "does not exist", or "is not a book store" where something else is
        /// there (a file, an unrelated directory).
        what: &'static str,
    },
    /// `--create` for a directory that holds other files.
    #[error("`{}` holds other files and is not a book store: --create makes a store only in a new or empty directory; check --db, or give a new directory", .db.display())]
    NotEmpty { db: PathBuf },
    /// `--create` for something that is not a directory.
    #[error("`{}` is not a directory, and not a book store (a store is a directory): check --db, or give a new directory", .db.display())]
    NotADirectory { db: PathBuf },
    /// `--create` for a directory that cannot be listed.
    #[error("cannot read `{}` to check that it is empty before making a store there: {source}", .db.display())]
    Unreadable { db: PathBuf, source: std::io::Error },
}

/// Entries a new store's directory may hold: what `mkfs` leaves at the top of
/// a new file system, so that a fresh disk's mount point can be the store.
const ALLOWED_IN_NEW: &[&str] = &["lost+found"];

/// Whether `name` is one of a store's own files (sled's `conf`, `db`,
/// `blobs`, `snap.*`, or the record [`crate::RECORD_FILE`]): a directory that
/// holds one is what is left of a store, which the open judges (and calls
/// damaged, naming the restore), not a directory of other files.
fn store_file(name: &std::ffi::OsStr) -> bool {
    let name = name.to_string_lossy();
    matches!(name.as_ref(), "conf" | "db" | "blobs")
        || name == crate::RECORD_FILE
        || name.starts_with("snap.")
}

/// The one rule of every command that writes a store: `db` is a store (`Ok(false)`),
/// or holds none and `create` says to make one (`Ok(true)`) where nothing else
/// is: a new path or an empty directory (or what is left of a store, which
/// the open then judges).
///
/// # Errors
/// [`NoStoreError`] when `db` holds no store and `create` is false, or when it
/// is something other than a new path or an empty directory.
pub fn must_create_store(db: &Path, create: bool) -> Result<bool, NoStoreError> {
    if is_store_dir(db) {
        return Ok(false);
    }
    if !create {
        return Err(NoStoreError::NotCreated {
            db: db.to_path_buf(),
            what: if db.exists() {
                "is not a book store"
            } else {
                "does not exist"
            },
        });
    }
    match std::fs::metadata(db) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(true),
        Err(source) => {
            return Err(NoStoreError::Unreadable {
                db: db.to_path_buf(),
                source,
            });
        }
        Ok(meta) if !meta.is_dir() => {
            return Err(NoStoreError::NotADirectory {
                db: db.to_path_buf(),
            });
        }
        Ok(_) => {}
    }
    let unreadable = |source| NoStoreError::Unreadable {
        db: db.to_path_buf(),
        source,
    };
    let mut other = false;
    for entry in std::fs::read_dir(db).map_err(unreadable)? {
        let name = entry.map_err(unreadable)?.file_name();
        if store_file(&name) {
            return Ok(true);
        }
        other |= !ALLOWED_IN_NEW.iter().any(|n| name == *n);
    }
    if other {
        return Err(NoStoreError::NotEmpty {
            db: db.to_path_buf(),
        });
    }
    Ok(true)
}
