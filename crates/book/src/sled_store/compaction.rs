//! Compaction: merging the small node chunks of committed result batches into
//! large ones, beside appends.

use std::path::PathBuf;

use super::keys::{chunk_count, chunk_first_id};
use super::store_error;
use crate::BookError;

/// What one compaction pass did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CompactSummary {
    /// Chunks merged away.
    pub removed: usize,
    /// The first node id of the chunk a later pass should start from: every chunk
    /// before it holds at least the requested records.
    pub next_from: u32,
}

/// Merges the small chunks the dispatcher appends (one per committed batch of
/// results, each with sled's per-entry overhead in memory and on disk) into large
/// ones, on another thread while the store's owner keeps appending.
///
/// Safe beside appends: a merge is one atomic sled batch that inserts the merged
/// chunk under the first chunk's key and removes the others, so a crash leaves
/// either the old chunks or the new one, and appends only add keys past every
/// existing chunk. Not safe beside a scan of the nodes (an export's or a
/// backup's): a scan that already passed a merged chunk's key would miss the
/// chunks it absorbed. The coordinator runs compactions, exports and backups one
/// at a time on its maintenance thread.
#[derive(Clone)]
pub struct Compactor {
    pub(super) path: PathBuf,
    pub(super) db: sled::Db,
    pub(super) nodes: sled::Tree,
}

impl std::fmt::Debug for Compactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Compactor({})", self.path.display())
    }
}

impl Compactor {
    /// Merges consecutive chunks starting at node id `from` until each holds at
    /// least `min_records` (the last group may hold fewer and is left for a later
    /// pass). Chunks that are already large enough are not rewritten.
    ///
    /// # Errors
    /// Storage failure or corrupt chunks.
    pub fn compact_from(&self, from: u32, min_records: u32) -> Result<CompactSummary, BookError> {
        let err = |e: sled::Error| store_error(&self.path, e);
        let mut summary = CompactSummary {
            removed: 0,
            next_from: from,
        };
        let mut group: Vec<(sled::IVec, sled::IVec)> = Vec::new();
        let mut group_records = 0u32;
        for item in self.nodes.range(from.to_be_bytes()..) {
            let (k, v) = item.map_err(err)?;
            let count = chunk_count(&v)?;
            if group.is_empty() {
                summary.next_from = chunk_first_id(&k)?;
            }
            group.push((k, v));
            group_records = group_records.saturating_add(count);
            if group_records >= min_records {
                summary.removed += self.merge(&group)?;
                summary.next_from = summary.next_from.saturating_add(group_records);
                group.clear();
                group_records = 0;
            }
        }
        // The tail stays for a later pass, when more chunks have joined it.
        Ok(summary)
    }

    /// Merges every chunk from node id `from` on into one.
    pub(super) fn merge_rest(&self, from: u32) -> Result<usize, BookError> {
        let group = self
            .nodes
            .range(from.to_be_bytes()..)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| store_error(&self.path, e))?;
        self.merge(&group)
    }

    /// Replaces `group` (consecutive chunks) by one chunk in one atomic batch.
    fn merge(&self, group: &[(sled::IVec, sled::IVec)]) -> Result<usize, BookError> {
        let Some((first_key, _)) = group.first() else {
            return Ok(0);
        };
        if group.len() < 2 {
            return Ok(0);
        }
        let mut total = 0u32;
        let mut value = Vec::with_capacity(group.iter().map(|(_, v)| v.len()).sum());
        value.extend_from_slice(&[0; 4]);
        for (_, v) in group {
            total = total
                .checked_add(chunk_count(v)?)
                .ok_or_else(|| BookError::Corrupt("chunk counts overflow".into()))?;
            value.extend_from_slice(&v[4..]);
        }
        value[..4].copy_from_slice(&total.to_le_bytes());
        let mut batch = sled::Batch::default();
        for (k, _) in &group[1..] {
            batch.remove(k.clone());
        }
        let bytes = value.len() as u64;
        batch.insert(first_key.clone(), value);
        crate::space::ensure_room(&self.path, &self.path, bytes)?;
        let err = |e: sled::Error| store_error(&self.path, e);
        self.nodes.apply_batch(batch).map_err(err)?;
        self.db.flush().map_err(err)?;
        Ok(group.len() - 1)
    }
}

impl super::SledStore {
    /// Number of node chunks (append batches not yet merged).
    #[must_use]
    pub fn chunk_count(&self) -> usize {
        self.nodes.len()
    }

    /// Merges consecutive node chunks until each holds at least `min_records`
    /// (the last one may hold fewer). Returns the number of chunks removed. See
    /// [`Compactor`] for doing it on another thread.
    ///
    /// # Errors
    /// Storage failure or corrupt chunks.
    pub fn compact(&mut self, min_records: u32) -> Result<usize, BookError> {
        let compactor = self.compactor();
        let pass = compactor.compact_from(0, min_records)?;
        Ok(pass.removed + compactor.merge_rest(pass.next_from)?)
    }

    /// A handle that merges small node chunks from another thread (see
    /// [`Compactor`]).
    #[must_use]
    pub fn compactor(&self) -> Compactor {
        Compactor {
            path: self.path.clone(),
            db: self.db.clone(),
            nodes: self.nodes.clone(),
        }
    }
}
