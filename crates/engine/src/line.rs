//! Reading lines of bounded length from a stream (an engine's output, a GUI's
//! commands): a line longer than its limit is an answer, not an allocation that
//! follows the input.

use std::io::{self, BufRead, Read};

use stera_rules::{MAX_QUOTE_CHARS, excerpt};

/// One line read with [`read_bounded_line`].
pub(crate) enum LineRead {
    /// A line (its end of line removed, invalid UTF-8 replaced).
    Line(String),
    /// A line longer than the limit: its start for an error message, control
    /// characters escaped (`\0`, `\u{1b}`), at most
    /// [`stera_rules::MAX_QUOTE_CHARS`] characters.
    TooLong(String),
    /// The end of the input.
    End,
}

/// Reads one line of at most `max` bytes (its end of line not counted). Invalid
/// UTF-8 is replaced rather than refused: an engine that prints its name in
/// Shift JIS is still an engine.
pub(crate) fn read_bounded_line(input: &mut impl BufRead, max: usize) -> io::Result<LineRead> {
    let mut bytes = Vec::new();
    // `\r\n` counts as an end of line too, hence two bytes more.
    let limit = u64::try_from(max).unwrap_or(u64::MAX).saturating_add(2);
    let read = input.take(limit).read_until(b'\n', &mut bytes)?;
    if read == 0 {
        return Ok(LineRead::End);
    }
    let ended = bytes.last() == Some(&b'\n');
    if ended {
        bytes.pop();
        if bytes.last() == Some(&b'\r') {
            bytes.pop();
        }
    }
    // A line cut by the limit has more than `max` bytes too.
    if bytes.len() > max {
        // Enough bytes for the quoted characters (at most 4 bytes each).
        let start = String::from_utf8_lossy(&bytes[..bytes.len().min(4 * MAX_QUOTE_CHARS)]);
        let start: String = start
            .chars()
            .map(|c| {
                if c.is_control() {
                    c.escape_debug().to_string()
                } else {
                    c.to_string()
                }
            })
            .collect();
        return Ok(LineRead::TooLong(excerpt(&start)));
    }
    Ok(LineRead::Line(String::from_utf8_lossy(&bytes).into_owned()))
}

/// Skips to the end of the current line; `false` at the end of the input.
pub(crate) fn skip_rest_of_line(input: &mut impl BufRead) -> bool {
    loop {
        let (skip, found) = match input.fill_buf() {
            Ok([]) | Err(_) => return false,
            Ok(buf) => match buf.iter().position(|&b| b == b'\n') {
                Some(end) => (end + 1, true),
                None => (buf.len(), false),
            },
        };
        input.consume(skip);
        if found {
            return true;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Cursor;

    use super::*;

    fn lines(input: &[u8], max: usize) -> Vec<String> {
        let mut input = Cursor::new(input);
        let mut out = Vec::new();
        loop {
            match read_bounded_line(&mut input, max).unwrap() {
                LineRead::Line(line) => out.push(line),
                LineRead::TooLong(start) => out.push(format!("TOO LONG {start}")),
                LineRead::End => return out,
            }
        }
    }

    #[test]
    fn lines_are_read_up_to_their_limit() {
        assert_eq!(
            lines(b"usiok\nreadyok\r\nlast", 8),
            ["usiok", "readyok", "last"]
        );
        // Exactly the limit, with either end of line, is a line.
        assert_eq!(
            lines(b"12345678\r\n12345678\n", 8),
            ["12345678", "12345678"]
        );
        assert_eq!(lines(b"123456789\n", 8)[0], "TOO LONG 123456789");
        // Shift JIS is not UTF-8: replaced, not refused.
        assert_eq!(lines(b"id name \x83\x65\n", 64), ["id name \u{fffd}e"]);
    }

    #[test]
    fn a_too_long_line_is_quoted_short() {
        let long = vec![b'x'; 3 << 16];
        let read = lines(&long, 1 << 16);
        let line = &read[0];
        let quoted = line.strip_prefix("TOO LONG ").unwrap();
        assert_eq!(quoted.chars().count(), MAX_QUOTE_CHARS + 1, "{quoted}");
        // Control characters cannot reach a terminal or a log line as they are.
        let read = lines(b"\x1b[2J\0\0 and so on\n", 4);
        assert_eq!(read[0], "TOO LONG \\u{1b}[2J\\0\\0");
    }

    #[test]
    fn a_long_line_is_skipped_to_its_end() {
        let mut input = Cursor::new(b"xxxxxxxx\nnext\n".as_slice());
        assert!(matches!(
            read_bounded_line(&mut input, 4).unwrap(),
            LineRead::TooLong(_)
        ));
        assert!(skip_rest_of_line(&mut input));
        assert!(matches!(
            read_bounded_line(&mut input, 4).unwrap(),
            LineRead::Line(l) if l == "next"
        ));
        assert!(!skip_rest_of_line(&mut input));
    }
}
