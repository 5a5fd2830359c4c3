//! Unit tests of the retrograde analysis on hand-built books.

use std::cmp::Ordering;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use stera_rules::{Key, Move, Position};

use super::*;
use crate::{Book, NodeId, Origin, ThoughtNode};

/// Builds books line by line: every position along a line becomes a node (once),
/// its values from `value(position, move index)`.
type ValueFn = Box<dyn Fn(&Position, usize) -> i16>;

struct Builder {
    book: Book,
    value: ValueFn,
}

impl Builder {
    fn new(value: impl Fn(&Position, usize) -> i16 + 'static) -> Self {
        Self {
            book: Book::new(),
            value: Box::new(value),
        }
    }

    fn node(&self, pos: &Position, origin: Origin) -> ThoughtNode {
        let n = pos.legal_move_count();
        ThoughtNode {
            key: pos.key(),
            origin,
            ply: 1,
            values: (0..n).map(|i| (self.value)(pos, i)).collect(),
            depths: None,
            evaluator: 0,
            timestamp: 0,
        }
    }

    /// Adds the start position and every position after each move of `line`.
    fn line(&mut self, start: &str, line: &[&str]) -> Vec<NodeId> {
        let mut pos = Position::from_sfen(start).unwrap();
        let node = self.node(&pos, Origin::Sfen(pos.to_sfen_without_ply()));
        let mut ids = vec![self.book.insert(&node).unwrap()];
        for usi in line {
            let mv = pos.parse_move(usi).unwrap();
            let parent = *ids.last().unwrap();
            pos.do_move(mv);
            let node = self.node(&pos, Origin::Child { parent, mv });
            ids.push(self.book.insert(&node).unwrap());
        }
        ids
    }

    /// Adds `lines` random lines from the start position, each of 1 to
    /// `max_plies - 1` moves chosen among the first `choices` legal moves (few
    /// choices per ply make many transpositions).
    fn random_lines(&mut self, rng: &mut StdRng, lines: usize, max_plies: usize, choices: usize) {
        let start = stera_rules::STARTPOS_SFEN;
        for _ in 0..lines {
            let mut pos = Position::from_sfen(start).unwrap();
            let mut line = Vec::new();
            for _ in 0..rng.random_range(1..max_plies) {
                let moves = pos.legal_moves();
                let mv = moves[rng.random_range(0..moves.len().min(choices))];
                line.push(mv.to_string());
                pos.do_move(mv);
            }
            let refs: Vec<&str> = line.iter().map(String::as_str).collect();
            self.line(start, &refs);
        }
    }
}

fn analyse(book: &Book) -> (BookGraph, Solution) {
    let graph = BookGraph::build(book, &mut |_, _, _| {}).unwrap();
    let solution = solve(&graph);
    (graph, solution)
}

/// A pseudo-random stored value from the position key and move index.
fn noise(pos: &Position, i: usize) -> i16 {
    let k = pos.key().0 ^ (i as u128).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    let h = (k ^ (k >> 61) ^ (k >> 17)) as u64;
    i16::try_from(h % 801).unwrap() - 400
}

/// Minimax by plain recursion over positions (no graph, no propagation order):
/// the value and depth of every move of the position, every leaf move valued
/// `discount` below its stored value, mates (beyond ±31000) excepted. `None` on
/// a cycle.
fn naive_lines(
    book: &Book,
    pos: &mut Position,
    on_path: &mut Vec<Key>,
    discount: i16,
) -> Option<Vec<(Move, i16, u16)>> {
    let id = book.get(pos.key())?;
    if on_path.contains(&pos.key()) {
        return None;
    }
    on_path.push(pos.key());
    let mut out = Vec::new();
    for (i, mv) in pos.legal_moves().into_iter().enumerate() {
        pos.do_move(mv);
        let line = if book.contains(pos.key()) {
            let best = naive_best(book, pos, on_path, discount);
            best.map(|(v, d)| (mv, -v, d + 1))
        } else if let Some(mut twin) = thought_twin(book, pos) {
            let best = naive_best(book, &mut twin, on_path, discount);
            best.map(|(v, d)| (mv, -v, d + 1))
        } else {
            let v = book.values(id)[i].clamp(-32000, 32000);
            let v = if v.abs() >= 31000 { v } else { v - discount };
            Some((mv, v, 0))
        };
        pos.undo_move().unwrap();
        out.push(line?);
    }
    on_path.pop();
    Some(out)
}

/// The colour-flipped twin of a position that is not thought, if the twin is:
/// built from flipped SFEN text, not with the key arithmetic the graph uses.
fn thought_twin(book: &Book, pos: &Position) -> Option<Position> {
    let twin = Position::from_sfen(&pos.flipped().to_sfen()).unwrap();
    book.contains(twin.key()).then_some(twin)
}

fn naive_best(
    book: &Book,
    pos: &mut Position,
    on_path: &mut Vec<Key>,
    discount: i16,
) -> Option<(i16, u16)> {
    let lines = naive_lines(book, pos, on_path, discount)?;
    if lines.is_empty() {
        return Some((-32000, 0));
    }
    let mut best = (lines[0].1, lines[0].2);
    for &(_, v, d) in &lines[1..] {
        // Written out rather than calling `compare_lines`, to stay independent.
        let better =
            v > best.0 || (v == best.0 && ((v >= 0 && d < best.1) || (v < 0 && d > best.1)));
        if better {
            best = (v, d);
        }
    }
    Some(best)
}

#[test]
fn retrograde_values_match_naive_minimax_on_random_acyclic_books() {
    let start = stera_rules::STARTPOS_SFEN;
    let mut checked_books = 0;
    for seed in 0..24u64 {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut b = Builder::new(noise);
        b.random_lines(&mut rng, 40, 7, 5);
        let book = &b.book;
        let (graph, solution) = analyse(book);
        let mut root = Position::from_sfen(start).unwrap();
        let Some(expected_root) = naive_best(book, &mut root, &mut Vec::new(), 0) else {
            continue; // a cycle: not for this test
        };
        checked_books += 1;
        let root_id = book.get(root.key()).unwrap();
        assert_eq!(
            (solution.value(root_id), solution.depth(root_id)),
            expected_root
        );
        assert_eq!(solution.stats().cyclic, 0);
        // Every move of every node, as the export lists them.
        let mut moves = Vec::new();
        let mut compared = 0;
        walk_positions(book, None, &mut |_, _, _| {}, &mut |id, pos| {
            let mut p = pos.clone();
            let mut expected = naive_lines(book, &mut p, &mut Vec::new(), 0).unwrap();
            let lines = node_lines(book, &graph, Some(&solution), None, id, pos, &mut moves)?;
            expected.sort_by(|a, b| compare_lines((b.1, b.2), (a.1, a.2)));
            let got: Vec<(Move, i16, u16)> =
                lines.iter().map(|l| (l.mv, l.value, l.depth)).collect();
            let key = |v: &Vec<(Move, i16, u16)>| {
                let mut v = v.clone();
                v.sort_by_key(|x| x.0.raw());
                v
            };
            assert_eq!(key(&got), key(&expected), "node {id}");
            // Best first.
            for w in got.windows(2) {
                assert_ne!(
                    compare_lines((w[0].1, w[0].2), (w[1].1, w[1].2)),
                    Ordering::Less
                );
            }
            compared += 1;
            Ok(())
        })
        .unwrap();
        assert_eq!(compared, book.len());
    }
    assert!(checked_books >= 8, "only {checked_books} acyclic books");
}

