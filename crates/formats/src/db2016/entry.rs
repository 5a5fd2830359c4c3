//! Book entries and moves, and the duplicate-merging rule.

use std::cmp::Ordering;

use stera_rules::{Move, Position};

use super::FormatError;

/// Largest magnitude of a book value (mate); readers clamp to it.
pub const VALUE_LIMIT: i32 = stera_rules::value::MATE;

/// A move value that means "the move exists, its value is unknown" (the i16
/// minimum; YaneuraOu's `makebook` writes it for moves taken from game records).
/// Readers and writers keep it as it is instead of clamping it to a mate score,
/// and `book-tools import` does not take it for an evaluation.
pub const VALUE_UNKNOWN: i32 = i16::MIN as i32;

/// One move of a book entry.
///
/// `value` is in centipawns from the mover's point of view, `depth` the search depth
/// or the plies to the leaf, `count` a frequency.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BookMove {
    /// The book move.
    pub mv: Move,
    /// The expected reply (`none` in the file when unknown).
    pub ponder: Option<Move>,
    /// Centipawns for the side to move, within ±32000, or [`VALUE_UNKNOWN`].
    pub value: i32,
    /// Search depth, or plies to the leaf after a tera-shock export.
    pub depth: i32,
    /// Frequency; 0 is allowed.
    pub count: u64,
}

impl BookMove {
    /// A move with the defaults of a bare move line: no ponder, value 0, depth 0,
    /// count 1.
    #[must_use]
    pub fn new(mv: Move) -> Self {
        Self {
            mv,
            ponder: None,
            value: 0,
            depth: 0,
            count: 1,
        }
    }
}

/// Clamps a value to the book range ±32000; [`VALUE_UNKNOWN`] stays itself.
///
/// ```
/// use stera_formats::db2016::{VALUE_UNKNOWN, clamp_value};
/// assert_eq!(clamp_value(-40_000), -32_000);
/// assert_eq!(clamp_value(-32_768), VALUE_UNKNOWN);
/// ```
#[must_use]
pub fn clamp_value(value: i64) -> i32 {
    if value == i64::from(VALUE_UNKNOWN) {
        return VALUE_UNKNOWN;
    }
    // The clamp makes the narrowing lossless.
    i32::try_from(value.clamp(-i64::from(VALUE_LIMIT), i64::from(VALUE_LIMIT))).unwrap_or(0)
}

/// A book position with its moves.
///
/// The position is kept as its canonical SFEN (the rules core's `to_sfen()`, with the
/// ply): that is the sort key of the file and costs one string per entry, which matters
/// for 15M-entry streams. [`BookEntry::position`] parses it when a caller needs the
/// board.
///
/// ```
/// use stera_formats::db2016::{BookEntry, BookMove};
/// use stera_rules::Position;
/// let mut entry = BookEntry::new(&Position::startpos());
/// entry.push_move(BookMove { value: 40, ..BookMove::new("7g7f".parse().unwrap()) });
/// assert_eq!(entry.sfen(), stera_rules::STARTPOS_SFEN);
/// // Hands in any order are canonicalised through the rules core.
/// let e = BookEntry::from_sfen("sfen 4k4/9/9/9/9/9/9/9/4K4 b PR 1").unwrap();
/// assert_eq!(e.sfen(), "4k4/9/9/9/9/9/9/9/4K4 b RP 1");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BookEntry {
    sfen: String,
    /// The moves, best first once written (see [`sort_moves_best_first`]).
    pub moves: Vec<BookMove>,
}

impl BookEntry {
    /// An entry for `position` with no moves.
    #[must_use]
    pub fn new(position: &Position) -> Self {
        Self {
            sfen: position.to_sfen(),
            moves: Vec::new(),
        }
    }

    /// An entry from SFEN text (with or without `sfen `, hands in any order, ply
    /// optional), canonicalised through the rules core.
    ///
    /// # Errors
    /// [`FormatError::Sfen`] when the text is not a valid position.
    pub fn from_sfen(text: &str) -> Result<Self, FormatError> {
        let sfen = stera_rules::canonical_sfen(text).map_err(FormatError::Sfen)?;
        Ok(Self::from_canonical_sfen(sfen))
    }

    /// An entry whose SFEN is already canonical (read back from our own sort runs).
    pub(crate) fn from_canonical_sfen(sfen: String) -> Self {
        Self {
            sfen,
            moves: Vec::new(),
        }
    }

    /// The canonical SFEN including the ply (without the `sfen ` prefix).
    #[must_use]
    pub fn sfen(&self) -> &str {
        &self.sfen
    }

    /// The SFEN without the ply: what identifies the position regardless of ply.
    #[must_use]
    pub fn sfen_without_ply(&self) -> &str {
        split_ply(&self.sfen).0
    }

