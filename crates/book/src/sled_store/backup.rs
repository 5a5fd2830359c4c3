//! Backups: a snapshot of a store taken on its owner's thread, copied into a new
//! store elsewhere, and the partial directory every new copy is written in.

use std::path::{Path, PathBuf};

use stera_formats::leftovers::INCOMPLETE_MARKER;

use super::keys::{chunk_count, chunk_first_id};
use super::{SledStore, store_error};
use crate::BookError;

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
        // The copy's record of what it holds, as every store has.
        let tree = |name: &str| copy.open_tree(name).map_err(to_err);
        let holdings = super::whole::holdings_of(
            self.node_count,
            &tree("kifu")?,
            &tree("meta")?,
            &tree("games")?,
            copy.tree_names()
                .iter()
                .any(|n| n.as_ref() == super::learning::LEARNING.as_bytes())
                .then(|| tree(super::learning::LEARNING))
                .transpose()?
                .as_ref(),
            &partial,
        )?;
        super::whole::WholeRecord::create(&partial, holdings)?;
        tree("meta")?
            .insert(super::whole::RECORD_KEPT, &[])
            .map_err(to_err)?;
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

/// fsync of a directory (its entries); an empty path is the current directory.
fn sync_dir(dir: &Path) -> std::io::Result<()> {
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    std::fs::File::open(dir)?.sync_all()
}