/// With a leaf discount, the analysis and the export's lines equal the naive
/// minimax over discounted leaves, and the discount changes best moves (so the
/// comparison is not of two unchanged books).
#[test]
fn a_leaf_discount_values_unthought_moves_below_their_stored_value() {
    const DISCOUNT: i16 = 7;
    let start = stera_rules::STARTPOS_SFEN;
    let (mut checked_books, mut changed_best) = (0, 0);
    for seed in 0..24u64 {
        let mut rng = StdRng::seed_from_u64(seed);
        // Values within a few centipawns: the expansion drop (the best of the
        // replies) is then smaller than the discount, which can turn best moves.
        let mut b = Builder::new(|pos: &Position, i: usize| noise(pos, i) / 100);
        b.random_lines(&mut rng, 40, 7, 5);
        let book = &b.book;
        let mut root = Position::from_sfen(start).unwrap();
        if naive_best(book, &mut root, &mut Vec::new(), 0).is_none() {
            continue; // a cycle: not for this test
        }
        checked_books += 1;
        let (plain_graph, plain) = analyse(book);
        let mut graph = BookGraph::build(book, &mut |_, _, _| {}).unwrap();
        graph.set_leaf_discount(DISCOUNT);
        let solution = solve(&graph);
        let mut moves = Vec::new();
        walk_positions(book, None, &mut |_, _, _| {}, &mut |id, pos| {
            let mut p = pos.clone();
            let expected = naive_lines(book, &mut p, &mut Vec::new(), DISCOUNT).unwrap();
            let lines = node_lines(book, &graph, Some(&solution), None, id, pos, &mut moves)?;
            let mut got: Vec<(Move, i16, u16)> =
                lines.iter().map(|l| (l.mv, l.value, l.depth)).collect();
            let mut expected = expected;
            got.sort_by_key(|x| x.0.raw());
            expected.sort_by_key(|x| x.0.raw());
            assert_eq!(got, expected, "node {id}");
            let before = node_lines(book, &plain_graph, Some(&plain), None, id, pos, &mut moves)?;
            if before[0].mv != lines[0].mv {
                changed_best += 1;
            }
            Ok(())
        })
        .unwrap();
    }
    assert!(checked_books >= 8, "only {checked_books} acyclic books");
    assert!(changed_best > 0, "the discount changed no best move");
}

#[test]
fn the_expansion_drop_compares_a_moves_stored_value_with_the_best_reply() {
    // Every position values its first move 30 and the others 0 (side to move's
    // view). After 7g7f, the reply's best is 30: 7g7f dropped from its stored
    // value to -30, by 30 + 30 = 60 if it was the first move, by 30 if not.
    let mut b = Builder::new(|_, i| if i == 0 { 30 } else { 0 });
    b.line(stera_rules::STARTPOS_SFEN, &["7g7f", "3c3d"]);
    let (graph, _) = analyse(&b.book);
    let start = Position::startpos();
    let first = start.legal_moves()[0].to_string() == "7g7f";
    let after = {
        let mut p = start.clone();
        p.do_move(p.parse_move("7g7f").unwrap());
        p.legal_moves()[0].to_string() == "3c3d"
    };
    let expected = [if first { 60 } else { 30 }, if after { 60 } else { 30 }];
    let drop = graph.expansion_drop(&b.book);
    assert_eq!(drop.moves, 2);
    assert_eq!(drop.mean, Some(f64::from(expected[0] + expected[1]) / 2.0));
    assert_eq!(drop.median, Some(expected[0].max(expected[1])));
    let empty = Book::new();
    let nothing = BookGraph::build(&empty, &mut |_, _, _| {}).unwrap();
    assert_eq!(nothing.expansion_drop(&empty).mean, None);
}

#[test]
fn a_leaf_discount_spares_mates_and_makes_none() {
    let mut graph = BookGraph::default();
    graph.set_leaf_discount(30);
    assert_eq!(graph.leaf_value(120), 90);
    assert_eq!(graph.leaf_value(-31_500), -31_500, "a mate stays a mate");
    assert_eq!(graph.leaf_value(31_999), 31_999);
    assert_eq!(
        graph.leaf_value(-30_990),
        -30_999,
        "a value never becomes a mate"
    );
}

#[test]
fn transposition_uses_the_child_value_even_for_moves_of_other_lines() {
    // 7g7f 3c3d 2g2f and 2g2f 3c3d 7g7f reach the same position.
    let mut b = Builder::new(|_, _| -10);
    let a = b.line(stera_rules::STARTPOS_SFEN, &["7g7f", "3c3d", "2g2f"]);
    let c = b.line(stera_rules::STARTPOS_SFEN, &["2g2f", "3c3d", "7g7f"]);
    assert_eq!(a[3], c[3]);
    let (graph, solution) = analyse(&b.book);
    // Edges: root->7g7f, root->2g2f, each -> its 3c3d child, and both 3c3d
    // children -> the shared node.
    assert_eq!(graph.edge_count(), 6);
    // The shared node: all leaves -10. Its parents: -(-10) = 10 at depth 1.
    assert_eq!((solution.value(a[3]), solution.depth(a[3])), (-10, 0));
    assert_eq!((solution.value(a[2]), solution.depth(a[2])), (10, 1));
    assert_eq!((solution.value(c[2]), solution.depth(c[2])), (10, 1));
    // 3c3d nodes' children are worth 10 to the mover: -10 at depth 2 vs leaves -10
    // at depth 0: equal values below 0 prefer the longer line.
    assert_eq!((solution.value(a[1]), solution.depth(a[1])), (-10, 2));
}

