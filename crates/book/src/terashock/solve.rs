//! Retrograde analysis over the book graph.
//!
//! Values first, depths second. A move's value never depends on depths (value is
//! the first criterion), so:
//!
//! 1. **Values.** The acyclic part (nodes from which every line reaches leaf
//!    moves without returning) is solved exactly, each node once, in reverse
//!    topological order (Kahn's algorithm on the reversed edges). The rest — nodes
//!    on cycles and the nodes above them — starts at draw (0) and is relaxed with a
//!    FIFO work list (a node is re-evaluated when a child changed) until nothing
//!    changes: a fixed point where every value is the best of its moves. Starting
//!    from the draw makes a line that goes round forever a draw, as repetition is.
//! 2. **Depths**, given the values, like a distance-to-mate table: only moves
//!    that achieve the node's value count; a side at or above 0 takes the shortest
//!    such line (it resolves as soon as one child does), a side below 0 the longest
//!    (it resolves when all have), in order of increasing depth (bucket queue).
//!    Lines that never reach a leaf keep the infinite depth. When the queue runs
//!    dry, a losing side still waiting on a loop takes its longest line that does
//!    end (a loop would lengthen "losing slowly" without end, which is not a line
//!    anyone can play). On an acyclic book this is exactly backward propagation of
//!    (value, depth) with the tie rule.
//! 3. **Perpetual check.** The moves that achieve the draw (0) link positions
//!    valued 0 into loops. A loop of such moves in which one side gives check
//!    with every move is a perpetual check: that side loses. Its positions are
//!    re-seeded at -32000 (checker to move) / +32000 (checked side to move),
//!    values are relaxed again and depths recomputed, so a checker that has any
//!    other move takes it, one that has none loses, and a checked side that could
//!    escape to a draw stays in the loop when the checker's way out is worse for
//!    the checker.
//! 4. **Check loops for the output**, found on the whole graph as YaneuraOu's
//!    `peta_shock` finds them (not only along best lines): the positions in check
//!    from which checks can go on for ever (see [`Solution::in_check_loop`]). The
//!    checker's moves into them are written with depth 9997 and lose every tie of
//!    value, so an engine never prefers going round a perpetual check to another
//!    move of the same value. They change no value.

use crate::bitset::BitSet;
use std::collections::VecDeque;

use petgraph::algo::kosaraju_scc;
use petgraph::graph::{DiGraph, NodeIndex};
use petgraph::visit::EdgeRef;
use stera_rules::Move;
use stera_rules::value::MATE;

use super::BookGraph;
use super::graph::{NO_MOVE, node};
use crate::NodeId;

/// The depth of a line that never reaches a leaf (a repetition).
pub const DEPTH_INFINITE: u16 = u16::MAX;

/// The depth of a checker's move into a check loop (see
/// [`Solution::in_check_loop`]): below every other line of the same value in
/// [`compare_lines`]; written as 9997, YaneuraOu's `BOOK_DEPTH_PERPUTUAL_CHECK`.
/// Only export lines carry it; the analysis never does ([`deeper`] stops below).
pub const DEPTH_PERPETUAL_CHECK: u16 = u16::MAX - 1;

/// Re-seeding rounds for perpetual-check loops; each round handles every loop
/// found, so more than a few means loops that keep re-forming.
const MAX_PERPETUAL_ROUNDS: usize = 16;

const MATE_I16: i16 = MATE as i16;

/// Counters of one analysis.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SolveStats {
    /// Nodes solved exactly by backward propagation.
    pub acyclic: usize,
    /// Nodes on or above cycles, solved by fixed-point iteration.
    pub cyclic: usize,
    /// Node evaluations of the fixed-point iteration.
    pub iterations: u64,
    /// Perpetual-check loops found and scored.
    pub perpetual_loops: usize,
    /// Nodes still changing when the iteration gave up (0: a true fixed point).
    pub unconverged: usize,
}

/// The propagated value of every node: its best move, that move's value (the
/// side to move's view) and the plies from the node to the leaf of its line.
#[derive(Debug, Clone, Default)]
pub struct Solution {
    value: Vec<i16>,
    depth: Vec<u16>,
    best_index: Vec<u16>,
    best_move: Vec<u16>,
    check_loop: BitSet,
    stats: SolveStats,
}

/// A candidate line: value, depth, canonical move index, raw move.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Line {
    value: i16,
    depth: u16,
    index: u16,
    mv: u16,
}

