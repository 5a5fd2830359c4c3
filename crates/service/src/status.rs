//! The status document: one JSON object for the state of a running coordinator,
//! the same from the status page's `GET /api/status` and from `book-tools remote
//! status --json`. Both make it of the coordinator's Status reply with
//! [`StatusDocument::from_reply`], so one coordinator state prints one document.
//!
//! Every key, its unit and its meaning are listed in README.md, "The status
//! document"; a test here fails when a key is added, renamed or removed without
//! that list.

use serde::{Deserialize, Serialize};
use stera_proto::v1::StatusReply;

/// The schema version of [`StatusDocument`], its `version` key. It goes up when
/// a key is renamed or removed or changes its type, unit or meaning; a key
/// added leaves it as it is (readers ignore keys they do not know).
///
/// 2: the games of a run are in two places, self-play (`games_black`,
/// `games_white`, `games_draw`) and learning (`learning_*`); a reader that
/// took the first for all of a run's games must read both.
pub const STATUS_DOCUMENT_VERSION: u32 = 2;

/// The state of a running coordinator (README.md, "The status document").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatusDocument {
    /// [`STATUS_DOCUMENT_VERSION`].
    pub version: u32,
    /// The coordinator's software version.
    pub coordinator_version: String,
    /// When the coordinator started, Unix milliseconds.
    pub started_unix_ms: u64,
    /// When the coordinator made this document, Unix milliseconds by its clock.
    pub now_unix_ms: u64,
    /// Whole seconds from `started_unix_ms` to `now_unix_ms`.
    pub uptime_secs: u64,
    /// Positions in the book (thought positions).
    pub nodes: u64,
    /// Move values stored in the book (the leaf edges of its graph).
    pub leaf_edges: u64,
    /// Bytes of the store directory (0: not measured).
    pub store_bytes: u64,
    /// Positions thought by this run.
    pub thought: u64,
    /// Positions thought per second over the last minute or so.
    pub thought_per_second: f64,
    /// Leases (jobs of every kind) handed out and not yet answered.
    pub in_flight: u64,
    /// Selection searches of this run.
    pub selections: u64,
    /// Their mean duration in milliseconds.
    pub mean_selection_ms: f64,
    /// Workers connected.
    pub workers_connected: u64,
    /// Job slots of the connected workers (each one's engines plus its prefetch).
    pub job_slots: u64,
    /// Results of this run rejected.
    pub rejected: u64,
    /// Leases of this run that expired.
    pub expired: u64,
    /// Leases of this run put back for selection (expired, disconnected, given back).
    pub requeued: u64,
    /// Positions quarantined by this run.
    pub quarantined: u64,
    /// Results of this run for positions already in the book.
    pub duplicates: u64,
    /// Games recorded in the store (every run).
    pub games_stored: u64,
    /// Games of this run won by black.
    pub games_black: u64,
    /// Games of this run won by white.
    pub games_white: u64,
    /// Games of this run drawn.
    pub games_draw: u64,
    /// Games of this run refused.
    pub games_rejected: u64,
    /// Self-play games being played (each holds at most one search job).
    pub games_in_flight: u64,
    /// Exports of this run written.
    pub exports_ok: u64,
    /// Exports of this run that failed.
    pub exports_failed: u64,
    /// When the last export was written, Unix seconds (0: none yet).
    pub last_export_unix: u64,
    /// How long the last export took, milliseconds.
    pub last_export_ms: u64,
    /// Backups of this run written.
    pub backups_ok: u64,
    /// Backups of this run that failed.
    pub backups_failed: u64,
    /// Backups of this run refused before they ran.
    pub backups_refused: u64,
    /// When the last backup was written, Unix seconds (0: none yet).
    pub last_backup_unix: u64,
    /// How long it took, milliseconds.
    pub last_backup_ms: u64,
    /// Its size on disk, bytes.
    pub last_backup_bytes: u64,
    /// Learning games counted in this run (recorded against an opponent, or
    /// with nothing to teach).
    pub learning_games: u64,
    /// The run's learning games target (`--learn-games`; 0: no learning).
    pub learning_target: u64,
    /// Learning games counted per second since the first started.
    pub learning_games_per_second: f64,
    /// Seconds left to the target at that rate (0 once reached, or every key
    /// position settled).
    pub learning_left_secs: u64,
    /// Key positions whose move is settled.
    pub learning_key_positions_settled: u64,
    /// Key positions in the book.
    pub learning_key_positions: u64,
    /// The probability at which a key position counts as settled.
    pub learning_settled_probability: f64,
    /// Every key position settled under `--learn-stop-when-settled`: no new
    /// learning game starts.
    pub learning_all_settled: bool,
    /// The opponents this run's learning games were recorded against.
    pub learning_opponents: Vec<LearningOpponent>,
    /// The book's principal variation from each root.
    pub roots: Vec<RootLine>,
    /// How old `roots` are, milliseconds.
    pub roots_age_ms: u64,
    /// The connected workers, by id.
    pub workers: Vec<Worker>,
    /// Progress over time, oldest first.
    pub history: Vec<HistoryPoint>,
    /// Recent problems, oldest first.
    pub problems: Vec<Problem>,
}

