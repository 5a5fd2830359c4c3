//! Unit tests of the retrograde analysis on hand-built books.
//!
//! Here the books they are built on (`Builder`, the sample books, a perpetual
//! check) and what several test modules share; beside them: `retrograde`
//! (minimax values against a plain recursion), `cycles` (repetitions and
//! perpetual checks), `export_file` (the file's bytes), `softmax` and `ndf` (the
//! other backups and their weights).

use std::cmp::Ordering;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use stera_rules::{Key, Move, Position};

use super::*;
use crate::{Book, NodeId, Origin, ThoughtNode};

mod cycles;
mod export_file;
mod ndf;
mod retrograde;
mod softmax;

/// Builds books line by line: every position along a line becomes a node (once),
/// its values from `value(position, move index)`.
type ValueFn = Box<dyn Fn(&Position, usize) -> i16>;

struct Builder {
    book: Book,
    value: ValueFn,
}

impl Builder {
    fn new(value: impl Fn(&Position, usize) -> i16 + 'static) -> Self {
        Self {
            book: Book::new(),
            value: Box::new(value),
        }
    }

    fn node(&self, pos: &Position, origin: Origin) -> ThoughtNode {
        let n = pos.legal_move_count();
        ThoughtNode {
            key: pos.key(),
            origin,
            ply: 1,
            values: (0..n).map(|i| (self.value)(pos, i)).collect(),
            depths: None,
            evaluator: 0,
            timestamp: 0,
        }
    }

    /// Adds the start position and every position after each move of `line`.
    fn line(&mut self, start: &str, line: &[&str]) -> Vec<NodeId> {
        let mut pos = Position::from_sfen(start).unwrap();
        let node = self.node(&pos, Origin::Sfen(pos.to_sfen_without_ply()));
        let mut ids = vec![self.book.insert(&node).unwrap()];
        for usi in line {
            let mv = pos.parse_move(usi).unwrap();
            let parent = *ids.last().unwrap();
            pos.do_move(mv);
            let node = self.node(&pos, Origin::Child { parent, mv });
            ids.push(self.book.insert(&node).unwrap());
        }
        ids
    }

    /// Adds `lines` random lines from the start position, each of 1 to
    /// `max_plies - 1` moves chosen among the first `choices` legal moves (few
    /// choices per ply make many transpositions).
    fn random_lines(&mut self, rng: &mut StdRng, lines: usize, max_plies: usize, choices: usize) {
        let start = stera_rules::STARTPOS_SFEN;
        for _ in 0..lines {
            let mut pos = Position::from_sfen(start).unwrap();
            let mut line = Vec::new();
            for _ in 0..rng.random_range(1..max_plies) {
                let moves = pos.legal_moves();
                let mv = moves[rng.random_range(0..moves.len().min(choices))];
                line.push(mv.to_string());
                pos.do_move(mv);
            }
            let refs: Vec<&str> = line.iter().map(String::as_str).collect();
            self.line(start, &refs);
        }
    }
}

fn analyse(book: &Book) -> (BookGraph, Solution) {
    let graph = BookGraph::build(book, &mut |_, _, _| {}).unwrap();
    let solution = solve(&graph);
    (graph, solution)
}

/// A pseudo-random stored value from the position key and move index.
fn noise(pos: &Position, i: usize) -> i16 {
    let k = pos.key().0 ^ (i as u128).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    let h = (k ^ (k >> 61) ^ (k >> 17)) as u64;
    i16::try_from(h % 801).unwrap() - 400
}

/// The colour-flipped twin of a position that is not thought, if the twin is:
/// built from flipped SFEN text, not with the key arithmetic the graph uses.
fn thought_twin(book: &Book, pos: &Position) -> Option<Position> {
    let twin = Position::from_sfen(&pos.flipped().to_sfen()).unwrap();
    book.contains(twin.key()).then_some(twin)
}

/// White king on 1a, black rook checks from the 1st and 2nd file in turn.
const PERPETUAL: &str = "8k/9/9/9/9/9/9/9/K6R1 b - 1";
const PERPETUAL_LINE: [&str; 4] = ["2i1i", "1a2a", "1i2i", "2a1a"];

/// Writes `book` with `options` (plies 0) and returns the file's bytes.
fn export_bytes(
    book: &Book,
    options: &ExportOptions,
    dir: &std::path::Path,
    name: &str,
) -> Vec<u8> {
    let mut extras = NodeExtras::default();
    extras.plies = vec![0; book.len()];
    extras.timestamps = vec![0; book.len()];
    let path = dir.join(name);
    export_db2016(book, &extras, &path, options, &mut |_, _, _| {}).unwrap();
    std::fs::read(&path).unwrap()
}

/// Books with transpositions, a repetition cycle and a perpetual check.
fn sample_books() -> Vec<(&'static str, Book)> {
    let mut rng = StdRng::seed_from_u64(5);
    let mut random = Builder::new(noise);
    random.random_lines(&mut rng, 150, 9, 5);
    let mut shuffle = Builder::new(noise);
    shuffle.line(
        stera_rules::STARTPOS_SFEN,
        &["2h3h", "8b7b", "3h2h", "7b8b"],
    );
    shuffle.line(stera_rules::STARTPOS_SFEN, &["7g7f", "3c3d", "2g2f"]);
    let mut perpetual = Builder::new(|_, _| -100);
    perpetual.line(PERPETUAL, &PERPETUAL_LINE);
    vec![
        ("random", random.book),
        ("shuffle", shuffle.book),
        ("perpetual", perpetual.book),
    ]
}

fn counts(wins: u32, draws: u32, losses: u32) -> crate::GameCounts {
    crate::GameCounts {
        wins,
        draws,
        losses,
    }
}
