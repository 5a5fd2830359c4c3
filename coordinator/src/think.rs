//! What a think job is: a leaf the Super Tera-Shock selection picked, handed to a
//! worker as a position with limits, answered with every legal move's value, and
//! stored in the book. Everything about leases (who holds it, until when, what a
//! repeated result means) is in [`crate::leases`]; this module never sees a stream.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use stera_book::{BookError, Leaf, LiveBook, NodeId, NodeStore, Selector, Thought};
use stera_proto::v1::{Job, JobResult, Limits};
use stera_rules::{Key, Move, Position};

use crate::lease_id::LeaseIds;
use crate::leases::{LeaseId, StreamId};
use crate::registry::{Registry, RejectReason};
use crate::validate::thought_from_result;

/// What a result says about its leaf.
#[derive(Debug)]
pub enum Checked {
    /// Another result for the same position is already in the book.
    Duplicate,
    /// A complete, legal evaluation to store.
    Valid(Thought),
    /// Not usable; the reason goes back to the worker.
    Invalid(String),
}

/// A leaf without its position's game history: what the lease table remembers of
/// a voided think lease, for a late result. A [`Position`] keeps per-ply state for
/// the game from its root (~24 KB); remembering whole leaves for the 200,000 most
/// recent voided leases grew a soak's memory without bound in sight.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParkedLeaf {
    root: usize,
    parent: Option<(NodeId, Move)>,
    key: Key,
    sfen: Box<str>,
}

impl ParkedLeaf {
    /// What is kept of `leaf`.
    #[must_use]
    pub fn park(leaf: &Leaf) -> Self {
        Self {
            root: leaf.root,
            parent: leaf.parent,
            key: leaf.key,
            sfen: leaf.sfen().into_boxed_str(),
        }
    }

    /// The leaf again, its position rebuilt from the SFEN (the moves from its root
    /// are not kept: a late result is checked and stored, never selected from).
    ///
    /// # Errors
    /// The SFEN does not give the leaf's key back (cannot happen for a parked leaf;
    /// checked because the key is what the book stores it under).
    pub fn unpark(&self) -> Result<Leaf, String> {
        let position = Position::from_sfen(&self.sfen)
            .map_err(|e| format!("the parked leaf `{}` is no position: {e}", self.sfen))?;
        if position.key() != self.key {
            return Err(format!(
                "the parked leaf `{}` does not have key {}",
                self.sfen, self.key
            ));
        }
        Ok(Leaf {
            root: self.root,
            path: Vec::new(),
            parent: self.parent,
            key: self.key,
            position,
        })
    }
}

/// A result accepted into this batch, waiting for the store write.
pub(crate) struct Accepted {
    pub(crate) stream: StreamId,
    pub(crate) id: LeaseId,
    leaf: Leaf,
    thought: Thought,
    /// Accepted by its position, its lease unknown (see
    /// [`ThinkJobs::intake_by_position`]).
    by_position: bool,
    /// Its leaf is in flight under the lease (not voided, not by position):
    /// released for selection again if the store write fails.
    held: bool,
}

/// What a think result comes to.
pub(crate) enum Intake {
    /// Valid: to be stored with its batch.
    Accepted(Accepted),
    /// Its position is in the book already: acknowledged, not stored again.
    Duplicate,
    /// Not usable, and counted as a failure of the worker and the position:
    /// the caller rejects it, counts the failure, then puts the leaf back when
    /// `held` (a voided leaf was put back when it was voided and may be in
    /// flight again under a new lease, whose mark must stay).
    Failed {
        leaf: Leaf,
        reason: String,
        held: bool,
    },
    /// Rejected without counting a failure (a result of an unknown lease that
    /// names no position: a late result of another kind, or made-up id).
    Refused(RejectReason, String),
    /// A result of an unknown lease whose position no lease could have named, or
    /// that is wrong for it: rejected as invalid and counted as a failure of the
    /// worker, never of the position (which this run did not hand out).
    Forged(String),
}

/// The think results of a batch of results, stored in one store write.
#[derive(Default)]
pub(crate) struct ThinkBatch {
    accepted: Vec<Accepted>,
    /// Lease id -> the stream whose result for it was accepted in this batch.
    in_batch: HashMap<LeaseId, StreamId>,
    /// Second copies of results accepted in this batch: acknowledged only if
    /// the first copy is stored.
    copies: Vec<(StreamId, LeaseId)>,
}

