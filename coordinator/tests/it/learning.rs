//! Learning games on the cluster: a real coordinator plays them through real
//! worker processes (the built-in engine, and Fairy-Stockfish as an engine of
//! the workers), counts each once in the store against the workers' engine at
//! its budget, and keeps every counted game across a SIGKILL and a restart.

use std::path::Path;
use std::time::{Duration, Instant};

use stera_book::{NodeStore, SledStore};

use crate::common::{self, Coord, LONG};

/// Learning games per opponent identity in a (closed) store.
fn opponents(db: &Path) -> Vec<(String, u64)> {
    let store = SledStore::open(db).expect("reopen the store");
    store
        .opponents()
        .expect("read the opponents")
        .into_iter()
        .map(|o| (o.identity, o.games))
        .collect()
}

fn total(db: &Path) -> u64 {
    opponents(db).iter().map(|o| o.1).sum()
}

/// The ids of the games a coordinator's log says it recorded.
fn recorded_ids(log: &[String]) -> Vec<u64> {
    log.iter()
        .filter(|l| l.contains("learning game recorded"))
        .filter_map(|l| {
            l.split("id=")
                .nth(1)?
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        })
        .collect()
}

/// The log of a run that `c` ends by itself, which must succeed.
fn finished_log(c: &mut Coord) -> Vec<String> {
    let status = c.wait_exit(LONG);
    let log = c.log.lock().unwrap().clone();
    assert!(status.success(), "{log:?}");
    log
}

const LEARN_LOG: (&str, &str) = ("RUST_LOG", "info,stera_coordinator::learn=debug");

fn learning_args(games: &str) -> Vec<&str> {
    vec![
        "--think-limit",
        "0",
        "--local-workers",
        "1",
        "--local-slots",
        "2",
        "--learn-games",
        games,
        "--learn-concurrency",
        "2",
        "--learn-nodes",
        "60",
        "--learn-opponent",
        "--nodes 60",
        "--learn-opponent",
        "--nodes 120 --weight 2",
        "--ply-limit",
        "40",
    ]
}

#[test]
fn counted_learning_games_survive_a_sigkill_and_a_restart_exactly_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    common::synthetic_store(&db, 400, 100);
    assert_eq!(total(&db), 0);

    // A long run, killed once it has counted a few games.
    let mut c = Coord::start(&db, "127.0.0.1:0", &learning_args("100000"), &[LEARN_LOG]);
    let start = Instant::now();
    while recorded_ids(&c.log.lock().unwrap()).len() < 4 {
        assert!(
            start.elapsed() < LONG,
            "no learning games recorded: {:?}",
            c.log.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    c.kill9();
    common::wait_stderr_closed(&c.log, LONG);
    let first = recorded_ids(&c.log.lock().unwrap());
    drop(c);
    let stored = total(&db);
    // Every game it said it recorded is there; at most the games in flight
    // (recorded, not yet logged) more.
    assert!(
        stored >= first.len() as u64 && stored <= first.len() as u64 + 2,
        "{stored} stored, {} logged",
        first.len()
    );

    // A restart goes on from the stored ids and ends at its own target.
    let mut c = Coord::start(&db, "127.0.0.1:0", &learning_args("6"), &[LEARN_LOG]);
    let log = finished_log(&mut c);
    let second = recorded_ids(&log);
    assert!(
        log.iter()
            .any(|l| l.contains("learning games counted games=6")),
        "{log:?}"
    );
    assert_eq!(
        total(&db),
        stored + second.len() as u64,
        "every game of the second run counted once, none of the first again"
    );
    let first_max = first.iter().max().copied().unwrap_or(0);
    assert!(
        second.iter().all(|&id| id > first_max),
        "{first:?} then {second:?}"
    );
    let mut distinct = second.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(distinct.len(), second.len());
    // Counted against the workers' engine at the pool's budgets, never as self-play.
    let found = opponents(&db);
    assert!(
        found
            .iter()
            .all(|(identity, _)| identity.starts_with("stera-builtin")
                && (identity.ends_with(" at 60 nodes") || identity.ends_with(" at 120 nodes"))),
        "{found:?}"
    );
    let store = SledStore::open(&db).unwrap();
    assert_eq!(store.games_recorded().unwrap(), 0);
}

/// Self-play is one kind of game among the others: a run that plays
/// self-play and learning games at once counts each game once, self-play in
/// the self-play counters and learning against its opponents, under one id
/// space (two ledgers each taking ids after the store's largest would
/// collide, and a learning game whose id a self-play game took is dropped).
#[test]
fn self_play_and_learning_games_of_one_run_are_each_counted_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    common::synthetic_store(&db, 400, 100);
    let mut args = learning_args("8");
    args.extend([
        "--play-share",
        "0.5",
        "--play-games",
        "8",
        "--play-nodes",
        "60",
    ]);
    let mut c = Coord::start(&db, "127.0.0.1:0", &args, &[LEARN_LOG]);
    let log = finished_log(&mut c);
    drop(c);
    assert!(
        log.iter()
            .any(|l| l.contains("learning games counted games=8")),
        "{log:?}"
    );
    let learning = recorded_ids(&log);
    assert!(!learning.is_empty(), "{log:?}");
    assert_eq!(
        total(&db),
        learning.len() as u64,
        "every learning game recorded"
    );
    let store = SledStore::open(&db).unwrap();
    assert_eq!(store.games_recorded().unwrap(), 8, "every self-play game");
    let highest = store.max_game_id().unwrap().unwrap();
    assert!(
        highest + 1 >= 8 + learning.len() as u64,
        "ids {learning:?}, highest {highest}"
    );
}

