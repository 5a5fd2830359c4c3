//! Rebuilding every node's position cheaply: a depth-first walk of the origin
//! tree (node -> nodes whose origin is "after move m from it") from the nodes
//! given by SFEN, with one position per subtree that moves are made on and
//! taken back. Parsing an SFEN costs tens of microseconds; a move costs well
//! under one.
//!
//! [`walk_positions`] visits the nodes one after the other (parents before
//! children); [`walk_in_parallel`] cuts the tree into subtrees of similar
//! sizes and walks them on every core, each into a state of its own that is
//! merged in a fixed order, so that what it builds does not depend on the
//! number of threads.

use rayon::prelude::*;
use stera_rules::{Move, Position};

use super::{Progress, TeraShockError};
use crate::bitset::BitSet;
use crate::{Book, BookError, NodeId, Origin};

/// Calls `visit` once for every node of `book` with its position (without the
/// game history before its SFEN root; the ply counts from the root's ply in
/// `root_plies`, indexed by node id, or from 1 without it). The order is deterministic: roots in id order, each origin subtree
/// depth first, children in id order. Returns the number of nodes visited.
///
/// # Errors
/// [`BookError::Corrupt`] for an origin SFEN that does not parse, an origin move
/// that is illegal, a position whose key differs from the node's, or nodes that
/// no SFEN origin reaches; any error `visit` returns.
pub fn walk_positions(
    book: &Book,
    root_plies: Option<&[u16]>,
    progress: Progress<'_>,
    visit: &mut dyn FnMut(NodeId, &Position) -> Result<(), TeraShockError>,
) -> Result<usize, TeraShockError> {
    let tree = OriginTree::new(book)?;
    let total_nodes = book.len() as u64;
    let mut scratch = Scratch::default();
    let mut visited = 0usize;
    for &root in &tree.roots {
        let mut pos = tree.root_position(book, root, root_plies)?;
        visited += tree.walk_subtree(
            book,
            root,
            &mut pos,
            &|_| false,
            &mut scratch,
            &mut |node| visit(node.id, node.pos),
            &mut |done| progress("positions", (visited + done) as u64, total_nodes),
        )?;
    }
    progress("positions", visited as u64, total_nodes);
    tree.check_all_reached(visited)?;
    Ok(visited)
}

/// What [`walk_in_parallel`] calls for every node, with the state of the
/// part of the walk it belongs to.
pub(crate) type ParallelVisitor<'a, S> =
    &'a (dyn Fn(&mut S, &WalkNode<'_>) -> Result<(), TeraShockError> + Sync);

/// A node as the walk reaches it.
pub(crate) struct WalkNode<'a> {
    pub(crate) id: NodeId,
    pub(crate) pos: &'a Position,
    /// Its legal moves in canonical order.
    pub(crate) moves: &'a [Move],
    /// The nodes whose origin is a move from it, and those moves (raw): the
    /// children whose keys the walk checks, which need no look-up.
    pub(crate) children: &'a [u32],
    pub(crate) child_moves: &'a [u16],
}

