//! Pipes read whole (issue 35): `kifu add`, `import` and `roots set` read every
//! game, entry or root of a pipe, given as `/dev/stdin` or `-`, above and below the
//! 64 KiB a format sniffer looks at; skipped games are counted. Real pipes into
//! the built binary.

use std::io::Write;
use std::process::{Command, Output, Stdio};

use crate::common::{Dir, ok, raw_book, s};
use stera_rules::Position;

/// Runs `book-tools ARGS` with `input` written into its standard input through a
/// pipe (from another thread, so that neither side waits for the other).
fn piped(args: &[&str], input: Vec<u8>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_book-tools"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run book-tools");
    let mut stdin = child.stdin.take().unwrap();
    // A reader that stops early closes the pipe: that is the test's to see.
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    out
}

fn stdout_of(out: &Output) -> String {
    assert!(
        out.status.success(),
        "failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// USI lines of distinct games: every first move, its first `replies` replies,
/// and (with `thirds` > 0) the first `thirds` moves after each. How many.
fn games(replies: usize, thirds: usize) -> (String, usize) {
    let mut text = String::new();
    let mut n = 0;
    let start = Position::startpos();
    for m1 in start.legal_moves() {
        let mut p1 = start.clone();
        p1.do_move(m1);
        for &m2 in p1.legal_moves().iter().take(replies) {
            let mut p2 = p1.clone();
            p2.do_move(m2);
            if thirds == 0 {
                text.push_str(&format!("startpos moves {m1} {m2}\n"));
                n += 1;
            }
            for &m3 in p2.legal_moves().iter().take(thirds) {
                text.push_str(&format!("startpos moves {m1} {m2} {m3}\n"));
                n += 1;
            }
        }
    }
    (text, n)
}

#[test]
fn kifu_add_reads_every_game_of_a_pipe_above_the_sniffed_head() {
    let dir = Dir::new();
    let db = dir.path("k.db");
    let (text, n) = games(30, 6);
    assert!(text.len() > 2 * 64 * 1024, "{} bytes", text.len());
    let out = stdout_of(&piped(
        &["kifu", "add", "--create", "--db", s(&db), "/dev/stdin"],
        text.into_bytes(),
    ));
    assert!(
        out.contains(&format!("games read {n}, skipped 0")),
        "{n} games: {out}"
    );
}

#[test]
fn kifu_add_reads_a_small_pipe_as_dash_and_counts_skipped_games() {
    let dir = Dir::new();
    let db = dir.path("k.db");
    let (mut text, n) = games(5, 0);
    assert!(text.len() < 64 * 1024);
    // Bad games are counted, the first few listed.
    for _ in 0..500 {
        text.push_str("startpos moves 7g7f 7g7f\n");
    }
    let out = stdout_of(&piped(
        &[
            "kifu",
            "add",
            "--create",
            "--db",
            s(&db),
            "--list",
            "3",
            "-",
        ],
        text.into_bytes(),
    ));
    assert!(
        out.contains(&format!("games read {n}, skipped 500")),
        "{n} games: {out}"
    );
    assert_eq!(out.matches("  skipped: -:").count(), 3, "{out}");
    assert!(out.contains("... and 497 more skipped games"), "{out}");
    // The same games from a file: the same positions, nothing new.
    let file = dir.path("games.usi");
    std::fs::write(&file, games(5, 0).0).unwrap();
    let again = ok(&["kifu", "add", "--create", "--db", s(&db), s(&file)]);
    assert!(again.contains("added 0"), "{again}");
}

/// A book of every position along the first `replies` replies of the first
/// `firsts` moves: how many entries.
fn book(firsts: usize, replies: usize) -> (String, usize) {
    let start = Position::startpos();
    let mut lines: Vec<Vec<String>> = Vec::new();
    for m1 in start.legal_moves().into_iter().take(firsts) {
        let mut p1 = start.clone();
        p1.do_move(m1);
        for m2 in p1.legal_moves().into_iter().take(replies) {
            lines.push(vec![m1.to_string(), m2.to_string()]);
        }
    }
    let strs: Vec<Vec<&str>> = lines
        .iter()
        .map(|l| l.iter().map(String::as_str).collect())
        .collect();
    let refs: Vec<&[&str]> = strs.iter().map(Vec::as_slice).collect();
    (
        raw_book(&refs, |_, i| i32::try_from(i).unwrap() - 10),
        1 + firsts + firsts * replies,
    )
}

#[test]
fn import_reads_a_whole_pipe_in_both_passes() {
    let dir = Dir::new();
    // Above 64 KiB, as /dev/stdin.
    let (text, n) = book(15, 10);
    let n_big = n;
    assert!(text.len() > 64 * 1024, "{} bytes", text.len());
    let big = dir.path("big.db");
    let out = stdout_of(&piped(
        &["import", "--create", "--db", s(&big), "/dev/stdin"],
        text.into_bytes(),
    ));
    assert!(
        out.contains(&format!("entries {n}: imported {n} ")),
        "{out}"
    );
    // Below, as `-`.
    let (text, n) = book(2, 2);
    assert!(text.len() < 64 * 1024);
    let small = dir.path("small.db");
    let out = stdout_of(&piped(
        &["import", "--create", "--db", s(&small), "-"],
        text.into_bytes(),
    ));
    assert!(
        out.contains(&format!("entries {n}: imported {n} ")),
        "{out}"
    );
    // A `.ybb` book through a pipe is told by its magic.
    let ybb = dir.path("big.ybb");
    ok(&["export", "--db", s(&big), "--export-raw", "--out", s(&ybb)]);
    let again = dir.path("again.db");
    let out = stdout_of(&piped(
        &["import", "--create", "--db", s(&again), "-"],
        std::fs::read(&ybb).unwrap(),
    ));
    assert!(
        out.contains(&format!("entries {n_big}: imported {n_big} ")),
        "{out}"
    );
}

#[test]
fn roots_set_reads_a_pipe() {
    let dir = Dir::new();
    let db = dir.path("r.db");
    let (text, n) = games(3, 0);
    let out = stdout_of(&piped(
        &["roots", "set", "--create", "--db", s(&db), "-"],
        text.into_bytes(),
    ));
    assert!(out.contains(&format!("stored {n} roots")), "{out}");
    let listed = ok(&["roots", "list", "--db", s(&db)]);
    assert_eq!(
        listed.lines().filter(|l| l.starts_with("startpos")).count(),
        n
    );
}

/// Runs `book-tools ARGS` with its standard output a pipe whose reader is gone
/// before anything is written (as `| head` leaves it once it has its lines).
fn into_closed_pipe(args: &[&str]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_book-tools"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run book-tools");
    drop(child.stdout.take());
    child.wait_with_output().unwrap()
}

/// No panic on a closed pipe (issue 35): `kifu add` stores its positions although
/// its report finds no reader, and `roots list` ends quietly.
#[test]
fn a_closed_stdout_neither_panics_nor_loses_work() {
    let dir = Dir::new();
    let db = dir.path("k.db");
    let file = dir.path("games.usi");
    let (text, n) = games(30, 0);
    std::fs::write(&file, &text).unwrap();
    let out = into_closed_pipe(&["kifu", "add", "--create", "--db", s(&db), s(&file)]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{:?}: {stderr}", out.status);
    assert!(!stderr.contains("panicked"), "{stderr}");
    // Stored: the same games add nothing now.
    let again = ok(&["kifu", "add", "--create", "--db", s(&db), s(&file)]);
    assert!(again.contains(&format!("games read {n}")), "{again}");
    assert!(again.contains("added 0"), "{again}");

    let roots = dir.path("roots.txt");
    std::fs::write(&roots, &text).unwrap();
    ok(&["roots", "set", "--create", "--db", s(&db), s(&roots)]);
    let out = into_closed_pipe(&["roots", "list", "--db", s(&db)]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{:?}: {stderr}", out.status);
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// No panic on a closed standard error either (`2>&1 | head`): progress lines and
/// notes that find no reader are dropped, the command finishes and keeps its
/// work; `check` with a closed standard output ends quietly too.
#[test]
fn a_closed_stderr_neither_panics_nor_loses_work() {
    let dir = Dir::new();
    let db = dir.path("s.db");
    ok(&["synth", "--db", s(&db), "--nodes", "300", "--batch", "16"]);
    let out = dir.path("book.db2016");
    let mut child = Command::new(env!("CARGO_BIN_EXE_book-tools"))
        .args(["export", "--db", s(&db), "--out", s(&out)])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run book-tools");
    drop(child.stderr.take());
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}");
    assert!(
        std::fs::read(&out)
            .unwrap()
            .starts_with(b"#YANEURAOU-DB2016")
    );
    let checked = into_closed_pipe(&["check", "--db", s(&db)]);
    assert!(
        checked.status.success(),
        "{:?}: {}",
        checked.status,
        String::from_utf8_lossy(&checked.stderr)
    );
}
