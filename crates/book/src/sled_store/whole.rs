//! The record of what a store must hold: the file `STERA-WHOLE` beside sled's
//! files.
//!
//! sled recovers a `db` file that was cut short (a disk or a copy that failed
//! half-way) to an earlier state of the log when it can, and that state reads as
//! a smaller, consistent book: a record kept *inside* sled would be cut back
//! with it. So the store keeps, outside sled, what it holds at least: positions,
//! kifu batches, evaluators, the run configuration and recorded games
//! ([`Holdings`]), rewritten after every write that sled has flushed, before
//! the write returns (and so before the coordinator acknowledges it). At open,
//! sled's contents must cover the record; a store that holds less is
//! [`BookError::Damaged`]. The record is written after sled's flush, so a crash
//! between the two leaves the store ahead of its record (which the next write or
//! open catches up), never behind: a crash or SIGKILL is never reported as
//! damage.
//!
//! The record's rewrite goes to the page cache and is not synced each time
//! (it is made durable when it is created and at every explicit
//! [`NodeStore::flush`](crate::NodeStore::flush), such as the coordinator's at
//! shutdown): a sync per batch cost a device cache flush, 1 to 4 ms, where
//! sled's own flush (`sync_file_range`) costs 0.2 to 0.3 ms. So a
//! power cut can leave the record older than the store: a weaker check of that
//! moment, never a false alarm, since the record only ever says what sled had
//! already flushed. A store that after a power cut holds less than its record
//! lost writes that sled had reported durable, and is damaged indeed.
//!
//! The file holds two slots of [`SLOT`] bytes, each with a sequence number and a
//! checksum; a write goes to the older slot, so a torn write leaves the other
//! one, and the reader takes the valid slot with the higher sequence number.
//!
//! Stores made before the record existed have neither the file nor the `meta`
//! key [`RECORD_KEPT`]: their first open writes both and says so
//! ([`SledStore::record_begun`](super::SledStore::record_begun)). A store whose
//! `meta` says it keeps a record and whose file is gone is damaged (a copy that
//! left it out).

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

use super::keys::{GAMES_RECORDED, chunk_first_id};
use super::{learning, store_error};
use crate::BookError;

/// The record's file name in the store's directory.
pub const RECORD_FILE: &str = "STERA-WHOLE";

/// Key in `meta`: present when the store keeps [`RECORD_FILE`].
pub(super) const RECORD_KEPT: &[u8] = b"whole record";

const MAGIC: &[u8; 8] = b"STERAWH1";
/// Bytes per slot (one disk sector, so a slot is written whole or not at all on
/// most devices; the checksum catches the others).
const SLOT: usize = 512;
/// Bytes of a slot that are used.
const USED: usize = 56;

/// What a store holds at least, as counts that only grow.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Holdings {
    /// Thought positions (node ids `0..nodes`).
    pub nodes: u32,
    /// Batches of kifu keys added.
    pub kifu_batches: u32,
    /// Evaluator identities interned.
    pub evaluators: u32,
    /// Whether a run configuration (roots) is saved.
    pub config: bool,
    /// Games recorded (`games` tree).
    pub games: u64,
    /// Learning games recorded (`learning` tree, every opponent's).
    pub learning_games: u64,
}

impl Holdings {
    /// What `self` (the record) holds that `found` (the store's contents) lacks,
    /// in words; `None` when `found` covers it.
    #[must_use]
    pub fn missing_from(&self, found: &Holdings) -> Option<String> {
        let mut missing = Vec::new();
        let mut count = |what: &str, want: u64, have: u64| {
            if have < want {
                missing.push(format!("{what}: {have} of {want}"));
            }
        };
        count("positions", self.nodes.into(), found.nodes.into());
        count(
            "kifu batches",
            self.kifu_batches.into(),
            found.kifu_batches.into(),
        );
        count(
            "evaluators",
            self.evaluators.into(),
            found.evaluators.into(),
        );
        count("recorded games", self.games, found.games);
        count("learning games", self.learning_games, found.learning_games);
        if self.config && !found.config {
            missing.push("the run configuration (roots)".to_owned());
        }
        (!missing.is_empty()).then(|| missing.join(", "))
    }

