//! Minimax values and depths of the retrograde analysis against a plain
//! recursion over positions, leaf discounts, transpositions and twins, mates,
//! malformed books and determinism.

use super::*;

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
