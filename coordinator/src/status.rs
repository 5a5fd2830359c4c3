//! The Status reply: what `rpc Status` answers and what `/api/status` serves (as
//! `stera_service::status::StatusDocument`, made of this reply). Both are built
//! here from the registry, so that the RPC and the page show one document; only
//! the root lines, which need the selector, come from the caller.

use std::sync::atomic::{AtomicU64, Ordering};

use stera_proto::v1::{self, RootLine, StatusReply};

use crate::registry::{HistorySample, Registry, unix_ms_now};

/// Most history points in a reply (the ring buffer holds a day, 8,640 points;
/// a chart needs no more than this).
pub(crate) const HISTORY_POINTS: usize = 720;

/// The reply of a coordinator of `version` whose registry is `registry`, with
/// `roots` computed `roots_age_ms` ago.
pub(crate) fn reply(
    registry: &Registry,
    version: &str,
    roots: Vec<RootLine>,
    roots_age_ms: u64,
) -> StatusReply {
    let c = &registry.counters;
    let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
    let selections = load(&c.selections);
    StatusReply {
        version: version.to_owned(),
        now_unix_ms: unix_ms_now(),
        started_unix_ms: registry.started_unix_ms,
        nodes: load(&c.book_nodes),
        leaf_edges: load(&c.leaf_edges),
        store_bytes: load(&c.store_bytes),
        thought: load(&c.thought),
        thoughts_per_second: registry.thought_rate(),
        in_flight: load(&c.in_flight),
        selections,
        mean_selection_ms: if selections == 0 {
            0.0
        } else {
            load(&c.selection_micros) as f64 / selections as f64 / 1000.0
        },
        rejected: load(&c.rejected),
        expired: load(&c.expired),
        requeued: load(&c.requeued),
        quarantined: load(&c.quarantined),
        duplicates: load(&c.duplicates),
        games: load(&c.games_stored),
        games_black: load(&c.games_black),
        games_white: load(&c.games_white),
        games_draw: load(&c.games_draw),
        games_rejected: load(&c.games_rejected),
        play_in_flight: load(&c.play_in_flight),
        exports_ok: load(&c.exports_ok),
        exports_failed: load(&c.exports_failed),
        last_export_unix: load(&c.last_export_success_unix),
        last_export_ms: load(&c.last_export_ms),
        backups_ok: load(&c.backups_ok),
        backups_failed: load(&c.backups_failed),
        backups_refused: load(&c.backups_refused),
        last_backup_unix: load(&c.last_backup_success_unix),
        last_backup_ms: load(&c.last_backup_ms),
        last_backup_bytes: load(&c.last_backup_bytes),
        roots,
        roots_age_ms,
        learning: Some(registry.learning.status(load(&c.learning_games))),
        workers: registry.worker_status(),
        history: thin(&registry.history(), HISTORY_POINTS)
            .into_iter()
            .map(|s| v1::HistorySample {
                unix_ms: s.unix_ms,
                nodes: s.nodes,
                thought: s.thought,
                in_flight: s.in_flight,
                workers: s.workers,
            })
            .collect(),
        problems: registry
            .problems()
            .into_iter()
            .map(|p| v1::Problem {
                unix_ms: p.unix_ms,
                kind: p.kind.label().to_owned(),
                message: p.message,
            })
            .collect(),
    }
}

/// At most `max` samples, evenly spread, always keeping the newest.
fn thin(samples: &[HistorySample], max: usize) -> Vec<HistorySample> {
    if samples.len() <= max || max < 2 {
        return samples.to_vec();
    }
    let step = samples.len().div_ceil(max);
    // Counting from the newest end keeps the current state on the chart.
    let mut out: Vec<HistorySample> = samples.iter().rev().step_by(step).copied().collect();
    out.reverse();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::ProblemKind;

    fn sample(i: u64) -> HistorySample {
        HistorySample {
            unix_ms: i * 10_000,
            nodes: i,
            thought: i,
            in_flight: 0,
            workers: 1,
        }
    }

    #[test]
    fn thinning_keeps_the_newest_and_the_order() {
        let samples: Vec<_> = (0..8640).map(sample).collect();
        let thinned = thin(&samples, 720);
        assert!(thinned.len() <= 720, "{}", thinned.len());
        assert!(thinned.len() >= 700, "{}", thinned.len());
        assert_eq!(thinned.last(), samples.last());
        assert!(thinned.windows(2).all(|w| w[0].unix_ms < w[1].unix_ms));
        let few: Vec<_> = (0..5).map(sample).collect();
        assert_eq!(thin(&few, 720), few);
    }

    #[test]
    fn the_reply_carries_the_registry() {
        let registry = Registry::starting_now();
        registry.set_book(12, 340, 3);
        registry.counters.games_rejected.store(2, Ordering::Relaxed);
        registry.record_problem(ProblemKind::StoreFull, "no room".into());
        let reply = reply(&registry, "9.9.9", Vec::new(), 7);
        assert_eq!(reply.version, "9.9.9");
        assert_eq!(
            (reply.nodes, reply.leaf_edges, reply.in_flight),
            (12, 340, 3)
        );
        assert_eq!(reply.games_rejected, 2);
        assert_eq!(reply.roots_age_ms, 7);
        assert_eq!(reply.started_unix_ms, registry.started_unix_ms);
        assert!(reply.now_unix_ms >= reply.started_unix_ms);
        assert_eq!(reply.history.len(), 1);
        assert_eq!(reply.history[0].nodes, 12);
        assert_eq!(reply.problems.len(), 1);
        assert_eq!(reply.problems[0].kind, "store full");
        assert_eq!(reply.problems[0].message, "no room");
    }
}
