//! Game results per position in the store: counters add up, a game id counts
//! once, everything survives a reopen, and the memory and sled stores agree.

use proptest::prelude::*;
use stera_book::{GameCounts, MemoryStore, NodeStore, SledStore};
use stera_rules::Key;

fn counts(wins: u32, draws: u32, losses: u32) -> GameCounts {
    GameCounts {
        wins,
        draws,
        losses,
    }
}

/// Everything a store holds about games, for comparing two stores.
fn game_state(store: &dyn NodeStore) -> (u64, Option<u64>, Vec<(Key, GameCounts)>) {
    let mut all = Vec::new();
    store
        .for_each_game_count(&mut |k, c| all.push((k, c)))
        .unwrap();
    (
        store.games_recorded().unwrap(),
        store.max_game_id().unwrap(),
        all,
    )
}

#[test]
fn counts_add_up_across_games_and_a_key_twice_adds_twice() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = SledStore::open(dir.path()).unwrap();
    assert_eq!(store.game_counts(Key(1)).unwrap(), GameCounts::default());
    assert_eq!(store.games_recorded().unwrap(), 0);
    assert_eq!(store.max_game_id().unwrap(), None);

    assert!(
        store
            .record_game(7, &[(Key(1), GameCounts::WIN), (Key(2), GameCounts::LOSS)])
            .unwrap()
    );
    assert!(
        store
            .record_game(3, &[(Key(1), GameCounts::DRAW), (Key(2), GameCounts::DRAW)])
            .unwrap()
    );
    // A repetition passes a position twice: both passes count.
    assert!(
        store
            .record_game(9, &[(Key(1), GameCounts::LOSS), (Key(1), GameCounts::LOSS)])
            .unwrap()
    );
    assert!(store.record_game(10, &[]).unwrap());
    assert_eq!(store.game_counts(Key(1)).unwrap(), counts(1, 1, 2));
    assert_eq!(store.game_counts(Key(2)).unwrap(), counts(0, 1, 1));
    assert_eq!(store.game_counts(Key(3)).unwrap(), GameCounts::default());
    assert_eq!(store.games_recorded().unwrap(), 4);
    assert_eq!(store.max_game_id().unwrap(), Some(10));
    let (_, _, all) = game_state(&store);
    assert_eq!(
        all,
        vec![(Key(1), counts(1, 1, 2)), (Key(2), counts(0, 1, 1))]
    );
}

#[test]
fn the_same_game_id_counts_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = SledStore::open(dir.path()).unwrap();
    let game = [(Key(5), GameCounts::WIN), (Key(6), GameCounts::LOSS)];
    assert!(store.record_game(42, &game).unwrap());
    assert!(!store.record_game(42, &game).unwrap());
    // Different counts under a known id change nothing either.
    assert!(
        !store
            .record_game(42, &[(Key(7), GameCounts::DRAW)])
            .unwrap()
    );
    assert_eq!(store.game_counts(Key(5)).unwrap(), GameCounts::WIN);
    assert_eq!(store.game_counts(Key(6)).unwrap(), GameCounts::LOSS);
    assert_eq!(store.game_counts(Key(7)).unwrap(), GameCounts::default());
    assert_eq!(store.games_recorded().unwrap(), 1);
    drop(store);
    // Also after a reopen.
    let mut store = reopen(dir.path(), SledStore::open);
    assert!(!store.record_game(42, &game).unwrap());
    assert_eq!(store.game_counts(Key(5)).unwrap(), GameCounts::WIN);
    assert_eq!(store.games_recorded().unwrap(), 1);
}

#[test]
fn counts_survive_reopen_for_readers_too() {
    let dir = tempfile::tempdir().unwrap();
    {
        let mut store = SledStore::open(dir.path()).unwrap();
        for id in 0..20u64 {
            let c = match id % 3 {
                0 => GameCounts::WIN,
                1 => GameCounts::DRAW,
                _ => GameCounts::LOSS,
            };
            assert!(store.record_game(id, &[(Key(u128::MAX), c)]).unwrap());
        }
    }
    let store = reopen(dir.path(), SledStore::open_existing);
    assert_eq!(store.game_counts(Key(u128::MAX)).unwrap(), counts(7, 7, 6));
    assert_eq!(store.games_recorded().unwrap(), 20);
    assert_eq!(store.max_game_id().unwrap(), Some(19));
}

