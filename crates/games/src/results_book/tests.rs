use std::collections::HashMap;
use std::sync::Arc;

use stera_book::{Book, GameCounts, Origin, ThoughtNode};
use stera_rules::{Color, Key, Move, Position};

use super::*;
use crate::book::{BookPolicy, MoveRule, RuledBook};
use crate::game::{Game, GameMove, GameResult, MoveSource, Outcome, Termination};

/// The start thought with 2g2f valued 30, 7g7f 20, 5g5f -100, every other move -300.
fn start_book() -> Arc<AnalysedBook> {
    let start = Position::startpos();
    let moves = start.legal_moves();
    let values = moves
        .iter()
        .map(|m| match m.to_string().as_str() {
            "2g2f" => 30,
            "7g7f" => 20,
            "5g5f" => -100,
            _ => -300,
        })
        .collect();
    let mut book = Book::new();
    book.insert(&ThoughtNode {
        key: start.key(),
        origin: Origin::Sfen(start.to_sfen_without_ply()),
        ply: 1,
        values,
        depths: None,
        evaluator: 0,
        timestamp: 0,
    })
    .unwrap();
    Arc::new(AnalysedBook::new(book).unwrap())
}

fn mv(usi: &str) -> Move {
    usi.parse().unwrap()
}

fn after(usi: &str) -> Position {
    Position::from_position_command(&format!("startpos moves {usi}")).unwrap()
}

/// The key counters of a position the book holds in neither colour go under.
fn unheld_key(p: &Position) -> Key {
    p.key().min(p.flipped_key())
}

/// Counters for the position after `usi`, `score` of `games` for the mover (Black).
fn results_of(usi: &str, wins_for_mover: u32, losses_for_mover: u32) -> (Key, GameCounts) {
    // Stored from the side to move's view (White): the mover's wins are its losses.
    (
        unheld_key(&after(usi)),
        GameCounts {
            wins: losses_for_mover,
            draws: 0,
            losses: wins_for_mover,
        },
    )
}

#[test]
fn without_games_the_results_rule_plays_the_best_value() {
    let book = ResultsBook::new(start_book(), HashMap::new());
    let start = Position::startpos();
    assert_eq!(book.best_by_results(&start, 4.0), Some(mv("2g2f")));
    assert_eq!(book.move_results(&start, mv("2g2f")), GameCounts::default());
    // Out of book: a position not thought.
    assert_eq!(book.best_by_results(&after("2g2f"), 4.0), None);
}

#[test]
fn games_outweigh_values_once_there_are_enough_of_them() {
    let start = Position::startpos();
    // 2g2f scored 40 of 100 for Black, 7g7f 60 of 100.
    let counts = HashMap::from([results_of("2g2f", 40, 60), results_of("7g7f", 60, 40)]);
    let book = ResultsBook::new(start_book(), counts);
    assert_eq!(
        book.move_results(&start, mv("7g7f")),
        GameCounts {
            wins: 60,
            draws: 0,
            losses: 40
        }
    );
    assert_eq!(book.best_by_results(&start, 4.0), Some(mv("7g7f")));
    // With a prior of a million pseudo-games the values decide again.
    assert_eq!(book.best_by_results(&start, 1e6), Some(mv("2g2f")));
    // The rule plays the same move through a RuledBook; Best does not look at games.
    let source: Arc<dyn crate::BookSource> = Arc::new(book);
    let by_results = RuledBook::new(
        Arc::clone(&source),
        MoveRule::Results { prior_games: 4.0 },
        None,
    );
    assert_eq!(by_results.choose(&start, 0.3), Some(mv("7g7f")));
    let best = RuledBook::new(source, MoveRule::Best, None);
    assert_eq!(best.choose(&start, 0.3), Some(mv("2g2f")));
}

#[test]
fn a_few_games_do_not_overturn_a_value() {
    // One lost game of 2g2f against its value: 4 pseudo-games at p(30) and one
    // loss.
    let counts = HashMap::from([results_of("2g2f", 0, 1)]);
    let book = ResultsBook::new(start_book(), counts);
    let e = book
        .estimates(&Position::startpos(), 4.0)
        .unwrap()
        .into_iter()
        .find(|e| e.0.mv == mv("2g2f"))
        .unwrap()
        .2;
    assert!((e.mean - 4.0 * win_rate_of_value(30) / 5.0).abs() < 1e-12);
    assert!((e.weight - 5.0).abs() < 1e-12);
    // The loss costs 2g2f its lead.
    assert_eq!(
        book.best_by_results(&Position::startpos(), 4.0),
        Some(mv("7g7f"))
    );
}

#[test]
fn the_learner_explores_within_its_margin_and_exploits_what_games_showed() {
    let start = Position::startpos();
    let draws = |policy: &LearningPolicy| {
        let mut seen: HashMap<Move, usize> = HashMap::new();
        for i in 0..400 {
            let m = policy.choose(&start, f64::from(i) / 400.0).unwrap();
            *seen.entry(m).or_default() += 1;
        }
        seen
    };
    // No games: 2g2f and 7g7f (within 50 cp of the best) share the draws; 5g5f
    // (130 below) and the rest are never played.
    let fresh = LearningPolicy::new(
        Arc::new(ResultsBook::new(start_book(), HashMap::new())),
        50,
        4.0,
    );
    let seen = draws(&fresh);
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert!(seen[&mv("2g2f")] > 50 && seen[&mv("7g7f")] > 50, "{seen:?}");
    // 1,000 games each, 7g7f at 0.7 and 2g2f at 0.3: 7g7f every time.
    let counts = HashMap::from([results_of("2g2f", 300, 700), results_of("7g7f", 700, 300)]);
    let taught = LearningPolicy::new(Arc::new(ResultsBook::new(start_book(), counts)), 50, 4.0);
    let seen = draws(&taught);
    assert_eq!(seen.get(&mv("7g7f")), Some(&400), "{seen:?}");
    assert_eq!(taught.probabilities(&start), Some(vec![(mv("7g7f"), 1.0)]));
    // The same number gives the same move.
    assert_eq!(fresh.choose(&start, 0.25), fresh.choose(&start, 0.25));
}

