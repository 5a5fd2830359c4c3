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
//!   `evaluator` + id (u16 BE) -> identity, and `twins merged` (empty) when the
//!   store holds one node per colour-flipped twin pair ([`SledStore::twins_merged`]).
//! * tree `games` (results of games through book positions, bounded by the
//!   positions, not the games, except for 9 bytes per game id):
//!   `c` + position key (16 bytes BE) -> [`GameCounts::encode`] (12 bytes: wins,
//!   draws, losses as u32 LE, from that position's side to move's view);
//!   `g` + game id (u64 BE) -> empty, one per recorded game;
//!   `n` -> number of `g` entries (u64 LE). A store written before this tree
//!   existed opens with it empty.
//!
//! Durability: [`NodeStore::append`], [`NodeStore::add_kifu_keys`],
//! [`NodeStore::intern_evaluator`] and [`NodeStore::save_config`] call
//! `sled::Db::flush` (which writes and fsyncs the log) before returning. A batch
//! is one sled insert, so after a crash it is either wholly there or wholly absent.
//! [`NodeStore::record_game`] writes the game's counters, its id and the new
//! count as one `apply_batch` on `games`, then flushes: all or nothing.

use std::collections::BTreeMap;
use std::collections::btree_map::Entry;
use std::path::{Path, PathBuf};

use stera_rules::{Key, Move};

use stera_formats::leftovers::INCOMPLETE_MARKER;

use crate::{BookError, GameCounts, NodeId, NodeStore, RunConfig, ThoughtNode};

const FORMAT: &[u8] = b"stera-book 1";

/// Key in `meta`: present when the store is known to hold at most one node per
/// pair of colour-flipped twins (see [`crate::twins`]).
const TWINS_MERGED: &[u8] = b"twins merged";

/// A book store in a sled database directory.
pub struct SledStore {
    path: PathBuf,
    db: sled::Db,
    nodes: sled::Tree,
    bans: sled::Tree,
    kifu: sled::Tree,
    meta: sled::Tree,
    games: sled::Tree,
    len: u32,
    evaluators: Vec<String>,
    encode_buffer: Vec<u8>,
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
        refuse_inside_store(path)?;
        Self::open_with(path, true)
    }

    /// Opens (or creates) the store being written in a [`PartialStore`]'s
    /// directory, which holds the incomplete marker until it is published.
    pub(crate) fn open_partial(partial: &PartialStore) -> Result<Self, BookError> {
        Self::open_with(partial.path(), true)
    }

    /// Opens an existing store and never creates one: a missing path, a file, or a
    /// directory that holds no store is refused before anything is written there
    /// (what read-only tools such as `stats`, `show` and `export` need).
    ///
    /// # Errors
    /// [`BookError::NotAStore`], [`BookError::InUse`] when another process has it
    /// open, and the errors of [`SledStore::open`].
    pub fn open_existing(path: &Path) -> Result<Self, BookError> {
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
        // sled's files: `conf` and `db` (see sled::Config).
        if !path.join("conf").is_file() || !path.join("db").is_file() {
            return Err(not_a_store("it holds no sled database"));
        }
        Self::open_with(path, false)
    }

    /// Opens the store; a panic of sled on damaged files (it panics on some
    /// instead of failing) is [`BookError::Damaged`].
    fn open_with(path: &Path, create: bool) -> Result<Self, BookError> {
        crate::sled_guard::guarded(path, || Self::open_unguarded(path, create))
    }

    fn open_unguarded(path: &Path, create: bool) -> Result<Self, BookError> {
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
                .path(path)
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
        Ok(Self {
            path: path.to_owned(),
            db,
            nodes,
            bans,
            kifu,
            meta,
            games,
            len,
            evaluators,
            encode_buffer: Vec::new(),
        })
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
        Ok(merged)
    }

    /// A read-only view for another thread (see [`SledReader`]).
    #[must_use]
    pub fn reader(&self) -> SledReader {
        SledReader {
            path: self.path.clone(),
            nodes: self.nodes.clone(),
            games: self.games.clone(),
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

/// What one compaction pass did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CompactSummary {
    /// Chunks merged away.
    pub removed: usize,
    /// The first node id of the chunk a later pass should start from: every chunk
    /// before it holds at least the requested records.
    pub next_from: u32,
}

/// Merges the small chunks the dispatcher appends (one per committed batch of
/// results, each with sled's per-entry overhead in memory and on disk) into large
/// ones, on another thread while the store's owner keeps appending.
///
/// Safe beside appends: a merge is one atomic sled batch that inserts the merged
/// chunk under the first chunk's key and removes the others, so a crash leaves
/// either the old chunks or the new one, and appends only add keys past every
/// existing chunk. Not safe beside a scan of the nodes (an export's or a
/// backup's): a scan that already passed a merged chunk's key would miss the
/// chunks it absorbed. The coordinator runs compactions, exports and backups one
/// at a time on its maintenance thread.
#[derive(Clone)]
pub struct Compactor {
    path: PathBuf,
    db: sled::Db,
    nodes: sled::Tree,
}

impl std::fmt::Debug for Compactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Compactor({})", self.path.display())
    }
}

