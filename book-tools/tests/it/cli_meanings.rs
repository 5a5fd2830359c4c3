//! Issue 43, "one vocabulary, for real": a flag shared by several binaries has
//! one default and one meaning of each value in all of them, read from every
//! `--help` and checked by real runs; and the messages that named a flag or an
//! engine wrongly name the right one.

use crate::cli_vocabulary::{binaries, commands, help_of};
use crate::common::{Dir, book_tools, fails, ok, s, sibling_exe, single_root_book};

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// Each help page's entry of `flag` (its lines up to the next flag), by page.
fn entries_of(flag: &str) -> BTreeMap<String, String> {
    let mut found = BTreeMap::new();
    for exe in binaries() {
        let name = exe.file_name().unwrap().to_string_lossy().into_owned();
        for path in commands(&exe) {
            let words: Vec<&str> = path.iter().map(String::as_str).collect();
            let help = help_of(&exe, &words);
            let Some((_, after)) = help.split_once(&format!("      {flag} ")) else {
                continue;
            };
            // Up to the next flag (`      --x` or `  -h, --help`).
            let entry: Vec<&str> = std::iter::once(after.lines().next().unwrap_or(""))
                .chain(
                    after
                        .lines()
                        .skip(1)
                        .take_while(|l| !l.trim_start().starts_with('-')),
                )
                .collect();
            let entry = entry.join(" ");
            let page = std::iter::once(name.as_str())
                .chain(words.iter().copied())
                .collect::<Vec<_>>()
                .join(" ");
            found.insert(page, entry.split_whitespace().collect::<Vec<_>>().join(" "));
        }
    }
    found
}

/// The `[default: X]` of an entry, `none` without one.
fn default_in(entry: &str) -> String {
    entry
        .split_once("[default: ")
        .and_then(|(_, d)| d.split_once(']'))
        .map_or("none".to_owned(), |(d, _)| d.to_owned())
}

