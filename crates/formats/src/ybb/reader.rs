//! The streaming `.ybb` reader.

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use stera_rules::move16::{self, Move16Error};
use stera_rules::packed_sfen::{self, PACKED_SFEN_BYTES};
use stera_rules::{Move, Position};

use super::error::io_error;
use super::{FLAG_DEPTH, HEADER_BYTES, MAGIC, RECORD_BYTES, RecordAt, YbbError};
use crate::db2016::{BookEntry, BookMove, clamp_value};

/// Reads a YaneuraOu `.ybb` binary book record by record, in index order, as
/// [`BookEntry`] values; the file is never held whole.
///
/// Checked: the magic, the flags, that the index and every record's moves lie
/// inside the file, that the index is in ascending PackedSfen order, that every
/// PackedSfen is a legal position (with the record's ply), and that every Move16 is
/// a move legal in its position (the legality check can be turned off with
/// [`YbbReader::with_legality_check`]). A bad record yields its error, naming the
/// file, the record and what is wrong, and reading goes on
/// ([`YbbError::is_entry_error`]); a bad header, a truncated index, an index out
/// of order or a read error end the stream after their error.
///
/// What the format does not hold is filled in as YaneuraOu reads it: no ponder
/// move and a count of 0; without the depth flag, depth 0. Values are clamped to
/// ±32000 like the DB2016 reader's, except -32768, "value unknown" to `makebook`,
/// which stays [`crate::db2016::VALUE_UNKNOWN`]. A move repeated in a record is merged
/// ([`BookEntry::push_move`]).
///
/// ```
/// use stera_formats::db2016::{BookEntry, BookMove};
/// use stera_formats::ybb::{YbbOptions, YbbReader, YbbWriter};
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("book.ybb");
/// let mut writer = YbbWriter::create(&path, YbbOptions::default()).unwrap();
/// let mut entry = BookEntry::from_sfen(stera_rules::STARTPOS_SFEN).unwrap();
/// entry.push_move(BookMove { value: 40, depth: 12, count: 0, ..BookMove::new("7g7f".parse().unwrap()) });
/// writer.write_entry(&entry).unwrap();
/// writer.finish().unwrap();
///
/// // Corrupt the move: 7g7f becomes 7g7e, not legal at the start.
/// let mut bytes = std::fs::read(&path).unwrap();
/// let moves = 32 + 44;
/// bytes[moves] -= 1;
/// std::fs::write(&path, &bytes).unwrap();
/// let reader = YbbReader::open(&path).unwrap();
/// assert_eq!(reader.len(), 1);
/// let err = reader.into_iter().next().unwrap().unwrap_err();
/// assert!(err.is_entry_error());
/// assert!(err.to_string().contains("record #0"), "{err}");
/// assert!(err.to_string().contains("`7g7e`"), "{err}");
/// ```
pub struct YbbReader {
    file: Arc<str>,
    path: PathBuf,
    index: BufReader<File>,
    moves: BufReader<File>,
    /// Where the moves reader stands (absolute file offset).
    moves_at: u64,
    records: u64,
    next: u64,
    with_depth: bool,
    file_len: u64,
    previous: Option<[u8; PACKED_SFEN_BYTES]>,
    check_legality: bool,
    done: bool,
    legal: Vec<Move>,
    buf: Vec<u8>,
}

impl YbbReader {
    /// Opens a book and checks its header and that the whole index is there.
    ///
    /// # Errors
    /// [`YbbError::Io`], [`YbbError::Truncated`], [`YbbError::BadMagic`],
    /// [`YbbError::BadFlags`].
    pub fn open(path: impl AsRef<Path>) -> Result<Self, YbbError> {
        let path = path.as_ref().to_path_buf();
        let file: Arc<str> = Arc::from(path.display().to_string());
        let open = || File::open(&path).map_err(io_error("cannot open book", &path));
        let mut index = BufReader::with_capacity(1 << 16, open()?);
        let file_len = index
            .get_ref()
            .metadata()
            .map_err(io_error("cannot read the size of", &path))?
            .len();
        let truncated = |what: String, start: u64, end: u64| YbbError::Truncated {
            file: file.clone(),
            what,
            start,
            end,
            len: file_len,
        };
        if file_len < HEADER_BYTES {
            return Err(truncated("the header".into(), 0, HEADER_BYTES));
        }
        let mut header = [0u8; HEADER_BYTES as usize];
        index
            .read_exact(&mut header)
            .map_err(io_error("cannot read", &path))?;
        if &header[..16] != MAGIC {
            return Err(YbbError::BadMagic {
                file,
                found: header[..16].escape_ascii().to_string(),
            });
        }
        let records = u64::from_le_bytes(header[16..24].try_into().unwrap_or_default());
        let flags = u64::from_le_bytes(header[24..32].try_into().unwrap_or_default());
        if flags & !FLAG_DEPTH != 0 {
            return Err(YbbError::BadFlags { file, flags });
        }
        let index_end = records
            .checked_mul(RECORD_BYTES)
            .and_then(|n| n.checked_add(HEADER_BYTES));
        match index_end {
            Some(end) if end <= file_len => {}
            _ => {
                return Err(truncated(
                    format!("the index of {records} records"),
                    HEADER_BYTES,
                    index_end.unwrap_or(u64::MAX),
                ));
            }
        }
        let moves = BufReader::with_capacity(1 << 16, open()?);
        Ok(Self {
            file,
            path,
            index,
            moves,
            moves_at: 0,
            records,
            next: 0,
            with_depth: flags & FLAG_DEPTH != 0,
            file_len,
            previous: None,
            check_legality: true,
            done: false,
            legal: Vec::new(),
            buf: Vec::new(),
        })
    }

