//! The move lines of one position as an export writes them: values, depths
//! and ponder moves from the analysis, and YaneuraOu's conventions for what
//! it writes.

use stera_formats::db2016::BookMove;
use stera_rules::{Move, Position};

use crate::terashock::graph::{clamp_stored, node_moves};
use crate::terashock::{
    BookGraph, DEPTH_PERPETUAL_CHECK, NodeExtras, SoftmaxValues, Solution, TeraShockError,
};
use crate::{Book, NodeId};

/// One move of a node as exported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MoveLine {
    /// The move.
    pub mv: Move,
    /// Its index in the node's canonical move order.
    pub index: usize,
    /// The expected reply: the best move of the child when it is thought.
    pub ponder: Option<Move>,
    /// Value for the side to move (propagated, or stored in a raw export).
    pub value: i16,
    /// Plies to the leaf of the line (propagated), or the stored search depth (raw).
    pub depth: u16,
    /// True when the move leads to a thought position.
    pub thought_child: bool,
}

/// The moves of node `id` (whose position is `pos`), best first: with
/// `solution`, propagated values (ties: [`compare_lines`], then canonical order);
/// without it, the stored values and depths (value, then canonical order).
///
/// # Errors
/// [`BookError::Corrupt`] when the node's value count differs from its legal moves.
pub fn node_lines(
    book: &Book,
    graph: &BookGraph,
    solution: Option<&Solution>,
    extras: Option<&NodeExtras>,
    id: NodeId,
    pos: &Position,
    moves: &mut Vec<Move>,
) -> Result<Vec<MoveLine>, TeraShockError> {
    node_moves(book, id, pos, moves)?;
    let mut lines = Vec::with_capacity(moves.len());
    lines_into(book, graph, solution, None, extras, id, moves, &mut lines);
    Ok(lines)
}

/// [`node_lines`] for a node whose legal moves (canonical order, one per
/// stored value) are known, into a reused vector.
#[allow(clippy::too_many_arguments)]
pub(super) fn lines_into(
    book: &Book,
    graph: &BookGraph,
    solution: Option<&Solution>,
    softmax: Option<&SoftmaxValues>,
    extras: Option<&NodeExtras>,
    id: NodeId,
    moves: &[Move],
    lines: &mut Vec<MoveLine>,
) {
    let values = book.values(id);
    lines.clear();
    let depths = extras.and_then(|e| e.depths(id));
    let mut edges = graph.edges(id).peekable();
    for (index, (&mv, &stored)) in moves.iter().zip(values).enumerate() {
        let edge = edges.next_if(|e| usize::from(e.index) == index);
        let mut line = MoveLine {
            mv,
            index,
            ponder: None,
            value: clamp_stored(stored),
            depth: 0,
            thought_child: edge.is_some(),
        };
        match (solution, edge) {
            (Some(s), Some(e)) => {
                (line.value, line.depth) = s.line_through(e.child);
                if s.in_check_loop(e.child) {
                    line.depth = DEPTH_PERPETUAL_CHECK;
                }
                if let Some(sm) = softmax {
                    line.value = -sm.rounded(e.child);
                }
                // The twin's best move is on the twin's board.
                line.ponder = s
                    .best_move(e.child)
                    .map(|m| if e.twin { m.flipped() } else { m });
            }
            (Some(_), None) => line.value = graph.leaf_value(stored),
            (None, _) => {
                line.depth = depths
                    .and_then(|d| d.get(index))
                    .map_or(0, |&d| u16::from(d));
            }
        }
        lines.push(line);
    }
    if let Some(s) = solution {
        lines.sort_unstable_by_key(|l| best_first_key(l.value, l.depth, l.index));
        // The analysis' best move leads (they differ only where a loop makes a
        // losing line look longer than the one the analysis settled on).
        // With softmax values the minimax best may no longer tie for the top.
        if let Some(best) = s.best_index(id)
            && let Some(at) = lines.iter().position(|l| l.index == best)
            && (softmax.is_none() || lines[at].value == lines[0].value)
            && (lines[at].depth != DEPTH_PERPETUAL_CHECK || lines[0].value != lines[at].value)
        {
            lines[..=at].rotate_right(1);
        }
    } else {
        lines.sort_unstable_by_key(|l| (std::cmp::Reverse(l.value), l.index));
    }
}

/// A key that sorts lines as [`crate::terashock::compare_lines`] does, best first, then by
/// canonical index: a total order (indices differ), so an unstable sort of
/// integers gives what the stable sort by `compare_lines` gave, at a fraction
/// of its cost (it was a tenth of the writing's CPU).
#[inline]
fn best_first_key(value: i16, depth: u16, index: usize) -> u64 {
    let worse_value = u64::from((i32::from(i16::MAX) - i32::from(value)).unsigned_abs());
    let perpetual = u64::from(depth == DEPTH_PERPETUAL_CHECK);
    // At or above 0 the shorter line is better, below 0 the longer.
    let worse_depth = u64::from(if value >= 0 { depth } else { u16::MAX - depth });
    worse_value << 34 | perpetual << 33 | worse_depth << 17 | index.min(0x1_ffff) as u64
}

