//! What the status RPC, the dashboard and the metrics read without going through the
//! dispatcher: connected workers (a concurrent map) and counters.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use dashmap::DashMap;
use stera_proto::v1::WorkerStatus;

use crate::leases::StreamId;

mod learning;
pub use learning::{LearningBoard, OpponentGames};

/// One connected worker stream.
#[derive(Debug, Clone)]
pub struct WorkerEntry {
    pub worker_id: String,
    pub engine: String,
    pub slots: u32,
    pub in_flight: u32,
    pub completed: u64,
    pub connected: Instant,
}

/// Why a result was rejected (a metric label, so a closed set).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RejectReason {
    /// The lease is unknown or long expired.
    UnknownLease,
    /// The lease belongs to another worker's stream.
    ForeignLease,
    /// The result fails validation (a legal move missing, a value out of range...).
    Invalid,
    /// The store write failed; the positions were requeued.
    StoreFailed,
}

impl RejectReason {
    /// Every reason, in label order.
    pub const ALL: [Self; 4] = [
        Self::UnknownLease,
        Self::ForeignLease,
        Self::Invalid,
        Self::StoreFailed,
    ];

    /// The metric label value.
    #[must_use]
    pub fn label(self) -> &'static str {
        match self {
            Self::UnknownLease => "unknown_lease",
            Self::ForeignLease => "foreign_lease",
            Self::Invalid => "invalid",
            Self::StoreFailed => "store_failed",
        }
    }
}

/// Why a lease went back to selection (a metric label, so a closed set).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequeueReason {
    /// Not renewed by a heartbeat within the lease time.
    Expired,
    /// The worker's stream ended.
    Disconnected,
    /// The worker gave it back (stopping, or its evaluation failed).
    GivenBack,
}

impl RequeueReason {
    /// Every reason, in label order.
    pub const ALL: [Self; 3] = [Self::Expired, Self::Disconnected, Self::GivenBack];

    /// The metric label value.
    #[must_use]
    pub fn label(self) -> &'static str {
        match self {
            Self::Expired => "expired",
            Self::Disconnected => "disconnected",
            Self::GivenBack => "given_back",
        }
    }
}

/// Monotonic counters since start, and the latest book figures.
#[derive(Debug, Default)]
pub struct Counters {
    pub thought: AtomicU64,
    pub rejected: AtomicU64,
    /// Rejections by [`RejectReason`] (indexed like `RejectReason::ALL`).
    pub rejected_by: [AtomicU64; 5],
    pub requeued: AtomicU64,
    /// Requeues by [`RequeueReason`] (indexed like `RequeueReason::ALL`).
    pub requeued_by: [AtomicU64; 3],
    pub expired: AtomicU64,
    pub quarantined: AtomicU64,
    /// Workers refused because their jobs kept failing.
    pub workers_refused: AtomicU64,
    /// Quarantined positions recorded in the store (all runs, until lifted).
    pub quarantined_in_store: AtomicU64,
    /// Results for positions already in the book (acknowledged, not stored again).
    pub duplicates: AtomicU64,
    pub selections: AtomicU64,
    pub selected_leaves: AtomicU64,
    /// Sum of selection latencies in microseconds.
    pub selection_micros: AtomicU64,
    pub book_nodes: AtomicU64,
    pub leaf_edges: AtomicU64,
    pub in_flight: AtomicU64,
    /// Bytes of the store directory, measured every so often.
    pub store_bytes: AtomicU64,
    /// Size and free bytes of the store's file system, measured with
    /// `store_bytes` (0: not measured).
    pub store_disk_size: AtomicU64,
    pub store_disk_free: AtomicU64,
    /// Seconds between periodic backups (`--backup-every-mins`; 0: none).
    pub backup_every_secs: AtomicU64,
    /// Seconds between periodic exports (`--export-every-mins` with `--export`;
    /// 0: none).
    pub export_every_secs: AtomicU64,
    /// 1 while the store's disk has room for results (jobs are handed out), 0
    /// while it is full (see `store_space`).
    pub store_writable: AtomicU64,
    pub exports_ok: AtomicU64,
    pub exports_failed: AtomicU64,
    /// Export requests that were the caller's mistake, no export ran: invalid
    /// (bad options, an unknown opponent, a malformed path) and refused (a
    /// path the caller may not write to, a file this store did not write).
    pub exports_invalid: AtomicU64,
    pub exports_refused: AtomicU64,
    /// Duration of the last export in milliseconds.
    pub last_export_ms: AtomicU64,
    /// When the last export succeeded (Unix seconds, 0: never).
    pub last_export_success_unix: AtomicU64,
    /// Backups by outcome: written, failed, refused (a path a caller may not
    /// write to, or that exists already: no backup ran).
    pub backups_ok: AtomicU64,
    pub backups_failed: AtomicU64,
    pub backups_refused: AtomicU64,
    /// Backup requests whose path is malformed (a NUL byte, a name too long).
    pub backups_invalid: AtomicU64,
    /// When the last backup succeeded (Unix seconds, 0: never), how long it
    /// took (milliseconds) and its size on disk (bytes).
    pub last_backup_success_unix: AtomicU64,
    pub last_backup_ms: AtomicU64,
    pub last_backup_bytes: AtomicU64,
    /// Messages refused for breaking a protocol bound, by field (indexed like
    /// `stera_proto::limits::Field::ALL`).
    pub violations_by: [AtomicU64; stera_proto::limits::Field::ALL.len()],
    /// Games counted by this process, by outcome.
    pub games_black: AtomicU64,
    pub games_white: AtomicU64,
    pub games_draw: AtomicU64,
    /// Games of this process refused (a game that broke the rules, its opening
    /// or its claimed result).
    pub games_rejected: AtomicU64,
    /// Games counted by this process but not in `--out-games` (its writes
    /// stopped at the first that failed).
    pub games_unwritten: AtomicU64,
    /// Self-play games being played.
    pub play_in_flight: AtomicU64,
    /// Games recorded in the store (all runs).
    pub games_stored: AtomicU64,
    /// Learning games counted by this process.
    pub learning_games: AtomicU64,
    /// Compaction passes run, and the node chunks they merged away.
    pub compactions: AtomicU64,
    pub chunks_merged: AtomicU64,
}

