//! NNUE inference against an independent reference, incremental updates against
//! full recomputation, AVX2 against scalar, and the engine's use of the network.
//!
//! The reference below reads the SFEN text and the raw file bytes only: it shares
//! no code with the engine's feature indexing, loader or kernels.

use crate::net;
use crate::rng;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use crate::players::choice;
use rng::Rng;
use stera_engine::nnue::features::{self, Change, FeatureList, PIECE_FEATURES};
use stera_engine::nnue::{
    self, Accumulator, AccumulatorStack, Backend, DEFAULT_FV_SCALE, Network, NnueConfig,
};
use stera_engine::{BuiltinEvaluator, Evaluator, Limits};
use stera_rules::Position;
use stera_rules::backend::types::{Color, Move as BackendMove, PieceType};

struct Fixture {
    bytes: Vec<u8>,
    path: PathBuf,
    network: Arc<Network>,
}

/// One random full-size network per test binary, written to disk and loaded.
fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let bytes = net::random_net_bytes(2024);
        // A static is never dropped, so the file lives under Cargo's per-target
        // scratch directory under a fixed name (one file, rewritten each run)
        // instead of piling up in the system temp directory. Written under a
        // unique name and renamed, so concurrent runs never read a partial file.
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
        let path = dir.join("stera-nnue-eval.bin");
        let partial = dir.join(format!("stera-nnue-eval.{}.partial", std::process::id()));
        std::fs::write(&partial, &bytes).expect("write temp net");
        std::fs::rename(&partial, &path).expect("rename temp net");
        let network = nnue::load_shared(&path).expect("random net loads");
        Fixture {
            bytes,
            path,
            network,
        }
    })
}

// ---------------------------------------------------------------- reference

fn le_i16(b: &[u8], at: usize) -> i64 {
    i64::from(i16::from_le_bytes([b[at], b[at + 1]]))
}
fn le_i32(b: &[u8], at: usize) -> i64 {
    i64::from(i32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]))
}

/// Piece features of one position, parsed from its SFEN, per perspective
/// (index 0 Black, 1 White): the seed document's table 2, literally.
fn reference_features(sfen: &str) -> ([Vec<usize>; 2], bool) {
    let fields: Vec<&str> = sfen.split_whitespace().collect();
    let (board, side, hand) = (fields[0], fields[1], fields[2]);
    // (address, uppercase?, kind letter, promoted?)
    let mut pieces = Vec::new();
    let mut kings = [0usize; 2];
    for (rank, row) in board.split('/').enumerate() {
        let mut file = 9usize; // files run 9 -> 1 along a row
        let mut promoted = false;
        for c in row.chars() {
            if let Some(n) = c.to_digit(10) {
                file -= n as usize;
            } else if c == '+' {
                promoted = true;
            } else {
                let address = (file - 1) * 9 + rank;
                let black = c.is_ascii_uppercase();
                let kind = c.to_ascii_uppercase();
                if kind == 'K' {
                    kings[usize::from(!black)] = address;
                } else {
                    pieces.push((address, black, kind, promoted));
                }
                promoted = false;
                file -= 1;
            }
        }
    }
    let board_start = |kind: char, promoted: bool| match (kind, promoted) {
        ('P', false) => 90,
        ('L', false) => 252,
        ('N', false) => 414,
        ('S', false) => 576,
        ('G', _) | ('P' | 'L' | 'N' | 'S', true) => 738,
        ('B', false) => 900,
        ('B', true) => 1062,
        ('R', false) => 1224,
        ('R', true) => 1386,
        _ => panic!("unexpected piece {kind}"),
    };
    // (friend start, enemy start) of the hand ranges.
    let hand_start = |kind: char| match kind {
        'P' => (0, 19),
        'L' => (38, 43),
        'N' => (48, 53),
        'S' => (58, 63),
        'G' => (68, 73),
        'B' => (78, 81),
        'R' => (84, 87),
        _ => panic!("unexpected hand piece {kind}"),
    };
    let mut hands = Vec::new(); // (black?, kind, count)
    if hand != "-" {
        let mut count = 0usize;
        for c in hand.chars() {
            if let Some(d) = c.to_digit(10) {
                count = count * 10 + d as usize;
            } else {
                hands.push((c.is_ascii_uppercase(), c.to_ascii_uppercase(), count.max(1)));
                count = 0;
            }
        }
    }
    let mut out = [Vec::new(), Vec::new()];
    for (p, features) in out.iter_mut().enumerate() {
        let black_view = p == 0;
        let rotate = |a: usize| if black_view { a } else { 80 - a };
        let k = rotate(kings[p]);
        for &(address, black, kind, promoted) in &pieces {
            let friend = black == black_view;
            let start = board_start(kind, promoted) + if friend { 0 } else { 81 };
            features.push(k * 1548 + start + rotate(address));
        }
        for &(black, kind, count) in &hands {
            let (f, e) = hand_start(kind);
            let start = if black == black_view { f } else { e };
            for nth in 1..=count {
                features.push(k * 1548 + start + nth);
            }
        }
    }
    (out, side == "b")
}

