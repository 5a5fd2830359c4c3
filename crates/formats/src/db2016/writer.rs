//! The ordered DB2016 writer and the atomic file it writes through.

use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use tempfile::NamedTempFile;

use super::entry::{clamp_value, sort_moves_best_first};
use super::error::io_error;
use super::{BookEntry, BookMove, FormatError, HEADER};

/// How the writer orders the moves of an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MoveOrder {
    /// Best first like the reference writer: count, then value, descending (stable).
    #[default]
    BestFirst,
    /// The caller's order is final (the tera-shock export orders by its own search).
    AsGiven,
}

/// Options shared by both writers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WriteOptions {
    /// How moves inside an entry are ordered.
    pub move_order: MoveOrder,
}

/// What a finished writer did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WriteSummary {
    /// Entries in the written book (the `# NOE:` number).
    pub entries_written: u64,
    /// Move lines in the written book.
    pub moves_written: u64,
    /// Input entries merged into an earlier entry of the same SFEN.
    pub duplicates_merged: u64,
    /// Input entries dropped because the same position came with a smaller ply.
    pub ply_duplicates_dropped: u64,
    /// Sorted runs spilled to disk (sorting writer only; 0 means it sorted in memory).
    pub runs_spilled: u64,
}

/// Width reserved for the entry count so the `# NOE:` line can be filled in after the
/// body is written (u64 has at most 20 digits); readers trim the padding blanks.
const NOE_WIDTH: usize = 20;

/// A file written under a temporary name in the target's directory and renamed over
/// the target only after everything is written and synced. Dropping it unfinished
/// deletes the temporary file, so no partial book is ever visible under the final name.
pub(crate) struct AtomicFile {
    out: BufWriter<NamedTempFile>,
    final_path: PathBuf,
}

impl AtomicFile {
    pub(crate) fn create(final_path: &Path) -> Result<Self, FormatError> {
        let temp = crate::book_file::temp_beside(final_path, ".tmp").map_err(io_error(
            "cannot create a temporary file next to",
            final_path,
        ))?;
        Ok(Self {
            out: BufWriter::with_capacity(1 << 20, temp),
            final_path: final_path.to_path_buf(),
        })
    }

    pub(crate) fn write_all(&mut self, bytes: &[u8]) -> Result<(), FormatError> {
        self.out.write_all(bytes).map_err(io_error(
            "cannot write the temporary file for",
            &self.final_path,
        ))
    }

    /// Overwrites bytes at `offset` (already written) and renames the file into place.
    pub(crate) fn commit(self, patch: Option<(u64, &[u8])>) -> Result<(), FormatError> {
        let final_path = self.final_path;
        let failed = |action| io_error(action, &final_path);
        let mut temp = self
            .out
            .into_inner()
            .map_err(|e| failed("cannot write the temporary file for")(e.into_error()))?;
        if let Some((offset, bytes)) = patch {
            let file = temp.as_file_mut();
            file.seek(SeekFrom::Start(offset))
                .and_then(|_| file.write_all(bytes))
                .map_err(failed("cannot write the temporary file for"))?;
        }
        crate::book_file::persist(temp, &final_path).map_err(|(action, e)| failed(action)(e))
    }
}

/// Writes a DB2016 book from entries given in ascending SFEN byte order (the text after
/// `sfen `, ply included); an entry out of order is rejected with
/// [`FormatError::OutOfOrder`] and the writer stays usable.
///
/// Entries with the same SFEN are merged ([`BookEntry::merge`]); of entries that differ
/// only in ply the one with the smallest ply is kept. Output: header, `# NOE:<n>`
/// (padded with blanks to a fixed width so it can be filled in at the end), CRLF line
/// endings. The book appears under its name only when [`OrderedWriter::finish`]
/// succeeds; dropping the writer leaves any previous file untouched.
///
/// ```
/// use stera_formats::db2016::{BookEntry, BookMove, OrderedWriter, WriteOptions};
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("book.db");
/// let mut writer = OrderedWriter::create(&path, WriteOptions::default()).unwrap();
/// let mut entry = BookEntry::from_sfen("4k4/9/9/9/9/9/9/9/4K4 b G 1").unwrap();
/// entry.push_move(BookMove::new("G*5b".parse().unwrap()));
/// writer.write_entry(entry).unwrap();
/// assert_eq!(writer.finish().unwrap().entries_written, 1);
/// let text = std::fs::read_to_string(&path).unwrap();
/// assert!(text.ends_with("sfen 4k4/9/9/9/9/9/9/9/4K4 b G 1\r\nG*5b none 0 0 1\r\n"));
/// ```
pub struct OrderedWriter {
    file: AtomicFile,
    options: WriteOptions,
    noe_offset: u64,
    last_input: Option<String>,
    pending: Option<BookEntry>,
    summary: WriteSummary,
    text: Vec<u8>,
}

