//! A small filter of the book's keys that answers "surely not in the book" for
//! most keys that are not, without touching the book's index.
//!
//! The graph probes the book for the child of every legal move and, for each
//! child it does not hold, for the child's colour-flipped twin: about 50 probes
//! a node, nearly all for keys the book does not hold. The book's index (about
//! 9 bytes a node, 300 MB at 15M nodes) is out of the processor's caches, so
//! each probe waited for memory. The filter holds about a byte a node (16 MB at
//! 15M nodes): mostly in the cache, and its probes, each one word, do not
//! depend on each other, so the processor overlaps them.

use std::sync::atomic::{AtomicU64, Ordering};

use rayon::prelude::*;
use stera_rules::Key;

use crate::{Book, NodeId};

/// A blocked Bloom filter: a key sets four bits of one 64-bit word.
pub(crate) struct KeyFilter {
    words: Vec<u64>,
}

/// Filter bits per key: with four bits a key, about 1 % of absent keys pass.
const BITS_PER_KEY: usize = 12;

impl KeyFilter {
    /// The filter of every key of `book`.
    pub(crate) fn of_book(book: &Book) -> Self {
        let n = book.len();
        let words = (n * BITS_PER_KEY).div_ceil(64).max(64);
        let shared: Vec<AtomicU64> = (0..words).map(|_| AtomicU64::new(0)).collect();
        (0..n).into_par_iter().for_each(|i| {
            let key = book.key(NodeId(u32::try_from(i).unwrap_or(u32::MAX)));
            let (word, bits) = probe(key, words);
            shared[word].fetch_or(bits, Ordering::Relaxed);
        });
        Self {
            words: shared.into_iter().map(AtomicU64::into_inner).collect(),
        }
    }

    /// [`KeyFilter::may_hold`] of each of `keys`, into `out`.
    pub(crate) fn may_hold_each(&self, keys: &[Key], out: &mut Vec<bool>) {
        out.clear();
        out.extend(keys.iter().map(|&key| self.may_hold(key)));
    }

    /// False when no key of the book is `key`; true when one may be.
    #[inline]
    pub(crate) fn may_hold(&self, key: Key) -> bool {
        let (word, bits) = probe(key, self.words.len());
        self.words[word] & bits == bits
    }
}

/// The word (of `words`) and bits of `key`. Keys are uniformly random
/// (Zobrist); the book's index hashes their low 64 bits, the filter the high
/// ones: the top bits choose the word (multiply-shift), the low ones the bits.
#[inline]
fn probe(key: Key, words: usize) -> (usize, u64) {
    let high = (key.0 >> 64) as u64;
    let word = ((u128::from(high) * words as u128) >> 64) as usize;
    let bits = 1u64 << (high & 63)
        | 1u64 << (high >> 6 & 63)
        | 1u64 << (high >> 12 & 63)
        | 1u64 << (high >> 18 & 63);
    (word, bits)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Origin, ThoughtNode};
    use stera_rules::Position;

    #[test]
    fn every_key_of_the_book_passes_and_most_others_do_not() {
        // Positions along a few games from the start.
        let mut book = Book::new();
        let mut pos = Position::startpos();
        let mut absent = Vec::new();
        for ply in 0..4000 {
            let moves = pos.legal_moves();
            if moves.is_empty() {
                pos = Position::startpos();
                continue;
            }
            if !book.contains(pos.key()) {
                book.insert(&ThoughtNode {
                    key: pos.key(),
                    origin: Origin::Sfen(pos.to_sfen_without_ply()),
                    ply: 1,
                    values: vec![0; moves.len()],
                    depths: None,
                    evaluator: 0,
                    timestamp: 0,
                })
                .unwrap();
            }
            absent.extend(moves.iter().map(|&m| pos.flipped_key_after(m)));
            let mv = moves[(ply * 7919) % moves.len()];
            pos.do_move(mv);
        }
        let filter = KeyFilter::of_book(&book);
        for i in 0..book.len() {
            assert!(filter.may_hold(book.key(NodeId(u32::try_from(i).unwrap()))));
        }
        absent.retain(|&k| !book.contains(k));
        let passed = absent.iter().filter(|&&k| filter.may_hold(k)).count();
        assert!(
            passed * 10 < absent.len(),
            "{passed} of {} absent keys pass",
            absent.len()
        );
    }
}