/// The evaluation of `sfen` computed naively from the file bytes in i64, with a
/// check that no intermediate value overflows the engine's integer types.
fn reference_eval(bytes: &[u8], sfen: &str, fv_scale: i64) -> i64 {
    use net::offsets as o;
    let (features, black_to_move) = reference_features(sfen);
    let mut acc = [[0i64; 256]; 2];
    for p in 0..2 {
        for (i, a) in acc[p].iter_mut().enumerate() {
            *a = le_i16(bytes, o::FT_BIASES + 2 * i);
            for &f in &features[p] {
                *a += le_i16(bytes, o::FT_WEIGHTS + 2 * (f * 256 + i));
            }
            assert!(
                i64::from(i16::MIN) <= *a && *a <= i64::from(i16::MAX),
                "accumulator overflow"
            );
        }
    }
    let order = if black_to_move { [0, 1] } else { [1, 0] };
    let z1: Vec<i64> = order
        .iter()
        .flat_map(|&p| acc[p].iter().map(|&v| v.clamp(0, 127)))
        .collect();
    let layer = |input: &[i64], biases: usize, weights: usize, outputs: usize| -> Vec<i64> {
        (0..outputs)
            .map(|r| {
                let mut sum = le_i32(bytes, biases + 4 * r);
                for (c, &x) in input.iter().enumerate() {
                    sum += i64::from(bytes[weights + r * input.len() + c] as i8) * x;
                }
                assert!(i64::from(i32::MIN) <= sum && sum <= i64::from(i32::MAX));
                sum
            })
            .collect()
    };
    let relu =
        |v: Vec<i64>| -> Vec<i64> { v.into_iter().map(|s| (s >> 6).clamp(0, 127)).collect() };
    let z2 = relu(layer(&z1, o::L1_BIASES, o::L1_WEIGHTS, 32));
    let z3 = relu(layer(&z2, o::L2_BIASES, o::L2_WEIGHTS, 32));
    let z4 = layer(&z3, o::OUT_BIAS, o::OUT_WEIGHTS, 1)[0];
    z4 / fv_scale // truncates toward zero, as C++ does
}

// ---------------------------------------------------------------- the seed's examples

fn engine_features(sfen: &str, perspective: Color) -> Vec<u32> {
    let pos = Position::from_sfen(sfen).expect("valid SFEN");
    let mut list = FeatureList::default();
    assert!(features::active_features(
        pos.backend(),
        perspective,
        &mut list
    ));
    let mut v = list.as_slice().to_vec();
    v.sort_unstable();
    v
}

#[test]
fn seed_example_1_pawn_on_1b() {
    // Black king 1一, black pawn 1二, white king 5一.
    let sfen = "4k3K/8P/9/9/9/9/9/9/9 b - 1";
    assert_eq!(engine_features(sfen, Color::BLACK), vec![91]);
    assert_eq!(engine_features(sfen, Color::WHITE), vec![68_362]);
    let (reference, _) = reference_features(sfen);
    assert_eq!(reference, [vec![91], vec![68_362]]);
}

#[test]
fn seed_example_2_two_pawns_in_hand() {
    let sfen = "4k3K/9/9/9/9/9/9/9/9 b 2P 1";
    assert_eq!(engine_features(sfen, Color::BLACK), vec![1, 2]);
    // White sees them as the enemy's first and second pawn in hand (19 + 1, 19 + 2).
    assert_eq!(
        engine_features(sfen, Color::WHITE),
        vec![44 * 1548 + 20, 44 * 1548 + 21]
    );
}

