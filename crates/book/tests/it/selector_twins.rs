//! The selector and colour-flipped twins: a move whose child is not thought but
//! whose twin is leads into the twin (as in the export), so the selector neither
//! hands out a position whose twin is thought nor two twins at once, and a line
//! through a twin ends on a leaf of the twin's board.

use stera_book::{
    LiveBook, MemoryStore, NodeId, NodeStore, Origin, RunConfig, Selector, ThoughtNode,
};
use stera_rules::{Move, Position};

fn node(pos: &Position, origin: Origin, value: impl Fn(usize, Move) -> i16) -> ThoughtNode {
    let values = pos
        .legal_moves()
        .into_iter()
        .enumerate()
        .map(|(i, mv)| value(i, mv))
        .collect();
    ThoughtNode {
        key: pos.key(),
        origin,
        ply: 1,
        values,
        depths: None,
        evaluator: 0,
        timestamp: 0,
    }
}

/// The twin of `pos`, rebuilt from flipped SFEN text (not the key arithmetic the
/// selector uses).
fn twin_key_of(pos: &Position) -> u128 {
    Position::from_sfen(&pos.flipped().to_sfen())
        .unwrap()
        .key()
        .0
}

/// startpos (node 0), 7g7f (node 1), and the twin of 7g7f 3c3d (node 2, by SFEN):
/// the symmetric board with white to move. The start's other moves are worth
/// -100, white's after 7g7f -300, so the best line is 7g7f 3c3d into the twin,
/// whose first move is its best leaf (100; the others -200).
fn twin_book() -> (MemoryStore, Position, Move) {
    let start = Position::startpos();
    let seven: Move = "7g7f".parse().unwrap();
    let mut after = start.clone();
    after.do_move(seven);
    let mut child = after.clone();
    child.play_usi("3c3d").unwrap();
    let twin = child.flipped();
    let twin_best = twin.legal_moves()[0];
    let mut store = MemoryStore::new();
    store
        .append(&[
            node(
                &start,
                Origin::Sfen(start.to_sfen_without_ply()),
                |_, mv| {
                    if mv == seven { 0 } else { -100 }
                },
            ),
            node(
                &after,
                Origin::Child {
                    parent: NodeId(0),
                    mv: seven,
                },
                |_, _| -300,
            ),
            node(&twin, Origin::Sfen(twin.to_sfen_without_ply()), |i, _| {
                if i == 0 { 100 } else { -200 }
            }),
        ])
        .unwrap();
    (store, twin, twin_best)
}

fn open(store: MemoryStore) -> (LiveBook<MemoryStore>, Selector) {
    open_at(store, "startpos")
}

/// The live book `store` with the one root `root`, and a selector.
fn open_at(store: MemoryStore, root: &str) -> (LiveBook<MemoryStore>, Selector) {
    let config = RunConfig {
        roots: vec![root.into()],
        kifu_bonus: 100,
        ply_limit: 512,
        leaves_per_turn: 1,
    };
    (
        LiveBook::open(store, Some(config)).unwrap(),
        Selector::new(),
    )
}

#[test]
fn the_best_line_through_a_twin_ends_on_a_leaf_of_the_twins_board() {
    let (store, twin, twin_best) = twin_book();
    let (mut live, mut selector) = open(store);
    let leaf = selector
        .select(&mut live, 1)
        .unwrap()
        .pop()
        .expect("a leaf");
    let mut expected = twin.clone();
    expected.do_move(twin_best);
    assert_eq!(leaf.key, expected.key(), "leaf {}", leaf.sfen());
    assert_eq!(leaf.position.key(), leaf.key);
    assert_eq!(leaf.parent, Some((NodeId(2), twin_best)));
    // The path is played from the root on the real board: the twin's move
    // flipped, so it leads to the twin of the leaf.
    let line: Vec<String> = leaf.path.iter().map(ToString::to_string).collect();
    assert_eq!(line, ["7g7f", "3c3d", &twin_best.flipped().to_string()]);
    let mut real = Position::startpos();
    for mv in &leaf.path {
        real.do_move(*mv);
    }
    assert_eq!(twin_key_of(&real), leaf.key.0);
    // The reported principal variation is legal from the root too.
    let (_, pv, _) = selector.root_lines(&live).pop().unwrap();
    assert_eq!(pv, leaf.path);
}

