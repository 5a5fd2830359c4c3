//! Helpers shared by the rules tests (included with `mod common;`).

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use stera_rules::Position;

/// Positions from random playouts of up to `max_plies` moves from the start position,
/// deterministic for a seed. Games stop at mate or repetition.
pub fn random_positions(seed: u64, games: usize, max_plies: usize) -> Vec<Position> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut out = Vec::new();
    for _ in 0..games {
        let mut pos = Position::startpos();
        let plies = rng.random_range(1..=max_plies);
        for _ in 0..plies {
            let moves = pos.legal_moves();
            if moves.is_empty() || pos.game_repetition().is_some() {
                break;
            }
            let mv = moves[rng.random_range(0..moves.len())];
            pos.do_move(mv);
        }
        out.push(pos);
    }
    out
}

/// The Python that has the cshogi oracle: the project's venv (made by
/// scripts/install-deps.sh, since Debian's own Python takes no pip packages) when it
/// exists, else whatever `python3` is first on PATH.
pub fn python3() -> std::path::PathBuf {
    let venv = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.venv/bin/python3");
    if venv.exists() {
        venv
    } else {
        "python3".into()
    }
}