/// Fairy-Stockfish, or `None` where it is not installed (a failure under
/// STERA_REQUIRE_ENGINES=1).
fn fairy_stockfish() -> Option<std::path::PathBuf> {
    crate::engines::real_engine(
        "fairy-stockfish",
        "STERA_FAIRY_STOCKFISH",
        "fairy-stockfish",
    )
}

/// A worker process of `engine` (Fairy-Stockfish) with `slots` slots.
fn fairy_worker(url: &str, engine: &Path, slots: u32) -> std::process::Child {
    let slots = slots.to_string();
    common::start_worker(
        url,
        &[
            "--slots",
            &slots,
            "--engine",
            "usi",
            "--engine-cmd",
            engine.to_str().unwrap(),
            "--engine-option",
            "UCI_Variant=shogi",
        ],
        &[("RUST_LOG", "info")],
    )
}

#[test]
fn an_external_engine_of_the_workers_is_the_opponent() {
    let Some(engine) = fairy_stockfish() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    common::synthetic_store(&db, 300, 100);
    let mut c = Coord::start(
        &db,
        "127.0.0.1:0",
        &[
            "--think-limit",
            "0",
            "--learn-games",
            "4",
            "--learn-nodes",
            "200",
            "--learn-opponent",
            "--depth 1",
            "--ply-limit",
            "30",
        ],
        &[LEARN_LOG],
    );
    let mut worker = fairy_worker(&c.url(), &engine, 2);
    let status = c.wait_exit(Duration::from_secs(300));
    let _ = worker.kill();
    let _ = worker.wait();
    assert!(status.success(), "{:?}", c.log.lock().unwrap());
    let recorded = recorded_ids(&c.log.lock().unwrap()).len() as u64;
    drop(c);
    let found = opponents(&db);
    assert!(recorded > 0 && !found.is_empty(), "{found:?}");
    assert_eq!(
        found.iter().map(|o| o.1).sum::<u64>(),
        recorded,
        "{found:?}"
    );
    assert!(
        found
            .iter()
            .all(|(identity, _)| identity.contains("Fairy-Stockfish")
                && identity.ends_with(" at depth 1")),
        "{found:?}"
    );
}

