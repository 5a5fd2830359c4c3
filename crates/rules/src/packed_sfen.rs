//! PackedSfen: YaneuraOu's 256-bit Huffman packing of a position (the key of
//! `.ybb` binary books and of its training data), bit for bit the same as
//! cshogi's `Board.to_psfen()` / `set_psfen()`.
//!
//! The 256 bits are written least significant bit first, byte by byte:
//!
//! 1. the side to move (1 bit: 0 black, 1 white);
//! 2. the square of black's king, then of white's (7 bits each; square index
//!    `(file - 1) * 9 + (rank - 1)`, so 1a = 0, 9i = 80);
//! 3. the 81 squares in index order, kings skipped: an empty square is one 0
//!    bit, a piece its Huffman code (pawn `0x01`/2 bits, lance `0x03`/4, knight
//!    `0x0b`/4, silver `0x07`/4, gold `0x0f`/5, bishop `0x1f`/6, rook `0x3f`/6,
//!    each code written from its lowest bit), then, except for gold, a promotion
//!    bit, then a colour bit (1 white);
//! 4. the hands, black's then white's, pieces in the order pawn, lance, knight,
//!    silver, gold, bishop, rook: the board code without its lowest bit (always 1),
//!    a 0 promotion bit (not for gold) and the colour bit;
//! 5. the piece box (pieces of the set on neither board nor hand), in the same
//!    order: a hand code whose promotion bit is 1 and colour bit 0; gold, which has
//!    no promotion bit, is written as a promoted white silver in hand.
//!
//! Each piece costs the same number of bits wherever it is, so the full set of 40
//! pieces fills the 256 bits exactly.
//!
//! ```
//! use stera_rules::Position;
//! use stera_rules::packed_sfen::{self, PackedSfenError};
//!
//! let pos = Position::from_sfen("lnsgkgsnl/1r5b1/pppppp1pp/6p2/9/2P6/PP1PPPPPP/1B5R1/LNSGKGSNL b - 3").unwrap();
//! let bytes = pos.to_packed_sfen();
//! assert_eq!(bytes, packed_sfen::pack(&pos));
//! // The packing has no ply: it is given back when unpacking.
//! let back = packed_sfen::unpack(&bytes, 3).unwrap();
//! assert_eq!(back.to_sfen(), pos.to_sfen());
//! // Packing straight from SFEN text (no position is built) gives the same bytes.
//! assert_eq!(packed_sfen::pack_sfen(&pos.to_sfen()).unwrap(), (bytes, 3));
//! // Corrupt bytes are refused with the reason.
//! let mut bad = bytes;
//! bad[0] ^= 0xfe; // the black king's square becomes 0x7f
//! assert!(matches!(
//!     packed_sfen::unpack(&bad, 1),
//!     Err(PackedSfenError::KingSquare { .. })
//! ));
//! ```

use std::fmt;

use rsshogi::types::{Color as BColor, Hand, HandPiece, Square};
use thiserror::Error;

use crate::legality::{self, Placement};
use crate::{Position, RulesError};

/// Bytes of a PackedSfen.
pub const PACKED_SFEN_BYTES: usize = 32;

/// Bits of a PackedSfen.
const BITS: usize = PACKED_SFEN_BYTES * 8;

