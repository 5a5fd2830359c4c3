//! The selector against today's search before edge tables (`reference`), turn
//! by turn: two live books made alike, one selector each, the same calls and the
//! same results fed back (completions, abandoned leaves, bans, kifu positions).
//! Every leaf must be the same leaf, in the same order, with the same statistics.
//! The books have transpositions, colour-flipped twins, cycles (repetitions that
//! end in bans) and kifu positions; the counts asserted at the end show each
//! was met.

use std::collections::VecDeque;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use stera_rules::{Key, Move, Position};

use super::{SelectMode, Selector, SoftmaxSelect};
use crate::synthetic::PseudoEvaluator;
use crate::{Leaf, LiveBook, MemoryStore, NodeId, NodeStore, Origin, RunConfig, ThoughtNode};

/// A book grown breadth first from startpos by `candidates` (only those legal),
/// with random values: rook and king moves back and forth make cycles.
fn cyclic_nodes(rng: &mut StdRng, depth: usize) -> Vec<ThoughtNode> {
    let candidates = [
        "7g7f", "3c3d", "2g2f", "8c8d", "2h3h", "3h2h", "8b7b", "7b8b", "5i4h", "4h5i", "5a4b",
        "4b5a",
    ];
    let mut nodes: Vec<ThoughtNode> = Vec::new();
    let mut seen = hashbrown::HashSet::new();
    let mut frontier = VecDeque::from([(Position::startpos(), None::<(u32, Move)>, 0)]);
    while let Some((pos, origin, d)) = frontier.pop_front() {
        if !seen.insert(pos.key().0) {
            continue;
        }
        let id = u32::try_from(nodes.len()).unwrap();
        nodes.push(ThoughtNode {
            key: pos.key(),
            origin: match origin {
                Some((parent, mv)) => Origin::Child {
                    parent: NodeId(parent),
                    mv,
                },
                None => Origin::Sfen(pos.to_sfen_without_ply()),
            },
            ply: 1,
            values: (0..pos.legal_move_count())
                .map(|_| rng.random_range(-300..=300))
                .collect(),
            depths: None,
            evaluator: 0,
            timestamp: 0,
        });
        if d == depth {
            continue;
        }
        for text in candidates {
            if let Ok(mv) = pos.parse_move(text)
                && rng.random_bool(0.8)
            {
                let mut child = pos.clone();
                child.do_move(mv);
                frontier.push_back((child, Some((id, mv)), d + 1));
            }
        }
    }
    nodes
}

/// What was met along a comparison (each must have happened at least once).
#[derive(Debug, Default)]
struct Met {
    leaves: usize,
    bans: u64,
    /// Leaves reached through an odd number of twin edges.
    on_twin: usize,
    /// Leaves that are kifu positions (the bonus was in play).
    kifu: usize,
}

/// One side of the comparison.
struct Side {
    live: LiveBook<MemoryStore>,
    selector: Selector,
    queue: VecDeque<Leaf>,
}

fn side(
    nodes: &[ThoughtNode],
    config: &RunConfig,
    reference: bool,
    mode: SelectMode,
    leaf_discount: i16,
) -> Side {
    let mut store = MemoryStore::new();
    if !nodes.is_empty() {
        store.append(nodes).unwrap();
    }
    let mut live = LiveBook::open(store, Some(config.clone())).unwrap();
    live.set_leaf_discount(leaf_discount);
    let mut selector = Selector::new();
    selector.reference = reference;
    selector.set_select_mode(mode).unwrap();
    Side {
        live,
        selector,
        queue: VecDeque::new(),
    }
}

fn same_leaves(step: usize, a: &[Leaf], b: &[Leaf]) {
    let view = |l: &[Leaf]| {
        l.iter()
            .map(|l| (l.root, l.path.clone(), l.parent, l.key, l.sfen()))
            .collect::<Vec<_>>()
    };
    assert_eq!(view(a), view(b), "step {step}: the leaves differ");
}