    fn encode(&self, seq: u64) -> [u8; USED] {
        let mut b = [0u8; USED];
        b[..8].copy_from_slice(MAGIC);
        b[8..16].copy_from_slice(&seq.to_le_bytes());
        b[16..20].copy_from_slice(&self.nodes.to_le_bytes());
        b[20..24].copy_from_slice(&self.kifu_batches.to_le_bytes());
        b[24..28].copy_from_slice(&self.evaluators.to_le_bytes());
        b[28..32].copy_from_slice(&u32::from(self.config).to_le_bytes());
        b[32..40].copy_from_slice(&self.games.to_le_bytes());
        b[40..48].copy_from_slice(&self.learning_games.to_le_bytes());
        let sum = fnv1a(&b[..48]);
        b[48..56].copy_from_slice(&sum.to_le_bytes());
        b
    }

    /// A slot's sequence number and holdings, `None` when it is not a valid slot.
    fn decode(b: &[u8]) -> Option<(u64, Holdings)> {
        let b = b.get(..USED)?;
        let u32_at = |i: usize| b.get(i..i + 4)?.try_into().ok().map(u32::from_le_bytes);
        let u64_at = |i: usize| b.get(i..i + 8)?.try_into().ok().map(u64::from_le_bytes);
        if &b[..8] != MAGIC {
            return None;
        }
        // The first layout (before learning games were counted) ended its
        // checksum at byte 40; its stores read as having learned nothing.
        let learning_games = if u64_at(48)? == fnv1a(&b[..48]) {
            u64_at(40)?
        } else if u64_at(40)? == fnv1a(&b[..40]) {
            0
        } else {
            return None;
        };
        let config = match u32_at(28)? {
            0 => false,
            1 => true,
            _ => return None,
        };
        Some((
            u64_at(8)?,
            Holdings {
                nodes: u32_at(16)?,
                kifu_batches: u32_at(20)?,
                evaluators: u32_at(24)?,
                config,
                games: u64_at(32)?,
                learning_games,
            },
        ))
    }
}

/// 64-bit FNV-1a: enough to tell a torn or overwritten slot from a written one.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The record of an open store: its file, kept open, and what it says.
pub(super) struct WholeRecord {
    file: File,
    seq: u64,
    recorded: Holdings,
}

fn damaged(dir: &Path, detail: String) -> BookError {
    BookError::Damaged {
        path: dir.display().to_string(),
        detail,
    }
}

fn io_error(dir: &Path, e: std::io::Error) -> BookError {
    BookError::Store {
        path: dir.join(RECORD_FILE).display().to_string(),
        source: sled::Error::Io(e),
    }
}

impl WholeRecord {
    /// Makes the record's last write durable.
    pub(super) fn sync(&self) -> std::io::Result<()> {
        self.file.sync_data()
    }

    /// Reads the record of the store in `dir`: `None` when it has none.
    ///
    /// # Errors
    /// [`BookError::Damaged`] when the file is there but holds no valid slot;
    /// an I/O error reading it.
    pub(super) fn read(dir: &Path) -> Result<Option<(u64, Holdings)>, BookError> {
        let mut file = match File::open(dir.join(RECORD_FILE)) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io_error(dir, e)),
        };
        let mut bytes = Vec::new();
        (&mut file)
            .take(2 * SLOT as u64 + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| io_error(dir, e))?;
        if bytes.len() != 2 * SLOT {
            return Err(damaged(
                dir,
                format!(
                    "its record `{RECORD_FILE}` of what the store holds is {} bytes, not {}: it was cut short or overwritten",
                    bytes.len(),
                    2 * SLOT
                ),
            ));
        }
        let best = [&bytes[..SLOT], &bytes[SLOT..]]
            .into_iter()
            .filter_map(Holdings::decode)
            .max_by_key(|&(seq, _)| seq);
        match best {
            Some(found) => Ok(Some(found)),
            None => Err(damaged(
                dir,
                format!(
                    "its record `{RECORD_FILE}` of what the store holds is unreadable (overwritten)"
                ),
            )),
        }
    }

    /// Opens the existing record (read by [`WholeRecord::read`]) for writing.
    pub(super) fn open(dir: &Path, seq: u64, recorded: Holdings) -> Result<Self, BookError> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(dir.join(RECORD_FILE))
            .map_err(|e| io_error(dir, e))?;
        Ok(Self {
            file,
            seq,
            recorded,
        })
    }

    /// Writes a new record holding `holdings` in `dir` (under a temporary name,
    /// synced, renamed, the directory synced).
    pub(super) fn create(dir: &Path, holdings: Holdings) -> Result<Self, BookError> {
        let temporary = dir.join(format!("{RECORD_FILE}.new"));
        let mut bytes = vec![0u8; 2 * SLOT];
        bytes[..USED].copy_from_slice(&holdings.encode(0));
        bytes[SLOT..SLOT + USED].copy_from_slice(&holdings.encode(1));
        let io = |e| io_error(dir, e);
        {
            let mut file = File::create(&temporary).map_err(io)?;
            file.write_all(&bytes).map_err(io)?;
            file.sync_all().map_err(io)?;
        }
        std::fs::rename(&temporary, dir.join(RECORD_FILE)).map_err(io)?;
        File::open(dir).and_then(|d| d.sync_all()).map_err(io)?;
        Self::open(dir, 1, holdings)
    }

    /// Records `holdings` (what sled holds after a flush) in the older slot
    /// (not synced: see the module documentation); nothing when the record says
    /// so already.
    pub(super) fn write(&mut self, holdings: Holdings) -> std::io::Result<()> {
        if holdings == self.recorded {
            return Ok(());
        }
        let seq = self.seq + 1;
        let offset = if seq.is_multiple_of(2) {
            0
        } else {
            SLOT as u64
        };
        self.file.seek(SeekFrom::Start(offset))?;
        self.file.write_all(&holdings.encode(seq))?;
        self.seq = seq;
        self.recorded = holdings;
        Ok(())
    }
}

