//! `book-tools learn` end to end: games against the engine without a book,
//! counted in the store run after run; `match --book-moves results` and an
//! export `--by-results` then play the moves the games chose, the same ones.

use crate::common::{book_tools, fails, ok, s, single_root_book};

use std::path::Path;

fn games_recorded(db: &str) -> u64 {
    let out = ok(&["stats", "--db", db]);
    out.lines()
        .find_map(|l| l.strip_prefix("games recorded"))
        .unwrap_or_else(|| panic!("no games recorded in {out}"))
        .trim()
        .parse()
        .expect("a number")
}

fn learn(db: &str, games: &str, seed: &str) -> String {
    ok(&[
        "learn",
        "--db",
        db,
        "--games",
        games,
        "--nodes",
        "100",
        "--ply-limit",
        "60",
        "--concurrency",
        "2",
        "--seed",
        seed,
    ])
}

/// The moves and results of a CSA file's games (the headers name the books).
fn moves_and_results(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).expect("games written");
    text.split("\n/\n")
        .map(|game| {
            game.lines()
                .filter(|l| {
                    l.starts_with("'result")
                        || ((l.starts_with('+') || l.starts_with('-')) && l.len() > 1)
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

#[test]
fn learning_counts_every_game_and_a_second_run_goes_on() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = single_root_book(dir.path());
    assert_eq!(games_recorded(&db), 0);
    let out = learn(&db, "20", "1");
    assert!(out.contains("20 games in"), "{out}");
    // The start: the learner's moves there with the games they got.
    let start = out
        .lines()
        .find(|l| l.starts_with("lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b - 1:"))
        .unwrap_or_else(|| panic!("no line for the start in {out}"));
    assert!(start.contains(" games, value "), "{start}");
    // Every game had a book move of the learner (the start is in the book).
    assert_eq!(games_recorded(&db), 20);
    learn(&db, "10", "1");
    assert_eq!(
        games_recorded(&db),
        30,
        "a second run adds, ids never collide"
    );
}

#[test]
fn the_results_rule_and_an_export_by_results_play_the_same_moves() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = single_root_book(dir.path());
    learn(&db, "30", "2");
    let openings = dir.path().join("start.txt");
    std::fs::write(&openings, "startpos\n").expect("write openings");
    let play = |source: &[&str], games: &Path| {
        let mut args = vec!["match"];
        args.extend_from_slice(source);
        args.extend_from_slice(&[
            "--openings",
            s(&openings),
            "--repeat-openings",
            "--node-jitter",
            "0.5",
            "--games",
            "6",
            "--nodes",
            "100",
            "--ply-limit",
            "60",
            "--seed",
            "3",
            "--max-repeats",
            "1",
            "--out-games",
            s(games),
        ]);
        ok(&args);
        moves_and_results(games)
    };
    let from_store = play(
        &["--db", &db, "--book-moves", "results"],
        &dir.path().join("store.csa"),
    );
    let file = dir.path().join("results.db2016");
    let out = ok(&["export", "--db", &db, "--by-results", "--out", s(&file)]);
    assert!(out.contains("valued by results"), "{out}");
    let from_file = play(
        &["--book", s(&file), "--book-moves", "best"],
        &dir.path().join("file.csa"),
    );
    assert_eq!(from_store.len(), 6);
    assert_eq!(from_store, from_file);
    // The export by results is another book than the plain one at the start.
    let plain = dir.path().join("plain.db2016");
    ok(&["export", "--db", &db, "--out", s(&plain)]);
    let start_entry = |path: &Path| {
        let text = std::fs::read_to_string(path).expect("book written");
        let mut lines = text.lines();
        let _ = lines
            .by_ref()
            .find(|l| {
                l.starts_with("sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b - ")
            })
            .expect("the start");
        let mut moves: Vec<String> = lines
            .take_while(|l| !l.starts_with("sfen "))
            .map(str::to_owned)
            .collect();
        moves.sort();
        moves
    };
    assert_ne!(start_entry(&plain), start_entry(&file));
    // A book file has no results to play by.
    let err = fails(&[
        "match",
        "--book",
        s(&file),
        "--book-moves",
        "results",
        "--games",
        "2",
        "--nodes",
        "100",
    ]);
    assert!(err.contains("has no game results"), "{err}");
}

#[test]
fn bad_learning_flags_are_refused_before_a_game() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = single_root_book(dir.path());
    for (args, says) in [
        (vec!["--prior-games=-1", "--nodes", "100"], "--prior-games"),
        (vec!["--eval-diff=-5", "--nodes", "100"], "--eval-diff"),
        (vec!["--depth", "2"], "--node-jitter needs --nodes"),
        (vec!["--games", "0", "--nodes", "100"], "--games"),
    ] {
        let mut full = vec!["learn", "--db", db.as_str()];
        full.extend(args.iter().copied());
        let out = book_tools(&full);
        assert!(!out.status.success(), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{args:?}: {err}");
    }
    assert_eq!(
        ok(&["stats", "--db", &db])
            .lines()
            .find(|l| l.starts_with("games recorded"))
            .map(|l| l.split_whitespace().last().unwrap_or("").to_owned()),
        Some("0".to_owned())
    );
    // A store that does not exist is not created.
    let missing = dir.path().join("missing");
    let err = fails(&["learn", "--db", s(&missing), "--nodes", "100"]);
    assert!(!missing.exists(), "{err}");
}
