//! Benchmark of the built-in engine: search speed (nodes/s) and all-moves
//! evaluation throughput (positions/s) at the default node budget.
//!
//! Run with `cargo run --release -p stera-engine --example bench_builtin [-- <nodes>]`.

use std::time::Instant;

use stera_engine::builtin::DEFAULT_NODES;
use stera_engine::{BuiltinEvaluator, Evaluator, Limits};
use stera_rules::Position;

#[path = "common/positions.rs"]
mod positions;
use positions::POSITIONS;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let nodes = match std::env::args().nth(1) {
        Some(arg) => arg
            .parse::<u64>()
            .map_err(|e| format!("node budget `{arg}`: {e}"))?,
        None => DEFAULT_NODES,
    };
    let positions = POSITIONS
        .iter()
        .map(|p| Position::from_position_command(p))
        .collect::<Result<Vec<_>, _>>()?;
    let mut engine = BuiltinEvaluator::new();
    let limits = Limits {
        nodes: Some(nodes),
        ..Limits::default()
    };
    println!(
        "engine: {}  budget: {nodes} nodes/position",
        engine.identity()
    );
    let started = Instant::now();
    let mut total_nodes = 0u64;
    let mut total_moves = 0usize;
    for (text, pos) in POSITIONS.iter().zip(&positions) {
        let t = Instant::now();
        let evaluation = engine.evaluate(pos, &limits)?;
        let secs = t.elapsed().as_secs_f64();
        let best = evaluation.moves.iter().max_by_key(|m| m.value);
        total_nodes += evaluation.nodes;
        total_moves += evaluation.moves.len();
        println!(
            "{:>3} moves  depth {:>2}  best {:<8} {:>6}  {:>9} nodes  {:>7.3} s  {:>9.0} nodes/s  {text}",
            evaluation.moves.len(),
            evaluation.moves.first().map_or(0, |m| m.depth),
            best.map_or("-".to_owned(), |m| m.mv.to_string()),
            best.map_or(0, |m| m.value),
            evaluation.nodes,
            secs,
            evaluation.nodes as f64 / secs,
        );
    }
    let secs = started.elapsed().as_secs_f64();
    println!(
        "total: {} positions, {total_moves} moves, {total_nodes} nodes in {secs:.3} s: {:.0} nodes/s, {:.2} positions/s",
        positions.len(),
        total_nodes as f64 / secs,
        positions.len() as f64 / secs,
    );
    Ok(())
}
