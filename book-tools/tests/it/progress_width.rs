//! The games bar of `book-tools learn` and `match` on a terminal (issue 36): a
//! bar wider than the terminal wraps, and the erase before each redraw clears only
//! its last row, so the screen filled with copies. Every line drawn fits the
//! terminal, narrow or wide; none is left behind above the summary. Run on a
//! pseudo-terminal by `script` (util-linux, in every Debian).

use crate::common::single_root_book;

/// The lines drawn in `bytes`: each text that follows an erase (`\r ESC[2K`) and
/// is not ended by a newline (`\r\n` on a terminal), up to the next control character.
fn drawn_lines(bytes: &[u8]) -> Vec<String> {
    const ERASE: &str = "\r\x1b[2K";
    let text = String::from_utf8_lossy(bytes);
    text.split(ERASE)
        .skip(1)
        .filter_map(|after| {
            let end = after.find(['\r', '\n', '\x1b']).unwrap_or(after.len());
            let line = &after[..end];
            {
                // A terminal's line discipline writes a newline as `\r\n`.
                let rest = &after[end..];
                let record = rest.starts_with('\n') || rest.starts_with("\r\n");
                !record && !line.is_empty()
            }
            .then(|| line.to_owned())
        })
        .collect()
}

/// What a terminal shows after `bytes`: `\r` returns to the line's start,
/// `ESC[2K` erases the line, other escape sequences draw nothing, `\n` ends a
/// line, and text overwrites what is under the cursor.
fn screen(bytes: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(bytes);
    let mut lines = Vec::new();
    let mut line: Vec<char> = Vec::new();
    let mut cursor = 0;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' => cursor = 0,
            '\n' => {
                lines.push(line.iter().collect::<String>());
                line.clear();
                cursor = 0;
            }
            '\x1b' => {
                let mut sequence = String::new();
                if chars.peek() == Some(&'[') {
                    chars.next();
                    while let Some(&n) = chars.peek() {
                        chars.next();
                        sequence.push(n);
                        if n.is_ascii_alphabetic() {
                            break;
                        }
                    }
                }
                if sequence == "2K" {
                    line.clear();
                }
            }
            c => {
                if cursor < line.len() {
                    line[cursor] = c;
                } else {
                    line.resize(cursor, ' ');
                    line.push(c);
                }
                cursor += 1;
            }
        }
    }
    lines.push(line.iter().collect());
    lines
}

/// Runs `book-tools ARGS` on a pseudo-terminal `columns` wide and returns what it
/// wrote there.
fn on_a_terminal_of(columns: u16, args: &str) -> Vec<u8> {
    // `stty` sets the width of the pseudo-terminal `script` opened; the process
    // reads it from its stderr.
    let command = format!(
        "stty cols {columns} rows 24 && exec {} {args}",
        env!("CARGO_BIN_EXE_book-tools")
    );
    let out = std::process::Command::new("script")
        .args(["-qfec", &command, "/dev/null"])
        .env_remove("RUST_LOG")
        .env_remove("COLUMNS")
        .output()
        .expect("run `script` (util-linux)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    out.stdout
}

#[test]
fn the_learn_bar_fits_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let db = single_root_book(dir.path());
    let args = format!("learn --db {db} --games 20 --nodes 60 --ply-limit 60 --seed 3");
    for columns in [80_u16, 200] {
        let out = on_a_terminal_of(columns, &args);
        let drawn = drawn_lines(&out);
        assert!(
            drawn.iter().any(|l| l.contains("/20 training score")),
            "no bar with its message at {columns} columns: {drawn:#?}"
        );
        for line in &drawn {
            assert!(
                line.chars().count() <= usize::from(columns),
                "wider than {columns} columns: {line:?}"
            );
        }
        if columns == 80 {
            // The whole message is wider than what 80 columns leave beside the bar.
            assert!(
                drawn.iter().any(|l| l.trim_end().ends_with(" …")),
                "nothing was cut at 80 columns: {drawn:#?}"
            );
        } else {
            assert!(
                drawn.iter().any(|l| l.contains(" left")),
                "the message was cut at {columns} columns: {drawn:#?}"
            );
        }
        // The bar is cleared before the summary: none is left on the screen.
        let shown = screen(&out);
        assert!(
            shown.iter().any(|l| l.contains("games in ")),
            "no summary: {shown:#?}"
        );
        assert!(
            !shown.iter().any(|l| l.contains("/20 training score")),
            "a bar left on the screen: {shown:#?}"
        );
    }
}

#[test]
fn the_match_bar_fits_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let db = single_root_book(dir.path());
    let args = format!("match --db {db} --games 20 --nodes 60 --ply-limit 60 --seed 3");
    for columns in [80_u16, 200] {
        let out = on_a_terminal_of(columns, &args);
        let drawn = drawn_lines(&out);
        assert!(
            drawn.iter().any(|l| l.contains("/20 ")),
            "no bar at {columns} columns: {drawn:#?}"
        );
        for line in &drawn {
            assert!(
                line.chars().count() <= usize::from(columns),
                "wider than {columns} columns: {line:?}"
            );
        }
        // No bar left above the results table.
        let shown = screen(&out);
        assert!(
            !shown.iter().any(|l| l.contains('█')),
            "a bar left on the screen: {shown:#?}"
        );
    }
}
