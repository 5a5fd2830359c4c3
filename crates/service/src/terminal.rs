//! One live status line at the bottom of a terminal, and log records that never
//! collide with it.
//!
//! A process that draws a status line (`\r` + text, no newline) and logs through
//! `tracing` on the same stderr would glue a log record onto the status line, or
//! leave the status line's tail behind a shorter record. Both go through here
//! instead: [`draw`] replaces the status line, and the log writer [`StderrWriter`]
//! (installed by [`crate::logging::init`]) erases the status line, writes the
//! record on a line of its own, and draws the status line again below it. One lock
//! orders the two, so a record is never written into the middle of a status line.
//!
//! A status line wider than the terminal would wrap, and `\r\x1b[2K` erases only
//! its last row: every redraw would leave a copy above. So [`draw`] cuts the line
//! to the terminal's width, read at each draw (a window may be resized): whole
//! fields are dropped from the end, and a `…` says so.
//!
//! Only a process whose stderr is a terminal draws a status line; one that shares
//! its terminal with a parent that draws one (the coordinator's local workers)
//! draws none.
//!
//! Writing never blocks the caller: records, draws and clears go into a bounded
//! queue that one thread (`stderr`) writes out in order. A stderr nobody reads
//! (a full pipe) used to stop every thread that logged, and with them the
//! coordinator's `/metrics` and its answer to SIGTERM; now the queue fills,
//! further records are dropped and counted ([`dropped`]), and once stderr moves
//! again a line says how many were lost. [`flush`] waits, with a bound, for what
//! is queued (a process's last words).

use std::io::{self, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// What the writer thread is asked to do, in order.
enum Out {
    /// Whole log records.
    Record(Vec<u8>),
    /// Replace the status line.
    Draw(String),
    /// Remove the status line.
    Clear,
    /// Answer once everything before is written.
    Flush(SyncSender<()>),
}

/// Records (and draws) the queue holds before further ones are dropped.
pub const QUEUE_RECORDS: usize = 4096;

/// Records dropped because the queue was full (stderr not read).
static DROPPED: AtomicU64 = AtomicU64::new(0);

/// The queue of the writer thread (`None`: the thread could not be started,
/// then writes go straight to stderr).
static QUEUE: OnceLock<Option<SyncSender<Out>>> = OnceLock::new();

/// Log records dropped so far because stderr was not read.
#[must_use]
pub fn dropped() -> u64 {
    DROPPED.load(Ordering::Relaxed)
}

fn queue() -> Option<&'static SyncSender<Out>> {
    QUEUE
        .get_or_init(|| {
            let (tx, rx) = std::sync::mpsc::sync_channel(QUEUE_RECORDS);
            std::thread::Builder::new()
                .name("stderr".into())
                .spawn(move || write_out(&rx))
                .ok()
                .map(|_| tx)
        })
        .as_ref()
}

/// Queues `out`; `false` when the queue is full (or there is none).
fn enqueue(out: Out) -> Result<(), Out> {
    match queue() {
        Some(tx) => tx.try_send(out).map_err(|e| match e {
            TrySendError::Full(out) | TrySendError::Disconnected(out) => out,
        }),
        None => Err(out),
    }
}

/// The writer thread: writes each request out in order, around the status
/// line, and says how many records were dropped before the next one.
fn write_out(rx: &Receiver<Out>) {
    let mut told = 0u64;
    for out in rx {
        let dropped = DROPPED.load(Ordering::Relaxed);
        if dropped > told && !matches!(out, Out::Flush(_)) {
            let shown = lock_shown();
            let line = format!(
                "{} log records dropped: stderr was not read (queue of {QUEUE_RECORDS} full)\n",
                dropped - told
            );
            let _ = write_around(&mut io::stderr().lock(), &shown, line.as_bytes());
            told = dropped;
        }
        match out {
            Out::Record(bytes) => {
                let shown = lock_shown();
                let _ = write_around(&mut io::stderr().lock(), &shown, &bytes);
            }
            Out::Draw(text) => draw_now(text),
            Out::Clear => clear_now(),
            Out::Flush(done) => {
                let _ = io::stderr().flush();
                let _ = done.try_send(());
            }
        }
    }
}

