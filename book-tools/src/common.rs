//! Helpers shared by the subcommands: opening stores, reading line files, writing
//! to stdout.

use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use stera_book::terashock::NodeExtras;
use stera_book::{Book, BookError, NodeStore, OpponentId, OpponentSelection, SledStore};
use stera_formats::{LineReader, MAX_LINE_BYTES};

/// Opens an existing store for a command that only reads it: never creates
/// one, and leaves every byte of it as it is, whole or damaged (sled opens a
/// private copy, see `SledStore::open_read_only`).
pub fn open_for_reading(db: &Path) -> Result<SledStore> {
    let store = SledStore::open_read_only(db).map_err(|e| store_error(db, e))?;
    if store.unrecorded() {
        crate::tell!(
            "note: `{}` has no record of what it holds (made before stores kept one, `{}`), so it could not be told whole; the next command that writes to it begins one",
            db.display(),
            stera_book::RECORD_FILE
        );
    }
    note_unmerged_twins(&store, db);
    Ok(store)
}

/// Opens an existing store for a command that writes into it; never creates
/// one (a missing path or a directory that is not a store is refused as it is).
pub fn open_existing(db: &Path) -> Result<SledStore> {
    let store = SledStore::open_existing(db).map_err(|e| store_error(db, e))?;
    if store.record_begun() {
        crate::tell!(
            "note: `{}` had no record of what it holds (made before stores kept one, `{}`): begun now, so that a store cut short is reported as damaged from now on",
            db.display(),
            stera_book::RECORD_FILE
        );
    }
    note_unmerged_twins(&store, db);
    Ok(store)
}

/// Says so on stderr when `db` may hold both colour-flipped twins of a position
/// (made before twins became one node): it works, but `migrate` makes it what
/// YaneuraOu's peta_shock would make of it.
pub fn note_unmerged_twins(store: &SledStore, db: &Path) {
    if let Ok(false) = store.twins_merged() {
        crate::tell!(
            "note: `{}` may hold both colour-flipped twins of a position (it was made before twins became one node, or imported with --keep-twins); `book-tools migrate --db {} --out NEW` merges them",
            db.display(),
            db.display()
        );
    }
}

/// Opens the store of a subcommand that writes into it; a missing one is made
/// only when `create` (its `--create`) says so, and then said: a typo in `--db`
/// must not start a new, empty book without a word.
pub fn open_for_writing(db: &Path, create: bool) -> Result<SledStore> {
    if !stera_book::store_path::must_create_store(db, create)? {
        return open_existing(db);
    }
    let store = SledStore::open(db).map_err(|e| store_error(db, e))?;
    crate::tell!("created a new book store `{}`", db.display());
    Ok(store)
}

/// The error of opening `db`: "in use" and "not a store" name the store already
/// and are reported as they are (once).
fn store_error(db: &Path, e: BookError) -> anyhow::Error {
    match e {
        BookError::InUse { .. } | BookError::NotAStore { .. } | BookError::Damaged { .. } => {
            anyhow::Error::new(e)
        }
        e => {
            anyhow::Error::new(e).context(format!("cannot open the book store `{}`", db.display()))
        }
    }
}

/// Loads the book and its per-node extras, each node's evaluator included,
/// from `store` (at `db`, named in errors) with one scan.
pub fn load(store: &SledStore, db: &Path, with_depths: bool) -> Result<(Book, NodeExtras)> {
    NodeExtras::load_with_book_and_evaluators(store, with_depths)
        .with_context(|| format!("cannot load the book in `{}`", db.display()))
}

/// `eprintln!` for the subcommands: a line on standard error (notes, progress,
/// warnings), dropped when standard error is closed (`2>&1 | head`) instead of
/// panicking, so the command goes on and keeps what it stores.
#[macro_export]
macro_rules! tell {
    ($($arg:tt)*) => {
        $crate::common::tell_line(format_args!($($arg)*))
    };
}

/// Writes one line for [`tell!`]; any failure to write drops it.
pub fn tell_line(args: std::fmt::Arguments<'_>) {
    let mut err = io::stderr().lock();
    let _ = err.write_fmt(args).and_then(|()| err.write_all(b"\n"));
}

