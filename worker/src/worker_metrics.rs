//! The worker's Prometheus metrics (`stera_worker_*`): names, help texts, and the
//! copy of [`Stats`] into the recorder before each scrape.
//!
//! No label carries the worker's id or host: Prometheus already tells instances
//! apart by their scrape target, and per-worker labels would grow without bound on a
//! coordinator that sees workers come and go for months.

use std::sync::atomic::Ordering;
use std::time::Duration;

use metrics::{Unit, counter, describe_counter, describe_gauge, describe_histogram, gauge};

use crate::Stats;
use stera_service::telemetry::Buckets;

/// Positions evaluated successfully.
pub const EVALUATIONS: &str = "stera_worker_evaluations_total";
/// Evaluations that failed (the job is given back).
pub const EVALUATION_ERRORS: &str = "stera_worker_evaluation_errors_total";
/// Engine time of each evaluation; its `_sum` is the total engine time, so
/// `rate(..._sum[5m])` is the number of engines kept busy.
pub const EVALUATION_DURATION: &str = "stera_worker_evaluation_duration_seconds";
/// Engine processes restarted after a crash or a time-out.
pub const ENGINE_RESTARTS: &str = "stera_worker_engine_restarts_total";
/// Results the coordinator answered, by `result` (acked, rejected).
pub const RESULTS: &str = "stera_worker_results_total";
/// Connections to the coordinator lost and retried.
pub const RECONNECTS: &str = "stera_worker_reconnects_total";
/// 1 while a Work stream is open.
pub const CONNECTED: &str = "stera_worker_connected";
/// Evaluation slots (engines).
pub const SLOTS: &str = "stera_worker_slots";
/// Slots evaluating right now.
pub const BUSY_SLOTS: &str = "stera_worker_busy_slots";

/// Evaluations take from milliseconds (tiny budgets) to minutes (deep searches).
const EVALUATION_BOUNDS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];

/// The worker's histograms and their buckets.
pub const BUCKETS: &[Buckets] = &[Buckets {
    metric: EVALUATION_DURATION,
    bounds: EVALUATION_BOUNDS,
}];

/// Registers help texts and units (shown as `# HELP` lines).
pub fn describe() {
    describe_counter!(EVALUATIONS, "Positions evaluated successfully.");
    describe_counter!(
        EVALUATION_ERRORS,
        "Evaluations that failed; their jobs were given back."
    );
    describe_histogram!(
        EVALUATION_DURATION,
        Unit::Seconds,
        "Engine time of one position's evaluation (every legal move); the sum is the total engine time."
    );
    describe_counter!(
        ENGINE_RESTARTS,
        "Engine processes restarted after a crash or a time-out."
    );
    describe_counter!(
        RESULTS,
        "Results answered by the coordinator, by result (acked, rejected)."
    );
    describe_counter!(
        RECONNECTS,
        "Times the connection to the coordinator was lost and retried."
    );
    describe_gauge!(CONNECTED, "1 while connected to the coordinator.");
    describe_gauge!(SLOTS, "Evaluation slots (engines) of this worker.");
    describe_gauge!(BUSY_SLOTS, "Slots evaluating a position right now.");
}

/// Records one evaluation's engine time (called where it finishes).
pub fn record_evaluation(took: Duration) {
    metrics::histogram!(EVALUATION_DURATION).record(took.as_secs_f64());
}

/// Copies the counters and gauges of `stats` into the recorder.
pub fn refresh(stats: &Stats) {
    let load = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
    counter!(EVALUATIONS).absolute(load(&stats.evaluated));
    counter!(EVALUATION_ERRORS).absolute(load(&stats.errors));
    counter!(ENGINE_RESTARTS).absolute(load(&stats.restarts));
    counter!(RESULTS, "result" => "acked").absolute(load(&stats.acked));
    counter!(RESULTS, "result" => "rejected").absolute(load(&stats.rejected));
    counter!(RECONNECTS).absolute(load(&stats.reconnects));
    gauge!(CONNECTED).set(if stats.connected.load(Ordering::Relaxed) {
        1.0
    } else {
        0.0
    });
    gauge!(SLOTS).set(load(&stats.slots) as f64);
    gauge!(BUSY_SLOTS).set(load(&stats.busy) as f64);
}
