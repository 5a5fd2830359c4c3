//! The dispatcher: the one thread that owns the book's [`Selector`] and every lease.
//!
//! Everything that changes the book or the lease table arrives as an [`Event`] on one
//! channel and is handled in order, so there are no locks around the selector.
//! Results that arrive together are committed together (one durable store write,
//! then the acknowledgements), which is what makes a thousand results a second
//! possible with an fsync per batch.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use stera_book::{Leaf, NodeStore, Selector};
use stera_proto::v1::{
    CoordinatorMessage, Drain, ExportReply, ExportRequest, Hello, Job, JobResult, Limits,
    ResultAck, ResultRejected, RootLine, StatusReply, Welcome, coordinator_message::Msg,
};
use tokio::sync::{mpsc, oneshot, watch};
use tonic::Status;

use crate::registry::{Registry, RejectReason, RequeueReason, WorkerEntry};
use crate::validate::thought_from_result;

/// Identifies one Work stream (one connection of one worker).
pub type StreamId = u64;

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

struct Lease {
    leaf: Leaf,
    stream: StreamId,
    deadline: Instant,
}

struct StreamState {
    tx: StreamTx,
    /// Slots announced in Hello: the most leases this stream can ever hold.
    announced: u32,
    slots: u32,
    leases: HashSet<u64>,
}

/// How many lease ids of finished or voided leases are remembered, so that late
/// and duplicate results get a precise answer.
const REMEMBERED_LEASES: usize = 200_000;

pub struct Dispatcher<S: NodeStore> {
    selector: Selector<S>,
    config: DispatchConfig,
    streams: HashMap<StreamId, StreamState>,
    leases: HashMap<u64, Lease>,
    /// Leases voided by expiry or disconnect: a late result may still be used.
    voided: HashMap<u64, Leaf>,
    voided_order: VecDeque<u64>,
    /// Leases whose result is in the book: a repeated result is acknowledged again.
    done: HashSet<u64>,
    done_order: VecDeque<u64>,
    failures: HashMap<u128, u32>,
    quarantined: u64,
    rejected: u64,
    next_lease: u64,
    thought: u64,
    draining: bool,
    export: Option<ExportFn<S>>,
    registry: Arc<Registry>,
    progress: watch::Sender<Progress>,
    started: SystemTime,
}

