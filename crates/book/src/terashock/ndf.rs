//! NineDayFever move probabilities from game results.
//!
//! Every book position a counted game passed through has wins, draws and losses
//! from its side to move's view. Its win rate is modelled as a normal
//! distribution ([`WinRate`]). From the book's exits toward the roots, each move
//! into a thought child with a distribution gets the probability that it is the
//! best move ([`best_probabilities`]: `P_i = ∫ f_i(x) Π_{j≠i} F_j(x) dx`), capped
//! at twice the move's prior probability and renormalised ([`cap_to_prior`]); the
//! position's own distribution is then the mixture of its moves' (mean and
//! variance of the mixture) and feeds its parents.
//!
//! Conventions (ours, documented in ARCHITECTURE.md):
//! - A position whose moves lead to no position with games keeps its own games'
//!   distribution, if it has games; an inner position with moves that have
//!   distributions uses their mixture (its own games are the sum of theirs and
//!   of the games that left the book there).
//! - The mean is the observed rate `(W + D/2) / n`; the variance uses the
//!   Laplace-smoothed rate `p' = (W + D/2 + 1) / (n + 2)`, `p'(1-p')/n`, so that
//!   a move with all wins or all losses is not certain after a handful of games.
//! - Moves without a distribution (leaf moves, children without games) keep
//!   their prior, the softmax policy of the exported values; the moves with
//!   distributions share the prior mass of their group by `P`, each capped at
//!   twice its prior, the excess going to the uncapped ones (water-filling).
//! - The integral runs over the whole line, not `[0, 1]`: the tails beyond are
//!   below 1e-6 for any move with a dozen games, and the result is renormalised.
//!   It is Simpson's rule on `x = μ_i + σ_i z`, `z ∈ [-8, 8]`, 1600 intervals:
//!   absolute error below 1e-5 while no two standard deviations differ by more
//!   than a factor of 50 (checked against Monte Carlo sampling in the tests).
//! - On cycles the distributions are swept a bounded number of times.

use std::collections::HashMap;

use super::graph::node;
use super::softmax::ChildrenFirst;
use super::{BookGraph, SoftmaxValues, Solution, softmax_policy};
use crate::{Book, GameCounts, NodeId};

/// A win-rate distribution (side to move's view): a normal `N(mean, var)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WinRate {
    /// Expected score in `[0, 1]`.
    pub mean: f64,
    /// Variance of the estimate.
    pub var: f64,
}

impl WinRate {
    /// The distribution of a position's games; `None` without games.
    ///
    /// ```
    /// use stera_book::GameCounts;
    /// use stera_book::terashock::WinRate;
    /// let r = WinRate::of(GameCounts { wins: 6, draws: 2, losses: 2 }).unwrap();
    /// assert!((r.mean - 0.7).abs() < 1e-12);
    /// let p = 8.0 / 12.0; // (6 + 1 + 1) / (10 + 2)
    /// assert!((r.var - p * (1.0 - p) / 10.0).abs() < 1e-12);
    /// ```
    #[must_use]
    pub fn of(c: GameCounts) -> Option<Self> {
        let n = f64::from(c.wins) + f64::from(c.draws) + f64::from(c.losses);
        if n == 0.0 {
            return None;
        }
        let points = f64::from(c.wins) + f64::from(c.draws) / 2.0;
        let smoothed = (points + 1.0) / (n + 2.0);
        Some(Self {
            mean: points / n,
            var: smoothed * (1.0 - smoothed) / n,
        })
    }

    /// The same distribution from the other side's view.
    #[must_use]
    pub fn flipped(self) -> Self {
        Self {
            mean: 1.0 - self.mean,
            var: self.var,
        }
    }

    fn sd(self) -> f64 {
        self.var.sqrt().max(1e-12)
    }
}

/// The standard normal distribution function.
fn normal_cdf(x: f64) -> f64 {
    0.5 * libm::erfc(-x / std::f64::consts::SQRT_2)
}