/// Compares two lines by value then depth: `Greater` when `a` is better.
/// Between equal values, at or above 0 the shorter line is better (win fast, draw
/// by the shortest known line), below 0 the longer (lose slowly).
///
/// ```
/// use std::cmp::Ordering;
/// use stera_book::terashock::compare_lines;
/// assert_eq!(compare_lines((30, 5), (20, 1)), Ordering::Greater);
/// assert_eq!(compare_lines((30, 2), (30, 5)), Ordering::Greater);
/// assert_eq!(compare_lines((-30, 2), (-30, 5)), Ordering::Less);
/// // Into a perpetual check: worse than any other line of its value.
/// use stera_book::terashock::DEPTH_PERPETUAL_CHECK;
/// assert_eq!(compare_lines((30, DEPTH_PERPETUAL_CHECK), (30, 9)), Ordering::Less);
/// ```
#[must_use]
pub fn compare_lines(a: (i16, u16), b: (i16, u16)) -> std::cmp::Ordering {
    a.0.cmp(&b.0).then_with(|| {
        let (pa, pb) = (a.1 == DEPTH_PERPETUAL_CHECK, b.1 == DEPTH_PERPETUAL_CHECK);
        if pa || pb {
            return pb.cmp(&pa);
        }
        if a.0 >= 0 {
            b.1.cmp(&a.1)
        } else {
            a.1.cmp(&b.1)
        }
    })
}

impl Line {
    fn better_than(self, other: Self) -> bool {
        match compare_lines((self.value, self.depth), (other.value, other.depth)) {
            std::cmp::Ordering::Greater => true,
            std::cmp::Ordering::Less => false,
            std::cmp::Ordering::Equal => self.index < other.index,
        }
    }
}

/// One ply more, saturating below [`DEPTH_PERPETUAL_CHECK`]; infinite stays
/// infinite.
#[inline]
#[must_use]
pub fn deeper(depth: u16) -> u16 {
    if depth == DEPTH_INFINITE {
        DEPTH_INFINITE
    } else {
        (depth + 1).min(DEPTH_PERPETUAL_CHECK - 1)
    }
}
impl Solution {
    /// The best move value of a node (its side to move's view), within ±32000.
    #[must_use]
    pub fn value(&self, id: NodeId) -> i16 {
        self.value[id.index()]
    }

    /// Plies from a node to the leaf of its best line ([`DEPTH_INFINITE`] for a
    /// line that never reaches one: a repetition).
    #[must_use]
    pub fn depth(&self, id: NodeId) -> u16 {
        self.depth[id.index()]
    }

    /// The best move of a node (`None` for a node without legal moves).
    #[must_use]
    pub fn best_move(&self, id: NodeId) -> Option<Move> {
        let i = id.index();
        if self.best_index[i] == NO_MOVE {
            None
        } else {
            Move::from_raw(self.best_move[i])
        }
    }

    /// The best move's index in the node's canonical move order.
    #[must_use]
    pub fn best_index(&self, id: NodeId) -> Option<usize> {
        let b = self.best_index[id.index()];
        (b != NO_MOVE).then_some(usize::from(b))
    }

    /// The value and depth of a move into thought node `child`, from the mover's
    /// view: `-(child value)`, child depth + 1.
    #[must_use]
    pub fn line_through(&self, child: NodeId) -> (i16, u16) {
        (-self.value(child), deeper(self.depth(child)))
    }

    /// Whether `id` is a position in check on a check loop: checks can go on
    /// from it for ever (some reply leads, two plies on, to another such
    /// position). Found on the whole graph as `peta_shock` finds them: start
    /// from every thought position in check and drop, until none is dropped,
    /// those without such a position two plies further.
    #[must_use]
    pub fn in_check_loop(&self, id: NodeId) -> bool {
        self.check_loop.contains(id.index())
    }

    /// What the analysis did.
    #[must_use]
    pub fn stats(&self) -> SolveStats {
        self.stats
    }

    /// The best value of node `i` from the current values of its children.
    fn evaluate_value(&self, g: &BookGraph, i: usize) -> i16 {
        let id = node(i);
        let mut best = g.leaf_best(id).map(|(v, _, _)| v);
        for e in g.edge_range(id) {
            let v = -self.value[g.edge_child(e) as usize];
            if best.is_none_or(|b| v > b) {
                best = Some(v);
            }
        }
        // No legal move: the side to move is mated.
        best.unwrap_or(-MATE_I16)
    }

