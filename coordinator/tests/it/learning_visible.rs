//! Learning you can see (issue 44, point 4): a real coordinator plays learning
//! games through a real local worker on a synthetic store, and every surface
//! shows them as the store counts them: the status document (`/api/status`
//! and the Status RPC), the metrics, the dashboard, the summary lines of the
//! status line, and the reason the worker is given when the run ends.

use std::path::Path;

use stera_book::{GameCounts, NodeStore, SledStore};
use stera_rules::Position;

use crate::common::{self, Coord, LONG, free_port};
use crate::web;

/// The store's opponents: number (from 1, as people are shown them), identity,
/// games.
fn stored_opponents(db: &Path) -> Vec<(u64, String, u64)> {
    let store = SledStore::open(db).expect("reopen the store");
    store
        .opponents()
        .expect("read the opponents")
        .into_iter()
        .map(|o| (u64::from(o.id.0) + 1, o.identity, o.games))
        .collect()
}

/// `--think-limit THINK`, one local worker, `games` learning games against two
/// opponents of the book's engine.
fn learning_args<'a>(think_limit: &'a str, games: &'a str) -> Vec<&'a str> {
    vec![
        "--think-limit",
        think_limit,
        "--nodes",
        "300",
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
        "--nodes 120",
        "--ply-limit",
        "40",
    ]
}

/// A run that only learns ends when its games are counted: the worker is told
/// so (not "the think limit is reached"), and the last summary line shows the
/// games counted against the target and per opponent, as the store has them.
#[test]
fn a_learning_run_says_why_it_ended_and_what_it_counted() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    common::synthetic_store(&db, 300, 100);
    let mut args = learning_args("0", "6");
    args.extend(["--status-every-secs", "1"]);
    // The worker logs the reason of a drain at DEBUG when it holds no job.
    let mut c = Coord::start(
        &db,
        "127.0.0.1:0",
        &args,
        &[("RUST_LOG", "info,stera_worker=debug")],
    );
    let status = c.wait_exit(LONG);
    let log = std::mem::take(&mut c.log);
    drop(c);
    // The local worker's records come through the coordinator's stderr.
    common::wait_stderr_closed(&log, LONG);
    let log = log.lock().unwrap().clone();
    assert!(status.success(), "{log:?}");

    let drains: Vec<&String> = log
        .iter()
        .filter(|l| l.contains("coordinator drains"))
        .collect();
    assert!(!drains.is_empty(), "the worker logged no drain: {log:?}");
    for l in &drains {
        assert!(
            l.contains("reason=the learning games target is reached (6 learning games counted)"),
            "{l}"
        );
    }
    assert!(
        !log.iter().any(|l| l.contains("think limit is reached")),
        "{log:?}"
    );

    // The last summary line: thinking off, the games against the target,
    // and the games per opponent by the store's numbers.
    let summary = log
        .iter()
        .rev()
        .find(|l| l.contains("stera_coordinator::status"))
        .unwrap_or_else(|| panic!("no summary line: {log:?}"));
    assert!(
        summary.contains("thinking off (--think-limit 0) | learning 6/6 (100.0%) | "),
        "{summary}"
    );
    assert!(
        summary.contains(" games/s | left 0s | key positions "),
        "{summary}"
    );
    let stored = stored_opponents(&db);
    assert!(!stored.is_empty());
    // Every game had an opponent's move and a book move of the learner (the
    // roots are in the book): all six are recorded.
    assert_eq!(stored.iter().map(|o| o.2).sum::<u64>(), 6, "{stored:?}");
    let by_opponent = stored
        .iter()
        .map(|(number, _, games)| format!("#{number} {games}"))
        .collect::<Vec<_>>()
        .join(", ");
    assert!(
        summary.contains(&format!("| by opponent {by_opponent} |")),
        "{summary} (the store: {stored:?})"
    );
}

