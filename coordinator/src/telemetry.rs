//! The coordinator's Prometheus metrics (`stera_coordinator_*`, `stera_book_*`):
//! names, help texts, histogram buckets, and the copy of the [`Registry`] into the
//! recorder before each scrape.
//!
//! The registry stays the one source of truth (the status RPC and the dashboard read
//! it too); counters are mirrored with `absolute`, so nothing is counted twice.
//! Histograms are recorded where things happen, since a histogram cannot be
//! rebuilt from a sum. Labels are closed sets (a reason, a result): worker ids and
//! positions never become labels, they would grow without bound over months. A
//! learning opponent's number is a label: the opponents of one run are the few
//! of its pool, numbered by the store.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use metrics::{Unit, counter, describe_counter, describe_gauge, describe_histogram, gauge};
use stera_proto::limits::Field;
use stera_service::telemetry::Buckets;

use crate::registry::Registry;
use crate::registry::{RejectReason, RequeueReason};

/// Thought positions in the book (loaded and added).
pub const BOOK_NODES: &str = "stera_book_nodes";
/// Edges whose value comes from an evaluation (leaf edges of the DAG).
pub const BOOK_LEAF_EDGES: &str = "stera_book_leaf_edges";
/// Bytes of the store directory on disk.
pub const BOOK_STORE_SIZE: &str = "stera_book_store_size_bytes";
/// Size of the file system holding the store.
pub const STORE_DISK_SIZE: &str = "stera_coordinator_store_disk_size_bytes";
/// Bytes still free for the coordinator on the file system holding the store.
pub const STORE_DISK_FREE: &str = "stera_coordinator_store_disk_free_bytes";
/// Seconds between periodic backups (0: none).
pub const BACKUP_INTERVAL: &str = "stera_coordinator_backup_interval_seconds";
/// 1 while the store's disk has room for results, 0 while jobs are held back.
pub const STORE_WRITABLE: &str = "stera_coordinator_store_writable";
/// Tokio tasks alive in the coordinator (a leak shows as growth with a steady fleet).
pub const TOKIO_TASKS: &str = "stera_coordinator_tokio_tasks";
/// Compaction passes of the store run by this process.
pub const COMPACTIONS: &str = "stera_book_compactions_total";
/// Node chunks those passes merged away.
pub const CHUNKS_MERGED: &str = "stera_book_chunks_merged_total";
/// Positions added to the book by this process.
pub const THOUGHT: &str = "stera_coordinator_thought_positions_total";
/// Selection searches run.
pub const SELECTIONS: &str = "stera_coordinator_selections_total";
/// Leaves those searches returned.
pub const SELECTED_LEAVES: &str = "stera_coordinator_selected_leaves_total";
/// Latency of one selection search.
pub const SELECTION_DURATION: &str = "stera_coordinator_selection_duration_seconds";
/// Leases handed out and not yet answered.
pub const LEASES_IN_FLIGHT: &str = "stera_coordinator_leases_in_flight";
/// Work streams open.
pub const WORKERS_CONNECTED: &str = "stera_coordinator_workers_connected";
/// Evaluation slots of the connected workers.
pub const WORKER_SLOTS: &str = "stera_coordinator_worker_slots";
/// Counted games that `--out-games` does not hold (its writes stopped).
pub const GAMES_UNWRITTEN: &str = "stera_coordinator_games_unwritten_total";
/// Leases that expired without a heartbeat.
pub const LEASE_EXPIRIES: &str = "stera_coordinator_lease_expiries_total";
/// Leases put back for selection, by `reason`.
pub const LEASES_REQUEUED: &str = "stera_coordinator_leases_requeued_total";
/// Results rejected, by `reason`.
pub const RESULTS_REJECTED: &str = "stera_coordinator_results_rejected_total";
/// Results for positions already in the book.
pub const RESULTS_DUPLICATE: &str = "stera_coordinator_results_duplicate_total";
/// Positions quarantined after repeated rejections.
pub const QUARANTINED: &str = "stera_coordinator_quarantined_positions_total";
/// Workers refused because their jobs kept failing.
pub const WORKERS_REFUSED: &str = "stera_coordinator_workers_refused_total";
/// Quarantined positions recorded in the store (all runs, until lifted).
pub const BOOK_QUARANTINED: &str = "stera_book_quarantined_positions";
/// Messages refused for breaking a protocol bound, by `field`.
pub const PROTOCOL_VIOLATIONS: &str = "stera_coordinator_protocol_violations_total";
/// Log records dropped because stderr was not read (see
/// `stera_service::terminal`): logging never blocks the coordinator.
pub const LOG_RECORDS_DROPPED: &str = "stera_coordinator_log_records_dropped_total";
/// Exports, by `result` (ok, error, invalid, refused).
pub const EXPORTS: &str = "stera_coordinator_exports_total";
/// Duration of one export.
pub const EXPORT_DURATION: &str = "stera_coordinator_export_duration_seconds";
/// Seconds between periodic exports (0: none).
pub const EXPORT_INTERVAL: &str = "stera_coordinator_export_interval_seconds";
/// When the last export succeeded.
pub const LAST_EXPORT_SUCCESS: &str = "stera_coordinator_last_export_success_timestamp_seconds";
/// Backups, by `result` (ok, error, refused, invalid).
pub const BACKUPS: &str = "stera_coordinator_backups_total";
/// When the last backup succeeded.
pub const BACKUP_LAST_SUCCESS: &str = "stera_coordinator_backup_last_success_timestamp_seconds";
/// Duration of the last successful backup.
pub const BACKUP_LAST_DURATION: &str = "stera_coordinator_backup_last_duration_seconds";
/// Size on disk of the last successful backup.
pub const BACKUP_LAST_SIZE: &str = "stera_coordinator_backup_last_size_bytes";
/// Games counted into the book by this process, by `result` (black, white, draw).
pub const GAMES: &str = "stera_coordinator_games_total";
/// Learning games counted by this process (see `learn`).
pub const LEARNING_GAMES: &str = "stera_coordinator_learning_games_total";
/// Learning games of this process recorded against an opponent, by `opponent`
/// (the store's number, from 1).
pub const LEARNING_OPPONENT_GAMES: &str = "stera_coordinator_learning_opponent_games_total";
/// 1 for each opponent of this process's learning games, with its `identity`.
pub const LEARNING_OPPONENT_INFO: &str = "stera_coordinator_learning_opponent_info";
/// The run's learning games target (`--learn-games`).
pub const LEARNING_TARGET: &str = "stera_coordinator_learning_games_target";
/// Learning games counted per second since the first started.
pub const LEARNING_RATE: &str = "stera_coordinator_learning_games_per_second";
/// Seconds left to the learning target at that rate.
pub const LEARNING_LEFT: &str = "stera_coordinator_learning_time_left_seconds";
/// Key positions of the learning openings, by `state` (settled, total).
pub const LEARNING_KEY_POSITIONS: &str = "stera_coordinator_learning_key_positions";
/// Plies of one counted game.
pub const GAME_PLIES: &str = "stera_coordinator_game_plies";
/// Self-play games being played (each holds at most one search job).
pub const GAMES_IN_FLIGHT: &str = "stera_coordinator_games_in_flight";
/// Games recorded in the book's store (every run).
pub const BOOK_GAMES: &str = "stera_book_games";
/// When this process started.
pub const START_TIME: &str = "stera_coordinator_start_time_seconds";

