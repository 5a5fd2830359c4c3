//! A store cut short is damaged, never a smaller book (issue 26, point 5: no
//! panic inside sled; issue 35, point 1: every opener reports it). A store as
//! `synth` leaves it (many flushed batches, a few MB) has its `db` file cut at
//! many places, with and without sled's `snap.*` files; `stats`, `show`,
//! `export`, `next`, `learn` and `check` each exit non-zero naming the store
//! and the runbook's restore section, and never print a smaller book.
//!
//! This test failed about one run in four before: whether sled reads a cut
//! file as damaged or as a shorter, consistent store depends on where its
//! background threads put the segments (timing), and `stats` of the second kind
//! succeeded. The record of what the store holds (`STERA-WHOLE`) makes both
//! kinds damage, so the outcome no longer depends on the layout. The cuts are
//! taken from one reading of the files: every open (even `check`'s) lets sled
//! rewrite and shorten its `db` file, so a cut computed from one length and
//! applied to a later read is of another file.

use std::path::Path;

use crate::common::{book_tools, ok, s, synth_store};

/// The files of a closed store, read once: every open (even `check`'s) lets
/// sled rewrite and shorten its `db` file, so the cuts are taken from this copy.
fn files_of(store: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(store).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_file() {
            let name = entry.file_name().to_string_lossy().into_owned();
            files.push((name, std::fs::read(entry.path()).unwrap()));
        }
    }
    files
}

/// A store in `to` of `files` with its `db` file cut to `keep` bytes.
fn cut_copy(files: &[(String, Vec<u8>)], to: &Path, keep: usize, with_snapshots: bool) {
    std::fs::create_dir(to).unwrap();
    for (name, bytes) in files {
        if name == "db" {
            std::fs::write(to.join(name), &bytes[..keep]).unwrap();
        } else if with_snapshots || !name.starts_with("snap.") {
            std::fs::write(to.join(name), bytes).unwrap();
        }
    }
}

#[test]
fn a_truncated_store_is_reported_not_panicked() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    synth_store(&db, 12_000, 8);
    // The files as `synth` left them, before any other open.
    let files = files_of(&db);
    let whole = ok(&["check", "--db", s(&db)]);
    assert!(
        whole.contains("whole") && whole.contains("positions 12000"),
        "{whole}"
    );
    let reference = ok(&["stats", "--db", s(&db)]).replace(s(&db), "STORE");
    let len = files.iter().find(|(n, _)| n == "db").unwrap().1.len();
    assert!(len > 1 << 20, "{len}");
    let mut cuts: Vec<usize> = [99, 95, 90, 80, 50, 10]
        .iter()
        .map(|p| len * p / 100)
        .collect();
    cuts.extend([0, 4096, len / 3 + 777, len - 1]);
    let out_file = dir.path().join("out.db2016");
    for keep in cuts {
        for with_snapshots in [true, false] {
            let damaged = dir.path().join(format!("cut-{keep}-{with_snapshots}.db"));
            cut_copy(&files, &damaged, keep, with_snapshots);
            let d = s(&damaged);
            // A cut late in the file may take only bytes sled no longer needs
            // (the unused end of its last segment): then nothing is lost,
            // `check` finds every position, and the book reads exactly as the
            // uncut one. A cut at half the file or earlier always loses data.
            let checked = book_tools(&["check", "--db", d]);
            if checked.status.success() {
                assert!(keep > len / 2, "cut at {keep} of {len} read as whole");
                let text = String::from_utf8_lossy(&checked.stdout);
                assert!(text.contains("positions 12000 "), "cut at {keep}: {text}");
                let stats = ok(&["stats", "--db", d]).replace(d, "STORE");
                assert_eq!(stats, reference, "cut at {keep} of {len}");
                continue;
            }
            for args in [
                vec!["stats", "--db", d],
                vec!["show", "--db", d, "startpos"],
                vec!["export", "--db", d, "--out", s(&out_file)],
                vec!["next", "--db", d, "3"],
                vec!["learn", "--db", d, "--games", "1", "--nodes", "100"],
                vec!["check", "--db", d],
            ] {
                let what = format!(
                    "{args:?} cut at {keep} of {len}; check said: {}{}",
                    String::from_utf8_lossy(&checked.stdout),
                    String::from_utf8_lossy(&checked.stderr)
                );
                let out = book_tools(&args);
                let err = String::from_utf8_lossy(&out.stderr);
                assert!(!out.status.success(), "{what}: {err}");
                assert_ne!(out.status.code(), Some(101), "{what}: {err}");
                assert!(!err.contains("panicked"), "{what}: {err}");
                assert!(err.contains(d), "{what}: {err}");
                assert!(
                    err.contains("damaged")
                        && err.contains("deploy/README.md")
                        && err.contains("Back up and restore the store"),
                    "{what}: {err}"
                );
                assert!(!out_file.exists(), "{what}: an export was written");
            }
        }
    }
}

/// `check` names what is missing: a store whose record says more than it holds.
#[test]
fn check_says_what_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let small = dir.path().join("small.db");
    let large = dir.path().join("large.db");
    ok(&["synth", "--db", s(&small), "--positions", "300"]);
    ok(&["synth", "--db", s(&large), "--positions", "500"]);
    // The record of the larger store beside the smaller one's files: as a
    // restore that mixed two copies would leave it.
    std::fs::copy(
        large.join(stera_book::RECORD_FILE),
        small.join(stera_book::RECORD_FILE),
    )
    .unwrap();
    let out = book_tools(&["check", "--db", s(&small)]);
    assert!(!out.status.success());
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("positions: 300 of 500"), "{text}");
    assert!(text.contains("deploy/README.md"), "{text}");
    // The other openers refuse it with the same words.
    let err =
        String::from_utf8_lossy(&book_tools(&["stats", "--db", s(&small)]).stderr).into_owned();
    assert!(
        err.contains("positions: 300 of 500") && err.contains("damaged"),
        "{err}"
    );
}