impl ThinkBatch {
    /// Takes an accepted result.
    pub(crate) fn push(&mut self, accepted: Accepted) {
        self.in_batch.insert(accepted.id, accepted.stream);
        self.accepted.push(accepted);
    }

    /// A result for lease `id` whose result is already in this batch: a copy of
    /// the same stream is kept (answered as the first copy will be) and true is
    /// returned; false when another stream's result holds the lease. `None`:
    /// the lease is not in this batch.
    pub(crate) fn repeated(&mut self, stream: StreamId, id: LeaseId) -> Option<bool> {
        let first = *self.in_batch.get(&id)?;
        if first == stream {
            self.copies.push((stream, id));
        }
        Some(first == stream)
    }
}

/// What the store write of a [`ThinkBatch`] comes to.
pub(crate) struct StoredBatch {
    /// The leases stored (completed, then acknowledged after `acks`).
    pub(crate) stored: Vec<(StreamId, LeaseId)>,
    /// Second copies of stored results, acknowledged before them.
    pub(crate) acks: Vec<(StreamId, LeaseId)>,
    /// The results to reject, with the reason.
    pub(crate) rejects: Vec<(StreamId, LeaseId, String)>,
    /// The positions stored (their failures are forgotten).
    pub(crate) keys: Vec<u128>,
    /// Why the write failed, if it did (nothing of the batch is in the book).
    pub(crate) error: Option<BookError>,
}

/// The think jobs of a run: the selector that picks leaves (from the live book
/// its owner lends to each call), the limits sent with each, and how many
/// positions this run has thought.
pub struct ThinkJobs {
    selector: Selector,
    limits: Limits,
    think_limit: Option<u64>,
    thought: u64,
    /// The book's own lines of the roots and when they were searched: status
    /// requests come as often as every pollers' second, a search of every root
    /// need not.
    book_lines: Option<(Instant, Vec<BookLine>)>,
}

/// A root as given, the book's principal variation from it and its value.
pub type BookLine = (String, Vec<Move>, i32);

/// How old the book lines of a status answer may be.
const BOOK_LINES_MAX_AGE: Duration = Duration::from_secs(5);

impl ThinkJobs {
    #[must_use]
    pub fn new(selector: Selector, limits: Limits, think_limit: Option<u64>) -> Self {
        Self {
            selector,
            limits,
            think_limit,
            thought: 0,
            book_lines: None,
        }
    }

    /// The book's own line from each thought root (see `Selector::book_lines`),
    /// searched again when older than a few seconds at `now`.
    pub fn book_lines<S: NodeStore>(&mut self, live: &LiveBook<S>, now: Instant) -> &[BookLine] {
        let fresh = self
            .book_lines
            .as_ref()
            .is_some_and(|(at, _)| now.saturating_duration_since(*at) < BOOK_LINES_MAX_AGE);
        if !fresh {
            self.book_lines = Some((now, self.selector.book_lines(live)));
        }
        self.book_lines.as_ref().map_or(&[], |(_, lines)| lines)
    }

    /// Positions thought (stored) in this run.
    #[must_use]
    pub fn thought(&self) -> u64 {
        self.thought
    }

    /// How many more jobs may go out with `in_flight` outstanding (the think limit
    /// counts leases in flight, so the run does not overshoot it).
    #[must_use]
    pub fn room(&self, in_flight: usize) -> usize {
        self.think_limit.map_or(usize::MAX, |limit| {
            let room = limit.saturating_sub(self.thought + in_flight as u64);
            usize::try_from(room).unwrap_or(usize::MAX)
        })
    }

    /// Whether the think limit is reached counting `in_flight` leases.
    #[must_use]
    pub fn limit_reached(&self, in_flight: usize) -> bool {
        self.think_limit
            .is_some_and(|limit| self.thought + in_flight as u64 >= limit)
    }

    /// Whether every position of the limit is stored.
    #[must_use]
    pub fn limit_done(&self) -> bool {
        self.think_limit.is_none_or(|l| self.thought >= l)
    }

    /// Up to `n` leaves for workers (marked in flight in the selector).
    ///
    /// # Errors
    /// Storage failure while the selection bans an edge.
    pub fn select<S: NodeStore>(
        &mut self,
        live: &mut LiveBook<S>,
        n: usize,
    ) -> Result<Vec<Leaf>, BookError> {
        self.selector.select(live, n)
    }