    /// Whether to check that every move is legal in its position (on by default;
    /// it costs a move generation per record). Without it a Move16 is still
    /// checked to be a move.
    #[must_use]
    pub fn with_legality_check(mut self, check: bool) -> Self {
        self.check_legality = check;
        self
    }

    /// The record count of the header.
    #[must_use]
    pub fn len(&self) -> u64 {
        self.records
    }

    /// True for a book without records.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.records == 0
    }

    /// True when the moves carry a depth (header flag bit 0).
    #[must_use]
    pub fn has_depth(&self) -> bool {
        self.with_depth
    }

    fn stride(&self) -> u64 {
        if self.with_depth { 6 } else { 4 }
    }

    fn index_end(&self) -> u64 {
        HEADER_BYTES + self.records * RECORD_BYTES
    }

    /// Reads the next record; `Err` with `done` set for the fatal errors.
    fn read_record(&mut self) -> Result<BookEntry, YbbError> {
        let at = RecordAt {
            file: self.file.clone(),
            record: self.next,
            offset: HEADER_BYTES + self.next * RECORD_BYTES,
        };
        self.next += 1;
        let mut raw = [0u8; RECORD_BYTES as usize];
        if let Err(e) = self.index.read_exact(&mut raw) {
            self.done = true;
            return Err(io_error("cannot read the index of", &self.path)(e));
        }
        let mut packed = [0u8; PACKED_SFEN_BYTES];
        packed.copy_from_slice(&raw[..32]);
        let offset = u64::from_le_bytes(raw[32..40].try_into().unwrap_or_default());
        let ply = u16::from_le_bytes([raw[40], raw[41]]);
        let count = u16::from_le_bytes([raw[42], raw[43]]);
        if self.previous.is_some_and(|p| packed < p) {
            self.done = true;
            return Err(YbbError::OutOfOrder { at });
        }
        self.previous = Some(packed);
        let moves_len = self.file_len - self.index_end();
        let end = offset.checked_add(u64::from(count) * self.stride());
        if end.is_none_or(|end| end > moves_len) {
            return Err(YbbError::MovesOutOfRange {
                at,
                offset,
                count,
                len: moves_len,
            });
        }
        let bad_position = |source| YbbError::BadPosition {
            at: at.clone(),
            hex: packed.iter().map(|b| format!("{b:02x}")).collect(),
            ply,
            source,
        };
        let sfen = packed_sfen::unpack_sfen(&packed, u32::from(ply)).map_err(bad_position)?;
        self.read_moves(self.index_end() + offset, count)?;
        let position = if self.check_legality {
            // Cannot fail: the SFEN passed the same checks when it was unpacked.
            let position = Position::from_sfen(&sfen)
                .map_err(|e| bad_position(stera_rules::PackedSfenError::Illegal(e)))?;
            position.legal_moves_into(&mut self.legal);
            Some(position)
        } else {
            None
        };
        let mut entry = BookEntry::from_canonical_sfen(sfen);
        let stride = self.stride() as usize;
        for (index, chunk) in self.buf.chunks_exact(stride).enumerate() {
            let raw = u16::from_le_bytes([chunk[0], chunk[1]]);
            let value = i16::from_le_bytes([chunk[2], chunk[3]]);
            let depth = if stride == 6 {
                u16::from_le_bytes([chunk[4], chunk[5]])
            } else {
                0
            };
            let bad = |source| YbbError::BadMove {
                at: at.clone(),
                sfen: entry.sfen().to_owned(),
                index: u16::try_from(index).unwrap_or(u16::MAX),
                source,
            };
            let mv = move16::from_move16(raw).map_err(bad)?;
            if let Some(position) = &position
                && self.legal.binary_search(&mv).is_err()
            {
                return Err(bad(Move16Error::Illegal {
                    raw,
                    usi: mv.to_string(),
                    sfen: position.to_sfen(),
                }));
            }
            entry.push_move(BookMove {
                mv,
                ponder: None,
                value: clamp_value(i64::from(value)),
                depth: i32::from(depth),
                count: 0,
            });
        }
        Ok(entry)
    }

    /// Reads `count` moves at the absolute offset `start` into `self.buf`.
    fn read_moves(&mut self, start: u64, count: u16) -> Result<(), YbbError> {
        let len = usize::from(count) * self.stride() as usize;
        self.buf.resize(len, 0);
        let result = if self.moves_at == start {
            self.moves.read_exact(&mut self.buf)
        } else {
            self.moves
                .seek(SeekFrom::Start(start))
                .and_then(|_| self.moves.read_exact(&mut self.buf))
        };
        if let Err(e) = result {
            self.done = true;
            // The stream position is unknown now.
            self.moves_at = u64::MAX;
            return Err(io_error("cannot read the moves of", &self.path)(e));
        }
        self.moves_at = start + len as u64;
        Ok(())
    }
}

impl Iterator for YbbReader {
    type Item = Result<BookEntry, YbbError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done || self.next >= self.records {
            return None;
        }
        Some(self.read_record())
    }
}
