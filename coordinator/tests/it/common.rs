//! Test harness: real coordinator processes on loopback; the lightweight in-process
//! workers that answer jobs instantly (or wrongly, on purpose) are the test kit's.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use stera_rules::Position;
pub use stera_testkit::disk::SmallDisk;
pub use stera_testkit::fake_worker::{Answer, client, fake_worker, hello, result_for, status};
pub use stera_testkit::free_port;

/// How long a test waits for something that should take seconds.
pub const LONG: Duration = Duration::from_secs(120);

/// A runtime for the in-process fake workers and clients of a test.
pub fn runtime(worker_threads: usize) -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(worker_threads)
        .enable_all()
        .build()
        .unwrap()
}

pub const EXE: &str = env!("CARGO_BIN_EXE_coordinator");

/// A coordinator child process with its log lines collected.
pub struct Coord {
    pub child: Child,
    pub addr: String,
    pub log: Arc<Mutex<Vec<String>>>,
}

impl Coord {
    /// Starts `coordinator --db DB --listen LISTEN ARGS...` and waits until it listens.
    pub fn start(db: &Path, listen: &str, args: &[&str], envs: &[(&str, &str)]) -> Self {
        let mut cmd = Command::new(EXE);
        cmd.arg("--db")
            .arg(db)
            // Makes the store when it is new, as every test's first run needs.
            .arg("--create")
            .arg("--listen")
            .arg(listen)
            .args(args);
        cmd.env("RUST_LOG", "info").env_remove("STERA_TOKEN");
        for (k, v) in envs {
            cmd.env(k, v);
        }
        let mut child = cmd
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start coordinator");
        let stderr = child.stderr.take().expect("stderr");
        let log = Arc::new(Mutex::new(Vec::new()));
        let (addr_tx, addr_rx) = mpsc::channel();
        let log2 = log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if line.contains("listening")
                    && let Some(a) = listening_addr(&line)
                {
                    let _ = addr_tx.send(a);
                }
                log2.lock().unwrap().push(line);
            }
        });
        let addr = addr_rx
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| {
                panic!(
                    "coordinator did not start listening: {:?}",
                    log.lock().unwrap()
                )
            });
        Self { child, addr, log }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Waits until a log line contains `needle`.
    pub fn wait_log(&self, needle: &str, timeout: Duration) -> String {
        wait_line(&self.log, needle, timeout)
    }

    pub fn kill9(&mut self) {
        signal(&self.child, "-9");
        let _ = self.child.wait();
    }

    pub fn sigterm(&mut self) {
        signal(&self.child, "-TERM");
    }

    pub fn wait_exit(&mut self, timeout: Duration) -> std::process::ExitStatus {
        wait_child_exit(&mut self.child, timeout, "coordinator", &self.log)
    }
}

/// The address of the coordinator's "listening" record, as text
/// (`addr=127.0.0.1:1234`) or JSON (`--log-format json`).
fn listening_addr(line: &str) -> Option<String> {
    if let Some(a) = line.split("addr=").nth(1) {
        return Some(a.trim().to_owned());
    }
    let record: serde_json::Value = serde_json::from_str(line).ok()?;
    record["fields"]["addr"].as_str().map(str::to_owned)
}

/// Lines a process writes, collected by a thread as they come.
pub type Log = Arc<Mutex<Vec<String>>>;

/// Sends `kill SIGNAL` (e.g. `-TERM`) to a child process.
pub fn signal(child: &Child, signal: &str) {
    let _ = Command::new("kill")
        .arg(signal)
        .arg(child.id().to_string())
        .status();
}

/// Collects a piped stderr's lines.
pub fn collect_stderr(child: &mut Child) -> Log {
    let stderr = child.stderr.take().expect("stderr piped");
    let lines = Arc::new(Mutex::new(Vec::new()));
    let sink = lines.clone();
    std::thread::spawn(move || {
        for l in BufReader::new(stderr).lines().map_while(Result::ok) {
            sink.lock().unwrap().push(l);
        }
    });
    lines
}

/// Waits until a line of `log` contains `needle`; fails the test with the log
/// after `timeout`.
pub fn wait_line(log: &Log, needle: &str, timeout: Duration) -> String {
    let start = Instant::now();
    loop {
        if let Some(l) = log.lock().unwrap().iter().find(|l| l.contains(needle)) {
            return l.clone();
        }
        assert!(
            start.elapsed() < timeout,
            "no log line with `{needle}` in {timeout:?}: {:?}",
            log.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits until the stderr behind `log` has been read to its end (the process, and
/// every process that shared its stderr, has closed it): then every line it wrote
/// is in `log`. The collecting thread holds the only other handle on `log` until
/// then, so `log` must not have been cloned.
pub fn wait_stderr_closed(log: &Log, timeout: Duration) {
    let start = Instant::now();
    while Arc::strong_count(log) > 1 {
        assert!(
            start.elapsed() < timeout,
            "stderr still open after {timeout:?}: {:?}",
            log.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits for a child to exit; fails the test with its log after `timeout`.
pub fn wait_child_exit(
    child: &mut Child,
    timeout: Duration,
    what: &str,
    log: &Log,
) -> std::process::ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(s) = child.try_wait().expect("wait") {
            return s;
        }
        assert!(
            start.elapsed() < timeout,
            "{what} did not exit in {timeout:?}: {:?}",
            log.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

impl Drop for Coord {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A real worker process: the coordinator executable in worker mode.
pub fn start_worker(url: &str, extra: &[&str], envs: &[(&str, &str)]) -> Child {
    let mut cmd = Command::new(EXE);
    cmd.arg("__worker")
        .arg("--coordinator")
        .arg(url)
        .args(extra)
        .env_remove("STERA_TOKEN");
    for (k, v) in envs {
        cmd.env(k, v);
    }
    cmd.stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start worker")
}

/// Keys of every thought position in a (closed) store.
pub fn book_len(db: &Path) -> usize {
    let store = stera_book::SledStore::open(db).expect("reopen store");
    let live = stera_book::LiveBook::open(store, None).expect("load book");
    live.book().len()
}

pub fn book_contains_all(db: &Path, sfens: &[String]) -> Vec<String> {
    let store = stera_book::SledStore::open(db).expect("reopen store");
    let live = stera_book::LiveBook::open(store, None).expect("load book");
    sfens
        .iter()
        .filter(|s| !live.book().contains(Position::from_sfen(s).unwrap().key()))
        .cloned()
        .collect()
}

/// A store of `nodes` synthetic positions at `db`, written `batch` positions a
/// commit (the pseudo-evaluator of the benchmarks: deterministic, no engine).
pub fn synthetic_store(db: &Path, nodes: usize, batch: usize) {
    let store = stera_book::SledStore::open(db).unwrap();
    let mut live = stera_book::LiveBook::open(store, None).unwrap();
    let mut selector = stera_book::Selector::new();
    let eval = stera_book::synthetic::PseudoEvaluator::new(1);
    let options = stera_book::synthetic::GrowOptions {
        batch,
        ..Default::default()
    };
    stera_book::synthetic::grow(&mut live, &mut selector, &eval, nodes, options, &mut |_| {})
        .unwrap();
}

/// The flags of a run that only plays: no thinking, every slot to games,
/// `games` of them, then `more`.
pub fn games_only<'a>(games: &'a str, more: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "--think-limit",
        "0",
        "--play-share",
        "1",
        "--play-games",
        games,
    ];
    args.extend_from_slice(more);
    args
}
