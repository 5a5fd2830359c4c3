//! The games of a match written as they end (CSA, or the format the file's
//! name asks for), each named with its game and pair.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use stera_games::games_file::GamesFormat;
use stera_rules::Color;

use crate::matches::Finished;

/// The games as CSA, appended as they end.
pub struct GamesFile {
    path: PathBuf,
    out: BufWriter<File>,
    own: String,
    other: String,
    written: u64,
}

impl GamesFile {
    /// Creates (or truncates) `path`; the players are named after their engines
    /// (`engine` for the side under test, `opponent` for the other) and books.
    ///
    /// # Errors
    /// The file cannot be created.
    pub fn create(
        path: &Path,
        own: &str,
        against: &str,
        engine: &str,
        opponent: &str,
    ) -> Result<Self> {
        let file = File::create(path)
            .with_context(|| format!("cannot create the games file `{}`", path.display()))?;
        let other = if against == "no book" {
            opponent.to_owned()
        } else {
            format!("{opponent} + book {against}")
        };
        Ok(Self {
            path: path.to_path_buf(),
            out: BufWriter::new(file),
            own: format!("{engine} + book {own}"),
            other,
            written: 0,
        })
    }

    pub(super) fn write(&mut self, finished: &Finished) -> Result<()> {
        let (black, white) = match finished.own_color {
            Color::Black => (&self.own, &self.other),
            Color::White => (&self.other, &self.own),
        };
        let format = GamesFormat::of(&self.path);
        let text = format
            .entry(&finished.game, black, white)
            .context("cannot write a game")?;
        let write = |out: &mut BufWriter<File>| -> std::io::Result<()> {
            if self.written > 0 {
                out.write_all(format.separator().as_bytes())?;
            }
            if format == GamesFormat::Csa {
                // Games end out of order: the comment names the game and its pair.
                let (first, rest) = text.split_once('\n').unwrap_or((&text, ""));
                writeln!(out, "{first}")?;
                writeln!(
                    out,
                    "'game {} pair {}",
                    finished.index + 1,
                    finished.index / 2 + 1
                )?;
                out.write_all(rest.as_bytes())?;
            } else {
                out.write_all(text.as_bytes())?;
            }
            out.flush()
        };
        write(&mut self.out)
            .with_context(|| format!("cannot write to the games file `{}`", self.path.display()))?;
        self.written += 1;
        Ok(())
    }
}