impl OrderedWriter {
    /// Starts a book that will be renamed to `path` by [`OrderedWriter::finish`].
    ///
    /// # Errors
    /// [`FormatError::Io`] when the temporary file cannot be created or written.
    pub fn create(path: impl AsRef<Path>, options: WriteOptions) -> Result<Self, FormatError> {
        let mut file = AtomicFile::create(path.as_ref())?;
        let head = format!("{HEADER}\r\n");
        file.write_all(head.as_bytes())?;
        file.write_all(noe_line(0).as_bytes())?;
        Ok(Self {
            file,
            options,
            noe_offset: head.len() as u64,
            last_input: None,
            pending: None,
            summary: WriteSummary::default(),
            text: Vec::new(),
        })
    }

    /// Adds an entry.
    ///
    /// # Errors
    /// [`FormatError::OutOfOrder`] (nothing written; the writer stays usable) or
    /// [`FormatError::Io`].
    pub fn write_entry(&mut self, entry: BookEntry) -> Result<(), FormatError> {
        match &mut self.last_input {
            Some(last) if entry.sfen() < last.as_str() => {
                return Err(FormatError::OutOfOrder {
                    previous: last.clone(),
                    next: entry.sfen().to_owned(),
                });
            }
            Some(last) => {
                last.clear();
                last.push_str(entry.sfen());
            }
            None => self.last_input = Some(entry.sfen().to_owned()),
        }
        let Some(pending) = &mut self.pending else {
            self.pending = Some(entry);
            return Ok(());
        };
        if pending.sfen() == entry.sfen() {
            pending.merge(entry);
            self.summary.duplicates_merged += 1;
        } else if pending.sfen_without_ply() == entry.sfen_without_ply() {
            // Sorted input keeps all plies of a position together ("... 10" sorts
            // before "... 2"), so the smallest ply is found within the group.
            self.summary.ply_duplicates_dropped += 1;
            if entry.ply() < pending.ply() {
                *pending = entry;
            }
        } else if let Some(done) = self.pending.replace(entry) {
            self.emit(done)?;
        }
        Ok(())
    }

    /// Appends `entries` entries holding `moves` move lines in all, already
    /// formatted as this writer would (`sfen <sfen>` and [`format_move_line`]
    /// lines, CRLF), after any entry given to [`OrderedWriter::write_entry`].
    ///
    /// The caller guarantees what `write_entry` checks: the text's entries
    /// follow the previous ones in ascending SFEN order and are distinct
    /// positions (the tera-shock export sorts its entries itself and formats
    /// them in parallel). Do not call `write_entry` afterwards.
    ///
    /// # Errors
    /// [`FormatError::Io`].
    pub fn write_formatted(
        &mut self,
        text: &[u8],
        entries: u64,
        moves: u64,
    ) -> Result<(), FormatError> {
        if let Some(done) = self.pending.take() {
            self.emit(done)?;
        }
        self.file.write_all(text)?;
        self.summary.entries_written += entries;
        self.summary.moves_written += moves;
        Ok(())
    }

    fn emit(&mut self, mut entry: BookEntry) -> Result<(), FormatError> {
        if self.options.move_order == MoveOrder::BestFirst {
            sort_moves_best_first(&mut entry.moves);
        }
        self.text.clear();
        self.text.extend_from_slice(b"sfen ");
        self.text.extend_from_slice(entry.sfen().as_bytes());
        self.text.extend_from_slice(b"\r\n");
        for m in &entry.moves {
            format_move_line(&mut self.text, m);
        }
        self.file.write_all(&self.text)?;
        self.summary.entries_written += 1;
        self.summary.moves_written += entry.moves.len() as u64;
        Ok(())
    }

    /// Entries accepted so far that are already written or pending.
    #[must_use]
    pub fn summary(&self) -> &WriteSummary {
        &self.summary
    }

    pub(crate) fn summary_mut(&mut self) -> &mut WriteSummary {
        &mut self.summary
    }

    /// Writes the last entry, fills in the entry count, syncs and renames the book
    /// into place.
    ///
    /// # Errors
    /// [`FormatError::Io`]; the target path is then left as it was.
    pub fn finish(mut self) -> Result<WriteSummary, FormatError> {
        if let Some(done) = self.pending.take() {
            self.emit(done)?;
        }
        let noe = noe_line(self.summary.entries_written);
        self.file.commit(Some((self.noe_offset, noe.as_bytes())))?;
        Ok(self.summary)
    }
}

