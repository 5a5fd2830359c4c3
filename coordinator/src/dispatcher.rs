//! The dispatcher: the one thread that joins the lease table, the job kinds and the
//! registry.
//!
//! Everything that changes the book or the lease table arrives as an [`Event`] on one
//! channel and is handled in order, so there are no locks around the selector.
//! Results that arrive together are committed together (one durable store write,
//! then the acknowledgements), which is what makes a thousand results a second
//! possible with an fsync per batch. What a lease is lives in [`crate::leases`];
//! what a think job is, in [`crate::think`].

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant, SystemTime};

use stera_book::{Leaf, NodeStore, Selector, Thought};
use stera_proto::v1::{
    CoordinatorMessage, Drain, ExportReply, ExportRequest, Hello, JobResult, Limits, ResultAck,
    ResultRejected, RootLine, StatusReply, Welcome, coordinator_message::Msg,
};
use tokio::sync::{mpsc, oneshot, watch};
use tonic::Status;

pub use crate::leases::StreamId;
use crate::leases::{LeaseId, LeaseTable, Verdict, Voided};
use crate::registry::{Registry, RejectReason, RequeueReason, WorkerEntry, unix_ms};
use crate::think::{Checked, ThinkJobs};

/// Messages to a worker's stream.
pub type StreamTx = mpsc::UnboundedSender<Result<CoordinatorMessage, Status>>;

/// What the dispatcher reacts to.
pub enum Event {
    Connect {
        stream: StreamId,
        hello: Hello,
        tx: StreamTx,
    },
    Disconnect {
        stream: StreamId,
    },
    Result {
        stream: StreamId,
        result: JobResult,
    },
    Heartbeat {
        stream: StreamId,
    },
    GiveBack {
        stream: StreamId,
        lease_id: u64,
        reason: String,
        /// The evaluation failed (counts toward quarantine), rather than the
        /// worker stopping.
        failed: bool,
    },
    Credit {
        stream: StreamId,
        slots: u32,
    },
    Tick,
    Status {
        reply: oneshot::Sender<StatusReply>,
    },
    Export {
        request: ExportRequest,
        reply: oneshot::Sender<Result<ExportReply, String>>,
    },
    /// Stop handing out jobs (shutdown); leases in flight may still complete.
    Drain {
        reason: String,
    },
}

/// Writes a YaneuraOu book from the live book (injected so the dispatcher does not
/// depend on the export code).
pub type ExportFn<S> =
    Box<dyn Fn(&Selector<S>, &ExportRequest) -> Result<ExportReply, String> + Send>;

/// Dispatcher settings.
#[derive(Debug, Clone)]
pub struct DispatchConfig {
    /// A lease is void this long after it was handed out or last renewed.
    pub lease: Duration,
    /// Workers are asked to send heartbeats this often.
    pub heartbeat: Duration,
    /// Evaluation limits sent with every job.
    pub limits: Limits,
    /// Stop handing out jobs once this many positions were thought in this run.
    pub think_limit: Option<u64>,
    /// A position whose results are rejected this many times is quarantined.
    pub max_failures: u32,
    /// The coordinator's version, sent in Welcome.
    pub version: String,
}

/// Progress that the server loop watches.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Progress {
    /// Positions thought (acknowledged) in this run.
    pub thought: u64,
    /// Leases outstanding.
    pub in_flight: usize,
    /// The think limit is reached (or draining) and nothing is in flight.
    pub finished: bool,
}

/// A result accepted into this batch, waiting for the store write.
struct Accepted {
    stream: StreamId,
    id: LeaseId,
    leaf: Leaf,
    thought: Thought,
}

pub struct Dispatcher<S: NodeStore> {
    think: ThinkJobs<S>,
    leases: LeaseTable<Leaf>,
    config: DispatchConfig,
    /// Each open stream's sender.
    streams: HashMap<StreamId, StreamTx>,
    draining: bool,
    export: Option<ExportFn<S>>,
    registry: Arc<Registry>,
    progress: watch::Sender<Progress>,
    started: SystemTime,
}

