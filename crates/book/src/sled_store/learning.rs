//! The counters of learning games, per opponent (see [`crate::opponents`]).
//!
//! * tree `learning`: `c` + opponent id (u16 BE) + position key (16 bytes BE) ->
//!   [`GameCounts::encode`]; `g` + game id (u64 BE) -> the opponent id (u16 BE),
//!   one per counted game; `n` + opponent id (u16 BE) -> games counted against it
//!   (u64 LE).
//! * tree `meta`: `opponent` + id (u16 BE) -> the opponent's identity.
//!
//! A game's counters, its id and its opponent's new count are one
//! `apply_batch`, then a flush: all or nothing, as for self-play games.

use std::collections::BTreeMap;
use std::collections::btree_map::Entry;
use std::path::Path;

use stera_rules::Key;

use super::keys::decode_counts;
use super::store_error;
use crate::{BookError, GameCounts, OpponentId, OpponentRecord};

/// The tree's name.
pub(super) const LEARNING: &str = "learning";

const OPPONENT_PREFIX: &[u8] = b"opponent";

fn counts_key(opponent: OpponentId, key: Key) -> [u8; 19] {
    let mut k = [b'c'; 19];
    k[1..3].copy_from_slice(&opponent.0.to_be_bytes());
    k[3..].copy_from_slice(&key.to_bytes());
    k
}

/// One counters entry of the tree (for copies).
pub(super) fn counts_entry(opponent: OpponentId, key: Key, c: GameCounts) -> ([u8; 19], [u8; 12]) {
    (counts_key(opponent, key), c.encode())
}

fn game_key(id: u64) -> [u8; 9] {
    let mut k = [b'g'; 9];
    k[1..].copy_from_slice(&id.to_be_bytes());
    k
}

fn games_key(opponent: OpponentId) -> [u8; 3] {
    let mut k = [b'n'; 3];
    k[1..].copy_from_slice(&opponent.0.to_be_bytes());
    k
}

fn opponent_key(id: OpponentId) -> Vec<u8> {
    let mut key = OPPONENT_PREFIX.to_vec();
    key.extend_from_slice(&id.0.to_be_bytes());
    key
}

/// The identities in `meta`, in id order (ids must be dense).
pub(super) fn load_identities(meta: &sled::Tree, path: &Path) -> Result<Vec<String>, BookError> {
    let mut identities = Vec::new();
    for item in meta.scan_prefix(OPPONENT_PREFIX) {
        let (k, v) = item.map_err(|e| store_error(path, e))?;
        let id = match k.get(OPPONENT_PREFIX.len()..) {
            Some(&[a, b]) => usize::from(u16::from_be_bytes([a, b])),
            _ => return Err(BookError::Corrupt("an opponent key without its id".into())),
        };
        if id != identities.len() {
            return Err(BookError::Corrupt(format!(
                "learning opponent ids not dense at {id}"
            )));
        }
        identities.push(String::from_utf8_lossy(&v).into_owned());
    }
    Ok(identities)
}

/// The learning tree and the opponents' identities of one store.
pub(super) struct Learning<'a> {
    /// `None`: the store has no `learning` tree yet (no opponent ever): every
    /// read finds nothing.
    pub(super) tree: Option<&'a sled::Tree>,
    pub(super) path: &'a Path,
}

