//! The report checked on known game sets: the counts, independence and what
//! is withheld, and the games file.

use super::*;
use crate::matches::coverage::{Coverage, Exit};
use serde_json::json;
use stera_games::{GameMove, GameResult, Outcome, Termination};

fn settings() -> Settings {
    Settings {
        own: "a".to_owned(),
        own_policy: "best".to_owned(),
        against: "no book".to_owned(),
        against_policy: None,
        engine: "e".to_owned(),
        limits: "1 nodes".to_owned(),
        node_jitter: 0.0,
        opponent_engine: "e".to_owned(),
        opponent_limits: "1 nodes".to_owned(),
        opponent_node_jitter: 0.0,
        openings: 1,
        suite: "test".to_owned(),
        seed: 1,
        max_repeats: 0.05,
        baseline: false,
        training: None,
    }
}

/// Game `index` of a known set: `moves` after the start, won by `winner`.
fn finished(index: usize, moves: &[&str], outcome: Outcome) -> Finished {
    Finished {
        index,
        own_color: if index.is_multiple_of(2) {
            Color::Black
        } else {
            Color::White
        },
        game: Game {
            start_sfen: stera_rules::STARTPOS_SFEN.to_owned(),
            moves: moves
                .iter()
                .map(|m| GameMove::new(m.parse().unwrap(), MoveSource::Engine))
                .collect(),
            result: GameResult {
                outcome,
                termination: Termination::Resignation,
            },
        },
        coverage: Coverage {
            own_book_plies: 1,
            other_book_plies: 0,
            exit: Exit::Opening,
            exit_ply: 0,
        },
    }
}

#[test]
fn a_known_game_set_gives_its_pentanomial_counts_and_distinct_figures() {
    use Outcome::{BlackWins, Draw, WhiteWins};
    let mut r = Report::new(8, None, settings(), None);
    // Pair 0: own wins as black, loses as white -> 1 point (counts[2]).
    r.add(finished(0, &["7g7f"], BlackWins)).unwrap();
    r.add(finished(1, &["2g2f"], BlackWins)).unwrap();
    // Pair 1 (ends in reverse order): own wins both -> 2 points (counts[4]).
    r.add(finished(3, &["5g5f"], WhiteWins)).unwrap();
    r.add(finished(2, &["6g6f"], BlackWins)).unwrap();
    // Pair 2: draw and loss -> 1/2 point (counts[1]).
    r.add(finished(4, &["1g1f"], Draw)).unwrap();
    r.add(finished(5, &["9g9f"], BlackWins)).unwrap();
    // Pair 3 repeats pair 0's games exactly: 1 point again.
    r.add(finished(6, &["7g7f"], BlackWins)).unwrap();
    r.add(finished(7, &["2g2f"], BlackWins)).unwrap();
    assert_eq!(r.pairs.counts, [0, 1, 2, 0, 1]);
    assert_eq!(r.distinct_games.len(), 6);
    assert_eq!(r.distinct_pairs.len(), 3);
    assert!((r.repeat_share() - 0.25).abs() < 1e-12);
    // 1 of 4 pairs repeats: above 5 %, the interval is withheld.
    assert!(!r.independent());
    let json = r.json();
    assert_eq!(json["distinct_games"], 6);
    assert_eq!(json["distinct_pairs"], 3);
    // Each distinct game once: as Black 7g7f (won), 6g6f (won), 1g1f (draw):
    // 2.5 of 3; as White 2g2f (lost), 5g5f (won), 9g9f (lost): 1 of 3.
    let (black, white, elo) = r.distinct_once().unwrap();
    assert!((black - 2.5 / 3.0).abs() < 1e-12 && (white - 1.0 / 3.0).abs() < 1e-12);
    assert!((elo - elo_from_score(0.5 * (2.5 + 1.0) / 3.0)).abs() < 1e-9);
    assert_eq!(json["distinct_once"]["black_games"], 3);
    assert_eq!(json["distinct_once"]["white_games"], 3);
    assert_eq!(json["pentanomial_counts"], json!([0, 1, 2, 0, 1]));
    assert!(json["pentanomial"].is_null());
    let err = r.finish(None, None).unwrap_err();
    assert!(
        format!("{err}").contains("only 3 of 4 pairs of games are distinct"),
        "{err}"
    );
}

