//! The rules of the module documentation: an output path resolved through
//! links and `..`, then refused inside a store, as a hard link, or as a link
//! to nothing.

use std::path::{Component, Path, PathBuf};

use super::{OutputPathError, is_store_dir};

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

/// The absolute, symlink-free form of `out`, which need not exist yet (its
/// directory must).
pub(super) fn resolve(out: &Path) -> Result<PathBuf, OutputPathError> {
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
pub(super) fn name_and_dir(out: &Path) -> Result<(std::ffi::OsString, PathBuf), OutputPathError> {
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
pub(super) fn check_outside_stores(
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
pub(super) fn check_links(
    path: &Path,
    resolved: &Path,
    store: Option<&Path>,
) -> Result<(), OutputPathError> {
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
