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

use crate::bitset::BitSet;
use std::collections::VecDeque;

use super::graph::node;
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

impl SoftmaxValues {
    /// Backs up `book` with temperature `temperature` (centipawns) from the
    /// minimax `solution` of the same `graph`.
    #[must_use]
    pub fn solve(book: &Book, graph: &BookGraph, solution: &Solution, temperature: f64) -> Self {
        let n = graph.len();
        let mut values: Vec<f64> = (0..n).map(|i| f64::from(solution.value(node(i)))).collect();
        let order = ChildrenFirst::new(graph);
        let mut q = Vec::with_capacity(600);
        for &i in &order.acyclic {
            let i = i as usize;
            values[i] = backup(book, graph, &values, i, temperature, &mut q).unwrap_or(values[i]);
        }
        // The rest is on or above a cycle: relax until nothing moves.
        let cyclic = &order.cyclic;
        let mut queued = vec![false; n];
        let mut work: VecDeque<usize> = VecDeque::with_capacity(cyclic.len());
        for &i in cyclic {
            queued[i as usize] = true;
            work.push_back(i as usize);
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
                for &p in order.parents(i) {
                    let p = p as usize;
                    if order.is_cyclic(p) && !queued[p] {
                        queued[p] = true;
                        work.push_back(p);
                    }
                }
            }
        }
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

/// The nodes of a book graph children first (Kahn's order on the thought
/// edges), the nodes on or above cycles apart, and every node's parents.
pub(crate) struct ChildrenFirst {
    /// Nodes whose every line ends, each after all its thought children.
    pub acyclic: Vec<u32>,
    /// Nodes on or above a cycle.
    pub cyclic: Vec<u32>,
    cyclic_bits: BitSet,
    parent_start: Vec<u32>,
    parents: Vec<u32>,
}

impl ChildrenFirst {
    pub fn new(graph: &BookGraph) -> Self {
        let n = graph.len();
        let mut parent_start = vec![0u32; n + 1];
        let mut pending = vec![0u32; n];
        for (i, p) in pending.iter_mut().enumerate() {
            for e in graph.edges(node(i)) {
                parent_start[e.child.index() + 1] += 1;
                *p += 1;
            }
        }
        for i in 0..n {
            parent_start[i + 1] += parent_start[i];
        }
        let mut fill = parent_start.clone();
        let mut parents = vec![0u32; parent_start[n] as usize];
        for i in 0..n {
            for e in graph.edges(node(i)) {
                let slot = &mut fill[e.child.index()];
                parents[*slot as usize] = i as u32;
                *slot += 1;
            }
        }
        let mut order = Self {
            acyclic: Vec::with_capacity(n),
            cyclic: Vec::new(),
            cyclic_bits: BitSet::with_len(n),
            parent_start,
            parents,
        };
        let mut ready: VecDeque<u32> = (0..n as u32)
            .filter(|&i| pending[i as usize] == 0)
            .collect();
        while let Some(i) = ready.pop_front() {
            order.acyclic.push(i);
            for k in order.parent_start[i as usize]..order.parent_start[i as usize + 1] {
                let p = order.parents[k as usize] as usize;
                pending[p] -= 1;
                if pending[p] == 0 {
                    ready.push_back(p as u32);
                }
            }
        }
        for (i, &left) in pending.iter().enumerate() {
            if left > 0 {
                order.cyclic.push(i as u32);
                order.cyclic_bits.insert(i);
            }
        }
        order
    }

    /// The nodes with a thought edge to node `i`.
    pub fn parents(&self, i: usize) -> &[u32] {
        &self.parents[self.parent_start[i] as usize..self.parent_start[i + 1] as usize]
    }

    /// Whether node `i` is on or above a cycle.
    pub fn is_cyclic(&self, i: usize) -> bool {
        self.cyclic_bits.contains(i)
    }
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
    q.extend(stored.iter().map(|&v| f64::from(graph.leaf_value(v))));
    for e in graph.edges(id) {
        if let Some(slot) = q.get_mut(usize::from(e.index)) {
            *slot = -values[e.child.index()];
        }
    }
    Some(softmax_mean(q, t))
}