/// Why bytes are not the PackedSfen of a legal position.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum PackedSfenError {
    /// A king square field is not a square (YaneuraOu writes 81 for a missing king).
    #[error("the {color} king's square field holds {square}, not a square (0..=80)")]
    KingSquare { color: &'static str, square: u8 },
    /// Both king square fields name one square.
    #[error("both kings are on square {square}")]
    KingsOnOneSquare { square: String },
    /// A bit pattern that is no Huffman code of the part being read.
    #[error("bit {bit}: no piece code starts with the bits `{bits}` ({part})")]
    BadCode {
        bit: usize,
        bits: String,
        part: Part,
    },
    /// The codes need more than the 256 bits.
    #[error("the codes run past bit 256 ({part})")]
    Overrun { part: Part },
    /// Board, hands and piece box together do not hold the set of 40 pieces.
    #[error("{count} {piece} on the board, in hands and in the piece box (the set has {limit})")]
    PieceCount {
        piece: &'static str,
        count: u32,
        limit: u32,
    },
    /// The decoded position (with the given ply) is not a legal position.
    #[error("not a legal position: {0}")]
    Illegal(#[source] RulesError),
}

/// Which part of a PackedSfen was being read when it went wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// The king square fields.
    Kings,
    /// The board square with this index (`(file - 1) * 9 + rank - 1`).
    Square(u8),
    /// The hands and the piece box after the board.
    Hands,
}

impl fmt::Display for Part {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Kings => f.write_str("king squares"),
            Self::Square(index) => write!(f, "square {}", square_name(usize::from(*index))),
            Self::Hands => f.write_str("hands and piece box"),
        }
    }
}

/// `5e` style name of a square index.
fn square_name(index: usize) -> String {
    let (file, rank) = (index / 9, index % 9);
    format!("{}{}", file + 1, char::from(b'a' + (rank % 9) as u8))
}

// Piece codes of `legality` (the backend's numbering): 1 pawn, 2 lance, 3 knight,
// 4 silver, 5 bishop, 6 rook, 7 gold, 8 king, promoted = code + 8.
use legality::{BISHOP, GOLD, KING, KNIGHT, LANCE, PAWN, PROMOTED, ROOK, SILVER};

/// Order of the hands and the piece box.
const ORDER: [u8; 7] = [PAWN, LANCE, KNIGHT, SILVER, GOLD, BISHOP, ROOK];

/// Pieces of each kind in the set, indexed by code.
const fn set_count(code: u8) -> u32 {
    match code {
        PAWN => 18,
        BISHOP | ROOK => 2,
        _ => 4,
    }
}

const fn piece_name(code: u8) -> &'static str {
    match code {
        PAWN => "pawns",
        LANCE => "lances",
        KNIGHT => "knights",
        SILVER => "silvers",
        GOLD => "golds",
        BISHOP => "bishops",
        _ => "rooks",
    }
}

/// The board Huffman code (value, bits) of an unpromoted piece code.
const fn board_code(code: u8) -> (u32, u32) {
    match code {
        PAWN => (0x01, 2),
        LANCE => (0x03, 4),
        KNIGHT => (0x0b, 4),
        SILVER => (0x07, 4),
        BISHOP => (0x1f, 6),
        ROOK => (0x3f, 6),
        _ => (0x0f, 5), // gold
    }
}

/// The hand code: the board code without its lowest bit (which is always 1).
const fn hand_code(code: u8) -> (u32, u32) {
    let (value, bits) = board_code(code);
    (value >> 1, bits - 1)
}

struct BitWriter {
    data: [u8; PACKED_SFEN_BYTES],
    cursor: usize,
}

impl BitWriter {
    fn bit(&mut self, on: bool) {
        // A legal position fills exactly 256 bits; anything beyond is dropped.
        if on && let Some(byte) = self.data.get_mut(self.cursor / 8) {
            *byte |= 1 << (self.cursor % 8);
        }
        self.cursor += 1;
    }

    fn bits(&mut self, value: u32, count: u32) {
        for i in 0..count {
            self.bit(value >> i & 1 == 1);
        }
    }
}

struct BitReader<'a> {
    data: &'a [u8; PACKED_SFEN_BYTES],
    cursor: usize,
}