pub(crate) fn noe_line(entries: u64) -> String {
    format!("# NOE:{entries:<NOE_WIDTH$}\r\n")
}

/// Appends the move line `<move> <ponder|none> <value> <depth> <count>` and
/// CRLF to `out`, the value clamped to ±32000, exactly as the writers do (for
/// callers that format entries in parallel and hand the text to
/// [`OrderedWriter::write_formatted`]).
///
/// ```
/// use stera_formats::db2016::{BookMove, format_move_line};
/// let mut out = Vec::new();
/// let m = BookMove { value: 40_000, depth: 3, ..BookMove::new("7g7f".parse().unwrap()) };
/// format_move_line(&mut out, &m);
/// assert_eq!(out, b"7g7f none 32000 3 1\r\n");
/// ```
pub fn format_move_line(out: &mut Vec<u8>, m: &BookMove) {
    // The line is written into room made at the end of `out` in one step, then
    // cut to its length: appending field by field cost a library call per
    // field, about 2.4 billion of them in the export of a 15M-position book.
    let start = out.len();
    out.resize(start + MOVE_LINE_MAX, 0);
    let line = &mut out[start..];
    let mut usi = [0u8; 5];
    let mut n = m.mv.usi_bytes(&mut usi);
    line[..5].copy_from_slice(&usi);
    line[n] = b' ';
    n += 1;
    match m.ponder {
        Some(p) => {
            let len = p.usi_bytes(&mut usi);
            line[n..n + 5].copy_from_slice(&usi);
            n += len;
        }
        None => {
            line[n..n + 4].copy_from_slice(b"none");
            n += 4;
        }
    }
    line[n] = b' ';
    let value = clamp_value(i64::from(m.value));
    n = write_decimal(line, n + 1, value < 0, u64::from(value.unsigned_abs()));
    line[n] = b' ';
    n = write_decimal(line, n + 1, m.depth < 0, u64::from(m.depth.unsigned_abs()));
    line[n] = b' ';
    n = write_decimal(line, n + 1, false, m.count);
    line[n..n + 2].copy_from_slice(b"\r\n");
    out.truncate(start + n + 2);
}

/// Longest move line: two moves of 5 bytes (`none` is shorter), a value of 6
/// bytes (-32768), a depth of 11 (an `i32`), a count of 20 (a `u64`), 4
/// separators and CRLF.
const MOVE_LINE_MAX: usize = 5 + 1 + 5 + 1 + 6 + 1 + 11 + 1 + 20 + 2;

/// Writes `magnitude` in decimal at `line[at..]`, after a `-` when
/// `negative`; returns the index after it.
fn write_decimal(line: &mut [u8], mut at: usize, negative: bool, magnitude: u64) -> usize {
    if negative {
        line[at] = b'-';
        at += 1;
    }
    let mut digits = itoa::Buffer::new();
    let digits = digits.format(magnitude).as_bytes();
    line[at..at + digits.len()].copy_from_slice(digits);
    at + digits.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use stera_rules::Move;

    /// The line as `format!` writes it: what the writers wrote before the
    /// line was put together by hand.
    fn reference(m: &BookMove) -> Vec<u8> {
        let ponder = m
            .ponder
            .map_or_else(|| "none".to_owned(), |p| p.to_string());
        format!(
            "{} {ponder} {} {} {}\r\n",
            m.mv,
            clamp_value(i64::from(m.value)),
            m.depth,
            m.count
        )
        .into_bytes()
    }

    #[test]
    fn move_lines_are_the_formatted_fields_at_every_extreme() {
        let moves: Vec<Move> = ["7g7f", "8h2b+", "P*5e", "9i9a", "1a1i+"]
            .iter()
            .map(|s| s.parse().unwrap())
            .collect();
        let values = [
            0, 1, -1, 9, 10, -10, 99, 32000, -32000, 40_000, -40_000, -32768,
        ];
        let depths = [0, 7, 256, 9999, -1, i32::MAX, i32::MIN];
        let counts = [0, 1, 10, 65_535, u64::MAX];
        let mut out = b"sfen x\r\n".to_vec();
        let mut want = out.clone();
        for (i, &mv) in moves.iter().enumerate() {
            for ponder in [None, Some(moves[(i + 1) % moves.len()])] {
                for &value in &values {
                    for &depth in &depths {
                        for &count in &counts {
                            let m = BookMove {
                                mv,
                                ponder,
                                value,
                                depth,
                                count,
                            };
                            format_move_line(&mut out, &m);
                            want.extend_from_slice(&reference(&m));
                        }
                    }
                }
            }
        }
        assert!(out == want, "the lines differ from the formatted fields");
    }
}