#[test]
fn promoted_minors_count_as_gold_and_big_pieces_keep_their_own_ranges() {
    // Black king on 5九: file 5, rank 9 -> address 4 * 9 + 8 = 44.
    let sfen = "4k4/9/9/9/9/9/9/+P+L+N+SG+B+RBR/4K4 b - 1";
    let black = engine_features(sfen, Color::BLACK);
    let k = 44 * PIECE_FEATURES as u32;
    // Rank 8 (index 7), files 9..1: +P +L +N +S G +B +R B R.
    let at = |file: u32| (file - 1) * 9 + 7;
    let mut expected = vec![
        k + 738 + at(9),
        k + 738 + at(8),
        k + 738 + at(7),
        k + 738 + at(6),
        k + 738 + at(5),
        k + 1062 + at(4),
        k + 1386 + at(3),
        k + 900 + at(2),
        k + 1224 + at(1),
    ];
    expected.sort_unstable();
    assert_eq!(black, expected);
}

// ---------------------------------------------------------------- random games

struct Coverage {
    positions: usize,
    king_moves: usize,
    drops: usize,
    promotions: usize,
    promoted_captures: usize,
    undos: usize,
}

/// Plays seeded random games; after every move and every undo the incremental
/// (lazily updated) accumulator must equal a fresh one, with either kernel, and
/// the value must equal the reference.
fn random_games(seed: u64, games: usize, plies: usize) -> (Coverage, Vec<i32>) {
    let fx = fixture();
    let net = &*fx.network;
    let mut rng = Rng(seed);
    let mut cov = Coverage {
        positions: 0,
        king_moves: 0,
        drops: 0,
        promotions: 0,
        promoted_captures: 0,
        undos: 0,
    };
    let mut values = Vec::new();
    let backends = Backend::available();
    for _ in 0..games {
        let mut pos = Position::startpos();
        let mut stacks: Vec<AccumulatorStack> =
            backends.iter().map(|&b| AccumulatorStack::new(b)).collect();
        for s in &mut stacks {
            assert!(s.reset(net, pos.backend()));
        }
        for ply in 0..plies {
            let moves = pos.legal_moves();
            if moves.is_empty() {
                break;
            }
            // Undo now and then, so popped entries are exercised too.
            if ply > 2 && rng.below(7) == 0 {
                pos.undo_move().expect("undo");
                for s in &mut stacks {
                    s.pop();
                }
                cov.undos += 1;
            } else {
                let mv = moves[rng.below(moves.len())];
                let board = pos.backend();
                let mv32 = board.move32_from_move(BackendMove::from_raw(mv.raw()));
                if mv32.is_drop() {
                    cov.drops += 1;
                } else {
                    if board.piece_on(mv32.from_sq()).piece_type() == PieceType::KING {
                        cov.king_moves += 1;
                    }
                    if mv32.is_promotion() {
                        cov.promotions += 1;
                    }
                    if board.piece_on(mv32.to_sq()).is_promoted() {
                        cov.promoted_captures += 1;
                    }
                }
                let change = Change::of_move(board, mv32);
                for s in &mut stacks {
                    s.push(change);
                }
                pos.do_move(mv);
            }
            // Evaluate lazily: sometimes skip plies so several updates replay at once.
            if rng.below(3) == 0 {
                continue;
            }
            let board = pos.backend();
            let mut fresh = Accumulator::default();
            assert!(fresh.refresh_all(net, board, Backend::Scalar));
            let full = net.evaluate(&fresh, board.turn(), DEFAULT_FV_SCALE, Backend::Scalar);
            for (s, &b) in stacks.iter_mut().zip(&backends) {
                let acc = s.current(net, board).clone();
                assert_eq!(
                    acc,
                    fresh,
                    "{b:?} incremental accumulator at {}",
                    pos.to_sfen()
                );
                assert_eq!(
                    net.evaluate(&acc, board.turn(), DEFAULT_FV_SCALE, b),
                    full,
                    "{b:?}"
                );
                assert_eq!(s.evaluate(net, board, DEFAULT_FV_SCALE), full);
            }
            assert_eq!(nnue::evaluate_position(net, board, DEFAULT_FV_SCALE), full);
            let sfen = pos.to_sfen();
            assert_eq!(
                i64::from(full),
                reference_eval(&fx.bytes, &sfen, i64::from(DEFAULT_FV_SCALE)),
                "reference disagrees at {sfen}"
            );
            values.push(full);
            cov.positions += 1;
        }
    }
    (cov, values)
}

