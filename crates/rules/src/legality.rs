//! The one definition of a legal position.
//!
//! Every way into the rules core ([`crate::Position::from_sfen`],
//! [`crate::Position::from_position_command`], [`crate::canonical_sfen`], and so every
//! kifu reader, book reader, root and job built on them) checks a position with
//! [`check`] before anything else looks at it. A position is legal when:
//!
//! 1. its ply is within `1..=`[`MAX_PLY`];
//! 2. each side has exactly one king;
//! 3. no kind of piece exceeds the set (18 pawns, 4 lances, knights, silvers and
//!    golds, 2 bishops and rooks), board and hands together;
//! 4. no pawn or lance stands on the last rank and no knight on the last two
//!    (pieces with no move);
//! 5. no side has two unpromoted pawns on one file (nifu);
//! 6. the side to move cannot capture the opponent's king (the side not to move is
//!    not in check).
//!
//! Mated and stalemated positions are legal. The backend's counters are 16-bit, so
//! [`MAX_PLY`] also keeps move lists (`position ... moves ...`, game records) far
//! from their overflow.

use std::fmt;

use crate::Color;

/// The largest ply a position may have (the SFEN ply field, and the ply reached by
/// the moves of a `position` command or a game record). Real games end within a few
/// hundred plies and the longest composed mating problem is about 1,500; the
/// backend's ply and check counters are 16-bit (they overflow at 65,535), so
/// 10,000 leaves room for searches from any legal position.
pub const MAX_PLY: u32 = 10_000;

/// The most characters of outside text (an SFEN, a move, a line) quoted in an
/// error message; longer text is cut there and marked with `…`.
pub const MAX_QUOTE_CHARS: usize = 200;

/// `text` for an error message: at most [`MAX_QUOTE_CHARS`] characters, then `…`.
///
/// ```
/// let long = "x".repeat(10_000);
/// let quoted = stera_rules::excerpt(&long);
/// assert_eq!(quoted.chars().count(), stera_rules::MAX_QUOTE_CHARS + 1);
/// assert!(quoted.ends_with('…'));
/// assert_eq!(stera_rules::excerpt("7g7f"), "7g7f");
/// ```
#[must_use]
pub fn excerpt(text: &str) -> String {
    match text.char_indices().nth(MAX_QUOTE_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

/// The most characters of a whole message (an error, a log record, an RPC
/// status) that [`excerpt_message`] keeps: its head and its tail, the middle cut.
pub const MAX_MESSAGE_CHARS: usize = 2000;

/// Whether `c` ends a quoted run for [`excerpt_runs`]: white space and the
/// quotes messages put around what they quote.
fn ends_run(c: char) -> bool {
    c.is_whitespace()
        || matches!(
            c,
            '`' | '\'' | '"' | ',' | ';' | '(' | ')' | '[' | ']' | '='
        )
}

/// `text` with every run of characters between white space or quotes that is
/// longer than [`MAX_QUOTE_CHARS`] cut as [`excerpt`] cuts it: the argument,
/// path or line a message quotes, whatever its length, takes a few hundred
/// bytes, and the words around it stay. A JSON string escape (`\"`, `\u00e9`) is
/// never cut in two, so a JSON log record stays JSON. Borrowed when nothing is
/// that long.
///
/// ```
/// let path = format!("/data/{}/book.db", "d".repeat(100_000));
/// let message = format!("cannot write `{path}`: No space left on device");
/// let cut = stera_rules::excerpt_runs(&message);
/// assert!(cut.len() < 300, "{}", cut.len());
/// assert!(cut.starts_with("cannot write `/data/ddd"));
/// assert!(cut.ends_with("…`: No space left on device"));
/// assert_eq!(stera_rules::excerpt_runs("short words"), "short words");
/// ```
#[must_use]
pub fn excerpt_runs(text: &str) -> std::borrow::Cow<'_, str> {
    let mut run = 0usize;
    let long = text.chars().any(|c| {
        run = if ends_run(c) { 0 } else { run + 1 };
        run > MAX_QUOTE_CHARS
    });
    if !long {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len().min(4 * MAX_MESSAGE_CHARS));
    let mut chars = text.chars();
    let mut run = 0usize;
    while let Some(c) = chars.next() {
        if ends_run(c) {
            run = 0;
            out.push(c);
        } else if run < MAX_QUOTE_CHARS {
            run += 1;
            out.push(c);
            // An escape is kept whole: its character never ends the run.
            if c == '\\' {
                match chars.next() {
                    Some('u') => {
                        out.push('u');
                        out.extend(chars.by_ref().take(4));
                    }
                    Some(e) => out.push(e),
                    None => {}
                }
            }
        } else {
            // The rest of the run is dropped, escapes and all.
            out.push('…');
            let mut escaped = c == '\\';
            for next in chars.by_ref() {
                if ends_run(next) && !escaped {
                    out.push(next);
                    break;
                }
                escaped = next == '\\' && !escaped;
            }
            run = 0;
        }
    }
    std::borrow::Cow::Owned(out)
}

/// A whole message (an error to print, an RPC status) bounded: every long run
/// cut by [`excerpt_runs`], then, if it is still over [`MAX_MESSAGE_CHARS`],
/// its head and tail kept around a `…`.
///
/// ```
/// let many = "word ".repeat(10_000);
/// let cut = stera_rules::excerpt_message(&format!("error: {many}: the end"));
/// assert!(cut.chars().count() <= stera_rules::MAX_MESSAGE_CHARS + 1);
/// assert!(cut.starts_with("error: word") && cut.ends_with(": the end"));
/// ```
#[must_use]
pub fn excerpt_message(text: &str) -> String {
    let runs = excerpt_runs(text);
    let count = runs.chars().count();
    if count <= MAX_MESSAGE_CHARS {
        return runs.into_owned();
    }
    let half = MAX_MESSAGE_CHARS / 2;
    let head: String = runs.chars().take(half).collect();
    let tail: String = runs.chars().skip(count - half).collect();
    format!("{head}…{tail}")
}

/// Which rule of a legal position (see the module documentation) a position breaks.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PositionRule {
    /// The ply is above [`MAX_PLY`].
    Ply { ply: u64 },
    /// A side does not have exactly one king.
    KingCount { black: u32, white: u32 },
    /// More pieces of one kind than the set holds (board and hands together).
    PieceCount {
        piece: &'static str,
        count: u32,
        limit: u32,
    },
    /// A pawn, lance or knight on a rank where it has no move.
    DeadPiece { piece: char, square: String },
    /// Two unpromoted pawns of one side on one file.
    Nifu { color: Color, file: u8 },
    /// The side to move can capture the opponent's king.
    KingCapturable,
}