#[test]
fn no_leaf_is_a_thought_twin_and_no_two_leaves_in_flight_are_twins() {
    let (store, _, _) = twin_book();
    let (mut live, mut selector) = open(store);
    let child = Position::from_position_command("startpos moves 7g7f 3c3d").unwrap();
    let mut keys = std::collections::HashSet::new();
    let mut twins = std::collections::HashSet::new();
    // Every leaf of this small book, one at a time, all kept in flight.
    let mut handed = 0;
    while let Some(leaf) = selector.select(&mut live, 1).unwrap().pop() {
        handed += 1;
        assert_ne!(leaf.key, child.key(), "the child whose twin is thought");
        assert!(!live.book().contains(leaf.key));
        let twin = twin_key_of(&leaf.position);
        assert!(
            !live.book().contains(stera_rules::Key(twin)),
            "{} has a thought twin",
            leaf.sfen()
        );
        assert!(
            !twins.contains(&leaf.key.0),
            "{} is the twin of a leaf in flight",
            leaf.sfen()
        );
        keys.insert(leaf.key.0);
        twins.insert(twin);
        assert!(handed < 10_000, "selection does not end");
    }
    // 30 moves at the start, 30 after 7g7f, 30 in the twin, less the two
    // thought children; the twin's own children include the twins of the
    // start's children (the symmetric start), which are handed out once.
    assert!(handed > 30, "{handed} leaves");
}

#[test]
fn the_softmax_descent_goes_through_twins_too_and_never_hands_out_a_thought_twin() {
    use stera_book::{SelectMode, SoftmaxSelect};
    let (store, twin, _) = twin_book();
    let (mut live, mut selector) = open(store);
    selector
        .set_select_mode(SelectMode::Softmax(SoftmaxSelect {
            temperature: 50.0,
            seed: 5,
        }))
        .unwrap();
    let child = Position::from_position_command("startpos moves 7g7f 3c3d").unwrap();
    let twin_children: std::collections::HashSet<u128> = twin
        .legal_moves()
        .into_iter()
        .map(|mv| twin.key_after(mv).0)
        .collect();
    let (mut into_twin, mut handed) = (0u32, 0u32);
    for _ in 0..300 {
        let Some(leaf) = selector.select(&mut live, 1).unwrap().pop() else {
            break;
        };
        handed += 1;
        assert_ne!(leaf.key, child.key(), "the child whose twin is thought");
        let twin_key = stera_rules::Key(twin_key_of(&leaf.position));
        assert!(!live.book().contains(twin_key), "{}", leaf.sfen());
        // The path is legal from the root and leads to the leaf or its twin.
        let mut real = Position::startpos();
        for mv in &leaf.path {
            assert!(real.is_legal(*mv), "{mv} in {}", real.to_sfen());
            real.do_move(*mv);
        }
        assert!(real.key() == leaf.key || twin_key_of(&real) == leaf.key.0);
        if twin_children.contains(&leaf.key.0) {
            into_twin += 1;
            assert_eq!(leaf.parent.map(|p| p.0), Some(NodeId(2)));
        }
        // Given back: the descent samples again from the same book.
        live.abandon(&leaf).unwrap();
    }
    assert_eq!(handed, 300);
    // A descent ends in the twin when it samples 7g7f at the start (worth 100
    // through the twin, the others -100) and then 3c3d (-100 through the twin,
    // the others -300): softmax at T = 50 over those values.
    let start_moves = Position::startpos().legal_move_count() as f64;
    let white_moves = Position::from_position_command("startpos moves 7g7f")
        .unwrap()
        .legal_move_count() as f64;
    let e = |v: f64| (v / 50.0).exp();
    let p = e(100.0) / (e(100.0) + (start_moves - 1.0) * e(-100.0)) * e(-100.0)
        / (e(-100.0) + (white_moves - 1.0) * e(-300.0));
    let expected = p * f64::from(handed);
    let sigma = (expected * (1.0 - p)).sqrt();
    assert!(
        (f64::from(into_twin) - expected).abs() < 4.0 * sigma,
        "{into_twin} of {handed} leaves in the twin, expected {expected:.1} +- {sigma:.1}"
    );
}