/// How a backup ended (the `result` label of the backup counter).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BackupOutcome {
    /// Written in `took`, `bytes` on disk.
    Written { took: Duration, bytes: u64 },
    /// It ran and failed (disk full, unwritable directory...): the message.
    Failed(String),
    /// Its path was refused before anything ran: a caller's mistake (a typo, a
    /// name that exists already), not a failing backup.
    Refused,
    /// Its path is malformed (a NUL byte, a name too long): a caller's mistake.
    Invalid,
}

/// A request that was the caller's mistake: nothing ran, nothing failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mistake {
    /// INVALID_ARGUMENT: options, opponents or a path that cannot be.
    Invalid,
    /// PERMISSION_DENIED or ALREADY_EXISTS: a path the caller may not write.
    Refused,
}

/// One point of the progress-over-time chart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct HistorySample {
    pub unix_ms: u64,
    pub nodes: u64,
    pub thought: u64,
    pub in_flight: u64,
    pub workers: u64,
}

/// What kind of problem an entry of the dashboard's list is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProblemKind {
    /// A result was rejected.
    Rejected,
    /// A worker broke a protocol bound.
    Protocol,
    /// A lease expired.
    Expired,
    /// A worker gave a job back because it failed there.
    Failed,
    /// A position was quarantined.
    Quarantined,
    /// A worker was refused.
    Refused,
    /// Nothing is left to think.
    Stalled,
    /// An export failed.
    Export,
    /// A backup failed.
    Backup,
    /// The store's disk is full.
    StoreFull,
    /// A selection failed.
    Selection,
    /// `--out-games` could not be written.
    GamesFile,
}

impl ProblemKind {
    /// The name the page and `/api/status` show.
    #[must_use]
    pub fn label(self) -> &'static str {
        match self {
            Self::Rejected => "rejected",
            Self::Protocol => "protocol",
            Self::Expired => "expired",
            Self::Failed => "failed",
            Self::Quarantined => "quarantined",
            Self::Refused => "refused",
            Self::Stalled => "stalled",
            Self::Export => "export",
            Self::Backup => "backup",
            Self::StoreFull => "store full",
            Self::Selection => "selection",
            Self::GamesFile => "games file",
        }
    }
}

impl serde::Serialize for ProblemKind {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.label())
    }
}

/// Something that went wrong, for the dashboard's "recent problems" list.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Problem {
    pub unix_ms: u64,
    pub kind: ProblemKind,
    pub message: String,
}

