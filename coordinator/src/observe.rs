//! How the dispatcher's domain events show: each event is turned here into its
//! log line, its counters and, for what an operator should look at, an entry of
//! the dashboard's problem list. The dispatcher and the job kinds say what
//! happened; this module alone decides how it is told, so a counter has one
//! place that counts it and a log line one wording.

use std::sync::atomic::Ordering;
use std::time::Duration;

use stera_book::BookError;
use stera_proto::v1::Hello;

use crate::leases::{LeaseId, StreamId};
use crate::registry::{ProblemKind, Registry, RejectReason, RequeueReason};

/// A worker's stream opened.
/// Its `job_slots` are its engines (`worker --slots`) plus its prefetch: not
/// `slots`, which is the engines' count in the worker's flags.
pub(crate) fn connected(stream: StreamId, hello: &Hello) {
    tracing::info!(stream, worker = %hello.worker_id, engine = %hello.engine, job_slots = hello.slots, "worker connected");
}

/// A worker's own budget (`worker --nodes`...) is replaced by the run's
/// think limits: said once per connection, so that nobody believes the
/// worker's flags are in force.
pub(crate) fn budget_overridden(stream: StreamId, worker: &str, own: &str, run: &str) {
    tracing::info!(stream, worker = %worker, own, run, "the worker's own budget is overridden by this run's think limits (--nodes, --depth, --time-ms)");
}

/// A refused worker tried to connect again.
pub(crate) fn refused_again(stream: StreamId, worker: &str) {
    tracing::warn!(stream, worker = %worker, "a refused worker tried to connect again; refused");
}

/// A worker's stream closed; the `voided` leases it still held went back.
/// `given_back` jobs it had returned itself while stopping (counted when they
/// came): the line tells them all, the jobs this worker's leaving put back.
pub(crate) fn disconnected(
    registry: &Registry,
    stream: StreamId,
    voided: usize,
    given_back: usize,
) {
    let requeued = voided + given_back;
    tracing::info!(stream, requeued, given_back, "worker disconnected");
    registry.record_requeue(RequeueReason::Disconnected, voided as u64);
}

/// A worker was refused: its engine keeps failing.
pub(crate) fn refused(registry: &Registry, stream: StreamId, worker: &str, why: &str) {
    tracing::error!(stream, worker = %worker, reason = why, "worker refused: its engine keeps failing");
    registry
        .counters
        .workers_refused
        .fetch_add(1, Ordering::Relaxed);
    registry.record_problem(
        ProblemKind::Refused,
        format!("worker `{worker}` refused: {why}"),
    );
}

/// A worker was refused at Hello: it thinks with another engine or budget than
/// the store's, and mixing them was not allowed.
/// It counts as refused, as a worker refused for failing does: the
/// refused-worker alert watches that counter.
pub(crate) fn mixed_engine_refused(registry: &Registry, stream: StreamId, worker: &str, why: &str) {
    tracing::warn!(stream, worker = %worker, reason = why, "worker refused: another engine or budget");
    registry
        .counters
        .workers_refused
        .fetch_add(1, Ordering::Relaxed);
    registry.record_problem(ProblemKind::Refused, why.to_owned());
}

/// The leases of a refused worker went back.
pub(crate) fn refused_leases_requeued(registry: &Registry, requeued: usize) {
    registry.record_requeue(RequeueReason::Disconnected, requeued as u64);
}

/// A stream gave back a lease it does not hold.
pub(crate) fn unknown_give_back(stream: StreamId, lease_id: LeaseId) {
    tracing::warn!(
        stream,
        lease_id,
        "give-back of a lease this stream does not hold"
    );
}

/// A job as its events name it (implemented by the kinds' ticket, so that this
/// module needs no job types).
pub(crate) trait Job {
    /// What the worker does for it: "evaluation", "game", "search".
    fn work(&self) -> &'static str;
    /// The job, for logs and problems.
    fn describe(&self) -> String;
}

/// A worker gave a lease back; `failed` when its evaluation failed (rather than
/// the worker stopping).
pub(crate) fn given_back(
    registry: &Registry,
    lease_id: LeaseId,
    job: &impl Job,
    reason: &str,
    failed: bool,
) {
    registry.record_requeue(RequeueReason::GivenBack, 1);
    if !failed {
        tracing::debug!(lease_id, reason, "lease given back");
        return;
    }
    let (what, job) = (job.work(), job.describe());
    tracing::warn!(lease_id, reason, job = %job, "{what} failed on the worker; lease given back");
    registry.record_problem(ProblemKind::Failed, format!("{job}: {reason}"));
}

