//! Self-play games through the cluster (issue 12; since issue 44 played by the
//! coordinator, one search job a move): real coordinator processes, real
//! worker processes with the built-in engine, and in-process fake players that
//! answer wrongly on purpose.

use crate::common;

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use crate::common::{Coord, LONG, runtime};
use stera_book::{Book, GameCounts, NodeStore, SledStore};
use stera_proto::v1::{
    CoordinatorMessage, JobResult, SearchJob, SearchResult, WorkerMessage, coordinator_message,
    job, job_result, worker_message,
};
use stera_rules::{Key, Move, Position};
use tokio::sync::mpsc as tmpsc;
use tokio_stream::wrappers::ReceiverStream;

/// One kept game of `--out-games`: start, moves, and the result text.
struct KeptGame {
    start: String,
    moves: Vec<Move>,
    result: String,
}

fn read_games(path: &std::path::Path) -> Vec<KeptGame> {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .map(|line| {
            let (game, result) = line.split_once('\t').expect("game<TAB>result");
            let rest = game.strip_prefix("sfen ").expect("starts with sfen");
            let (start, moves) = rest.split_once(" moves").expect("has moves");
            KeptGame {
                start: start.trim().to_owned(),
                moves: moves
                    .split_whitespace()
                    .map(|m| m.parse().unwrap())
                    .collect(),
                result: result.to_owned(),
            }
        })
        .collect()
}

/// The counters a replay of `games` gives for the positions of `book`, computed
/// here without the coordinator's code: replay each game with the rules core and
/// credit each distinct book position once per game, from its mover's view.
fn replay_counts(book: &Book, games: &[KeptGame]) -> HashMap<u128, GameCounts> {
    let mut counts: HashMap<u128, GameCounts> = HashMap::new();
    for g in games {
        let winner = if g.result.starts_with("black wins") {
            Some(stera_rules::Color::Black)
        } else if g.result.starts_with("white wins") {
            Some(stera_rules::Color::White)
        } else {
            assert!(g.result.starts_with("draw"), "{}", g.result);
            None
        };
        let mut pos = Position::from_sfen(&g.start).unwrap();
        let mut seen = HashSet::new();
        let mut visit = |pos: &Position| {
            // A position the book holds as its colour-flipped twin counts for
            // the twin (found here through the flipped SFEN text).
            let twin = || Position::from_sfen(&pos.flipped().to_sfen()).unwrap().key();
            let key = if book.contains(pos.key()) {
                pos.key()
            } else {
                twin()
            };
            if book.contains(key) && seen.insert(key.0) {
                let c = counts.entry(key.0).or_default();
                match winner {
                    None => c.draws += 1,
                    Some(w) if w == pos.side_to_move() => c.wins += 1,
                    Some(_) => c.losses += 1,
                }
            }
        };
        visit(&pos);
        for mv in &g.moves {
            pos.do_move(*mv);
            visit(&pos);
        }
    }
    counts
}