#[test]
fn a_move_whose_child_is_not_thought_but_its_flipped_twin_is_leads_to_the_twin() {
    // After 7g7f 3c3d the board is symmetric: the twin is the same board with
    // white to move. The book holds the twin (as an imported position would
    // be), not the child itself.
    let mut b = Builder::new(noise);
    let line = b.line(stera_rules::STARTPOS_SFEN, &["7g7f"]);
    let child = Position::from_position_command("startpos moves 7g7f 3c3d").unwrap();
    let twin_sfen = child.flipped().to_sfen();
    assert!(twin_sfen.contains(" w "), "{twin_sfen}");
    let twin = b.line(&twin_sfen, &[])[0];
    assert!(!b.book.contains(child.key()));
    let (graph, solution) = analyse(&b.book);
    let after = line[1];
    let mv: Move = "3c3d".parse().unwrap();
    let edge = graph.edges(after).find(|e| e.mv == mv);
    assert_eq!(edge.map(|e| e.child), Some(twin), "3c3d leads to the twin");
    assert_eq!(graph.edge_count(), 2, "7g7f, and 3c3d to the twin");
    let pos = Position::from_position_command("startpos moves 7g7f").unwrap();
    let mut moves = Vec::new();
    let lines = node_lines(
        &b.book,
        &graph,
        Some(&solution),
        None,
        after,
        &pos,
        &mut moves,
    )
    .unwrap();
    let got = lines.iter().find(|l| l.mv == mv).unwrap();
    assert_eq!(
        (got.value, got.depth),
        (-solution.value(twin), solution.depth(twin) + 1),
        "the move's value is the twin's, seen from the other side"
    );
    // Independent: the plain recursion over twins rebuilt from SFEN text.
    let mut p = pos.clone();
    let expected = naive_lines(&b.book, &mut p, &mut Vec::new(), 0).unwrap();
    let naive = expected.iter().find(|l| l.0 == mv).unwrap();
    assert_eq!((naive.1, naive.2), (got.value, got.depth));
}

#[test]
fn rook_shuffle_back_to_the_start_is_a_draw_with_infinite_depth() {
    let line = ["2h3h", "8b7b", "3h2h", "7b8b"];
    let mut b = Builder::new(|_, _| -50);
    let ids = b.line(stera_rules::STARTPOS_SFEN, &line);
    assert_eq!(ids[4], ids[0], "the shuffle returns to the start position");
    let (_, s) = analyse(&b.book);
    assert_eq!(s.stats().cyclic, 4);
    for &id in &ids[..4] {
        assert_eq!((s.value(id), s.depth(id)), (0, DEPTH_INFINITE), "{id}");
    }
    assert_eq!(s.best_move(ids[0]).unwrap().to_string(), "2h3h");
    assert_eq!(s.stats().unconverged, 0);

    // One good leaf for black after 2h3h 8b7b breaks the draw.
    let good = Position::from_position_command("startpos moves 2h3h 8b7b").unwrap();
    let good_key = good.key();
    let mut b = Builder::new(move |p, i| {
        if p.key() == good_key && i == 0 {
            100
        } else {
            -50
        }
    });
    let ids = b.line(stera_rules::STARTPOS_SFEN, &line);
    let (_, s) = analyse(&b.book);
    let line_of = |id| (s.value(id), s.depth(id));
    assert_eq!(line_of(ids[2]), (100, 0));
    // White after 2h3h: into that node -100 at depth 1, or a leaf -50.
    assert_eq!(line_of(ids[1]), (-50, 0));
    // Start: 2h3h is worth 50 at depth 1.
    assert_eq!(line_of(ids[0]), (50, 1));
    // White after 3h2h: 7b8b back to the start is -50 at depth 2, a tie with the
    // leaves at depth 0: below 0 the longer line is preferred.
    assert_eq!(line_of(ids[3]), (-50, 2));
    assert_eq!(s.best_move(ids[3]).unwrap().to_string(), "7b8b");
}

/// White king on 1a, black rook checks from the 1st and 2nd file in turn.
const PERPETUAL: &str = "8k/9/9/9/9/9/9/9/K6R1 b - 1";
const PERPETUAL_LINE: [&str; 4] = ["2i1i", "1a2a", "1i2i", "2a1a"];

#[test]
fn perpetual_check_loses_for_the_checker() {
    let mut b = Builder::new(|_, _| -100);
    let ids = b.line(PERPETUAL, &PERPETUAL_LINE);
    assert_eq!(ids[4], ids[0]);
    let (graph, s) = analyse(&b.book);
    assert!(graph.in_check(ids[1]) && graph.in_check(ids[3]));
    assert_eq!(s.stats().perpetual_loops, 1);
    // Without the rule the loop would be a draw (0) that beats every -100 leaf.
    // The checker (black) must leave the loop: it takes its best leaf, now or
    // after some checks; the line it settles on ends.
    assert_eq!(s.value(ids[0]), -100);
    assert_ne!(s.depth(ids[0]), DEPTH_INFINITE);
    // White at ids[3]: 2a1a leads to black's -100: +100.
    assert_eq!(s.value(ids[3]), 100);
    assert_ne!(s.depth(ids[3]), DEPTH_INFINITE);
    assert_eq!(s.stats().unconverged, 0);
}

#[test]
fn the_checkers_moves_into_a_check_loop_are_written_9997_and_lose_value_ties() {
    let mut b = Builder::new(|_, _| -100);
    let ids = b.line(PERPETUAL, &PERPETUAL_LINE);
    let (graph, s) = analyse(&b.book);
    // The checked positions of the loop, not the checker's.
    assert!(s.in_check_loop(ids[1]) && s.in_check_loop(ids[3]));
    assert!(!s.in_check_loop(ids[0]) && !s.in_check_loop(ids[2]));
    let pos = Position::from_sfen(PERPETUAL).unwrap();
    let mut moves = Vec::new();
    let lines = node_lines(&b.book, &graph, Some(&s), None, ids[0], &pos, &mut moves).unwrap();
    let into_loop = lines
        .iter()
        .position(|l| l.mv.to_string() == "2i1i")
        .unwrap();
    assert_eq!(lines[into_loop].depth, DEPTH_PERPETUAL_CHECK);
    // It ties the leaves at -100 and comes after all of them, written one lower.
    assert_eq!(lines[into_loop].value, -100);
    assert_eq!(into_loop, lines.len() - 1);
    assert!(
        lines[..into_loop]
            .iter()
            .all(|l| l.value == -100 && l.depth == 0)
    );
    let written: Vec<_> = book_moves(&lines, true).collect();
    assert_eq!(written[into_loop].depth, 9997);
    assert_eq!(written[into_loop].value, -101);
    assert_eq!((written[0].value, written[0].depth), (-100, 0));

    // A check the other side can end (the king steps where no rook move checks
    // again, here a book without the loop's second half) is no check loop.
    let mut open = Builder::new(|_, _| -100);
    let ids = open.line(PERPETUAL, &PERPETUAL_LINE[..2]);
    let (_, s) = analyse(&open.book);
    assert!(!s.in_check_loop(ids[1]));
}

