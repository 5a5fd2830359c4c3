//! Writing the analysed book as a YaneuraOu DB2016 file.

use std::path::Path;
use std::time::{Duration, Instant};

use hashbrown::HashMap;
use rayon::prelude::*;
use stera_formats::db2016::{
    BookMove, MoveOrder, OrderedWriter, WriteOptions, WriteSummary, format_move_line,
};
use stera_formats::ybb::{PreparedEntry, YbbOptions, YbbWriter};
use stera_rules::backend::board as backend;
use stera_rules::{Move, Position};

use super::graph::{clamp_stored, node_moves};
use super::sfen_code::{Code, FIELDS, LITERAL, SfenCoder, SfenTable, slot_id};
use super::{
    BookGraph, DEPTH_PERPETUAL_CHECK, NdfWeights, NodeExtras, Progress, SoftmaxValues, Solution,
    SolveStats, TeraShockError, compare_lines, softmax_policy, solve,
};
use crate::results::results_value;
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
    /// Centipawns by which a move into an unthought position counts below its
    /// stored evaluation ([`BookGraph::set_leaf_discount`]; not for raw exports).
    pub leaf_discount: i16,
    /// Value every move with game results by them: `Some(prior games)` writes
    /// [`results_value`](crate::results::results_value) (the game score shrunk
    /// towards the move's value by that many pseudo-games, in centipawns) and
    /// orders the moves by it, so that an engine playing the best value plays
    /// the move the games chose (`book-tools match --book-moves results`). Reads
    /// the learning counters ([`NodeExtras::scan_learning`], the opponents the
    /// front end selected), never the self-play ones; moves without games keep
    /// their values.
    pub by_results: Option<f64>,
}

impl ExportOptions {
    /// True when the export reads the store's self-play game counters
    /// ([`NodeExtras::scan_games`]): NineDayFever weights.
    #[must_use]
    pub fn needs_games(&self) -> bool {
        self.weights == Weights::Ndf
    }

    /// True when the export reads learning counters
    /// ([`NodeExtras::scan_learning`]): values by results.
    #[must_use]
    pub fn needs_learning(&self) -> bool {
        self.by_results.is_some()
    }
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
        lines.sort_by(|a, b| {
            compare_lines((b.value, b.depth), (a.value, a.depth)).then(a.index.cmp(&b.index))
        });
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
/// One walk over the positions builds the graph and keeps each node's SFEN as
/// a compact code that sorts like the text (16 bytes per node, see
/// `sfen_code.rs`); the entries are then sorted by SFEN and formatted in
/// parallel, straight into the file in order, each position's legal moves
/// generated again from its SFEN. The bytes do not depend on the number of
/// threads.
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
    export_book(book, extras, path, BookFormat::Db2016, options, progress)
}

/// [`export_db2016`] in either format. A `.ybb` binary book has the same
/// entries, moves, values and depths (ponder moves and counts have no place in
/// the format), packed by the formatting threads and written by [`YbbWriter`]
/// (which holds the index in memory, 48 bytes an entry, and spools the moves to
/// a file beside `path`). The file appears under `path` only when complete.
///
/// # Errors
/// As [`export_db2016`].
pub fn export_book(
    book: &Book,
    extras: &NodeExtras,
    path: &Path,
    format: BookFormat,
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
        format,
    )
}

/// The file an export writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BookFormat {
    /// YaneuraOu's DB2016 text book.
    Db2016,
    /// YaneuraOu's `.ybb` binary book.
    Ybb,
}

/// Where formatted entries go.
enum Sink {
    Text(OrderedWriter),
    Binary(YbbWriter),
}

