//! Mixed engines are a decision: a store grown by the built-in engine at one
//! budget refuses a worker at another budget or with another engine (the worker
//! stops naming both, the coordinator logs it once, nothing of it is stored),
//! and a run whose own limits the store never thought at does not start, unless
//! `--allow-mixed-engines`; then the newcomer's positions are recorded under
//! its own engine and budget.

use std::path::Path;
use std::process::{Command, Stdio};

use stera_book::{NodeStore, Origin, SledStore, ThoughtNode};
use stera_engine::Evaluator;
use stera_rules::{Position, STARTPOS_SFEN};

use crate::common::{self, Coord, LONG, collect_stderr, start_worker, wait_child_exit};

/// The built-in engine's identity in this build.
fn builtin() -> String {
    stera_engine::BuiltinEvaluator::new().identity()
}

/// The store's evaluator identities and the positions each thought, in id order.
fn thinkers(db: &Path) -> Vec<(String, usize)> {
    let store = SledStore::open_existing(db).unwrap();
    let identities = store.evaluators().unwrap();
    let mut counts = vec![0; identities.len()];
    store
        .for_each_node(&mut |_, node| {
            counts[usize::from(node.evaluator)] += 1;
            Ok(())
        })
        .unwrap();
    identities.into_iter().zip(counts).collect()
}

/// Runs a coordinator with `args` and one real built-in worker with
/// `worker_args` until the coordinator reaches its think limit; returns its log.
fn grow(db: &Path, args: &[&str], worker_args: &[&str]) -> Vec<String> {
    let mut c = Coord::start(db, "127.0.0.1:0", args, &[]);
    let mut worker_flags = vec!["--status-every-secs", "0"];
    worker_flags.extend_from_slice(worker_args);
    let mut worker = start_worker(&c.url(), &worker_flags, &[]);
    assert!(c.wait_exit(LONG).success(), "{:?}", c.log.lock().unwrap());
    // A worker that finishes the run's few positions at once may miss the Drain
    // (the coordinator is gone before it), and then waits for the next one.
    let _ = worker.kill();
    let _ = worker.wait();
    c.log.lock().unwrap().clone()
}

/// Starts a worker with `worker_args` against a running coordinator and waits
/// until it stops: it must be refused. Returns its log.
fn refused_worker(c: &Coord, worker_args: &[&str]) -> String {
    let mut worker = start_worker(&c.url(), worker_args, &[]);
    let log = collect_stderr(&mut worker);
    let status = wait_child_exit(&mut worker, LONG, "refused worker", &log);
    // The last lines may still be on their way from the pipe.
    common::wait_stderr_closed(&log, LONG);
    let text = log.lock().unwrap().join("\n");
    assert!(!status.success(), "a refused worker exits non-zero: {text}");
    text
}

/// The coordinator's log lines that say a worker was refused for its engine.
fn refusals(c: &Coord) -> Vec<String> {
    c.log
        .lock()
        .unwrap()
        .iter()
        .filter(|l| l.contains("worker refused: another engine or budget"))
        .cloned()
        .collect()
}

fn assert_names(text: &str, parts: &[&str]) {
    for part in parts {
        assert!(text.contains(part), "`{part}` missing from: {text}");
    }
}