/// A lease expired; its job was put back.
pub(crate) fn expired(registry: &Registry, lease: LeaseId, stream: StreamId, job: &str) {
    tracing::warn!(lease, stream, job = %job, "lease expired; requeued");
    registry.counters.expired.fetch_add(1, Ordering::Relaxed);
    registry.record_requeue(RequeueReason::Expired, 1);
    registry.record_problem(
        ProblemKind::Expired,
        format!("lease {lease} expired on {job}"),
    );
}

/// A result was rejected.
pub(crate) fn rejected(
    registry: &Registry,
    stream: StreamId,
    lease_id: LeaseId,
    kind: RejectReason,
    reason: &str,
) {
    tracing::warn!(stream, lease_id, %reason, "result rejected");
    registry.record_rejection(kind, reason);
}

/// A result of a closed or refused stream was not used.
pub(crate) fn ignored(stream: StreamId, lease: LeaseId) {
    tracing::debug!(
        stream,
        lease,
        "result of a closed or refused stream ignored"
    );
}

/// A think result for a position already in the book (acknowledged, not stored).
pub(crate) fn duplicate(registry: &Registry) {
    registry.counters.duplicates.fetch_add(1, Ordering::Relaxed);
}

/// `added` positions were stored; `by_position` lists results of earlier leases
/// accepted by the position they name.
pub(crate) fn stored(registry: &Registry, added: usize, by_position: &[(LeaseId, String)]) {
    registry
        .counters
        .thought
        .fetch_add(added as u64, Ordering::Relaxed);
    for (lease, sfen) in by_position {
        tracing::info!(lease, %sfen, "result of an earlier lease accepted by position");
    }
}

/// Storing a batch of results failed: nothing of it is in the book.
pub(crate) fn store_failed(error: &BookError) {
    tracing::error!(error = %error, "storing results failed");
}

/// A position failed on several workers and is quarantined; `recorded` says
/// whether its ban reached the store.
pub(crate) fn quarantined(
    registry: &Registry,
    sfen: &str,
    failures: u32,
    workers: usize,
    note: &str,
    recorded: Result<bool, BookError>,
) {
    registry
        .counters
        .quarantined
        .fetch_add(1, Ordering::Relaxed);
    tracing::error!(sfen = %sfen, failures, workers, "position quarantined");
    registry.record_problem(ProblemKind::Quarantined, format!("{sfen}: {note}"));
    match recorded {
        Ok(true) => {
            registry
                .counters
                .quarantined_in_store
                .fetch_add(1, Ordering::Relaxed);
        }
        Ok(false) => {}
        Err(e) => tracing::error!(error = %e, "could not persist the quarantine ban"),
    }
}

/// A game was counted into the book for the first time.
pub(crate) fn game_counted(
    registry: &Registry,
    lease: LeaseId,
    result: &impl std::fmt::Display,
    plies: usize,
    positions: usize,
) {
    registry
        .counters
        .games_stored
        .fetch_add(1, Ordering::Relaxed);
    crate::telemetry::record_game(plies);
    tracing::debug!(lease, result = %result, plies, positions, "game counted");
}

/// The first write to `--out-games` that failed, of the `counted`th game of
/// this run: no later game is written to it.
pub(crate) fn games_file_failed(
    registry: &Registry,
    path: &std::path::Path,
    error: &std::io::Error,
    counted: u64,
) {
    let why = format!(
        "cannot write game {counted} of this run to the games file `{}` ({error}): the file ends with the game before it, whole, and this game and the games counted after it in this run are not written to it (stera_coordinator_games_unwritten_total counts them); the run goes on",
        path.display(),
    );
    tracing::error!("{why}");
    registry.record_problem(ProblemKind::GamesFile, why);
    game_unwritten(registry);
}

/// A counted game that is not in `--out-games` (its writes stopped).
pub(crate) fn game_unwritten(registry: &Registry) {
    registry
        .counters
        .games_unwritten
        .fetch_add(1, Ordering::Relaxed);
}

/// Storing a game failed.
pub(crate) fn game_store_failed(error: &BookError) {
    tracing::error!(error = %error, "storing a game failed");
}

/// A selection of `leaves` leaves took `took`.
pub(crate) fn selected(registry: &Registry, took: Duration, leaves: usize) {
    registry.record_selection(took, leaves);
    crate::telemetry::record_selection(took);
}

/// A selection failed (a ban could not be stored).
pub(crate) fn selection_failed(registry: &Registry, error: &BookError) {
    tracing::error!(error = %error, "selection failed");
    registry.record_problem(ProblemKind::Selection, format!("selection failed: {error}"));
}

/// Nothing is left to think: the run ends.
pub(crate) fn stalled(registry: &Registry, thought: u64) {
    let why = format!(
        "nothing left to think after {thought} positions in this run: every candidate position is thought, banned or quarantined (`book-tools stats` lists quarantines, `book-tools unban` lifts them)"
    );
    tracing::error!("{why}; stopping");
    registry.record_problem(ProblemKind::Stalled, why);
}
