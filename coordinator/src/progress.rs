//! What the dispatcher shows of itself after each round of events: the
//! [`Progress`] the server loop waits on, the registry's gauges that the metrics
//! and the dashboard read, and the Status RPC's answer (see `status`).

use std::sync::atomic::Ordering;
use std::time::Instant;

use stera_book::NodeStore;
use stera_proto::v1::{RootLine, StatusReply};
use tokio::sync::watch;

use crate::kinds::Kinds;
use crate::kinds::Ticket;
use crate::leases::LeaseTable;
use crate::registry::Registry;

/// Progress that the server loop watches.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Progress {
    /// Positions thought (acknowledged) in this run.
    pub thought: u64,
    /// Leases outstanding.
    pub in_flight: usize,
    /// The think limit is reached (or draining, or stalled) and nothing is in
    /// flight.
    pub finished: bool,
    /// The selector had nothing to hand out while nothing was in flight: every
    /// candidate is thought, banned or quarantined. The run cannot go on.
    pub stalled: bool,
    /// Learning games counted in this run.
    pub learning_games: u64,
    /// Every key position settled (`--learn-stop-when-settled`): the learning
    /// games ended before their target.
    pub learning_settled: bool,
}

/// The limits a run was given, for [`Progress::end_reason`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RunLimits {
    /// It thinks (a think limit above 0).
    pub thinks: bool,
    /// It plays to a games target (`--play-games`).
    pub games_target: bool,
    /// `--learn-games` (0: no learning games).
    pub learn_games: u64,
}

impl Progress {
    /// Why a run that reached its limits ends, as its workers are told when
    /// drained (and log): every limit it was given, each as it was met.
    pub(crate) fn end_reason(&self, limits: RunLimits) -> String {
        let mut met = Vec::new();
        if limits.thinks {
            met.push("the think limit is reached".to_owned());
        }
        if limits.games_target {
            met.push("the games target is reached".to_owned());
        }
        if limits.learn_games > 0 {
            met.push(if self.learning_settled {
                format!(
                    "every key position is settled ({} of {} learning games counted)",
                    self.learning_games, limits.learn_games
                )
            } else {
                format!(
                    "the learning games target is reached ({} learning games counted)",
                    self.learning_games
                )
            });
        }
        match met.as_slice() {
            // `--think-limit 0` and nothing else: the limit, at once.
            [] => "the think limit is reached".to_owned(),
            [one] => one.clone(),
            [first @ .., last] => format!("{} and {last}", first.join(", ")),
        }
    }
}

/// Sets the counters that count over all runs from what the store holds.
pub(crate) fn seed<S: NodeStore>(store: &S, registry: &Registry) {
    match store.quarantined() {
        Ok(q) => registry
            .counters
            .quarantined_in_store
            .store(q.len() as u64, Ordering::Relaxed),
        Err(e) => tracing::warn!(error = %e, "cannot read the quarantined positions"),
    }
    if let Ok(games) = store.games_recorded() {
        registry
            .counters
            .games_stored
            .store(games, Ordering::Relaxed);
    }
}

/// Copies the figures of the lease table and the job kinds into the registry
/// and `progress` (the watchers wake only when the progress changed).
pub(crate) fn publish<S: NodeStore>(
    kinds: &Kinds<S>,
    leases: &LeaseTable<Ticket>,
    draining: bool,
    registry: &Registry,
    progress: &watch::Sender<Progress>,
) {
    mirror(kinds, leases, registry);
    let in_flight = leases.len();
    let finished = in_flight == 0 && kinds.search.idle() && (draining || kinds.done(in_flight));
    let p = Progress {
        thought: kinds.think.thought(),
        in_flight,
        finished,
        stalled: kinds.stalled(),
        learning_games: kinds.learn.counted(),
        learning_settled: kinds.learn.settled(),
    };
    progress.send_if_modified(|old| {
        let changed = *old != p;
        *old = p;
        changed
    });
}

/// Copies the figures of the lease table and the job kinds into the registry.
pub(crate) fn mirror<S: NodeStore>(
    kinds: &Kinds<S>,
    leases: &LeaseTable<Ticket>,
    registry: &Registry,
) {
    for (id, held) in leases.streams() {
        if let Some(mut w) = registry.workers.get_mut(&id) {
            w.in_flight = u32::try_from(held).unwrap_or(u32::MAX);
        }
    }
    let book = kinds.live.book();
    let in_flight = leases.len();
    registry.set_book(
        book.len() as u64,
        book.value_count() as u64,
        in_flight as u64,
    );
    let c = &registry.counters;
    c.play_in_flight
        .store(kinds.play.in_flight() as u64, Ordering::Relaxed);
    // The self-play ledger counts its games; the registry shows that count
    // (failed games are counted where they fail, by the game threads).
    let tally = kinds.play.tally();
    c.games_black.store(tally.black, Ordering::Relaxed);
    c.games_white.store(tally.white, Ordering::Relaxed);
    c.games_draw.store(tally.draws, Ordering::Relaxed);
}

/// The Status RPC's answer: the registry (call [`mirror`] first), with the root
/// lines computed now.
pub(crate) fn status_reply<S: NodeStore>(
    kinds: &mut Kinds<S>,
    registry: &Registry,
    version: &str,
) -> StatusReply {
    let roots: Vec<RootLine> = kinds
        .think
        .book_lines(&kinds.live, Instant::now())
        .iter()
        .map(|(root, pv, value)| RootLine {
            root: root.clone(),
            pv: pv.iter().map(ToString::to_string).collect(),
            value: *value,
        })
        .collect();
    crate::status::reply(registry, version, roots, 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reason(p: Progress, thinks: bool, games_target: bool, learn_games: u64) -> String {
        p.end_reason(RunLimits {
            thinks,
            games_target,
            learn_games,
        })
    }

    #[test]
    fn a_run_ends_for_every_limit_it_was_given() {
        let learned = Progress {
            learning_games: 400,
            ..Progress::default()
        };
        assert_eq!(
            reason(learned, false, false, 400),
            "the learning games target is reached (400 learning games counted)"
        );
        let settled = Progress {
            learning_games: 270,
            learning_settled: true,
            ..Progress::default()
        };
        assert_eq!(
            reason(settled, false, false, 400),
            "every key position is settled (270 of 400 learning games counted)"
        );
        assert_eq!(
            reason(learned, true, false, 400),
            "the think limit is reached and the learning games target is reached (400 learning games counted)"
        );
        assert_eq!(
            reason(learned, true, true, 400),
            "the think limit is reached, the games target is reached and the learning games target is reached (400 learning games counted)"
        );
        let nothing = Progress::default();
        assert_eq!(
            reason(nothing, true, false, 0),
            "the think limit is reached"
        );
        assert_eq!(
            reason(nothing, false, true, 0),
            "the games target is reached"
        );
        assert_eq!(
            reason(nothing, false, false, 0),
            "the think limit is reached"
        );
    }
}
