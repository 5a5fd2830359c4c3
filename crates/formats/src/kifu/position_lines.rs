//! One game per line: USI `position` commands and bare SFENs.

use std::io::{self, BufRead};

use stera_rules::Position;

use super::{Collector, Game};
use crate::lines::LineSplitter;

/// Reads `[position] (startpos | [sfen] <sfen>) [moves <usi>...]` lines, streaming.
/// Empty lines and `#` / `//` comments are skipped. A tab ends the position: what
/// follows it is a note, such as the result the coordinator's `--games-out`
/// appends to each game (`sfen ... moves ...<TAB>black wins by resignation`).
pub(crate) fn read(input: impl BufRead, collector: &mut Collector<'_>) -> io::Result<()> {
    let mut lines = LineSplitter::new(input);
    let mut buf = Vec::new();
    while lines.next_line(&mut buf)? {
        let line_no = lines.line();
        if lines.truncated() {
            collector.skip(
                line_no,
                format!(
                    "line longer than {} bytes (MAX_LINE_BYTES)",
                    crate::MAX_LINE_BYTES
                ),
            );
            continue;
        }
        let Ok(text) = std::str::from_utf8(&buf) else {
            collector.skip(line_no, "line is not valid UTF-8".to_owned());
            continue;
        };
        let text = text.split('\t').next().unwrap_or_default().trim();
        if text.is_empty() || text.starts_with('#') || text.starts_with("//") {
            continue;
        }
        match parse_line(text, line_no) {
            Ok(game) => collector.game(game),
            Err(reason) => collector.skip(line_no, reason),
        }
    }
    Ok(())
}

fn parse_line(text: &str, line: u64) -> Result<Game, String> {
    let tokens: Vec<&str> = text.split_whitespace().collect();
    let tokens = match tokens.first() {
        Some(&"position") => &tokens[1..],
        _ => &tokens[..],
    };
    let moves_at = tokens.iter().position(|t| *t == "moves");
    let (base, moves) = match moves_at {
        Some(i) => (&tokens[..i], &tokens[i + 1..]),
        None => (tokens, &[][..]),
    };
    let start = match base {
        ["startpos"] => Position::startpos(),
        [] => return Err("missing start position (`startpos` or an SFEN)".to_owned()),
        _ => Position::from_sfen(&base.join(" ")).map_err(|e| e.to_string())?,
    };
    Game::from_usi_moves(&start, moves.iter().copied(), line).map_err(|(index, e)| {
        let token = moves.get(index).copied().unwrap_or("");
        format!("move {} `{}`: {e}", index + 1, stera_rules::excerpt(token))
    })
}

#[cfg(test)]
mod tests {
    use crate::kifu::{KifuFormat, read_kifu_bytes};

    #[test]
    fn a_tab_ends_the_position_and_starts_a_note() {
        // The form of the coordinator's `--games-out` lines.
        let text = "sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b - 1 moves 7g7f 3c3d\twhite wins by resignation\n\
                    startpos moves 2g2f\tdraw by repetition\n";
        for format in [None, Some(KifuFormat::UsiPositions)] {
            let report = read_kifu_bytes(text.as_bytes(), "games.txt", format).unwrap();
            assert!(
                report.summary.errors.is_empty(),
                "{:?}",
                report.summary.errors
            );
            assert_eq!(report.games.len(), 2);
            assert_eq!(report.games[0].position_count(), 3);
            assert_eq!(report.games[1].position_count(), 2);
        }
        // A move after the tab is not read as a move.
        let report = read_kifu_bytes(b"startpos moves 7g7f\t7g7f", "g.usi", None).unwrap();
        assert!(
            report.summary.errors.is_empty(),
            "{:?}",
            report.summary.errors
        );
        assert_eq!(report.games[0].position_count(), 2);
    }
}