impl<S: NodeStore> Dispatcher<S> {
    pub fn new(
        selector: Selector<S>,
        config: DispatchConfig,
        export: Option<ExportFn<S>>,
        registry: Arc<Registry>,
        progress: watch::Sender<Progress>,
    ) -> Self {
        Self {
            think: ThinkJobs::new(selector, config.limits, config.think_limit),
            leases: LeaseTable::new(config.lease),
            config,
            streams: HashMap::new(),
            draining: false,
            export,
            registry,
            progress,
            started: SystemTime::now(),
        }
    }

    /// Runs until every sender of `events` is gone. Call on a dedicated thread.
    pub fn run(mut self, mut events: mpsc::UnboundedReceiver<Event>) -> Selector<S> {
        let mut pending: Vec<(StreamId, JobResult)> = Vec::new();
        while let Some(first) = events.blocking_recv() {
            self.handle(first, &mut pending);
            // Take whatever else is already queued so results commit as one batch.
            for _ in 0..4096 {
                match events.try_recv() {
                    Ok(ev) => self.handle(ev, &mut pending),
                    Err(_) => break,
                }
            }
            if !pending.is_empty() {
                self.commit(std::mem::take(&mut pending));
            }
            self.fill_credits();
            self.publish_progress();
        }
        self.think.into_selector()
    }

    fn handle(&mut self, event: Event, pending: &mut Vec<(StreamId, JobResult)>) {
        match event {
            Event::Connect { stream, hello, tx } => self.connect(stream, &hello, tx),
            Event::Disconnect { stream } => self.disconnect(stream),
            Event::Result { stream, result } => pending.push((stream, result)),
            Event::Heartbeat { stream } => self.leases.renew(stream, Instant::now()),
            Event::GiveBack {
                stream,
                lease_id,
                reason,
                failed,
            } => self.give_back(stream, lease_id, &reason, failed),
            Event::Credit { stream, slots } => {
                // The service refuses credits above the slots of Hello; the table
                // bounds them again, so a stream's leases never exceed its Hello.
                if let Some(slots) = self.leases.set_slots(stream, slots)
                    && let Some(mut w) = self.registry.workers.get_mut(&stream)
                {
                    w.slots = slots;
                }
            }
            Event::Tick => self.expire(),
            Event::Status { reply } => {
                let _ = reply.send(self.status());
            }
            Event::Export { request, reply } => {
                let result = self.run_export(&request);
                let _ = reply.send(result);
            }
            Event::Drain { reason } => self.drain(&reason),
        }
    }

    fn run_export(&mut self, request: &ExportRequest) -> Result<ExportReply, String> {
        let started = Instant::now();
        let result = match &self.export {
            Some(f) => f(self.think.selector(), request),
            None => Err("this coordinator has no exporter".to_owned()),
        };
        let took = started.elapsed();
        self.registry.record_export(
            took,
            &result
                .as_ref()
                .map(|_| ())
                .map_err(|e| format!("export to {} failed: {e}", request.path)),
        );
        crate::telemetry::record_export(took);
        // Heartbeats that arrived meanwhile are still queued behind ticks: the lease
        // clock does not run for the time this thread was busy exporting.
        let now = Instant::now();
        let streams: Vec<StreamId> = self.streams.keys().copied().collect();
        for stream in streams {
            self.leases.renew(stream, now);
        }
        result
    }

    fn drain(&mut self, reason: &str) {
        self.draining = true;
        for tx in self.streams.values() {
            let _ = tx.send(Ok(CoordinatorMessage {
                msg: Some(Msg::Drain(Drain {
                    reason: reason.to_owned(),
                })),
            }));
        }
    }