/// `println!` for the subcommands: a line on standard output, where a reader that
/// went away (`book-tools kifu add ... | head`) is no error and no panic: the line
/// is dropped and the command goes on, so what it stores after printing is kept.
#[macro_export]
macro_rules! say {
    () => {
        $crate::common::say_line(format_args!(""))
    };
    ($($arg:tt)*) => {
        $crate::common::say_line(format_args!($($arg)*))
    };
}

/// Writes one line for [`say!`]: a closed pipe drops it quietly; another failure
/// (a full disk under a redirection) is told on standard error, once per line.
pub fn say_line(args: std::fmt::Arguments<'_>) {
    let mut out = io::stdout().lock();
    match out.write_fmt(args).and_then(|()| out.write_all(b"\n")) {
        Err(e) if e.kind() != io::ErrorKind::BrokenPipe => {
            let _ = writeln!(io::stderr(), "cannot write to standard output: {e}");
        }
        _ => {}
    }
}

/// Writes to a locked stdout; a reader that went away (`book-tools stats | head`)
/// ends the output quietly instead of a panic or an error.
pub fn to_stdout(write: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> Result<()> {
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    match write(&mut out).and_then(|()| out.flush()) {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        result => result.context("cannot write to stdout"),
    }
}

/// A line of a text file with its 1-based number; `Err` for a line that is not
/// UTF-8 or longer than [`MAX_LINE_BYTES`] (what is wrong with it).
pub type NumberedLine = (u64, Result<String, String>);

/// Calls `each` with every line of `path` (`-`: standard input; opened once, so a
/// pipe is read whole), read with bounded memory, from a file
/// that may hold at most `max_bytes`: larger (or endless) input is an error once
/// that much was read. A UTF-8 byte order mark at the start of the file is not
/// part of its first line.
pub fn for_each_line_within(
    path: &Path,
    max_bytes: u64,
    mut each: impl FnMut(NumberedLine),
) -> Result<()> {
    let file = stera_formats::input::open_input(path)
        .with_context(|| format!("cannot read `{}`", path.display()))?;
    let read = std::rc::Rc::new(std::cell::Cell::new(0u64));
    let counted = Counted {
        inner: file,
        read: read.clone(),
        left: max_bytes.saturating_add(1),
    };
    let mut lines = LineReader::new(io::BufReader::new(counted));
    let mut buf = Vec::new();
    let too_large = || {
        anyhow::anyhow!(
            "`{}` is larger than {max_bytes} bytes, the limit for this file",
            path.display()
        )
    };
    while lines
        .next_line(&mut buf)
        .with_context(|| format!("cannot read `{}`", path.display()))?
    {
        if read.get() > max_bytes {
            return Err(too_large());
        }
        let text = if lines.truncated() {
            Err(format!(
                "line longer than {MAX_LINE_BYTES} bytes (MAX_LINE_BYTES)"
            ))
        } else {
            if lines.line() == 1 && buf.starts_with(UTF8_BOM) {
                buf.drain(..UTF8_BOM.len());
            }
            String::from_utf8(std::mem::take(&mut buf))
                .map_err(|_| "line is not valid UTF-8".to_owned())
        };
        each((lines.line(), text));
    }
    if read.get() > max_bytes {
        return Err(too_large());
    }
    Ok(())
}

/// A reader that stops after `left` bytes and counts what it read.
struct Counted<R> {
    inner: R,
    read: std::rc::Rc<std::cell::Cell<u64>>,
    left: u64,
}

impl<R: io::Read> io::Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let room = usize::try_from(self.left)
            .unwrap_or(usize::MAX)
            .min(buf.len());
        let n = self.inner.read(&mut buf[..room])?;
        self.left -= n as u64;
        self.read.set(self.read.get() + n as u64);
        Ok(n)
    }
}

/// The UTF-8 byte order mark some editors put at the start of a text file.
const UTF8_BOM: &[u8] = b"\xef\xbb\xbf";

/// Lists at most `limit` of `items` under `title`, with how many more there are.
pub fn listing(title: &str, items: &[String], limit: usize) -> String {
    let mut text = format!("{title}:");
    for item in items.iter().take(limit) {
        text.push_str("\n  ");
        text.push_str(item);
    }
    if items.len() > limit {
        text.push_str(&format!("\n  ... and {} more", items.len() - limit));
    }
    text
}

/// `--opponents`: `all` or a comma-separated list of learning opponents.
///
/// # Errors
/// An empty item.
pub fn parse_opponents(text: &str) -> std::result::Result<OpponentSelection, String> {
    OpponentSelection::parse(text).map_err(|e| e.to_string())
}

