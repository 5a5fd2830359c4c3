//! `book-tools match` end to end through the built binary: against no book and
//! against itself with the built-in engine at a tiny node budget on two threads,
//! and one match with Fairy-Stockfish (skipped when it is not installed, failed
//! then under STERA_REQUIRE_ENGINES=1).

use crate::common::{book_tools, ok, s, single_root_book};

use crate::engines;

use std::collections::HashMap;
use std::path::Path;

use stera_formats::kifu::{KifuFormat, read_kifu_bytes};

/// A small synthetic book (startpos and its 30 children as roots).
fn synthetic_book(dir: &Path) -> String {
    let db = dir.join("book");
    ok(&["synth", "--db", s(&db), "--positions", "300"]);
    s(&db).to_owned()
}

/// The `name: value` lines of the summary.
pub(crate) fn summary(stdout: &str) -> HashMap<String, String> {
    stdout
        .lines()
        .filter_map(|l| l.split_once(": "))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

pub(crate) fn number(map: &HashMap<String, String>, key: &str) -> u64 {
    map.get(key)
        .unwrap_or_else(|| panic!("no `{key}` in {map:?}"))
        .parse()
        .unwrap_or_else(|e| panic!("{key}: {e}"))
}

/// `0.5000 [0.2000, 0.8000]` as (value, low, high); an `unbounded` end (an
/// Elo interval reaching a score of 0 or 1) as an infinite one.
fn with_interval(text: &str) -> (f64, f64, f64) {
    let parse = |t: &str, unbounded: f64| -> f64 {
        match t.trim() {
            "unbounded" => unbounded,
            other => other.parse().unwrap_or_else(|e| panic!("`{other}`: {e}")),
        }
    };
    let (value, rest) = text.split_once(" [").expect("an interval");
    let (low, high) = rest
        .trim_end_matches(']')
        .split_once(", ")
        .expect("two ends");
    (
        parse(value, f64::NAN),
        parse(low, f64::NEG_INFINITY),
        parse(high, f64::INFINITY),
    )
}

/// Points of the `--db` side recounted from the CSA file: the `'result:` line of
/// each game and which player (`N+`/`N-`) carried the `--db` book.
pub(crate) fn recount_from_csa(text: &str, db: &str) -> (u64, u64, u64) {
    let (mut wins, mut draws, mut losses) = (0, 0, 0);
    for game in text.split("\n/\n") {
        let line = |prefix: &str| {
            game.lines()
                .find_map(|l| l.strip_prefix(prefix))
                .unwrap_or_else(|| panic!("no {prefix} in {game}"))
                .to_owned()
        };
        let db_is_black = line("N+").ends_with(&format!("book {db}"));
        assert_ne!(db_is_black, line("N-").ends_with(&format!("book {db}")));
        let result = line("'result: ");
        if result.starts_with("draw") {
            draws += 1;
        } else if result.starts_with("black wins") == db_is_black {
            wins += 1;
        } else {
            losses += 1;
        }
    }
    (wins, draws, losses)
}

#[test]
fn a_match_against_no_book_adds_up_and_writes_its_games() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = synthetic_book(dir.path());
    let games = dir.path().join("games.csa");
    let out = ok(&[
        "match",
        "--db",
        &db,
        "--games",
        "4",
        "--nodes",
        "200",
        "--concurrency",
        "2",
        "--ply-limit",
        "100",
        "--out-games",
        s(&games),
    ]);
    let m = summary(&out);
    assert_eq!(m["games"], "4 of 4", "{out}");
    let (w, d, l) = (
        number(&m, "wins"),
        number(&m, "draws"),
        number(&m, "losses"),
    );
    assert_eq!(w + d + l, 4, "{out}");
    let (score, low, high) = with_interval(&m["score (trinomial, 4 games)"]);
    assert!(
        (score - (w as f64 + 0.5 * d as f64) / 4.0).abs() < 1e-4,
        "{out}"
    );
    assert!(low <= score && score <= high, "{out}");
    let (elo, elo_low, elo_high) = with_interval(&m["elo (trinomial, 95 %)"]);
    assert!(elo_low <= elo && elo <= elo_high, "{out}");
    // The games file: four games an independent reader replays, whose results
    // recount to the summary.
    let text = std::fs::read_to_string(&games).expect("games written");
    let report =
        read_kifu_bytes(text.as_bytes(), "games.csa", Some(KifuFormat::Csa)).expect("readable CSA");
    assert_eq!(report.summary.games_read, 4, "{:?}", report.summary.errors);
    assert!(report.games.iter().all(|g| !g.moves.is_empty()));
    assert_eq!(recount_from_csa(&text, &db), (w, d, l));
}

