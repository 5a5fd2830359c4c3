//! The HTTP side of the metrics: the recorder installed, `/metrics`, the status
//! page and `/api/status` served, and the store's size measured for them. Apart
//! from [`crate::telemetry`] (metric names and how the registry maps onto them) so
//! that recording a metric never imports the dispatcher's handle.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::Result;

use crate::handle::DispatcherHandle;
use crate::registry::Registry;
use crate::telemetry;

/// How often the store directory is measured (walking it costs a few syscalls per
/// file; sled keeps few, large files).
const STORE_SIZE_EVERY: Duration = Duration::from_secs(30);

/// Installs the recorder and serves `/metrics`, `/` and `/api/status` on `addr`;
/// measures the store directory and its file system every [`STORE_SIZE_EVERY`].
pub(crate) async fn serve(
    addr: SocketAddr,
    registry: Arc<Registry>,
    dispatcher: &DispatcherHandle,
    db: PathBuf,
) -> Result<()> {
    let handle = stera_service::telemetry::install_recorder("coordinator", telemetry::BUCKETS)?;
    telemetry::describe();
    let exposition = {
        let registry = registry.clone();
        stera_service::telemetry::Exposition::new(handle, move || telemetry::refresh(&registry))
    };
    let router = exposition
        .router()
        .merge(crate::dashboard::Dashboard::new(registry.clone(), dispatcher).router());
    stera_service::telemetry::serve(addr, router).await?;
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(STORE_SIZE_EVERY);
        loop {
            tick.tick().await;
            let dir = db.clone();
            match tokio::task::spawn_blocking(move || {
                let fs = stera_book::space::filesystem_bytes(&dir);
                (stera_book::store_path::directory_size(&dir), fs)
            })
            .await
            {
                Ok((size, fs)) => {
                    let c = &registry.counters;
                    match fs {
                        Ok(fs) => {
                            c.store_disk_size.store(fs.size, Ordering::Relaxed);
                            c.store_disk_free.store(fs.available, Ordering::Relaxed);
                        }
                        Err(e) => tracing::warn!(error = %e, "cannot read the store's disk space"),
                    }
                    match size {
                        Ok(bytes) => c.store_bytes.store(bytes, Ordering::Relaxed),
                        Err(e) => {
                            tracing::warn!(error = %e, db = %db.display(), "cannot measure the store");
                        }
                    }
                }
                Err(_) => return,
            }
        }
    });
    Ok(())
}
