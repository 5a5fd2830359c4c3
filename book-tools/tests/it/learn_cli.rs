//! `book-tools learn` end to end: games against the engine without a book,
//! counted in the store run after run; `match --book-moves results` and an
//! export `--by-results` then play the moves the games chose, the same ones.

use crate::common::{book_tools, fails, ok, s, single_root_book};
use crate::engines;

use std::path::Path;

/// The self-play games `stats` counts (`games recorded   N (S self-play, L
/// learning)`).
fn games_recorded(db: &str) -> u64 {
    let out = ok(&["stats", "--db", db]);
    out.lines()
        .find_map(|l| l.strip_prefix("games recorded"))
        .and_then(|l| l.split_once('(')?.1.split_once(" self-play"))
        .unwrap_or_else(|| panic!("no games recorded in {out}"))
        .0
        .parse()
        .expect("a number")
}

/// The learning opponents `stats` lists: identity and games.
fn learning_opponents(db: &str) -> Vec<(String, u64)> {
    let out = ok(&["stats", "--db", db]);
    out.lines()
        .skip_while(|l| !l.starts_with("learning opponents"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .map(|l| {
            let (identity, games) = l.trim().rsplit_once(": ").expect("identity: N games");
            let identity = identity.split_once(' ').expect("number identity").1;
            let games = games.trim_end_matches(" games").parse().expect("a count");
            (identity.to_owned(), games)
        })
        .collect()
}

fn learn(db: &str, games: &str, seed: &str) -> String {
    learn_with(db, games, seed, &["--nodes", "100"])
}

fn learn_with(db: &str, games: &str, seed: &str, more: &[&str]) -> String {
    let mut args = vec![
        "learn",
        "--db",
        db,
        "--learn-games",
        games,
        "--ply-limit",
        "60",
        "--learn-concurrency",
        "2",
        "--learn-seed",
        seed,
    ];
    args.extend_from_slice(more);
    ok(&args)
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
    // The start: the move the learner plays there, then its best moves with
    // the games they got, on a line of their own.
    let mut lines = out
        .lines()
        .skip_while(|l| !l.starts_with("  startpos: plays "));
    let start = lines
        .next()
        .unwrap_or_else(|| panic!("no line for the start in {out}"));
    assert!(start.contains(", P(best) "), "{start}");
    let moves = lines.next().unwrap_or_else(|| panic!("{out}"));
    assert!(
        moves.starts_with("    ") && moves.contains(" games)"),
        "{moves}"
    );
    assert!(out.contains("training score"), "{out}");
    assert!(out.contains("not the book's strength"), "{out}");
    // Every game had a book move of the learner (the start is in the book),
    // counted against the one opponent, never as self-play.
    let opponents = learning_opponents(&db);
    assert_eq!(opponents.len(), 1, "{opponents:?}");
    assert!(
        opponents[0].0.starts_with("stera-builtin") && opponents[0].0.ends_with(" at 100 nodes"),
        "{opponents:?}"
    );
    assert_eq!(opponents[0].1, 20);
    assert_eq!(games_recorded(&db), 0);
    learn(&db, "10", "1");
    assert_eq!(
        learning_opponents(&db)[0].1,
        30,
        "a second run adds, ids never collide"
    );
    // Another budget is another opponent: it never mixes into the first.
    learn_with(&db, "6", "1", &["--nodes", "200"]);
    let opponents = learning_opponents(&db);
    assert_eq!(opponents.len(), 2, "{opponents:?}");
    assert_eq!(opponents[0].1, 30);
    assert!(opponents[1].0.ends_with(" at 200 nodes"), "{opponents:?}");
    assert_eq!(opponents[1].1, 6);
    // `show` lists them and the moves' learning games, every opponent's added.
    let shown = ok(&["show", "--db", &db, "startpos"]);
    assert!(
        shown.contains("learning opponents: 1 stera-builtin"),
        "{shown}"
    );
    let learned: u64 = shown
        .lines()
        .skip_while(|l| !l.contains("learning games  won/drawn/lost"))
        .skip(1)
        .take_while(|l| l.starts_with("  ") && !l.contains("no learning"))
        .map(|l| l.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap())
        .sum();
    // Every game passed through one of the start's moves.
    assert_eq!(learned, 36, "{shown}");
}

#[test]
fn a_pool_of_opponents_with_an_external_engine_counts_each_apart() {
    let Some(engine) = engines::real_engine(
        "fairy-stockfish",
        "STERA_FAIRY_STOCKFISH",
        "fairy-stockfish",
    ) else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let db = single_root_book(dir.path());
    let fairy = format!(
        "--engine usi --engine-cmd {} --engine-option UCI_Variant=shogi --depth 1 --weight 2",
        s(&engine)
    );
    let run = book_tools(&[
        "learn",
        "--db",
        &db,
        "--games",
        "16",
        "--ply-limit",
        "60",
        "--concurrency",
        "2",
        "--learn-seed",
        "4",
        "--nodes",
        "100",
        "--opponent",
        "--nodes 100",
        "--opponent",
        "--nodes 300 --node-jitter 0.2",
        "--opponent",
        &fairy,
    ]);
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{err}");
    // A depth-limited opponent cannot be jittered: the run says so.
    assert!(err.contains("no node limit to jitter"), "{err}");
    let opponents = learning_opponents(&db);
    assert_eq!(opponents.len(), 3, "{opponents:?}");
    assert!(opponents[1].0.ends_with(" at 300 nodes"), "{opponents:?}");
    assert!(
        opponents[2].0.contains("Fairy-Stockfish") && opponents[2].0.ends_with(" at depth 1"),
        "{opponents:?}"
    );
    assert_eq!(
        opponents.iter().map(|o| o.1).sum::<u64>(),
        16,
        "{opponents:?}"
    );
    assert!(
        opponents[2].1 > 0,
        "the weighted engine got games: {opponents:?}"
    );
    assert_eq!(games_recorded(&db), 0, "learning never counts as self-play");
    // One opponent, a list or all: each an export by results; an unknown one is refused.
    for list in ["3", "1,2", "all"] {
        let file = dir.path().join(format!("by-{list}.db2016"));
        let out = ok(&[
            "export",
            "--db",
            &db,
            "--export-by-results",
            "--opponents",
            list,
            "--out",
            s(&file),
        ]);
        assert!(out.contains(&format!("opponents: {list}")), "{out}");
    }
    let err = fails(&[
        "export",
        "--db",
        &db,
        "--export-by-results",
        "--opponents",
        "4",
        "--out",
        s(&dir.path().join("x.db2016")),
    ]);
    assert!(err.contains("no learning opponent `4`"), "{err}");
}

/// `coordinator --db DB ARGS` run to its end (no thinking, no workers: its final
/// export only); its exit status and stderr.
fn coordinator_run(db: &str, args: &[&str]) -> (bool, String) {
    let out = std::process::Command::new(crate::common::sibling_exe("coordinator"))
        .args(["--db", db, "--create", "--listen", "127.0.0.1:0"])
        .args(["--think-limit", "0"])
        .args(args)
        .env("RUST_LOG", "info")
        .env_remove("STERA_TOKEN")
        .output()
        .expect("run the coordinator");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_coordinator_exports_by_the_results_of_the_opponents_named() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = single_root_book(dir.path());
    learn_with(
        &db,
        "12",
        "5",
        &[
            "--nodes",
            "100",
            "--opponent",
            "--nodes 100",
            "--opponent",
            "--nodes 200",
        ],
    );
    let opponents = learning_opponents(&db);
    assert_eq!(opponents.len(), 2, "{opponents:?}");
    let offline = |list: &str| {
        let file = dir.path().join(format!("offline-{list}.db"));
        ok(&[
            "export",
            "--db",
            &db,
            "--export-by-results",
            "--opponents",
            list,
            "--out",
            s(&file),
        ]);
        std::fs::read(&file).expect("offline export written")
    };
    let by_opponent = [offline("1"), offline("2"), offline("all")];
    // The data tells the selections apart, so equal files below mean something.
    assert_ne!(by_opponent[0], by_opponent[2]);
    assert_ne!(by_opponent[1], by_opponent[2]);
    for (list, expected) in ["1", "2", "all"].iter().zip(&by_opponent) {
        let file = dir.path().join(format!("coordinator-{list}.db"));
        let (success, log) = coordinator_run(
            &db,
            &[
                "--export",
                s(&file),
                "--export-by-results",
                "--opponents",
                list,
            ],
        );
        assert!(success, "{log}");
        let written = std::fs::read(&file).expect("final export written");
        assert!(
            written == *expected,
            "the coordinator's export for --opponents {list} differs from book-tools'"
        );
    }
    // An opponent the store does not know is refused before the run, naming those it knows.
    let never = dir.path().join("never.db");
    let (success, log) = coordinator_run(
        &db,
        &[
            "--export",
            s(&never),
            "--export-by-results",
            "--opponents",
            "3",
        ],
    );
    assert!(!success, "{log}");
    assert!(
        log.contains("no learning opponent `3`") && log.contains(&opponents[1].0),
        "{log}"
    );
    assert!(!never.exists());
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
            "--play-seed",
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
    let out = ok(&[
        "export",
        "--db",
        &db,
        "--export-by-results",
        "--out",
        s(&file),
    ]);
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
        (
            vec!["--learn-window=-5", "--nodes", "100"],
            "--learn-window",
        ),
        (
            vec!["--depth", "2", "--node-jitter", "0.5"],
            "--node-jitter needs a node limit",
        ),
        (
            vec!["--learn-games", "0", "--nodes", "100"],
            "--learn-games",
        ),
        (
            vec!["--nodes", "100", "--learn-opponent", "--engine builtin"],
            "no budget",
        ),
        (
            vec![
                "--nodes",
                "100",
                "--learn-opponent",
                "--nodes 10 --weight -1",
            ],
            "--weight",
        ),
        (
            vec!["--nodes", "100", "--learn-stop-when-settled", "0.3"],
            "--learn-stop-when-settled must lie in (0.5, 1), not 0.3",
        ),
        (
            vec!["--nodes", "100", "--learn-stop-when-settled", "1.5"],
            "--learn-stop-when-settled must lie in (0.5, 1), not 1.5",
        ),
        (
            vec![
                "--nodes",
                "100",
                "--learn-opponent",
                "--engine builtin --engine-cmd x --nodes 10",
            ],
            "--engine-cmd `x` needs --engine usi",
        ),
        (
            vec![
                "--nodes",
                "100",
                "--learn-opponent",
                "--engine-option UCI_Variant=shogi --nodes 10",
            ],
            "--engine-option `UCI_Variant=shogi` needs --engine usi",
        ),
        (
            vec!["--nodes", "100", "--learn-concurrency", "0"],
            "--learn-concurrency",
        ),
        (
            vec!["--nodes", "100", "--learn-concurrency", "100000"],
            "--learn-concurrency",
        ),
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
            .find(|l| l.starts_with("games recorded")),
        Some("games recorded   0 (0 self-play, 0 learning)")
    );
    // A store that does not exist is not created.
    let missing = dir.path().join("missing");
    let err = fails(&["learn", "--db", s(&missing), "--nodes", "100"]);
    assert!(!missing.exists(), "{err}");
}

/// An engine command given without `--engine usi` is a USI engine, as
/// `match --opponent-engine-cmd` is: started (here it cannot be, and the run
/// says so before a game), never the built-in engine in its place.
#[test]
fn an_opponent_engine_command_alone_is_a_usi_engine() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = single_root_book(dir.path());
    let err = fails(&[
        "learn",
        "--db",
        &db,
        "--games",
        "2",
        "--nodes",
        "100",
        "--opponent",
        "--engine-cmd /nonexistent/engine --nodes 100",
    ]);
    assert!(
        err.contains("starting opponent `--engine-cmd /nonexistent/engine --nodes 100`"),
        "{err}"
    );
    assert!(learning_opponents(&db).iter().all(|o| o.1 == 0));
    let Some(engine) = engines::real_engine(
        "fairy-stockfish",
        "STERA_FAIRY_STOCKFISH",
        "fairy-stockfish",
    ) else {
        return;
    };
    let opponent = format!(
        "--engine-cmd {} --engine-option UCI_Variant=shogi --depth 1",
        s(&engine)
    );
    learn_with(&db, "2", "1", &["--nodes", "100", "--opponent", &opponent]);
    let opponents = learning_opponents(&db);
    assert!(
        opponents
            .iter()
            .any(|(identity, games)| identity.contains("Fairy-Stockfish") && *games == 2),
        "{opponents:?}"
    );
}