impl BitReader<'_> {
    fn bit(&mut self, part: Part) -> Result<bool, PackedSfenError> {
        let byte = self
            .data
            .get(self.cursor / 8)
            .ok_or(PackedSfenError::Overrun { part })?;
        let on = byte >> (self.cursor % 8) & 1 == 1;
        self.cursor += 1;
        Ok(on)
    }

    fn bits(&mut self, count: u32, part: Part) -> Result<u32, PackedSfenError> {
        let mut value = 0;
        for i in 0..count {
            value |= u32::from(self.bit(part)?) << i;
        }
        Ok(value)
    }

    /// Reads bits until they form one of `codes` (value, bits, piece code).
    fn code(&mut self, codes: &[(u32, u32, u8)], part: Part) -> Result<u8, PackedSfenError> {
        let start = self.cursor;
        let longest = codes.iter().map(|c| c.1).max().unwrap_or(0);
        let mut value = 0;
        for bits in 1..=longest {
            value |= u32::from(self.bit(part)?) << (bits - 1);
            if let Some(&(_, _, piece)) = codes.iter().find(|c| c.0 == value && c.1 == bits) {
                return Ok(piece);
            }
        }
        Err(PackedSfenError::BadCode {
            bit: start,
            bits: (0..longest)
                .map(|i| if value >> i & 1 == 1 { '1' } else { '0' })
                .collect(),
            part,
        })
    }
}

/// Packs a board given as [`Placement`] cells, hands and side.
fn pack_placement(p: &Placement) -> [u8; PACKED_SFEN_BYTES] {
    let mut w = BitWriter {
        data: [0; PACKED_SFEN_BYTES],
        cursor: 0,
    };
    pack_into(p, &mut w);
    w.data
}

fn pack_into(p: &Placement, w: &mut BitWriter) {
    w.bit(p.side == 1);
    let kings: [usize; 2] = [0u8, 1].map(|colour| {
        p.cells
            .iter()
            .position(|&c| c == colour << 4 | KING)
            // YaneuraOu's square of a missing king; legal positions have both.
            .unwrap_or(81)
    });
    for king in kings {
        w.bits(u32::try_from(king).unwrap_or(81), 7);
    }
    let mut used = [0u32; 16];
    for (index, &cell) in p.cells.iter().enumerate() {
        if kings.contains(&index) {
            continue;
        }
        if cell == 0 {
            w.bit(false);
            continue;
        }
        let code = cell & 15;
        let base = if code > PROMOTED {
            code - PROMOTED
        } else {
            code
        };
        used[usize::from(base)] += 1;
        let (value, bits) = board_code(base);
        w.bits(value, bits);
        if base != GOLD {
            w.bit(code > PROMOTED);
        }
        w.bit(cell >> 4 == 1);
    }
    for (colour, hand) in p.hands.iter().enumerate() {
        for code in ORDER {
            let count = hand[usize::from(code - 1)];
            used[usize::from(code)] += count;
            let (value, bits) = hand_code(code);
            for _ in 0..count {
                w.bits(value, bits);
                if code != GOLD {
                    w.bit(false);
                }
                w.bit(colour == 1);
            }
        }
    }
    for code in ORDER {
        for _ in used[usize::from(code)]..set_count(code) {
            if code == GOLD {
                // Gold has no promotion bit: a promoted white silver in hand.
                let (value, bits) = hand_code(SILVER);
                w.bits(value, bits);
                w.bits(0b11, 2);
            } else {
                let (value, bits) = hand_code(code);
                w.bits(value, bits);
                w.bits(0b01, 2);
            }
        }
    }
}

/// The PackedSfen of a position (see the module documentation).
#[must_use]
pub fn pack(position: &Position) -> [u8; PACKED_SFEN_BYTES] {
    pack_backend(position.backend())
}

