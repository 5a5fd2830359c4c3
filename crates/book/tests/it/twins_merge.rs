//! Merging colour-flipped twins (`book-tools migrate`): a store that holds both
//! twins of a position is written as a new store with one node per pair, the
//! twin reached first kept, and nothing that pointed at the dropped twin lost.

use stera_book::twins::{TwinPairs, write_merged};
use stera_book::{Book, GameCounts, NodeId, NodeStore, Origin, RunConfig, SledStore, ThoughtNode};
use stera_rules::{Move, Position};

fn node(pos: &Position, origin: Origin, value: i16) -> ThoughtNode {
    ThoughtNode {
        key: pos.key(),
        origin,
        ply: 3,
        values: vec![value; pos.legal_move_count()],
        depths: None,
        evaluator: 0,
        timestamp: 7,
    }
}

/// The twin of `pos` through flipped SFEN text (not the key arithmetic the
/// merge uses).
fn twin_of(pos: &Position) -> Position {
    Position::from_sfen(&pos.flipped().to_sfen()).unwrap()
}

/// A store made as before twins were one node (`--keep-twins`): the start (0),
/// 7g7f (1), 7g7f 3c3d (2), its twin by SFEN (3, worth another value), a child
/// of the twin (4, linked to 3), and that child's child (5, linked to 4).
struct Old {
    child: Position,
    twin_child: Position,
    grandchild: Position,
    twin_move: Move,
}

fn old_store(path: &std::path::Path) -> (SledStore, Old) {
    let start = Position::startpos();
    let seven: Move = "7g7f".parse().unwrap();
    let mut after = start.clone();
    after.do_move(seven);
    let three: Move = "3c3d".parse().unwrap();
    let mut child = after.clone();
    child.do_move(three);
    let twin = twin_of(&child);
    let twin_move = twin.legal_moves()[4];
    let mut twin_child = twin.clone();
    twin_child.do_move(twin_move);
    let grand_move = twin_child.legal_moves()[0];
    let mut grandchild = twin_child.clone();
    grandchild.do_move(grand_move);

    let mut store = SledStore::open(path).unwrap();
    assert_eq!(store.intern_evaluator("engine A").unwrap(), 0);
    assert_eq!(store.intern_evaluator("engine B").unwrap(), 1);
    store
        .save_config(&RunConfig {
            roots: vec!["startpos".into()],
            kifu_bonus: 77,
            ply_limit: 300,
            leaves_per_turn: 3,
        })
        .unwrap();
    store
        .append(&[
            node(&start, Origin::Sfen(start.to_sfen_without_ply()), 10),
            node(
                &after,
                Origin::Child {
                    parent: NodeId(0),
                    mv: seven,
                },
                -20,
            ),
            node(
                &child,
                Origin::Child {
                    parent: NodeId(1),
                    mv: three,
                },
                30,
            ),
            node(&twin, Origin::Sfen(twin.to_sfen_without_ply()), 45),
            node(
                &twin_child,
                Origin::Child {
                    parent: NodeId(3),
                    mv: twin_move,
                },
                -5,
            ),
            node(
                &grandchild,
                Origin::Child {
                    parent: NodeId(4),
                    mv: grand_move,
                },
                6,
            ),
        ])
        .unwrap();
    // A store made before the marker: mark it so (a new store has it).
    store.set_twins_merged(false).unwrap();
    store.ban(NodeId(3), twin_move).unwrap();
    store.ban(NodeId(1), three).unwrap();
    store.add_kifu_keys(&[child.key(), twin.key()]).unwrap();
    store
        .record_game(
            1,
            &[
                (start.key(), GameCounts::WIN),
                (child.key(), GameCounts::LOSS),
            ],
        )
        .unwrap();
    store
        .record_game(
            2,
            &[
                (start.key(), GameCounts::DRAW),
                (twin.key(), GameCounts::WIN),
            ],
        )
        .unwrap();
    (
        store,
        Old {
            child,
            twin_child,
            grandchild,
            twin_move,
        },
    )
}

