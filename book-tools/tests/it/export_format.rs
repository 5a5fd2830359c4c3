//! Issue 28, item 1: the format of an export follows its path's extension
//! (`.ybb` YaneuraOu's binary book, anything else its text book) in every front
//! end, and an explicit `--format` that the extension contradicts is refused
//! before any work. `book-tools export --out x.ybb` used to write a text book.

use crate::common::{Dir, book_tools, ok, raw_book, s};

use stera_formats::ybb::{MAGIC, YbbReader};

const TEXT_MAGIC: &[u8] = b"#YANEURAOU-DB2016";

/// A small store at `dir/db`.
fn store(dir: &Dir) -> std::path::PathBuf {
    let db = dir.path("db");
    let lines: Vec<&[&str]> = vec![&["7g7f", "3c3d"], &["2g2f"]];
    std::fs::write(dir.path("in.db"), raw_book(&lines, |_, i| i as i32 - 20)).unwrap();
    ok(&["import", "--create", "--db", s(&db), s(&dir.path("in.db"))]);
    db
}

#[test]
fn the_format_follows_the_extension() {
    let dir = Dir::new();
    let db = store(&dir);
    let (ybb, text) = (dir.path("x.ybb"), dir.path("x.db"));
    ok(&["export", "--db", s(&db), "--out", s(&ybb)]);
    ok(&["export", "--db", s(&db), "--out", s(&text)]);
    let binary = std::fs::read(&ybb).unwrap();
    assert!(
        binary.starts_with(MAGIC),
        "{:?}",
        &binary[..16.min(binary.len())]
    );
    let entries = YbbReader::open(&ybb).unwrap().count();
    assert!(entries >= 4, "{entries} entries");
    assert!(std::fs::read(&text).unwrap().starts_with(TEXT_MAGIC));
    // Explicit formats that agree give the same files; `db2016` is the former
    // name of `text`; an extension that names no format takes an explicit one.
    for (name, format, like) in [
        ("y.ybb", "ybb", &ybb),
        ("y.db", "text", &text),
        ("z.db", "db2016", &text),
        ("y.bin", "ybb", &ybb),
    ] {
        let out = dir.path(name);
        ok(&[
            "export",
            "--db",
            s(&db),
            "--out",
            s(&out),
            "--format",
            format,
        ]);
        assert_eq!(
            std::fs::read(&out).unwrap(),
            std::fs::read(like).unwrap(),
            "{name} --format {format}"
        );
    }
}

/// The contradiction is found from the flags alone: the store is not even
/// opened (here it does not exist), no file is written, and the message names
/// the path and the format.
#[test]
fn a_format_the_extension_contradicts_is_refused_before_any_work() {
    let dir = Dir::new();
    let missing = dir.path("no-such-store");
    for (name, format) in [("x.ybb", "text"), ("x.db", "ybb"), ("x.DB2016", "ybb")] {
        let out = dir.path(name);
        let run = book_tools(&[
            "export",
            "--db",
            s(&missing),
            "--out",
            s(&out),
            "--format",
            format,
        ]);
        let err = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(1), "{name} {format}: {err}");
        assert!(err.contains(&format!("`{}`", s(&out))), "{err}");
        assert!(
            err.contains(&format!("format `{format}`"))
                || (format == "db2016" && err.contains("format `text`")),
            "{err}"
        );
        assert!(err.contains("leave the format to `auto`"), "{err}");
        assert!(!out.exists());
        assert!(!missing.exists(), "the store was touched");
    }
    // `remote export` refuses it before connecting (nothing listens there).
    let run = book_tools(&[
        "remote",
        "export",
        "--coordinator",
        "http://127.0.0.1:9",
        "--out",
        "book.ybb",
        "--format",
        "text",
    ]);
    let err = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "{err}");
    assert!(
        err.contains("`book.ybb`") && err.contains("format `text`"),
        "{err}"
    );
    assert!(!err.contains("cannot connect"), "{err}");
}