/// [`export_book`] with the formatting task and window sizes as parameters (tests check that they do not change the bytes).
#[allow(clippy::too_many_arguments)]
pub(crate) fn export_in_chunks(
    book: &Book,
    extras: &NodeExtras,
    path: &Path,
    options: &ExportOptions,
    progress: Progress<'_>,
    chunk: usize,
    window: usize,
    format: BookFormat,
) -> Result<ExportSummary, TeraShockError> {
    extras.check_covers(book)?;
    let mut summary = ExportSummary {
        nodes: book.len(),
        ..ExportSummary::default()
    };
    let t = Instant::now();
    let mut table = SfenTable::new(SfenCoder::for_book(book)?, book.len());
    // The walk's plies of nodes stored without one (none in a store the
    // coordinator wrote).
    let mut walk_plies: HashMap<u32, u32> = HashMap::new();
    let mut sfen = String::with_capacity(160);
    let mut graph = BookGraph::build_visiting(
        book,
        Some(&extras.plies),
        &mut |_, done, total| progress("graph", done, total),
        &mut |id, pos, _| {
            if extras.plies[id.index()] == 0 {
                walk_plies.insert(id.0, pos.ply());
            }
            sfen.clear();
            pos.write_sfen(&mut sfen);
            table.add(id, &sfen)
        },
    )?;
    summary.edges = graph.edge_count();
    summary.leaf_edges = graph.leaf_edge_count();
    summary.graph_time = t.elapsed();
    let t = Instant::now();
    if !options.raw {
        graph.set_leaf_discount(options.leaf_discount);
    }
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
    table.sort();
    let ybb_options = YbbOptions::default();
    let mut sink = match format {
        BookFormat::Db2016 => Sink::Text(OrderedWriter::create(
            path,
            WriteOptions {
                move_order: MoveOrder::AsGiven,
            },
        )?),
        BookFormat::Ybb => Sink::Binary(YbbWriter::create(path, ybb_options)?),
    };
    let parsed = ParsedFields::new(table.coder());
    let context = FormatContext {
        book,
        parsed: &parsed,
        graph: &graph,
        solution: solution.as_ref(),
        softmax: softmax.as_ref(),
        ndf: ndf.as_ref(),
        extras,
        table: &table,
        walk_plies: &walk_plies,
        shrink: options.shrink,
        weights: options.weights,
        temperature: options.temperature,
        by_results: options.by_results,
    };
    let order = table.slots();
    let total = order.len() as u64;
    let mut done = 0u64;
    // Formatting is most of the work: threads format consecutive slices of a
    // window of entries, which is then written in order. A window bounds the
    // memory held by formatted text.
    for window in order.chunks(window.max(1)) {
        match &mut sink {
            Sink::Text(writer) => {
                let texts: Vec<(Vec<u8>, u64, u64)> = window
                    .par_chunks(chunk.max(1))
                    .map(|chunk| context.format(chunk))
                    .collect::<Result<_, _>>()?;
                for (text, entries, moves) in &texts {
                    writer.write_formatted(text, *entries, *moves)?;
                }
            }
            Sink::Binary(writer) => {
                let prepared: Vec<Vec<PreparedEntry>> = window
                    .par_chunks(chunk.max(1))
                    .map(|chunk| context.prepare(chunk, ybb_options))
                    .collect::<Result<_, _>>()?;
                for entry in prepared.iter().flatten() {
                    writer.write_prepared(entry)?;
                }
            }
        }
        done += window.len() as u64;
        progress("write", done, total);
    }
    summary.written = match sink {
        Sink::Text(writer) => writer.finish()?,
        Sink::Binary(writer) => writer.finish()?,
    };
    summary.write_time = t.elapsed();
    Ok(summary)
}

/// Entries formatted per task, and per window written before the next one is
/// formatted (about 40 MB of text per window on a typical book).
const FORMAT_CHUNK: usize = 4096;
const FORMAT_WINDOW: usize = FORMAT_CHUNK * 16;

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

/// Everything a formatting thread reads.
struct FormatContext<'a> {
    book: &'a Book,
    parsed: &'a ParsedFields,
    graph: &'a BookGraph,
    solution: Option<&'a Solution>,
    softmax: Option<&'a SoftmaxValues>,
    ndf: Option<&'a NdfWeights>,
    extras: &'a NodeExtras,
    table: &'a SfenTable,
    walk_plies: &'a HashMap<u32, u32>,
    shrink: bool,
    weights: Weights,
    temperature: f64,
    by_results: Option<f64>,
}

