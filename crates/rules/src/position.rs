use rsshogi::board::MoveList;
use rsshogi::board::Position as Backend;
use rsshogi::board::movegen::{LegalAll, generate_moves};
use rsshogi::types::{Color as BColor, Hand, HandPiece, Move32, PieceType, Square};

use crate::{Color, Key, Move, RulesError, zobrist};

/// The SFEN of the initial position.
pub const STARTPOS_SFEN: &str = "lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b - 1";

/// A shogi position with its game history (for repetition and undo).
///
/// ```
/// use stera_rules::Position;
/// let mut pos = Position::startpos();
/// assert_eq!(pos.legal_moves().len(), 30);
/// let m = pos.parse_move("7g7f").unwrap();
/// let predicted = pos.key_after(m);
/// pos.do_move(m);
/// assert_eq!(pos.key(), predicted);
/// pos.undo_move().unwrap();
/// assert_eq!(pos.to_sfen(), stera_rules::STARTPOS_SFEN);
/// ```
#[derive(Clone)]
pub struct Position {
    inner: Backend,
    /// Moves played since construction, with the key and the flipped twin's key
    /// before each move.
    history: Vec<(Move32, Key, Key)>,
    key: Key,
    /// The key of the colour-flipped twin, kept like `key`: the book probes the
    /// twin of every child it does not hold.
    flipped: Key,
}

impl std::fmt::Debug for Position {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Position({})", self.to_sfen())
    }
}

impl Position {
    /// The initial position (ply 1).
    #[must_use]
    pub fn startpos() -> Self {
        Self::from_backend(rsshogi::board::hirate_position())
    }

    /// Parses an SFEN (`<board> <b|w> <hand|-> [<ply>]`), with or without a leading
    /// `sfen `. Hand pieces may come in any order; [`Position::to_sfen`] prints the
    /// canonical order. A missing ply means 1. The position must be legal (see
    /// [`crate::legality`]: ply, kings, piece counts, dead pieces, nifu, a king that
    /// can be captured).
    ///
    /// # Errors
    /// [`RulesError::Sfen`] with the reason, [`RulesError::IllegalPosition`] with
    /// the rule broken.
    pub fn from_sfen(text: &str) -> Result<Self, RulesError> {
        let (canonical, _) = crate::sfen::parse(text)?;
        let inner =
            rsshogi::board::position_from_sfen(&canonical).map_err(|e| RulesError::Sfen {
                sfen: crate::excerpt(text),
                reason: e.to_string(),
            })?;
        Ok(Self::from_backend(inner))
    }

    /// Parses what follows `position` in a USI command (`startpos moves ...`,
    /// `sfen ... moves ...`); a leading `position ` is accepted too. Every move is
    /// checked for legality, and the moves may not take the game past
    /// [`crate::MAX_PLY`].
    ///
    /// # Errors
    /// [`RulesError::PositionCommand`], [`RulesError::Sfen`],
    /// [`RulesError::IllegalPosition`], [`RulesError::IllegalMoveInSequence`] saying
    /// which move is wrong, or [`RulesError::PlyLimit`].
    pub fn from_position_command(command: &str) -> Result<Self, RulesError> {
        let text = command.trim();
        let text = text.strip_prefix("position ").unwrap_or(text).trim();
        let (base, moves) = match text.find(" moves") {
            Some(i) if text[i + 6..].is_empty() || text[i + 6..].starts_with(' ') => {
                (text[..i].trim(), Some(text[i + 6..].trim()))
            }
            _ => (text, None),
        };
        let mut pos = if base == "startpos" {
            Self::startpos()
        } else if base.starts_with("sfen ") || base.split_whitespace().count() >= 3 {
            Self::from_sfen(base)?
        } else {
            return Err(RulesError::PositionCommand {
                command: crate::excerpt(command),
                reason: "expected `startpos` or `sfen <board> <side> <hand> <ply>`".to_owned(),
            });
        };
        for (index, token) in moves.unwrap_or("").split_whitespace().enumerate() {
            pos.play_usi(token).map_err(|e| match e {
                RulesError::PlyLimit { .. } => RulesError::PlyLimit { index: index + 1 },
                _ => RulesError::IllegalMoveInSequence {
                    index: index + 1,
                    mv: crate::excerpt(token),
                    sfen: pos.to_sfen(),
                },
            })?;
        }
        Ok(pos)
    }

