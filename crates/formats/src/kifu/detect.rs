//! Telling game record formats apart: by extension, then by content.

use std::path::Path;

use stera_rules::Position;

use super::{KifuFormat, decode_text};

/// How much of a file the content sniffer looks at.
pub(crate) const SNIFF_BYTES: u64 = 64 * 1024;

/// The format named by a file's extension; `None` for `.txt` and unknown extensions
/// (the content decides then).
///
/// ```
/// use stera_formats::kifu::{format_from_extension, KifuFormat};
/// assert_eq!(format_from_extension("a/b.KIFU".as_ref()), Some(KifuFormat::Kif));
/// assert_eq!(format_from_extension("games.txt".as_ref()), None);
/// ```
#[must_use]
pub fn format_from_extension(path: &Path) -> Option<KifuFormat> {
    let ext = path.extension()?.to_str()?.to_ascii_lowercase();
    match ext.as_str() {
        "csa" => Some(KifuFormat::Csa),
        "kif" | "kifu" => Some(KifuFormat::Kif),
        "sfen" => Some(KifuFormat::SfenLines),
        "usi" => Some(KifuFormat::UsiPositions),
        _ => None,
    }
}

/// The format of a file from its extension, else from its first bytes.
#[must_use]
pub fn detect_format(path: &Path, head: &[u8]) -> Option<KifuFormat> {
    format_from_extension(path).or_else(|| sniff_format(head))
}

/// Guesses the format from the start of a file: the first line that only one format
/// would contain decides.
///
/// ```
/// use stera_formats::kifu::{sniff_format, KifuFormat};
/// assert_eq!(sniff_format(b"V2.2\nPI\n+\n+7776FU\n"), Some(KifuFormat::Csa));
/// assert_eq!(sniff_format("手合割：平手\n".as_bytes()), Some(KifuFormat::Kif));
/// assert_eq!(sniff_format(b"startpos moves 7g7f\n"), Some(KifuFormat::UsiPositions));
/// assert_eq!(sniff_format(b"4k4/9/9/9/9/9/9/9/4K4 b G 1\n"), Some(KifuFormat::SfenLines));
/// assert_eq!(sniff_format(b"hello\n"), None);
/// ```
#[must_use]
pub fn sniff_format(head: &[u8]) -> Option<KifuFormat> {
    let cut = usize::try_from(SNIFF_BYTES).map_or(head.len(), |n| head.len().min(n));
    let text = decode_text(&head[..cut]);
    crate::lines::split_lines(&text)
        .into_iter()
        .find_map(|line| classify_line(line.trim()))
}

fn classify_line(line: &str) -> Option<KifuFormat> {
    if line.is_empty() || line.starts_with('#') || line.starts_with("//") {
        return None;
    }
    const KIF_MARKERS: [&str; 10] = [
        "手数",
        "手合割",
        "先手：",
        "後手：",
        "開始日時",
        "棋戦：",
        "下手：",
        "上手：",
        "先手の持駒",
        "後手の持駒",
    ];
    if KIF_MARKERS.iter().any(|m| line.starts_with(m)) || is_kif_move_line(line) {
        return Some(KifuFormat::Kif);
    }
    if line.starts_with('\'') {
        return None;
    }
    if line == "PI"
        || line.starts_with("V2")
        || line.starts_with("N+")
        || line.starts_with("N-")
        || is_csa_board_line(line)
        || is_csa_move(line)
    {
        return Some(KifuFormat::Csa);
    }
    if line.starts_with("position ")
        || line.starts_with("startpos")
        || line.split_whitespace().any(|t| t == "moves")
    {
        return Some(KifuFormat::UsiPositions);
    }
    if Position::from_sfen(line).is_ok() {
        return Some(KifuFormat::SfenLines);
    }
    None
}

/// `   1 ７六歩(77)`: a move number and a full-width file digit or `同`.
fn is_kif_move_line(line: &str) -> bool {
    let mut parts = line.split_whitespace();
    let (Some(number), Some(mv)) = (parts.next(), parts.next()) else {
        return false;
    };
    number.chars().all(|c| c.is_ascii_digit())
        && mv
            .chars()
            .next()
            .is_some_and(|c| ('１'..='９').contains(&c) || c == '同')
}

/// `P1-KY-KE...` (a rank of the board).
fn is_csa_board_line(line: &str) -> bool {
    let b = line.as_bytes();
    b.len() >= 3
        && b[0] == b'P'
        && (b'1'..=b'9').contains(&b[1])
        && matches!(b[2], b'-' | b'+' | b' ')
}

/// `+7776FU` (possibly followed by `,T12`).
fn is_csa_move(line: &str) -> bool {
    let b = line.as_bytes();
    b.len() >= 7
        && matches!(b[0], b'+' | b'-')
        && b[1..5].iter().all(u8::is_ascii_digit)
        && b[5..7].iter().all(u8::is_ascii_uppercase)
}
