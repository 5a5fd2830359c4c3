//! Writing the analysed book as a YaneuraOu DB2016 file.

use std::path::Path;
use std::time::Instant;

use hashbrown::HashMap;
use rayon::prelude::*;
use stera_formats::db2016::{MoveOrder, OrderedWriter, WriteOptions};
use stera_formats::ybb::{PreparedEntry, YbbOptions, YbbWriter};

use super::sfen_code::{SfenCoder, SfenPart, SfenTable};
use super::{BookGraph, NdfWeights, NodeExtras, Progress, SoftmaxValues, TeraShockError, solve};
use crate::Book;

mod format;
mod lines;
mod options;

use format::{FormatContext, ParsedFields};

pub use lines::{
    MoveLine, WRITTEN_DEPTH_MAX, WRITTEN_DEPTH_PERPETUAL_CHECK, WRITTEN_PLY_LIMIT, book_moves,
    node_lines,
};
pub use options::{Backup, COUNT_SCALE, ExportOptions, ExportSummary, Weights, policy_counts};

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

/// A window of entries as the formatting threads give them to the writer.
enum Formatted {
    /// Text with its entry and move counts, per formatting task.
    Text(Vec<(Vec<u8>, u64, u64)>),
    /// Packed entries, per formatting task.
    Binary(Vec<Vec<PreparedEntry>>),
}

/// Why the formatting of the windows stopped.
enum WriteFailure {
    Format(TeraShockError),
    /// The writing thread stopped taking windows (its result says why).
    WriterStopped,
}

use WriteFailure::WriterStopped;

impl From<TeraShockError> for WriteFailure {
    fn from(e: TeraShockError) -> Self {
        Self::Format(e)
    }
}

impl Sink {
    /// Writes every window received, in order, and finishes the file at the
    /// end mark (`None`).
    fn write_all(
        mut self,
        windows: std::sync::mpsc::Receiver<Option<Formatted>>,
    ) -> Result<stera_formats::db2016::WriteSummary, TeraShockError> {
        loop {
            let window = match windows.recv() {
                Ok(Some(window)) => window,
                // The end mark: the book is complete.
                Ok(None) => {
                    return Ok(match self {
                        Self::Text(writer) => writer.finish()?,
                        Self::Binary(writer) => writer.finish()?,
                    });
                }
                Err(_) => {
                    return Err(TeraShockError::Invalid(
                        "the export stopped before its last entry".into(),
                    ));
                }
            };
            match (&mut self, window) {
                (Self::Text(writer), Formatted::Text(texts)) => {
                    for (text, entries, moves) in &texts {
                        writer.write_formatted(text, *entries, *moves)?;
                    }
                }
                (Self::Binary(writer), Formatted::Binary(prepared)) => {
                    for entry in prepared.iter().flatten() {
                        writer.write_prepared(entry)?;
                    }
                }
                _ => {
                    return Err(TeraShockError::Invalid(
                        "a window formatted for the other book format".into(),
                    ));
                }
            }
        }
    }
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
    let coder = table.shared_coder();
    let mut graph = BookGraph::build_visiting(
        book,
        Some(&extras.plies),
        &mut |_, done, total| progress("graph", done, total),
        &|| (SfenPart::default(), Vec::new(), String::with_capacity(160)),
        &|(part, plies, sfen), node| {
            if extras.plies[node.id.index()] == 0 {
                plies.push((node.id.0, node.pos.ply()));
            }
            sfen.clear();
            node.pos.write_sfen(sfen);
            part.add(&coder, node.id, sfen)
        },
        &mut |(part, plies, _)| {
            walk_plies.extend(plies);
            table.merge(part);
            Ok(())
        },
    )?;
    drop(coder);
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
    let sink = match format {
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
    summary.written = std::thread::scope(|scope| -> Result<_, TeraShockError> {
        // A window is written by a thread of its own while the next one is
        // formatted: copying 8 GB into the file took a core for ~10 s at 15M
        // positions, with the formatting threads waiting.
        // `None` after the last window: only then is the file finished (renamed
        // into place); a writer whose sender goes away leaves no file.
        let (to_writer, windows) = std::sync::mpsc::sync_channel::<Option<Formatted>>(1);
        let writer = scope.spawn(move || sink.write_all(windows));
        let mut done = 0u64;
        // Formatting is most of the work: threads format consecutive slices of a
        // window of entries, which is then written in order. A window bounds the
        // memory held by formatted text.
        let formatted = order.chunks(window.max(1)).try_for_each(|window| {
            let next = match format {
                BookFormat::Db2016 => Formatted::Text(
                    window
                        .par_chunks(chunk.max(1))
                        .map(|chunk| context.format(chunk))
                        .collect::<Result<_, _>>()?,
                ),
                BookFormat::Ybb => Formatted::Binary(
                    window
                        .par_chunks(chunk.max(1))
                        .map(|chunk| context.prepare(chunk, ybb_options))
                        .collect::<Result<_, _>>()?,
                ),
            };
            done += window.len() as u64;
            progress("write", done, total);
            // A writer that stopped has its error to tell (below).
            to_writer.send(Some(next)).map_err(|_| WriterStopped)
        });
        if formatted.is_ok() {
            // A writer that stopped has its error to tell (below).
            let _ = to_writer.send(None);
        }
        drop(to_writer);
        let written = writer
            .join()
            .map_err(|_| TeraShockError::Invalid("the export's writing thread panicked".into()))?;
        match formatted {
            // The writer's error explains why it stopped taking windows.
            Err(WriteFailure::WriterStopped) => written,
            Err(WriteFailure::Format(e)) => Err(e),
            Ok(()) => written,
        }
    })?;
    summary.write_time = t.elapsed();
    Ok(summary)
}

/// Entries formatted per task, and per window written before the next one is
/// formatted (about 40 MB of text per window on a typical book).
const FORMAT_CHUNK: usize = 4096;
const FORMAT_WINDOW: usize = FORMAT_CHUNK * 16;
