//! Who is to blame for a failed evaluation: the worker (its engine) or the
//! position. A broken engine fails every position it is given, and counting its
//! failures against the positions quarantined thousands of healthy ones within
//! seconds; so failures are counted per worker and per position:
//!
//! * a worker whose jobs fail `max_worker_failures` times in a row (no
//!   success between) is refused: its stream is closed with a reason, and it may
//!   not connect again in this run;
//! * a position is quarantined only when it failed `max_position_failures`
//!   times **and** on more than one distinct worker, counting only workers that
//!   are not refused.
//!
//! The worker's check comes first, so a single broken worker is stopped before
//! any position is banned for its failures; and the failures of a refused worker
//! stop counting, so a broken worker that a supervisor restarts under a new id
//! (the default id holds the process id) never adds up to a quarantine with its
//! earlier selves. No tokio, no clock: the dispatcher feeds it.

use std::collections::{HashMap, HashSet};

use crate::leases::StreamId;

/// How many positions with failures are remembered at most; beyond it the
/// oldest counts are dropped (a position then starts counting again).
pub const REMEMBERED_FAILED_POSITIONS: usize = 100_000;

/// What one failure leads to.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Consequence {
    /// The worker (by id) is refused from now on, with this reason.
    pub refuse: Option<String>,
    /// The position reached its limit on several workers: quarantine it (once).
    pub quarantine: Option<PositionFailures>,
}

/// A position's failures when it is quarantined.
#[derive(Debug, PartialEq, Eq)]
pub struct PositionFailures {
    pub failures: u32,
    pub workers: usize,
}

#[derive(Debug, Default)]
struct Streak {
    failures: u32,
    last_reason: String,
}

/// Failure counts per worker and per position.
#[derive(Debug)]
pub struct Blame {
    max_position_failures: u32,
    max_worker_failures: u32,
    /// The worker id of each open stream.
    workers: HashMap<StreamId, String>,
    streaks: HashMap<String, Streak>,
    refused: HashSet<String>,
    /// Per position key: failures per worker id.
    positions: HashMap<u128, HashMap<String, u32>>,
    /// Quarantined in this run: never counted again.
    quarantined: HashSet<u128>,
    order: std::collections::VecDeque<u128>,
}

impl Blame {
    /// Positions are quarantined after `max_position_failures` failures on at
    /// least two workers; a worker is refused after `max_worker_failures` failures
    /// in a row.
    #[must_use]
    pub fn new(max_position_failures: u32, max_worker_failures: u32) -> Self {
        Self {
            max_position_failures: max_position_failures.max(1),
            max_worker_failures: max_worker_failures.max(1),
            workers: HashMap::new(),
            streaks: HashMap::new(),
            refused: HashSet::new(),
            positions: HashMap::new(),
            quarantined: HashSet::new(),
            order: std::collections::VecDeque::new(),
        }
    }

    /// A stream of worker `worker_id` opened.
    pub fn connect(&mut self, stream: StreamId, worker_id: &str) {
        self.workers.insert(stream, worker_id.to_owned());
    }

    /// A stream closed.
    pub fn disconnect(&mut self, stream: StreamId) {
        self.workers.remove(&stream);
    }

    /// Whether the worker `worker_id` was refused in this run.
    #[must_use]
    pub fn is_refused(&self, worker_id: &str) -> bool {
        self.refused.contains(worker_id)
    }

    /// The worker id of `stream` (empty when unknown).
    #[must_use]
    pub fn worker_of(&self, stream: StreamId) -> &str {
        self.workers.get(&stream).map_or("", String::as_str)
    }

    /// A job of `stream` succeeded: its worker's streak ends.
    pub fn success(&mut self, stream: StreamId) {
        if let Some(worker) = self.workers.get(&stream) {
            self.streaks.remove(worker);
        }
    }

    /// The position with `key` is in the book: its failures are forgotten.
    pub fn stored(&mut self, key: u128) {
        self.positions.remove(&key);
    }