/// The cluster learns against another engine: the book side on the book's
/// built-in workers, one opponent on a Fairy-Stockfish worker (`--engine-id`),
/// another on the book's own engine. Until a worker of the opponent's engine
/// connects the run says so and waits; then both opponents' games count,
/// each under its own engine.
#[test]
fn the_cluster_learns_against_an_engine_of_its_own_workers() {
    let Some(engine) = fairy_stockfish() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    common::synthetic_store(&db, 300, 100);
    let mut c = Coord::start(
        &db,
        "127.0.0.1:0",
        &[
            "--think-limit",
            "0",
            "--local-workers",
            "1",
            "--learn-games",
            "12",
            "--learn-nodes",
            "100",
            "--learn-opponent",
            "--engine-id Fairy-Stockfish --depth 1",
            "--learn-opponent",
            "--nodes 80",
            "--ply-limit",
            "30",
        ],
        &[LEARN_LOG],
    );
    c.wait_log("learning games wait", Duration::from_secs(90));
    let mut worker = fairy_worker(&c.url(), &engine, 1);
    let status = c.wait_exit(Duration::from_secs(300));
    let _ = worker.kill();
    let _ = worker.wait();
    let log = c.log.lock().unwrap().clone();
    assert!(status.success(), "{log:?}");
    assert!(!log.iter().any(|l| l.contains("not counted")), "{log:?}");
    let recorded = recorded_ids(&log).len() as u64;
    drop(c);
    let found = opponents(&db);
    assert_eq!(
        found.iter().map(|o| o.1).sum::<u64>(),
        recorded,
        "{found:?}"
    );
    let games_of = |engine: &str, budget: &str| {
        found
            .iter()
            .filter(|(identity, _)| identity.contains(engine) && identity.ends_with(budget))
            .map(|o| o.1)
            .sum::<u64>()
    };
    assert!(games_of("Fairy-Stockfish", " at depth 1") > 0, "{found:?}");
    assert!(games_of("stera-builtin", " at 80 nodes") > 0, "{found:?}");
    assert_eq!(found.len(), 2, "{found:?}");
}

/// The coordinator's stderr and success with `args` after `--db DB --listen
/// 127.0.0.1:0`.
fn refused(db: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new(common::EXE)
        .args([
            "--db",
            db.to_str().unwrap(),
            "--create",
            "--listen",
            "127.0.0.1:0",
        ])
        .args(args)
        .env_remove("STERA_TOKEN")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "{args:?} ran: {err}");
    err
}

#[test]
fn an_opponent_that_names_an_engine_needs_its_engine_id_on_the_cluster() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    common::synthetic_store(&db, 50, 50);
    // Any engine flag names an engine, a command without `--engine usi` too
    // (it would otherwise have played the built-in engine, saying nothing).
    for (opponent, given) in [
        (
            "--engine usi --engine-cmd x --depth 1",
            "--engine, --engine-cmd",
        ),
        (
            "--engine-cmd /usr/games/fairy-stockfish --nodes 1000",
            "--engine-cmd",
        ),
        ("--eval-file nn.bin --nodes 100", "--eval-file"),
        ("--engine builtin --nodes 100", "--engine"),
        ("--timeout-secs 5 --nodes 100", "--timeout-secs"),
    ] {
        let err = refused(
            &db,
            &[
                "--think-limit",
                "0",
                "--learn-games",
                "2",
                "--learn-opponent",
                opponent,
            ],
        );
        assert!(
            err.contains(&format!(
                "opponent `{opponent}`: it gives {given} but no --engine-id"
            )) && err.contains("the workers' engines play"),
            "{opponent}: {err}"
        );
    }
    // A flag the engine would not use is refused as the opponent is read.
    for (opponent, says) in [
        (
            "--engine builtin --engine-cmd x --nodes 100",
            "--engine-cmd `x` needs --engine usi",
        ),
        (
            "--engine-option UCI_Variant=shogi --nodes 100",
            "--engine-option `UCI_Variant=shogi` needs --engine usi",
        ),
    ] {
        let err = refused(
            &db,
            &[
                "--think-limit",
                "0",
                "--learn-games",
                "2",
                "--learn-opponent",
                opponent,
            ],
        );
        assert!(err.contains(says), "{opponent}: {err}");
    }
    assert_eq!(total(&db), 0);
    // Refused from the flags alone: no store directory is made.
    let missing = dir.path().join("missing.db");
    let err = refused(
        &missing,
        &[
            "--learn-games",
            "2",
            "--learn-opponent",
            "--engine-cmd x --nodes 100",
        ],
    );
    assert!(err.contains("the workers' engines play"), "{err}");
    assert!(!missing.exists());
}

