//! Reading a store from another thread: the node and game-counter scans that
//! [`SledStore`](super::SledStore) and [`SledReader`] share.

use std::path::{Path, PathBuf};

use stera_rules::Key;

use super::keys::{chunk_count, chunk_first_id, decode_counts};
use super::store_error;
use crate::{BookError, GameCounts, NodeId, ThoughtNode};

/// Every node of the `nodes` tree, in id order (a sled panic on a damaged page
/// is [`BookError::Damaged`]).
pub(super) fn nodes_of(
    nodes: &sled::Tree,
    path: &Path,
    visit: &mut dyn FnMut(NodeId, ThoughtNode) -> Result<(), BookError>,
) -> Result<(), BookError> {
    crate::sled_guard::guarded(path, || nodes_of_unguarded(nodes, path, visit))
}

fn nodes_of_unguarded(
    nodes: &sled::Tree,
    path: &Path,
    visit: &mut dyn FnMut(NodeId, ThoughtNode) -> Result<(), BookError>,
) -> Result<(), BookError> {
    let mut expected = 0u32;
    for item in nodes.iter() {
        let (k, v) = item.map_err(|e| store_error(path, e))?;
        let first = chunk_first_id(&k)?;
        // Damage, not a bug: a chunk missing or cut means files cut short.
        let damaged = |detail: String| BookError::Damaged {
            path: path.display().to_string(),
            detail,
        };
        if first != expected {
            return Err(damaged(format!(
                "positions {expected} to {} are missing (the node chunk after them starts at {first})",
                first.saturating_sub(1)
            )));
        }
        let count = chunk_count(&v).map_err(|e| damaged(e.to_string()))?;
        let mut rest = &v[4..];
        for i in 0..count {
            let (node, tail) = ThoughtNode::decode(rest)
                .map_err(|e| damaged(format!("position {} cannot be read: {e}", first + i)))?;
            rest = tail;
            visit(NodeId(first + i), node)?;
        }
        if !rest.is_empty() {
            return Err(damaged(format!(
                "the node chunk at {first} has {} bytes after its {count} records",
                rest.len()
            )));
        }
        expected = first + count;
    }
    Ok(())
}

/// Every position's game counters in the `games` tree.
pub(super) fn game_counts_of(
    games: &sled::Tree,
    path: &Path,
    f: &mut dyn FnMut(Key, GameCounts),
) -> Result<(), BookError> {
    for item in games.scan_prefix(b"c") {
        let (k, v) = item.map_err(|e| store_error(path, e))?;
        let b: [u8; 16] = k
            .get(1..)
            .and_then(|b| b.try_into().ok())
            .ok_or_else(|| BookError::Corrupt(format!("game counts key of {} bytes", k.len())))?;
        let key = Key::from_bytes(b);
        f(key, decode_counts(key, &v)?);
    }
    Ok(())
}

/// A read-only view of a [`SledStore`](super::SledStore) for another thread: an export reads the
/// nodes and game counters while the dispatcher keeps appending. sled trees are
/// shared handles; a scan sees every write committed before it reaches it, and
/// nodes are appended in id order, so the first `n` nodes read are those of a
/// book snapshot of `n` nodes.
#[derive(Clone)]
pub struct SledReader {
    pub(super) path: PathBuf,
    pub(super) nodes: sled::Tree,
    pub(super) games: sled::Tree,
    pub(super) learning: Option<sled::Tree>,
    /// The copy a store opened for reading lives in, kept while this reads it.
    pub(super) _read_copy: Option<std::sync::Arc<super::read_copy::ReadCopy>>,
}

impl std::fmt::Debug for SledReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SledReader({})", self.path.display())
    }
}

impl SledReader {
    /// Every stored node in id order (including nodes appended during the scan).
    ///
    /// # Errors
    /// Storage failure, corrupt records, or what `visit` returns.
    pub fn for_each_node(
        &self,
        visit: &mut dyn FnMut(NodeId, ThoughtNode) -> Result<(), BookError>,
    ) -> Result<(), BookError> {
        nodes_of(&self.nodes, &self.path, visit)
    }

    /// Every position's game counters (each counter as last written).
    ///
    /// # Errors
    /// Storage failure or corrupt counters.
    pub fn for_each_game_count(&self, f: &mut dyn FnMut(Key, GameCounts)) -> Result<(), BookError> {
        game_counts_of(&self.games, &self.path, f)
    }

    /// Every position's learning counters against `opponent` (see
    /// [`crate::opponents`]).
    ///
    /// # Errors
    /// Storage failure or corrupt counters.
    pub fn for_each_learning_count(
        &self,
        opponent: crate::OpponentId,
        f: &mut dyn FnMut(Key, GameCounts),
    ) -> Result<(), BookError> {
        super::learning::Learning {
            tree: self.learning.as_ref(),
            path: &self.path,
        }
        .for_each_count(opponent, f)
    }
}

impl super::SledStore {
    /// A read-only view for another thread (see [`SledReader`]).
    #[must_use]
    pub fn reader(&self) -> SledReader {
        SledReader {
            path: self.path.clone(),
            nodes: self.nodes.clone(),
            games: self.games.clone(),
            learning: self.learning.clone(),
            _read_copy: self.read_copy.clone(),
        }
    }
}