/// Half-width (in standard deviations) and intervals of the integration.
const Z_RANGE: f64 = 8.0;
const INTERVALS: usize = 1600;

/// For each move, the probability that its win rate is the highest:
/// `P_i = ∫ f_i(x) Π_{j≠i} F_j(x) dx`, renormalised to sum to 1.
///
/// ```
/// use stera_book::terashock::{WinRate, best_probabilities};
/// let same = WinRate { mean: 0.5, var: 0.01 };
/// let p = best_probabilities(&[same, same]);
/// assert!((p[0] - 0.5).abs() < 1e-9);
/// assert_eq!(best_probabilities(&[same]), [1.0]);
/// ```
#[must_use]
pub fn best_probabilities(moves: &[WinRate]) -> Vec<f64> {
    if moves.len() <= 1 {
        return vec![1.0; moves.len()];
    }
    let h = 2.0 * Z_RANGE / INTERVALS as f64;
    let mut p: Vec<f64> = moves
        .iter()
        .enumerate()
        .map(|(i, mi)| {
            let mut sum = 0.0;
            for k in 0..=INTERVALS {
                let z = -Z_RANGE + k as f64 * h;
                let x = mi.mean + mi.sd() * z;
                let mut integrand = (-0.5 * z * z).exp();
                for (j, mj) in moves.iter().enumerate() {
                    if j != i {
                        integrand *= normal_cdf((x - mj.mean) / mj.sd());
                    }
                }
                let simpson = if k == 0 || k == INTERVALS {
                    1.0
                } else if k % 2 == 1 {
                    4.0
                } else {
                    2.0
                };
                sum += simpson * integrand;
            }
            sum * h / 3.0 / (2.0 * std::f64::consts::PI).sqrt()
        })
        .collect();
    let total: f64 = p.iter().sum();
    if total > 0.0 {
        for v in &mut p {
            *v /= total;
        }
    } else {
        p.fill(1.0 / moves.len() as f64);
    }
    p
}

/// Shares `mass` among moves by `p` (sums to 1), none above `2 × prior`, the
/// excess of capped moves going to the others in proportion to `p`.
///
/// ```
/// use stera_book::terashock::cap_to_prior;
/// // The first move would take 0.9 of 0.5 but may take only twice its 0.1.
/// let w = cap_to_prior(&[0.9, 0.1], &[0.1, 0.4], 0.5);
/// assert!((w[0] - 0.2).abs() < 1e-12 && (w[1] - 0.3).abs() < 1e-12);
/// ```
#[must_use]
pub fn cap_to_prior(p: &[f64], prior: &[f64], mass: f64) -> Vec<f64> {
    let mut w = vec![0.0; p.len()];
    let mut capped = vec![false; p.len()];
    let mut left = mass;
    // Each round caps at least one more move or ends: at most len rounds.
    for _ in 0..=p.len() {
        let share: f64 = (0..p.len()).filter(|&i| !capped[i]).map(|i| p[i]).sum();
        let mut newly = false;
        for i in 0..p.len() {
            if capped[i] {
                continue;
            }
            w[i] = if share > 0.0 {
                left * p[i] / share
            } else {
                0.0
            };
            if w[i] > 2.0 * prior[i] {
                w[i] = 2.0 * prior[i];
                capped[i] = true;
                left -= w[i];
                newly = true;
            }
        }
        if !newly {
            break;
        }
    }
    w
}

/// Sweeps of the cyclic part.
const CYCLE_SWEEPS: usize = 32;

/// Move probabilities of every position that has moves with game results.
#[derive(Debug, Clone, Default)]
pub struct NdfWeights {
    /// Node index → probability of each move (canonical order), summing to 1.
    weights: HashMap<u32, Vec<f64>>,
    /// Positions on or above cycles.
    pub cyclic: usize,
}