#[test]
fn games_through_real_workers_are_counted_per_book_position() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    let games_out = dir.path().join("games.txt");
    let db_arg = db.display().to_string();
    let out_arg = games_out.display().to_string();
    let export = dir.path().join("ndf.db2016");
    let export_arg = export.display().to_string();
    // Grow a book first, then play on it: the book does not change under the
    // games, so an independent replay of the kept games must give the counters.
    let mut c = Coord::start(
        &db,
        "127.0.0.1:0",
        &[
            "--local-workers",
            "2",
            "--think-limit",
            "40",
            "--nodes",
            "300",
        ],
        &[],
    );
    assert!(c.wait_exit(Duration::from_secs(600)).success());
    drop(c);
    let mut c = Coord::start(
        &db,
        "127.0.0.1:0",
        &[
            "--local-workers",
            "2",
            "--think-limit",
            "0",
            "--play-share",
            "0.5",
            "--play-games",
            "6",
            "--play-nodes",
            "300",
            "--ply-limit",
            "80",
            "--out-games",
            &out_arg,
            "--export",
            &export_arg,
            "--export-weights",
            "ndf",
        ],
        &[],
    );
    let status = c.wait_exit(Duration::from_secs(600));
    assert!(status.success(), "{:?}", c.log.lock().unwrap());
    // A games-only run ends at its games target, and says so.
    c.wait_log("games target reached games=6", LONG);
    assert!(
        !c.log
            .lock()
            .unwrap()
            .iter()
            .any(|l| l.contains("think limit")),
        "{:?}",
        c.log.lock().unwrap()
    );
    drop(c);
    let games = read_games(&games_out);
    assert_eq!(games.len(), 6, "games kept");
    let store = SledStore::open_existing(std::path::Path::new(&db_arg)).unwrap();
    assert_eq!(store.games_recorded().unwrap(), 6);
    let book = Book::load(&store).unwrap();
    assert!(book.len() >= 40);
    let expected = replay_counts(&book, &games);
    let mut stored: HashMap<u128, GameCounts> = HashMap::new();
    store
        .for_each_game_count(&mut |key: Key, c: GameCounts| {
            stored.insert(key.0, c);
        })
        .unwrap();
    stored.retain(|_, c| c.games() > 0);
    assert!(!expected.is_empty(), "the games passed through the book");
    // The end-of-run export carries NineDayFever weights: every position's counts
    // sum to 10000 (the flat weights would be 1 per move).
    let entries: Vec<_> = stera_formats::db2016::Db2016Reader::open(&export)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(entries.len(), book.len());
    for e in &entries {
        assert_eq!(
            e.moves.iter().map(|m| m.count).sum::<u64>(),
            10_000,
            "{}",
            e.sfen()
        );
    }
    assert_eq!(stored, expected, "store vs independent replay");
    // Games start from the roots in turn (startpos and its children by default);
    // each start position in the book has at least the games that began there.
    let mut starts: HashMap<u128, u64> = HashMap::new();
    for g in &games {
        *starts
            .entry(Position::from_sfen(&g.start).unwrap().key().0)
            .or_default() += 1;
    }
    assert!(starts.len() > 1, "games rotate through the roots");
    for (key, n) in starts {
        if book.contains(Key(key)) {
            assert!(stored[&key].games() >= n);
        }
    }
}

/// The side to move resigns: an answer to a search job (in a self-play game
/// of an empty book, the whole game).
pub(crate) fn resigning_game(lease_id: u64, _search: &SearchJob) -> JobResult {
    answer(lease_id, "resign")
}

fn answer(lease_id: u64, usi: &str) -> JobResult {
    JobResult {
        lease_id,
        engine: "fake".into(),
        kind: Some(job_result::Kind::Search(SearchResult {
            usi: usi.into(),
            ..SearchResult::default()
        })),
        ..JobResult::default()
    }
}

/// What the coordinator answered to each result sent, in order.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Answer {
    Ack,
    Rejected(String),
}

/// Makes the results to send for one search job (lease id, job).
pub(crate) type Maker = Box<dyn Fn(u64, &SearchJob) -> Vec<JobResult>>;

/// Connects; for each maker, waits for the next search job, sends its results
/// one by one and collects the answers.
pub(crate) fn exchange(url: &str, makers: Vec<Maker>) -> Vec<Answer> {
    let rt = runtime(2);
    rt.block_on(async {
        let mut client = common::client(url.to_owned(), None).await.unwrap();
        let (tx, rx) = tmpsc::channel::<WorkerMessage>(64);
        tx.send(common::hello("fake-player", "fake", 1))
            .await
            .unwrap();
        let mut inbound = client
            .work(ReceiverStream::new(rx))
            .await
            .unwrap()
            .into_inner();
        let mut answers = Vec::new();
        // Jobs that arrive while an answer is awaited wait here for their maker.
        let mut jobs: std::collections::VecDeque<(u64, SearchJob)> = Default::default();
        for make in makers {
            let (lease_id, search) = loop {
                if let Some(j) = jobs.pop_front() {
                    break j;
                }
                match tokio::time::timeout(LONG, inbound.message()).await {
                    Ok(Ok(Some(CoordinatorMessage {
                        msg: Some(coordinator_message::Msg::Job(j)),
                    }))) => {
                        if let Some(job::Kind::Search(s)) = j.kind {
                            break (j.lease_id, s);
                        }
                        panic!("a think job with --think-limit 0");
                    }
                    Ok(Ok(Some(_))) => {}
                    other => panic!("no search job: {other:?}"),
                }
            };
            for r in make(lease_id, &search) {
                tx.send(WorkerMessage {
                    msg: Some(worker_message::Msg::Result(r)),
                })
                .await
                .unwrap();
                loop {
                    let m = tokio::time::timeout(LONG, inbound.message())
                        .await
                        .expect("an answer")
                        .expect("stream")
                        .expect("open");
                    match m.msg {
                        Some(coordinator_message::Msg::Ack(_)) => {
                            answers.push(Answer::Ack);
                            break;
                        }
                        Some(coordinator_message::Msg::Rejected(r)) => {
                            answers.push(Answer::Rejected(r.reason));
                            break;
                        }
                        Some(coordinator_message::Msg::Job(j)) => {
                            if let Some(job::Kind::Search(s)) = j.kind {
                                jobs.push_back((j.lease_id, s));
                            }
                        }
                        _ => {}
                    }
                }
            }
        }
        answers
    })
}

