//! The `.ybb` writer: entries in any order, index in memory, moves spooled to a
//! temporary file, the book assembled and renamed into place at the end.

use std::fs::File;
use std::io::{self, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use stera_rules::packed_sfen::{self, PACKED_SFEN_BYTES};
use tempfile::NamedTempFile;

use super::error::io_error;
use super::{FLAG_DEPTH, MAGIC, YbbError};
use crate::db2016::{BookEntry, BookMove, WriteSummary, clamp_value};

/// Options of the writer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct YbbOptions {
    /// Write each move's depth (header flag bit 0; 6 bytes a move instead of 4).
    pub with_depth: bool,
}

impl Default for YbbOptions {
    fn default() -> Self {
        Self { with_depth: true }
    }
}

impl YbbOptions {
    /// Bytes per move.
    pub(crate) fn stride(self) -> u64 {
        if self.with_depth { 6 } else { 4 }
    }
}

/// One record of the index being built: 48 bytes in memory (44 on disk).
#[derive(Clone, Copy)]
struct Record {
    packed: [u8; PACKED_SFEN_BYTES],
    /// Byte offset of the moves in the spool file.
    offset: u64,
    ply: u16,
    count: u16,
}

/// Writes a YaneuraOu `.ybb` binary book from [`BookEntry`] values given in any
/// order.
///
/// Memory: only the index (48 bytes per entry) is held; the moves go to a
/// temporary spool file beside the output as entries arrive. [`YbbWriter::finish`]
/// sorts the index by PackedSfen (memcmp order), writes header, index and moves
/// (in index order) to a second temporary file, syncs it and renames it over the
/// target, so a partial book is never visible under the final name; dropping an
/// unfinished writer deletes both temporary files.
///
/// As the DB2016 writers: entries of one SFEN are merged (a repeated move takes
/// the later value and depth), and of entries that differ only in ply the one with
/// the smallest ply is kept. Moves are written in the order given (engines sort
/// them themselves); ponder moves and counts have no place in the format and are
/// dropped. Values are **clamped** to ±32000 (mate, as the DB2016 writers do),
/// depths to `0..=65535`. Moves are not checked for legality (the reader checks).
///
/// ```
/// use stera_formats::db2016::{BookEntry, BookMove};
/// use stera_formats::ybb::{YbbOptions, YbbReader, YbbWriter};
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("book.ybb");
/// let mut writer = YbbWriter::create(&path, YbbOptions::default()).unwrap();
/// let mut entry = BookEntry::from_sfen("4k4/9/9/9/9/9/9/9/4K4 b G 1").unwrap();
/// entry.push_move(BookMove { value: 99_999, depth: 3, ..BookMove::new("G*5b".parse().unwrap()) });
/// writer.write_entry(&entry).unwrap();
/// assert_eq!(writer.finish().unwrap().entries_written, 1);
/// let back: Vec<BookEntry> = YbbReader::open(&path).unwrap().collect::<Result<_, _>>().unwrap();
/// assert_eq!(back[0].sfen(), entry.sfen());
/// assert_eq!((back[0].moves[0].value, back[0].moves[0].depth), (32000, 3)); // clamped
/// ```
pub struct YbbWriter {
    final_path: PathBuf,
    options: YbbOptions,
    spool: BufWriter<NamedTempFile>,
    spool_len: u64,
    index: Vec<Record>,
    summary: WriteSummary,
}

/// One entry packed and encoded for [`YbbWriter::write_prepared`], so that
/// threads can prepare entries while one writes them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreparedEntry {
    packed: [u8; PACKED_SFEN_BYTES],
    ply: u16,
    count: u16,
    moves: Vec<u8>,
    options: YbbOptions,
}

impl PreparedEntry {
    /// Packs `sfen` (with its ply) and encodes `moves` in the given order, values
    /// clamped to ±32000 and depths to `0..=65535` as [`YbbWriter`] does.
    ///
    /// # Errors
    /// [`YbbError::TooManyMoves`], [`YbbError::Sfen`].
    pub fn new(sfen: &str, moves: &[BookMove], options: YbbOptions) -> Result<Self, YbbError> {
        let count = u16::try_from(moves.len()).map_err(|_| YbbError::TooManyMoves {
            sfen: sfen.to_owned(),
            count: moves.len(),
        })?;
        let (packed, ply) = packed_sfen::pack_sfen(sfen).map_err(YbbError::Sfen)?;
        let mut encoded = Vec::with_capacity(moves.len() * options.stride() as usize);
        for m in moves {
            let value = i16::try_from(clamp_value(i64::from(m.value))).unwrap_or(0);
            let depth = u16::try_from(m.depth.clamp(0, i32::from(u16::MAX))).unwrap_or(0);
            encode_move(&mut encoded, m.mv.to_move16(), value, depth, options);
        }
        Ok(Self {
            packed,
            // The rules core bounds plies by MAX_PLY (10,000).
            ply: u16::try_from(ply).unwrap_or(u16::MAX),
            count,
            moves: encoded,
            options,
        })
    }
}

