//! Outputs bound when they are checked: a file opened at once
//! ([`BoundOutput`]), or a directory held open for a file written later
//! ([`BoundTarget`]), so a path changed after the check redirects nothing.

use std::path::{Path, PathBuf};

use super::rules::{check_links, check_outside_stores, name_and_dir};
use super::{OutputPathError, check_output_path, check_output_path_outside_stores};

/// An output file bound at start: its path checked ([`check_output_path`], or
/// [`check_output_path_outside_stores`] without a store) and the resolved file
/// opened at once, before anything runs. Every later write goes into the file
/// opened here, whatever becomes of the path: a directory on it swapped for a
/// symbolic link into a store after start cannot redirect the writes there.
///
/// A staged output ([`BoundOutput::staged`]) is written under a temporary name
/// beside the target and renamed onto it by [`BoundOutput::commit`]: dropped
/// uncommitted (the run failed), it leaves nothing, and a file that was there
/// stays as it was.
#[derive(Debug)]
pub struct BoundOutput {
    path: PathBuf,
    file: std::sync::Mutex<std::fs::File>,
    /// A staged output's temporary file (removed when dropped) and the
    /// directory it is renamed in (declared after it: dropped after it).
    staged: Option<(tempfile::TempPath, BoundTarget)>,
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

    /// Checks `out` and binds its directory ([`BoundTarget`]), where the
    /// output is written under a temporary name (`.NAME.stera-partial-<pid>.…tmp`,
    /// see [`stera_formats::leftovers`]) until [`BoundOutput::commit`] renames it
    /// onto `out`. A target that exists and is not a regular file (a device,
    /// a pipe: `/dev/stdout`) is written directly instead, as
    /// [`BoundOutput::create`] does.
    ///
    /// # Errors
    /// As [`BoundOutput::append`], or the temporary file cannot be made.
    pub fn staged(out: &Path, store: Option<&Path>) -> Result<Self, OutputPathError> {
        let special = std::fs::metadata(out).is_ok_and(|m| !m.is_file());
        if special {
            return Self::create(out, store);
        }
        let target = BoundTarget::open(out, store)?;
        let write_path = target.write_path();
        let dir = write_path.parent().unwrap_or(Path::new("."));
        let _ = stera_formats::leftovers::clean_stale(dir);
        let mut builder = tempfile::Builder::new();
        {
            use std::os::unix::fs::PermissionsExt;
            // As a file the user creates (0666 less the umask), not 0600.
            builder.permissions(std::fs::Permissions::from_mode(0o666));
        }
        let prefix = format!(
            ".{}.{}",
            target.name.to_string_lossy(),
            stera_formats::leftovers::tag()
        );
        let temp = builder
            .prefix(&prefix)
            .suffix(".tmp")
            .tempfile_in(dir)
            .map_err(|cause| OutputPathError::Open {
                path: out.to_path_buf(),
                cause: std::io::Error::new(cause.kind(), target.shown(&cause.to_string())),
            })?;
        let (file, temp) = temp.into_parts();
        Ok(Self {
            path: out.to_path_buf(),
            file: std::sync::Mutex::new(file),
            staged: Some((temp, target)),
        })
    }

    /// Puts a staged output in place: synced, renamed onto its path, the
    /// rename synced. A direct output (not staged: a device, a pipe) is left
    /// as written.
    ///
    /// # Errors
    /// The sync or the rename failed: the temporary file is removed and the
    /// path keeps what it held.
    pub fn commit(self) -> std::io::Result<()> {
        let Some((temp, target)) = self.staged else {
            return Ok(());
        };
        let file = self
            .file
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        file.sync_all()?;
        drop(file);
        temp.persist(target.write_path())
            .map_err(|e| std::io::Error::new(e.error.kind(), target.shown(&e.error.to_string())))?;
        match target.dir.sync_all() {
            Err(e)
                if !matches!(
                    e.kind(),
                    std::io::ErrorKind::InvalidInput | std::io::ErrorKind::Unsupported
                ) =>
            {
                Err(e)
            }
            _ => Ok(()),
        }
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
            staged: None,
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

    /// Appends `bytes` in one write.
    ///
    /// # Errors
    /// The write failed.
    pub fn write_bytes(&self, bytes: &[u8]) -> std::io::Result<()> {
        use std::io::Write;
        let mut file = self
            .file
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        file.write_all(bytes)
    }

    /// Appends `entry` in one write, preceded by `separator` when the file
    /// already holds something (games in a CSA file are separated by `/`).
    /// A write that fails part way (a full disk) is cut off again, as far as
    /// the file allows: the file ends with a whole entry.
    ///
    /// # Errors
    /// The write failed.
    pub fn append_entry(&self, entry: &str, separator: &str) -> std::io::Result<()> {
        use std::io::Write;
        let mut file = self
            .file
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let before = file.metadata()?.len();
        let text = if before > 0 {
            format!("{separator}{entry}")
        } else {
            entry.to_owned()
        };
        file.write_all(text.as_bytes()).inspect_err(|_| {
            let _ = file.set_len(before);
        })
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
    dir: std::fs::File,
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
            dir,
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