    /// The job message for a leaf under lease `lease_id`.
    #[must_use]
    pub fn job(&self, lease_id: LeaseId, leaf: &Leaf, deadline_unix_ms: u64) -> Job {
        Job::think(lease_id, deadline_unix_ms, leaf.sfen(), self.limits)
    }

    /// Puts a leaf back for selection (its lease ended without a stored result).
    pub fn put_back<S: NodeStore>(live: &mut LiveBook<S>, leaf: &Leaf) {
        if let Err(e) = live.abandon(leaf) {
            tracing::debug!(error = %e, "abandon");
        }
    }

    /// The leaf of a result whose lease this run does not know (handed out before a
    /// restart, or forgotten): the position the result names (`ThinkResult.sfen`),
    /// once [`could_be_handed_out`] found that a run on this book could have named
    /// it; under the thought parent it was found a child of, so it is stored as a
    /// leased leaf is, or without a parent (with that SFEN as its origin) for a root
    /// or a child of a parent's colour-flipped twin. `None` when the result names
    /// no position (a worker that predates the field, or a result of another
    /// kind).
    ///
    /// Such a leaf was not selected by this run and may not be in flight: never put
    /// it back or count failures against it (the position may be in flight under
    /// a live lease, whose in-flight mark must stay). Storing it is fine, see
    /// [`stera_book::LiveBook::complete_batch`].
    ///
    /// # Errors
    /// The named position is not an SFEN, or no run on this book could have
    /// handed it out.
    pub fn leaf_by_position<S: NodeStore>(
        live: &LiveBook<S>,
        result: &JobResult,
    ) -> Option<Result<Leaf, String>> {
        let sfen = result.think_sfen();
        if sfen.is_empty() {
            return None;
        }
        Some(named_position(sfen).and_then(|position| {
            let parent = could_be_handed_out(live, &position)?;
            Ok(Leaf {
                root: 0,
                path: Vec::new(),
                parent,
                key: position.key(),
                position,
            })
        }))
    }

    /// What `result` says about `leaf`.
    #[must_use]
    pub fn check<S: NodeStore>(
        live: &LiveBook<S>,
        leaf: &Leaf,
        result: &JobResult,
        now_unix: u32,
    ) -> Checked {
        if live.book().contains(leaf.key) {
            return Checked::Duplicate;
        }
        if let Some(reason) = names_another_position(leaf, result.think_sfen()) {
            return Checked::Invalid(reason);
        }
        match thought_from_result(
            &leaf.position,
            result.think_moves(),
            &result.engine,
            now_unix,
        ) {
            Ok(thought) => Checked::Valid(thought),
            Err(reason) => Checked::Invalid(reason),
        }
    }

