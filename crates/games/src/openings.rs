//! Openings: where a game starts. One reader for every openings file and every
//! list of position lines (a run's roots), shared by `book-tools match`,
//! `book-tools learn` and the coordinator.
//!
//! A line is `startpos`, an SFEN (`sfen ...` or the bare four fields), or a
//! position command with moves (`startpos moves 7g7f 3c3d`), optionally after
//! `position `; `#` starts a comment, blank lines are skipped, and a UTF-8 byte
//! order mark at the start of a file is not part of its first line.
//!
//! Input is bounded where it is read (ARCHITECTURE "Limits on input"): a file
//! larger than [`MAX_OPENINGS_FILE_BYTES`] or a line longer than
//! [`MAX_OPENINGS_LINE_BYTES`] is an error, and an error quotes at most
//! [`stera_rules::MAX_QUOTE_CHARS`] characters of a line and names the file
//! and the line.
//!
//! ```
//! use stera_games::openings::{Opening, parse_lines};
//! let lines = ["startpos moves 7g7f 3c3d  # the main line", "", "# a comment"];
//! let openings = parse_lines(lines, "example").unwrap();
//! assert_eq!(openings.len(), 1);
//! assert_eq!(openings[0].moves.len(), 2);
//! assert_eq!(openings[0].position().ply(), 3); // game plies count from 1
//!
//! let err = parse_lines(["startpos moves 7g7e"], "example").unwrap_err();
//! assert_eq!(err.to_string().split(':').next(), Some("example, line 1"));
//! ```

use std::io::Read;
use std::path::{Path, PathBuf};

use stera_rules::{Move, Position, RulesError, excerpt};
use thiserror::Error;

/// The largest openings file read: 64 MiB (as a roots file; endless input such
/// as `/dev/zero` ends with an error, not with memory exhausted).
pub const MAX_OPENINGS_FILE_BYTES: u64 = 64 << 20;

/// The longest line of an openings file: 1 MiB (as `stera_formats`'
/// `MAX_LINE_BYTES`), far above any position command within the ply limit.
pub const MAX_OPENINGS_LINE_BYTES: usize = 1 << 20;

/// Where one game (or one pair of games) starts: a position and the moves
/// played from it, as a USI `position` command carries them.
#[derive(Debug, Clone)]
pub struct Opening {
    /// The position the moves start from (`startpos` or an SFEN).
    pub start: Position,
    /// The moves from `start`, in order.
    pub moves: Vec<Move>,
}

impl Opening {
    /// The opening of `position` with its history: the position it was
    /// constructed from and the moves played since.
    #[must_use]
    pub fn of(position: &Position) -> Self {
        let (start, moves) = stera_engine::player::history(position);
        Self { start, moves }
    }

    /// The position after the opening's moves.
    #[must_use]
    pub fn position(&self) -> Position {
        let mut pos = self.start.clone();
        for &mv in &self.moves {
            pos.do_move(mv);
        }
        pos
    }
}

/// Why openings could not be read.
#[derive(Debug, Error)]
pub enum OpeningsError {
    #[error("cannot read openings from `{path}`")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "`{path}` is larger than {MAX_OPENINGS_FILE_BYTES} bytes (MAX_OPENINGS_FILE_BYTES), the limit for an openings file"
    )]
    TooLarge { path: PathBuf },
    #[error(
        "{name}, line {line}: longer than {MAX_OPENINGS_LINE_BYTES} bytes (MAX_OPENINGS_LINE_BYTES)"
    )]
    LineTooLong { name: String, line: usize },
    #[error("{name}, line {line}: not valid UTF-8")]
    NotUtf8 { name: String, line: usize },
    /// A line that is no position; `text` is quoted with [`excerpt`].
    #[error("{name}, line {line}: `{text}`: {source}")]
    Position {
        name: String,
        line: usize,
        text: String,
        #[source]
        source: RulesError,
    },
    #[error("{name}: no openings")]
    Empty { name: String },
}

