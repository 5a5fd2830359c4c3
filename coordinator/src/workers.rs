//! The workers as the dispatcher talks to them: each open stream's sender, who
//! is to blame for failures ([`Blame`]), and the messages that go back (Welcome,
//! Drain, Ack, Rejected, a refusal). Leases are not here: the dispatcher opens
//! and closes a stream's leases beside these calls.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use stera_proto::v1::{
    CoordinatorMessage, Drain, Hello, JobResult, ResultAck, ResultRejected, Welcome,
    coordinator_message::Msg, job_result,
};
use tonic::Status;

use crate::blame::{Blame, PositionFailures};
use crate::handle::StreamTx;
use crate::leases::{LeaseId, StreamId};
use crate::observe;
use crate::registry::{Registry, RejectReason, WorkerEntry};
use crate::thinkers::{Admission, Thinkers};

/// Why searches are refused and workers drained at shutdown.
pub(crate) const SHUTTING_DOWN: &str = "the coordinator is shutting down";

/// The open streams and the failure accounting of their workers.
pub(crate) struct Workers {
    /// Each open stream's sender.
    streams: HashMap<StreamId, StreamTx>,
    /// Jobs each open stream gave back while stopping (not failures), so that
    /// its disconnection tells every job it returned, not only those still
    /// leased when it closed.
    given_back: HashMap<StreamId, usize>,
    /// Failures per worker and per position.
    pub(crate) blame: Blame,
    /// Which engines at which budgets may think, and each stream's.
    thinkers: Thinkers,
    registry: Arc<Registry>,
    /// Sent in Welcome.
    welcome: Welcome,
    /// Each open stream's engine (as said at Hello) and whether it thinks for
    /// the store (else it answers a learning opponent's searches only).
    engines: HashMap<StreamId, (String, bool)>,
}

impl Workers {
    /// Workers told `version`, `lease` and `heartbeat` in their Welcome.
    pub(crate) fn new(
        blame: Blame,
        thinkers: Thinkers,
        registry: Arc<Registry>,
        version: &str,
        lease: Duration,
        heartbeat: Duration,
    ) -> Self {
        let millis = |d: Duration| u32::try_from(d.as_millis()).unwrap_or(u32::MAX);
        Self {
            streams: HashMap::new(),
            given_back: HashMap::new(),
            blame,
            thinkers,
            registry,
            welcome: Welcome {
                version: version.to_owned(),
                lease_ms: millis(lease),
                heartbeat_ms: millis(heartbeat),
                draining: false,
            },
            engines: HashMap::new(),
        }
    }

    /// The engine of `stream` and whether it thinks for the store: which
    /// searches it may answer ([`stera_games::Route::admits`]) and whether
    /// think jobs go to it.
    pub(crate) fn engine_of(&self, stream: StreamId) -> (&str, bool) {
        self.engines
            .get(&stream)
            .map_or(("", false), |(engine, thinks)| (engine.as_str(), *thinks))
    }

    /// The results of open streams: a refused worker's stream is closed at
    /// once, and what it still sends is not used. A think result names its
    /// stream's thinker (engine at budget, admitted at Hello), which the store
    /// records with the position.
    pub(crate) fn of_open_streams(
        &self,
        results: Vec<(StreamId, JobResult)>,
    ) -> Vec<(StreamId, JobResult)> {
        let (mut open, closed): (Vec<_>, Vec<_>) = results
            .into_iter()
            .partition(|(stream, _)| self.streams.contains_key(stream));
        for (stream, result) in closed {
            observe::ignored(stream, result.lease_id);
        }
        for (stream, result) in &mut open {
            if let (Some(job_result::Kind::Think(_)), Some(thinker)) =
                (&result.kind, self.thinkers.of_stream(*stream))
            {
                thinker.clone_into(&mut result.engine);
            }
        }
        open
    }

