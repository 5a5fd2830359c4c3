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

/// Shows `text` as the status line, replacing the previous one.
pub fn draw(text: &str) {
    let mut shown = SHOWN
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut err = io::stderr().lock();
    let _ = write!(err, "{ERASE}{text}");
    let _ = err.flush();
    text.clone_into(&mut shown);
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
    use super::{ERASE, write_around};

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
