//! Issue 28, item 3: one vocabulary across the three binaries, and a `--help`
//! that says what every optional flag does when it is not given. Former
//! spellings stay accepted (hidden aliases), so scripts and deployments keep
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

fn help_of(exe: &Path, path: &[&str]) -> String {
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
fn commands(exe: &Path) -> Vec<Vec<String>> {
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
    ok(&["synth", "--db", s(&db), "--nodes", "300", "--batch", "8"]);
    db
}

/// `next --softmax-temperature T` (its former spelling) lists what
/// `next --select softmax --temperature T` lists, the coordinator's flags.
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
        "--temperature",
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
    let err = fails(&["next", "--db", db, "8", "--temperature", "30"]);
    assert!(
        err.contains("--temperature applies only to --select softmax"),
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
        "--temperature",
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
