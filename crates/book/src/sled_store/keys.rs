//! The byte layout of a sled store's keys and small values (see the module
//! documentation of `sled_store` for the trees).

use stera_rules::{Key, Move};

use crate::{BookError, GameCounts, NodeId};

pub(super) const FORMAT: &[u8] = b"stera-book 1";

/// Key in `meta`: present when the store is known to hold at most one node per
/// pair of colour-flipped twins (see [`crate::twins`]).
pub(super) const TWINS_MERGED: &[u8] = b"twins merged";

pub(super) fn chunk_first_id(key: &[u8]) -> Result<u32, BookError> {
    let b: [u8; 4] = key
        .try_into()
        .map_err(|_| BookError::Corrupt(format!("node chunk key of {} bytes", key.len())))?;
    Ok(u32::from_be_bytes(b))
}

/// Key of a position's counters in the `games` tree: `c` + key (16 bytes BE).
pub(super) fn counts_key(key: Key) -> [u8; 17] {
    let mut k = [b'c'; 17];
    k[1..].copy_from_slice(&key.to_bytes());
    k
}

/// Key of a recorded game id in the `games` tree: `g` + id (8 bytes BE).
pub(super) fn game_id_key(id: u64) -> [u8; 9] {
    let mut k = [b'g'; 9];
    k[1..].copy_from_slice(&id.to_be_bytes());
    k
}

/// The key `n` in the `games` tree: the number of recorded game ids.
pub(super) const GAMES_RECORDED: &[u8] = b"n";

pub(super) fn decode_counts(key: Key, value: &[u8]) -> Result<GameCounts, BookError> {
    GameCounts::decode(value).map_err(|e| BookError::Corrupt(format!("position {key}: {e}")))
}

pub(super) fn chunk_count(value: &[u8]) -> Result<u32, BookError> {
    match value.get(..4) {
        Some(b) => Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]])),
        None => Err(BookError::Corrupt("node chunk without a count".into())),
    }
}

/// The tree of quarantine records: key as in `bans`, value the note (SFEN, a
/// tab, the reason). Opened at every open (a store of an earlier version gets it
/// empty), so that every store lists every table.
pub(super) const QUARANTINE: &str = "quarantine";

/// The key of a banned edge: node id (u32 BE) + move (u16 BE).
pub(super) fn ban_key(node: NodeId, mv: Move) -> [u8; 6] {
    let mut key = [0u8; 6];
    key[..4].copy_from_slice(&node.0.to_be_bytes());
    key[4..].copy_from_slice(&mv.raw().to_be_bytes());
    key
}

pub(super) fn decode_ban_key(k: &[u8]) -> Result<(NodeId, Move), BookError> {
    let [a, b, c, d, e, f] = k else {
        return Err(BookError::Corrupt(format!("ban key of {} bytes", k.len())));
    };
    let node = NodeId(u32::from_be_bytes([*a, *b, *c, *d]));
    let raw = u16::from_be_bytes([*e, *f]);
    let mv = Move::from_raw(raw)
        .ok_or_else(|| BookError::Corrupt(format!("banned move code {raw:#06x}")))?;
    Ok((node, mv))
}