    /// Parses a USI move, checks that it is legal here and that the game stays
    /// within [`crate::MAX_PLY`], and plays it: how moves from outside (game
    /// records, commands) are applied.
    ///
    /// # Errors
    /// [`RulesError::MoveSyntax`], [`RulesError::IllegalMove`], or
    /// [`RulesError::PlyLimit`] (with index 1) at the ply limit.
    pub fn play_usi(&mut self, usi: &str) -> Result<Move, RulesError> {
        let mv = self.parse_move(usi)?;
        if self.ply() >= crate::MAX_PLY {
            return Err(RulesError::PlyLimit { index: 1 });
        }
        self.do_move(mv);
        Ok(mv)
    }

    fn from_backend(mut inner: Backend) -> Self {
        inner.init_stack();
        let mut pos = Self {
            inner,
            history: Vec::new(),
            key: Key(0),
            flipped: Key(0),
        };
        pos.key = pos.compute_key();
        pos.flipped = pos.compute_flipped_key();
        pos
    }

    /// SFEN with the current ply, hands in canonical order (R B G S N L P).
    #[must_use]
    pub fn to_sfen(&self) -> String {
        let mut out = String::with_capacity(96);
        self.write_sfen(&mut out);
        out
    }

    /// Appends what [`Position::to_sfen`] returns to `out` (no allocation once
    /// `out` has grown: a book export writes one SFEN per thought position).
    ///
    /// ```
    /// let mut s = String::from("sfen ");
    /// stera_rules::Position::startpos().write_sfen(&mut s);
    /// assert_eq!(s, format!("sfen {}", stera_rules::STARTPOS_SFEN));
    /// ```
    pub fn write_sfen(&self, out: &mut String) {
        // Indexed by the backend's piece type (1 pawn .. 8 king, 9..14 promoted).
        const LETTERS: &[u8; 15] = b"?PLNSBRGKPLNSBR";
        const HAND_ORDER: [(HandPiece, u8); 7] = [
            (HandPiece::ROOK, b'R'),
            (HandPiece::BISHOP, b'B'),
            (HandPiece::GOLD, b'G'),
            (HandPiece::SILVER, b'S'),
            (HandPiece::KNIGHT, b'N'),
            (HandPiece::LANCE, b'L'),
            (HandPiece::PAWN, b'P'),
        ];
        let mut text = [0u8; 160];
        let mut n = 0;
        macro_rules! push {
            ($b:expr) => {{
                text[n] = $b;
                n += 1;
            }};
        }
        for rank in 0..9 {
            let mut empty = 0u8;
            for file in (0..9).rev() {
                // Square index = file * 9 + rank.
                let p = self.inner.piece_on(Square::from_index(file * 9 + rank));
                if p.is_empty() {
                    empty += 1;
                    continue;
                }
                if empty > 0 {
                    push!(b'0' + empty);
                    empty = 0;
                }
                let raw = usize::try_from(p.piece_type().raw()).unwrap_or(0).min(14);
                if raw >= 9 {
                    push!(b'+');
                }
                let letter = LETTERS[raw];
                push!(if p.color() == BColor::BLACK {
                    letter
                } else {
                    letter.to_ascii_lowercase()
                });
            }
            if empty > 0 {
                push!(b'0' + empty);
            }
            if rank < 8 {
                push!(b'/');
            }
        }
        push!(b' ');
        push!(if self.inner.turn() == BColor::BLACK {
            b'b'
        } else {
            b'w'
        });
        push!(b' ');
        let hands_start = n;
        for color in [BColor::BLACK, BColor::WHITE] {
            let hand = self.inner.hand(color);
            for (hp, letter) in HAND_ORDER {
                let count = Hand::count_of(hand, hp);
                if count > 1 {
                    if count >= 10 {
                        push!(b'0' + (count / 10) as u8);
                    }
                    push!(b'0' + (count % 10) as u8);
                }
                if count > 0 {
                    push!(if color == BColor::BLACK {
                        letter
                    } else {
                        letter.to_ascii_lowercase()
                    });
                }
            }
        }
        if n == hands_start {
            push!(b'-');
        }
        push!(b' ');
        // Every byte above is ASCII.
        out.push_str(std::str::from_utf8(&text[..n]).unwrap_or_default());
        let mut ply = itoa_u32(self.ply());
        out.push_str(ply.as_str());
    }

