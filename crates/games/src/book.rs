//! Following a book in a game.
//!
//! A side that has a book plays a book move whenever its position is a thought
//! position of the book (looked up by key, so transpositions count), sampled
//! from a [`BookPolicy`]'s probabilities, and its engine's move otherwise. It
//! leaves the book when a position is not in it and comes back if the game
//! transposes into it again.
//!
//! Where book moves come from ([`BookSource`]): a store's tera-shock analysis
//! ([`AnalysedBook`], the values the export writes, best first) or a book file
//! (in `book-tools`). How a side picks among them ([`MoveRule`]): the best value
//! only, YaneuraOu's own rule (moves within an eval margin of the best and above
//! its side's limit, uniformly or by count), a softmax of the values, or the
//! `count` field. [`RuledBook`] plays a source by a rule. [`SoftmaxPolicy`] is the
//! softmax rule over a store's analysis, which the coordinator's self-play games sample
//! their openings with. BENCHMARKS.md "Book strength" measures the rules.

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
        Self::with_leaf_discount(book, 0)
    }

    /// [`AnalysedBook::new`] with every leaf move counted `cp` below its stored
    /// value ([`BookGraph::set_leaf_discount`]), as an export with
    /// `--leaf-discount` writes it.
    ///
    /// # Errors
    /// A damaged book.
    pub fn with_leaf_discount(book: Book, cp: i16) -> Result<Self, TeraShockError> {
        let mut graph = BookGraph::build(&book, &mut |_, _, _| {})?;
        graph.set_leaf_discount(cp);
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

/// One move a book offers in a position: its value (centipawns, from the
/// mover's point of view, as the export writes it) and its `count` weight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Candidate {
    pub mv: Move,
    pub value: i32,
    pub count: u64,
}

/// Where a side's book moves come from: a store's analysis or a book file.
pub trait BookSource: Send + Sync {
    /// The moves of `position`, best value first, or `None` out of book (a
    /// position neither the book nor its colour-flipped twin holds, or one with no
    /// move).
    fn candidates(&self, position: &Position) -> Option<Vec<Candidate>>;

    /// True when the `count` field carries weights (a book file); a store's
    /// analysis has none.
    fn has_counts(&self) -> bool;

    /// True when the source knows game results per move (a
    /// [`ResultsBook`](crate::results_book::ResultsBook)), so that
    /// [`MoveRule::Results`] can play it.
    fn has_results(&self) -> bool {
        false
    }

    /// The game results of each of `candidates` (the moves of `position`), from
    /// the mover's view, in their order; `None` when the source has none.
    fn move_results(
        &self,
        _position: &Position,
        _candidates: &[Candidate],
    ) -> Option<Vec<stera_book::GameCounts>> {
        None
    }

    /// A short description, e.g. `store book.db (1234 positions)`.
    fn describe(&self) -> String;
}

impl BookSource for AnalysedBook {
    fn candidates(&self, position: &Position) -> Option<Vec<Candidate>> {
        // A node that does not match its position is treated as out of book: a
        // game must not fail because one book entry is damaged.
        let lines = self.lines(position).ok().flatten()?;
        let candidates: Vec<Candidate> = lines
            .iter()
            .map(|l| Candidate {
                mv: l.mv,
                value: i32::from(l.value),
                count: 1,
            })
            .collect();
        (!candidates.is_empty()).then_some(candidates)
    }

    fn has_counts(&self) -> bool {
        false
    }

    fn describe(&self) -> String {
        format!("store analysis ({} positions)", self.len())
    }
}

/// YaneuraOu's defaults for choosing among book moves (its `BookEvalDiff`,
/// `BookEvalBlackLimit` and `BookEvalWhiteLimit` options).
pub const YANEURAOU_EVAL_DIFF: i32 = 30;
/// See [`YANEURAOU_EVAL_DIFF`].
pub const YANEURAOU_BLACK_LIMIT: i32 = 0;
/// See [`YANEURAOU_EVAL_DIFF`].
pub const YANEURAOU_WHITE_LIMIT: i32 = -140;

/// How a side picks among the [`Candidate`]s of its position.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum MoveRule {
    /// The best value only (the export's first move; ties: the first).
    Best,
    /// YaneuraOu's own rule: the moves whose value is at least
    /// `max(best - eval_diff, limit of the side to move)` are admitted (none
    /// admitted: out of book); among them uniformly, or in proportion to `count`
    /// with `by_count` (its `ConsiderBookMoveCount`; all counts 0: uniformly).
    YaneuraOu {
        eval_diff: i32,
        black_limit: i32,
        white_limit: i32,
        by_count: bool,
    },
    /// Softmax of the values at `temperature` centipawns:
    /// `p(a) ∝ exp((v(a) - v_max) / T)` ([`stera_book::softmax_policy`]); at
    /// `T = 0` the best moves share equally (one best move: [`MoveRule::Best`]).
    Softmax { temperature: f64 },
    /// In proportion to `count` (moves with count 0 never played; all counts 0:
    /// the first move).
    Count,
    /// The best [`results_value`](crate::results_book::results_value): each
    /// move's game score shrunk towards the win rate of its value by
    /// `prior_games` pseudo-games, in centipawns (ties: the first). Needs the
    /// moves' results ([`MoveRule::probabilities_with_results`], from a source
    /// with [`BookSource::has_results`]); without them it is [`MoveRule::Best`].
    Results { prior_games: f64 },
}

