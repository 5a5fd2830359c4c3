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

use std::path::{Component, Path, PathBuf};

use thiserror::Error;

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

pub use stera_formats::leftovers::INCOMPLETE_MARKER;

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

/// Resolves `out` (symbolic links and `..` included) and checks that writing it
/// cannot touch `store` or any other store: the resolved path is neither inside
/// `store` nor inside a directory that holds a sled store, and it is not an
/// existing file with other names (hard links). Returns the resolved path.
///
/// # Errors
/// [`OutputPathError`] saying which rule the path breaks.
pub fn check_output_path(out: &Path, store: &Path) -> Result<PathBuf, OutputPathError> {
    let resolved = resolve(out)?;
    check_outside_stores(out, &resolved, Some(store))?;
    check_links(out, &resolved, Some(store))?;
    Ok(resolved)
}

/// An output file bound at start: its path checked ([`check_output_path`], or
/// [`check_output_path_outside_stores`] without a store) and the resolved file
/// opened at once, before anything runs. Every later write goes into the file
/// opened here, whatever becomes of the path: a directory on it swapped for a
/// symbolic link into a store after start cannot redirect the writes there.
#[derive(Debug)]
pub struct BoundOutput {
    path: PathBuf,
    file: std::sync::Mutex<std::fs::File>,
}

impl BoundOutput {
    /// Checks `out` and opens it for appending (created if missing).
    ///
    /// # Errors
    /// [`OutputPathError`]: a rule the path breaks, or the file cannot be opened.
    pub fn append(out: &Path, store: Option<&Path>) -> Result<Self, OutputPathError> {
        Self::open(
            out,
            store,
            std::fs::OpenOptions::new().append(true).create(true),
        )
    }

    /// Checks `out` and creates it (emptied if it exists): for a file written
    /// whole at the end (with [`BoundOutput::replace`]).
    ///
    /// # Errors
    /// As [`BoundOutput::append`].
    pub fn create(out: &Path, store: Option<&Path>) -> Result<Self, OutputPathError> {
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        Self::open(out, store, &options)
    }

    fn open(
        out: &Path,
        store: Option<&Path>,
        options: &std::fs::OpenOptions,
    ) -> Result<Self, OutputPathError> {
        let resolved = match store {
            Some(store) => check_output_path(out, store)?,
            None => check_output_path_outside_stores(out)?,
        };
        let file = options
            .open(&resolved)
            .map_err(|cause| OutputPathError::Open {
                path: out.to_path_buf(),
                cause,
            })?;
        Ok(Self {
            path: out.to_path_buf(),
            file: std::sync::Mutex::new(file),
        })
    }

    /// The path as given.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends `line` and a line end in one write.
    ///
    /// # Errors
    /// The write failed.
    pub fn append_line(&self, line: &str) -> std::io::Result<()> {
        use std::io::Write;
        let mut file = self
            .file
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        file.write_all(format!("{line}\n").as_bytes())
    }

    /// Appends `entry` in one write, preceded by `separator` when the file
    /// already holds something (games in a CSA file are separated by `/`).
    ///
    /// # Errors
    /// The write failed.
    pub fn append_entry(&self, entry: &str, separator: &str) -> std::io::Result<()> {
        use std::io::Write;
        let mut file = self
            .file
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let text = if file.metadata()?.len() > 0 {
            format!("{separator}{entry}")
        } else {
            entry.to_owned()
        };
        file.write_all(text.as_bytes())
    }

    /// Makes `bytes` the whole content of the file, durably.
    ///
    /// # Errors
    /// The write failed.
    pub fn replace(&self, bytes: &[u8]) -> std::io::Result<()> {
        use std::io::{Seek, Write};
        let mut file = self
            .file
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        file.set_len(0)?;
        file.seek(std::io::SeekFrom::Start(0))?;
        file.write_all(bytes)?;
        file.sync_data()
    }
}

