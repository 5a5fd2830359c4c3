//! What an export writes (its options) and what it did (its summary).

use std::time::Duration;

use stera_formats::db2016::WriteSummary;

use crate::terashock::SolveStats;

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
