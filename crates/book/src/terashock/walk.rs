//! Rebuilding every node's position cheaply: a depth-first walk of the origin
//! tree (node -> nodes whose origin is "after move m from it") from the nodes
//! given by SFEN, with one position per root that moves are made on and taken
//! back. Parsing an SFEN costs tens of microseconds; a move costs well under one.

use stera_rules::{Move, Position};

use super::{Progress, TeraShockError};
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
    let n = book.len();
    let node_id = |i: usize| NodeId(u32::try_from(i).unwrap_or(u32::MAX));
    let mut child_count = vec![0u32; n + 1];
    // Root ids only: an imported book may have millions of SFEN origins.
    let mut roots: Vec<usize> = Vec::new();
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
            Origin::Sfen(_) => roots.push(i),
        }
    }
    // CSR of the origin tree: children of node p are children[start[p]..start[p + 1]].
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
            children[*slot as usize] = u32::try_from(i).unwrap_or(u32::MAX);
            child_moves[*slot as usize] = mv.raw();
            *slot += 1;
        }
    }
    drop(fill);

    let total_nodes = n as u64;
    let mut visited = 0usize;
    let mut stack: Vec<(u32, u32)> = Vec::new();
    for root in roots {
        let root_id = node_id(root);
        let Origin::Sfen(sfen) = book.origin(root_id) else {
            continue;
        };
        let sfen = match root_plies.and_then(|p| p.get(root)).filter(|&&p| p > 0) {
            Some(ply) => format!("{sfen} {ply}"),
            None => sfen,
        };
        let mut pos = Position::from_sfen(&sfen)
            .map_err(|e| BookError::Corrupt(format!("SFEN origin of {root_id}: {e}")))?;
        check_key(book, root_id, &pos)?;
        visit(root_id, &pos)?;
        visited += 1;
        stack.clear();
        stack.push((root_id.0, start[root]));
        while let Some(top) = stack.last_mut() {
            let (node, cursor) = *top;
            if cursor < start[node as usize + 1] {
                top.1 += 1;
                let child = NodeId(children[cursor as usize]);
                let raw = child_moves[cursor as usize];
                let mv = Move::from_raw(raw)
                    .filter(|&m| pos.is_legal(m))
                    .ok_or_else(|| {
                        BookError::Corrupt(format!(
                            "origin move {raw:#06x} of {child} is illegal in `{}`",
                            pos.to_sfen()
                        ))
                    })?;
                pos.do_move(mv);
                check_key(book, child, &pos)?;
                visit(child, &pos)?;
                visited += 1;
                if visited.is_multiple_of(1 << 16) {
                    progress("positions", visited as u64, total_nodes);
                }
                stack.push((child.0, start[child.index()]));
            } else {
                stack.pop();
                if !stack.is_empty() {
                    pos.undo_move().map_err(|e| {
                        BookError::Corrupt(format!("taking back a move while walking: {e}"))
                    })?;
                }
            }
        }
    }
    progress("positions", visited as u64, total_nodes);
    if visited != n {
        return Err(BookError::Corrupt(format!(
            "{} of {n} nodes are not reached from any SFEN origin (their origin chain loops)",
            n - visited
        ))
        .into());
    }
    Ok(visited)
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