/// The store's side of the record: checked (and begun, or caught up) at open.
impl super::SledStore {
    /// [`check_record`](super::SledStore::check_record) for a store opened for
    /// reading: the record (of the store, not of the copy) is compared, never
    /// begun or written.
    pub(super) fn check_record_read_only(&mut self) -> Result<(), BookError> {
        match WholeRecord::read(&self.path)? {
            Some((_, recorded)) => self.refuse_less_than(&recorded),
            None => {
                self.refuse_lost_record()?;
                self.unrecorded = true;
                Ok(())
            }
        }
    }

    /// [`BookError::Damaged`] when the store holds less than `recorded`.
    fn refuse_less_than(&self, recorded: &Holdings) -> Result<(), BookError> {
        match recorded.missing_from(&self.holdings) {
            Some(missing) => Err(BookError::Damaged {
                path: self.path.display().to_string(),
                detail: format!(
                    "it holds less than its record `{RECORD_FILE}` says was stored ({missing}): its files were cut short or restored incompletely; nothing was opened as a smaller book"
                ),
            }),
            None => Ok(()),
        }
    }

    /// [`BookError::Damaged`] when `meta` says the store keeps a record (which
    /// is gone).
    fn refuse_lost_record(&self) -> Result<(), BookError> {
        if self
            .meta
            .contains_key(RECORD_KEPT)
            .map_err(|e| self.err(e))?
        {
            return Err(BookError::Damaged {
                path: self.path.display().to_string(),
                detail: format!(
                    "its record `{RECORD_FILE}` of what the store must hold is missing (a copy that left it out?), so it cannot be told whole"
                ),
            });
        }
        Ok(())
    }

    /// Compares the store with its record of what it must hold (see
    /// the module documentation): a store holding less was cut short and is
    /// [`BookError::Damaged`]. A store without a record gets one (an existing
    /// store made before records: [`super::SledStore::record_begun`]); a store whose
    /// `meta` says it keeps one and whose record is gone is damaged.
    pub(super) fn check_record(&mut self, existed: bool) -> Result<(), BookError> {
        let path = &self.path;
        let record = match WholeRecord::read(path)? {
            Some((seq, recorded)) => {
                self.refuse_less_than(&recorded)?;
                let mut record = WholeRecord::open(path, seq, recorded)?;
                // A crash after sled's flush leaves the record behind: catch up.
                if let Err(e) = record.write(self.holdings) {
                    self.record_error = Some(e.to_string());
                }
                record
            }
            None => {
                self.refuse_lost_record()?;
                // The record first, then the key saying there is one: a crash
                // between the two leaves a record and no key, which is fine.
                let record = WholeRecord::create(path, self.holdings)?;
                self.meta
                    .insert(RECORD_KEPT, &[])
                    .map_err(|e| self.err(e))?;
                self.db.flush().map_err(|e| self.err(e))?;
                self.record_begun = existed && self.holdings != Holdings::default();
                record
            }
        };
        self.record = Some(record);
        Ok(())
    }
}

