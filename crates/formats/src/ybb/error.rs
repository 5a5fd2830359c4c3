//! Errors of the `.ybb` reader and writer.

use std::fmt;
use std::io;
use std::path::PathBuf;
use std::sync::Arc;

use stera_rules::RulesError;
use stera_rules::move16::Move16Error;
use stera_rules::packed_sfen::PackedSfenError;
use thiserror::Error;

use crate::db2016::FormatError;

/// Where in a `.ybb` file a record is: the file, the record's number (from 0, in
/// index order) and the byte offset of its index entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordAt {
    /// The file as it was opened.
    pub file: Arc<str>,
    /// Record number, 0 for the first index entry.
    pub record: u64,
    /// Byte offset of the record's index entry in the file.
    pub offset: u64,
}

impl fmt::Display for RecordAt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: record #{} (index entry at byte {})",
            self.file, self.record, self.offset
        )
    }
}

/// Everything that can go wrong reading or writing a `.ybb` book.
///
/// Record errors ([`YbbError::is_entry_error`]) spoil one record; the reader goes on
/// with the next. The others end the stream.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum YbbError {
    /// Opening, reading, writing, syncing or renaming a file failed.
    #[error("{action} `{}`: {source}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// The file does not start with `YANE-BINBOOK-V1\0`.
    #[error("{file}: not a .ybb book: it starts with `{found}`, not `YANE-BINBOOK-V1\\0`")]
    BadMagic { file: Arc<str>, found: String },
    /// Header flags other than bit 0 (moves carry a depth).
    #[error("{file}: unknown header flags {flags:#x} (only bit 0, moves with a depth, is defined)")]
    BadFlags { file: Arc<str>, flags: u64 },
    /// The file ends before a part the header announces.
    #[error("{file}: truncated: {what} needs bytes {start}..{end}, the file has {len}")]
    Truncated {
        file: Arc<str>,
        what: String,
        start: u64,
        end: u64,
        len: u64,
    },
    /// An index entry whose PackedSfen sorts before the previous one's: engines
    /// binary-search the index and would miss entries.
    #[error(
        "{at}: its PackedSfen sorts before the previous record's (the index must be in ascending byte order)"
    )]
    OutOfOrder { at: RecordAt },
    /// A record whose moves lie beyond the end of the file.
    #[error(
        "{at}: {count} moves at offset {offset} of the moves section, which has only {len} bytes"
    )]
    MovesOutOfRange {
        at: RecordAt,
        offset: u64,
        count: u16,
        len: u64,
    },
    /// A PackedSfen that is not a legal position (with the record's ply).
    #[error("{at}: PackedSfen {hex} (ply {ply}): {source}")]
    BadPosition {
        at: RecordAt,
        hex: String,
        ply: u16,
        #[source]
        source: PackedSfenError,
    },
    /// A Move16 that is not a move, or not a legal one in the record's position.
    #[error("{at}: move {index} of `sfen {sfen}`: {source}")]
    BadMove {
        at: RecordAt,
        sfen: String,
        index: u16,
        #[source]
        source: Move16Error,
    },
    /// An entry with more moves than a record can count (65,535).
    #[error("entry `sfen {sfen}` has {count} moves; a .ybb record holds at most 65535")]
    TooManyMoves { sfen: String, count: usize },
    /// An entry whose SFEN cannot be packed.
    #[error("invalid book position: {0}")]
    Sfen(#[source] RulesError),
    /// An entry prepared for a writer with other options (moves with or without
    /// depths).
    #[error("an entry prepared with depths {prepared} for a writer with depths {writer}")]
    OptionsMismatch { prepared: bool, writer: bool },
    /// The DB2016 input of a conversion is broken.
    #[error(transparent)]
    Db2016(#[from] FormatError),
}

impl YbbError {
    /// True for errors that spoil a single record (the reader continues after them).
    #[must_use]
    pub fn is_entry_error(&self) -> bool {
        matches!(
            self,
            Self::MovesOutOfRange { .. } | Self::BadPosition { .. } | Self::BadMove { .. }
        )
    }

    /// The record an error is about, if any.
    #[must_use]
    pub fn record(&self) -> Option<&RecordAt> {
        match self {
            Self::OutOfOrder { at }
            | Self::MovesOutOfRange { at, .. }
            | Self::BadPosition { at, .. }
            | Self::BadMove { at, .. } => Some(at),
            _ => None,
        }
    }
}

/// Wraps an I/O error with what was being done to which file.
pub(crate) fn io_error(
    action: &'static str,
    path: impl Into<PathBuf>,
) -> impl FnOnce(io::Error) -> YbbError {
    let path = path.into();
    move |source| YbbError::Io {
        action,
        path,
        source,
    }
}
