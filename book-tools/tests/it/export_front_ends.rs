//! Issue 45, point 8: one set of export flags for `book-tools export`, `book-tools
//! remote export` and the coordinator's `--export` (`stera_service::export::
//! ExportFlags`): the same flags give the same bytes from the same store,
//! whichever front end writes the book. Before, `remote export --export-backup
//! softmax --export-temperature 0` silently used a temperature of 50.

use std::process::{Command, Stdio};

use crate::common::{Coordinator, book_tools, sibling_exe, single_root_book};

/// Flag sets, each with the extension of its file.
const FLAG_SETS: [(&[&str], &str); 7] = [
    (&[], "db"),
    // The former spelling, with a warning.
    (
        &["--export-backup", "softmax", "--export-temperature", "0"],
        "db",
    ),
    (
        &[
            "--export-propagation",
            "softmax",
            "--export-temperature",
            "0",
        ],
        "db",
    ),
    (
        &[
            "--export-propagation",
            "softmax",
            "--export-temperature",
            "30",
            "--export-weights",
            "policy",
        ],
        "db",
    ),
    (&["--export-shrink", "--export-leaf-discount", "20"], "db"),
    (&["--export-raw"], "db"),
    (&["--export-format", "ybb"], "ybb"),
];

#[test]
fn local_remote_and_coordinator_exports_with_the_same_flags_are_the_same_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let db = single_root_book(dir.path());
    let exports = dir.path().join("exports");
    std::fs::create_dir(&exports).unwrap();
    let name = |front: &str, i: usize, ext: &str| format!("{front}-{i}.{ext}");

    for (i, (flags, ext)) in FLAG_SETS.iter().enumerate() {
        let out = exports.join(name("local", i, ext));
        let mut args = vec!["export", "--db", &db, "--export", out.to_str().unwrap()];
        args.extend_from_slice(flags);
        let run = book_tools(&args);
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert!(run.status.success(), "{flags:?}: {stderr}");
        if flags.contains(&"--export-backup") {
            assert!(stderr.contains("--export-backup is deprecated"), "{stderr}");
        }
    }

    {
        let (_running, url) =
            Coordinator::start(&["--db", &db, "--export-dir", exports.to_str().unwrap()]);
        for (i, (flags, ext)) in FLAG_SETS.iter().enumerate() {
            let out = name("remote", i, ext);
            let mut args = vec!["remote", "export", "--coordinator", &url, "--export", &out];
            args.extend_from_slice(flags);
            let run = book_tools(&args);
            let stderr = String::from_utf8_lossy(&run.stderr);
            assert!(run.status.success(), "{flags:?}: {stderr}");
            if flags.contains(&"--export-backup") {
                assert!(stderr.contains("--export-backup is deprecated"), "{stderr}");
            }
        }
    }

    // The coordinator's own --export, at the end of a run that thinks nothing.
    let coordinator_sets = [2, 3, 6];
    for i in coordinator_sets {
        let (flags, ext) = FLAG_SETS[i];
        let out = exports.join(name("coordinator", i, ext));
        let run = Command::new(sibling_exe("coordinator"))
            .args(["--db", &db, "--listen", "127.0.0.1:0", "--think-limit", "0"])
            .args(["--export", out.to_str().unwrap()])
            .args(flags)
            .env_remove("STERA_TOKEN")
            .stdout(Stdio::null())
            .output()
            .unwrap();
        assert!(
            run.status.success(),
            "{flags:?}: {}",
            String::from_utf8_lossy(&run.stderr)
        );
    }

    let read = |front: &str, i: usize, ext: &str| {
        std::fs::read(exports.join(name(front, i, ext)))
            .unwrap_or_else(|e| panic!("{front} {i}: {e}"))
    };
    for (i, (flags, ext)) in FLAG_SETS.iter().enumerate() {
        let local = read("local", i, ext);
        assert!(!local.is_empty(), "{flags:?}");
        assert!(
            read("remote", i, ext) == local,
            "{flags:?}: the remote export differs from the local one"
        );
        if coordinator_sets.contains(&i) {
            assert!(
                read("coordinator", i, ext) == local,
                "{flags:?}: the coordinator's --export differs from the local one"
            );
        }
    }
    // The flags reach the book: a temperature of 0 and one of 30 give other
    // books, and the former spelling is the same flag as the new one.
    assert_ne!(read("local", 2, "db"), read("local", 3, "db"));
    assert_eq!(read("remote", 1, "db"), read("remote", 2, "db"));
    assert_ne!(read("local", 0, "db"), read("local", 5, "db"));
}
