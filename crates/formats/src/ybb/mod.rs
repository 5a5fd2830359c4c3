//! YaneuraOu binary books (`.ybb`, "YANE-BINBOOK-V1"): a streaming
//! [`YbbReader`] and a [`YbbWriter`] taking entries in any order with bounded
//! memory, both on the [`crate::db2016`] entry types.
//!
//! Layout (all integers little-endian):
//!
//! | part | bytes | content |
//! |---|---|---|
//! | header | 32 | magic `YANE-BINBOOK-V1\0`, record count u64, flags u64 (bit 0: moves carry a depth) |
//! | index | 44 per record | PackedSfen (32 bytes), moves offset u64 (from the end of the index), ply u16, move count u16 |
//! | moves | 4 or 6 per move | Move16 u16, value i16, depth u16 when flag bit 0 is set |
//!
//! Records are sorted by their 32 PackedSfen bytes (memcmp order); engines
//! binary-search them. The position keys are [`stera_rules::packed_sfen`], the
//! moves [`stera_rules::move16`].
//!
//! A DB2016 text book becomes a `.ybb` book with [`convert_db2016`]:
//!
//! ```
//! use stera_formats::db2016::{BookEntry, BookMove, OrderedWriter, WriteOptions};
//! use stera_formats::ybb::{self, YbbOptions, YbbReader};
//! let dir = tempfile::tempdir().unwrap();
//! let (text, binary) = (dir.path().join("book.db"), dir.path().join("book.ybb"));
//! let mut writer = OrderedWriter::create(&text, WriteOptions::default()).unwrap();
//! let mut entry = BookEntry::from_sfen(stera_rules::STARTPOS_SFEN).unwrap();
//! entry.push_move(BookMove { value: 40, depth: 12, ..BookMove::new("2g2f".parse().unwrap()) });
//! writer.write_entry(entry.clone()).unwrap();
//! writer.finish().unwrap();
//!
//! let summary = ybb::convert_db2016(&text, &binary, YbbOptions::default()).unwrap();
//! assert_eq!(summary.entries_written, 1);
//! let bytes = std::fs::read(&binary).unwrap();
//! assert_eq!(&bytes[..16], b"YANE-BINBOOK-V1\0");
//! assert_eq!(bytes.len(), 32 + 44 + 6);
//! let back: Vec<BookEntry> = YbbReader::open(&binary).unwrap().collect::<Result<_, _>>().unwrap();
//! assert_eq!(back[0].sfen(), entry.sfen());
//! assert_eq!((back[0].moves[0].value, back[0].moves[0].depth), (40, 12));
//! ```

mod error;
mod reader;
mod writer;

use std::path::Path;

pub use error::{RecordAt, YbbError};
pub use reader::YbbReader;
pub use writer::{PreparedEntry, YbbOptions, YbbWriter};

use crate::db2016::{Db2016Reader, WriteSummary};

/// The first 16 bytes of every `.ybb` book.
pub const MAGIC: &[u8; 16] = b"YANE-BINBOOK-V1\0";
/// Bytes of the header.
pub const HEADER_BYTES: u64 = 32;
/// Bytes of one index record.
pub const RECORD_BYTES: u64 = 44;
/// Header flag: every move carries a depth (6 bytes a move instead of 4).
pub const FLAG_DEPTH: u64 = 1;

/// Converts the DB2016 book at `src` into the `.ybb` book `dst`, streaming: the
/// entries are read one at a time and given to a [`YbbWriter`] (see there for
/// what is kept, merged and clamped).
///
/// # Errors
/// [`YbbError::Db2016`] for the first unreadable or malformed line of `src` (no
/// `.ybb` book is written then), the writer's errors.
pub fn convert_db2016(
    src: impl AsRef<Path>,
    dst: impl AsRef<Path>,
    options: YbbOptions,
) -> Result<WriteSummary, YbbError> {
    let mut writer = YbbWriter::create(dst, options)?;
    for entry in Db2016Reader::open(src)? {
        writer.write_entry(&entry?)?;
    }
    writer.finish()
}

#[cfg(test)]
mod tests;