    /// SFEN without the ply field (what identifies a position in a book).
    #[must_use]
    pub fn to_sfen_without_ply(&self) -> String {
        let s = self.to_sfen();
        match s.rfind(' ') {
            Some(i) => s[..i].to_owned(),
            None => s,
        }
    }

    /// The game ply (1 for the initial position).
    #[must_use]
    pub fn ply(&self) -> u32 {
        u32::from(self.inner.game_ply())
    }

    /// The side to move.
    #[must_use]
    pub fn side_to_move(&self) -> Color {
        Color::from_backend(self.inner.turn())
    }

    /// The 128-bit key of this position (board, hands, side; not ply or history).
    #[must_use]
    pub fn key(&self) -> Key {
        self.key
    }

    /// Number of moves played since this position was constructed.
    #[must_use]
    pub fn history_len(&self) -> usize {
        self.history.len()
    }

    /// Every legal move, including optional non-promotions, in canonical order
    /// (ascending [`Move::raw`]). Stores keep per-move data in this order.
    #[must_use]
    pub fn legal_moves(&self) -> Vec<Move> {
        let mut out = Vec::new();
        self.legal_moves_into(&mut out);
        out
    }

    /// [`Position::legal_moves`] into a reused buffer (cleared first).
    pub fn legal_moves_into(&self, out: &mut Vec<Move>) {
        let mut list = MoveList::new();
        generate_moves::<LegalAll>(&self.inner, &mut list);
        out.clear();
        out.extend(list.iter().map(|m| Move::from_backend(*m)));
        crate::sort_canonical(out, |m| *m);
    }

    /// Number of legal moves (no sorting, no allocation).
    #[must_use]
    pub fn legal_move_count(&self) -> usize {
        let mut list = MoveList::new();
        generate_moves::<LegalAll>(&self.inner, &mut list);
        list.len()
    }

    /// True if `mv` is legal here.
    #[must_use]
    pub fn is_legal(&self, mv: Move) -> bool {
        let b = mv.backend();
        // The backend's own check trusts move encodings; generating is the safe oracle
        // for moves that come from outside (engine output, files, the network).
        let mut list = MoveList::new();
        generate_moves::<LegalAll>(&self.inner, &mut list);
        list.iter().any(|m| m.raw() == b.raw())
    }

    /// Parses a USI move and checks that it is legal here.
    ///
    /// # Errors
    /// [`RulesError::MoveSyntax`] or [`RulesError::IllegalMove`].
    pub fn parse_move(&self, usi: &str) -> Result<Move, RulesError> {
        let mv = Move::from_usi(usi)?;
        if self.is_legal(mv) {
            Ok(mv)
        } else {
            Err(RulesError::IllegalMove {
                mv: crate::excerpt(usi),
                sfen: self.to_sfen(),
            })
        }
    }

    /// Plays a legal move. The move must come from [`Position::legal_moves`] or
    /// [`Position::parse_move`] of this position.
    pub fn do_move(&mut self, mv: Move) {
        debug_assert!(self.is_legal(mv), "do_move({mv}) on {}", self.to_sfen());
        let next_key = self.key_after(mv);
        let next_flipped = self.flipped_key_after(mv);
        let mv32 = self.inner.move32_from_move(mv.backend());
        self.inner.apply_move32(mv32);
        self.history.push((mv32, self.key, self.flipped));
        self.key = next_key;
        self.flipped = next_flipped;
    }