    /// Takes the result of `stream` for `leaf` under its lease `id` (`held`: the
    /// lease was live, so the leaf is in flight under it).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn intake<S: NodeStore>(
        live: &mut LiveBook<S>,
        stream: StreamId,
        id: LeaseId,
        leaf: Leaf,
        result: &JobResult,
        now_unix: u32,
        held: bool,
    ) -> Intake {
        match Self::check(live, &leaf, result, now_unix) {
            Checked::Duplicate => {
                // Another worker's result for the same position is already in.
                if held {
                    Self::put_back(live, &leaf);
                }
                Intake::Duplicate
            }
            Checked::Valid(thought) => Intake::Accepted(Accepted {
                stream,
                id,
                leaf,
                thought,
                by_position: false,
                held,
            }),
            Checked::Invalid(reason) => Intake::Failed { leaf, reason, held },
        }
    }

    /// A think result for a lease this run does not know (one of an earlier run,
    /// before a restart, or one forgotten): taken by the position it names
    /// (`ThinkResult.sfen`) only when its lease id is one a coordinator of this
    /// store issued for that very position (its signature, see `lease_id`), and
    /// a run on this book could have handed that position out (see
    /// [`could_be_handed_out`]); then checked against it as a leased one is
    /// against its leaf. Any other id (never issued, altered, of another store)
    /// is refused as an unknown lease and nothing of it is stored. The leaf was
    /// not selected by this run, so nothing is put back and no failure is
    /// counted against its position: it may be in flight under a live lease,
    /// and that lease's in-flight mark must stay. A result of a genuine lease
    /// that names a position no lease could have named, or fails the check, is
    /// counted against its worker ([`Intake::Forged`]).
    pub(crate) fn intake_by_position<S: NodeStore>(
        live: &LiveBook<S>,
        lease_ids: &LeaseIds,
        stream: StreamId,
        id: LeaseId,
        result: &JobResult,
        now_unix: u32,
    ) -> Intake {
        let sfen = result.think_sfen();
        let why = if sfen.is_empty() {
            Some(format!("unknown or expired lease {id}"))
        } else {
            match named_position(sfen) {
                Ok(p) if lease_ids.issued_for_think(id, p.key()) => None,
                Ok(_) => Some(format!(
                    "unknown lease {id}: not a lease this coordinator (or an earlier run on this store) issued for the position the result names; nothing of it is stored"
                )),
                Err(reason) => Some(format!(
                    "unknown or expired lease {id}, not to be told by its position: {reason}"
                )),
            }
        };
        if let Some(why) = why {
            return Intake::Refused(RejectReason::UnknownLease, why);
        }
        let leaf = match Self::leaf_by_position(live, result) {
            None => {
                let why = format!("unknown or expired lease {id}");
                return Intake::Refused(RejectReason::UnknownLease, why);
            }
            Some(Err(reason)) => return Intake::Forged(format!("unknown lease {id}: {reason}")),
            Some(Ok(leaf)) => leaf,
        };
        match Self::check(live, &leaf, result, now_unix) {
            Checked::Duplicate => {
                tracing::debug!(lease = id, sfen = %leaf.sfen(), "result of an unknown lease for a position already thought");
                Intake::Duplicate
            }
            Checked::Valid(thought) => Intake::Accepted(Accepted {
                stream,
                id,
                leaf,
                thought,
                by_position: true,
                held: false,
            }),
            Checked::Invalid(reason) => Intake::Forged(format!(
                "unknown lease {id}, checked by its position: {reason}"
            )),
        }
    }

    /// Writes the accepted results of `batch` in one durable store write and
    /// tells it. When the write fails nothing of the batch is in the book: its
    /// results are rejected (their leaves were released for selection again),
    /// and so are the second copies of them.
    pub(crate) fn store_batch<S: NodeStore>(
        &mut self,
        live: &mut LiveBook<S>,
        batch: ThinkBatch,
        registry: &Registry,
    ) -> StoredBatch {
        let ThinkBatch {
            accepted, copies, ..
        } = batch;
        let (stored, keys, error) = self.store_accepted(live, accepted, registry);
        let mut out = StoredBatch {
            stored: Vec::new(),
            acks: Vec::new(),
            rejects: Vec::new(),
            keys,
            error: None,
        };
        match error {
            None => out.stored = stored,
            Some(e) => {
                let why = format!("the coordinator could not store the result: {e}");
                out.rejects = stored
                    .into_iter()
                    .map(|(s, id)| (s, id, why.clone()))
                    .collect();
                out.error = Some(e);
            }
        }
        // A second copy of a result in this batch is answered as its first copy
        // was: acknowledged only once the first is durable.
        for (stream, id) in copies {
            if out.stored.contains(&(stream, id)) {
                out.acks.push((stream, id));
            } else {
                let why = format!("lease {id}: the coordinator could not store the result");
                out.rejects.push((stream, id, why));
            }
        }
        out
    }

    /// Stores `accepted`: their leases, the keys stored, and the error of a
    /// failed write (then no key is stored).
    fn store_accepted<S: NodeStore>(
        &mut self,
        live: &mut LiveBook<S>,
        accepted: Vec<Accepted>,
        registry: &Registry,
    ) -> (Vec<(StreamId, LeaseId)>, Vec<u128>, Option<BookError>) {
        let acks: Vec<(StreamId, LeaseId)> = accepted.iter().map(|a| (a.stream, a.id)).collect();
        if accepted.is_empty() {
            return (acks, Vec::new(), None);
        }
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
        match self.store(live, items) {
            Ok(added) => {
                crate::observe::stored(registry, added, &by_position);
                (acks, keys, None)
            }
            Err(error) => {
                crate::observe::store_failed(&error);
                (acks, Vec::new(), Some(error))
            }
        }
    }

    /// Quarantines a leaf that failed on several workers (see [`Self::quarantine`])
    /// and tells it.
    pub(crate) fn quarantine_failed<S: NodeStore>(
        live: &mut LiveBook<S>,
        leaf: &Leaf,
        failed: &crate::blame::PositionFailures,
        reason: &str,
        registry: &Registry,
    ) {
        let note = format!(
            "{} failed evaluations on {} workers (last: {reason})",
            failed.failures, failed.workers
        );
        let recorded = Self::quarantine(live, leaf, &note);
        crate::observe::quarantined(
            registry,
            &leaf.sfen(),
            failed.failures,
            failed.workers,
            &note,
            recorded,
        );
    }

    /// Stores a batch durably (one store write); all or nothing. Returns the nodes
    /// added: a position twice in the batch (a result by position beside one for a
    /// live lease) is stored and counted once. Each item says whether its leaf is
    /// in flight under its lease.
    ///
    /// # Errors
    /// The store write failed: nothing of the batch is in the book, and the
    /// leaves that were in flight are released, so that they are selected again
    /// (their leases ended with the result; nothing else would release them).
    pub fn store<S: NodeStore>(
        &mut self,
        live: &mut LiveBook<S>,
        batch: Vec<(Leaf, Thought, bool)>,
    ) -> Result<usize, BookError> {
        let before = live.book().len();
        let held: Vec<Key> = batch
            .iter()
            .filter(|(_, _, held)| *held)
            .map(|(leaf, _, _)| leaf.key)
            .collect();
        let items = batch
            .into_iter()
            .map(|(leaf, thought, _)| (leaf, thought))
            .collect();
        if let Err(e) = live.complete_batch(items) {
            for key in held {
                // Not in flight any more only if another lease's result for the
                // same position was stored meanwhile: nothing to release then.
                let _ = live.abandon_key(key);
            }
            return Err(e);
        }
        let added = live.book().len().saturating_sub(before);
        self.thought += added as u64;
        Ok(added)
    }

    /// Quarantines a leaf whose results keep failing: bans the edge that leads to
    /// it and records the quarantine with `note` (persisted; `book-tools stats`
    /// lists it, `book-tools unban` lifts it); true when recorded. A root has no
    /// such edge.
    ///
    /// # Errors
    /// The ban could not be stored.
    pub fn quarantine<S: NodeStore>(
        live: &mut LiveBook<S>,
        leaf: &Leaf,
        note: &str,
    ) -> Result<bool, BookError> {
        match leaf.parent {
            Some((parent, mv)) => {
                live.ban(parent, mv)?;
                let record = format!("{}\t{note}", leaf.sfen());
                live.store_mut().record_quarantine(parent, mv, &record)?;
                Ok(true)
            }
            None => Ok(false),
        }
    }
}