impl fmt::Display for PositionRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Ply { ply } => write!(f, "ply {ply} is above the limit of {MAX_PLY}"),
            Self::KingCount { black, white } => write!(
                f,
                "each side needs exactly one king (black {black}, white {white})"
            ),
            Self::PieceCount {
                piece,
                count,
                limit,
            } => write!(
                f,
                "{count} {piece} on board and in hand (at most {limit})"
            ),
            Self::DeadPiece { piece, square } => {
                write!(f, "`{piece}` on {square} has no move (dead piece)")
            }
            Self::Nifu { color, file } => write!(
                f,
                "{} has two unpromoted pawns on file {file} (nifu)",
                match color {
                    Color::Black => "black",
                    Color::White => "white",
                }
            ),
            Self::KingCapturable => f.write_str(
                "the side to move can capture the opponent's king (the side not to move is in check)",
            ),
        }
    }
}

/// Piece codes: 1 pawn, 2 lance, 3 knight, 4 silver, 5 bishop, 6 rook, 7 gold,
/// 8 king, 9..=14 the promoted pawn, lance, knight, silver, bishop (horse) and rook
/// (dragon); the backend's piece-type numbering.
pub(crate) const PAWN: u8 = 1;
pub(crate) const LANCE: u8 = 2;
pub(crate) const KNIGHT: u8 = 3;
pub(crate) const SILVER: u8 = 4;
pub(crate) const BISHOP: u8 = 5;
pub(crate) const ROOK: u8 = 6;
pub(crate) const GOLD: u8 = 7;
pub(crate) const KING: u8 = 8;
pub(crate) const PROMOTED: u8 = 8;
const HORSE: u8 = BISHOP + PROMOTED;
const DRAGON: u8 = ROOK + PROMOTED;

