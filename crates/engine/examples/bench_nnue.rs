//! Benchmark of NNUE evaluation: full evaluations/s (refresh both accumulator
//! halves + network), incremental update + evaluation/s along random games, the
//! network layers alone, each with the scalar and the AVX2 kernels; then the
//! built-in engine's nodes/s with NNUE against the hand-crafted evaluation.
//!
//! Without `--eval-file`, a random full-size HalfKP 256x2-32-32 network is
//! written to a temporary file first (speed does not depend on the weights).
//!
//! Run with `cargo run --release -p stera-engine --example bench_nnue [-- --help]`.

#[path = "../tests/fixtures/nnue_net.rs"]
mod net;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use clap::Parser;
use stera_engine::nnue::features::Change;
use stera_engine::nnue::{
    self, Accumulator, AccumulatorStack, Backend, DEFAULT_FV_SCALE, NnueConfig,
};
use stera_engine::{BuiltinEvaluator, Evaluator, Limits};
use stera_rules::Position;
use stera_rules::backend::types::Move as BackendMove;

#[derive(Parser)]
struct Args {
    /// An NNUE file to measure (default: a random network in a temporary file).
    #[arg(long, value_name = "PATH")]
    eval_file: Option<PathBuf>,
    /// Node budget per position for the engine comparison.
    #[arg(long, default_value_t = 200_000)]
    nodes: u64,
    /// Random games whose positions are evaluated.
    #[arg(long, default_value_t = 200)]
    games: usize,
}

#[path = "common/positions.rs"]
mod positions;
use positions::POSITIONS;

/// Seeded random games of at most 120 plies: the move lists.
fn random_games(games: usize) -> Vec<Vec<stera_rules::Move>> {
    let mut rng = net::NetRng::new(42);
    (0..games)
        .map(|_| {
            let mut pos = Position::startpos();
            let mut line = Vec::new();
            for _ in 0..120 {
                let moves = pos.legal_moves();
                if moves.is_empty() {
                    break;
                }
                let mv = moves[(rng.next() % moves.len() as u64) as usize];
                pos.do_move(mv);
                line.push(mv);
            }
            line
        })
        .collect()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let (path, temporary) = match &args.eval_file {
        Some(p) => (p.clone(), false),
        None => {
            let t = Instant::now();
            let p = net::write_random_net(1, "bench")?;
            println!(
                "random network written in {:.2} s",
                t.elapsed().as_secs_f64()
            );
            (p, true)
        }
    };
    let t = Instant::now();
    let network = nnue::load_shared(&path)?;
    println!(
        "network {} loaded in {:.2} s; kernels available: {:?}",
        network.description(),
        t.elapsed().as_secs_f64(),
        Backend::available()
    );
    if temporary {
        std::fs::remove_file(&path)?;
    }

    let games = random_games(args.games);
    let mut positions = Vec::new();
    for line in &games {
        let mut pos = Position::startpos();
        for &mv in line {
            pos.do_move(mv);
            positions.push(pos.backend().clone());
        }
    }
    println!(
        "{} positions from {} random games",
        positions.len(),
        games.len()
    );

    for backend in Backend::available() {
        // Full: both halves from scratch, then the layers.
        let t = Instant::now();
        let mut checksum = 0i64;
        let mut acc = Accumulator::default();
        for board in &positions {
            acc.refresh_all(&network, board, backend);
            checksum += i64::from(network.evaluate(&acc, board.turn(), DEFAULT_FV_SCALE, backend));
        }
        let full = positions.len() as f64 / t.elapsed().as_secs_f64();

        // Layers only (accumulator given).
        let t = Instant::now();
        for board in positions.iter().take(20_000) {
            checksum += i64::from(network.output(&acc, board.turn(), backend));
        }
        let layers = positions.len().min(20_000) as f64 / t.elapsed().as_secs_f64();

        // Incremental: each move updates the previous accumulator, then evaluates.
        let mut stack = AccumulatorStack::new(backend);
        let t = Instant::now();
        let mut evaluated = 0usize;
        for line in &games {
            let mut pos = Position::startpos();
            stack.reset(&network, pos.backend());
            for &mv in line {
                let board = pos.backend();
                let mv32 = board.move32_from_move(BackendMove::from_raw(mv.raw()));
                stack.push(Change::of_move(board, mv32));
                pos.do_move(mv);
                checksum += i64::from(stack.evaluate(&network, pos.backend(), DEFAULT_FV_SCALE));
                evaluated += 1;
            }
        }
        let secs = t.elapsed().as_secs_f64();
        let (updates, refreshes) = stack.work();
        println!(
            "{backend:?}: full {full:>10.0} evals/s | incremental {:>10.0} evals/s \
             ({updates} half updates, {refreshes} half refreshes; includes move making) | \
             layers only {layers:>10.0}/s  [checksum {checksum}]",
            evaluated as f64 / secs
        );
    }

    let roots = POSITIONS
        .iter()
        .map(|p| Position::from_position_command(p))
        .collect::<Result<Vec<_>, _>>()?;
    let limits = Limits {
        nodes: Some(args.nodes),
        ..Limits::default()
    };
    let mut rates = Vec::new();
    for nnue in [None, Some(Arc::clone(&network))] {
        let mut engine = match nnue {
            None => BuiltinEvaluator::new(),
            Some(network) => BuiltinEvaluator::with_nnue(
                Default::default(),
                NnueConfig {
                    network,
                    fv_scale: DEFAULT_FV_SCALE,
                },
            ),
        };
        let t = Instant::now();
        let mut nodes = 0u64;
        for pos in &roots {
            nodes += engine.evaluate(pos, &limits)?.nodes;
        }
        let secs = t.elapsed().as_secs_f64();
        let rate = nodes as f64 / secs;
        println!(
            "engine {}: {nodes} nodes in {secs:.2} s = {rate:.0} nodes/s",
            engine.identity()
        );
        rates.push(rate);
    }
    println!("NNUE / HCE nodes/s ratio: {:.2}", rates[1] / rates[0]);
    Ok(())
}