/// [`walk_positions`] on every core: the origin tree is cut into parts of
/// similar sizes (whole subtrees, and the few large nodes above them), each
/// walked from its own position into a state made by `new_state`; the states
/// go to `merge` in the order of the parts in the sequential walk, whatever
/// the number of threads. Nodes come with their legal moves (the walk needs
/// them to check the origin moves).
///
/// # Errors
/// As [`walk_positions`], and any error `visit` or `merge` returns.
pub(crate) fn walk_in_parallel<S: Send>(
    book: &Book,
    root_plies: Option<&[u16]>,
    progress: Progress<'_>,
    new_state: &(dyn Fn() -> S + Sync),
    visit: ParallelVisitor<'_, S>,
    merge: &mut dyn FnMut(S) -> Result<(), TeraShockError>,
) -> Result<usize, TeraShockError> {
    let tree = OriginTree::new(book)?;
    let parts = tree.parts()?;
    let total_nodes = book.len() as u64;
    let mut visited = 0usize;
    // Rounds of parts: their states are merged (and progress reported) before
    // the next round starts, which bounds the memory the states hold.
    for round in parts.units.chunks(PARTS_PER_ROUND) {
        let states: Vec<(S, usize)> = round
            .par_iter()
            .map(|unit| {
                let mut state = new_state();
                let mut scratch = Scratch::default();
                let mut count = 0;
                for &top in &parts.tops[unit.clone()] {
                    let mut pos = tree.position_of(book, top, root_plies)?;
                    count += tree.walk_subtree(
                        book,
                        top,
                        &mut pos,
                        &|child| parts.is_top.contains(child as usize),
                        &mut scratch,
                        &mut |node| visit(&mut state, node),
                        &mut |_| {},
                    )?;
                }
                Ok((state, count))
            })
            .collect::<Result<_, TeraShockError>>()?;
        for (state, count) in states {
            merge(state)?;
            visited += count;
        }
        progress("positions", visited as u64, total_nodes);
    }
    tree.check_all_reached(visited)?;
    Ok(visited)
}

/// Parts walked per round of [`walk_in_parallel`].
const PARTS_PER_ROUND: usize = 32;

/// Nodes per part of [`walk_in_parallel`]: enough for a part's start (its
/// position rebuilt from an SFEN) to cost nothing, few enough for the cores to
/// share the work evenly.
fn part_size(nodes: usize) -> usize {
    (nodes / 512).clamp(1024, 1 << 16)
}

/// The origin tree of a book, children of a node in id order.
struct OriginTree {
    /// Children of node p are `children[start[p]..start[p + 1]]`.
    start: Vec<u32>,
    children: Vec<u32>,
    /// The move from the parent to each child.
    child_moves: Vec<u16>,
    /// Nodes with SFEN origins, in id order.
    roots: Vec<u32>,
}

/// Buffers of a walk, reused from subtree to subtree.
#[derive(Default)]
struct Scratch {
    /// (node, next child index) from the top of the subtree down.
    stack: Vec<(u32, u32)>,
    /// The legal moves of the node at each level of `stack`.
    levels: Vec<Vec<Move>>,
}

/// How [`walk_in_parallel`] shares the tree out.
struct Parts {
    /// The nodes each part's walks start from, in the sequential walk's order.
    tops: Vec<u32>,
    is_top: BitSet,
    /// Ranges of `tops` walked as one part.
    units: Vec<std::ops::Range<usize>>,
}

fn node_id(i: usize) -> NodeId {
    NodeId(u32::try_from(i).unwrap_or(u32::MAX))
}

impl OriginTree {
    fn new(book: &Book) -> Result<Self, TeraShockError> {
        let n = book.len();
        let mut child_count = vec![0u32; n + 1];
        // Root ids only: an imported book may have millions of SFEN origins.
        let mut roots: Vec<u32> = Vec::new();
        for i in 0..n {
            match book.origin(node_id(i)) {
                Origin::Child { parent, .. } => {
                    if parent.index() >= n {
                        return Err(BookError::Corrupt(format!(
                            "node {} has parent {parent}, not in the book",
                            node_id(i)
                        ))
                        .into());
                    }
                    child_count[parent.index()] += 1;
                }
                Origin::Sfen(_) => roots.push(node_id(i).0),
            }
        }
        let mut start = Vec::with_capacity(n + 1);
        let mut total = 0u32;
        for c in &child_count {
            start.push(total);
            total += c;
        }
        drop(child_count);
        let mut fill = start.clone();
        let mut children = vec![0u32; total as usize];
        let mut child_moves = vec![0u16; total as usize];
        for i in 0..n {
            if let Origin::Child { parent, mv } = book.origin(node_id(i)) {
                let slot = &mut fill[parent.index()];
                children[*slot as usize] = node_id(i).0;
                child_moves[*slot as usize] = mv.raw();
                *slot += 1;
            }
        }
        Ok(Self {
            start,
            children,
            child_moves,
            roots,
        })
    }

