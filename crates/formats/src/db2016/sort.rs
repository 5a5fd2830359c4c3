//! The sorting writer: bounded-memory external merge sort in front of the ordered writer.

use std::cmp::Ordering;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use stera_rules::Move;
use tempfile::TempDir;

use super::error::io_error;
use super::{BookEntry, BookMove, FormatError, OrderedWriter, WriteOptions, WriteSummary};

/// Options of the [`SortingWriter`].
#[derive(Debug, Clone)]
pub struct SortOptions {
    /// Entries are buffered until their estimated memory reaches this many bytes, then
    /// sorted and spilled to a run file. The default (512 MiB) keeps a 15M-entry
    /// export within a few GB of RAM.
    pub run_memory_bytes: usize,
    /// Where run files go; default: a hidden directory next to the output.
    pub spill_dir: Option<PathBuf>,
    /// Options of the final write.
    pub write: WriteOptions,
}

impl Default for SortOptions {
    fn default() -> Self {
        Self {
            run_memory_bytes: 512 << 20,
            spill_dir: None,
            write: WriteOptions::default(),
        }
    }
}

/// The most runs merged at once; more are first merged into bigger runs so the
/// number of open files stays bounded.
const MAX_FAN_IN: usize = 64;

/// Writes a DB2016 book from entries in any order with bounded memory.
///
/// Entries are buffered up to [`SortOptions::run_memory_bytes`], then sorted (stable)
/// and spilled to a run file; [`SortingWriter::finish`] k-way merges the runs into an
/// [`OrderedWriter`]. Duplicates are merged in input order whichever way the data went,
/// so the output bytes depend only on the input sequence, not on the run size.
///
/// ```
/// use stera_formats::db2016::{BookEntry, SortOptions, SortingWriter};
/// use stera_rules::Position;
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("book.db");
/// let mut writer = SortingWriter::create(&path, SortOptions::default()).unwrap();
/// let later = Position::from_position_command("startpos moves 7g7f").unwrap();
/// writer.write_entry(BookEntry::new(&later)).unwrap();
/// writer.write_entry(BookEntry::new(&Position::startpos())).unwrap();
/// assert_eq!(writer.finish().unwrap().entries_written, 2);
/// ```
pub struct SortingWriter {
    output: OrderedWriter,
    run_memory_bytes: usize,
    spill_parent: PathBuf,
    spill: Option<TempDir>,
    runs: Vec<PathBuf>,
    /// Names run files uniquely (merged runs included).
    run_counter: usize,
    buffer: Vec<BookEntry>,
    buffered_bytes: usize,
    /// Entries given to [`SortingWriter::write_entry`] (duplicates merged before the
    /// ordered writer are counted from it).
    entries_in: u64,
}

impl SortingWriter {
    /// Starts a book that [`SortingWriter::finish`] renames to `path`.
    ///
    /// # Errors
    /// [`FormatError::Io`] when the output's temporary file cannot be created.
    pub fn create(path: impl AsRef<Path>, options: SortOptions) -> Result<Self, FormatError> {
        let path = path.as_ref();
        let spill_parent = options
            .spill_dir
            .clone()
            .unwrap_or_else(|| match path.parent() {
                Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
                _ => PathBuf::from("."),
            });
        Ok(Self {
            output: OrderedWriter::create(path, options.write)?,
            run_memory_bytes: options.run_memory_bytes,
            spill_parent,
            spill: None,
            runs: Vec::new(),
            run_counter: 0,
            buffer: Vec::new(),
            buffered_bytes: 0,
            entries_in: 0,
        })
    }

    /// Adds an entry (any order).
    ///
    /// # Errors
    /// [`FormatError::Io`] when a run cannot be spilled.
    pub fn write_entry(&mut self, entry: BookEntry) -> Result<(), FormatError> {
        self.entries_in += 1;
        self.buffered_bytes += entry.approx_memory();
        self.buffer.push(entry);
        if self.buffered_bytes >= self.run_memory_bytes {
            self.spill_run()?;
        }
        Ok(())
    }

    /// Number of runs spilled so far.
    #[must_use]
    pub fn runs_spilled(&self) -> usize {
        self.runs.len()
    }

