//! The durable [`NodeStore`] on sled.
//!
//! sled keeps roughly every byte written resident in memory, so the layout is
//! chosen for bytes, not for convenience:
//!
//! * tree `nodes`: one entry per **append batch** ("chunk"). The sled key is the
//!   first node id of the batch (u32 big-endian, so chunks iterate in id order and
//!   keys are sequential, never the random 128-bit position key); the value is a
//!   u32 record count followed by the records of [`ThoughtNode`] (about
//!   33 bytes + 2 per move). Large batches (bulk growth, imports) amortise sled's
//!   per-entry overhead; [`SledStore::compact`] merges small batches later.
//! * tree `bans`: key = node id (u32 BE) + move (u16 BE), empty value.
//! * tree `quarantine`: key as in `bans`, value the SFEN of the quarantined
//!   position, a tab and the reason (bans the coordinator made after failures).
//! * tree `kifu`: one entry per added batch, key = batch number (u32 BE), value =
//!   the 16-byte keys.
//! * tree `meta`: `format`, `config` (text, see [`RunConfig::to_text`]),
//!   `evaluator` + id (u16 BE) -> identity, `twins merged` (empty) when the
//!   store holds one node per colour-flipped twin pair ([`SledStore::twins_merged`]),
//!   and `whole record` (empty) when the store keeps the file below.
//! * tree `games` (results of games through book positions, bounded by the
//!   positions, not the games, except for 9 bytes per game id):
//!   `c` + position key (16 bytes BE) -> [`GameCounts::encode`] (12 bytes: wins,
//!   draws, losses as u32 LE, from that position's side to move's view);
//!   `g` + game id (u64 BE) -> empty, one per recorded game;
//!   `n` -> number of `g` entries (u64 LE). A store written before this tree
//!   existed opens with it empty.
//! * tree `learning` (learning games, per opponent, never mixed with `games`;
//!   layout in `learning`): counters by opponent and position, game ids, games
//!   per opponent; `meta` holds `opponent` + id (u16 BE) -> the opponent's
//!   identity.
//!
//! Beside sled's files: `STERA-WHOLE` ([`RECORD_FILE`]), the record of what the
//! store must hold, checked at every open (module `whole`): a store cut short
//! is [`BookError::Damaged`], never a smaller book.
//!
//! Durability: [`NodeStore::append`], [`NodeStore::add_kifu_keys`],
//! [`NodeStore::intern_evaluator`] and [`NodeStore::save_config`] call
//! `sled::Db::flush` (which writes and fsyncs the log) before returning. A batch
//! is one sled insert, so after a crash it is either wholly there or wholly absent.
//! [`NodeStore::record_game`] writes the game's counters, its id and the new
//! count as one `apply_batch` on `games`, then flushes: all or nothing.
//!
//! This module holds the store's handle and its trees; beside it, by concern:
//! `open` (opening and creating a store, and what is refused), `node_store`
//! (the [`NodeStore`] implementation), `compaction` ([`Compactor`]), `backup`
//! ([`BackupSnapshot`] and the partial directory every new store is written
//! in), `reader` ([`SledReader`] and the scans it shares with the store),
//! `keys` (the byte layout above), `learning` (the learning counters),
//! `twin_merge` (copies that merge colour-flipped twins), `tables` (the
//! trees listed and counted), `exports` ([`ExportLedger`]), `whole` (the record
//! of what the store holds) and `check` ([`SledStore::check`]).
//!
//! [`GameCounts::encode`]: crate::GameCounts::encode
//! [`NodeStore`]: crate::NodeStore
//! [`NodeStore::add_kifu_keys`]: crate::NodeStore::add_kifu_keys
//! [`NodeStore::append`]: crate::NodeStore::append
//! [`NodeStore::intern_evaluator`]: crate::NodeStore::intern_evaluator
//! [`NodeStore::record_game`]: crate::NodeStore::record_game
//! [`NodeStore::save_config`]: crate::NodeStore::save_config
//! [`RunConfig::to_text`]: crate::RunConfig::to_text
//! [`ThoughtNode`]: crate::ThoughtNode

use std::path::{Path, PathBuf};

use crate::BookError;

mod backup;
mod check;
mod compaction;
mod exports;
mod keys;
mod learning;
mod node_store;
mod open;
mod read_copy;
mod reader;
mod secret;
mod tables;
mod twin_merge;
mod whole;

pub(crate) use backup::PartialStore;
pub use backup::{BackupSnapshot, BackupSummary};
pub use check::CheckReport;
pub use compaction::{CompactSummary, Compactor};
pub(crate) use exports::EXPORT_PREFIX;
pub use exports::{ExportLedger, FileFingerprint, KEPT_EXPORTS};
pub use reader::SledReader;
pub(crate) use secret::LEASE_SECRET;
pub use secret::SECRET_BYTES;
pub use whole::{Holdings, RECORD_FILE};

use keys::QUARANTINE;
use whole::WholeRecord;

