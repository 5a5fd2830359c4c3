//! `stats` lists every thinker (engine at budget) with its positions and `show`
//! says who thought the position shown, on a store grown by real coordinator
//! runs with local workers at two budgets (the second allowed to mix).

use std::process::{Command, Stdio};

use stera_book::{Book, NodeId, NodeStore, SledStore};
use stera_engine::Evaluator;

use crate::common::{Dir, ok, s, sibling_exe};

/// Runs a coordinator with one local worker on `db` until its think limit;
/// returns whether it succeeded and its standard error.
fn coordinator_run(db: &str, extra: &[&str]) -> (bool, String) {
    let out = Command::new(sibling_exe("coordinator"))
        .args([
            "--db",
            db,
            "--create",
            "--listen",
            "127.0.0.1:0",
            "--local-workers",
            "1",
        ])
        .args(["--think-limit", "3"])
        .args(extra)
        .env_remove("STERA_TOKEN")
        .stdin(Stdio::null())
        .output()
        .expect("run the coordinator");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn stats_and_show_name_each_engine_at_its_budget() {
    let dir = Dir::new();
    let db = dir.path("book.db");
    let db = s(&db);
    let (grown, log) = coordinator_run(db, &["--nodes", "200"]);
    assert!(grown, "{log}");
    // Another budget is a decision: refused without the flag, nothing stored.
    let (started, log) = coordinator_run(db, &["--nodes", "300"]);
    assert!(!started, "{log}");
    assert!(log.contains("--allow-mixed-engines"), "{log}");
    let (mixed, log) = coordinator_run(db, &["--nodes", "300", "--allow-mixed-engines"]);
    assert!(mixed, "{log}");

    let builtin = stera_engine::BuiltinEvaluator::new().identity();
    let stats = ok(&["stats", "--db", db]);
    let listed: Vec<&str> = stats
        .lines()
        .skip_while(|l| !l.starts_with("thinkers"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .collect();
    assert_eq!(
        listed,
        [
            format!("  {builtin} at 200 nodes: 3 positions"),
            format!("  {builtin} at 300 nodes: 3 positions"),
        ],
        "{stats}"
    );

    // The first position is the first run's, the last the second's.
    let (first, last) = {
        let store = SledStore::open_existing(std::path::Path::new(db)).unwrap();
        let book = Book::load(&store).unwrap();
        let last = NodeId(store.len() - 1);
        (
            book.position_of(NodeId(0)).unwrap().to_sfen(),
            book.position_of(last).unwrap().to_sfen(),
        )
    };
    for (sfen, budget) in [(first, "200 nodes"), (last, "300 nodes")] {
        let shown = ok(&["show", "--db", db, &format!("sfen {sfen}")]);
        let line = format!("thought by: {builtin} at {budget}\n");
        assert!(shown.contains(&line), "`{line}` missing from:\n{shown}");
    }
}

#[test]
fn imported_positions_say_where_their_values_came_from() {
    let dir = Dir::new();
    let db = dir.path("book.db");
    let file = dir.path("book.db2016");
    std::fs::write(
        &file,
        crate::common::raw_book(&[&["7g7f"]], |_, i| i as i32),
    )
    .unwrap();
    ok(&["import", "--create", "--db", s(&db), s(&file)]);
    let shown = ok(&["show", "--db", s(&db), "startpos"]);
    assert!(
        shown.contains("values from: import book.db2016\n"),
        "{shown}"
    );
    let stats = ok(&["stats", "--db", s(&db)]);
    assert!(
        stats.contains("thinkers (positions each engine at its budget thought):\n  import book.db2016: 2 positions\n"),
        "{stats}"
    );
}
