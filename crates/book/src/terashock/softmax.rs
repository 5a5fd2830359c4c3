//! Softmax backup (MC Softmax): a position's value is the policy-weighted mean of
//! its moves' values, `V(s) = Σ π(a) q(a)` with `π(a) ∝ exp(q(a) / T)`, instead of
//! the best move's value. `q(a)` is `-V(child)` for a move into a thought
//! position and the stored value for a leaf move, as in the tera-shock analysis.
//!
//! The values start from the minimax [`Solution`] (a fixed point of the max
//! backup). Nodes whose every line ends are solved exactly, children first
//! (Kahn's order on the thought edges); nodes on or above cycles are relaxed with
//! a work list until no value moves by more than [`TOLERANCE`] centipawns. As
//! `T` goes to 0, `π` becomes the best move and the minimax values stay where
//! they are, so the export equals the minimax export. Depths are not backed up:
//! a move's depth stays its best line's (the minimax one).

use std::collections::VecDeque;

use super::{BookGraph, Solution};
use crate::{Book, NodeId};

/// Centipawns below which a change no longer counts (cyclic part).
pub const TOLERANCE: f64 = 0.01;

/// Node re-evaluations of the cyclic part per cyclic node before giving up.
const MAX_ROUNDS: usize = 200;

/// The softmax-backed-up value of every node.
#[derive(Debug, Clone)]
pub struct SoftmaxValues {
    temperature: f64,
    values: Vec<f64>,
    /// Nodes on or above cycles.
    pub cyclic: usize,
    /// Cyclic nodes still changing when the iteration stopped (0: converged).
    pub unconverged: usize,
}

/// The softmax mean of `q` at temperature `t` (centipawns); `t <= 0` is the max.
///
/// ```
/// use stera_book::terashock::softmax_mean;
/// assert_eq!(softmax_mean(&[100.0, -50.0], 0.0), 100.0);
/// let m = softmax_mean(&[100.0, 0.0], 100.0);
/// let e = 1f64.exp();
/// assert!((m - 100.0 * e / (e + 1.0)).abs() < 1e-9);
/// ```
#[must_use]
pub fn softmax_mean(q: &[f64], t: f64) -> f64 {
    let Some(max) = q.iter().copied().reduce(f64::max) else {
        return 0.0;
    };
    if t <= 0.0 {
        return max;
    }
    let (mut num, mut den) = (0.0, 0.0);
    for &v in q {
        let w = ((v - max) / t).exp();
        num += w * v;
        den += w;
    }
    num / den
}

/// The softmax policy of `q` at temperature `t`; `t <= 0` shares 1 among the best.
///
/// ```
/// use stera_book::terashock::softmax_policy;
/// assert_eq!(softmax_policy(&[10.0, 10.0, 0.0], 0.0), [0.5, 0.5, 0.0]);
/// let p = softmax_policy(&[0.0, 0.0], 50.0);
/// assert_eq!(p, [0.5, 0.5]);
/// ```
#[must_use]
pub fn softmax_policy(q: &[f64], t: f64) -> Vec<f64> {
    let Some(max) = q.iter().copied().reduce(f64::max) else {
        return Vec::new();
    };
    let weights: Vec<f64> = if t <= 0.0 {
        q.iter().map(|&v| f64::from(u8::from(v == max))).collect()
    } else {
        q.iter().map(|&v| ((v - max) / t).exp()).collect()
    };
    let sum: f64 = weights.iter().sum();
    weights.into_iter().map(|w| w / sum).collect()
}

