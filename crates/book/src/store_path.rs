//! Where exports and backups may write: never inside a store.
//!
//! A book export is written by atomic rename; pointed at a file of a live sled store
//! (`--out book.db/db`), that rename replaces the store's data and the store can no
//! longer be opened. Every writer of the product resolves its output path through
//! [`check_output_path`] first, and a remote caller's path through
//! [`resolve_in_export_dir`], since a client should not choose where the coordinator
//! writes.
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
    /// The path names a directory.
    #[error("`{}` is a directory; give a file name", path.display())]
    IsDirectory { path: PathBuf },
    /// The path has no file name (`..`, `/`).
    #[error("`{}` names no file", path.display())]
    NoFileName { path: PathBuf },
    /// The directory to write into does not exist or cannot be resolved.
    #[error("cannot write `{}`: directory `{}`: {source}", path.display(), dir.display())]
    Directory {
        path: PathBuf,
        dir: PathBuf,
        #[source]
        source: std::io::Error,
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

/// Whether `dir` holds a sled store (sled writes `conf` and `db` at its top).
#[must_use]
pub fn is_store_dir(dir: &Path) -> bool {
    dir.join("conf").is_file() && dir.join("db").is_file()
}

/// Resolves `out` (symbolic links and `..` included) and checks that writing it
/// cannot touch `store` or any other store: the resolved path is neither inside
/// `store` nor inside a directory that holds a sled store. Returns the resolved path.
///
/// # Errors
/// [`OutputPathError`] saying which rule the path breaks.
pub fn check_output_path(out: &Path, store: &Path) -> Result<PathBuf, OutputPathError> {
    let resolved = resolve(out)?;
    check_outside_stores(out, &resolved, store)?;
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
    let directory_error = |source| OutputPathError::Directory {
        path: dir.to_path_buf(),
        dir: dir.to_path_buf(),
        source,
    };
    let resolved = dir.canonicalize().map_err(directory_error)?;
    if !resolved.is_dir() {
        return Err(directory_error(std::io::Error::new(
            std::io::ErrorKind::NotADirectory,
            "not a directory",
        )));
    }
    check_outside_stores(dir, &resolved, store)?;
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
    let name = match out.components().next_back() {
        Some(Component::Normal(name)) => name.to_owned(),
        _ => {
            return Err(OutputPathError::NoFileName {
                path: out.to_path_buf(),
            });
        }
    };
    let dir = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let dir = dir
        .canonicalize()
        .map_err(|source| OutputPathError::Directory {
            path: out.to_path_buf(),
            dir: dir.clone(),
            source,
        })?;
    Ok(dir.join(name))
}

/// `resolved` (the resolved form of `path`) is neither inside `store` nor a store
/// or inside any other store.
fn check_outside_stores(path: &Path, resolved: &Path, store: &Path) -> Result<(), OutputPathError> {
    if let Ok(store) = store.canonicalize()
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

#[cfg(test)]
mod tests {
    use super::*;

    fn fake_store(dir: &Path) {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join("conf"), b"x").unwrap();
        std::fs::write(dir.join("db"), b"x").unwrap();
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
