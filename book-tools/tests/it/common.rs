//! Running the built `book-tools` binary from the integration tests.

use std::path::{Path, PathBuf};

use std::process::{Command, Output};
use stera_rules::{Position, STARTPOS_SFEN};
pub use stera_testkit::disk::SmallDisk;

/// Runs `book-tools ARGS` and returns what it did.
pub fn book_tools(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_book-tools"))
        .args(args)
        .output()
        .expect("run book-tools")
}

/// Runs a command that must succeed; returns its standard output.
pub fn ok(args: &[&str]) -> String {
    let out = book_tools(args);
    assert!(
        out.status.success(),
        "book-tools {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Runs a command that must fail; returns its standard error.
pub fn fails(args: &[&str]) -> String {
    let out = book_tools(args);
    assert!(!out.status.success(), "book-tools {args:?} should fail");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A path as a command-line argument.
pub fn s(p: &Path) -> &str {
    p.to_str().expect("UTF-8 path")
}

/// A complete raw DB2016 book: every position along `lines` (from the start
/// position) with every legal move valued by `value(position, move index)`.
pub fn raw_book(lines: &[&[&str]], value: impl Fn(&Position, usize) -> i32) -> String {
    let mut entries: std::collections::BTreeMap<String, String> = Default::default();
    for line in lines {
        let mut pos = Position::from_sfen(STARTPOS_SFEN).unwrap();
        let mut add = |pos: &Position| {
            let mut text = String::new();
            for (i, mv) in pos.legal_moves().into_iter().enumerate() {
                text.push_str(&format!("{mv} none {} 0 1\n", value(pos, i)));
            }
            entries
                .entry(pos.to_sfen_without_ply())
                .or_insert(format!("sfen {}\n{text}", pos.to_sfen()));
        };
        add(&pos);
        for usi in *line {
            let mv = pos.parse_move(usi).unwrap();
            pos.do_move(mv);
            add(&pos);
        }
    }
    let mut out = "#YANEURAOU-DB2016 1.00\n".to_owned();
    for e in entries.values() {
        out.push_str(e);
    }
    out
}

/// A temporary directory for one test.
pub struct Dir(tempfile::TempDir);

impl Dir {
    pub fn new() -> Self {
        Self(tempfile::tempdir().unwrap())
    }
    pub fn path(&self, name: &str) -> PathBuf {
        self.0.path().join(name)
    }
    pub fn names(&self) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(self.0.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }
}

/// A binary of another package of the workspace, built beside this one
/// (`cargo test --workspace` builds every package's binaries before running
/// tests).
pub fn sibling_exe(name: &str) -> PathBuf {
    let exe = Path::new(env!("CARGO_BIN_EXE_book-tools")).with_file_name(name);
    assert!(
        exe.exists(),
        "{} is missing: run the tests with `cargo test --workspace` (or build the {name} first)",
        exe.display()
    );
    exe
}

/// A coordinator process on loopback, killed however the test ends.
pub struct Coordinator(std::process::Child);

impl Coordinator {
    /// Starts `coordinator ARGS --listen 127.0.0.1:0` and waits until it
    /// listens; returns it and its URL.
    pub fn start(args: &[&str]) -> (Self, String) {
        use std::io::{BufRead, BufReader};
        let mut child = Command::new(sibling_exe("coordinator"))
            .args(args)
            // Makes the store when it is new (a test's first run).
            .arg("--create")
            .args(["--listen", "127.0.0.1:0"])
            .env("RUST_LOG", "info")
            .env_remove("STERA_TOKEN")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("start coordinator");
        let stderr = child.stderr.take().unwrap();
        let running = Self(child);
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if line.contains("listening")
                    && let Some(a) = line.split("addr=").nth(1)
                {
                    let _ = tx.send(a.trim().to_owned());
                }
            }
        });
        let addr = rx
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("the coordinator listens");
        (running, format!("http://{addr}"))
    }
}

impl Drop for Coordinator {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Grows the synthetic store `db` (made if missing) to `positions` positions,
/// `batch` leaves per durable write (a small batch makes many small flushed
/// chunks, which tests of a store's files want).
pub fn synth_store(db: &Path, positions: usize, batch: usize) {
    ok(&[
        "synth",
        "--db",
        s(db),
        "--positions",
        &positions.to_string(),
        "--batch",
        &batch.to_string(),
    ]);
}

/// A synthetic book grown from `startpos` alone (one root, 300 positions: the
/// start, its 30 children and 269 positions at ply 2), in `dir/one-root`.
pub fn single_root_book(dir: &Path) -> String {
    let db = dir.join("one-root");
    let roots = dir.join("roots.txt");
    std::fs::write(&roots, "startpos\n").expect("write roots");
    ok(&["roots", "set", "--create", "--db", s(&db), s(&roots)]);
    ok(&["synth", "--db", s(&db), "--positions", "300"]);
    s(&db).to_owned()
}