/// An output written later (an export that takes minutes, a backup, a periodic
/// export of a long run) bound to its directory now: the directory is opened at
/// once, and what the open handle refers to is checked (not the path, which a
/// directory swapped for a symbolic link into a store could redirect after the
/// check). Every write goes through the handle ([`BoundTarget::write_path`]),
/// so whatever becomes of the path's directories afterwards, the writes land in
/// the directory that was checked, or nowhere.
///
/// The handle is reached by name through `/proc/self/fd`, which the kernel
/// resolves to the open directory itself, so writers that take a path (sled,
/// the exporters' temporary-file-and-rename) need no change. Without `/proc`
/// (not the product's platforms) the resolved path is used, checked to be the
/// directory that was opened.
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// use stera_book::store_path::BoundTarget;
/// let out = dir.path().join("exports/book.db2016");
/// std::fs::create_dir(dir.path().join("exports")).unwrap();
/// let target = BoundTarget::open(&out, None).unwrap();
/// // The directory moves away (and could be replaced by a link into a store):
/// std::fs::rename(dir.path().join("exports"), dir.path().join("moved")).unwrap();
/// std::fs::write(target.write_path(), "entries").unwrap();
/// assert!(dir.path().join("moved/book.db2016").is_file());
/// ```
#[derive(Debug)]
pub struct BoundTarget {
    shown: PathBuf,
    shown_dir: PathBuf,
    write_dir: PathBuf,
    name: std::ffi::OsString,
    /// Kept open: the handle `write_dir` names.
    _dir: std::fs::File,
}

impl BoundTarget {
    /// Checks `out` by the rules of [`check_output_path`] (every store when
    /// `store` is `None`), opens its directory and checks what was opened.
    ///
    /// # Errors
    /// [`OutputPathError`]: a rule the path or the opened directory breaks, or
    /// the directory cannot be opened.
    pub fn open(out: &Path, store: Option<&Path>) -> Result<Self, OutputPathError> {
        use std::os::fd::AsRawFd;
        match store {
            Some(store) => check_output_path(out, store)?,
            None => check_output_path_outside_stores(out)?,
        };
        let (name, shown_dir) = name_and_dir(out)?;
        let directory_error = |cause| OutputPathError::Directory {
            path: out.to_path_buf(),
            dir: shown_dir.clone(),
            cause,
        };
        let dir = std::fs::File::open(&shown_dir).map_err(directory_error)?;
        let opened = dir.metadata().map_err(directory_error)?;
        if !opened.is_dir() {
            return Err(directory_error(std::io::Error::new(
                std::io::ErrorKind::NotADirectory,
                "not a directory",
            )));
        }
        let by_handle = PathBuf::from(format!("/proc/self/fd/{}", dir.as_raw_fd()));
        let (real, write_dir) = match std::fs::read_link(&by_handle) {
            Ok(real) if real.is_absolute() && by_handle.is_dir() => (real, by_handle),
            _ => {
                let real = shown_dir.canonicalize().map_err(directory_error)?;
                if !same_file(&real, &opened) {
                    return Err(directory_error(std::io::Error::other(
                        "it was replaced while it was opened",
                    )));
                }
                (real.clone(), real)
            }
        };
        let target = Self {
            shown: out.to_path_buf(),
            shown_dir,
            write_dir,
            name,
            _dir: dir,
        };
        // The directory the handle holds, wherever the path now leads.
        check_outside_stores(out, &real.join(&target.name), store)?;
        check_links(out, &target.write_path(), store)?;
        Ok(target)
    }

    /// The path to write: the file's name in the directory opened.
    #[must_use]
    pub fn write_path(&self) -> PathBuf {
        self.write_dir.join(&self.name)
    }

    /// The path as given (for messages).
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.shown
    }

    /// `text` (a writer's message) with the handle's name replaced by the
    /// directory as given, so messages name paths the user knows.
    #[must_use]
    pub fn shown(&self, text: &str) -> String {
        text.replace(
            &self.write_dir.display().to_string(),
            &self.shown_dir.display().to_string(),
        )
    }
}

fn same_file(path: &Path, meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).is_ok_and(|m| m.dev() == meta.dev() && m.ino() == meta.ino())
}

