//! The dispatcher: the one thread that joins the lease table, the job kinds and the
//! registry.
//!
//! Everything that changes the book or the lease table arrives as an [`Event`] on one
//! channel and is handled in order, so there are no locks around the selector.
//! Results that arrive together are committed together (one durable store write,
//! then the acknowledgements), which is what makes a thousand results a second
//! possible with an fsync per batch. This file is the event loop and the lease
//! calls; what a lease is lives in [`crate::leases`], what each kind of job does
//! (plan, job message, put back, result) in `kinds` and the kinds'
//! modules, who is to blame for a failure in `blame`, how each event is
//! logged and counted in `observe`, and what is published after each
//! round in `progress`.

use std::sync::Arc;
use std::time::{Instant, SystemTime};

use stera_book::{Leaf, LiveBook, NodeStore, Selector};
use stera_proto::v1::JobResult;
use tokio::sync::{mpsc, watch};

use crate::blame::Blame;
pub use crate::handle::{Event, StreamTx};
use crate::kinds::{Kinds, Settled, Ticket};
use crate::lease_id::LeaseIds;
pub use crate::leases::StreamId;
use crate::leases::{LeaseId, LeaseTable, Verdict, Voided};
use crate::maintenance::{BackupFn, CompactFn, ExportFn, Maintenance};
use crate::observe;
pub use crate::progress::Progress;
use crate::registry::{Registry, RejectReason, unix_ms};
use crate::store_space::StoreSpace;
use crate::think::{Intake, ThinkBatch, ThinkJobs};
use crate::workers::Workers;