/// Selection searches take from ~0.1 ms (a small book) to ~1 s (15M positions,
/// many leaves at once).
const SELECTION_BOUNDS: &[f64] = &[
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
];

/// Exports take from well under a second to tens of minutes at 15M positions.
const EXPORT_BOUNDS: &[f64] = &[
    0.1, 0.5, 1.0, 5.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1200.0, 1800.0, 3600.0,
];

/// Games last from a few plies (an early resignation) to the ply limit.
const GAME_PLIES_BOUNDS: &[f64] = &[
    10.0, 20.0, 40.0, 60.0, 80.0, 100.0, 120.0, 160.0, 200.0, 256.0, 320.0, 512.0,
];

/// The coordinator's histograms and their buckets.
pub const BUCKETS: &[Buckets] = &[
    Buckets {
        metric: GAME_PLIES,
        bounds: GAME_PLIES_BOUNDS,
    },
    Buckets {
        metric: SELECTION_DURATION,
        bounds: SELECTION_BOUNDS,
    },
    Buckets {
        metric: EXPORT_DURATION,
        bounds: EXPORT_BOUNDS,
    },
];

/// Registers help texts and units, and the start time.
pub fn describe() {
    describe_gauge!(BOOK_NODES, "Thought positions in the book.");
    describe_gauge!(
        BOOK_LEAF_EDGES,
        "Edges valued by an evaluation (leaf edges of the book DAG)."
    );
    describe_gauge!(
        BOOK_STORE_SIZE,
        Unit::Bytes,
        "Size of the book store directory on disk (measured every 30 s)."
    );
    describe_gauge!(
        STORE_DISK_SIZE,
        Unit::Bytes,
        "Size of the file system holding the store (measured every 30 s)."
    );
    describe_gauge!(
        STORE_DISK_FREE,
        Unit::Bytes,
        "Bytes an unprivileged writer may still write on the file system holding the store (measured every 30 s)."
    );
    describe_gauge!(
        STORE_WRITABLE,
        "1 while the store's disk has room for results; 0 while it is full and no jobs are handed out."
    );
    describe_counter!(THOUGHT, "Positions added to the book by this process.");
    describe_counter!(SELECTIONS, "Selection searches run.");
    describe_counter!(SELECTED_LEAVES, "Leaves returned by selection searches.");
    describe_histogram!(
        SELECTION_DURATION,
        Unit::Seconds,
        "Latency of one selection search (the dispatcher waits for it)."
    );
    describe_gauge!(
        LEASES_IN_FLIGHT,
        "Leases handed out to workers and not yet answered."
    );
    describe_gauge!(WORKERS_CONNECTED, "Worker streams connected.");
    describe_gauge!(
        WORKER_SLOTS,
        "Evaluation slots (with prefetch) of the connected workers."
    );
    describe_counter!(
        GAMES_UNWRITTEN,
        "Games counted but not written to --out-games (its writes stop at the first that fails)."
    );
    describe_counter!(
        LEASE_EXPIRIES,
        "Leases that expired without a heartbeat and were requeued."
    );
    describe_counter!(
        LEASES_REQUEUED,
        "Leases put back for selection, by reason (expired, disconnected, given_back)."
    );
    describe_counter!(
        RESULTS_REJECTED,
        "Results rejected, by reason (unknown_lease, foreign_lease, invalid, store_failed)."
    );
    describe_counter!(
        RESULTS_DUPLICATE,
        "Results for positions already in the book (acknowledged, not stored again)."
    );
    describe_counter!(
        QUARANTINED,
        "Positions quarantined after failed evaluations on more than one worker."
    );
    describe_gauge!(
        BOOK_QUARANTINED,
        "Quarantined positions recorded in the store, all runs (book-tools stats lists them, book-tools unban lifts them)."
    );
    describe_counter!(
        WORKERS_REFUSED,
        "Workers refused (stream closed): their jobs failed too many times in a row, or at Hello their engine or budget differs from the store's (without --allow-mixed-engines)."
    );
    describe_counter!(
        PROTOCOL_VIOLATIONS,
        "Worker messages refused for breaking a protocol bound (the stream is closed), by field."
    );
    describe_counter!(
        LOG_RECORDS_DROPPED,
        "Log records dropped because stderr was not read (a full pipe): logging never blocks the coordinator; a line says how many once stderr moves again."
    );
    describe_counter!(
        EXPORTS,
        "Book exports, by result (ok, error; invalid: options, opponents or a path that cannot be, refused: a path the caller may not write to or a file this store did not write; no export ran for either, and no alert fires on them)."
    );
    describe_histogram!(
        EXPORT_DURATION,
        Unit::Seconds,
        "Duration of one book export."
    );
    describe_gauge!(
        EXPORT_INTERVAL,
        Unit::Seconds,
        "Seconds between periodic exports to --export (--export-every-mins; 0: no periodic exports)."
    );
    describe_gauge!(
        LAST_EXPORT_SUCCESS,
        Unit::Seconds,
        "Unix time of the last successful export, periodic or on demand (0: none yet in this process)."
    );
    describe_counter!(
        BACKUPS,
        "Store backups (periodic and on demand), by result (ok, error; refused: a path the caller may not write to, invalid: a path that cannot be; no backup ran for either, and no alert fires on them)."
    );
    describe_gauge!(
        BACKUP_INTERVAL,
        Unit::Seconds,
        "Seconds between periodic backups (--backup-every-mins; 0: no periodic backups)."
    );
    describe_gauge!(
        BACKUP_LAST_SUCCESS,
        Unit::Seconds,
        "Unix time of the last successful backup (0: none yet in this process)."
    );
    describe_gauge!(
        BACKUP_LAST_DURATION,
        Unit::Seconds,
        "Duration of the last successful backup."
    );
    describe_gauge!(
        BACKUP_LAST_SIZE,
        Unit::Bytes,
        "Size on disk of the last successful backup (its store directory)."
    );
    describe_counter!(
        GAMES,
        "Games checked and counted into the book by this process, by result (black, white, draw)."
    );
    describe_histogram!(GAME_PLIES, "Plies of one counted game.");
    describe_counter!(
        LEARNING_GAMES,
        "Learning games (the book side by the learner against the workers' engines) counted by this process."
    );
    describe_counter!(
        LEARNING_OPPONENT_GAMES,
        "Learning games recorded against each opponent by this process, by opponent (the store's number, from 1, as book-tools stats and --opponents number them)."
    );
    describe_gauge!(
        LEARNING_OPPONENT_INFO,
        "1 for each opponent this process recorded learning games against: its number (opponent) and identity as stored (engine identity and budget)."
    );
    describe_gauge!(
        LEARNING_TARGET,
        "Learning games this run plays (--learn-games; 0: none)."
    );
    describe_gauge!(
        LEARNING_RATE,
        "Learning games counted per second since the run's first started."
    );
    describe_gauge!(
        LEARNING_LEFT,
        Unit::Seconds,
        "Time left to the learning games target at the current rate (0 once reached, or every key position settled)."
    );
    describe_gauge!(
        LEARNING_KEY_POSITIONS,
        "Key positions of the learning openings, by state: settled (the results rule's move is the best with the settling probability), total."
    );
    describe_gauge!(
        GAMES_IN_FLIGHT,
        "Self-play games being played (each holds at most one search job)."
    );
    describe_gauge!(BOOK_GAMES, "Games recorded in the book's store (all runs).");
    describe_counter!(
        COMPACTIONS,
        "Compaction passes of the store (small node chunks merged on the maintenance thread)."
    );
    describe_counter!(CHUNKS_MERGED, "Node chunks merged away by compaction.");
    describe_gauge!(
        TOKIO_TASKS,
        "Tokio tasks alive in the coordinator process (sessions, streams, timers)."
    );
    describe_gauge!(
        START_TIME,
        Unit::Seconds,
        "Unix time at which this coordinator started."
    );
    gauge!(START_TIME).set(crate::registry::unix_ms_now() as f64 / 1000.0);
}