impl FormatContext<'_> {
    /// `lines` of the position `sfen` valued by their game results
    /// ([`ExportOptions::by_results`]) and ordered by the new values (stable: the
    /// analysis's order among equals).
    fn value_by_results(
        &self,
        sfen: &[u8],
        prior_games: f64,
        lines: &mut [MoveLine],
    ) -> Result<(), TeraShockError> {
        let text = std::str::from_utf8(sfen)
            .map_err(|_| crate::BookError::Corrupt("a SFEN that is not UTF-8".into()))?;
        let position = Position::from_sfen(text)
            .map_err(|e| crate::BookError::Corrupt(format!("`{text}`: {e}")))?;
        for line in lines.iter_mut() {
            let key = self.book.count_key(
                position.key_after(line.mv),
                position.flipped_key_after(line.mv),
            );
            if let Some(c) = self.extras.learned.get(&key) {
                let value = results_value(c.flipped(), i32::from(line.value), prior_games);
                line.value = stera_rules::value::clamp_to_i16(value);
            }
        }
        lines.sort_by_key(|l| std::cmp::Reverse(l.value));
        Ok(())
    }

    /// Calls `emit` with each entry of `slots` (see [`SfenTable`]): its SFEN with
    /// ply, and its moves as written.
    fn entries(
        &self,
        slots: &[u128],
        mut emit: impl FnMut(&[u8], &[BookMove]) -> Result<(), TeraShockError>,
    ) -> Result<(), TeraShockError> {
        let mut sfen = Vec::with_capacity(200);
        let mut moves = Vec::with_capacity(600);
        let mut lines = Vec::with_capacity(600);
        let mut written: Vec<BookMove> = Vec::with_capacity(600);
        let mut legal = LegalMoves::new();
        let mut code = Code::default();
        let mut entries = [LITERAL; FIELDS];
        for &slot in slots {
            let id = slot_id(slot);
            sfen.clear();
            self.table
                .decode(slot, &mut code, &mut sfen, &mut entries)?;
            legal.of(self.parsed, &entries, &sfen, &mut moves)?;
            if moves.len() != self.book.values(NodeId(id)).len() {
                return Err(crate::BookError::Corrupt(format!(
                    "node {id}: {} legal moves in `{}` but {} values",
                    moves.len(),
                    String::from_utf8_lossy(&sfen),
                    self.book.values(NodeId(id)).len()
                ))
                .into());
            }
            let ply = match self.extras.plies[id as usize] {
                0 => self.walk_plies.get(&id).copied().unwrap_or(1),
                stored => u32::from(stored),
            };
            sfen.push(b' ');
            push_decimal(&mut sfen, ply);
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
            if let Some(prior_games) = self.by_results
                && self.solution.is_some()
            {
                self.value_by_results(&sfen, prior_games, &mut lines)?;
            }
            if self.shrink
                && let Some(best) = lines.first().map(|l| l.value)
            {
                lines.retain(|l| l.value == best);
            }
            let counts = self.counts(id, &lines);
            written.clear();
            written.extend(book_moves(&lines, self.solution.is_some()).enumerate().map(
                |(i, mut m)| {
                    if let Some(&c) = counts.get(i) {
                        m.count = c;
                    }
                    m
                },
            ));
            emit(&sfen, &written)?;
        }
        Ok(())
    }

    /// The `count` field of each of the lines of node `id` (empty: 1 each).
    fn counts(&self, id: u32, lines: &[MoveLine]) -> Vec<u64> {
        if self.weights == Weights::One {
            return Vec::new();
        }
        // NineDayFever's probabilities where asked for and the node has them:
        // canonical order to the lines' order, renormalised over the lines kept
        // (--shrink keeps the best only).
        let from_games = self
            .ndf
            .filter(|_| self.weights == Weights::Ndf)
            .and_then(|w| w.of(NodeId(id)))
            .and_then(|w| {
                let p: Vec<f64> = lines
                    .iter()
                    .map(|l| w.get(l.index).copied().unwrap_or(0.0))
                    .collect();
                let sum: f64 = p.iter().sum();
                (sum > 0.0).then(|| p.iter().map(|v| v / sum).collect::<Vec<_>>())
            });
        // Otherwise the softmax policy of the values.
        let p = from_games.unwrap_or_else(|| {
            let q: Vec<f64> = lines.iter().map(|l| f64::from(l.value)).collect();
            softmax_policy(&q, self.temperature)
        });
        policy_counts(&p)
    }

    /// The text of the entries of `slots`, with their entry and move counts.
    fn format(&self, slots: &[u128]) -> Result<(Vec<u8>, u64, u64), TeraShockError> {
        let mut text = Vec::with_capacity(slots.len() * 600);
        let mut move_count = 0u64;
        self.entries(slots, |sfen, moves| {
            text.extend_from_slice(b"sfen ");
            text.extend_from_slice(sfen);
            text.extend_from_slice(b"\r\n");
            for m in moves {
                format_move_line(&mut text, m);
            }
            move_count += moves.len() as u64;
            Ok(())
        })?;
        Ok((text, slots.len() as u64, move_count))
    }

    /// The entries of `slots` packed for a `.ybb` writer.
    fn prepare(
        &self,
        slots: &[u128],
        options: YbbOptions,
    ) -> Result<Vec<PreparedEntry>, TeraShockError> {
        let mut out = Vec::with_capacity(slots.len());
        self.entries(slots, |sfen, moves| {
            let sfen = std::str::from_utf8(sfen)
                .map_err(|_| crate::BookError::Corrupt("a SFEN that is not UTF-8".into()))?;
            out.push(PreparedEntry::new(sfen, moves, options)?);
            Ok(())
        })?;
        Ok(out)
    }
}