/// For a writer that makes `out` new (a backup, a migrated store): whether
/// something is there already. An existing path inside a store is refused as
/// such, the graver news; anything else there just exists (a directory
/// included, which [`check_output_path`] would call "a directory").
///
/// # Errors
/// What [`check_output_path`] refuses, but [`OutputPathError::IsDirectory`].
pub fn exists_outside_stores(out: &Path, store: &Path) -> Result<bool, OutputPathError> {
    if out.symlink_metadata().is_err() {
        return Ok(false);
    }
    match check_output_path(out, store) {
        Ok(_) | Err(OutputPathError::IsDirectory { .. }) => Ok(true),
        Err(e) => Err(e),
    }
}

/// [`check_output_path`] for a writer that uses no store of its own (e.g.
/// `match --book FILE --out-games OUT`): every store is protected all the same.
///
/// # Errors
/// [`OutputPathError`] saying which rule the path breaks.
pub fn check_output_path_outside_stores(out: &Path) -> Result<PathBuf, OutputPathError> {
    let resolved = resolve(out)?;
    check_outside_stores(out, &resolved, None)?;
    check_links(out, &resolved, None)?;
    Ok(resolved)
}

/// Checks a directory that exports are written into (`--export-dir`): it exists,
/// and it is neither inside `store` nor a store or inside one, so no file in it can
/// be. Returns it resolved.
///
/// # Errors
/// [`OutputPathError::Directory`] for a missing path or one that is not a
/// directory, or the store it lies in.
pub fn check_export_dir(dir: &Path, store: &Path) -> Result<PathBuf, OutputPathError> {
    let directory_error = |cause| OutputPathError::Directory {
        path: dir.to_path_buf(),
        dir: dir.to_path_buf(),
        cause,
    };
    let resolved = dir.canonicalize().map_err(directory_error)?;
    if !resolved.is_dir() {
        return Err(directory_error(std::io::Error::new(
            std::io::ErrorKind::NotADirectory,
            "not a directory",
        )));
    }
    check_outside_stores(dir, &resolved, Some(store))?;
    Ok(resolved)
}

/// Resolves a path asked for by a remote caller: relative paths are taken from
/// `export_dir`, and the result must stay inside it (and outside `store` and any
/// other store).
///
/// # Errors
/// [`OutputPathError::NoExportDir`] without an export directory,
/// [`OutputPathError::OutsideExportDir`], or what [`check_output_path`] refuses.
pub fn resolve_in_export_dir(
    requested: &str,
    export_dir: Option<&Path>,
    store: &Path,
) -> Result<PathBuf, OutputPathError> {
    let export_dir = export_dir.ok_or(OutputPathError::NoExportDir)?;
    let dir = check_export_dir(export_dir, store)?;
    let wanted = Path::new(requested);
    let joined = if wanted.is_absolute() {
        wanted.to_path_buf()
    } else {
        dir.join(wanted)
    };
    let resolved = check_output_path(&joined, store)?;
    if !resolved.starts_with(&dir) {
        return Err(OutputPathError::OutsideExportDir {
            requested: requested.to_owned(),
            export_dir: dir,
        });
    }
    Ok(resolved)
}

/// The absolute, symlink-free form of `out`, which need not exist yet (its
/// directory must).
fn resolve(out: &Path) -> Result<PathBuf, OutputPathError> {
    if out.is_dir() {
        return Err(OutputPathError::IsDirectory {
            path: out.to_path_buf(),
        });
    }
    // An existing file (or a link to one) resolves as a whole.
    if let Ok(existing) = out.canonicalize() {
        return Ok(existing);
    }
    // A link to nothing would create its target, wherever that is.
    if let Ok(target) = std::fs::read_link(out) {
        return Err(OutputPathError::DanglingLink {
            path: out.to_path_buf(),
            target,
        });
    }
    let (name, dir) = name_and_dir(out)?;
    let dir = dir
        .canonicalize()
        .map_err(|cause| OutputPathError::Directory {
            path: out.to_path_buf(),
            dir: dir.clone(),
            cause,
        })?;
    Ok(dir.join(name))
}

