//! Stores written node by node, whose values a test chooses.

use std::path::Path;

use stera_book::{NodeStore, Origin, RunConfig, SledStore, ThoughtNode};
use stera_rules::Position;

/// Writes at `db` a store rooted at the start whose every learning key
/// position has one move within the learner's window (100 cp): the start,
/// where 2g2f is 500 cp ahead of every other move, and each position after a
/// move from it, where the first legal move is 500 cp ahead. Each of them is
/// settled from the first games, and every learning game from the start holds
/// a book move of the learner, as White too (whatever Black plays first).
pub fn one_move_ahead_store(db: &Path) {
    let mut store = SledStore::open(db).unwrap();
    store
        .save_config(&RunConfig {
            roots: vec!["startpos".to_owned()],
            ..Default::default()
        })
        .unwrap();
    let evaluator = store.intern_evaluator("one move ahead").unwrap();
    // One value per legal move, the first `best`, the others 500 cp worse.
    let node = |p: &Position, best: i16| ThoughtNode {
        key: p.key(),
        origin: Origin::Sfen(p.to_sfen_without_ply()),
        ply: u16::try_from(p.ply()).unwrap(),
        values: (0..p.legal_moves().len())
            .map(|i| if i == 0 { best } else { best - 500 })
            .collect(),
        depths: None,
        evaluator,
        timestamp: 0,
    };
    let start = Position::startpos();
    let mut start_node = node(&start, 0);
    let mut nodes = Vec::new();
    for (i, mv) in start.legal_moves().into_iter().enumerate() {
        let mut after = start.clone();
        after.do_move(mv);
        // After 2g2f White's best is worth 0, after any other move +500:
        // backed up, 2g2f is worth 0 to Black and every other move -500.
        let two_g = mv.to_string() == "2g2f";
        start_node.values[i] = if two_g { 0 } else { -500 };
        nodes.push(node(&after, if two_g { 0 } else { 500 }));
    }
    nodes.insert(0, start_node);
    store.append(&nodes).unwrap();
    store.flush().unwrap();
}
