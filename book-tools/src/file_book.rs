//! A YaneuraOu book file (DB2016 text or `.ybb` binary) as the book of a match
//! side (`match --book`): an export is tested as the engine that loads it would
//! play it, e.g. by its `count` weights as YaneuraOu does with
//! `ConsiderBookMoveCount`. Also [`BookFile`], the reader of either format that
//! `import` uses.

use std::collections::HashMap;
use std::fmt;
use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use anyhow::{Context, Result, bail};
use stera_formats::db2016::{BookEntry, Db2016Reader, FormatError, sort_moves_best_first};
use stera_formats::ybb::{YbbError, YbbReader};
use stera_games::{BookSource, Candidate};
use stera_rules::Position;

/// True for a `.ybb` path (YaneuraOu's binary book; the extension decides, in
/// any case).
pub fn is_ybb(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("ybb"))
}

/// The entries of a book file of either format, chosen by [`is_ybb`]: DB2016 text
/// or `.ybb` binary (whose moves have no ponder and count 0).
pub enum BookFile {
    Text(Db2016Reader<BufReader<File>>),
    Binary(YbbReader),
}

/// A problem reading a [`BookFile`] (boxed: the errors carry their location).
#[derive(Debug)]
pub enum BookFileError {
    Text(Box<FormatError>),
    Binary(Box<YbbError>),
}

impl BookFileError {
    /// True for errors that spoil one entry (reading goes on after them).
    pub fn is_entry_error(&self) -> bool {
        match self {
            Self::Text(e) => e.is_entry_error(),
            Self::Binary(e) => e.is_entry_error(),
        }
    }
}

impl fmt::Display for BookFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Text(e) => e.fmt(f),
            Self::Binary(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for BookFileError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Text(e) => e.source(),
            Self::Binary(e) => e.source(),
        }
    }
}

impl BookFile {
    /// Opens `path`; with `legality_check` every move (and ponder) must be legal in
    /// its position, or the entry is an error.
    ///
    /// # Errors
    /// The file cannot be opened; a `.ybb` header is bad or its index truncated.
    pub fn open(path: &Path, legality_check: bool) -> Result<Self> {
        if is_ybb(path) {
            Ok(Self::Binary(
                YbbReader::open(path)?.with_legality_check(legality_check),
            ))
        } else {
            Ok(Self::Text(
                Db2016Reader::open(path)?.with_legality_check(legality_check),
            ))
        }
    }
}

impl BookFile {
    /// The values read so far that were beyond ±32000 and clamped to a mate
    /// score (a text book's; a `.ybb` stores 16-bit values in range), the first
    /// few with their lines, and how many in all.
    #[must_use]
    pub fn clamped_values(&self) -> (&[stera_formats::db2016::ClampedValue], u64) {
        match self {
            Self::Text(r) => r.clamped_values(),
            Self::Binary(_) => (&[], 0),
        }
    }
}

impl Iterator for BookFile {
    type Item = Result<BookEntry, BookFileError>;

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Self::Text(r) => r
                .next()
                .map(|i| i.map_err(|e| BookFileError::Text(Box::new(e)))),
            Self::Binary(r) => r
                .next()
                .map(|i| i.map_err(|e| BookFileError::Binary(Box::new(e)))),
        }
    }
}

/// One book file, by position (the ply does not matter), as the moves a match
/// side plays from (see [`stera_games::RuledBook`] for the rules it plays by).
pub struct FileBook {
    name: String,
    entries: HashMap<u128, Vec<Candidate>>,
}

