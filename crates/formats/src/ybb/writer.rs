//! The `.ybb` writer: entries in any order, index in memory, moves spooled to a
//! temporary file, the book assembled and renamed into place at the end.

use std::fs::File;
use std::io::{self, BufWriter, Read, Seek, SeekFrom, Write};

use rayon::prelude::*;
use std::path::{Path, PathBuf};

use stera_rules::packed_sfen::{self, PACKED_SFEN_BYTES};
use stera_rules::{MAX_PLY, PositionRule, RulesError};
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
/// unfinished writer deletes both temporary files. `finish` sorts on every core
/// (rayon's pool) and reads the moves through a memory map of the spool, so the
/// spool's pages count in the process's resident set while it copies (they are
/// the page cache's, not the heap's).
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
    chunks: Chunks,
}

/// How [`YbbWriter::finish`] splits the index into tasks (tests make them small:
/// the bytes must not depend on them).
#[derive(Debug, Clone, Copy)]
pub(super) struct Chunks {
    /// Records a task turns into bytes.
    pub(super) records: usize,
    /// Tasks run (on every core) while the previous window is written.
    pub(super) per_window: usize,
}

impl Default for Chunks {
    /// About 0.7 MB of index and 2.6 MB of moves a task on a typical book.
    fn default() -> Self {
        Self {
            records: 16 * 1024,
            per_window: 8,
        }
    }
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
        let count = move_count(moves, || sfen.to_owned())?;
        let (packed, ply) = packed_sfen::pack_sfen(sfen).map_err(YbbError::Sfen)?;
        Ok(Self::encode(packed, ply, count, moves, options))
    }

    /// [`PreparedEntry::new`] of a position the caller packed (with
    /// [`packed_sfen::pack`] or [`packed_sfen::pack_backend`]), at `ply`.
    ///
    /// # Errors
    /// [`YbbError::TooManyMoves`], [`YbbError::Sfen`] for a ply outside
    /// `1..=`[`MAX_PLY`] (as [`PreparedEntry::new`] refuses it in the text).
    pub fn from_packed(
        packed: [u8; PACKED_SFEN_BYTES],
        ply: u32,
        moves: &[BookMove],
        options: YbbOptions,
    ) -> Result<Self, YbbError> {
        let sfen = || packed_sfen::unpack_sfen(&packed, ply.clamp(1, MAX_PLY)).unwrap_or_default();
        let count = move_count(moves, sfen)?;
        if ply == 0 {
            return Err(YbbError::Sfen(RulesError::Sfen {
                sfen: sfen(),
                reason: "ply `0` is not a positive integer".into(),
            }));
        }
        if ply > MAX_PLY {
            return Err(YbbError::Sfen(RulesError::IllegalPosition {
                sfen: sfen(),
                rule: PositionRule::Ply {
                    ply: u64::from(ply),
                },
            }));
        }
        Ok(Self::encode(packed, ply, count, moves, options))
    }

    fn encode(
        packed: [u8; PACKED_SFEN_BYTES],
        ply: u32,
        count: u16,
        moves: &[BookMove],
        options: YbbOptions,
    ) -> Self {
        let mut encoded = Vec::with_capacity(moves.len() * options.stride() as usize);
        for m in moves {
            let value = i16::try_from(clamp_value(i64::from(m.value))).unwrap_or(0);
            let depth = u16::try_from(m.depth.clamp(0, i32::from(u16::MAX))).unwrap_or(0);
            encode_move(&mut encoded, m.mv.to_move16(), value, depth, options);
        }
        Self {
            packed,
            // The rules core bounds plies by MAX_PLY (10,000).
            ply: u16::try_from(ply).unwrap_or(u16::MAX),
            count,
            moves: encoded,
            options,
        }
    }
}

