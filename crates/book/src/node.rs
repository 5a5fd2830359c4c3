//! The thought node: one evaluated position as the store keeps it.
//!
//! A node is immutable once stored. It identifies its position compactly: the
//! 128-bit key for lookups, and either (parent node, move) or an SFEN (roots and
//! imported positions) to rebuild the position. Its move values follow the
//! canonical order of [`Position::legal_moves`], so a move costs 2 bytes (the value)
//! and the moves themselves are never stored.
//!
//! ## Record layout (format version 1, little-endian)
//!
//! | bytes | field |
//! | --- | --- |
//! | 1 | flags: bit 0 = origin is an SFEN, bit 1 = per-move depths present |
//! | 16 | key (big-endian, as [`Key::to_bytes`]) |
//! | 6 or 1+n | origin: parent id (u32) + move (u16), or SFEN length (u8) + SFEN bytes |
//! | 2 | ply |
//! | 2 | evaluator id (interned engine identity) |
//! | 4 | timestamp (seconds since the Unix epoch) |
//! | 2 | move count `n` |
//! | 2n | values (i16) |
//! | n | depths (u8, saturated), only with flag bit 1 |

use stera_rules::{Key, Move, Position};

use crate::BookError;

/// Dense id of a thought node: its position in the append order (0, 1, 2, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(pub u32);

impl NodeId {
    /// The id as an index into per-node tables.
    #[must_use]
    pub const fn index(self) -> usize {
        self.0 as usize
    }
}

impl std::fmt::Display for NodeId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "#{}", self.0)
    }
}

/// How to rebuild a node's position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// The position after `mv` from the position of node `parent`.
    Child { parent: NodeId, mv: Move },
    /// A position given directly (a root, an imported position): SFEN without ply.
    Sfen(String),
}

/// The values an evaluator produced for one position (what a worker sends back).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Thought {
    /// One value per legal move in canonical order: centipawns from the point of
    /// view of the side to move, mate scores as `±(MATE - n)`.
    pub values: Vec<i16>,
    /// The depth each value was searched to, same order (saturated at 255).
    pub depths: Option<Vec<u8>>,
    /// The engine identity (interned by the store).
    pub evaluator: String,
    /// When it was thought, seconds since the Unix epoch.
    pub timestamp: u32,
}

/// A thought node as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThoughtNode {
    pub key: Key,
    pub origin: Origin,
    /// The game ply of the position when it was first reached.
    pub ply: u16,
    /// Values in canonical move order (see [`Thought::values`]).
    pub values: Vec<i16>,
    pub depths: Option<Vec<u8>>,
    /// Interned evaluator id (see [`crate::NodeStore::intern_evaluator`]).
    pub evaluator: u16,
    pub timestamp: u32,
}

const FLAG_SFEN: u8 = 1;
const FLAG_DEPTHS: u8 = 2;
/// The fixed part of a record besides the origin.
const FIXED_LEN: usize = 1 + 16 + 2 + 2 + 4 + 2;

impl ThoughtNode {
    /// Checks the node against its position: key, and one value per legal move.
    ///
    /// # Errors
    /// [`BookError::Invalid`] saying what does not match.
    pub fn check_against(&self, position: &Position) -> Result<(), BookError> {
        if position.key() != self.key {
            return Err(BookError::Invalid(format!(
                "node key {} is not the key {} of `{}`",
                self.key,
                position.key(),
                position.to_sfen()
            )));
        }
        let legal = position.legal_move_count();
        if self.values.len() != legal {
            return Err(BookError::Invalid(format!(
                "{} values for `{}` which has {legal} legal moves",
                self.values.len(),
                position.to_sfen()
            )));
        }
        if let Some(d) = &self.depths
            && d.len() != legal
        {
            return Err(BookError::Invalid(format!(
                "{} depths for `{}` which has {legal} legal moves",
                d.len(),
                position.to_sfen()
            )));
        }
        Ok(())
    }

    /// Size of the encoded record.
    #[must_use]
    pub fn encoded_len(&self) -> usize {
        let origin = match &self.origin {
            Origin::Child { .. } => 6,
            Origin::Sfen(s) => 1 + s.len(),
        };
        let depth = if self.depths.is_some() { 1 } else { 0 };
        FIXED_LEN + origin + self.values.len() * (2 + depth)
    }

    /// Appends the record to `out`.
    ///
    /// # Errors
    /// [`BookError::Invalid`] for an SFEN longer than 255 bytes, more than
    /// 65,535 values, or depths whose count differs from the values'.
    pub fn encode_into(&self, out: &mut Vec<u8>) -> Result<(), BookError> {
        let n = u16::try_from(self.values.len())
            .map_err(|_| BookError::Invalid(format!("{} values", self.values.len())))?;
        if let Some(d) = &self.depths
            && d.len() != self.values.len()
        {
            return Err(BookError::Invalid(format!(
                "{} depths for {} values",
                d.len(),
                self.values.len()
            )));
        }
        let mut flags = 0;
        if matches!(self.origin, Origin::Sfen(_)) {
            flags |= FLAG_SFEN;
        }
        if self.depths.is_some() {
            flags |= FLAG_DEPTHS;
        }
        out.reserve(self.encoded_len());
        out.push(flags);
        out.extend_from_slice(&self.key.to_bytes());
        match &self.origin {
            Origin::Child { parent, mv } => {
                out.extend_from_slice(&parent.0.to_le_bytes());
                out.extend_from_slice(&mv.raw().to_le_bytes());
            }
            Origin::Sfen(s) => {
                let len = u8::try_from(s.len()).map_err(|_| {
                    BookError::Invalid(format!("SFEN of {} bytes (at most 255)", s.len()))
                })?;
                out.push(len);
                out.extend_from_slice(s.as_bytes());
            }
        }
        out.extend_from_slice(&self.ply.to_le_bytes());
        out.extend_from_slice(&self.evaluator.to_le_bytes());
        out.extend_from_slice(&self.timestamp.to_le_bytes());
        out.extend_from_slice(&n.to_le_bytes());
        for v in &self.values {
            out.extend_from_slice(&v.to_le_bytes());
        }
        if let Some(d) = &self.depths {
            out.extend_from_slice(d);
        }
        Ok(())
    }

