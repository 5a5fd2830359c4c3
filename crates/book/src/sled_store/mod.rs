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
//! This module opens stores and implements [`NodeStore`]; beside it, by concern:
//! `compaction` ([`Compactor`]), `backup` ([`BackupSnapshot`] and the partial
//! directory every new store is written in), `reader` ([`SledReader`] and the
//! scans it shares with the store), `keys` (the byte layout above), `whole` (the
//! record of what the store holds) and `check` ([`SledStore::check`]).

use std::collections::BTreeMap;
use std::collections::btree_map::Entry;
use std::path::{Path, PathBuf};

use stera_formats::leftovers::INCOMPLETE_MARKER;
use stera_rules::{Key, Move};

use crate::{
    BookError, GameCounts, NodeId, NodeStore, OpponentId, OpponentRecord, RunConfig, ThoughtNode,
};

mod backup;
mod check;
mod compaction;
mod exports;
mod keys;
mod learning;
mod read_copy;
mod reader;
mod secret;
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

use keys::{
    FORMAT, GAMES_RECORDED, QUARANTINE, TWINS_MERGED, ban_key, chunk_count, chunk_first_id,
    counts_key, decode_ban_key, decode_counts, game_id_key,
};
use reader::{game_counts_of, nodes_of};
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
    /// Opens (or creates) the store in directory `path`.
    ///
    /// # Errors
    /// [`BookError::Store`] when sled cannot open it, [`BookError::Corrupt`] when it
    /// holds something that is not a book of this format.
    pub fn open(path: &Path) -> Result<Self, BookError> {
        refuse_incomplete(path)?;
        refuse_lost_sled_files(path)?;
        refuse_inside_store(path)?;
        Self::open_with(path, OpenMode::Create)
    }

    /// Opens (or creates) the store being written in a [`PartialStore`]'s
    /// directory, which holds the incomplete marker until it is published.
    pub(crate) fn open_partial(partial: &PartialStore) -> Result<Self, BookError> {
        Self::open_with(partial.path(), OpenMode::Create)
    }

    /// Opens an existing store and never creates one: a missing path, a file, or a
    /// directory that holds no store is refused before anything is written there
    /// (what read-only tools such as `stats`, `show` and `export` need).
    ///
    /// # Errors
    /// [`BookError::NotAStore`], [`BookError::InUse`] when another process has it
    /// open, and the errors of [`SledStore::open`].
    pub fn open_existing(path: &Path) -> Result<Self, BookError> {
        Self::open_existing_as(path, OpenMode::Existing)
    }

    /// Opens an existing store for reading, leaving every byte of it as it is
    /// (whole or damaged): sled opens a private copy (see [`read_copy`]).
    /// Refused as [`SledStore::open_existing`] refuses, and a store cut short
    /// is [`BookError::Damaged`] all the same. Its writes go to the copy and are
    /// lost: only for commands that read.
    ///
    /// # Errors
    /// As [`SledStore::open_existing`]; no room for the copy.
    pub fn open_read_only(path: &Path) -> Result<Self, BookError> {
        Self::open_existing_as(path, OpenMode::ReadOnly)
    }

    /// True when this store, opened for reading, keeps no record of what it
    /// holds (made before stores kept one): it was not checked whole.
    #[must_use]
    pub fn unrecorded(&self) -> bool {
        self.unrecorded
    }

    fn open_existing_as(path: &Path, mode: OpenMode) -> Result<Self, BookError> {
        let not_a_store = |reason: &str| BookError::NotAStore {
            path: path.display().to_string(),
            reason: reason.to_owned(),
        };
        if !path.exists() {
            return Err(not_a_store("it does not exist"));
        }
        if !path.is_dir() {
            return Err(not_a_store("it is not a directory"));
        }
        refuse_incomplete(path)?;
        refuse_lost_sled_files(path)?;
        // sled's files: `conf` and `db` (see sled::Config).
        if !path.join("conf").is_file() || !path.join("db").is_file() {
            return Err(not_a_store("it holds no sled database"));
        }
        if mode.copies() {
            let copy = read_copy::copy_of(path)?;
            let mut store =
                crate::sled_guard::guarded(path, || Self::open_unguarded(path, copy.path(), mode))?;
            store.read_copy = Some(copy);
            return Ok(store);
        }
        Self::open_with(path, mode)
    }

    /// Opens the store; a panic of sled on damaged files (it panics on some
    /// instead of failing) is [`BookError::Damaged`].
    fn open_with(path: &Path, mode: OpenMode) -> Result<Self, BookError> {
        crate::sled_guard::guarded(path, || Self::open_unguarded(path, path, mode))
    }

    /// Opens the store at `path` whose sled files are in `files` (`path`
    /// itself, or a copy of it).
    fn open_unguarded(path: &Path, files: &Path, mode: OpenMode) -> Result<Self, BookError> {
        let create = mode == OpenMode::Create;
        // A directory that already holds sled's files is an existing store, even
        // when the caller may create one: if its marker is gone, its files were
        // cut short, and starting it afresh would silently drop the book.
        let existed = path.join("conf").is_file() && path.join("db").is_file();
        if create && !path.join("conf").exists() {
            // sled writes its first files at once, and hangs on a full disk.
            crate::space::ensure_room(path, path, 0)?;
        }
        let db = open_waiting_for_lock(|| {
            sled::Config::new()
                .path(files)
                // sled's page cache; the data stays resident anyway (see module
                // doc), so a large cache buys nothing.
                .cache_capacity(64 << 20)
                .open()
        })
        .map_err(|e| open_error(path, e))?;
        let tree = |name: &str| db.open_tree(name).map_err(|e| store_error(path, e));
        let nodes = tree("nodes")?;
        let bans = tree("bans")?;
        let kifu = tree("kifu")?;
        let meta = tree("meta")?;
        let games = tree("games")?;
        let learning = if db
            .tree_names()
            .iter()
            .any(|n| n.as_ref() == learning::LEARNING.as_bytes())
        {
            Some(tree(learning::LEARNING)?)
        } else {
            None
        };
        // Opened here (not only when used) so that every store lists every table.
        tree(QUARANTINE)?;
        match meta.get("format").map_err(|e| store_error(path, e))? {
            Some(f) if f.as_ref() == FORMAT => {}
            Some(f) => {
                return Err(BookError::Corrupt(format!(
                    "`{}` is format `{}`, expected `{}`",
                    path.display(),
                    String::from_utf8_lossy(&f),
                    String::from_utf8_lossy(FORMAT)
                )));
            }
            None if !create || existed => {
                // sled's files are there (checked by `open_existing`) but not
                // the marker every book store gets when it is made: a store cut
                // short (its start is lost), or another program's database.
                return Err(BookError::Damaged {
                    path: path.display().to_string(),
                    detail: "its sled database has no stera-book format marker: a book store whose files were cut short or overwritten, or not a book store at all".to_owned(),
                });
            }
            None if nodes.is_empty() => {
                meta.insert("format", FORMAT)
                    .map_err(|e| store_error(path, e))?;
                // A store begun now grows one node per twin pair.
                meta.insert(TWINS_MERGED, &[])
                    .map_err(|e| store_error(path, e))?;
                db.flush().map_err(|e| store_error(path, e))?;
            }
            None => {
                return Err(BookError::Corrupt(format!(
                    "`{}` holds nodes but no format marker",
                    path.display()
                )));
            }
        }
        let len = match nodes.last().map_err(|e| store_error(path, e))? {
            Some((k, v)) => {
                let first = chunk_first_id(&k)?;
                let count = chunk_count(&v)?;
                first.checked_add(count).ok_or_else(|| {
                    BookError::Corrupt(format!("chunk {first} + {count} overflows"))
                })?
            }
            None => 0,
        };
        let mut evaluators = Vec::new();
        for item in meta.scan_prefix("evaluator") {
            let (k, v) = item.map_err(|e| store_error(path, e))?;
            let id = match k.get(9..11) {
                Some(b) => usize::from(u16::from_be_bytes([b[0], b[1]])),
                None => return Err(BookError::Corrupt("evaluator key without id".into())),
            };
            if id != evaluators.len() {
                return Err(BookError::Corrupt(format!(
                    "evaluator ids not dense at {id}"
                )));
            }
            evaluators.push(String::from_utf8_lossy(&v).into_owned());
        }
        let opponents = learning::load_identities(&meta, path)?;
        let holdings = holdings_of(len, &kifu, &meta, &games, learning.as_ref(), path)?;
        let mut store = Self {
            path: path.to_owned(),
            db,
            nodes,
            bans,
            kifu,
            meta,
            games,
            learning,
            len,
            evaluators,
            opponents,
            encode_buffer: Vec::new(),
            holdings,
            record: None,
            inspected: None,
            record_begun: false,
            record_error: None,
            unrecorded: false,
            read_copy: None,
        };
        match mode {
            OpenMode::Inspect => store.inspected = WholeRecord::read(path)?.map(|(_, h)| h),
            OpenMode::ReadOnly => store.check_record_read_only()?,
            OpenMode::Create | OpenMode::Existing => store.check_record(existed)?,
        }
        Ok(store)
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

    /// True when the store is known to hold at most one node per pair of
    /// colour-flipped twins: an empty store, one begun since twins became one
    /// node, or one written by [`crate::twins::write_merged`]. A store made
    /// before may hold both twins of a pair (`book-tools migrate` merges them).
    ///
    /// # Errors
    /// Storage failure.
    pub fn twins_merged(&self) -> Result<bool, BookError> {
        Ok(self.len == 0
            || self
                .meta
                .contains_key(TWINS_MERGED)
                .map_err(|e| self.err(e))?)
    }

    /// Records whether the store holds one node per twin pair (cleared by an
    /// import that keeps both twins).
    ///
    /// # Errors
    /// Storage failure.
    pub fn set_twins_merged(&mut self, merged: bool) -> Result<(), BookError> {
        if merged {
            self.meta
                .insert(TWINS_MERGED, &[])
                .map_err(|e| self.err(e))?;
        } else {
            self.meta.remove(TWINS_MERGED).map_err(|e| self.err(e))?;
        }
        self.db.flush().map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Copies the `games` tree of `from` into this store's (which must have no
    /// games yet), adding the counters of a position listed in `merge` to those
    /// of the position it maps to. Returns the positions merged that had counters.
    pub(crate) fn copy_games_merging(
        &mut self,
        from: &SledStore,
        merge: &std::collections::HashMap<Key, Key>,
    ) -> Result<usize, BookError> {
        if !self.games.is_empty() {
            return Err(BookError::Invalid(format!(
                "`{}` has games already",
                self.path.display()
            )));
        }
        let mut counts: BTreeMap<Key, GameCounts> = BTreeMap::new();
        let mut merged = 0;
        game_counts_of(&from.games, &from.path, &mut |key, c| {
            let to = match merge.get(&key) {
                Some(&twin) => {
                    merged += 1;
                    twin
                }
                None => key,
            };
            counts.entry(to).or_default().add(c);
        })?;
        let mut batch = sled::Batch::default();
        for item in from.games.iter() {
            let (k, v) = item.map_err(|e| from.err(e))?;
            // Game ids and their count as they are; counters from `counts`.
            if k.first() != Some(&b'c') {
                batch.insert(k, v);
            }
        }
        for (key, c) in counts {
            batch.insert(&counts_key(key)[..], &c.encode()[..]);
        }
        self.games.apply_batch(batch).map_err(|e| self.err(e))?;
        self.db.flush().map_err(|e| self.err(e))?;
        self.holdings.games = games_recorded_in(&self.games, &self.path)?;
        self.note_write();
        Ok(merged)
    }

    /// The ledger of the book files this store's coordinator wrote (see
    /// [`ExportLedger`]).
    #[must_use]
    pub fn export_ledger(&self) -> ExportLedger {
        ExportLedger::new(self.meta.clone(), &self.path)
    }

    /// The names of the store's sled trees (its tables, see [`TABLES`]), sled's
    /// own default tree left out.
    ///
    /// # Errors
    /// A tree name that is not UTF-8 ([`BookError::Corrupt`]).
    pub fn table_names(&self) -> Result<Vec<String>, BookError> {
        let mut names = Vec::new();
        for name in self.db.tree_names() {
            if name.as_ref() == b"__sled__default" {
                continue;
            }
            names.push(String::from_utf8(name.to_vec()).map_err(|_| {
                BookError::Corrupt(format!("a table name of {} bytes is not UTF-8", name.len()))
            })?);
        }
        Ok(names)
    }

    /// The entries of the table `name` (0 for a table the store does not have).
    ///
    /// # Errors
    /// Storage failure.
    pub fn table_len(&self, name: &str) -> Result<usize, BookError> {
        if !self
            .db
            .tree_names()
            .iter()
            .any(|n| n.as_ref() == name.as_bytes())
        {
            return Ok(0);
        }
        Ok(self.db.open_tree(name).map_err(|e| self.err(e))?.len())
    }

    /// The keys of the `meta` tree.
    ///
    /// # Errors
    /// Storage failure.
    pub fn meta_keys(&self) -> Result<Vec<Vec<u8>>, BookError> {
        self.meta
            .iter()
            .keys()
            .map(|k| k.map(|k| k.to_vec()).map_err(|e| self.err(e)))
            .collect()
    }

    /// True when a process (this one included) holds the store at `path` open:
    /// sled keeps an exclusive `flock` on its `db` file while a store is open,
    /// and this tries to take it (and lets it go at once). What deletes store
    /// directories (the coordinator's backup rotation) asks this first.
    #[must_use]
    pub fn is_open(path: &Path) -> bool {
        let Ok(file) = std::fs::File::open(path.join("db")) else {
            return false;
        };
        matches!(
            rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive),
            Err(e) if e == rustix::io::Errno::WOULDBLOCK
        )
    }

    /// Copies the learning opponents and the `learning` tree of `from` into this
    /// store's (which must have none yet), the counters of a position listed in
    /// `merge` added to those of the position it maps to.
    pub(crate) fn copy_learning_merging(
        &mut self,
        from: &SledStore,
        merge: &std::collections::HashMap<Key, Key>,
    ) -> Result<(), BookError> {
        if !self.opponents.is_empty() || self.learning.as_ref().is_some_and(|t| !t.is_empty()) {
            return Err(BookError::Invalid(format!(
                "`{}` has learning games already",
                self.path.display()
            )));
        }
        let opponents = from.opponents()?;
        let Some(from_learning) = &from.learning else {
            return Ok(());
        };
        for o in &opponents {
            let id = self.intern_opponent(&o.identity)?;
            if id != o.id {
                return Err(BookError::Corrupt(format!(
                    "opponent `{}` listed twice",
                    o.identity
                )));
            }
        }
        let mut batch = sled::Batch::default();
        for o in &opponents {
            let mut counts: BTreeMap<Key, GameCounts> = BTreeMap::new();
            from.for_each_learning_count(o.id, &mut |key, c| {
                let to = merge.get(&key).copied().unwrap_or(key);
                counts.entry(to).or_default().add(c);
            })?;
            for (key, c) in counts {
                let (k, v) = learning::counts_entry(o.id, key, c);
                batch.insert(&k[..], &v[..]);
            }
        }
        for item in from_learning.iter() {
            let (k, v) = item.map_err(|e| from.err(e))?;
            // Game ids and the games per opponent as they are.
            if k.first() != Some(&b'c') {
                batch.insert(k, v);
            }
        }
        self.learning_tree()?
            .apply_batch(batch)
            .map_err(|e| self.err(e))?;
        self.db.flush().map_err(|e| self.err(e))?;
        self.holdings.learning_games = self.learning_view().games_recorded()?;
        self.note_write();
        Ok(())
    }

    /// A read-only view for another thread (see [`SledReader`]).
    #[must_use]
    pub fn reader(&self) -> SledReader {
        SledReader {
            path: self.path.clone(),
            nodes: self.nodes.clone(),
            games: self.games.clone(),
            learning: self.learning.clone(),
            _read_copy: self.read_copy.clone(),
        }
    }

    /// Bytes sled reports on disk.
    ///
    /// # Errors
    /// Storage failure.
    pub fn size_on_disk(&self) -> Result<u64, BookError> {
        self.db.size_on_disk().map_err(|e| self.err(e))
    }

    /// Number of node chunks (append batches not yet merged).
    #[must_use]
    pub fn chunk_count(&self) -> usize {
        self.nodes.len()
    }

    /// Merges consecutive node chunks until each holds at least `min_records`
    /// (the last one may hold fewer). Returns the number of chunks removed. See
    /// [`Compactor`] for doing it on another thread.
    ///
    /// # Errors
    /// Storage failure or corrupt chunks.
    pub fn compact(&mut self, min_records: u32) -> Result<usize, BookError> {
        let compactor = self.compactor();
        let pass = compactor.compact_from(0, min_records)?;
        Ok(pass.removed + compactor.merge_rest(pass.next_from)?)
    }

    /// A handle that merges small node chunks from another thread (see
    /// [`Compactor`]).
    #[must_use]
    pub fn compactor(&self) -> Compactor {
        Compactor {
            path: self.path.clone(),
            db: self.db.clone(),
            nodes: self.nodes.clone(),
        }
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
fn games_recorded_in(games: &sled::Tree, path: &Path) -> Result<u64, BookError> {
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

/// How long an open waits for sled's file lock before reporting the store in use.
///
/// sled 0.34 releases the lock of a dropped `Db` only when its background threads
/// have exited, a moment after the drop (sled issues #1234 and #1289): reopening
/// a store this process has just closed (a restart, a tool after a test, a
/// migrate after an import) would otherwise fail now and then. A store that
/// another live process holds keeps its lock far longer than this.
const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// Runs `open` until it does not fail for sled's file lock, for at most
/// [`LOCK_WAIT`]; the last lock error is returned when the wait runs out.
fn open_waiting_for_lock(
    mut open: impl FnMut() -> sled::Result<sled::Db>,
) -> sled::Result<sled::Db> {
    let deadline = std::time::Instant::now() + LOCK_WAIT;
    let mut pause = std::time::Duration::from_millis(5);
    loop {
        match open() {
            Err(e) if is_lock_contention(&e) && std::time::Instant::now() < deadline => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(std::time::Duration::from_millis(100));
            }
            other => return other,
        }
    }
}

fn is_lock_contention(e: &sled::Error) -> bool {
    matches!(e, sled::Error::Io(io) if io.to_string().contains("could not acquire lock"))
}

/// sled's error on open, with the lock held by another process told apart (sled
/// reports it as an I/O error "could not acquire lock on ...").
fn open_error(path: &Path, source: sled::Error) -> BookError {
    match &source {
        e if is_lock_contention(e) => BookError::InUse {
            path: path.display().to_string(),
        },
        _ => store_error(path, source),
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

impl NodeStore for SledStore {
    fn append(&mut self, nodes: &[ThoughtNode]) -> Result<NodeId, BookError> {
        if nodes.is_empty() {
            return Ok(NodeId(self.len));
        }
        let count = u32::try_from(nodes.len())
            .map_err(|_| BookError::Invalid(format!("batch of {} nodes", nodes.len())))?;
        let first = self.len;
        let next = first
            .checked_add(count)
            .ok_or_else(|| BookError::Full("more than 2^32 nodes".into()))?;
        let buf = &mut self.encode_buffer;
        buf.clear();
        buf.extend_from_slice(&count.to_le_bytes());
        for n in nodes {
            n.encode_into(buf)?;
        }
        crate::space::ensure_room(&self.path, &self.path, buf.len() as u64)?;
        self.nodes
            .insert(first.to_be_bytes(), buf.as_slice())
            .map_err(|e| store_error(&self.path, e))?;
        self.db.flush().map_err(|e| store_error(&self.path, e))?;
        self.len = next;
        self.holdings.nodes = next;
        if buf.capacity() > (16 << 20) {
            *buf = Vec::new();
        }
        self.note_write();
        Ok(NodeId(first))
    }

    fn len(&self) -> u32 {
        self.len
    }

    fn for_each_node(
        &self,
        visit: &mut dyn FnMut(NodeId, ThoughtNode) -> Result<(), BookError>,
    ) -> Result<(), BookError> {
        let mut seen = 0u32;
        nodes_of(&self.nodes, &self.path, &mut |id, node| {
            seen += 1;
            visit(id, node)
        })?;
        if seen != self.len {
            return Err(BookError::Damaged {
                path: self.path.display().to_string(),
                detail: format!("a scan of its positions ended after {seen} of {}", self.len),
            });
        }
        Ok(())
    }

    fn ban(&mut self, node: NodeId, mv: Move) -> Result<(), BookError> {
        let key = ban_key(node, mv);
        self.room(key.len())?;
        self.bans.insert(key, &[]).map_err(|e| self.err(e))?;
        Ok(())
    }

    fn bans(&self) -> Result<Vec<(NodeId, Move)>, BookError> {
        let mut out = Vec::new();
        for item in self.bans.iter() {
            let (k, _) = item.map_err(|e| self.err(e))?;
            out.push(decode_ban_key(&k)?);
        }
        Ok(out)
    }

    fn record_quarantine(&mut self, node: NodeId, mv: Move, note: &str) -> Result<(), BookError> {
        self.room(6 + note.len())?;
        let tree = self.db.open_tree(QUARANTINE).map_err(|e| self.err(e))?;
        tree.insert(ban_key(node, mv), note.as_bytes())
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    fn quarantined(&self) -> Result<Vec<(NodeId, Move, String)>, BookError> {
        let tree = self.db.open_tree(QUARANTINE).map_err(|e| self.err(e))?;
        let mut out = Vec::new();
        for item in tree.iter() {
            let (k, v) = item.map_err(|e| self.err(e))?;
            let (node, mv) = decode_ban_key(&k)?;
            out.push((node, mv, String::from_utf8_lossy(&v).into_owned()));
        }
        Ok(out)
    }

    fn unban(&mut self, node: NodeId, mv: Move) -> Result<bool, BookError> {
        let key = ban_key(node, mv);
        let tree = self.db.open_tree(QUARANTINE).map_err(|e| self.err(e))?;
        tree.remove(key).map_err(|e| self.err(e))?;
        let was = self.bans.remove(key).map_err(|e| self.err(e))?.is_some();
        self.db.flush().map_err(|e| self.err(e))?;
        Ok(was)
    }

    fn add_kifu_keys(&mut self, keys: &[Key]) -> Result<(), BookError> {
        if keys.is_empty() {
            return Ok(());
        }
        let next = match self.kifu.last().map_err(|e| self.err(e))? {
            Some((k, _)) => chunk_first_id(&k)?
                .checked_add(1)
                .ok_or_else(|| BookError::Full("kifu batches".into()))?,
            None => 0,
        };
        let mut value = Vec::with_capacity(keys.len() * 16);
        for k in keys {
            value.extend_from_slice(&k.to_bytes());
        }
        self.room(value.len())?;
        self.kifu
            .insert(next.to_be_bytes(), value)
            .map_err(|e| self.err(e))?;
        self.db.flush().map_err(|e| self.err(e))?;
        self.holdings.kifu_batches = self.holdings.kifu_batches.max(next.saturating_add(1));
        self.note_write();
        Ok(())
    }

    fn kifu_keys(&self) -> Result<Vec<Key>, BookError> {
        let mut out = Vec::new();
        for item in self.kifu.iter() {
            let (_, v) = item.map_err(|e| self.err(e))?;
            if v.len() % 16 != 0 {
                return Err(BookError::Corrupt(format!(
                    "kifu batch of {} bytes",
                    v.len()
                )));
            }
            for c in v.chunks_exact(16) {
                let mut b = [0u8; 16];
                b.copy_from_slice(c);
                out.push(Key::from_bytes(b));
            }
        }
        Ok(out)
    }

    fn intern_evaluator(&mut self, identity: &str) -> Result<u16, BookError> {
        if let Some(i) = self.evaluators.iter().position(|e| e == identity) {
            return u16::try_from(i).map_err(|_| BookError::Full("evaluators".into()));
        }
        let id = u16::try_from(self.evaluators.len())
            .map_err(|_| BookError::Full("more than 65,536 evaluators".into()))?;
        let mut key = b"evaluator".to_vec();
        key.extend_from_slice(&id.to_be_bytes());
        self.room(identity.len())?;
        self.meta
            .insert(key, identity.as_bytes())
            .map_err(|e| self.err(e))?;
        self.db.flush().map_err(|e| self.err(e))?;
        self.evaluators.push(identity.to_owned());
        self.holdings.evaluators = self.holdings.evaluators.saturating_add(1);
        self.note_write();
        Ok(id)
    }

    fn evaluators(&self) -> Result<Vec<String>, BookError> {
        Ok(self.evaluators.clone())
    }

    fn save_config(&mut self, config: &RunConfig) -> Result<(), BookError> {
        let text = config.to_text();
        self.room(text.len())?;
        self.meta
            .insert("config", text.as_bytes())
            .map_err(|e| self.err(e))?;
        self.db.flush().map_err(|e| self.err(e))?;
        self.holdings.config = true;
        self.note_write();
        Ok(())
    }

    fn config(&self) -> Result<Option<RunConfig>, BookError> {
        match self.meta.get("config").map_err(|e| self.err(e))? {
            Some(v) => {
                let text = std::str::from_utf8(&v)
                    .map_err(|_| BookError::Corrupt("run config is not UTF-8".into()))?;
                Ok(Some(RunConfig::from_text(text)?))
            }
            None => Ok(None),
        }
    }

    fn flush(&mut self) -> Result<(), BookError> {
        self.db.flush().map_err(|e| self.err(e))?;
        self.note_write();
        if self.record_error.is_none()
            && let Some(record) = &self.record
            && let Err(e) = record.sync()
        {
            self.record_error = Some(e.to_string());
        }
        match &self.record_error {
            Some(e) => Err(BookError::Store {
                path: self.path.join(RECORD_FILE).display().to_string(),
                source: sled::Error::Io(std::io::Error::other(format!(
                    "cannot write the record of what the store holds: {e}"
                ))),
            }),
            None => Ok(()),
        }
    }

    fn record_game(
        &mut self,
        game_id: u64,
        counts: &[(Key, GameCounts)],
    ) -> Result<bool, BookError> {
        let id_key = game_id_key(game_id);
        if self.games.contains_key(id_key).map_err(|e| self.err(e))? {
            return Ok(false);
        }
        // Read-modify-write is safe: one thread writes (see the trait).
        let mut merged: BTreeMap<Key, GameCounts> = BTreeMap::new();
        for &(key, c) in counts {
            match merged.entry(key) {
                Entry::Occupied(mut o) => o.get_mut().add(c),
                Entry::Vacant(v) => v.insert(self.game_counts(key)?).add(c),
            }
        }
        let recorded = self
            .games_recorded()?
            .checked_add(1)
            .ok_or_else(|| BookError::Full("more than 2^64 games".into()))?;
        let mut batch = sled::Batch::default();
        for (key, c) in merged {
            batch.insert(&counts_key(key)[..], &c.encode()[..]);
        }
        batch.insert(&id_key[..], &[][..]);
        batch.insert(GAMES_RECORDED, &recorded.to_le_bytes()[..]);
        self.room(counts.len() * 40 + 32)?;
        self.games.apply_batch(batch).map_err(|e| self.err(e))?;
        self.db.flush().map_err(|e| self.err(e))?;
        self.holdings.games = recorded;
        self.note_write();
        Ok(true)
    }

    fn game_counts(&self, key: Key) -> Result<GameCounts, BookError> {
        match self.games.get(counts_key(key)).map_err(|e| self.err(e))? {
            Some(v) => decode_counts(key, &v),
            None => Ok(GameCounts::default()),
        }
    }

    fn games_recorded(&self) -> Result<u64, BookError> {
        games_recorded_in(&self.games, &self.path)
    }

    fn max_game_id(&self) -> Result<Option<u64>, BookError> {
        let learned = self.learning_view().max_game_id()?;
        Ok(self.max_self_play_game_id()?.max(learned))
    }

    fn for_each_game_count(&self, f: &mut dyn FnMut(Key, GameCounts)) -> Result<(), BookError> {
        game_counts_of(&self.games, &self.path, f)
    }

    fn intern_opponent(&mut self, identity: &str) -> Result<OpponentId, BookError> {
        if let Some(i) = self.opponents.iter().position(|e| e == identity) {
            return Ok(OpponentId(u16::try_from(i).map_err(|_| {
                BookError::Corrupt("an opponent id beyond 65,535".into())
            })?));
        }
        self.room(identity.len() + 64)?;
        // The tree is made with the first opponent (see `TABLES`).
        self.learning_tree()?;
        let mut identities = std::mem::take(&mut self.opponents);
        let stored = self
            .learning_view()
            .store_identity(&self.meta, &mut identities, identity);
        self.opponents = identities;
        let id = stored?;
        self.db.flush().map_err(|e| self.err(e))?;
        Ok(id)
    }

    fn opponents(&self) -> Result<Vec<OpponentRecord>, BookError> {
        self.learning_view().records(&self.opponents)
    }

    fn record_learning_game(
        &mut self,
        opponent: OpponentId,
        game_id: u64,
        counts: &[(Key, GameCounts)],
    ) -> Result<bool, BookError> {
        if usize::from(opponent.0) >= self.opponents.len() {
            return Err(BookError::Invalid(format!(
                "no learning opponent {opponent} in `{}`",
                self.path.display()
            )));
        }
        let Some(batch) = self.learning_view().game_batch(opponent, game_id, counts)? else {
            return Ok(false);
        };
        self.room(counts.len() * 40 + 32)?;
        self.learning_tree()?
            .apply_batch(batch)
            .map_err(|e| self.err(e))?;
        self.db.flush().map_err(|e| self.err(e))?;
        self.holdings.learning_games = self.holdings.learning_games.saturating_add(1);
        self.note_write();
        Ok(true)
    }

    fn for_each_learning_count(
        &self,
        opponent: OpponentId,
        f: &mut dyn FnMut(Key, GameCounts),
    ) -> Result<(), BookError> {
        self.learning_view().for_each_count(opponent, f)
    }
}

impl SledStore {
    fn learning_view(&self) -> learning::Learning<'_> {
        learning::Learning {
            tree: self.learning.as_ref(),
            path: &self.path,
        }
    }

    /// The `learning` tree, made now if the store has none yet (a write).
    fn learning_tree(&mut self) -> Result<sled::Tree, BookError> {
        if let Some(tree) = &self.learning {
            return Ok(tree.clone());
        }
        let tree = self
            .db
            .open_tree(learning::LEARNING)
            .map_err(|e| self.err(e))?;
        self.learning = Some(tree.clone());
        Ok(tree)
    }

    fn max_self_play_game_id(&self) -> Result<Option<u64>, BookError> {
        match self.games.scan_prefix(b"g").next_back() {
            Some(item) => {
                let (k, _) = item.map_err(|e| self.err(e))?;
                let b: [u8; 8] = k.get(1..).and_then(|b| b.try_into().ok()).ok_or_else(|| {
                    BookError::Corrupt(format!("game id key of {} bytes", k.len()))
                })?;
                Ok(Some(u64::from_be_bytes(b)))
            }
            None => Ok(None),
        }
    }
}

/// A directory that holds a store's record of what it holds ([`RECORD_FILE`]) but
/// lost sled's `conf` or `db` is a damaged store, not an empty directory: opened
/// to create, sled would write fresh files into it and start an empty book (or
/// read the book again under a default configuration), and read-only tools would
/// call it "not a store" without naming the restore.
fn refuse_lost_sled_files(path: &Path) -> Result<(), BookError> {
    if !path.join(RECORD_FILE).is_file() {
        return Ok(());
    }
    let lost: Vec<&str> = ["conf", "db"]
        .into_iter()
        .filter(|f| !path.join(f).is_file())
        .collect();
    if lost.is_empty() {
        return Ok(());
    }
    Err(BookError::Damaged {
        path: path.display().to_string(),
        detail: format!(
            "it holds the record `{RECORD_FILE}` of a store, but sled's {} {} missing",
            lost.iter()
                .map(|f| format!("`{f}`"))
                .collect::<Vec<_>>()
                .join(" and "),
            if lost.len() == 1 { "is" } else { "are" }
        ),
    })
}

/// A directory holding [`INCOMPLETE_MARKER`] is an unfinished copy, not a store:
/// opened, it would read as a valid store with part of the book (or none).
fn refuse_incomplete(path: &Path) -> Result<(), BookError> {
    if path.join(INCOMPLETE_MARKER).exists() {
        return Err(BookError::NotAStore {
            path: path.display().to_string(),
            reason: format!(
                "it is an unfinished backup or migration (it holds `{INCOMPLETE_MARKER}`): its copy was interrupted or is still being written; use the complete backup, or back up again"
            ),
        });
    }
    Ok(())
}

/// A new store is never made inside another store's directory (`--db S/x`):
/// nothing the product writes goes inside a store (see [`crate::store_path`]).
/// An existing store is opened wherever it is.
fn refuse_inside_store(path: &Path) -> Result<(), BookError> {
    if crate::store_path::is_store_dir(path) {
        return Ok(());
    }
    let Some(existing) = path
        .ancestors()
        .find(|a| !a.as_os_str().is_empty() && a.exists())
    else {
        return Ok(());
    };
    let Ok(real) = existing.canonicalize() else {
        return Ok(());
    };
    // `path` itself (existing, not a store) is not checked, only what holds it.
    let start = if existing == path {
        real.parent()
    } else {
        Some(real.as_path())
    };
    if let Some(store) = start
        .into_iter()
        .flat_map(Path::ancestors)
        .find(|d| crate::store_path::is_store_dir(d))
    {
        return Err(BookError::Invalid(format!(
            "refusing to make a store at `{}`: it is inside the book store `{}`, whose directory nothing else may be written into",
            path.display(),
            store.display()
        )));
    }
    Ok(())
}