/// The principal variation from one root.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RootLine {
    /// The root as given (`startpos`, `startpos moves ...`, `sfen ...`).
    pub root: String,
    /// The moves, USI.
    pub pv: Vec<String>,
    /// Its value, centipawns from the root mover's view.
    pub value: i32,
}

/// One connected worker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Worker {
    /// Its `--worker-id`.
    pub id: String,
    /// Its evaluator's identity.
    pub engine: String,
    /// Its job slots.
    pub job_slots: u32,
    /// Its leases in flight.
    pub in_flight: u32,
    /// Results of it accepted since it connected.
    pub completed: u64,
    /// `completed` per second since it connected.
    pub per_second: f64,
}

/// The learning games of a run against one opponent of the store.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LearningOpponent {
    /// The store's number of the opponent, from 1 (as `book-tools stats` and
    /// `--opponents` show it).
    pub number: u32,
    /// Its identity as stored (engine identity and budget).
    pub identity: String,
    /// Games recorded against it in this run.
    pub games: u64,
    /// Games recorded against it in the store (every run).
    pub games_stored: u64,
}

/// One point of the progress chart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistoryPoint {
    /// When, Unix milliseconds.
    pub unix_ms: u64,
    /// Positions in the book then.
    pub nodes: u64,
    /// Positions thought by the run then.
    pub thought: u64,
    /// Leases in flight then.
    pub in_flight: u64,
    /// Workers connected then.
    pub workers: u64,
}

/// Something that went wrong.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Problem {
    /// When, Unix milliseconds.
    pub unix_ms: u64,
    /// What kind of problem (`rejected`, `expired`, `store full`...).
    pub kind: String,
    /// What happened.
    pub message: String,
}

