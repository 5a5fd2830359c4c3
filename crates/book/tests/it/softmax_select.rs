//! MC Softmax selection (`SelectMode::Softmax`): it never hands out an in-flight
//! or banned edge, its first-move frequencies match π ∝ exp(q / T) computed here
//! from the stored values (chi-square), it is reproducible from its seed, and it
//! bans a sampled edge with nothing to think, as the alpha-beta selector does.

use stera_book::synthetic::{GrowOptions, PseudoEvaluator, grow};
use stera_book::{
    Leaf, LiveBook, MemoryStore, NodeId, RunConfig, SelectMode, Selector, SoftmaxSelect, Thought,
};
use stera_rules::{Move, Position};

const T: f64 = 50.0;

fn thought(values: Vec<i16>) -> Thought {
    Thought {
        values,
        depths: None,
        evaluator: "softmax-test".into(),
        timestamp: 0,
    }
}

fn softmax(seed: u64) -> SelectMode {
    SelectMode::Softmax(SoftmaxSelect {
        temperature: T,
        seed,
    })
}

/// Thinks `position` (reached from root 0 by `path`) with `values`.
fn think(
    live: &mut LiveBook<MemoryStore>,
    parent: Option<(NodeId, Move)>,
    path: Vec<Move>,
    position: Position,
    values: Vec<i16>,
) -> NodeId {
    let leaf = Leaf {
        root: 0,
        path,
        parent,
        key: position.key(),
        position,
    };
    live.complete(&leaf, thought(values)).unwrap()
}

/// The hand-made book: startpos thought; its first three moves lead to thought
/// children whose moves are all leaf edges; the fourth move leads to a kifu
/// position. Returns the selector, the root's moves and the child nodes.
struct Fixture {
    live: LiveBook<MemoryStore>,
    selector: Selector,
    moves: Vec<Move>,
    /// Stored root values (index = move index).
    root_values: Vec<i16>,
    /// (move index, child's stored values) of the thought children.
    children: Vec<(usize, Vec<i16>)>,
    kifu_move: usize,
}

fn fixture(seed: u64) -> Fixture {
    let config = RunConfig {
        roots: vec!["startpos".into()],
        kifu_bonus: 100,
        ply_limit: 512,
        leaves_per_turn: 1000,
    };
    let mut live = LiveBook::open(MemoryStore::new(), Some(config)).unwrap();
    let mut selector = Selector::new();
    let start = Position::startpos();
    let moves = start.legal_moves();
    // Leaf moves -60..=60; the thought children's stored values are 500, which
    // must not be used (their propagated values are).
    let mut root_values: Vec<i16> = (0..moves.len())
        .map(|i| i16::try_from(i % 7).unwrap() * 20 - 60)
        .collect();
    for v in &mut root_values[..3] {
        *v = 500;
    }
    let kifu_move = 3;
    root_values[kifu_move] = -60; // +100 kifu bonus: q = 40
    let root = think(&mut live, None, vec![], start.clone(), root_values.clone());
    let mut children = Vec::new();
    for (c, &mv) in moves.iter().enumerate().take(3) {
        let mut pos = start.clone();
        pos.do_move(mv);
        let n = pos.legal_move_count();
        // Child values from the child's side to move; the child's propagated value
        // is their maximum (all its moves are leaf edges): 30, -40, 10.
        let values: Vec<i16> = (0..n)
            .map(|j| {
                let j = i16::try_from(j).unwrap();
                match c {
                    0 => 30,
                    1 => -40 - (j % 5) * 20,
                    _ => 10 - (j % 3) * 30,
                }
            })
            .collect();
        think(&mut live, Some((root, mv)), vec![mv], pos, values.clone());
        children.push((c, values));
    }
    let mut kifu_pos = start.clone();
    kifu_pos.do_move(moves[kifu_move]);
    live.add_kifu_keys(&[kifu_pos.key()]).unwrap();
    selector.set_select_mode(softmax(seed)).unwrap();
    Fixture {
        live,
        selector,
        moves,
        root_values,
        children,
        kifu_move,
    }
}

/// Pearson's statistic of `counts` against probabilities `p`.
fn chi_square(counts: &[u64], p: &[f64]) -> f64 {
    let n: u64 = counts.iter().sum();
    counts
        .iter()
        .zip(p)
        .map(|(&o, &p)| {
            let e = p * n as f64;
            (o as f64 - e).powi(2) / e
        })
        .sum()
}

/// χ²(29) 0.999 quantile (tables: 58.301; the regularised incomplete gamma
/// function inverted numerically gives 58.3012).
const CHI2_29_0999: f64 = 58.301;