#[test]
fn forced_perpetual_check_scores_mate_for_the_checked_side() {
    // Black's only alternatives are worse than any finite score: it is forced to
    // keep checking, and so loses.
    let mut p = Position::from_sfen(PERPETUAL).unwrap();
    let p0 = p.key();
    for usi in &PERPETUAL_LINE[..2] {
        let mv = p.parse_move(usi).unwrap();
        p.do_move(mv);
    }
    let p2 = p.key();
    let mut b = Builder::new(move |p, _| {
        if p.key() == p0 || p.key() == p2 {
            -32000
        } else {
            -100
        }
    });
    let ids = b.line(PERPETUAL, &PERPETUAL_LINE);
    let (_, s) = analyse(&b.book);
    assert_eq!(s.value(ids[0]), -32000);
    assert_eq!(s.value(ids[3]), 32000);
}

#[test]
fn mate_values_are_clamped_and_a_mated_node_scores_minus_mate() {
    // Black mates with G*5b: the child has no legal move.
    let sfen = "4k4/9/4P4/9/9/9/9/9/4K4 b G 1";
    let mut b = Builder::new(|_, i| if i == 0 { -32768 } else { -5 });
    let ids = b.line(sfen, &["G*5b"]);
    let (graph, s) = analyse(&b.book);
    assert_eq!(b.book.values(ids[1]).len(), 0);
    assert_eq!((s.value(ids[1]), s.depth(ids[1])), (-32000, 0));
    assert_eq!(s.best_move(ids[1]), None);
    assert_eq!((s.value(ids[0]), s.depth(ids[0])), (32000, 1));
    assert_eq!(s.best_move(ids[0]).unwrap().to_string(), "G*5b");
    // The stored -32768 of the first move is clamped to -32000.
    let pos = Position::from_sfen(sfen).unwrap();
    let lines = node_lines(
        &b.book,
        &graph,
        Some(&s),
        None,
        ids[0],
        &pos,
        &mut Vec::new(),
    )
    .unwrap();
    let first = lines.iter().find(|l| l.index == 0).unwrap();
    assert_eq!(first.value, -32000);
}

#[test]
fn a_value_count_that_does_not_match_the_position_is_an_error() {
    let pos = Position::startpos();
    let mut book = Book::new();
    book.insert(&ThoughtNode {
        key: pos.key(),
        origin: Origin::Sfen(pos.to_sfen_without_ply()),
        ply: 1,
        values: vec![0; 29],
        depths: None,
        evaluator: 0,
        timestamp: 0,
    })
    .unwrap();
    let err = BookGraph::build(&book, &mut |_, _, _| {}).unwrap_err();
    assert!(err.to_string().contains("29 values"), "{err}");
}

#[test]
fn analysis_is_deterministic() {
    let mut b = Builder::new(noise);
    for line in [
        &["7g7f", "3c3d", "2g2f"][..],
        &["2g2f", "3c3d", "7g7f", "8c8d"],
        &["2h3h", "8b7b", "3h2h", "7b8b"],
    ] {
        b.line(stera_rules::STARTPOS_SFEN, line);
    }
    let (_, a) = analyse(&b.book);
    let (_, c) = analyse(&b.book);
    let table = |s: &Solution| -> Vec<(i16, u16, Option<usize>)> {
        (0..b.book.len())
            .map(|i| {
                let id = NodeId(u32::try_from(i).unwrap());
                (s.value(id), s.depth(id), s.best_index(id))
            })
            .collect()
    };
    assert_eq!(table(&a), table(&c));
}

/// The export's bytes depend neither on the number of threads nor on how the
/// entries are split into formatting tasks, and every entry of the file is the
/// one `node_lines` gives for the position its SFEN names.
#[test]
fn export_bytes_do_not_depend_on_threads_or_chunks() {
    let mut rng = StdRng::seed_from_u64(77);
    let mut b = Builder::new(noise);
    b.random_lines(&mut rng, 120, 9, 6);
    let book = &b.book;
    assert!(book.len() > 300, "{}", book.len());
    let mut extras = NodeExtras::default();
    extras.plies = vec![0; book.len()];
    extras.timestamps = vec![0; book.len()];
    let dir = tempfile::tempdir().unwrap();
    for options in [
        ExportOptions::default(),
        ExportOptions {
            shrink: true,
            ..ExportOptions::default()
        },
        ExportOptions {
            raw: true,
            ..ExportOptions::default()
        },
    ] {
        let run_as = |format, threads: usize, chunk: usize, window: usize, name: &str| {
            let path = dir.path().join(name);
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let summary = pool
                .install(|| {
                    export::export_in_chunks(
                        book,
                        &extras,
                        &path,
                        &options,
                        &mut |_, _, _| {},
                        chunk,
                        window,
                        format,
                    )
                })
                .unwrap();
            assert_eq!(summary.written.entries_written, book.len() as u64);
            std::fs::read(&path).unwrap()
        };
        let run = |threads, chunk, window, name: &str| {
            run_as(export::BookFormat::Db2016, threads, chunk, window, name)
        };
        let one = run(1, 1 << 20, 1 << 20, "one.db");
        let many = run(3, 7, 20, "many.db");
        assert!(one == many, "bytes differ (options {options:?})");

        // The .ybb export is the text export converted, byte for byte, however
        // the work is split.
        let ybb_one = run_as(export::BookFormat::Ybb, 1, 1 << 20, 1 << 20, "one.ybb");
        let ybb_many = run_as(export::BookFormat::Ybb, 3, 7, 20, "many.ybb");
        let converted = dir.path().join("converted.ybb");
        stera_formats::ybb::convert_db2016(
            dir.path().join("one.db"),
            &converted,
            stera_formats::ybb::YbbOptions::default(),
        )
        .unwrap();
        let converted = std::fs::read(&converted).unwrap();
        assert!(
            ybb_one == converted,
            ".ybb differs from the conversion ({options:?})"
        );
        assert!(ybb_one == ybb_many, ".ybb bytes differ ({options:?})");

        // Read the file back: each entry is node_lines of its position.
        let (graph, solution) = analyse(book);
        let solution = (!options.raw).then_some(&solution);
        let entries: Vec<_> = stera_formats::db2016::Db2016Reader::open(dir.path().join("one.db"))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(entries.len(), book.len());
        assert!(entries.windows(2).all(|w| w[0].sfen() < w[1].sfen()));
        let mut moves = Vec::new();
        for entry in &entries {
            let pos = entry.position().unwrap();
            let id = book.get(pos.key()).unwrap();
            let mut lines =
                node_lines(book, &graph, solution, Some(&extras), id, &pos, &mut moves).unwrap();
            if options.shrink {
                let best = lines[0].value;
                lines.retain(|l| l.value == best);
            }
            let expected: Vec<(Move, Option<Move>, i32, i32)> = book_moves(&lines, !options.raw)
                .map(|m| (m.mv, m.ponder, m.value, m.depth))
                .collect();
            let got: Vec<(Move, Option<Move>, i32, i32)> = entry
                .moves
                .iter()
                .map(|m| (m.mv, m.ponder, m.value, m.depth))
                .collect();
            assert_eq!(got, expected, "{}", entry.sfen());
        }
    }
}

