//! The selector against a naive full-window minimax written independently here
//! (no alpha-beta, no cache, no move ordering), on random small books built from
//! real shogi positions with transpositions, and with cycles.
//!
//! What must hold for every selected leaf: the path from its root is a principal
//! variation of the naive minimax (every edge on it carries its node's minimax
//! value), it ends on an edge whose child is neither thought nor in flight, and
//! its root's minimax value equals that edge's value seen from the root.
//!
//! Where they may differ: on books with cycles the selector's cache (the
//! reference's shortcut) reuses a value found on one path for another path, while
//! repetition scores depend on the path (the graph-history-interaction problem).
//! The test checks that with the cache off the selector is exact on cyclic books
//! too, and counts, without requiring zero, the disagreements with the cache on.

use std::collections::{HashMap, HashSet};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use stera_book::{LiveBook, MemoryStore, NodeStore, Origin, RunConfig, Selector, ThoughtNode};
use stera_rules::value::{MATE, MATE_IN_MAX_PLY};
use stera_rules::{Key, Move, Position, Repetition};

/// A random book: thought positions reachable from startpos with a few moves.
struct TestBook {
    values: HashMap<u128, Vec<i16>>,
    /// Insertion order with origins, for the store.
    nodes: Vec<ThoughtNode>,
}

fn random_value(rng: &mut StdRng) -> i16 {
    if rng.random_ratio(1, 40) {
        let n: i16 = rng.random_range(1..20);
        let mate = i16::try_from(MATE).unwrap() - n;
        if rng.random_bool(0.5) { mate } else { -mate }
    } else {
        rng.random_range(-400..=400)
    }
}

fn build_book(rng: &mut StdRng, cyclic: bool, max_depth: usize, keep: f64) -> TestBook {
    let mut candidate = vec![
        "7g7f", "2g2f", "3c3d", "8c8d", "6g6f", "4c4d", "9g9f", "1c1d",
    ];
    if cyclic {
        candidate.truncate(4);
        candidate.extend(["2h3h", "3h2h", "8b7b", "7b8b"]);
    }
    let mut book = TestBook {
        values: HashMap::new(),
        nodes: Vec::new(),
    };
    let mut ids: HashMap<u128, u32> = HashMap::new();
    let root = Position::startpos();
    // Breadth first, so every position is expanded at its shallowest depth.
    let mut frontier =
        std::collections::VecDeque::from([(root.clone(), None::<(u32, Move)>, 0usize)]);
    while let Some((pos, origin, depth)) = frontier.pop_front() {
        if book.values.contains_key(&pos.key().0) {
            continue;
        }
        let n = pos.legal_move_count();
        let values: Vec<i16> = (0..n).map(|_| random_value(rng)).collect();
        let id = u32::try_from(book.nodes.len()).unwrap();
        ids.insert(pos.key().0, id);
        book.values.insert(pos.key().0, values.clone());
        book.nodes.push(ThoughtNode {
            key: pos.key(),
            origin: match origin {
                Some((p, mv)) => Origin::Child {
                    parent: stera_book::NodeId(p),
                    mv,
                },
                None => Origin::Sfen(pos.to_sfen_without_ply()),
            },
            ply: 1,
            values,
            depths: None,
            evaluator: 0,
            timestamp: 0,
        });
        if depth == max_depth {
            continue;
        }
        for text in &candidate {
            if let Ok(mv) = pos.parse_move(text)
                && rng.random_bool(keep)
            {
                let mut child = pos.clone();
                child.do_move(mv);
                frontier.push_back((child, Some((id, mv)), depth + 1));
            }
        }
    }
    book
}

struct Naive<'a> {
    book: &'a TestBook,
    in_flight: &'a HashSet<u128>,
    banned: &'a dyn Fn(Key, Move) -> bool,
    kifu: &'a HashSet<u128>,
    kifu_bonus: i32,
    leaf_discount: i32,
    ply_limit: u32,
}

