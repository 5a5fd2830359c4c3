//! Opening a store: creating it, opening an existing one (for writing, for
//! reading through a private copy, or to inspect it), and what is refused
//! before sled touches a directory (an unfinished copy, lost sled files, a
//! store inside another store); sled's file lock waited for and told apart.

use std::path::Path;

use stera_formats::leftovers::INCOMPLETE_MARKER;

use super::keys::{FORMAT, QUARANTINE, TWINS_MERGED, chunk_count, chunk_first_id};
use super::whole::{WholeRecord, holdings_of};
use super::{OpenMode, PartialStore, RECORD_FILE, SledStore, learning, read_copy, store_error};
use crate::BookError;

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

    pub(super) fn open_existing_as(path: &Path, mode: OpenMode) -> Result<Self, BookError> {
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

/// How long an open waits for sled's file lock before reporting the store in use.
///
/// sled 0.34 releases the lock of a dropped `Db` only when its background threads
/// have exited, a moment after the drop (sled issues #1234 and #1289): reopening
/// a store this process has just closed (a restart, a tool after a test, a
/// migrate after an import) would otherwise fail now and then. A store that
/// another live process holds keeps its lock far longer than this.
pub(super) const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

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