/// Waits until what was queued before is written, at most `grace` (a stderr
/// nobody reads must not keep a process from ending).
pub fn flush(grace: Duration) {
    let Some(tx) = QUEUE.get().and_then(Option::as_ref) else {
        let _ = io::stderr().flush();
        return;
    };
    let deadline = Instant::now() + grace;
    let (done_tx, done) = std::sync::mpsc::sync_channel(1);
    let mut request = Out::Flush(done_tx);
    loop {
        match tx.try_send(request) {
            Ok(()) => break,
            Err(TrySendError::Disconnected(_)) => return,
            Err(TrySendError::Full(back)) => {
                if Instant::now() >= deadline {
                    return;
                }
                request = back;
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }
    let _ = done.recv_timeout(deadline.saturating_duration_since(Instant::now()));
}

/// Writes `line` (and a line end) after every queued record, and waits for it
/// at most `grace`: a process's last words (its error), in order with its log.
pub fn last_words(line: &str, grace: Duration) {
    let mut bytes = line.as_bytes().to_vec();
    bytes.push(b'\n');
    if QUEUE.get().and_then(Option::as_ref).is_some() {
        let _ = StderrWriter.write_all(&bytes);
        flush(grace);
    } else {
        let _ = io::stderr().lock().write_all(&bytes);
    }
}

/// The status line on screen now (empty: none), behind the lock that orders every
/// write to stderr made through this module.
static SHOWN: Mutex<String> = Mutex::new(String::new());

fn lock_shown() -> std::sync::MutexGuard<'static, String> {
    SHOWN
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Erase the current line: back to its first column and clear to its end.
const ERASE: &str = "\r\x1b[2K";

/// Shows `text` as the status line, replacing the previous one; cut to the
/// terminal's width (see [`fit`]).
pub fn draw(text: &str) {
    let text = match columns() {
        Some(columns) => fit(text, columns),
        None => text.to_owned(),
    };
    // A draw that finds the queue full is skipped: the next one replaces it.
    if let Err(Out::Draw(text)) = enqueue(Out::Draw(text))
        && queue().is_none()
    {
        draw_now(text);
    }
}

fn draw_now(text: String) {
    let mut shown = lock_shown();
    let mut err = io::stderr().lock();
    let _ = write!(err, "{ERASE}{text}");
    let _ = err.flush();
    *shown = text;
}

/// The width of the terminal on stderr, now; `None` when stderr is not a terminal
/// (or says it has no width).
#[must_use]
pub fn columns() -> Option<usize> {
    console::Term::stderr()
        .size_checked()
        .map(|(_, columns)| usize::from(columns))
        .filter(|c| *c > 0)
}

/// Where a line's fields part: the status lines' ` | `, and the `; ` and `, `
/// of prose-like progress lines.
const SEPARATORS: [&str; 3] = [" | ", "; ", ", "];

/// `text` in fewer than `columns` characters (the last column stays free: a
/// terminal that wraps on it would push the next redraw down a row). A line too
/// long loses whole fields from its end (or, with no field boundary in reach,
/// whole words; or, as a last resort, characters) and ends in `…`.
#[must_use]
pub fn fit(text: &str, columns: usize) -> String {
    let room = columns.saturating_sub(1).max(1);
    if text.chars().count() <= room {
        return text.to_owned();
    }
    // Byte offset of the char boundary after `room - 2` characters: the kept
    // prefix plus " …" must fit.
    let keep = room.saturating_sub(2);
    let limit = text
        .char_indices()
        .nth(keep)
        .map_or(text.len(), |(at, _)| at);
    let last_cut = |seps: &[&str]| {
        seps.iter()
            .flat_map(|sep| text.match_indices(sep).map(|(at, _)| at))
            .filter(|at| (1..=limit).contains(at))
            .max()
    };
    let cut = last_cut(&SEPARATORS).or_else(|| last_cut(&[" "]));
    match cut {
        Some(at) => format!("{} …", text[..at].trim_end()),
        None => {
            let mut cut: String = text.chars().take(room - 1).collect();
            cut.push('…');
            cut
        }
    }
}

/// Removes the status line (before the last words of a process, or for good).
pub fn clear() {
    if enqueue(Out::Clear).is_err() && queue().is_none() {
        clear_now();
    }
}

fn clear_now() {
    let mut shown = lock_shown();
    if !shown.is_empty() {
        let mut err = io::stderr().lock();
        let _ = write!(err, "{ERASE}");
        let _ = err.flush();
        shown.clear();
    }
}

/// Writes `bytes` (whole log records) to `out` around the status line `shown`:
/// erased before, drawn again after.
fn write_around(out: &mut impl Write, shown: &str, bytes: &[u8]) -> io::Result<()> {
    if shown.is_empty() {
        return out.write_all(bytes);
    }
    out.write_all(ERASE.as_bytes())?;
    out.write_all(bytes)?;
    if !bytes.ends_with(b"\n") {
        out.write_all(b"\n")?;
    }
    out.write_all(shown.as_bytes())?;
    out.flush()
}

/// `record` with its long runs cut (see [`stera_rules::excerpt_runs`]), or
/// `None` when it has none (or is not UTF-8, as no record is).
fn bounded_record(record: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(record).ok()?;
    match stera_rules::excerpt_runs(text) {
        std::borrow::Cow::Borrowed(_) => None,
        std::borrow::Cow::Owned(cut) => Some(cut),
    }
}

/// The log writer: stderr, around the status line. The formatter hands it one
/// whole record per write.
#[derive(Debug, Clone, Copy, Default)]
pub struct StderrWriter;

impl Write for StderrWriter {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.write_all(bytes)?;
        Ok(bytes.len())
    }

    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        // A record quotes a few hundred bytes of any argument, path or line,
        // however long (a 5,000-character RPC path made 25 KB lines).
        let record = bounded_record(bytes).map_or_else(|| bytes.to_vec(), String::into_bytes);
        match enqueue(Out::Record(record)) {
            Ok(()) => {}
            Err(Out::Record(record)) if queue().is_none() => {
                let shown = lock_shown();
                return write_around(&mut io::stderr().lock(), &shown, &record);
            }
            // Full: stderr is not read. Dropped and counted, never waited for.
            Err(_) => {
                DROPPED.fetch_add(1, Ordering::Relaxed);
            }
        }
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        // Records are written by the writer thread; waiting here could block.
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for StderrWriter {
    type Writer = StderrWriter;

    fn make_writer(&'a self) -> Self::Writer {
        *self
    }
}

#[cfg(test)]
mod tests {
    use super::{ERASE, fit, write_around};

    #[test]
    fn a_line_that_fits_is_left_alone() {
        assert_eq!(fit("a | b", 80), "a | b");
        assert_eq!(fit("abcdef", 7), "abcdef");
    }

    #[test]
    fn a_long_line_loses_whole_fields_from_its_end() {
        let line = "thought 1000/4000 (25.0%) | 10.0 pos/s | ETA 5m00s | book 5678";
        assert_eq!(fit(line, 50), "thought 1000/4000 (25.0%) | 10.0 pos/s …");
        assert_eq!(fit(line, 42), "thought 1000/4000 (25.0%) | 10.0 pos/s …");
        assert_eq!(fit(line, 41), "thought 1000/4000 (25.0%) | 10.0 pos/s …");
        assert_eq!(fit(line, 40), "thought 1000/4000 (25.0%) …");
        // No field in reach: whole words, then characters.
        assert_eq!(fit(line, 20), "thought 1000/4000 …");
        assert_eq!(fit("abcdefghij", 6), "abcd…");
        assert_eq!(
            fit("score 0.5 as black, 0.4 as white; 3 games counted", 40),
            "score 0.5 as black, 0.4 as white …"
        );
        for columns in 1..80 {
            assert!(
                fit(line, columns).chars().count() < columns.max(2),
                "{columns}"
            );
        }
    }

    #[test]
    fn a_record_goes_on_its_own_line_above_the_status_line() {
        let mut out = Vec::new();
        write_around(&mut out, "thought 5/10", b"INFO worker connected\n").unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text, format!("{ERASE}INFO worker connected\nthought 5/10"));
        // The screen after a terminal applies it: the record, then the status line.
        let screen: Vec<String> = text
            .replace("\x1b[2K", "")
            .split('\n')
            .map(|l| l.rsplit('\r').next().unwrap_or(l).to_owned())
            .collect();
        assert_eq!(screen, ["INFO worker connected", "thought 5/10"]);
    }

    #[test]
    fn without_a_status_line_records_pass_unchanged() {
        let mut out = Vec::new();
        write_around(&mut out, "", b"INFO a\n").unwrap();
        assert_eq!(out, b"INFO a\n");
    }
}
