//! The protocol's messages to and from the domain types. Both ends of the wire
//! convert through here, so a search means the same to the coordinator that asks
//! it and the worker that answers it, and a limit means the same on both sides.

use std::time::Duration;

use stera_engine::{Evaluation, Limits};
use stera_games::Route;
use stera_games::search_player::{SearchAnswer, SearchQuery};
use stera_games::{Adjudication, GameRules};
use stera_proto::v1::{self, JobResult, MoveValue};

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
}