fn unix_ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
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
            selector,
            config,
            streams: HashMap::new(),
            leases: HashMap::new(),
            voided: HashMap::new(),
            voided_order: VecDeque::new(),
            done: HashSet::new(),
            done_order: VecDeque::new(),
            failures: HashMap::new(),
            quarantined: 0,
            rejected: 0,
            next_lease: 1,
            thought: 0,
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
        self.selector
    }

    fn handle(&mut self, event: Event, pending: &mut Vec<(StreamId, JobResult)>) {
        match event {
            Event::Connect { stream, hello, tx } => self.connect(stream, &hello, tx),
            Event::Disconnect { stream } => self.disconnect(stream),
            Event::Result { stream, result } => pending.push((stream, result)),
            Event::Heartbeat { stream } => self.renew(stream),
            Event::GiveBack {
                stream,
                lease_id,
                reason,
                failed,
            } => self.give_back(stream, lease_id, &reason, failed),
            Event::Credit { stream, slots } => {
                // The service refuses credits above the slots of Hello; never trust
                // that alone, a stream's leases are bounded here.
                let Some(s) = self.streams.get_mut(&stream) else {
                    return;
                };
                let slots = slots.min(s.announced);
                s.slots = slots;
                if let Some(mut w) = self.registry.workers.get_mut(&stream) {
                    w.slots = slots;
                }
            }
            Event::Tick => self.expire(),
            Event::Status { reply } => {
                let _ = reply.send(self.status());
            }
            Event::Export { request, reply } => {
                let started = Instant::now();
                let result = match &self.export {
                    Some(f) => f(&self.selector, &request),
                    None => Err("this coordinator has no exporter".to_owned()),
                };
                self.registry.record_export(
                    started.elapsed(),
                    &result
                        .as_ref()
                        .map(|_| ())
                        .map_err(|e| format!("export to {} failed: {e}", request.path)),
                );
                let _ = reply.send(result);
            }
            Event::Drain { reason } => {
                self.draining = true;
                for s in self.streams.values() {
                    let _ = s.tx.send(Ok(CoordinatorMessage {
                        msg: Some(Msg::Drain(Drain {
                            reason: reason.clone(),
                        })),
                    }));
                }
            }
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
        self.streams.insert(
            stream,
            StreamState {
                tx,
                announced: hello.slots,
                slots: hello.slots,
                leases: HashSet::new(),
            },
        );
    }

    /// A dropped stream gives its leases back at once.
    fn disconnect(&mut self, stream: StreamId) {
        let Some(state) = self.streams.remove(&stream) else {
            return;
        };
        self.registry.workers.remove(&stream);
        let n = state.leases.len();
        for id in state.leases {
            if let Some(lease) = self.leases.remove(&id) {
                self.void(id, lease.leaf);
            }
        }
        tracing::info!(stream, requeued = n, "worker disconnected");
        self.registry
            .record_requeue(RequeueReason::Disconnected, n as u64);
    }

    /// Puts a lease's leaf back for selection, remembering it for a late result.
    fn void(&mut self, id: u64, leaf: Leaf) {
        if let Err(e) = self.selector.abandon(&leaf) {
            tracing::debug!(lease = id, error = %e, "abandon");
        }
        self.voided.insert(id, leaf);
        self.voided_order.push_back(id);
        while self.voided_order.len() > REMEMBERED_LEASES {
            if let Some(old) = self.voided_order.pop_front() {
                self.voided.remove(&old);
            }
        }
    }

    fn renew(&mut self, stream: StreamId) {
        let deadline = Instant::now() + self.config.lease;
        if let Some(s) = self.streams.get(&stream) {
            for id in &s.leases {
                if let Some(l) = self.leases.get_mut(id) {
                    l.deadline = deadline;
                }
            }
        }
    }

    fn give_back(&mut self, stream: StreamId, lease_id: u64, reason: &str, failed: bool) {
        let owned = self
            .leases
            .get(&lease_id)
            .is_some_and(|l| l.stream == stream);
        if !owned {
            tracing::warn!(
                stream,
                lease_id,
                "give-back of a lease this stream does not hold"
            );
            return;
        }
        if let Some(lease) = self.leases.remove(&lease_id) {
            self.registry.record_requeue(RequeueReason::GivenBack, 1);
            if let Some(s) = self.streams.get_mut(&stream) {
                s.leases.remove(&lease_id);
            }
            if failed {
                tracing::warn!(lease_id, reason, sfen = %lease.leaf.sfen(), "evaluation failed on the worker; lease given back");
                self.registry
                    .record_problem("failed", format!("{}: {reason}", lease.leaf.sfen()));
                self.count_failure(&lease.leaf);
            } else {
                tracing::debug!(lease_id, reason, "lease given back");
            }
            self.void(lease_id, lease.leaf);
        }
    }

    fn expire(&mut self) {
        let now = Instant::now();
        let expired: Vec<u64> = self
            .leases
            .iter()
            .filter(|(_, l)| l.deadline <= now)
            .map(|(id, _)| *id)
            .collect();
        for id in expired {
            if let Some(lease) = self.leases.remove(&id) {
                tracing::warn!(lease = id, stream = lease.stream, sfen = %lease.leaf.sfen(), "lease expired; requeued");
                if let Some(s) = self.streams.get_mut(&lease.stream) {
                    s.leases.remove(&id);
                }
                self.registry
                    .counters
                    .expired
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                self.registry.record_requeue(RequeueReason::Expired, 1);
                self.registry.record_problem(
                    "expired",
                    format!("lease {id} expired on {}", lease.leaf.sfen()),
                );
                self.void(id, lease.leaf);
            }
        }
    }

    fn reply(&self, stream: StreamId, msg: Msg) {
        if let Some(s) = self.streams.get(&stream) {
            let _ = s.tx.send(Ok(CoordinatorMessage { msg: Some(msg) }));
        }
    }

    fn reject(&mut self, stream: StreamId, lease_id: u64, kind: RejectReason, reason: String) {
        tracing::warn!(stream, lease_id, %reason, "result rejected");
        self.rejected += 1;
        self.registry.record_rejection(kind, &reason);
        self.reply(stream, Msg::Rejected(ResultRejected { lease_id, reason }));
    }

    fn remember_done(&mut self, id: u64) {
        self.done.insert(id);
        self.done_order.push_back(id);
        while self.done_order.len() > REMEMBERED_LEASES {
            if let Some(old) = self.done_order.pop_front() {
                self.done.remove(&old);
            }
        }
    }

    /// Validates a batch of results, writes the valid ones durably in one store
    /// write, then acknowledges them.
    fn commit(&mut self, results: Vec<(StreamId, JobResult)>) {
        let now = u32::try_from(unix_ms(SystemTime::now()) / 1000).unwrap_or(u32::MAX);
        let mut batch = Vec::new();
        let mut acks: Vec<(StreamId, u64)> = Vec::new();
        let mut in_batch: HashSet<u64> = HashSet::new();
        for (stream, result) in results {
            let id = result.lease_id;
            if self.done.contains(&id) || in_batch.contains(&id) {
                acks.push((stream, id));
                continue;
            }
            let leaf = match self.leases.get(&id) {
                Some(l) if l.stream == stream => l.leaf.clone(),
                Some(_) => {
                    self.reject(
                        stream,
                        id,
                        RejectReason::ForeignLease,
                        format!("lease {id} belongs to another worker"),
                    );
                    continue;
                }
                None => match self.voided.get(&id) {
                    Some(leaf) => leaf.clone(),
                    None => {
                        self.reject(
                            stream,
                            id,
                            RejectReason::UnknownLease,
                            format!("unknown or expired lease {id}"),
                        );
                        continue;
                    }
                },
            };
            // Whatever the verdict, the worker's slot is free again.
            if let Some(lease) = self.leases.remove(&id)
                && let Some(s) = self.streams.get_mut(&lease.stream)
            {
                s.leases.remove(&id);
            }
            if self.selector.book().contains(leaf.key) {
                // Another worker's result for the same position is already in.
                let _ = self.selector.abandon(&leaf);
                self.registry
                    .counters
                    .duplicates
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                self.remember_done(id);
                acks.push((stream, id));
                continue;
            }
            match thought_from_result(&leaf.position, &result, now) {
                Ok(thought) => {
                    acks.push((stream, id));
                    in_batch.insert(id);
                    batch.push((id, leaf, thought));
                }
                Err(reason) => {
                    self.count_failure(&leaf);
                    let _ = self.selector.abandon(&leaf);
                    self.reject(stream, id, RejectReason::Invalid, reason);
                }
            }
        }
        if !batch.is_empty() {
            let ids: Vec<u64> = batch.iter().map(|(id, _, _)| *id).collect();
            let items: Vec<_> = batch
                .into_iter()
                .map(|(_, leaf, thought)| (leaf, thought))
                .collect();
            match self.selector.complete_batch(items) {
                Ok(nodes) => {
                    self.thought += nodes.len() as u64;
                    self.registry
                        .counters
                        .thought
                        .fetch_add(nodes.len() as u64, std::sync::atomic::Ordering::Relaxed);
                    for id in ids {
                        self.voided.remove(&id);
                        self.remember_done(id);
                    }
                }
                Err(e) => {
                    // Nothing of the batch is in the book: reject all, requeue their leaves.
                    tracing::error!(error = %e, "storing results failed");
                    let failed: HashSet<u64> = ids.into_iter().collect();
                    for (stream, id) in acks.iter().filter(|(_, id)| failed.contains(id)) {
                        self.reject(
                            *stream,
                            *id,
                            RejectReason::StoreFailed,
                            format!("the coordinator could not store the result: {e}"),
                        );
                    }
                    acks.retain(|(_, id)| !failed.contains(id));
                }
            }
        }
        for (stream, id) in acks {
            self.reply(stream, Msg::Ack(ResultAck { lease_id: id }));
            if let Some(mut w) = self.registry.workers.get_mut(&stream) {
                w.completed += 1;
            }
        }
    }

    /// Counts a failure (a rejected result, an evaluation the worker gave up on)
    /// against its position; quarantines it after `max_failures` by banning the
    /// edge that leads to it (persisted). The caller puts the leaf back.
    fn count_failure(&mut self, leaf: &Leaf) {
        let n = self.failures.entry(leaf.key.0).or_insert(0);
        *n += 1;
        if *n == self.config.max_failures {
            self.quarantined += 1;
            self.registry
                .counters
                .quarantined
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            tracing::error!(sfen = %leaf.sfen(), failures = self.config.max_failures, "position quarantined");
            self.registry.record_problem(
                "quarantined",
                format!(
                    "{} after {} rejected results",
                    leaf.sfen(),
                    self.config.max_failures
                ),
            );
            if let Some((parent, mv)) = leaf.parent
                && let Err(e) = self.selector.ban(parent, mv)
            {
                tracing::error!(error = %e, "could not persist the quarantine ban");
            }
        }
    }

    fn limit_reached(&self) -> bool {
        self.config
            .think_limit
            .is_some_and(|limit| self.thought + self.leases.len() as u64 >= limit)
    }

    /// Hands out jobs to every stream with free slots (credit-based flow).
    fn fill_credits(&mut self) {
        if self.draining {
            return;
        }
        let mut wanting: Vec<(StreamId, usize)> = self
            .streams
            .iter()
            .filter_map(|(id, s)| {
                let free = (s.slots as usize).saturating_sub(s.leases.len());
                (free > 0).then_some((*id, free))
            })
            .collect();
        if wanting.is_empty() {
            return;
        }
        wanting.sort_unstable();
        let mut total: usize = wanting.iter().map(|(_, n)| n).sum();
        if let Some(limit) = self.config.think_limit {
            let room = limit.saturating_sub(self.thought + self.leases.len() as u64);
            total = total.min(usize::try_from(room).unwrap_or(usize::MAX));
        }
        if total == 0 {
            return;
        }
        let started = Instant::now();
        let leaves = match self.selector.select(total) {
            Ok(l) => l,
            Err(e) => {
                tracing::error!(error = %e, "selection failed");
                self.registry
                    .record_problem("selection", format!("selection failed: {e}"));
                return;
            }
        };
        self.registry
            .record_selection(started.elapsed(), leaves.len());
        let deadline = Instant::now() + self.config.lease;
        let deadline_ms = unix_ms(SystemTime::now() + self.config.lease);
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
                let id = self.next_lease;
                self.next_lease += 1;
                let job = Job {
                    lease_id: id,
                    sfen: leaf.sfen(),
                    limits: Some(self.config.limits),
                    deadline_unix_ms: deadline_ms,
                };
                if let Some(s) = self.streams.get_mut(stream) {
                    s.leases.insert(id);
                    let _ = s.tx.send(Ok(CoordinatorMessage {
                        msg: Some(Msg::Job(job)),
                    }));
                }
                self.leases.insert(
                    id,
                    Lease {
                        leaf,
                        stream: *stream,
                        deadline,
                    },
                );
                *free -= 1;
                gave = true;
            }
            if !gave {
                break;
            }
        }
        for leaf in leaves {
            // More leaves than free slots cannot happen, but never leak in-flight marks.
            let _ = self.selector.abandon(&leaf);
        }
    }

    fn publish_progress(&mut self) {
        for (id, s) in &self.streams {
            if let Some(mut w) = self.registry.workers.get_mut(id) {
                w.in_flight = u32::try_from(s.leases.len()).unwrap_or(u32::MAX);
            }
        }
        let book = self.selector.book();
        self.registry.set_book(
            book.len() as u64,
            book.value_count() as u64,
            self.leases.len() as u64,
        );
        let finished = (self.limit_reached() || self.draining)
            && self.leases.is_empty()
            && self
                .config
                .think_limit
                .is_none_or(|l| self.thought >= l || self.draining);
        let p = Progress {
            thought: self.thought,
            in_flight: self.leases.len(),
            finished,
        };
        self.progress.send_if_modified(|old| {
            let changed = *old != p;
            *old = p;
            changed
        });
    }

    fn status(&self) -> StatusReply {
        let book = self.selector.book();
        let roots: Vec<RootLine> = self
            .selector
            .root_lines()
            .into_iter()
            .map(|(root, pv, value)| RootLine {
                root,
                pv: pv.iter().map(ToString::to_string).collect(),
                value,
            })
            .collect();
        StatusReply {
            version: self.config.version.clone(),
            nodes: book.len() as u64,
            leaf_edges: book.value_count() as u64,
            in_flight: self.leases.len() as u64,
            quarantined: self.quarantined,
            rejected: self.rejected,
            thoughts_per_second: self.registry.thought_rate(),
            roots,
            workers: self.registry.worker_status(),
            started_unix_ms: unix_ms(self.started),
        }
    }

    /// Gives back the selector (for a final export and flush).
    pub fn into_selector(self) -> Selector<S> {
        self.selector
    }
}