/// A position as the legality check sees it.
pub(crate) struct Placement {
    /// Index `file * 9 + rank` (file 1 = 0, rank a = 0), as the backend's squares.
    /// 0 is empty, otherwise `color << 4 | code` (black 0, white 1).
    pub(crate) cells: [u8; 81],
    /// Hand counts by code - 1 (pawn .. gold), black then white.
    pub(crate) hands: [[u32; 7]; 2],
    /// 0 black, 1 white.
    pub(crate) side: u8,
    pub(crate) ply: u64,
}

impl Placement {
    pub(crate) fn empty() -> Self {
        Self {
            cells: [0; 81],
            hands: [[0; 7]; 2],
            side: 0,
            ply: 1,
        }
    }
}

/// Checks the rules of the module documentation, in that order.
pub(crate) fn check(p: &Placement) -> Result<(), PositionRule> {
    if p.ply > u64::from(MAX_PLY) {
        return Err(PositionRule::Ply { ply: p.ply });
    }
    check_counts(p)?;
    check_dead_pieces_and_nifu(p)?;
    if king_capturable(p) {
        return Err(PositionRule::KingCapturable);
    }
    Ok(())
}

fn check_counts(p: &Placement) -> Result<(), PositionRule> {
    // By unpromoted code 1..=7; kings per colour.
    let mut totals = [0u32; 8];
    let mut kings = [0u32; 2];
    for &cell in &p.cells {
        if cell == 0 {
            continue;
        }
        let code = cell & 15;
        if code == KING {
            kings[usize::from(cell >> 4)] += 1;
        } else {
            totals[usize::from(if code > PROMOTED {
                code - PROMOTED
            } else {
                code
            })] += 1;
        }
    }
    for hand in &p.hands {
        for (i, n) in hand.iter().enumerate() {
            totals[i + 1] = totals[i + 1].saturating_add(*n);
        }
    }
    // In the order of the hand field (R B G S N L P).
    const LIMITS: [(u8, u32, &str); 7] = [
        (ROOK, 2, "rooks"),
        (BISHOP, 2, "bishops"),
        (GOLD, 4, "golds"),
        (SILVER, 4, "silvers"),
        (KNIGHT, 4, "knights"),
        (LANCE, 4, "lances"),
        (PAWN, 18, "pawns"),
    ];
    for (code, limit, piece) in LIMITS {
        let count = totals[usize::from(code)];
        if count > limit {
            return Err(PositionRule::PieceCount {
                piece,
                count,
                limit,
            });
        }
    }
    if kings != [1, 1] {
        return Err(PositionRule::KingCount {
            black: kings[0],
            white: kings[1],
        });
    }
    Ok(())
}

fn check_dead_pieces_and_nifu(p: &Placement) -> Result<(), PositionRule> {
    for file in 0..9u8 {
        let mut pawns = [0u32; 2];
        for rank in 0..9u8 {
            let cell = p.cells[usize::from(file * 9 + rank)];
            let code = cell & 15;
            if cell == 0 || !matches!(code, PAWN | LANCE | KNIGHT) {
                continue;
            }
            let white = cell >> 4 == 1;
            // Ranks left ahead of the piece (0 = it stands on the last rank).
            let ahead = if white { 8 - rank } else { rank };
            if ahead == 0 || (code == KNIGHT && ahead == 1) {
                let letter = [b'?', b'P', b'L', b'N'][usize::from(code)];
                return Err(PositionRule::DeadPiece {
                    piece: char::from(if white {
                        letter.to_ascii_lowercase()
                    } else {
                        letter
                    }),
                    square: square_name(file, rank),
                });
            }
            if code == PAWN {
                pawns[usize::from(white)] += 1;
            }
        }
        for (color, n) in [(Color::Black, pawns[0]), (Color::White, pawns[1])] {
            if n > 1 {
                return Err(PositionRule::Nifu {
                    color,
                    file: file + 1,
                });
            }
        }
    }
    Ok(())
}

/// `5e` style.
fn square_name(file: u8, rank: u8) -> String {
    format!("{}{}", file + 1, char::from(b'a' + rank))
}

/// True if a piece of the side to move attacks the other side's king.
fn king_capturable(p: &Placement) -> bool {
    let us = p.side;
    let them_king = (1 - us) << 4 | KING;
    let Some(target) = p.cells.iter().position(|&c| c == them_king) else {
        return false;
    };
    p.cells.iter().enumerate().any(|(from, &cell)| {
        cell != 0 && cell >> 4 == us && attacks(p, cell & 15, us == 0, from, target)
    })
}

