//! Game results in `show` and `stats`, through the built binary: a store written
//! with the library (nodes, roots, recorded games), then read by the tools.

use crate::common::{Dir, ok, s, sibling_exe};

use std::path::Path;

use stera_book::{GameCounts, NodeId, NodeStore, Origin, RunConfig, SledStore, ThoughtNode};
use stera_rules::{Key, Position};

/// A node for `pos` with values 0, -1, -2, ... in canonical move order.
fn node(pos: &Position, origin: Origin, ply: u16, evaluator: u16) -> ThoughtNode {
    let n = pos.legal_moves().len();
    ThoughtNode {
        key: pos.key(),
        origin,
        ply,
        values: (0..n).map(|i| -i16::try_from(i).unwrap()).collect(),
        depths: None,
        evaluator,
        timestamp: 1_700_000_000,
    }
}

fn position(command: &str) -> Position {
    Position::from_position_command(command).unwrap()
}

/// Thought: startpos, after 7g7f, after 7g7f 3c3d. Roots: startpos and 7g7f.
/// Games (counters from each position's side to move):
/// 1: black wins through 7g7f 3c3d; 2: a draw through 7g7f; 3: white wins
/// after 2g2f (outside the book); game 1 reported twice.
fn build_store(db: &Path) {
    let mut store = SledStore::open(db).unwrap();
    let evaluator = store.intern_evaluator("test-engine 1.0").unwrap();
    let start = position("startpos");
    let after_7g7f = position("startpos moves 7g7f");
    let after_3c3d = position("startpos moves 7g7f 3c3d");
    let mv = |pos: &Position, usi: &str| pos.parse_move(usi).unwrap();
    store
        .append(&[
            node(
                &start,
                Origin::Sfen(start.to_sfen_without_ply()),
                0,
                evaluator,
            ),
            node(
                &after_7g7f,
                Origin::Child {
                    parent: NodeId(0),
                    mv: mv(&start, "7g7f"),
                },
                1,
                evaluator,
            ),
            node(
                &after_3c3d,
                Origin::Child {
                    parent: NodeId(1),
                    mv: mv(&after_7g7f, "3c3d"),
                },
                2,
                evaluator,
            ),
        ])
        .unwrap();
    store
        .save_config(&RunConfig {
            roots: vec!["startpos".into(), "startpos moves 7g7f".into()],
            ..RunConfig::default()
        })
        .unwrap();
    let game1 = [
        (start.key(), GameCounts::WIN),
        (after_7g7f.key(), GameCounts::LOSS),
        (after_3c3d.key(), GameCounts::WIN),
    ];
    assert!(store.record_game(1, &game1).unwrap());
    let game2 = [
        (start.key(), GameCounts::DRAW),
        (after_7g7f.key(), GameCounts::DRAW),
    ];
    assert!(store.record_game(2, &game2).unwrap());
    assert!(
        store
            .record_game(3, &[(start.key(), GameCounts::LOSS)])
            .unwrap()
    );
    assert!(!store.record_game(1, &game1).unwrap());
}

/// The `games` and `score` columns of move `mv` in `show`'s move table.
fn move_columns(shown: &str, mv: &str) -> (String, String) {
    let line = shown
        .lines()
        .find(|l| l.split_whitespace().next() == Some(mv))
        .unwrap_or_else(|| panic!("no line for {mv} in\n{shown}"));
    let f: Vec<&str> = line.split_whitespace().collect();
    // ... games score policy ndf ponder
    (f[f.len() - 5].to_owned(), f[f.len() - 4].to_owned())
}

/// The `policy` and `ndf` columns (percent) of move `mv`.
fn weight_columns(shown: &str, mv: &str) -> (String, String) {
    let line = shown
        .lines()
        .find(|l| l.split_whitespace().next() == Some(mv))
        .unwrap_or_else(|| panic!("no line for {mv} in\n{shown}"));
    let f: Vec<&str> = line.split_whitespace().collect();
    (f[f.len() - 3].to_owned(), f[f.len() - 2].to_owned())
}