impl Compactor {
    /// Merges consecutive chunks starting at node id `from` until each holds at
    /// least `min_records` (the last group may hold fewer and is left for a later
    /// pass). Chunks that are already large enough are not rewritten.
    ///
    /// # Errors
    /// Storage failure or corrupt chunks.
    pub fn compact_from(&self, from: u32, min_records: u32) -> Result<CompactSummary, BookError> {
        let err = |e: sled::Error| store_error(&self.path, e);
        let mut summary = CompactSummary {
            removed: 0,
            next_from: from,
        };
        let mut group: Vec<(sled::IVec, sled::IVec)> = Vec::new();
        let mut group_records = 0u32;
        for item in self.nodes.range(from.to_be_bytes()..) {
            let (k, v) = item.map_err(err)?;
            let count = chunk_count(&v)?;
            if group.is_empty() {
                summary.next_from = chunk_first_id(&k)?;
            }
            group.push((k, v));
            group_records = group_records.saturating_add(count);
            if group_records >= min_records {
                summary.removed += self.merge(&group)?;
                summary.next_from = summary.next_from.saturating_add(group_records);
                group.clear();
                group_records = 0;
            }
        }
        // The tail stays for a later pass, when more chunks have joined it.
        Ok(summary)
    }

    /// Merges every chunk from node id `from` on into one.
    fn merge_rest(&self, from: u32) -> Result<usize, BookError> {
        let group = self
            .nodes
            .range(from.to_be_bytes()..)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| store_error(&self.path, e))?;
        self.merge(&group)
    }

    /// Replaces `group` (consecutive chunks) by one chunk in one atomic batch.
    fn merge(&self, group: &[(sled::IVec, sled::IVec)]) -> Result<usize, BookError> {
        let Some((first_key, _)) = group.first() else {
            return Ok(0);
        };
        if group.len() < 2 {
            return Ok(0);
        }
        let mut total = 0u32;
        let mut value = Vec::with_capacity(group.iter().map(|(_, v)| v.len()).sum());
        value.extend_from_slice(&[0; 4]);
        for (_, v) in group {
            total = total
                .checked_add(chunk_count(v)?)
                .ok_or_else(|| BookError::Corrupt("chunk counts overflow".into()))?;
            value.extend_from_slice(&v[4..]);
        }
        value[..4].copy_from_slice(&total.to_le_bytes());
        let mut batch = sled::Batch::default();
        for (k, _) in &group[1..] {
            batch.remove(k.clone());
        }
        let bytes = value.len() as u64;
        batch.insert(first_key.clone(), value);
        crate::space::ensure_room(&self.path, &self.path, bytes)?;
        let err = |e: sled::Error| store_error(&self.path, e);
        self.nodes.apply_batch(batch).map_err(err)?;
        self.db.flush().map_err(err)?;
        Ok(group.len() - 1)
    }
}

/// sled's error on open, with the lock held by another process told apart (sled
/// reports it as an I/O error "could not acquire lock on ...").
/// What an online backup wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BackupSummary {
    /// Key-value entries copied (all trees).
    pub entries: u64,
    /// Thought positions in the copy.
    pub nodes: u32,
    /// Leftovers of interrupted backups removed beside the target first.
    pub leftovers_removed: u32,
}

impl SledStore {
    /// Copies the whole store (every tree: positions, configuration, bans, kifu,
    /// game results) into a new store at `out`: [`SledStore::backup_snapshot`]
    /// then [`BackupSnapshot::write_to`].
    ///
    /// # Errors
    /// `out` exists already, or a storage failure on either side.
    pub fn backup_to(&self, out: &Path) -> Result<BackupSummary, BookError> {
        self.backup_snapshot()?.write_to(out)
    }