#[test]
fn many_positions() {
    let dir = tempfile::tempdir().unwrap();
    let key = |i: u128| Key(i.wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c835));
    {
        let mut store = SledStore::open(dir.path()).unwrap();
        for game in 0..50u64 {
            // 200 positions per game, overlapping between neighbouring games.
            let first = u128::from(game) * 100;
            let positions: Vec<(Key, GameCounts)> = (first..first + 200)
                .map(|i| (key(i), GameCounts::WIN))
                .collect();
            assert!(store.record_game(game, &positions).unwrap());
        }
    }
    let store = SledStore::open(dir.path()).unwrap();
    let (recorded, _, all) = game_state(&store);
    assert_eq!(recorded, 50);
    assert_eq!(all.len(), 5_100);
    let total: u64 = all.iter().map(|(_, c)| c.games()).sum();
    assert_eq!(total, 50 * 200);
    assert_eq!(store.game_counts(key(0)).unwrap(), GameCounts::WIN);
    assert_eq!(store.game_counts(key(150)).unwrap(), counts(2, 0, 0));
    assert!(all.windows(2).all(|w| w[0].0 < w[1].0), "key order");
}

#[test]
fn a_store_written_before_game_results_opens_empty() {
    let dir = tempfile::tempdir().unwrap();
    {
        // The trees and marker of a store from before the `games` tree.
        let db = sled::open(dir.path()).unwrap();
        for name in ["nodes", "bans", "kifu"] {
            db.open_tree(name).unwrap();
        }
        db.open_tree("meta")
            .unwrap()
            .insert("format", "stera-book 1")
            .unwrap();
        db.flush().unwrap();
    }
    let store = reopen(dir.path(), SledStore::open_existing);
    assert_eq!(store.games_recorded().unwrap(), 0);
    assert_eq!(store.game_counts(Key(1)).unwrap(), GameCounts::default());
    assert_eq!(game_state(&store).2, vec![]);
    drop(store);
    let mut store = reopen(dir.path(), SledStore::open);
    assert!(store.record_game(1, &[(Key(1), GameCounts::DRAW)]).unwrap());
    assert_eq!(store.game_counts(Key(1)).unwrap(), GameCounts::DRAW);
}

#[test]
fn corrupt_counters_are_a_typed_error() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = sled::open(dir.path()).unwrap();
        db.open_tree("meta")
            .unwrap()
            .insert("format", "stera-book 1")
            .unwrap();
        let mut key = vec![b'c'];
        key.extend_from_slice(&Key(3).to_bytes());
        db.open_tree("games")
            .unwrap()
            .insert(key, &[1u8, 2, 3][..])
            .unwrap();
        db.flush().unwrap();
    }
    let mut store = SledStore::open(dir.path()).unwrap();
    let err = store.game_counts(Key(3)).unwrap_err();
    assert!(matches!(err, stera_book::BookError::Corrupt(_)), "{err}");
    assert!(err.to_string().contains("game counts of 3 bytes"), "{err}");
    // Recording over corrupt counters fails and records nothing.
    assert!(store.record_game(1, &[(Key(3), GameCounts::WIN)]).is_err());
    assert_eq!(store.games_recorded().unwrap(), 0);
}

fn outcome() -> impl Strategy<Value = GameCounts> {
    prop_oneof![
        Just(GameCounts::WIN),
        Just(GameCounts::DRAW),
        Just(GameCounts::LOSS),
        (0..3u32, 0..3u32, 0..3u32).prop_map(|(w, d, l)| counts(w, d, l)),
    ]
}

/// A game: its id (from a small range, so ids repeat) and its positions (from a
/// small key set, so positions repeat within and across games).
fn game() -> impl Strategy<Value = (u64, Vec<(Key, GameCounts)>)> {
    (
        0..12u64,
        prop::collection::vec(
            (0..16u128)
                .prop_map(Key)
                .prop_flat_map(|k| (Just(k), outcome())),
            0..8,
        ),
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn memory_and_sled_stores_agree(games in prop::collection::vec(game(), 0..24)) {
        let dir = tempfile::tempdir().unwrap();
        let mut sled = SledStore::open(dir.path()).unwrap();
        let mut memory = MemoryStore::new();
        for (id, positions) in &games {
            let m = memory.record_game(*id, positions).unwrap();
            let s = sled.record_game(*id, positions).unwrap();
            prop_assert_eq!(m, s, "game {}", id);
        }
        let expected = game_state(&memory);
        prop_assert_eq!(&game_state(&sled), &expected);
        for k in 0..16u128 {
            prop_assert_eq!(
                sled.game_counts(Key(k)).unwrap(),
                memory.game_counts(Key(k)).unwrap()
            );
        }
        drop(sled);
        let sled = reopen(dir.path(), SledStore::open_existing);
        prop_assert_eq!(&game_state(&sled), &expected);
    }
}

/// Opens a store that was just closed: sled's background thread may hold the lock
/// for a moment after the last handle is dropped.
fn reopen(
    path: &std::path::Path,
    open: impl Fn(&std::path::Path) -> Result<SledStore, stera_book::BookError>,
) -> SledStore {
    let start = std::time::Instant::now();
    loop {
        match open(path) {
            Err(stera_book::BookError::InUse { .. })
                if start.elapsed() < std::time::Duration::from_secs(10) =>
            {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            other => return other.unwrap(),
        }
    }
}