    fn spill_dir(&mut self) -> Result<PathBuf, FormatError> {
        if let Some(dir) = &self.spill {
            return Ok(dir.path().to_path_buf());
        }
        let _ = crate::leftovers::clean_stale(&self.spill_parent);
        let prefix = format!(".book-sort.{}", crate::leftovers::tag());
        let dir = tempfile::Builder::new()
            .prefix(&prefix)
            .tempdir_in(&self.spill_parent)
            .map_err(io_error(
                "cannot create a sort directory in",
                &self.spill_parent,
            ))?;
        let path = dir.path().to_path_buf();
        self.spill = Some(dir);
        Ok(path)
    }

    fn next_run_path(&mut self) -> Result<PathBuf, FormatError> {
        let dir = self.spill_dir()?;
        self.run_counter += 1;
        Ok(dir.join(format!("run-{:06}", self.run_counter)))
    }

    fn spill_run(&mut self) -> Result<(), FormatError> {
        if self.buffer.is_empty() {
            return Ok(());
        }
        let path = self.next_run_path()?;
        let mut sink = RunWriter::create(&path)?;
        for entry in sorted_merged(std::mem::take(&mut self.buffer)) {
            sink.write(&entry)?;
        }
        sink.finish()?;
        self.buffered_bytes = 0;
        self.runs.push(path);
        Ok(())
    }

    /// Sorts what is left, merges the runs and writes the book into place.
    ///
    /// # Errors
    /// [`FormatError::Io`] or [`FormatError::CorruptRun`]; the target path is then left
    /// as it was and the run files are deleted.
    pub fn finish(mut self) -> Result<WriteSummary, FormatError> {
        if self.runs.is_empty() {
            let sorted = sorted_merged(std::mem::take(&mut self.buffer));
            let distinct = sorted.len() as u64;
            for entry in sorted {
                self.output.write_entry(entry)?;
            }
            self.output.summary_mut().duplicates_merged = self.entries_in - distinct;
            return self.output.finish();
        }
        self.spill_run()?;
        let spilled = self.runs.len() as u64;
        // Merge the earliest runs first so ties keep resolving in input order.
        while self.runs.len() > MAX_FAN_IN {
            let first: Vec<PathBuf> = self.runs.drain(..MAX_FAN_IN).collect();
            let path = self.next_run_path()?;
            let mut sink = RunWriter::create(&path)?;
            merge_runs(&first, |entry| sink.write(&entry))?;
            sink.finish()?;
            for done in &first {
                std::fs::remove_file(done).map_err(io_error("cannot remove sort run", done))?;
            }
            self.runs.insert(0, path);
        }
        let runs = std::mem::take(&mut self.runs);
        let output = &mut self.output;
        let mut distinct = 0u64;
        merge_runs(&runs, |entry| {
            distinct += 1;
            output.write_entry(entry)
        })?;
        let summary = self.output.summary_mut();
        summary.runs_spilled = spilled;
        summary.duplicates_merged = self.entries_in - distinct;
        let summary = self.output.finish();
        drop(self.spill);
        summary
    }
}

/// Stable sort by SFEN, then merges equal SFENs in input order.
fn sorted_merged(mut entries: Vec<BookEntry>) -> Vec<BookEntry> {
    entries.sort_by(|a, b| a.sfen().cmp(b.sfen()));
    let mut out: Vec<BookEntry> = Vec::with_capacity(entries.len());
    for entry in entries {
        match out.last_mut() {
            Some(last) if last.sfen() == entry.sfen() => {
                last.merge(entry);
            }
            _ => out.push(entry),
        }
    }
    out
}

/// One run's current entry in the merge heap; ties go to the earlier run.
struct Head {
    entry: BookEntry,
    run: usize,
}

