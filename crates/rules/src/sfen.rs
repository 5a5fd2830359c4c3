//! SFEN text canonicalisation without building a [`crate::Position`].
//!
//! Building a position costs tens of microseconds (the backend allocates its state
//! history); books with millions of entries only need the canonical text. The
//! parser here is also the first step of [`crate::Position::from_sfen`], so both
//! accept exactly the same texts: well-formed SFENs of legal positions (see
//! [`crate::legality`]).

use crate::RulesError;
use crate::legality::{self, PROMOTED, Placement};

/// Hand pieces in canonical order (R B G S N L P) with their piece codes.
const HAND_ORDER: [(char, u8); 7] = [
    ('R', legality::ROOK),
    ('B', legality::BISHOP),
    ('G', legality::GOLD),
    ('S', legality::SILVER),
    ('N', legality::KNIGHT),
    ('L', legality::LANCE),
    ('P', legality::PAWN),
];

/// Returns the canonical form of an SFEN (what [`crate::Position::to_sfen`] prints):
/// runs of empty squares merged, hands in the order R B G S N L P (black, then white),
/// ply 1 when missing. Checks what [`crate::Position::from_sfen`] checks: the shape
/// of every field and the rules of a legal position.
///
/// ```
/// assert_eq!(
///     stera_rules::canonical_sfen("sfen 4k4/9/9/9/9/9/9/9/4K4 b pP2G").unwrap(),
///     "4k4/9/9/9/9/9/9/9/4K4 b 2GPp 1"
/// );
/// assert!(stera_rules::canonical_sfen("4k4/4R4/9/9/9/9/9/9/4K4 b - 1").is_err());
/// ```
///
/// # Errors
/// [`RulesError::Sfen`] saying what is malformed, [`RulesError::IllegalPosition`]
/// naming the rule a well-formed position breaks.
pub fn canonical_sfen(text: &str) -> Result<String, RulesError> {
    parse(text).map(|(canonical, _)| canonical)
}

/// The canonical text and the placement of a legal SFEN.
pub(crate) fn parse(text: &str) -> Result<(String, Placement), RulesError> {
    let err = |reason: String| RulesError::Sfen {
        sfen: crate::excerpt(text),
        reason,
    };
    let fields = split_fields(text).map_err(err)?;
    let mut placement = Placement::empty();
    placement.ply = fields.ply;
    placement.side = u8::from(fields.side == "w");
    let mut out = String::with_capacity(fields.board.len() + 24);
    parse_board(fields.board, &mut out, &mut placement).map_err(err)?;
    parse_hand(fields.hand, &mut placement).map_err(err)?;
    legality::check(&placement).map_err(|rule| RulesError::IllegalPosition {
        sfen: crate::excerpt(text.trim()),
        rule,
    })?;
    out.push(' ');
    out.push_str(fields.side);
    out.push(' ');
    push_hand(&mut out, &placement.hands);
    out.push(' ');
    push_count(&mut out, fields.ply);
    Ok((out, placement))
}

/// The four fields of an SFEN, checked for shape (the ply defaults to 1).
struct Fields<'a> {
    board: &'a str,
    side: &'a str,
    hand: &'a str,
    ply: u64,
}

fn split_fields(text: &str) -> Result<Fields<'_>, String> {
    let trimmed = text.trim();
    let body = trimmed.strip_prefix("sfen ").unwrap_or(trimmed);
    let mut fields = body.split_whitespace();
    let (Some(board), Some(side), Some(hand)) = (fields.next(), fields.next(), fields.next())
    else {
        return Err("expected 4 fields (board, side, hand, ply)".to_owned());
    };
    let ply = match fields.next() {
        Some(p) => match p.parse::<u64>() {
            Ok(n) if n >= 1 => n,
            _ => {
                return Err(format!(
                    "ply `{}` is not a positive integer",
                    crate::excerpt(p)
                ));
            }
        },
        None => 1,
    };
    if let Some(extra) = fields.next() {
        return Err(format!(
            "unexpected text after the ply: `{}`",
            crate::excerpt(extra)
        ));
    }
    if side != "b" && side != "w" {
        return Err(format!(
            "side to move `{}` is neither `b` nor `w`",
            crate::excerpt(side)
        ));
    }
    Ok(Fields {
        board,
        side,
        hand,
        ply,
    })
}

/// Checks the board field's shape, writes its canonical text to `out` and its
/// pieces to `placement`.
fn parse_board(board: &str, out: &mut String, placement: &mut Placement) -> Result<(), String> {
    let ranks: Vec<&str> = board.split('/').collect();
    if ranks.len() != 9 {
        return Err(format!("board has {} ranks, expected 9", ranks.len()));
    }
    for (rank, text) in ranks.iter().enumerate() {
        if rank > 0 {
            out.push('/');
        }
        parse_rank(text, rank, out, placement)?;
    }
    Ok(())
}

