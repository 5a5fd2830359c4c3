//! Where a game leaves the book under test: a book's value shows only while
//! games stay in it, so a match reports how many book moves each side played
//! and why the book side's book ended.
//!
//! The exit is the first position after the opening where the book side is to
//! move and plays an engine move. Its cause:
//! * [`Exit::Opening`]: the game's start position (or the position after the
//!   opponent's first move from it, when the start is not in the book either);
//! * [`Exit::Reply`]: the opponent's move came from a position the book holds
//!   (its move has a value there, `rank` among the book's moves, 0 = the book's
//!   best reply) but leads to a position the book does not hold;
//! * [`Exit::OwnLeaf`]: the book side's own book move led to a position the book
//!   does not hold (a leaf of the book), so the opponent moved outside it;
//! * [`Exit::RuleAdmitsNone`]: the book holds the position, but its rule admits
//!   none of the moves (e.g. YaneuraOu's value limits);
//! * [`Exit::Stayed`]: the game ended with the book side still in its book.

use anyhow::{Result, bail};
use stera_games::{Game, MoveSource, RuledBook};
use stera_rules::{Color, Move, Position};

/// Why the book side's book ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Opening,
    Reply { rank: usize },
    OwnLeaf,
    RuleAdmitsNone,
    Stayed,
}

/// One game's use of the books.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Coverage {
    /// Book moves the book under test played.
    pub own_book_plies: u32,
    /// Book moves the other side played (0 without a book).
    pub other_book_plies: u32,
    pub exit: Exit,
    /// Plies after the opening before the exit move (the game's length after the
    /// opening when it stayed in the book).
    pub exit_ply: u32,
}

impl Coverage {
    /// The coverage of `game`, in which the book under test (`book`) played
    /// `own_color`.
    ///
    /// # Errors
    /// A game whose moves do not replay (a bug: the referee checked them).
    pub fn of(game: &Game, own_color: Color, book: &RuledBook) -> Result<Self> {
        let Ok(mut pos) = Position::from_sfen(&game.start_sfen) else {
            bail!("the game's start `{}` does not parse", game.start_sfen);
        };
        let opening = game
            .moves
            .iter()
            .take_while(|m| m.source == MoveSource::Opening)
            .count();
        let mut own_book_plies = 0;
        let mut other_book_plies = 0;
        let mut exit = None;
        // The position before the previous move, and who moved there.
        let mut before_previous: Option<Position> = None;
        for (i, m) in game.moves.iter().enumerate() {
            let mover = pos.side_to_move();
            if i >= opening {
                match (m.source, mover == own_color) {
                    (MoveSource::Book, true) => own_book_plies += 1,
                    (MoveSource::Book, false) => other_book_plies += 1,
                    (MoveSource::Engine, true) if exit.is_none() => {
                        let previous = i
                            .checked_sub(1)
                            .and_then(|p| Some((before_previous.as_ref()?, game.moves[p].mv)));
                        exit = Some((
                            cause(&pos, previous, i, opening, book),
                            (i - opening) as u32,
                        ));
                    }
                    _ => {}
                }
            }
            if !pos.is_legal(m.mv) {
                bail!("move {} of the game is not legal", i + 1);
            }
            before_previous = Some(pos.clone());
            pos.do_move(m.mv);
        }
        let (exit, exit_ply) = exit.unwrap_or((Exit::Stayed, (game.moves.len() - opening) as u32));
        Ok(Self {
            own_book_plies,
            other_book_plies,
            exit,
            exit_ply,
        })
    }
}