/// `--stop-when-settled` stops at the first check where every key position
/// is settled: here each has one move within the window, so after the first
/// round of the one opening (two games), and every game played is counted.
#[test]
fn learning_stops_once_every_key_position_is_settled() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("one-move-ahead");
    stera_testkit::books::one_move_ahead_store(&db);
    let db = s(&db).to_owned();
    let run = book_tools(&[
        "learn",
        "--db",
        &db,
        "--learn-games",
        "1000",
        "--ply-limit",
        "60",
        "--learn-concurrency",
        "2",
        "--nodes",
        "100",
        "--learn-stop-when-settled",
        "0.9",
    ]);
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{err}");
    assert!(
        err.contains(
            "every key position is settled after 2 games: stopping (--learn-stop-when-settled)"
        ),
        "{err}"
    );
    let out = String::from_utf8_lossy(&run.stdout);
    // The games in flight at the check end and are counted too.
    let played: u64 = out
        .lines()
        .find_map(|l| l.split_once(" games in ")?.0.parse().ok())
        .unwrap_or_else(|| panic!("no summary in {out}"));
    assert!((2..1000).contains(&played), "{out}");
    let opponents = learning_opponents(&db);
    assert_eq!(
        opponents.iter().map(|o| o.1).sum::<u64>(),
        played,
        "{opponents:?}"
    );
    // The report: the start's move is settled, said in short lines (issue
    // 43: one 250-character line per key position).
    assert!(
        out.lines()
            .any(|l| l.starts_with("  startpos: plays 2g2f, P(best) 1.000, ")),
        "{out}"
    );
    assert!(
        out.lines()
            .filter(|l| l.starts_with("  "))
            .all(|l| l.chars().count() <= 100),
        "{out}"
    );
}

