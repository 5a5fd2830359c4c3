//! CSA V2.x files: games separated by `/` lines, parsed by rsshogi's CSA reader.

use rsshogi::records::formats::csa::{CsaError, parse_csa_str};

use super::{Collector, game_from_record};
use crate::lines::split_lines;

/// A non-empty line of the file with its 1-based number.
type NumberedLine<'a> = (u64, &'a str);

/// Reads every game of a CSA file; a bad game is skipped with the line of its problem.
pub(crate) fn read(text: &str, collector: &mut Collector<'_>) {
    let mut chunk: Vec<NumberedLine<'_>> = Vec::new();
    for (i, line) in split_lines(text).into_iter().enumerate() {
        let number = i as u64 + 1;
        if line.trim() == "/" {
            read_game(&chunk, collector);
            chunk.clear();
        } else if !line.trim().is_empty() {
            // rsshogi ends the header at an empty line, so blank lines are left out.
            chunk.push((number, line));
        }
    }
    read_game(&chunk, collector);
}

fn read_game(lines: &[NumberedLine<'_>], collector: &mut Collector<'_>) {
    // A section of only comments (e.g. after the last `/`) is not a game.
    let Some(&(first_line, _)) = lines
        .iter()
        .find(|(_, l)| !l.trim_start().starts_with('\''))
    else {
        return;
    };
    // rsshogi skips header lines it does not know, so text that is not CSA at all
    // would read as an empty game from the initial position.
    if let Some((line, text)) = lines.iter().find(|(_, l)| !is_csa_statement(l)) {
        collector.skip(
            *line,
            format!("not a CSA line: `{}`", stera_rules::excerpt(text.trim())),
        );
        return;
    }
    if let Some((line, _)) = lines.iter().find(|(_, l)| l.len() > crate::MAX_LINE_BYTES) {
        collector.skip(*line, super::kif::too_long());
        return;
    }
    let max = stera_rules::MAX_PLY as usize;
    if let Some((line, _)) = move_token(lines, max - 1) {
        collector.skip(
            line,
            format!("more than {max} moves (MAX_PLY): the game is too long"),
        );
        return;
    }
    if let Err(reason) = check_start(lines) {
        let board = lines
            .iter()
            .find(|(_, l)| l.starts_with('P'))
            .map_or(first_line, |(n, _)| *n);
        collector.skip(board, reason);
        return;
    }
    let text: Vec<&str> = lines.iter().map(|(_, l)| *l).collect();
    match parse_csa_str(&text.join("\n")) {
        Ok(record) => match game_from_record(&record, first_line) {
            Ok(game) => collector.game(game),
            Err((index, reason)) => {
                let line = index
                    .and_then(|i| move_token(lines, i))
                    .map_or(first_line, |(line, _)| line);
                collector.skip(line, reason);
            }
        },
        Err(error) => {
            let (line, reason) = locate(lines, first_line, &error);
            collector.skip(line, reason);
        }
    }
}

/// Checks the start position before the moves are played: the parser would play
/// them from any position, even one whose king can be captured. A header the
/// parser refuses is left for the full parse to report.
fn check_start(lines: &[NumberedLine<'_>]) -> Result<(), String> {
    match parse_csa_str(&header_statements(lines).join("\n")) {
        Ok(record) => stera_rules::Position::from_sfen(record.init_position_sfen())
            .map(drop)
            .map_err(|e| format!("bad start position: {e}")),
        // The full parse meets the same error before any move.
        Err(_) => Ok(()),
    }
}

/// The statements the parser reads as the header, where the start position comes
/// from (rsshogi 1.7.3's rule): statements are split at commas (except in comment,
/// name and `$` lines); the header ends at an empty statement, `/`, a `%` line or a
/// move (`+`/`-` and at least 7 characters).
fn header_statements<'a>(lines: &[NumberedLine<'a>]) -> Vec<&'a str> {
    let mut out = Vec::new();
    for &(_, line) in lines {
        let whole = line.starts_with(['\'', 'N', '$']);
        for statement in line.split(if whole { '\n' } else { ',' }) {
            if statement.is_empty() {
                continue;
            }
            let t = statement.trim();
            let is_move = (t.starts_with('+') || t.starts_with('-')) && t.len() >= 7;
            if t.is_empty() || t == "/" || t.starts_with('%') || is_move {
                return out;
            }
            out.push(statement);
        }
    }
    out
}

/// The line and text of the `index`-th move (0-based) of a game, counted the way the
/// parser does: comma-separated statements starting with `+`/`-` of 7+ characters.
fn move_token<'a>(lines: &[NumberedLine<'a>], index: usize) -> Option<(u64, &'a str)> {
    lines
        .iter()
        .filter(|(_, l)| !matches!(l.trim_start().chars().next(), Some('\'' | 'N' | '$')))
        .flat_map(|&(n, l)| l.split(',').map(move |t| (n, t.trim())))
        .filter(|(_, t)| (t.starts_with('+') || t.starts_with('-')) && t.len() >= 7)
        .nth(index)
}

fn locate(lines: &[NumberedLine<'_>], first_line: u64, error: &CsaError) -> (u64, String) {
    let containing = |text: &str| {
        let text = text.trim();
        lines
            .iter()
            .find(|(_, l)| !text.is_empty() && l.contains(text))
            .map_or(first_line, |(n, _)| *n)
    };
    match error {
        CsaError::IllegalMove { index } => match move_token(lines, *index) {
            Some((line, token)) => (
                line,
                format!(
                    "move {} `{}` is illegal",
                    index + 1,
                    stera_rules::excerpt(token)
                ),
            ),
            None => (first_line, format!("move {} is illegal", index + 1)),
        },
        CsaError::InvalidLine(text)
        | CsaError::InvalidBoard(text)
        | CsaError::InvalidMove(text)
        | CsaError::MoveSideMismatch(text) => {
            (containing(text), stera_rules::excerpt(&error.to_string()))
        }
        CsaError::Sfen(_) => {
            let board = lines
                .iter()
                .find(|(_, l)| l.starts_with('P'))
                .map_or(first_line, |(n, _)| *n);
            (board, format!("bad start position: {error}"))
        }
        CsaError::MissingEndMarker => (first_line, stera_rules::excerpt(&error.to_string())),
    }
}

/// True for the line kinds of CSA V2.x: version, names, `$` info, position, side,
/// moves, times, special moves and comments.
fn is_csa_statement(line: &str) -> bool {
    matches!(
        line.trim_start().chars().next(),
        Some('V' | 'N' | '$' | 'P' | '+' | '-' | 'T' | '%' | '\'')
    )
}
