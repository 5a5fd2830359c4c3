//! The built-in engine as a [`Player`]: its normal search's best move and score.

use stera_rules::Position;
use stera_rules::backend::types::{EnteringKingRule, MOVE_NONE};

use super::search::Searcher;
use super::tt::TranspositionTable;
use super::{BuiltinConfig, identity_with, root_moves, search_limits, to_rules_move};
use crate::nnue::NnueConfig;
use crate::player::{Player, PlayerMove};
use crate::{EvalError, Limits};

/// The built-in engine playing games.
///
/// Each move is one iterative-deepening search with a principal variation of one
/// move (the other root moves get null-window tests only), so a move costs far
/// less than [`super::BuiltinEvaluator`]'s value for every move at the same
/// limits. Limits mean what they mean for the evaluator: `nodes` and `time` are
/// the budget of the move, `depth` the last iteration; with no limit at all,
/// [`BuiltinConfig::default_nodes`] applies. With node or depth limits the moves
/// are deterministic: each search starts a new table generation, so a move
/// does not depend on what the player searched before.
///
/// It declares a win (`Win`) when the CSA 27-point entering-king rule holds for
/// the side to move, and resigns only when it has no legal move.
pub struct BuiltinPlayer {
    config: BuiltinConfig,
    tt: TranspositionTable,
    nnue: Option<NnueConfig>,
}

impl Default for BuiltinPlayer {
    fn default() -> Self {
        Self::new()
    }
}

impl BuiltinPlayer {
    /// The player with [`BuiltinConfig::default`] and the hand-crafted evaluation.
    #[must_use]
    pub fn new() -> Self {
        Self::with_config(BuiltinConfig::default(), None)
    }

    /// The player with explicit settings, evaluating with `nnue` when given.
    #[must_use]
    pub fn with_config(config: BuiltinConfig, nnue: Option<NnueConfig>) -> Self {
        Self {
            config,
            tt: TranspositionTable::new(config.hash_mb),
            nnue,
        }
    }
}

impl Player for BuiltinPlayer {
    fn new_game(&mut self) -> Result<(), EvalError> {
        // Nothing to forget: every move's search starts a new table generation,
        // which hides whatever earlier searches stored (the move depends on the
        // position and the limits alone). Clearing the 16 MB table here cost
        // 1-2 ms, more than a 1,000-node search, and a cluster's search jobs
        // start a new game for every move.
        Ok(())
    }

    fn play(&mut self, position: &Position, limits: &Limits) -> Result<PlayerMove, EvalError> {
        if limits.depth == Some(0) || limits.nodes == Some(0) {
            return Err(EvalError::UnsupportedLimits(
                "depth and nodes must be at least 1".to_owned(),
            ));
        }
        let search_limits =
            search_limits(limits, self.config.default_nodes, std::time::Instant::now())?;
        let mut declaration = position.backend().clone();
        declaration.set_entering_king_rule(EnteringKingRule::Point27);
        if declaration.declaration_win_move() != MOVE_NONE {
            return Ok(PlayerMove::Win);
        }
        let legal = position.legal_moves();
        if legal.is_empty() {
            return Ok(PlayerMove::Resign);
        }
        // The board keeps the game's history: the search scores repetitions of it.
        let board = position.backend().clone();
        let mut root = root_moves(&board, &legal);
        let mut searcher =
            Searcher::new(board, &mut self.tt, search_limits).with_nnue(self.nnue.as_ref());
        searcher.run(&mut root, 1, |_| {});
        let engine = || identity_with(self.nnue.as_ref());
        if let Some(reason) = searcher.failure() {
            return Err(EvalError::Engine {
                engine: engine(),
                reason: reason.to_owned(),
            });
        }
        let best = root.first().ok_or_else(|| EvalError::Engine {
            engine: engine(),
            reason: "the search returned no move".to_owned(),
        })?;
        let mv = to_rules_move(&legal, best.mv).ok_or_else(|| EvalError::Engine {
            engine: engine(),
            reason: format!("root move {} lost its encoding", best.mv.to_usi()),
        })?;
        Ok(PlayerMove::Move {
            mv,
            score: Some(best.value),
        })
    }