/// Every learning counter of a store, all opponents pooled, in key order.
fn pooled_learning_counts(db: &str) -> Vec<String> {
    use stera_book::NodeStore;
    let store = stera_book::SledStore::open_read_only(Path::new(db)).expect("open the store");
    let ids: Vec<_> = store
        .opponents()
        .expect("read the opponents")
        .iter()
        .map(|o| o.id)
        .collect();
    let counts = stera_book::learning_counts(&store, &ids).expect("read the counters");
    let mut rows: Vec<String> = counts
        .iter()
        .map(|(key, c)| format!("{key:?} {c:?}"))
        .collect();
    rows.sort();
    rows
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("make the copy's directory");
    for entry in std::fs::read_dir(from).expect("read the store") {
        let entry = entry.expect("an entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("its type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).expect("copy a file");
        }
    }
}

/// `book-tools learn`: 12 games one at a time from `seed`, the book side at
/// 60 nodes, against `opponent`.
fn learn_one_at_a_time(db: &str, seed: &str, opponent: &str) -> String {
    ok(&[
        "learn",
        "--db",
        db,
        "--learn-games",
        "12",
        "--learn-concurrency",
        "1",
        "--learn-seed",
        seed,
        "--ply-limit",
        "40",
        "--nodes",
        "60",
        "--learn-opponent",
        opponent,
    ])
}

