//! The spooling writer: every entry formatted once, sorted by an in-memory index.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::entry::{clamp_value, split_ply};
use super::error::io_error;
use super::writer::{AtomicFile, noe_line};
use super::{BookMove, FormatError, HEADER, WriteSummary};

/// Where one spooled entry lives: its SFEN in the writer's SFEN arena and its
/// formatted move lines in the spool file.
#[derive(Debug, Clone, Copy)]
struct Spooled {
    sfen_start: u64,
    sfen_len: u32,
    block_len: u32,
    block_offset: u64,
}

/// Writes a DB2016 book from entries of distinct positions given in any order,
/// formatting each entry's move lines exactly once.
///
/// [`SortingWriter`](super::SortingWriter) keeps entries as values and sorts
/// them in bounded memory by writing and re-reading text runs; for an export
/// of millions of entries with tens of moves each that formatting and parsing
/// is most of the work. This writer instead appends each entry's move lines,
/// final bytes and all, to a spool file next to the output, keeps only the
/// SFEN and the block's place in memory (about 100 bytes per entry), sorts that
/// index at the end and copies the blocks into the book in SFEN order. The
/// spool is as big as the book; reading it back mostly hits the page cache.
///
/// Moves are written in the order given (the caller has ordered them). Entries
/// are expected to be distinct positions; of entries of the same position the
/// one with the smallest ply is kept (then the first given), like
/// [`OrderedWriter`](super::OrderedWriter), and the others are counted in
/// [`WriteSummary::ply_duplicates_dropped`]. The output is byte for byte what
/// the [`OrderedWriter`](super::OrderedWriter) writes for the same entries with
/// [`MoveOrder::AsGiven`](super::MoveOrder::AsGiven).
///
/// ```
/// use stera_formats::db2016::{BookMove, SpoolingWriter};
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("book.db");
/// let mut writer = SpoolingWriter::create(&path, None).unwrap();
/// let m = BookMove { value: 30, ..BookMove::new("7g7f".parse().unwrap()) };
/// writer.write_entry("lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b - 1", &[m]).unwrap();
/// let summary = writer.finish(&mut |_, _| {}).unwrap();
/// assert_eq!(summary.entries_written, 1);
/// let text = std::fs::read_to_string(&path).unwrap();
/// assert!(text.ends_with(" b - 1\r\n7g7f none 30 0 1\r\n"));
/// ```
pub struct SpoolingWriter {
    final_path: PathBuf,
    spool: BufWriter<File>,
    spool_path: PathBuf,
    /// Removes the spool file however the writer ends.
    _spool_guard: tempfile::TempPath,
    spool_len: u64,
    sfens: Vec<u8>,
    index: Vec<Spooled>,
    text: Vec<u8>,
    moves_in: u64,
}

impl SpoolingWriter {
    /// Starts a book that [`SpoolingWriter::finish`] renames to `path`; the spool
    /// file goes to `spool_dir` (default: the output's directory).
    ///
    /// # Errors
    /// [`FormatError::Io`] when the spool file cannot be created.
    pub fn create(path: impl AsRef<Path>, spool_dir: Option<&Path>) -> Result<Self, FormatError> {
        let final_path = path.as_ref().to_path_buf();
        let dir = match spool_dir {
            Some(d) => d.to_path_buf(),
            None => match final_path.parent() {
                Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
                _ => PathBuf::from("."),
            },
        };
        let temp = tempfile::Builder::new()
            .prefix(".book-spool.")
            .tempfile_in(&dir)
            .map_err(io_error("cannot create a spool file in", &dir))?;
        let (file, spool_guard) = temp.into_parts();
        let spool_path = spool_guard.to_path_buf();
        Ok(Self {
            final_path,
            spool: BufWriter::with_capacity(1 << 20, file),
            spool_path,
            _spool_guard: spool_guard,
            spool_len: 0,
            sfens: Vec::new(),
            index: Vec::new(),
            text: Vec::with_capacity(1 << 14),
            moves_in: 0,
        })
    }

    /// Adds the entry of `sfen` (canonical, with ply, without `sfen `: what
    /// `Position::to_sfen` gives) with `moves` in the order given.
    ///
    /// # Errors
    /// [`FormatError::Io`] when the spool cannot be written;
    /// [`FormatError::EntryTooLarge`] for an entry over 4 GiB of text.
    pub fn write_entry(&mut self, sfen: &str, moves: &[BookMove]) -> Result<(), FormatError> {
        self.text.clear();
        for m in moves {
            format_move_line(&mut self.text, m);
        }
        let block_len = u32::try_from(self.text.len())
            .map_err(|_| FormatError::EntryTooLarge(sfen.to_owned()))?;
        let sfen_len =
            u32::try_from(sfen.len()).map_err(|_| FormatError::EntryTooLarge(sfen.to_owned()))?;
        self.spool
            .write_all(&self.text)
            .map_err(io_error("cannot write the spool file", &self.spool_path))?;
        self.index.push(Spooled {
            sfen_start: self.sfens.len() as u64,
            sfen_len,
            block_len,
            block_offset: self.spool_len,
        });
        self.sfens.extend_from_slice(sfen.as_bytes());
        self.spool_len += u64::from(block_len);
        self.moves_in += moves.len() as u64;
        Ok(())
    }