#[test]
fn a_book_against_itself_scores_even_within_its_interval() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = synthetic_book(dir.path());
    let out = ok(&[
        "match",
        "--db",
        &db,
        "--against",
        &db,
        "--games",
        "4",
        "--nodes",
        "200",
        "--concurrency",
        "2",
        "--ply-limit",
        "80",
        "--play-seed",
        "7",
    ]);
    let m = summary(&out);
    assert_eq!(m["games"], "4 of 4", "{out}");
    // Both games of a pair replay the same book draws with colours swapped and
    // the engines are deterministic at a node limit: each pair splits evenly.
    assert_eq!(number(&m, "wins"), number(&m, "losses"), "{out}");
    for (score_key, elo_key) in [
        ("score (trinomial, 4 games)", "elo (trinomial, 95 %)"),
        ("score (pentanomial, 2 pairs)", "elo (pentanomial, 95 %)"),
    ] {
        let (score, low, high) = with_interval(&m[score_key]);
        assert!((score - 0.5).abs() < 1e-9, "{out}");
        assert!(low <= score && score <= high, "{out}");
        let (elo, elo_low, elo_high) = with_interval(&m[elo_key]);
        assert!(
            elo.abs() < 1e-9 && elo_low <= 0.0 && 0.0 <= elo_high,
            "{out}"
        );
    }
    assert_eq!(m["los"], "0.5000", "{out}");
}