    fn connect(&mut self, stream: StreamId, hello: &Hello, tx: StreamTx) {
        tracing::info!(stream, worker = %hello.worker_id, engine = %hello.engine, slots = hello.slots, "worker connected");
        let welcome = Welcome {
            version: self.config.version.clone(),
            lease_ms: u32::try_from(self.config.lease.as_millis()).unwrap_or(u32::MAX),
            heartbeat_ms: u32::try_from(self.config.heartbeat.as_millis()).unwrap_or(u32::MAX),
        };
        let _ = tx.send(Ok(CoordinatorMessage {
            msg: Some(Msg::Welcome(welcome)),
        }));
        if self.draining {
            let _ = tx.send(Ok(CoordinatorMessage {
                msg: Some(Msg::Drain(Drain {
                    reason: "the coordinator is shutting down".into(),
                })),
            }));
        }
        self.registry.workers.insert(
            stream,
            WorkerEntry {
                worker_id: hello.worker_id.clone(),
                engine: hello.engine.clone(),
                slots: hello.slots,
                in_flight: 0,
                completed: 0,
                connected: Instant::now(),
            },
        );
        self.leases.open_stream(stream, hello.slots);
        self.streams.insert(stream, tx);
    }

    /// A dropped stream gives its leases back at once.
    fn disconnect(&mut self, stream: StreamId) {
        self.streams.remove(&stream);
        let Some(voided) = self.leases.close_stream(stream) else {
            return;
        };
        self.registry.workers.remove(&stream);
        let n = voided.len();
        for v in voided {
            self.think.put_back(&v.job);
        }
        tracing::info!(stream, requeued = n, "worker disconnected");
        self.registry
            .record_requeue(RequeueReason::Disconnected, n as u64);
    }

    fn give_back(&mut self, stream: StreamId, lease_id: LeaseId, reason: &str, failed: bool) {
        let Some(Voided { job: leaf, .. }) = self.leases.give_back(stream, lease_id) else {
            tracing::warn!(
                stream,
                lease_id,
                "give-back of a lease this stream does not hold"
            );
            return;
        };
        self.registry.record_requeue(RequeueReason::GivenBack, 1);
        if failed {
            tracing::warn!(lease_id, reason, sfen = %leaf.sfen(), "evaluation failed on the worker; lease given back");
            self.registry
                .record_problem("failed", format!("{}: {reason}", leaf.sfen()));
            self.count_failure(&leaf);
        } else {
            tracing::debug!(lease_id, reason, "lease given back");
        }
        self.think.put_back(&leaf);
    }

    fn expire(&mut self) {
        for v in self.leases.expire(Instant::now()) {
            let (id, leaf) = (v.id, v.job);
            tracing::warn!(lease = id, stream = v.stream, sfen = %leaf.sfen(), "lease expired; requeued");
            self.registry
                .counters
                .expired
                .fetch_add(1, Ordering::Relaxed);
            self.registry.record_requeue(RequeueReason::Expired, 1);
            self.registry
                .record_problem("expired", format!("lease {id} expired on {}", leaf.sfen()));
            self.think.put_back(&leaf);
        }
    }

    fn reply(&self, stream: StreamId, msg: Msg) {
        if let Some(tx) = self.streams.get(&stream) {
            let _ = tx.send(Ok(CoordinatorMessage { msg: Some(msg) }));
        }
    }

    fn reject(&self, stream: StreamId, lease_id: LeaseId, kind: RejectReason, reason: String) {
        tracing::warn!(stream, lease_id, %reason, "result rejected");
        self.registry.record_rejection(kind, &reason);
        self.reply(stream, Msg::Rejected(ResultRejected { lease_id, reason }));
    }

    /// Validates a batch of results, writes the valid ones durably in one store
    /// write, then acknowledges them.
    fn commit(&mut self, results: Vec<(StreamId, JobResult)>) {
        let (accepted, mut acks) = self.check_batch(results);
        acks.extend(self.store_batch(accepted));
        for (stream, id) in acks {
            self.reply(stream, Msg::Ack(ResultAck { lease_id: id }));
            if let Some(mut w) = self.registry.workers.get_mut(&stream) {
                w.completed += 1;
            }
        }
    }

