//! Writing the analysed book as a YaneuraOu DB2016 file.

use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use rayon::prelude::*;
use stera_formats::db2016::{
    BookMove, MoveOrder, OrderedWriter, WriteOptions, WriteSummary, format_move_line,
};
use stera_rules::{Move, Position};

use super::graph::{clamp_stored, node_moves};
use super::{
    BookGraph, NdfWeights, NodeExtras, Progress, SoftmaxValues, Solution, SolveStats,
    TeraShockError, compare_lines, softmax_policy, solve,
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
    /// How values are backed up from the leaves toward the roots.
    pub backup: Backup,
    /// What the `count` field of each move carries.
    pub weights: Weights,
    /// Temperature in centipawns of the softmax backup and policy weights.
    pub temperature: f64,
}

/// How the export backs values up (not for raw exports).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Backup {
    /// The tera-shock minimax: a position is worth its best move.
    #[default]
    Minimax,
    /// MC Softmax: a position is worth `Σ π(a) q(a)`, `π ∝ exp(q / T)`
    /// ([`SoftmaxValues`]); depths stay the best line's.
    Softmax,
}

/// What the DB2016 `count` field carries.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Weights {
    /// 1 on every move (YaneuraOu then weighs by nothing but the values).
    #[default]
    One,
    /// The softmax policy of the written values at the export's temperature,
    /// scaled so that a position's counts sum to [`COUNT_SCALE`] (0 allowed):
    /// YaneuraOu with `ConsiderBookMoveCount` plays moves in that proportion.
    Policy,
    /// NineDayFever probabilities from the game results per position
    /// ([`NdfWeights`], needs [`NodeExtras::scan_games`]); positions and moves
    /// without results keep the policy of [`Weights::Policy`]. Same scale.
    Ndf,
}

/// The sum of a position's counts with [`Weights::Policy`].
pub const COUNT_SCALE: u64 = 10_000;

/// Integer counts of `probabilities` that sum to exactly [`COUNT_SCALE`]
/// (largest remainders get the rounding; ties to the earlier move).
///
/// ```
/// use stera_book::terashock::policy_counts;
/// assert_eq!(policy_counts(&[0.5, 0.25, 0.25]), [5000, 2500, 2500]);
/// assert_eq!(policy_counts(&[1.0 / 3.0; 3]), [3334, 3333, 3333]);
/// assert_eq!(policy_counts(&[1.0, 0.0]), [10000, 0]);
/// ```
#[must_use]
pub fn policy_counts(probabilities: &[f64]) -> Vec<u64> {
    let scale = COUNT_SCALE as f64;
    let mut counts: Vec<u64> = probabilities
        .iter()
        .map(|p| (p.max(0.0) * scale).floor() as u64)
        .collect();
    let given: u64 = counts.iter().sum();
    let mut order: Vec<usize> = (0..counts.len()).collect();
    order.sort_by(|&a, &b| {
        let ra = probabilities[a].max(0.0) * scale - counts[a] as f64;
        let rb = probabilities[b].max(0.0) * scale - counts[b] as f64;
        rb.total_cmp(&ra).then(a.cmp(&b))
    });
    for &i in order
        .iter()
        .take(COUNT_SCALE.saturating_sub(given) as usize)
    {
        counts[i] += 1;
    }
    counts
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
    /// Cyclic nodes whose softmax value was still moving when the backup stopped.
    pub softmax_unconverged: usize,
    /// Positions whose counts come from game results (`Weights::Ndf`).
    pub ndf_positions: usize,
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
    node_moves(book, id, pos, moves)?;
    let mut lines = Vec::with_capacity(moves.len());
    lines_into(book, graph, solution, None, extras, id, moves, &mut lines);
    Ok(lines)
}

/// [`node_lines`] for a node whose legal moves (canonical order, one per
/// stored value) are known, into a reused vector.
#[allow(clippy::too_many_arguments)]
fn lines_into(
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
                if let Some(sm) = softmax {
                    line.value = -sm.rounded(e.child);
                }
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
        // With softmax values the minimax best may no longer tie for the top.
        if let Some(best) = s.best_index(id)
            && let Some(at) = lines.iter().position(|l| l.index == best)
            && (softmax.is_none() || lines[at].value == lines[0].value)
        {
            lines[..=at].rotate_right(1);
        }
    } else {
        lines.sort_by(|a, b| b.value.cmp(&a.value).then(a.index.cmp(&b.index)));
    }
}

/// Analyses `book` and writes it to `path` as a DB2016 book: every thought
/// position, its moves best first with propagated value and depth and the
/// child's best move as ponder (see [`ExportOptions`] for `shrink` and `raw`).
/// Entries carry the stored plies from `extras` (from [`NodeExtras::scan`]);
/// a raw export also writes the stored search depths when `extras` has them.
/// The file appears under `path` only when complete (atomic rename).
///
/// One walk over the positions builds the graph and keeps each node's SFEN
/// and legal moves (about 100 bytes per node); the entries are then sorted by
/// SFEN and formatted in parallel, straight into the file in order. The bytes
/// do not depend on the number of threads.
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
    export_in_chunks(
        book,
        extras,
        path,
        options,
        progress,
        FORMAT_CHUNK,
        FORMAT_WINDOW,
    )
}