    /// A stream said Hello: welcomed (and told to drain when `draining`), or
    /// refused when its worker was refused in this run or thinks with another
    /// engine or budget than the store's (see [`Thinkers`]). True when it is open.
    pub(crate) fn connect(
        &mut self,
        stream: StreamId,
        hello: &Hello,
        tx: StreamTx,
        draining: bool,
    ) -> bool {
        if self.blame.is_refused(&hello.worker_id) {
            observe::refused_again(stream, &hello.worker_id);
            let _ = tx.send(Err(Status::failed_precondition(format!(
                "worker `{}` was refused by this coordinator run because its engine kept failing; fix the engine, then restart the coordinator or use another --worker-id",
                hello.worker_id
            ))));
            return false;
        }
        let admission = match self.thinkers.admit(stream, hello) {
            Ok(admission) => admission,
            Err(why) => {
                observe::mixed_engine_refused(&self.registry, stream, &hello.worker_id, &why);
                let _ = tx.send(Err(Status::failed_precondition(why)));
                return false;
            }
        };
        self.engines.insert(
            stream,
            (hello.engine.clone(), admission == Admission::Thinker),
        );
        observe::connected(stream, hello);
        if let Some((own, run)) = self.thinkers.overridden_budget(hello) {
            observe::budget_overridden(stream, &hello.worker_id, &own, &run);
        }
        self.blame.connect(stream, &hello.worker_id);
        let _ = tx.send(Ok(CoordinatorMessage {
            msg: Some(Msg::Welcome(Welcome {
                draining,
                ..self.welcome.clone()
            })),
        }));
        if draining {
            send_drain(&tx, SHUTTING_DOWN);
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
        self.streams.insert(stream, tx);
        true
    }

    /// A stream gave a job back (not as a failure: the worker is stopping).
    pub(crate) fn gave_back(&mut self, stream: StreamId) {
        if self.streams.contains_key(&stream) {
            *self.given_back.entry(stream).or_default() += 1;
        }
    }

    /// A stream closed; returns the jobs it gave back before (see
    /// [`Workers::gave_back`]).
    pub(crate) fn disconnect(&mut self, stream: StreamId) -> usize {
        self.streams.remove(&stream);
        self.engines.remove(&stream);
        self.blame.disconnect(stream);
        self.thinkers.disconnect(stream);
        self.given_back.remove(&stream).unwrap_or(0)
    }

    /// Counts a failure (a rejected result, a job the worker gave up on) against
    /// the worker of `stream` and the position with key `position` (a think
    /// job's; see [`crate::blame`]). Refuses the worker after too many failures
    /// in a row (returns true then: the caller puts its leases back), and
    /// returns the failures of a position to quarantine.
    pub(crate) fn failure(
        &mut self,
        stream: StreamId,
        position: Option<u128>,
        reason: &str,
    ) -> (bool, Option<PositionFailures>) {
        let consequence = self.blame.failure(stream, position, reason);
        let refused = consequence.refuse.is_some();
        if let Some(why) = consequence.refuse {
            self.refuse(stream, &why);
        }
        (refused, consequence.quarantine)
    }

    /// Refuses the worker of `stream`: its stream is closed with the reason (the
    /// worker stops) and it may not connect again in this run.
    fn refuse(&mut self, stream: StreamId, why: &str) {
        let worker = self.blame.worker_of(stream).to_owned();
        observe::refused(&self.registry, stream, &worker, why);
        if let Some(tx) = self.streams.remove(&stream) {
            let _ = tx.send(Err(Status::failed_precondition(format!(
                "worker `{worker}` refused: {why}; check its engine"
            ))));
        }
        self.blame.disconnect(stream);
        self.thinkers.disconnect(stream);
        self.engines.remove(&stream);
        self.given_back.remove(&stream);
        self.registry.workers.remove(&stream);
    }

    /// Tells every worker to stop taking jobs.
    pub(crate) fn drain(&self, reason: &str) {
        for tx in self.streams.values() {
            send_drain(tx, reason);
        }
    }

    /// Sends `msg` to `stream` (nothing when it is closed).
    pub(crate) fn send(&self, stream: StreamId, msg: Msg) {
        if let Some(tx) = self.streams.get(&stream) {
            let _ = tx.send(Ok(CoordinatorMessage { msg: Some(msg) }));
        }
    }

    /// Rejects the result of `stream` for lease `lease_id`.
    pub(crate) fn reject(
        &self,
        stream: StreamId,
        lease_id: LeaseId,
        kind: RejectReason,
        reason: String,
    ) {
        observe::rejected(&self.registry, stream, lease_id, kind, &reason);
        self.send(stream, Msg::Rejected(ResultRejected { lease_id, reason }));
    }

    /// Acknowledges the durable result of `stream` for lease `lease_id`: its
    /// worker's streak of failures ends.
    pub(crate) fn ack(&mut self, stream: StreamId, lease_id: LeaseId) {
        self.blame.success(stream);
        self.send(stream, Msg::Ack(ResultAck { lease_id }));
        if let Some(mut w) = self.registry.workers.get_mut(&stream) {
            w.completed += 1;
        }
    }
}

/// Tells a worker to stop taking jobs.
fn send_drain(tx: &StreamTx, reason: &str) {
    let _ = tx.send(Ok(CoordinatorMessage {
        msg: Some(Msg::Drain(Drain {
            reason: reason.to_owned(),
        })),
    }));
}