    /// Takes back the last move played with [`Position::do_move`].
    ///
    /// # Errors
    /// [`RulesError::NothingToUndo`] at the construction point.
    pub fn undo_move(&mut self) -> Result<Move, RulesError> {
        let (mv32, key, flipped) = self.history.pop().ok_or(RulesError::NothingToUndo)?;
        self.inner
            .undo_move32(mv32)
            .map_err(|_| RulesError::NothingToUndo)?;
        self.key = key;
        self.flipped = flipped;
        Ok(Move::from_backend(mv32.to_move()))
    }

    /// The key of the position after `mv`, computed without playing it.
    /// `mv` must be legal here.
    #[must_use]
    pub fn key_after(&self, mv: Move) -> Key {
        self.key_after_in::<false>(self.key, mv)
    }

    /// The key after `mv` from `base`, the key of this position (`FLIPPED`
    /// false) or of its colour-flipped twin (true: colours and squares turned).
    #[inline]
    fn key_after_in<const FLIPPED: bool>(&self, base: Key, mv: Move) -> Key {
        let m = mv.backend();
        let us = self.inner.turn();
        let us_i = oriented_color::<FLIPPED>(us.to_index());
        let to = oriented_square::<FLIPPED>(m.to_sq().to_index());
        let mut k = base.0 ^ zobrist::side();
        if let Some(pt) = m.dropped_piece() {
            let n = hand_count(self.inner.hand(us), pt);
            k ^= zobrist::hand(us_i, pt_index(pt), n)
                ^ zobrist::hand(us_i, pt_index(pt), n.saturating_sub(1));
            k ^= zobrist::board(us_i, pt_index(pt), to);
            return Key(k);
        }
        let from = m.from_sq();
        let moved = self.inner.piece_on(from);
        let moved_after = if m.is_promotion() {
            moved.promote()
        } else {
            moved
        };
        let from_i = oriented_square::<FLIPPED>(from.to_index());
        k ^= zobrist::board(us_i, pt_index(moved.piece_type()), from_i);
        k ^= zobrist::board(us_i, pt_index(moved_after.piece_type()), to);
        let captured = self.inner.piece_on(m.to_sq());
        if !captured.is_empty() {
            let them_i = oriented_color::<FLIPPED>(captured.color().to_index());
            k ^= zobrist::board(them_i, pt_index(captured.piece_type()), to);
            let base = captured.base_piece_type();
            let n = hand_count(self.inner.hand(us), base);
            k ^=
                zobrist::hand(us_i, pt_index(base), n) ^ zobrist::hand(us_i, pt_index(base), n + 1);
        }
        Key(k)
    }

    /// The colour-flipped twin: the board turned 180 degrees, every piece, both
    /// hands and the side to move changing colour (file f, rank r become 10-f,
    /// 10-r). The twin is the same game situation for the side to move, so it has
    /// the same values; YaneuraOu's book probe and `makebook peta_shock` treat the
    /// two as one position. The ply is kept; the history is not.
    ///
    /// ```
    /// use stera_rules::Position;
    /// let mut pos = Position::startpos();
    /// pos.play_usi("7g7f").unwrap();
    /// let twin = pos.flipped();
    /// assert_eq!(
    ///     twin.to_sfen(),
    ///     "lnsgkgsnl/1r5b1/pppppp1pp/6p2/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b - 2"
    /// );
    /// assert_eq!(twin.key(), pos.flipped_key());
    /// assert_eq!(twin.flipped().to_sfen(), pos.to_sfen());
    /// ```
    #[must_use]
    pub fn flipped(&self) -> Self {
        // The backend turns the board and rebuilds its state (no text round trip:
        // the selector flips a position at every twin it enters).
        Self::from_backend(self.inner.to_flipped())
    }

    /// The key of the colour-flipped twin ([`Position::flipped`]) without building
    /// it (kept up to date by every move).
    #[must_use]
    pub fn flipped_key(&self) -> Key {
        self.flipped
    }

