//! YaneuraOu "DB2016" text books: a streaming reader, an ordered writer and a
//! bounded-memory sorting writer.
//!
//! The format (see the project's book-format spec): line 1 `#YANEURAOU-DB2016 1.00`,
//! an optional `# NOE:<n>` line, then entries `sfen <sfen with ply>` each followed by
//! move lines `<move> <ponder|none> <value> <depth> <count>`. Writers sort entries by
//! the SFEN text, keep the smallest ply of a position, order moves best first and
//! end lines with CRLF.
//!
//! ```
//! use stera_formats::db2016::{BookEntry, BookMove, Db2016Reader, SortOptions, SortingWriter};
//! use stera_rules::Position;
//! let dir = tempfile::tempdir().unwrap();
//! let path = dir.path().join("book.db");
//! let mut writer = SortingWriter::create(&path, SortOptions::default()).unwrap();
//! let mut entry = BookEntry::new(&Position::startpos());
//! entry.push_move(BookMove { value: 50, depth: 3, ..BookMove::new("2g2f".parse().unwrap()) });
//! writer.write_entry(entry.clone()).unwrap();
//! writer.finish().unwrap();
//! let back: Vec<BookEntry> = Db2016Reader::open(&path).unwrap().collect::<Result<_, _>>().unwrap();
//! assert_eq!(back, vec![entry]);
//! ```

mod entry;
mod error;
mod reader;
mod sort;
mod writer;

pub use entry::{
    BookEntry, BookMove, VALUE_LIMIT, VALUE_UNKNOWN, clamp_value, sort_moves_best_first,
};
pub use error::{FormatError, Location};
pub use reader::{ClampedValue, Db2016Reader, KEPT_CLAMPED, illegal_moves};
pub use sort::{SortOptions, SortingWriter};
pub use writer::{MoveOrder, OrderedWriter, WriteOptions, WriteSummary, format_move_line};

/// The first line of every DB2016 book.
pub const HEADER: &str = "#YANEURAOU-DB2016 1.00";