/// One history sample per this interval...
pub const HISTORY_EVERY: Duration = Duration::from_secs(10);
/// ...for the last day.
pub const HISTORY_LEN: usize = 8640;
/// Problems kept for the dashboard.
pub const PROBLEMS_KEPT: usize = 50;

#[derive(Debug, Default)]
pub struct Registry {
    /// When this process started (Unix milliseconds; 0 for a registry made by
    /// `default`, which tests use).
    pub started_unix_ms: u64,
    pub workers: DashMap<StreamId, WorkerEntry>,
    pub counters: Counters,
    /// The learning games of this run.
    pub learning: LearningBoard,
    /// (time, thought) samples for rates, one every few seconds.
    samples: Mutex<Vec<(Instant, u64)>>,
    history: Mutex<VecDeque<HistorySample>>,
    problems: Mutex<VecDeque<Problem>>,
}

/// Milliseconds since the Unix epoch of `t` (0 for a time before it).
#[must_use]
pub fn unix_ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Milliseconds since the Unix epoch now.
#[must_use]
pub fn unix_ms_now() -> u64 {
    unix_ms(SystemTime::now())
}

impl Registry {
    /// An empty registry of a process that starts now.
    #[must_use]
    pub fn starting_now() -> Self {
        Self {
            started_unix_ms: unix_ms_now(),
            ..Self::default()
        }
    }