/// Appends `n` in decimal.
fn push_decimal(out: &mut Vec<u8>, n: u32) {
    let mut digits = [0u8; 10];
    let mut at = digits.len();
    let mut n = n;
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[at..]);
}

/// The backend's reading of every dictionary entry of the SFEN code, so that a
/// position's state is put together from its fields' entries instead of parsing
/// its text (a field outside the dictionary: the text is parsed).
struct ParsedFields {
    /// Per rank (top to bottom) and entry: the pieces of files 1..9.
    ranks: Vec<Vec<Option<[stera_rules::backend::types::Piece; 9]>>>,
    sides: Vec<Option<stera_rules::backend::types::Color>>,
    hands: Vec<Option<[stera_rules::backend::types::Hand; 2]>>,
}

impl ParsedFields {
    fn new(coder: &SfenCoder) -> Self {
        let text = |s: &[u8]| String::from_utf8_lossy(s).into_owned();
        let parse = |sfen: String| backend::parse_sfen(&sfen).ok();
        let ranks = (0..9)
            .map(|r| {
                coder
                    .dictionary(r)
                    .iter()
                    .map(|entry| {
                        let board: Vec<String> = (0..9)
                            .map(|i| if i == r { text(entry) } else { "9".into() })
                            .collect();
                        let state = parse(format!("{} b -", board.join("/")))?;
                        Some(std::array::from_fn(|file| state.board.get(square(file, r))))
                    })
                    .collect()
            })
            .collect();
        let empty = "9/9/9/9/9/9/9/9/9";
        let sides = coder
            .dictionary(9)
            .iter()
            .map(|e| parse(format!("{empty} {} -", text(e))).map(|s| s.side_to_move))
            .collect();
        let hands = coder
            .dictionary(10)
            .iter()
            .map(|e| parse(format!("{empty} b {}", text(e))).map(|s| s.hands))
            .collect();
        Self {
            ranks,
            sides,
            hands,
        }
    }

    /// The state of the position whose fields are these dictionary entries
    /// (`None` when one is not an entry).
    fn state(&self, entries: &[u32; FIELDS]) -> Option<backend::PositionState> {
        let entry = |f: usize| usize::try_from(entries[f]).ok();
        let mut board = backend::BoardArray::empty();
        for (r, rank) in self.ranks.iter().enumerate() {
            let pieces = rank.get(entry(r)?)?.as_ref()?;
            for (file, &piece) in pieces.iter().enumerate() {
                if !piece.is_empty() {
                    board.set(square(file, r), piece);
                }
            }
        }
        Some(backend::PositionState {
            board,
            hands: (*self.hands.get(entry(10)?)?)?,
            side_to_move: (*self.sides.get(entry(9)?)?)?,
            ply: 0,
        })
    }
}

/// The backend's square of a file (0 for file 1) and rank (0 for rank a).
fn square(file: usize, rank: usize) -> stera_rules::backend::types::Square {
    stera_rules::backend::types::Square::from_index(file * 9 + rank)
}

/// The legal moves of an SFEN in canonical order, as
/// [`Position::legal_moves_into`] gives them, through the rules backend: the
/// export regenerates them for every entry while formatting instead of keeping
/// them from the walk, and skips what [`Position::from_sfen`] adds for input
/// from outside (legality checks, our key), since these SFENs are the walk's.
/// A node whose move count differs from its value count is reported.
struct LegalMoves {
    pos: backend::Position,
    list: backend::MoveList,
}

impl LegalMoves {
    fn new() -> Self {
        Self {
            pos: backend::Position::empty(),
            list: backend::MoveList::new(),
        }
    }

    /// The moves of the position whose SFEN (without ply) is `sfen`, with the
    /// dictionary `entries` of its fields.
    fn of(
        &mut self,
        parsed: &ParsedFields,
        entries: &[u32; FIELDS],
        sfen: &[u8],
        out: &mut Vec<Move>,
    ) -> Result<(), TeraShockError> {
        let text = || String::from_utf8_lossy(sfen).into_owned();
        let bad = |e: &dyn std::fmt::Display| TeraShockError::Invalid(format!("`{}`: {e}", text()));
        let state = match parsed.state(entries) {
            Some(state) => state,
            None => backend::parse_sfen(&text()).map_err(|e| bad(&e))?,
        };
        self.pos
            .try_set_position_state(&state)
            .map_err(|e| bad(&e))?;
        backend::movegen::generate_moves::<backend::movegen::LegalAll>(&self.pos, &mut self.list);
        out.clear();
        out.extend(self.list.iter().filter_map(|m| Move::from_raw(m.raw())));
        stera_rules::sort_canonical(out, |m| *m);
        Ok(())
    }
}
