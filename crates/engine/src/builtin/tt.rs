//! A fixed-size transposition table with search generations.
//!
//! Each search starts a new generation; entries of older generations are treated as
//! empty. That makes a search independent of what was searched before (the engine is
//! deterministic for a given node limit) without clearing the whole table each time.

use stera_rules::backend::board::zobrist::ZobristKey;

/// How a stored value bounds the true value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    /// The true value is at least the stored value (fail high).
    Lower,
    /// The true value is at most the stored value (fail low).
    Upper,
    /// The stored value is exact.
    Exact,
}

/// What a probe finds.
#[derive(Debug, Clone, Copy)]
pub struct Hit {
    /// Best move found (raw 16-bit encoding), 0 for none.
    pub mv: u16,
    /// Value, already adjusted to the probing node's ply.
    pub value: i32,
    pub depth: i32,
    pub bound: Bound,
}

#[derive(Debug, Clone, Copy, Default)]
struct Entry {
    check: u64,
    generation: u16,
    mv: u16,
    value: i16,
    depth: i8,
    /// 0 = empty, 1 = lower, 2 = upper, 3 = exact.
    bound: u8,
}

const WAYS: usize = 4;

#[derive(Debug, Clone, Copy, Default)]
#[repr(align(64))]
struct Bucket([Entry; WAYS]);

/// The transposition table.
pub struct TranspositionTable {
    buckets: Vec<Bucket>,
    generation: u16,
}

/// Default table size in MiB.
pub const DEFAULT_HASH_MB: usize = 16;

impl TranspositionTable {
    /// A table of about `mb` MiB (at least one bucket).
    #[must_use]
    pub fn new(mb: usize) -> Self {
        let count = (mb.saturating_mul(1024 * 1024) / std::mem::size_of::<Bucket>()).max(1);
        Self {
            buckets: vec![Bucket::default(); count],
            generation: 1,
        }
    }

    /// Size in MiB (rounded down).
    #[must_use]
    pub fn size_mb(&self) -> usize {
        self.buckets.len() * std::mem::size_of::<Bucket>() / (1024 * 1024)
    }

    /// Starts a new search: everything stored before becomes invisible.
    pub fn new_search(&mut self) {
        self.generation = self.generation.wrapping_add(1);
        if self.generation == 0 {
            // After 65535 searches the counter wraps; a real clear keeps old entries
            // from reappearing as current ones.
            self.buckets.fill(Bucket::default());
            self.generation = 1;
        }
    }

    /// Empties the table in place (the state of a new table of the same size,
    /// without giving its memory back and asking for it again).
    pub fn clear(&mut self) {
        self.buckets.fill(Bucket::default());
        self.generation = 1;
    }

    fn index(&self, key: ZobristKey) -> usize {
        // Multiply-shift maps the key onto any table size without a power-of-two
        // restriction.
        ((u128::from(key.low_u64()) * self.buckets.len() as u128) >> 64) as usize
    }

    /// Looks `key` up; `ply` converts mate scores back to distances from the root.
    #[must_use]
    pub fn probe(&self, key: ZobristKey, ply: usize) -> Option<Hit> {
        let check = key.high_u64() | 1;
        let bucket = &self.buckets[self.index(key)];
        bucket
            .0
            .iter()
            .find(|e| e.check == check && e.generation == self.generation && e.bound != 0)
            .map(|e| Hit {
                mv: e.mv,
                value: value_from_tt(i32::from(e.value), ply),
                depth: i32::from(e.depth),
                bound: match e.bound {
                    1 => Bound::Lower,
                    2 => Bound::Upper,
                    _ => Bound::Exact,
                },
            })
    }

    /// Stores a search result. Replaces, in this order: the same position, an entry of
    /// an older generation, the shallowest entry.
    pub fn store(
        &mut self,
        key: ZobristKey,
        ply: usize,
        mv: u16,
        value: i32,
        depth: i32,
        bound: Bound,
    ) {
        let check = key.high_u64() | 1;
        let generation = self.generation;
        let index = self.index(key);
        let bucket = &mut self.buckets[index];
        let slot = bucket
            .0
            .iter()
            .position(|e| e.check == check && e.generation == generation)
            .or_else(|| {
                bucket
                    .0
                    .iter()
                    .position(|e| e.generation != generation || e.bound == 0)
            })
            .unwrap_or_else(|| {
                let mut best = 0;
                for (i, e) in bucket.0.iter().enumerate() {
                    if e.depth < bucket.0[best].depth {
                        best = i;
                    }
                }
                best
            });
        let entry = &mut bucket.0[slot];
        // Keep a known best move when a shallower result without one comes in.
        let keep_move = entry.check == check && entry.generation == generation && mv == 0;
        let mv = if keep_move { entry.mv } else { mv };
        *entry = Entry {
            check,
            generation,
            mv,
            value: value_to_tt(value, ply) as i16,
            depth: depth.clamp(-1, 127) as i8,
            bound: match bound {
                Bound::Lower => 1,
                Bound::Upper => 2,
                Bound::Exact => 3,
            },
        };
    }
}

/// Mate scores are stored relative to the node (distance to mate from there), so
/// the same entry is right at any ply.
fn value_to_tt(value: i32, ply: usize) -> i32 {
    let ply = ply as i32;
    if value >= stera_rules::value::MATE_IN_MAX_PLY {
        value + ply
    } else if value <= -stera_rules::value::MATE_IN_MAX_PLY {
        value - ply
    } else {
        value
    }
}

fn value_from_tt(value: i32, ply: usize) -> i32 {
    let ply = ply as i32;
    if value >= stera_rules::value::MATE_IN_MAX_PLY {
        value - ply
    } else if value <= -stera_rules::value::MATE_IN_MAX_PLY {
        value + ply
    } else {
        value
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stores_and_finds_and_forgets_on_new_search() {
        let mut tt = TranspositionTable::new(1);
        let key = ZobristKey::new(0x1234_5678, 0x9abc_def0);
        assert!(tt.probe(key, 0).is_none());
        tt.store(key, 3, 77, 150, 5, Bound::Exact);
        let hit = tt.probe(key, 0).expect("just stored");
        assert_eq!(
            (hit.mv, hit.value, hit.depth, hit.bound),
            (77, 150, 5, Bound::Exact)
        );
        tt.new_search();
        assert!(tt.probe(key, 0).is_none());
    }

    #[test]
    fn mate_scores_are_relative_to_the_node() {
        let mut tt = TranspositionTable::new(1);
        let key = ZobristKey::new(42, 43);
        // Mate in 5 plies from the root, seen at ply 2: 3 plies from the node.
        tt.store(key, 2, 0, stera_rules::value::mate_in(5), 3, Bound::Exact);
        let hit = tt.probe(key, 4).expect("stored");
        assert_eq!(hit.value, stera_rules::value::mate_in(7));
    }
}
