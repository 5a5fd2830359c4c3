//! The game rules on hand-made positions, through the referee (as a game is
//! played) and the validator (as a reported game is checked), and false claims
//! the validator must reject.

use stera_games::{
    Adjudication, GameError, GameMove, GameResult, GameRules, MoveSource, Outcome, Referee,
    Termination, verify,
};
use stera_rules::{Move, Position};

/// Black mates at once with G*5b (the pawn on 5c guards the gold).
const MATE_IN_ONE: &str = "sfen 4k4/9/4P4/9/9/9/9/9/4K4 b G 1";
/// Black's rook on 5a, White's king on 1b: 5a5b and 5b5a check the king as it
/// walks 1b-1a-1b.
const ROOK_CHECKS: &str = "sfen 4R4/8k/9/9/9/9/9/9/4K4 b - 1";
/// Black may declare: king on 5b, 12 pieces in White's camp, 38 points.
const ENTERED: &str = "sfen +R+B+PGGGGSS/4K4/SSL6/9/9/9/9/9/4k4 b RB8P 1";

fn moves(start: &str, usi: &[&str]) -> Vec<GameMove> {
    let mut pos = Position::from_position_command(start).unwrap();
    usi.iter()
        .map(|text| {
            let mv = pos
                .parse_move(text)
                .unwrap_or_else(|e| panic!("{text} at {}: {e}", pos.to_sfen()));
            pos.do_move(mv);
            GameMove::new(mv, MoveSource::Engine)
        })
        .collect()
}

fn result(outcome: Outcome, termination: Termination) -> GameResult {
    GameResult {
        outcome,
        termination,
    }
}

fn rules() -> GameRules {
    GameRules::default()
}

/// Plays `game` through a referee and returns the result after each move.
fn referee_results(start: &str, game: &[GameMove], rules: GameRules) -> Vec<Option<GameResult>> {
    let pos = Position::from_position_command(start).unwrap();
    let mut referee = Referee::new(pos, rules).unwrap();
    game.iter().map(|m| referee.play(*m).unwrap()).collect()
}