/// Reads the openings of a file (in file order), bounded by
/// [`MAX_OPENINGS_FILE_BYTES`] and [`MAX_OPENINGS_LINE_BYTES`].
///
/// # Errors
/// An unreadable or too large file, a too long or non-UTF-8 line, a line that
/// is no position (each naming the file and the line), or a file without
/// openings.
pub fn read_file(path: &Path) -> Result<Vec<Opening>, OpeningsError> {
    let read_error = |source| OpeningsError::Read {
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::File::open(path).map_err(read_error)?;
    let mut bytes = Vec::new();
    file.take(MAX_OPENINGS_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(read_error)?;
    if bytes.len() as u64 > MAX_OPENINGS_FILE_BYTES {
        return Err(OpeningsError::TooLarge {
            path: path.to_path_buf(),
        });
    }
    let name = path.display().to_string();
    let bytes = bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(&bytes);
    let mut lines = Vec::new();
    for (i, line) in bytes.split(|&b| b == b'\n').enumerate() {
        if line.len() > MAX_OPENINGS_LINE_BYTES {
            return Err(OpeningsError::LineTooLong { name, line: i + 1 });
        }
        let text = std::str::from_utf8(line).map_err(|_| OpeningsError::NotUtf8 {
            name: name.clone(),
            line: i + 1,
        })?;
        lines.push(text);
    }
    parse_lines(lines, &name)
}

/// Parses position lines (blank lines and `#` comments skipped; `name` names
/// them in errors, e.g. the file or "the roots of `book`").
///
/// # Errors
/// A line longer than [`MAX_OPENINGS_LINE_BYTES`] or that is no position
/// (naming `name` and the line number), or no openings at all.
pub fn parse_lines<'a>(
    lines: impl IntoIterator<Item = &'a str>,
    name: &str,
) -> Result<Vec<Opening>, OpeningsError> {
    let mut openings = Vec::new();
    for (i, line) in lines.into_iter().enumerate() {
        if line.len() > MAX_OPENINGS_LINE_BYTES {
            return Err(OpeningsError::LineTooLong {
                name: name.to_owned(),
                line: i + 1,
            });
        }
        let text = line.split('#').next().unwrap_or("");
        // A byte-order mark at the start of a file is not part of the line.
        let text = text.trim().trim_start_matches('\u{feff}').trim();
        let text = text.strip_prefix("position ").unwrap_or(text).trim();
        if text.is_empty() {
            continue;
        }
        let pos =
            Position::from_position_command(text).map_err(|source| OpeningsError::Position {
                name: name.to_owned(),
                line: i + 1,
                text: excerpt(text),
                source,
            })?;
        openings.push(Opening::of(&pos));
    }
    if openings.is_empty() {
        return Err(OpeningsError::Empty {
            name: name.to_owned(),
        });
    }
    Ok(openings)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        path
    }

    #[test]
    fn lines_skip_comments_blanks_and_a_byte_order_mark() {
        let lines = [
            "\u{feff}startpos moves 7g7f",
            "# a comment",
            "",
            "   ",
            "position startpos moves 2g2f 8c8d # trailing",
            "sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/2P6/PP1PPPPPP/1B5R1/LNSGKGSNL w - 2",
        ];
        let openings = parse_lines(lines, "file").unwrap();
        assert_eq!(openings.len(), 3);
        assert_eq!(openings[0].moves.len(), 1);
        assert_eq!(openings[1].moves.len(), 2);
        assert!(openings[2].moves.is_empty());
        // Two ways to one position: after 7g7f, and the SFEN of it.
        assert_eq!(
            openings[0].position().key(),
            openings[2].position().key(),
            "the SFEN line is the position after 7g7f"
        );
        assert_eq!(openings[1].position().ply(), 3);
    }

    #[test]
    fn a_bad_line_names_the_source_and_the_line_and_quotes_at_most_200_characters() {
        let long = format!("startpos moves 7g7f {}", "x".repeat(5_000));
        let err = parse_lines(["startpos", "# c", long.as_str()], "openings.txt").unwrap_err();
        let text = err.to_string();
        assert!(text.starts_with("openings.txt, line 3: `"), "{text}");
        let OpeningsError::Position { text: quoted, .. } = &err else {
            panic!("{err:?}");
        };
        assert_eq!(quoted.chars().count(), stera_rules::MAX_QUOTE_CHARS + 1);
        assert!(text.len() < 1_000, "{text}");
        let err = parse_lines(["startpos moves 7g7e"], "f").unwrap_err();
        assert!(err.to_string().starts_with("f, line 1: "), "{err}");
        assert!(matches!(
            parse_lines(["# nothing", ""], "f"),
            Err(OpeningsError::Empty { .. })
        ));
    }

    #[test]
    fn a_file_is_read_in_order_and_its_bounds_hold() {
        let dir = tempfile::tempdir().unwrap();
        let good = write(
            dir.path(),
            "good.txt",
            b"\xef\xbb\xbfstartpos moves 7g7f\r\nstartpos moves 2g2f 8c8d\n\n",
        );
        let openings = read_file(&good).unwrap();
        assert_eq!(openings.len(), 2);
        assert_eq!(openings[0].moves.len(), 1);
        assert_eq!(openings[1].moves.len(), 2);

        let mut long = b"startpos\n".to_vec();
        long.extend(std::iter::repeat_n(b' ', MAX_OPENINGS_LINE_BYTES + 1));
        long.extend(b"\nstartpos\n");
        let err = read_file(&write(dir.path(), "long.txt", &long)).unwrap_err();
        assert!(
            matches!(err, OpeningsError::LineTooLong { line: 2, .. }),
            "{err:?}"
        );
        assert!(err.to_string().contains("long.txt, line 2"), "{err}");

        let err = read_file(&write(dir.path(), "bin.txt", b"startpos\n\xff\xfe\n")).unwrap_err();
        assert!(err.to_string().contains("bin.txt, line 2: not valid UTF-8"));

        let err = read_file(&dir.path().join("missing.txt")).unwrap_err();
        assert!(err.to_string().contains("missing.txt"), "{err}");
    }

    #[cfg(unix)]
    #[test]
    fn endless_input_stops_at_the_file_limit() {
        let err = read_file(Path::new("/dev/zero")).unwrap_err();
        assert!(matches!(err, OpeningsError::TooLarge { .. }), "{err:?}");
    }
}