/// A temporary file beside `final_path` (see [`crate::book_file::temp_beside`]).
fn temp_beside(final_path: &Path, suffix: &str) -> Result<NamedTempFile, YbbError> {
    crate::book_file::temp_beside(final_path, suffix).map_err(io_error(
        "cannot create a temporary file next to",
        final_path,
    ))
}

impl YbbWriter {
    /// Starts a book that [`YbbWriter::finish`] renames to `path`.
    ///
    /// # Errors
    /// [`YbbError::Io`] when the spool file cannot be created.
    pub fn create(path: impl AsRef<Path>, options: YbbOptions) -> Result<Self, YbbError> {
        let final_path = path.as_ref().to_path_buf();
        let spool = temp_beside(&final_path, ".moves.tmp")?;
        Ok(Self {
            final_path,
            options,
            spool: BufWriter::with_capacity(1 << 20, spool),
            spool_len: 0,
            index: Vec::new(),
            summary: WriteSummary::default(),
        })
    }

    /// Adds an entry.
    ///
    /// # Errors
    /// [`YbbError::TooManyMoves`] or [`YbbError::Sfen`] (nothing written; the writer
    /// stays usable), [`YbbError::Io`].
    pub fn write_entry(&mut self, entry: &BookEntry) -> Result<(), YbbError> {
        let prepared = PreparedEntry::new(entry.sfen(), &entry.moves, self.options)?;
        self.write_prepared(&prepared)
    }

    /// Adds an entry prepared by [`PreparedEntry::new`] with this writer's options
    /// (on any thread: packing the position and encoding the moves is most of the
    /// work of [`YbbWriter::write_entry`]).
    ///
    /// # Errors
    /// [`YbbError::OptionsMismatch`] for an entry prepared with other options,
    /// [`YbbError::Io`].
    pub fn write_prepared(&mut self, entry: &PreparedEntry) -> Result<(), YbbError> {
        if entry.options != self.options {
            return Err(YbbError::OptionsMismatch {
                prepared: entry.options.with_depth,
                writer: self.options.with_depth,
            });
        }
        self.spool
            .write_all(&entry.moves)
            .map_err(io_error("cannot write the move spool of", &self.final_path))?;
        self.index.push(Record {
            packed: entry.packed,
            offset: self.spool_len,
            ply: entry.ply,
            count: entry.count,
        });
        self.spool_len += entry.moves.len() as u64;
        Ok(())
    }

    /// Sorts the index, merges duplicates, writes the book and renames it into
    /// place.
    ///
    /// # Errors
    /// [`YbbError::Io`] (the target is then left as it was) or
    /// [`YbbError::TooManyMoves`] for merged entries.
    pub fn finish(mut self) -> Result<WriteSummary, YbbError> {
        let failed = |action| io_error(action, &self.final_path);
        let mut spool = self
            .spool
            .into_inner()
            .map_err(|e| failed("cannot write the move spool of")(e.into_error()))?;
        // Smallest ply first among equal positions, then input order.
        self.index
            .sort_unstable_by_key(|r| (r.packed, r.ply, r.offset));
        let mut index = std::mem::take(&mut self.index);
        dedupe(
            &mut index,
            spool.as_file_mut(),
            &mut self.spool_len,
            self.options,
            &mut self.summary,
        )
        .map_err(|e| match e {
            Dedupe::Io(e) => failed("cannot merge duplicate entries in the move spool of")(e),
            Dedupe::TooMany(r, count) => YbbError::TooManyMoves {
                sfen: packed_sfen::unpack_sfen(&r.packed, u32::from(r.ply)).unwrap_or_default(),
                count,
            },
        })?;
        let out = temp_beside(&self.final_path, ".tmp")?;
        let mut out = BufWriter::with_capacity(1 << 20, out);
        assemble(&index, spool.as_file_mut(), &mut out, self.options)
            .map_err(failed("cannot write the temporary file for"))?;
        self.summary.entries_written = index.len() as u64;
        self.summary.moves_written = index.iter().map(|r| u64::from(r.count)).sum();
        let out = out
            .into_inner()
            .map_err(|e| failed("cannot write the temporary file for")(e.into_error()))?;
        crate::book_file::persist(out, &self.final_path)
            .map_err(|(action, e)| failed(action)(e))?;
        Ok(self.summary)
    }
}

