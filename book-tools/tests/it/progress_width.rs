//! The games bar of `book-tools learn` and `match` on a terminal (issue 36): a
//! bar wider than the terminal wraps, and the erase before each redraw clears only
//! its last row, so the screen filled with copies. Every line drawn fits the
//! terminal, narrow or wide; none is left behind above the summary. Run on a
//! pseudo-terminal by `script` (util-linux, in every Debian).

use crate::common::single_root_book;
use stera_testkit::pty::{drawn_lines, run_on_terminal, screen};

/// Runs `book-tools ARGS` on a pseudo-terminal `columns` wide and returns what it
/// wrote there.
fn on_a_terminal_of(columns: u16, args: &str) -> Vec<u8> {
    let out = run_on_terminal(
        columns,
        &format!("{} {args}", env!("CARGO_BIN_EXE_book-tools")),
    );
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
    let args = format!("learn --db {db} --learn-games 20 --nodes 60 --ply-limit 60 --learn-seed 3");
    for columns in [80_u16, 200] {
        let out = on_a_terminal_of(columns, &args);
        let drawn = drawn_lines(&out);
        assert!(
            drawn.iter().any(|l| l.contains("/20 ")),
            "no bar with its message at {columns} columns: {drawn:#?}"
        );
        // Issue 43: the rate and the time left the README promises survive
        // a terminal of 80 columns (they came last and were cut).
        assert!(
            drawn
                .iter()
                .any(|l| l.contains(" games/s, ") && l.contains(" left")),
            "no rate and time left at {columns} columns: {drawn:#?}"
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
                drawn.iter().any(|l| l.contains(" distinct")),
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
            !shown
                .iter()
                .any(|l| l.contains("/20 ") && l.contains(" games/s")),
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
        // Issue 43: a match says how long it has left, at any width.
        assert!(
            drawn
                .iter()
                .any(|l| l.contains(" games/s, ") && l.contains(" left")),
            "no time left at {columns} columns: {drawn:#?}"
        );
        for line in &drawn {
            assert!(
                line.chars().count() <= usize::from(columns),
                "wider than {columns} columns: {line:?}"
            );
        }
        // No bar left above the results table.
        let shown = screen(&out);
        // Issue 43: the header (engines, books) once on the screen, not again
        // in the summary below it.
        let engines = shown.iter().filter(|l| l.starts_with("engine: ")).count();
        assert_eq!(engines, 1, "{shown:#?}");
        assert!(
            !shown.iter().any(|l| l.contains('█')),
            "a bar left on the screen: {shown:#?}"
        );
    }
}