fn game(moves: &[(&str, MoveSource)], outcome: Outcome) -> Game {
    Game {
        start_sfen: Position::startpos().to_sfen(),
        moves: moves
            .iter()
            .map(|(m, s)| GameMove::new(mv(m), *s))
            .collect(),
        result: GameResult {
            outcome,
            termination: Termination::Resignation,
        },
    }
}

#[test]
fn a_game_teaches_the_positions_up_to_the_one_after_the_learners_last_book_move() {
    let book = ResultsBook::new(start_book(), HashMap::new());
    let (e, b) = (MoveSource::Engine, MoveSource::Book);
    // White learns: its book move is the 4th ply (index 3); Black wins.
    let g = game(
        &[
            ("7g7f", e),
            ("3c3d", b),
            ("2g2f", e),
            ("4a3b", b),
            ("2f2e", e),
        ],
        Outcome::BlackWins,
    );
    let counts = book.learning_counts(&g, Color::White).unwrap();
    let expected: Vec<(Key, GameCounts)> = [
        ("", GameCounts::WIN), // the start: Black to move, Black won
        ("7g7f", GameCounts::LOSS),
        ("7g7f 3c3d", GameCounts::WIN),
        ("7g7f 3c3d 2g2f", GameCounts::LOSS),
        ("7g7f 3c3d 2g2f 4a3b", GameCounts::WIN),
    ]
    .iter()
    .map(|(line, c)| {
        // The start is held by the book: its own key.
        let key = if line.is_empty() {
            Position::startpos().key()
        } else {
            unheld_key(&after(line))
        };
        (key, *c)
    })
    .collect();
    assert_eq!(counts, expected);
    // Black played no book move: nothing to learn for Black.
    assert!(book.learning_counts(&g, Color::Black).unwrap().is_empty());
    // Added, they are the results of White's move 4a3b, from White's view.
    book.add(&counts);
    let before = after("7g7f 3c3d 2g2f");
    assert_eq!(book.move_results(&before, mv("4a3b")), GameCounts::LOSS);
    assert_eq!(book.positions_with_games(), 5);
}

#[test]
fn a_drawn_game_counts_a_draw_everywhere() {
    let book = ResultsBook::new(start_book(), HashMap::new());
    let g = game(&[("2g2f", MoveSource::Book)], Outcome::Draw);
    let counts = book.learning_counts(&g, Color::Black).unwrap();
    assert_eq!(counts.len(), 2);
    assert!(counts.iter().all(|(_, c)| *c == GameCounts::DRAW));
}

#[test]
fn a_stopping_probability_lies_strictly_between_a_half_and_one() {
    for p in [0.51, 0.95, 0.999] {
        assert_eq!(check_settled_threshold(p), Ok(p));
    }
    for p in [0.5, 0.3, 1.0, 1.5, -1.0, f64::NAN] {
        let err = check_settled_threshold(p).unwrap_err().to_string();
        assert!(err.contains("(0.5, 1)"), "{p}: {err}");
    }
}

#[test]
fn key_positions_are_the_openings_positions_each_once_checked_each_round() {
    let openings = crate::openings::parse_lines(
        [
            "startpos",
            "startpos moves 2g2f",
            "startpos",
            "sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/7P1/PPPPPPP1P/1B5R1/LNSGKGSNL w - 2",
        ],
        "test openings",
    )
    .unwrap();
    let keys = KeyPositions::of_openings(&openings);
    // `startpos moves 2g2f` and the SFEN are one position; the start is given twice.
    assert_eq!(keys.positions().len(), 2);
    // A round: four openings, each with the learner as Black and as White.
    assert_eq!(keys.check_every(), 8);
}

#[test]
fn a_key_position_is_settled_once_its_games_single_out_a_move() {
    let keys =
        KeyPositions::of_openings(&crate::openings::parse_lines(["startpos"], "test").unwrap());
    // No games: 2g2f and 7g7f, 10 cp apart, are both contenders; nothing is settled.
    let fresh = LearningPolicy::new(
        Arc::new(ResultsBook::new(start_book(), HashMap::new())),
        50,
        4.0,
    );
    let count = keys.settled(&fresh, 0.95);
    assert_eq!(
        count,
        SettledCount {
            settled: 0,
            total: 1
        }
    );
    assert!(!count.all());
    assert_eq!(count.to_string(), "0/1 key positions settled");
    // 7g7f won 700 of 1,000, 2g2f 300: 7g7f is settled. The position after the
    // most played reply is out of the book and does not count.
    let counts = HashMap::from([results_of("2g2f", 300, 700), results_of("7g7f", 700, 300)]);
    let taught = LearningPolicy::new(Arc::new(ResultsBook::new(start_book(), counts)), 50, 4.0);
    let count = keys.settled(&taught, 0.95);
    assert_eq!(
        count,
        SettledCount {
            settled: 1,
            total: 1
        }
    );
    assert!(count.all());
    // Nothing in the book: nothing to settle, and a run never stops on it.
    let empty = Arc::new(AnalysedBook::new(Book::new()).unwrap());
    let none = LearningPolicy::new(Arc::new(ResultsBook::new(empty, HashMap::new())), 50, 4.0);
    let count = keys.settled(&none, 0.95);
    assert_eq!(count, SettledCount::default());
    assert!(!count.all());
}
