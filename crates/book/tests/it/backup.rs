//! Online backup of a sled store: the copy holds everything (positions, roots,
//! bans, game results), opens as a store, never overwrites, and an interrupted
//! backup leaves only a `.partial` directory.

use stera_book::synthetic::{GrowOptions, PseudoEvaluator, grow};
use stera_book::{GameCounts, LiveBook, NodeStore, Selector, SledStore};
use stera_rules::Key;

/// Everything a store holds, comparable: nodes, game counters, games, roots.
type Contents = (Vec<String>, Vec<(Key, GameCounts)>, u64, Option<String>);

fn contents(store: &SledStore) -> Contents {
    let mut nodes = Vec::new();
    store
        .for_each_node(&mut |id, node| {
            nodes.push(format!("{id:?} {node:?}"));
            Ok(())
        })
        .unwrap();
    let mut games = Vec::new();
    store
        .for_each_game_count(&mut |k, c| games.push((k, c)))
        .unwrap();
    games.sort_by_key(|(k, _)| k.0);
    (
        nodes,
        games,
        store.games_recorded().unwrap(),
        store.config().unwrap().map(|c| format!("{c:?}")),
    )
}

#[test]
fn a_backup_is_a_complete_store_and_never_overwrites() {
    let dir = tempfile::tempdir().unwrap();
    let store = SledStore::open(&dir.path().join("book.db")).unwrap();
    let mut live = LiveBook::open(store, None).unwrap();
    let mut selector = Selector::new();
    grow(
        &mut live,
        &mut selector,
        &PseudoEvaluator::new(3),
        300,
        GrowOptions::default(),
        &mut |_| {},
    )
    .unwrap();
    let store = live.store_mut();
    let keys: Vec<Key> = {
        let mut k = Vec::new();
        store
            .for_each_node(&mut |_, node| {
                k.push(node.key);
                Ok(())
            })
            .unwrap();
        k
    };
    assert!(
        store
            .record_game(
                5,
                &[(keys[0], GameCounts::WIN), (keys[1], GameCounts::LOSS)]
            )
            .unwrap()
    );

    let out = dir.path().join("backup.db");
    // A user's directory that merely looks like a leftover is never touched
    // (issue 26: it was deleted), and no temporary directory is left.
    let partial = dir.path().join("backup.db.partial");
    std::fs::create_dir_all(&partial).unwrap();
    std::fs::write(partial.join("junk"), b"my notes").unwrap();
    let summary = store.backup_to(&out).unwrap();
    assert_eq!(summary.nodes as usize, keys.len());
    assert!(summary.entries > keys.len() as u64 / 100);
    assert_eq!(std::fs::read(partial.join("junk")).unwrap(), b"my notes");
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["backup.db", "backup.db.partial", "book.db"]);
    let before = contents(store);
    drop((live, selector));

    let copy = SledStore::open_existing(&out).unwrap();
    assert_eq!(copy.len() as usize, keys.len());
    assert_eq!(contents(&copy), before);
    assert_eq!(copy.game_counts(keys[0]).unwrap(), GameCounts::WIN);
    // The copy loads as a book and selects like the original.
    let mut live = LiveBook::open(copy, None).unwrap();
    let mut selector = Selector::new();
    assert_eq!(live.book().len(), keys.len());
    assert!(!selector.select(&mut live, 1).unwrap().is_empty());

    // Never over an existing directory.
    let err = live.store().backup_to(&out).unwrap_err();
    assert!(err.to_string().contains("exists already"), "{err}");
}

/// A snapshot is the store of its moment: nodes appended and a game recorded
/// after it (while the copy could be running on another thread) are not in the
/// copy, and the copy holds everything from before.
#[test]
fn a_backup_snapshot_holds_its_moment_and_nothing_written_after() {
    let dir = tempfile::tempdir().unwrap();
    let store = SledStore::open(&dir.path().join("book.db")).unwrap();
    let mut live = LiveBook::open(store, None).unwrap();
    let mut selector = Selector::new();
    let evaluator = PseudoEvaluator::new(5);
    let small = GrowOptions {
        batch: 7,
        ..GrowOptions::default()
    };
    grow(
        &mut live,
        &mut selector,
        &evaluator,
        200,
        small,
        &mut |_| {},
    )
    .unwrap();
    let first_key = {
        let mut k = None;
        live.store()
            .for_each_node(&mut |_, node| {
                k.get_or_insert(node.key);
                Ok(())
            })
            .unwrap();
        k.unwrap()
    };
    assert!(
        live.store_mut()
            .record_game(1, &[(first_key, GameCounts::WIN)])
            .unwrap()
    );
    let snapshot = live.store().backup_snapshot().unwrap();
    let before = contents(live.store());
    assert_eq!(snapshot.node_count() as usize, before.0.len());

    // The owner goes on writing: more nodes, another game on the same position.
    grow(
        &mut live,
        &mut selector,
        &evaluator,
        320,
        small,
        &mut |_| {},
    )
    .unwrap();
    assert!(
        live.store_mut()
            .record_game(2, &[(first_key, GameCounts::LOSS)])
            .unwrap()
    );
    let out = dir.path().join("backup.db");
    let written = std::thread::scope(|s| s.spawn(|| snapshot.write_to(&out)).join())
        .unwrap()
        .unwrap();
    assert_eq!(written.nodes, 200);
    let copy = SledStore::open_existing(&out).unwrap();
    assert_eq!(contents(&copy), before);
    assert_eq!(copy.game_counts(first_key).unwrap(), GameCounts::WIN);
    assert_eq!(live.store().len(), 320);
}