/// Self-play games counted in this run, as the Status RPC tells them.
pub(crate) fn games_counted(url: &str) -> u64 {
    let status = runtime(1).block_on(common::status(url, None));
    status.games_black + status.games_white + status.games_draw
}

/// Waits until the coordinator at `url` has counted `n` self-play games.
pub(crate) fn wait_games_counted(url: &str, n: u64) {
    let start = std::time::Instant::now();
    while games_counted(url) < n {
        assert!(start.elapsed() < LONG, "{n} games were never counted");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A worker has one move of a game to say, and the coordinator checks it: an
/// illegal move, an answer for a lease nobody holds and a think result for a
/// search are refused with their reasons; the game the coordinator counts is
/// the one its own referee played (here: the side to move resigned).
#[test]
fn a_worker_says_one_checked_move_and_cannot_forge_a_game() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    let mut c = Coord::start(&db, "127.0.0.1:0", &common::games_only("1", &[]), &[]);
    let makers: Vec<Maker> = vec![
        Box::new(|lease, _| vec![answer(lease, "5a5i")]),
        // The real lease stays held through the first of these.
        Box::new(|lease, _| {
            vec![
                answer(lease + 1_000_000, "resign"),
                JobResult::think(lease, String::new(), Vec::new(), 0, 0, "fake".into()),
            ]
        }),
        Box::new(|lease, search| vec![resigning_game(lease, search)]),
    ];
    let answers = exchange(&c.url(), makers);
    assert_eq!(answers.len(), 4);
    let reasons: Vec<&str> = answers[..3]
        .iter()
        .map(|a| match a {
            Answer::Rejected(r) => r.as_str(),
            Answer::Ack => panic!("a wrong answer was acknowledged: {answers:?}"),
        })
        .collect();
    assert!(reasons[0].contains("not a legal move"), "{}", reasons[0]);
    assert!(reasons[1].contains("unknown"), "{}", reasons[1]);
    assert!(reasons[2].contains("search job"), "{}", reasons[2]);
    assert_eq!(answers[3], Answer::Ack);
    // The one game of the run counted: it ends.
    assert!(c.wait_exit(LONG).success(), "{:?}", c.log.lock().unwrap());
    let store = SledStore::open_existing(&db).unwrap();
    assert_eq!(store.games_recorded().unwrap(), 1);
}

#[test]
fn an_answer_sent_twice_moves_its_game_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    let mut c = Coord::start(&db, "127.0.0.1:0", &common::games_only("2", &[]), &[]);
    let makers: Vec<Maker> = vec![Box::new(|lease, search| {
        let good = resigning_game(lease, search);
        vec![good.clone(), good]
    })];
    let answers = exchange(&c.url(), makers);
    assert_eq!(
        answers,
        vec![Answer::Ack, Answer::Ack],
        "a repeat is acknowledged again"
    );
    wait_games_counted(&c.url(), 1);
    c.kill9();
    let store = SledStore::open_existing(&db).unwrap();
    assert_eq!(store.games_recorded().unwrap(), 1, "counted once");
}

#[test]
fn a_worker_of_protocol_1_is_refused_with_both_versions_named() {
    let dir = tempfile::tempdir().unwrap();
    let c = Coord::start(&dir.path().join("book.db"), "127.0.0.1:0", &[], &[]);
    let rt = runtime(2);
    let status = rt.block_on(async {
        let mut client = common::client(c.url(), None).await.unwrap();
        let (tx, rx) = tmpsc::channel::<WorkerMessage>(4);
        let mut old = common::hello("fake-player", "fake", 1);
        if let Some(worker_message::Msg::Hello(h)) = &mut old.msg {
            h.protocol = 1;
        }
        tx.send(old).await.unwrap();
        match client.work(ReceiverStream::new(rx)).await {
            Err(status) => status,
            Ok(mut inbound) => inbound.get_mut().message().await.expect_err("refused"),
        }
    });
    assert_eq!(status.code(), tonic::Code::FailedPrecondition);
    let expected = format!(
        "worker speaks protocol 1 but this coordinator speaks {}",
        stera_proto::PROTOCOL_VERSION
    );
    assert!(status.message().contains(&expected), "{}", status.message());
}
