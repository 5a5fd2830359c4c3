//! Following a book in a game.
//!
//! A side that has a book plays a book move whenever its position is a thought
//! position of the book (looked up by key, so transpositions count), sampled
//! from a [`BookPolicy`]'s probabilities, and its engine's move otherwise. It
//! leaves the book when a position is not in it and comes back if the game
//! transposes into it again.
//!
//! What the export gives: the tera-shock export (`book-tools export`) writes
//! every legal move of a thought position, best first, with its minimax value
//! (propagated through the book), the depth of its line and `count` 1 for every
//! move, so it carries no move probabilities yet. Until results-based weights
//! exist (NineDayFever, issue 13, to be another [`BookPolicy`]), [`SoftmaxPolicy`]
//! turns the same minimax values into probabilities: `p(a) ∝ exp((v(a) - v_max) / T)`
//! with `T` in centipawns. `T = 0` plays the export's first move (the analysis'
//! best line) only; the book-quality notes found that always playing the single
//! best line hurts, and softmax at `T = 50` did better.

use std::sync::Arc;

use stera_book::terashock::{BookGraph, MoveLine, Solution, TeraShockError, node_lines, solve};
use stera_book::{Book, BookError};
use stera_rules::{Move, Position};

/// The default softmax temperature in centipawns.
pub const DEFAULT_TEMPERATURE: f64 = 50.0;

/// How a side picks its book moves.
pub trait BookPolicy: Send + Sync {
    /// The book moves of `position` with their probabilities (positive, summing to
    /// 1, best first), or `None` when the position is not in the book or has no
    /// move there.
    fn probabilities(&self, position: &Position) -> Option<Vec<(Move, f64)>>;

    /// The move whose probability interval contains `uniform` (a number in
    /// `[0, 1)`), or `None` out of book. The same number gives the same move, so a
    /// game can be replayed with the same random draws.
    fn choose(&self, position: &Position, uniform: f64) -> Option<Move> {
        let moves = self.probabilities(position)?;
        let mut acc = 0.0;
        for &(mv, p) in &moves {
            acc += p;
            if uniform < acc {
                return Some(mv);
            }
        }
        // Rounding left `acc` a hair below 1.
        moves.last().map(|&(mv, _)| mv)
    }

    /// A short description for reports, e.g. `softmax T=50 over 1234 positions`.
    fn describe(&self) -> String;
}

/// A book with its tera-shock analysis: the values the export writes.
pub struct AnalysedBook {
    book: Book,
    graph: BookGraph,
    solution: Solution,
}

impl std::fmt::Debug for AnalysedBook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AnalysedBook({} positions)", self.book.len())
    }
}

impl AnalysedBook {
    /// Analyses `book` (graph and retrograde solution, as the export does).
    ///
    /// # Errors
    /// A damaged book.
    pub fn new(book: Book) -> Result<Self, TeraShockError> {
        let graph = BookGraph::build(&book, &mut |_, _, _| {})?;
        let solution = solve(&graph);
        Ok(Self {
            book,
            graph,
            solution,
        })
    }

    /// Thought positions in the book.
    #[must_use]
    pub fn len(&self) -> usize {
        self.book.len()
    }

    /// True for an empty book.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.book.is_empty()
    }

    /// The book itself.
    #[must_use]
    pub fn book(&self) -> &Book {
        &self.book
    }

    /// The moves of `position` as the export writes them (best first, with
    /// propagated values and depths), `None` when neither it nor its
    /// colour-flipped twin is a thought position. A position the book holds as
    /// its twin gets the twin's lines with the moves flipped back, as YaneuraOu's
    /// `FlippedBook` probe plays them.
    ///
    /// # Errors
    /// A node whose stored values do not match the position's legal moves.
    pub fn lines(&self, position: &Position) -> Result<Option<Vec<MoveLine>>, BookError> {
        let Some((id, flipped)) = self
            .book
            .get_or_twin(position.key(), position.flipped_key())
        else {
            return Ok(None);
        };
        let twin = flipped.then(|| position.flipped());
        let mut moves = Vec::new();
        let mut lines = node_lines(
            &self.book,
            &self.graph,
            Some(&self.solution),
            None,
            id,
            twin.as_ref().unwrap_or(position),
            &mut moves,
        )
        .map_err(|e| match e {
            TeraShockError::Book(b) => b,
            other => BookError::Corrupt(other.to_string()),
        })?;
        if twin.is_some() {
            for line in &mut lines {
                line.mv = line.mv.flipped();
                line.ponder = line.ponder.map(Move::flipped);
            }
        }
        Ok(Some(lines))
    }
}