/// One rank of the board field (files 9 to 1).
fn parse_rank(
    text: &str,
    rank: usize,
    out: &mut String,
    placement: &mut Placement,
) -> Result<(), String> {
    let invalid = |c: char| format!("rank {} has an invalid character `{c}`", rank + 1);
    let mut files = 0usize;
    let mut empty = 0u64;
    let mut promoted = false;
    for c in text.chars() {
        if files > 9 {
            break;
        }
        match c {
            '1'..='9' if !promoted => {
                let n = c.to_digit(10).map_or(0, |d| d as usize);
                files += n;
                empty += n as u64;
            }
            '+' if !promoted => promoted = true,
            _ => {
                let Some(code) = piece_code(c) else {
                    return Err(invalid(c));
                };
                if promoted && matches!(code, legality::GOLD | legality::KING) {
                    return Err(invalid(c));
                }
                if empty > 0 {
                    push_count(out, empty);
                    empty = 0;
                }
                if promoted {
                    out.push('+');
                }
                out.push(c);
                if files < 9 {
                    // Files run 9 to 1 along the rank; square index = file * 9 + rank.
                    let code = if promoted { code + PROMOTED } else { code };
                    let colour = u8::from(c.is_ascii_lowercase());
                    placement.cells[(8 - files) * 9 + rank] = colour << 4 | code;
                }
                files += 1;
                promoted = false;
            }
        }
    }
    if promoted {
        return Err(format!("rank {} ends with `+`", rank + 1));
    }
    if files != 9 {
        return Err(format!(
            "rank {} covers {} files, expected 9",
            rank + 1,
            if files > 9 {
                "more than 9".to_owned()
            } else {
                files.to_string()
            }
        ));
    }
    if empty > 0 {
        push_count(out, empty);
    }
    Ok(())
}

/// The piece code of a board letter (either case).
fn piece_code(c: char) -> Option<u8> {
    Some(match c.to_ascii_uppercase() {
        'P' => legality::PAWN,
        'L' => legality::LANCE,
        'N' => legality::KNIGHT,
        'S' => legality::SILVER,
        'B' => legality::BISHOP,
        'R' => legality::ROOK,
        'G' => legality::GOLD,
        'K' => legality::KING,
        _ => return None,
    })
}

/// Reads the hand field (`-` or counts and letters in any order) into `placement`.
fn parse_hand(hand: &str, placement: &mut Placement) -> Result<(), String> {
    if hand == "-" {
        return Ok(());
    }
    let mut digits = 0u32;
    let mut digit_chars = 0usize;
    for c in hand.chars() {
        if let Some(d) = c.to_digit(10) {
            if digit_chars >= 2 {
                return Err(format!(
                    "hand count `{}` is out of range",
                    crate::excerpt(hand)
                ));
            }
            digits = digits * 10 + d;
            digit_chars += 1;
            continue;
        }
        let upper = c.to_ascii_uppercase();
        let Some(&(_, code)) = HAND_ORDER.iter().find(|(p, _)| *p == upper) else {
            return Err(format!("hand has an invalid character `{c}`"));
        };
        if digit_chars > 0 && digits == 0 {
            return Err(format!("hand count `{digits}{c}` is out of range"));
        }
        let n = if digit_chars == 0 { 1 } else { digits };
        let slot = &mut placement.hands[usize::from(c.is_ascii_lowercase())][usize::from(code - 1)];
        *slot = slot.saturating_add(n);
        digits = 0;
        digit_chars = 0;
    }
    if digit_chars > 0 {
        return Err(format!("hand ends with a count `{digits}` and no piece"));
    }
    Ok(())
}

/// Appends the canonical hand field (`-` when both hands are empty).
fn push_hand(out: &mut String, hands: &[[u32; 7]; 2]) {
    let start = out.len();
    for (colour, counts) in hands.iter().enumerate() {
        for (letter, code) in HAND_ORDER {
            let n = counts[usize::from(code - 1)];
            if n == 0 {
                continue;
            }
            if n > 1 {
                push_count(out, u64::from(n));
            }
            out.push(if colour == 0 {
                letter
            } else {
                letter.to_ascii_lowercase()
            });
        }
    }
    if out.len() == start {
        out.push('-');
    }
}

fn push_count(out: &mut String, n: u64) {
    use std::fmt::Write;
    let _ = write!(out, "{n}");
}
