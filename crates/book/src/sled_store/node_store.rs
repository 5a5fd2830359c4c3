//! The [`NodeStore`] implementation: what the book, the dispatcher and the
//! tools read and write through the trait, each write flushed before it
//! returns (see the module documentation of `sled_store`).

use std::collections::BTreeMap;
use std::collections::btree_map::Entry;

use stera_rules::{Key, Move};

use super::keys::{
    GAMES_RECORDED, QUARANTINE, ban_key, chunk_first_id, counts_key, decode_ban_key, decode_counts,
    game_id_key,
};
use super::reader::{game_counts_of, nodes_of};
use super::whole::games_recorded_in;
use super::{RECORD_FILE, SledStore, store_error};
use crate::{
    BookError, GameCounts, NodeId, NodeStore, OpponentId, OpponentRecord, RunConfig, ThoughtNode,
};

impl NodeStore for SledStore {
    fn append(&mut self, nodes: &[ThoughtNode]) -> Result<NodeId, BookError> {
        if nodes.is_empty() {
            return Ok(NodeId(self.len));
        }
        let count = u32::try_from(nodes.len())
            .map_err(|_| BookError::Invalid(format!("batch of {} nodes", nodes.len())))?;
        let first = self.len;
        let next = first
            .checked_add(count)
            .ok_or_else(|| BookError::Full("more than 2^32 nodes".into()))?;
        let buf = &mut self.encode_buffer;
        buf.clear();
        buf.extend_from_slice(&count.to_le_bytes());
        for n in nodes {
            n.encode_into(buf)?;
        }
        crate::space::ensure_room(&self.path, &self.path, buf.len() as u64)?;
        self.nodes
            .insert(first.to_be_bytes(), buf.as_slice())
            .map_err(|e| store_error(&self.path, e))?;
        self.db.flush().map_err(|e| store_error(&self.path, e))?;
        self.len = next;
        self.holdings.nodes = next;
        if buf.capacity() > (16 << 20) {
            *buf = Vec::new();
        }
        self.note_write();
        Ok(NodeId(first))
    }

    fn len(&self) -> u32 {
        self.len
    }

    fn for_each_node(
        &self,
        visit: &mut dyn FnMut(NodeId, ThoughtNode) -> Result<(), BookError>,
    ) -> Result<(), BookError> {
        let mut seen = 0u32;
        nodes_of(&self.nodes, &self.path, &mut |id, node| {
            seen += 1;
            visit(id, node)
        })?;
        if seen != self.len {
            return Err(BookError::Damaged {
                path: self.path.display().to_string(),
                detail: format!("a scan of its positions ended after {seen} of {}", self.len),
            });
        }
        Ok(())
    }

    fn ban(&mut self, node: NodeId, mv: Move) -> Result<(), BookError> {
        let key = ban_key(node, mv);
        self.room(key.len())?;
        self.bans.insert(key, &[]).map_err(|e| self.err(e))?;
        Ok(())
    }

    fn bans(&self) -> Result<Vec<(NodeId, Move)>, BookError> {
        let mut out = Vec::new();
        for item in self.bans.iter() {
            let (k, _) = item.map_err(|e| self.err(e))?;
            out.push(decode_ban_key(&k)?);
        }
        Ok(out)
    }

