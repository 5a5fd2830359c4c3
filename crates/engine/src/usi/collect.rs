//! Turning the `info` lines of a search into values per move.

use stera_rules::Move;

use super::info::Info;
use super::score::ScoreConversion;
use crate::MoveValue;

/// The values found so far for the legal moves of one position.
///
/// A MultiPV search prints each move many times (one line per iteration); the last
/// exact score is the deepest complete one, so it replaces earlier ones. Bounds
/// (`lowerbound`/`upperbound`) come from failed aspiration windows and are skipped.
#[derive(Debug, Clone)]
pub(crate) struct MoveScores {
    /// Canonical order, as [`stera_rules::Position::legal_moves`] gives it.
    legal: Vec<Move>,
    /// `(value, depth)` per legal move, from the mover's point of view.
    values: Vec<Option<(i32, u32)>>,
}

impl MoveScores {
    pub(crate) fn new(legal: Vec<Move>) -> Self {
        let values = vec![None; legal.len()];
        Self { legal, values }
    }

    /// Takes the score of a complete line for its first move. Lines for moves that
    /// are not legal here (`resign`, `pass`, another notation) are ignored: the
    /// missing move is searched separately anyway.
    pub(crate) fn record(&mut self, info: &Info, scores: &ScoreConversion) {
        let (Some(score), Some(first)) = (info.exact_score(), info.first_pv_move.as_deref()) else {
            return;
        };
        let Ok(mv) = Move::from_usi(first) else {
            return;
        };
        if let Ok(index) = self.legal.binary_search(&mv) {
            self.values[index] = Some((scores.to_value(score), info.depth.unwrap_or(0)));
        }
    }

    /// Sets the value of a legal move (found by searching its child position).
    pub(crate) fn set(&mut self, mv: Move, value: i32, depth: u32) {
        if let Ok(index) = self.legal.binary_search(&mv) {
            self.values[index] = Some((value, depth));
        }
    }

    /// The legal moves without a value yet, in canonical order.
    pub(crate) fn missing(&self) -> Vec<Move> {
        self.legal
            .iter()
            .zip(&self.values)
            .filter(|(_, v)| v.is_none())
            .map(|(mv, _)| *mv)
            .collect()
    }

    /// The deepest depth of any value so far (at least 1).
    pub(crate) fn max_depth(&self) -> u32 {
        self.values
            .iter()
            .flatten()
            .map(|&(_, d)| d)
            .max()
            .unwrap_or(0)
            .max(1)
    }

    /// The moves that have a value, in canonical order.
    pub(crate) fn into_move_values(self) -> Vec<MoveValue> {
        self.legal
            .into_iter()
            .zip(self.values)
            .filter_map(|(mv, v)| v.map(|(value, depth)| MoveValue { mv, value, depth }))
            .collect()
    }
}

/// The value of the searched position for its side to move, with its depth.
///
/// In order of preference: the last exact line that starts with the engine's
/// `bestmove`; for MultiPV engines, the last exact `multipv 1` line; otherwise the
/// best of the last exact scores per first move. The last one matters for engines
/// such as GPS Shogi, which print lines for several root moves without `multipv`
/// and may omit the line of the move they finally play: then the best score shown
/// is the closest thing to the position's value. Without any exact line, the
/// last bound of the `bestmove` line ([`bound_of_bestmove`]).
pub(crate) fn position_value(
    scored: &[Info],
    bestmove: &str,
    scores: &ScoreConversion,
) -> Option<(i32, u32)> {
    exact_position_value(scored, bestmove, scores)
        .or_else(|| bound_of_bestmove(scored, bestmove, scores))
}

/// [`position_value`] from exact lines alone.
fn exact_position_value(
    scored: &[Info],
    bestmove: &str,
    scores: &ScoreConversion,
) -> Option<(i32, u32)> {
    let value = |info: &Info| {
        info.exact_score()
            .map(|score| (scores.to_value(score), info.depth.unwrap_or(0)))
    };
    let of_bestmove = scored
        .iter()
        .rev()
        .filter(|info| info.first_pv_move.as_deref() == Some(bestmove))
        .find_map(value);
    if of_bestmove.is_some() {
        return of_bestmove;
    }
    if scored.iter().any(|info| info.multipv.is_some()) {
        return scored
            .iter()
            .rev()
            .filter(|info| info.multipv == Some(1))
            .find_map(value);
    }
    let mut last_per_move: Vec<(&str, (i32, u32))> = Vec::new();
    for info in scored {
        let (Some(first), Some(v)) = (info.first_pv_move.as_deref(), value(info)) else {
            continue;
        };
        match last_per_move.iter_mut().find(|(mv, _)| *mv == first) {
            Some(entry) => entry.1 = v,
            None => last_per_move.push((first, v)),
        }
    }
    let best = last_per_move
        .into_iter()
        .map(|(_, v)| v)
        .max_by_key(|&(value, _)| value);
    // A line without a principal variation still carries the position's score.
    best.or_else(|| scored.iter().rev().find_map(value))
}

/// The last bound of `bestmove`'s line, one ply shallower than printed: what is
/// left when a search printed no exact score. YaneuraOu prints its principal
/// variation only every `PvInterval` milliseconds and at the end, so a short
/// search stopped by its node limit inside a failed aspiration window ends on a
/// bound line alone; the engine chose its move by it, and the iteration before
/// the failed one was complete.
fn bound_of_bestmove(
    scored: &[Info],
    bestmove: &str,
    scores: &ScoreConversion,
) -> Option<(i32, u32)> {
    let info = scored
        .iter()
        .rev()
        .find(|info| info.bound && info.first_pv_move.as_deref() == Some(bestmove))?;
    let score = info.score?;
    Some((
        scores.to_value(score),
        info.depth.unwrap_or(1).saturating_sub(1),
    ))
}