impl NdfWeights {
    /// Computes the weights of `book` from `games` (node index → counters).
    /// Priors are the softmax policy at `temperature` of the exported values:
    /// `softmax`'s if given, else the minimax `solution`'s.
    #[must_use]
    pub fn solve(
        book: &Book,
        graph: &BookGraph,
        solution: &Solution,
        softmax: Option<&SoftmaxValues>,
        games: &HashMap<u32, GameCounts>,
        temperature: f64,
    ) -> Self {
        let value = |child: NodeId| match softmax {
            Some(s) => f64::from(s.rounded(child)),
            None => f64::from(solution.value(child)),
        };
        let order = ChildrenFirst::new(graph);
        let mut dist: Vec<Option<WinRate>> = vec![None; graph.len()];
        let mut weights = HashMap::new();
        let mut visit = |i: usize, dist: &mut Vec<Option<WinRate>>| {
            let id = node(i);
            let stored = book.values(id);
            let mut q: Vec<f64> = stored
                .iter()
                .map(|&v| f64::from(graph.leaf_value(v)))
                .collect();
            let mut with_games: Vec<(usize, WinRate)> = Vec::new();
            for e in graph.edges(id) {
                let index = usize::from(e.index);
                if let Some(slot) = q.get_mut(index) {
                    *slot = -value(e.child);
                }
                if let Some(d) = dist[e.child.index()] {
                    with_games.push((index, d.flipped()));
                }
            }
            let own = games.get(&(i as u32)).copied().and_then(WinRate::of);
            if with_games.is_empty() || q.is_empty() {
                dist[i] = own;
                weights.remove(&(i as u32));
                return;
            }
            let prior = softmax_policy(&q, temperature);
            let rates: Vec<WinRate> = with_games.iter().map(|&(_, d)| d).collect();
            let group_prior: Vec<f64> = with_games.iter().map(|&(k, _)| prior[k]).collect();
            let mass: f64 = group_prior.iter().sum();
            let shares = cap_to_prior(&best_probabilities(&rates), &group_prior, mass);
            let mut w = prior;
            for (&(k, _), &share) in with_games.iter().zip(&shares) {
                w[k] = share;
            }
            // The mixture over the moves with games, weighted as they are played.
            let total: f64 = shares.iter().sum();
            if total > 0.0 {
                let mean: f64 = rates
                    .iter()
                    .zip(&shares)
                    .map(|(r, s)| s * r.mean)
                    .sum::<f64>()
                    / total;
                let second: f64 = rates
                    .iter()
                    .zip(&shares)
                    .map(|(r, s)| s * (r.var + r.mean * r.mean))
                    .sum::<f64>()
                    / total;
                dist[i] = Some(WinRate {
                    mean,
                    var: (second - mean * mean).max(0.0),
                });
            } else {
                dist[i] = own;
            }
            weights.insert(i as u32, w);
        };
        for &i in &order.acyclic {
            visit(i as usize, &mut dist);
        }
        for _ in 0..CYCLE_SWEEPS {
            let before: Vec<Option<WinRate>> =
                order.cyclic.iter().map(|&i| dist[i as usize]).collect();
            for &i in order.cyclic.iter().rev() {
                visit(i as usize, &mut dist);
            }
            let settled =
                order
                    .cyclic
                    .iter()
                    .zip(&before)
                    .all(|(&i, b)| match (dist[i as usize], b) {
                        (Some(a), Some(b)) => {
                            (a.mean - b.mean).abs() < 1e-9 && (a.var - b.var).abs() < 1e-12
                        }
                        (None, None) => true,
                        _ => false,
                    });
            if settled {
                break;
            }
        }
        Self {
            weights,
            cyclic: order.cyclic.len(),
        }
    }

    /// The move probabilities of node `id` in canonical move order, when some of
    /// its moves have game results.
    #[must_use]
    pub fn of(&self, id: NodeId) -> Option<&[f64]> {
        self.weights.get(&id.0).map(Vec::as_slice)
    }

    /// Positions whose weights come from games.
    #[must_use]
    pub fn len(&self) -> usize {
        self.weights.len()
    }

    /// True when no position has moves with game results.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.weights.is_empty()
    }
}
