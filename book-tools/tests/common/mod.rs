//! Running the built `book-tools` binary from the integration tests.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use std::process::{Command, Output};
use stera_rules::{Position, STARTPOS_SFEN};

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

/// A small tmpfs mounted for a full-disk test, unmounted when dropped.
pub struct SmallDisk {
    _dir: tempfile::TempDir,
    pub path: PathBuf,
}

impl SmallDisk {
    /// Mounts a tmpfs of `size` (e.g. `"8m"`); `None`, after printing why the
    /// test is skipped, where this machine does not let the test mount (not
    /// root, no permission in a container).
    pub fn mount(size: &str) -> Option<Self> {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("disk");
        std::fs::create_dir(&path).expect("mount point");
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&path)
            .output();
        match out {
            Ok(o) if o.status.success() => Some(Self { _dir: dir, path }),
            Ok(o) => {
                eprintln!(
                    "skipped: cannot mount a {size} tmpfs for the full-disk test: {}",
                    String::from_utf8_lossy(&o.stderr).trim()
                );
                None
            }
            Err(e) => {
                eprintln!("skipped: cannot mount a {size} tmpfs for the full-disk test: {e}");
                None
            }
        }
    }

    /// Fills the disk with a file until at most `leave` bytes are free.
    pub fn fill_leaving(&self, leave: u64) -> PathBuf {
        let filler = self.path.join("filler");
        let free = stera_book::space::available_bytes(&self.path).expect("statvfs");
        let size = free.saturating_sub(leave);
        let data = vec![0x5au8; 1 << 20];
        let mut f = std::fs::File::create(&filler).expect("filler");
        let mut left = size;
        while left > 0 {
            let n = left.min(data.len() as u64) as usize;
            if std::io::Write::write_all(&mut f, &data[..n]).is_err() {
                break;
            }
            left -= n as u64;
        }
        filler
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.path).status();
    }
}