/// Why the book side had no book move at `pos` (move `index` of the game), given
/// the position before the previous move and that move.
fn cause(
    pos: &Position,
    previous: Option<(&Position, Move)>,
    index: usize,
    opening: usize,
    book: &RuledBook,
) -> Exit {
    if book.source().candidates(pos).is_some() {
        // Held, yet no book move: the rule admitted none (or the ply limit).
        return Exit::RuleAdmitsNone;
    }
    let Some((before, previous)) = previous.filter(|_| index > opening) else {
        return Exit::Opening;
    };
    match book.source().candidates(before) {
        Some(candidates) => {
            let rank = candidates
                .iter()
                .position(|c| c.mv == previous)
                .unwrap_or(candidates.len());
            Exit::Reply { rank }
        }
        // The opponent moved from outside the book: the book side's own move
        // (a book move, or the start) led there.
        None if index >= opening + 2 => Exit::OwnLeaf,
        None => Exit::Opening,
    }
}

/// Coverage of many games, for the report.
#[derive(Debug, Clone, Default)]
pub struct CoverageTally {
    pub games: u64,
    pub own_book_plies: u64,
    pub other_book_plies: u64,
    /// Games in which the book under test played no book move.
    pub own_none: u64,
    /// Exits by cause: opening, reply, own-leaf, rule-admits-none, stayed.
    pub exits: [u64; 5],
    /// Reply exits by the rank of the reply among the book's moves: best, 2nd,
    /// 3rd, 4th-5th, 6th or lower.
    pub reply_ranks: [u64; 5],
    /// Exits by plies after the opening: 0-1, 2-3, 4-7, 8-15, 16 or more.
    pub exit_plies: [u64; 5],
}

/// Names of [`CoverageTally::exits`].
pub const EXIT_NAMES: [&str; 5] = ["opening", "reply", "own-leaf", "rule-admits-none", "stayed"];
/// Names of [`CoverageTally::reply_ranks`].
pub const RANK_NAMES: [&str; 5] = ["best", "2nd", "3rd", "4th-5th", "6th+"];
/// Names of [`CoverageTally::exit_plies`].
pub const PLY_NAMES: [&str; 5] = ["0-1", "2-3", "4-7", "8-15", "16+"];

impl CoverageTally {
    pub fn add(&mut self, c: &Coverage) {
        self.games += 1;
        self.own_book_plies += u64::from(c.own_book_plies);
        self.other_book_plies += u64::from(c.other_book_plies);
        if c.own_book_plies == 0 {
            self.own_none += 1;
        }
        let exit = match c.exit {
            Exit::Opening => 0,
            Exit::Reply { rank } => {
                let bucket = match rank {
                    0 => 0,
                    1 => 1,
                    2 => 2,
                    3 | 4 => 3,
                    _ => 4,
                };
                self.reply_ranks[bucket] += 1;
                1
            }
            Exit::OwnLeaf => 2,
            Exit::RuleAdmitsNone => 3,
            Exit::Stayed => 4,
        };
        self.exits[exit] += 1;
        let ply = match c.exit_ply {
            0 | 1 => 0,
            2 | 3 => 1,
            4..=7 => 2,
            8..=15 => 3,
            _ => 4,
        };
        self.exit_plies[ply] += 1;
    }

    /// Mean book moves per game of the book under test.
    pub fn own_mean(&self) -> f64 {
        if self.games == 0 {
            0.0
        } else {
            self.own_book_plies as f64 / self.games as f64
        }
    }