    /// Resolves each result's lease and checks it: returns what is to be stored and
    /// the acknowledgements that need no store write (repeated results, results for
    /// positions already in the book). Rejections are sent here.
    fn check_batch(
        &mut self,
        results: Vec<(StreamId, JobResult)>,
    ) -> (Vec<Accepted>, Vec<(StreamId, LeaseId)>) {
        let now = u32::try_from(unix_ms(SystemTime::now()) / 1000).unwrap_or(u32::MAX);
        let mut accepted: Vec<Accepted> = Vec::new();
        let mut acks = Vec::new();
        let mut in_batch: HashSet<LeaseId> = HashSet::new();
        for (stream, result) in results {
            let id = result.lease_id;
            if in_batch.contains(&id) {
                acks.push((stream, id));
                continue;
            }
            let leaf = match self.leases.resolve(stream, id) {
                Verdict::Done => {
                    acks.push((stream, id));
                    continue;
                }
                Verdict::Foreign => {
                    let why = format!("lease {id} belongs to another worker");
                    self.reject(stream, id, RejectReason::ForeignLease, why);
                    continue;
                }
                Verdict::Unknown => {
                    let why = format!("unknown or expired lease {id}");
                    self.reject(stream, id, RejectReason::UnknownLease, why);
                    continue;
                }
                Verdict::Held(leaf) | Verdict::Voided(leaf) => leaf,
            };
            match self.think.check(&leaf, &result, now) {
                Checked::Duplicate => {
                    // Another worker's result for the same position is already in.
                    self.think.put_back(&leaf);
                    self.registry
                        .counters
                        .duplicates
                        .fetch_add(1, Ordering::Relaxed);
                    self.leases.complete(id);
                    acks.push((stream, id));
                }
                Checked::Valid(thought) => {
                    in_batch.insert(id);
                    accepted.push(Accepted {
                        stream,
                        id,
                        leaf,
                        thought,
                    });
                }
                Checked::Invalid(reason) => {
                    self.count_failure(&leaf);
                    self.think.put_back(&leaf);
                    self.reject(stream, id, RejectReason::Invalid, reason);
                }
            }
        }
        (accepted, acks)
    }

    /// Writes the accepted results in one durable store write; returns their
    /// acknowledgements, or rejects them all when the write fails.
    fn store_batch(&mut self, accepted: Vec<Accepted>) -> Vec<(StreamId, LeaseId)> {
        if accepted.is_empty() {
            return Vec::new();
        }
        let acks: Vec<(StreamId, LeaseId)> = accepted.iter().map(|a| (a.stream, a.id)).collect();
        let items: Vec<(Leaf, Thought)> =
            accepted.into_iter().map(|a| (a.leaf, a.thought)).collect();
        match self.think.store(items) {
            Ok(stored) => {
                self.registry
                    .counters
                    .thought
                    .fetch_add(stored as u64, Ordering::Relaxed);
                for (_, id) in &acks {
                    self.leases.complete(*id);
                }
                acks
            }
            Err(e) => {
                // Nothing of the batch is in the book: reject all.
                tracing::error!(error = %e, "storing results failed");
                for (stream, id) in acks {
                    self.reject(
                        stream,
                        id,
                        RejectReason::StoreFailed,
                        format!("the coordinator could not store the result: {e}"),
                    );
                }
                Vec::new()
            }
        }
    }