    /// Takes what a consistent backup of this moment needs, cheaply, so that the
    /// copy itself can run on another thread while the owner keeps writing:
    /// the number of nodes (nodes are only ever appended, so the first `n` of a
    /// later scan are those of now) and a copy of every other tree (bans, kifu,
    /// configuration and game results, which are small and change in place: a
    /// game is recorded as one batch over several keys, so only a copy taken
    /// between two writes keeps a game whole).
    ///
    /// # Errors
    /// Storage failure.
    pub fn backup_snapshot(&self) -> Result<BackupSnapshot, BookError> {
        self.db.flush().map_err(|e| self.err(e))?;
        let mut trees = Vec::new();
        for name in self.db.tree_names() {
            if name.as_ref() == b"nodes" {
                continue;
            }
            let tree = self.db.open_tree(&name).map_err(|e| self.err(e))?;
            let entries = tree
                .iter()
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| self.err(e))?;
            trees.push((name, entries));
        }
        Ok(BackupSnapshot {
            path: self.path.clone(),
            nodes: self.nodes.clone(),
            node_count: self.len,
            trees,
        })
    }
}

/// A store as it was when [`SledStore::backup_snapshot`] was called, ready to be
/// written elsewhere by another thread.
pub struct BackupSnapshot {
    path: PathBuf,
    nodes: sled::Tree,
    node_count: u32,
    trees: Vec<(sled::IVec, Vec<(sled::IVec, sled::IVec)>)>,
}

impl std::fmt::Debug for BackupSnapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "BackupSnapshot({}, {} nodes)",
            self.path.display(),
            self.node_count
        )
    }
}

impl BackupSnapshot {
    /// Thought positions the backup holds.
    #[must_use]
    pub fn node_count(&self) -> u32 {
        self.node_count
    }

    /// Writes the snapshot as a new store at `out`. The copy is written to
    /// a temporary directory (see `PartialStore`) and renamed to `out` only when
    /// complete and flushed: a failed backup removes it, a killed one leaves it
    /// marked incomplete (removed by the next backup into the same directory
    /// once this process has ended), never a store at `out` that is incomplete.
    /// Node chunks are copied up to the snapshot's node count; chunks appended
    /// since are left out. Must not run beside a [`Compactor`] of the same store.
    ///
    /// # Errors
    /// `out` exists already, a storage failure on either side, or the node
    /// chunks do not end at the snapshot's count (a compaction ran meanwhile).
    pub fn write_to(&self, out: &Path) -> Result<BackupSummary, BookError> {
        let target = PartialStore::create(out)?;
        let partial = target.path().to_owned();
        // sled writes its first files when it opens, and hangs on a full disk.
        crate::space::ensure_room(&partial, out, 0)?;
        let copy = sled::Config::new()
            .path(&partial)
            .open()
            .map_err(|e| store_error(&partial, e))?;
        let to_err = |e: sled::Error| store_error(&partial, e);
        let mut entries = 0u64;
        for (tree_name, kvs) in &self.trees {
            let to = copy.open_tree(tree_name).map_err(to_err)?;
            for part in kvs.chunks(50_000) {
                let mut batch = sled::Batch::default();
                let mut bytes = 0usize;
                for (k, v) in part {
                    bytes += k.len() + v.len();
                    batch.insert(k.clone(), v.clone());
                }
                crate::space::ensure_room(&partial, out, bytes as u64)?;
                to.apply_batch(batch).map_err(to_err)?;
                entries += part.len() as u64;
            }
        }
        entries += self.copy_nodes(&copy, &partial, out)?;
        copy.flush().map_err(to_err)?;
        drop(copy);
        let leftovers_removed = target.leftovers_removed();
        target.publish()?;
        Ok(BackupSummary {
            entries,
            nodes: self.node_count,
            leftovers_removed,
        })
    }