    /// Mean book moves per game of the other side.
    pub fn other_mean(&self) -> f64 {
        if self.games == 0 {
            0.0
        } else {
            self.other_book_plies as f64 / self.games as f64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::sync::Arc;
    use stera_games::{
        BookSource, Candidate, GameMove, GameResult, MoveRule, Outcome, Termination,
    };

    /// A book of given positions (by move line from the start) with their moves.
    struct LineBook(HashMap<u128, Vec<Candidate>>);

    impl LineBook {
        fn new(entries: &[(&str, &[&str])]) -> Self {
            let mut map = HashMap::new();
            for (line, moves) in entries {
                let pos = Position::from_position_command(line).unwrap();
                let candidates = moves
                    .iter()
                    .map(|m| Candidate {
                        mv: m.parse().unwrap(),
                        value: 0,
                        count: 1,
                    })
                    .collect();
                map.insert(pos.key().0, candidates);
            }
            Self(map)
        }
    }

    impl BookSource for LineBook {
        fn candidates(&self, position: &Position) -> Option<Vec<Candidate>> {
            self.0.get(&position.key().0).cloned()
        }
        fn has_counts(&self) -> bool {
            false
        }
        fn describe(&self) -> String {
            "lines".to_owned()
        }
    }

    fn game(moves: &[(&str, MoveSource)]) -> Game {
        Game {
            start_sfen: stera_rules::STARTPOS_SFEN.to_owned(),
            moves: moves
                .iter()
                .map(|(m, s)| GameMove::new(m.parse().unwrap(), *s))
                .collect(),
            result: GameResult {
                outcome: Outcome::Draw,
                termination: Termination::PlyLimit,
            },
        }
    }

    fn ruled(book: LineBook) -> RuledBook {
        RuledBook::new(Arc::new(book), MoveRule::Best, None)
    }

    use MoveSource::{Book, Engine, Opening};

    #[test]
    fn a_reply_the_book_analysed_but_did_not_expand_is_a_reply_exit_with_its_rank() {
        // Black's book: start -> 7g7f; after 7g7f it knows 3c3d and 8c8d (not
        // expanded); White replies 8c8d (the book's 2nd move): Black is out.
        let book = ruled(LineBook::new(&[
            ("startpos", &["7g7f"]),
            ("startpos moves 7g7f", &["3c3d", "8c8d"]),
        ]));
        let g = game(&[("7g7f", Book), ("8c8d", Engine), ("2g2f", Engine)]);
        let c = Coverage::of(&g, Color::Black, &book).unwrap();
        assert_eq!(c.own_book_plies, 1);
        assert_eq!(c.exit, Exit::Reply { rank: 1 });
        assert_eq!(c.exit_ply, 2);
    }

    #[test]
    fn a_book_move_into_a_leaf_is_an_own_leaf_exit_and_no_book_at_all_is_an_opening_exit() {
        let book = ruled(LineBook::new(&[("startpos", &["7g7f"])]));
        let g = game(&[("7g7f", Book), ("3c3d", Engine), ("2g2f", Engine)]);
        let c = Coverage::of(&g, Color::Black, &book).unwrap();
        assert_eq!((c.exit, c.exit_ply), (Exit::OwnLeaf, 2));
        // As White, after an opening move the start of play is out of book.
        let g = game(&[("7g7f", Opening), ("3c3d", Engine)]);
        let c = Coverage::of(&g, Color::White, &book).unwrap();
        assert_eq!(
            (c.exit, c.exit_ply, c.own_book_plies),
            (Exit::Opening, 0, 0)
        );
        // White's first move comes after Black's engine move from a position the
        // book holds: a reply exit, rank 1 (7g7f is the only book move).
        let g = game(&[("2g2f", Engine), ("3c3d", Engine)]);
        let c = Coverage::of(&g, Color::White, &book).unwrap();
        assert_eq!(c.exit, Exit::Reply { rank: 1 });
    }

    #[test]
    fn tallies_bucket_exits_ranks_and_plies() {
        let mut t = CoverageTally::default();
        for (exit, ply, own) in [
            (Exit::Reply { rank: 0 }, 1, 1),
            (Exit::Reply { rank: 4 }, 9, 3),
            (Exit::Opening, 0, 0),
            (Exit::Stayed, 40, 20),
        ] {
            t.add(&Coverage {
                own_book_plies: own,
                other_book_plies: 0,
                exit,
                exit_ply: ply,
            });
        }
        assert_eq!(t.exits, [1, 2, 0, 0, 1]);
        assert_eq!(t.reply_ranks, [1, 0, 0, 1, 0]);
        assert_eq!(t.exit_plies, [2, 0, 0, 1, 1]);
        assert_eq!(t.own_none, 1);
        assert!((t.own_mean() - 6.0).abs() < 1e-12);
    }
}