#[test]
fn independent_games_get_an_interval_in_the_json() {
    use Outcome::{BlackWins, WhiteWins};
    let mut r = Report::new(
        4,
        Some(Sprt::new(0.0, 10.0, 0.05, 0.05).unwrap()),
        settings(),
        None,
    );
    r.add(finished(0, &["7g7f"], BlackWins)).unwrap();
    r.add(finished(1, &["2g2f"], WhiteWins)).unwrap();
    // The second pair's games are the same moves: one sample, independent
    // of the first pair.
    r.add(finished(2, &["5g5f"], BlackWins)).unwrap();
    r.add(finished(3, &["5g5f"], BlackWins)).unwrap();
    assert!(r.independent());
    assert_eq!(r.mirrored_pairs, 1);
    let json = r.json();
    // Pairs: 2 points and 1 point: mean 0.75 of a game's point.
    assert_eq!(json["pentanomial_counts"], json!([0, 0, 1, 0, 1]));
    assert!((json["pentanomial"]["score"].as_f64().unwrap() - 0.75).abs() < 1e-12);
    assert_eq!(json["sprt"]["decision"], "undecided");
    assert_eq!(json["wins"], 3);
    r.finish(None, None).unwrap();
}

#[test]
fn repeated_games_withhold_the_interval_though_every_pair_differs() {
    use Outcome::{BlackWins, WhiteWins};
    let mut r = Report::new(8, None, settings(), None);
    // Four distinct pairs, but game 0 comes back as game 2 and game 1 as
    // game 7, the book under test on the same side: 2 of 8 games repeat.
    r.add(finished(0, &["7g7f"], BlackWins)).unwrap();
    r.add(finished(1, &["2g2f"], WhiteWins)).unwrap();
    r.add(finished(2, &["7g7f"], BlackWins)).unwrap();
    r.add(finished(3, &["5g5f"], WhiteWins)).unwrap();
    r.add(finished(4, &["1g1f"], BlackWins)).unwrap();
    r.add(finished(5, &["9g9f"], WhiteWins)).unwrap();
    r.add(finished(6, &["6g6f"], BlackWins)).unwrap();
    r.add(finished(7, &["2g2f"], WhiteWins)).unwrap();
    assert_eq!(r.distinct_pairs.len(), 4);
    assert!((r.repeated_game_share() - 0.25).abs() < 1e-12);
    assert!(!r.independent());
    let json = r.json();
    assert!(json["pentanomial"].is_null());
    assert!(
        json["withheld"]
            .as_str()
            .unwrap()
            .contains("only 6 of 8 games are distinct"),
        "{json}"
    );
    let err = r.finish(None, None).unwrap_err();
    assert!(format!("{err}").contains("25.0 % repeat"), "{err}");
}

#[test]
fn a_book_that_played_no_move_gets_no_interval() {
    use Outcome::{BlackWins, WhiteWins};
    let mut r = Report::new(4, None, settings(), None);
    for (i, moves, outcome) in [
        (0, ["7g7f"], BlackWins),
        (1, ["7g7f"], BlackWins),
        (2, ["2g2f"], WhiteWins),
        (3, ["2g2f"], WhiteWins),
    ] {
        let mut game = finished(i, &moves, outcome);
        game.coverage.own_book_plies = 0;
        r.add(game).unwrap();
    }
    // Every pair the same game twice: 1 point each, a zero-width interval
    // if it were shown.
    assert_eq!(r.pairs.counts, [0, 0, 2, 0, 0]);
    assert!(r.book_never_used() && !r.independent());
    let reason = r.withheld_reason();
    assert!(
        reason.contains("played no move in any of the 4 games")
            && reason.contains("2 of 2 pairs are the same game twice"),
        "{reason}"
    );
    assert_eq!(r.json()["book_never_used"], true);
    assert!(r.finish(None, None).is_err());
}

#[test]
fn the_games_file_names_each_game_and_separates_them() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("g.csa");
    let mut out = GamesFile::create(&path, None, "db", "no book", "engine", "other").unwrap();
    out.write(&finished(1, &["7g7f"], Outcome::BlackWins))
        .unwrap();
    out.write(&finished(0, &["2g2f"], Outcome::WhiteWins))
        .unwrap();
    // Nothing under the name until the match ends.
    assert!(!path.exists());
    out.commit().unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.starts_with("V2.2\n'game 2 pair 1\n"), "{text}");
    assert!(text.contains("\n/\nV2.2\n'game 1 pair 1\n"), "{text}");
    assert!(text.contains("N+other\n"), "{text}");
    assert!(text.contains("N-engine + book db\n"), "{text}");
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["g.csa"], "the temporary file is gone");
}

#[test]
fn a_games_file_dropped_unfinished_leaves_nothing_and_the_old_file_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("g.csa");
    std::fs::write(&path, "earlier games\n").unwrap();
    let mut out = GamesFile::create(&path, None, "db", "no book", "engine", "other").unwrap();
    out.write(&finished(0, &["2g2f"], Outcome::WhiteWins))
        .unwrap();
    drop(out);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "earlier games\n");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}