impl MoveRule {
    /// YaneuraOu's rule with its default options.
    #[must_use]
    pub const fn yaneuraou_default() -> Self {
        Self::YaneuraOu {
            eval_diff: YANEURAOU_EVAL_DIFF,
            black_limit: YANEURAOU_BLACK_LIMIT,
            white_limit: YANEURAOU_WHITE_LIMIT,
            by_count: false,
        }
    }

    /// The probabilities of `candidates` (best first) for `mover`: positive,
    /// summing to 1, `None` when the rule admits no move.
    ///
    /// ```
    /// use stera_games::book::{Candidate, MoveRule};
    /// use stera_rules::Color;
    /// let c = |usi: &str, value| Candidate { mv: usi.parse().unwrap(), value, count: 1 };
    /// let moves = [c("2g2f", 40), c("7g7f", 20), c("5g5f", -5)];
    /// // Within 30 cp of the best and not below Black's limit 0: two moves, 1/2 each.
    /// let p = MoveRule::yaneuraou_default().probabilities(&moves, Color::Black).unwrap();
    /// assert_eq!(p.len(), 2);
    /// assert!((p[0].1 - 0.5).abs() < 1e-12);
    /// assert_eq!(MoveRule::Best.probabilities(&moves, Color::Black).unwrap().len(), 1);
    /// ```
    #[must_use]
    pub fn probabilities(
        &self,
        candidates: &[Candidate],
        mover: stera_rules::Color,
    ) -> Option<Vec<(Move, f64)>> {
        self.probabilities_with_results(candidates, None, mover)
    }

    /// [`MoveRule::probabilities`] with the game `results` of each candidate (in
    /// their order, from the mover's view), which [`MoveRule::Results`] plays by.
    #[must_use]
    pub fn probabilities_with_results(
        &self,
        candidates: &[Candidate],
        results: Option<&[stera_book::GameCounts]>,
        mover: stera_rules::Color,
    ) -> Option<Vec<(Move, f64)>> {
        let best = *candidates.iter().max_by(|a, b| {
            // The first of equal values wins: `max_by` keeps the last maximum.
            a.value.cmp(&b.value).then(std::cmp::Ordering::Greater)
        })?;
        match *self {
            Self::Best => Some(vec![(best.mv, 1.0)]),
            Self::Results { prior_games } => {
                let Some(results) = results.filter(|r| r.len() == candidates.len()) else {
                    return Some(vec![(best.mv, 1.0)]);
                };
                let mut chosen: Option<(Move, i32)> = None;
                for (c, r) in candidates.iter().zip(results) {
                    let value = stera_book::results::results_value(*r, c.value, prior_games);
                    if chosen.is_none_or(|(_, b)| value > b) {
                        chosen = Some((c.mv, value));
                    }
                }
                chosen.map(|(mv, _)| vec![(mv, 1.0)])
            }
            Self::Softmax { temperature } => {
                // An infinite temperature is no choice anyone makes on purpose:
                // taken as 0 (the best moves), as before.
                let temperature = if temperature.is_finite() {
                    temperature
                } else {
                    0.0
                };
                let values: Vec<i32> = candidates.iter().map(|c| c.value).collect();
                let policy = stera_book::softmax_policy(&values, temperature);
                Some(
                    candidates
                        .iter()
                        .zip(policy)
                        .filter(|(_, p)| *p > 0.0)
                        .map(|(c, p)| (c.mv, p))
                        .collect(),
                )
            }
            Self::Count => {
                let weights: Vec<f64> = candidates.iter().map(|c| c.count as f64).collect();
                normalised(candidates, &weights).or(Some(vec![(candidates[0].mv, 1.0)]))
            }
            Self::YaneuraOu {
                eval_diff,
                black_limit,
                white_limit,
                by_count,
            } => {
                let limit = match mover {
                    stera_rules::Color::Black => black_limit,
                    stera_rules::Color::White => white_limit,
                };
                let floor = best.value.saturating_sub(eval_diff.max(0)).max(limit);
                let admitted: Vec<Candidate> = candidates
                    .iter()
                    .copied()
                    .filter(|c| c.value >= floor)
                    .collect();
                if admitted.is_empty() {
                    return None;
                }
                let counted: Vec<f64> = admitted.iter().map(|c| c.count as f64).collect();
                if by_count && let Some(p) = normalised(&admitted, &counted) {
                    return Some(p);
                }
                normalised(&admitted, &vec![1.0; admitted.len()])
            }
        }
    }

    /// A short description for reports, e.g. `yaneuraou diff 30 limits 0/-140`.
    #[must_use]
    pub fn describe(&self) -> String {
        match *self {
            Self::Best => "best".to_owned(),
            Self::Softmax { temperature } => format!("softmax T={temperature}"),
            Self::Count => "by count".to_owned(),
            Self::Results { prior_games } => format!("results (prior {prior_games} games)"),
            Self::YaneuraOu {
                eval_diff,
                black_limit,
                white_limit,
                by_count,
            } => format!(
                "yaneuraou diff {eval_diff} limits {black_limit}/{white_limit}{}",
                if by_count { " by count" } else { "" }
            ),
        }
    }
}