    /// Recomputes [`Position::flipped_key`] from the board and hands (its oracle).
    #[must_use]
    pub fn compute_flipped_key(&self) -> Key {
        self.compute_key_in::<true>()
    }

    /// The key of the flipped twin of the position after `mv`, without playing
    /// the move: what [`Position::key_after`] is for the position itself. `mv`
    /// must be legal here.
    #[must_use]
    pub fn flipped_key_after(&self, mv: Move) -> Key {
        self.key_after_in::<true>(self.flipped, mv)
    }

    /// Recomputes the key from the board and hands (the oracle for [`Position::key`]).
    #[must_use]
    pub fn compute_key(&self) -> Key {
        self.compute_key_in::<false>()
    }

    /// The key of this position (`FLIPPED` false) or of its colour-flipped twin
    /// from the board and hands.
    fn compute_key_in<const FLIPPED: bool>(&self) -> Key {
        let mut k = 0u128;
        for sq in Square::iter() {
            let p = self.inner.piece_on(sq);
            if !p.is_empty() {
                k ^= zobrist::board(
                    oriented_color::<FLIPPED>(p.color().to_index()),
                    pt_index(p.piece_type()),
                    oriented_square::<FLIPPED>(sq.to_index()),
                );
            }
        }
        for color in [BColor::BLACK, BColor::WHITE] {
            let hand = self.inner.hand(color);
            for hp in HandPiece::iter() {
                let n = Hand::count_of(hand, hp) as usize;
                if n > 0 {
                    k ^= zobrist::hand(
                        oriented_color::<FLIPPED>(color.to_index()),
                        pt_index(hp.to_piece_type()),
                        n,
                    );
                }
            }
        }
        if oriented_color::<FLIPPED>(self.inner.turn().to_index()) == BColor::WHITE.to_index() {
            k ^= zobrist::side();
        }
        Key(k)
    }

    /// True if the side to move is in check.
    #[must_use]
    pub fn in_check(&self) -> bool {
        self.inner.is_in_check()
    }

    /// True if the side to move has no legal move (in shogi that loses, checked or not).
    #[must_use]
    pub fn has_no_legal_move(&self) -> bool {
        self.inner.is_mated()
    }

    /// True if the side to move is in check and has no legal move.
    #[must_use]
    pub fn is_checkmate(&self) -> bool {
        self.in_check() && self.has_no_legal_move()
    }

    /// True if `mv` gives check.
    #[must_use]
    pub fn gives_check(&self, mv: Move) -> bool {
        self.inner.gives_check_move(mv.backend())
    }

    /// The backend position (for the engine's hot paths; other crates use this API).
    #[must_use]
    pub fn backend(&self) -> &Backend {
        &self.inner
    }

    pub(crate) fn backend_mut(&mut self) -> &mut Backend {
        &mut self.inner
    }
}

#[inline]
fn pt_index(pt: PieceType) -> usize {
    usize::try_from(pt.raw()).unwrap_or(0)
}

/// A colour index as seen on the colour-flipped board when `FLIPPED`.
#[inline]
const fn oriented_color<const FLIPPED: bool>(color: usize) -> usize {
    if FLIPPED { 1 - color } else { color }
}

/// A square index (0..=80) on the board turned 180 degrees when `FLIPPED`.
#[inline]
const fn oriented_square<const FLIPPED: bool>(square: usize) -> usize {
    if FLIPPED { 80 - square } else { square }
}

#[inline]
fn hand_count(hand: Hand, pt: PieceType) -> usize {
    HandPiece::from_piece_type(pt).map_or(0, |hp| Hand::count_of(hand, hp) as usize)
}

/// A u32 in decimal without allocating.
struct Decimal {
    digits: [u8; 10],
    start: usize,
}

impl Decimal {
    fn as_str(&mut self) -> &str {
        std::str::from_utf8(&self.digits[self.start..]).unwrap_or_default()
    }
}

fn itoa_u32(mut v: u32) -> Decimal {
    let mut d = Decimal {
        digits: [0; 10],
        start: 10,
    };
    loop {
        d.start -= 1;
        d.digits[d.start] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            return d;
        }
    }
}
