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

use std::io::{self, Write};
use std::sync::Mutex;

/// The status line on screen now (empty: none), behind the lock that orders every
/// write to stderr made through this module.
static SHOWN: Mutex<String> = Mutex::new(String::new());

/// Erase the current line: back to its first column and clear to its end.
const ERASE: &str = "\r\x1b[2K";

/// Shows `text` as the status line, replacing the previous one; cut to the
/// terminal's width (see [`fit`]).
pub fn draw(text: &str) {
    let text = match columns() {
        Some(columns) => fit(text, columns),
        None => text.to_owned(),
    };
    let mut shown = SHOWN
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
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
    let mut shown = SHOWN
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
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
        let bounded = bounded_record(bytes);
        let bytes = bounded.as_ref().map_or(bytes, |b| b.as_bytes());
        let shown = SHOWN
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        write_around(&mut io::stderr().lock(), &shown, bytes)
    }

    fn flush(&mut self) -> io::Result<()> {
        io::stderr().flush()
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
