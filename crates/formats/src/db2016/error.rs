//! Errors of the DB2016 reader and writers.

use std::fmt;
use std::io;
use std::path::PathBuf;
use std::sync::Arc;

use stera_rules::RulesError;
use thiserror::Error;

/// Where in a book a problem was found: the source name (usually the file path) when
/// the reader was given one, and the 1-based line number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// File name or other label of the input; `None` for anonymous readers.
    pub source: Option<Arc<str>>,
    /// 1-based line number (CR, LF and CRLF each end one line).
    pub line: u64,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.source {
            Some(source) => write!(f, "{source}:{}", self.line),
            None => write!(f, "line {}", self.line),
        }
    }
}

/// Everything that can go wrong reading or writing a YaneuraOu DB2016 book.
///
/// Line errors ([`FormatError::is_entry_error`]) spoil one entry only; the reader goes
/// on with the next entry. [`FormatError::BadHeader`] and [`FormatError::Read`] end
/// the stream.
#[derive(Debug, Error)]
pub enum FormatError {
    /// Line 1 is not `#YANEURAOU-DB2016 1.00`.
    #[error("{at}: bad header: expected `#YANEURAOU-DB2016 1.00`, found `{found}`")]
    BadHeader { at: Location, found: String },
    /// A `sfen ...` line whose position does not parse.
    #[error("{at}: malformed sfen line: {source}")]
    BadSfen {
        at: Location,
        #[source]
        source: RulesError,
    },
    /// A move line with no `sfen` line before it.
    #[error("{at}: move line `{text}` before any `sfen` line")]
    MoveBeforeSfen { at: Location, text: String },
    /// The move or ponder field is not a USI move.
    #[error("{at}: malformed {field} `{token}` (expected a USI move such as 7g7f, 8h2b+, P*5e{})",
        if *field == "ponder" { " or none" } else { "" })]
    BadMove {
        at: Location,
        field: &'static str,
        token: String,
    },
    /// A value, depth or count field that is not a number of the right kind.
    #[error("{at}: bad {field} `{text}`: expected {expected}")]
    BadNumber {
        at: Location,
        field: &'static str,
        text: String,
        expected: &'static str,
    },
    /// Text after the count field.
    #[error("{at}: unexpected text `{text}` after the count field")]
    TrailingText { at: Location, text: String },
    /// A line over [`crate::MAX_LINE_BYTES`]; only its start was read.
    #[error(
        "{at}: line longer than {} bytes (MAX_LINE_BYTES)",
        crate::MAX_LINE_BYTES
    )]
    LineTooLong { at: Location },
    /// A line that is not valid UTF-8.
    #[error("{at}: line is not valid UTF-8")]
    NotUtf8 { at: Location },
    /// With the legality check on: a book move (or its ponder) that is not legal.
    #[error("{at}: illegal {field} `{mv}` in position `{sfen}`")]
    IllegalMove {
        at: Location,
        field: &'static str,
        mv: String,
        sfen: String,
    },
    /// An SFEN given to [`crate::db2016::BookEntry::from_sfen`] that does not parse.
    #[error("invalid book position: {0}")]
    Sfen(#[source] RulesError),
    /// Reading the input failed; the stream ends here.
    #[error("{at}: read error: {source}")]
    Read {
        at: Location,
        #[source]
        source: io::Error,
    },
    /// Creating, writing, syncing or renaming a file failed.
    #[error("{action} `{}`: {source}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// The ordered writer was given an entry that sorts before the previous one.
    #[error(
        "entries out of order: `sfen {next}` after `sfen {previous}` (the ordered writer needs ascending SFEN byte order; use the sorting writer for arbitrary order)"
    )]
    OutOfOrder { previous: String, next: String },
    /// A sort run file written by this crate could not be read back.
    #[error("corrupt sort run `{}` line {line}: {reason}", path.display())]
    CorruptRun {
        path: PathBuf,
        line: u64,
        reason: String,
    },
    /// An entry whose text does not fit the spooling writer's 4 GiB block limit.
    #[error("entry `sfen {0}` is too large to write (over 4 GiB of text)")]
    EntryTooLarge(String),
}

impl FormatError {
    /// True for errors that spoil a single entry (the reader continues after them).
    #[must_use]
    pub fn is_entry_error(&self) -> bool {
        matches!(
            self,
            Self::BadSfen { .. }
                | Self::MoveBeforeSfen { .. }
                | Self::BadMove { .. }
                | Self::BadNumber { .. }
                | Self::TrailingText { .. }
                | Self::NotUtf8 { .. }
                | Self::LineTooLong { .. }
                | Self::IllegalMove { .. }
        )
    }

    /// The input line of a reader error, if it has one.
    #[must_use]
    pub fn line(&self) -> Option<u64> {
        match self {
            Self::BadHeader { at, .. }
            | Self::BadSfen { at, .. }
            | Self::MoveBeforeSfen { at, .. }
            | Self::BadMove { at, .. }
            | Self::BadNumber { at, .. }
            | Self::TrailingText { at, .. }
            | Self::NotUtf8 { at }
            | Self::LineTooLong { at }
            | Self::IllegalMove { at, .. }
            | Self::Read { at, .. } => Some(at.line),
            Self::CorruptRun { line, .. } => Some(*line),
            Self::Sfen(_) | Self::Io { .. } | Self::OutOfOrder { .. } | Self::EntryTooLarge(_) => {
                None
            }
        }
    }
}

/// Wraps an I/O error with what was being done to which file.
pub(crate) fn io_error(
    action: &'static str,
    path: impl Into<PathBuf>,
) -> impl FnOnce(io::Error) -> FormatError {
    let path = path.into();
    move |source| FormatError::Io {
        action,
        path,
        source,
    }
}