impl FileBook {
    /// Reads the book file at `path`, DB2016 text or `.ybb` binary by its
    /// extension (moves illegal in their position are refused with the entry
    /// named). A `.ybb` book's moves are sorted best first by value, as YaneuraOu
    /// does (the format has no order and no counts).
    ///
    /// # Errors
    /// An unreadable or malformed file, an illegal move, an empty book.
    pub fn open(path: &Path) -> Result<Self> {
        let reader = BookFile::open(path, false)
            .with_context(|| format!("cannot open the book file `{}`", path.display()))?;
        let binary = matches!(reader, BookFile::Binary(_));
        let mut entries = HashMap::new();
        for (i, entry) in reader.enumerate() {
            let mut entry =
                entry.with_context(|| format!("`{}`, entry {}", path.display(), i + 1))?;
            if binary {
                sort_moves_best_first(&mut entry.moves);
            }
            let position: Position = entry
                .position()
                .with_context(|| format!("`{}`: {}", path.display(), entry.sfen()))?;
            let mut list = Vec::with_capacity(entry.moves.len());
            for m in &entry.moves {
                if !position.is_legal(m.mv) {
                    bail!(
                        "`{}`: move {} is not legal in {}",
                        path.display(),
                        m.mv,
                        entry.sfen()
                    );
                }
                list.push(Candidate {
                    mv: m.mv,
                    value: m.value,
                    count: m.count,
                });
            }
            if !list.is_empty() {
                entries.insert(position.key().0, list);
            }
        }
        if entries.is_empty() {
            bail!("the book file `{}` has no moves", path.display());
        }
        Ok(Self {
            name: path.display().to_string(),
            entries,
        })
    }
}

impl FileBook {
    /// Whether the counts say nothing: every position's moves have one count
    /// (a default export writes 1 everywhere; a `.ybb` book has none). Played
    /// by count, such a book is a uniform choice among its moves.
    #[must_use]
    pub fn counts_all_equal(&self) -> bool {
        self.entries
            .values()
            .all(|moves| moves.windows(2).all(|w| w[0].count == w[1].count))
    }
}

impl BookSource for FileBook {
    fn candidates(&self, position: &Position) -> Option<Vec<Candidate>> {
        if let Some(list) = self.entries.get(&position.key().0) {
            return Some(list.clone());
        }
        // YaneuraOu's `FlippedBook`: a position not in the file is looked up as
        // its colour-flipped twin, whose moves are flipped back.
        Some(
            self.entries
                .get(&position.flipped_key().0)?
                .iter()
                .map(|c| Candidate {
                    mv: c.mv.flipped(),
                    ..*c
                })
                .collect(),
        )
    }

    fn has_counts(&self) -> bool {
        true
    }