    fn record_quarantine(&mut self, node: NodeId, mv: Move, note: &str) -> Result<(), BookError> {
        self.room(6 + note.len())?;
        let tree = self.db.open_tree(QUARANTINE).map_err(|e| self.err(e))?;
        tree.insert(ban_key(node, mv), note.as_bytes())
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    fn quarantined(&self) -> Result<Vec<(NodeId, Move, String)>, BookError> {
        let tree = self.db.open_tree(QUARANTINE).map_err(|e| self.err(e))?;
        let mut out = Vec::new();
        for item in tree.iter() {
            let (k, v) = item.map_err(|e| self.err(e))?;
            let (node, mv) = decode_ban_key(&k)?;
            out.push((node, mv, String::from_utf8_lossy(&v).into_owned()));
        }
        Ok(out)
    }

    fn unban(&mut self, node: NodeId, mv: Move) -> Result<bool, BookError> {
        let key = ban_key(node, mv);
        let tree = self.db.open_tree(QUARANTINE).map_err(|e| self.err(e))?;
        tree.remove(key).map_err(|e| self.err(e))?;
        let was = self.bans.remove(key).map_err(|e| self.err(e))?.is_some();
        self.db.flush().map_err(|e| self.err(e))?;
        Ok(was)
    }

    fn add_kifu_keys(&mut self, keys: &[Key]) -> Result<(), BookError> {
        if keys.is_empty() {
            return Ok(());
        }
        let next = match self.kifu.last().map_err(|e| self.err(e))? {
            Some((k, _)) => chunk_first_id(&k)?
                .checked_add(1)
                .ok_or_else(|| BookError::Full("kifu batches".into()))?,
            None => 0,
        };
        let mut value = Vec::with_capacity(keys.len() * 16);
        for k in keys {
            value.extend_from_slice(&k.to_bytes());
        }
        self.room(value.len())?;
        self.kifu
            .insert(next.to_be_bytes(), value)
            .map_err(|e| self.err(e))?;
        self.db.flush().map_err(|e| self.err(e))?;
        self.holdings.kifu_batches = self.holdings.kifu_batches.max(next.saturating_add(1));
        self.note_write();
        Ok(())
    }

    fn kifu_keys(&self) -> Result<Vec<Key>, BookError> {
        let mut out = Vec::new();
        for item in self.kifu.iter() {
            let (_, v) = item.map_err(|e| self.err(e))?;
            if v.len() % 16 != 0 {
                return Err(BookError::Corrupt(format!(
                    "kifu batch of {} bytes",
                    v.len()
                )));
            }
            for c in v.chunks_exact(16) {
                let mut b = [0u8; 16];
                b.copy_from_slice(c);
                out.push(Key::from_bytes(b));
            }
        }
        Ok(out)
    }

    fn intern_evaluator(&mut self, identity: &str) -> Result<u16, BookError> {
        if let Some(i) = self.evaluators.iter().position(|e| e == identity) {
            return u16::try_from(i).map_err(|_| BookError::Full("evaluators".into()));
        }
        let id = u16::try_from(self.evaluators.len())
            .map_err(|_| BookError::Full("more than 65,536 evaluators".into()))?;
        let mut key = b"evaluator".to_vec();
        key.extend_from_slice(&id.to_be_bytes());
        self.room(identity.len())?;
        self.meta
            .insert(key, identity.as_bytes())
            .map_err(|e| self.err(e))?;
        self.db.flush().map_err(|e| self.err(e))?;
        self.evaluators.push(identity.to_owned());
        self.holdings.evaluators = self.holdings.evaluators.saturating_add(1);
        self.note_write();
        Ok(id)
    }

    fn evaluators(&self) -> Result<Vec<String>, BookError> {
        Ok(self.evaluators.clone())
    }

    fn save_config(&mut self, config: &RunConfig) -> Result<(), BookError> {
        let text = config.to_text();
        self.room(text.len())?;
        self.meta
            .insert("config", text.as_bytes())
            .map_err(|e| self.err(e))?;
        self.db.flush().map_err(|e| self.err(e))?;
        self.holdings.config = true;
        self.note_write();
        Ok(())
    }

    fn config(&self) -> Result<Option<RunConfig>, BookError> {
        match self.meta.get("config").map_err(|e| self.err(e))? {
            Some(v) => {
                let text = std::str::from_utf8(&v)
                    .map_err(|_| BookError::Corrupt("run config is not UTF-8".into()))?;
                Ok(Some(RunConfig::from_text(text)?))
            }
            None => Ok(None),
        }
    }

    fn flush(&mut self) -> Result<(), BookError> {
        self.db.flush().map_err(|e| self.err(e))?;
        self.note_write();
        if self.record_error.is_none()
            && let Some(record) = &self.record
            && let Err(e) = record.sync()
        {
            self.record_error = Some(e.to_string());
        }
        match &self.record_error {
            Some(e) => Err(BookError::Store {
                path: self.path.join(RECORD_FILE).display().to_string(),
                source: sled::Error::Io(std::io::Error::other(format!(
                    "cannot write the record of what the store holds: {e}"
                ))),
            }),
            None => Ok(()),
        }
    }

    fn record_game(
        &mut self,
        game_id: u64,
        counts: &[(Key, GameCounts)],
    ) -> Result<bool, BookError> {
        let id_key = game_id_key(game_id);
        if self.games.contains_key(id_key).map_err(|e| self.err(e))? {
            return Ok(false);
        }
        // Read-modify-write is safe: one thread writes (see the trait).
        let mut merged: BTreeMap<Key, GameCounts> = BTreeMap::new();
        for &(key, c) in counts {
            match merged.entry(key) {
                Entry::Occupied(mut o) => o.get_mut().add(c),
                Entry::Vacant(v) => v.insert(self.game_counts(key)?).add(c),
            }
        }
        let recorded = self
            .games_recorded()?
            .checked_add(1)
            .ok_or_else(|| BookError::Full("more than 2^64 games".into()))?;
        let mut batch = sled::Batch::default();
        for (key, c) in merged {
            batch.insert(&counts_key(key)[..], &c.encode()[..]);
        }
        batch.insert(&id_key[..], &[][..]);
        batch.insert(GAMES_RECORDED, &recorded.to_le_bytes()[..]);
        self.room(counts.len() * 40 + 32)?;
        self.games.apply_batch(batch).map_err(|e| self.err(e))?;
        self.db.flush().map_err(|e| self.err(e))?;
        self.holdings.games = recorded;
        self.note_write();
        Ok(true)
    }

    fn game_counts(&self, key: Key) -> Result<GameCounts, BookError> {
        match self.games.get(counts_key(key)).map_err(|e| self.err(e))? {
            Some(v) => decode_counts(key, &v),
            None => Ok(GameCounts::default()),
        }
    }

    fn games_recorded(&self) -> Result<u64, BookError> {
        games_recorded_in(&self.games, &self.path)
    }

    fn max_game_id(&self) -> Result<Option<u64>, BookError> {
        let learned = self.learning_view().max_game_id()?;
        Ok(self.max_self_play_game_id()?.max(learned))
    }

    fn for_each_game_count(&self, f: &mut dyn FnMut(Key, GameCounts)) -> Result<(), BookError> {
        game_counts_of(&self.games, &self.path, f)
    }

    fn intern_opponent(&mut self, identity: &str) -> Result<OpponentId, BookError> {
        if let Some(i) = self.opponents.iter().position(|e| e == identity) {
            return Ok(OpponentId(u16::try_from(i).map_err(|_| {
                BookError::Corrupt("an opponent id beyond 65,535".into())
            })?));
        }
        self.room(identity.len() + 64)?;
        // The tree is made with the first opponent (see `TABLES`).
        self.learning_tree()?;
        let mut identities = std::mem::take(&mut self.opponents);
        let stored = self
            .learning_view()
            .store_identity(&self.meta, &mut identities, identity);
        self.opponents = identities;
        let id = stored?;
        self.db.flush().map_err(|e| self.err(e))?;
        Ok(id)
    }

    fn opponents(&self) -> Result<Vec<OpponentRecord>, BookError> {
        self.learning_view().records(&self.opponents)
    }

    fn record_learning_game(
        &mut self,
        opponent: OpponentId,
        game_id: u64,
        counts: &[(Key, GameCounts)],
    ) -> Result<bool, BookError> {
        if usize::from(opponent.0) >= self.opponents.len() {
            return Err(BookError::Invalid(format!(
                "no learning opponent {opponent} in `{}`",
                self.path.display()
            )));
        }
        let Some(batch) = self.learning_view().game_batch(opponent, game_id, counts)? else {
            return Ok(false);
        };
        self.room(counts.len() * 40 + 32)?;
        self.learning_tree()?
            .apply_batch(batch)
            .map_err(|e| self.err(e))?;
        self.db.flush().map_err(|e| self.err(e))?;
        self.holdings.learning_games = self.holdings.learning_games.saturating_add(1);
        self.note_write();
        Ok(true)
    }

    fn for_each_learning_count(
        &self,
        opponent: OpponentId,
        f: &mut dyn FnMut(Key, GameCounts),
    ) -> Result<(), BookError> {
        self.learning_view().for_each_count(opponent, f)
    }
}

impl SledStore {
    fn max_self_play_game_id(&self) -> Result<Option<u64>, BookError> {
        match self.games.scan_prefix(b"g").next_back() {
            Some(item) => {
                let (k, _) = item.map_err(|e| self.err(e))?;
                let b: [u8; 8] = k.get(1..).and_then(|b| b.try_into().ok()).ok_or_else(|| {
                    BookError::Corrupt(format!("game id key of {} bytes", k.len()))
                })?;
                Ok(Some(u64::from_be_bytes(b)))
            }
            None => Ok(None),
        }
    }
}
