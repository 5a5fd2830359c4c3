//! Players (one move per call, for games): the USI player against the scripted
//! engine (history in `position`, resign, win, illegal answers, crashes, hangs)
//! and against the real engines; both players built from the shared flags.

use crate::engines;

use std::time::Duration;

use engines::{fake_engine, fake_engine_with_marker, real_engine};
use stera_engine::choice::{EngineChoice, EngineKind};
use stera_engine::usi::{UsiConfig, UsiPlayer};
use stera_engine::{EvalError, Limits, Player, PlayerMove};
use stera_rules::Position;

fn depth(d: u32) -> Limits {
    Limits {
        depth: Some(d),
        ..Limits::default()
    }
}

fn position(text: &str) -> Position {
    Position::from_position_command(text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

#[test]
fn the_engine_gets_the_game_history_and_may_resign() {
    let (config, marker) = fake_engine_with_marker("record", "player-record");
    let mut player = UsiPlayer::new(config).unwrap();
    player.new_game().unwrap();
    assert_eq!(
        player.play(&Position::startpos(), &depth(2)).unwrap(),
        PlayerMove::Move {
            mv: "7g7f".parse().unwrap(),
            score: Some(50)
        }
    );
    let game = position("startpos moves 7g7f 3c3d 8h2b+");
    assert_eq!(player.play(&game, &depth(2)).unwrap(), PlayerMove::Resign);
    // From an SFEN start, the start and the moves since are sent, not the last SFEN.
    let from_sfen = position(
        "sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/2P6/PP1PPPPPP/1B5R1/LNSGKGSNL w - 2 moves 3c3d",
    );
    assert_eq!(
        player.play(&from_sfen, &depth(2)).unwrap(),
        PlayerMove::Resign
    );
    let sent = std::fs::read_to_string(&marker).unwrap();
    let _ = std::fs::remove_file(&marker);
    let lines: Vec<&str> = sent.lines().collect();
    // `isready` after the handshake only: not per move and not after MultiPV,
    // which engines read at `go` (it costs YaneuraOu 160 ms), and never between
    // `position` and `go` (it puts YaneuraOu's board back to the initial
    // position).
    assert_eq!(
        lines,
        [
            "isready",
            "setoption name MultiPV value 1",
            "position startpos",
            "position startpos moves 7g7f 3c3d 8h2b+",
            "position sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/2P6/PP1PPPPPP/1B5R1/LNSGKGSNL w - 2 moves 3c3d",
        ]
    );
}

#[test]
fn win_is_passed_on_and_a_non_move_is_an_error() {
    let mut player = UsiPlayer::new(fake_engine("declare", &[])).unwrap();
    assert_eq!(
        player.play(&Position::startpos(), &depth(1)).unwrap(),
        PlayerMove::Win
    );
    let err = player
        .play(&position("startpos moves 7g7f"), &depth(1))
        .unwrap_err();
    assert!(
        matches!(&err, EvalError::Engine { reason, .. } if reason.contains("9z9z")),
        "{err}"
    );
    // No legal move: resign without asking the engine.
    let mated = position("sfen 4k4/4G4/4P4/9/9/9/9/9/4K4 w - 1");
    assert_eq!(player.play(&mated, &depth(1)).unwrap(), PlayerMove::Resign);
}

#[test]
fn a_crash_is_restarted_and_a_hang_times_out() {
    let (config, marker) = fake_engine_with_marker("crash-first-go", "player-crash");
    let mut player = UsiPlayer::new(config).unwrap();
    let answer = player.play(&Position::startpos(), &depth(2)).unwrap();
    let _ = std::fs::remove_file(&marker);
    assert!(
        matches!(answer, PlayerMove::Move { mv, .. } if mv.to_string() == "7g7f"),
        "{answer:?}"
    );
    assert_eq!(player.restarts(), 1);

    let mut always = UsiPlayer::new(fake_engine("crash-always", &[])).unwrap();
    let err = always.play(&Position::startpos(), &depth(2)).unwrap_err();
    assert!(
        matches!(&err, EvalError::Engine { reason, .. } if reason.contains("crashed 3 times")),
        "{err}"
    );

    let mut config = fake_engine("hang", &[]);
    config.search_timeout = Duration::from_millis(300);
    let mut hang = UsiPlayer::new(config).unwrap();
    let err = hang.play(&Position::startpos(), &depth(2)).unwrap_err();
    assert!(matches!(err, EvalError::Timeout { .. }), "{err}");
}

/// The engine the shared engine flags `args` describe (the flags are read by
/// `stera_service::engine_flags`; this crate knows no command line).
pub(crate) fn choice(args: &[&str]) -> EngineChoice {
    let mut engine = EngineChoice::builtin();
    for pair in args.chunks(2) {
        let value = pair.get(1).copied().unwrap_or_default();
        match pair[0] {
            "--eval-file" => engine.eval_file = Some(value.into()),
            "--fv-scale" => engine.fv_scale = Some(value.parse().expect("a number")),
            "--engine" if value == "usi" => engine.engine = Some(EngineKind::Usi),
            "--engine" => engine.engine = Some(EngineKind::Builtin),
            "--engine-cmd" => engine.engine_cmd = Some(value.into()),
            flag => panic!("no such flag in these tests: {flag}"),
        }
    }
    engine
}

#[test]
fn players_are_built_from_the_shared_flags() {
    let mut builtin = choice(&[]).start_player().unwrap();
    assert!(builtin.identity().starts_with("stera-builtin"));
    builtin.new_game().unwrap();
    let limits = Limits {
        nodes: Some(500),
        ..Limits::default()
    };
    let answer = builtin.play(&Position::startpos(), &limits).unwrap();
    let PlayerMove::Move { mv, score } = answer else {
        panic!("{answer:?}");
    };
    assert!(Position::startpos().is_legal(mv));
    assert!(score.is_some());
    assert!(choice(&["--engine-cmd", "x"]).start_player().is_err());
    assert!(choice(&["--engine", "usi"]).start_player().is_err());
}

#[test]
fn fairy_stockfish_plays_legal_moves_with_scores() {
    let Some(path) = real_engine(
        "fairy-stockfish",
        "STERA_FAIRY_STOCKFISH",
        "fairy-stockfish",
    ) else {
        return;
    };
    let config = UsiConfig::new(path).with_option("UCI_Variant", "shogi");
    let mut player = UsiPlayer::new(config).unwrap();
    player.new_game().unwrap();
    let mut pos = Position::startpos();
    for _ in 0..6 {
        match player.play(&pos, &depth(3)).unwrap() {
            PlayerMove::Move { mv, score } => {
                assert!(score.is_some(), "no score for {mv}");
                pos.do_move(mv);
            }
            other => panic!("{other:?} at {}", pos.to_sfen()),
        }
    }
    // Mate in one is found and scored as a mate.
    let mate = position("sfen 4k4/9/4P4/9/9/9/9/9/4K4 b G 1");
    assert_eq!(
        player.play(&mate, &depth(3)).unwrap(),
        PlayerMove::Move {
            mv: "G*5b".parse().unwrap(),
            score: Some(stera_rules::value::mate_in(1))
        }
    );
}

#[test]
fn gpsusi_plays_with_byoyomi() {
    let Some(path) = real_engine("gpsusi", "STERA_GPSUSI", "gpsshogi") else {
        return;
    };
    let config = UsiConfig::new(path)
        .with_option("BookDepth", "0")
        .with_option("Thread", "1");
    let mut player = UsiPlayer::new(config).unwrap();
    // gpsusi aborts on `go depth`: depth limits are refused before it sees them.
    assert!(matches!(
        player.play(&Position::startpos(), &depth(3)),
        Err(EvalError::UnsupportedLimits(_))
    ));
    let limits = Limits {
        time: Some(Duration::from_millis(200)),
        ..Limits::default()
    };
    let mut pos = position("startpos moves 7g7f 3c3d");
    for _ in 0..2 {
        match player.play(&pos, &limits).unwrap() {
            PlayerMove::Move { mv, .. } => pos.do_move(mv),
            other => panic!("{other:?} at {}", pos.to_sfen()),
        }
    }
    assert_eq!(player.restarts(), 0);
}
