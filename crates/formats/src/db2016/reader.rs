//! Streaming DB2016 reader.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::sync::Arc;

use stera_rules::{Move, Position};

use super::entry::clamp_value;
use super::error::io_error;
use super::{BookEntry, BookMove, FormatError, HEADER, Location};
use crate::lines::LineSplitter;

/// Reads a YaneuraOu DB2016 book entry by entry from any [`BufRead`]; the input is
/// never held whole, so multi-GB books stream in constant memory.
///
/// Yields `Ok(entry)` per `sfen` line and `Err(..)` per problem, in file order. An
/// entry with a bad line is dropped (its error is yielded instead) and reading goes on
/// with the next `sfen` line, so callers can skip and count bad entries. A bad header
/// or a read error ends the stream after its error.
///
/// Accepted: CR, LF and CRLF endings, trailing blanks, empty lines, `#` and `//`
/// comments, the `# NOE:` line. Move lines are `<move> <ponder|none> [value [depth
/// [count]]]`; missing numbers default to 0, 0, 1; values are clamped to ±32000
/// (-32768 stays: [`super::VALUE_UNKNOWN`]).
/// A move repeated inside an entry is merged (see [`BookEntry::push_move`]).
/// Entries repeated in the file are yielded separately; merge them with
/// [`BookEntry::merge`] or let a writer do it.
///
/// ```
/// use stera_formats::db2016::Db2016Reader;
/// let book = "#YANEURAOU-DB2016 1.00\r\n\
///     sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b - 1\r\n\
///     7g7f 3c3d 10 32 1\r\n\
///     2g2f none\r\n";
/// let entries: Vec<_> = Db2016Reader::new(book.as_bytes()).collect::<Result<_, _>>().unwrap();
/// assert_eq!(entries.len(), 1);
/// assert_eq!(entries[0].moves[1].count, 1); // default count
/// ```
pub struct Db2016Reader<R> {
    lines: LineSplitter<R>,
    source: Option<Arc<str>>,
    check_legality: bool,
    header_done: bool,
    finished: bool,
    current: Current,
    out: VecDeque<Result<BookEntry, FormatError>>,
    noe: Option<u64>,
    buf: Vec<u8>,
    /// Values beyond ±[`super::VALUE_LIMIT`] read as mate scores, the first
    /// [`KEPT_CLAMPED`] with their places, and how many in all.
    clamped: Vec<ClampedValue>,
    clamped_count: u64,
}

/// A move value beyond ±[`super::VALUE_LIMIT`] that was read as that mate score.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClampedValue {
    pub at: Location,
    /// The value in the file.
    pub value: i64,
    /// The value read.
    pub read: i32,
}

/// Clamped values kept with their places (the rest are only counted).
pub const KEPT_CLAMPED: usize = 10;

/// What the move lines being read belong to.
enum Current {
    /// Nothing yet: a move line here has no entry.
    Nothing,
    /// The entry being read; the position is kept only for the legality check.
    Entry(BookEntry, Option<Box<Position>>),
    /// A spoiled entry: its remaining move lines are skipped silently.
    Skipping,
}

impl Db2016Reader<BufReader<File>> {
    /// Opens a book file; errors name the file.
    ///
    /// # Errors
    /// [`FormatError::Io`] when the file cannot be opened.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, FormatError> {
        let path = path.as_ref();
        let file = File::open(path).map_err(io_error("cannot open book", path))?;
        let mut reader = Self::new(BufReader::with_capacity(1 << 16, file));
        reader.source = Some(Arc::from(path.display().to_string()));
        Ok(reader)
    }
}

impl<R: BufRead> Db2016Reader<R> {
    /// A reader over `input` (errors say "line N").
    pub fn new(input: R) -> Self {
        Self {
            lines: LineSplitter::new(input),
            source: None,
            check_legality: false,
            header_done: false,
            finished: false,
            current: Current::Nothing,
            out: VecDeque::new(),
            noe: None,
            buf: Vec::new(),
            clamped: Vec::new(),
            clamped_count: 0,
        }
    }

    /// Names the input in error messages (`name:line`).
    #[must_use]
    pub fn with_source_name(mut self, name: &str) -> Self {
        self.source = Some(Arc::from(name));
        self
    }

    /// Also checks that every move is legal in its entry's position and every ponder
    /// move is legal after it; an entry that fails yields
    /// [`FormatError::IllegalMove`]. Off by default: it costs a move generation per
    /// move.
    #[must_use]
    pub fn with_legality_check(mut self, check: bool) -> Self {
        self.check_legality = check;
        self
    }

    /// The entry count announced by a `# NOE:<n>` line, once that line was read.
    #[must_use]
    pub fn noe_hint(&self) -> Option<u64> {
        self.noe
    }

    fn at(&self) -> Location {
        Location {
            source: self.source.clone(),
            line: self.lines.line(),
        }
    }