#[test]
fn incremental_equals_full_and_reference_on_random_games() {
    let (cov, values) = random_games(0x5eed_0001, 40, 160);
    assert!(cov.positions >= 3000, "only {} positions", cov.positions);
    for (what, n) in [
        ("king moves", cov.king_moves),
        ("drops", cov.drops),
        ("promotions", cov.promotions),
        ("captures of promoted pieces", cov.promoted_captures),
        ("undos", cov.undos),
    ] {
        assert!(n >= 10, "random games made only {n} {what}");
    }
    // The net is not degenerate: values spread widely, so agreement means something.
    let distinct: HashSet<i32> = values.iter().copied().collect();
    assert!(
        distinct.len() > values.len() / 4,
        "{} distinct of {}",
        distinct.len(),
        values.len()
    );
    let (lo, hi) = (
        values.iter().min().copied().unwrap_or(0),
        values.iter().max().copied().unwrap_or(0),
    );
    assert!(hi - lo > 500, "values span only {lo}..{hi}");
}

#[test]
fn fv_scale_divides_the_raw_output_toward_zero() {
    let fx = fixture();
    for sfen in [
        stera_rules::STARTPOS_SFEN,
        "lnsgkgsnl/1r5b1/ppppppppp/9/9/2P6/PP1PPPPPP/1B5R1/LNSGKGSNL w - 2",
        "ln1g1g1nl/1ks2r3/1pppp1bpp/p3spp2/9/P1P1SP1PP/1P1PP1P2/1BK1GR3/LNSG3NL b - 1",
    ] {
        let pos = Position::from_sfen(sfen).expect("valid");
        let mut acc = Accumulator::default();
        assert!(acc.refresh_all(&fx.network, pos.backend(), Backend::detect()));
        let raw = fx
            .network
            .output(&acc, pos.backend().turn(), Backend::Scalar);
        for scale in [1, 7, 16, 24] {
            let v = nnue::evaluate_position(&fx.network, pos.backend(), scale);
            assert_eq!(v, raw / scale);
            assert_eq!(
                i64::from(v),
                reference_eval(&fx.bytes, sfen, i64::from(scale))
            );
        }
    }
}

#[test]
fn simd_kernels_equal_scalar_on_extreme_values() {
    use stera_engine::nnue::simd;
    let mut rng = Rng(99);
    for backend in Backend::available() {
        for _ in 0..200 {
            let input: Vec<u8> = (0..512)
                .map(|_| [0, 127, rng.below(128) as u8][rng.below(3)])
                .collect();
            let weights: Vec<i8> = (0..512)
                .map(|_| [-128i8, 127, (rng.below(256) as i32 - 128) as i8][rng.below(3)])
                .collect();
            assert_eq!(
                simd::dot_u8_i8(backend, &input, &weights),
                simd::dot_u8_i8(Backend::Scalar, &input, &weights),
                "{backend:?}"
            );
            let naive: i32 = input
                .iter()
                .zip(&weights)
                .map(|(&x, &w)| i32::from(x) * i32::from(w))
                .sum();
            assert_eq!(simd::dot_u8_i8(backend, &input, &weights), naive);
            let mut a = [0i16; 256];
            let mut b = [0i16; 256];
            let mut col = [0i16; 256];
            for i in 0..256 {
                a[i] = (rng.below(65536) as i32 - 32768) as i16;
                b[i] = a[i];
                col[i] = (rng.below(65536) as i32 - 32768) as i16;
            }
            simd::add_assign(backend, &mut a, &col);
            simd::add_assign(Backend::Scalar, &mut b, &col);
            assert_eq!(a, b, "{backend:?} add (wrapping)");
            simd::sub_assign(backend, &mut a, &col);
            simd::sub_assign(Backend::Scalar, &mut b, &col);
            assert_eq!(a, b, "{backend:?} sub (wrapping)");
        }
    }
}

// ---------------------------------------------------------------- the engine

fn nnue_config() -> NnueConfig {
    NnueConfig {
        network: Arc::clone(&fixture().network),
        fv_scale: DEFAULT_FV_SCALE,
    }
}

fn values(engine: &mut BuiltinEvaluator, sfen: &str, nodes: u64) -> Vec<i32> {
    let pos = Position::from_sfen(sfen).expect("valid");
    let limits = Limits {
        nodes: Some(nodes),
        ..Limits::default()
    };
    let evaluation = engine.evaluate(&pos, &limits).expect("evaluates");
    evaluation.moves.iter().map(|m| m.value).collect()
}

