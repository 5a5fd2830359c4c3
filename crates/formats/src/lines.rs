//! Line splitting that accepts CR, LF and CRLF endings without loading the input.

use std::io::{self, BufRead};

/// Reads lines ending in `\n`, `\r\n` or a lone `\r` from a [`BufRead`], keeping a
/// 1-based line counter. `BufRead::read_line` only knows `\n`, and books written on
/// old Macs end lines with `\r`.
///
/// A line longer than the limit ([`crate::MAX_LINE_BYTES`] unless set otherwise) is
/// returned cut at the limit with [`LineSplitter::truncated`] set, without reading
/// further; the rest of it is skipped (streamed, not stored) only when the next line
/// is asked for. So memory stays bounded and a caller that gives up on a long line
/// reads no more of the input.
pub struct LineSplitter<R> {
    inner: R,
    /// The previous line ended in `\r`; a `\n` right after it belongs to that ending.
    skip_lf: bool,
    line: u64,
    max: usize,
    truncated: bool,
    /// The rest of a truncated line is still to be skipped.
    discarding: bool,
}

impl<R: BufRead> LineSplitter<R> {
    /// A reader with the limit [`crate::MAX_LINE_BYTES`].
    pub fn new(inner: R) -> Self {
        Self::with_max(inner, crate::MAX_LINE_BYTES)
    }

    /// A reader with another line limit (at least 1 byte).
    pub fn with_max(inner: R, max: usize) -> Self {
        Self {
            inner,
            skip_lf: false,
            line: 0,
            max: max.max(1),
            truncated: false,
            discarding: false,
        }
    }

    /// The number of the line last returned (0 before the first).
    pub fn line(&self) -> u64 {
        self.line
    }

    /// True if the line last returned was longer than the limit (and was cut).
    pub fn truncated(&self) -> bool {
        self.truncated
    }

    /// Reads the next line (without its ending) into `buf`; `false` at end of input.
    ///
    /// # Errors
    /// The input's read errors.
    pub fn next_line(&mut self, buf: &mut Vec<u8>) -> io::Result<bool> {
        buf.clear();
        self.truncated = false;
        if self.discarding {
            self.discard_rest()?;
        }
        let mut started = false;
        loop {
            let available = match self.inner.fill_buf() {
                Ok(bytes) => bytes,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if available.is_empty() {
                if started {
                    self.line += 1;
                }
                return Ok(started);
            }
            if self.skip_lf {
                self.skip_lf = false;
                if available[0] == b'\n' {
                    self.inner.consume(1);
                    continue;
                }
            }
            started = true;
            let room = self.max - buf.len();
            let end = available.iter().position(|&b| b == b'\n' || b == b'\r');
            match end {
                Some(i) if i <= room => {
                    buf.extend_from_slice(&available[..i]);
                    self.skip_lf = available[i] == b'\r';
                    self.inner.consume(i + 1);
                    self.line += 1;
                    return Ok(true);
                }
                _ if available.len() > room => {
                    // Over the limit: cut here, skip the rest on the next call.
                    buf.extend_from_slice(&available[..room]);
                    self.inner.consume(room);
                    self.line += 1;
                    self.truncated = true;
                    self.discarding = true;
                    return Ok(true);
                }
                _ => {
                    let n = available.len();
                    buf.extend_from_slice(available);
                    self.inner.consume(n);
                }
            }
        }
    }

    /// Skips input up to and including the end of the current line; a line that
    /// goes on for more than [`crate::MAX_SKIPPED_LINE_BYTES`] (endless input
    /// such as `/dev/zero`) is an error rather than a read that never ends.
    fn discard_rest(&mut self) -> io::Result<()> {
        let mut skipped: u64 = 0;
        loop {
            if skipped > crate::MAX_SKIPPED_LINE_BYTES {
                self.discarding = false;
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!(
                        "line {} goes on for more than {} bytes without a line end (MAX_SKIPPED_LINE_BYTES): not a text file of lines",
                        self.line,
                        crate::MAX_SKIPPED_LINE_BYTES
                    ),
                ));
            }
            let available = match self.inner.fill_buf() {
                Ok(bytes) => bytes,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if available.is_empty() {
                self.discarding = false;
                return Ok(());
            }
            match available.iter().position(|&b| b == b'\n' || b == b'\r') {
                Some(i) => {
                    self.skip_lf = available[i] == b'\r';
                    self.inner.consume(i + 1);
                    self.discarding = false;
                    return Ok(());
                }
                None => {
                    let n = available.len();
                    self.inner.consume(n);
                    skipped += n as u64;
                }
            }
        }
    }
}

