//! The protocol's messages to and from the domain types. Both ends of the wire
//! convert through here, so a worker reports a game in exactly the terms the
//! coordinator checks it in, and a limit means the same on both sides.

use std::time::Duration;

use stera_engine::{Evaluation, Limits};
use stera_games::Route;
use stera_games::search_player::{SearchAnswer, SearchQuery};
use stera_games::{
    Adjudication, Game, GameMove, GameResult, GameRules, MoveSource, Outcome, Termination,
};
use stera_proto::v1::{self, JobResult, MoveValue, PlayJob, PlayResult, PlayedMove};
use stera_rules::Move;

/// Game rules from the protocol's (and the coordinator's flags') terms: a ply
/// limit, and adjudication beyond `adjudicate_cp` centipawns (0: none) for
/// `adjudicate_plies` moves.
#[must_use]
pub fn game_rules(ply_limit: u32, adjudicate_cp: u32, adjudicate_plies: u32) -> GameRules {
    GameRules {
        ply_limit,
        adjudication: (adjudicate_cp > 0).then(|| Adjudication {
            threshold: i32::try_from(adjudicate_cp).unwrap_or(i32::MAX),
            plies: adjudicate_plies,
        }),
    }
}

/// The game rules a play job states.
#[must_use]
pub fn rules_of(job: &PlayJob) -> GameRules {
    game_rules(job.ply_limit, job.adjudicate_cp, job.adjudicate_plies)
}

/// The protocol's name for a termination.
#[must_use]
pub fn termination_to_proto(t: Termination) -> v1::Termination {
    match t {
        Termination::Mate => v1::Termination::Mate,
        Termination::Repetition => v1::Termination::Repetition,
        Termination::PerpetualCheck => v1::Termination::PerpetualCheck,
        Termination::Declaration => v1::Termination::Declaration,
        Termination::InvalidDeclaration => v1::Termination::InvalidDeclaration,
        Termination::Resignation => v1::Termination::Resignation,
        Termination::PlyLimit => v1::Termination::PlyLimit,
        Termination::Adjudication => v1::Termination::Adjudication,
    }
}

/// The rules' termination for a protocol one (`None` for unspecified).
#[must_use]
pub fn termination_from_proto(t: v1::Termination) -> Option<Termination> {
    Some(match t {
        v1::Termination::Unspecified => return None,
        v1::Termination::Mate => Termination::Mate,
        v1::Termination::Repetition => Termination::Repetition,
        v1::Termination::PerpetualCheck => Termination::PerpetualCheck,
        v1::Termination::Declaration => Termination::Declaration,
        v1::Termination::InvalidDeclaration => Termination::InvalidDeclaration,
        v1::Termination::Resignation => Termination::Resignation,
        v1::Termination::PlyLimit => Termination::PlyLimit,
        v1::Termination::Adjudication => Termination::Adjudication,
    })
}

/// The protocol's outcome for a result.
#[must_use]
pub fn outcome_to_proto(o: Outcome) -> v1::Outcome {
    match o {
        Outcome::BlackWins => v1::Outcome::BlackWins,
        Outcome::WhiteWins => v1::Outcome::WhiteWins,
        Outcome::Draw => v1::Outcome::Draw,
    }
}

/// The claimed result of a reported game.
///
/// # Errors
/// An unspecified or unknown outcome or termination.
pub fn result_from_proto(result: &PlayResult) -> Result<GameResult, String> {
    let outcome = match v1::Outcome::try_from(result.outcome) {
        Ok(v1::Outcome::BlackWins) => Outcome::BlackWins,
        Ok(v1::Outcome::WhiteWins) => Outcome::WhiteWins,
        Ok(v1::Outcome::Draw) => Outcome::Draw,
        _ => return Err(format!("outcome {} is not a result", result.outcome)),
    };
    let termination = v1::Termination::try_from(result.termination)
        .ok()
        .and_then(termination_from_proto)
        .ok_or_else(|| format!("termination {} is not a reason", result.termination))?;
    Ok(GameResult {
        outcome,
        termination,
    })
}

/// A finished game as a play job's result: every move (opening included) with its
/// score, the outcome and why the game ended.
#[must_use]
pub fn play_result_to_proto(game: &Game) -> PlayResult {
    PlayResult {
        moves: game
            .moves
            .iter()
            .map(|m| PlayedMove {
                usi: m.mv.to_string(),
                score: m.score.unwrap_or(0),
                has_score: m.score.is_some(),
            })
            .collect(),
        outcome: outcome_to_proto(game.result.outcome).into(),
        termination: termination_to_proto(game.result.termination).into(),
    }
}

/// The moves of a reported game; the first `opening_len` were given with the job,
/// the rest the worker's engine chose.
///
/// # Errors
/// A move that is not USI text (its number from 1 and its text).
pub fn game_moves_from_proto(
    moves: &[PlayedMove],
    opening_len: usize,
) -> Result<Vec<GameMove>, String> {
    moves
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let mv = Move::from_usi(&m.usi)
                .map_err(|_| format!("move #{} `{}` is not a USI move", i + 1, m.usi))?;
            let source = if i < opening_len {
                MoveSource::Opening
            } else {
                MoveSource::Engine
            };
            Ok(GameMove {
                mv,
                score: m.has_score.then_some(m.score),
                source,
            })
        })
        .collect()
}