/// Runs `steps` steps of random but identical calls on a book started from
/// `nodes`; returns what was met.
fn compare(
    nodes: &[ThoughtNode],
    config: &RunConfig,
    mode: SelectMode,
    leaf_discount: i16,
    seed: u64,
    steps: usize,
) -> Met {
    let mut rng = StdRng::seed_from_u64(seed);
    let eval = PseudoEvaluator::new(seed);
    let mut new = side(nodes, config, false, mode, leaf_discount);
    let mut old = side(nodes, config, true, mode, leaf_discount);
    let mut met = Met::default();
    let mut kifu: hashbrown::HashSet<u128> = hashbrown::HashSet::new();
    for step in 0..steps {
        let n = rng.random_range(1..=6);
        let a = new.selector.select(&mut new.live, n).unwrap();
        let b = old.selector.select(&mut old.live, n).unwrap();
        same_leaves(step, &a, &b);
        for leaf in &a {
            met.leaves += 1;
            met.on_twin += usize::from(new.live.path_ends_on_twin(leaf));
            met.kifu += usize::from(kifu.contains(&leaf.key.0));
        }
        new.queue.extend(a);
        old.queue.extend(b);
        let what = rng.random_range(0..100);
        if what < 45 || new.queue.len() > 40 {
            // Think the oldest few leaves; both books take the same results.
            let k = rng.random_range(1..=new.queue.len().max(1)).min(8);
            for s in [&mut new, &mut old] {
                let items: Vec<_> = s
                    .queue
                    .drain(..k.min(s.queue.len()))
                    .map(|leaf| {
                        let thought = eval.thought(&leaf.position);
                        (leaf, thought)
                    })
                    .collect();
                s.live.complete_batch(items).unwrap();
            }
        } else if what < 50 && !new.queue.is_empty() {
            // A thinker gives a leaf back.
            let i = rng.random_range(0..new.queue.len());
            for s in [&mut new, &mut old] {
                let leaf = s.queue.remove(i).unwrap();
                s.live.abandon(&leaf).unwrap();
            }
        } else if what < 55 && !new.live.book().is_empty() {
            // Kifu positions: children of a thought node, not its best moves.
            let id = NodeId(rng.random_range(0..new.live.book().len()) as u32);
            let pos = new.live.book().position_of(id).unwrap();
            let keys: Vec<Key> = pos
                .legal_moves()
                .iter()
                .skip(1)
                .step_by(4)
                .map(|&mv| pos.key_after(mv))
                .collect();
            kifu.extend(keys.iter().map(|k| k.0));
            new.live.add_kifu_keys(&keys).unwrap();
            old.live.add_kifu_keys(&keys).unwrap();
        } else if what < 58 && !new.live.book().is_empty() {
            // A ban from elsewhere (quarantine).
            let id = NodeId(rng.random_range(0..new.live.book().len()) as u32);
            let moves = new.live.book().position_of(id).unwrap().legal_moves();
            if !moves.is_empty() {
                let mv = moves[rng.random_range(0..moves.len())];
                new.live.ban(id, mv).unwrap();
                old.live.ban(id, mv).unwrap();
            }
        } else if what < 60 {
            assert_eq!(
                new.selector.book_lines(&new.live),
                old.selector.book_lines(&old.live),
                "step {step}: book lines differ"
            );
        }
        // The same search, node for node: only the lookups differ.
        let (mut a, b) = (new.selector.stats(), old.selector.stats());
        a.tables_built = b.tables_built;
        assert_eq!(a, b, "step {step}");
        assert_eq!(new.live.book().len(), old.live.book().len());
    }
    assert_eq!(
        new.selector.root_lines(&new.live),
        old.selector.root_lines(&old.live)
    );
    met.bans = new.selector.stats().bans;
    met
}

fn config(roots: Vec<String>, leaves_per_turn: u32) -> RunConfig {
    RunConfig {
        roots,
        leaves_per_turn,
        ..RunConfig::default()
    }
}

#[test]
fn alpha_beta_leaves_are_todays_on_a_growing_book_with_twins_and_kifu() {
    // The default roots: startpos and its 30 children, so twins abound.
    let roots = RunConfig::default().roots;
    let met = compare(&[], &config(roots, 5), SelectMode::AlphaBeta, 0, 1, 1500);
    eprintln!("{met:?}");
    assert!(met.leaves > 2000, "{met:?}");
    assert!(met.on_twin > 0, "no line went through a twin: {met:?}");
    assert!(met.kifu > 0, "no kifu position was handed out: {met:?}");
}

#[test]
fn alpha_beta_leaves_are_todays_on_cyclic_books() {
    let mut total = Met::default();
    for seed in 0..3 {
        let mut rng = StdRng::seed_from_u64(seed);
        let nodes = cyclic_nodes(&mut rng, 7);
        let roots = vec!["startpos".into(), "startpos moves 2g2f 8c8d".into()];
        let discount = if seed == 2 { 40 } else { 0 };
        let met = compare(
            &nodes,
            &config(roots, 3),
            SelectMode::AlphaBeta,
            discount,
            seed,
            700,
        );
        eprintln!("seed {seed}: {} nodes, {met:?}", nodes.len());
        total.leaves += met.leaves;
        total.bans += met.bans;
        total.kifu += met.kifu;
    }
    assert!(total.bans > 0, "no repetition ended a line: {total:?}");
    assert!(total.kifu > 0, "no kifu position was handed out: {total:?}");
}

#[test]
fn alpha_beta_leaves_are_todays_without_the_cache() {
    let mut rng = StdRng::seed_from_u64(7);
    let nodes = cyclic_nodes(&mut rng, 6);
    let roots = vec!["startpos".into()];
    let mut new = side(
        &nodes,
        &config(roots.clone(), 4),
        false,
        SelectMode::AlphaBeta,
        0,
    );
    let mut old = side(&nodes, &config(roots, 4), true, SelectMode::AlphaBeta, 0);
    new.selector.set_cache_enabled(false);
    old.selector.set_cache_enabled(false);
    for step in 0..200 {
        let a = new.selector.select(&mut new.live, 3).unwrap();
        let b = old.selector.select(&mut old.live, 3).unwrap();
        same_leaves(step, &a, &b);
        if a.is_empty() {
            break;
        }
    }
}

#[test]
fn softmax_leaves_are_todays() {
    let mode = SelectMode::Softmax(SoftmaxSelect {
        temperature: 50.0,
        seed: 3,
    });
    let mut rng = StdRng::seed_from_u64(11);
    let nodes = cyclic_nodes(&mut rng, 6);
    let roots = RunConfig::default().roots;
    let met = compare(&nodes, &config(roots, 4), mode, 0, 5, 400);
    eprintln!("{met:?}");
    assert!(met.leaves > 500, "{met:?}");
}