#[test]
fn search_with_a_net_differs_from_hce_and_is_deterministic() {
    let sfen = "lnsgkgsnl/1r5b1/ppppppppp/9/9/2P6/PP1PPPPPP/1B5R1/LNSGKGSNL w - 2";
    let with_net = values(
        &mut BuiltinEvaluator::with_nnue(Default::default(), nnue_config()),
        sfen,
        20_000,
    );
    let again = values(
        &mut BuiltinEvaluator::with_nnue(Default::default(), nnue_config()),
        sfen,
        20_000,
    );
    let hce = values(&mut BuiltinEvaluator::new(), sfen, 20_000);
    assert_eq!(
        with_net, again,
        "a node-limited NNUE search is deterministic"
    );
    assert_ne!(with_net, hce, "the network changes the values");
    let engine = BuiltinEvaluator::with_nnue(Default::default(), nnue_config());
    assert!(
        engine.identity().contains("(nnue "),
        "{}",
        engine.identity()
    );
    assert!(BuiltinEvaluator::new().identity().contains("(hce)"));
}

#[test]
fn eval_file_flag_reaches_the_builtin_engine_and_bad_uses_are_refused() {
    let path = fixture().path.to_string_lossy().into_owned();
    let engine = choice(&["--eval-file", &path]).start().expect("starts");
    assert!(
        engine.identity().contains("(nnue "),
        "{}",
        engine.identity()
    );
    let scaled = choice(&["--eval-file", &path, "--fv-scale", "24"])
        .start()
        .expect("starts");
    assert!(
        scaled.identity().contains("fv_scale 24"),
        "{}",
        scaled.identity()
    );
    // Engines started from the same file share one network.
    let a = choice(&["--eval-file", &path])
        .nnue()
        .expect("ok")
        .expect("some");
    assert!(Arc::ptr_eq(&a.network, &fixture().network));

    for (args, needle) in [
        (vec!["--eval-file", "no/such/nn.bin"], "no/such/nn.bin"),
        (vec!["--fv-scale", "16"], "--fv-scale needs --eval-file"),
        (
            vec!["--eval-file", &path, "--fv-scale", "0"],
            "--fv-scale must be",
        ),
        (
            vec!["--engine", "usi", "--engine-cmd", "x", "--eval-file", &path],
            "EvalFile",
        ),
    ] {
        let err = match choice(&args).start() {
            Ok(_) => panic!("{args:?} started"),
            Err(e) => e.to_string(),
        };
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}

/// The scores of the depth-1 `info` lines: the first iteration always completes,
/// while later ones may be cut short by `quit` arriving (the script is read at
/// once), so only depth 1 is comparable between runs.
fn usi_scores(script: &str) -> (Vec<String>, String) {
    let mut out = Vec::new();
    stera_engine::builtin::run_usi(script.as_bytes(), &mut out).expect("session runs");
    let text = String::from_utf8(out).expect("utf-8");
    let scores = text
        .lines()
        .filter(|l| l.starts_with("info depth 1 "))
        .map(|l| {
            l.split(" score ")
                .nth(1)
                .unwrap_or("")
                .split(" nodes")
                .next()
                .unwrap_or("")
                .to_owned()
        })
        .collect();
    (scores, text)
}

#[test]
fn usi_eval_file_option_switches_to_nnue_and_reports_bad_files() {
    let path = fixture().path.display().to_string();
    let go = "position startpos moves 7g7f\ngo nodes 5000\nisready\n";
    let (hce, _) = usi_scores(&format!("usi\nisready\n{go}quit\n"));
    let (with_net, text) = usi_scores(&format!(
        "usi\nsetoption name EvalFile value {path}\nisready\n{go}quit\n"
    ));
    assert!(text.contains("option name EvalFile type string"), "{text}");
    assert!(
        text.contains("option name FV_SCALE type spin default 16"),
        "{text}"
    );
    assert!(text.contains("info string evaluation: nnue "), "{text}");
    assert!(!hce.is_empty() && !with_net.is_empty());
    assert_ne!(hce, with_net, "EvalFile changes the scores");

    let (fallback, text) = usi_scores(&format!(
        "usi\nsetoption name EvalFile value no/such/nn.bin\nisready\n{go}quit\n"
    ));
    assert!(
        text.contains("info string error: cannot read evaluation file no/such/nn.bin"),
        "{text}"
    );
    assert_eq!(
        fallback, hce,
        "a bad file leaves the hand-crafted evaluation"
    );
}