/// The sled trees (tables) of a store, each described in the module
/// documentation. Every one exists in every store opened (sled's own default
/// tree aside) but `learning`, made with the store's first learning opponent; whatever copies a store table by table must handle each
/// (`crate::twins::write_merged` refuses a store with a table it does not know).
pub const TABLES: [&str; 7] = [
    "nodes",
    "bans",
    QUARANTINE,
    "kifu",
    "meta",
    "games",
    learning::LEARNING,
];

/// How a store is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OpenMode {
    /// Made when missing; its record is checked (or begun).
    Create,
    /// Must exist; its record is checked (or begun).
    Existing,
    /// Must exist; sled opens a private copy ([`read_copy`]); the record is
    /// read but neither checked nor written (what [`SledStore::check`]
    /// compares itself).
    Inspect,
    /// Must exist; sled opens a private copy ([`read_copy`]); the record is
    /// checked, never written.
    ReadOnly,
}

impl OpenMode {
    /// Whether sled opens a copy: the store itself is only read.
    fn copies(self) -> bool {
        matches!(self, Self::Inspect | Self::ReadOnly)
    }
}

/// A book store in a sled database directory.
pub struct SledStore {
    path: PathBuf,
    db: sled::Db,
    nodes: sled::Tree,
    bans: sled::Tree,
    kifu: sled::Tree,
    meta: sled::Tree,
    games: sled::Tree,
    /// The `learning` tree, made at the first learning opponent: opening it
    /// for every store would write into stores that never learned (and into
    /// damaged ones before they are checked).
    learning: Option<sled::Tree>,
    len: u32,
    evaluators: Vec<String>,
    opponents: Vec<String>,
    encode_buffer: Vec<u8>,
    /// What the store holds now (kept current by every write).
    holdings: Holdings,
    /// The record of what it must hold (`None` only for [`OpenMode::Inspect`]).
    record: Option<WholeRecord>,
    /// The record read at open, in [`OpenMode::Inspect`].
    inspected: Option<Holdings>,
    /// True when this open wrote the first record of an existing store.
    record_begun: bool,
    /// The last failure to write the record (retried with every write).
    record_error: Option<String>,
    /// True when a store opened for reading has no record (made before stores
    /// kept one) and so could not be told whole.
    unrecorded: bool,
    /// The copy sled opened, for a store opened for reading; last, so that
    /// sled is closed before the copy is removed.
    read_copy: Option<std::sync::Arc<read_copy::ReadCopy>>,
}

impl std::fmt::Debug for SledStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SledStore({}, {} nodes)", self.path.display(), self.len)
    }
}

impl SledStore {
    /// True when this store, opened for reading, keeps no record of what it
    /// holds (made before stores kept one): it was not checked whole.
    #[must_use]
    pub fn unrecorded(&self) -> bool {
        self.unrecorded
    }

    /// True when this open began the record of what the store must hold (a
    /// store made before stores kept one: it was not checked this time, and is
    /// from now on).
    #[must_use]
    pub fn record_begun(&self) -> bool {
        self.record_begun
    }

    /// What the store holds now.
    #[must_use]
    pub fn holdings(&self) -> Holdings {
        self.holdings
    }

    /// Records the store's holdings after a flushed write. A failure leaves the
    /// record behind the store (a weaker check, never a false alarm); it is
    /// retried with the next write and reported by [`NodeStore::flush`].
    ///
    /// [`NodeStore::flush`]: crate::NodeStore::flush
    fn note_write(&mut self) {
        if let Some(record) = &mut self.record {
            self.record_error = record.write(self.holdings).err().map(|e| e.to_string());
        }
    }

    fn err(&self, e: sled::Error) -> BookError {
        store_error(&self.path, e)
    }

    /// Refuses a write of about `bytes` before sled meets a full disk (see
    /// [`crate::space`]): the store stays as it was and the caller gets
    /// [`BookError::Space`] at once.
    fn room(&self, bytes: usize) -> Result<(), BookError> {
        crate::space::ensure_room(&self.path, &self.path, bytes as u64)?;
        Ok(())
    }
}

/// sled's error at `path`; damaged files (sled's "corruption", a file that is
/// not sled's, a bug sled reports) are [`BookError::Damaged`], which points to
/// the restore procedure.
pub(super) fn store_error(path: &Path, source: sled::Error) -> BookError {
    match source {
        sled::Error::Corruption { .. }
        | sled::Error::ReportableBug(_)
        | sled::Error::Unsupported(_) => BookError::Damaged {
            path: path.display().to_string(),
            detail: source.to_string(),
        },
        // A page that sled's index places past the end of its `db` file: the
        // file was cut short (sled reads pages when they are first used, so
        // this shows on a scan, after the open).
        sled::Error::Io(ref e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
            BookError::Damaged {
                path: path.display().to_string(),
                detail: format!("its `db` file ends before a page it needs ({source})"),
            }
        }
        source => BookError::Store {
            path: path.display().to_string(),
            source,
        },
    }
}