/// True if the piece `code` of the given colour on `from` attacks `to` (whatever
/// stands there).
fn attacks(p: &Placement, code: u8, black: bool, from: usize, to: usize) -> bool {
    let (ff, fr) = (coord(from / 9), coord(from % 9));
    let (tf, tr) = (coord(to / 9), coord(to % 9));
    let df = tf - ff;
    // Ranks towards the opponent (black moves towards rank a).
    let fwd = if black { fr - tr } else { tr - fr };
    let step = df.abs().max(fwd.abs()) == 1;
    let gold = (df.abs() <= 1 && fwd == 1) || (df.abs() == 1 && fwd == 0) || (df == 0 && fwd == -1);
    let diagonal = df != 0 && df.abs() == fwd.abs();
    let straight = (df == 0) != (fwd == 0);
    match code {
        PAWN => df == 0 && fwd == 1,
        LANCE => df == 0 && fwd >= 1 && clear(p, from, to),
        KNIGHT => df.abs() == 1 && fwd == 2,
        SILVER => (df.abs() <= 1 && fwd == 1) || (df.abs() == 1 && fwd == -1),
        GOLD | 9..=12 => gold,
        KING => step,
        BISHOP => diagonal && clear(p, from, to),
        ROOK => straight && clear(p, from, to),
        HORSE => step || (diagonal && clear(p, from, to)),
        DRAGON => step || (straight && clear(p, from, to)),
        _ => false,
    }
}

fn coord(i: usize) -> i32 {
    i32::try_from(i).unwrap_or(0)
}

/// True if every square strictly between `from` and `to` (on one line) is empty.
fn clear(p: &Placement, from: usize, to: usize) -> bool {
    let (ff, fr) = (coord(from / 9), coord(from % 9));
    let (tf, tr) = (coord(to / 9), coord(to % 9));
    let (sf, sr) = ((tf - ff).signum(), (tr - fr).signum());
    let (mut f, mut r) = (ff + sf, fr + sr);
    while (f, r) != (tf, tr) {
        let Ok(index) = usize::try_from(f * 9 + r) else {
            return false;
        };
        if p.cells.get(index).is_none_or(|&c| c != 0) {
            return false;
        }
        f += sf;
        r += sr;
    }
    true
}

#[cfg(test)]
mod excerpt_tests {
    use super::*;

    #[test]
    fn a_json_record_with_a_long_string_stays_json() {
        let long = format!("a\"b\\c\u{e9}{}", "x".repeat(5000));
        let record = serde_json_like(&long);
        let cut = excerpt_runs(&record);
        assert!(cut.len() < 600, "{}", cut.len());
        // Every escape is whole: each backslash is followed by an escape letter.
        let bytes = cut.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i] == b'\\' {
                assert!(
                    matches!(bytes.get(i + 1), Some(b'"' | b'\\' | b'u' | b'n')),
                    "{cut}"
                );
                i += 2;
            } else {
                i += 1;
            }
        }
        assert!(cut.ends_with("…\"},\"level\":\"WARN\"}"), "{cut}");
    }

    /// A JSON string of `text` in a record, escaped as serde_json does.
    fn serde_json_like(text: &str) -> String {
        let mut escaped = String::new();
        for c in text.chars() {
            match c {
                '"' => escaped.push_str("\\\""),
                '\\' => escaped.push_str("\\\\"),
                c => escaped.push(c),
            }
        }
        format!("{{\"fields\":{{\"path\":\"{escaped}\"}},\"level\":\"WARN\"}}")
    }

    #[test]
    fn runs_are_cut_and_words_around_them_kept() {
        let text = format!("a `{}` b", "y".repeat(MAX_QUOTE_CHARS + 1));
        let cut = excerpt_runs(&text);
        assert_eq!(cut, format!("a `{}…` b", "y".repeat(MAX_QUOTE_CHARS)));
        let exact = format!("a `{}` b", "y".repeat(MAX_QUOTE_CHARS));
        assert!(matches!(
            excerpt_runs(&exact),
            std::borrow::Cow::Borrowed(_)
        ));
    }
}
