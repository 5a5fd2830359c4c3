//! Issue 28, item 3 and issue 36, point 3: one vocabulary across the three
//! binaries (ARCHITECTURE.md, "One vocabulary"), and a `--help` that says what
//! every optional flag does when it is not given. Former spellings stay
//! accepted (hidden aliases that warn), so scripts and deployments keep
//! working.

use crate::common::{Dir, book_tools, fails, ok, s, sibling_exe};

use std::path::Path;
use std::process::Command;

/// Words by which a flag's help says what happens without it (besides clap's
/// own `[default: ...]`).
const ABSENCE_WORDS: &[&str] = &[
    "default",
    "without it",
    "not given",
    "else ",
    "required",
    "none",
];

/// One flag of a `--help` page that takes a value, is optional, and whose help
/// says nothing of its absence: `(flag, help)`.
fn undocumented_absences(help: &str) -> (usize, Vec<(String, String)>) {
    let usage = help
        .lines()
        .find_map(|l| l.strip_prefix("Usage: "))
        .unwrap_or_default();
    // Required flags are the ones the usage line shows outside brackets.
    let mut depth = 0;
    let required: String = usage
        .chars()
        .filter(|&c| {
            match c {
                '[' => depth += 1,
                ']' => depth -= 1,
                _ => {}
            }
            depth == 0 && c != ']'
        })
        .collect();
    let Some((_, options)) = help.split_once("\nOptions:\n") else {
        return (0, Vec::new());
    };
    let mut entries: Vec<Vec<&str>> = Vec::new();
    for line in options.lines() {
        if line.starts_with("  -") || line.starts_with("      --") {
            entries.push(vec![line]);
        } else if let Some(entry) = entries.last_mut() {
            entry.push(line);
        }
    }
    let (mut checked, mut missing) = (0, Vec::new());
    for entry in entries {
        let head = entry[0].trim_start();
        let head = head.split_once(", ").map_or(head, |(_, long)| long);
        let Some(spec) = head.strip_prefix("--") else {
            continue;
        };
        let name_end = spec.find(' ').unwrap_or(spec.len());
        let (name, rest) = spec.split_at(name_end);
        if !rest.starts_with(" <") || required.contains(&format!("--{name} <")) {
            continue;
        }
        let body =
            rest[rest.find('>').map_or(0, |i| i + 1)..].to_owned() + " " + &entry[1..].join(" ");
        let text = body.to_lowercase();
        checked += 1;
        if !text.contains("[default: ") && !ABSENCE_WORDS.iter().any(|w| text.contains(w)) {
            missing.push((
                format!("--{name}"),
                body.split_whitespace().collect::<Vec<_>>().join(" "),
            ));
        }
    }
    (checked, missing)
}