    /// The best move of node `i` from the final values and depths: the first line
    /// by value, the depth rule and canonical order — for a losing side, among the
    /// lines no longer than its depth (a loop can make a line through it look
    /// longer than the line the depth step settled on).
    fn choose_best(&mut self, g: &BookGraph, i: usize) {
        let id = node(i);
        let mut best = g.leaf_best(id).map(|(value, index, mv)| Line {
            value,
            depth: 0,
            index,
            mv,
        });
        let limit = if self.value[i] < 0 {
            self.depth[i]
        } else {
            DEPTH_INFINITE
        };
        for e in g.edge_range(id) {
            let (value, depth) = self.line_through(NodeId(g.edge_child(e)));
            if value == self.value[i] && depth > limit {
                continue;
            }
            let cand = Line {
                value,
                depth,
                index: g.edge_index(e),
                mv: g.edge_move(e),
            };
            if best.is_none_or(|b| cand.better_than(b)) {
                best = Some(cand);
            }
        }
        match best {
            Some(b) => {
                self.best_index[i] = b.index;
                self.best_move[i] = b.mv;
            }
            None => {
                self.best_index[i] = NO_MOVE;
                self.best_move[i] = 0;
            }
        }
    }
}

/// Parents of every node (CSR, one entry per edge), in increasing parent id order.
struct Parents {
    start: Vec<u32>,
    parents: Vec<u32>,
}

impl Parents {
    fn of(&self, i: usize) -> &[u32] {
        &self.parents[self.start[i] as usize..self.start[i + 1] as usize]
    }
}

/// Solves the whole graph (see the module documentation). Deterministic.
#[must_use]
pub fn solve(g: &BookGraph) -> Solution {
    let n = g.len();
    let mut s = Solution {
        value: vec![0; n],
        depth: vec![DEPTH_INFINITE; n],
        best_index: vec![NO_MOVE; n],
        best_move: vec![0; n],
        check_loop: check_loops(g),
        stats: SolveStats::default(),
    };
    let parents = reverse_edges(g);

    // Values, acyclic part: backward propagation.
    let mut remaining: Vec<u16> = (0..n)
        .map(|i| u16::try_from(g.edge_range(node(i)).len()).unwrap_or(u16::MAX))
        .collect();
    let mut resolved = BitSet::with_len(n);
    let mut queue: Vec<u32> = (0..n)
        .filter(|&i| remaining[i] == 0)
        .map(|i| node(i).0)
        .collect();
    let mut head = 0;
    while head < queue.len() {
        let i = queue[head] as usize;
        head += 1;
        s.value[i] = s.evaluate_value(g, i);
        resolved.set(i, true);
        for &p in parents.of(i) {
            let r = &mut remaining[p as usize];
            *r -= 1;
            if *r == 0 {
                queue.push(p);
            }
        }
    }
    s.stats.acyclic = queue.len();
    drop(queue);
    drop(remaining);

    // Values, the rest: fixed point from the draw.
    let cyclic: Vec<usize> = (0..n).filter(|&i| !resolved.contains(i)).collect();
    s.stats.cyclic = cyclic.len();
    let budget = 1_000 + 200 * cyclic.len() as u64;
    let mut in_queue = BitSet::with_len(n);
    let mut work: VecDeque<u32> = VecDeque::with_capacity(cyclic.len());
    for &i in &cyclic {
        work.push_back(node(i).0);
        in_queue.set(i, true);
    }
    relax(
        g,
        &mut s,
        &parents,
        &resolved,
        &mut in_queue,
        &mut work,
        budget,
    );
    depths_and_best_moves(g, &mut s, &parents);

    let mut seeded: hashbrown::HashSet<Vec<u32>> = hashbrown::HashSet::new();
    for _ in 0..MAX_PERPETUAL_ROUNDS {
        let mut any = false;
        for group in perpetual_loops(g, &s, &cyclic) {
            let mut canonical: Vec<u32> = group.iter().map(|&(i, _)| i).collect();
            canonical.sort_unstable();
            if !seeded.insert(canonical) {
                continue;
            }
            any = true;
            s.stats.perpetual_loops += 1;
            for &(i, checker) in &group {
                let i = i as usize;
                s.value[i] = if checker { -MATE_I16 } else { MATE_I16 };
                for &x in std::iter::once(&node(i).0).chain(parents.of(i)) {
                    let x = x as usize;
                    if !resolved.contains(x) && !in_queue.contains(x) {
                        in_queue.set(x, true);
                        work.push_back(node(x).0);
                    }
                }
            }
        }
        if !any {
            break;
        }
        relax(
            g,
            &mut s,
            &parents,
            &resolved,
            &mut in_queue,
            &mut work,
            budget,
        );
        depths_and_best_moves(g, &mut s, &parents);
    }
    s
}

