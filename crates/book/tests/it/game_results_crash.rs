//! SIGKILL while games are recorded must leave every game wholly counted or not
//! at all, and every acknowledged game counted.
//!
//! As in `crash_durability.rs`, the test re-runs its own binary as the writer
//! (the ignored test `game_writer_child`): game `n` adds one win to each of
//! `POSITIONS` positions, ids are dense from 0, and the writer prints `ack n`
//! after `record_game` returned. After the kill every position must hold exactly
//! as many wins as there are recorded games (a torn game would break that).

use std::io::Write;

use crate::kill_child::kill_writer;

use rand::SeedableRng;
use rand::rngs::StdRng;
use stera_book::{GameCounts, NodeStore, SledStore};
use stera_rules::Key;

const STORE_ENV: &str = "STERA_BOOK_GAMES_CRASH_STORE";
const POSITIONS: u128 = 64;

fn game() -> Vec<(Key, GameCounts)> {
    (0..POSITIONS)
        .map(|i| (Key(i * 0x1_0000_0001), GameCounts::WIN))
        .collect()
}

#[test]
#[ignore = "run by sigkill_records_whole_games_only as a child process"]
fn game_writer_child() {
    let Ok(dir) = std::env::var(STORE_ENV) else {
        return;
    };
    let mut store = SledStore::open(std::path::Path::new(&dir)).unwrap();
    let game = game();
    let stdout = std::io::stdout();
    let mut id = store.games_recorded().unwrap();
    loop {
        assert!(store.record_game(id, &game).unwrap());
        // A repeated report of an earlier game changes nothing.
        if id > 0 && id.is_multiple_of(7) {
            assert!(!store.record_game(id - 1, &game).unwrap());
        }
        let mut out = stdout.lock();
        writeln!(out, "ack {id}").unwrap();
        out.flush().unwrap();
        id += 1;
    }
}

#[test]
fn sigkill_records_whole_games_only() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = StdRng::seed_from_u64(11);
    let mut acked = 0u64;
    for round in 0..4 {
        let end = kill_writer(
            "game_results_crash::game_writer_child",
            STORE_ENV,
            dir.path(),
            &mut rng,
            |id| id.parse::<u64>().unwrap() + 1,
        );
        acked = acked.max(end);
        let store = SledStore::open(dir.path()).unwrap();
        let recorded = store.games_recorded().unwrap();
        assert!(
            recorded >= acked,
            "round {round}: {recorded} recorded, {acked} acknowledged"
        );
        assert_eq!(store.max_game_id().unwrap(), Some(recorded - 1));
        let expected = GameCounts {
            wins: u32::try_from(recorded).unwrap(),
            ..GameCounts::default()
        };
        let mut positions = 0;
        store
            .for_each_game_count(&mut |key, c| {
                assert_eq!(c, expected, "round {round}: position {key}");
                positions += 1;
            })
            .unwrap();
        assert_eq!(positions, POSITIONS);
        println!("round {round}: {acked} acknowledged, {recorded} recorded");
    }
    assert!(acked > 0);
}