impl StatusDocument {
    /// The document of a coordinator's Status reply.
    #[must_use]
    pub fn from_reply(reply: StatusReply) -> Self {
        let job_slots = reply.workers.iter().map(|w| u64::from(w.slots)).sum();
        let learning = reply.learning.unwrap_or_default();
        Self {
            version: STATUS_DOCUMENT_VERSION,
            coordinator_version: reply.version,
            started_unix_ms: reply.started_unix_ms,
            now_unix_ms: reply.now_unix_ms,
            uptime_secs: reply.now_unix_ms.saturating_sub(reply.started_unix_ms) / 1000,
            nodes: reply.nodes,
            leaf_edges: reply.leaf_edges,
            store_bytes: reply.store_bytes,
            thought: reply.thought,
            thought_per_second: reply.thoughts_per_second,
            in_flight: reply.in_flight,
            selections: reply.selections,
            mean_selection_ms: reply.mean_selection_ms,
            workers_connected: reply.workers.len() as u64,
            job_slots,
            rejected: reply.rejected,
            expired: reply.expired,
            requeued: reply.requeued,
            quarantined: reply.quarantined,
            duplicates: reply.duplicates,
            games_stored: reply.games,
            games_black: reply.games_black,
            games_white: reply.games_white,
            games_draw: reply.games_draw,
            games_rejected: reply.games_rejected,
            games_in_flight: reply.play_in_flight,
            exports_ok: reply.exports_ok,
            exports_failed: reply.exports_failed,
            last_export_unix: reply.last_export_unix,
            last_export_ms: reply.last_export_ms,
            backups_ok: reply.backups_ok,
            backups_failed: reply.backups_failed,
            backups_refused: reply.backups_refused,
            last_backup_unix: reply.last_backup_unix,
            last_backup_ms: reply.last_backup_ms,
            last_backup_bytes: reply.last_backup_bytes,
            learning_games: learning.games,
            learning_target: learning.target,
            learning_games_per_second: learning.games_per_second,
            learning_left_secs: learning.left_secs,
            learning_key_positions_settled: learning.key_positions_settled,
            learning_key_positions: learning.key_positions,
            learning_settled_probability: learning.settled_probability,
            learning_all_settled: learning.all_settled,
            learning_opponents: learning
                .opponents
                .into_iter()
                .map(|o| LearningOpponent {
                    number: o.number,
                    identity: o.identity,
                    games: o.games,
                    games_stored: o.games_stored,
                })
                .collect(),
            roots: reply
                .roots
                .into_iter()
                .map(|r| RootLine {
                    root: r.root,
                    pv: r.pv,
                    value: r.value,
                })
                .collect(),
            roots_age_ms: reply.roots_age_ms,
            workers: reply
                .workers
                .into_iter()
                .map(|w| Worker {
                    id: w.worker_id,
                    engine: w.engine,
                    job_slots: w.slots,
                    in_flight: w.in_flight,
                    completed: w.completed,
                    per_second: w.results_per_second,
                })
                .collect(),
            history: reply
                .history
                .into_iter()
                .map(|h| HistoryPoint {
                    unix_ms: h.unix_ms,
                    nodes: h.nodes,
                    thought: h.thought,
                    in_flight: h.in_flight,
                    workers: h.workers,
                })
                .collect(),
            problems: reply
                .problems
                .into_iter()
                .map(|p| Problem {
                    unix_ms: p.unix_ms,
                    kind: p.kind,
                    message: p.message,
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use stera_proto::v1;

    use super::*;

    /// A reply with one element in every list, so that every key of the
    /// document appears when it is written.
    fn full_reply() -> StatusReply {
        StatusReply {
            version: "1.2.3".into(),
            started_unix_ms: 1_000_000,
            now_unix_ms: 1_061_999,
            nodes: 5,
            roots: vec![v1::RootLine {
                root: "startpos".into(),
                pv: vec!["7g7f".into()],
                value: -12,
            }],
            workers: vec![
                v1::WorkerStatus {
                    worker_id: "a".into(),
                    slots: 3,
                    ..v1::WorkerStatus::default()
                },
                v1::WorkerStatus {
                    worker_id: "b".into(),
                    slots: 2,
                    ..v1::WorkerStatus::default()
                },
            ],
            history: vec![v1::HistorySample::default()],
            problems: vec![v1::Problem {
                unix_ms: 1_000_500,
                kind: "rejected".into(),
                message: "invalid: a move is missing".into(),
            }],
            play_in_flight: 4,
            games: 9,
            learning: Some(v1::LearningStatus {
                games: 7,
                target: 400,
                key_positions_settled: 3,
                key_positions: 12,
                opponents: vec![v1::LearningOpponent {
                    number: 2,
                    identity: "stera-builtin at 60 nodes".into(),
                    games: 6,
                    games_stored: 30,
                }],
                ..v1::LearningStatus::default()
            }),
            ..StatusReply::default()
        }
    }

    /// Every key of `value`, lists' elements as `list[].key` (the keys of
    /// objects inside lists, a list of scalars as its own key).
    fn keys(value: &serde_json::Value, prefix: &str, out: &mut BTreeSet<String>) {
        match value {
            serde_json::Value::Object(map) => {
                for (key, inner) in map {
                    let path = format!("{prefix}{key}");
                    out.insert(path.clone());
                    keys(inner, &path, out);
                }
            }
            serde_json::Value::Array(items) => {
                for item in items.iter().filter(|i| i.is_object()) {
                    keys(item, &format!("{prefix}[]."), out);
                }
            }
            _ => {}
        }
    }

    /// The keys the README's table lists: the first column's names in
    /// backquotes, between the section's heading and the next heading.
    fn documented_keys() -> BTreeSet<String> {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md");
        let readme = std::fs::read_to_string(path).unwrap();
        let section = readme
            .split("\n## The status document\n")
            .nth(1)
            .expect("README.md has a section \"The status document\"");
        let section = section.split("\n## ").next().unwrap();
        section
            .lines()
            .filter_map(|line| line.strip_prefix("| `"))
            .filter_map(|rest| rest.split_once('`'))
            .map(|(key, _)| key.to_owned())
            .collect()
    }

    #[test]
    fn the_document_writes_exactly_the_documented_keys() {
        let written = serde_json::to_value(StatusDocument::from_reply(full_reply())).unwrap();
        let mut found = BTreeSet::new();
        keys(&written, "", &mut found);
        let documented = documented_keys();
        let undocumented: Vec<_> = found.difference(&documented).collect();
        let gone: Vec<_> = documented.difference(&found).collect();
        assert!(
            undocumented.is_empty() && gone.is_empty(),
            "written but not in README.md's \"The status document\": {undocumented:?}; \
             documented but not written: {gone:?}"
        );
        // Nested keys are in the list, not only the top level.
        assert!(found.contains("workers[].job_slots"), "{found:?}");
    }

    #[test]
    fn the_document_reads_the_reply() {
        let doc = StatusDocument::from_reply(full_reply());
        assert_eq!(doc.version, 2);
        assert_eq!((doc.learning_games, doc.learning_target), (7, 400));
        assert_eq!(
            (
                doc.learning_key_positions_settled,
                doc.learning_key_positions
            ),
            (3, 12)
        );
        assert_eq!(doc.learning_opponents[0].number, 2);
        assert_eq!(doc.learning_opponents[0].games_stored, 30);
        // An older coordinator's reply has no learning: all zero.
        let older = StatusDocument::from_reply(StatusReply::default());
        assert_eq!((older.learning_games, older.learning_target), (0, 0));
        assert!(older.learning_opponents.is_empty());
        assert_eq!(doc.coordinator_version, "1.2.3");
        assert_eq!(doc.uptime_secs, 61);
        assert_eq!(doc.workers_connected, 2);
        assert_eq!(doc.job_slots, 5);
        assert_eq!(doc.games_in_flight, 4);
        assert_eq!(doc.games_stored, 9);
        assert_eq!(doc.roots[0].value, -12);
        assert_eq!(doc.problems[0].kind, "rejected");
        // What a program reads back is what was written.
        let text = serde_json::to_string(&doc).unwrap();
        let read: StatusDocument = serde_json::from_str(&text).unwrap();
        assert_eq!(read, doc);
    }
}