#[test]
fn bad_openings_and_counts_are_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = synthetic_book(dir.path());
    let openings = dir.path().join("openings.txt");
    std::fs::write(
        &openings,
        "startpos moves 7g7f\n# a comment\nstartpos moves 7g7f 7g7f\n",
    )
    .expect("write openings");
    let out = book_tools(&[
        "match",
        "--db",
        &db,
        "--openings",
        s(&openings),
        "--nodes",
        "100",
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("line 3"), "{err}");
    let out = book_tools(&["match", "--db", &db, "--games", "0"]);
    assert!(!out.status.success());
    // A missing store, or a directory that holds none, is refused and not created.
    let missing = dir.path().join("missing");
    let out = book_tools(&["match", "--db", s(&missing), "--nodes", "100"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a book store"));
    assert!(!missing.exists());
    let plain = dir.path().join("plain");
    std::fs::create_dir(&plain).expect("create a directory");
    let out = book_tools(&["match", "--db", s(&plain), "--nodes", "100"]);
    assert!(!out.status.success());
    assert_eq!(std::fs::read_dir(&plain).expect("list").count(), 0);
}

#[test]
fn fairy_stockfish_plays_a_match() {
    let Some(engine) = engines::real_engine(
        "fairy-stockfish",
        "STERA_FAIRY_STOCKFISH",
        "fairy-stockfish",
    ) else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let db = synthetic_book(dir.path());
    let openings = dir.path().join("openings.txt");
    // An opening the book holds (one it does not would leave the book under
    // test without a move: a match that says nothing about it, refused).
    std::fs::write(&openings, "startpos\n").expect("write openings");
    let out = ok(&[
        "match",
        "--db",
        &db,
        "--openings",
        s(&openings),
        "--games",
        "2",
        "--nodes",
        "300",
        "--ply-limit",
        "60",
        "--engine",
        "usi",
        "--engine-cmd",
        s(&engine),
        "--engine-option",
        "UCI_Variant=shogi",
    ]);
    let m = summary(&out);
    assert_eq!(m["games"], "2 of 2", "{out}");
    assert_eq!(
        number(&m, "wins") + number(&m, "draws") + number(&m, "losses"),
        2
    );
}

/// Starts an in-process coordinator (no think limit: it thinks while it serves
/// searches) and one worker with the built-in engine on a free loopback port;
/// returns its URL. Both run until the test process ends.
fn cluster(dir: &Path) -> String {
    let url = coordinator_alone(dir);
    use clap::Parser;
    let worker = stera_worker::WorkerArgs::parse_from([
        "worker",
        "--coordinator",
        &url,
        "--slots",
        "2",
        "--nodes",
        "200",
    ]);
    std::thread::spawn(move || {
        let rt = tokio::runtime::Runtime::new().expect("runtime");
        rt.block_on(stera_worker::run(worker))
    });
    // Connected before the match starts, so that its header can name the
    // workers' engine (the event, not a pause).
    let mut polls = 0;
    loop {
        let status = book_tools(&["remote", "status", "--coordinator", &url, "--json"]);
        let doc: serde_json::Value =
            serde_json::from_slice(&status.stdout).unwrap_or(serde_json::Value::Null);
        if doc["workers"].as_array().is_some_and(|w| !w.is_empty()) {
            break url;
        }
        polls += 1;
        assert!(polls < 1200, "the worker never connected");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// Starts an in-process coordinator without workers; returns its URL.
fn coordinator_alone(dir: &Path) -> String {
    use clap::Parser;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let url = format!("http://127.0.0.1:{port}");
    let db = dir.join("cluster.db");
    let args = stera_coordinator::CoordinatorArgs::parse_from([
        "coordinator",
        "--db",
        s(&db),
        "--create",
        "--listen",
        &format!("127.0.0.1:{port}"),
        "--nodes",
        "200",
    ]);
    std::thread::spawn(move || {
        let rt = tokio::runtime::Runtime::new().expect("runtime");
        rt.block_on(stera_coordinator::run(args, None))
    });
    // The coordinator opens its store before it listens: wait for the port.
    let started = std::time::Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(120),
            "the in-process coordinator never listened on {port}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    url
}

/// A match through a coordinator that has no worker says that it waits,
/// instead of looking hung.
#[test]
fn a_match_through_a_coordinator_without_workers_says_it_waits() {
    use std::io::{BufRead, BufReader};
    let dir = tempfile::tempdir().expect("temp dir");
    let db = synthetic_book(dir.path());
    let url = coordinator_alone(dir.path());
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_book-tools"))
        .args(["match", "--db", &db, "--games", "2", "--nodes", "200"])
        .args(["--coordinator", &url])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start book-tools");
    let stderr = child.stderr.take().expect("stderr");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let started = std::time::Instant::now();
    let mut seen = Vec::new();
    let told = loop {
        match rx.recv_timeout(std::time::Duration::from_secs(1)) {
            Ok(line) if line.contains("waiting: the coordinator") => break line,
            Ok(line) => seen.push(line),
            Err(_) => {}
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(120),
            "no waiting note: {seen:?}"
        );
    };
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        told.contains(&url) && told.contains("remote status"),
        "{told}"
    );
}

#[test]
fn a_match_through_a_coordinators_workers_adds_up() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = synthetic_book(dir.path());
    let url = cluster(dir.path());
    let games = dir.path().join("games.csa");
    // The local engine flags name an engine that does not exist: every engine
    // move must come from the cluster.
    let out = book_tools(&[
        "match",
        "--db",
        &db,
        "--games",
        "4",
        "--nodes",
        "200",
        "--concurrency",
        "4",
        "--ply-limit",
        "60",
        "--coordinator",
        &url,
        "--engine",
        "usi",
        "--engine-cmd",
        "/nonexistent/engine",
        "--out-games",
        s(&games),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // Issue 43: the engine is named by the workers' engine from the start,
    // not as "the workers of URL".
    let engine_line = stderr
        .lines()
        .find(|l| l.starts_with("engine: "))
        .unwrap_or_else(|| panic!("no engine line: {stderr}"));
    assert!(
        engine_line.contains(&format!("(on the workers of {url})"))
            && !engine_line.starts_with("engine: the engine of the workers"),
        "{engine_line}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let m = summary(&stdout);
    assert_eq!(m["games"], "4 of 4", "{stdout}");
    let (w, d, l) = (
        number(&m, "wins"),
        number(&m, "draws"),
        number(&m, "losses"),
    );
    assert_eq!(w + d + l, 4, "{stdout}");
    let text = std::fs::read_to_string(&games).expect("games written");
    let report =
        read_kifu_bytes(text.as_bytes(), "games.csa", Some(KifuFormat::Csa)).expect("readable CSA");
    assert_eq!(report.summary.games_read, 4, "{:?}", report.summary.errors);
    // More moves than the books hold: the engines (the cluster's) played.
    assert!(report.games.iter().all(|g| g.moves.len() > 4), "{text}");
    assert_eq!(recount_from_csa(&text, &db), (w, d, l));

    // A coordinator that is not there is an error that names it.
    let out = book_tools(&[
        "match",
        "--db",
        &db,
        "--games",
        "2",
        "--coordinator",
        "http://127.0.0.1:1",
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cannot connect to the coordinator at http://127.0.0.1:1"),
        "{err}"
    );
}

#[test]
fn an_exported_book_file_plays_by_its_counts() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = synthetic_book(dir.path());
    let file = dir.path().join("policy.db2016");
    ok(&[
        "export",
        "--db",
        &db,
        "--out",
        s(&file),
        "--export-backup",
        "softmax",
        "--export-temperature",
        "50",
    ]);
    let games = dir.path().join("games.csa");
    let out = ok(&[
        "match",
        "--book",
        s(&file),
        "--book-moves",
        "count",
        "--against-book",
        s(&file),
        "--games",
        "2",
        "--nodes",
        "200",
        "--ply-limit",
        "60",
        "--out-games",
        s(&games),
    ]);
    let m = summary(&out);
    assert_eq!(m["games"], "2 of 2", "{out}");
    // The same file on both sides, the same draws, colours swapped: even.
    assert_eq!(number(&m, "wins"), number(&m, "losses"), "{out}");
    let text = std::fs::read_to_string(&games).expect("games written");
    assert!(
        text.contains("+ book ") && text.contains("policy.db2016"),
        "{text}"
    );
    let report =
        read_kifu_bytes(text.as_bytes(), "games.csa", Some(KifuFormat::Csa)).expect("readable CSA");
    assert_eq!(report.summary.games_read, 2);
    // --db and --book together are refused.
    let err =
        String::from_utf8_lossy(&book_tools(&["match", "--db", &db, "--book", s(&file)]).stderr)
            .into_owned();
    assert!(err.contains("cannot be used with"), "{err}");
}

#[test]
fn a_default_match_on_a_single_root_book_plays_independent_games() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = single_root_book(dir.path());
    let json_path = dir.path().join("result.json");
    let games = dir.path().join("games.csa");
    // Deterministic engines (a node limit) and the defaults otherwise: every
    // pair gets its own opening from the book.
    let out = ok(&[
        "match",
        "--db",
        &db,
        "--games",
        "20",
        "--nodes",
        "200",
        "--concurrency",
        "2",
        "--ply-limit",
        "80",
        "--json",
        s(&json_path),
        "--out-games",
        s(&games),
    ]);
    let m = summary(&out);
    assert_eq!(m["games"], "20 of 20", "{out}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json_path).expect("json written"))
            .expect("valid JSON");
    let distinct = json["distinct_games"].as_u64().expect("distinct_games");
    assert!(distinct >= 19, "{distinct} distinct of 20: {out}");
    assert_eq!(json["independent"], true, "{json}");
    assert_eq!(json["openings"], 10, "{json}");
    let counts: u64 = json["pentanomial_counts"]
        .as_array()
        .expect("counts")
        .iter()
        .map(|c| c.as_u64().expect("a count"))
        .sum();
    assert_eq!(counts, 10, "{json}");
    assert_eq!(
        json["wins"].as_u64().unwrap()
            + json["draws"].as_u64().unwrap()
            + json["losses"].as_u64().unwrap(),
        20
    );
    // The text says the same, with an interval over the pairs.
    assert_eq!(
        m["distinct games"],
        format!("{distinct} of 20 ({:.1} %)", 5.0 * distinct as f64),
        "{out}"
    );
    let (score, low, high) = with_interval(&m["score (pentanomial, 10 pairs)"]);
    assert!(low <= score && score <= high, "{out}");
    // Every game's opening is a book position at ply 2 from the root (the book
    // has no deeper one): the games file starts each game two opening moves in.
    let text = std::fs::read_to_string(&games).expect("games written");
    assert_eq!(text.matches("\n'opening").count(), 40, "{text}");
    let exits: u64 = json["coverage"]["exits"]
        .as_object()
        .expect("exits")
        .values()
        .map(|v| v.as_u64().expect("a count"))
        .sum();
    assert_eq!(exits, 20, "{json}");
}

#[test]
fn one_opening_for_many_games_is_refused_and_repeated_games_get_no_interval() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = single_root_book(dir.path());
    let openings = dir.path().join("openings.txt");
    std::fs::write(&openings, "startpos\n").expect("write openings");
    let base = [
        "match",
        "--db",
        &db,
        "--openings",
        s(&openings),
        "--games",
        "10",
        "--nodes",
        "200",
        "--ply-limit",
        "60",
        "--book-moves",
        "best",
        "--node-jitter",
        "0",
    ];
    // Refused before any game, saying what to add.
    let out = book_tools(&base);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("1 distinct openings, 5 pairs need 5"), "{err}");
    assert!(err.contains("--repeat-openings"), "{err}");
    // Allowed to repeat, the deterministic engines replay the same pair: the
    // counts are printed, the interval is not, and the exit status says so.
    let mut repeat = base.to_vec();
    repeat.push("--repeat-openings");
    let out = book_tools(&repeat);
    assert!(!out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    let m = summary(&stdout);
    assert_eq!(m["distinct games"], "2 of 10 (20.0 %)", "{stdout}");
    assert_eq!(m["distinct pairs"], "1 of 5 (20.0 %)", "{stdout}");
    assert!(!m.contains_key("elo (pentanomial, 95 %)"), "{stdout}");
    assert!(
        err.contains("interval withheld: only 1 of 5 pairs of games are distinct"),
        "{err}"
    );
    // Node jitter makes the engines' games differ (at a budget where the
    // built-in engine's completed depth depends on it).
    let nodes = repeat
        .iter()
        .position(|a| *a == "--nodes")
        .expect("--nodes")
        + 1;
    repeat[nodes] = "3000";
    let jitter = repeat
        .iter()
        .position(|a| *a == "--node-jitter")
        .expect("--node-jitter")
        + 1;
    repeat[jitter] = "0.5";
    let out = book_tools(&repeat);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let m = summary(&stdout);
    let distinct: u64 = m["distinct pairs"]
        .split(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .expect("a count");
    assert!(distinct > 1, "{stdout}");
}

#[test]
fn a_store_has_no_counts_to_play_by() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = single_root_book(dir.path());
    let out = book_tools(&[
        "match",
        "--db",
        &db,
        "--book-moves",
        "count",
        "--games",
        "2",
        "--nodes",
        "100",
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("has no count weights"), "{err}");
}

/// Issue 36, point 4: a book file whose counts are all equal (an export without
/// weights) played by its counts is a uniform choice, and the match says so; a
/// file with weights plays without the warning.
#[test]
fn playing_by_equal_counts_warns() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = synthetic_book(dir.path());
    let (plain, weighted) = (dir.path().join("plain.db"), dir.path().join("weighted.db"));
    ok(&["export", "--db", &db, "--out", s(&plain)]);
    ok(&[
        "export",
        "--db",
        &db,
        "--out",
        s(&weighted),
        "--export-backup",
        "softmax",
        "--export-temperature",
        "50",
    ]);
    let run = |file: &std::path::Path| {
        let out = book_tools(&[
            "match",
            "--book",
            s(file),
            "--book-moves",
            "count",
            "--games",
            "2",
            "--nodes",
            "200",
            "--ply-limit",
            "40",
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let said = run(&plain);
    assert!(
        said.contains("warning: --book-moves count") && said.contains("same count"),
        "{said}"
    );
    assert!(!run(&weighted).contains("same count"));
}