    /// Copies the node chunks below the snapshot's count; returns the chunks copied.
    fn copy_nodes(&self, copy: &sled::Db, partial: &Path, out: &Path) -> Result<u64, BookError> {
        let to = copy
            .open_tree("nodes")
            .map_err(|e| store_error(partial, e))?;
        let mut copied = 0u64;
        let mut end = 0u32;
        let mut batch = sled::Batch::default();
        let mut batch_bytes = 0usize;
        for item in self.nodes.range(..self.node_count.to_be_bytes()) {
            let (k, v) = item.map_err(|e| store_error(&self.path, e))?;
            let first = chunk_first_id(&k)?;
            if first != end {
                return Err(BookError::Corrupt(format!(
                    "node chunk starts at id {first}, expected {end}"
                )));
            }
            end = first
                .checked_add(chunk_count(&v)?)
                .ok_or_else(|| BookError::Corrupt(format!("chunk at {first} overflows")))?;
            batch_bytes += v.len();
            batch.insert(k, v);
            copied += 1;
            if batch_bytes >= 64 << 20 {
                crate::space::ensure_room(partial, out, batch_bytes as u64)?;
                to.apply_batch(std::mem::take(&mut batch))
                    .map_err(|e| store_error(partial, e))?;
                batch_bytes = 0;
            }
        }
        crate::space::ensure_room(partial, out, batch_bytes as u64)?;
        to.apply_batch(batch).map_err(|e| store_error(partial, e))?;
        if end != self.node_count {
            return Err(BookError::Invalid(format!(
                "the store's node chunks end at {end}, not at the snapshot's {} nodes (was it compacted during the backup?)",
                self.node_count
            )));
        }
        Ok(copied)
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
fn store_error(path: &Path, source: sled::Error) -> BookError {
    match source {
        sled::Error::Corruption { .. }
        | sled::Error::ReportableBug(_)
        | sled::Error::Unsupported(_) => BookError::Damaged {
            path: path.display().to_string(),
            detail: source.to_string(),
        },
        source => BookError::Store {
            path: path.display().to_string(),
            source,
        },
    }
}

fn chunk_first_id(key: &[u8]) -> Result<u32, BookError> {
    let b: [u8; 4] = key
        .try_into()
        .map_err(|_| BookError::Corrupt(format!("node chunk key of {} bytes", key.len())))?;
    Ok(u32::from_be_bytes(b))
}

/// Key of a position's counters in the `games` tree: `c` + key (16 bytes BE).
fn counts_key(key: Key) -> [u8; 17] {
    let mut k = [b'c'; 17];
    k[1..].copy_from_slice(&key.to_bytes());
    k
}

/// Key of a recorded game id in the `games` tree: `g` + id (8 bytes BE).
fn game_id_key(id: u64) -> [u8; 9] {
    let mut k = [b'g'; 9];
    k[1..].copy_from_slice(&id.to_be_bytes());
    k
}

/// The key `n` in the `games` tree: the number of recorded game ids.
const GAMES_RECORDED: &[u8] = b"n";

fn decode_counts(key: Key, value: &[u8]) -> Result<GameCounts, BookError> {
    GameCounts::decode(value).map_err(|e| BookError::Corrupt(format!("position {key}: {e}")))
}

fn chunk_count(value: &[u8]) -> Result<u32, BookError> {
    match value.get(..4) {
        Some(b) => Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]])),
        None => Err(BookError::Corrupt("node chunk without a count".into())),
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
        if buf.capacity() > (16 << 20) {
            *buf = Vec::new();
        }
        Ok(NodeId(first))
    }

    fn len(&self) -> u32 {
        self.len
    }

    fn for_each_node(
        &self,
        visit: &mut dyn FnMut(NodeId, ThoughtNode) -> Result<(), BookError>,
    ) -> Result<(), BookError> {
        nodes_of(&self.nodes, &self.path, visit)
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
        Ok(())
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
        Ok(true)
    }

    fn game_counts(&self, key: Key) -> Result<GameCounts, BookError> {
        match self.games.get(counts_key(key)).map_err(|e| self.err(e))? {
            Some(v) => decode_counts(key, &v),
            None => Ok(GameCounts::default()),
        }
    }

    fn games_recorded(&self) -> Result<u64, BookError> {
        match self.games.get(GAMES_RECORDED).map_err(|e| self.err(e))? {
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

    fn max_game_id(&self) -> Result<Option<u64>, BookError> {
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

    fn for_each_game_count(&self, f: &mut dyn FnMut(Key, GameCounts)) -> Result<(), BookError> {
        game_counts_of(&self.games, &self.path, f)
    }
}

/// A new store written under a temporary name beside `OUT`
/// (`OUT.stera-partial-<pid>.<n>`, see [`stera_formats::leftovers`]) and renamed
/// to `OUT` when complete, so that `OUT` is never a half-written store. The
/// temporary directory is made new (an existing one is never reused or
/// deleted) and holds [`INCOMPLETE_MARKER`] until it is complete, so that no
/// open takes it for a store. Leftovers of interrupted writers beside `OUT` are
/// removed first (only those this product made, see `clean_stale`).
pub(crate) struct PartialStore {
    partial: PathBuf,
    out: PathBuf,
    leftovers_removed: u32,
    published: bool,
}

impl Drop for PartialStore {
    /// A copy that failed (or was abandoned) is removed at once: it is this
    /// process's own directory, and on a full disk its space is wanted back.
    fn drop(&mut self) {
        if !self.published {
            let _ = std::fs::remove_dir_all(&self.partial);
        }
    }
}

impl PartialStore {
    /// Claims `out` (which must not exist): makes the temporary directory with
    /// its marker.
    pub(crate) fn create(out: &Path) -> Result<Self, BookError> {
        if out.exists() {
            return Err(BookError::Invalid(format!(
                "target `{}` exists already",
                out.display()
            )));
        }
        let name = out
            .file_name()
            .map(std::ffi::OsString::from)
            .ok_or_else(|| BookError::Invalid(format!("target `{}` has no name", out.display())))?;
        let parent = match out.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let removed = stera_formats::leftovers::clean_stale(&parent);
        let io_err = |path: &Path, e: std::io::Error| store_error(path, sled::Error::Io(e));
        let mut n = 0u32;
        let partial = loop {
            let mut candidate = name.clone();
            candidate.push(format!(".{}{n}", stera_formats::leftovers::tag()));
            let candidate = out.with_file_name(candidate);
            match std::fs::create_dir(&candidate) {
                Ok(()) => break candidate,
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && n < 1000 => n += 1,
                Err(e) => return Err(io_err(&candidate, e)),
            }
        };
        let marker = format!(
            "an unfinished copy of a stera book store, being written to `{}` by process {}; it is not a store (an interrupted copy is removed by the next backup into this directory)\n",
            out.display(),
            std::process::id()
        );
        std::fs::write(partial.join(INCOMPLETE_MARKER), marker).map_err(|e| io_err(&partial, e))?;
        Ok(Self {
            partial,
            out: out.to_owned(),
            leftovers_removed: u32::try_from(removed.len()).unwrap_or(u32::MAX),
            published: false,
        })
    }

    /// Where the store is written.
    pub(crate) fn path(&self) -> &Path {
        &self.partial
    }

    /// Leftovers of interrupted writers removed beside the target.
    pub(crate) fn leftovers_removed(&self) -> u32 {
        self.leftovers_removed
    }

    /// Marks the complete store (closed and flushed) complete and renames it to
    /// its name. Fails, leaving the temporary directory, when `out` appeared
    /// meanwhile.
    pub(crate) fn publish(mut self) -> Result<(), BookError> {
        let io_err = |path: &Path, e: std::io::Error| store_error(path, sled::Error::Io(e));
        if self.out.exists() {
            return Err(BookError::Invalid(format!(
                "target `{}` appeared while the store was written to `{}`",
                self.out.display(),
                self.partial.display()
            )));
        }
        // Durable before the marker goes: a crash now leaves a complete store
        // under the temporary name, never an incomplete one without its marker.
        sync_dir(&self.partial).map_err(|e| io_err(&self.partial, e))?;
        std::fs::remove_file(self.partial.join(INCOMPLETE_MARKER))
            .map_err(|e| io_err(&self.partial, e))?;
        sync_dir(&self.partial).map_err(|e| io_err(&self.partial, e))?;
        std::fs::rename(&self.partial, &self.out).map_err(|e| io_err(&self.partial, e))?;
        self.published = true;
        if let Some(parent) = self.out.parent() {
            // The rename is durable once the directory is.
            let _ = sync_dir(parent);
        }
        Ok(())
    }
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

/// fsync of a directory (its entries); an empty path is the current directory.
fn sync_dir(dir: &Path) -> std::io::Result<()> {
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    std::fs::File::open(dir)?.sync_all()
}

/// Every node of the `nodes` tree, in id order (a sled panic on a damaged page
/// is [`BookError::Damaged`]).
fn nodes_of(
    nodes: &sled::Tree,
    path: &Path,
    visit: &mut dyn FnMut(NodeId, ThoughtNode) -> Result<(), BookError>,
) -> Result<(), BookError> {
    crate::sled_guard::guarded(path, || nodes_of_unguarded(nodes, path, visit))
}

fn nodes_of_unguarded(
    nodes: &sled::Tree,
    path: &Path,
    visit: &mut dyn FnMut(NodeId, ThoughtNode) -> Result<(), BookError>,
) -> Result<(), BookError> {
    let mut expected = 0u32;
    for item in nodes.iter() {
        let (k, v) = item.map_err(|e| store_error(path, e))?;
        let first = chunk_first_id(&k)?;
        if first != expected {
            return Err(BookError::Corrupt(format!(
                "node chunk starts at id {first}, expected {expected}"
            )));
        }
        let count = chunk_count(&v)?;
        let mut rest = &v[4..];
        for i in 0..count {
            let (node, tail) = ThoughtNode::decode(rest)
                .map_err(|e| BookError::Corrupt(format!("node {}: {e}", first + i)))?;
            rest = tail;
            visit(NodeId(first + i), node)?;
        }
        if !rest.is_empty() {
            return Err(BookError::Corrupt(format!(
                "chunk at {first}: {} bytes after {count} records",
                rest.len()
            )));
        }
        expected = first + count;
    }
    Ok(())
}

/// Every position's game counters in the `games` tree.
fn game_counts_of(
    games: &sled::Tree,
    path: &Path,
    f: &mut dyn FnMut(Key, GameCounts),
) -> Result<(), BookError> {
    for item in games.scan_prefix(b"c") {
        let (k, v) = item.map_err(|e| store_error(path, e))?;
        let b: [u8; 16] = k
            .get(1..)
            .and_then(|b| b.try_into().ok())
            .ok_or_else(|| BookError::Corrupt(format!("game counts key of {} bytes", k.len())))?;
        let key = Key::from_bytes(b);
        f(key, decode_counts(key, &v)?);
    }
    Ok(())
}

/// A read-only view of a [`SledStore`] for another thread: an export reads the
/// nodes and game counters while the dispatcher keeps appending. sled trees are
/// shared handles; a scan sees every write committed before it reaches it, and
/// nodes are appended in id order, so the first `n` nodes read are those of a
/// book snapshot of `n` nodes.
#[derive(Clone)]
pub struct SledReader {
    path: PathBuf,
    nodes: sled::Tree,
    games: sled::Tree,
}

impl std::fmt::Debug for SledReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SledReader({})", self.path.display())
    }
}

impl SledReader {
    /// Every stored node in id order (including nodes appended during the scan).
    ///
    /// # Errors
    /// Storage failure, corrupt records, or what `visit` returns.
    pub fn for_each_node(
        &self,
        visit: &mut dyn FnMut(NodeId, ThoughtNode) -> Result<(), BookError>,
    ) -> Result<(), BookError> {
        nodes_of(&self.nodes, &self.path, visit)
    }

    /// Every position's game counters (each counter as last written).
    ///
    /// # Errors
    /// Storage failure or corrupt counters.
    pub fn for_each_game_count(&self, f: &mut dyn FnMut(Key, GameCounts)) -> Result<(), BookError> {
        game_counts_of(&self.games, &self.path, f)
    }
}

/// The tree of quarantine records: key as in `bans`, value the note (SFEN, a
/// tab, the reason). Opened when used, so stores of earlier versions need nothing.
const QUARANTINE: &str = "quarantine";

/// The key of a banned edge: node id (u32 BE) + move (u16 BE).
fn ban_key(node: NodeId, mv: Move) -> [u8; 6] {
    let mut key = [0u8; 6];
    key[..4].copy_from_slice(&node.0.to_be_bytes());
    key[4..].copy_from_slice(&mv.raw().to_be_bytes());
    key
}

fn decode_ban_key(k: &[u8]) -> Result<(NodeId, Move), BookError> {
    let [a, b, c, d, e, f] = k else {
        return Err(BookError::Corrupt(format!("ban key of {} bytes", k.len())));
    };
    let node = NodeId(u32::from_be_bytes([*a, *b, *c, *d]));
    let raw = u16::from_be_bytes([*e, *f]);
    let mv = Move::from_raw(raw)
        .ok_or_else(|| BookError::Corrupt(format!("banned move code {raw:#06x}")))?;
    Ok((node, mv))
}