fn reverse_edges(g: &BookGraph) -> Parents {
    let n = g.len();
    let mut start = vec![0u32; n + 1];
    for i in 0..n {
        for e in g.edge_range(node(i)) {
            start[g.edge_child(e) as usize + 1] += 1;
        }
    }
    for i in 0..n {
        start[i + 1] += start[i];
    }
    let mut fill = start.clone();
    let mut parents = vec![0u32; g.edge_count()];
    for i in 0..n {
        for e in g.edge_range(node(i)) {
            let c = g.edge_child(e) as usize;
            parents[fill[c] as usize] = node(i).0;
            fill[c] += 1;
        }
    }
    Parents { start, parents }
}

/// Re-evaluates queued values until nothing changes or the budget is spent.
fn relax(
    g: &BookGraph,
    s: &mut Solution,
    parents: &Parents,
    resolved: &BitSet,
    in_queue: &mut BitSet,
    work: &mut VecDeque<u32>,
    budget: u64,
) {
    let mut spent = 0u64;
    while spent < budget {
        let Some(i) = work.pop_front() else { break };
        let i = i as usize;
        in_queue.set(i, false);
        spent += 1;
        s.stats.iterations += 1;
        let v = s.evaluate_value(g, i);
        if v != s.value[i] {
            s.value[i] = v;
            for &p in parents.of(i) {
                let p = p as usize;
                if !resolved.contains(p) && !in_queue.contains(p) {
                    in_queue.set(p, true);
                    work.push_back(node(p).0);
                }
            }
        }
    }
    s.stats.unconverged = work.len();
}

/// No resolved optimal child seen yet (per losing node).
const UNSEEN: u16 = u16::MAX;

/// Depths given the values (module documentation, step 2), then best moves.
fn depths_and_best_moves(g: &BookGraph, s: &mut Solution, parents: &Parents) {
    let n = g.len();
    s.depth.fill(DEPTH_INFINITE);
    let optimal_edge = |s: &Solution, p: usize, c: usize| -s.value[c] == s.value[p];
    // Per node: optimal edges not yet resolved; for losing nodes, the longest
    // resolved optimal line so far.
    let mut pending = vec![0u16; n];
    let mut longest = vec![UNSEEN; n];
    let mut buckets: Vec<Vec<u32>> = vec![Vec::new()];
    for i in 0..n {
        let id = node(i);
        let optimal_leaf = g.leaf_best(id).is_some_and(|(v, _, _)| v == s.value[i]);
        let count = g
            .edge_range(id)
            .filter(|&e| optimal_edge(s, i, g.edge_child(e) as usize))
            .count();
        pending[i] = u16::try_from(count).unwrap_or(u16::MAX);
        if optimal_leaf {
            longest[i] = 0;
        }
        let winning = s.value[i] >= 0;
        if (winning && optimal_leaf) || (!winning && count == 0) {
            s.depth[i] = 0;
            buckets[0].push(id.0);
        }
    }
    let mut level = 0usize;
    loop {
        while level < buckets.len() {
            let bucket = std::mem::take(&mut buckets[level]);
            for &c in &bucket {
                let c = c as usize;
                let d = deeper(s.depth[c]);
                for &p in parents.of(c) {
                    let p = p as usize;
                    if s.depth[p] != DEPTH_INFINITE || !optimal_edge(s, p, c) {
                        continue;
                    }
                    let resolve = if s.value[p] >= 0 {
                        true
                    } else {
                        pending[p] -= 1;
                        longest[p] = if longest[p] == UNSEEN {
                            d
                        } else {
                            longest[p].max(d)
                        };
                        pending[p] == 0
                    };
                    if resolve {
                        s.depth[p] = d;
                        push_bucket(&mut buckets, d, p);
                    }
                }
            }
            level += 1;
        }
        // Stuck: losing nodes waiting on loops take their longest ending line.
        let mut lowest = None;
        for (i, &d) in longest.iter().enumerate() {
            if s.depth[i] == DEPTH_INFINITE && s.value[i] < 0 && d != UNSEEN {
                s.depth[i] = d;
                push_bucket(&mut buckets, d, i);
                lowest = Some(lowest.map_or(d, |l: u16| l.min(d)));
            }
        }
        match lowest {
            Some(l) => level = usize::from(l),
            None => break,
        }
    }
    for i in 0..n {
        s.choose_best(g, i);
    }
}