    pub fn record_selection(&self, took: Duration, leaves: usize) {
        self.counters.selections.fetch_add(1, Ordering::Relaxed);
        self.counters
            .selected_leaves
            .fetch_add(leaves as u64, Ordering::Relaxed);
        self.counters.selection_micros.fetch_add(
            u64::try_from(took.as_micros()).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
    }

    /// Counts a rejected result and keeps its reason for the dashboard.
    pub fn record_rejection(&self, reason: RejectReason, message: &str) {
        self.counters.rejected.fetch_add(1, Ordering::Relaxed);
        if let Some(i) = RejectReason::ALL.iter().position(|r| *r == reason) {
            self.counters.rejected_by[i].fetch_add(1, Ordering::Relaxed);
        }
        self.record_problem(
            ProblemKind::Rejected,
            format!("{}: {message}", reason.label()),
        );
    }

    /// Counts a message refused for breaking a protocol bound; the stream that sent
    /// it is closed. `who` identifies the stream or peer for the dashboard.
    pub fn record_violation(&self, violation: &stera_proto::limits::Violation, who: &str) {
        self.counters.violations_by[violation.field.index()].fetch_add(1, Ordering::Relaxed);
        self.record_problem(ProblemKind::Protocol, format!("{who}: {violation}"));
    }

    /// Counts `n` leases put back for selection.
    pub fn record_requeue(&self, reason: RequeueReason, n: u64) {
        self.counters.requeued.fetch_add(n, Ordering::Relaxed);
        if let Some(i) = RequeueReason::ALL.iter().position(|r| *r == reason) {
            self.counters.requeued_by[i].fetch_add(n, Ordering::Relaxed);
        }
    }

    /// Counts one export and, if it worked, when.
    pub fn record_export(&self, took: Duration, result: &Result<(), String>) {
        let ms = u64::try_from(took.as_millis()).unwrap_or(u64::MAX);
        self.counters.last_export_ms.store(ms, Ordering::Relaxed);
        match result {
            Ok(()) => {
                self.counters.exports_ok.fetch_add(1, Ordering::Relaxed);
                self.counters
                    .last_export_success_unix
                    .store(unix_ms_now() / 1000, Ordering::Relaxed);
            }
            Err(e) => {
                self.counters.exports_failed.fetch_add(1, Ordering::Relaxed);
                self.record_problem(ProblemKind::Export, e.clone());
            }
        }
    }

    /// Counts an export request that was the caller's mistake (no export ran).
    pub fn record_export_mistake(&self, mistake: Mistake) {
        let counter = match mistake {
            Mistake::Invalid => &self.counters.exports_invalid,
            Mistake::Refused => &self.counters.exports_refused,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts one backup by its outcome; a failure is kept for the dashboard.
    pub fn record_backup(&self, outcome: &BackupOutcome) {
        let c = &self.counters;
        match outcome {
            BackupOutcome::Written { took, bytes } => {
                c.backups_ok.fetch_add(1, Ordering::Relaxed);
                c.last_backup_ms.store(
                    u64::try_from(took.as_millis()).unwrap_or(u64::MAX),
                    Ordering::Relaxed,
                );
                c.last_backup_bytes.store(*bytes, Ordering::Relaxed);
                c.last_backup_success_unix
                    .store(unix_ms_now() / 1000, Ordering::Relaxed);
            }
            BackupOutcome::Failed(message) => {
                c.backups_failed.fetch_add(1, Ordering::Relaxed);
                self.record_problem(ProblemKind::Backup, message.clone());
            }
            BackupOutcome::Refused => {
                c.backups_refused.fetch_add(1, Ordering::Relaxed);
            }
            BackupOutcome::Invalid => {
                c.backups_invalid.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Counts a compaction pass that merged `removed` chunks away.
    pub fn record_compaction(&self, removed: usize) {
        self.counters.compactions.fetch_add(1, Ordering::Relaxed);
        self.counters
            .chunks_merged
            .fetch_add(removed as u64, Ordering::Relaxed);
    }

    /// Keeps `message` in the recent-problems list (oldest dropped first).
    pub fn record_problem(&self, kind: ProblemKind, message: String) {
        if let Ok(mut p) = self.problems.lock() {
            p.push_back(Problem {
                unix_ms: unix_ms_now(),
                kind,
                message,
            });
            while p.len() > PROBLEMS_KEPT {
                p.pop_front();
            }
        }
    }

    /// The recent problems, oldest first.
    pub fn problems(&self) -> Vec<Problem> {
        self.problems
            .lock()
            .map(|p| p.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// The progress history, oldest first.
    pub fn history(&self) -> Vec<HistorySample> {
        self.history
            .lock()
            .map(|h| h.iter().copied().collect())
            .unwrap_or_default()
    }

    pub fn set_book(&self, nodes: u64, leaf_edges: u64, in_flight: u64) {
        self.counters.book_nodes.store(nodes, Ordering::Relaxed);
        self.counters
            .leaf_edges
            .store(leaf_edges, Ordering::Relaxed);
        self.counters.in_flight.store(in_flight, Ordering::Relaxed);
        let now = Instant::now();
        let thought = self.counters.thought.load(Ordering::Relaxed);
        if let Ok(mut s) = self.samples.lock()
            && s.last()
                .is_none_or(|(t, _)| now.duration_since(*t) >= Duration::from_secs(2))
        {
            s.push((now, thought));
            if s.len() > 64 {
                s.remove(0);
            }
        }
        let unix_ms = unix_ms_now();
        if let Ok(mut h) = self.history.lock()
            && h.back().is_none_or(|last| {
                unix_ms.saturating_sub(last.unix_ms) >= HISTORY_EVERY.as_millis() as u64
            })
        {
            h.push_back(HistorySample {
                unix_ms,
                nodes,
                thought,
                in_flight,
                workers: self.workers.len() as u64,
            });
            while h.len() > HISTORY_LEN {
                h.pop_front();
            }
        }
    }

    /// Evaluation slots of all connected workers.
    pub fn worker_slots(&self) -> u64 {
        self.workers.iter().map(|w| u64::from(w.slots)).sum()
    }

    /// Thought positions per second over the last minute or so.
    pub fn thought_rate(&self) -> f64 {
        let Ok(s) = self.samples.lock() else {
            return 0.0;
        };
        let now_thought = self.counters.thought.load(Ordering::Relaxed);
        let Some((t0, n0)) = s
            .iter()
            .rev()
            .find(|(t, _)| t.elapsed() >= Duration::from_secs(60))
            .or_else(|| s.first())
        else {
            return 0.0;
        };
        let secs = t0.elapsed().as_secs_f64();
        if secs <= 0.0 {
            0.0
        } else {
            (now_thought.saturating_sub(*n0)) as f64 / secs
        }
    }

    pub fn worker_status(&self) -> Vec<WorkerStatus> {
        let mut out: Vec<WorkerStatus> = self
            .workers
            .iter()
            .map(|w| {
                let secs = w.connected.elapsed().as_secs_f64();
                WorkerStatus {
                    worker_id: w.worker_id.clone(),
                    engine: w.engine.clone(),
                    slots: w.slots,
                    in_flight: w.in_flight,
                    completed: w.completed,
                    results_per_second: if secs > 0.0 {
                        w.completed as f64 / secs
                    } else {
                        0.0
                    },
                }
            })
            .collect();
        out.sort_by(|a, b| a.worker_id.cmp(&b.worker_id));
        out
    }
}