/// Defaults that mean the same are the same in every binary that has the
/// flag: the seeds of games, adjudication, the three temperatures, learning
/// concurrency, the coordinator's URL.
#[test]
fn the_same_flag_has_the_same_default_everywhere() {
    let expected: &[(&str, usize, &str)] = &[
        ("--adjudicate-cp", 2, "0"),
        ("--adjudicate-plies", 2, "8"),
        ("--status-every-secs", 2, "60"),
        ("--ply-limit", 3, "320"),
        ("--prior-games", 5, "4"),
        ("--play-seed", 2, "1"),
        ("--learn-seed", 2, "1"),
        ("--select-temperature", 3, "50"),
        ("--export-temperature", 4, "50"),
        ("--play-temperature", 2, "50"),
        ("--learn-concurrency", 2, "1"),
        ("--coordinator", 4, "http://127.0.0.1:50051"),
    ];
    let mut wrong = Vec::new();
    for &(flag, pages, default) in expected {
        let mut entries = entries_of(flag);
        // `match --coordinator` switches to the cluster, so it has no default
        // URL; given bare it takes the same as the others (checked below).
        if flag == "--coordinator" {
            entries.remove("book-tools match");
        }
        let defaults: BTreeMap<&String, String> =
            entries.iter().map(|(p, e)| (p, default_in(e))).collect();
        if entries.len() < pages || defaults.values().any(|d| d != default) {
            wrong.push(format!(
                "{flag} (want {default} on {pages}+ pages): {defaults:?}"
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    let bare = &entries_of("--coordinator")["book-tools match"];
    assert!(
        bare.contains("Given without a URL")
            && bare.contains("STERA_COORDINATOR, else http://127.0.0.1:50051"),
        "{bare}"
    );
}

/// One help text for one concept wherever it appears.
#[test]
fn one_concept_has_one_help_text() {
    for (flag, pages) in [("--tls-ca", 5), ("--node-jitter", 2), ("--nodes", 2)] {
        let mut entries = entries_of(flag);
        if flag == "--nodes" {
            // A game's budget is per move (`match`, `learn`); the worker's,
            // `evaluate`'s and the coordinator's is a think job's.
            entries.retain(|page, _| page == "book-tools match" || page == "book-tools learn");
            for text in entries.values() {
                assert!(
                    text.contains("per move") && !text.contains("whole position"),
                    "{text}"
                );
            }
        }
        let texts: std::collections::BTreeSet<&String> = entries.values().collect();
        assert!(entries.len() >= pages, "{flag}: {entries:?}");
        assert_eq!(
            texts.len(),
            1,
            "{flag} has {} texts: {entries:#?}",
            texts.len()
        );
    }
    // The book side's jitter of the coordinator's learning games has a flag,
    // with the default of `learn`'s with a node limit.
    let coordinator = &entries_of("--learn-node-jitter")["coordinator"];
    assert_eq!(default_in(coordinator), "0.5", "{coordinator}");
    // Learning games at once: one name and one default.
    assert!(!entries_of("--concurrency").contains_key("book-tools learn"));
    // The book file: `--export FILE` in all three, no `--out` for it.
    let export = entries_of("--export");
    for page in [
        "coordinator",
        "book-tools export",
        "book-tools remote export",
    ] {
        assert!(export[page].starts_with("<FILE>"), "{page}: {export:?}");
    }
    // How an export backs values up is not named like the store backups.
    assert_eq!(entries_of("--export-propagation").len(), 3);
    assert!(entries_of("--export-backup").is_empty());
    // `--json`: an optional value in both.
    let json = entries_of("--json");
    for page in ["book-tools match", "book-tools remote status"] {
        assert!(json[page].starts_with("[<FILE>]"), "{page}: {json:?}");
    }
}

/// `book-tools export` without a temperature and with any other backup is
/// minimax; the same file as `--export-propagation softmax
/// --export-temperature 0` written by `export` and by the coordinator (whose
/// 0 was "the default, 50").
#[test]
fn a_temperature_of_0_is_minimax_for_every_export() {
    let dir = Dir::new();
    let db = single_root_book(&dir.path(""));
    // One count field for all (a softmax export's default weights are its
    // policy): the values are what is compared.
    let minimax = dir.path("minimax.db");
    ok(&[
        "export",
        "--db",
        &db,
        "--export",
        s(&minimax),
        "--export-weights",
        "one",
    ]);
    let zero = [
        "--export-propagation",
        "softmax",
        "--export-temperature",
        "0",
        "--export-weights",
        "one",
    ];
    let offline = dir.path("offline.db");
    let mut args = vec!["export", "--db", &db, "--export", s(&offline)];
    args.extend(zero);
    ok(&args);
    let warm = dir.path("warm.db");
    let mut args = vec!["export", "--db", &db, "--export", s(&warm)];
    args.extend(["--export-propagation", "softmax", "--export-weights", "one"]);
    ok(&args);
    let read = |p: &Path| std::fs::read(p).unwrap();
    assert!(
        read(&offline) == read(&minimax),
        "softmax at 0 is not minimax"
    );
    assert!(read(&warm) != read(&minimax), "the test cannot fail");
    // The coordinator's end-of-run export, nothing thought.
    let coordinator = dir.path("coordinator.db");
    let run = Command::new(sibling_exe("coordinator"))
        .args(["--db", &db, "--listen", "127.0.0.1:0", "--think-limit", "0"])
        .args(["--export", s(&coordinator)])
        .args(zero)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(
        read(&coordinator) == read(&minimax),
        "the coordinator's softmax at 0 is not minimax"
    );
}

/// `--select-temperature 0` takes the best move, which is `--select
/// alphabeta`: the same positions listed (it was refused).
#[test]
fn a_selection_temperature_of_0_is_the_best_line() {
    let dir = Dir::new();
    let db = single_root_book(&dir.path(""));
    let best = ok(&["next", "--db", &db, "6"]);
    let zero = ok(&[
        "next",
        "--db",
        &db,
        "6",
        "--select",
        "softmax",
        "--select-temperature",
        "0",
    ]);
    assert_eq!(zero, best);
    assert!(!best.is_empty());
}

/// `match --adjudicate-cp 0` means never, as in the coordinator (it was
/// refused); `learn` without `--nodes` plays 1,000 nodes a move with the
/// default jitter (it failed asking for `--node-jitter 0`); a bare `--json`
/// is standard output in `match` as in `remote status`.
#[test]
fn values_mean_the_same_in_real_runs() {
    let dir = Dir::new();
    let db = single_root_book(&dir.path(""));
    let out = ok(&[
        "match",
        "--db",
        &db,
        "--games",
        "2",
        "--nodes",
        "60",
        "--ply-limit",
        "40",
        "--max-repeats",
        "1",
        "--adjudicate-cp",
        "0",
        "--json",
    ]);
    let json: serde_json::Value = serde_json::from_str(&out).expect("JSON on stdout");
    assert_eq!(json["games"], 2, "{out}");
    let run = book_tools(&[
        "learn",
        "--db",
        &db,
        "--learn-games",
        "2",
        "--ply-limit",
        "40",
    ]);
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{err}");
    assert!(err.contains("at 1000 nodes"), "{err}");
}

/// A bare `match --coordinator` reaches STERA_COORDINATOR, as the worker and
/// `remote` do; the error says its connection failure once.
#[test]
fn match_coordinator_takes_the_same_default_and_says_an_error_once() {
    let dir = Dir::new();
    let db = single_root_book(&dir.path(""));
    let nowhere = "http://127.0.0.1:1";
    for args in [
        vec!["match", "--db", &db, "--games", "2", "--coordinator"],
        vec!["remote", "status"],
    ] {
        let run = Command::new(env!("CARGO_BIN_EXE_book-tools"))
            .args(&args)
            .env("STERA_COORDINATOR", nowhere)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&run.stderr);
        assert!(!run.status.success(), "{args:?}: {err}");
        assert!(err.contains(nowhere), "{args:?}: {err}");
        assert_eq!(
            err.matches("tcp connect error").count(),
            1,
            "{args:?}: {err}"
        );
    }
}

/// Messages name today's flags: the opponent's USI engine without a command,
/// and `show`'s note on the weights.
#[test]
fn messages_name_the_flag_that_was_meant() {
    let dir = Dir::new();
    let db = single_root_book(&dir.path(""));
    let err = fails(&[
        "match",
        "--db",
        &db,
        "--opponent-engine",
        "usi",
        "--games",
        "2",
    ]);
    assert!(
        err.contains("--opponent-engine usi needs --opponent-engine-cmd"),
        "{err}"
    );
    let shown = ok(&["show", "--db", &db, "startpos"]);
    assert!(shown.contains("--export-weights"), "{shown}");
    assert!(!shown.contains("export --weights"), "{shown}");
}

/// `match` against the opponent the store learned against says it measured a
/// training score, and how to get the no-book baseline, which runs; against
/// another budget it says nothing of the kind.
#[test]
fn a_match_against_a_learning_opponent_is_a_training_score() {
    let dir = Dir::new();
    let db = single_root_book(&dir.path(""));
    ok(&[
        "learn",
        "--db",
        &db,
        "--learn-games",
        "2",
        "--ply-limit",
        "40",
        "--nodes",
        "100",
    ]);
    let play = |nodes: &str, extra: &[&str]| {
        let mut args = vec!["match", "--db", &db, "--games", "2", "--ply-limit", "40"];
        args.extend(["--max-repeats", "1", "--nodes", nodes]);
        args.extend(extra);
        ok(&args)
    };
    let trained = play("100", &[]);
    let note = trained
        .lines()
        .find(|l| l.starts_with("training score: "))
        .unwrap_or_else(|| panic!("no training note: {trained}"));
    assert!(
        note.contains("learning opponent 1") && note.contains("--book-max-ply 0"),
        "{note}"
    );
    let baseline = play("100", &["--book-max-ply", "0"]);
    assert!(!baseline.contains("training score"), "{baseline}");
    assert!(baseline.contains("wins: "), "{baseline}");
    let other = play("150", &[]);
    assert!(!other.contains("training score"), "{other}");
}