/// `weights` (one per candidate, best first) as probabilities; moves of weight 0
/// are left out; `None` when no weight is positive.
fn normalised(candidates: &[Candidate], weights: &[f64]) -> Option<Vec<(Move, f64)>> {
    let sum: f64 = weights.iter().filter(|w| **w > 0.0).sum();
    if !(sum > 0.0 && sum.is_finite()) {
        return None;
    }
    Some(
        candidates
            .iter()
            .zip(weights)
            .filter(|(_, w)| **w > 0.0)
            .map(|(c, w)| (c.mv, w / sum))
            .collect(),
    )
}

/// A book played by a rule: a [`BookSource`] with a [`MoveRule`], optionally
/// only up to a game ply (YaneuraOu's `BookMoves`).
pub struct RuledBook {
    source: Arc<dyn BookSource>,
    rule: MoveRule,
    max_ply: Option<u32>,
}

impl RuledBook {
    /// `source` played by `rule`, at every ply up to `max_ply` (the ply of the
    /// position's next move, 1 for the first; `None`: every ply).
    #[must_use]
    pub fn new(source: Arc<dyn BookSource>, rule: MoveRule, max_ply: Option<u32>) -> Self {
        Self {
            source,
            rule,
            max_ply,
        }
    }

    /// The book's moves of a position.
    #[must_use]
    pub fn source(&self) -> &dyn BookSource {
        self.source.as_ref()
    }
}

impl BookPolicy for RuledBook {
    fn probabilities(&self, position: &Position) -> Option<Vec<(Move, f64)>> {
        if self.max_ply.is_some_and(|max| position.ply() > max) {
            return None;
        }
        let candidates = self.source.candidates(position)?;
        let results = match self.rule {
            MoveRule::Results { .. } => self.source.move_results(position, &candidates),
            _ => None,
        };
        self.rule.probabilities_with_results(
            &candidates,
            results.as_deref(),
            position.side_to_move(),
        )
    }

    fn describe(&self) -> String {
        let plies = self
            .max_ply
            .map_or_else(String::new, |p| format!(", to ply {p}"));
        format!(
            "{}, moves by {}{plies}",
            self.source.describe(),
            self.rule.describe()
        )
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
    /// number: the best moves, sharing equally).
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

impl BookPolicy for SoftmaxPolicy {
    fn probabilities(&self, position: &Position) -> Option<Vec<(Move, f64)>> {
        let candidates = self.book.candidates(position)?;
        MoveRule::Softmax {
            temperature: self.temperature,
        }
        .probabilities(&candidates, position.side_to_move())
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
/// opening a self-play game starts from when the same book plays both sides.
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

    /// A thought node of `pos` reached by `origin`, with `values`.
    fn node(pos: &Position, origin: Origin, ply: u16, values: Vec<i16>) -> ThoughtNode {
        ThoughtNode {
            key: pos.key(),
            origin,
            ply,
            values,
            depths: None,
            evaluator: 0,
            timestamp: 0,
        }
    }

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
        book.insert(&node(
            &twin,
            Origin::Sfen(twin.to_sfen_without_ply()),
            1,
            values,
        ))
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

    /// The start and the position after 7g7f are thought. At the start 7g7f is
    /// worth 10 as stored, and the thought reply's best (its first move) 0:
    /// backed up, 7g7f is worth 0, below 2g2f's stored 5. A discount of 6
    /// counts the leaves 6 lower: 2g2f -1, the reply's best -6, so 7g7f +6 leads.
    #[test]
    fn a_leaf_discount_turns_the_best_move_of_a_store_as_an_export_would() {
        let start = Position::startpos();
        let moves = start.legal_moves();
        let index = |usi: &str| moves.iter().position(|m| m.to_string() == usi).unwrap();
        let mut values = vec![-50; moves.len()];
        values[index("7g7f")] = 10;
        values[index("2g2f")] = 5;
        let mut book = Book::new();
        let root = book
            .insert(&node(
                &start,
                Origin::Sfen(start.to_sfen_without_ply()),
                1,
                values,
            ))
            .unwrap();
        let mut after = start.clone();
        let mv = after.parse_move("7g7f").unwrap();
        after.do_move(mv);
        let mut replies = vec![-50; after.legal_move_count()];
        replies[0] = 0;
        book.insert(&node(
            &after,
            Origin::Child { parent: root, mv },
            2,
            replies,
        ))
        .unwrap();
        let best = |cp: i16| {
            let analysed = AnalysedBook::with_leaf_discount(book.clone(), cp).unwrap();
            let lines = analysed.lines(&start).unwrap().unwrap();
            (lines[0].mv.to_string(), lines[0].value)
        };
        assert_eq!(best(0), ("2g2f".to_owned(), 5));
        assert_eq!(best(6), ("7g7f".to_owned(), 6));
    }
}