    fn nodes(&self) -> usize {
        self.start.len() - 1
    }

    fn node<'a>(&'a self, id: NodeId, pos: &'a Position, moves: &'a [Move]) -> WalkNode<'a> {
        let range = self.child_range(id.0);
        WalkNode {
            id,
            pos,
            moves,
            children: &self.children[range.clone()],
            child_moves: &self.child_moves[range],
        }
    }

    fn child_range(&self, node: u32) -> std::ops::Range<usize> {
        self.start[node as usize] as usize..self.start[node as usize + 1] as usize
    }

    fn check_all_reached(&self, visited: usize) -> Result<(), TeraShockError> {
        let n = self.nodes();
        if visited == n {
            return Ok(());
        }
        Err(BookError::Corrupt(format!(
            "{} of {n} nodes are not reached from any SFEN origin (their origin chain loops)",
            n.saturating_sub(visited)
        ))
        .into())
    }

    /// The position of SFEN origin `root`, at its ply in `root_plies`.
    fn root_position(
        &self,
        book: &Book,
        root: u32,
        root_plies: Option<&[u16]>,
    ) -> Result<Position, TeraShockError> {
        let root_id = NodeId(root);
        let Origin::Sfen(sfen) = book.origin(root_id) else {
            return Err(BookError::Corrupt(format!("{root_id} has no SFEN origin")).into());
        };
        let sfen = match root_plies
            .and_then(|p| p.get(root as usize))
            .filter(|&&p| p > 0)
        {
            Some(ply) => format!("{sfen} {ply}"),
            None => sfen,
        };
        Ok(Position::from_sfen(&sfen)
            .map_err(|e| BookError::Corrupt(format!("SFEN origin of {root_id}: {e}")))?)
    }

    /// The position of any node as the walk reaches it: its SFEN root's, then
    /// the origin moves down to it.
    fn position_of(
        &self,
        book: &Book,
        id: u32,
        root_plies: Option<&[u16]>,
    ) -> Result<Position, TeraShockError> {
        let mut path = Vec::new();
        let mut cur = NodeId(id);
        while let Origin::Child { parent, mv } = book.origin(cur) {
            if path.len() >= self.nodes() {
                return Err(BookError::Corrupt(format!("the origin chain of {id} loops")).into());
            }
            path.push((cur, mv));
            cur = parent;
        }
        let mut pos = self.root_position(book, cur.0, root_plies)?;
        for &(child, mv) in path.iter().rev() {
            if !pos.is_legal(mv) {
                return Err(illegal_origin(mv.raw(), child, &pos));
            }
            pos.do_move(mv);
        }
        Ok(pos)
    }

    /// Every subtree the walk in parallel starts from: the SFEN roots, and the
    /// nodes of at most [`part_size`] nodes below a larger parent; grouped in
    /// parts of about that size.
    fn parts(&self) -> Result<Parts, TeraShockError> {
        let n = self.nodes();
        // Preorder of the tree (no positions): subtree sizes come from it backwards.
        let mut order: Vec<u32> = Vec::with_capacity(n);
        let mut stack: Vec<u32> = Vec::new();
        for &root in &self.roots {
            stack.push(root);
            while let Some(node) = stack.pop() {
                order.push(node);
                // Reversed, so that children come off the stack in id order.
                stack.extend(self.children[self.child_range(node)].iter().rev());
            }
        }
        self.check_all_reached(order.len())?;
        let mut sizes = vec![1u32; n];
        for &node in order.iter().rev() {
            let below: u32 = self.children[self.child_range(node)]
                .iter()
                .map(|&c| sizes[c as usize])
                .sum();
            sizes[node as usize] += below;
        }
        let limit = u32::try_from(part_size(n)).unwrap_or(u32::MAX);
        let mut is_top = BitSet::with_len(n);
        for &root in &self.roots {
            is_top.insert(root as usize);
        }
        let mut tops = Vec::new();
        let mut units = Vec::new();
        let (mut unit_start, mut unit_nodes) = (0usize, 0u64);
        for &node in &order {
            if sizes[node as usize] > limit {
                for &c in &self.children[self.child_range(node)] {
                    if sizes[c as usize] <= limit {
                        is_top.insert(c as usize);
                    }
                }
            }
            if !is_top.contains(node as usize) {
                continue;
            }
            tops.push(node);
            // A large root's own part is its nodes above the cut: few.
            unit_nodes += u64::from(sizes[node as usize].min(limit));
            if unit_nodes >= u64::from(limit) {
                units.push(unit_start..tops.len());
                (unit_start, unit_nodes) = (tops.len(), 0);
            }
        }
        if unit_start < tops.len() {
            units.push(unit_start..tops.len());
        }
        Ok(Parts {
            tops,
            is_top,
            units,
        })
    }

    /// Visits `top` (whose position is `pos`) and its subtree depth first,
    /// children in id order, leaving out the subtrees of children for which
    /// `skip` is true; `tick` hears the count every 65,536 nodes. Returns the
    /// nodes visited; `pos` is back at `top` afterwards.
    #[allow(clippy::too_many_arguments)]
    fn walk_subtree(
        &self,
        book: &Book,
        top: u32,
        pos: &mut Position,
        skip: &dyn Fn(u32) -> bool,
        scratch: &mut Scratch,
        visit: &mut dyn FnMut(&WalkNode<'_>) -> Result<(), TeraShockError>,
        tick: &mut dyn FnMut(usize),
    ) -> Result<usize, TeraShockError> {
        let Scratch { stack, levels } = scratch;
        if levels.is_empty() {
            levels.push(Vec::with_capacity(600));
        }
        check_key(book, NodeId(top), pos)?;
        pos.legal_moves_into(&mut levels[0]);
        visit(&self.node(NodeId(top), pos, &levels[0]))?;
        let mut visited = 1usize;
        stack.clear();
        stack.push((top, self.start[top as usize]));
        while let Some(last) = stack.last_mut() {
            let (node, cursor) = *last;
            if cursor < self.start[node as usize + 1] {
                last.1 += 1;
                let child = self.children[cursor as usize];
                if skip(child) {
                    continue;
                }
                let raw = self.child_moves[cursor as usize];
                let level = stack.len() - 1;
                let child_id = NodeId(child);
                // The parent's legal moves (canonical order: sorted by encoding).
                let mv = Move::from_raw(raw)
                    .filter(|m| levels[level].binary_search(m).is_ok())
                    .ok_or_else(|| illegal_origin(raw, child_id, pos))?;
                pos.do_move(mv);
                check_key(book, child_id, pos)?;
                if levels.len() <= level + 1 {
                    levels.push(Vec::with_capacity(600));
                }
                pos.legal_moves_into(&mut levels[level + 1]);
                visit(&self.node(child_id, pos, &levels[level + 1]))?;
                visited += 1;
                if visited.is_multiple_of(1 << 16) {
                    tick(visited);
                }
                stack.push((child, self.start[child as usize]));
            } else {
                stack.pop();
                if !stack.is_empty() {
                    pos.undo_move().map_err(|e| {
                        BookError::Corrupt(format!("taking back a move while walking: {e}"))
                    })?;
                }
            }
        }
        Ok(visited)
    }
}

fn illegal_origin(raw: u16, child: NodeId, pos: &Position) -> TeraShockError {
    BookError::Corrupt(format!(
        "origin move {raw:#06x} of {child} is illegal in `{}`",
        pos.to_sfen()
    ))
    .into()
}

fn check_key(book: &Book, id: NodeId, pos: &Position) -> Result<(), TeraShockError> {
    if book.key(id) == pos.key() {
        Ok(())
    } else {
        Err(BookError::Corrupt(format!(
            "node {id}: its origin chain leads to `{}` whose key is not the node's",
            pos.to_sfen()
        ))
        .into())
    }
}
