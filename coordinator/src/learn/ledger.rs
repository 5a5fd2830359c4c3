//! The dispatcher's half of learning: counts finished games durably, and
//! keeps where games left the book for thinking.

use std::collections::HashMap;

use stera_book::{Book, GameCounts, NodeStore, OpponentId};
use stera_rules::{Key, Position};

use crate::registry::OpponentGames;

/// The dispatcher's half: counts finished learning games in the store.
pub(crate) struct LearnLedger {
    /// Games this run plays (0: none).
    target: u64,
    /// Games counted in this run (recorded or without a book move to teach).
    counted: u64,
    /// Where games left the book early, to be thought: the position before the
    /// opponent's reply and the reply (claimed when handed out).
    exits: std::collections::VecDeque<(Position, stera_rules::Move)>,
    /// Share of the think jobs the exits get while any are queued.
    grow_share: f64,
    /// The games of this run recorded per opponent, by number.
    opponents: Vec<OpponentGames>,
    /// Every key position settled: no more games came ([`LearnLedger::end`]).
    settled: bool,
}

/// Exits kept waiting at most (the oldest are dropped beyond): a cluster that
/// plays far more games than it thinks positions would otherwise queue without
/// end.
const MAX_QUEUED_EXITS: usize = 10_000;

impl LearnLedger {
    pub(crate) fn new(target: u64, grow_share: f64) -> Self {
        Self {
            target,
            counted: 0,
            exits: std::collections::VecDeque::new(),
            grow_share,
            opponents: Vec::new(),
            settled: false,
        }
    }

    /// Queues where a game left the book (see [`super::LearnArgs::learn_grow_plies`]).
    pub(crate) fn queue_exit(&mut self, exit: Option<Box<(Position, stera_rules::Move)>>) {
        if let Some(exit) = exit {
            tracing::debug!(sfen = %exit.0.to_sfen(), mv = %exit.1, "a learning game left the book");
            if self.exits.len() >= MAX_QUEUED_EXITS {
                self.exits.pop_front();
            }
            self.exits.push_back(*exit);
        }
    }

    /// Up to the exits' share of `think` leaves: queued exits still outside the
    /// book, claimed in `live` (marked in flight).
    pub(crate) fn exit_leaves<S: NodeStore>(
        &mut self,
        live: &mut stera_book::LiveBook<S>,
        think: usize,
    ) -> Vec<stera_book::Leaf> {
        if self.exits.is_empty() || think == 0 || self.grow_share <= 0.0 {
            return Vec::new();
        }
        let wanted = ((think as f64 * self.grow_share).ceil() as usize).min(think);
        let mut leaves = Vec::new();
        while leaves.len() < wanted {
            let Some((parent, mv)) = self.exits.pop_front() else {
                break;
            };
            if let Some(leaf) = live.claim_child(&parent, mv) {
                tracing::debug!(sfen = %leaf.sfen(), "thinking where a learning game left the book");
                leaves.push(leaf);
            }
        }
        leaves
    }

    /// True when the run's learning games are all counted (or none were asked for).
    pub(crate) fn done(&self) -> bool {
        self.counted >= self.target
    }

    /// Learning games counted in this run.
    pub(crate) fn counted(&self) -> u64 {
        self.counted
    }

    /// No more learning games come (every key position settled, see
    /// [`super::LearnArgs::learn_stop_when_settled`]): the games counted are the
    /// run's target, and the run goes on as when `--learn-games` is reached.
    pub(crate) fn end(&mut self) {
        self.settled = true;
        if self.counted < self.target {
            tracing::debug!(
                counted = self.counted,
                target = self.target,
                "learning games end before the target"
            );
            self.target = self.counted;
        }
    }

    /// True once every key position settled ended the run's learning early.
    pub(crate) fn settled(&self) -> bool {
        self.settled
    }

    /// The games of this run recorded against each opponent, by the store's
    /// number (a game with nothing to teach is counted, against no one).
    pub(crate) fn opponents(&self) -> &[OpponentGames] {
        &self.opponents
    }

