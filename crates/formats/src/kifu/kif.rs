//! KIF files (one game, main line), parsed by rsshogi's KIF reader: `手合割`
//! handicaps, BOD boards, `同`, `成`/`不成`/`打`, time columns.

use rsshogi::records::formats::kif::{KifError, parse_kif_str};
use rsshogi::records::{Record, SpecialMove};

use super::{Collector, game_from_record};
use crate::lines::split_lines;

/// Reads the game of a KIF file; on failure it is skipped with the line of the problem.
/// A move line the parser could not read is such a failure too (the parser would
/// take it for the end of the game and drop it and every later move silently).
pub(crate) fn read(text: &str, collector: &mut Collector<'_>) {
    let lines = split_lines(text);
    let Some(first_line) = lines.iter().position(|l| !l.trim().is_empty()) else {
        return;
    };
    let first_line = first_line as u64 + 1;
    if let Some(i) = lines.iter().position(|l| l.len() > crate::MAX_LINE_BYTES) {
        collector.skip(i as u64 + 1, too_long());
        return;
    }
    let main = main_move_lines(&lines);
    let max = stera_rules::MAX_PLY as usize;
    if let Some(&(line, _)) = main.get(max) {
        collector.skip(
            line,
            format!("more than {max} moves (MAX_PLY): the game is too long"),
        );
        return;
    }
    if let Err(reason) = check_start(&lines) {
        collector.skip(first_line, reason);
        return;
    }
    match parse_kif_str(text) {
        Ok(record) => {
            if let Some((line, text)) = unread_line(&record, &main) {
                collector.skip(
                    line,
                    format!("cannot read the move line `{}`", stera_rules::excerpt(text)),
                );
                return;
            }
            match game_from_record(&record, first_line) {
                Ok(game) => collector.game(game),
                Err((index, reason)) => {
                    let line = index
                        .and_then(|i| move_line(&lines, i))
                        .map_or(first_line, |(n, _)| n);
                    collector.skip(line, reason);
                }
            }
        }
        Err(error) => {
            let (line, reason) = locate(&lines, first_line, &error);
            collector.skip(line, reason);
        }
    }
}

pub(crate) fn too_long() -> String {
    format!(
        "line longer than {} bytes (MAX_LINE_BYTES)",
        crate::MAX_LINE_BYTES
    )
}

/// Checks the start position (handicap or board) before the moves are played:
/// the parser would play them from any position, even one whose king can be
/// captured. A header the parser refuses is left for the full parse to report.
fn check_start(lines: &[&str]) -> Result<(), String> {
    match parse_kif_str(&header_lines(lines).join("\n")) {
        Ok(header) => stera_rules::Position::from_sfen(header.init_position_sfen())
            .map(drop)
            .map_err(|e| format!("bad start position: {e}")),
        // The full parse meets the same error before any move.
        Err(_) => Ok(()),
    }
}

/// The lines the parser reads as the header, where the start position comes from
/// (rsshogi 1.7.3's rule): up to the first `変化`, `手数` or `まで` line or line
/// starting with a digit, a board block (a `９ ... １` line, an optional `+` line
/// and nine rows) taken whole whatever its rows hold.
fn header_lines<'a>(lines: &[&'a str]) -> Vec<&'a str> {
    let mut header = Vec::new();
    let mut i = 0;
    while let Some(&line) = lines.get(i) {
        let t = line.trim();
        if t.starts_with("変化")
            || t.starts_with("手数")
            || t.starts_with("まで")
            || t.starts_with(|c: char| c.is_ascii_digit())
        {
            break;
        }
        let mut end = i + 1;
        if line.contains('９') && line.contains('１') && line.trim_start().starts_with('９') {
            end += usize::from(lines.get(end).is_some_and(|l| l.starts_with('+'))) + 9;
        }
        let end = end.min(lines.len());
        header.extend_from_slice(&lines[i..end]);
        i = end;
    }
    header
}

/// The numbered lines of the main line (up to the first `変化` or `まで` line):
/// each is a move or the end of the game for the parser.
fn main_move_lines<'a>(lines: &[&'a str]) -> Vec<(u64, &'a str)> {
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let line = line.trim();
        if line.starts_with("変化") || line.starts_with("まで") {
            break;
        }
        if line.starts_with(|c: char| c.is_ascii_digit()) {
            out.push((i as u64 + 1, line));
        }
    }
    out
}

/// The first numbered main-line line the record does not account for: not one of
/// its moves, nor a game end the parser knows.
fn unread_line<'a>(record: &Record, main: &[(u64, &'a str)]) -> Option<(u64, &'a str)> {
    let moves = record.main_moves().count();
    let known_end = record
        .main_terminal()
        .is_some_and(|t| !matches!(t.kind(), SpecialMove::Unknown(_)));
    main.get(moves + usize::from(known_end)).copied()
}

/// The `index`-th (0-based) move line: lines starting with a move number, which the
/// parser reads in order (variations come after the main line).
fn move_line<'a>(lines: &[&'a str], index: usize) -> Option<(u64, &'a str)> {
    lines
        .iter()
        .enumerate()
        .filter(|(_, l)| l.trim_start().starts_with(|c: char| c.is_ascii_digit()))
        .nth(index)
        .map(|(i, l)| (i as u64 + 1, l.trim()))
}

fn locate(lines: &[&str], first_line: u64, error: &KifError) -> (u64, String) {
    match error {
        KifError::IllegalMove { index } => match move_line(lines, *index) {
            Some((line, text)) => (
                line,
                format!(
                    "move {} `{}` is illegal",
                    index + 1,
                    stera_rules::excerpt(text)
                ),
            ),
            None => (first_line, format!("move {} is illegal", index + 1)),
        },
        KifError::InvalidLine(text) | KifError::InvalidMove(text) => {
            let text = text.trim();
            let line = lines
                .iter()
                .position(|l| !text.is_empty() && l.contains(text))
                .map_or(first_line, |i| i as u64 + 1);
            (line, stera_rules::excerpt(&error.to_string()))
        }
        KifError::Sfen(_) | KifError::MissingResult => {
            (first_line, stera_rules::excerpt(&error.to_string()))
        }
    }
}