#[test]
fn first_move_frequencies_match_the_softmax_policy() {
    let Fixture {
        mut live,
        mut selector,
        moves,
        root_values,
        children,
        kifu_move,
    } = fixture(20_240_613);
    // π at the root, from the stored values alone.
    let q: Vec<f64> = (0..moves.len())
        .map(|i| {
            if let Some((_, v)) = children.iter().find(|(c, _)| *c == i) {
                -f64::from(*v.iter().max().unwrap())
            } else if i == kifu_move {
                f64::from(root_values[i]) + 100.0
            } else {
                f64::from(root_values[i])
            }
        })
        .collect();
    assert_eq!(&q[..4], &[-30.0, 40.0, -10.0, 40.0]);
    let z: f64 = q.iter().map(|q| (q / T).exp()).sum();
    let pi: Vec<f64> = q.iter().map(|q| (q / T).exp() / z).collect();

    let samples = 20_000;
    let mut counts = vec![0u64; moves.len()];
    let (c1, c1_values) = &children[1];
    let mut below_c1 = vec![0u64; c1_values.len()];
    let mut c1_pos = Position::startpos();
    c1_pos.do_move(moves[*c1]);
    let c1_moves = c1_pos.legal_moves();
    for _ in 0..samples {
        let leaves = selector.select(&mut live, 1).unwrap();
        assert_eq!(leaves.len(), 1);
        let leaf = &leaves[0];
        let first = moves.iter().position(|m| *m == leaf.path[0]).unwrap();
        counts[first] += 1;
        if first == *c1 {
            assert_eq!(leaf.path.len(), 2, "a thought child is descended into");
            below_c1[c1_moves.iter().position(|m| *m == leaf.path[1]).unwrap()] += 1;
        } else if children.iter().all(|(c, _)| *c != first) {
            assert_eq!(leaf.path.len(), 1, "a leaf move ends the descent");
        }
        // Released before the next selection: the book and in-flight set stay put.
        live.abandon(leaf).unwrap();
    }
    assert_eq!(live.in_flight(), 0);
    let stat = chi_square(&counts, &pi);
    eprintln!("root chi-square {stat:.2} (df 29)");
    // The test has power: π with the thought children's *stored* values (500)
    // instead of their propagated ones, or at twice the temperature, is refuted.
    for wrong_q in [
        q.iter()
            .enumerate()
            .map(|(i, q)| if i < 3 { 500.0 } else { *q })
            .collect::<Vec<_>>(),
        q.iter().map(|q| q / 2.0).collect(),
    ] {
        let z: f64 = wrong_q.iter().map(|q| (q / T).exp()).sum();
        let wrong: Vec<f64> = wrong_q.iter().map(|q| (q / T).exp() / z).collect();
        assert!(chi_square(&counts, &wrong) > 10.0 * CHI2_29_0999);
    }
    assert!(
        stat < CHI2_29_0999,
        "root: chi-square {stat:.1} over {} moves, counts {counts:?}, pi {pi:?}",
        moves.len()
    );
    // Below the second child, π over its own stored values.
    assert_eq!(c1_moves.len(), 30);
    let z: f64 = c1_values.iter().map(|v| (f64::from(*v) / T).exp()).sum();
    let pi: Vec<f64> = c1_values
        .iter()
        .map(|v| (f64::from(*v) / T).exp() / z)
        .collect();
    let stat = chi_square(&below_c1, &pi);
    eprintln!("below child 1 chi-square {stat:.2} (df 29)");
    assert!(
        stat < CHI2_29_0999,
        "below child 1: chi-square {stat:.1}, counts {below_c1:?}"
    );
    // The library's π agrees with the one computed here.
    let lib = stera_book::softmax_policy(&q.iter().map(|q| *q as i32).collect::<Vec<_>>(), T);
    let root_pi: Vec<f64> = {
        let z: f64 = q.iter().map(|q| (q / T).exp()).sum();
        q.iter().map(|q| (q / T).exp() / z).collect()
    };
    for (a, b) in lib.iter().zip(&root_pi) {
        assert!((a - b).abs() < 1e-12);
    }
}

#[test]
fn same_seed_same_leaves_and_distinct_leaves_per_call() {
    let paths = |seed: u64| {
        let mut f = fixture(seed);
        let mut out = Vec::new();
        for _ in 0..20 {
            let leaves = f.selector.select(&mut f.live, 5).unwrap();
            assert_eq!(leaves.len(), 5);
            let mut keys: Vec<u128> = leaves.iter().map(|l| l.key.0).collect();
            keys.sort_unstable();
            keys.dedup();
            assert_eq!(keys.len(), 5, "a leaf came twice in one call");
            for leaf in &leaves {
                out.push(leaf.path.clone());
                f.live.abandon(leaf).unwrap();
            }
        }
        out
    };
    let a = paths(7);
    assert_eq!(a, paths(7));
    assert_ne!(a, paths(8));
}