/// The file name of `out` and the directory it is in (`.` for a bare name).
fn name_and_dir(out: &Path) -> Result<(std::ffi::OsString, PathBuf), OutputPathError> {
    let Some(Component::Normal(name)) = out.components().next_back() else {
        return Err(OutputPathError::NoFileName {
            path: out.to_path_buf(),
        });
    };
    let dir = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    Ok((name.to_owned(), dir))
}

/// `resolved` (the resolved form of `path`) is neither inside `store` nor a store
/// or inside any other store.
fn check_outside_stores(
    path: &Path,
    resolved: &Path,
    store: Option<&Path>,
) -> Result<(), OutputPathError> {
    if let Some(Ok(store)) = store.map(Path::canonicalize)
        && resolved.starts_with(&store)
    {
        return Err(OutputPathError::InsideStore {
            path: path.to_path_buf(),
            store,
        });
    }
    // A file is never a store directory, so a file path may be checked with itself.
    for dir in resolved.ancestors() {
        if is_store_dir(dir) {
            return Err(OutputPathError::InsideOtherStore {
                path: path.to_path_buf(),
                store: dir.to_path_buf(),
            });
        }
    }
    Ok(())
}

/// An existing `resolved` (the resolved form of `path`) has no other name: a
/// hard link to a file of `store` is named as such, any other file with several
/// links is refused as well (its other names could be in any store).
fn check_links(path: &Path, resolved: &Path, store: Option<&Path>) -> Result<(), OutputPathError> {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = std::fs::metadata(resolved) else {
        return Ok(());
    };
    if meta.nlink() <= 1 {
        return Ok(());
    }
    if let Some(store) = store
        && let Some(store_file) = store_file_with(store, meta.dev(), meta.ino())
    {
        return Err(OutputPathError::HardLinkIntoStore {
            path: path.to_path_buf(),
            store_file,
            store: store.to_path_buf(),
        });
    }
    Err(OutputPathError::HardLinked {
        path: path.to_path_buf(),
        links: meta.nlink(),
    })
}

