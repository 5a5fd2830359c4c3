//! The ledger of the book files a store's coordinator wrote: for each export
//! path (resolved), the length and content hash of the last file written there.
//!
//! A coordinator replaces its `--export` file at every export; started on the
//! wrong store (a typo in `--db`), it would replace a good book with an empty
//! one. With the ledger it replaces only a file this store wrote and nobody
//! changed since: anything else at that path is refused at start.
//!
//! Kept in `meta` under [`EXPORT_PREFIX`] + the path's bytes -> sequence number
//! (u64 LE), length (u64 LE), hash (u64 LE); at most [`KEPT_EXPORTS`] paths, the
//! oldest dropped first (remote exports may name many paths).

use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use crate::BookError;

use super::store_error;

/// Prefix of the ledger's keys in `meta`.
pub(crate) const EXPORT_PREFIX: &[u8] = b"export ";

/// How many export paths the ledger remembers.
pub const KEPT_EXPORTS: usize = 64;

/// What identifies a written book file: its length and a hash of its bytes
/// (not cryptographic: it tells "the file we wrote" from "another file", not
/// from a forgery made to collide).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileFingerprint {
    pub len: u64,
    pub hash: u64,
}

impl FileFingerprint {
    /// Reads the whole file at `path` (a few seconds per GB at worst; a just
    /// written export is in the page cache).
    ///
    /// # Errors
    /// The file cannot be read.
    pub fn of_file(path: &Path) -> std::io::Result<Self> {
        let mut file = std::fs::File::open(path)?;
        let mut hash = Hasher::default();
        let mut buf = vec![0u8; 1 << 20];
        let mut len = 0u64;
        loop {
            let n = match file.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            hash.write(&buf[..n]);
            len += n as u64;
        }
        Ok(Self {
            len,
            hash: hash.finish(),
        })
    }
}

/// FNV-1a over 8-byte words (the tail byte by byte), with a final mix: fast
/// enough to read back a multi-gigabyte export.
#[derive(Default)]
struct Hasher {
    state: u64,
    /// Bytes of an unfinished word carried over to the next `write`.
    pending: Vec<u8>,
    started: bool,
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0100_0000_01b3;

impl Hasher {
    fn write(&mut self, mut bytes: &[u8]) {
        if !self.started {
            self.state = FNV_OFFSET;
            self.started = true;
        }
        if !self.pending.is_empty() {
            let take = (8 - self.pending.len()).min(bytes.len());
            self.pending.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
            if self.pending.len() < 8 {
                return;
            }
            let word = std::mem::take(&mut self.pending);
            self.word(&word);
        }
        let mut words = bytes.chunks_exact(8);
        for w in &mut words {
            self.word(w);
        }
        self.pending.extend_from_slice(words.remainder());
    }

    fn word(&mut self, w: &[u8]) {
        let mut b = [0u8; 8];
        b.copy_from_slice(w);
        self.state = (self.state ^ u64::from_le_bytes(b)).wrapping_mul(FNV_PRIME);
        self.state ^= self.state >> 29;
    }

    fn finish(mut self) -> u64 {
        if !self.started {
            self.state = FNV_OFFSET;
        }
        for &b in &std::mem::take(&mut self.pending) {
            self.state = (self.state ^ u64::from(b)).wrapping_mul(FNV_PRIME);
        }
        self.state ^= self.state >> 33;
        self.state.wrapping_mul(0xff51_afd7_ed55_8ccd)
    }
}

/// The ledger of a store, usable from the thread that writes exports (a handle
/// on the store's `meta` table, which sled lets any thread write).
#[derive(Clone)]
pub struct ExportLedger {
    meta: sled::Tree,
    store: std::path::PathBuf,
}

impl std::fmt::Debug for ExportLedger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ExportLedger({})", self.store.display())
    }
}

fn key_of(file: &Path) -> Vec<u8> {
    let mut key = EXPORT_PREFIX.to_vec();
    key.extend_from_slice(file.as_os_str().as_bytes());
    key
}

fn decode(value: &[u8]) -> Option<(u64, FileFingerprint)> {
    let at = |i: usize| value.get(i..i + 8)?.try_into().ok().map(u64::from_le_bytes);
    (value.len() == 24).then_some(())?;
    Some((
        at(0)?,
        FileFingerprint {
            len: at(8)?,
            hash: at(16)?,
        },
    ))
}

impl ExportLedger {
    pub(super) fn new(meta: sled::Tree, store: &Path) -> Self {
        Self {
            meta,
            store: store.to_owned(),
        }
    }

    fn err(&self, e: sled::Error) -> BookError {
        store_error(&self.store, e)
    }

