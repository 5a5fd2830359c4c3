//! The maintenance queue: requests in arrival order, one job at a time on a
//! thread of its own at [`MAINTENANCE_NICE`].

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Instant;

use stera_book::{LiveBook, NodeStore};
use stera_proto::v1::{BackupReply, ExportReply, ExportRequest};
use tokio::sync::oneshot;

use super::{Job, MaintenanceError, Preparers};
use crate::registry::{BackupOutcome, Registry};

/// The nice value of the maintenance threads (Linux: per thread). The dispatcher
/// and the gRPC threads keep 0, so on a busy machine the job takes what they leave.
pub const MAINTENANCE_NICE: i32 = 10;

/// Where an export's answer goes.
pub type ExportReplyTx = oneshot::Sender<Result<ExportReply, MaintenanceError>>;
/// Where a backup's answer goes.
pub type BackupReplyTx = oneshot::Sender<Result<BackupReply, MaintenanceError>>;

/// A request waiting for the maintenance thread.
enum Request {
    Export(ExportRequest, ExportReplyTx),
    Backup(PathBuf, BackupReplyTx),
}

/// Requests in arrival order and the job running.
#[derive(Default)]
pub struct MaintenanceQueue {
    waiting: VecDeque<Request>,
    running: Option<Running>,
}

struct Running {
    /// Set by the thread when it is done (also when it panics).
    done: Arc<AtomicBool>,
    thread: JoinHandle<()>,
}

/// Sets the flag when dropped: a panicking job still frees the queue.
struct DoneOnDrop(Arc<AtomicBool>);

impl Drop for DoneOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
    }
}

impl MaintenanceQueue {
    /// Queues an export; [`MaintenanceQueue::poll`] starts it.
    pub fn submit_export(&mut self, request: ExportRequest, reply: ExportReplyTx) {
        self.waiting.push_back(Request::Export(request, reply));
    }

    /// Queues a backup to `path`; [`MaintenanceQueue::poll`] starts it.
    pub fn submit_backup(&mut self, path: PathBuf, reply: BackupReplyTx) {
        self.waiting.push_back(Request::Backup(path, reply));
    }

    /// True while a job runs.
    pub fn busy(&mut self) -> bool {
        if let Some(r) = &self.running
            && r.done.load(Ordering::Acquire)
            && let Some(r) = self.running.take()
        {
            let _ = r.thread.join();
        }
        self.running.is_some()
    }

    /// Waits for the running job (shutdown: a backup or export under way is
    /// finished rather than cut off).
    pub fn join(&mut self) {
        if let Some(r) = self.running.take() {
            let _ = r.thread.join();
        }
    }

    /// Starts the next job if none runs: the oldest waiting request, else a
    /// compaction if the store asks for one. Runs on the dispatcher thread:
    /// the preparers take their snapshots there, the work runs elsewhere.
    pub fn poll<S: NodeStore>(
        &mut self,
        live: &LiveBook<S>,
        prepare: &mut Preparers<S>,
        registry: &Arc<Registry>,
    ) {
        while !self.busy() {
            let Some(request) = self.waiting.pop_front() else {
                if let Some(compact) = prepare.compact.as_mut()
                    && let Some(job) = compact(live)
                {
                    self.spawn("compact", false, compact_task(job));
                }
                return;
            };
            let started = Instant::now();
            match request {
                Request::Export(request, reply) => {
                    let job = match &prepare.export {
                        Some(f) => f(live, &request),
                        None => Err(MaintenanceError::NoExporter),
                    };
                    match job {
                        Ok(job) => {
                            let registry = registry.clone();
                            self.spawn(
                                "export",
                                true,
                                Box::new(move || {
                                    let result = job();
                                    finish_export(&registry, &request.path, started, result, reply);
                                }),
                            );
                        }
                        Err(e) => finish_export(registry, &request.path, started, Err(e), reply),
                    }
                }
                Request::Backup(path, reply) => {
                    let job = match &prepare.backup {
                        Some(f) => f(live, &path),
                        None => Err(MaintenanceError::NoBackup),
                    };
                    match job {
                        Ok(job) => {
                            let registry = registry.clone();
                            self.spawn(
                                "backup",
                                false,
                                Box::new(move || {
                                    finish_backup(&registry, &path, started, job(), reply);
                                }),
                            );
                        }
                        Err(e) => finish_backup(registry, &path, started, Err(e), reply),
                    }
                }
            }
        }
    }

    /// Runs `task` on a new maintenance thread; `parallel` gives it a thread
    /// pool of the same low priority for its parallel phases.
    fn spawn(&mut self, what: &'static str, parallel: bool, task: Box<dyn FnOnce() + Send>) {
        let done = Arc::new(AtomicBool::new(false));
        let flag = DoneOnDrop(done.clone());
        let spawned = std::thread::Builder::new()
            .name(format!("stera-{what}"))
            .spawn(move || {
                let _flag = flag;
                lower_priority();
                if parallel {
                    run_in_niced_pool(task);
                } else {
                    task();
                }
            });
        match spawned {
            Ok(thread) => self.running = Some(Running { done, thread }),
            // The task (and any reply in it) is dropped: the caller sees the job fail.
            Err(e) => tracing::error!(error = %e, job = what, "cannot start a maintenance thread"),
        }
    }
}

