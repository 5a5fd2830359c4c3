//! 128-bit Zobrist keys of our own.
//!
//! The keys are persisted in books that live for months, so they must not change
//! when the backend crate changes its tables: the table here is generated from a
//! fixed seed and is part of the on-disk format. A key covers the board, both hands
//! and the side to move, never the ply, so transpositions share a key.

use std::fmt;

/// A position's 128-bit hash key.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Key(pub u128);

impl Key {
    /// Big-endian bytes: keys sort the same as bytes and as integers.
    #[must_use]
    pub const fn to_bytes(self) -> [u8; 16] {
        self.0.to_be_bytes()
    }

    /// Inverse of [`Key::to_bytes`].
    #[must_use]
    pub const fn from_bytes(bytes: [u8; 16]) -> Self {
        Self(u128::from_be_bytes(bytes))
    }

    /// The low 64 bits (for tables indexed by a 64-bit hash).
    #[must_use]
    pub const fn low64(self) -> u64 {
        self.0 as u64
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:032x}", self.0)
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Key({self})")
    }
}

impl std::ops::BitXor for Key {
    type Output = Self;
    fn bitxor(self, rhs: Self) -> Self {
        Self(self.0 ^ rhs.0)
    }
}

impl std::ops::BitXorAssign for Key {
    fn bitxor_assign(&mut self, rhs: Self) {
        self.0 ^= rhs.0;
    }
}

/// Colored piece slots: `color * 16 + piece_type` with the YaneuraOu piece-type
/// numbering (pawn 1 .. dragon 14).
const PIECE_SLOTS: usize = 32;
const SQUARES: usize = 81;
/// Hand piece types 1..=7 (pawn, lance, knight, silver, bishop, rook, gold).
const HAND_TYPES: usize = 8;
/// Counts 0..=18; count 0 has key zero so empty hands contribute nothing.
const HAND_COUNTS: usize = 19;

struct Table {
    board: [[u128; SQUARES]; PIECE_SLOTS],
    hand: [[[u128; HAND_COUNTS]; HAND_TYPES]; 2],
    side: u128,
}

const fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

const fn next128(state: &mut u64) -> u128 {
    let hi = splitmix64(state) as u128;
    let lo = splitmix64(state) as u128;
    (hi << 64) | lo
}

const fn build() -> Table {
    // The seed is part of the book format: changing it invalidates every stored key.
    let mut state: u64 = 0x5354_4552_415F_4B45; // "STERA_KE"
    let mut board = [[0u128; SQUARES]; PIECE_SLOTS];
    let mut p = 0;
    while p < PIECE_SLOTS {
        let mut s = 0;
        while s < SQUARES {
            board[p][s] = next128(&mut state);
            s += 1;
        }
        p += 1;
    }
    let mut hand = [[[0u128; HAND_COUNTS]; HAND_TYPES]; 2];
    let mut c = 0;
    while c < 2 {
        let mut t = 1;
        while t < HAND_TYPES {
            let mut n = 1;
            while n < HAND_COUNTS {
                hand[c][t][n] = next128(&mut state);
                n += 1;
            }
            t += 1;
        }
        c += 1;
    }
    let side = next128(&mut state);
    Table { board, hand, side }
}

static TABLE: Table = build();

#[inline]
pub(crate) fn board(color_index: usize, piece_type: usize, square: usize) -> u128 {
    TABLE.board[color_index * 16 + piece_type][square]
}

#[inline]
pub(crate) fn hand(color_index: usize, piece_type: usize, count: usize) -> u128 {
    TABLE.hand[color_index][piece_type][count.min(HAND_COUNTS - 1)]
}

#[inline]
pub(crate) fn side() -> u128 {
    TABLE.side
}
