//! Where the product may write: never inside a store.
//!
//! A book export is written by atomic rename; pointed at a file of a live sled store
//! (`--out book.db/db`), that rename replaces the store's data and the store can no
//! longer be opened; a position file, a games file or a game log appended to
//! `book.db/conf` does the same. Every writer of the product (exports, backups,
//! `next --think-file`, `match --out-games`, the coordinator's `--games-out`)
//! resolves its output path through [`check_output_path`] (or
//! [`check_output_path_outside_stores`] when no store is at hand) first, and a
//! remote caller's path through [`resolve_in_export_dir`], since a client should
//! not choose where the coordinator writes. A file written later (an export, a
//! backup) is then bound to its directory with [`BoundTarget`], and one written
//! bit by bit is opened at once with [`BoundOutput`]: a path changed after the
//! check redirects nothing.
//!
//! The rule: the path, resolved through symbolic links and `..` (an existing file
//! as a whole, a new one by its directory), must lie neither in the store being
//! used nor in any directory that holds a store (sled's `conf` beside `db` or
//! `blobs/`, or an unfinished backup's marker). An existing file with more than
//! one hard link is refused too: its other names may be files of a store, and
//! which directories hold them cannot be known without searching the disk. A
//! dangling symbolic link is refused, since where it would create a file is not
//! what its own directory says.
//!
//! ```
//! # let dir = tempfile::tempdir().unwrap();
//! use stera_book::store_path::{check_output_path, OutputPathError};
//! let store = dir.path().join("book.db");
//! std::fs::create_dir(&store).unwrap();
//! assert!(check_output_path(&dir.path().join("book.db2016"), &store).is_ok());
//! assert!(matches!(
//!     check_output_path(&store.join("db"), &store),
//!     Err(OutputPathError::InsideStore { .. })
//! ));
//! ```
//!
//! Here the refusals ([`OutputPathError`]); beside them: `stores` (which
//! directories are stores, and the rule of commands that make one), `rules`
//! (the path checks above), `bound` ([`BoundOutput`], [`BoundTarget`]) and
//! `export_dir` (paths a remote caller asks for).

use std::path::PathBuf;

use thiserror::Error;

mod bound;
mod export_dir;
mod rules;
mod stores;

pub use bound::{BoundOutput, BoundTarget};
pub use export_dir::{check_export_dir, resolve_in_export_dir};
pub use rules::{check_output_path, check_output_path_outside_stores, exists_outside_stores};
pub use stera_formats::leftovers::INCOMPLETE_MARKER;
pub use stores::{NoStoreError, directory_size, is_store_dir, must_create_store};

/// An output path the product refuses to write to.
#[derive(Debug, Error)]
pub enum OutputPathError {
    /// The path resolves into the store being read.
    #[error(
        "refusing to write `{}`: it is inside the book store `{}`, whose files an export would destroy; choose a path outside it",
        path.display(),
        store.display()
    )]
    InsideStore { path: PathBuf, store: PathBuf },
    /// The path resolves into another sled store.
    #[error(
        "refusing to write `{}`: `{}` is a book store, whose files an export would destroy",
        path.display(),
        store.display()
    )]
    InsideOtherStore { path: PathBuf, store: PathBuf },
    /// The path is another name (hard link) of a file of the store.
    #[error(
        "refusing to write `{}`: it is a hard link to `{}` of the book store `{}`, which writing it would destroy",
        path.display(),
        store_file.display(),
        store.display()
    )]
    HardLinkIntoStore {
        path: PathBuf,
        store_file: PathBuf,
        store: PathBuf,
    },
    /// The path is an existing file with several hard links, any of which may
    /// be in a store.
    #[error(
        "refusing to write `{}`: the file has {links} hard links, and writing it would change the file under its other names too (which may lie in a book store); remove it or choose another name",
        path.display()
    )]
    HardLinked { path: PathBuf, links: u64 },
    /// The checked path could not be opened.
    // The cause is in the message and not a `source`: reported as a chain, it
    // would be said twice.
    #[error("cannot open `{}`: {cause}", path.display())]
    Open {
        path: PathBuf,
        cause: std::io::Error,
    },
    /// The path is a symbolic link to nothing.
    #[error(
        "refusing to write `{}`: it is a symbolic link to `{}`, which does not exist; remove the link or choose another name",
        path.display(),
        target.display()
    )]
    DanglingLink { path: PathBuf, target: PathBuf },
    /// The path names a directory.
    #[error("`{}` is a directory; give a file name", path.display())]
    IsDirectory { path: PathBuf },
    /// The path has no file name (`..`, `/`).
    #[error("`{}` names no file", path.display())]
    NoFileName { path: PathBuf },
    /// The directory to write into does not exist or cannot be resolved.
    #[error("cannot write `{}`: directory `{}`: {cause}", path.display(), dir.display())]
    Directory {
        path: PathBuf,
        dir: PathBuf,
        cause: std::io::Error,
    },
    /// A remote request asked for a path outside the export directory.
    #[error(
        "refusing to write `{requested}`: remote exports go inside the export directory `{}` (relative paths are taken from there)",
        export_dir.display()
    )]
    OutsideExportDir {
        requested: String,
        export_dir: PathBuf,
    },
    /// Remote exports are off: no export directory was configured.
    #[error("this coordinator accepts no remote export paths: start it with --export-dir DIR")]
    NoExportDir,
}

#[cfg(test)]
mod tests;