/// Runs `task` with its rayon phases on a pool of [`MAINTENANCE_NICE`] threads
/// (the global rayon pool would run them at the dispatcher's priority).
fn run_in_niced_pool(task: Box<dyn FnOnce() + Send>) {
    let threads = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    match rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("stera-export-{i}"))
        .start_handler(|_| lower_priority())
        .build()
    {
        Ok(pool) => pool.install(task),
        Err(e) => {
            tracing::warn!(error = %e, "no maintenance thread pool; running on the global one");
            task();
        }
    }
}

/// Lowers the calling thread's CPU priority to [`MAINTENANCE_NICE`].
fn lower_priority() {
    #[cfg(target_os = "linux")]
    {
        // On Linux a nice value belongs to a thread, so this touches no other.
        let tid = rustix::thread::gettid();
        if let Err(e) = rustix::process::setpriority_process(Some(tid), MAINTENANCE_NICE) {
            tracing::debug!(error = %e, "cannot lower the maintenance thread's priority");
        }
    }
}

fn compact_task(job: Job<usize>) -> Box<dyn FnOnce() + Send> {
    Box::new(move || {
        let started = Instant::now();
        match job() {
            Ok(removed) => {
                tracing::debug!(
                    removed,
                    ms = started.elapsed().as_millis(),
                    "store compacted"
                );
            }
            Err(e) => tracing::error!(error = %e, "store compaction failed"),
        }
    })
}

/// Milliseconds of `took`, for the log.
fn millis(took: std::time::Duration) -> u64 {
    u64::try_from(took.as_millis()).unwrap_or(u64::MAX)
}

/// Counts an export and logs it: this is the one log line of every export
/// (periodic, final or on demand), so its requesters log none.
fn finish_export(
    registry: &Registry,
    path: &str,
    started: Instant,
    result: Result<ExportReply, MaintenanceError>,
    reply: ExportReplyTx,
) {
    let took = started.elapsed();
    // Options no export can run with (a NaN temperature, an unknown format,
    // an opponent the store does not know) are the caller's mistake: no
    // export failed, one invalid request is counted. (A periodic export's
    // options were checked at start; its path turned into a link into a store
    // later, or its file replaced by another, is a failure, counted.)
    if let Err(e) = &result
        && e.is_invalid()
    {
        registry.record_export_mistake(crate::registry::Mistake::Invalid);
        tracing::warn!(path = %stera_rules::excerpt(path), reason = %e, "export refused");
        let _ = reply.send(result);
        return;
    }
    registry.record_export(
        took,
        &result
            .as_ref()
            .map(|_| ())
            .map_err(|e| format!("export to {path} failed: {e}")),
    );
    crate::telemetry::record_export(took);
    match &result {
        Ok(r) => {
            let bytes = std::fs::metadata(&r.path).map_or(0, |m| m.len());
            tracing::info!(path = %r.path, bytes, entries = r.entries, nodes = r.nodes, ms = millis(took), "book exported");
        }
        Err(e) => tracing::error!(path, error = %e, ms = millis(took), "export failed"),
    }
    let _ = reply.send(result);
}

/// Whether a backup's error is its path refused before anything ran (the
/// caller's mistake, e.g. a name that exists already) rather than a failure.
fn refused(error: &MaintenanceError) -> bool {
    matches!(
        error,
        MaintenanceError::OutputPath(_) | MaintenanceError::BackupExists(_)
    )
}

/// Counts a backup and logs it: the one log line of every backup (periodic or
/// on demand), so its requesters log none.
fn finish_backup(
    registry: &Registry,
    path: &std::path::Path,
    started: Instant,
    result: Result<BackupReply, MaintenanceError>,
    reply: BackupReplyTx,
) {
    let took = started.elapsed();
    match &result {
        Ok(r) => {
            let bytes = stera_book::store_path::directory_size(path).unwrap_or(0);
            registry.record_backup(&BackupOutcome::Written { took, bytes });
            tracing::info!(path = %r.path, bytes, nodes = r.nodes, ms = millis(took), "store backed up");
        }
        Err(e) if refused(e) => {
            registry.record_backup(&BackupOutcome::Refused);
            tracing::warn!(path = %path.display(), reason = %e, "backup refused");
        }
        Err(e) => {
            registry.record_backup(&BackupOutcome::Failed(format!(
                "backup to {} failed: {e}",
                path.display()
            )));
            tracing::error!(path = %path.display(), error = %e, ms = millis(took), "backup failed");
        }
    }
    let _ = reply.send(result);
}