/// Softmax of the exported (minimax) values: `p(a) ∝ exp((v(a) - v_max) / T)`.
#[derive(Debug, Clone)]
pub struct SoftmaxPolicy {
    book: Arc<AnalysedBook>,
    temperature: f64,
}

impl SoftmaxPolicy {
    /// A policy over `book` at `temperature` centipawns (0, negative or not a
    /// number: the best move only).
    #[must_use]
    pub fn new(book: Arc<AnalysedBook>, temperature: f64) -> Self {
        let temperature = if temperature.is_finite() && temperature > 0.0 {
            temperature
        } else {
            0.0
        };
        Self { book, temperature }
    }
}

/// Softmax of `values` at `temperature` (the first value is the one played at
/// `T = 0`).
///
/// ```
/// let p = stera_games::book::softmax(&[100, 50], 50.0);
/// // e^0 : e^-1
/// assert!((p[0] - 1.0 / (1.0 + (-1.0f64).exp())).abs() < 1e-12);
/// assert_eq!(stera_games::book::softmax(&[10, 10, 0], 0.0), [1.0, 0.0, 0.0]);
/// ```
#[must_use]
pub fn softmax(values: &[i32], temperature: f64) -> Vec<f64> {
    let Some(&first) = values.first() else {
        return Vec::new();
    };
    if temperature <= 0.0 || !temperature.is_finite() {
        let mut p = vec![0.0; values.len()];
        p[0] = 1.0;
        return p;
    }
    let max = values.iter().copied().max().unwrap_or(first);
    let weights: Vec<f64> = values
        .iter()
        .map(|&v| ((f64::from(v) - f64::from(max)) / temperature).exp())
        .collect();
    let sum: f64 = weights.iter().sum();
    weights.into_iter().map(|w| w / sum).collect()
}

impl BookPolicy for SoftmaxPolicy {
    fn probabilities(&self, position: &Position) -> Option<Vec<(Move, f64)>> {
        // A node that does not match its position is treated as out of book: a
        // game must not fail because one book entry is damaged.
        let lines = self.book.lines(position).ok().flatten()?;
        if lines.is_empty() {
            return None;
        }
        let values: Vec<i32> = lines.iter().map(|l| i32::from(l.value)).collect();
        let p = softmax(&values, self.temperature);
        Some(lines.iter().map(|l| l.mv).zip(p).collect())
    }

    fn describe(&self) -> String {
        format!(
            "softmax T={} over {} positions",
            self.temperature,
            self.book.len()
        )
    }
}

/// The moves a book plays from `start` on both sides (one `uniform` number per
/// book ply, from `draw`) until it leaves the book or `max_plies` moves: the
/// opening a play job starts from when the same book plays both sides.
pub fn follow(
    policy: &dyn BookPolicy,
    start: &Position,
    max_plies: usize,
    mut draw: impl FnMut() -> f64,
) -> Vec<Move> {
    let mut pos = start.clone();
    let mut line = Vec::new();
    while line.len() < max_plies {
        if pos.game_repetition().is_some() {
            break;
        }
        let Some(mv) = policy.choose(&pos, draw()) else {
            break;
        };
        pos.do_move(mv);
        line.push(mv);
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use stera_book::{Origin, ThoughtNode};

    #[test]
    fn a_position_held_as_its_flipped_twin_gets_the_twins_lines_flipped_back() {
        // The book holds only the start with white to move (the twin of the
        // start); its first move is worth 100, the others 0.
        let twin =
            Position::from_sfen("lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL w - 1")
                .unwrap();
        let twin_moves = twin.legal_moves();
        let mut values = vec![0; twin_moves.len()];
        values[0] = 100;
        let mut book = Book::new();
        book.insert(&ThoughtNode {
            key: twin.key(),
            origin: Origin::Sfen(twin.to_sfen_without_ply()),
            ply: 1,
            values,
            depths: None,
            evaluator: 0,
            timestamp: 0,
        })
        .unwrap();
        let analysed = AnalysedBook::new(book).unwrap();
        let start = Position::startpos();
        let lines = analysed.lines(&start).unwrap().expect("found as its twin");
        assert_eq!(lines.len(), twin_moves.len());
        assert_eq!(lines[0].mv, twin_moves[0].flipped());
        assert_eq!(lines[0].value, 100);
        assert!(lines.iter().all(|l| start.is_legal(l.mv)));
        let after = Position::from_position_command("startpos moves 7g7f").unwrap();
        assert!(analysed.lines(&after).unwrap().is_none());
    }
}
