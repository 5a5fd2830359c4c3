//! Writing the analysed book as a YaneuraOu DB2016 file.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use stera_formats::db2016::{BookMove, SpoolingWriter, WriteSummary};
use stera_rules::{Move, Position};

use super::graph::{clamp_stored, node_moves};
use super::{
    BookGraph, NodeExtras, Progress, Solution, SolveStats, TeraShockError, compare_lines, solve,
    walk_positions,
};
use crate::{Book, NodeId};

/// What to write.
#[derive(Debug, Clone, Default)]
pub struct ExportOptions {
    /// Keep only the moves whose value equals the best move's.
    pub shrink: bool,
    /// Write the stored values (and search depths) without minimax: a book that
    /// an import reads back into the same nodes.
    pub raw: bool,
    /// Where the writer's spool file (as big as the book) goes; default: the
    /// output's directory.
    pub spool_dir: Option<PathBuf>,
}

/// What an export did.
#[derive(Debug, Clone, Default)]
pub struct ExportSummary {
    /// Thought positions in the book.
    pub nodes: usize,
    /// Edges to thought children.
    pub edges: usize,
    /// Moves whose child is not thought.
    pub leaf_edges: u64,
    /// The analysis (default for a raw export).
    pub solve: SolveStats,
    /// What the writer wrote.
    pub written: WriteSummary,
    /// Time building the graph, solving, writing.
    pub graph_time: Duration,
    /// Time of the retrograde analysis.
    pub solve_time: Duration,
    /// Time of the walk that writes entries and of the final sort/merge.
    pub write_time: Duration,
}

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
    let values = node_moves(book, id, pos, moves)?;
    let depths = extras.and_then(|e| e.depths(id));
    let mut edges = graph.edges(id).peekable();
    let mut lines = Vec::with_capacity(moves.len());
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
                line.ponder = s.best_move(e.child);
            }
            (Some(_), None) => {}
            (None, _) => {
                line.depth = depths
                    .and_then(|d| d.get(index))
                    .map_or(0, |&d| u16::from(d));
            }
        }
        lines.push(line);
    }
    if let Some(s) = solution {
        lines.sort_by(|a, b| {
            compare_lines((b.value, b.depth), (a.value, a.depth)).then(a.index.cmp(&b.index))
        });
        // The analysis' best move leads (they differ only where a loop makes a
        // losing line look longer than the one the analysis settled on).
        if let Some(best) = s.best_index(id)
            && let Some(at) = lines.iter().position(|l| l.index == best)
        {
            lines[..=at].rotate_right(1);
        }
    } else {
        lines.sort_by(|a, b| b.value.cmp(&a.value).then(a.index.cmp(&b.index)));
    }
    Ok(lines)
}

/// Analyses `book` and writes it to `path` as a DB2016 book: every thought
/// position, its moves best first with propagated value and depth and the
/// child's best move as ponder (see [`ExportOptions`] for `shrink` and `raw`).
/// Entries carry the stored plies from `extras` (from [`NodeExtras::scan`]);
/// a raw export also writes the stored search depths when `extras` has them.
/// The file appears under `path` only when complete (atomic rename).
///
/// This only reads the book, so a running generation can export from its
/// in-memory book (while no node is being added to it).
///
/// # Errors
/// A damaged book ([`BookError::Corrupt`]), extras of another book, or I/O
/// errors writing the file.
pub fn export_db2016(
    book: &Book,
    extras: &NodeExtras,
    path: &Path,
    options: &ExportOptions,
    progress: Progress<'_>,
) -> Result<ExportSummary, TeraShockError> {
    extras.check_covers(book)?;
    let mut summary = ExportSummary {
        nodes: book.len(),
        ..ExportSummary::default()
    };
    let t = Instant::now();
    let graph = BookGraph::build(book, &mut |_, done, total| progress("graph", done, total))?;
    summary.edges = graph.edge_count();
    summary.leaf_edges = graph.leaf_edge_count();
    summary.graph_time = t.elapsed();
    let t = Instant::now();
    let solution = (!options.raw).then(|| solve(&graph));
    if let Some(s) = &solution {
        summary.solve = s.stats();
    }
    summary.solve_time = t.elapsed();

    let t = Instant::now();
    let mut writer = SpoolingWriter::create(path, options.spool_dir.as_deref())?;
    let mut moves = Vec::with_capacity(600);
    let mut book_moves = Vec::with_capacity(600);
    let mut sfen = String::with_capacity(160);
    walk_positions(
        book,
        Some(&extras.plies),
        &mut |_, done, total| progress("write", done, total),
        &mut |id, pos| {
            let mut lines = node_lines(
                book,
                &graph,
                solution.as_ref(),
                Some(extras),
                id,
                pos,
                &mut moves,
            )?;
            if options.shrink
                && let Some(best) = lines.first().map(|l| l.value)
            {
                lines.retain(|l| l.value == best);
            }
            entry_sfen(pos, extras.plies[id.index()], &mut sfen);
            book_moves.clear();
            book_moves.extend(lines.iter().map(|l| BookMove {
                mv: l.mv,
                ponder: l.ponder,
                value: i32::from(l.value),
                depth: i32::from(l.depth),
                count: 1,
            }));
            writer.write_entry(&sfen, &book_moves)?;
            Ok(())
        },
    )?;
    summary.written = writer.finish(&mut |done, total| progress("sort", done, total))?;
    summary.write_time = t.elapsed();
    Ok(summary)
}

/// The canonical SFEN of `pos` with the stored ply (the walk's own ply when
/// the store has none).
fn entry_sfen(pos: &Position, ply: u16, out: &mut String) {
    out.clear();
    if ply == 0 || u32::from(ply) == pos.ply() {
        pos.write_sfen(out);
    } else {
        out.push_str(&pos.to_sfen_without_ply());
        // Writing to a String cannot fail.
        let _ = write!(out, " {ply}");
    }
}