#[test]
fn a_leaf_whose_twin_is_a_kifu_position_gets_the_kifu_bonus() {
    // The start alone: 2g2f is worth -50, every other move -10. The kifu holds
    // the twin of the position after 2g2f (as if the kifu line was recorded with
    // the colours the other way round), so 2g2f gets +100 and is the best leaf.
    let start = Position::startpos();
    let two: Move = "2g2f".parse().unwrap();
    let mut after = start.clone();
    after.do_move(two);
    let book = |kifu: &[stera_rules::Key]| {
        let mut store = MemoryStore::new();
        store
            .append(&[node(
                &start,
                Origin::Sfen(start.to_sfen_without_ply()),
                |_, mv| if mv == two { -50 } else { -10 },
            )])
            .unwrap();
        store.add_kifu_keys(kifu).unwrap();
        open(store)
    };
    let twin = stera_rules::Key(twin_key_of(&after));
    let (mut live, mut selector) = book(&[twin]);
    let leaf = selector
        .select(&mut live, 1)
        .unwrap()
        .pop()
        .expect("a leaf");
    assert_eq!(leaf.key, after.key(), "leaf {}", leaf.sfen());
    // Without the kifu position the first -10 move is the best leaf.
    let (mut live, mut selector) = book(&[]);
    let leaf = selector
        .select(&mut live, 1)
        .unwrap()
        .pop()
        .expect("a leaf");
    assert_ne!(leaf.key, after.key());
}

#[test]
fn a_root_thought_only_as_its_twin_is_searched_as_the_twin_and_never_handed_out() {
    use stera_book::{SelectMode, SoftmaxSelect};
    // The root is 7g7f; the book holds only its twin (the mirrored board with
    // black to move), whose first move is worth 100 and the others -200.
    let root = Position::from_position_command("startpos moves 7g7f").unwrap();
    let twin = Position::from_sfen(&root.flipped().to_sfen()).unwrap();
    let twin_best = twin.legal_moves()[0];
    let book = || {
        let mut store = MemoryStore::new();
        store
            .append(&[node(
                &twin,
                Origin::Sfen(twin.to_sfen_without_ply()),
                |i, _| {
                    if i == 0 { 100 } else { -200 }
                },
            )])
            .unwrap();
        open_at(store, "startpos moves 7g7f")
    };
    for softmax in [false, true] {
        let (mut live, mut selector) = book();
        if softmax {
            selector
                .set_select_mode(SelectMode::Softmax(SoftmaxSelect {
                    temperature: 50.0,
                    seed: 3,
                }))
                .unwrap();
        }
        let mut handed = 0;
        while let Some(leaf) = selector.select(&mut live, 1).unwrap().pop() {
            handed += 1;
            assert_ne!(leaf.key, root.key(), "the root whose twin is thought");
            assert_eq!(leaf.parent.map(|p| p.0), Some(NodeId(0)));
            assert_eq!(leaf.position.key(), leaf.key);
            // The path is played on the root's board and leads to the leaf's twin.
            assert_eq!(leaf.path.len(), 1);
            let mut real = root.clone();
            assert!(real.is_legal(leaf.path[0]), "{}", leaf.path[0]);
            real.do_move(leaf.path[0]);
            assert_eq!(twin_key_of(&real), leaf.key.0);
            if handed == 1 && !softmax {
                // The best leaf first: the twin's best move, flipped on the root.
                assert_eq!(leaf.path[0], twin_best.flipped());
                let (_, pv, _) = selector.root_lines(&live).pop().unwrap();
                assert_eq!(pv, leaf.path);
            }
            assert!(handed <= twin.legal_move_count(), "a leaf handed out twice");
        }
        assert_eq!(handed, twin.legal_move_count(), "softmax {softmax}");
    }
}

#[test]
fn siblings_of_a_leaf_through_a_twin_have_paths_played_on_the_roots_board() {
    let (store, twin, _) = twin_book();
    let (mut live, mut selector) = open(store);
    let leaf = selector
        .select(&mut live, 1)
        .unwrap()
        .pop()
        .expect("a leaf");
    assert_eq!(
        leaf.parent.map(|p| p.0),
        Some(NodeId(2)),
        "through the twin"
    );
    // The twin's other moves are worth -200 against the best leaf's 100.
    let siblings = selector.select_siblings(&mut live, &leaf, 5, 1000);
    assert_eq!(siblings.len(), 5);
    for s in &siblings {
        let mut real = Position::startpos();
        for mv in &s.path {
            assert!(real.is_legal(*mv), "{mv} in {}", real.to_sfen());
            real.do_move(*mv);
        }
        // The path leads to the sibling's twin; the sibling is on the twin's board.
        assert_eq!(twin_key_of(&real), s.key.0, "{}", s.sfen());
        let (_, mv) = s.parent.unwrap();
        assert!(twin.is_legal(mv));
    }
}