impl SoftmaxValues {
    /// Backs up `book` with temperature `temperature` (centipawns) from the
    /// minimax `solution` of the same `graph`.
    #[must_use]
    pub fn solve(book: &Book, graph: &BookGraph, solution: &Solution, temperature: f64) -> Self {
        let n = graph.len();
        let mut values: Vec<f64> = (0..n).map(|i| f64::from(solution.value(node(i)))).collect();
        // Parents of every node (reverse thought edges), as offsets into one array.
        let mut parent_count = vec![0u32; n + 1];
        let mut pending = vec![0u32; n];
        for (i, p) in pending.iter_mut().enumerate() {
            for e in graph.edges(node(i)) {
                parent_count[e.child.index() + 1] += 1;
                *p += 1;
            }
        }
        for i in 0..n {
            parent_count[i + 1] += parent_count[i];
        }
        let mut fill = parent_count.clone();
        let mut parents = vec![0u32; parent_count[n] as usize];
        for i in 0..n {
            for e in graph.edges(node(i)) {
                let slot = &mut fill[e.child.index()];
                parents[*slot as usize] = i as u32;
                *slot += 1;
            }
        }
        let parents_of =
            |i: usize| &parents[parent_count[i] as usize..parent_count[i + 1] as usize];

        let mut q = Vec::with_capacity(600);
        // Children first: a node is final once all its thought children are.
        let mut ready: VecDeque<usize> = (0..n).filter(|&i| pending[i] == 0).collect();
        let mut solved = 0usize;
        while let Some(i) = ready.pop_front() {
            values[i] = backup(book, graph, &values, i, temperature, &mut q).unwrap_or(values[i]);
            solved += 1;
            for &p in parents_of(i) {
                let p = p as usize;
                pending[p] -= 1;
                if pending[p] == 0 {
                    ready.push_back(p);
                }
            }
        }
        // The rest is on or above a cycle: relax until nothing moves.
        let cyclic: Vec<usize> = (0..n).filter(|&i| pending[i] > 0).collect();
        let mut queued = vec![false; n];
        let mut work: VecDeque<usize> = VecDeque::with_capacity(cyclic.len());
        for &i in &cyclic {
            queued[i] = true;
            work.push_back(i);
        }
        let mut budget = cyclic.len().saturating_mul(MAX_ROUNDS);
        while budget > 0
            && let Some(i) = work.pop_front()
        {
            budget -= 1;
            queued[i] = false;
            let Some(v) = backup(book, graph, &values, i, temperature, &mut q) else {
                continue;
            };
            if (v - values[i]).abs() > TOLERANCE {
                values[i] = v;
                for &p in parents_of(i) {
                    let p = p as usize;
                    if pending[p] > 0 && !queued[p] {
                        queued[p] = true;
                        work.push_back(p);
                    }
                }
            }
        }
        debug_assert_eq!(solved + cyclic.len(), n);
        Self {
            temperature,
            values,
            cyclic: cyclic.len(),
            unconverged: work.len(),
        }
    }

    /// The temperature (centipawns).
    #[must_use]
    pub fn temperature(&self) -> f64 {
        self.temperature
    }

    /// A node's backed-up value (side to move's view), unrounded.
    #[must_use]
    pub fn value(&self, id: NodeId) -> f64 {
        self.values[id.index()]
    }

    /// A node's backed-up value rounded to the book's centipawns (±32000).
    #[must_use]
    pub fn rounded(&self, id: NodeId) -> i16 {
        let mate = f64::from(stera_rules::value::MATE);
        // Within ±32000 after the clamp, so the cast is exact.
        self.value(id).round().clamp(-mate, mate) as i16
    }
}

fn node(i: usize) -> NodeId {
    NodeId(u32::try_from(i).unwrap_or(u32::MAX))
}

/// The softmax backup of node `i` from the current values; `None` for a node
/// without moves (it keeps the minimax value: mate or no move).
fn backup(
    book: &Book,
    graph: &BookGraph,
    values: &[f64],
    i: usize,
    t: f64,
    q: &mut Vec<f64>,
) -> Option<f64> {
    let id = node(i);
    let stored = book.values(id);
    if stored.is_empty() {
        return None;
    }
    q.clear();
    q.extend(
        stored
            .iter()
            .map(|&v| f64::from(super::graph::clamp_stored(v))),
    );
    for e in graph.edges(id) {
        if let Some(slot) = q.get_mut(usize::from(e.index)) {
            *slot = -values[e.child.index()];
        }
    }
    Some(softmax_mean(q, t))
}