#[test]
fn twins_are_merged_into_the_first_reached_and_nothing_pointing_at_the_other_is_lost() {
    let dir = tempfile::tempdir().unwrap();
    let (store, old) = old_store(&dir.path().join("old"));
    assert!(!store.twins_merged().unwrap());
    let book = Book::load(&store).unwrap();
    let pairs = TwinPairs::find(&book, &mut |_, _, _| {}).unwrap();
    assert_eq!(
        (pairs.pairs(), pairs.nodes_after(), pairs.rerooted()),
        (1, 5, 1)
    );
    let out = dir.path().join("merged");
    let summary = write_merged(&store, &book, &pairs, &out, &mut |_, _, _| {}).unwrap();
    assert_eq!(
        (
            summary.nodes_before,
            summary.nodes_after,
            summary.bans_moved
        ),
        (6, 5, 1)
    );
    assert_eq!(summary.game_counters_merged, 1);
    assert!(!dir.path().join("merged.partial").exists());

    let merged = SledStore::open_existing(&out).unwrap();
    assert!(merged.twins_merged().unwrap());
    let mb = Book::load(&merged).unwrap();
    assert_eq!(mb.len(), 5);
    // The twin (id 3) is gone, the first reached (id 2) keeps its values; the
    // twin's child is now rebuilt from its SFEN, and its own child still links
    // to it under its new id.
    assert!(!mb.contains(twin_of(&old.child).key()));
    let kept = mb.get(old.child.key()).unwrap();
    assert_eq!(kept, NodeId(2));
    assert!(mb.values(kept).iter().all(|&v| v == 30));
    let rerooted = mb.get(old.twin_child.key()).unwrap();
    assert_eq!(rerooted, NodeId(3));
    assert_eq!(
        mb.origin(rerooted),
        Origin::Sfen(old.twin_child.to_sfen_without_ply())
    );
    let grand = mb.get(old.grandchild.key()).unwrap();
    assert!(matches!(mb.origin(grand), Origin::Child { parent, .. } if parent == rerooted));
    for id in 0..5 {
        let pos = mb.position_of(NodeId(id)).unwrap();
        assert_eq!(pos.key(), mb.key(NodeId(id)));
    }
    // Nodes keep ply, evaluator and time; evaluators and configuration are
    // copied.
    let mut firsts = Vec::new();
    merged
        .for_each_node(&mut |_, n| {
            firsts.push((n.ply, n.evaluator, n.timestamp));
            Ok(())
        })
        .unwrap();
    assert!(firsts.iter().all(|&f| f == (3, 0, 7)));
    assert_eq!(merged.evaluators().unwrap(), ["engine A", "engine B"]);
    assert_eq!(merged.config().unwrap(), store.config().unwrap());

    // The twin's ban moved to the kept node with the move flipped; the other
    // ban is where it was.
    let mut bans = merged.bans().unwrap();
    bans.sort_by_key(|(n, m)| (n.0, m.raw()));
    let mut expected = vec![
        (NodeId(2), old.twin_move.flipped()),
        (NodeId(1), "3c3d".parse().unwrap()),
    ];
    expected.sort_by_key(|(n, m): &(NodeId, Move)| (n.0, m.raw()));
    assert_eq!(bans, expected);
    // The ban means the same move: flipped back on the kept node's board it is
    // the twin's move.
    assert!(old.child.is_legal(old.twin_move.flipped()));

    // Game counters: the twin's added to the kept node's (a loss and a win, both
    // from the side to move's view); game ids and their count kept.
    assert_eq!(
        merged.game_counts(old.child.key()).unwrap(),
        GameCounts {
            wins: 1,
            draws: 0,
            losses: 1
        }
    );
    assert_eq!(
        merged.game_counts(twin_of(&old.child).key()).unwrap(),
        GameCounts::default()
    );
    assert_eq!(
        merged.game_counts(Position::startpos().key()).unwrap(),
        GameCounts {
            wins: 1,
            draws: 1,
            losses: 0
        }
    );
    assert_eq!(merged.games_recorded().unwrap(), 2);
    assert_eq!(merged.max_game_id().unwrap(), Some(2));
    assert_eq!(merged.kifu_keys().unwrap().len(), 2);

    // The source is as it was.
    assert_eq!(store.len(), 6);
    assert!(!store.twins_merged().unwrap());
    assert_eq!(store.bans().unwrap().len(), 2);
}

#[test]
fn a_store_without_twin_pairs_needs_no_merge_and_the_target_is_never_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fresh");
    let mut store = SledStore::open(&path).unwrap();
    // A new store is one node per pair from its start.
    assert!(store.twins_merged().unwrap());
    let start = Position::startpos();
    store
        .append(&[node(&start, Origin::Sfen(start.to_sfen_without_ply()), 1)])
        .unwrap();
    assert!(store.twins_merged().unwrap());
    let book = Book::load(&store).unwrap();
    let pairs = TwinPairs::find(&book, &mut |_, _, _| {}).unwrap();
    assert_eq!((pairs.pairs(), pairs.nodes_after()), (0, 1));
    let taken = dir.path().join("taken");
    std::fs::create_dir(&taken).unwrap();
    let err = write_merged(&store, &book, &pairs, &taken, &mut |_, _, _| {}).unwrap_err();
    assert!(err.to_string().contains("exists already"), "{err}");
}

