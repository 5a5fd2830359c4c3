//! What a store knows of colour-flipped twins, and the copies
//! [`crate::twins::write_merged`] makes of a store's games and learning
//! counters with each merged twin's counters added to those of the position it
//! maps to.

use std::collections::{BTreeMap, HashMap};

use stera_rules::Key;

use super::keys::{TWINS_MERGED, counts_key};
use super::reader::game_counts_of;
use super::whole::games_recorded_in;
use super::{SledStore, learning};
use crate::{BookError, GameCounts, NodeStore};

impl SledStore {
    /// True when the store is known to hold at most one node per pair of
    /// colour-flipped twins: an empty store, one begun since twins became one
    /// node, or one written by [`crate::twins::write_merged`]. A store made
    /// before may hold both twins of a pair (`book-tools migrate` merges them).
    ///
    /// # Errors
    /// Storage failure.
    pub fn twins_merged(&self) -> Result<bool, BookError> {
        Ok(self.len == 0
            || self
                .meta
                .contains_key(TWINS_MERGED)
                .map_err(|e| self.err(e))?)
    }

    /// Records whether the store holds one node per twin pair (cleared by an
    /// import that keeps both twins).
    ///
    /// # Errors
    /// Storage failure.
    pub fn set_twins_merged(&mut self, merged: bool) -> Result<(), BookError> {
        if merged {
            self.meta
                .insert(TWINS_MERGED, &[])
                .map_err(|e| self.err(e))?;
        } else {
            self.meta.remove(TWINS_MERGED).map_err(|e| self.err(e))?;
        }
        self.db.flush().map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Copies the `games` tree of `from` into this store's (which must have no
    /// games yet), adding the counters of a position listed in `merge` to those
    /// of the position it maps to. Returns the positions merged that had counters.
    pub(crate) fn copy_games_merging(
        &mut self,
        from: &SledStore,
        merge: &HashMap<Key, Key>,
    ) -> Result<usize, BookError> {
        if !self.games.is_empty() {
            return Err(BookError::Invalid(format!(
                "`{}` has games already",
                self.path.display()
            )));
        }
        let mut counts: BTreeMap<Key, GameCounts> = BTreeMap::new();
        let mut merged = 0;
        game_counts_of(&from.games, &from.path, &mut |key, c| {
            let to = match merge.get(&key) {
                Some(&twin) => {
                    merged += 1;
                    twin
                }
                None => key,
            };
            counts.entry(to).or_default().add(c);
        })?;
        let mut batch = sled::Batch::default();
        for item in from.games.iter() {
            let (k, v) = item.map_err(|e| from.err(e))?;
            // Game ids and their count as they are; counters from `counts`.
            if k.first() != Some(&b'c') {
                batch.insert(k, v);
            }
        }
        for (key, c) in counts {
            batch.insert(&counts_key(key)[..], &c.encode()[..]);
        }
        self.games.apply_batch(batch).map_err(|e| self.err(e))?;
        self.db.flush().map_err(|e| self.err(e))?;
        self.holdings.games = games_recorded_in(&self.games, &self.path)?;
        self.note_write();
        Ok(merged)
    }

    /// Copies the learning opponents and the `learning` tree of `from` into this
    /// store's (which must have none yet), the counters of a position listed in
    /// `merge` added to those of the position it maps to.
    pub(crate) fn copy_learning_merging(
        &mut self,
        from: &SledStore,
        merge: &HashMap<Key, Key>,
    ) -> Result<(), BookError> {
        if !self.opponents.is_empty() || self.learning.as_ref().is_some_and(|t| !t.is_empty()) {
            return Err(BookError::Invalid(format!(
                "`{}` has learning games already",
                self.path.display()
            )));
        }
        let opponents = from.opponents()?;
        let Some(from_learning) = &from.learning else {
            return Ok(());
        };
        for o in &opponents {
            let id = self.intern_opponent(&o.identity)?;
            if id != o.id {
                return Err(BookError::Corrupt(format!(
                    "opponent `{}` listed twice",
                    o.identity
                )));
            }
        }
        let mut batch = sled::Batch::default();
        for o in &opponents {
            let mut counts: BTreeMap<Key, GameCounts> = BTreeMap::new();
            from.for_each_learning_count(o.id, &mut |key, c| {
                let to = merge.get(&key).copied().unwrap_or(key);
                counts.entry(to).or_default().add(c);
            })?;
            for (key, c) in counts {
                let (k, v) = learning::counts_entry(o.id, key, c);
                batch.insert(&k[..], &v[..]);
            }
        }
        for item in from_learning.iter() {
            let (k, v) = item.map_err(|e| from.err(e))?;
            // Game ids and the games per opponent as they are.
            if k.first() != Some(&b'c') {
                batch.insert(k, v);
            }
        }
        self.learning_tree()?
            .apply_batch(batch)
            .map_err(|e| self.err(e))?;
        self.db.flush().map_err(|e| self.err(e))?;
        self.holdings.learning_games = self.learning_view().games_recorded()?;
        self.note_write();
        Ok(())
    }
}