/// The file under `store` (recursively) that is the file `(dev, ino)`, if any.
fn store_file_with(store: &Path, dev: u64, ino: u64) -> Option<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let mut pending = vec![store.to_path_buf()];
    while let Some(d) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(meta) = entry.metadata() else { continue };
            if meta.is_dir() {
                pending.push(entry.path());
            } else if meta.dev() == dev && meta.ino() == ino {
                return Some(entry.path());
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake_store(dir: &Path) {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join("conf"), b"x").unwrap();
        std::fs::write(dir.join("db"), b"x").unwrap();
    }

    /// Outputs bound at open (issue 35): the directory of a bound output swapped
    /// for a symbolic link into a store after it was opened does not redirect the
    /// writes; the store's `db` and `conf` stay as they were and the lines go into
    /// the file opened at start.
    #[test]
    fn a_directory_swapped_for_a_link_into_a_store_after_open_changes_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let store = tmp.path().join("other.db");
        fake_store(&store);
        let out_dir = tmp.path().join("out");
        std::fs::create_dir(&out_dir).unwrap();
        let games = BoundOutput::append(&out_dir.join("conf"), None).unwrap();
        let json = BoundOutput::create(&out_dir.join("db"), None).unwrap();
        games.append_line("first").unwrap();
        // The directory goes away; a link named like it points into the store.
        let moved = tmp.path().join("moved");
        std::fs::rename(&out_dir, &moved).unwrap();
        std::os::unix::fs::symlink(&store, &out_dir).unwrap();
        games.append_line("second").unwrap();
        json.replace(b"{}\n").unwrap();
        assert_eq!(std::fs::read(store.join("conf")).unwrap(), b"x");
        assert_eq!(std::fs::read(store.join("db")).unwrap(), b"x");
        assert_eq!(
            std::fs::read_to_string(moved.join("conf")).unwrap(),
            "first\nsecond\n"
        );
        assert_eq!(std::fs::read_to_string(moved.join("db")).unwrap(), "{}\n");
        // Bound now, the same path is refused.
        assert!(BoundOutput::append(&out_dir.join("conf"), None).is_err());
    }

    /// A target bound to its directory (exports, backups): a write by rename
    /// after the directory was swapped for a link into a store lands in the
    /// directory that was checked; the store keeps its files.
    #[test]
    fn a_bound_target_writes_where_it_was_checked_after_a_swap() {
        let tmp = tempfile::tempdir().unwrap();
        let store = tmp.path().join("other.db");
        fake_store(&store);
        let out_dir = tmp.path().join("exports");
        std::fs::create_dir(&out_dir).unwrap();
        let target =
            BoundTarget::open(&out_dir.join("db"), Some(&tmp.path().join("mine.db"))).unwrap();
        let moved = tmp.path().join("moved");
        std::fs::rename(&out_dir, &moved).unwrap();
        std::os::unix::fs::symlink(&store, &out_dir).unwrap();
        // As the exporters write: a temporary file beside the target, renamed.
        let temporary = target.write_path().with_file_name("db.partial");
        std::fs::write(&temporary, b"book").unwrap();
        std::fs::rename(&temporary, target.write_path()).unwrap();
        assert_eq!(std::fs::read(store.join("db")).unwrap(), b"x");
        assert_eq!(std::fs::read(moved.join("db")).unwrap(), b"book");
        // Messages name the directory as given, not the handle.
        let text = format!("cannot write `{}`", target.write_path().display());
        assert_eq!(
            target.shown(&text),
            format!("cannot write `{}`", out_dir.join("db").display())
        );
        // Bound now, through the link: refused, naming the store.
        let e = BoundTarget::open(&out_dir.join("book.db2016"), None).unwrap_err();
        assert!(matches!(e, OutputPathError::InsideOtherStore { .. }), "{e}");
    }

    #[test]
    fn a_bound_target_needs_a_directory_and_a_name() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("file"), b"x").unwrap();
        let e = BoundTarget::open(&tmp.path().join("file/book.db2016"), None).unwrap_err();
        assert!(e.to_string().contains("file"), "{e}");
        assert!(BoundTarget::open(&tmp.path().join("missing/book.db2016"), None).is_err());
        assert!(BoundTarget::open(Path::new("/"), None).is_err());
        let target = BoundTarget::open(Path::new("relative-name.db2016"), None).unwrap();
        assert_eq!(target.path(), Path::new("relative-name.db2016"));
    }

    #[test]
    fn paths_inside_the_store_are_refused_however_spelled() {
        let tmp = tempfile::tempdir().unwrap();
        let store = tmp.path().join("book.db");
        fake_store(&store);
        for out in [
            store.join("db"),
            store.join("conf"),
            store.join("new.db2016"),
            store.join("../book.db/db"),
        ] {
            let e = check_output_path(&out, &store).unwrap_err();
            assert!(
                matches!(e, OutputPathError::InsideStore { .. }),
                "{out:?}: {e}"
            );
            assert!(e.to_string().contains("inside the book store"), "{e}");
        }
        // Through a symbolic link to the store's directory, too.
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(&store, &link).unwrap();
        assert!(matches!(
            check_output_path(&link.join("db"), &store),
            Err(OutputPathError::InsideStore { .. })
        ));
        // The store directory itself is a directory.
        assert!(matches!(
            check_output_path(&store, &store),
            Err(OutputPathError::IsDirectory { .. })
        ));
        let ok = check_output_path(&tmp.path().join("book.db2016"), &store).unwrap();
        assert_eq!(ok, tmp.path().canonicalize().unwrap().join("book.db2016"));
    }

    #[test]
    fn other_stores_and_missing_directories_are_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let store = tmp.path().join("a.db");
        let other = tmp.path().join("b.db");
        fake_store(&store);
        fake_store(&other);
        assert!(matches!(
            check_output_path(&other.join("blobs/x"), &store),
            Err(OutputPathError::Directory { .. })
        ));
        std::fs::create_dir(other.join("blobs")).unwrap();
        assert!(matches!(
            check_output_path(&other.join("blobs/x"), &store),
            Err(OutputPathError::InsideOtherStore { .. })
        ));
        assert!(matches!(
            check_output_path(&tmp.path().join("nowhere/x"), &store),
            Err(OutputPathError::Directory { .. })
        ));
    }

    #[test]
    fn hard_links_and_dangling_links_are_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let store = tmp.path().join("book.db");
        fake_store(&store);
        let link = tmp.path().join("games.csa");
        std::fs::hard_link(store.join("conf"), &link).unwrap();
        let e = check_output_path(&link, &store).unwrap_err();
        assert!(
            matches!(e, OutputPathError::HardLinkIntoStore { .. }),
            "{e}"
        );
        assert!(e.to_string().contains("hard link"), "{e}");
        // Without the store at hand the file is refused for its extra name.
        assert!(matches!(
            check_output_path_outside_stores(&link),
            Err(OutputPathError::HardLinked { links: 2, .. })
        ));
        // A plain existing file outside is fine.
        let plain = tmp.path().join("plain.txt");
        std::fs::write(&plain, b"x").unwrap();
        assert!(check_output_path(&plain, &store).is_ok());
        // A link to a file that does not exist yet inside the store.
        let dangling = tmp.path().join("dangling");
        std::os::unix::fs::symlink(store.join("new"), &dangling).unwrap();
        assert!(matches!(
            check_output_path_outside_stores(&dangling),
            Err(OutputPathError::DanglingLink { .. })
        ));
    }

    #[test]
    fn an_unfinished_backup_counts_as_a_store() {
        let tmp = tempfile::tempdir().unwrap();
        let partial = tmp.path().join("b.db.partial");
        std::fs::create_dir(&partial).unwrap();
        assert!(check_output_path_outside_stores(&partial.join("x")).is_ok());
        std::fs::write(partial.join(INCOMPLETE_MARKER), b"").unwrap();
        assert!(matches!(
            check_output_path_outside_stores(&partial.join("x")),
            Err(OutputPathError::InsideOtherStore { .. })
        ));
    }

    #[test]
    fn export_dirs_outside_stores_only() {
        let tmp = tempfile::tempdir().unwrap();
        let store = tmp.path().join("book.db");
        fake_store(&store);
        let other = tmp.path().join("other.db");
        fake_store(&other);
        std::fs::create_dir(store.join("blobs")).unwrap();
        assert!(check_export_dir(tmp.path(), &store).is_ok());
        assert!(matches!(
            check_export_dir(&store.join("blobs"), &store),
            Err(OutputPathError::InsideStore { .. })
        ));
        assert!(matches!(
            check_export_dir(&other, &store),
            Err(OutputPathError::InsideOtherStore { .. })
        ));
        for bad in [tmp.path().join("missing"), store.join("conf")] {
            assert!(matches!(
                check_export_dir(&bad, &store),
                Err(OutputPathError::Directory { .. })
            ));
        }
    }

    #[test]
    fn remote_paths_stay_in_the_export_dir() {
        let tmp = tempfile::tempdir().unwrap();
        let store = tmp.path().join("book.db");
        fake_store(&store);
        let exports = tmp.path().join("exports");
        std::fs::create_dir(&exports).unwrap();
        let ok = resolve_in_export_dir("b.db2016", Some(&exports), &store).unwrap();
        assert_eq!(ok, exports.canonicalize().unwrap().join("b.db2016"));
        let abs = exports.join("c.db2016");
        assert!(resolve_in_export_dir(abs.to_str().unwrap(), Some(&exports), &store).is_ok());
        for bad in ["../x.db2016", "../book.db/conf"] {
            assert!(
                resolve_in_export_dir(bad, Some(&exports), &store).is_err(),
                "{bad}"
            );
        }
        let conf = store.join("conf");
        assert!(matches!(
            resolve_in_export_dir(conf.to_str().unwrap(), Some(&exports), &store),
            Err(OutputPathError::InsideStore { .. })
        ));
        assert!(matches!(
            resolve_in_export_dir("b.db2016", None, &store),
            Err(OutputPathError::NoExportDir)
        ));
    }
}
