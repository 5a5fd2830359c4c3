//! The dispatcher: the one thread that joins the lease table, the job kinds and the
//! registry.
//!
//! Everything that changes the book or the lease table arrives as an [`Event`] on one
//! channel and is handled in order, so there are no locks around the selector.
//! Results that arrive together are committed together (one durable store write,
//! then the acknowledgements), which is what makes a thousand results a second
//! possible with an fsync per batch. What a lease is lives in [`crate::leases`];
//! what a think job is, in [`crate::think`]; what a play job is, in [`crate::play`];
//! a client's search for one move, in [`crate::search`].
//! A lease carries a [`Ticket`], and the ticket's kind decides which module a
//! result, an expiry or a give-back goes to.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant, SystemTime};

use stera_book::{Leaf, LiveBook, NodeStore, Selector, Thought};
use stera_proto::v1::{
    CoordinatorMessage, Drain, ExportRequest, Hello, JobResult, Limits, PlayResult, ResultAck,
    ResultRejected, RootLine, StatusReply, Welcome, coordinator_message::Msg, job_result,
};
use tokio::sync::{mpsc, oneshot, watch};
use tonic::Status;

use crate::blame::Blame;
pub use crate::leases::StreamId;
use crate::leases::{Job as LeasedJob, LeaseId, LeaseTable, Verdict, Voided};
use crate::maintenance::queue::{BackupReplyTx, ExportReplyTx};
use crate::maintenance::{BackupFn, CompactFn, ExportFn, MaintenanceQueue, Preparers};
use crate::play::{GameTicket, PlayJobs, PlaySettings};
use crate::registry::{Registry, RejectReason, RequeueReason, WorkerEntry, unix_ms};
use crate::search::{SearchAnswer, SearchJobs, SearchTicket};
use crate::store_space::StoreSpace;
use crate::think::{Checked, ParkedLeaf, ThinkJobs};

/// What a lease is for: the payload the lease table carries without looking in.
// Think tickets are nearly all of them and the lease table held leaves unboxed
// before; boxing them would cost an allocation per lease for nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone)]
pub enum Ticket {
    /// A leaf to evaluate.
    Think(Leaf),
    /// A game to play.
    Play(GameTicket),
    /// One move for a client's game.
    Search(SearchTicket),
}

/// What the lease table keeps of a voided ticket: a think leaf without its game
/// history; a play ticket (small); of a search, nothing (its move history may be
/// long, and the memories of up to 200,000 voided leases stay: a search was put
/// back when its lease was voided, so a late answer is not needed).
#[derive(Debug, Clone)]
pub enum TicketMemo {
    Think(ParkedLeaf),
    Play(GameTicket),
    Search,
}

impl TicketMemo {
    /// The ticket again, for a late result (a think leaf's position rebuilt).
    fn into_ticket(self) -> Result<Ticket, String> {
        Ok(match self {
            TicketMemo::Think(parked) => Ticket::Think(parked.unpark()?),
            TicketMemo::Play(game) => Ticket::Play(game),
            TicketMemo::Search => {
                return Err(
                    "a late answer to a search whose lease ended: the search was handed out again"
                        .to_owned(),
                );
            }
        })
    }
}

impl LeasedJob for Ticket {
    type Memo = TicketMemo;

    fn memo(&self) -> TicketMemo {
        match self {
            Ticket::Think(leaf) => TicketMemo::Think(ParkedLeaf::park(leaf)),
            Ticket::Play(game) => TicketMemo::Play(game.clone()),
            Ticket::Search(_) => TicketMemo::Search,
        }
    }
}

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
        reply: ExportReplyTx,
    },
    /// Copy the store to `path` (a new directory).
    Backup {
        path: std::path::PathBuf,
        reply: BackupReplyTx,
    },
    /// A client asks for one move of its game (rpc Search).
    Search {
        request: stera_proto::v1::SearchRequest,
        answer: SearchAnswer,
    },
    /// Stop handing out jobs (shutdown); leases in flight may still complete.
    Drain {
        reason: String,
    },
}

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
    /// A position whose evaluations fail this many times, on more than one
    /// worker, is quarantined (see [`crate::blame`]).
    pub max_failures: u32,
    /// A worker whose jobs fail this many times in a row is refused.
    pub max_worker_failures: u32,
    /// The coordinator's version, sent in Welcome.
    pub version: String,
    /// Games: share of the slots, target, limits, rules.
    pub play: PlaySettings,
}