/// Whether a run on this book could have handed out `position`, for a result
/// whose lease is unknown: a lease names a root, or a child of a thought position
/// (the selector descends only through thought positions, following a child held
/// as its colour-flipped twin as the book links twins), at most one ply past the
/// run's ply limit (a thought position past it scores as a draw and is not
/// descended). The parent is found among the positions one move back
/// ([`Position::predecessor_keys`]) held in the book, and the move confirmed
/// forward. `Ok(Some((parent, move)))` when found under its own parent,
/// `Ok(None)` for a root or a child of a twin.
///
/// # Errors
/// Why no lease could have named it (the result is forged or corrupt).
fn could_be_handed_out<S: NodeStore>(
    live: &LiveBook<S>,
    position: &Position,
) -> Result<Option<(NodeId, Move)>, String> {
    let limit = live.config().ply_limit;
    if position.ply() > limit.saturating_add(1) {
        return Err(format!(
            "`{}` is at ply {}, past the run's ply limit {limit}: no lease names it",
            position.to_sfen(),
            position.ply()
        ));
    }
    let key = position.key();
    if live
        .roots()
        .iter()
        .any(|root| root.key() == key || root.flipped_key() == key)
    {
        return Ok(None);
    }
    let book = live.book();
    let mut tried = std::collections::HashSet::new();
    for (own, twin) in position.predecessor_keys() {
        for candidate in [own, twin] {
            let Some(id) = book.get(candidate) else {
                continue;
            };
            if !tried.insert(id) {
                continue;
            }
            let Ok(parent) = book.position_of(id) else {
                continue;
            };
            for mv in parent.legal_moves() {
                if parent.key_after(mv) == key {
                    return Ok(Some((id, mv)));
                }
                if parent.flipped_key_after(mv) == key {
                    return Ok(None);
                }
            }
        }
    }
    Err(format!(
        "`{}` is neither a root nor a child of a thought position: no lease names it",
        position.to_sfen()
    ))
}