    /// The book now and the learning counters of the opponents whose identity
    /// ends with one of `budgets` (the pool's ledgers of earlier runs).
    pub(crate) fn snapshot<S: NodeStore>(
        store: &S,
        book: &Book,
        budgets: &[String],
    ) -> Result<(Book, HashMap<Key, GameCounts>), String> {
        let opponents = store.opponents().map_err(|e| e.to_string())?;
        let ids: Vec<_> = opponents
            .iter()
            .filter(|o| {
                budgets
                    .iter()
                    .any(|b| stera_games::opponent::plays_at(&o.identity, b))
            })
            .map(|o| o.id)
            .collect();
        let counts = stera_book::learning_counts(store, &ids).map_err(|e| e.to_string())?;
        Ok((book.clone(), counts))
    }

    /// Counts one finished game against `identity`: its counters (empty when
    /// the learner played no book move) under a new game id, durably. Returns
    /// the games counted in this run.
    pub(crate) fn count<S: NodeStore>(
        &mut self,
        store: &mut S,
        ids: &mut crate::kinds::GameIds,
        identity: &str,
        counts: &[(Key, GameCounts)],
    ) -> Result<u64, String> {
        if !counts.is_empty() {
            let id = ids.next(store)?;
            let opponent = store.intern_opponent(identity).map_err(|e| e.to_string())?;
            let recorded = store
                .record_learning_game(opponent, id, counts)
                .map_err(|e| e.to_string())?;
            tracing::debug!(id, %opponent, "learning game recorded");
            if recorded {
                self.tally(store, opponent, identity)?;
            }
        }
        self.counted += 1;
        Ok(self.counted)
    }

    /// One more game of this run against `opponent`, just recorded; its games
    /// of every run are read from the store the first time it is met.
    fn tally<S: NodeStore>(
        &mut self,
        store: &S,
        opponent: OpponentId,
        identity: &str,
    ) -> Result<(), String> {
        // Shown from 1, as the store's readers number opponents.
        let number = u32::from(opponent.0) + 1;
        match self.opponents.iter_mut().find(|o| o.number == number) {
            Some(o) => {
                o.games += 1;
                o.games_stored += 1;
            }
            None => {
                let games_stored = store
                    .opponents()
                    .map_err(|e| e.to_string())?
                    .into_iter()
                    .find(|o| o.id == opponent)
                    .map_or(1, |o| o.games);
                self.opponents.push(OpponentGames {
                    number,
                    identity: identity.to_owned(),
                    games: 1,
                    games_stored,
                });
                self.opponents.sort_by_key(|o| o.number);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use stera_book::MemoryStore;

    #[test]
    fn games_are_tallied_per_opponent_as_the_store_numbers_them() {
        let mut store = MemoryStore::new();
        // An opponent of an earlier run, with a game of its own.
        let earlier = store.intern_opponent("e at 500 nodes").unwrap();
        let key = Position::startpos().key();
        store
            .record_learning_game(earlier, 1, &[(key, GameCounts::WIN)])
            .unwrap();
        let mut ledger = LearnLedger::new(10, 0.0);
        let mut ids = crate::kinds::GameIds::default();
        let win = [(key, GameCounts::WIN)];
        ledger
            .count(&mut store, &mut ids, "e at 60 nodes", &win)
            .unwrap();
        ledger
            .count(&mut store, &mut ids, "e at 500 nodes", &win)
            .unwrap();
        ledger
            .count(&mut store, &mut ids, "e at 60 nodes", &win)
            .unwrap();
        // Nothing to teach: counted, against no one.
        assert_eq!(ledger.count(&mut store, &mut ids, "", &[]).unwrap(), 4);
        let stored: Vec<_> = store
            .opponents()
            .unwrap()
            .into_iter()
            .map(|o| (u32::from(o.id.0) + 1, o.identity, o.games))
            .collect();
        assert_eq!(
            stored,
            [
                (1, "e at 500 nodes".to_owned(), 2),
                (2, "e at 60 nodes".to_owned(), 2)
            ]
        );
        let run: Vec<_> = ledger
            .opponents()
            .iter()
            .map(|o| (o.number, o.identity.clone(), o.games, o.games_stored))
            .collect();
        assert_eq!(
            run,
            [
                (1, "e at 500 nodes".to_owned(), 1, 2),
                (2, "e at 60 nodes".to_owned(), 2, 2)
            ]
        );
        assert!(!ledger.settled());
        ledger.end();
        assert!(ledger.settled() && ledger.done());
    }
}