/// One learning run, two front ends: `book-tools learn` on this machine and
/// the coordinator through a worker play the same games from the same seed
/// (one game at a time, node-limited engines), so they count the same results
/// at the same positions.
#[test]
fn the_same_seed_learns_the_same_games_on_one_machine_and_on_the_cluster() {
    let dir = tempfile::tempdir().unwrap();
    let local = single_root_book(dir.path());
    let cluster = dir.path().join("cluster");
    copy_dir(Path::new(&local), &cluster);
    let opponent = "--nodes 80";
    learn_one_at_a_time(&local, "5", opponent);
    let (success, log) = coordinator_run(
        s(&cluster),
        &[
            "--local-workers",
            "1",
            "--learn-games",
            "12",
            "--learn-concurrency",
            "1",
            "--learn-seed",
            "5",
            "--learn-nodes",
            "60",
            "--learn-opponent",
            opponent,
            "--ply-limit",
            "40",
        ],
    );
    assert!(success, "{log}");
    let (on_one_machine, on_the_cluster) = (
        pooled_learning_counts(&local),
        pooled_learning_counts(s(&cluster)),
    );
    assert!(!on_one_machine.is_empty());
    assert_eq!(on_one_machine, on_the_cluster);
    // Another seed plays other games: the comparison can fail.
    let fresh = dir.path().join("fresh");
    std::fs::create_dir_all(&fresh).unwrap();
    let fresh_db = single_root_book(&fresh);
    learn_one_at_a_time(&fresh_db, "6", opponent);
    assert_ne!(pooled_learning_counts(&fresh_db), on_one_machine);
}
