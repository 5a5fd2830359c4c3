//! KIF files (one game, main line), parsed by rsshogi's KIF reader: `手合割`
//! handicaps, BOD boards, `同`, `成`/`不成`/`打`, time columns.

use rsshogi::records::formats::kif::{KifError, parse_kif_str};

use super::{Collector, game_from_record};
use crate::lines::split_lines;

/// Reads the game of a KIF file; on failure it is skipped with the line of the problem.
pub(crate) fn read(text: &str, collector: &mut Collector<'_>) {
    let lines = split_lines(text);
    let Some(first_line) = lines.iter().position(|l| !l.trim().is_empty()) else {
        return;
    };
    let first_line = first_line as u64 + 1;
    match parse_kif_str(text) {
        Ok(record) => match game_from_record(&record, first_line) {
            Ok(game) => collector.game(game),
            Err((index, reason)) => {
                let line = index
                    .and_then(|i| move_line(&lines, i))
                    .map_or(first_line, |(n, _)| n);
                collector.skip(line, reason);
            }
        },
        Err(error) => {
            let (line, reason) = locate(&lines, first_line, &error);
            collector.skip(line, reason);
        }
    }
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
            Some((line, text)) => (line, format!("move {} `{text}` is illegal", index + 1)),
            None => (first_line, format!("move {} is illegal", index + 1)),
        },
        KifError::InvalidLine(text) | KifError::InvalidMove(text) => {
            let text = text.trim();
            let line = lines
                .iter()
                .position(|l| !text.is_empty() && l.contains(text))
                .map_or(first_line, |i| i as u64 + 1);
            (line, error.to_string())
        }
        KifError::Sfen(_) | KifError::MissingResult => (first_line, error.to_string()),
    }
}