/// Depth written for lines that never end (cycles): YaneuraOu's
/// `BOOK_DEPTH_MAX`, which its `peta_shock` writes for them.
pub const WRITTEN_DEPTH_MAX: u16 = 9999;

/// Depth written for a checker's move into a check loop
/// ([`DEPTH_PERPETUAL_CHECK`]): YaneuraOu's `BOOK_DEPTH_PERPUTUAL_CHECK`.
pub const WRITTEN_DEPTH_PERPETUAL_CHECK: u16 = 9997;

/// Longest line `peta_shock` takes for one that ends (`BOOK_MAX_PLY`): a
/// deeper best line is written as [`WRITTEN_DEPTH_MAX`].
pub const WRITTEN_PLY_LIMIT: u16 = 256;

/// The move lines of one entry as written: `lines` best first (after any
/// shrink), with, for a propagated export, the conventions of YaneuraOu's
/// `peta_shock` output: an endless line or one longer than
/// [`WRITTEN_PLY_LIMIT`] plies is written as 9999 ([`WRITTEN_DEPTH_MAX`]), a
/// checker's move into a check loop as 9997, and every move after the first whose value
/// equals the best's but whose depth differs written one point lower, so an
/// engine that picks the highest value takes the line the analysis chose
/// (the correction is written only, never propagated). A raw export writes
/// the stored values and depths unchanged.
///
/// ```
/// use stera_book::terashock::{MoveLine, book_moves, DEPTH_INFINITE};
/// let line = |usi: &str, index, value, depth| MoveLine {
///     mv: usi.parse().unwrap(), index, ponder: None, value, depth, thought_child: true,
/// };
/// let lines = [line("2g2f", 0, 50, 3), line("7g7f", 1, 50, 3), line("2h3h", 2, 50, DEPTH_INFINITE)];
/// let written: Vec<(i32, i32)> = book_moves(&lines, true).map(|m| (m.value, m.depth)).collect();
/// assert_eq!(written, [(50, 3), (50, 3), (49, 9999)]);
/// let lines = [line("2g2f", 0, 50, 300), line("7g7f", 1, 50, DEPTH_PERPETUAL_CHECK)];
/// let written: Vec<(i32, i32)> = book_moves(&lines, true).map(|m| (m.value, m.depth)).collect();
/// assert_eq!(written, [(50, 9999), (49, 9997)]);
/// # use stera_book::terashock::DEPTH_PERPETUAL_CHECK;
/// ```
pub fn book_moves(lines: &[MoveLine], propagated: bool) -> impl Iterator<Item = BookMove> + '_ {
    let written_depth = move |d: u16| {
        if !propagated {
            d
        } else if d == DEPTH_PERPETUAL_CHECK {
            WRITTEN_DEPTH_PERPETUAL_CHECK
        } else if d > WRITTEN_PLY_LIMIT {
            WRITTEN_DEPTH_MAX
        } else {
            d
        }
    };
    let best = lines.first().map(|l| (l.value, written_depth(l.depth)));
    lines.iter().enumerate().map(move |(i, l)| {
        let depth = written_depth(l.depth);
        let tied_other_depth =
            propagated && i > 0 && best.is_some_and(|(v, d)| l.value == v && depth != d);
        BookMove {
            mv: l.mv,
            ponder: l.ponder,
            value: i32::from(l.value) - i32::from(tied_other_depth),
            depth: i32::from(depth),
            count: 1,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::terashock::{DEPTH_INFINITE, compare_lines};

    #[test]
    fn the_sort_key_orders_lines_as_compare_lines_then_the_index() {
        let values = [
            i16::MIN,
            -32000,
            -31990,
            -1,
            0,
            1,
            5,
            31990,
            32000,
            i16::MAX,
        ];
        let depths = [
            0,
            1,
            2,
            255,
            9999,
            DEPTH_PERPETUAL_CHECK - 1,
            DEPTH_PERPETUAL_CHECK,
            DEPTH_INFINITE,
        ];
        let mut lines = Vec::new();
        for &v in &values {
            for &d in &depths {
                for index in [0usize, 1, 599] {
                    lines.push((v, d, index));
                }
            }
        }
        for &a in &lines {
            for &b in &lines {
                let want = compare_lines((b.0, b.1), (a.0, a.1)).then(a.2.cmp(&b.2));
                let got = best_first_key(a.0, a.1, a.2).cmp(&best_first_key(b.0, b.1, b.2));
                assert_eq!(got, want, "{a:?} against {b:?}");
            }
        }
    }
}
