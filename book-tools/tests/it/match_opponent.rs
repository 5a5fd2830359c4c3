//! `book-tools match` against another engine (`--opponent-*`), and what its
//! report refuses to claim: an interval over repeated games, a result of a book
//! that never played a move, an infinite Elo. Real engine processes: the built
//! binary with the built-in engine, and Fairy-Stockfish (skipped when it is not
//! installed, failed then under STERA_REQUIRE_ENGINES=1).

use std::path::Path;

use crate::common::{book_tools, ok, s, single_root_book};
use crate::engines;
use crate::match_cli::{number, recount_from_csa, summary};

use stera_formats::kifu::{KifuFormat, read_kifu_bytes};

fn read_json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("json written")).expect("JSON")
}

#[test]
fn the_book_side_and_another_engine_each_play_with_their_own_engine_and_limits() {
    let Some(fairy) = engines::real_engine(
        "fairy-stockfish",
        "STERA_FAIRY_STOCKFISH",
        "fairy-stockfish",
    ) else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let db = single_root_book(dir.path());
    let games = dir.path().join("games.csa");
    let json_path = dir.path().join("result.json");
    let out = ok(&[
        "match",
        "--db",
        &db,
        "--games",
        "4",
        "--nodes",
        "300",
        "--opponent-engine-cmd",
        s(&fairy),
        "--opponent-engine-option",
        "UCI_Variant=shogi",
        "--opponent-depth",
        "1",
        "--ply-limit",
        "80",
        "--concurrency",
        "2",
        "--out-games",
        s(&games),
        "--json",
        s(&json_path),
    ]);
    let m = summary(&out);
    assert_eq!(m["games"], "4 of 4", "{out}");
    // Both sides named, their limits in words: the book side's node limit with
    // its default jitter, the opponent's depth with none.
    assert_eq!(
        m["engine"], "stera-builtin 0.1.0 (hce), 300 nodes ±50 %",
        "{out}"
    );
    assert!(
        m["opponent's engine"].starts_with("Fairy-Stockfish")
            && m["opponent's engine"].ends_with(", depth 1"),
        "{out}"
    );
    assert!(!out.contains("Limits {"), "{out}");
    let json = read_json(&json_path);
    assert_eq!(json["limits"], "300 nodes ±50 %", "{json}");
    assert_eq!(json["opponent_limits"], "depth 1", "{json}");
    assert_eq!(json["opponent_node_jitter"], 0.0, "{json}");
    assert!(
        json["opponent_engine"]
            .as_str()
            .expect("a name")
            .starts_with("Fairy-Stockfish"),
        "{json}"
    );
    // The games file names the two engines, the book with the built-in one, in
    // both colours; its results recount to the report's.
    let text = std::fs::read_to_string(&games).expect("games written");
    let csa =
        read_kifu_bytes(text.as_bytes(), "games.csa", Some(KifuFormat::Csa)).expect("readable CSA");
    assert_eq!(csa.summary.games_read, 4, "{:?}", csa.summary.errors);
    let names = |prefix: &str| -> Vec<String> {
        text.lines()
            .filter_map(|l| l.strip_prefix(prefix))
            .map(str::to_owned)
            .collect()
    };
    let (black, white) = (names("N+"), names("N-"));
    assert_eq!((black.len(), white.len()), (4, 4), "{text}");
    for (b, w) in black.iter().zip(&white) {
        let book_side = format!("stera-builtin 0.1.0 (hce) + book {db}");
        assert!(
            (*b == book_side && w.starts_with("Fairy-Stockfish"))
                || (*w == book_side && b.starts_with("Fairy-Stockfish")),
            "{b} / {w}"
        );
    }
    assert_eq!(black.iter().filter(|b| b.starts_with("Fairy")).count(), 2);
    let (w, d, l) = (
        number(&m, "wins"),
        number(&m, "draws"),
        number(&m, "losses"),
    );
    assert_eq!(w + d + l, 4, "{out}");
    assert_eq!(recount_from_csa(&text, &db), (w, d, l));
    assert_eq!(
        (json["wins"].as_u64(), json["losses"].as_u64()),
        (Some(w), Some(l))
    );
    // Beyond the book, more moves than it holds: the engines played.
    assert!(csa.games.iter().all(|g| g.moves.len() > 4), "{text}");
}