/// The ids of the learning opponents `selection` names in `store` (at `db`);
/// says so on stderr when the store has no learning games at all.
///
/// # Errors
/// A listed opponent the store does not know, or a storage failure.
pub fn selected_opponents(
    store: &dyn NodeStore,
    selection: &OpponentSelection,
    db: &Path,
) -> Result<Vec<OpponentId>> {
    let known = store
        .opponents()
        .with_context(|| format!("cannot read the learning opponents of `{}`", db.display()))?;
    if known.is_empty() {
        crate::tell!(
            "note: `{}` holds no learning games (`book-tools learn` or the coordinator's --learn-games count them); results change nothing",
            db.display()
        );
    }
    selection
        .resolve(&known)
        .with_context(|| format!("--opponents for `{}`", db.display()))
}

/// Every position's learning counters against the opponents `selection` names,
/// added (the pooled estimate for `all`).
///
/// # Errors
/// See [`selected_opponents`].
pub fn learning_counts(
    store: &dyn NodeStore,
    selection: &OpponentSelection,
    db: &Path,
) -> Result<std::collections::HashMap<stera_rules::Key, stera_book::GameCounts>> {
    let ids = selected_opponents(store, selection, db)?;
    stera_book::learning_counts(store, &ids)
        .with_context(|| format!("cannot read the learning results of `{}`", db.display()))
}

/// An input that is read more than once or sought in (`import` checks a book
/// before it stores it): the file itself, or, for a stream (`-`, a pipe, a FIFO,
/// `/dev/stdin`), a temporary copy in the system's temporary directory, removed
/// when this is dropped. A stream is read once, whole.
pub struct Rereadable {
    path: PathBuf,
    _copy: Option<tempfile::TempPath>,
}

impl Rereadable {
    /// `path` as is when it is a regular file; a stream is copied first. A copy
    /// starting with `binary_magic` is named with `binary_extension` (a stream has
    /// no extension to tell its format by). A text stream with no line end in
    /// [`stera_formats::MAX_SKIPPED_LINE_BYTES`] (such as `/dev/zero`) is refused
    /// rather than copied until the disk is full.
    ///
    /// # Errors
    /// The input cannot be read or the copy written.
    pub fn open(path: &Path, binary_magic: &[u8], binary_extension: &str) -> Result<Self> {
        if !stera_formats::input::is_stream(path) {
            return Ok(Self {
                path: path.to_path_buf(),
                _copy: None,
            });
        }
        let name = path.display();
        let mut input = stera_formats::input::open_input(path)
            .with_context(|| format!("cannot read `{name}`"))?;
        let mut head = Vec::new();
        (&mut input)
            .take(binary_magic.len() as u64)
            .read_to_end(&mut head)
            .with_context(|| format!("cannot read `{name}`"))?;
        let binary = head == binary_magic;
        let suffix = if binary {
            format!(".{binary_extension}")
        } else {
            ".txt".to_owned()
        };
        let copy = tempfile::Builder::new()
            .prefix("stera-input-")
            .suffix(&suffix)
            .tempfile()
            .context("cannot create a temporary copy of the input")?;
        let (file, temp) = copy.into_parts();
        let mut out = io::BufWriter::new(file);
        let write_error = || "cannot write the temporary copy of the input";
        out.write_all(&head).with_context(write_error)?;
        let mut since_line_end = head.len() as u64;
        let mut buf = vec![0u8; 1 << 16];
        loop {
            let n = match input.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e).with_context(|| format!("cannot read `{name}`")),
            };
            let chunk = &buf[..n];
            since_line_end = match chunk.iter().rposition(|&b| b == b'\n') {
                Some(at) => (n - at - 1) as u64,
                None => since_line_end + n as u64,
            };
            if !binary && since_line_end > stera_formats::MAX_SKIPPED_LINE_BYTES {
                bail!(
                    "`{name}`: no line end in {} MiB (MAX_SKIPPED_LINE_BYTES): not a book",
                    stera_formats::MAX_SKIPPED_LINE_BYTES >> 20
                );
            }
            out.write_all(chunk).with_context(write_error)?;
        }
        out.flush().with_context(write_error)?;
        Ok(Self {
            path: temp.to_path_buf(),
            _copy: Some(temp),
        })
    }

    /// Where to read it.
    pub fn path(&self) -> &Path {
        &self.path
    }
}