/// Issue 35, point 11: migrate dropped the quarantine table. Every table of a
/// store is filled here and must come through; a table added later that this
/// test does not fill fails the first assertion, and one that migrate does not
/// know makes migrate refuse the store (checked last).
#[test]
fn migrate_copies_every_table() {
    let dir = tempfile::tempdir().unwrap();
    let (mut store, old) = old_store(&dir.path().join("old"));
    let twin = twin_of(&old.child);
    store
        .record_quarantine(
            NodeId(3),
            old.twin_move,
            &format!("{}\tfailed on 2 workers", old.twin_child.to_sfen()),
        )
        .unwrap();
    store
        .record_quarantine(NodeId(1), "3c3d".parse().unwrap(), "child\tcrashed")
        .unwrap();
    let opponent = store.intern_opponent("engine at 100 nodes").unwrap();
    store
        .record_learning_game(
            opponent,
            7,
            &[(old.twin_child.key(), stera_book::GameCounts::WIN)],
        )
        .unwrap();
    let mut tables = store.table_names().unwrap();
    tables.sort();
    let mut known: Vec<String> = stera_book::TABLES.iter().map(|t| (*t).to_owned()).collect();
    known.sort();
    assert_eq!(
        tables, known,
        "stera_book::TABLES lists every table a store has"
    );
    for table in &tables {
        assert!(
            store.table_len(table).unwrap() > 0,
            "table `{table}` is empty: fill it in this test so that migrate is seen to copy it"
        );
    }

    let book = Book::load(&store).unwrap();
    let pairs = TwinPairs::find(&book, &mut |_, _, _| {}).unwrap();
    let out = dir.path().join("merged");
    write_merged(&store, &book, &pairs, &out, &mut |_, _, _| {}).unwrap();
    let merged = SledStore::open_existing(&out).unwrap();
    let mut merged_tables = merged.table_names().unwrap();
    merged_tables.sort();
    assert_eq!(merged_tables, tables);
    for table in &tables {
        assert!(
            merged.table_len(table).unwrap() > 0,
            "migrate left table `{table}` empty"
        );
    }
    // The quarantine moved with its ban: the twin's record to the kept node
    // with the move flipped, notes as they were.
    let mut quarantined = merged.quarantined().unwrap();
    quarantined.sort_by_key(|(n, m, _)| (n.0, m.raw()));
    let mut expected = vec![
        (
            NodeId(2),
            old.twin_move.flipped(),
            format!("{}\tfailed on 2 workers", old.twin_child.to_sfen()),
        ),
        (
            NodeId(1),
            "3c3d".parse().unwrap(),
            "child\tcrashed".to_owned(),
        ),
    ];
    expected.sort_by_key(|(n, m, _): &(NodeId, Move, String)| (n.0, m.raw()));
    assert_eq!(quarantined, expected);
    assert!(!merged.quarantined().unwrap().is_empty());
    assert!(book.contains(twin.key()));
    drop(merged);

    // A table migrate does not know (as a later version might add): refused,
    // nothing written, rather than copied without it.
    let path = dir.path().join("old");
    drop(store);
    {
        let db = stera_book_sled_reopen(&path);
        db.open_tree("future").unwrap().insert("k", "v").unwrap();
        db.flush().unwrap();
    }
    let store = SledStore::open_existing(&path).unwrap();
    let out = dir.path().join("merged-again");
    let err = write_merged(&store, &book, &pairs, &out, &mut |_, _, _| {}).unwrap_err();
    assert!(err.to_string().contains("`future`"), "{err}");
    assert!(!out.exists());
}

/// sled opened directly on a store (waiting for the lock a store just dropped
/// releases a moment later).
fn stera_book_sled_reopen(path: &std::path::Path) -> sled::Db {
    for _ in 0..200 {
        match sled::open(path) {
            Ok(db) => return db,
            Err(_) => std::thread::sleep(std::time::Duration::from_millis(10)),
        }
    }
    sled::open(path).unwrap()
}