/// Records one selection search's latency.
pub fn record_selection(took: Duration) {
    metrics::histogram!(SELECTION_DURATION).record(took.as_secs_f64());
}

/// Records one counted game's length.
pub fn record_game(plies: usize) {
    metrics::histogram!(GAME_PLIES).record(plies as f64);
}

/// Records one export's duration.
pub fn record_export(took: Duration) {
    metrics::histogram!(EXPORT_DURATION).record(took.as_secs_f64());
}

/// Copies the learning figures into the recorder.
fn learning(registry: &Registry) {
    let board = &registry.learning;
    gauge!(LEARNING_TARGET).set(board.target() as f64);
    let (per_second, left_secs) = board.pace();
    gauge!(LEARNING_RATE).set(per_second);
    gauge!(LEARNING_LEFT).set(left_secs as f64);
    let (settled, total) = board.key_positions();
    gauge!(LEARNING_KEY_POSITIONS, "state" => "settled").set(settled as f64);
    gauge!(LEARNING_KEY_POSITIONS, "state" => "total").set(total as f64);
    for o in board.opponents() {
        let number = o.number.to_string();
        counter!(LEARNING_OPPONENT_GAMES, "opponent" => number.clone()).absolute(o.games);
        gauge!(LEARNING_OPPONENT_INFO, "opponent" => number, "identity" => o.identity).set(1.0);
    }
}

