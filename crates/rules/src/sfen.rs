//! SFEN text canonicalisation without building a [`crate::Position`].
//!
//! Building a position costs tens of microseconds (the backend allocates its state
//! history); books with millions of entries only need the canonical text.

use crate::RulesError;

/// Hand pieces in canonical order with their physical maxima.
const HAND_ORDER: [(char, u32); 7] = [
    ('R', 2),
    ('B', 2),
    ('G', 4),
    ('S', 4),
    ('N', 4),
    ('L', 4),
    ('P', 18),
];

/// Returns the canonical form of an SFEN (what [`crate::Position::to_sfen`] prints):
/// runs of empty squares merged, hands in the order R B G S N L P (black, then white),
/// ply 1 when missing. Checks what [`crate::Position::from_sfen`] checks: the board
/// shape, characters, piece counts and one king a side.
///
/// ```
/// assert_eq!(
///     stera_rules::canonical_sfen("sfen 4k4/9/9/9/9/9/9/9/4K4 b pP2G").unwrap(),
///     "4k4/9/9/9/9/9/9/9/4K4 b 2GPp 1"
/// );
/// ```
///
/// # Errors
/// [`RulesError::Sfen`] saying what is wrong.
pub fn canonical_sfen(text: &str) -> Result<String, RulesError> {
    let err = |reason: String| RulesError::Sfen {
        sfen: text.to_owned(),
        reason,
    };
    let trimmed = text.trim();
    let body = trimmed.strip_prefix("sfen ").unwrap_or(trimmed);
    let mut fields = body.split_whitespace();
    let (Some(board), Some(side), Some(hand)) = (fields.next(), fields.next(), fields.next())
    else {
        return Err(err("expected 4 fields (board, side, hand, ply)".to_owned()));
    };
    let ply = match fields.next() {
        Some(p) => match p.parse::<u32>() {
            Ok(n) if n >= 1 => n,
            _ => return Err(err(format!("ply `{p}` is not a positive integer"))),
        },
        None => 1,
    };
    if let Some(extra) = fields.next() {
        return Err(err(format!("unexpected text after the ply: `{extra}`")));
    }
    if side != "b" && side != "w" {
        return Err(err(format!("side to move `{side}` is neither `b` nor `w`")));
    }
    // Piece totals by base letter (uppercase), kings per colour.
    let mut totals = [0u32; 26];
    let mut kings = [0u32; 2];
    let mut out = String::with_capacity(body.len() + 4);
    let ranks: Vec<&str> = board.split('/').collect();
    if ranks.len() != 9 {
        return Err(err(format!("board has {} ranks, expected 9", ranks.len())));
    }
    for (i, rank) in ranks.iter().enumerate() {
        if i > 0 {
            out.push('/');
        }
        let mut files = 0u32;
        let mut empty = 0u32;
        let mut promoted = false;
        for c in rank.chars() {
            match c {
                '1'..='9' if !promoted => {
                    let n = c.to_digit(10).unwrap_or(0);
                    files += n;
                    empty += n;
                }
                '+' if !promoted => promoted = true,
                'p' | 'l' | 'n' | 's' | 'b' | 'r' | 'P' | 'L' | 'N' | 'S' | 'B' | 'R' | 'g'
                | 'k' | 'G' | 'K' => {
                    if promoted && matches!(c, 'g' | 'k' | 'G' | 'K') {
                        return Err(err(format!(
                            "rank {} has an invalid character `{c}`",
                            i + 1
                        )));
                    }
                    if empty > 0 {
                        push_count(&mut out, empty);
                        empty = 0;
                    }
                    if promoted {
                        out.push('+');
                    }
                    out.push(c);
                    files += 1;
                    promoted = false;
                    let upper = c.to_ascii_uppercase();
                    if upper == 'K' {
                        kings[usize::from(c.is_ascii_lowercase())] += 1;
                    } else {
                        totals[letter_index(upper)] += 1;
                    }
                }
                _ => {
                    return Err(err(format!(
                        "rank {} has an invalid character `{c}`",
                        i + 1
                    )));
                }
            }
        }
        if promoted {
            return Err(err(format!("rank {} ends with `+`", i + 1)));
        }
        if files != 9 {
            return Err(err(format!(
                "rank {} covers {files} files, expected 9",
                i + 1
            )));
        }
        if empty > 0 {
            push_count(&mut out, empty);
        }
    }
    // Hand counts per colour in canonical order.
    let mut hand_counts = [[0u32; 7]; 2];
    if hand != "-" {
        let mut digits = 0u32;
        let mut digit_chars = 0usize;
        for c in hand.chars() {
            if let Some(d) = c.to_digit(10) {
                digits = digits * 10 + d;
                digit_chars += 1;
                continue;
            }
            let upper = c.to_ascii_uppercase();
            let Some(slot) = HAND_ORDER.iter().position(|(p, _)| *p == upper) else {
                return Err(err(format!("hand has an invalid character `{c}`")));
            };
            if digit_chars > 2 || (digit_chars > 0 && digits == 0) {
                return Err(err(format!("hand count `{digits}{c}` is out of range")));
            }
            let n = if digit_chars == 0 { 1 } else { digits };
            hand_counts[usize::from(c.is_ascii_lowercase())][slot] += n;
            totals[letter_index(upper)] += n;
            digits = 0;
            digit_chars = 0;
        }
        if digit_chars > 0 {
            return Err(err(format!(
                "hand ends with a count `{digits}` and no piece"
            )));
        }
    }
    for (letter, limit) in HAND_ORDER {
        let n = totals[letter_index(letter)];
        if n > limit {
            return Err(err(format!(
                "{n} {} on board and in hand (at most {limit})",
                plural(letter)
            )));
        }
    }
    if kings != [1, 1] {
        return Err(err(format!(
            "each side needs exactly one king (black {}, white {})",
            kings[0], kings[1]
        )));
    }
    out.push(' ');
    out.push_str(side);
    out.push(' ');
    let hand_start = out.len();
    for (colour, counts) in hand_counts.iter().enumerate() {
        for (slot, &n) in counts.iter().enumerate() {
            if n == 0 {
                continue;
            }
            if n > 1 {
                push_count(&mut out, n);
            }
            let letter = HAND_ORDER[slot].0;
            out.push(if colour == 0 {
                letter
            } else {
                letter.to_ascii_lowercase()
            });
        }
    }
    if out.len() == hand_start {
        out.push('-');
    }
    out.push(' ');
    push_count(&mut out, ply);
    Ok(out)
}

fn letter_index(upper: char) -> usize {
    (upper as usize).saturating_sub('A' as usize).min(25)
}

fn push_count(out: &mut String, n: u32) {
    use std::fmt::Write;
    let _ = write!(out, "{n}");
}

fn plural(letter: char) -> &'static str {
    match letter {
        'R' => "rooks",
        'B' => "bishops",
        'G' => "golds",
        'S' => "silvers",
        'N' => "knights",
        'L' => "lances",
        _ => "pawns",
    }
}