/// While the run goes on (it thinks towards a limit far away), its learning
/// games are counted: the status document, the Status RPC, the metrics and
/// the dashboard show them per opponent, numbered as the store numbers them
/// (an opponent of an earlier run is number 1), and after the run the store
/// holds what they showed.
#[test]
fn the_status_document_metrics_and_dashboard_show_learning_per_opponent() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    common::synthetic_store(&db, 300, 100);
    // An opponent of an earlier run, with two games: this run's are 2 and 3.
    {
        let mut store = SledStore::open(&db).unwrap();
        let earlier = store
            .intern_opponent("another engine at 500 nodes")
            .unwrap();
        let key = Position::startpos().key();
        for id in [1, 2] {
            store
                .record_learning_game(earlier, id, &[(key, GameCounts::WIN)])
                .unwrap();
        }
    }
    let http = format!("127.0.0.1:{}", free_port());
    let mut args = learning_args("100000", "6");
    args.extend(["--metrics", &http]);
    let mut c = Coord::start(&db, "127.0.0.1:0", &args, &[]);
    // The last game's pace, published after its key positions.
    let doc = web::wait_status(&http, LONG, "six learning games counted", |s| {
        s["learning_games"] == 6 && s["learning_left_secs"] == 0
    });
    assert_eq!(doc["version"], 2, "{doc}");
    assert_eq!(doc["learning_target"], 6, "{doc}");
    assert_eq!(doc["learning_all_settled"], false, "{doc}");
    assert!(
        doc["learning_games_per_second"].as_f64().unwrap() > 0.0,
        "{doc}"
    );
    let probability = doc["learning_settled_probability"].as_f64().unwrap();
    assert!(probability > 0.5 && probability < 1.0, "{doc}");
    let key_total = doc["learning_key_positions"].as_u64().unwrap();
    let key_settled = doc["learning_key_positions_settled"].as_u64().unwrap();
    assert!(key_total > 0 && key_settled <= key_total, "{doc}");
    let shown: Vec<(u64, String, u64, u64)> = doc["learning_opponents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (
                o["number"].as_u64().unwrap(),
                o["identity"].as_str().unwrap().to_owned(),
                o["games"].as_u64().unwrap(),
                o["games_stored"].as_u64().unwrap(),
            )
        })
        .collect();
    assert!(!shown.is_empty(), "{doc}");
    assert_eq!(shown.iter().map(|o| o.2).sum::<u64>(), 6, "{doc}");
    for (number, identity, games, games_stored) in &shown {
        assert!(*number >= 2, "the earlier opponent is number 1: {doc}");
        assert!(
            identity.ends_with(" at 60 nodes") || identity.ends_with(" at 120 nodes"),
            "{doc}"
        );
        // New opponents: all their games are this run's.
        assert_eq!(games, games_stored, "{doc}");
    }

    // The Status RPC carries the same figures.
    let rt = common::runtime(1);
    let reply = rt.block_on(common::status(&c.url(), None));
    let learning = reply.learning.expect("learning in the Status reply");
    assert_eq!((learning.games, learning.target), (6, 6));
    let rpc: Vec<(u64, String, u64, u64)> = learning
        .opponents
        .iter()
        .map(|o| {
            (
                u64::from(o.number),
                o.identity.clone(),
                o.games,
                o.games_stored,
            )
        })
        .collect();
    assert_eq!(rpc, shown);

    // The metrics.
    let text = web::get_ok(&http, "/metrics", LONG).body;
    let sample = |series: &str| {
        web::sample(&text, series).unwrap_or_else(|| panic!("no `{series}` in {text}"))
    };
    assert_eq!(sample("stera_coordinator_learning_games_total"), 6.0);
    assert_eq!(sample("stera_coordinator_learning_games_target"), 6.0);
    assert_eq!(sample("stera_coordinator_learning_time_left_seconds"), 0.0);
    assert!(sample("stera_coordinator_learning_games_per_second") > 0.0);
    assert_eq!(
        sample("stera_coordinator_learning_key_positions{state=\"total\"}"),
        key_total as f64
    );
    for (number, identity, games, _) in &shown {
        assert_eq!(
            sample(&format!(
                "stera_coordinator_learning_opponent_games_total{{opponent=\"{number}\"}}"
            )),
            *games as f64
        );
        let info = "stera_coordinator_learning_opponent_info{";
        assert!(
            text.lines().any(|l| l.starts_with(info)
                && l.contains(&format!("opponent=\"{number}\""))
                && l.contains(&format!("identity=\"{identity}\""))
                && l.ends_with(" 1")),
            "no info series of opponent {number}: {text}"
        );
    }

    // The dashboard, in a browser if there is one.
    if let Some(chromium) = crate::dashboard::chromium() {
        let dom = crate::dashboard::dump_dom(&chromium, &format!("http://{http}/"));
        assert_eq!(crate::dashboard::number(&dom, "learning-games"), 6, "{dom}");
        assert_eq!(
            crate::dashboard::text_of(&dom, "learning-games").as_deref(),
            Some("6 / 6"),
            "{dom}"
        );
        assert_eq!(
            crate::dashboard::text_of(&dom, "learning-key-positions"),
            Some(format!("{key_settled} / {key_total}")),
            "{dom}"
        );
        for (_, identity, _, _) in &shown {
            assert!(dom.contains(&format!("<td>{identity}</td>")), "{dom}");
        }
        assert!(
            !dom.contains("NaN") && !dom.contains(">undefined<"),
            "{dom}"
        );
    }

    c.sigterm();
    assert!(c.wait_exit(LONG).success(), "{:?}", c.log.lock().unwrap());
    drop(c);
    // The store holds what they showed, and the earlier opponent's games.
    let mut stored = stored_opponents(&db);
    assert_eq!(
        stored.remove(0),
        (1, "another engine at 500 nodes".to_owned(), 2)
    );
    let expected: Vec<(u64, String, u64)> = shown
        .into_iter()
        .map(|(number, identity, _, games_stored)| (number, identity, games_stored))
        .collect();
    assert_eq!(stored, expected);
}