    /// Entries given so far.
    #[must_use]
    pub fn entries(&self) -> usize {
        self.index.len()
    }

    /// Sorts the index, copies the blocks into the book in SFEN order and renames
    /// it into place; `progress(done, total)` is called every 65,536 entries.
    ///
    /// # Errors
    /// [`FormatError::Io`]; the target path is then left as it was and the spool
    /// file is deleted.
    pub fn finish(
        mut self,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<WriteSummary, FormatError> {
        self.spool
            .flush()
            .map_err(io_error("cannot write the spool file", &self.spool_path))?;
        let sfens = std::mem::take(&mut self.sfens);
        let sfen_of = |s: &Spooled| {
            let start = usize::try_from(s.sfen_start).unwrap_or(usize::MAX);
            let end = start.saturating_add(s.sfen_len as usize);
            sfens.get(start..end).unwrap_or_default()
        };
        // Stable: of equal SFENs the first given comes first.
        self.index.sort_by(|a, b| sfen_of(a).cmp(sfen_of(b)));

        // Of each group of plies of one position keep the smallest ply ("10"
        // sorts before "2", so compare the numbers), then the first given.
        let mut keep: Vec<Spooled> = Vec::with_capacity(self.index.len());
        let mut dropped: Vec<Spooled> = Vec::new();
        for s in std::mem::take(&mut self.index) {
            match keep.last_mut() {
                Some(k) if position_part(sfen_of(k)) == position_part(sfen_of(&s)) => {
                    if ply_of(sfen_of(&s)) < ply_of(sfen_of(k)) {
                        dropped.push(std::mem::replace(k, s));
                    } else {
                        dropped.push(s);
                    }
                }
                _ => keep.push(s),
            }
        }
        let spool = self.spool.into_inner().map_err(|e| {
            io_error("cannot write the spool file", &self.spool_path)(e.into_error())
        })?;

        let mut out = AtomicFile::create(&self.final_path)?;
        out.write_all(HEADER.as_bytes())?;
        out.write_all(b"\r\n")?;
        out.write_all(noe_line(keep.len() as u64).as_bytes())?;
        let total = keep.len() as u64;
        let mut block = Vec::with_capacity(1 << 14);
        for (i, s) in keep.iter().enumerate() {
            block.resize(s.block_len as usize, 0);
            spool
                .read_exact_at(&mut block, s.block_offset)
                .map_err(io_error("cannot read the spool file", &self.spool_path))?;
            out.write_all(b"sfen ")?;
            out.write_all(sfen_of(s))?;
            out.write_all(b"\r\n")?;
            out.write_all(&block)?;
            if (i + 1) % (1 << 16) == 0 {
                progress(i as u64 + 1, total);
            }
        }
        progress(total, total);
        let mut moves_dropped = 0;
        for s in &dropped {
            moves_dropped += count_lines(&spool, &self.spool_path, s)?;
        }
        out.commit(None)?;
        Ok(WriteSummary {
            entries_written: total,
            moves_written: self.moves_in - moves_dropped,
            duplicates_merged: 0,
            ply_duplicates_dropped: dropped.len() as u64,
            runs_spilled: 0,
        })
    }
}

/// The ply of a SFEN (0 when it has none).
fn ply_of(sfen: &[u8]) -> u32 {
    std::str::from_utf8(sfen).map_or(0, |s| split_ply(s).1)
}

/// The SFEN without its ply (the position).
fn position_part(sfen: &[u8]) -> &[u8] {
    match sfen.iter().rposition(|&b| b == b' ') {
        Some(i) => &sfen[..i],
        None => sfen,
    }
}

/// Move lines in a dropped entry's block (for the summary's move count).
fn count_lines(file: &File, path: &Path, s: &Spooled) -> Result<u64, FormatError> {
    let mut block = vec![0; s.block_len as usize];
    file.read_exact_at(&mut block, s.block_offset)
        .map_err(io_error("cannot read the spool file", path))?;
    Ok(block.iter().filter(|&&b| b == b'\n').count() as u64)
}

/// Appends `<move> <ponder|none> <value> <depth> <count>\r\n`, the value
/// clamped to ±32000 like every writer does.
pub(crate) fn format_move_line(out: &mut Vec<u8>, m: &BookMove) {
    let mut usi = [0u8; 5];
    out.extend_from_slice(m.mv.write_usi(&mut usi).as_bytes());
    out.push(b' ');
    match m.ponder {
        Some(p) => out.extend_from_slice(p.write_usi(&mut usi).as_bytes()),
        None => out.extend_from_slice(b"none"),
    }
    let mut num = itoa::Buffer::new();
    out.push(b' ');
    out.extend_from_slice(num.format(clamp_value(i64::from(m.value))).as_bytes());
    out.push(b' ');
    out.extend_from_slice(num.format(m.depth).as_bytes());
    out.push(b' ');
    out.extend_from_slice(num.format(m.count).as_bytes());
    out.extend_from_slice(b"\r\n");
}