/// The learning games the final log line says this run counted.
fn counted_games(log: &[String]) -> Option<u64> {
    log.iter()
        .filter(|l| l.contains("learning games counted games="))
        .find_map(|l| {
            l.split("games=")
                .nth(1)?
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        })
}

#[test]
fn learning_stops_once_every_key_position_is_settled() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    stera_testkit::books::one_move_ahead_store(&db);
    let mut c = Coord::start(
        &db,
        "127.0.0.1:0",
        &[
            "--think-limit",
            "0",
            "--local-workers",
            "1",
            "--local-slots",
            "2",
            "--learn-games",
            "1000",
            "--learn-nodes",
            "100",
            "--learn-opponent",
            "--nodes 100",
            "--learn-stop-when-settled",
            "0.9",
            "--ply-limit",
            "40",
        ],
        &[LEARN_LOG],
    );
    let log = finished_log(&mut c);
    drop(c);
    let stopped: Vec<&String> = log
        .iter()
        .filter(|l| l.contains("every key position is settled (--learn-stop-when-settled)"))
        .collect();
    assert_eq!(stopped.len(), 1, "{log:?}");
    assert!(
        stopped[0].contains("INFO") && stopped[0].contains("key_positions=2"),
        "{stopped:?}"
    );
    // The check after the first round (the start with the learner as Black
    // and as White) finds both key positions settled; the games in flight
    // then are counted too.
    let counted = counted_games(&log).unwrap_or_else(|| panic!("no count: {log:?}"));
    assert!((2..1000).contains(&counted), "{counted}: {log:?}");
    assert!(log.iter().any(|l| l.contains("target=1000")), "{log:?}");
    // Every counted game is in the store once, and nothing beyond them.
    assert_eq!(recorded_ids(&log).len() as u64, counted, "{log:?}");
    assert_eq!(total(&db), counted);
}

#[test]
fn a_stopping_probability_outside_a_half_to_one_is_refused_before_anything_starts() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    for (value, games, says) in [
        (
            "0.3",
            "10",
            "--learn-stop-when-settled must lie in (0.5, 1), not 0.3",
        ),
        (
            "1.5",
            "10",
            "--learn-stop-when-settled must lie in (0.5, 1), not 1.5",
        ),
        (
            "0.5",
            "10",
            "--learn-stop-when-settled must lie in (0.5, 1), not 0.5",
        ),
        (
            "0.9",
            "0",
            "--learn-stop-when-settled stops learning games: give --learn-games",
        ),
    ] {
        let err = refused(
            &db,
            &[
                "--think-limit",
                "0",
                "--learn-games",
                games,
                "--learn-stop-when-settled",
                value,
            ],
        );
        assert!(err.contains(says), "{value}: {err}");
        assert!(!db.exists(), "{value}: the store directory was made");
    }
}

/// The learner's window and prior are the run's: `--learn-window` (as `book-tools
/// learn` names it) and `--prior-games` (the exports' flag, which `book-tools
/// learn` also learns with) reach the learner, and a negative window is refused.
#[test]
fn the_learners_window_and_prior_are_the_flags_of_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    let err = refused(
        &db,
        &[
            "--think-limit",
            "0",
            "--learn-games",
            "4",
            "--learn-window=-5",
        ],
    );
    assert!(
        err.contains("--learn-window must be at least 0, not -5"),
        "{err}"
    );
    assert!(!db.exists(), "the store directory was made");
    stera_testkit::books::one_move_ahead_store(&db);
    let mut args = learning_args("4");
    args.extend(["--learn-window", "0", "--prior-games", "12.5"]);
    let mut c = Coord::start(&db, "127.0.0.1:0", &args, &[LEARN_LOG]);
    let log = finished_log(&mut c);
    drop(c);
    let started: Vec<&String> = log
        .iter()
        .filter(|l| l.contains("learning games: "))
        .collect();
    assert_eq!(started.len(), 1, "{log:?}");
    assert!(
        started[0].contains("within 0 cp, prior 12.5 games"),
        "{started:?}"
    );
    assert_eq!(total(&db), 4);
}