    /// Moves the finished entry (if any) to the output queue.
    fn finish_current(&mut self, next: Current) {
        if let Current::Entry(entry, _) = std::mem::replace(&mut self.current, next) {
            self.out.push_back(Ok(entry));
        }
    }

    /// Reads lines until something is queued or the input ends.
    fn fill(&mut self) {
        while self.out.is_empty() && !self.finished {
            let mut buf = std::mem::take(&mut self.buf);
            match self.lines.next_line(&mut buf) {
                Ok(true) if self.lines.truncated() => self.handle_long_line(&buf),
                Ok(true) => self.handle_line(&buf),
                Ok(false) => {
                    self.finished = true;
                    if self.header_done {
                        self.finish_current(Current::Nothing);
                    } else {
                        self.out.push_back(Err(FormatError::BadHeader {
                            at: Location {
                                source: self.source.clone(),
                                line: 1,
                            },
                            found: "(empty input)".to_owned(),
                        }));
                    }
                }
                Err(source) => {
                    self.finished = true;
                    self.current = Current::Nothing;
                    let at = Location {
                        source: self.source.clone(),
                        line: self.lines.line() + 1,
                    };
                    self.out.push_back(Err(FormatError::Read { at, source }));
                }
            }
            self.buf = buf;
        }
    }

    /// A line over [`crate::MAX_LINE_BYTES`] (only its start was read): as the
    /// header it ends the stream at once; otherwise it spoils its entry.
    fn handle_long_line(&mut self, start: &[u8]) {
        let at = self.at();
        if !self.header_done {
            self.header_done = true;
            self.finished = true;
            let text = String::from_utf8_lossy(&start[..start.len().min(80)]).into_owned();
            self.out.push_back(Err(FormatError::BadHeader {
                at,
                found: format!("{text}… (a line over {} bytes)", crate::MAX_LINE_BYTES),
            }));
            return;
        }
        if start.trim_ascii_start().starts_with(b"sfen ") {
            self.finish_current(Current::Skipping);
            self.out.push_back(Err(FormatError::LineTooLong { at }));
        } else {
            self.fail_entry(FormatError::LineTooLong { at });
        }
    }

    fn handle_line(&mut self, raw: &[u8]) {
        if !self.header_done {
            self.header_done = true;
            let text = String::from_utf8_lossy(raw);
            let header = text.strip_prefix('\u{feff}').unwrap_or(&text).trim_end();
            if header != HEADER {
                self.finished = true;
                let at = self.at();
                self.out.push_back(Err(FormatError::BadHeader {
                    at,
                    found: header.chars().take(80).collect(),
                }));
            }
            return;
        }
        let Ok(text) = std::str::from_utf8(raw) else {
            let at = self.at();
            if raw.trim_ascii_start().starts_with(b"sfen ") {
                // A broken `sfen` line ends the previous entry, which stays good.
                self.finish_current(Current::Skipping);
                self.out.push_back(Err(FormatError::NotUtf8 { at }));
            } else {
                self.fail_entry(FormatError::NotUtf8 { at });
            }
            return;
        };
        let line = text.trim();
        if line.is_empty() {
            return;
        }
        if line.starts_with('#') || line.starts_with("//") {
            if let Some(rest) = line.strip_prefix("# NOE:") {
                let number = rest.split(',').next().unwrap_or("").trim();
                self.noe = number.parse().ok();
            }
            return;
        }
        if let Some(sfen) = line.strip_prefix("sfen ") {
            self.start_entry(sfen);
            return;
        }
        self.handle_move_line(line);
    }

    fn start_entry(&mut self, sfen: &str) {
        // Only the legality check needs a board; canonical text alone is about ten
        // times cheaper than building a position, which matters for 15M-entry books.
        let parsed = if self.check_legality {
            Position::from_sfen(sfen)
                .map(|position| (BookEntry::new(&position), Some(Box::new(position))))
        } else {
            stera_rules::canonical_sfen(sfen)
                .map(|canonical| (BookEntry::from_canonical_sfen(canonical), None))
        };
        match parsed {
            Ok((entry, keep)) => self.finish_current(Current::Entry(entry, keep)),
            Err(source) => {
                self.finish_current(Current::Skipping);
                let at = self.at();
                self.out.push_back(Err(FormatError::BadSfen { at, source }));
            }
        }
    }

    /// Spoils the current entry: the error replaces it in the output.
    fn fail_entry(&mut self, error: FormatError) {
        if !matches!(self.current, Current::Skipping) {
            self.current = Current::Skipping;
            self.out.push_back(Err(error));
        }
    }

    /// The first [`KEPT_CLAMPED`] values clamped to a mate score so far, with
    /// their lines, and how many in all: a value of 99999 is most likely not a
    /// mate, and a reader must say it changed it.
    #[must_use]
    pub fn clamped_values(&self) -> (&[ClampedValue], u64) {
        (&self.clamped, self.clamped_count)
    }