fn rejected(start: &str, game: &[GameMove], claimed: GameResult, rules: &GameRules) -> String {
    match verify(start, game, &claimed, rules) {
        Ok(v) => panic!("claim {claimed} accepted: {v:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn mate_ends_the_game_for_the_mated_side() {
    let game = moves(MATE_IN_ONE, &["G*5b"]);
    let mate = result(Outcome::BlackWins, Termination::Mate);
    assert_eq!(referee_results(MATE_IN_ONE, &game, rules()), [Some(mate)]);
    let v = verify(MATE_IN_ONE, &game, &mate, &rules()).unwrap();
    assert_eq!(v.plies, 1);
    assert_eq!(v.positions.len(), 2);
    // The wrong winner, a resignation instead of the mate, a mate that is not one.
    let e = rejected(
        MATE_IN_ONE,
        &game,
        result(Outcome::WhiteWins, Termination::Mate),
        &rules(),
    );
    assert!(e.contains("black wins by mate"), "{e}");
    rejected(
        MATE_IN_ONE,
        &game,
        result(Outcome::BlackWins, Termination::Resignation),
        &rules(),
    );
    let e = rejected(MATE_IN_ONE, &moves(MATE_IN_ONE, &["G*4b"]), mate, &rules());
    assert!(e.contains("the game goes on"), "{e}");
}

#[test]
fn fourfold_repetition_is_a_draw_not_before() {
    let shuffle = ["2h3h", "8b7b", "3h2h", "7b8b"];
    let usi: Vec<&str> = shuffle.iter().cycle().take(12).copied().collect();
    let game = moves("startpos", &usi);
    let results = referee_results("startpos", &game, rules());
    assert!(results[..11].iter().all(Option::is_none), "{results:?}");
    let draw = result(Outcome::Draw, Termination::Repetition);
    assert_eq!(results[11], Some(draw));
    verify("startpos", &game, &draw, &rules()).unwrap();
    // After the third occurrence (8 plies) the game goes on.
    let e = rejected("startpos", &game[..8], draw, &rules());
    assert!(e.contains("goes on"), "{e}");
    // A 13th move is one too many.
    let mut longer = game.clone();
    longer.extend(moves(
        &format!("startpos moves {}", usi.join(" ")),
        &["2h3h"],
    ));
    assert!(matches!(
        verify("startpos", &longer, &draw, &rules()),
        Err(GameError::MoveAfterEnd { index: 12, .. })
    ));
}

#[test]
fn perpetual_check_loses_for_the_checking_side() {
    let cycle = ["5a5b", "1b1a", "5b5a", "1a1b"];
    let usi: Vec<&str> = cycle.iter().cycle().take(12).copied().collect();
    let game = moves(ROOK_CHECKS, &usi);
    let results = referee_results(ROOK_CHECKS, &game, rules());
    assert!(results[..11].iter().all(Option::is_none), "{results:?}");
    // The start recurs a fourth time with the checker (Black) to move: it loses.
    let lost = result(Outcome::WhiteWins, Termination::PerpetualCheck);
    assert_eq!(results[11], Some(lost));
    verify(ROOK_CHECKS, &game, &lost, &rules()).unwrap();
    rejected(
        ROOK_CHECKS,
        &game,
        result(Outcome::Draw, Termination::Repetition),
        &rules(),
    );
    rejected(
        ROOK_CHECKS,
        &game,
        result(Outcome::BlackWins, Termination::PerpetualCheck),
        &rules(),
    );
    // The same cycle from the position after 5a5b (no history before it), so
    // that it ends with the checked side (White) to move: it wins.
    let after_check = "sfen 9/4R3k/9/9/9/9/9/9/4K4 w - 1".to_owned();
    let usi: Vec<&str> = cycle.iter().cycle().skip(1).take(12).copied().collect();
    let game = moves(&after_check, &usi);
    let won = result(Outcome::WhiteWins, Termination::PerpetualCheck);
    assert_eq!(referee_results(&after_check, &game, rules())[11], Some(won));
    verify(&after_check, &game, &won, &rules()).unwrap();
}

#[test]
fn declarations_are_judged_by_the_27_point_rule() {
    let valid = result(Outcome::BlackWins, Termination::Declaration);
    let invalid = result(Outcome::WhiteWins, Termination::InvalidDeclaration);
    // A valid declaration wins; claiming it failed is false.
    verify(ENTERED, &[], &valid, &rules()).unwrap();
    rejected(ENTERED, &[], invalid, &rules());
    let mut referee =
        Referee::new(Position::from_position_command(ENTERED).unwrap(), rules()).unwrap();
    assert_eq!(referee.declare().unwrap(), valid);
    // Declaring in the start position loses; claiming it won is false.
    verify("startpos", &[], &invalid, &rules()).unwrap();
    let e = rejected(
        "startpos",
        &[],
        result(Outcome::BlackWins, Termination::Declaration),
        &rules(),
    );
    assert!(e.contains("white wins by invalid-declaration"), "{e}");
    // After a White move the declaration is White's: still invalid, Black wins.
    let game = moves(ENTERED, &["5b4b", "5i4i"]);
    verify(ENTERED, &game, &valid, &rules()).unwrap();
    let game = moves(ENTERED, &["5b4b"]);
    verify(
        ENTERED,
        &game,
        &result(Outcome::BlackWins, Termination::InvalidDeclaration),
        &rules(),
    )
    .unwrap();
}

#[test]
fn the_ply_limit_is_a_draw() {
    let limited = GameRules {
        ply_limit: 6,
        adjudication: None,
    };
    let usi = ["7g7f", "3c3d", "2g2f", "8c8d", "2f2e", "8d8e", "2e2d"];
    let game = moves("startpos", &usi);
    let draw = result(Outcome::Draw, Termination::PlyLimit);
    let results = referee_results("startpos", &game[..6], limited);
    assert!(results[..5].iter().all(Option::is_none));
    assert_eq!(results[5], Some(draw));
    verify("startpos", &game[..6], &draw, &limited).unwrap();
    assert!(matches!(
        verify("startpos", &game, &draw, &limited),
        Err(GameError::MoveAfterEnd { index: 6, .. })
    ));
    rejected("startpos", &game[..5], draw, &limited);
    // Under the default limit (320) the same six moves end nothing.
    rejected("startpos", &game[..6], draw, &rules());
}

#[test]
fn adjudication_needs_both_sides_beyond_the_threshold() {
    let adjudicated = GameRules {
        ply_limit: 320,
        adjudication: Some(Adjudication {
            threshold: 500,
            plies: 4,
        }),
    };
    let usi = ["7g7f", "3c3d", "2g2f", "8c8d", "2f2e", "8d8e"];
    let scored = |scores: &[Option<i32>]| -> Vec<GameMove> {
        moves("startpos", &usi)
            .into_iter()
            .zip(scores)
            .map(|(m, &score)| GameMove { score, ..m })
            .collect()
    };
    // Scores from the mover's view: Black +600.., White -700 (it agrees it is lost).
    let game = scored(&[
        Some(30),
        Some(-20),
        Some(600),
        Some(-700),
        Some(650),
        Some(-800),
    ]);
    let black_wins = result(Outcome::BlackWins, Termination::Adjudication);
    let results = referee_results("startpos", &game, adjudicated);
    assert_eq!(results[..5], [None, None, None, None, None]);
    assert_eq!(results[5], Some(black_wins));
    verify("startpos", &game, &black_wins, &adjudicated).unwrap();
    // One score inside the threshold, or one move without a score: no adjudication.
    let close = scored(&[
        Some(30),
        Some(-20),
        Some(600),
        Some(-499),
        Some(650),
        Some(-800),
    ]);
    let e = rejected("startpos", &close, black_wins, &adjudicated);
    assert!(e.contains("goes on"), "{e}");
    let unscored = scored(&[Some(30), Some(-20), Some(600), None, Some(650), Some(-800)]);
    rejected("startpos", &unscored, black_wins, &adjudicated);
    // White adjudicated the other way round; without adjudication rules nothing.
    let white = scored(&[
        Some(30),
        Some(-20),
        Some(-900),
        Some(700),
        Some(-650),
        Some(800),
    ]);
    let white_wins = result(Outcome::WhiteWins, Termination::Adjudication);
    verify("startpos", &white, &white_wins, &adjudicated).unwrap();
    rejected("startpos", &white, white_wins, &rules());
    // Adjudication over one ply would count one side's opinion only.
    let bad = GameRules {
        ply_limit: 320,
        adjudication: Some(Adjudication {
            threshold: 500,
            plies: 1,
        }),
    };
    assert!(matches!(bad.check(), Err(GameError::Rules(_))));
}

#[test]
fn illegal_moves_and_bad_starts_are_rejected() {
    let resign = result(Outcome::WhiteWins, Termination::Resignation);
    let mut game = moves("startpos", &["7g7f", "3c3d"]);
    verify("startpos", &game, &resign, &rules()).unwrap();
    // A move of the side not to move.
    game.push(GameMove::new(
        "3d3e".parse::<Move>().unwrap(),
        MoveSource::Engine,
    ));
    match verify("startpos", &game, &resign, &rules()) {
        Err(GameError::IllegalMove { index: 2, mv, .. }) => assert_eq!(mv, "3d3e"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        verify("sfen nonsense", &[], &resign, &rules()),
        Err(GameError::Start { .. })
    ));
    // The referee refuses moves once the game is over.
    let mut referee = Referee::new(Position::startpos(), rules()).unwrap();
    referee.resign().unwrap();
    let mv = Position::startpos().parse_move("7g7f").unwrap();
    assert!(matches!(
        referee.play(GameMove::new(mv, MoveSource::Engine)),
        Err(GameError::AlreadyOver(_))
    ));
}