/// A book grown during a learning run (here by thinking alongside it) is the
/// learner's to play in the same run: once the book has gained enough
/// positions, the learner takes its snapshot again, and says so.
#[test]
fn the_learner_sees_the_book_grown_during_its_run() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    let mut c = Coord::start(
        &db,
        "127.0.0.1:0",
        &[
            "--think-limit",
            "60",
            "--nodes",
            "2000",
            "--local-workers",
            "1",
            "--local-slots",
            "2",
            "--learn-games",
            "400",
            "--learn-concurrency",
            "2",
            "--learn-nodes",
            "60",
            "--learn-opponent",
            "--nodes 60",
            "--ply-limit",
            "40",
        ],
        &[LEARN_LOG],
    );
    let log = finished_log(&mut c);
    let sizes: Vec<u64> = log
        .iter()
        .filter(|l| l.contains("the learner sees the grown book"))
        .filter_map(|l| {
            l.split("positions=")
                .nth(1)?
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        })
        .collect();
    assert!(
        !sizes.is_empty(),
        "the learner never took the book again: {log:?}"
    );
    // Each snapshot holds more than the one before: 16 or more new positions.
    assert!(sizes.windows(2).all(|w| w[1] >= w[0] + 16), "{sizes:?}");
    assert!(sizes[0] >= 16, "{sizes:?}");
}

/// Where learning games leave the book early is thought: with the whole think
/// share on them, the positions the log says were handed out as exits are in
/// the book afterwards, each a position the book did not hold before.
#[test]
fn positions_where_learning_games_left_the_book_are_thought() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    // One root, so the book is deep enough for the learner's moves to stay in
    // it and the opponents' replies to leave it.
    {
        let store = SledStore::open(&db).unwrap();
        let config = stera_book::RunConfig {
            roots: vec!["startpos".to_owned()],
            ..Default::default()
        };
        let mut live = stera_book::LiveBook::open(store, Some(config)).unwrap();
        let mut selector = stera_book::Selector::new();
        let eval = stera_book::synthetic::PseudoEvaluator::new(1);
        stera_book::synthetic::grow(
            &mut live,
            &mut selector,
            &eval,
            300,
            Default::default(),
            &mut |_| {},
        )
        .unwrap();
    }
    let before = common::book_len(&db);
    let mut c = Coord::start(
        &db,
        "127.0.0.1:0",
        &[
            // Thinking is slow beside the games (each think job takes about as
            // long as a whole learning game), so exits are queued while the
            // think limit is far from reached.
            "--think-limit",
            "20",
            "--nodes",
            "30000",
            "--local-workers",
            "1",
            "--local-slots",
            "2",
            "--learn-games",
            "30",
            // Two games at once (the default is one): exits come faster than
            // the think limit is reached.
            "--learn-concurrency",
            "2",
            "--learn-nodes",
            "60",
            "--learn-opponent",
            "--nodes 60",
            "--learn-grow-plies",
            "12",
            "--learn-grow-share",
            "1",
            "--ply-limit",
            "40",
        ],
        &[LEARN_LOG],
    );
    let log = finished_log(&mut c);
    drop(c);
    let exits: Vec<String> = log
        .iter()
        .filter(|l| l.contains("thinking where a learning game left the book"))
        .filter_map(|l| {
            let sfen = l.split("sfen=").nth(1)?;
            Some(sfen.trim().trim_matches('"').to_owned())
        })
        .collect();
    assert!(!exits.is_empty(), "no exit was thought: {log:?}");
    assert_eq!(common::book_contains_all(&db, &exits), Vec::<String>::new());
    assert!(common::book_len(&db) > before);
    for sfen in &exits {
        let ply: u32 = sfen.split_whitespace().last().unwrap().parse().unwrap();
        assert!(ply <= 12, "{sfen} beyond --learn-grow-plies");
    }
}