/// [`export_db2016`] with the formatting task and window sizes as parameters
/// (tests check that they do not change the bytes).
pub(crate) fn export_in_chunks(
    book: &Book,
    extras: &NodeExtras,
    path: &Path,
    options: &ExportOptions,
    progress: Progress<'_>,
    chunk: usize,
    window: usize,
) -> Result<ExportSummary, TeraShockError> {
    extras.check_covers(book)?;
    let mut summary = ExportSummary {
        nodes: book.len(),
        ..ExportSummary::default()
    };
    let t = Instant::now();
    let mut table = NodeTable::with_capacity(book.len(), book.value_count());
    let mut sfen = String::with_capacity(160);
    let graph = BookGraph::build_visiting(
        book,
        Some(&extras.plies),
        &mut |_, done, total| progress("graph", done, total),
        &mut |id, pos, moves| {
            entry_sfen(pos, extras.plies[id.index()], &mut sfen);
            table.add(id, &sfen, moves)
        },
    )?;
    summary.edges = graph.edge_count();
    summary.leaf_edges = graph.leaf_edge_count();
    summary.graph_time = t.elapsed();
    let t = Instant::now();
    let solution = (!options.raw).then(|| solve(&graph));
    if let Some(s) = &solution {
        summary.solve = s.stats();
    }
    let softmax = match (&solution, options.backup) {
        (Some(s), Backup::Softmax) => {
            let sm = SoftmaxValues::solve(book, &graph, s, options.temperature);
            summary.softmax_unconverged = sm.unconverged;
            Some(sm)
        }
        _ => None,
    };
    let ndf = match (&solution, options.weights) {
        (Some(s), Weights::Ndf) => {
            let w = NdfWeights::solve(
                book,
                &graph,
                s,
                softmax.as_ref(),
                &extras.games,
                options.temperature,
            );
            summary.ndf_positions = w.len();
            Some(w)
        }
        _ => None,
    };
    summary.solve_time = t.elapsed();

    let t = Instant::now();
    let order = table.sorted_ids();
    let mut writer = OrderedWriter::create(
        path,
        WriteOptions {
            move_order: MoveOrder::AsGiven,
        },
    )?;
    let context = FormatContext {
        book,
        graph: &graph,
        solution: solution.as_ref(),
        softmax: softmax.as_ref(),
        ndf: ndf.as_ref(),
        extras,
        table: &table,
        shrink: options.shrink,
        weights: options.weights,
        temperature: options.temperature,
    };
    let total = order.len() as u64;
    let mut done = 0u64;
    // Formatting is most of the work: threads format consecutive slices of a
    // window of entries, which is then written in order. A window bounds the
    // memory held by formatted text.
    for window in order.chunks(window.max(1)) {
        let texts: Vec<(Vec<u8>, u64, u64)> = window
            .par_chunks(chunk.max(1))
            .map(|chunk| context.format(chunk))
            .collect();
        for (text, entries, moves) in &texts {
            writer.write_formatted(text, *entries, *moves)?;
        }
        done += window.len() as u64;
        progress("write", done, total);
    }
    summary.written = writer.finish()?;
    summary.write_time = t.elapsed();
    Ok(summary)
}

/// Entries formatted per task, and per window written before the next one is
/// formatted (about 40 MB of text per window on a typical book).
const FORMAT_CHUNK: usize = 4096;
const FORMAT_WINDOW: usize = FORMAT_CHUNK * 16;

/// What the export keeps of each node from the walk: its SFEN (with the
/// stored ply) and its legal moves in canonical order.
struct NodeTable {
    sfen_start: Vec<u64>,
    sfen_len: Vec<u16>,
    sfens: Vec<u8>,
    move_start: Vec<u64>,
    move_len: Vec<u16>,
    moves: Vec<u16>,
}

impl NodeTable {
    fn with_capacity(nodes: usize, moves: usize) -> Self {
        Self {
            sfen_start: vec![0; nodes],
            sfen_len: vec![0; nodes],
            sfens: Vec::with_capacity(nodes * 80),
            move_start: vec![0; nodes],
            move_len: vec![0; nodes],
            moves: Vec::with_capacity(moves),
        }
    }

    fn add(&mut self, id: NodeId, sfen: &str, moves: &[Move]) -> Result<(), TeraShockError> {
        let i = id.index();
        let too_long = || TeraShockError::Invalid(format!("node {id}: SFEN or move list too long"));
        self.sfen_start[i] = self.sfens.len() as u64;
        self.sfen_len[i] = u16::try_from(sfen.len()).map_err(|_| too_long())?;
        self.sfens.extend_from_slice(sfen.as_bytes());
        self.move_start[i] = self.moves.len() as u64;
        self.move_len[i] = u16::try_from(moves.len()).map_err(|_| too_long())?;
        self.moves.extend(moves.iter().map(|m| m.raw()));
        Ok(())
    }

