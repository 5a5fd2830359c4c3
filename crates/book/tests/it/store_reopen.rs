//! A selector over a sled store: everything it was told survives a reopen, and
//! terminal positions lead to persistent bans.

use stera_book::synthetic::{GrowOptions, PseudoEvaluator, grow};
use stera_book::{BookError, LiveBook, NodeStore, RunConfig, Selector, SledStore, Thought};
use stera_rules::{Key, Position};

fn thought(values: Vec<i16>) -> Thought {
    Thought {
        values,
        depths: None,
        evaluator: "test-engine 1.0".into(),
        timestamp: 42,
    }
}

#[test]
fn nodes_bans_kifu_and_config_survive_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let config = RunConfig {
        roots: vec!["startpos".into(), "startpos moves 2g2f".into()],
        kifu_bonus: 77,
        ply_limit: 300,
        leaves_per_turn: 4,
    };
    let (keys, values, banned) = {
        let store = SledStore::open(dir.path()).unwrap();
        let mut live = LiveBook::open(store, Some(config.clone())).unwrap();
        let mut selector = Selector::new();
        grow(
            &mut live,
            &mut selector,
            &PseudoEvaluator::new(5),
            500,
            GrowOptions {
                batch: 32,
                ..GrowOptions::default()
            },
            &mut |_| {},
        )
        .unwrap();
        let id = stera_book::NodeId(3);
        let pos = live.book().position_of(id).unwrap();
        let mv = pos.legal_moves()[1];
        live.ban(id, mv).unwrap();
        live.add_kifu_keys(&[Key(99), Key(100)]).unwrap();
        // Leaves in flight at shutdown are simply not there after reopening.
        assert_eq!(selector.select(&mut live, 10).unwrap().len(), 10);
        let keys: Vec<Key> = (0..500)
            .map(|i| live.book().key(stera_book::NodeId(i)))
            .collect();
        let values: Vec<Vec<i16>> = (0..500)
            .map(|i| live.book().values(stera_book::NodeId(i)).to_vec())
            .collect();
        (keys, values, (id, mv))
    };
    let store = SledStore::open(dir.path()).unwrap();
    assert_eq!(store.len(), 500);
    assert_eq!(store.kifu_keys().unwrap(), vec![Key(99), Key(100)]);
    assert_eq!(
        store.evaluators().unwrap(),
        vec![PseudoEvaluator::new(5).identity()]
    );
    let live = LiveBook::open(store, None).unwrap();
    assert_eq!(live.config(), &config);
    assert!(live.is_banned(banned.0, banned.1));
    assert_eq!(live.in_flight(), 0);
    for (i, key) in keys.iter().enumerate() {
        let id = live.book().get(*key).unwrap();
        assert_eq!(id.index(), i);
        assert_eq!(live.book().values(id), values[i].as_slice());
        let pos = live.book().position_of(id).unwrap();
        assert_eq!(pos.key(), *key);
    }
}

#[test]
fn a_mating_move_ends_the_pv_on_a_terminal_node_and_gets_banned() {
    // Black drops a gold on 5b: mate (the pawn on 5c protects it).
    let root = "sfen 4k4/9/4P4/9/9/9/9/9/4K4 b G 1";
    let dir = tempfile::tempdir().unwrap();
    let config = RunConfig {
        roots: vec![root.into()],
        leaves_per_turn: 1,
        ..RunConfig::default()
    };
    let pos = Position::from_position_command(root).unwrap();
    let moves = pos.legal_moves();
    let mate = moves.iter().position(|m| m.to_string() == "G*5b").unwrap();
    let mut values = vec![0i16; moves.len()];
    values[mate] = 31_999;
    let mate_id = {
        let store = SledStore::open(dir.path()).unwrap();
        let mut live = LiveBook::open(store, Some(config)).unwrap();
        let mut selector = Selector::new();
        let leaf = selector.select(&mut live, 1).unwrap().remove(0);
        assert!(leaf.path.is_empty(), "the unthought root comes first");
        let root_id = live.complete(&leaf, thought(values.clone())).unwrap();
        // The PV is the mating drop: its child is the leaf.
        let leaf = selector.select(&mut live, 1).unwrap().remove(0);
        assert_eq!(leaf.path[0].to_string(), "G*5b");
        assert!(leaf.position.has_no_legal_move());
        // Wrong value count is refused and changes nothing.
        assert!(matches!(
            live.complete(&leaf, thought(vec![1])),
            Err(BookError::Invalid(_))
        ));
        live.complete(&leaf, thought(Vec::new())).unwrap();
        // Now the PV ends on a thought node without moves: banned, and another
        // move is selected.
        let next = selector.select(&mut live, 1).unwrap().remove(0);
        assert_ne!(next.path[0].to_string(), "G*5b");
        assert!(live.is_banned(root_id, moves[mate]));
        assert_eq!(selector.stats().bans, 1);
        (root_id, moves[mate])
    };
    let live = LiveBook::open(SledStore::open(dir.path()).unwrap(), None).unwrap();
    assert!(live.is_banned(mate_id.0, mate_id.1));
    assert_eq!(live.book().len(), 2);
}

