//! Exports that never stop the cluster: one at a time on the export thread, at a
//! lower CPU priority than the dispatcher, from a snapshot of the book.
//!
//! The dispatcher prepares an export (checks, snapshot: see
//! [`crate::export::book_exporter`]) and hands the job to [`ExportQueue`]; requests
//! that arrive while one runs wait in order (a periodic export, then the final
//! one at the end of a run, are both written).

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use stera_book::{NodeStore, Selector};
use stera_proto::v1::{ExportReply, ExportRequest};
use tokio::sync::oneshot;

use crate::dispatcher::{ExportFn, ExportJob};
use crate::registry::Registry;

/// The nice value of the export threads (Linux: per thread). The dispatcher and
/// the gRPC threads keep 0, so on a busy machine the export takes what they leave.
pub const EXPORT_NICE: i32 = 10;

type Reply = oneshot::Sender<Result<ExportReply, String>>;

/// Export requests in arrival order and the one running.
#[derive(Default)]
pub struct ExportQueue {
    waiting: VecDeque<(ExportRequest, Reply)>,
    /// Set by the export thread when it is done (also when it panics).
    running: Option<Arc<AtomicBool>>,
}

/// Sets the flag when dropped: a panicking export still frees the queue.
struct DoneOnDrop(Arc<AtomicBool>);

impl Drop for DoneOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
    }
}

impl ExportQueue {
    /// Queues a request; [`ExportQueue::poll`] starts it.
    pub fn submit(&mut self, request: ExportRequest, reply: Reply) {
        self.waiting.push_back((request, reply));
    }

    /// True while an export runs.
    pub fn busy(&mut self) -> bool {
        if let Some(done) = &self.running
            && done.load(Ordering::Acquire)
        {
            self.running = None;
        }
        self.running.is_some()
    }

    /// Starts the next waiting export if none runs. Runs on the dispatcher
    /// thread: `prepare` takes the snapshot there, the job runs elsewhere.
    pub fn poll<S: NodeStore>(
        &mut self,
        selector: &Selector<S>,
        prepare: Option<&ExportFn<S>>,
        registry: &Arc<Registry>,
    ) {
        while !self.busy() {
            let Some((request, reply)) = self.waiting.pop_front() else {
                return;
            };
            let started = Instant::now();
            let job = match prepare {
                Some(f) => f(selector, &request),
                None => Err("this coordinator has no exporter".to_owned()),
            };
            match job {
                Ok(job) => self.spawn(job, request, reply, started, registry.clone()),
                Err(e) => finish(registry, &request.path, started, Err(e), reply),
            }
        }
    }

    fn spawn(
        &mut self,
        job: ExportJob,
        request: ExportRequest,
        reply: Reply,
        started: Instant,
        registry: Arc<Registry>,
    ) {
        let done = Arc::new(AtomicBool::new(false));
        let flag = DoneOnDrop(done.clone());
        let spawned = std::thread::Builder::new()
            .name("stera-export".into())
            .spawn(move || {
                let _flag = flag;
                let result = run_niced(job);
                finish(&registry, &request.path, started, result, reply);
            });
        match spawned {
            Ok(_) => self.running = Some(done),
            // The closure (and the reply) is dropped: the caller sees the export fail.
            Err(e) => tracing::error!(error = %e, "cannot start the export thread"),
        }
    }
}

/// Runs `job` at [`EXPORT_NICE`], with its parallel phases on a thread pool of
/// the same priority (the global rayon pool would run them at the dispatcher's).
fn run_niced(job: ExportJob) -> Result<ExportReply, String> {
    lower_priority();
    let threads = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    match rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("stera-export-{i}"))
        .start_handler(|_| lower_priority())
        .build()
    {
        Ok(pool) => pool.install(job),
        Err(e) => {
            tracing::warn!(error = %e, "no export thread pool; exporting on the global one");
            job()
        }
    }
}

/// Lowers the calling thread's CPU priority to [`EXPORT_NICE`].
fn lower_priority() {
    #[cfg(target_os = "linux")]
    {
        // On Linux a nice value belongs to a thread, so this touches no other.
        let tid = rustix::thread::gettid();
        if let Err(e) = rustix::process::setpriority_process(Some(tid), EXPORT_NICE) {
            tracing::debug!(error = %e, "cannot lower the export thread's priority");
        }
    }
}

fn finish(
    registry: &Registry,
    path: &str,
    started: Instant,
    result: Result<ExportReply, String>,
    reply: Reply,
) {
    let took = started.elapsed();
    registry.record_export(
        took,
        &result
            .as_ref()
            .map(|_| ())
            .map_err(|e| format!("export to {path} failed: {e}")),
    );
    crate::telemetry::record_export(took);
    // The requester logs the outcome (the final and periodic exports, the RPC's client).
    match &result {
        Ok(r) => tracing::debug!(path = %r.path, nodes = r.nodes, ms = r.elapsed_ms, "export done"),
        Err(e) => tracing::debug!(path, error = %e, "export failed"),
    }
    let _ = reply.send(result);
}