/// The engine limits of a job: its own when it carries any (a 0 field is
/// unlimited), else `default`.
#[must_use]
pub fn limits_from_proto(limits: Option<&v1::Limits>, default: Limits) -> Limits {
    match limits {
        Some(l) if l.nodes > 0 || l.depth > 0 || l.time_ms > 0 => Limits {
            nodes: (l.nodes > 0).then_some(l.nodes),
            depth: (l.depth > 0).then_some(l.depth),
            time: (l.time_ms > 0).then(|| Duration::from_millis(u64::from(l.time_ms))),
        },
        _ => default,
    }
}

/// Engine limits in the protocol's terms (0: unlimited; a time beyond `u32`
/// milliseconds is capped).
#[must_use]
pub fn limits_to_proto(limits: &Limits) -> v1::Limits {
    v1::Limits {
        nodes: limits.nodes.unwrap_or(0),
        depth: limits.depth.unwrap_or(0),
        time_ms: limits
            .time
            .map_or(0, |t| u32::try_from(t.as_millis()).unwrap_or(u32::MAX)),
    }
}

/// The Search request of `query`: the game so far, the move's budget and who
/// may answer (its route as `engine`: empty for the book's thinkers).
#[must_use]
pub fn search_request(query: &SearchQuery<'_>) -> v1::SearchRequest {
    let engine = match query.route {
        Route::Thinkers => String::new(),
        Route::Engine(text) => text.clone(),
    };
    v1::SearchRequest {
        start_sfen: query.start.to_sfen(),
        moves: query.moves.iter().map(ToString::to_string).collect(),
        limits: Some(limits_to_proto(query.limits)),
        engine,
    }
}

/// A Search reply as a [`stera_games::SearchPlayer`] takes it.
#[must_use]
pub fn search_answer(reply: v1::SearchReply) -> SearchAnswer {
    SearchAnswer {
        usi: reply.usi,
        score: reply.has_score.then_some(reply.score),
        engine: reply.engine,
    }
}

/// The result of a think job: every legal move's value and depth for `sfen` (the
/// job's position, so that a coordinator that restarted since the lease can still
/// use it), with what it cost and who evaluated it.
#[must_use]
pub fn think_result_to_proto(lease_id: u64, sfen: String, evaluation: &Evaluation) -> JobResult {
    let moves = evaluation
        .moves
        .iter()
        .map(|m| MoveValue {
            usi: m.mv.to_string(),
            value: m.value,
            depth: m.depth,
        })
        .collect();
    JobResult::think(
        lease_id,
        sfen,
        moves,
        evaluation.nodes,
        u32::try_from(evaluation.elapsed.as_millis()).unwrap_or(u32::MAX),
        evaluation.engine.clone(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_go_there_and_back() {
        for outcome in [Outcome::BlackWins, Outcome::WhiteWins, Outcome::Draw] {
            for termination in [
                Termination::Mate,
                Termination::Repetition,
                Termination::PerpetualCheck,
                Termination::Declaration,
                Termination::InvalidDeclaration,
                Termination::Resignation,
                Termination::PlyLimit,
                Termination::Adjudication,
            ] {
                let proto = PlayResult {
                    outcome: outcome_to_proto(outcome).into(),
                    termination: termination_to_proto(termination).into(),
                    ..PlayResult::default()
                };
                let back = result_from_proto(&proto).unwrap();
                assert_eq!((back.outcome, back.termination), (outcome, termination));
            }
        }
        let unspecified = PlayResult::default();
        assert!(result_from_proto(&unspecified).is_err());
    }

    #[test]
    fn limits_go_there_and_back_and_none_means_the_default() {
        let limits = Limits {
            nodes: Some(1000),
            depth: None,
            time: Some(Duration::from_millis(250)),
        };
        let proto = limits_to_proto(&limits);
        assert_eq!(limits_from_proto(Some(&proto), Limits::default()), limits);
        let default = Limits {
            depth: Some(3),
            ..Limits::default()
        };
        assert_eq!(limits_from_proto(None, default), default);
        assert_eq!(
            limits_from_proto(Some(&v1::Limits::default()), default),
            default
        );
    }

    #[test]
    fn game_moves_keep_their_source_and_score() {
        let moves = [
            PlayedMove {
                usi: "7g7f".into(),
                score: 0,
                has_score: false,
            },
            PlayedMove {
                usi: "3c3d".into(),
                score: -12,
                has_score: true,
            },
        ];
        let game = game_moves_from_proto(&moves, 1).unwrap();
        assert_eq!(game[0].source, MoveSource::Opening);
        assert_eq!(game[0].score, None);
        assert_eq!(game[1].source, MoveSource::Engine);
        assert_eq!(game[1].score, Some(-12));
        let bad = [PlayedMove {
            usi: "nonsense".into(),
            ..PlayedMove::default()
        }];
        let err = game_moves_from_proto(&bad, 0).unwrap_err();
        assert_eq!(err, "move #1 `nonsense` is not a USI move");
    }
}
