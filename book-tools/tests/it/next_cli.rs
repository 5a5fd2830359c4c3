//! `book-tools next N`: the positions the selector would hand out next, without
//! changing the store.

use crate::common::{fails, ok, s, synth_store};

use stera_book::{LiveBook, NodeStore, Selector, SledStore};
use stera_rules::Position;

fn store_state(db: &std::path::Path) -> (u32, usize, usize) {
    let store = SledStore::open_existing(db).unwrap();
    (
        store.len(),
        store.bans().unwrap().len(),
        store.kifu_keys().unwrap().len(),
    )
}

#[test]
fn next_lists_what_the_selector_hands_out_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    synth_store(&db, 400, 16);
    let before = store_state(&db);

    let out = ok(&["next", "--db", s(&db), "8"]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 8, "{out}");
    let mut listed = Vec::new();
    for line in &lines {
        let sfen = line
            .strip_prefix("sfen ")
            .unwrap_or_else(|| panic!("{line}"));
        listed.push(Position::from_sfen(sfen).unwrap().to_sfen());
    }
    // Asking twice gives the same answer: nothing was written.
    assert_eq!(ok(&["next", "--db", s(&db), "8"]), out);
    assert_eq!(store_state(&db), before);

    // The lines from the roots reach the same positions.
    let file = dir.path().join("think.sfen");
    ok(&[
        "next",
        "--db",
        s(&db),
        "8",
        "--moves",
        "--think-file",
        s(&file),
    ]);
    let text = std::fs::read_to_string(&file).unwrap();
    let replayed: Vec<String> = text
        .lines()
        .map(|l| Position::from_position_command(l).unwrap().to_sfen())
        .collect();
    assert_eq!(replayed, listed);

    // They are what a coordinator's selector picks first on this store, none of
    // them is thought yet, and all differ.
    let store = SledStore::open_existing(&db).unwrap();
    let mut live = LiveBook::open(store, None).unwrap();
    let mut selector = Selector::new();
    let book_keys: std::collections::HashSet<_> = {
        let mut keys = std::collections::HashSet::new();
        live.store()
            .for_each_node(&mut |_, node| {
                keys.insert(node.key);
                Ok(())
            })
            .unwrap();
        keys
    };
    let picked: Vec<String> = selector
        .select(&mut live, 8)
        .unwrap()
        .iter()
        .map(stera_book::Leaf::sfen)
        .collect();
    assert_eq!(picked, listed);
    for sfen in &listed {
        let key = Position::from_sfen(sfen).unwrap().key();
        assert!(!book_keys.contains(&key), "{sfen} is thought already");
    }
    let distinct: std::collections::HashSet<_> = listed.iter().collect();
    assert_eq!(distinct.len(), listed.len());
    drop((live, selector));

    // An outside thinker's book of those positions comes back with `import`;
    // then they are thought and `next` moves on.
    let mut book = "#YANEURAOU-DB2016 1.00\n".to_owned();
    for sfen in &listed {
        book.push_str(&format!("sfen {sfen}\n"));
        let position = Position::from_sfen(sfen).unwrap();
        for (i, mv) in position.legal_moves().into_iter().enumerate() {
            book.push_str(&format!("{mv} none {} 12 1\n", (i % 7) as i32 * 10 - 30));
        }
    }
    let thought = dir.path().join("thought.db2016");
    std::fs::write(&thought, book).unwrap();
    ok(&["import", "--create", "--db", s(&db), s(&thought)]);
    assert_eq!(store_state(&db).0, before.0 + 8);
    let after = ok(&["next", "--db", s(&db), "8"]);
    for line in after.lines() {
        let sfen = Position::from_sfen(line.trim_start_matches("sfen "))
            .unwrap()
            .to_sfen();
        assert!(
            !listed.contains(&sfen),
            "{sfen} listed again after its import"
        );
    }
}

#[test]
fn next_on_a_missing_store_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let err = fails(&["next", "--db", s(&dir.path().join("none.db")), "3"]);
    assert!(err.contains("none.db"), "{err}");
    assert!(!dir.path().join("none.db").exists());
}

/// `book-tools backup` copies a stopped store into a new one that holds the same
/// positions and selects the same next positions; it never writes over a store.
#[test]
fn backup_copies_a_stopped_store() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    synth_store(&db, 300, 8);
    let copy = dir.path().join("copy.db");
    let out = ok(&["backup", "--db", s(&db), "--out", s(&copy)]);
    assert!(out.contains("300 positions"), "{out}");
    assert_eq!(store_state(&copy), store_state(&db));
    assert_eq!(
        ok(&["next", "--db", s(&copy), "5"]),
        ok(&["next", "--db", s(&db), "5"])
    );
    let err = fails(&["backup", "--db", s(&db), "--out", s(&copy)]);
    assert!(
        err.contains("exists already") || err.contains("directory"),
        "{err}"
    );
    let err = fails(&["backup", "--db", s(&db), "--out", s(&db.join("db"))]);
    assert!(err.contains("inside the book store"), "{err}");
}