    /// A job of `stream` failed (`position`: the key of a think job's position).
    pub fn failure(
        &mut self,
        stream: StreamId,
        position: Option<u128>,
        reason: &str,
    ) -> Consequence {
        let mut out = Consequence::default();
        // A stream closed (or refused) meanwhile: its worker is unknown, and its
        // failure must not pass for another worker's.
        let Some(worker) = self.workers.get(&stream).cloned() else {
            return out;
        };
        if !self.refused.contains(&worker) {
            let streak = self.streaks.entry(worker.clone()).or_default();
            streak.failures += 1;
            reason.clone_into(&mut streak.last_reason);
            if streak.failures >= self.max_worker_failures {
                out.refuse = Some(format!(
                    "its last {} jobs failed, none succeeded in between (last: {})",
                    streak.failures, streak.last_reason
                ));
                self.refused.insert(worker.clone());
                self.streaks.remove(&worker);
            }
        }
        let Some(key) = position else {
            return out;
        };
        if self.quarantined.contains(&key) {
            return out;
        }
        if !self.positions.contains_key(&key) {
            self.order.push_back(key);
            while self.order.len() > REMEMBERED_FAILED_POSITIONS {
                if let Some(old) = self.order.pop_front() {
                    self.positions.remove(&old);
                }
            }
        }
        let per_worker = self.positions.entry(key).or_default();
        *per_worker.entry(worker).or_insert(0) += 1;
        let refused = &self.refused;
        let counted = per_worker.iter().filter(|(w, _)| !refused.contains(*w));
        let (failures, workers) = counted.fold((0u32, 0usize), |(f, w), (_, n)| (f + n, w + 1));
        if failures >= self.max_position_failures && workers >= 2 {
            self.positions.remove(&key);
            self.quarantined.insert(key);
            out.quarantine = Some(PositionFailures { failures, workers });
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_worker_never_quarantines_and_is_refused_after_its_streak() {
        let mut b = Blame::new(2, 5);
        b.connect(1, "broken");
        for i in 0..4u128 {
            let c = b.failure(1, Some(i % 2), "engine crashed");
            assert_eq!(c, Consequence::default(), "failure {i}");
        }
        let c = b.failure(1, Some(0), "engine crashed");
        assert!(c.quarantine.is_none());
        assert!(c.refuse.unwrap().contains("engine crashed"));
        assert!(b.is_refused("broken"));
        // A reconnected stream of the same worker stays refused.
        b.connect(2, "broken");
        assert!(b.is_refused(b.worker_of(2)));
    }

    #[test]
    fn a_refused_worker_restarted_under_a_new_id_quarantines_nothing() {
        let mut b = Blame::new(2, 3);
        b.connect(1, "host-100");
        for _ in 0..3 {
            assert!(b.failure(1, Some(9), "crash").quarantine.is_none());
        }
        assert!(b.is_refused("host-100"));
        b.connect(2, "host-101");
        let c = b.failure(2, Some(9), "crash");
        assert!(c.quarantine.is_none(), "{c:?}");
        // A second healthy worker that also fails it does quarantine it.
        b.connect(3, "other");
        assert!(b.failure(3, Some(9), "crash").quarantine.is_some());
    }

    #[test]
    fn a_success_ends_the_streak() {
        let mut b = Blame::new(10, 3);
        b.connect(1, "w");
        b.failure(1, Some(1), "x");
        b.failure(1, Some(2), "x");
        b.success(1);
        b.failure(1, Some(3), "x");
        b.failure(1, Some(4), "x");
        assert!(!b.is_refused("w"));
    }

    #[test]
    fn failures_on_two_workers_quarantine_once() {
        let mut b = Blame::new(3, 100);
        b.connect(1, "a");
        b.connect(2, "b");
        assert!(b.failure(1, Some(7), "x").quarantine.is_none());
        assert!(b.failure(1, Some(7), "x").quarantine.is_none());
        // Two failures on one worker, one on another: three on two workers.
        let c = b.failure(2, Some(7), "x");
        assert_eq!(
            c.quarantine,
            Some(PositionFailures {
                failures: 3,
                workers: 2
            })
        );
        assert!(b.failure(2, Some(7), "x").quarantine.is_none());
        // A stored position starts again.
        b.failure(1, Some(8), "x");
        b.stored(8);
        b.failure(2, Some(8), "x");
        assert!(b.failure(2, Some(8), "x").quarantine.is_none());
    }

    /// Moved from the lease table with the failure counts per position: a
    /// position reaches its limit once, then is not counted again.
    #[test]
    fn failures_quarantine_once() {
        let mut b = Blame::new(3, 100);
        b.connect(1, "a");
        b.connect(2, "b");
        assert!(b.failure(1, Some(7), "x").quarantine.is_none());
        assert!(b.failure(2, Some(7), "x").quarantine.is_none());
        assert!(b.failure(1, Some(7), "x").quarantine.is_some());
        assert!(b.failure(2, Some(7), "x").quarantine.is_none());
    }
}