/// Why a result that names a position (`ThinkResult.sfen`, echoed from the job)
/// is not about `leaf`: its values would be stored for a position they were not
/// computed for. `None` when it names `leaf`'s position (in any SFEN spelling or
/// ply) or none (a worker that predates the field).
fn names_another_position(leaf: &Leaf, sfen: &str) -> Option<String> {
    if sfen.is_empty() || sfen == leaf.sfen() {
        return None;
    }
    match named_position(sfen) {
        Ok(named) if named.key() == leaf.key => None,
        Ok(_) => Some(format!(
            "the result is for `{sfen}`, but the lease's position is `{}`",
            leaf.sfen()
        )),
        Err(reason) => Some(reason),
    }
}

/// The position a result names (`ThinkResult.sfen`).
fn named_position(sfen: &str) -> Result<Position, String> {
    Position::from_sfen(sfen)
        .map_err(|e| format!("the result's position `{sfen}` is not an SFEN: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leaves_of_a_failed_store_write_are_selected_again() {
        use stera_book::{DryRun, MemoryStore, RunConfig};
        let mut store = MemoryStore::new();
        store
            .save_config(&RunConfig {
                roots: vec!["startpos".into()],
                ..RunConfig::default()
            })
            .unwrap();
        // A store that refuses every write.
        let mut live = LiveBook::open(DryRun::new(store), None).unwrap();
        let mut jobs = ThinkJobs::new(Selector::new(), Limits::default(), None);
        let leaf = jobs.select(&mut live, 1).unwrap().pop().expect("the root");
        assert!(
            jobs.select(&mut live, 1).unwrap().is_empty(),
            "the root is in flight"
        );
        let thought = Thought {
            values: vec![0; leaf.position.legal_move_count()],
            depths: None,
            evaluator: "engine".into(),
            timestamp: 0,
        };
        let key = leaf.key;
        assert!(jobs.store(&mut live, vec![(leaf, thought, true)]).is_err());
        let again = jobs.select(&mut live, 1).unwrap().pop().expect("released");
        assert_eq!(again.key, key);
        assert_eq!(jobs.thought(), 0);
    }

    #[test]
    fn a_result_must_name_the_leased_position_in_any_spelling_or_none() {
        let position = Position::from_position_command("startpos moves 7g7f").unwrap();
        let leaf = Leaf {
            root: 0,
            path: Vec::new(),
            parent: None,
            key: position.key(),
            position,
        };
        assert_eq!(names_another_position(&leaf, ""), None);
        assert_eq!(names_another_position(&leaf, &leaf.sfen()), None);
        // Another ply, the same position.
        let other_ply = format!("{} 77", leaf.position.to_sfen_without_ply());
        assert_eq!(names_another_position(&leaf, &other_ply), None);
        let other = names_another_position(&leaf, stera_rules::STARTPOS_SFEN).unwrap();
        assert!(other.contains("the lease's position is"), "{other}");
        let broken = names_another_position(&leaf, "sfen x").unwrap();
        assert!(broken.contains("not an SFEN"), "{broken}");
    }

    #[test]
    fn a_parked_leaf_comes_back_as_the_same_position_under_the_same_parent() {
        let mut position = Position::startpos();
        let mut path = Vec::new();
        for usi in ["7g7f", "3c3d", "2g2f", "8c8d"] {
            path.push(position.play_usi(usi).unwrap());
        }
        let last = *path.last().unwrap();
        let leaf = Leaf {
            root: 2,
            path,
            parent: Some((NodeId(41), last)),
            key: position.key(),
            position,
        };
        let parked = ParkedLeaf::park(&leaf);
        let back = parked.unpark().unwrap();
        assert_eq!(back.root, 2);
        assert_eq!(back.parent, leaf.parent);
        assert_eq!(back.key, leaf.key);
        assert_eq!(back.sfen(), leaf.sfen());
        assert_eq!(back.position.legal_moves(), leaf.position.legal_moves());
        assert!(back.path.is_empty());
    }

    #[test]
    fn a_parked_leaf_whose_sfen_lost_its_key_is_refused() {
        let leaf = Leaf {
            root: 0,
            path: Vec::new(),
            parent: None,
            key: Key(7),
            position: Position::startpos(),
        };
        let err = ParkedLeaf::park(&leaf).unpark().unwrap_err();
        assert!(err.contains("does not have key"), "{err}");
    }
}
