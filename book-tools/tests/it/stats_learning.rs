//! `book-tools stats` counts learning games beside self-play games: a real
//! coordinator plays learning games on a store (through its local worker),
//! then `stats` counts them in "games recorded" and lists the opponent they
//! were recorded against (issue 44, point 4: it said `games recorded 0`).

use std::process::Command;

use crate::common::{ok, sibling_exe, single_root_book};

#[test]
fn stats_counts_the_coordinators_learning_games_beside_self_play() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = single_root_book(dir.path());
    let before = ok(&["stats", "--db", &db]);
    assert!(
        before.contains("games recorded   0 (0 self-play, 0 learning)\n"),
        "{before}"
    );
    let run = Command::new(sibling_exe("coordinator"))
        .args(["--db", &db, "--listen", "127.0.0.1:0"])
        .args(["--think-limit", "0", "--local-workers", "1"])
        .args(["--learn-games", "5", "--learn-nodes", "60"])
        .args(["--learn-opponent", "--nodes 60", "--ply-limit", "40"])
        .env("RUST_LOG", "info")
        .env_remove("STERA_TOKEN")
        .output()
        .expect("run the coordinator");
    let log = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{log}");
    assert!(log.contains("learning games counted games=5"), "{log}");

    let stats = ok(&["stats", "--db", &db]);
    // The start is in the book and the opponent always answers: every game
    // taught something and was recorded against the one opponent.
    assert!(
        stats.contains("games recorded   5 (0 self-play, 5 learning)\n"),
        "{stats}"
    );
    let opponents: Vec<&str> = stats
        .lines()
        .skip_while(|l| !l.starts_with("learning opponents"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .collect();
    assert_eq!(opponents.len(), 1, "{stats}");
    assert!(
        opponents[0].starts_with("  1 stera-builtin")
            && opponents[0].ends_with(" at 60 nodes: 5 games"),
        "{stats}"
    );
}
