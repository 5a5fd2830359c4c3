//! Book following, whole games between built-in engines, and CSA output read back
//! by the kifu reader (an independent parser).

use std::sync::Arc;

use stera_book::{Book, Origin, ThoughtNode};
use stera_engine::{BuiltinPlayer, Limits};
use stera_formats::kifu::{KifuFormat, read_kifu_bytes};
use stera_games::book::{BookPolicy, follow};
use stera_games::csa::games_to_csa;
use stera_games::{
    AnalysedBook, Game, GameMove, GameResult, GameRules, MoveSource, Outcome, PlayOptions, Side,
    SoftmaxPolicy, Termination, play_game, verify,
};
use stera_rules::{Move, Position};

/// A thought node for `pos` with `value(index)` for every legal move.
fn node(pos: &Position, value: impl Fn(usize) -> i16) -> ThoughtNode {
    ThoughtNode {
        key: pos.key(),
        origin: Origin::Sfen(pos.to_sfen_without_ply()),
        ply: 1,
        values: (0..pos.legal_move_count()).map(value).collect(),
        depths: None,
        evaluator: 0,
        timestamp: 0,
    }
}

fn usi(text: &str) -> Move {
    text.parse().unwrap()
}

/// The start position with values 0..30 by canonical index (so the last legal
/// move is the best leaf), and the position after 7g7f thought, where every
/// White move is valued -500: 7g7f is then worth +500 at the root.
fn small_book() -> (Arc<AnalysedBook>, Move) {
    let start = Position::startpos();
    let mut book = Book::new();
    book.insert(&node(&start, |i| i as i16)).unwrap();
    let mut after = start.clone();
    after.do_move(usi("7g7f"));
    book.insert(&node(&after, |_| -500)).unwrap();
    let best_leaf = *start.legal_moves().last().unwrap();
    (Arc::new(AnalysedBook::new(book).unwrap()), best_leaf)
}

#[test]
fn softmax_policy_follows_the_propagated_values() {
    let (book, best_leaf) = small_book();
    let start = Position::startpos();
    let lines = book.lines(&start).unwrap().unwrap();
    assert_eq!(lines[0].mv, usi("7g7f"));
    assert_eq!(lines[0].value, 500);

    // T = 0: the analysis' best move only.
    let greedy = SoftmaxPolicy::new(Arc::clone(&book), 0.0);
    let p = greedy.probabilities(&start).unwrap();
    assert_eq!(p[0], (usi("7g7f"), 1.0));
    assert!(p[1..].iter().all(|&(_, q)| q == 0.0));
    assert_eq!(greedy.choose(&start, 0.999), Some(usi("7g7f")));

    // T = 50: 7g7f (500) dominates, the best leaf (29) is next, all sum to 1.
    let soft = SoftmaxPolicy::new(Arc::clone(&book), 50.0);
    let p = soft.probabilities(&start).unwrap();
    assert_eq!(p.len(), 30);
    let sum: f64 = p.iter().map(|&(_, q)| q).sum();
    assert!((sum - 1.0).abs() < 1e-12);
    assert_eq!(p[1].0, best_leaf);
    let expected = ((29.0 - 500.0) / 50.0f64).exp();
    assert!((p[1].1 / p[0].1 - expected).abs() < 1e-12);
    // choose() walks the cumulative probabilities.
    assert_eq!(soft.choose(&start, 0.0), Some(usi("7g7f")));
    assert_eq!(soft.choose(&start, p[0].1 + p[1].1 / 2.0), Some(best_leaf));
    assert_eq!(soft.choose(&start, 0.999_999_999_999), Some(p[29].0));

    // Out of book: a position that is not thought.
    let outside = Position::from_position_command("startpos moves 2g2f").unwrap();
    assert_eq!(soft.probabilities(&outside), None);
    assert_eq!(soft.choose(&outside, 0.5), None);

    // Following the book on both sides: 7g7f, then one of White's best (all
    // equal: they share), then out of book.
    let line = follow(&greedy, &start, 10, || 0.5);
    assert_eq!(line.len(), 2);
    assert_eq!(line[0], usi("7g7f"));
    // No candidates: no probabilities, whatever the rule.
    let rule = stera_games::MoveRule::Softmax { temperature: 10.0 };
    assert_eq!(rule.probabilities(&[], stera_rules::Color::Black), None);
}

fn nodes(n: u64) -> Limits {
    Limits {
        nodes: Some(n),
        ..Limits::default()
    }
}

