//! Games as CSA text (V2.2), for people and for other tools.
//!
//! Each game: `V2.2`, the players (`N+`, `N-`), a comment with the result, the
//! start position (`PI` for the initial position, `P1`..`P9`/`P+`/`P-`
//! otherwise), the moves (`+7776FU`), each followed by a comment with its
//! source (`'book`, `'opening`) or the engine's score (`'** 123`), and the end:
//!
//! | termination | CSA |
//! |---|---|
//! | mate | `%TSUMI` |
//! | repetition | `%SENNICHITE` |
//! | perpetual check | `%+ILLEGAL_ACTION` / `%-ILLEGAL_ACTION` (the checker) |
//! | declaration | `%KACHI` |
//! | invalid declaration | `%+ILLEGAL_ACTION` / `%-ILLEGAL_ACTION` (the declarer) |
//! | resignation | `%TORYO` |
//! | ply limit | `%HIKIWAKE` |
//! | adjudication | `%CHUDAN` (the comment says who won) |
//!
//! Several games in one file are separated by `/` lines.

use std::fmt::Write as _;

use stera_rules::backend::records::formats::csa::board_to_csa;
use stera_rules::{Color, Position, STARTPOS_SFEN};

use crate::game::{Game, MoveSource, Outcome, Termination};
use crate::referee::GameError;

/// The CSA text of one game (ending with a newline).
///
/// # Errors
/// A start position or move that does not replay ([`GameError`]).
pub fn game_to_csa(game: &Game, black: &str, white: &str) -> Result<String, GameError> {
    let mut pos = Position::from_sfen(&game.start_sfen).map_err(|source| GameError::Start {
        text: game.start_sfen.clone(),
        source,
    })?;
    let mut out = String::new();
    out.push_str("V2.2\n");
    let _ = writeln!(out, "N+{}", one_line(black));
    let _ = writeln!(out, "N-{}", one_line(white));
    let _ = writeln!(out, "'result: {}", game.result);
    if game.start_sfen == STARTPOS_SFEN {
        out.push_str("PI\n+\n");
    } else {
        out.push_str(&board_to_csa(pos.backend()));
        out.push('\n');
    }
    for (index, m) in game.moves.iter().enumerate() {
        let illegal = || GameError::IllegalMove {
            index,
            mv: m.mv.to_string(),
            sfen: pos.to_sfen(),
        };
        if !pos.is_legal(m.mv) {
            return Err(illegal());
        }
        let csa = pos
            .backend()
            .move32_from_move(m.mv.backend())
            .to_csa()
            .ok_or_else(illegal)?;
        out.push_str(&csa);
        out.push('\n');
        match (m.source, m.score) {
            (MoveSource::Opening, _) => out.push_str("'opening\n"),
            (MoveSource::Book, _) => out.push_str("'book\n"),
            (MoveSource::Engine, Some(score)) => {
                let _ = writeln!(out, "'** {score}");
            }
            (MoveSource::Engine, None) => {}
        }
        pos.do_move(m.mv);
    }
    let side = pos.side_to_move();
    let sign = |c: Color| if c == Color::Black { '+' } else { '-' };
    let loser = match game.result.outcome {
        Outcome::BlackWins => Color::White,
        Outcome::WhiteWins => Color::Black,
        Outcome::Draw => side,
    };
    let end = match game.result.termination {
        Termination::Mate => "%TSUMI".to_owned(),
        Termination::Repetition => "%SENNICHITE".to_owned(),
        Termination::PerpetualCheck | Termination::InvalidDeclaration => {
            format!("%{}ILLEGAL_ACTION", sign(loser))
        }
        Termination::Declaration => "%KACHI".to_owned(),
        Termination::Resignation => "%TORYO".to_owned(),
        Termination::PlyLimit => "%HIKIWAKE".to_owned(),
        Termination::Adjudication => "%CHUDAN".to_owned(),
    };
    out.push_str(&end);
    out.push('\n');
    Ok(out)
}

/// Several games as one CSA file (games separated by `/` lines); each game is
/// `(game, black player, white player)`.
///
/// # Errors
/// As [`game_to_csa`].
pub fn games_to_csa<'a>(
    games: impl IntoIterator<Item = (&'a Game, &'a str, &'a str)>,
) -> Result<String, GameError> {
    let mut out = String::new();
    for (i, (game, black, white)) in games.into_iter().enumerate() {
        if i > 0 {
            out.push_str("/\n");
        }
        out.push_str(&game_to_csa(game, black, white)?);
    }
    Ok(out)
}

/// Player names stay on their line.
fn one_line(name: &str) -> String {
    name.replace(['\n', '\r'], " ")
}
