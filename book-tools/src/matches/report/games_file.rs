//! The games of a match written as they end (CSA, or the format the file's
//! name asks for), each named with its game and pair, under a temporary name
//! beside the file that the end of the match renames onto it: a match that
//! fails (a full disk, an engine that dies) leaves no partial file, and a file
//! that was there stays as it was.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use stera_book::store_path::BoundOutput;
use stera_games::games_file::GamesFormat;
use stera_rules::Color;

use crate::matches::Finished;

/// The games as CSA, appended as they end.
pub struct GamesFile {
    path: PathBuf,
    out: BoundOutput,
    own: String,
    other: String,
    written: u64,
}

impl GamesFile {
    /// Binds `path` (checked outside every store, or outside `store`) and starts
    /// its temporary file; the players are named after their engines (`engine`
    /// for the side under test, `opponent` for the other) and books.
    ///
    /// # Errors
    /// The path is refused or the temporary file cannot be made.
    pub fn create(
        path: &Path,
        store: Option<&Path>,
        own: &str,
        against: &str,
        engine: &str,
        opponent: &str,
    ) -> Result<Self> {
        let file = BoundOutput::staged(path, store)
            .with_context(|| format!("cannot create the games file `{}`", path.display()))?;
        let other = if against == "no book" {
            opponent.to_owned()
        } else {
            format!("{opponent} + book {against}")
        };
        Ok(Self {
            path: path.to_path_buf(),
            out: file,
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
        let mut entry = String::new();
        if self.written > 0 {
            entry.push_str(format.separator());
        }
        if format == GamesFormat::Csa {
            // Games end out of order: the comment names the game and its pair.
            let (first, rest) = text.split_once('\n').unwrap_or((&text, ""));
            let _ = writeln!(entry, "{first}");
            let _ = writeln!(
                entry,
                "'game {} pair {}",
                finished.index + 1,
                finished.index / 2 + 1
            );
            entry.push_str(rest);
        } else {
            entry.push_str(&text);
        }
        self.out
            .write_bytes(entry.as_bytes())
            .with_context(|| format!("cannot write to the games file `{}`", self.path.display()))?;
        self.written += 1;
        Ok(())
    }

    /// Puts the file in place under its name, with every game written.
    ///
    /// # Errors
    /// The file cannot be synced or renamed (nothing is left under its name).
    pub(super) fn commit(self) -> Result<()> {
        let path = self.path;
        self.out
            .commit()
            .with_context(|| format!("cannot write the games file `{}`", path.display()))
    }
}