/// What a store of `nodes` positions with these trees holds.
pub(super) fn holdings_of(
    nodes: u32,
    kifu: &sled::Tree,
    meta: &sled::Tree,
    games: &sled::Tree,
    learning: Option<&sled::Tree>,
    path: &Path,
) -> Result<Holdings, BookError> {
    let err = |e| store_error(path, e);
    let learning_games = learning::Learning {
        tree: learning,
        path,
    }
    .games_recorded()?;
    let evaluators = meta.scan_prefix("evaluator").count();
    Ok(Holdings {
        nodes,
        kifu_batches: kifu_batches(kifu, path)?,
        evaluators: u32::try_from(evaluators).unwrap_or(u32::MAX),
        config: meta.contains_key("config").map_err(err)?,
        games: games_recorded_in(games, path)?,
        learning_games,
    })
}

/// The number of game ids recorded in a `games` tree.
pub(super) fn games_recorded_in(games: &sled::Tree, path: &Path) -> Result<u64, BookError> {
    match games
        .get(GAMES_RECORDED)
        .map_err(|e| store_error(path, e))?
    {
        Some(v) => {
            let b: [u8; 8] = v
                .as_ref()
                .try_into()
                .map_err(|_| BookError::Corrupt(format!("game count of {} bytes", v.len())))?;
            Ok(u64::from_le_bytes(b))
        }
        None => Ok(0),
    }
}

/// The number of kifu batches added: one past the last batch number.
fn kifu_batches(kifu: &sled::Tree, path: &Path) -> Result<u32, BookError> {
    match kifu.last().map_err(|e| store_error(path, e))? {
        Some((k, _)) => Ok(chunk_first_id(&k)?.saturating_add(1)),
        None => Ok(0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(nodes: u32) -> Holdings {
        Holdings {
            nodes,
            kifu_batches: 2,
            evaluators: 1,
            config: true,
            games: 9,
            learning_games: 4,
        }
    }

    #[test]
    fn slots_round_trip_and_a_torn_slot_falls_back_to_the_other() {
        let dir = tempfile::tempdir().unwrap();
        let mut record = WholeRecord::create(dir.path(), sample(5)).unwrap();
        record.write(sample(7)).unwrap();
        record.write(sample(9)).unwrap();
        assert_eq!(WholeRecord::read(dir.path()).unwrap().unwrap().1, sample(9));
        // Tear the newest slot (seq 3, the second): the older one is read.
        let path = dir.path().join(RECORD_FILE);
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[SLOT + 20] ^= 0xff;
        std::fs::write(&path, &bytes).unwrap();
        assert_eq!(WholeRecord::read(dir.path()).unwrap().unwrap().1, sample(7));
        // Both torn, or the file cut: damaged, naming the record.
        bytes[20] ^= 0xff;
        std::fs::write(&path, &bytes).unwrap();
        let e = WholeRecord::read(dir.path()).unwrap_err();
        assert!(matches!(e, BookError::Damaged { .. }), "{e}");
        std::fs::write(&path, &bytes[..100]).unwrap();
        let e = WholeRecord::read(dir.path()).unwrap_err();
        assert!(e.to_string().contains(RECORD_FILE), "{e}");
    }

    #[test]
    fn missing_lists_what_the_store_lacks() {
        let found = Holdings {
            nodes: 3,
            config: false,
            ..sample(3)
        };
        assert_eq!(sample(3).missing_from(&sample(3)), None);
        assert_eq!(sample(2).missing_from(&sample(3)), None);
        let text = sample(8).missing_from(&found).unwrap();
        assert!(
            text.contains("positions: 3 of 8") && text.contains("run configuration"),
            "{text}"
        );
    }

    #[test]
    fn a_slot_of_the_first_layout_reads_as_no_learning_games() {
        // The first layout: the same fields up to the games, its checksum at 40.
        let mut old = [0u8; SLOT];
        old[..8].copy_from_slice(MAGIC);
        old[8..16].copy_from_slice(&3u64.to_le_bytes());
        old[16..20].copy_from_slice(&11u32.to_le_bytes());
        old[28..32].copy_from_slice(&1u32.to_le_bytes());
        old[32..40].copy_from_slice(&6u64.to_le_bytes());
        let sum = fnv1a(&old[..40]);
        old[40..48].copy_from_slice(&sum.to_le_bytes());
        let (seq, holdings) = Holdings::decode(&old).unwrap();
        assert_eq!((seq, holdings.nodes, holdings.games), (3, 11, 6));
        assert_eq!(holdings.learning_games, 0);
        // A torn slot of that layout is still refused.
        old[18] ^= 0xff;
        assert_eq!(Holdings::decode(&old), None);
    }
}