    /// Counts a failure (a rejected result, an evaluation the worker gave up on)
    /// against its position; quarantines it after `max_failures` by banning the
    /// edge that leads to it (persisted). The caller puts the leaf back.
    fn count_failure(&mut self, leaf: &Leaf) {
        if !self
            .leases
            .count_failure(leaf.key.0, self.config.max_failures)
        {
            return;
        }
        self.registry
            .counters
            .quarantined
            .fetch_add(1, Ordering::Relaxed);
        tracing::error!(sfen = %leaf.sfen(), failures = self.config.max_failures, "position quarantined");
        self.registry.record_problem(
            "quarantined",
            format!(
                "{} after {} failed evaluations",
                leaf.sfen(),
                self.config.max_failures
            ),
        );
        if let Err(e) = self.think.quarantine(leaf) {
            tracing::error!(error = %e, "could not persist the quarantine ban");
        }
    }

    /// Hands out jobs to every stream with free slots (credit-based flow).
    fn fill_credits(&mut self) {
        if self.draining {
            return;
        }
        let mut wanting = self.leases.free_slots();
        let total: usize = wanting.iter().map(|(_, n)| n).sum();
        let total = total.min(self.think.room(self.leases.len()));
        if total == 0 {
            return;
        }
        let started = Instant::now();
        let leaves = match self.think.select(total) {
            Ok(l) => l,
            Err(e) => {
                tracing::error!(error = %e, "selection failed");
                self.registry
                    .record_problem("selection", format!("selection failed: {e}"));
                return;
            }
        };
        let took = started.elapsed();
        self.registry.record_selection(took, leaves.len());
        crate::telemetry::record_selection(took);
        let now = Instant::now();
        let deadline_ms = unix_ms(SystemTime::now() + self.leases.lease_time());
        let mut leaves = leaves.into_iter();
        // Round robin so one stream does not starve the others.
        'outer: loop {
            let mut gave = false;
            for (stream, free) in &mut wanting {
                if *free == 0 {
                    continue;
                }
                let Some(leaf) = leaves.next() else {
                    break 'outer;
                };
                let id = self.leases.grant(*stream, leaf.clone(), now);
                let job = self.think.job(id, &leaf, deadline_ms);
                self.reply(*stream, Msg::Job(job));
                *free -= 1;
                gave = true;
            }
            if !gave {
                break;
            }
        }
        for leaf in leaves {
            // More leaves than free slots cannot happen, but never leak in-flight marks.
            self.think.put_back(&leaf);
        }
    }

    fn publish_progress(&mut self) {
        for (id, held) in self.leases.streams() {
            if let Some(mut w) = self.registry.workers.get_mut(&id) {
                w.in_flight = u32::try_from(held).unwrap_or(u32::MAX);
            }
        }
        let book = self.think.selector().book();
        let in_flight = self.leases.len();
        self.registry.set_book(
            book.len() as u64,
            book.value_count() as u64,
            in_flight as u64,
        );
        let finished = (self.think.limit_reached(in_flight) || self.draining)
            && in_flight == 0
            && (self.think.limit_done() || self.draining);
        let p = Progress {
            thought: self.think.thought(),
            in_flight,
            finished,
        };
        self.progress.send_if_modified(|old| {
            let changed = *old != p;
            *old = p;
            changed
        });
    }

    fn status(&self) -> StatusReply {
        let selector = self.think.selector();
        let book = selector.book();
        let roots: Vec<RootLine> = selector
            .root_lines()
            .into_iter()
            .map(|(root, pv, value)| RootLine {
                root,
                pv: pv.iter().map(ToString::to_string).collect(),
                value,
            })
            .collect();
        let counters = &self.registry.counters;
        StatusReply {
            version: self.config.version.clone(),
            nodes: book.len() as u64,
            leaf_edges: book.value_count() as u64,
            in_flight: self.leases.len() as u64,
            quarantined: counters.quarantined.load(Ordering::Relaxed),
            rejected: counters.rejected.load(Ordering::Relaxed),
            thoughts_per_second: self.registry.thought_rate(),
            roots,
            workers: self.registry.worker_status(),
            started_unix_ms: unix_ms(self.started),
        }
    }
}