/// Copies the registry's counters and gauges into the recorder.
pub fn refresh(registry: &Registry) {
    let c = &registry.counters;
    let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
    gauge!(BOOK_NODES).set(load(&c.book_nodes) as f64);
    gauge!(BOOK_LEAF_EDGES).set(load(&c.leaf_edges) as f64);
    gauge!(BOOK_STORE_SIZE).set(load(&c.store_bytes) as f64);
    gauge!(STORE_DISK_SIZE).set(load(&c.store_disk_size) as f64);
    gauge!(STORE_DISK_FREE).set(load(&c.store_disk_free) as f64);
    gauge!(STORE_WRITABLE).set(load(&c.store_writable) as f64);
    counter!(THOUGHT).absolute(load(&c.thought));
    counter!(SELECTIONS).absolute(load(&c.selections));
    counter!(SELECTED_LEAVES).absolute(load(&c.selected_leaves));
    gauge!(LEASES_IN_FLIGHT).set(load(&c.in_flight) as f64);
    gauge!(WORKERS_CONNECTED).set(registry.workers.len() as f64);
    gauge!(WORKER_SLOTS).set(registry.worker_slots() as f64);
    counter!(LEASE_EXPIRIES).absolute(load(&c.expired));
    for (reason, n) in RequeueReason::ALL.iter().zip(&c.requeued_by) {
        counter!(LEASES_REQUEUED, "reason" => reason.label()).absolute(load(n));
    }
    for (reason, n) in RejectReason::ALL.iter().zip(&c.rejected_by) {
        counter!(RESULTS_REJECTED, "reason" => reason.label()).absolute(load(n));
    }
    counter!(RESULTS_DUPLICATE).absolute(load(&c.duplicates));
    counter!(QUARANTINED).absolute(load(&c.quarantined));
    counter!(WORKERS_REFUSED).absolute(load(&c.workers_refused));
    gauge!(BOOK_QUARANTINED).set(load(&c.quarantined_in_store) as f64);
    for (field, n) in Field::ALL.iter().zip(&c.violations_by) {
        counter!(PROTOCOL_VIOLATIONS, "field" => field.name()).absolute(load(n));
    }
    counter!(LOG_RECORDS_DROPPED).absolute(stera_service::terminal::dropped());
    counter!(EXPORTS, "result" => "ok").absolute(load(&c.exports_ok));
    counter!(EXPORTS, "result" => "error").absolute(load(&c.exports_failed));
    counter!(EXPORTS, "result" => "invalid").absolute(load(&c.exports_invalid));
    counter!(EXPORTS, "result" => "refused").absolute(load(&c.exports_refused));
    gauge!(EXPORT_INTERVAL).set(load(&c.export_every_secs) as f64);
    gauge!(LAST_EXPORT_SUCCESS).set(load(&c.last_export_success_unix) as f64);
    counter!(BACKUPS, "result" => "ok").absolute(load(&c.backups_ok));
    counter!(BACKUPS, "result" => "error").absolute(load(&c.backups_failed));
    counter!(BACKUPS, "result" => "refused").absolute(load(&c.backups_refused));
    counter!(BACKUPS, "result" => "invalid").absolute(load(&c.backups_invalid));
    gauge!(BACKUP_INTERVAL).set(load(&c.backup_every_secs) as f64);
    gauge!(BACKUP_LAST_SUCCESS).set(load(&c.last_backup_success_unix) as f64);
    gauge!(BACKUP_LAST_DURATION).set(load(&c.last_backup_ms) as f64 / 1000.0);
    gauge!(BACKUP_LAST_SIZE).set(load(&c.last_backup_bytes) as f64);
    counter!(GAMES, "result" => "black").absolute(load(&c.games_black));
    learning(registry);
    counter!(GAMES, "result" => "white").absolute(load(&c.games_white));
    counter!(GAMES, "result" => "draw").absolute(load(&c.games_draw));
    counter!(LEARNING_GAMES).absolute(load(&c.learning_games));
    counter!(GAMES_UNWRITTEN).absolute(load(&c.games_unwritten));
    gauge!(GAMES_IN_FLIGHT).set(load(&c.play_in_flight) as f64);
    gauge!(BOOK_GAMES).set(load(&c.games_stored) as f64);
    counter!(COMPACTIONS).absolute(load(&c.compactions));
    counter!(CHUNKS_MERGED).absolute(load(&c.chunks_merged));
    // The scrape may come from a thread outside the runtime (tests); then there is
    // nothing to count.
    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
        gauge!(TOKIO_TASKS).set(runtime.metrics().num_alive_tasks() as f64);
    }
}