/// Appends one move (Move16, value, then depth when the options say so).
fn encode_move(out: &mut Vec<u8>, raw: u16, value: i16, depth: u16, options: YbbOptions) {
    out.extend_from_slice(&raw.to_le_bytes());
    out.extend_from_slice(&value.to_le_bytes());
    if options.with_depth {
        out.extend_from_slice(&depth.to_le_bytes());
    }
}

fn read_moves(spool: &mut File, r: &Record, stride: u64, buf: &mut Vec<u8>) -> io::Result<()> {
    buf.resize(usize::from(r.count) * stride as usize, 0);
    spool.seek(SeekFrom::Start(r.offset))?;
    spool.read_exact(buf)
}

/// Why merging duplicates failed.
enum Dedupe {
    Io(io::Error),
    /// The merged entry of this record has more moves than a record can count.
    TooMany(Record, usize),
}

impl From<io::Error> for Dedupe {
    fn from(e: io::Error) -> Self {
        Self::Io(e)
    }
}

/// Keeps one record per position (the smallest ply; entries of that ply merged
/// into one, their merged moves appended to the spool).
/// In place (the index is the writer's one large allocation): `sorted` keeps its
/// first records.
fn dedupe(
    sorted: &mut Vec<Record>,
    spool: &mut File,
    spool_len: &mut u64,
    options: YbbOptions,
    summary: &mut WriteSummary,
) -> Result<(), Dedupe> {
    let stride = options.stride();
    // Records before `kept` are final; groups are read at or after it.
    let mut kept = 0;
    let mut group_start = 0;
    let mut buf = Vec::new();
    for i in 0..=sorted.len() {
        if i < sorted.len() && sorted[i].packed == sorted[group_start].packed {
            continue;
        }
        let group = group_start..i;
        group_start = i;
        let Some(&first) = sorted.get(group.start).filter(|_| !group.is_empty()) else {
            continue;
        };
        let same_ply = sorted[group.clone()]
            .iter()
            .take_while(|r| r.ply == first.ply)
            .count();
        summary.ply_duplicates_dropped += (group.len() - same_ply) as u64;
        if same_ply == 1 {
            sorted[kept] = first;
            kept += 1;
            continue;
        }
        summary.duplicates_merged += (same_ply - 1) as u64;
        // The duplicate rule of BookEntry::push_move: a repeated move takes the
        // later value and depth, a new move is appended.
        let mut merged: Vec<(u16, [u8; 6])> = Vec::new();
        for r in &sorted[group.start..group.start + same_ply] {
            read_moves(spool, r, stride, &mut buf)?;
            for chunk in buf.chunks_exact(stride as usize) {
                let raw = u16::from_le_bytes([chunk[0], chunk[1]]);
                let mut bytes = [0u8; 6];
                bytes[..chunk.len()].copy_from_slice(chunk);
                match merged.iter_mut().find(|(m, _)| *m == raw) {
                    Some(slot) => slot.1 = bytes,
                    None => merged.push((raw, bytes)),
                }
            }
        }
        buf.clear();
        for (_, bytes) in &merged {
            buf.extend_from_slice(&bytes[..stride as usize]);
        }
        spool.seek(SeekFrom::Start(*spool_len))?;
        spool.write_all(&buf)?;
        let count =
            u16::try_from(merged.len()).map_err(|_| Dedupe::TooMany(first, merged.len()))?;
        sorted[kept] = Record {
            offset: *spool_len,
            count,
            ..first
        };
        kept += 1;
        *spool_len += buf.len() as u64;
    }
    sorted.truncate(kept);
    Ok(())
}

/// Header, index (offsets from the end of the index, in index order) and moves.
fn assemble(
    index: &[Record],
    spool: &mut File,
    out: &mut impl Write,
    options: YbbOptions,
) -> io::Result<()> {
    let stride = options.stride();
    out.write_all(MAGIC)?;
    out.write_all(&(index.len() as u64).to_le_bytes())?;
    let flags = if options.with_depth { FLAG_DEPTH } else { 0 };
    out.write_all(&flags.to_le_bytes())?;
    let mut offset = 0u64;
    for r in index {
        out.write_all(&r.packed)?;
        out.write_all(&offset.to_le_bytes())?;
        out.write_all(&r.ply.to_le_bytes())?;
        out.write_all(&r.count.to_le_bytes())?;
        offset += u64::from(r.count) * stride;
    }
    let mut buf = Vec::new();
    // Records are in PackedSfen order, the spool in input order: read them where
    // they are, skipping the seek when they follow one another.
    let mut at = None;
    for r in index {
        if at != Some(r.offset) {
            spool.seek(SeekFrom::Start(r.offset))?;
        }
        buf.resize(usize::from(r.count) * stride as usize, 0);
        spool.read_exact(&mut buf)?;
        out.write_all(&buf)?;
        at = Some(r.offset + buf.len() as u64);
    }
    Ok(())
}