    fn describe(&self) -> String {
        format!("book file {} ({} positions)", self.name, self.entries.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use stera_games::{BookPolicy, MoveRule, RuledBook};
    use stera_rules::Move;

    fn book(text: &str, rule: MoveRule) -> RuledBook {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("b.db");
        std::fs::write(&path, text).unwrap();
        RuledBook::new(Arc::new(FileBook::open(&path).unwrap()), rule, None)
    }

    const TEXT: &str = "#YANEURAOU-DB2016 1.00\nsfen lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b - 1\n7g7f none 40 3 0\n2g2f none 30 3 3\n5g5f none -10 3 1\n";

    fn shown(p: &[(Move, f64)]) -> Vec<(String, f64)> {
        p.iter().map(|(m, p)| (m.to_string(), *p)).collect()
    }

    #[test]
    fn count_weights_are_followed_and_zero_counts_never_played() {
        let b = book(TEXT, MoveRule::Count);
        let p = b.probabilities(&Position::startpos()).unwrap();
        assert_eq!(
            shown(&p),
            [("2g2f".to_owned(), 0.75), ("5g5f".to_owned(), 0.25)]
        );
        let best = book(TEXT, MoveRule::Best);
        assert_eq!(
            best.choose(&Position::startpos(), 0.99)
                .unwrap()
                .to_string(),
            "7g7f"
        );
        let after = Position::from_position_command("startpos moves 7g7f").unwrap();
        assert!(b.probabilities(&after).is_none());
    }

    #[test]
    fn yaneuraous_rule_admits_moves_near_the_best_above_the_limit() {
        // Best 40: within 30 cp are 7g7f (40) and 2g2f (30); 5g5f (-10) is not.
        let b = book(TEXT, MoveRule::yaneuraou_default());
        let p = b.probabilities(&Position::startpos()).unwrap();
        assert_eq!(
            shown(&p),
            [("7g7f".to_owned(), 0.5), ("2g2f".to_owned(), 0.5)]
        );
        // With ConsiderBookMoveCount the counts weigh them (7g7f has count 0).
        let by_count = book(
            TEXT,
            MoveRule::YaneuraOu {
                eval_diff: 30,
                black_limit: 0,
                white_limit: -140,
                by_count: true,
            },
        );
        let p = by_count.probabilities(&Position::startpos()).unwrap();
        assert_eq!(shown(&p), [("2g2f".to_owned(), 1.0)]);
        // Black's limit above every value: no book move at all.
        let strict = book(
            TEXT,
            MoveRule::YaneuraOu {
                eval_diff: 30,
                black_limit: 50,
                white_limit: -140,
                by_count: false,
            },
        );
        assert!(strict.probabilities(&Position::startpos()).is_none());
        // A book used up to ply 0 only is never used (the start is ply 1).
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("b.db");
        std::fs::write(&path, TEXT).unwrap();
        let early = RuledBook::new(
            Arc::new(FileBook::open(&path).unwrap()),
            MoveRule::Best,
            Some(0),
        );
        assert!(early.probabilities(&Position::startpos()).is_none());
    }

    #[test]
    fn a_ybb_book_is_read_by_its_extension_and_sorted_by_value() {
        use stera_formats::db2016::BookMove;
        use stera_formats::ybb::{YbbOptions, YbbWriter};
        let dir = tempfile::tempdir().unwrap();
        let binary = dir.path().join("b.YBB");
        assert!(is_ybb(&binary) && !is_ybb(&dir.path().join("b.db")));
        let mut writer = YbbWriter::create(&binary, YbbOptions::default()).unwrap();
        let mut entry = BookEntry::new(&Position::startpos());
        // Written worst first: the reader orders them by value, as YaneuraOu does.
        for (usi, value) in [("5g5f", -10), ("2g2f", 30), ("7g7f", 40)] {
            entry.push_move(BookMove {
                value,
                ..BookMove::new(usi.parse().unwrap())
            });
        }
        writer.write_entry(&entry).unwrap();
        writer.finish().unwrap();
        let source = FileBook::open(&binary).unwrap();
        let c = source.candidates(&Position::startpos()).unwrap();
        let order: Vec<String> = c.iter().map(|c| c.mv.to_string()).collect();
        assert_eq!(order, ["7g7f", "2g2f", "5g5f"]);
        // Counts are not in the format: Count plays the first (best) move.
        let p = MoveRule::Count
            .probabilities(&c, stera_rules::Color::Black)
            .unwrap();
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].0.to_string(), "7g7f");
    }

    #[test]
    fn a_position_not_in_the_file_is_found_as_its_flipped_twin() {
        // The start with white to move is the twin of the start: the file's
        // moves come back flipped (7g7f -> 3c3d), with their weights.
        let b = book(TEXT, MoveRule::Count);
        let twin =
            Position::from_sfen("lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL w - 1")
                .unwrap();
        let p = b.probabilities(&twin).unwrap();
        assert_eq!(
            shown(&p),
            [("8c8d".to_owned(), 0.75), ("5c5d".to_owned(), 0.25)]
        );
        let best = book(TEXT, MoveRule::Best);
        assert_eq!(best.choose(&twin, 0.5).unwrap().to_string(), "3c3d");
    }

    #[test]
    fn an_illegal_move_in_the_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("b.db");
        std::fs::write(&path, TEXT.replace("5g5f", "5g5e")).unwrap();
        let err = FileBook::open(&path).err().unwrap();
        assert!(format!("{err:#}").contains("5g5e"), "{err:#}");
    }
}