#[test]
fn a_game_between_builtin_players_with_a_book_on_one_side() {
    let (book, _) = small_book();
    let policy = SoftmaxPolicy::new(book, 0.0);
    let mut black = BuiltinPlayer::new();
    let mut white = BuiltinPlayer::new();
    let options = PlayOptions {
        rules: GameRules {
            ply_limit: 30,
            adjudication: None,
        },
        limits: nodes(300),
        seed: 3,
        node_jitter: 0.0,
    };
    let start = Position::startpos();
    let game = play_game(
        &start,
        &[],
        Side {
            player: &mut black,
            book: Some(&policy),
        },
        Side {
            player: &mut white,
            book: None,
        },
        &options,
    )
    .unwrap();
    // Black's first move is its book's; the position after White's reply is not
    // in the book, so everything else is the engines'.
    assert_eq!(game.moves[0].source, MoveSource::Book);
    assert_eq!(game.moves[0].mv, usi("7g7f"));
    assert_eq!(game.book_plies(), [0]);
    assert!(
        game.moves[1..]
            .iter()
            .all(|m| m.source == MoveSource::Engine)
    );
    assert!(game.moves[1..].iter().all(|m| m.score.is_some()));
    // What the referee decided, the validator accepts.
    let verified = game.verify(&options.rules).unwrap();
    assert_eq!(verified.result, game.result);
    assert!(game.moves.len() <= 30);
    // Same seed, same engines (cleared tables): the same game.
    let again = play_game(
        &start,
        &[],
        Side {
            player: &mut black,
            book: Some(&policy),
        },
        Side {
            player: &mut white,
            book: None,
        },
        &options,
    )
    .unwrap();
    assert_eq!(again, game);
}

#[test]
fn opening_moves_are_recorded_and_a_mate_ends_the_game() {
    // From the mate-in-one position the engine mates at once.
    let start = Position::from_sfen("4k4/9/4P4/9/9/9/9/9/4K4 b G 1").unwrap();
    let mut black = BuiltinPlayer::new();
    let mut white = BuiltinPlayer::new();
    let options = PlayOptions {
        limits: nodes(2_000),
        ..PlayOptions::default()
    };
    let game = play_game(
        &start,
        &[],
        Side {
            player: &mut black,
            book: None,
        },
        Side {
            player: &mut white,
            book: None,
        },
        &options,
    )
    .unwrap();
    assert_eq!(
        game.result,
        GameResult {
            outcome: Outcome::BlackWins,
            termination: Termination::Mate
        }
    );
    assert_eq!(game.usi_moves(), "G*5b");
    // An opening is played as given and marked as such.
    let game = play_game(
        &Position::startpos(),
        &[usi("7g7f"), usi("3c3d")],
        Side {
            player: &mut black,
            book: None,
        },
        Side {
            player: &mut white,
            book: None,
        },
        &PlayOptions {
            rules: GameRules {
                ply_limit: 4,
                adjudication: None,
            },
            ..options
        },
    )
    .unwrap();
    let sources: Vec<MoveSource> = game.moves.iter().map(|m| m.source).collect();
    assert_eq!(
        sources,
        [
            MoveSource::Opening,
            MoveSource::Opening,
            MoveSource::Engine,
            MoveSource::Engine
        ]
    );
    assert_eq!(game.result.termination, Termination::PlyLimit);
}

#[test]
fn csa_output_reads_back_move_for_move() {
    let mate_start = "4k4/9/4P4/9/9/9/9/9/4K4 b G 1";
    let mate = Game {
        start_sfen: mate_start.to_owned(),
        moves: vec![GameMove::new(usi("G*5b"), MoveSource::Engine)],
        result: GameResult {
            outcome: Outcome::BlackWins,
            termination: Termination::Mate,
        },
    };
    let mut pos = Position::startpos();
    let mut moves = Vec::new();
    for (i, text) in ["7g7f", "3c3d", "8h2b+", "3a2b", "B*4e"].iter().enumerate() {
        let mv = pos.parse_move(text).unwrap();
        pos.do_move(mv);
        moves.push(GameMove {
            mv,
            score: (i >= 2).then_some(100 - 10 * i as i32),
            source: if i < 2 {
                MoveSource::Book
            } else {
                MoveSource::Engine
            },
        });
    }
    let resigned = Game {
        start_sfen: stera_rules::STARTPOS_SFEN.to_owned(),
        moves,
        result: GameResult {
            outcome: Outcome::BlackWins,
            termination: Termination::Resignation,
        },
    };
    verify(
        &resigned.start_sfen,
        &resigned.moves,
        &resigned.result,
        &GameRules::default(),
    )
    .unwrap();
    let text = games_to_csa([(&mate, "a", "b"), (&resigned, "c", "d")]).unwrap();
    assert!(
        text.contains("\n%TSUMI\n") && text.contains("\n%TORYO\n"),
        "{text}"
    );
    assert!(
        text.contains("+0052KI\n") || text.contains("+0052KI"),
        "{text}"
    );
    let report = read_kifu_bytes(text.as_bytes(), "games.csa", Some(KifuFormat::Csa)).unwrap();
    assert_eq!(report.summary.games_read, 2, "{:?}", report.summary.errors);
    let read = &report.games;
    assert_eq!(
        Position::from_sfen(&read[0].start_sfen).unwrap().key(),
        Position::from_sfen(mate_start).unwrap().key()
    );
    assert_eq!(read[0].moves, [usi("G*5b")]);
    assert_eq!(read[1].start_sfen, stera_rules::STARTPOS_SFEN);
    let original: Vec<Move> = resigned.moves.iter().map(|m| m.mv).collect();
    assert_eq!(read[1].moves, original);
}