impl Naive<'_> {
    fn leaf_value(&self, stored: i16, ply: i32, child: u128) -> i32 {
        let v = i32::from(stored);
        let v = if v >= MATE_IN_MAX_PLY {
            v - ply
        } else if v <= -MATE_IN_MAX_PLY {
            v + ply
        } else {
            v
        };
        if v.abs() >= MATE_IN_MAX_PLY {
            return v;
        }
        let bonus = if self.kifu.contains(&child) {
            self.kifu_bonus
        } else {
            0
        };
        (v - self.leaf_discount + bonus).clamp(-MATE_IN_MAX_PLY + 1, MATE_IN_MAX_PLY - 1)
    }

    /// Value of the edge `mv` from `pos` (at distance `ply` from the root), from
    /// the mover's side; `None` if the edge is skipped.
    fn edge(&self, pos: &mut Position, index: usize, mv: Move, ply: i32) -> Option<i32> {
        if (self.banned)(pos.key(), mv) {
            return None;
        }
        let stored = self.book.values[&pos.key().0][index];
        pos.do_move(mv);
        let child = pos.key().0;
        let out = if self.in_flight.contains(&child) {
            None
        } else if !self.book.values.contains_key(&child) {
            Some(self.leaf_value(stored, ply, child))
        } else if let Some(rep) = pos.search_repetition(usize::MAX) {
            Some(match rep {
                Repetition::Draw => 0,
                Repetition::OpponentPerpetualCheck => -(MATE - ply - 1),
                Repetition::OwnPerpetualCheck => MATE - ply - 1,
            })
        } else if pos.ply() > self.ply_limit {
            Some(0)
        } else if self.book.values[&child].is_empty() {
            Some(MATE - ply - 1)
        } else {
            self.value(pos, ply + 1).map(|v| -v)
        };
        pos.undo_move().unwrap();
        out
    }

    fn value(&self, pos: &mut Position, ply: i32) -> Option<i32> {
        let moves = pos.legal_moves();
        let mut best = None;
        for (i, mv) in moves.iter().enumerate() {
            if let Some(v) = self.edge(pos, i, *mv, ply) {
                best = Some(best.map_or(v, |b: i32| b.max(v)));
            }
        }
        best
    }
}

fn check_leaf(naive: &Naive<'_>, root: &Position, path: &[Move]) {
    let mut pos = root.clone();
    let root_value = naive
        .value(&mut pos, 0)
        .expect("root has a selectable leaf");
    let mut expected = root_value;
    for (ply, mv) in path.iter().enumerate() {
        let ply = i32::try_from(ply).unwrap();
        let node_value = naive.value(&mut pos, ply).expect("path node has a value");
        assert_eq!(node_value, expected, "path node value at ply {ply}");
        let index = pos.legal_moves().iter().position(|m| m == mv).unwrap();
        let edge = naive
            .edge(&mut pos, index, *mv, ply)
            .expect("path edge skipped");
        assert_eq!(
            edge, node_value,
            "edge {mv} at ply {ply} is not a best move"
        );
        pos.do_move(*mv);
        expected = -edge;
    }
    assert!(
        !naive.book.values.contains_key(&pos.key().0),
        "leaf is thought"
    );
}

/// The naive minimax of `book` with the run settings of `run_case`.
fn naive_minimax<'a>(
    book: &'a TestBook,
    in_flight: &'a HashSet<u128>,
    banned: &'a dyn Fn(Key, Move) -> bool,
    kifu: &'a HashSet<u128>,
    leaf_discount: i32,
) -> Naive<'a> {
    Naive {
        book,
        in_flight,
        banned,
        kifu,
        kifu_bonus: 100,
        leaf_discount,
        ply_limit: 512,
    }
}

/// Checks that `line` from `root` is a principal variation of `naive` with value
/// `value`: every edge on it carries its node's minimax value.
fn check_line(naive: &Naive<'_>, root: &Position, line: &[Move], value: i32) {
    let mut pos = root.clone();
    let mut expected = naive.value(&mut pos, 0).expect("root has a value");
    assert_eq!(value, expected, "the book line's value");
    assert!(!line.is_empty(), "a thought root has a line");
    for (ply, mv) in line.iter().enumerate() {
        let ply = i32::try_from(ply).unwrap();
        let index = pos.legal_moves().iter().position(|m| m == mv).unwrap();
        let edge = naive
            .edge(&mut pos, index, *mv, ply)
            .expect("line edge skipped");
        assert_eq!(edge, expected, "edge {mv} at ply {ply} is not a best move");
        pos.do_move(*mv);
        expected = -edge;
    }
}

/// Runs `selections` one-leaf selections (fresh cache generation each) with
/// random bans and kifu keys and checks each against the naive minimax.
/// Returns the number of leaves that disagreed (only tolerated when `tolerate`).
const SELECTIONS: usize = 10;

fn run_case(seed: u64, cyclic: bool, use_cache: bool, tolerate: bool) -> usize {
    run_discounted_case(seed, cyclic, use_cache, tolerate, Discounts::default())
}

/// The leaf discount of the selector under test, and the one the naive minimax
/// it is checked against uses (they differ only to show the check can fail).
#[derive(Debug, Clone, Copy, Default)]
struct Discounts {
    selector: i16,
    naive: i32,
}