pub struct Dispatcher<S: NodeStore> {
    kinds: Kinds<S>,
    leases: LeaseTable<Ticket>,
    /// Signs the ids of new leases, and tells those of earlier runs.
    lease_ids: LeaseIds,
    /// The open streams and who is to blame for failures.
    workers: Workers,
    config: DispatchConfig,
    draining: bool,
    maintenance: Maintenance<S>,
    registry: Arc<Registry>,
    progress: watch::Sender<Progress>,
    /// The store's free space; without it the store is taken to be writable.
    space: Option<StoreSpace>,
    /// The stream that got the last job (the round robin starts after it).
    last_served: StreamId,
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
        crate::progress::seed(live.store(), &registry);
        let thinkers = crate::thinkers::Thinkers::new(
            &live
                .store()
                .evaluators()
                .map_err(|e| format!("cannot read the store's evaluators: {e}"))?,
            &config.limits,
            config.allow_mixed_engines,
        )
        .thinking_nothing(config.think_limit == Some(0))
        .with_opponent_engines(config.learn.opponent_engines.clone());
        let (limits, think_limit) = (config.limits, config.think_limit);
        let kinds = Kinds::new(
            live,
            selector,
            limits,
            think_limit,
            config.play.clone(),
            crate::learn::LearnLedger::new(config.learn.games, config.learn.grow_share),
            registry.clone(),
        )?;
        Ok(Self {
            kinds,
            leases: LeaseTable::new(config.lease),
            lease_ids: LeaseIds::new(&config.lease_secret),
            workers: Workers::new(
                Blame::new(config.max_failures, config.max_worker_failures),
                thinkers,
                registry.clone(),
                &config.version,
                config.lease,
                config.heartbeat,
            ),
            config,
            draining: false,
            maintenance: Maintenance::new(export),
            registry,
            progress,
            space: None,
            last_served: 0,
        })
    }

    /// When `flag` is set at shutdown, [`Dispatcher::run`] returns without waiting
    /// for the job on the maintenance thread (a second signal during a long
    /// final export).
    #[must_use]
    pub fn abandon_maintenance_on(mut self, flag: Arc<std::sync::atomic::AtomicBool>) -> Self {
        self.maintenance.abandon = flag;
        self
    }

    /// Lets the Backup RPC copy the store with `backup`.
    #[must_use]
    pub fn with_backup(mut self, backup: BackupFn<S>) -> Self {
        self.maintenance.prepare.backup = Some(backup);
        self
    }

    /// Holds back think jobs while `space` says the store's disk is full.
    #[must_use]
    pub fn with_store_space(mut self, space: StoreSpace) -> Self {
        self.space = Some(space);
        self
    }

    /// Compacts the store whenever `compact` says so and the maintenance thread
    /// is idle.
    #[must_use]
    pub fn with_compaction(mut self, compact: CompactFn<S>) -> Self {
        self.maintenance.prepare.compact = Some(compact);
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
            self.maintenance.poll(&self.kinds.live, &self.registry);
            self.fill_credits();
            crate::progress::publish(
                &self.kinds,
                &self.leases,
                self.draining,
                &self.registry,
                &self.progress,
            );
        }
        self.maintenance.finish();
        self.kinds.live
    }

    fn handle(&mut self, event: Event, pending: &mut Vec<(StreamId, JobResult)>) {
        match event {
            Event::Connect { stream, hello, tx } => {
                if self.workers.connect(stream, &hello, tx, self.draining) {
                    self.leases.open_stream(stream, hello.slots);
                }
            }
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
            Event::Tick => self.expire(Instant::now()),
            Event::Status { reply } => {
                // The reply reads the registry: mirrored first, it holds the
                // events of this round handled so far, not only earlier rounds'.
                crate::progress::mirror(&self.kinds, &self.leases, &self.registry);
                let _ = reply.send(crate::progress::status_reply(
                    &mut self.kinds,
                    &self.registry,
                    &self.config.version,
                ));
            }
            Event::Export { request, reply } => {
                self.maintenance.queue.submit_export(request, reply);
            }
            Event::Backup { path, reply } => self.maintenance.queue.submit_backup(path, reply),
            Event::Search { request, answer } => {
                self.kinds.submit_search(request, answer, self.draining);
            }
            Event::BookSnapshot { budgets, reply } => {
                let _ = reply.send(crate::learn::LearnLedger::snapshot(
                    self.kinds.live.store(),
                    self.kinds.live.book(),
                    &budgets,
                ));
            }
            Event::LearnGame {
                identity,
                counts,
                exit,
                reply,
            } => {
                self.kinds.learn.queue_exit(exit);
                let counted = self.kinds.count_learning_game(&identity, &counts);
                let positions = self.kinds.live.book().len() as u64;
                let _ = reply.send(counted.map(|c| (c, positions)));
            }
            Event::LearnEnded => self.kinds.learn.end(),
            Event::SelfPlayGame { game, reply } => {
                let counted = self.kinds.count_self_play_game(&game);
                let positions = self.kinds.live.book().len() as u64;
                let _ = reply.send(counted.map(|c| (c, positions)));
            }
            Event::Drain { reason } => {
                self.draining = true;
                self.kinds.drain();
                self.workers.drain(&reason);
            }
        }
    }

    /// A dropped stream gives its leases back at once.
    fn disconnect(&mut self, stream: StreamId) {
        let given_back = self.workers.disconnect(stream);
        if let Some(requeued) = self.close_leases(stream) {
            observe::disconnected(&self.registry, stream, requeued, given_back);
        }
    }

    /// Voids the leases of a closed stream and puts their jobs back; how many
    /// (`None`: the stream was not open).
    fn close_leases(&mut self, stream: StreamId) -> Option<usize> {
        let voided = self.leases.close_stream(stream)?;
        self.registry.workers.remove(&stream);
        for v in &voided {
            self.kinds.put_back(&v.job);
        }
        Some(voided.len())
    }

    fn give_back(&mut self, stream: StreamId, lease_id: LeaseId, reason: &str, failed: bool) {
        let Some(Voided { job: ticket, .. }) = self.leases.give_back(stream, lease_id) else {
            observe::unknown_give_back(stream, lease_id);
            return;
        };
        observe::given_back(&self.registry, lease_id, &ticket, reason, failed);
        if failed {
            // A refused worker's other leases are put back with its stream.
            self.count_failure(stream, ticket.position(), reason);
            self.kinds.failed(&ticket, reason);
        } else {
            self.workers.gave_back(stream);
            self.kinds.put_back(&ticket);
        }
    }

    /// Voids the leases whose deadline passed at `now`; their jobs go back.
    fn expire(&mut self, now: Instant) {
        self.kinds.search.drop_cancelled();
        for v in self.leases.expire(now) {
            observe::expired(&self.registry, v.id, v.stream, &v.job.describe());
            self.kinds.failed(&v.job, "lease expired");
        }
    }

    /// Validates a batch of results, writes the valid ones durably in one store
    /// write, then acknowledges them.
    fn commit(&mut self, results: Vec<(StreamId, JobResult)>) {
        let now = u32::try_from(unix_ms(SystemTime::now()) / 1000).unwrap_or(u32::MAX);
        let results = self.workers.of_open_streams(results);
        let mut batch = ThinkBatch::default();
        // Acknowledgements that need no store write.
        let mut acks = Vec::new();
        for (stream, result) in results {
            self.take_result(stream, &result, now, &mut batch, &mut acks);
        }
        let kinds = &mut self.kinds;
        let written = kinds
            .think
            .store_batch(&mut kinds.live, batch, &self.registry);
        if let (Some(e), Some(space)) = (&written.error, &mut self.space) {
            space.write_failed(e);
        }
        for key in written.keys {
            self.workers.blame.stored(key);
        }
        for (_, id) in &written.stored {
            self.leases.complete(*id);
        }
        for (stream, id, why) in written.rejects {
            self.workers
                .reject(stream, id, RejectReason::StoreFailed, why);
        }
        for (stream, id) in acks.into_iter().chain(written.acks).chain(written.stored) {
            self.workers.ack(stream, id);
        }
    }

    /// Resolves a result's lease and takes it into `batch` (or `acks`);
    /// rejections are sent here.
    fn take_result(
        &mut self,
        stream: StreamId,
        result: &JobResult,
        now: u32,
        batch: &mut ThinkBatch,
        acks: &mut Vec<(StreamId, LeaseId)>,
    ) {
        let id = result.lease_id;
        if let Some(copy) = batch.repeated(stream, id) {
            if !copy {
                let why = format!("lease {id} belongs to another worker");
                self.workers
                    .reject(stream, id, RejectReason::ForeignLease, why);
            }
            return;
        }
        let (ticket, held) = match self.leases.resolve(stream, id) {
            Verdict::Done => return acks.push((stream, id)),
            Verdict::Foreign => {
                let why = format!("lease {id} belongs to another worker");
                return self
                    .workers
                    .reject(stream, id, RejectReason::ForeignLease, why);
            }
            Verdict::Unknown => {
                let intake = ThinkJobs::intake_by_position(
                    &self.kinds.live,
                    &self.lease_ids,
                    stream,
                    id,
                    result,
                    now,
                );
                return self.take_intake(stream, id, intake, batch, acks);
            }
            Verdict::Held(ticket) => (ticket, true),
            Verdict::Voided(memo) => match memo.into_ticket() {
                Ok(ticket) => (ticket, false),
                Err(why) => return self.workers.reject(stream, id, RejectReason::Invalid, why),
            },
        };
        match self.kinds.settle(stream, id, ticket, result, now, held) {
            Settled::Done => {
                self.leases.complete(id);
                acks.push((stream, id));
            }
            Settled::Rejected(kind, why) => self.workers.reject(stream, id, kind, why),
            Settled::Think(intake) => self.take_intake(stream, id, intake, batch, acks),
        }
    }

    /// What a think result's intake asks for.
    fn take_intake(
        &mut self,
        stream: StreamId,
        id: LeaseId,
        intake: Intake,
        batch: &mut ThinkBatch,
        acks: &mut Vec<(StreamId, LeaseId)>,
    ) {
        match intake {
            Intake::Accepted(accepted) => batch.push(accepted),
            Intake::Duplicate => {
                observe::duplicate(&self.registry);
                self.leases.complete(id);
                acks.push((stream, id));
            }
            Intake::Failed { leaf, reason, held } => {
                self.workers
                    .reject(stream, id, RejectReason::Invalid, reason.clone());
                self.count_failure(stream, Some(&leaf), &reason);
                if held {
                    ThinkJobs::put_back(&mut self.kinds.live, &leaf);
                }
            }
            Intake::Refused(kind, why) => self.workers.reject(stream, id, kind, why),
            Intake::Forged(why) => {
                self.workers
                    .reject(stream, id, RejectReason::Invalid, why.clone());
                self.count_failure(stream, None, &why);
            }
        }
    }

    /// Counts a failure against the worker of `stream` and the position of a
    /// think job ([`Workers::failure`]): a refused worker's leases go back
    /// without counting against their positions; a position that failed on
    /// several workers is quarantined. The caller puts the leaf back.
    fn count_failure(&mut self, stream: StreamId, leaf: Option<&Leaf>, reason: &str) {
        let (refused, quarantine) = self.workers.failure(stream, leaf.map(|l| l.key.0), reason);
        if refused && let Some(requeued) = self.close_leases(stream) {
            observe::refused_leases_requeued(&self.registry, requeued);
        }
        if let (Some(failed), Some(leaf)) = (quarantine, leaf) {
            let live = &mut self.kinds.live;
            ThinkJobs::quarantine_failed(live, leaf, &failed, reason, &self.registry);
        }
    }
}

mod config;
mod hand_out;

pub use config::{DispatchConfig, LearnConfig};

#[cfg(test)]
mod tests;