/// The number of `moves` as a record counts them (`sfen` for the error).
fn move_count(moves: &[BookMove], sfen: impl FnOnce() -> String) -> Result<u16, YbbError> {
    u16::try_from(moves.len()).map_err(|_| YbbError::TooManyMoves {
        sfen: sfen(),
        count: moves.len(),
    })
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
            chunks: Chunks::default(),
        })
    }

    /// This writer with `finish` split into the given tasks.
    #[cfg(test)]
    pub(super) fn with_chunks(self, chunks: Chunks) -> Self {
        Self { chunks, ..self }
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
        // Smallest ply first among equal positions, then input order. Records equal
        // in this order are entries of one position and ply at one offset, so all but
        // one have no moves and merging them in either order gives the same bytes:
        // the file does not depend on how the sort splits its work.
        self.index.par_sort_unstable_by(|a, b| {
            (a.packed, a.ply, a.offset).cmp(&(b.packed, b.ply, b.offset))
        });
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
        let moves = SpoolMap::new(spool.as_file(), self.spool_len)
            .map_err(failed("cannot map the move spool of"))?;
        let mut out = temp_beside(&self.final_path, ".tmp")?;
        assemble(
            &index,
            moves.bytes(),
            out.as_file_mut(),
            self.options,
            self.chunks,
        )
        .map_err(failed("cannot write the temporary file for"))?;
        drop(moves);
        self.summary.entries_written = index.len() as u64;
        self.summary.moves_written = index.iter().map(|r| u64::from(r.count)).sum();
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

/// Header, index (offsets from the end of the index, in index order) and moves
/// (`moves` is the spool).
fn assemble(
    index: &[Record],
    moves: &[u8],
    out: &mut (impl Write + Send),
    options: YbbOptions,
    chunks: Chunks,
) -> io::Result<()> {
    let stride = options.stride();
    let mut header = Vec::with_capacity(MAGIC.len() + 12);
    header.extend_from_slice(MAGIC);
    header.extend_from_slice(&(index.len() as u64).to_le_bytes());
    let flags = if options.with_depth { FLAG_DEPTH } else { 0 };
    header.extend_from_slice(&flags.to_le_bytes());
    out.write_all(&header)?;
    // Where each chunk's moves begin in the moves section, so that chunks of the
    // index can be written without the ones before them.
    let starts: Vec<u64> = index
        .chunks(chunks.records.max(1))
        .scan(0u64, |offset, chunk| {
            let start = *offset;
            *offset += chunk
                .iter()
                .map(|r| u64::from(r.count) * stride)
                .sum::<u64>();
            Some(start)
        })
        .collect();
    write_in_order(out, index, chunks, |chunk_number, chunk, buf| {
        let mut offset = starts.get(chunk_number).copied().unwrap_or(0);
        buf.reserve(chunk.len() * INDEX_RECORD_BYTES);
        for r in chunk {
            buf.extend_from_slice(&r.packed);
            buf.extend_from_slice(&offset.to_le_bytes());
            buf.extend_from_slice(&r.ply.to_le_bytes());
            buf.extend_from_slice(&r.count.to_le_bytes());
            offset += u64::from(r.count) * stride;
        }
        Ok(())
    })?;
    // Records are in PackedSfen order, the spool in input order: each chunk
    // gathers its moves from wherever they are in the map.
    write_in_order(out, index, chunks, |_, chunk, buf| {
        buf.reserve(chunk.iter().map(|r| usize::from(r.count)).sum::<usize>() * stride as usize);
        for r in chunk {
            let start = usize::try_from(r.offset).map_err(|_| spool_too_short())?;
            let end = start + usize::from(r.count) * stride as usize;
            buf.extend_from_slice(moves.get(start..end).ok_or_else(spool_too_short)?);
        }
        Ok(())
    })
}

/// Bytes on disk of an index record.
const INDEX_RECORD_BYTES: usize = PACKED_SFEN_BYTES + 12;

fn spool_too_short() -> io::Error {
    io::Error::new(
        io::ErrorKind::UnexpectedEof,
        "the move spool ends before an entry's moves",
    )
}

/// Writes the bytes `produce` makes of each chunk of `index`, in order (into an
/// empty buffer). Chunks are made by every core a window at a time while a
/// thread of its own writes the window before; the writer hands the buffers back
/// to be filled again (fresh ones cost page faults and the kernel's zeroing of
/// each page, a few percent of the export), so about four windows of bytes are
/// held at most.
fn write_in_order(
    out: &mut (impl Write + Send),
    index: &[Record],
    chunks: Chunks,
    produce: impl Fn(usize, &[Record], &mut Vec<u8>) -> io::Result<()> + Sync,
) -> io::Result<()> {
    std::thread::scope(|scope| {
        let (to_writer, windows) = std::sync::mpsc::sync_channel::<Vec<Vec<u8>>>(1);
        let (to_producer, written_windows) = std::sync::mpsc::channel::<Vec<Vec<u8>>>();
        let writer = scope.spawn(move || -> io::Result<()> {
            for window in windows {
                for bytes in &window {
                    out.write_all(bytes)?;
                }
                // Done producing: the buffers are freed.
                let _ = to_producer.send(window);
            }
            Ok(())
        });
        let mut produced = Ok(());
        let records = chunks.records.max(1);
        let per_window = chunks.per_window.max(1);
        for (w, window) in index.chunks(records * per_window).enumerate() {
            let mut buffers = written_windows.try_recv().unwrap_or_default();
            buffers.resize_with(window.len().div_ceil(records), Vec::new);
            let made = buffers
                .par_iter_mut()
                .zip(window.par_chunks(records))
                .enumerate()
                .try_for_each(|(i, (buf, chunk))| {
                    buf.clear();
                    produce(w * per_window + i, chunk, buf)
                });
            if let Err(e) = made {
                produced = Err(e);
                break;
            }
            // A writer that stopped has its error to tell (below).
            if to_writer.send(buffers).is_err() {
                break;
            }
        }
        drop(to_writer);
        let written = writer
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("the .ybb writing thread panicked")));
        produced.and(written)
    })
}

/// The spool file mapped into memory, read by [`assemble`] in index order.
struct SpoolMap {
    map: Option<memmap2::Mmap>,
    len: usize,
}

impl SpoolMap {
    /// Maps the first `len` bytes of `spool` (nothing for an empty spool, which
    /// cannot be mapped).
    fn new(spool: &File, len: u64) -> io::Result<Self> {
        let len = usize::try_from(len).map_err(io::Error::other)?;
        if len == 0 {
            return Ok(Self { map: None, len });
        }
        let map = map_read_only(spool, len)?;
        if map.len() < len {
            return Err(spool_too_short());
        }
        Ok(Self {
            map: Some(map),
            len,
        })
    }

    fn bytes(&self) -> &[u8] {
        self.map.as_deref().map_or(&[], |m| &m[..self.len])
    }
}

/// Maps `len` bytes of the writer's own spool file read-only.
#[allow(unsafe_code)]
fn map_read_only(spool: &File, len: usize) -> io::Result<memmap2::Mmap> {
    // SAFETY: the map is undefined behaviour if the file changes under it. The
    // spool is a temporary file this writer created (a random name, mode of a
    // temporary file) and no longer writes to; the map lives only while
    // `finish` copies from it. Another process truncating it would be a
    // deliberate act against a temporary file (the cost is a crash by SIGBUS,
    // not a wrong book: the output is renamed into place only after the copy).
    unsafe { memmap2::MmapOptions::new().len(len).map(spool) }
}