impl Learning<'_> {
    fn err(&self, e: sled::Error) -> BookError {
        store_error(self.path, e)
    }

    /// Stores a new identity under the next id (the caller checked it is new).
    pub(super) fn store_identity(
        &self,
        meta: &sled::Tree,
        identities: &mut Vec<String>,
        identity: &str,
    ) -> Result<OpponentId, BookError> {
        crate::check_opponent_identity(identity)?;
        let id = OpponentId(
            u16::try_from(identities.len())
                .map_err(|_| BookError::Full("more than 65,536 learning opponents".into()))?,
        );
        meta.insert(opponent_key(id), identity.as_bytes())
            .map_err(|e| self.err(e))?;
        identities.push(identity.to_owned());
        Ok(id)
    }

    pub(super) fn records(&self, identities: &[String]) -> Result<Vec<OpponentRecord>, BookError> {
        identities
            .iter()
            .enumerate()
            .map(|(i, identity)| {
                let id = OpponentId(
                    u16::try_from(i)
                        .map_err(|_| BookError::Corrupt("an opponent id beyond 65,535".into()))?,
                );
                Ok(OpponentRecord {
                    id,
                    identity: identity.clone(),
                    games: self.games(id)?,
                })
            })
            .collect()
    }

    fn games(&self, opponent: OpponentId) -> Result<u64, BookError> {
        let Some(tree) = self.tree else {
            return Ok(0);
        };
        match tree.get(games_key(opponent)).map_err(|e| self.err(e))? {
            Some(v) => {
                let b: [u8; 8] = v.as_ref().try_into().map_err(|_| {
                    BookError::Corrupt(format!("a game count of {} bytes", v.len()))
                })?;
                Ok(u64::from_le_bytes(b))
            }
            None => Ok(0),
        }
    }

    fn counts(&self, opponent: OpponentId, key: Key) -> Result<GameCounts, BookError> {
        let Some(tree) = self.tree else {
            return Ok(GameCounts::default());
        };
        match tree
            .get(counts_key(opponent, key))
            .map_err(|e| self.err(e))?
        {
            Some(v) => decode_counts(key, &v),
            None => Ok(GameCounts::default()),
        }
    }

    /// The batch that counts one game, or `None` when its id was counted before.
    pub(super) fn game_batch(
        &self,
        opponent: OpponentId,
        game_id: u64,
        counts: &[(Key, GameCounts)],
    ) -> Result<Option<sled::Batch>, BookError> {
        let Some(tree) = self.tree else {
            return Err(BookError::Invalid(
                "no learning tree to count a game in".into(),
            ));
        };
        if tree
            .contains_key(game_key(game_id))
            .map_err(|e| self.err(e))?
        {
            return Ok(None);
        }
        let mut merged: BTreeMap<Key, GameCounts> = BTreeMap::new();
        for &(key, c) in counts {
            match merged.entry(key) {
                Entry::Occupied(mut o) => o.get_mut().add(c),
                Entry::Vacant(v) => v.insert(self.counts(opponent, key)?).add(c),
            }
        }
        let games = self
            .games(opponent)?
            .checked_add(1)
            .ok_or_else(|| BookError::Full("more than 2^64 games".into()))?;
        let mut batch = sled::Batch::default();
        for (key, c) in merged {
            batch.insert(&counts_key(opponent, key)[..], &c.encode()[..]);
        }
        batch.insert(&game_key(game_id)[..], &opponent.0.to_be_bytes()[..]);
        batch.insert(&games_key(opponent)[..], &games.to_le_bytes()[..]);
        Ok(Some(batch))
    }

    pub(super) fn max_game_id(&self) -> Result<Option<u64>, BookError> {
        let Some(tree) = self.tree else {
            return Ok(None);
        };
        match tree.scan_prefix(b"g").next_back() {
            Some(item) => {
                let (k, _) = item.map_err(|e| self.err(e))?;
                let b: [u8; 8] = k.get(1..).and_then(|b| b.try_into().ok()).ok_or_else(|| {
                    BookError::Corrupt(format!("a learning game id key of {} bytes", k.len()))
                })?;
                Ok(Some(u64::from_be_bytes(b)))
            }
            None => Ok(None),
        }
    }

    /// Learning games recorded, every opponent's.
    pub(super) fn games_recorded(&self) -> Result<u64, BookError> {
        let mut total = 0u64;
        let Some(tree) = self.tree else {
            return Ok(0);
        };
        for item in tree.scan_prefix(b"n") {
            let (_, v) = item.map_err(|e| self.err(e))?;
            let b: [u8; 8] = v
                .as_ref()
                .try_into()
                .map_err(|_| BookError::Corrupt(format!("a game count of {} bytes", v.len())))?;
            total = total.saturating_add(u64::from_le_bytes(b));
        }
        Ok(total)
    }

    pub(super) fn for_each_count(
        &self,
        opponent: OpponentId,
        f: &mut dyn FnMut(Key, GameCounts),
    ) -> Result<(), BookError> {
        let Some(tree) = self.tree else {
            return Ok(());
        };
        let mut prefix = [b'c'; 3];
        prefix[1..].copy_from_slice(&opponent.0.to_be_bytes());
        for item in tree.scan_prefix(prefix) {
            let (k, v) = item.map_err(|e| self.err(e))?;
            let b: [u8; 16] = k.get(3..).and_then(|b| b.try_into().ok()).ok_or_else(|| {
                BookError::Corrupt(format!("a learning counts key of {} bytes", k.len()))
            })?;
            let key = Key::from_bytes(b);
            f(key, decode_counts(key, &v)?);
        }
        Ok(())
    }
}

/// The store's side: its `learning` tree, read through `Learning`.
impl super::SledStore {
    pub(super) fn learning_view(&self) -> Learning<'_> {
        Learning {
            tree: self.learning.as_ref(),
            path: &self.path,
        }
    }

    /// The `learning` tree, made now if the store has none yet (a write).
    pub(super) fn learning_tree(&mut self) -> Result<sled::Tree, BookError> {
        if let Some(tree) = &self.learning {
            return Ok(tree.clone());
        }
        let tree = self.db.open_tree(LEARNING).map_err(|e| self.err(e))?;
        self.learning = Some(tree.clone());
        Ok(tree)
    }
}