/// Splits decoded text into lines on CR, LF or CRLF (for whole-file formats).
pub(crate) fn split_lines(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let bytes = text.as_bytes();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\n' => {
                out.push(&text[start..i]);
                start = i + 1;
            }
            b'\r' => {
                out.push(&text[start..i]);
                if bytes.get(i + 1) == Some(&b'\n') {
                    i += 1;
                }
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    if start < bytes.len() {
        out.push(&text[start..]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(input: &[u8], capacity: usize) -> Vec<(u64, String)> {
        let reader = io::BufReader::with_capacity(capacity, input);
        let mut splitter = LineSplitter::new(reader);
        let mut buf = Vec::new();
        let mut out = Vec::new();
        while splitter.next_line(&mut buf).unwrap() {
            out.push((splitter.line(), String::from_utf8(buf.clone()).unwrap()));
        }
        out
    }

    #[test]
    fn mixed_endings_count_one_line_each() {
        let input = b"a\r\nb\rc\nd\r\r\ne";
        let expected: Vec<(u64, String)> = vec![
            (1, "a".into()),
            (2, "b".into()),
            (3, "c".into()),
            (4, "d".into()),
            (5, String::new()),
            (6, "e".into()),
        ];
        // A one-byte buffer splits every CRLF across two fills.
        for capacity in [1, 2, 3, 64] {
            assert_eq!(collect(input, capacity), expected, "capacity {capacity}");
        }
        let text = std::str::from_utf8(input).unwrap();
        let split: Vec<&str> = split_lines(text);
        assert_eq!(split, ["a", "b", "c", "d", "", "e"]);
    }

    #[test]
    fn long_lines_are_cut_at_the_limit_and_skipped() {
        let input = b"abc\r\n0123456789\r\nxy\n0123456789";
        for capacity in [1, 2, 3, 64] {
            let reader = io::BufReader::with_capacity(capacity, &input[..]);
            let mut splitter = LineSplitter::with_max(reader, 4);
            let mut buf = Vec::new();
            let mut out = Vec::new();
            while splitter.next_line(&mut buf).unwrap() {
                let text = String::from_utf8(buf.clone()).unwrap();
                out.push((splitter.line(), text, splitter.truncated()));
            }
            let expected = vec![
                (1, "abc".to_owned(), false),
                (2, "0123".to_owned(), true),
                (3, "xy".to_owned(), false),
                (4, "0123".to_owned(), true),
            ];
            assert_eq!(out, expected, "capacity {capacity}");
        }
        // A line of exactly the limit is whole.
        let mut splitter = LineSplitter::with_max(&b"0123\nx"[..], 4);
        let mut buf = Vec::new();
        assert!(splitter.next_line(&mut buf).unwrap());
        assert_eq!(
            (buf.as_slice(), splitter.truncated()),
            (&b"0123"[..], false)
        );
    }

    /// An endless line costs the limit, not the input: the splitter returns after
    /// the first `max` bytes.
    #[test]
    fn an_endless_line_is_cut_without_reading_it() {
        let endless = io::BufReader::new(io::repeat(b'x'));
        let mut splitter = LineSplitter::with_max(endless, 1 << 20);
        let mut buf = Vec::new();
        assert!(splitter.next_line(&mut buf).unwrap());
        assert!(splitter.truncated());
        assert_eq!(buf.len(), 1 << 20);
    }

    #[test]
    fn trailing_newline_makes_no_extra_line() {
        assert_eq!(collect(b"x\r\n", 1), vec![(1, "x".to_owned())]);
        assert!(collect(b"", 8).is_empty());
        assert_eq!(split_lines("x\r\n"), ["x"]);
    }
}