#[cfg(test)]
mod tests {
    use stera_rules::Position;

    use super::*;

    fn infos(lines: &[&str]) -> Vec<Info> {
        lines.iter().filter_map(|l| Info::parse(l)).collect()
    }

    fn value_of(values: &[MoveValue], usi: &str) -> Option<(i32, u32)> {
        values
            .iter()
            .find(|m| m.mv.to_string() == usi)
            .map(|m| (m.value, m.depth))
    }

    #[test]
    fn last_complete_score_per_move_wins_and_bounds_are_ignored() {
        let mut scores = MoveScores::new(Position::startpos().legal_moves());
        let lines = infos(&[
            "info depth 1 multipv 1 score cp 96 pv 7g7f",
            "info depth 1 multipv 2 score cp 33 pv 2g2f",
            "info depth 2 multipv 1 score cp 120 pv 7g7f 3c3d",
            "info depth 2 multipv 2 score cp 40 pv 2g2f",
            // A failed aspiration window at depth 3: not a value.
            "info depth 3 multipv 1 score cp 500 lowerbound pv 7g7f",
            "info depth 3 multipv 2 score cp -900 upperbound pv 2g2f",
            // The move order of MultiPV lines changes between iterations.
            "info depth 3 multipv 1 score cp 80 pv 2g2f 8c8d",
            "info depth 3 multipv 2 score mate -5 pv 7g7f",
            "info depth 4 multipv 1 score cp 999 pv resign",
            "info depth 4 multipv 2 score cp 999 pv 7g7e",
        ]);
        let conversion = ScoreConversion::default();
        for info in &lines {
            scores.record(info, &conversion);
        }
        assert_eq!(scores.missing().len(), 28);
        let values = scores.into_move_values();
        assert_eq!(values.len(), 2);
        assert_eq!(value_of(&values, "2g2f"), Some((80, 3)));
        assert_eq!(value_of(&values, "7g7f"), Some((-31_995, 3)));
    }

    #[test]
    fn set_fills_missing_moves_in_canonical_order() {
        let legal = Position::startpos().legal_moves();
        let mut scores = MoveScores::new(legal.clone());
        for (i, mv) in legal.iter().enumerate().rev() {
            scores.set(*mv, i32::try_from(i).unwrap(), 2);
        }
        assert!(scores.missing().is_empty());
        assert_eq!(scores.max_depth(), 2);
        let values = scores.into_move_values();
        let order: Vec<Move> = values.iter().map(|m| m.mv).collect();
        assert_eq!(order, legal);
    }

    #[test]
    fn position_value_prefers_the_bestmove_line() {
        let conversion = ScoreConversion::default();
        let lines = infos(&[
            "info depth 5 score cp 20 pv 7g7f",
            "info depth 6 score cp 35 pv 2g2f",
            "info depth 7 score cp 70 lowerbound pv 7g7f",
            "info depth 6 score cp -40 pv 5g5f",
        ]);
        assert_eq!(position_value(&lines, "7g7f", &conversion), Some((20, 5)));
        assert_eq!(position_value(&lines, "2g2f", &conversion), Some((35, 6)));
    }

    #[test]
    fn a_search_that_ends_on_a_bound_alone_is_valued_by_the_bound_of_its_move() {
        let conversion = ScoreConversion::default();
        // YaneuraOu at 20,000 nodes after 7g7f 3c3d 8h2b+ 3a2b 6i7h (its output).
        let lines = infos(&[
            "info depth 5 seldepth 7 multipv 1 score cp 4 upperbound nodes 20010 pv B*3c 8i7g",
        ]);
        assert_eq!(position_value(&lines, "B*3c", &conversion), Some((4, 4)));
        // A bound of another move is no value of this one.
        assert_eq!(position_value(&lines, "8c8d", &conversion), None);
        // An exact line, however old, goes before a bound.
        let lines = infos(&[
            "info depth 4 multipv 1 score cp -10 pv B*3c",
            "info depth 5 multipv 1 score cp 4 upperbound pv B*3c",
        ]);
        assert_eq!(position_value(&lines, "B*3c", &conversion), Some((-10, 4)));
    }

    #[test]
    fn position_value_of_multipv_engines_is_the_first_line() {
        let conversion = ScoreConversion::default();
        let lines = infos(&[
            "info depth 6 multipv 1 score cp 35 pv 7g7f",
            "info depth 6 multipv 2 score cp 10 pv 2g2f",
            "info depth 7 multipv 1 score cp 90 upperbound pv 2g2f",
            "info depth 7 multipv 2 score cp 5 pv 5g5f",
        ]);
        // The engine played a move it never printed an exact line for.
        assert_eq!(position_value(&lines, "2g2f", &conversion), Some((10, 6)));
        assert_eq!(position_value(&lines, "9g9f", &conversion), Some((35, 6)));
    }

    #[test]
    fn position_value_without_the_bestmove_line_is_the_best_shown() {
        // GPS Shogi: several root moves, no `multipv`, no line for its bestmove.
        let conversion = ScoreConversion::default();
        let lines = infos(&[
            "info depth 3 score cp -39 pv 7a6b 2g2f",
            "info depth 3 score cp -71 pv 8b4b 7i6h",
            "info depth 4 score cp -80 pv 7a6b 2g2f",
            "info depth 3 score cp -57 pv 5c5d 2g2f",
        ]);
        assert_eq!(position_value(&lines, "3c3d", &conversion), Some((-57, 3)));
        let no_pv = infos(&["info depth 3 score cp 12"]);
        assert_eq!(position_value(&no_pv, "3c3d", &conversion), Some((12, 3)));
        assert_eq!(position_value(&[], "3c3d", &conversion), None);
    }
}
