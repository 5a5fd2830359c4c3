//! Games against real processes: a real coordinator with a real Fairy-Stockfish
//! worker, and a coordinator killed with SIGKILL while games are being counted.

use crate::common;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::{Coord, LONG, runtime};
use stera_book::{Book, GameCounts, NodeStore, SledStore};
use stera_proto::v1::{
    JobResult, SearchJob, SearchResult, WorkerMessage, coordinator_message, job, job_result,
    worker_message,
};
use stera_rules::{Color, Key, Move, Position};
use tokio::sync::mpsc as tmpsc;
use tokio_stream::wrappers::ReceiverStream;

/// A whole game: where it starts, its moves and who won (`None`: a draw).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Game {
    start: String,
    moves: Vec<Move>,
    winner: Option<Color>,
}

/// The complete lines of a `--out-games` file (a line cut short by a kill is left
/// out): `sfen START moves M1 M2 ...<TAB>RESULT`.
fn read_games(path: &Path) -> Vec<Game> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let complete = text.rfind('\n').map_or("", |end| &text[..end]);
    complete
        .lines()
        .map(|line| {
            let (game, result) = line.split_once('\t').expect("game<TAB>result");
            let rest = game.strip_prefix("sfen ").expect("starts with sfen");
            let (start, moves) = rest.split_once(" moves").unwrap_or((rest, ""));
            let winner = if result.starts_with("black wins") {
                Some(Color::Black)
            } else if result.starts_with("white wins") {
                Some(Color::White)
            } else {
                assert!(result.starts_with("draw"), "result `{result}`");
                None
            };
            Game {
                start: start.trim().to_owned(),
                moves: moves
                    .split_whitespace()
                    .map(|m| m.parse().expect("a USI move"))
                    .collect(),
                winner,
            }
        })
        .collect()
}

