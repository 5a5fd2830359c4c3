//! `--out-games`: the coordinator's games and `book-tools match`'s go to files
//! of one rule, chosen by the path's extension: `.csa` (any case) CSA, games
//! separated by `/` lines; anything else one USI line per game,
//! `sfen START moves M1 M2 ...`, a tab, and the result.

use std::path::Path;

use crate::csa::game_to_csa;
use crate::game::Game;
use crate::referee::GameError;

/// The format of a games file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GamesFormat {
    /// CSA, the games separated by lines `/`.
    Csa,
    /// One line per game: `sfen START moves ...`, a tab, the result.
    UsiLines,
}

impl GamesFormat {
    /// The format of the games file at `path`: CSA for `.csa`, else USI lines.
    #[must_use]
    pub fn of(path: &Path) -> Self {
        match path.extension() {
            Some(ext) if ext.eq_ignore_ascii_case("csa") => Self::Csa,
            _ => Self::UsiLines,
        }
    }

    /// The text of one game in this format, ending with a line end; `black` and
    /// `white` name the players (CSA only). A CSA game after the first of its
    /// file is preceded by [`Self::separator`].
    ///
    /// # Errors
    /// A start position or move that does not replay (CSA only).
    pub fn entry(self, game: &Game, black: &str, white: &str) -> Result<String, GameError> {
        match self {
            Self::Csa => game_to_csa(game, black, white),
            Self::UsiLines => Ok(usi_line(game) + "\n"),
        }
    }

    /// What goes between two games in a file of this format.
    #[must_use]
    pub fn separator(self) -> &'static str {
        match self {
            Self::Csa => "/\n",
            Self::UsiLines => "",
        }
    }
}

/// A game as one USI line: `sfen START moves M1 M2 ...`, a tab, the result.
#[must_use]
pub fn usi_line(game: &Game) -> String {
    format!(
        "sfen {} moves {}\t{}",
        game.start_sfen,
        game.usi_moves(),
        game.result
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_extension_chooses() {
        assert_eq!(GamesFormat::of(Path::new("g.csa")), GamesFormat::Csa);
        assert_eq!(GamesFormat::of(Path::new("dir/g.CSA")), GamesFormat::Csa);
        for usi in ["g.txt", "g", "g.csa.txt", "g.usi"] {
            assert_eq!(GamesFormat::of(Path::new(usi)), GamesFormat::UsiLines);
        }
    }
}