/// The export equals a plain reference writer byte for byte: every node's SFEN
/// as the rules core prints it (the stored ply, or the walk's where none is
/// stored), sorted as strings, its moves from `node_lines`. The book comes from
/// games of random moves, so positions have pieces in hand and promoted pieces,
/// and most of them are far from the few sampled for the SFEN code's dictionary.
#[test]
fn export_equals_a_reference_writer_on_a_book_of_random_games() {
    let mut rng = StdRng::seed_from_u64(91);
    let mut b = Builder::new(noise);
    for _ in 0..60 {
        let mut pos = Position::startpos();
        let mut line = Vec::new();
        for _ in 0..rng.random_range(1..70) {
            let moves = pos.legal_moves();
            if moves.is_empty() {
                break;
            }
            let mv = moves[rng.random_range(0..moves.len())];
            line.push(mv.to_string());
            pos.do_move(mv);
        }
        let refs: Vec<&str> = line.iter().map(String::as_str).collect();
        b.line(stera_rules::STARTPOS_SFEN, &refs);
    }
    let book = &b.book;
    let mut extras = NodeExtras::default();
    extras.plies = (0..book.len())
        .map(|i| if i % 3 == 0 { 0 } else { 40 + (i % 7) as u16 })
        .collect();
    extras.timestamps = vec![0; book.len()];
    let mut nodes: Vec<(String, NodeId, Position)> = (0..book.len())
        .map(|i| {
            let id = NodeId(u32::try_from(i).unwrap());
            // The root's ply is stored as 0, so the walk counts from 1.
            let pos = book.position_of(id).unwrap();
            let sfen = match extras.plies[i] {
                0 => pos.to_sfen(),
                ply => format!("{} {ply}", pos.to_sfen_without_ply()),
            };
            (sfen, id, pos)
        })
        .collect();
    assert!(
        nodes
            .iter()
            .any(|(s, _, _)| s.split(' ').nth(2) != Some("-"))
    );
    assert!(nodes.iter().any(|(s, _, _)| s.contains('+')));
    nodes.sort_by(|a, b| a.0.cmp(&b.0));
    let (graph, solution) = analyse(book);
    let mut want = Vec::new();
    let mut moves = Vec::new();
    for (sfen, id, pos) in &nodes {
        want.extend_from_slice(format!("sfen {sfen}\r\n").as_bytes());
        let lines = node_lines(
            book,
            &graph,
            Some(&solution),
            Some(&extras),
            *id,
            pos,
            &mut moves,
        )
        .unwrap();
        for m in book_moves(&lines, true) {
            stera_formats::db2016::format_move_line(&mut want, &m);
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("book.db");
    export_db2016(
        book,
        &extras,
        &path,
        &ExportOptions::default(),
        &mut |_, _, _| {},
    )
    .unwrap();
    let file = std::fs::read(&path).unwrap();
    let body = &file[file.windows(5).position(|w| w == b"sfen ").unwrap()..];
    assert!(
        body == want.as_slice(),
        "the export differs from the reference"
    );
}

/// Writes `book` with `options` (plies 0) and returns the file's bytes.
fn export_bytes(
    book: &Book,
    options: &ExportOptions,
    dir: &std::path::Path,
    name: &str,
) -> Vec<u8> {
    let mut extras = NodeExtras::default();
    extras.plies = vec![0; book.len()];
    extras.timestamps = vec![0; book.len()];
    let path = dir.join(name);
    export_db2016(book, &extras, &path, options, &mut |_, _, _| {}).unwrap();
    std::fs::read(&path).unwrap()
}

/// Books with transpositions, a repetition cycle and a perpetual check.
fn sample_books() -> Vec<(&'static str, Book)> {
    let mut rng = StdRng::seed_from_u64(5);
    let mut random = Builder::new(noise);
    random.random_lines(&mut rng, 150, 9, 5);
    let mut shuffle = Builder::new(noise);
    shuffle.line(
        stera_rules::STARTPOS_SFEN,
        &["2h3h", "8b7b", "3h2h", "7b8b"],
    );
    shuffle.line(stera_rules::STARTPOS_SFEN, &["7g7f", "3c3d", "2g2f"]);
    let mut perpetual = Builder::new(|_, _| -100);
    perpetual.line(PERPETUAL, &PERPETUAL_LINE);
    vec![
        ("random", random.book),
        ("shuffle", shuffle.book),
        ("perpetual", perpetual.book),
    ]
}

#[test]
fn softmax_export_at_temperature_toward_zero_is_the_minimax_export_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    for (name, book) in sample_books() {
        let minimax = export_bytes(&book, &ExportOptions::default(), dir.path(), "minimax");
        for t in [1e-3, 0.0] {
            let options = ExportOptions {
                backup: Backup::Softmax,
                temperature: t,
                ..ExportOptions::default()
            };
            let softmax = export_bytes(&book, &options, dir.path(), "softmax");
            assert!(softmax == minimax, "{name}: T={t} differs from minimax");
        }
        // A real temperature changes values (the test can fail).
        let warm = ExportOptions {
            backup: Backup::Softmax,
            temperature: 200.0,
            ..ExportOptions::default()
        };
        if name == "random" {
            assert!(export_bytes(&book, &warm, dir.path(), "warm") != minimax);
        }
    }
}

/// Softmax backup by plain recursion over positions (no graph, no order).
fn naive_softmax(book: &Book, pos: &mut Position, t: f64) -> f64 {
    let id = book.get(pos.key()).unwrap();
    let mut q = Vec::new();
    for (i, mv) in pos.legal_moves().into_iter().enumerate() {
        pos.do_move(mv);
        let v = if book.contains(pos.key()) {
            -naive_softmax(book, pos, t)
        } else if let Some(mut twin) = thought_twin(book, pos) {
            -naive_softmax(book, &mut twin, t)
        } else {
            f64::from(book.values(id)[i].clamp(-32000, 32000))
        };
        pos.undo_move().unwrap();
        q.push(v);
    }
    // Written out: Σ q e^{q/T} / Σ e^{q/T}, shifted by the max for range.
    let max = q.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let w: Vec<f64> = q.iter().map(|v| ((v - max) / t).exp()).collect();
    q.iter().zip(&w).map(|(v, w)| v * w).sum::<f64>() / w.iter().sum::<f64>()
}

#[test]
fn softmax_values_equal_a_plain_recursion_on_random_acyclic_books() {
    let mut checked = 0;
    for seed in 0..24 {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut b = Builder::new(noise);
        b.random_lines(&mut rng, 60, 7, 8);
        let (graph, solution) = analyse(&b.book);
        if solution.stats().cyclic > 0 {
            continue; // a cycle: not for this test
        }
        checked += 1;
        for t in [20.0, 50.0, 400.0] {
            let sm = SoftmaxValues::solve(&b.book, &graph, &solution, t);
            assert_eq!((sm.cyclic, sm.unconverged), (0, 0));
            let mut pos = Position::startpos();
            let id = b.book.get(pos.key()).unwrap();
            let expected = naive_softmax(&b.book, &mut pos, t);
            assert!(
                (sm.value(id) - expected).abs() < 1e-9,
                "seed {seed} T={t}: {} vs {expected}",
                sm.value(id)
            );
            // Softmax never exceeds the max; at a high temperature it is lower.
            assert!(sm.value(id) <= f64::from(solution.value(id)) + 1e-9);
        }
    }
    assert!(checked >= 4, "only {checked} acyclic books");
}

#[test]
fn softmax_backup_on_a_cycle_terminates_at_a_fixed_point() {
    let mut b = Builder::new(noise);
    let ids = b.line(
        stera_rules::STARTPOS_SFEN,
        &["2h3h", "8b7b", "3h2h", "7b8b"],
    );
    let (graph, solution) = analyse(&b.book);
    let sm = SoftmaxValues::solve(&b.book, &graph, &solution, 100.0);
    assert_eq!(sm.cyclic, 4);
    assert_eq!(sm.unconverged, 0);
    // At the fixed point each node is the softmax mean of its moves.
    for &id in &ids[..4] {
        let values = b.book.values(id);
        let mut q: Vec<f64> = values.iter().map(|&v| f64::from(v)).collect();
        for e in graph.edges(id) {
            q[usize::from(e.index)] = -sm.value(e.child);
        }
        assert!(
            (softmax_mean(&q, 100.0) - sm.value(id)).abs() < 0.05,
            "{id}"
        );
    }
}

#[test]
fn policy_weights_sum_to_the_scale_and_follow_the_values() {
    let dir = tempfile::tempdir().unwrap();
    let (_, book) = sample_books().swap_remove(0);
    let options = ExportOptions {
        backup: Backup::Softmax,
        weights: Weights::Policy,
        temperature: 50.0,
        ..ExportOptions::default()
    };
    export_bytes(&book, &options, dir.path(), "policy");
    let entries: Vec<_> = stera_formats::db2016::Db2016Reader::open(dir.path().join("policy"))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(entries.len(), book.len());
    let mut spread = 0;
    for entry in &entries {
        let sum: u64 = entry.moves.iter().map(|m| m.count).sum();
        assert_eq!(sum, COUNT_SCALE, "{}", entry.sfen());
        for w in entry.moves.windows(2) {
            if w[0].value > w[1].value {
                assert!(w[0].count >= w[1].count, "{}", entry.sfen());
            }
        }
        spread += usize::from(entry.moves.iter().filter(|m| m.count > 0).count() > 1);
    }
    assert!(spread > 0, "some positions share their weight among moves");
}

/// A normal sample (Box–Muller), independent of the quadrature under test.
fn gaussian(rng: &mut StdRng) -> f64 {
    let u1: f64 = rng.random_range(f64::EPSILON..1.0);
    let u2: f64 = rng.random_range(0.0..1.0);
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

#[test]
fn best_probabilities_equal_monte_carlo_sampling() {
    let mut rng = StdRng::seed_from_u64(11);
    let cases: Vec<Vec<(f64, f64)>> = vec![
        vec![(0.55, 0.05), (0.50, 0.05)],
        vec![(0.6, 0.1), (0.5, 0.02), (0.45, 0.15)],
        vec![(0.5, 0.01), (0.5, 0.1), (0.52, 0.05), (0.3, 0.2)],
        vec![(0.9, 0.3), (0.5, 0.03)],
    ];
    for case in cases {
        let rates: Vec<WinRate> = case
            .iter()
            .map(|&(mean, sd)| WinRate { mean, var: sd * sd })
            .collect();
        let p = best_probabilities(&rates);
        let samples = 200_000;
        let mut wins = vec![0u32; rates.len()];
        for _ in 0..samples {
            let mut best = (f64::NEG_INFINITY, 0);
            for (i, &(mean, sd)) in case.iter().enumerate() {
                let x = mean + sd * gaussian(&mut rng);
                if x > best.0 {
                    best = (x, i);
                }
            }
            wins[best.1] += 1;
        }
        for (i, &w) in wins.iter().enumerate() {
            let mc = f64::from(w) / f64::from(samples);
            // Three standard errors of the sampling at most ~0.0034.
            assert!(
                (p[i] - mc).abs() < 0.005,
                "{case:?}: move {i}: {} vs {mc}",
                p[i]
            );
        }
        assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-12);
    }
}

#[test]
fn the_cap_holds_and_the_rest_is_renormalised() {
    let mut rng = StdRng::seed_from_u64(3);
    for _ in 0..2000 {
        let n = rng.random_range(1..6);
        let raw: Vec<f64> = (0..n).map(|_| rng.random_range(0.0..1.0)).collect();
        let total: f64 = raw.iter().sum();
        let p: Vec<f64> = raw.iter().map(|v| v / total).collect();
        let prior_raw: Vec<f64> = (0..n).map(|_| rng.random_range(0.01..1.0)).collect();
        let prior_total: f64 = prior_raw.iter().sum::<f64>() * rng.random_range(1.0..3.0);
        let prior: Vec<f64> = prior_raw.iter().map(|v| v / prior_total).collect();
        let mass: f64 = prior.iter().sum();
        let w = cap_to_prior(&p, &prior, mass);
        assert!(
            (w.iter().sum::<f64>() - mass).abs() < 1e-9,
            "{p:?} {prior:?} {w:?}"
        );
        for i in 0..n {
            assert!(w[i] <= 2.0 * prior[i] + 1e-12, "{p:?} {prior:?} {w:?}");
        }
        // Uncapped moves keep the proportions of p among themselves.
        let free: Vec<usize> = (0..n).filter(|&i| w[i] < 2.0 * prior[i] - 1e-12).collect();
        for pair in free.windows(2) {
            let (a, b) = (pair[0], pair[1]);
            assert!(
                (w[a] * p[b] - w[b] * p[a]).abs() < 1e-9,
                "{p:?} {prior:?} {w:?}"
            );
        }
    }
}

fn counts(wins: u32, draws: u32, losses: u32) -> crate::GameCounts {
    crate::GameCounts {
        wins,
        draws,
        losses,
    }
}

#[test]
fn a_position_with_one_move_gets_probability_one() {
    // White king on 1a, black rook on 3b: 1a2a is white's only move.
    let only = "8k/6R2/9/9/9/9/9/9/K8 w - 1";
    assert_eq!(Position::from_sfen(only).unwrap().legal_move_count(), 1);
    let mut b = Builder::new(noise);
    let ids = b.line(only, &["1a2a"]);
    let (graph, solution) = analyse(&b.book);
    let games = std::collections::HashMap::from([(ids[1].0, counts(3, 1, 6))]);
    let w = NdfWeights::solve(&b.book, &graph, &solution, None, &games, 50.0);
    assert_eq!(w.of(ids[0]), Some(&[1.0][..]));
}

#[test]
fn ndf_weights_follow_the_results_within_the_cap_and_cycles_terminate() {
    // Two thought replies at the start with equal values: the one whose games
    // go well for the mover gets more weight, at most twice its prior.
    let mut b = Builder::new(|_, _| 0);
    let a = b.line(stera_rules::STARTPOS_SFEN, &["7g7f"]);
    let c = b.line(stera_rules::STARTPOS_SFEN, &["2g2f"]);
    let (graph, solution) = analyse(&b.book);
    // From the child's side to move (white): 7g7f's child loses often for white.
    let games = std::collections::HashMap::from([
        (a[1].0, counts(10, 10, 80)),
        (c[1].0, counts(50, 10, 40)),
    ]);
    let w = NdfWeights::solve(&b.book, &graph, &solution, None, &games, 50.0);
    let root = w.of(a[0]).unwrap();
    let pos = Position::startpos();
    let moves = pos.legal_moves();
    let index = |usi: &str| moves.iter().position(|m| m.to_string() == usi).unwrap();
    let prior = 1.0 / moves.len() as f64;
    // 7g7f takes nearly all of the pair's prior mass (2/30), never more than twice its own.
    assert!(
        root[index("7g7f")] <= 2.0 * prior + 1e-12,
        "capped at twice"
    );
    assert!(
        root[index("7g7f")] > 1.99 * prior,
        "{}",
        root[index("7g7f")]
    );
    assert!(
        root[index("2g2f")] < prior,
        "the move whose games go badly loses weight"
    );
    assert!((root.iter().sum::<f64>() - 1.0).abs() < 1e-12);

    // A repetition cycle with games on every node: the sweeps end.
    let mut b = Builder::new(noise);
    let ids = b.line(
        stera_rules::STARTPOS_SFEN,
        &["2h3h", "8b7b", "3h2h", "7b8b"],
    );
    let (graph, solution) = analyse(&b.book);
    let games: std::collections::HashMap<u32, crate::GameCounts> = ids[..4]
        .iter()
        .enumerate()
        .map(|(k, id)| (id.0, counts(5 + k as u32, 3, 7)))
        .collect();
    let w = NdfWeights::solve(&b.book, &graph, &solution, None, &games, 50.0);
    assert_eq!(w.cyclic, 4);
    for id in &ids[..4] {
        let p = w.of(*id).unwrap();
        assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-9);
    }
}

