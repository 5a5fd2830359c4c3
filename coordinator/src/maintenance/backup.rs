//! Backups of the store: one on request (the Backup RPC) or every
//! `--backup-every-mins` (see [`super::schedule`]), and the retention of the
//! periodic ones.

use std::path::{Path, PathBuf};
use std::time::Instant;

use stera_book::store_path::OutputPathError;
use stera_book::{LiveBook, SledStore};
use stera_proto::v1::BackupReply;

use super::{BackupFn, Job, MaintenanceError};

/// The coordinator's backups. On the dispatcher thread: the path check and a
/// snapshot of the store (its node count and a copy of the small trees, see
/// [`SledStore::backup_snapshot`]); on the maintenance thread: the copy, while
/// results keep being stored. `store` is the store's directory, which a backup
/// must not land in.
#[must_use]
pub fn store_backup(store: PathBuf) -> BackupFn<SledStore> {
    Box::new(move |live: &LiveBook<SledStore>, path: &Path| {
        let start = Instant::now();
        stera_book::store_path::check_output_path(path, &store)?;
        if path.exists() {
            return Err(MaintenanceError::BackupExists(path.to_owned()));
        }
        let snapshot = live.store().backup_snapshot()?;
        let path = path.to_owned();
        let job: Job<BackupReply> = Box::new(move || {
            let summary = snapshot.write_to(&path)?;
            Ok(BackupReply {
                path: path.display().to_string(),
                entries: summary.entries,
                nodes: summary.nodes,
                elapsed_ms: u32::try_from(start.elapsed().as_millis()).unwrap_or(u32::MAX),
            })
        });
        Ok(job)
    })
}

/// Why `--backup-dir` cannot take backups.
#[derive(Debug, thiserror::Error)]
pub enum BackupDirError {
    /// It lies in a store, or is not a directory.
    #[error("bad --backup-dir: {0}")]
    Path(#[from] OutputPathError),
    #[error("cannot create --backup-dir `{}`: {source}", path.display())]
    Create {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Checks the directory of the periodic backups at start, and makes it when
/// missing (its parent must exist; the shipped configurations name a new
/// directory on the store's volume), never inside a store.
///
/// # Errors
/// The directory lies in a store or is not one, or cannot be made.
pub fn prepare_dir(dir: &Path, store: &Path) -> Result<(), BackupDirError> {
    if !dir.exists() {
        stera_book::store_path::check_output_path(dir, store)?;
        std::fs::create_dir(dir).map_err(|source| BackupDirError::Create {
            path: dir.to_owned(),
            source,
        })?;
    }
    stera_book::store_path::check_export_dir(dir, store)?;
    Ok(())
}

/// The directory name of a periodic backup taken at `unix_secs`.
#[must_use]
pub fn periodic_name(unix_secs: u64) -> String {
    format!("backup-{unix_secs}.db")
}

/// Deletes complete periodic backups (`backup-N.db`) beyond the newest `keep`.
pub fn prune_backups(dir: &Path, keep: usize) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut backups: Vec<(u64, PathBuf)> = entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let secs = name
                .strip_prefix("backup-")?
                .strip_suffix(".db")?
                .parse()
                .ok()?;
            Some((secs, e.path()))
        })
        .collect();
    backups.sort();
    let excess = backups.len().saturating_sub(keep);
    for (_, path) in backups.into_iter().take(excess) {
        match std::fs::remove_dir_all(&path) {
            Ok(()) => tracing::info!(path = %path.display(), "old backup deleted"),
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "cannot delete an old backup")
            }
        }
    }
}