#[test]
fn opponent_flags_that_cannot_work_are_refused_before_any_game() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = single_root_book(dir.path());
    // Jitter without a node limit for the opponent.
    let out = book_tools(&[
        "match",
        "--db",
        &db,
        "--nodes",
        "100",
        "--opponent-depth",
        "2",
        "--opponent-node-jitter",
        "0.2",
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--opponent-node-jitter needs a node limit"),
        "{err}"
    );
    // An opponent engine that does not start names the opponent.
    let out = book_tools(&[
        "match",
        "--db",
        &db,
        "--nodes",
        "100",
        "--opponent-engine-cmd",
        "/nonexistent/engine",
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot start the opponent's engine"), "{err}");
    // So does the side's own command alone: a USI engine, started, not the
    // built-in engine in its place.
    let out = book_tools(&[
        "match",
        "--db",
        &db,
        "--nodes",
        "100",
        "--engine-cmd",
        "/nonexistent/engine",
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cannot start the engine") && err.contains("/nonexistent/engine"),
        "{err}"
    );
    // A command or a USI option for an engine said to be the built-in one is
    // refused, naming the two flags.
    for (flags, says) in [
        (
            vec!["--opponent-engine", "builtin", "--opponent-engine-cmd", "x"],
            "--opponent-engine-cmd `x` needs --opponent-engine usi, not --opponent-engine builtin",
        ),
        (
            vec!["--opponent-engine-option", "UCI_Variant=shogi"],
            "--opponent-engine-option `UCI_Variant=shogi` needs --opponent-engine usi",
        ),
        (
            vec!["--engine", "builtin", "--engine-cmd", "x"],
            "--engine-cmd `x` needs --engine usi, not --engine builtin",
        ),
    ] {
        let mut args = vec!["match", "--db", db.as_str(), "--nodes", "100"];
        args.extend(flags.iter().copied());
        let out = book_tools(&args);
        assert!(!out.status.success(), "{flags:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{flags:?}: {err}");
    }
}

#[test]
fn a_default_match_from_one_opening_plays_distinct_games_or_refuses() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = single_root_book(dir.path());
    let openings = dir.path().join("openings.txt");
    std::fs::write(&openings, "startpos\n").expect("write openings");
    let json_path = dir.path().join("result.json");
    let run = |extra: &[&str]| {
        let mut args = vec![
            "match",
            "--db",
            &db,
            "--openings",
            s(&openings),
            "--repeat-openings",
            "--games",
            "12",
            "--nodes",
            "1000",
            "--ply-limit",
            "60",
            "--concurrency",
            "2",
            "--json",
            s(&json_path),
        ];
        args.extend_from_slice(extra);
        let out = book_tools(&args);
        (out, read_json(&json_path))
    };
    // Deterministic engines from one opening replay one pair: refused, saying so.
    let (out, json) = run(&["--node-jitter", "0"]);
    assert!(!out.status.success());
    assert_eq!(json["independent"], false, "{json}");
    assert!(json["pentanomial"].is_null(), "{json}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("interval withheld"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The default jitter: either at least 95 % of the games are distinct (with
    // the book under test on the same side) and the interval is printed, or
    // the match refuses.
    let (out, json) = run(&[]);
    assert_eq!(json["node_jitter"], 0.5, "{json}");
    let repeated = json["repeated_game_share"].as_f64().expect("a share");
    let stdout = String::from_utf8_lossy(&out.stdout);
    if repeated <= 0.05 && json["repeat_share"].as_f64().expect("a share") <= 0.05 {
        assert!(out.status.success(), "{stdout}");
        assert!(stdout.contains("elo (pentanomial, 95 %)"), "{stdout}");
    } else {
        assert!(!out.status.success(), "{stdout}");
        assert!(!stdout.contains("elo (pentanomial, 95 %)"), "{stdout}");
        assert!(json["withheld"].is_string(), "{json}");
    }
}

#[test]
fn a_book_that_never_plays_a_move_is_said_to_and_gets_no_interval() {
    let dir = tempfile::tempdir().expect("temp dir");
    // The book holds positions up to ply 2: random openings of 6 plies start
    // beyond it, so both games of a pair are its engine's, colours swapped.
    let db = single_root_book(dir.path());
    let json_path = dir.path().join("result.json");
    let out = book_tools(&[
        "match",
        "--db",
        &db,
        "--random-plies",
        "6",
        "--balanced-cp",
        "400",
        "--games",
        "6",
        "--nodes",
        "300",
        "--ply-limit",
        "60",
        "--concurrency",
        "2",
        "--json",
        s(&json_path),
    ]);
    assert!(!out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let m = summary(&stdout);
    assert_eq!(m["games"], "6 of 6", "{stdout}");
    assert!(
        stderr.contains("the book under test played no move in any of the 6 games"),
        "{stderr}"
    );
    assert!(
        stdout.contains("played no move in any of the 6 games"),
        "{stdout}"
    );
    // No interval, zero-width or other.
    assert!(!stdout.contains("elo (pentanomial"), "{stdout}");
    assert!(!stdout.contains("[+0.0, +0.0]"), "{stdout}");
    let json = read_json(&json_path);
    assert_eq!(json["book_never_used"], true, "{json}");
    assert_eq!(json["coverage"]["games_without_own_book_move"], 6, "{json}");
    assert!(json["pentanomial"].is_null(), "{json}");
}

#[test]
fn a_side_that_loses_every_game_gets_a_bound_not_an_infinite_elo() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = single_root_book(dir.path());
    // The book side searches 1 node a move, its opponent 20,000 (no jitter on
    // either: --node-jitter is the opponent's default too).
    let out = book_tools(&[
        "match",
        "--db",
        &db,
        "--games",
        "4",
        "--nodes",
        "1",
        "--node-jitter",
        "0",
        "--opponent-nodes",
        "20000",
        "--ply-limit",
        "256",
        "--concurrency",
        "2",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        !stdout.contains("inf") && !stderr.contains("inf"),
        "{stdout}\n{stderr}"
    );
    let m = summary(&stdout);
    assert_eq!(
        m["engine"], "stera-builtin 0.1.0 (hce), 1 nodes",
        "{stdout}"
    );
    assert_eq!(
        m["opponent's engine"], "stera-builtin 0.1.0 (hce), 20,000 nodes",
        "{stdout}"
    );
    assert_eq!(number(&m, "wins") + number(&m, "draws"), 0, "{stdout}");
    // Every pair lost: the rule of three's bound over 2 pairs (a pair scores
    // more than 0 with probability below p, 0.025 = (1 - p)^2) lies above an
    // even score, so it bounds nothing and no Elo is claimed (issue 43: "elo
    // below +636.4" after 0-3).
    assert_eq!(
        m["elo (pentanomial, 95 %)"],
        "no bound yet: every pair lost, and 2 pairs are too few to place the book below an even score (6 are needed)",
        "{stdout}"
    );
    assert!(
        m["interval (pentanomial)"].starts_with("every pair lost"),
        "{stdout}"
    );
}

/// `--opponent SPEC` is the opponent of `learn --learn-opponent` in the same
/// grammar, and the `--opponent-*` flags a shorthand for it: the same opponent
/// either way plays the same games. A spec whose `--engine-id` the started
/// engine does not say is refused before any game.
#[test]
fn an_opponent_description_and_its_flags_play_the_same_games() {
    let Some(fairy) = engines::real_engine(
        "fairy-stockfish",
        "STERA_FAIRY_STOCKFISH",
        "fairy-stockfish",
    ) else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let db = single_root_book(dir.path());
    let play = |name: &str, opponent: &[&str]| {
        let games = dir.path().join(name);
        let mut args = vec![
            "match",
            "--db",
            &db,
            "--games",
            "4",
            "--nodes",
            "200",
            "--ply-limit",
            "60",
            "--out-games",
            s(&games),
        ];
        args.extend_from_slice(opponent);
        ok(&args);
        std::fs::read_to_string(&games).expect("games written")
    };
    let by_flags = play(
        "flags.csa",
        &[
            "--opponent-engine-cmd",
            s(&fairy),
            "--opponent-engine-option",
            "UCI_Variant=shogi",
            "--opponent-nodes",
            "300",
            "--opponent-node-jitter",
            "0.2",
        ],
    );
    let spec = format!(
        "--engine-cmd {} --engine-option UCI_Variant=shogi --engine-id Fairy-Stockfish --nodes 300 --node-jitter 0.2",
        s(&fairy)
    );
    let by_spec = play("spec.csa", &["--opponent", &spec]);
    assert!(by_flags.contains("Fairy-Stockfish"), "{by_flags}");
    assert_eq!(by_flags, by_spec);
    let wrong = format!(
        "--engine-cmd {} --engine-option UCI_Variant=shogi --engine-id gpsshogi --nodes 300",
        s(&fairy)
    );
    let out = book_tools(&[
        "match",
        "--db",
        &db,
        "--games",
        "2",
        "--nodes",
        "200",
        "--opponent",
        &wrong,
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("does not contain --engine-id `gpsshogi`"),
        "{err}"
    );
    // One opponent, one way to say it.
    let out = book_tools(&[
        "match",
        "--db",
        &db,
        "--opponent",
        "--nodes 300",
        "--opponent-nodes",
        "300",
    ]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot be used with"));
}