    fn handle_move_line(&mut self, line: &str) {
        match &self.current {
            Current::Skipping => return,
            Current::Nothing => {
                let at = self.at();
                self.current = Current::Skipping;
                self.out.push_back(Err(FormatError::MoveBeforeSfen {
                    at,
                    text: stera_rules::excerpt(line),
                }));
                return;
            }
            Current::Entry(..) => {}
        }
        let at = self.at();
        let parsed = parse_move_line(line, &at).map(|(mv, original)| {
            if let Some(value) = original {
                self.clamped_count += 1;
                if self.clamped.len() < KEPT_CLAMPED {
                    self.clamped.push(ClampedValue {
                        at: at.clone(),
                        value,
                        read: mv.value,
                    });
                }
            }
            mv
        });
        let parsed = parsed.and_then(|mv| match &self.current {
            Current::Entry(entry, Some(position)) => check_legal(position, entry, mv, &at),
            _ => Ok(mv),
        });
        match parsed {
            Ok(mv) => {
                if let Current::Entry(entry, _) = &mut self.current {
                    entry.push_move(mv);
                }
            }
            Err(error) => self.fail_entry(error),
        }
    }
}

impl<R: BufRead> Iterator for Db2016Reader<R> {
    type Item = Result<BookEntry, FormatError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.fill();
        self.out.pop_front()
    }
}

/// Parses `<move> <ponder|none> [value [depth [count]]]`; with the value in the
/// file when it was clamped.
fn parse_move_line(line: &str, at: &Location) -> Result<(BookMove, Option<i64>), FormatError> {
    let mut fields = line.split_whitespace();
    let mv_text = fields.next().unwrap_or("");
    let mv = Move::from_usi(mv_text).map_err(|_| FormatError::BadMove {
        at: at.clone(),
        field: "move",
        token: stera_rules::excerpt(mv_text),
    })?;
    let ponder = match fields.next() {
        None | Some("none") => None,
        Some(text) => Some(Move::from_usi(text).map_err(|_| FormatError::BadMove {
            at: at.clone(),
            field: "ponder",
            token: stera_rules::excerpt(text),
        })?),
    };
    let mut book_move = BookMove {
        ponder,
        ..BookMove::new(mv)
    };
    let mut clamped = None;
    if let Some(text) = fields.next() {
        let value: i64 = parse_number(text, "value", "an integer", at)?;
        book_move.value = clamp_value(value);
        if i64::from(book_move.value) != value {
            clamped = Some(value);
        }
    }
    if let Some(text) = fields.next() {
        book_move.depth = parse_number(text, "depth", "an integer", at)?;
    }
    if let Some(text) = fields.next() {
        book_move.count = parse_number(text, "count", "a non-negative integer", at)?;
    }
    let rest: Vec<&str> = fields.collect();
    if !rest.is_empty() {
        return Err(FormatError::TrailingText {
            at: at.clone(),
            text: stera_rules::excerpt(&rest.join(" ")),
        });
    }
    Ok((book_move, clamped))
}

fn parse_number<T: std::str::FromStr>(
    text: &str,
    field: &'static str,
    expected: &'static str,
    at: &Location,
) -> Result<T, FormatError> {
    text.parse().map_err(|_| FormatError::BadNumber {
        at: at.clone(),
        field,
        text: stera_rules::excerpt(text),
        expected,
    })
}

fn check_legal(
    position: &Position,
    entry: &BookEntry,
    mv: BookMove,
    at: &Location,
) -> Result<BookMove, FormatError> {
    let illegal = |field, m: Move, sfen: String| FormatError::IllegalMove {
        at: at.clone(),
        field,
        mv: m.to_string(),
        sfen,
    };
    if !position.is_legal(mv.mv) {
        return Err(illegal("move", mv.mv, entry.sfen().to_owned()));
    }
    if let Some(ponder) = mv.ponder {
        let mut child = position.clone();
        child.do_move(mv.mv);
        if !child.is_legal(ponder) {
            return Err(illegal("ponder", ponder, child.to_sfen()));
        }
    }
    Ok(mv)
}

/// Checks an entry's moves (and ponders) for legality in its position, for entries
/// that did not come through a reader with [`Db2016Reader::with_legality_check`].
/// Returns the illegal moves in USI, empty when all are legal.
///
/// # Errors
/// [`FormatError::Sfen`] if the entry's SFEN does not parse.
pub fn illegal_moves(entry: &BookEntry) -> Result<Vec<String>, FormatError> {
    let position = entry.position()?;
    let mut bad = Vec::new();
    for m in &entry.moves {
        if !position.is_legal(m.mv) {
            bad.push(m.mv.to_string());
            continue;
        }
        if let Some(ponder) = m.ponder {
            let mut child = position.clone();
            child.do_move(m.mv);
            if !child.is_legal(ponder) {
                bad.push(format!("{} (ponder after {})", ponder, m.mv));
            }
        }
    }
    Ok(bad)
}
