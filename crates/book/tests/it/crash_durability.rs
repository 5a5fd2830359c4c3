//! SIGKILL at random moments must leave a store that opens and holds every node
//! whose append was acknowledged.
//!
//! The test re-runs its own binary as the writer (the ignored test `writer_child`
//! with an environment variable naming the store): it appends batches of nodes
//! whose contents follow from their ids and prints `ack <first> <count>` after
//! each append returned. The parent kills it with SIGKILL after a random delay,
//! reopens the store, checks every acknowledged node and every stored node, and
//! repeats on the same store so that recovery of a recovered store is tested too.

use std::io::Write;

use crate::kill_child::kill_writer;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use stera_book::{NodeId, NodeStore, Origin, SledStore, ThoughtNode};
use stera_rules::{Key, Move};

const STORE_ENV: &str = "STERA_BOOK_CRASH_STORE";

/// The node with id `id`, as the writer makes it and the checker expects it.
fn node_for(id: u32) -> ThoughtNode {
    let n = (id % 97) as usize;
    let mut h = u64::from(id).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xABCD;
    let values = (0..n)
        .map(|i| {
            h = h.rotate_left(7).wrapping_add(i as u64);
            (h % 2001) as i16 - 1000
        })
        .collect();
    ThoughtNode {
        key: Key((u128::from(id) << 64) | u128::from(id.wrapping_mul(2_654_435_761))),
        origin: if id.is_multiple_of(5) {
            Origin::Sfen(format!("root-{id}"))
        } else {
            Origin::Child {
                parent: NodeId(id / 2),
                mv: Move::from_usi("7g7f").unwrap(),
            }
        },
        ply: u16::try_from(id % 300).unwrap(),
        values,
        depths: id
            .is_multiple_of(3)
            .then(|| (0..n).map(|i| u8::try_from(i % 256).unwrap()).collect()),
        evaluator: 0,
        timestamp: id,
    }
}

#[test]
#[ignore = "run by sigkill_never_loses_acknowledged_nodes as a child process"]
fn writer_child() {
    let Ok(dir) = std::env::var(STORE_ENV) else {
        return;
    };
    let mut store = SledStore::open(std::path::Path::new(&dir)).unwrap();
    let mut rng = StdRng::seed_from_u64(u64::from(store.len()));
    let stdout = std::io::stdout();
    loop {
        let first = store.len();
        let count = rng.random_range(1..40u32);
        let batch: Vec<ThoughtNode> = (first..first + count).map(node_for).collect();
        let got = store.append(&batch).unwrap();
        assert_eq!(got, NodeId(first));
        let mut out = stdout.lock();
        writeln!(out, "ack {first} {count}").unwrap();
        out.flush().unwrap();
    }
}

#[test]
fn sigkill_never_loses_acknowledged_nodes() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = StdRng::seed_from_u64(7);
    let mut acked_end = 0u32;
    for round in 0..6 {
        let acked = kill_writer(
            "crash_durability::writer_child",
            STORE_ENV,
            dir.path(),
            &mut rng,
            |rest| {
                let mut it = rest.split(' ').map(|s| s.parse::<u64>().unwrap());
                it.next().unwrap() + it.next().unwrap()
            },
        );
        acked_end = acked_end.max(u32::try_from(acked).unwrap());
        let store = SledStore::open(dir.path()).unwrap();
        assert!(
            store.len() >= acked_end,
            "round {round}: store has {} nodes, {acked_end} acknowledged",
            store.len()
        );
        let mut seen = 0u32;
        store
            .for_each_node(&mut |id, node| {
                assert_eq!(node, node_for(id.0), "round {round}: node {id} differs");
                seen += 1;
                Ok(())
            })
            .unwrap();
        assert_eq!(seen, store.len());
        println!("round {round}: {acked_end} acknowledged, {seen} stored");
    }
    assert!(acked_end > 0);
}