    fn identity(&self) -> String {
        identity_with(self.nnue.as_ref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nodes(n: u64) -> Limits {
        Limits {
            nodes: Some(n),
            ..Limits::default()
        }
    }

    #[test]
    fn takes_a_free_rook_and_mates_in_one() {
        let mut player = BuiltinPlayer::new();
        // A white rook hangs on 2b, attacked by Black's bishop on 5e.
        let pos = Position::from_sfen("4k4/7r1/9/9/4B4/9/9/9/4K4 b - 1").unwrap();
        match player.play(&pos, &nodes(5_000)).unwrap() {
            PlayerMove::Move { mv, score } => {
                assert!(mv.to_string().starts_with("5e2b"), "{mv}");
                assert!(score.is_some_and(|s| s > 500), "{score:?}");
            }
            other => panic!("{other:?}"),
        }
        let pos = Position::from_sfen("4k4/9/4P4/9/9/9/9/9/4K4 b G 1").unwrap();
        match player.play(&pos, &nodes(5_000)).unwrap() {
            PlayerMove::Move { mv, score } => {
                assert_eq!(mv.to_string(), "G*5b");
                assert!(score.is_some_and(|s| s >= stera_rules::value::MATE_IN_MAX_PLY));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn resigns_without_moves_and_declares_when_the_rule_holds() {
        let mut player = BuiltinPlayer::new();
        // White to move, mated (gold on 5b protected by the pawn on 5c).
        let mated = Position::from_sfen("4k4/4G4/4P4/9/9/9/9/9/4K4 w - 1").unwrap();
        assert_eq!(
            player.play(&mated, &nodes(1_000)).unwrap(),
            PlayerMove::Resign
        );
        // Black's king on 5b, 12 pieces in White's camp worth 20 points, 18 more
        // in hand: the CSA 27-point rule holds.
        let entered = Position::from_sfen("+R+B+PGGGGSS/4K4/SSL6/9/9/9/9/9/4k4 b RB8P 1").unwrap();
        assert_eq!(
            player.play(&entered, &nodes(1_000)).unwrap(),
            PlayerMove::Win
        );
        assert!(matches!(
            player.play(
                &Position::startpos(),
                &Limits {
                    depth: Some(0),
                    ..Limits::default()
                }
            ),
            Err(EvalError::UnsupportedLimits(_))
        ));
    }

    #[test]
    fn same_limits_same_game_after_new_game() {
        let mut player = BuiltinPlayer::new();
        let line = |player: &mut BuiltinPlayer| {
            player.new_game().unwrap();
            let mut pos = Position::startpos();
            let mut moves = Vec::new();
            for _ in 0..8 {
                match player.play(&pos, &nodes(2_000)).unwrap() {
                    PlayerMove::Move { mv, .. } => {
                        pos.do_move(mv);
                        moves.push(mv);
                    }
                    other => panic!("{other:?}"),
                }
            }
            moves
        };
        let first = line(&mut player);
        let second = line(&mut player);
        assert_eq!(first, second);
    }

    #[test]
    fn a_move_does_not_depend_on_what_the_player_searched_before() {
        let target = Position::from_sfen(
            "lnsgkgsnl/1r5b1/ppppppppp/9/9/2P6/PP1PPPPPP/1B5R1/LNSGKGSNL w - 2",
        )
        .unwrap();
        let mut fresh = BuiltinPlayer::new();
        let expected = fresh.play(&target, &nodes(3_000)).unwrap();
        let mut used = BuiltinPlayer::new();
        let mut pos = Position::startpos();
        for _ in 0..6 {
            match used.play(&pos, &nodes(3_000)).unwrap() {
                PlayerMove::Move { mv, .. } => pos.do_move(mv),
                other => panic!("{other:?}"),
            }
        }
        // The target itself searched before, at another budget: its entries are
        // of an older generation.
        used.play(&target, &nodes(20_000)).unwrap();
        assert_eq!(used.play(&target, &nodes(3_000)).unwrap(), expected);
    }
}
