//! A process on a pseudo-terminal of a chosen width, and what a terminal shows of
//! its output: for the tests of status lines and progress bars.

/// Runs `command_line` (a shell command line) on a pseudo-terminal `columns`
/// wide, opened by `script` (util-linux, in every Debian); `stty` sets the width,
/// which the process reads from its stderr. Returns what it wrote there, in
/// `stdout`.
pub fn run_on_terminal(columns: u16, command_line: &str) -> std::process::Output {
    let command = format!("stty cols {columns} rows 24 && exec {command_line}");
    std::process::Command::new("script")
        .args(["-qfec", &command, "/dev/null"])
        .env_remove("RUST_LOG")
        .env_remove("COLUMNS")
        .output()
        .expect("run `script` (util-linux)")
}

/// The lines drawn in `bytes`: each text that follows an erase (`\r ESC[2K`) and
/// is not ended by a newline (`\r\n` on a terminal: that would be a log record,
/// written between an erase and the status line drawn again below it), up to the
/// next control character.
#[must_use]
pub fn drawn_lines(bytes: &[u8]) -> Vec<String> {
    const ERASE: &str = "\r\x1b[2K";
    let text = String::from_utf8_lossy(bytes);
    text.split(ERASE)
        .skip(1)
        .filter_map(|after| {
            let end = after.find(['\r', '\n', '\x1b']).unwrap_or(after.len());
            let line = &after[..end];
            // A terminal's line discipline writes a newline as `\r\n`.
            let rest = &after[end..];
            let record = rest.starts_with('\n') || rest.starts_with("\r\n");
            (!record && !line.is_empty()).then(|| line.to_owned())
        })
        .collect()
}

/// What a terminal shows after `bytes`: `\r` returns to the line's start,
/// `ESC[2K` erases the line, other escape sequences (colours) draw nothing, `\n`
/// ends a line, and text overwrites what is under the cursor.
#[must_use]
pub fn screen(bytes: &[u8]) -> Vec<String> {
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
