//! Work on the whole book that must never stop the cluster: exports, backups and
//! compactions, one at a time on the maintenance thread, at a lower CPU priority
//! than the dispatcher; and the timers that ask for them.
//!
//! The dispatcher prepares each job where it owns the book and the store (checks
//! and a cheap snapshot: the [`Preparers`], see [`export::book_exporter`],
//! [`backup::store_backup`] and [`compact::store_compaction`]) and hands the work
//! to [`MaintenanceQueue`], which runs it on a thread of its own. One job at a
//! time, because they do not mix: a compaction rewrites the node chunks that an
//! export or a backup scans. Exports and backups wait in arrival order (a
//! periodic export, then the final one at the end of a run, are both written); a
//! compaction starts only when nothing else waits.
//!
//! This folder owns its job types; the dispatcher imports them, never the other
//! way round. The timers in [`schedule`] reach the dispatcher through the
//! [`Requester`] trait, which the dispatcher's handle implements.

pub mod backup;
pub mod compact;
pub mod export;
pub(crate) mod queue;
pub mod schedule;

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use stera_book::store_path::OutputPathError;
use stera_book::terashock::TeraShockError;
use stera_book::{BookError, LiveBook, NodeStore};
use stera_proto::v1::{BackupReply, ExportReply, ExportRequest};

use crate::registry::Registry;

pub use queue::MaintenanceQueue;

/// Work prepared on the dispatcher thread that runs on the maintenance thread.
pub type Job<R> = Box<dyn FnOnce() -> Result<R, MaintenanceError> + Send>;

/// An export's work: runs on the maintenance thread while the dispatcher goes on.
pub type ExportJob = Job<ExportReply>;

/// Prepares an export of the live book on the dispatcher thread (checks, a
/// snapshot) and returns the work that writes it (injected so the dispatcher does
/// not depend on the export code).
pub type ExportFn<S> =
    Box<dyn Fn(&LiveBook<S>, &ExportRequest) -> Result<ExportJob, MaintenanceError> + Send>;

/// Prepares a copy of the store to a new directory (a snapshot on the dispatcher
/// thread, the copy on the maintenance thread; injected: a backup is a sled matter).
pub type BackupFn<S> =
    Box<dyn Fn(&LiveBook<S>, &Path) -> Result<Job<BackupReply>, MaintenanceError> + Send>;

/// Asked whenever the maintenance thread is idle: returns a compaction of the
/// store when its policy says one is due (the job returns the chunks it merged).
pub type CompactFn<S> = Box<dyn FnMut(&LiveBook<S>) -> Option<Job<usize>> + Send>;

/// How the dispatcher prepares each kind of job (injected: the dispatcher is
/// generic over stores, exports and backups are sled matters).
pub struct Preparers<S: NodeStore> {
    pub export: Option<ExportFn<S>>,
    pub backup: Option<BackupFn<S>>,
    pub compact: Option<CompactFn<S>>,
}

impl<S: NodeStore> Default for Preparers<S> {
    fn default() -> Self {
        Self {
            export: None,
            backup: None,
            compact: None,
        }
    }
}

/// The maintenance of a dispatcher: its queue, how it prepares each job, and
/// whether shutdown waits for the job running.
pub struct Maintenance<S: NodeStore> {
    pub queue: MaintenanceQueue,
    pub prepare: Preparers<S>,
    /// Set at shutdown when the job on the maintenance thread is to be cut off
    /// rather than waited for (a second signal during a long final export).
    pub abandon: Arc<AtomicBool>,
}

impl<S: NodeStore> Maintenance<S> {
    /// Exports prepared by `export`; no backup or compaction until they are set.
    #[must_use]
    pub fn new(export: Option<ExportFn<S>>) -> Self {
        Self {
            queue: MaintenanceQueue::default(),
            prepare: Preparers {
                export,
                ..Preparers::default()
            },
            abandon: Arc::default(),
        }
    }

    /// Starts the next job if none runs (see [`MaintenanceQueue::poll`]).
    pub fn poll(&mut self, live: &LiveBook<S>, registry: &Arc<Registry>) {
        self.queue.poll(live, &mut self.prepare, registry);
    }

    /// At the end of a run: a backup or export under way is finished, not cut
    /// off, so nothing holds the store when the live book is handed back; unless
    /// shutdown was told to abandon it (the caller flushes the store then).
    pub fn finish(&mut self) {
        if self.abandon.load(Ordering::Acquire) {
            tracing::warn!("the job on the maintenance thread is abandoned");
        } else {
            self.queue.join();
        }
    }
}

/// Why an export, a backup or a compaction did not happen. The texts are what
/// the RPC's client and the log show.
#[derive(Debug, thiserror::Error)]
pub enum MaintenanceError {
    /// The dispatcher is gone (shutdown) before it answered.
    #[error(transparent)]
    Closed(#[from] crate::closed::Closed),
    /// The output lies in a store or behind a link into one.
    #[error(transparent)]
    OutputPath(#[from] OutputPathError),
    /// A backup is only ever written into a new directory.
    #[error("backup target `{}` exists already", .0.display())]
    BackupExists(PathBuf),
    /// The export request names an unknown choice.
    #[error(transparent)]
    Request(#[from] export::ExportRequestError),
    /// The export request lists a learning opponent the store does not know.
    #[error("{0}")]
    Opponents(BookError),
    /// A file is at the export's path that this store did not write: it is
    /// never replaced.
    #[error(
        "refusing to replace `{}`: it is not a book this store wrote ({why}); move it away or export to another name",
        stera_rules::excerpt(&path.display().to_string())
    )]
    NotOurExport { path: PathBuf, why: String },
    #[error("this coordinator has no exporter")]
    NoExporter,
    #[error("this coordinator cannot back up its store")]
    NoBackup,
    /// Reading or writing the store failed.
    #[error(transparent)]
    Store(#[from] BookError),
    /// The games counters an NDF export needs could not be read.
    #[error("cannot read the game results: {0}")]
    GameResults(BookError),
    /// Writing the book failed.
    #[error(transparent)]
    Export(#[from] TeraShockError),
    /// Writing an export or a backup into its bound directory failed (the
    /// message names the path as asked for, not the directory's handle).
    #[error("cannot write `{}`: {detail}", path.display())]
    Write { path: PathBuf, detail: String },
}

impl MaintenanceError {
    /// Whether the dispatcher is gone (a timer then stops asking).
    #[must_use]
    pub fn is_closed(&self) -> bool {
        matches!(self, Self::Closed(_))
    }

    /// Whether the request asks for what cannot be (options, an opponent the
    /// store does not know): the caller's mistake, answered INVALID_ARGUMENT;
    /// nothing ran, so nothing failed (no failure is counted, no alert fires).
    #[must_use]
    pub fn is_invalid(&self) -> bool {
        matches!(self, Self::Request(_) | Self::Opponents(_))
    }
}

/// What the timers of [`schedule`] ask of the dispatcher (implemented by
/// [`crate::handle::DispatcherHandle`]; a trait so this folder does not import
/// the dispatcher).
pub trait Requester: Clone + Send + Sync + 'static {
    /// Exports the live book as `request` says, once the maintenance thread is free.
    fn export(
        &self,
        request: ExportRequest,
    ) -> impl Future<Output = Result<ExportReply, MaintenanceError>> + Send;
    /// Copies the store into the new directory `path`.
    fn backup(
        &self,
        path: PathBuf,
    ) -> impl Future<Output = Result<BackupReply, MaintenanceError>> + Send;
}