    /// The ply of the entry's SFEN.
    #[must_use]
    pub fn ply(&self) -> u32 {
        split_ply(&self.sfen).1
    }

    /// Parses the position (the SFEN was validated when the entry was made).
    ///
    /// # Errors
    /// [`FormatError::Sfen`] only if the rules core rejects its own output.
    pub fn position(&self) -> Result<Position, FormatError> {
        Position::from_sfen(&self.sfen).map_err(FormatError::Sfen)
    }

    /// Adds a move under the duplicate rule: the same move again replaces ponder,
    /// value and depth and sums the counts; a new move is appended.
    pub fn push_move(&mut self, mv: BookMove) {
        match self.moves.iter_mut().find(|m| m.mv == mv.mv) {
            Some(existing) => {
                existing.ponder = mv.ponder;
                existing.value = mv.value;
                existing.depth = mv.depth;
                existing.count = existing.count.saturating_add(mv.count);
            }
            None => self.moves.push(mv),
        }
    }

    /// Merges `other` (a later entry of the same SFEN) into `self` under the duplicate
    /// rule: its moves are pushed in order with [`BookEntry::push_move`]. Returns
    /// `false` and changes nothing when the SFENs differ.
    ///
    /// ```
    /// use stera_formats::db2016::{BookEntry, BookMove};
    /// use stera_rules::Position;
    /// let m = |usi: &str, value, count| BookMove { value, count, ..BookMove::new(usi.parse().unwrap()) };
    /// let mut a = BookEntry::new(&Position::startpos());
    /// a.moves = vec![m("7g7f", 10, 2)];
    /// let mut b = a.clone();
    /// b.moves = vec![m("7g7f", 30, 1), m("2g2f", 20, 1)];
    /// assert!(a.merge(b));
    /// assert_eq!(a.moves, vec![m("7g7f", 30, 3), m("2g2f", 20, 1)]);
    /// ```
    pub fn merge(&mut self, other: BookEntry) -> bool {
        if self.sfen != other.sfen {
            return false;
        }
        for mv in other.moves {
            self.push_move(mv);
        }
        true
    }

    /// A rough count of the heap and inline bytes this entry holds (for the sorting
    /// writer's memory budget).
    #[must_use]
    pub fn approx_memory(&self) -> usize {
        std::mem::size_of::<Self>()
            + self.sfen.capacity()
            + self.moves.capacity() * std::mem::size_of::<BookMove>()
    }
}

/// Sorts moves best first the way the reference writer does: count, then value,
/// both descending; ties keep their order (the sort is stable).
pub fn sort_moves_best_first(moves: &mut [BookMove]) {
    moves.sort_by(compare_best_first);
}

fn compare_best_first(a: &BookMove, b: &BookMove) -> Ordering {
    b.count.cmp(&a.count).then(b.value.cmp(&a.value))
}

/// Splits a canonical SFEN into the part before the ply and the ply.
pub(crate) fn split_ply(sfen: &str) -> (&str, u32) {
    match sfen.rfind(' ') {
        Some(i) => (&sfen[..i], sfen[i + 1..].parse().unwrap_or(0)),
        None => (sfen, 0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mv(usi: &str) -> Move {
        Move::from_usi(usi).unwrap()
    }

    #[test]
    fn clamp_limits_values_to_mate() {
        assert_eq!(clamp_value(40_000), 32_000);
        assert_eq!(clamp_value(-99_999_999_999), -32_000);
        assert_eq!(clamp_value(-123), -123);
    }

    #[test]
    fn best_first_is_count_then_value_and_stable() {
        let mk = |u: &str, value, count| BookMove {
            value,
            count,
            ..BookMove::new(mv(u))
        };
        let mut moves = vec![
            mk("1g1f", 5, 1),
            mk("2g2f", 50, 1),
            mk("7g7f", -10, 3),
            mk("3g3f", 5, 1),
        ];
        sort_moves_best_first(&mut moves);
        let order: Vec<String> = moves.iter().map(|m| m.mv.to_string()).collect();
        assert_eq!(order, ["7g7f", "2g2f", "1g1f", "3g3f"]);
    }

    #[test]
    fn merge_refuses_other_positions() {
        let mut a = BookEntry::new(&Position::startpos());
        let b = BookEntry::from_sfen("4k4/9/9/9/9/9/9/9/4K4 b - 1").unwrap();
        assert!(!a.merge(b));
    }

    #[test]
    fn ply_split() {
        let e = BookEntry::from_sfen("4k4/9/9/9/9/9/9/9/4K4 w - 17").unwrap();
        assert_eq!(e.ply(), 17);
        assert_eq!(e.sfen_without_ply(), "4k4/9/9/9/9/9/9/9/4K4 w -");
    }
}
