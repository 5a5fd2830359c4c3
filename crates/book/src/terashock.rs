//! The tera-shock export: a minimax over the whole book, done as retrograde
//! analysis, and the YaneuraOu DB2016 book written from it.
//!
//! Steps (the method's section 4):
//!
//! 1. [`BookGraph::build`] rebuilds every node's position by walking the origin
//!    tree from its SFEN roots, subtrees of similar sizes on every core, with one
//!    reused [`stera_rules::Position`] per subtree, and makes an edge for every
//!    legal move whose child is thought (whether or not the stored moves "know"
//!    it; a filter of the book's keys spares most look-ups); the other moves are
//!    leaf edges with their stored values.
//! 2. [`solve`] propagates values backwards: the acyclic part exactly in reverse
//!    topological order (move value = -(child value), depth = child depth + 1, leaf
//!    edges depth 0); positions on cycles start as draw (0) with infinite depth and
//!    are iterated to a fixed point; loops in which one side checks on every move
//!    are then scored for the checked side (±32000) and iterated again.
//!    Ties: value first; between equal values `>= 0` the shorter line wins, below
//!    0 the longer; then the canonical move order.
//! 3. [`export_db2016`] writes every thought position with all its moves best
//!    first (or only the best-valued ones, `shrink`; or the stored values without
//!    minimax, `raw`): the walk of step 1 also keeps each node's SFEN as a
//!    16-byte code that sorts like the text (`sfen_code`), so the entries are
//!    sorted by SFEN and formatted in parallel straight into the file, without a
//!    second walk or a sorting spill; the legal moves of each entry are
//!    generated again from its SFEN while it is formatted.
//!
//! The same book always gives the same bytes.
//!
//! ```
//! use stera_book::terashock::{BookGraph, NodeExtras, solve};
//! use stera_book::{Book, Origin, ThoughtNode};
//! use stera_rules::Position;
//! let pos = Position::startpos();
//! let mut book = Book::new();
//! let n = pos.legal_move_count();
//! let root = book.insert(&ThoughtNode {
//!     key: pos.key(),
//!     origin: Origin::Sfen(pos.to_sfen_without_ply()),
//!     ply: 1,
//!     values: (0..n).map(|i| i as i16).collect(),
//!     depths: None,
//!     evaluator: 0,
//!     timestamp: 0,
//! }).unwrap();
//! let graph = BookGraph::build(&book, &mut |_, _, _| {}).unwrap();
//! let solution = solve(&graph);
//! // No child is thought: the best stored value (the last move) is the root's value.
//! assert_eq!(solution.value(root), (n - 1) as i16);
//! assert_eq!(solution.depth(root), 0);
//! # let _ = NodeExtras::default();
//! ```

mod error;
mod export;
mod extras;
mod graph;
mod key_filter;
mod ndf;
mod sfen_code;
mod softmax;
mod solve;
mod walk;

pub use crate::softmax::softmax_policy;
pub use error::TeraShockError;
pub use export::{
    Backup, BookFormat, COUNT_SCALE, ExportOptions, ExportSummary, MoveLine, WRITTEN_DEPTH_MAX,
    WRITTEN_DEPTH_PERPETUAL_CHECK, WRITTEN_PLY_LIMIT, Weights, book_moves, export_book,
    export_db2016, node_lines, policy_counts,
};
pub use extras::NodeExtras;
pub use graph::{BookGraph, Edge, ExpansionDrop};
pub use ndf::{NdfWeights, WinRate, best_probabilities, cap_to_prior};
pub use softmax::{SoftmaxValues, softmax_mean};
pub use solve::{
    DEPTH_INFINITE, DEPTH_PERPETUAL_CHECK, Solution, SolveStats, compare_lines, deeper, solve,
};
pub use walk::walk_positions;

/// Progress reports of long phases: `(phase, done, total)`.
pub type Progress<'a> = &'a mut dyn FnMut(&'static str, u64, u64);

#[cfg(test)]
mod tests;
