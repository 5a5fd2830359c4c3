//! How both book writers put a file in place: written to a temporary file beside
//! the target, synced, renamed over the target, and the rename synced, so that
//! the target is either the old file or the whole new one.

use std::fs::File;
use std::io;
use std::path::Path;

use tempfile::NamedTempFile;

/// A temporary file beside `final_path` (`.<name>.stera-partial-<pid>.<random><suffix>`,
/// see [`crate::leftovers`]; leftovers of interrupted writers there are removed
/// first), readable
/// by others as a file the user created would be (mode 0666 less the umask), not
/// tempfile's private 0600, so that an engine running as another user can load
/// the book.
pub(crate) fn temp_beside(final_path: &Path, suffix: &str) -> io::Result<NamedTempFile> {
    let name = final_path
        .file_name()
        .map_or_else(|| "book".into(), |n| n.to_string_lossy().into_owned());
    let mut builder = tempfile::Builder::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(std::fs::Permissions::from_mode(0o666));
    }
    let dir = parent_dir(final_path);
    let _ = crate::leftovers::clean_stale(dir);
    let prefix = format!(".{name}.{}", crate::leftovers::tag());
    builder.prefix(&prefix).suffix(suffix).tempfile_in(dir)
}

/// Syncs `temp`, renames it to `final_path` and syncs the directory. On failure,
/// what failed (for the writer's error) and the I/O error.
pub(crate) fn persist(
    temp: NamedTempFile,
    final_path: &Path,
) -> Result<(), (&'static str, io::Error)> {
    temp.as_file()
        .sync_all()
        .map_err(|e| ("cannot sync the temporary file for", e))?;
    temp.persist(final_path)
        .map_err(|e| ("cannot rename the temporary file to", e.error))?;
    sync_dir(parent_dir(final_path)).map_err(|e| ("cannot sync the directory of", e))
}

fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Makes the rename durable. Some file systems cannot sync a directory; that is
/// not an error worth losing a finished book over.
fn sync_dir(dir: &Path) -> io::Result<()> {
    match File::open(dir).and_then(|d| d.sync_all()) {
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::InvalidInput | io::ErrorKind::Unsupported
            ) =>
        {
            Ok(())
        }
        other => other,
    }
}