#[test]
fn abandoned_leaves_come_back_and_unknown_ones_are_refused() {
    let config = RunConfig {
        roots: vec!["startpos".into()],
        leaves_per_turn: 1,
        ..RunConfig::default()
    };
    let mut live = LiveBook::open(stera_book::MemoryStore::new(), Some(config)).unwrap();
    let mut selector = Selector::new();
    let eval = PseudoEvaluator::new(2);
    let root = selector.select(&mut live, 1).unwrap().remove(0);
    live.complete(&root, eval.thought(&root.position)).unwrap();
    let a = selector.select(&mut live, 1).unwrap().remove(0);
    let b = selector.select(&mut live, 1).unwrap().remove(0);
    assert_ne!(a.key, b.key);
    live.abandon(&a).unwrap();
    assert!(matches!(live.abandon(&a), Err(BookError::NotInFlight(_))));
    // With `b` still in flight, the best leaf is `a` again.
    let again = selector.select(&mut live, 1).unwrap().remove(0);
    assert_eq!(again.key, a.key);
}

#[test]
fn compaction_merges_small_batches_without_losing_nodes() {
    let dir = tempfile::tempdir().unwrap();
    let mut before = Vec::new();
    {
        let store = SledStore::open(dir.path()).unwrap();
        let config = RunConfig {
            roots: vec!["startpos".into()],
            ..RunConfig::default()
        };
        let mut live = LiveBook::open(store, Some(config)).unwrap();
        let mut selector = Selector::new();
        // Batches of 3: about 100 small chunks, as a live coordinator writes them.
        grow(
            &mut live,
            &mut selector,
            &PseudoEvaluator::new(9),
            300,
            GrowOptions {
                batch: 3,
                ..GrowOptions::default()
            },
            &mut |_| {},
        )
        .unwrap();
        let chunks = live.store().chunk_count();
        assert!(chunks > 90, "{chunks} chunks");
        let removed = live.store_mut().compact(64).unwrap();
        let left = live.store().chunk_count();
        // 300 records in groups of at least 64: at most 5 chunks remain.
        assert!(left <= 5, "{left} chunks left");
        assert_eq!(removed, chunks - left);
        live.store()
            .for_each_node(&mut |id, node| {
                before.push((id, node));
                Ok(())
            })
            .unwrap();
    }
    let store = SledStore::open(dir.path()).unwrap();
    assert_eq!(store.len(), 300);
    let mut after = Vec::new();
    store
        .for_each_node(&mut |id, node| {
            after.push((id, node));
            Ok(())
        })
        .unwrap();
    assert_eq!(before.len(), 300);
    assert_eq!(before, after);
}

/// A compactor on another thread merges chunks while the owner keeps appending
/// small batches; every node survives, in order, and the store reopens.
#[test]
fn compaction_beside_appends_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = SledStore::open(dir.path()).unwrap();
    let config = RunConfig {
        roots: vec!["startpos".into()],
        ..RunConfig::default()
    };
    let mut live = LiveBook::open(store, Some(config)).unwrap();
    let mut selector = Selector::new();
    let compactor = live.store().compactor();
    let done = std::sync::atomic::AtomicBool::new(false);
    let passes = std::thread::scope(|s| {
        let merging = s.spawn(|| {
            let (mut from, mut removed, mut passes) = (0, 0, 0);
            while !done.load(std::sync::atomic::Ordering::Acquire) {
                let pass = compactor.compact_from(from, 32).unwrap();
                assert!(pass.next_from >= from);
                from = pass.next_from;
                removed += pass.removed;
                passes += 1;
                std::thread::yield_now();
            }
            (removed, passes)
        });
        grow(
            &mut live,
            &mut selector,
            &PseudoEvaluator::new(11),
            600,
            GrowOptions {
                batch: 2,
                ..GrowOptions::default()
            },
            &mut |_| {},
        )
        .unwrap();
        done.store(true, std::sync::atomic::Ordering::Release);
        merging.join().unwrap()
    });
    let (removed, count) = passes;
    assert!(count > 0);
    let chunks = live.store().chunk_count();
    // 600 nodes in batches of 2 are about 300 chunks; what the passes merged is gone.
    assert!(removed > 0, "no chunk merged in {count} passes");
    let mut current = Vec::new();
    live.store()
        .for_each_node(&mut |id, node| {
            current.push((id, node));
            Ok(())
        })
        .unwrap();
    assert_eq!(current.len(), 600);
    // The compactor shares the database: both must be gone before it reopens.
    drop((live, compactor));
    let store = SledStore::open(dir.path()).unwrap();
    assert_eq!(store.len(), 600);
    assert_eq!(store.chunk_count(), chunks);
    let mut reopened = Vec::new();
    store
        .for_each_node(&mut |id, node| {
            reopened.push((id, node));
            Ok(())
        })
        .unwrap();
    assert_eq!(reopened, current);
}
