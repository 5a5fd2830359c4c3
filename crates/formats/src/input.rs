//! Where an input file comes from: a path, or standard input for `-`.
//!
//! Every reader opens its input once and reads it through, so a pipe, a FIFO or
//! `/dev/stdin` is read whole: nothing is sniffed by reopening the path (a pipe
//! opened again reads what the first open left, or nothing).

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

/// The name that means standard input.
pub const STDIN_NAME: &str = "-";

/// True when `path` means standard input (`-`).
#[must_use]
pub fn is_stdin(path: &Path) -> bool {
    path.as_os_str() == STDIN_NAME
}

/// Opens `path` for reading once; `-` is standard input.
///
/// # Errors
/// The file cannot be opened.
pub fn open_input(path: &Path) -> io::Result<Box<dyn Read + Send>> {
    if is_stdin(path) {
        Ok(Box::new(io::stdin()))
    } else {
        Ok(Box::new(File::open(path)?))
    }
}

/// True when `path` is read as a stream, once, front to back: standard input
/// (`-`) or anything that is not a regular file (a pipe, a FIFO, a character
/// device such as `/dev/stdin` on a pipe). A reader that needs two passes or to
/// seek copies such an input first.
#[must_use]
pub fn is_stream(path: &Path) -> bool {
    is_stdin(path) || std::fs::metadata(path).is_ok_and(|m| !m.is_file())
}