    /// Decodes one record from the front of `bytes`; returns it and the rest.
    ///
    /// # Errors
    /// [`BookError::Corrupt`] when the bytes do not hold a whole, valid record.
    pub fn decode(bytes: &[u8]) -> Result<(Self, &[u8]), BookError> {
        let mut r = Reader { bytes, pos: 0 };
        let flags = r.u8()?;
        if flags & !(FLAG_SFEN | FLAG_DEPTHS) != 0 {
            return Err(BookError::Corrupt(format!(
                "unknown record flags {flags:#x}"
            )));
        }
        let key = Key::from_bytes(r.array::<16>()?);
        let origin = if flags & FLAG_SFEN != 0 {
            let len = usize::from(r.u8()?);
            let text = r.take(len)?;
            let s = std::str::from_utf8(text)
                .map_err(|_| BookError::Corrupt("SFEN origin is not UTF-8".to_owned()))?;
            Origin::Sfen(s.to_owned())
        } else {
            let parent = NodeId(u32::from_le_bytes(r.array::<4>()?));
            let raw = u16::from_le_bytes(r.array::<2>()?);
            let mv = Move::from_raw(raw)
                .ok_or_else(|| BookError::Corrupt(format!("move code {raw:#06x}")))?;
            Origin::Child { parent, mv }
        };
        let ply = u16::from_le_bytes(r.array::<2>()?);
        let evaluator = u16::from_le_bytes(r.array::<2>()?);
        let timestamp = u32::from_le_bytes(r.array::<4>()?);
        let n = usize::from(u16::from_le_bytes(r.array::<2>()?));
        let raw_values = r.take(2 * n)?;
        let values = raw_values
            .chunks_exact(2)
            .map(|c| i16::from_le_bytes([c[0], c[1]]))
            .collect();
        let depths = if flags & FLAG_DEPTHS != 0 {
            Some(r.take(n)?.to_vec())
        } else {
            None
        };
        let node = Self {
            key,
            origin,
            ply,
            values,
            depths,
            evaluator,
            timestamp,
        };
        Ok((node, &bytes[r.pos..]))
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], BookError> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.bytes.len());
        match end {
            Some(end) => {
                let s = &self.bytes[self.pos..end];
                self.pos = end;
                Ok(s)
            }
            None => Err(BookError::Corrupt(format!(
                "record truncated: needs {n} bytes at offset {}, {} left",
                self.pos,
                self.bytes.len() - self.pos
            ))),
        }
    }

    fn u8(&mut self) -> Result<u8, BookError> {
        Ok(self.take(1)?[0])
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], BookError> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(origin: Origin, depths: bool) -> ThoughtNode {
        let pos = Position::startpos();
        let n = pos.legal_move_count();
        ThoughtNode {
            key: pos.key(),
            origin,
            ply: 1,
            values: (0..n)
                .map(|i| i16::try_from(i).unwrap() * 37 - 500)
                .collect(),
            depths: depths.then(|| (0..n).map(|i| u8::try_from(i).unwrap()).collect()),
            evaluator: 3,
            timestamp: 1_700_000_000,
        }
    }

    #[test]
    fn records_round_trip_and_are_compact() {
        let mv = Move::from_usi("7g7f").unwrap();
        let nodes = [
            sample(
                Origin::Child {
                    parent: NodeId(42),
                    mv,
                },
                false,
            ),
            sample(
                Origin::Sfen(Position::startpos().to_sfen_without_ply()),
                true,
            ),
        ];
        let mut buf = Vec::new();
        for n in &nodes {
            n.encode_into(&mut buf).unwrap();
        }
        assert_eq!(buf.len(), nodes[0].encoded_len() + nodes[1].encoded_len());
        // 30 moves, no depths: 33 fixed bytes + 2 per move.
        assert_eq!(nodes[0].encoded_len(), 33 + 60);
        let (a, rest) = ThoughtNode::decode(&buf).unwrap();
        let (b, rest) = ThoughtNode::decode(rest).unwrap();
        assert!(rest.is_empty());
        assert_eq!(a, nodes[0]);
        assert_eq!(b, nodes[1]);
        a.check_against(&Position::startpos()).unwrap();
    }

    #[test]
    fn truncated_or_garbled_records_are_errors() {
        let mut buf = Vec::new();
        sample(Origin::Sfen("x".into()), true)
            .encode_into(&mut buf)
            .unwrap();
        for cut in [0, 1, 10, 20, buf.len() - 1] {
            assert!(matches!(
                ThoughtNode::decode(&buf[..cut]),
                Err(BookError::Corrupt(_))
            ));
        }
        buf[0] = 0x80;
        assert!(ThoughtNode::decode(&buf).is_err());
    }

    #[test]
    fn check_against_rejects_wrong_counts() {
        let mut n = sample(Origin::Sfen(String::new()), false);
        n.values.pop();
        assert!(n.check_against(&Position::startpos()).is_err());
    }
}