    fn sfen(&self, i: usize) -> &[u8] {
        let start = usize::try_from(self.sfen_start[i]).unwrap_or(usize::MAX);
        self.sfens
            .get(start..start.saturating_add(usize::from(self.sfen_len[i])))
            .unwrap_or_default()
    }

    fn moves_into(&self, i: usize, out: &mut Vec<Move>) {
        let start = usize::try_from(self.move_start[i]).unwrap_or(usize::MAX);
        let raws = self
            .moves
            .get(start..start.saturating_add(usize::from(self.move_len[i])))
            .unwrap_or_default();
        out.clear();
        // The raws were taken from generated legal moves, so every one decodes.
        out.extend(raws.iter().filter_map(|&r| Move::from_raw(r)));
    }

    /// Node ids in ascending SFEN byte order (the book file's order). SFENs are
    /// distinct (one node per position), so the order is total.
    fn sorted_ids(&self) -> Vec<u32> {
        let n = u32::try_from(self.sfen_len.len()).unwrap_or(u32::MAX);
        let mut ids: Vec<u32> = (0..n).collect();
        ids.par_sort_unstable_by(|&a, &b| self.sfen(a as usize).cmp(self.sfen(b as usize)));
        ids
    }
}

/// Depth written for lines that never end (cycles): YaneuraOu's
/// `BOOK_DEPTH_MAX`, which its `peta_shock` writes for them.
pub const WRITTEN_DEPTH_MAX: u16 = 9999;

/// The move lines of one entry as written: `lines` best first (after any
/// shrink), with, for a propagated export, the conventions of YaneuraOu's
/// `peta_shock` output: depths capped at [`WRITTEN_DEPTH_MAX`] (an endless
/// line is written as 9999), and every move after the first whose value
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
/// ```
pub fn book_moves(lines: &[MoveLine], propagated: bool) -> impl Iterator<Item = BookMove> + '_ {
    let written_depth = move |d: u16| {
        if propagated {
            d.min(WRITTEN_DEPTH_MAX)
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

/// Everything a formatting thread reads.
struct FormatContext<'a> {
    book: &'a Book,
    graph: &'a BookGraph,
    solution: Option<&'a Solution>,
    softmax: Option<&'a SoftmaxValues>,
    ndf: Option<&'a NdfWeights>,
    extras: &'a NodeExtras,
    table: &'a NodeTable,
    shrink: bool,
    weights: Weights,
    temperature: f64,
}

impl FormatContext<'_> {
    /// The text of the entries `ids`, with their entry and move counts.
    fn format(&self, ids: &[u32]) -> (Vec<u8>, u64, u64) {
        let mut text = Vec::with_capacity(ids.len() * 600);
        let mut moves = Vec::with_capacity(600);
        let mut lines = Vec::with_capacity(600);
        let mut move_count = 0u64;
        for &id in ids {
            let i = id as usize;
            self.table.moves_into(i, &mut moves);
            lines_into(
                self.book,
                self.graph,
                self.solution,
                self.softmax,
                Some(self.extras),
                NodeId(id),
                &moves,
                &mut lines,
            );
            if self.shrink
                && let Some(best) = lines.first().map(|l| l.value)
            {
                lines.retain(|l| l.value == best);
            }
            text.extend_from_slice(b"sfen ");
            text.extend_from_slice(self.table.sfen(i));
            text.extend_from_slice(b"\r\n");
            let from_games = self.ndf.and_then(|w| w.of(NodeId(id)));
            let counts = match (self.weights, from_games) {
                (Weights::One, _) => Vec::new(),
                (Weights::Ndf, Some(w)) => {
                    // Canonical order to the lines' order; renormalised over the
                    // lines kept (--shrink keeps the best only).
                    let p: Vec<f64> = lines
                        .iter()
                        .map(|l| w.get(l.index).copied().unwrap_or(0.0))
                        .collect();
                    let sum: f64 = p.iter().sum();
                    if sum > 0.0 {
                        policy_counts(&p.iter().map(|v| v / sum).collect::<Vec<_>>())
                    } else {
                        let q: Vec<f64> = lines.iter().map(|l| f64::from(l.value)).collect();
                        policy_counts(&softmax_policy(&q, self.temperature))
                    }
                }
                (Weights::Policy | Weights::Ndf, _) => {
                    let q: Vec<f64> = lines.iter().map(|l| f64::from(l.value)).collect();
                    policy_counts(&softmax_policy(&q, self.temperature))
                }
            };
            for (i, mut m) in book_moves(&lines, self.solution.is_some()).enumerate() {
                if let Some(&c) = counts.get(i) {
                    m.count = c;
                }
                format_move_line(&mut text, &m);
            }
            move_count += lines.len() as u64;
        }
        (text, ids.len() as u64, move_count)
    }
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