#[test]
fn a_worker_at_another_budget_is_refused_unless_mixing_is_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    let log = grow(
        &db,
        &["--think-limit", "3"],
        &["--nodes", "200", "--slots", "1"],
    );
    // Issue 43: the log counts a one-engine worker's job slots (its engine
    // and its prefetch) as such, not as `slots=2` beside `worker --slots 1`.
    let hello = log
        .iter()
        .find(|l| l.contains("worker connected"))
        .unwrap_or_else(|| panic!("{log:?}"));
    assert!(
        hello.contains("job_slots=2") && !hello.contains(" slots="),
        "{hello}"
    );
    let at_200 = format!("{} at 200 nodes", builtin());
    let grown = thinkers(&db);
    assert_eq!(grown.len(), 1, "{grown:?}");
    assert_eq!(grown[0].0, at_200);
    let positions = common::book_len(&db);
    assert!(positions >= 3, "{positions}");

    // Another budget: refused at Hello, on both sides, naming both and the flag.
    let metrics = format!("127.0.0.1:{}", common::free_port());
    let mut c = Coord::start(
        &db,
        "127.0.0.1:0",
        &["--think-limit", "3", "--metrics", &metrics],
        &[],
    );
    let told = refused_worker(&c, &["--nodes", "300", "--worker-id", "w300"]);
    let expected = [
        "w300",
        "at 300 nodes",
        "at 200 nodes",
        "--allow-mixed-engines",
    ];
    assert_names(&told, &expected);
    assert_names(&told, &["refused"]);
    c.wait_log("worker refused: another engine or budget", LONG);
    let lines = refusals(&c);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_names(&lines[0], &expected);
    assert!(lines[0].contains("WARN"), "{}", lines[0]);
    // Issue 43: a worker refused for its engine moves the refused-worker
    // counter, which the refused-worker alert watches (it moved none).
    let refused = crate::web::get_ok(&metrics, "/metrics", LONG);
    assert_eq!(
        crate::web::sample(&refused.body, "stera_coordinator_workers_refused_total"),
        Some(1.0),
        "{}",
        refused.body
    );
    c.sigterm();
    assert!(c.wait_exit(LONG).success());
    assert_eq!(common::book_len(&db), positions, "nothing stored");
    assert_eq!(thinkers(&db), grown);

    // The run's own limits at another budget: it does not start.
    for (flags, budget) in [
        (vec!["--nodes", "300"], "300 nodes"),
        // Local workers without limits run the built-in engine's own budget.
        (vec!["--local-workers", "1"], "300000 nodes"),
    ] {
        let out = run_to_end(&db, &flags);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{flags:?} started: {err}");
        assert_names(&err, &[budget, "200 nodes", "--allow-mixed-engines"]);
        assert!(!err.contains("listening"), "{err}");
    }
    assert_eq!(common::book_len(&db), positions);

    // Allowed: the newcomer thinks, under its own identity.
    let log = grow(
        &db,
        &["--think-limit", "3", "--allow-mixed-engines"],
        &["--nodes", "300"],
    );
    let at_300 = format!("{} at 300 nodes", builtin());
    let notes: Vec<_> = log
        .iter()
        .filter(|l| l.contains("a worker of another engine or budget admitted"))
        .collect();
    assert_eq!(notes.len(), 1, "{log:?}");
    assert!(notes[0].contains(&at_300), "{}", notes[0]);
    let mixed = vec![(at_200, grown[0].1), (at_300, 3)];
    assert_eq!(thinkers(&db), mixed);

    // A run that thinks nothing takes any engine and budget, and says nothing of
    // it: the worker's engine only plays.
    let log = grow(
        &db,
        &[
            "--think-limit",
            "0",
            "--play-share",
            "1",
            "--play-games",
            "2",
        ],
        &["--nodes", "400"],
    );
    assert!(
        log.iter().any(|l| l.contains("games target reached")),
        "the run did not play its games: {log:?}"
    );
    assert!(
        !log.iter().any(|l| l.contains("another engine or budget")),
        "{log:?}"
    );
    assert_eq!(thinkers(&db), mixed);
}

#[test]
fn a_usi_engine_is_refused_unless_mixing_is_allowed() {
    let Some(fairy) = crate::engines::real_engine(
        "fairy-stockfish",
        "STERA_FAIRY_STOCKFISH",
        "fairy-stockfish",
    ) else {
        return;
    };
    let fairy = fairy.to_str().unwrap().to_owned();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    let run = ["--think-limit", "2", "--nodes", "200"];
    grow(&db, &run, &[]);
    let grown = thinkers(&db);
    assert_eq!(grown.len(), 1, "{grown:?}");
    let positions = common::book_len(&db);
    let usi = [
        "--engine",
        "usi",
        "--engine-cmd",
        fairy.as_str(),
        "--engine-option",
        "UCI_Variant=shogi",
    ];

    let mut c = Coord::start(&db, "127.0.0.1:0", &run, &[]);
    let mut flags = vec!["--worker-id", "fairy"];
    flags.extend_from_slice(&usi);
    let told = refused_worker(&c, &flags);
    let store_side = format!("`{}` at 200 nodes", builtin());
    assert_names(
        &told,
        &["Fairy-Stockfish", &store_side, "--allow-mixed-engines"],
    );
    c.wait_log("worker refused: another engine or budget", LONG);
    assert_eq!(refusals(&c).len(), 1);
    c.sigterm();
    assert!(c.wait_exit(LONG).success());
    assert_eq!(common::book_len(&db), positions, "nothing stored");

    let mut allowed = vec!["--allow-mixed-engines"];
    allowed.extend_from_slice(&run);
    grow(&db, &allowed, &usi);
    let mixed = thinkers(&db);
    assert_eq!(mixed.len(), 2, "{mixed:?}");
    assert_eq!(mixed[0], grown[0]);
    assert!(
        mixed[1].0.starts_with("Fairy-Stockfish") && mixed[1].0.ends_with(" at 200 nodes"),
        "{mixed:?}"
    );
    assert_eq!(mixed[1].1, 2);
}