/// The counters a replay of `games` gives for the positions of `book`, without the
/// coordinator's code: each distinct book position a game passed through gets the
/// game's result once, from its side to move's view.
fn replay_counts<'a>(
    book: &Book,
    games: impl IntoIterator<Item = &'a Game>,
) -> HashMap<u128, GameCounts> {
    let mut counts: HashMap<u128, GameCounts> = HashMap::new();
    for g in games {
        let mut pos = Position::from_sfen(&g.start).expect("start SFEN");
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
                match g.winner {
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

/// The store's non-zero counters by position.
fn stored_counts(store: &SledStore) -> HashMap<u128, GameCounts> {
    let mut stored = HashMap::new();
    store
        .for_each_game_count(&mut |key: Key, c: GameCounts| {
            stored.insert(key.0, c);
        })
        .expect("read the game counters");
    stored.retain(|_, c| c.games() > 0);
    stored
}

/// Opens a store a process just left (with a short retry for its lock).
fn reopen(db: &Path) -> SledStore {
    let start = Instant::now();
    loop {
        match SledStore::open_existing(db) {
            Ok(s) => return s,
            Err(e) => {
                assert!(
                    start.elapsed() < Duration::from_secs(30),
                    "cannot reopen the store: {e}"
                );
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }
}

/// Where an engine is: on PATH or in Debian's games directory (not on root's PATH).
pub(crate) fn find_engine(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/games")])
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// One coordinator run on `db` with one real worker process running
/// Fairy-Stockfish; `run_args` say what the run does. Returns the coordinator's
/// log once it has ended cleanly.
fn run_with_fairy_stockfish(engine_cmd: &str, db: &Path, run_args: &[&str]) -> Vec<String> {
    let mut c = Coord::start(db, "127.0.0.1:0", run_args, &[]);
    let mut worker = common::start_worker(
        &c.url(),
        &[
            "--slots",
            "2",
            "--worker-id",
            "fairy",
            "--engine",
            "usi",
            "--engine-cmd",
            engine_cmd,
            "--engine-option",
            "UCI_Variant=shogi",
        ],
        &[("RUST_LOG", "info")],
    );
    let worker_log = common::collect_stderr(&mut worker);
    let start = Instant::now();
    let status = loop {
        if let Some(s) = c.child.try_wait().expect("wait for the coordinator") {
            break s;
        }
        if let Some(s) = worker.try_wait().expect("wait for the worker") {
            panic!(
                "the Fairy-Stockfish worker exited first ({s}): {:?}\ncoordinator: {:?}",
                worker_log.lock().unwrap(),
                c.log.lock().unwrap()
            );
        }
        assert!(
            start.elapsed() < Duration::from_secs(600),
            "the run did not end: worker {:?}\ncoordinator: {:?}",
            worker_log.lock().unwrap(),
            c.log.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let _ = worker.kill();
    let _ = worker.wait();
    assert!(
        status.success(),
        "coordinator: {status}: {:?}\nworker: {:?}",
        c.log.lock().unwrap(),
        worker_log.lock().unwrap()
    );
    // The games came from Fairy-Stockfish, not from some other engine.
    // Its connection line names its engine (the only worker of the run).
    let hello = c.wait_log("worker connected", LONG);
    assert!(
        hello.to_lowercase().contains("engine=fairy-stockfish")
            && hello.contains("UCI_Variant=shogi"),
        "the worker's engine: {hello}"
    );
    let log = c.log.lock().unwrap().clone();
    drop(c);
    log
}

/// A real coordinator grows a small book while it plays games on it with a real
/// worker process running Fairy-Stockfish, then plays more games on the grown
/// book alone; the kept games, replayed here with the rules core alone, give the
/// store's per-position counters.
///
/// While the book grows, a game counts for the positions the book held when the
/// game came in, and a later position it passed through is not credited: the
/// replay on the final book can only bound those counters from above. Once the
/// book stands still (the games-only run), the counters it adds must equal the
/// replay exactly.
#[test]
fn games_with_fairy_stockfish_workers_are_counted() {
    let engine = find_engine("fairy-stockfish").unwrap_or_else(|| {
        panic!(
            "fairy-stockfish is not installed (neither on PATH nor in /usr/games): \
             install it with scripts/install-deps.sh (Debian package `fairy-stockfish`)"
        )
    });
    let engine_cmd = engine.display().to_string();
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("book.db");
    const TARGET: u64 = 4;
    let target = TARGET.to_string();
    // A run kept at least its target of games, and the store holds them beside
    // the `before` games of earlier runs.
    let check_kept = |store: &SledStore, kept: &[Game], before: usize| {
        assert!(
            kept.len() as u64 >= TARGET,
            "{} games kept, target {TARGET}",
            kept.len()
        );
        assert_eq!(
            store.games_recorded().expect("games recorded"),
            (before + kept.len()) as u64,
            "store vs kept games"
        );
    };
    let games_args = |out: &str| {
        vec![
            "--play-share".to_owned(),
            "0.5".to_owned(),
            "--play-games".to_owned(),
            target.clone(),
            "--play-depth".to_owned(),
            "1".to_owned(),
            "--ply-limit".to_owned(),
            "80".to_owned(),
            "--out-games".to_owned(),
            out.to_owned(),
        ]
    };

    // Thinking and games side by side.
    let mixed_out = dir.path().join("mixed-games.txt");
    let mut args = vec!["--think-limit", "20", "--depth", "1"]
        .into_iter()
        .map(str::to_owned)
        .collect::<Vec<_>>();
    args.extend(games_args(&mixed_out.display().to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let log = run_with_fairy_stockfish(&engine_cmd, &db, &args);
    assert!(
        log.iter()
            .any(|l| l.contains("think limit and games target reached")),
        "{log:?}"
    );
    let mixed = read_games(&mixed_out);
    let store = reopen(&db);
    check_kept(&store, &mixed, 0);
    let book = Book::load(&store).expect("load the book");
    assert!(book.len() >= 20, "book of {}", book.len());
    let after_mixed = stored_counts(&store);
    let bound = replay_counts(&book, &mixed);
    assert!(!after_mixed.is_empty(), "the games passed through the book");
    for (key, stored) in &after_mixed {
        let most = bound.get(key).copied().unwrap_or_default();
        assert!(
            stored.wins <= most.wins && stored.draws <= most.draws && stored.losses <= most.losses,
            "position {key:x}: stored {stored:?}, but the kept games pass it only {most:?} times"
        );
    }
    drop(store);

    // Games alone on the book just grown: it stands still, so the counters each
    // game adds are exactly those of its replay.
    let only_out = dir.path().join("games-only.txt");
    let mut args = vec!["--think-limit".to_owned(), "0".to_owned()];
    args.extend(games_args(&only_out.display().to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let log = run_with_fairy_stockfish(&engine_cmd, &db, &args);
    assert!(
        log.iter().any(|l| l.contains("games target reached")),
        "{log:?}"
    );
    let games = read_games(&only_out);
    eprintln!(
        "kept games (plies, winner): {:?}",
        games
            .iter()
            .map(|g| (g.moves.len(), g.winner))
            .collect::<Vec<_>>()
    );
    let store = reopen(&db);
    check_kept(&store, &games, mixed.len());
    let still = Book::load(&store).expect("load the book");
    assert_eq!(still.len(), book.len(), "a games-only run grew the book");
    let expected = replay_counts(&book, &games);
    assert!(!expected.is_empty(), "the games passed through the book");
    let mut added = stored_counts(&store);
    for (key, c) in added.iter_mut() {
        let before = after_mixed.get(key).copied().unwrap_or_default();
        let lost = || format!("position {key:x} lost counts: {before:?} became {c:?}");
        *c = GameCounts {
            wins: c
                .wins
                .checked_sub(before.wins)
                .unwrap_or_else(|| panic!("{}", lost())),
            draws: c
                .draws
                .checked_sub(before.draws)
                .unwrap_or_else(|| panic!("{}", lost())),
            losses: c
                .losses
                .checked_sub(before.losses)
                .unwrap_or_else(|| panic!("{}", lost())),
        };
    }
    added.retain(|_, c| c.games() > 0);
    assert_eq!(added, expected, "counters added vs independent replay");
    // The engine played on past the book: no kept game is all book moves.
    assert!(
        games.iter().chain(&mixed).any(|g| {
            let mut pos = Position::from_sfen(&g.start).expect("start");
            g.moves.iter().any(|mv| {
                let in_book = book.contains(pos.key());
                pos.do_move(*mv);
                !in_book
            })
        }),
        "no game left the book"
    );
}

/// What the in-process player answered and heard.
#[derive(Debug, Default)]
struct Played {
    /// The game each answer ended (recorded before it is sent).
    sent: Vec<Game>,
    /// Answers the coordinator acknowledged.
    acked: usize,
    rejected: Vec<(u64, String)>,
}

/// The search's game so far, then the side to move resigns: the game the
/// answer ends, and the answer.
fn resigning_game(lease_id: u64, search: &SearchJob) -> (Game, JobResult) {
    let mut pos = Position::from_sfen(&search.start_sfen).expect("start SFEN");
    let mut moves = Vec::new();
    for m in &search.moves {
        let mv = pos.parse_move(m).expect("a move of the game");
        pos.do_move(mv);
        moves.push(mv);
    }
    let result = JobResult {
        lease_id,
        engine: "fake".into(),
        kind: Some(job_result::Kind::Search(SearchResult {
            usi: "resign".into(),
            ..SearchResult::default()
        })),
        ..JobResult::default()
    };
    let game = Game {
        start: search.start_sfen.clone(),
        moves,
        winner: Some(pos.side_to_move().flip()),
    };
    (game, result)
}

/// A player holding `slots` search jobs that answers each at once with
/// `resign`, without waiting for acknowledgements, until the stream ends.
async fn resigning_player(url: String, slots: u32, played: Arc<Mutex<Played>>) {
    let mut client = common::client(url, None).await.expect("connect");
    let (tx, rx) = tmpsc::channel::<WorkerMessage>(256);
    tx.send(common::hello("resigner", "fake", slots))
        .await
        .expect("hello");
    let mut inbound = client
        .work(ReceiverStream::new(rx))
        .await
        .expect("work stream")
        .into_inner();
    loop {
        let msg = match tokio::time::timeout(LONG, inbound.message()).await {
            Ok(Ok(Some(m))) => m,
            // The coordinator killed (or silent for too long): the run is over.
            _ => break,
        };
        match msg.msg {
            Some(coordinator_message::Msg::Job(j)) => {
                let Some(job::Kind::Search(search)) = j.kind else {
                    panic!("a think job with --think-limit 0");
                };
                let (game, result) = resigning_game(j.lease_id, &search);
                played.lock().unwrap().sent.push(game);
                let sent = tx
                    .send(WorkerMessage {
                        msg: Some(worker_message::Msg::Result(result)),
                    })
                    .await;
                if sent.is_err() {
                    break;
                }
            }
            Some(coordinator_message::Msg::Ack(_)) => played.lock().unwrap().acked += 1,
            Some(coordinator_message::Msg::Rejected(r)) => {
                played.lock().unwrap().rejected.push((r.lease_id, r.reason));
            }
            _ => {}
        }
    }
}

/// SIGKILL of the coordinator while games are counted: every game line it
/// kept is in the store, and the store holds those games and at most the one
/// being counted when it died (a game is stored, then its line written), each
/// a game the players' answers ended; its counters are exactly the replay of
/// the games it holds; a coordinator restarted on the store finds the same
/// counts.
#[test]
fn sigkill_during_play_loses_no_counted_game() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("book.db");
    let games_out = dir.path().join("games.txt");
    let out_arg = games_out.display().to_string();
    let rt = runtime(2);

    // A small book first (in-process thinkers answer at once), so that openings
    // pass through book positions and games have counters to add to.
    const THOUGHTS: usize = 30;
    let mut c = Coord::start(
        &db,
        "127.0.0.1:0",
        &["--think-limit", &THOUGHTS.to_string()],
        &[],
    );
    let report = rt
        .block_on(common::fake_worker(
            c.url(),
            None,
            4,
            common::Answer::Good,
            THOUGHTS,
            LONG,
        ))
        .expect("thinker");
    assert_eq!(report.acked.len(), THOUGHTS, "{report:?}");
    assert!(c.wait_exit(LONG).success(), "{:?}", c.log.lock().unwrap());
    drop(c);

    // Only games, a target far away; a player answering 8 games' searches.
    const SLOTS: u32 = 8;
    let mut c = Coord::start(
        &db,
        "127.0.0.1:0",
        &common::games_only("100000", &["--out-games", &out_arg]),
        &[],
    );
    let played = Arc::new(Mutex::new(Played::default()));
    let player = rt.spawn(resigning_player(c.url(), SLOTS, played.clone()));
    let start = Instant::now();
    while read_games(&games_out).len() < 20 {
        assert!(
            !player.is_finished() && start.elapsed() < LONG,
            "no games counted: {:?}\n{:?}",
            played.lock().unwrap(),
            c.log.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    c.kill9();
    rt.block_on(async { tokio::time::timeout(LONG, player).await })
        .expect("the player ends when the coordinator dies")
        .expect("the player did not panic");
    drop(c);
    let played = std::mem::take(&mut *played.lock().unwrap());
    assert!(played.rejected.is_empty(), "{:?}", played.rejected);
    let kept = read_games(&games_out);
    eprintln!(
        "answered {}, acknowledged {}, lines kept {}",
        played.sent.len(),
        played.acked,
        kept.len()
    );

    // The store as the killed coordinator left it.
    let store = reopen(&db);
    let recorded = store.games_recorded().expect("games recorded");
    let stored = stored_counts(&store);
    let book = Book::load(&store).expect("load the book");
    assert_eq!(book.len(), THOUGHTS, "no thinking in the games run");
    drop(store);
    assert!(
        recorded == kept.len() as u64 || recorded == kept.len() as u64 + 1,
        "recorded {recorded}, kept lines {}",
        kept.len()
    );
    // Every kept line is a game the player ended (a search carries the game
    // from where its root's position command starts, a kept line from the
    // root: the same positions, the search's perhaps with a few before).
    let ended: Vec<(Vec<u128>, Option<Color>)> =
        played.sent.iter().map(|g| (path(g), g.winner)).collect();
    for g in &kept {
        let kept_path = path(g);
        assert!(
            ended
                .iter()
                .any(|(p, w)| *w == g.winner && p.ends_with(&kept_path)),
            "a kept game nobody played: {g:?}"
        );
    }

    // A coordinator restarted on the store opens it and leaves the counts alone
    // (no play, nothing to think: it ends at once).
    let mut c = Coord::start(&db, "127.0.0.1:0", &["--think-limit", "0"], &[]);
    assert!(c.wait_exit(LONG).success(), "{:?}", c.log.lock().unwrap());
    drop(c);
    let store = reopen(&db);
    assert_eq!(store.games_recorded().expect("games recorded"), recorded);
    assert_eq!(stored_counts(&store), stored, "counts after a restart");

    // The counters are the replay of the kept games, and of one game more when
    // the store holds one more (the one counted as the kill came).
    let expected = replay_counts(&book, kept.iter());
    assert!(!expected.is_empty(), "the games passed through the book");
    if recorded == kept.len() as u64 {
        assert_eq!(stored, expected, "store vs replay of the kept games");
    } else {
        let explained = played.sent.iter().flat_map(from_each_ply).any(|extra| {
            replay_counts(&book, kept.iter().chain(std::iter::once(&extra))) == stored
        });
        assert!(
            explained,
            "the store's one game more is none the player ended"
        );
    }
}

/// The keys of the positions of `game`, from its start.
fn path(game: &Game) -> Vec<u128> {
    let mut pos = Position::from_sfen(&game.start).expect("start SFEN");
    let mut keys = vec![pos.key().0];
    for mv in &game.moves {
        pos.do_move(*mv);
        keys.push(pos.key().0);
    }
    keys
}

/// `game` as it would be told from each of its positions on (its root is
/// one of them).
fn from_each_ply(game: &Game) -> Vec<Game> {
    let mut pos = Position::from_sfen(&game.start).expect("start SFEN");
    let mut games = Vec::new();
    for (i, mv) in game.moves.iter().enumerate() {
        games.push(Game {
            start: pos.to_sfen(),
            moves: game.moves[i..].to_vec(),
            winner: game.winner,
        });
        pos.do_move(*mv);
    }
    games.push(Game {
        start: pos.to_sfen(),
        moves: Vec::new(),
        winner: game.winner,
    });
    games
}