fn run_discounted_case(
    seed: u64,
    cyclic: bool,
    use_cache: bool,
    tolerate: bool,
    discounts: Discounts,
) -> usize {
    let mut rng = StdRng::seed_from_u64(seed);
    let book = if cyclic {
        build_book(&mut rng, true, 8, 0.7)
    } else {
        build_book(&mut rng, false, 6, 0.6)
    };
    eprintln!("seed {seed}: {} thought nodes", book.nodes.len());
    let mut store = MemoryStore::new();
    store.append(&book.nodes).unwrap();
    let config = RunConfig {
        roots: vec!["startpos".into()],
        kifu_bonus: 100,
        ply_limit: 512,
        leaves_per_turn: 1,
    };
    let mut live = LiveBook::open(store, Some(config)).unwrap();
    live.set_leaf_discount(discounts.selector);
    let mut selector = Selector::new();
    selector.set_cache_enabled(use_cache);
    // Kifu positions: some unthought children of thought nodes.
    let mut kifu = HashSet::new();
    for node in book.nodes.iter().take(20) {
        if let Origin::Child { .. } = node.origin
            && let Ok(pos) = live.book().position_of(live.book().get(node.key).unwrap())
        {
            for mv in pos.legal_moves().iter().take(3) {
                kifu.insert(pos.key_after(*mv).0);
            }
        }
    }
    let kifu_keys: Vec<Key> = kifu.iter().map(|k| Key(*k)).collect();
    live.add_kifu_keys(&kifu_keys).unwrap();
    // A few random bans on thought nodes.
    for _ in 0..5 {
        let node = &book.nodes[rng.random_range(0..book.nodes.len())];
        let id = live.book().get(node.key).unwrap();
        let pos = live.book().position_of(id).unwrap();
        let moves = pos.legal_moves();
        live.ban(id, moves[rng.random_range(0..moves.len())])
            .unwrap();
    }
    let root = Position::startpos();
    let mut in_flight = HashSet::new();
    let mut disagreements = 0;
    for _ in 0..SELECTIONS {
        let leaves = selector.select(&mut live, 1).unwrap();
        let banned = |key: Key, mv: Move| {
            live.book()
                .get(key)
                .is_some_and(|id| live.is_banned(id, mv))
        };
        let naive = naive_minimax(&book, &in_flight, &banned, &kifu, discounts.naive);
        let Some(leaf) = leaves.first() else {
            assert!(
                naive.value(&mut root.clone(), 0).is_none(),
                "selector found nothing"
            );
            break;
        };
        assert!(!in_flight.contains(&leaf.key.0), "leaf handed out twice");
        if tolerate {
            if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                check_leaf(&naive, &root, &leaf.path);
            }))
            .is_err()
            {
                disagreements += 1;
            }
        } else {
            check_leaf(&naive, &root, &leaf.path);
        }
        in_flight.insert(leaf.key.0);
        // The book's own line counts the positions in flight at their stored
        // values, as if nothing were in flight; the selections that follow it
        // (next turn of the loop) must stay exact.
        let lines = selector.book_lines(&live);
        assert_eq!(lines.len(), 1, "one root, thought");
        let (root_text, line, value) = &lines[0];
        assert_eq!(root_text, "startpos");
        if !tolerate {
            let nothing_in_flight = HashSet::new();
            let whole = naive_minimax(&book, &nothing_in_flight, &banned, &kifu, discounts.naive);
            check_line(&whole, &root, line, *value);
        }
    }
    disagreements
}

#[test]
fn acyclic_books_select_exact_pv_leaves() {
    for seed in 0..6 {
        assert_eq!(run_case(seed, false, true, false), 0);
    }
}

/// Selection with a leaf discount hands out the leaves of the minimax over
/// discounted leaf moves; checked against the naive minimax without the
/// discount, the same selections disagree (the discount changes lines). The
/// discount is larger than the values' spread (±400): these books' values are
/// independent, so a thought child's best reply is near +400 and only a
/// discount that large lets the moves into thought positions compete.
#[test]
fn a_leaf_discount_selects_the_pv_leaves_of_the_discounted_minimax() {
    let discounted = Discounts {
        selector: 800,
        naive: 800,
    };
    for seed in 0..6 {
        assert_eq!(run_discounted_case(seed, false, true, false, discounted), 0);
    }
    let unseen = Discounts {
        selector: 800,
        naive: 0,
    };
    let disagreements: usize = (0..6)
        .map(|seed| run_discounted_case(seed, false, true, true, unseen))
        .sum();
    assert!(disagreements > 0, "the discount changed no selection");
}

#[test]
fn cyclic_books_are_exact_without_the_cache() {
    for seed in 100..106 {
        assert_eq!(run_case(seed, true, false, false), 0);
    }
}

#[test]
fn cyclic_books_with_the_cache_still_hand_out_valid_leaves() {
    let prev = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let mut total = 0;
    for seed in 100..106 {
        total += run_case(seed, true, true, true);
    }
    std::panic::set_hook(prev);
    // Disagreements are the documented GHI effect; report them for the record.
    println!(
        "cyclic books with cache: {total} of {} leaves off the naive PV",
        6 * SELECTIONS
    );
    assert!(
        total < 6 * SELECTIONS,
        "the cached search never agrees with minimax"
    );
}