#[test]
fn never_hands_out_an_in_flight_or_banned_edge() {
    let config = RunConfig {
        roots: vec!["startpos".into(), "startpos moves 7g7f".into()],
        kifu_bonus: 100,
        ply_limit: 512,
        leaves_per_turn: 3,
    };
    let mut live = LiveBook::open(MemoryStore::new(), Some(config)).unwrap();
    let mut selector = Selector::new();
    grow(
        &mut live,
        &mut selector,
        &PseudoEvaluator::new(11),
        400,
        GrowOptions {
            batch: 16,
            ..GrowOptions::default()
        },
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(live.in_flight(), 0);
    // In flight: the alpha-beta selector's next 40 leaves (the most attractive).
    let held = selector.select(&mut live, 40).unwrap();
    assert_eq!(held.len(), 40);
    let held_keys: std::collections::HashSet<u128> = held.iter().map(|l| l.key.0).collect();
    // Banned: every other move of the first 60 thought nodes, and each root's best
    // stored move.
    let mut bans = std::collections::HashSet::new();
    for i in 0..60u32 {
        let id = NodeId(i);
        let pos = live.book().position_of(id).unwrap();
        for (j, mv) in pos.legal_moves().into_iter().enumerate() {
            if (j + i as usize).is_multiple_of(2) {
                live.ban(id, mv).unwrap();
                bans.insert((id, mv));
            }
        }
    }
    for root in &live.config().roots.clone() {
        let pos = Position::from_position_command(root).unwrap();
        let id = live.book().get(pos.key()).unwrap();
        let values = live.book().values(id);
        let best = (0..values.len()).max_by_key(|&i| values[i]).unwrap();
        let mv = pos.legal_moves()[best];
        live.ban(id, mv).unwrap();
        bans.insert((id, mv));
    }
    selector.set_select_mode(softmax(3)).unwrap();
    let mut handed = 0;
    for round in 0..60 {
        let leaves = selector.select(&mut live, 6).unwrap();
        assert_eq!(leaves.len(), 6, "round {round}");
        let mut keys = std::collections::HashSet::new();
        for leaf in &leaves {
            assert!(keys.insert(leaf.key.0), "same leaf twice in one call");
            assert!(!held_keys.contains(&leaf.key.0), "an in-flight leaf");
            assert!(!live.book().contains(leaf.key), "a thought position");
            assert_eq!(leaf.position.key(), leaf.key);
            // Walk the line: no banned pair, no in-flight position on the way.
            let root = &live.config().roots[leaf.root];
            let mut pos = Position::from_position_command(root).unwrap();
            for mv in &leaf.path {
                let node = live.book().get(pos.key()).expect("inner nodes thought");
                assert!(!bans.contains(&(node, *mv)), "banned edge {mv} at {node}");
                assert!(!live.is_banned(node, *mv));
                pos = {
                    let mut p = pos.clone();
                    p.do_move(*mv);
                    p
                };
                assert!(!held_keys.contains(&pos.key().0));
            }
            assert_eq!(pos.key(), leaf.key);
            let (parent, mv) = leaf.parent.unwrap();
            assert_eq!(Some(mv), leaf.path.last().copied());
            assert!(!bans.contains(&(parent, mv)));
        }
        handed += leaves.len();
        assert_eq!(live.in_flight(), held.len() + handed);
        // Put half of them back, keep the rest in flight (they must not return).
        for leaf in leaves.iter().step_by(2) {
            live.abandon(leaf).unwrap();
            handed -= 1;
        }
    }
    // Both roots took turns.
    assert_eq!(selector.root_lines(&live).len(), 2);
}

#[test]
fn a_sampled_edge_with_nothing_to_think_is_banned() {
    // Ply limit 1: every thought child of startpos (ply 2) scores as a draw
    // without search, like a repetition.
    let config = RunConfig {
        roots: vec!["startpos".into()],
        kifu_bonus: 100,
        ply_limit: 1,
        leaves_per_turn: 100,
    };
    let mut live = LiveBook::open(MemoryStore::new(), Some(config)).unwrap();
    let mut selector = Selector::new();
    let start = Position::startpos();
    let moves = start.legal_moves();
    // Leaf moves -2000: the draw (q = 0) into the thought child is sampled first.
    let root = think(
        &mut live,
        None,
        vec![],
        start.clone(),
        vec![-2000; moves.len()],
    );
    let mut child = start.clone();
    child.do_move(moves[0]);
    let n = child.legal_move_count();
    think(
        &mut live,
        Some((root, moves[0])),
        vec![moves[0]],
        child,
        vec![0; n],
    );
    selector.set_select_mode(softmax(1)).unwrap();
    let leaves = selector.select(&mut live, 1).unwrap();
    assert_eq!(leaves.len(), 1);
    assert_ne!(leaves[0].path[0], moves[0]);
    assert!(live.is_banned(root, moves[0]));
    assert_eq!(selector.stats().bans, 1);
}

#[test]
fn bad_temperatures_are_refused_and_modes_switch() {
    let mut f = fixture(1);
    for t in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        let mode = SelectMode::Softmax(SoftmaxSelect {
            temperature: t,
            seed: 0,
        });
        assert!(f.selector.set_select_mode(mode).is_err(), "{t}");
    }
    assert_eq!(f.selector.select_mode(), softmax(1));
    f.selector.set_select_mode(SelectMode::AlphaBeta).unwrap();
    assert_eq!(f.selector.select_mode(), SelectMode::AlphaBeta);
    // Alpha-beta again: the PV leaf, a leaf move of the best value (60).
    let leaf = f.selector.select(&mut f.live, 1).unwrap().pop().unwrap();
    let first = f.moves.iter().position(|m| *m == leaf.path[0]).unwrap();
    assert_eq!((leaf.path.len(), f.root_values[first]), (1, 60));
}
