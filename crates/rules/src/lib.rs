//! The shogi rules core of the book generator.
//!
//! A small API over a perft-checked backend ([rsshogi]): [`Position`] (SFEN, USI
//! `position` commands, legal moves, do/undo, check, mate, repetition), [`Move`]
//! (USI text, 16-bit encoding) and [`Key`] (our own 128-bit Zobrist key, stable
//! across backend versions because books persist it).
//!
//! ```
//! use stera_rules::Position;
//! let pos = Position::from_position_command("startpos moves 7g7f 3c3d").unwrap();
//! assert_eq!(pos.to_sfen(), "lnsgkgsnl/1r5b1/pppppp1pp/6p2/9/2P6/PP1PPPPPP/1B5R1/LNSGKGSNL b - 3");
//! ```

mod color;
mod error;
pub mod legality;
pub mod move16;
mod moves;
pub mod packed_sfen;
mod perft;
mod position;
mod repetition;
mod retro;
mod sfen;
pub mod value;
mod zobrist;

pub use color::Color;
pub use error::RulesError;
pub use legality::{
    MAX_MESSAGE_CHARS, MAX_PLY, MAX_QUOTE_CHARS, PositionRule, excerpt, excerpt_message,
    excerpt_runs,
};
pub use moves::{Move, sort_canonical};
pub use packed_sfen::{PACKED_SFEN_BYTES, PackedSfenError};
pub use position::{Position, STARTPOS_SFEN};
pub use repetition::Repetition;
pub use sfen::canonical_sfen;
pub use zobrist::Key;

/// The largest number of legal moves in any shogi position.
pub const MAX_LEGAL_MOVES: usize = 593;

/// The backend crate, for the built-in engine's hot paths only.
pub use rsshogi as backend;
