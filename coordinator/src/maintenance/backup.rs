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
        // Bound now, on the dispatcher thread: the copy goes into the
        // directory checked here, whatever becomes of its path meanwhile.
        // Named first: the path check would call an existing backup "a directory".
        if stera_book::store_path::exists_outside_stores(path, &store)? {
            return Err(MaintenanceError::BackupExists(path.to_owned()));
        }
        let target = stera_book::store_path::BoundTarget::open(path, Some(&store))?;
        if target.write_path().exists() {
            return Err(MaintenanceError::BackupExists(path.to_owned()));
        }
        let snapshot = live.store().backup_snapshot()?;
        let path = path.to_owned();
        let job: Job<BackupReply> = Box::new(move || {
            let summary =
                snapshot
                    .write_to(&target.write_path())
                    .map_err(|e| MaintenanceError::Write {
                        path: path.clone(),
                        detail: target.shown(&e.to_string()),
                    })?;
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
    /// `--db` is where backup rotation could delete it.
    #[error(
        "refusing --db `{}`: {why}, and backup rotation deletes old backups (--backup-keep) while the coordinator runs; copy the backup out to the store's place first and start on the copy (deploy/README.md, \"Back up and restore the store\")",
        db.display()
    )]
    StoreRotatable { db: PathBuf, why: String },
}

/// Refuses a `--db` that backup rotation could delete: one inside
/// `--backup-dir`, or one named like a periodic backup (`backup-<N>.db`, which
/// a rotation into its directory would count among the old backups), before
/// anything is made there.
///
/// # Errors
/// [`BackupDirError::StoreRotatable`], saying why.
pub fn refuse_rotatable_store(db: &Path, backup_dir: Option<&Path>) -> Result<(), BackupDirError> {
    let refuse = |why: String| {
        Err(BackupDirError::StoreRotatable {
            db: db.to_owned(),
            why,
        })
    };
    if let Some(name) = db.file_name().and_then(|n| n.to_str())
        && periodic_secs(name).is_some()
    {
        return refuse(format!("it is named like a periodic backup (`{name}`)"));
    }
    if let Some(dir) = backup_dir
        && let (Some(store), Some(dir_real)) = (resolved(db), resolved(dir))
        && store.starts_with(&dir_real)
    {
        return refuse(format!("it lies in --backup-dir `{}`", dir.display()));
    }
    Ok(())
}

/// `path` with symbolic links and `..` resolved, also when it does not exist
/// yet (its nearest existing ancestor resolved, the rest appended).
fn resolved(path: &Path) -> Option<PathBuf> {
    let absolute = std::path::absolute(path).ok()?;
    let mut rest = Vec::new();
    let mut at = absolute.as_path();
    loop {
        if let Ok(real) = at.canonicalize() {
            let mut out = real;
            for part in rest.iter().rev() {
                out.push(part);
            }
            return Some(out);
        }
        rest.push(at.file_name()?.to_owned());
        at = at.parent()?;
    }
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

/// The seconds of a periodic backup's name `backup-<N>.db`.
fn periodic_secs(name: &str) -> Option<u64> {
    name.strip_prefix("backup-")?
        .strip_suffix(".db")?
        .parse()
        .ok()
}

/// Deletes complete periodic backups (`backup-N.db`) beyond the newest `keep`,
/// never a store that is open: neither `store` (the coordinator's own, however
/// it is spelt) nor any directory whose store some process holds (sled's lock,
/// [`SledStore::is_open`]).
pub fn prune_backups(dir: &Path, keep: usize, store: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut backups: Vec<(u64, PathBuf)> = entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            Some((periodic_secs(&name)?, e.path()))
        })
        .collect();
    backups.sort();
    let excess = backups.len().saturating_sub(keep);
    let store = resolved(store);
    for (_, path) in backups.into_iter().take(excess) {
        let own = store
            .as_ref()
            .is_some_and(|s| resolved(&path).is_some_and(|p| s.starts_with(&p)));
        if own || SledStore::is_open(&path) {
            tracing::error!(
                path = %path.display(),
                "an old backup is an open store (the coordinator's --db, or held by another process): not deleted; copy a backup out before starting on it (deploy/README.md)"
            );
            continue;
        }
        match std::fs::remove_dir_all(&path) {
            Ok(()) => tracing::info!(path = %path.display(), "old backup deleted"),
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "cannot delete an old backup")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use stera_book::NodeStore;

    fn store_at(path: &Path) -> SledStore {
        let mut store = SledStore::open(path).unwrap();
        store.add_kifu_keys(&[stera_rules::Key(1)]).unwrap();
        store
    }

    #[test]
    fn rotation_never_deletes_an_open_store() {
        let dir = tempfile::tempdir().unwrap();
        let backups = dir.path().join("backups");
        std::fs::create_dir(&backups).unwrap();
        for n in 1..=3 {
            drop(store_at(&backups.join(periodic_name(n))));
        }
        // The oldest is open (by this process, as a coordinator started on it
        // would hold it), through another spelling.
        let open = store_at(&backups.join("..").join("backups").join(periodic_name(1)));
        // Another process's store: sled's lock alone says so.
        let other = store_at(&backups.join(periodic_name(2)));
        prune_backups(&backups, 1, &dir.path().join("book.db"));
        assert!(backups.join(periodic_name(1)).join("db").is_file());
        assert!(backups.join(periodic_name(2)).join("db").is_file());
        assert!(backups.join(periodic_name(3)).exists());
        drop(other);
        // Closed, it is an old backup like any other (sled lets its lock go a
        // moment after the drop).
        for _ in 0..200 {
            if !SledStore::is_open(&backups.join(periodic_name(2))) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        prune_backups(&backups, 1, &backups.join(periodic_name(1)));
        assert!(!backups.join(periodic_name(2)).exists());
        assert!(backups.join(periodic_name(1)).join("db").is_file());
        drop(open);
    }

    #[test]
    fn a_store_rotation_could_delete_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let backups = dir.path().join("backups");
        std::fs::create_dir(&backups).unwrap();
        let inside = backups.join("restored.db");
        let e = refuse_rotatable_store(&inside, Some(&backups)).unwrap_err();
        let text = e.to_string();
        assert!(
            text.contains("lies in --backup-dir") && text.contains("copy the backup out"),
            "{text}"
        );
        // Spelt through `..` and a link, still inside.
        std::os::unix::fs::symlink(&backups, dir.path().join("link")).unwrap();
        std::fs::create_dir(dir.path().join("x")).unwrap();
        let spelt = dir.path().join("x").join("..").join("link").join("book.db");
        assert!(refuse_rotatable_store(&spelt, Some(&backups)).is_err());
        // Named like a backup, anywhere.
        let named = dir.path().join(periodic_name(1_700_000_000));
        let e = refuse_rotatable_store(&named, None).unwrap_err();
        assert!(
            e.to_string().contains("named like a periodic backup"),
            "{e}"
        );
        // The copy beside it is fine.
        refuse_rotatable_store(&dir.path().join("book.db"), Some(&backups)).unwrap();
        refuse_rotatable_store(&dir.path().join("backups-old.db"), Some(&backups)).unwrap();
    }
}