#[test]
fn an_ndf_export_writes_game_weights_summing_to_the_scale() {
    let mut b = Builder::new(|_, _| 0);
    let a = b.line(stera_rules::STARTPOS_SFEN, &["7g7f"]);
    let c = b.line(stera_rules::STARTPOS_SFEN, &["2g2f"]);
    let mut extras = NodeExtras::default();
    extras.plies = vec![0; b.book.len()];
    extras.timestamps = vec![0; b.book.len()];
    extras.games = std::collections::HashMap::from([
        (a[1].0, counts(10, 10, 80)),
        (c[1].0, counts(50, 10, 40)),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ndf.db");
    let options = ExportOptions {
        weights: Weights::Ndf,
        temperature: 50.0,
        ..ExportOptions::default()
    };
    let summary = export_db2016(&b.book, &extras, &path, &options, &mut |_, _, _| {}).unwrap();
    assert_eq!(summary.ndf_positions, 1);
    let entries: Vec<_> = stera_formats::db2016::Db2016Reader::open(&path)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let start = entries
        .iter()
        .find(|e| e.position().unwrap().key() == Position::startpos().key())
        .unwrap();
    let count_of = |usi: &str| {
        start
            .moves
            .iter()
            .find(|m| m.mv.to_string() == usi)
            .unwrap()
            .count
    };
    let n = start.moves.len() as u64;
    assert_eq!(
        start.moves.iter().map(|m| m.count).sum::<u64>(),
        COUNT_SCALE
    );
    // 7g7f at twice the prior (2/30 of 10000), 2g2f below the prior's 333.
    assert!(
        count_of("7g7f").abs_diff(2 * COUNT_SCALE / n) <= 1,
        "{}",
        count_of("7g7f")
    );
    assert!(count_of("2g2f") < COUNT_SCALE / n);
    for e in &entries {
        assert_eq!(e.moves.iter().map(|m| m.count).sum::<u64>(), COUNT_SCALE);
    }
}

/// A two-level tree: the root's weights from the NDF code equal a computation by
/// hand (child mixtures written out) and Monte Carlo sampling for P(best).
#[test]
fn ndf_weights_of_a_two_level_tree_equal_an_independent_computation() {
    let mut b = Builder::new(|_, _| 0);
    let a = b.line(stera_rules::STARTPOS_SFEN, &["7g7f", "3c3d"]);
    let a2 = b.line(stera_rules::STARTPOS_SFEN, &["7g7f", "8c8d"]);
    let c = b.line(stera_rules::STARTPOS_SFEN, &["2g2f", "3c3d"]);
    let c2 = b.line(stera_rules::STARTPOS_SFEN, &["2g2f", "8c8d"]);
    let (graph, solution) = analyse(&b.book);
    // Games at the grandchildren (black to move there).
    let grand = [
        (a[2], counts(30, 10, 20)),
        (a2[2], counts(12, 4, 24)),
        (c[2], counts(20, 20, 20)),
        (c2[2], counts(5, 0, 5)),
    ];
    let games: std::collections::HashMap<u32, crate::GameCounts> =
        grand.iter().map(|&(id, g)| (id.0, g)).collect();
    let t = 50.0;
    let w = NdfWeights::solve(&b.book, &graph, &solution, None, &games, t);

    // By hand. A grandchild's rate for black (its side to move), as white's move
    // into it is worth 1 - that for white.
    let rate = |g: crate::GameCounts| {
        let n = f64::from(g.wins + g.draws + g.losses);
        let pts = f64::from(g.wins) + f64::from(g.draws) / 2.0;
        let sm = (pts + 1.0) / (n + 2.0);
        (pts / n, sm * (1.0 - sm) / n)
    };
    let mut rng = StdRng::seed_from_u64(99);
    let samples = 200_000;
    let mc_best = |rng: &mut StdRng, moves: &[(f64, f64)]| -> Vec<f64> {
        let mut wins = vec![0u32; moves.len()];
        for _ in 0..samples {
            let mut best = (f64::NEG_INFINITY, 0);
            for (i, &(m, v)) in moves.iter().enumerate() {
                let x = m + v.sqrt() * gaussian(rng);
                if x > best.0 {
                    best = (x, i);
                }
            }
            wins[best.1] += 1;
        }
        wins.iter()
            .map(|&w| f64::from(w) / f64::from(samples))
            .collect()
    };
    // White's choice at each child: two moves, all values 0, so the priors are
    // equal (1/30 each of white's 30 moves): the pair shares 2/30 by P, capped
    // at 2/30 each (never binding for a pair), so within the pair the weights
    // are P itself.
    let child = |rng: &mut StdRng, g1: crate::GameCounts, g2: crate::GameCounts| {
        let (m1, v1) = rate(g1);
        let (m2, v2) = rate(g2);
        // White's view of each move: 1 - black's rate.
        let p = mc_best(rng, &[(1.0 - m1, v1), (1.0 - m2, v2)]);
        let mean = p[0] * (1.0 - m1) + p[1] * (1.0 - m2);
        let second = p[0] * (v1 + (1.0 - m1).powi(2)) + p[1] * (v2 + (1.0 - m2).powi(2));
        (mean, second - mean * mean)
    };
    let (ma, va) = child(&mut rng, grand[0].1, grand[1].1);
    let (mc, vc) = child(&mut rng, grand[2].1, grand[3].1);
    // Black at the root: 7g7f and 2g2f, worth 1 - white's mixture.
    let p = mc_best(&mut rng, &[(1.0 - ma, va), (1.0 - mc, vc)]);
    let prior = 1.0 / 30.0;
    let expected = cap_to_prior(&p, &[prior, prior], 2.0 * prior);
    let root = w.of(a[0]).unwrap();
    let moves = Position::startpos().legal_moves();
    let index = |usi: &str| moves.iter().position(|m| m.to_string() == usi).unwrap();
    for (k, usi) in ["7g7f", "2g2f"].iter().enumerate() {
        let got = root[index(usi)];
        assert!(
            (got - expected[k]).abs() < 0.01 * prior * 2.0 + 1e-3 * prior,
            "{usi}: {got} vs {}",
            expected[k]
        );
    }
    // The white nodes have their own weights, equal to the hand P within MC error.
    let at_a = w.of(a[1]).unwrap();
    let after = Position::from_position_command("startpos moves 7g7f").unwrap();
    let wm = after.legal_moves();
    let windex = |usi: &str| wm.iter().position(|m| m.to_string() == usi).unwrap();
    let (m1, v1) = rate(grand[0].1);
    let (m2, v2) = rate(grand[1].1);
    let pa = mc_best(&mut rng, &[(1.0 - m1, v1), (1.0 - m2, v2)]);
    let wprior = 1.0 / wm.len() as f64;
    assert!((at_a[windex("3c3d")] - pa[0] * 2.0 * wprior).abs() < 0.01 * 2.0 * wprior);
    assert!((at_a[windex("8c8d")] - pa[1] * 2.0 * wprior).abs() < 0.01 * 2.0 * wprior);
}

/// `--by-results`: moves with games are written at their [`results_value`] and
/// ordered by it, into thought positions and leaves alike; the others keep
/// their values.
#[test]
fn an_export_by_results_values_moves_by_their_games() {
    use crate::results::results_value;
    let start = Position::startpos();
    let index = |usi: &str| {
        start
            .legal_moves()
            .iter()
            .position(|m| m.to_string() == usi)
            .unwrap()
    };
    let (i2g, i5g) = (index("2g2f"), index("5g5f"));
    let start_key = start.key();
    let mut b = Builder::new(move |pos, i| {
        if pos.key() != start_key {
            0
        } else if i == i2g {
            10
        } else if i == i5g {
            5
        } else {
            -50
        }
    });
    // 7g7f leads into a thought position whose replies are all worth 0.
    let line = b.line(stera_rules::STARTPOS_SFEN, &["7g7f"]);
    let after =
        |usi: &str| Position::from_position_command(&format!("startpos moves {usi}")).unwrap();
    let leaf = after("2g2f");
    let mut extras = NodeExtras::default();
    extras.plies = vec![0; b.book.len()];
    extras.timestamps = vec![0; b.book.len()];
    // From the side to move's view (White): 7g7f won 70 of 100 for Black, the
    // leaf 2g2f 20 of 100; the leaf's counters under the smaller of its keys.
    extras.learned = std::collections::HashMap::from([
        (b.book.key(line[1]), counts(30, 0, 70)),
        (leaf.key().min(leaf.flipped_key()), counts(80, 0, 20)),
    ]);
    // Self-play counters that say the opposite are never read by `--by-results`.
    extras.counts = std::collections::HashMap::from([
        (b.book.key(line[1]), counts(100, 0, 0)),
        (leaf.key().min(leaf.flipped_key()), counts(0, 0, 100)),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let read = |options: &ExportOptions, name: &str| {
        let path = dir.path().join(name);
        export_db2016(&b.book, &extras, &path, options, &mut |_, _, _| {}).unwrap();
        let entries: Vec<_> = stera_formats::db2016::Db2016Reader::open(&path)
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let entry = entries
            .into_iter()
            .find(|e| e.position().unwrap().key() == start_key)
            .unwrap();
        entry
            .moves
            .iter()
            .map(|m| (m.mv.to_string(), m.value))
            .collect::<Vec<_>>()
    };
    let plain = read(&ExportOptions::default(), "plain.db");
    assert_eq!(plain[0], ("2g2f".to_owned(), 10));
    let by_results = read(
        &ExportOptions {
            by_results: Some(4.0),
            ..ExportOptions::default()
        },
        "results.db",
    );
    let won = results_value(counts(70, 0, 30), 0, 4.0);
    let lost = results_value(counts(20, 0, 80), 10, 4.0);
    assert!(won > 400 && lost < -400, "{won} {lost}");
    assert_eq!(by_results[0], ("7g7f".to_owned(), won));
    assert_eq!(by_results[1], ("5g5f".to_owned(), 5));
    assert_eq!(by_results.last().unwrap(), &("2g2f".to_owned(), lost));
    // Every other move as before, in the same order.
    let others = |list: &[(String, i32)]| {
        list.iter()
            .filter(|(m, _)| !["7g7f", "2g2f", "5g5f"].contains(&m.as_str()))
            .cloned()
            .collect::<Vec<_>>()
    };
    assert_eq!(others(&plain), others(&by_results));
    assert_eq!(plain.len(), by_results.len());
}
