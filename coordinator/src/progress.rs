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
    // The play kind counts its games; the registry shows that count.
    let tally = kinds.play.tally();
    c.games_black.store(tally.black, Ordering::Relaxed);
    c.games_white.store(tally.white, Ordering::Relaxed);
    c.games_draw.store(tally.draws, Ordering::Relaxed);
    c.games_rejected.store(tally.rejected, Ordering::Relaxed);
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