    /// What this store last wrote at `file` (a resolved path), if anything.
    ///
    /// # Errors
    /// Reading the store fails.
    pub fn wrote(&self, file: &Path) -> Result<Option<FileFingerprint>, BookError> {
        let value = self.meta.get(key_of(file)).map_err(|e| self.err(e))?;
        Ok(value.and_then(|v| decode(&v)).map(|(_, f)| f))
    }

    /// Records that this store wrote `fingerprint` at `file` (a resolved path),
    /// durably, forgetting the oldest path beyond [`KEPT_EXPORTS`].
    ///
    /// # Errors
    /// Writing the store fails.
    pub fn record(&self, file: &Path, fingerprint: FileFingerprint) -> Result<(), BookError> {
        let mut entries = Vec::new();
        for item in self.meta.scan_prefix(EXPORT_PREFIX) {
            let (k, v) = item.map_err(|e| self.err(e))?;
            if let Some((seq, _)) = decode(&v) {
                entries.push((seq, k));
            }
        }
        let seq = entries.iter().map(|(s, _)| *s).max().map_or(0, |s| s + 1);
        let key = key_of(file);
        let mut value = Vec::with_capacity(24);
        value.extend_from_slice(&seq.to_le_bytes());
        value.extend_from_slice(&fingerprint.len.to_le_bytes());
        value.extend_from_slice(&fingerprint.hash.to_le_bytes());
        let mut batch = sled::Batch::default();
        batch.insert(key.as_slice(), value);
        entries.retain(|(_, k)| k.as_ref() != key.as_slice());
        entries.sort_unstable_by_key(|(s, _)| *s);
        let excess = (entries.len() + 1).saturating_sub(KEPT_EXPORTS);
        for (_, old) in entries.into_iter().take(excess) {
            batch.remove(old);
        }
        self.meta.apply_batch(batch).map_err(|e| self.err(e))?;
        self.meta.flush().map_err(|e| self.err(e))?;
        Ok(())
    }
}

impl super::SledStore {
    /// The ledger of the book files this store's coordinator wrote (see
    /// [`ExportLedger`]).
    #[must_use]
    pub fn export_ledger(&self) -> ExportLedger {
        ExportLedger::new(self.meta.clone(), &self.path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hash_in_pieces(bytes: &[u8], piece: usize) -> u64 {
        let mut h = Hasher::default();
        for p in bytes.chunks(piece) {
            h.write(p);
        }
        h.finish()
    }

    #[test]
    fn the_hash_does_not_depend_on_how_the_file_is_read() {
        let bytes: Vec<u8> = (0..1000u32).map(|i| (i * 7 % 251) as u8).collect();
        let whole = hash_in_pieces(&bytes, bytes.len());
        for piece in [1, 3, 7, 8, 9, 100] {
            assert_eq!(hash_in_pieces(&bytes, piece), whole, "pieces of {piece}");
        }
        let mut changed = bytes.clone();
        changed[500] ^= 1;
        assert_ne!(hash_in_pieces(&changed, 64), whole);
        assert_ne!(hash_in_pieces(&bytes[..999], 64), whole);
        assert_ne!(hash_in_pieces(&[], 8), hash_in_pieces(&[0], 8));
    }

    #[test]
    fn the_ledger_keeps_the_newest_paths() {
        let dir = tempfile::tempdir().unwrap();
        let db = sled::Config::new().path(dir.path()).open().unwrap();
        let ledger = ExportLedger::new(db.open_tree("meta").unwrap(), dir.path());
        let print = |n: u64| FileFingerprint { len: n, hash: n };
        for i in 0..(KEPT_EXPORTS as u64 + 5) {
            ledger
                .record(Path::new(&format!("/books/{i}.db2016")), print(i))
                .unwrap();
        }
        // Rewriting a path keeps one entry for it, with the new print.
        ledger
            .record(Path::new("/books/10.db2016"), print(99))
            .unwrap();
        assert_eq!(ledger.wrote(Path::new("/books/0.db2016")).unwrap(), None);
        assert_eq!(
            ledger.wrote(Path::new("/books/10.db2016")).unwrap(),
            Some(print(99))
        );
        let last = KEPT_EXPORTS as u64 + 4;
        assert_eq!(
            ledger
                .wrote(Path::new(&format!("/books/{last}.db2016")))
                .unwrap(),
            Some(print(last))
        );
        let kept = db
            .open_tree("meta")
            .unwrap()
            .scan_prefix(EXPORT_PREFIX)
            .count();
        assert_eq!(kept, KEPT_EXPORTS);
    }
}
