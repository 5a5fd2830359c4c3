//! The timers of maintenance: an export every `--export-every-mins`, a backup
//! every `--backup-every-mins` (with the retention of `--backup-keep`), and the
//! export at the end of a run. They ask the dispatcher through a [`Requester`]
//! and wait for the answer, so two of them never pile up. They log nothing of
//! the outcome: the maintenance queue logs every export and backup once,
//! whoever asked for it.

use std::path::PathBuf;
use std::time::Duration;

use stera_proto::v1::{ExportReply, ExportRequest};
use tokio::task::JoinHandle;

use super::backup::{periodic_name, prune_backups};
use super::{MaintenanceError, Requester};

/// Asks for the export `request` every `every` (the first one after `every`);
/// ends when the dispatcher is gone.
pub fn periodic_export<R: Requester>(
    requester: R,
    every: Duration,
    request: ExportRequest,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        tick.tick().await;
        loop {
            tick.tick().await;
            if let Err(e) = requester.export(request.clone()).await
                && e.is_closed()
            {
                return;
            }
        }
    })
}

/// Asks for a backup into `dir` every `every`, and deletes the oldest complete
/// backups beyond `keep` (at least one is kept, never `store` nor any open
/// store); ends when the dispatcher is gone.
pub fn periodic_backup<R: Requester>(
    requester: R,
    every: Duration,
    dir: PathBuf,
    keep: usize,
    store: PathBuf,
) -> JoinHandle<()> {
    let keep = keep.max(1);
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        tick.tick().await;
        loop {
            tick.tick().await;
            let secs = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            let path = dir.join(periodic_name(secs));
            match requester.backup(path).await {
                Ok(_) => prune_backups(&dir, keep, &store),
                Err(e) if e.is_closed() => return,
                Err(_) => {}
            }
        }
    })
}

/// The export at the end of a run (logged by the maintenance queue).
///
/// # Errors
/// The export failed, or the dispatcher stopped before it.
pub async fn final_export<R: Requester>(
    requester: &R,
    request: ExportRequest,
) -> Result<ExportReply, MaintenanceError> {
    requester.export(request).await
}