/// A store written before budgets were recorded: its engine alone.
fn legacy_store(db: &Path, identity: &str) {
    let mut store = SledStore::open(db).unwrap();
    let id = store.intern_evaluator(identity).unwrap();
    let pos = Position::from_sfen(STARTPOS_SFEN).unwrap();
    let values = vec![0; pos.legal_move_count()];
    store
        .append(&[ThoughtNode {
            key: pos.key(),
            origin: Origin::Sfen(pos.to_sfen_without_ply()),
            ply: 0,
            values,
            depths: None,
            evaluator: id,
            timestamp: 0,
        }])
        .unwrap();
    store.flush().unwrap();
}

#[test]
fn a_store_from_before_budgets_takes_its_engine_once_at_one_budget() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    legacy_store(&db, &builtin());
    // Neither the run's limits nor the worker's budget are refused: the store
    // recorded none.
    grow(&db, &["--think-limit", "2", "--nodes", "200"], &[]);
    let at_200 = format!("{} at 200 nodes", builtin());
    assert_eq!(thinkers(&db), vec![(builtin(), 1), (at_200.clone(), 2)]);
    // From now on the recorded budget binds the engine.
    let mut c = Coord::start(&db, "127.0.0.1:0", &["--think-limit", "2"], &[]);
    let told = refused_worker(&c, &["--nodes", "300", "--worker-id", "late"]);
    assert_names(
        &told,
        &["at 300 nodes", "at 200 nodes", "--allow-mixed-engines"],
    );
    c.sigterm();
    assert!(c.wait_exit(LONG).success());
    assert_eq!(thinkers(&db), vec![(builtin(), 1), (at_200, 2)]);
}

/// Runs `coordinator --db DB --listen 127.0.0.1:0 ARGS...` to its end.
fn run_to_end<S: AsRef<std::ffi::OsStr>>(db: &Path, args: &[S]) -> std::process::Output {
    Command::new(common::EXE)
        .arg("--db")
        .arg(db)
        .args(["--create", "--listen", "127.0.0.1:0"])
        .args(args)
        .env_remove("STERA_TOKEN")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn local_workers_grow_their_store_run_after_run() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    for _ in 0..2 {
        let out = run_to_end(&db, &["--local-workers", "1", "--think-limit", "2"]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert_eq!(
        thinkers(&db),
        vec![(format!("{} at 300000 nodes", builtin()), 4)]
    );
}

/// `coordinator --local-workers N --engine-cmd ...`: the local workers run the
/// engine of the coordinator's engine flags (the worker's own flags, passed on),
/// and the store records that engine at the run's budget.
#[test]
fn local_workers_think_with_the_engine_the_coordinator_names() {
    let engine = crate::games_real::find_engine("fairy-stockfish").unwrap_or_else(|| {
        panic!(
            "fairy-stockfish is not installed (neither on PATH nor in /usr/games): \
             install it with scripts/install-deps.sh (Debian package `fairy-stockfish`)"
        )
    });
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    let mut args: Vec<std::ffi::OsString> = ["--local-workers", "1", "--think-limit", "3"]
        .into_iter()
        .chain(["--depth", "3", "--engine-option", "UCI_Variant=shogi"])
        .map(Into::into)
        .collect();
    args.extend(["--engine-cmd".into(), engine.into_os_string()]);
    let out = run_to_end(&db, &args);
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{log}");
    let thinkers = thinkers(&db);
    assert_eq!(thinkers.len(), 1, "{thinkers:?}");
    let (identity, positions) = &thinkers[0];
    assert!(
        identity.starts_with("Fairy-Stockfish")
            && identity.contains("UCI_Variant=shogi")
            && identity.ends_with(" at depth 3"),
        "{identity}"
    );
    assert!(*positions >= 3, "{thinkers:?}");
}

/// Engine flags the local workers would refuse, or that no local worker would
/// use, stop the coordinator before it makes its store.
#[test]
fn local_workers_engine_flags_that_cannot_work_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    let refused = |args: &[&str]| {
        let out = run_to_end(&db, args);
        assert!(!out.status.success(), "{args:?} ran");
        assert!(!db.exists(), "{args:?} made the store");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let log = refused(&[
        "--engine-cmd",
        "/usr/games/fairy-stockfish",
        "--nodes",
        "1000",
    ]);
    assert!(log.contains("no --local-workers"), "{log}");
    let log = refused(&[
        "--local-workers",
        "1",
        "--engine-cmd",
        "/usr/games/fairy-stockfish",
    ]);
    assert!(log.contains("needs --nodes, --depth or --time-ms"), "{log}");
    let log = refused(&[
        "--local-workers",
        "1",
        "--engine",
        "builtin",
        "--engine-option",
        "Threads=1",
    ]);
    assert!(
        log.contains("bad local workers' engine flags") && log.contains("--engine-option"),
        "{log}"
    );
}