fn push_bucket(buckets: &mut Vec<Vec<u32>>, depth: u16, i: usize) {
    let d = usize::from(depth);
    if buckets.len() <= d {
        buckets.resize_with(d + 1, Vec::new);
    }
    buckets[d].push(node(i).0);
}

/// The positions in check on check loops (see [`Solution::in_check_loop`]).
fn check_loops(g: &BookGraph) -> BitSet {
    let n = g.len();
    let mut on = BitSet::with_len(n);
    let mut alive: Vec<u32> = (0..n)
        .filter(|&i| g.in_check(node(i)))
        .map(|i| node(i).0)
        .collect();
    for &i in &alive {
        on.set(i as usize, true);
    }
    let children = |i: usize| g.edge_range(node(i)).map(|e| g.edge_child(e) as usize);
    loop {
        let before = alive.len();
        let mut k = 0;
        while k < alive.len() {
            let i = alive[k] as usize;
            let keeps = children(i).any(|c| children(c).any(|cc| on.contains(cc)));
            if keeps {
                k += 1;
            } else {
                on.set(i, false);
                alive.swap_remove(k);
            }
        }
        if alive.len() == before {
            return on;
        }
    }
}

/// Perpetual checks on lines of the draw: groups of positions valued 0 that the
/// moves achieving their value (moves into positions valued 0) link into loops in
/// which one side gives check with every move. Returned as (position, checker to
/// move) pairs, one group per strongly connected part of the checker's "check,
/// then any drawing reply" graph, in an order that does not depend on hashing.
///
/// Looking only at best moves would miss a loop whose checked side has an
/// escape worth exactly 0 that is shorter: the loop then lies on no best line,
/// keeps the draw value it started from, and the checker's move into it would
/// be worth 0, where by the rules the checked side can stay in the loop and let
/// the checker lose (peta_shock finds these too: it seeds every check loop).
fn perpetual_loops(g: &BookGraph, s: &Solution, cyclic: &[usize]) -> Vec<Vec<(u32, bool)>> {
    let drawn = |i: usize| s.value[i] == 0;
    let children = |i: usize| g.edge_range(node(i)).map(|e| g.edge_child(e) as usize);
    // The checker's graph: u -> w when u checks into v (valued 0) and v can
    // answer into w (valued 0); each edge keeps v, the checked position between.
    // Its nodes are the positions u and w, in the order first met.
    let mut local: hashbrown::HashMap<usize, NodeIndex> = hashbrown::HashMap::new();
    let mut checker_graph: DiGraph<usize, usize> = DiGraph::new();
    for &u in cyclic {
        if !drawn(u) {
            continue;
        }
        for v in children(u).filter(|&v| drawn(v) && g.in_check(node(v))) {
            for w in children(v).filter(|&w| drawn(w)) {
                let mut id =
                    |x: usize| *local.entry(x).or_insert_with(|| checker_graph.add_node(x));
                let (lu, lw) = (id(u), id(w));
                checker_graph.add_edge(lu, lw, v);
            }
        }
    }
    let mut groups = Vec::new();
    for part in kosaraju_scc(&checker_graph) {
        let cyclic_part = part.len() > 1 || checker_graph.contains_edge(part[0], part[0]);
        if !cyclic_part {
            continue;
        }
        let members: hashbrown::HashSet<NodeIndex> = part.iter().copied().collect();
        let mut group: Vec<(u32, bool)> = Vec::new();
        let mut checked: hashbrown::HashSet<usize> = hashbrown::HashSet::new();
        for &lu in &part {
            group.push((node(checker_graph[lu]).0, true));
            for e in checker_graph.edges(lu) {
                if members.contains(&e.target()) {
                    checked.insert(*e.weight());
                }
            }
        }
        // A position that checks in one loop and is checked in it: neither side
        // gives every check, so it is no perpetual check for either.
        if part.iter().any(|&lu| checked.contains(&checker_graph[lu])) {
            continue;
        }
        let mut checked: Vec<usize> = checked.into_iter().collect();
        checked.sort_unstable();
        group.extend(checked.into_iter().map(|v| (node(v).0, false)));
        groups.push(group);
    }
    groups
}