impl PartialEq for Head {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Head {}
impl PartialOrd for Head {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Head {
    fn cmp(&self, other: &Self) -> Ordering {
        self.entry
            .sfen()
            .cmp(other.entry.sfen())
            .then(self.run.cmp(&other.run))
    }
}

/// K-way merges sorted runs, handing entries to `sink` in ascending SFEN order
/// (entries of equal SFEN from different runs in run order, merged into one).
fn merge_runs(
    runs: &[PathBuf],
    mut sink: impl FnMut(BookEntry) -> Result<(), FormatError>,
) -> Result<(), FormatError> {
    let mut readers = Vec::with_capacity(runs.len());
    let mut heap = BinaryHeap::with_capacity(runs.len());
    for (run, path) in runs.iter().enumerate() {
        let mut reader = RunReader::open(path)?;
        if let Some(entry) = reader.next_entry()? {
            heap.push(Reverse(Head { entry, run }));
        }
        readers.push(reader);
    }
    let mut pending: Option<BookEntry> = None;
    while let Some(Reverse(Head { entry, run })) = heap.pop() {
        if let Some(next) = readers[run].next_entry()? {
            heap.push(Reverse(Head { entry: next, run }));
        }
        match &mut pending {
            Some(p) if p.sfen() == entry.sfen() => {
                p.merge(entry);
            }
            _ => {
                if let Some(done) = pending.replace(entry) {
                    sink(done)?;
                }
            }
        }
    }
    if let Some(done) = pending {
        sink(done)?;
    }
    Ok(())
}

/// Writes a run: the book's own line syntax with LF endings and no header.
struct RunWriter {
    out: BufWriter<File>,
    path: PathBuf,
    text: String,
}

impl RunWriter {
    fn create(path: &Path) -> Result<Self, FormatError> {
        let file = File::create(path).map_err(io_error("cannot create sort run", path))?;
        Ok(Self {
            out: BufWriter::with_capacity(1 << 20, file),
            path: path.to_path_buf(),
            text: String::new(),
        })
    }

    fn write(&mut self, entry: &BookEntry) -> Result<(), FormatError> {
        self.text.clear();
        let _ = writeln!(self.text, "sfen {}", entry.sfen());
        for m in &entry.moves {
            let ponder = m
                .ponder
                .map_or_else(|| "none".to_owned(), |p| p.to_string());
            let _ = writeln!(
                self.text,
                "{} {} {} {} {}",
                m.mv, ponder, m.value, m.depth, m.count
            );
        }
        self.out
            .write_all(self.text.as_bytes())
            .map_err(io_error("cannot write sort run", &self.path))
    }

    fn finish(mut self) -> Result<(), FormatError> {
        self.out
            .flush()
            .map_err(io_error("cannot write sort run", &self.path))
    }
}

/// Reads a run written by [`RunWriter`]; its SFENs are already canonical.
struct RunReader {
    input: BufReader<File>,
    path: PathBuf,
    line_no: u64,
    line: String,
    next_sfen: Option<String>,
}

impl RunReader {
    fn open(path: &Path) -> Result<Self, FormatError> {
        let file = File::open(path).map_err(io_error("cannot open sort run", path))?;
        Ok(Self {
            input: BufReader::with_capacity(1 << 16, file),
            path: path.to_path_buf(),
            line_no: 0,
            line: String::new(),
            next_sfen: None,
        })
    }

    fn corrupt(&self, reason: impl Into<String>) -> FormatError {
        FormatError::CorruptRun {
            path: self.path.clone(),
            line: self.line_no,
            reason: reason.into(),
        }
    }

    fn read_line(&mut self) -> Result<bool, FormatError> {
        self.line.clear();
        let n = self
            .input
            .read_line(&mut self.line)
            .map_err(io_error("cannot read sort run", &self.path))?;
        if n > 0 {
            self.line_no += 1;
        }
        Ok(n > 0)
    }

    fn next_entry(&mut self) -> Result<Option<BookEntry>, FormatError> {
        let sfen = match self.next_sfen.take() {
            Some(s) => s,
            None => {
                if !self.read_line()? {
                    return Ok(None);
                }
                match self.line.trim_end().strip_prefix("sfen ") {
                    Some(s) => s.to_owned(),
                    None => return Err(self.corrupt("expected a `sfen` line")),
                }
            }
        };
        let mut entry = BookEntry::from_canonical_sfen(sfen);
        while self.read_line()? {
            let line = self.line.trim_end();
            if let Some(s) = line.strip_prefix("sfen ") {
                self.next_sfen = Some(s.to_owned());
                break;
            }
            let parsed = parse_run_move(line).ok_or_else(|| self.corrupt("bad move line"))?;
            entry.moves.push(parsed);
        }
        Ok(Some(entry))
    }
}

fn parse_run_move(line: &str) -> Option<BookMove> {
    let mut f = line.split(' ');
    let mv = Move::from_usi(f.next()?).ok()?;
    let ponder = match f.next()? {
        "none" => None,
        p => Some(Move::from_usi(p).ok()?),
    };
    let value = f.next()?.parse().ok()?;
    let depth = f.next()?.parse().ok()?;
    let count = f.next()?.parse().ok()?;
    if f.next().is_some() {
        return None;
    }
    Some(BookMove {
        mv,
        ponder,
        value,
        depth,
        count,
    })
}