/// [`pack`] of the rules backend's position, for a caller that set one up
/// without a [`Position`] (the export generates each entry's moves on one, and
/// packs it for a `.ybb` book rather than parse its SFEN text again with
/// [`pack_sfen`], whose parsing and legality checks were most of its time).
#[must_use]
pub fn pack_backend(inner: &rsshogi::board::Position) -> [u8; PACKED_SFEN_BYTES] {
    let mut p = Placement::empty();
    for (index, cell) in p.cells.iter_mut().enumerate() {
        let piece = inner.piece_on(Square::from_index(index));
        if !piece.is_empty() {
            let code = u8::try_from(piece.piece_type().raw()).unwrap_or(0);
            *cell = u8::from(piece.color() == BColor::WHITE) << 4 | code;
        }
    }
    for (colour, c) in [BColor::BLACK, BColor::WHITE].into_iter().enumerate() {
        let hand = inner.hand(c);
        for (slot, hp) in [
            HandPiece::PAWN,
            HandPiece::LANCE,
            HandPiece::KNIGHT,
            HandPiece::SILVER,
            HandPiece::BISHOP,
            HandPiece::ROOK,
            HandPiece::GOLD,
        ]
        .into_iter()
        .enumerate()
        {
            // Placement hands are indexed by code - 1 (pawn .. rook, gold).
            p.hands[colour][slot] = Hand::count_of(hand, hp);
        }
    }
    p.side = u8::from(inner.turn() == BColor::WHITE);
    pack_placement(&p)
}

/// The PackedSfen and the ply of SFEN text, without building a [`Position`]
/// (cheaper: a book writer packs millions of entries).
///
/// # Errors
/// What [`crate::canonical_sfen`] refuses: a malformed SFEN or an illegal position.
pub fn pack_sfen(sfen: &str) -> Result<([u8; PACKED_SFEN_BYTES], u32), RulesError> {
    let (_, placement) = crate::sfen::parse(sfen)?;
    // The parser bounds the ply by MAX_PLY.
    let ply = u32::try_from(placement.ply).unwrap_or(u32::MAX);
    Ok((pack_placement(&placement), ply))
}

/// The canonical SFEN (as [`Position::to_sfen`] prints it) of a PackedSfen with
/// the given ply.
///
/// # Errors
/// [`PackedSfenError`] saying what is wrong: a king square, a bit pattern that is
/// no code, codes that do not end at bit 256, a piece set that is not the full set
/// of 40, or a decoded position that is not legal (including a ply of 0 or above
/// [`crate::MAX_PLY`]).
pub fn unpack_sfen(bytes: &[u8; PACKED_SFEN_BYTES], ply: u32) -> Result<String, PackedSfenError> {
    let p = decode(bytes)?;
    let mut text = String::with_capacity(100);
    for rank in 0..9 {
        let mut empty = 0u8;
        for file in (0..9).rev() {
            let cell = p.cells[file * 9 + rank];
            if cell == 0 {
                empty += 1;
                continue;
            }
            if empty > 0 {
                text.push(char::from(b'0' + empty));
                empty = 0;
            }
            let code = cell & 15;
            if code > PROMOTED {
                text.push('+');
            }
            let letter = b"?PLNSBRGKPLNSBR"[usize::from(code.min(14))];
            text.push(char::from(if cell >> 4 == 1 {
                letter.to_ascii_lowercase()
            } else {
                letter
            }));
        }
        if empty > 0 {
            text.push(char::from(b'0' + empty));
        }
        if rank < 8 {
            text.push('/');
        }
    }
    text.push_str(if p.side == 1 { " w " } else { " b " });
    let before = text.len();
    for (colour, hand) in p.hands.iter().enumerate() {
        for (slot, &count) in hand.iter().enumerate() {
            if count > 0 {
                let letter = b"PLNSBRG"[slot];
                text.push_str(&count.to_string());
                text.push(char::from(if colour == 1 {
                    letter.to_ascii_lowercase()
                } else {
                    letter
                }));
            }
        }
    }
    if text.len() == before {
        text.push('-');
    }
    text.push(' ');
    text.push_str(&ply.to_string());
    crate::canonical_sfen(&text).map_err(PackedSfenError::Illegal)
}

/// The position of a PackedSfen with the given ply (the packing has none).
///
/// # Errors
/// As [`unpack_sfen`].
pub fn unpack(bytes: &[u8; PACKED_SFEN_BYTES], ply: u32) -> Result<Position, PackedSfenError> {
    Position::from_sfen(&unpack_sfen(bytes, ply)?).map_err(PackedSfenError::Illegal)
}

