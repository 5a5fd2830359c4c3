//! File formats of the book generator.
//!
//! - [`db2016`]: YaneuraOu "DB2016" text books. [`db2016::Db2016Reader`] streams
//!   entries from any `BufRead` and reports bad lines with their line numbers without
//!   stopping; [`db2016::OrderedWriter`] writes entries given in SFEN order;
//!   [`db2016::SortingWriter`] takes any order with bounded memory (external merge
//!   sort). Both write to a temporary file and rename it into place, so a partial book
//!   is never visible under the final name.
//! - [`kifu`]: game records (USI `position` lines, SFEN lines, CSA, KIF in UTF-8 or
//!   Shift_JIS) as start position + legal moves; a broken game is skipped and reported
//!   with file and line, the others are kept.
//!
//! Writing a book and reading it back:
//!
//! ```
//! use stera_formats::db2016::{BookEntry, BookMove, Db2016Reader, FormatError, SortOptions, SortingWriter};
//! use stera_rules::Position;
//!
//! let dir = tempfile::tempdir().unwrap();
//! let path = dir.path().join("user_book1.db");
//! let mut writer = SortingWriter::create(&path, SortOptions::default()).unwrap();
//! let mut entry = BookEntry::new(&Position::startpos());
//! entry.push_move(BookMove { ponder: Some("3c3d".parse().unwrap()), value: 30, depth: 12,
//!     ..BookMove::new("7g7f".parse().unwrap()) });
//! writer.write_entry(entry).unwrap();
//! writer.finish().unwrap();
//!
//! let (mut good, mut bad) = (0, 0);
//! for item in Db2016Reader::open(&path).unwrap().with_legality_check(true) {
//!     match item {
//!         Ok(_entry) => good += 1,
//!         Err(e) if e.is_entry_error() => bad += 1, // e.g. "book.db:7: malformed move `7g7x` ..."
//!         Err(e) => panic!("unreadable book: {e}"),
//!     }
//! }
//! assert_eq!((good, bad), (1, 0));
//! ```
//!
//! Reading games:
//!
//! ```
//! use stera_formats::kifu::{read_kifu_bytes, KifuFormat};
//! let csa = b"V2.2\nPI\n+\n+7776FU\n-3334FU\n%TORYO\n/\nV2.2\nPI\n+\n+7776FU\n-7776FU\n%TORYO\n";
//! let report = read_kifu_bytes(csa, "games.csa", None).unwrap();
//! assert_eq!(report.summary.format, KifuFormat::Csa);
//! assert_eq!(report.games.len(), 1);
//! assert_eq!(report.summary.errors[0].line, 12); // the illegal `-7776FU`
//! let mut positions = 0;
//! report.games[0].for_each_position(|_| positions += 1).unwrap();
//! assert_eq!(positions, 3);
//! ```

mod book_file;
pub mod db2016;
pub mod input;
pub mod kifu;
pub mod leftovers;
mod lines;
pub mod ybb;

pub use lines::LineSplitter as LineReader;

/// The longest line the line-based readers take (DB2016 books, USI and SFEN line
/// files, lines of CSA and KIF files): 1 MiB, thousands of times a real line (a
/// `position` command of [`stera_rules::MAX_PLY`] moves is about 50 KB). A longer line
/// is an error naming its line number; the reader never holds more than this of it.
pub const MAX_LINE_BYTES: usize = 1 << 20;

/// How much of an over-long line the line readers skip to find its end: 64 MiB.
/// Beyond it the read fails (the input is endless, such as `/dev/zero`, or not a
/// text file of lines) instead of going on forever.
pub const MAX_SKIPPED_LINE_BYTES: u64 = 64 << 20;

/// The largest CSA or KIF file read (they are parsed whole): 64 MiB. A KIF file
/// holds one game of a few kilobytes; a CSA file with more games than this must be
/// split.
pub const MAX_RECORD_FILE_BYTES: u64 = 64 << 20;