#[test]
fn show_prints_games_and_scores_per_move_and_for_the_position() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    build_store(&db);

    let shown = ok(&["show", "--db", s(&db), "startpos"]);
    assert!(
        shown.contains("games 3 (side to move: won 1, drawn 1, lost 1), score 0.500\n"),
        "{shown}"
    );
    // After 7g7f white lost one and drew one: for black, who moved, 1.5 of 2.
    assert_eq!(
        move_columns(&shown, "7g7f"),
        ("2".to_owned(), "0.750".to_owned()),
        "{shown}"
    );
    assert!(shown.contains("7g7f   *"), "{shown}");
    // 7g7f is the only move into a position with games: NineDayFever gives it all
    // of its own prior (no rival to take a share from), so both columns agree.
    let (policy, ndf) = weight_columns(&shown, "7g7f");
    assert!(policy.parse::<f64>().unwrap() > 0.0, "{shown}");
    assert_eq!(policy, ndf, "{shown}");
    assert_eq!(
        move_columns(&shown, "1g1f"),
        ("0".to_owned(), "-".to_owned()),
        "{shown}"
    );

    let shown = ok(&["show", "--db", s(&db), "startpos moves 7g7f"]);
    assert!(
        shown.contains("games 2 (side to move: won 0, drawn 1, lost 1), score 0.250\n"),
        "{shown}"
    );
    // Black won the game through 3c3d: white, who moved, lost it.
    assert_eq!(
        move_columns(&shown, "3c3d"),
        ("1".to_owned(), "0.000".to_owned()),
        "{shown}"
    );

    // A position outside the book: no games there, the header says so.
    let shown = ok(&["show", "--db", s(&db), "startpos moves 2g2f"]);
    assert!(shown.contains("games 0 (side to move: won 0, drawn 0, lost 0), score -\n"));
    assert!(shown.contains("not thought"), "{shown}");
}

#[test]
fn stats_prints_games_recorded_and_per_root() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    build_store(&db);
    let stats = ok(&["stats", "--db", s(&db)]);
    assert!(
        stats.contains("games recorded   3 (3 self-play, 0 learning)\n"),
        "{stats}"
    );
    assert!(
        stats.contains("  startpos: 3 games, 1/1/1, score 0.500\n"),
        "{stats}"
    );
    assert!(
        stats.contains("  startpos moves 7g7f: 2 games, 0/1/1, score 0.250\n"),
        "{stats}"
    );
    // Nothing else changed: the book is still there.
    assert!(stats.contains("nodes            3"), "{stats}");
}

#[test]
fn stats_of_a_store_without_games() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    {
        let mut store = SledStore::open(&db).unwrap();
        store
            .save_config(&RunConfig {
                roots: vec!["startpos".into()],
                ..RunConfig::default()
            })
            .unwrap();
        assert_eq!(store.game_counts(Key(0)).unwrap(), GameCounts::default());
    }
    let stats = ok(&["stats", "--db", s(&db)]);
    assert!(
        stats.contains("games recorded   0 (0 self-play, 0 learning)\n"),
        "{stats}"
    );
    assert!(stats.contains("  startpos: no games\n"), "{stats}");
}

