//! Former flag spellings (issues 36 and 43): each still parses, as a hidden
//! alias, and warns with the flag's one name now, so that scripts and
//! deployments keep working for a release.

use crate::common::{Dir, s, sibling_exe};

use std::path::Path;
use std::process::Command;

/// Each former spelling still parses and says what it is now. The commands
/// fail right after parsing (a store that does not exist, an export format its
/// path contradicts), so nothing runs.
#[test]
fn every_former_spelling_still_parses_and_warns() {
    let dir = Dir::new();
    let nowhere = "/nonexistent/store";
    let out = dir.path("out.db");
    let out = s(&out);
    // (binary, arguments, (former spelling, its name now) for each it warns of)
    type Case<'a> = (std::path::PathBuf, Vec<&'a str>, Vec<(&'a str, &'a str)>);
    let mut cases: Vec<Case> = vec![
        (
            Path::new(env!("CARGO_BIN_EXE_book-tools")).to_owned(),
            vec![
                "export",
                "--db",
                nowhere,
                "--out",
                out,
                "--temperature",
                "3",
                "--leaf-discount",
                "1",
                "--by-results",
                "--weights",
                "one",
                "--format",
                "text",
                "--shrink",
                "--backup",
                "softmax",
                "--nodes",
                "5",
            ],
            vec![
                ("--temperature", "--export-temperature"),
                ("--leaf-discount", "--export-leaf-discount"),
                ("--by-results", "--export-by-results"),
                ("--weights", "--export-weights"),
                ("--format", "--export-format"),
                ("--shrink", "--export-shrink"),
                ("--backup", "--export-propagation"),
                ("--nodes", "--first-positions"),
                ("--out", "--export"),
            ],
        ),
        (
            Path::new(env!("CARGO_BIN_EXE_book-tools")).to_owned(),
            vec!["export", "--db", nowhere, "--out", out, "--raw"],
            vec![("--raw", "--export-raw")],
        ),
        (
            Path::new(env!("CARGO_BIN_EXE_book-tools")).to_owned(),
            vec!["synth", "--db", "/dev/null/store", "--nodes", "5"],
            vec![("--nodes", "--positions")],
        ),
        (
            Path::new(env!("CARGO_BIN_EXE_book-tools")).to_owned(),
            vec!["show", "--db", nowhere, "startpos", "--temperature", "3"],
            vec![("--temperature", "--export-temperature")],
        ),
        (
            Path::new(env!("CARGO_BIN_EXE_book-tools")).to_owned(),
            vec![
                "next",
                "--db",
                nowhere,
                "8",
                "--select",
                "softmax",
                "--temperature",
                "3",
                "--leaf-discount",
                "1",
            ],
            vec![
                ("--temperature", "--select-temperature"),
                ("--leaf-discount", "--select-leaf-discount"),
            ],
        ),
        (
            Path::new(env!("CARGO_BIN_EXE_book-tools")).to_owned(),
            vec![
                "match",
                "--db",
                nowhere,
                "--temperature",
                "3",
                "--leaf-discount",
                "1",
                "--seed",
                "2",
            ],
            vec![
                ("--temperature", "--play-temperature"),
                ("--leaf-discount", "--export-leaf-discount"),
                ("--seed", "--play-seed"),
            ],
        ),
        (
            Path::new(env!("CARGO_BIN_EXE_book-tools")).to_owned(),
            vec![
                "learn",
                "--db",
                nowhere,
                "--eval-diff",
                "50",
                "--seed",
                "2",
                "--games",
                "3",
                "--openings",
                "o.txt",
                "--concurrency",
                "2",
                "--stop-when-settled",
                "0.9",
                "--opponent",
                "--nodes 10",
            ],
            vec![
                ("--eval-diff", "--learn-window"),
                ("--seed", "--learn-seed"),
                ("--games", "--learn-games"),
                ("--openings", "--learn-openings"),
                ("--concurrency", "--learn-concurrency"),
                ("--stop-when-settled", "--learn-stop-when-settled"),
                ("--opponent", "--learn-opponent"),
            ],
        ),
    ];
    // `remote export --out` (the book file's former name there): it fails at
    // the connection, after parsing.
    cases.push((
        Path::new(env!("CARGO_BIN_EXE_book-tools")).to_owned(),
        vec![
            "remote",
            "export",
            "--coordinator",
            "http://127.0.0.1:1",
            "--out",
            "book.db",
            "--export-backup",
            "softmax",
        ],
        vec![
            ("--out", "--export"),
            ("--export-backup", "--export-propagation"),
        ],
    ));
    let db = dir.path("coordinator.db");
    let export = dir.path("export.db");
    let games = dir.path("games.txt");
    let coordinator_args = vec![
        "--db",
        s(&db),
        "--export",
        s(&export),
        "--export-format",
        "ybb",
        "--select",
        "softmax",
        "--temperature",
        "3",
        "--leaf-discount",
        "1",
        "--games",
        "2",
        "--games-out",
        s(&games),
        "--export-prior-games",
        "2",
        "--export-backup",
        "minimax",
    ];
    cases.push((
        sibling_exe("coordinator"),
        coordinator_args,
        vec![
            ("--temperature", "--select-temperature"),
            ("--leaf-discount", "--select-leaf-discount"),
            ("--games", "--play-games"),
            ("--games-out", "--out-games"),
            ("--export-prior-games", "--prior-games"),
            ("--export-backup", "--export-propagation"),
        ],
    ));
    for (exe, args, renamed) in cases {
        let run = Command::new(&exe).args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&run.stderr);
        assert!(!run.status.success(), "{args:?} ran: {err}");
        assert!(!err.contains("unexpected argument"), "{args:?}: {err}");
        for (old, new) in renamed {
            let warning = format!("warning: {old} is deprecated; use {new}");
            assert!(err.contains(&warning), "{args:?}: no `{warning}` in\n{err}");
        }
    }
    // The worker's, in its USI mode (stdin closed: it ends at once).
    let run = Command::new(sibling_exe("worker"))
        .args(["--usi", "--summary-secs", "5", "--byoyomi", "10"])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{err}");
    assert!(
        err.contains("warning: --summary-secs is deprecated; use --status-every-secs"),
        "{err}"
    );
    assert!(
        err.contains("warning: --byoyomi is deprecated; use --time-ms"),
        "{err}"
    );
}