/// Progress that the server loop watches.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Progress {
    /// Positions thought (acknowledged) in this run.
    pub thought: u64,
    /// Leases outstanding.
    pub in_flight: usize,
    /// The think limit is reached (or draining, or stalled) and nothing is in
    /// flight.
    pub finished: bool,
    /// The selector had nothing to hand out while nothing was in flight: every
    /// candidate is thought, banned or quarantined. The run cannot go on.
    pub stalled: bool,
}

/// A result accepted into this batch, waiting for the store write.
struct Accepted {
    stream: StreamId,
    id: LeaseId,
    leaf: Leaf,
    thought: Thought,
    /// Accepted by its position, its lease unknown (see [`EARLIEST_LEASE`]).
    by_position: bool,
    /// Its leaf is in flight under the lease (not voided, not by position):
    /// released for selection again if the store write fails.
    held: bool,
}

/// Lease ids start from a coordinator's clock (`unix_ms << 16`, from 2020 on): an
/// unknown id below this was never handed out by any run (a made-up or corrupt id),
/// so its result stays rejected even when it names a position. A think result for
/// an unknown id at or above it (a lease of an earlier run, before a restart, or
/// one forgotten) is checked against the position it names (`ThinkResult.sfen`)
/// and stored if that position is not in the book yet: finished work survives a
/// restart.
const EARLIEST_LEASE: LeaseId = 1_577_836_800_000 << 16;

pub struct Dispatcher<S: NodeStore> {
    /// The book every kind reads and writes: selection reads it, think results
    /// and games are stored into it.
    live: LiveBook<S>,
    think: ThinkJobs,
    play: PlayJobs,
    search: SearchJobs,
    leases: LeaseTable<Ticket>,
    /// Failures per worker and per position.
    blame: Blame,
    config: DispatchConfig,
    /// Each open stream's sender.
    streams: HashMap<StreamId, StreamTx>,
    draining: bool,
    maintenance: MaintenanceQueue,
    prepare: Preparers<S>,
    registry: Arc<Registry>,
    progress: watch::Sender<Progress>,
    started: SystemTime,
    /// The store's free space; without it the store is taken to be writable.
    space: Option<StoreSpace>,
    /// Set at shutdown when the job on the maintenance thread is to be cut off
    /// rather than waited for.
    abandon_maintenance: Arc<std::sync::atomic::AtomicBool>,
    /// Nothing could be selected while nothing was in flight (see [`Progress`]).
    stalled: bool,
    /// The stream that got the last job (the round robin starts after it).
    last_served: StreamId,
    /// Selections in a row that found nothing with nothing in flight (a second
    /// one, on a later event, confirms a stall: a selection cut short by stale
    /// bounds finds nothing once and is fine the next time).
    empty_selections: u32,
}

impl<S: NodeStore> Dispatcher<S> {
    /// # Errors
    /// A root of the book that is not a position, or game rules that make no sense.
    pub fn new(
        live: LiveBook<S>,
        selector: Selector,
        config: DispatchConfig,
        export: Option<ExportFn<S>>,
        registry: Arc<Registry>,
        progress: watch::Sender<Progress>,
    ) -> Result<Self, String> {
        let play = PlayJobs::new(config.play.clone(), &live.config().roots)?;
        match live.store().quarantined() {
            Ok(q) => registry
                .counters
                .quarantined_in_store
                .store(q.len() as u64, Ordering::Relaxed),
            Err(e) => tracing::warn!(error = %e, "cannot read the quarantined positions"),
        }
        if let Ok(games) = live.store().games_recorded() {
            registry
                .counters
                .games_stored
                .store(games, Ordering::Relaxed);
        }
        // Lease ids start from the clock, so a result for a lease of an earlier run
        // of this coordinator never meets a new lease with the same id.
        let first_lease = unix_ms(SystemTime::now()) << 16;
        Ok(Self {
            live,
            think: ThinkJobs::new(selector, config.limits, config.think_limit),
            play,
            search: SearchJobs::new(config.limits),
            leases: LeaseTable::starting_at(config.lease, first_lease),
            blame: Blame::new(config.max_failures, config.max_worker_failures),
            config,
            streams: HashMap::new(),
            draining: false,
            maintenance: MaintenanceQueue::default(),
            prepare: Preparers {
                export,
                ..Preparers::default()
            },
            registry,
            progress,
            started: SystemTime::now(),
            space: None,
            abandon_maintenance: Arc::default(),
            stalled: false,
            empty_selections: 0,
            last_served: 0,
        })
    }