/// A move into a position the book holds only as its colour-flipped twin shows
/// the twin's games (where the coordinator counts them), whether the shown
/// position is thought or not.
#[test]
fn show_finds_the_games_of_a_child_held_as_its_twin() {
    let start = position("startpos");
    let after_7g7f = position("startpos moves 7g7f");
    let twin = Position::from_sfen(&after_7g7f.flipped().to_sfen()).unwrap();
    assert_ne!(twin.key(), after_7g7f.key());
    for start_thought in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("db");
        {
            let mut store = SledStore::open(&db).unwrap();
            let evaluator = store.intern_evaluator("test-engine 1.0").unwrap();
            let mut nodes = vec![node(
                &twin,
                Origin::Sfen(twin.to_sfen_without_ply()),
                1,
                evaluator,
            )];
            if start_thought {
                nodes.insert(
                    0,
                    node(
                        &start,
                        Origin::Sfen(start.to_sfen_without_ply()),
                        0,
                        evaluator,
                    ),
                );
            }
            store.append(&nodes).unwrap();
            // Black won through 7g7f: the twin's side to move (white in the game)
            // lost.
            assert!(
                store
                    .record_game(1, &[(twin.key(), GameCounts::LOSS)])
                    .unwrap()
            );
        }
        let shown = ok(&["show", "--db", s(&db), "startpos"]);
        if start_thought {
            assert_eq!(
                move_columns(&shown, "7g7f"),
                ("1".to_owned(), "1.000".to_owned()),
                "{shown}"
            );
            assert!(shown.contains("7g7f   *"), "{shown}");
        } else {
            assert!(shown.contains("not thought"), "{shown}");
            let line = shown
                .lines()
                .find(|l| l.trim_start().starts_with("7g7f "))
                .unwrap_or_else(|| panic!("7g7f not listed in\n{shown}"));
            assert!(line.ends_with("games 1 score 1.000"), "{shown}");
        }
    }
}

/// A root the book holds only as its colour-flipped twin: `stats` finds its
/// games under the twin's key and counts its in-book depth from the twin.
#[test]
fn stats_finds_a_root_held_as_its_twin() {
    let after_7g7f = position("startpos moves 7g7f");
    let twin = Position::from_sfen(&after_7g7f.flipped().to_sfen()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    {
        let mut store = SledStore::open(&db).unwrap();
        let evaluator = store.intern_evaluator("test-engine 1.0").unwrap();
        store
            .append(&[node(
                &twin,
                Origin::Sfen(twin.to_sfen_without_ply()),
                1,
                evaluator,
            )])
            .unwrap();
        store
            .save_config(&RunConfig {
                roots: vec!["startpos moves 7g7f".into()],
                ..RunConfig::default()
            })
            .unwrap();
        assert!(
            store
                .record_game(1, &[(twin.key(), GameCounts::LOSS)])
                .unwrap()
        );
    }
    let stats = ok(&["stats", "--db", s(&db)]);
    assert!(
        stats.contains("  startpos moves 7g7f: 1 games, 0/0/1, score 0.000\n"),
        "{stats}"
    );
    assert!(stats.contains("    0: 1\n"), "{stats}");
    assert!(!stats.contains("unreachable"), "{stats}");
}

/// The games a coordinator keeps (`--out-games`) are a file `kifu add` reads: every
/// game is read, none skipped (each line's result note after a tab was once read
/// as a move).
#[test]
fn kifu_add_reads_the_games_a_coordinator_kept() {
    let dir = Dir::new();
    let (db, games, kifu) = (
        dir.path("book.db"),
        dir.path("games.txt"),
        dir.path("kifu.db"),
    );
    let status = std::process::Command::new(sibling_exe("coordinator"))
        .args([
            "--db",
            s(&db),
            "--create",
            "--listen",
            "127.0.0.1:0",
            "--local-workers",
            "1",
        ])
        .args([
            "--think-limit",
            "20",
            "--nodes",
            "300",
            "--play-share",
            "0.5",
        ])
        .args(["--games", "3", "--play-nodes", "100", "--ply-limit", "60"])
        .args(["--out-games", s(&games)])
        .env_remove("STERA_TOKEN")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .expect("run the coordinator");
    assert!(status.success());
    let kept = std::fs::read_to_string(&games).unwrap();
    let lines = kept.lines().count();
    assert!(lines >= 3, "{kept}");
    let added = ok(&["kifu", "add", "--create", "--db", s(&kifu), s(&games)]);
    assert!(
        added.contains(&format!("{lines} games read, 0 skipped")),
        "{added}\n{kept}"
    );
    let summary = added.lines().last().unwrap();
    assert!(
        summary.contains("skipped 0") && !summary.contains("added 0 "),
        "{added}"
    );
}