impl Position {
    /// The PackedSfen of this position (see [`crate::packed_sfen`]); the same as
    /// [`pack`].
    #[must_use]
    pub fn to_packed_sfen(&self) -> [u8; PACKED_SFEN_BYTES] {
        pack(self)
    }
}

/// Board codes: (value, bits, piece code); 0 is an empty square.
const BOARD_CODES: [(u32, u32, u8); 8] = [
    (0, 1, 0),
    (0x01, 2, PAWN),
    (0x03, 4, LANCE),
    (0x0b, 4, KNIGHT),
    (0x07, 4, SILVER),
    (0x0f, 5, GOLD),
    (0x1f, 6, BISHOP),
    (0x3f, 6, ROOK),
];

/// Hand codes (value, bits, piece code): the board codes without the lowest bit.
const HAND_CODES: [(u32, u32, u8); 7] = [
    (0x00, 1, PAWN),
    (0x01, 3, LANCE),
    (0x05, 3, KNIGHT),
    (0x03, 3, SILVER),
    (0x07, 4, GOLD),
    (0x0f, 5, BISHOP),
    (0x1f, 5, ROOK),
];

/// Reads the 256 bits into a placement (ply 1) and checks the piece set.
fn decode(bytes: &[u8; PACKED_SFEN_BYTES]) -> Result<Placement, PackedSfenError> {
    let mut r = BitReader {
        data: bytes,
        cursor: 0,
    };
    let mut p = Placement::empty();
    p.side = u8::from(r.bit(Part::Kings)?);
    let mut kings = [0usize; 2];
    for (colour, name) in ["black", "white"].into_iter().enumerate() {
        let square = r.bits(7, Part::Kings)?;
        if square >= 81 {
            return Err(PackedSfenError::KingSquare {
                color: name,
                square: u8::try_from(square).unwrap_or(u8::MAX),
            });
        }
        kings[colour] = square as usize;
    }
    if kings[0] == kings[1] {
        return Err(PackedSfenError::KingsOnOneSquare {
            square: square_name(kings[0]),
        });
    }
    p.cells[kings[0]] = KING;
    p.cells[kings[1]] = 1 << 4 | KING;
    let mut total = [0u32; 16];
    for index in 0..81u8 {
        let i = usize::from(index);
        if kings.contains(&i) {
            continue;
        }
        let part = Part::Square(index);
        let code = r.code(&BOARD_CODES, part)?;
        if code == 0 {
            continue;
        }
        total[usize::from(code)] += 1;
        let promoted = code != GOLD && r.bit(part)?;
        let white = r.bit(part)?;
        p.cells[i] = u8::from(white) << 4 | if promoted { code + PROMOTED } else { code };
    }
    while r.cursor < BITS {
        let start = r.cursor;
        let code = r.code(&HAND_CODES, Part::Hands)?;
        let (promoted, white) = if code == GOLD {
            (false, r.bit(Part::Hands)?)
        } else {
            (r.bit(Part::Hands)?, r.bit(Part::Hands)?)
        };
        match (promoted, white) {
            (false, white) => p.hands[usize::from(white)][usize::from(code - 1)] += 1,
            // The piece box: a promoted black piece, a promoted white silver for gold.
            (true, false) => {}
            (true, true) if code == SILVER => {
                total[usize::from(GOLD)] += 1;
                continue;
            }
            (true, true) => {
                return Err(PackedSfenError::BadCode {
                    bit: start,
                    bits: (start..r.cursor)
                        .map(|b| {
                            if bytes[b / 8] >> (b % 8) & 1 == 1 {
                                '1'
                            } else {
                                '0'
                            }
                        })
                        .collect(),
                    part: Part::Hands,
                });
            }
        }
        total[usize::from(code)] += 1;
    }
    for code in ORDER {
        let count = total[usize::from(code)];
        if count != set_count(code) {
            return Err(PackedSfenError::PieceCount {
                piece: piece_name(code),
                count,
                limit: set_count(code),
            });
        }
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// Bytes printed by cshogi 1.1.0 (`Board(sfen).to_psfen()`), so that these
    /// unit tests pin the format even where python is missing; the integration
    /// test `packed_sfen_cshogi` compares thousands of positions live.
    #[test]
    fn known_packings_from_cshogi() {
        for (sfen, expected) in [
            (
                crate::STARTPOS_SFEN,
                "58a451220ceb67227e9653221caf447824c22b119e53221ceb6f223e9651220c",
            ),
            (
                "4k4/9/9/9/9/9/9/9/4K4 b - 1",
                "58240000000000000000008024499224499294524aadb5b6d65a7beffd7afd7e",
            ),
            (
                "4k4/9/9/9/9/9/9/9/4K4 b P 1",
                "58240000000000000000000024499224499294524aadb5b6d65a7beffd7afd7e",
            ),
            (
                "4k4/9/9/9/9/9/9/9/4K4 b RBGSNLP 1",
                "5824000000000000000000004219e7f1912449922449524aa9b5b6d6da7bbf7e",
            ),
        ] {
            let pos = Position::from_sfen(sfen).unwrap();
            assert_eq!(hex(&pos.to_packed_sfen()), expected, "{sfen}");
            let bytes = pos.to_packed_sfen();
            assert_eq!(unpack(&bytes, 1).unwrap().to_sfen(), pos.to_sfen());
        }
    }

    /// The backend's packing (the export's) and the text's (any other writer's)
    /// agree on positions of random games: promotions, hands, white to move.
    #[test]
    fn packing_the_backend_position_is_packing_its_sfen() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(23);
        let (mut promoted, mut in_hand, mut white) = (0, 0, 0);
        for _ in 0..300 {
            let mut pos = Position::startpos();
            for _ in 0..rng.random_range(0..=160) {
                let moves = pos.legal_moves();
                if moves.is_empty() {
                    break;
                }
                pos.do_move(moves[rng.random_range(0..moves.len())]);
                let sfen = pos.to_sfen();
                promoted += usize::from(sfen.contains('+'));
                in_hand += usize::from(!sfen.contains(" - "));
                white += usize::from(sfen.contains(" w "));
                assert_eq!(
                    pack_backend(pos.backend()),
                    pack_sfen(&sfen).unwrap().0,
                    "{sfen}"
                );
            }
        }
        assert!(promoted > 1000 && in_hand > 1000 && white > 1000);
    }

    /// The bits a placement's packing uses (the writer keeps counting past 256).
    fn bits_used(p: &Placement) -> usize {
        let mut w = BitWriter {
            data: [0; PACKED_SFEN_BYTES],
            cursor: 0,
        };
        pack_into(p, &mut w);
        w.cursor
    }

    #[test]
    fn every_position_fills_exactly_256_bits() {
        for sfen in [
            crate::STARTPOS_SFEN,
            "4k4/9/9/9/9/9/9/9/4K4 w 2R2B4G4S4N4L18P 7",
            "4k4/9/9/9/9/9/9/9/4K4 b 2r2b4g4s4n4l18p 7",
            "+R+B2k4/9/9/9/9/9/9/9/4K4 b - 1",
            "4k4/9/9/9/9/9/9/9/4K4 b - 1",
        ] {
            let (canonical, placement) = crate::sfen::parse(sfen).unwrap();
            assert_eq!(bits_used(&placement), BITS, "{sfen}");
            let (bytes, ply) = pack_sfen(sfen).unwrap();
            assert_eq!(unpack_sfen(&bytes, ply).unwrap(), canonical);
        }
    }

    /// Sets `count` bits at `at` to `value` (lowest bit first).
    fn set_bits(bytes: &mut [u8; 32], at: usize, value: u32, count: usize) {
        for i in 0..count {
            let b = at + i;
            bytes[b / 8] &= !(1 << (b % 8));
            bytes[b / 8] |= u8::from(value >> i & 1 == 1) << (b % 8);
        }
    }

    #[test]
    fn corrupt_bytes_are_refused_with_the_reason() {
        let start = Position::startpos().to_packed_sfen();
        // The white king's field (bits 8..15) set to the black king's square.
        let mut same = start;
        set_bits(&mut same, 8, u32::from(start[0] >> 1), 7);
        assert_eq!(
            unpack(&same, 1).unwrap_err(),
            PackedSfenError::KingsOnOneSquare {
                square: "5i".into()
            }
        );
        let err = unpack(&[0xff; 32], 1).unwrap_err();
        assert_eq!(
            err,
            PackedSfenError::KingSquare {
                color: "black",
                square: 127
            }
        );
        // The last bit is the colour of the lance on 9i: a white lance there has
        // no move.
        let mut flipped = start;
        flipped[31] ^= 0x80;
        assert!(matches!(
            unpack(&flipped, 1).unwrap_err(),
            PackedSfenError::Illegal(RulesError::IllegalPosition { .. })
        ));
        assert!(matches!(
            unpack(&start, 0).unwrap_err(),
            PackedSfenError::Illegal(RulesError::Sfen { .. })
        ));

        // Bare kings: 94 bits of side, kings and empty squares, then the piece
        // box: 18 pawns of 3 bits (`010`), 4 lances of 5 (`10010`), 4 knights
        // (`10110`) from bit 168, ...
        let bare = pack_sfen("4k4/9/9/9/9/9/9/9/4K4 b - 1").unwrap().0;
        // The first knight turned into a lance: 5 lances, 3 knights.
        let mut lances = bare;
        set_bits(&mut lances, 170, 0, 1);
        assert_eq!(
            unpack(&lances, 1).unwrap_err(),
            PackedSfenError::PieceCount {
                piece: "lances",
                count: 5,
                limit: 4
            }
        );
        // The first box pawn turned into a promoted white pawn in hand: no code.
        let mut promoted = bare;
        set_bits(&mut promoted, 96, 1, 1);
        let err = unpack(&promoted, 1).unwrap_err();
        assert_eq!(
            err,
            PackedSfenError::BadCode {
                bit: 94,
                bits: "011".into(),
                part: Part::Hands
            }
        );
        assert_eq!(
            err.to_string(),
            "bit 94: no piece code starts with the bits `011` (hands and piece box)"
        );
        // The same pawn as a black pawn in hand: a legal position.
        let mut in_hand = bare;
        set_bits(&mut in_hand, 95, 0, 1);
        assert_eq!(
            unpack_sfen(&in_hand, 1).unwrap(),
            "4k4/9/9/9/9/9/9/9/4K4 b P 1"
        );
        // Codes running past bit 256: the last box rook (`1111110`, bits 249..256)
        // turned into a box pawn (`010`) and the start of a rook code (`1111`).
        let mut overrun = bare;
        set_bits(&mut overrun, 249, 0b010, 3);
        set_bits(&mut overrun, 252, 0b1111, 4);
        assert_eq!(
            unpack(&overrun, 1).unwrap_err(),
            PackedSfenError::Overrun { part: Part::Hands }
        );
    }

    #[test]
    fn an_illegal_decoded_position_is_refused() {
        // Black to move while black's rook on 5c attacks white's king on 5a:
        // packed from a placement (the SFEN parser would refuse it first).
        let (_, mut placement) = crate::sfen::parse("4k4/9/9/9/9/9/9/9/4K3R b - 1").unwrap();
        placement.cells[8] = 0;
        placement.cells[4 * 9 + 2] = ROOK;
        let bytes = pack_placement(&placement);
        match unpack(&bytes, 1) {
            Err(PackedSfenError::Illegal(RulesError::IllegalPosition { .. })) => {}
            other => panic!("expected an illegal position, got {other:?}"),
        }
    }
}
