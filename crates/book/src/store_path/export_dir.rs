//! Paths a remote caller asks for: only inside the coordinator's export
//! directory, itself outside every store.

use std::path::{Path, PathBuf};

use super::OutputPathError;
use super::check_output_path;
use super::rules::check_outside_stores;

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