pub(crate) fn help_of(exe: &Path, path: &[&str]) -> String {
    let out = Command::new(exe)
        .args(path)
        .arg("--help")
        .output()
        .expect("run --help");
    assert!(
        out.status.success(),
        "{} {path:?} --help failed",
        exe.display()
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Every subcommand path of a binary, the binary itself first.
pub(crate) fn commands(exe: &Path) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    let mut todo = vec![Vec::<String>::new()];
    while let Some(path) = todo.pop() {
        let words: Vec<&str> = path.iter().map(String::as_str).collect();
        let help = help_of(exe, &words);
        if let Some((_, list)) = help.split_once("\nCommands:\n") {
            for line in list.lines().take_while(|l| !l.is_empty()) {
                let Some(name) = line.strip_prefix("  ").and_then(|l| l.split(' ').next()) else {
                    continue;
                };
                if !name.is_empty() && name != "help" {
                    let mut sub = path.clone();
                    sub.push(name.to_owned());
                    todo.push(sub);
                }
            }
        }
        found.push(path);
    }
    found
}

#[test]
fn the_checker_finds_a_flag_that_says_nothing_of_its_absence() {
    let help = "Usage: x [OPTIONS] --db <DB>\n\nOptions:\n      --db <DB>\n          The store\n\n      \
                --out <FILE>\n          Where to write\n\n      --json <FILE>  Also as JSON. Default: no JSON\n      \
                --quiet\n          Say less\n";
    let (checked, missing) = undocumented_absences(help);
    assert_eq!(checked, 2);
    assert_eq!(missing, [("--out".to_owned(), "Where to write".to_owned())]);
}

/// `--help` of every subcommand of the coordinator, the worker and book-tools:
/// each optional flag that takes a value says what happens without it.
#[test]
fn every_optional_flag_says_what_its_absence_means() {
    let mut checked = 0;
    let mut missing = Vec::new();
    for exe in [
        Path::new(env!("CARGO_BIN_EXE_book-tools")).to_owned(),
        sibling_exe("coordinator"),
        sibling_exe("worker"),
    ] {
        for path in commands(&exe) {
            let words: Vec<&str> = path.iter().map(String::as_str).collect();
            let (n, gaps) = undocumented_absences(&help_of(&exe, &words));
            checked += n;
            let name = exe.file_name().unwrap().to_string_lossy().into_owned();
            missing.extend(
                gaps.into_iter()
                    .map(|(flag, body)| format!("{name} {} {flag}: {body}", path.join(" "))),
            );
        }
    }
    assert!(
        checked > 100,
        "only {checked} flags found: is the help parsed?"
    );
    assert!(
        missing.is_empty(),
        "flags whose help does not say what their absence means:\n{}",
        missing.join("\n")
    );
}

/// A small synthetic store at `dir/db`, with its run configuration.
fn store(dir: &Dir) -> std::path::PathBuf {
    let db = dir.path("db");
    ok(&[
        "synth",
        "--db",
        s(&db),
        "--positions",
        "300",
        "--batch",
        "8",
    ]);
    db
}

/// `next --softmax-temperature T` (its former spelling) lists what
/// `next --select softmax --select-temperature T` lists, the coordinator's flags.
#[test]
fn next_takes_the_coordinators_selection_flags_and_its_former_one() {
    let dir = Dir::new();
    let db = store(&dir);
    let db = s(&db);
    let new = ok(&[
        "next",
        "--db",
        db,
        "8",
        "--select",
        "softmax",
        "--select-temperature",
        "30",
        "--select-seed",
        "3",
    ]);
    let old = ok(&[
        "next",
        "--db",
        db,
        "8",
        "--softmax-temperature",
        "30",
        "--select-seed",
        "3",
    ]);
    assert_eq!(new, old);
    assert!(new.lines().count() >= 2, "{new}");
    let err = fails(&["next", "--db", db, "8", "--select-temperature", "30"]);
    assert!(
        err.contains("--select-temperature applies only to --select softmax"),
        "{err}"
    );
    let err = fails(&[
        "next",
        "--db",
        db,
        "8",
        "--softmax-temperature",
        "30",
        "--select",
        "softmax",
    ]);
    assert!(err.contains("cannot be used with"), "{err}");
}

/// `--time-ms` is the time flag of every binary; `--byoyomi` and `--time` (its
/// former spellings in the worker and book-tools) still parse.
#[test]
fn the_time_limit_has_one_name_and_keeps_its_former_ones() {
    for flag in ["--time-ms", "--byoyomi", "--time"] {
        let out = ok(&["evaluate", "startpos", flag, "30"]);
        assert!(out.contains("7g7f"), "{flag}: {out}");
    }
    for exe in [sibling_exe("coordinator"), sibling_exe("worker")] {
        let help = help_of(&exe, &[]);
        assert!(help.contains("--time-ms <"), "{}", exe.display());
    }
    let run = book_tools(&["evaluate", "startpos", "--byoyomi-ms", "30"]);
    assert_eq!(
        run.status.code(),
        Some(2),
        "an unknown flag is still refused"
    );
}

/// `bench select` takes the coordinator's selection flags too; `--softmax T`,
/// its former spelling, still measures the softmax selection with its former
/// seed (`--seed`).
#[test]
fn bench_select_takes_the_selection_flags_and_its_former_one() {
    let dir = Dir::new();
    let db = store(&dir);
    let bench = |extra: &[&str]| {
        let mut args = vec![
            "bench",
            "select",
            "--db",
            s(&db),
            "--count",
            "4",
            "--in-flight",
            "4",
            "--batch",
            "2",
        ];
        args.extend_from_slice(extra);
        let run = book_tools(&args);
        let err = String::from_utf8_lossy(&run.stderr).into_owned();
        assert!(run.status.success(), "{args:?}: {err}");
        err
    };
    let old = bench(&["--softmax", "40", "--seed", "5"]);
    assert!(old.contains("selection: softmax T=40 seed=5"), "{old}");
    let new = bench(&[
        "--select",
        "softmax",
        "--select-temperature",
        "40",
        "--select-seed",
        "5",
    ]);
    assert!(new.contains("selection: softmax T=40 seed=5"), "{new}");
    assert!(!bench(&[]).contains("selection: softmax"));
}

/// Issue 36, point 4: help text without broken spacing. A help string continued
/// with `\` inside an indented literal carried the next line's indentation into
/// the text (`games, in                  games`).
#[test]
fn help_texts_have_no_runs_of_spaces() {
    let mut broken = Vec::new();
    for exe in [
        Path::new(env!("CARGO_BIN_EXE_book-tools")).to_owned(),
        sibling_exe("coordinator"),
        sibling_exe("worker"),
    ] {
        let name = exe.file_name().unwrap().to_string_lossy().into_owned();
        for path in commands(&exe) {
            let words: Vec<&str> = path.iter().map(String::as_str).collect();
            // Long help puts each flag's text on lines of its own, indented by
            // 10: inside them nothing is aligned.
            for line in help_of(&exe, &words).lines() {
                let text = line.trim_start();
                // clap aligns the descriptions of possible values (`- usi:   ...`).
                let value_list = text.starts_with("- ") && text.contains(":  ");
                if line.starts_with("          ") && !value_list && text.contains("   ") {
                    broken.push(format!("{name} {}: {}", path.join(" "), line.trim()));
                }
            }
        }
    }
    assert!(
        broken.is_empty(),
        "help lines with runs of spaces:\n{}",
        broken.join("\n")
    );
}

// Issue 36, point 3: one vocabulary. The rule and the table are in
// ARCHITECTURE.md, "One vocabulary"; these tests hold the help pages to them.

/// The three binaries.
pub(crate) fn binaries() -> Vec<std::path::PathBuf> {
    vec![
        Path::new(env!("CARGO_BIN_EXE_book-tools")).to_owned(),
        sibling_exe("coordinator"),
        sibling_exe("worker"),
    ]
}

/// The long flags of a `--help` page with the name of their value (`None`
/// for a switch).
fn flags_of(help: &str) -> Flags {
    let Some((_, options)) = help.split_once("\nOptions:\n") else {
        return Vec::new();
    };
    options
        .lines()
        .filter(|l| l.starts_with("  -") || l.starts_with("      --"))
        .filter_map(|line| {
            let head = line.trim_start();
            let head = head.split_once(", ").map_or(head, |(_, long)| long);
            let spec = head.strip_prefix("--")?;
            let name_end = spec.find([' ', '\t']).unwrap_or(spec.len());
            let (name, rest) = spec.split_at(name_end);
            // `<X>`, or `[<X>]` for a value that may be left out.
            let value = rest
                .strip_prefix(" <")
                .or_else(|| rest.strip_prefix(" [<"))
                .and_then(|v| v.split_once('>'))
                .map(|(v, _)| v.to_owned());
            Some((format!("--{name}"), value))
        })
        .collect()
}

/// The long flags of one help page with their value names.
type Flags = Vec<(String, Option<String>)>;

/// Every help page: `(binary and subcommand, its flags)`, e.g. `("book-tools
/// bench select", [...])`, `("coordinator", [...])`.
fn every_page() -> Vec<(String, Flags)> {
    let mut pages = Vec::new();
    for exe in binaries() {
        let name = exe.file_name().unwrap().to_string_lossy().into_owned();
        for path in commands(&exe) {
            let words: Vec<&str> = path.iter().map(String::as_str).collect();
            let page = std::iter::once(name.as_str())
                .chain(words.iter().copied())
                .collect::<Vec<_>>()
                .join(" ");
            pages.push((page, flags_of(&help_of(&exe, &words))));
        }
    }
    pages
}

#[test]
fn the_flag_parser_reads_names_and_values() {
    let help = "Usage: x\n\nOptions:\n      --db <DB>\n          The store\n  -q, --quiet  Say less\n      \
                --select-temperature <CP>\n          T\n";
    assert_eq!(
        flags_of(help),
        [
            ("--db".to_owned(), Some("DB".to_owned())),
            ("--quiet".to_owned(), None),
            ("--select-temperature".to_owned(), Some("CP".to_owned())),
        ]
    );
}

/// One flag, one kind of value: a flag that names its value two ways (`--db
/// <DB>` and `--db <DIR>`, `--nodes <N>` and `--nodes <NODES>`) or is a switch
/// here and takes a value there is one concept spelled two ways.
#[test]
fn each_flag_names_its_value_one_way_in_every_binary() {
    let mut seen: std::collections::BTreeMap<String, Vec<(Option<String>, String)>> =
        std::collections::BTreeMap::new();
    for (page, flags) in every_page() {
        for (flag, value) in flags {
            seen.entry(flag).or_default().push((value, page.clone()));
        }
    }
    assert!(
        seen.len() > 100,
        "only {} flags: is the help parsed?",
        seen.len()
    );
    let mut two_ways = Vec::new();
    for (flag, uses) in &seen {
        let values: std::collections::BTreeSet<_> = uses.iter().map(|(v, _)| v).collect();
        if values.len() > 1 {
            two_ways.push(format!("{flag}: {uses:?}"));
        }
    }
    assert!(
        two_ways.is_empty(),
        "flags with two kinds of value:\n{}",
        two_ways.join("\n")
    );
    // The node budgets, the store and the centipawns by their one name.
    for (flag, value) in [
        ("--nodes", "NODES"),
        ("--play-nodes", "NODES"),
        ("--learn-nodes", "NODES"),
        ("--opponent-nodes", "NODES"),
        ("--db", "DB"),
        ("--against", "DB"),
        ("--select-temperature", "CP"),
        ("--export-temperature", "CP"),
        ("--play-temperature", "CP"),
        ("--select-leaf-discount", "CP"),
        ("--export-leaf-discount", "CP"),
    ] {
        let uses = &seen[flag];
        assert!(
            uses.iter().all(|(v, _)| v.as_deref() == Some(value)),
            "{flag}: {uses:?}"
        );
    }
}

/// Spellings that no help page shows any more (each is a hidden alias that
/// warns): anywhere, or on the pages named.
const FORMER: &[(&str, &[&str])] = &[
    ("--temperature", &[]),
    ("--leaf-discount", &[]),
    ("--backup", &[]),
    ("--weights", &[]),
    ("--format", &[]),
    ("--shrink", &[]),
    ("--raw", &[]),
    ("--by-results", &[]),
    ("--export-prior-games", &[]),
    ("--games-out", &[]),
    ("--summary-secs", &[]),
    ("--byoyomi", &[]),
    ("--time", &[]),
    ("--games", &["coordinator", "book-tools learn"]),
    ("--nodes", &["book-tools export", "book-tools synth"]),
    ("--seed", &["book-tools match", "book-tools learn"]),
    ("--eval-diff", &["book-tools learn"]),
    ("--out", &["book-tools export", "book-tools remote export"]),
    ("--export-backup", &[]),
    ("--openings", &["book-tools learn"]),
    ("--concurrency", &["book-tools learn"]),
    ("--stop-when-settled", &[]),
    ("--opponent", &["book-tools learn"]),
];

/// A spelling that means one thing: where each of these may appear, and no
/// other page (`--seed` is the synthetic evaluator's, `--eval-diff`
/// YaneuraOu's BookEvalDiff in `match`).
const ONE_PLACE: &[(&str, &[&str])] = &[
    ("--seed", &["book-tools synth", "book-tools bench select"]),
    ("--eval-diff", &["book-tools match"]),
    ("--first-positions", &["book-tools export"]),
    ("--positions", &["book-tools synth"]),
    ("--learn-window", &["book-tools learn", "coordinator"]),
];

#[test]
fn no_help_shows_a_former_spelling_and_a_spelling_means_one_thing() {
    let pages = every_page();
    let mut wrong = Vec::new();
    for (page, flags) in &pages {
        for (flag, _) in flags {
            for (former, only) in FORMER {
                if flag == former && (only.is_empty() || only.contains(&page.as_str())) {
                    wrong.push(format!("{page}: former spelling {flag}"));
                }
            }
            for (spelling, places) in ONE_PLACE {
                if flag == spelling && !places.contains(&page.as_str()) {
                    wrong.push(format!("{page}: {flag} belongs to {places:?} only"));
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The flags a help text names in its prose (`--select softmax`, "unless
/// --export-format says otherwise") are flags of today: a description that still
/// names a former spelling sends the reader to a flag no page lists. A former
/// spelling may appear only where the text says it is one ("Formerly").
/// `--weight` and `--engine-id` are flags inside the quoted
/// `--learn-opponent`/`--opponent` value, and `--opponent-` a prefix.
#[test]
fn help_prose_names_only_flags_of_today() {
    let mut texts = Vec::new();
    for exe in binaries() {
        let name = exe.file_name().unwrap().to_string_lossy().into_owned();
        for path in commands(&exe) {
            let words: Vec<&str> = path.iter().map(String::as_str).collect();
            texts.push((format!("{name} {}", path.join(" ")), help_of(&exe, &words)));
        }
    }
    let today: std::collections::BTreeSet<String> = every_page()
        .into_iter()
        .flat_map(|(_, flags)| flags.into_iter().map(|(flag, _)| flag))
        .collect();
    let mut stale = Vec::new();
    for (page, help) in &texts {
        for line in help.lines() {
            let prose = match line.trim_start().strip_prefix("--") {
                // A flag's own line: its name, then its value name.
                Some(_) => continue,
                None => line,
            };
            if prose.contains("ormerly") {
                continue;
            }
            let mut rest = prose;
            while let Some(at) = rest.find("--") {
                let word: String = rest[at + 2..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                    .collect();
                rest = &rest[at + 2 + word.len()..];
                let flag = format!("--{word}");
                let known = word.is_empty()
                    || word.ends_with('-')
                    || word == "weight"
                    || word == "engine-id";
                if !known && !today.contains(&flag) {
                    stale.push(format!("{page}: {flag} in `{}`", prose.trim()));
                }
            }
        }
    }
    assert!(stale.is_empty(), "{}", stale.join("\n"));
}

/// Every flag that the table of ARCHITECTURE.md ("One vocabulary") names as a
/// flag of today is on some help page, and none it names as former is.
#[test]
fn the_vocabulary_table_is_what_the_help_pages_show() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../ARCHITECTURE.md"))
        .unwrap();
    let section = doc
        .split_once("## One vocabulary")
        .expect("the section")
        .1
        .split("\n## ")
        .next()
        .unwrap();
    let shown: std::collections::BTreeSet<String> = every_page()
        .into_iter()
        .flat_map(|(_, flags)| flags.into_iter().map(|(f, _)| f))
        .collect();
    let flags_in = |cell: &str| -> Vec<String> {
        cell.split('`')
            .skip(1)
            .step_by(2)
            .flat_map(|code| code.split_whitespace())
            .filter(|w| w.starts_with("--"))
            .map(|w| w.trim_end_matches(',').to_owned())
            .collect()
    };
    let mut rows = 0;
    for row in section
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| Concept"))
    {
        let cells: Vec<&str> = row.split('|').collect();
        let (today, former) = (cells[2..5].join(" "), cells[5]);
        rows += 1;
        for flag in flags_in(&today) {
            assert!(
                shown.contains(&flag),
                "{flag} of the table is on no help page: {row}"
            );
        }
        // A former spelling is gone from every page unless the row names the
        // command it was in (`export --nodes`), which FORMER checks.
        for code in former.split('`').skip(1).step_by(2) {
            if code.starts_with("--") {
                assert!(!shown.contains(code), "{code} is former but shown: {row}");
            }
        }
    }
    assert!(rows >= 20, "only {rows} rows read");
}

/// `--out-games` chooses its format by extension, in `match` as in the
/// coordinator: `.csa` CSA, anything else one USI line per game.
#[test]
fn match_out_games_follows_the_extension() {
    let dir = Dir::new();
    let db = store(&dir);
    let play = |name: &str| {
        let games = dir.path(name);
        ok(&[
            "match",
            "--db",
            s(&db),
            "--games",
            "2",
            "--nodes",
            "100",
            "--ply-limit",
            "40",
            "--out-games",
            s(&games),
        ]);
        std::fs::read_to_string(&games).unwrap()
    };
    let lines = play("games.txt");
    let lines: Vec<&str> = lines.lines().collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    for line in &lines {
        let (game, result) = line.split_once('\t').expect("a tab before the result");
        assert!(
            game.starts_with("sfen ") && game.contains(" moves "),
            "{line}"
        );
        assert!(result.contains(" by "), "{line}");
    }
    let csa = play("games.CSA");
    assert!(csa.starts_with("V2"), "{csa}");
    assert_eq!(csa.matches("\n/\n").count(), 1, "{csa}");
}