    /// When `flag` is set at shutdown, [`Dispatcher::run`] returns without waiting
    /// for the job on the maintenance thread (a second signal during a long
    /// final export).
    #[must_use]
    pub fn abandon_maintenance_on(mut self, flag: Arc<std::sync::atomic::AtomicBool>) -> Self {
        self.abandon_maintenance = flag;
        self
    }

    /// Lets the Backup RPC copy the store with `backup`.
    #[must_use]
    pub fn with_backup(mut self, backup: BackupFn<S>) -> Self {
        self.prepare.backup = Some(backup);
        self
    }

    /// Holds back think and play jobs while `space` says the store's disk is full.
    #[must_use]
    pub fn with_store_space(mut self, space: StoreSpace) -> Self {
        self.space = Some(space);
        self
    }

    /// Compacts the store whenever `compact` says so and the maintenance thread
    /// is idle.
    #[must_use]
    pub fn with_compaction(mut self, compact: CompactFn<S>) -> Self {
        self.prepare.compact = Some(compact);
        self
    }

    /// Runs until every sender of `events` is gone. Call on a dedicated thread.
    pub fn run(mut self, mut events: mpsc::UnboundedReceiver<Event>) -> LiveBook<S> {
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
            self.maintenance
                .poll(&self.live, &mut self.prepare, &self.registry);
            self.fill_credits();
            self.publish_progress();
        }
        // A backup or export under way is finished, not cut off, and nothing
        // holds the store when the live book is handed back; unless shutdown was
        // told to abandon it (the caller flushes the store then).
        if self.abandon_maintenance.load(Ordering::Acquire) {
            tracing::warn!("the job on the maintenance thread is abandoned");
        } else {
            self.maintenance.join();
        }
        self.live
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
            Event::Export { request, reply } => self.maintenance.submit_export(request, reply),
            Event::Backup { path, reply } => self.maintenance.submit_backup(path, reply),
            Event::Search { request, answer } => {
                if self.draining {
                    let _ =
                        answer.send(Err(Status::unavailable("the coordinator is shutting down")));
                } else {
                    self.search.submit(request, answer, Instant::now());
                }
            }
            Event::Drain { reason } => self.drain(&reason),
        }
    }

    fn drain(&mut self, reason: &str) {
        self.draining = true;
        self.search
            .refuse_all(&Status::unavailable("the coordinator is shutting down"));
        for tx in self.streams.values() {
            let _ = tx.send(Ok(CoordinatorMessage {
                msg: Some(Msg::Drain(Drain {
                    reason: reason.to_owned(),
                })),
            }));
        }
    }

    fn connect(&mut self, stream: StreamId, hello: &Hello, tx: StreamTx) {
        if self.blame.is_refused(&hello.worker_id) {
            tracing::warn!(stream, worker = %hello.worker_id, "a refused worker tried to connect again; refused");
            let _ = tx.send(Err(Status::failed_precondition(format!(
                "worker `{}` was refused by this coordinator run because its engine kept failing; fix the engine, then restart the coordinator or use another --worker-id",
                hello.worker_id
            ))));
            return;
        }
        tracing::info!(stream, worker = %hello.worker_id, engine = %hello.engine, slots = hello.slots, "worker connected");
        self.blame.connect(stream, &hello.worker_id);
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
        self.blame.disconnect(stream);
        let Some(voided) = self.leases.close_stream(stream) else {
            return;
        };
        self.registry.workers.remove(&stream);
        let n = voided.len();
        for v in voided {
            self.put_back(&v.job);
        }
        tracing::info!(stream, requeued = n, "worker disconnected");
        self.registry
            .record_requeue(RequeueReason::Disconnected, n as u64);
    }

    fn give_back(&mut self, stream: StreamId, lease_id: LeaseId, reason: &str, failed: bool) {
        let Some(Voided { job: ticket, .. }) = self.leases.give_back(stream, lease_id) else {
            tracing::warn!(
                stream,
                lease_id,
                "give-back of a lease this stream does not hold"
            );
            return;
        };
        self.registry.record_requeue(RequeueReason::GivenBack, 1);
        if failed {
            let what = describe(&ticket);
            match &ticket {
                Ticket::Think(_) => {
                    tracing::warn!(lease_id, reason, job = %what, "evaluation failed on the worker; lease given back");
                }
                Ticket::Play(_) => {
                    tracing::warn!(lease_id, reason, job = %what, "game failed on the worker; lease given back");
                }
                Ticket::Search(_) => {
                    tracing::warn!(lease_id, reason, job = %what, "search failed on the worker; lease given back");
                }
            }
            self.registry
                .record_problem("failed", format!("{what}: {reason}"));
            let position = match &ticket {
                Ticket::Think(leaf) => Some(leaf),
                _ => None,
            };
            // A refused worker's other leases are put back with its stream.
            self.count_failure(stream, position, reason);
            if let Ticket::Search(search) = &ticket {
                self.search.put_back(search, true, reason);
                return;
            }
        } else {
            tracing::debug!(lease_id, reason, "lease given back");
        }
        self.put_back(&ticket);
    }

    /// A lease ended without a result that counts: its job goes back to its kind.
    fn put_back(&mut self, ticket: &Ticket) {
        match ticket {
            Ticket::Think(leaf) => ThinkJobs::put_back(&mut self.live, leaf),
            Ticket::Play(_) => self.play.put_back(Instant::now()),
            Ticket::Search(search) => self.search.put_back(search, false, ""),
        }
    }

    fn expire(&mut self) {
        self.search.drop_cancelled();
        for v in self.leases.expire(Instant::now()) {
            let (id, ticket) = (v.id, v.job);
            let what = describe(&ticket);
            tracing::warn!(lease = id, stream = v.stream, job = %what, "lease expired; requeued");
            self.registry
                .counters
                .expired
                .fetch_add(1, Ordering::Relaxed);
            self.registry.record_requeue(RequeueReason::Expired, 1);
            self.registry
                .record_problem("expired", format!("lease {id} expired on {what}"));
            match &ticket {
                // A search that outlives its lease counts as failed: an engine
                // that hangs on a position must not keep its client waiting forever.
                Ticket::Search(search) => self.search.put_back(search, true, "lease expired"),
                _ => self.put_back(&ticket),
            }
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
        // A refused worker's stream is closed: what it still sends is not used.
        let (results, refused): (Vec<_>, Vec<_>) = results
            .into_iter()
            .partition(|(stream, _)| self.streams.contains_key(stream));
        for (stream, result) in refused {
            tracing::debug!(
                stream,
                lease = result.lease_id,
                "result of a closed or refused stream ignored"
            );
        }
        let (accepted, mut acks, copies) = self.check_batch(results);
        let stored = self.store_batch(accepted);
        // A second copy of a result in this batch is answered as its first copy
        // was: acknowledged only once the first is durable.
        for (stream, id) in copies {
            if stored.contains(&(stream, id)) {
                acks.push((stream, id));
            } else {
                let why = format!("lease {id}: the coordinator could not store the result");
                self.reject(stream, id, RejectReason::StoreFailed, why);
            }
        }
        acks.extend(stored);
        for (stream, id) in acks {
            self.blame.success(stream);
            self.reply(stream, Msg::Ack(ResultAck { lease_id: id }));
            if let Some(mut w) = self.registry.workers.get_mut(&stream) {
                w.completed += 1;
            }
        }
    }

    /// Resolves each result's lease and checks it: returns what is to be stored,
    /// the acknowledgements that need no store write (repeated results, results for
    /// positions already in the book), and the second copies of results accepted
    /// in this batch (acknowledged only if the first copy is stored). Rejections
    /// are sent here.
    #[allow(clippy::type_complexity)]
    fn check_batch(
        &mut self,
        results: Vec<(StreamId, JobResult)>,
    ) -> (
        Vec<Accepted>,
        Vec<(StreamId, LeaseId)>,
        Vec<(StreamId, LeaseId)>,
    ) {
        let now = u32::try_from(unix_ms(SystemTime::now()) / 1000).unwrap_or(u32::MAX);
        let mut accepted: Vec<Accepted> = Vec::new();
        let mut acks = Vec::new();
        let mut copies = Vec::new();
        // Lease id -> the stream whose result for it was accepted in this batch.
        let mut in_batch: HashMap<LeaseId, StreamId> = HashMap::new();
        for (stream, result) in results {
            let id = result.lease_id;
            if let Some(&first) = in_batch.get(&id) {
                if first == stream {
                    copies.push((stream, id));
                } else {
                    let why = format!("lease {id} belongs to another worker");
                    self.reject(stream, id, RejectReason::ForeignLease, why);
                }
                continue;
            }
            let (ticket, held) = match self.leases.resolve(stream, id) {
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
                    if let Some(a) = self.check_by_position(stream, id, &result, now, &mut acks) {
                        in_batch.insert(id, stream);
                        accepted.push(a);
                    }
                    continue;
                }
                Verdict::Held(ticket) => (ticket, true),
                Verdict::Voided(memo) => match memo.into_ticket() {
                    Ok(ticket) => (ticket, false),
                    Err(why) => {
                        self.reject(stream, id, RejectReason::Invalid, why);
                        continue;
                    }
                },
            };
            let leaf = match (ticket, &result.kind) {
                (Ticket::Think(leaf), Some(job_result::Kind::Think(_))) => leaf,
                (Ticket::Play(game), Some(job_result::Kind::Play(play))) => {
                    if let Some(id) = self.commit_game(stream, id, &game, play, held) {
                        acks.push((stream, id));
                    }
                    continue;
                }
                (Ticket::Search(search), Some(job_result::Kind::Search(answer))) => {
                    let done =
                        self.search
                            .finish(&search, answer, &result.engine, held, Instant::now());
                    match done {
                        Ok(()) => {
                            self.leases.complete(id);
                            acks.push((stream, id));
                        }
                        Err(reason) => {
                            if held {
                                self.search.put_back(&search, true, &reason);
                            }
                            self.reject(stream, id, RejectReason::Invalid, reason);
                        }
                    }
                    continue;
                }
                (ticket, _) => {
                    if held {
                        self.put_back(&ticket);
                    }
                    let why = format!(
                        "lease {id} is a {} job; the result is of another kind",
                        kind_name(&ticket)
                    );
                    self.reject(stream, id, RejectReason::Invalid, why);
                    continue;
                }
            };
            match ThinkJobs::check(&self.live, &leaf, &result, now) {
                Checked::Duplicate => {
                    // Another worker's result for the same position is already in.
                    if held {
                        ThinkJobs::put_back(&mut self.live, &leaf);
                    }
                    self.registry
                        .counters
                        .duplicates
                        .fetch_add(1, Ordering::Relaxed);
                    self.leases.complete(id);
                    acks.push((stream, id));
                }
                Checked::Valid(thought) => {
                    in_batch.insert(id, stream);
                    accepted.push(Accepted {
                        stream,
                        id,
                        leaf,
                        thought,
                        by_position: false,
                        held,
                    });
                }
                Checked::Invalid(reason) => {
                    self.reject(stream, id, RejectReason::Invalid, reason.clone());
                    self.count_failure(stream, Some(&leaf), &reason);
                    // A voided leaf was put back when it was voided and may be
                    // in flight again under a new lease, whose mark must stay.
                    if held {
                        ThinkJobs::put_back(&mut self.live, &leaf);
                    }
                }
            }
        }
        (accepted, acks, copies)
    }

    /// A think result for a lease this run does not know: checked against the
    /// position it names, as a leased one is against its leaf. Returns it when it
    /// is to be stored; otherwise it is acknowledged (position already thought) or
    /// rejected here. The leaf was not selected by this run, so nothing is put back
    /// and no failure is counted against it: its position may be in flight under a
    /// live lease, and that lease's in-flight mark must stay.
    fn check_by_position(
        &mut self,
        stream: StreamId,
        id: LeaseId,
        result: &JobResult,
        now: u32,
        acks: &mut Vec<(StreamId, LeaseId)>,
    ) -> Option<Accepted> {
        let leaf = if id >= EARLIEST_LEASE {
            ThinkJobs::leaf_by_position(result)
        } else {
            None
        };
        let leaf = match leaf {
            None => {
                let why = format!("unknown or expired lease {id}");
                self.reject(stream, id, RejectReason::UnknownLease, why);
                return None;
            }
            Some(Err(reason)) => {
                let why = format!("unknown lease {id}: {reason}");
                self.reject(stream, id, RejectReason::Invalid, why);
                return None;
            }
            Some(Ok(leaf)) => leaf,
        };
        match ThinkJobs::check(&self.live, &leaf, result, now) {
            Checked::Duplicate => {
                tracing::debug!(lease = id, sfen = %leaf.sfen(), "result of an unknown lease for a position already thought");
                self.registry
                    .counters
                    .duplicates
                    .fetch_add(1, Ordering::Relaxed);
                self.leases.complete(id);
                acks.push((stream, id));
                None
            }
            Checked::Valid(thought) => Some(Accepted {
                stream,
                id,
                leaf,
                thought,
                by_position: true,
                held: false,
            }),
            Checked::Invalid(reason) => {
                let why = format!("unknown lease {id}, checked by its position: {reason}");
                self.reject(stream, id, RejectReason::Invalid, why);
                None
            }
        }
    }

    /// Writes the accepted results in one durable store write; returns their
    /// acknowledgements, or rejects them all when the write fails.
    fn store_batch(&mut self, accepted: Vec<Accepted>) -> Vec<(StreamId, LeaseId)> {
        if accepted.is_empty() {
            return Vec::new();
        }
        let acks: Vec<(StreamId, LeaseId)> = accepted.iter().map(|a| (a.stream, a.id)).collect();
        let by_position: Vec<(LeaseId, String)> = accepted
            .iter()
            .filter(|a| a.by_position)
            .map(|a| (a.id, a.leaf.sfen()))
            .collect();
        let keys: Vec<u128> = accepted.iter().map(|a| a.leaf.key.0).collect();
        let items: Vec<(Leaf, Thought, bool)> = accepted
            .into_iter()
            .map(|a| (a.leaf, a.thought, a.held))
            .collect();
        match self.think.store(&mut self.live, items) {
            Ok(stored) => {
                for key in keys {
                    self.blame.stored(key);
                }
                self.registry
                    .counters
                    .thought
                    .fetch_add(stored as u64, Ordering::Relaxed);
                for (_, id) in &acks {
                    self.leases.complete(*id);
                }
                for (lease, sfen) in by_position {
                    tracing::info!(lease, %sfen, "result of an earlier lease accepted by position");
                }
                acks
            }
            Err(e) => {
                // Nothing of the batch is in the book: reject all (their leaves
                // were released for selection again).
                tracing::error!(error = %e, "storing results failed");
                if let Some(space) = &mut self.space {
                    space.write_failed(&e);
                }
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

    /// Counts a failure (a rejected result, a job the worker gave up on) against
    /// the worker of `stream` and the position of a think job (see
    /// [`crate::blame`]): refuses the worker after too many failures in a row
    /// (returns true then), and quarantines a position that failed on several
    /// workers by banning the edge that leads to it (persisted). The caller puts
    /// the leaf back.
    fn count_failure(&mut self, stream: StreamId, leaf: Option<&Leaf>, reason: &str) -> bool {
        let consequence = self.blame.failure(stream, leaf.map(|l| l.key.0), reason);
        let refused = consequence.refuse.is_some();
        if let Some(why) = consequence.refuse {
            self.refuse_worker(stream, &why);
        }
        let (Some(failed), Some(leaf)) = (consequence.quarantine, leaf) else {
            return refused;
        };
        self.registry
            .counters
            .quarantined
            .fetch_add(1, Ordering::Relaxed);
        tracing::error!(sfen = %leaf.sfen(), failures = failed.failures, workers = failed.workers, "position quarantined");
        let note = format!(
            "{} failed evaluations on {} workers (last: {reason})",
            failed.failures, failed.workers
        );
        self.registry
            .record_problem("quarantined", format!("{}: {note}", leaf.sfen()));
        match ThinkJobs::quarantine(&mut self.live, leaf, &note) {
            Ok(true) => {
                self.registry
                    .counters
                    .quarantined_in_store
                    .fetch_add(1, Ordering::Relaxed);
            }
            Ok(false) => {}
            Err(e) => tracing::error!(error = %e, "could not persist the quarantine ban"),
        }
        refused
    }

    /// Refuses the worker of `stream`: its stream is closed with the reason (the
    /// worker stops), its leases go back without counting against their
    /// positions, and it may not connect again in this run.
    fn refuse_worker(&mut self, stream: StreamId, why: &str) {
        let worker = self.blame.worker_of(stream).to_owned();
        tracing::error!(stream, worker = %worker, reason = why, "worker refused: its engine keeps failing");
        self.registry
            .counters
            .workers_refused
            .fetch_add(1, Ordering::Relaxed);
        self.registry
            .record_problem("refused", format!("worker `{worker}` refused: {why}"));
        if let Some(tx) = self.streams.remove(&stream) {
            let _ = tx.send(Err(Status::failed_precondition(format!(
                "worker `{worker}` refused: {why}; check its engine"
            ))));
        }
        self.blame.disconnect(stream);
        self.registry.workers.remove(&stream);
        if let Some(voided) = self.leases.close_stream(stream) {
            let n = voided.len() as u64;
            for v in voided {
                self.put_back(&v.job);
            }
            self.registry.record_requeue(RequeueReason::Disconnected, n);
        }
    }

    /// Hands out jobs to every stream with free slots (credit-based flow).
    fn fill_credits(&mut self) {
        if self.draining {
            return;
        }
        // Read even without free slots, so that a full disk is told at once.
        let writable = self.space.as_mut().is_none_or(StoreSpace::writable);
        self.play.refresh(self.live.book());
        let mut wanting = self.leases.free_slots();
        let free: usize = wanting.iter().map(|(_, n)| n).sum();
        if free == 0 {
            return;
        }
        // Start after the stream served last: a job put back (failed) then goes
        // to another stream with a free slot rather than to the same one again,
        // so a position that fails gets a second worker's opinion (blame.rs).
        let first = wanting
            .iter()
            .position(|(s, _)| *s > self.last_served)
            .unwrap_or(0);
        wanting.rotate_left(first);
        // A full store takes no results: only searches (nothing stored) go out.
        let tickets = if writable {
            self.plan(free)
        } else {
            self.search
                .tickets(free)
                .into_iter()
                .map(Ticket::Search)
                .collect()
        };
        if tickets.is_empty() {
            return;
        }
        let now = Instant::now();
        let deadline_ms = unix_ms(SystemTime::now() + self.leases.lease_time());
        let mut tickets = tickets.into_iter();
        // Round robin so one stream does not starve the others.
        'outer: loop {
            let mut gave = false;
            for (stream, free) in &mut wanting {
                if *free == 0 {
                    continue;
                }
                let Some(ticket) = tickets.next() else {
                    break 'outer;
                };
                let id = self.leases.grant(*stream, ticket.clone(), now);
                let job = match &ticket {
                    Ticket::Think(leaf) => self.think.job(id, leaf, deadline_ms),
                    Ticket::Play(game) => self.play.job(id, game, deadline_ms),
                    Ticket::Search(search) => SearchJobs::job(id, search, deadline_ms),
                };
                self.reply(*stream, Msg::Job(job));
                self.last_served = *stream;
                *free -= 1;
                gave = true;
            }
            if !gave {
                break;
            }
        }
        for ticket in tickets {
            // More tickets than free slots cannot happen, but never leak in-flight marks.
            self.put_back(&ticket);
        }
    }

    /// What to hand out for `free` slots: clients' searches first (a game waits
    /// on each), then games by their share of the slot time, leaves for the rest;
    /// with a games target, slots thinking cannot use (its limit reached, nothing
    /// to select) play too.
    fn plan(&mut self, free: usize) -> Vec<Ticket> {
        let mut tickets: Vec<Ticket> = self
            .search
            .tickets(free)
            .into_iter()
            .map(Ticket::Search)
            .collect();
        let free = free - tickets.len();
        if free == 0 {
            return tickets;
        }
        let play_in_flight = self.play.in_flight();
        let think_in_flight = self
            .leases
            .len()
            .saturating_sub(play_in_flight + self.search.in_flight());
        let capacity = self.leases.len() + free;
        let mut games = self.play.wanted(capacity, Instant::now()).min(free);
        let think = (free - games).min(self.think.room(think_in_flight));
        let leaves = if think > 0 {
            self.select(think)
        } else {
            Vec::new()
        };
        if think > 0 && leaves.is_empty() && think_in_flight == 0 && games == 0 {
            self.empty_selections += 1;
            if self.empty_selections >= 2 && !self.stalled {
                self.stall();
            }
        } else if !leaves.is_empty() {
            self.empty_selections = 0;
        }
        if self.play.has_target() {
            games = games.max((free - leaves.len()).min(self.play.room()));
        }
        tickets.reserve(games + leaves.len());
        for _ in 0..games {
            match self.play.ticket(Instant::now()) {
                Some(t) => tickets.push(Ticket::Play(t)),
                None => break,
            }
        }
        tickets.extend(leaves.into_iter().map(Ticket::Think));
        tickets
    }

    /// The selector has nothing to hand out and nothing is in flight that could
    /// change it: the run cannot make progress. Said once; the run then ends.
    fn stall(&mut self) {
        self.stalled = true;
        let why = format!(
            "nothing left to think after {} positions in this run: every candidate position is thought, banned or quarantined (`book-tools stats` lists quarantines, `book-tools unban` lifts them)",
            self.think.thought()
        );
        tracing::error!("{why}; stopping");
        self.registry.record_problem("stalled", why);
    }

    /// Up to `n` leaves from the selector (timed for the metrics).
    fn select(&mut self, n: usize) -> Vec<Leaf> {
        let started = Instant::now();
        let leaves = match self.think.select(&mut self.live, n) {
            Ok(l) => l,
            Err(e) => {
                tracing::error!(error = %e, "selection failed");
                self.registry
                    .record_problem("selection", format!("selection failed: {e}"));
                return Vec::new();
            }
        };
        let took = started.elapsed();
        self.registry.record_selection(took, leaves.len());
        crate::telemetry::record_selection(took);
        leaves
    }

    /// Checks a reported game and counts it into the book (one durable store
    /// write); returns the lease to acknowledge, or rejects the game.
    fn commit_game(
        &mut self,
        stream: StreamId,
        id: LeaseId,
        game: &GameTicket,
        result: &PlayResult,
        held: bool,
    ) -> Option<LeaseId> {
        // A voided lease was put back when it was voided; a late game still counts.
        if held {
            self.play.put_back(Instant::now());
        }
        let checked = self.play.check(game, result, self.live.book());
        let counted = match checked {
            Ok(c) => c,
            Err(reason) => {
                self.play.rejected();
                self.reject(stream, id, RejectReason::InvalidGame, reason);
                return None;
            }
        };
        match self.play.count(self.live.store_mut(), id, &counted) {
            Ok(new) => {
                self.leases.complete(id);
                if new {
                    let c = &self.registry.counters;
                    let by = match counted.result.outcome {
                        stera_games::Outcome::BlackWins => &c.games_black,
                        stera_games::Outcome::WhiteWins => &c.games_white,
                        stera_games::Outcome::Draw => &c.games_draw,
                    };
                    by.fetch_add(1, Ordering::Relaxed);
                    c.games_stored.fetch_add(1, Ordering::Relaxed);
                    crate::telemetry::record_game(counted.plies);
                    tracing::debug!(lease = id, result = %counted.result, plies = counted.plies, positions = counted.counts.len(), "game counted");
                }
                Some(id)
            }
            Err(e) => {
                tracing::error!(error = %e, "storing a game failed");
                let why = format!("the coordinator could not store the game: {e}");
                self.reject(stream, id, RejectReason::StoreFailed, why);
                None
            }
        }
    }

    fn publish_progress(&mut self) {
        for (id, held) in self.leases.streams() {
            if let Some(mut w) = self.registry.workers.get_mut(&id) {
                w.in_flight = u32::try_from(held).unwrap_or(u32::MAX);
            }
        }
        let book = self.live.book();
        let in_flight = self.leases.len();
        self.registry.set_book(
            book.len() as u64,
            book.value_count() as u64,
            in_flight as u64,
        );
        let think_in_flight =
            in_flight.saturating_sub(self.play.in_flight() + self.search.in_flight());
        self.registry
            .counters
            .play_in_flight
            .store(self.play.in_flight() as u64, Ordering::Relaxed);
        let finished = in_flight == 0
            && self.search.idle()
            && (self.draining
                || (self.stalled && self.play.in_flight() == 0)
                || (self.think.limit_reached(think_in_flight)
                    && self.think.limit_done()
                    && self.play.target_done()));
        let p = Progress {
            thought: self.think.thought(),
            in_flight,
            finished,
            stalled: self.stalled,
        };
        self.progress.send_if_modified(|old| {
            let changed = *old != p;
            *old = p;
            changed
        });
    }

    fn status(&self) -> StatusReply {
        let book = self.live.book();
        let roots: Vec<RootLine> = self
            .think
            .selector()
            .root_lines(&self.live)
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
            games: counters.games_stored.load(Ordering::Relaxed),
            games_black: self.play.tally().black,
            games_white: self.play.tally().white,
            games_draw: self.play.tally().draws,
            games_rejected: self.play.tally().rejected,
            play_in_flight: self.play.in_flight() as u64,
        }
    }
}

/// The job of a ticket, for logs and problems.
fn describe(ticket: &Ticket) -> String {
    match ticket {
        Ticket::Think(leaf) => leaf.sfen(),
        Ticket::Play(game) => format!(
            "game from {} after {} book moves",
            game.start_sfen,
            game.opening.len()
        ),
        Ticket::Search(search) => format!("search for a client ({search})"),
    }
}

fn kind_name(ticket: &Ticket) -> &'static str {
    match ticket {
        Ticket::Think(_) => "think",
        Ticket::Play(_) => "play",
        Ticket::Search(_) => "search",
    }
}
