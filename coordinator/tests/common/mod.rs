//! Test harness: real coordinator processes on loopback and lightweight in-process
//! workers that answer jobs instantly (or wrongly, on purpose).

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use stera_proto::v1::coordinator_client::CoordinatorClient;
use stera_proto::v1::{
    Hello, JobResult, MoveValue, StatusReply, StatusRequest, WorkerMessage, coordinator_message,
    worker_message,
};
use stera_rules::Position;
use tokio::sync::mpsc as tmpsc;
use tokio_stream::wrappers::ReceiverStream;

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
                    && let Some(a) = line.split("addr=").nth(1)
                {
                    let _ = addr_tx.send(a.trim().to_owned());
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
        let start = Instant::now();
        loop {
            if let Some(l) = self.log.lock().unwrap().iter().find(|l| l.contains(needle)) {
                return l.clone();
            }
            assert!(
                start.elapsed() < timeout,
                "no log line with `{needle}` in {timeout:?}: {:?}",
                self.log.lock().unwrap()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
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

/// How a fake worker answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// Every legal move, value from a cheap deterministic function.
    Good,
    /// One legal move left out.
    MissingMove,
    /// An extra move that is not legal.
    IllegalMove,
    /// A value beyond the mate range.
    OutOfRange,
    /// Values for the job's position, named as another position (the one after
    /// its first legal move).
    WrongPosition,
    /// Take the jobs and never answer.
    Silent,
}

#[derive(Debug, Default, Clone)]
pub struct Report {
    pub acked: Vec<(u64, String)>,
    pub rejected: Vec<(u64, String)>,
    pub jobs: Vec<(u64, String)>,
}

/// The Hello of a test worker of this build's protocol.
pub fn hello(worker_id: &str, engine: &str, slots: u32) -> WorkerMessage {
    WorkerMessage {
        msg: Some(worker_message::Msg::Hello(Hello {
            worker_id: worker_id.into(),
            version: "test".into(),
            engine: engine.into(),
            slots,
            protocol: stera_proto::PROTOCOL_VERSION,
        })),
    }
}

pub fn result_for(lease_id: u64, sfen: &str, answer: Answer) -> JobResult {
    let pos = Position::from_sfen(sfen).expect("coordinator sends valid SFEN");
    let mut moves: Vec<MoveValue> = pos
        .legal_moves()
        .iter()
        .map(|m| MoveValue {
            usi: m.to_string(),
            value: i32::from(m.raw() % 97) - 48,
            depth: 1,
        })
        .collect();
    match answer {
        Answer::MissingMove => {
            moves.pop();
        }
        Answer::IllegalMove => moves.push(MoveValue {
            usi: "1a1i+".into(),
            value: 0,
            depth: 1,
        }),
        Answer::OutOfRange => moves[0].value = 40_000,
        Answer::Good | Answer::Silent | Answer::WrongPosition => {}
    }
    let named = if answer == Answer::WrongPosition {
        let mut other = pos.clone();
        other.do_move(pos.legal_moves()[0]);
        other.to_sfen()
    } else {
        sfen.to_owned()
    };
    JobResult::think(lease_id, named, moves, 1, 0, "fake".into())
}

/// Connects one fake worker and answers jobs until `stop_after` acknowledgements or
/// rejections (or the stream ends / `timeout` passes).
pub async fn fake_worker(
    url: String,
    token: Option<String>,
    slots: u32,
    answer: Answer,
    stop_after: usize,
    timeout: Duration,
) -> Result<Report, tonic::Status> {
    let mut client = client(url, token.as_deref()).await?;
    let (tx, rx) = tmpsc::channel::<WorkerMessage>(1024);
    let hello = Hello {
        worker_id: "fake".into(),
        version: "test".into(),
        engine: "fake".into(),
        slots,
        protocol: stera_proto::PROTOCOL_VERSION,
    };
    tx.send(WorkerMessage {
        msg: Some(worker_message::Msg::Hello(hello)),
    })
    .await
    .unwrap();
    let mut inbound = client.work(ReceiverStream::new(rx)).await?.into_inner();
    let mut report = Report::default();
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if report.acked.len() + report.rejected.len() >= stop_after {
            break;
        }
        let msg = match tokio::time::timeout_at(deadline, inbound.message()).await {
            // The stream ending or breaking (e.g. the coordinator killed) ends the run.
            Err(_) | Ok(Ok(None)) | Ok(Err(_)) => break,
            Ok(Ok(Some(m))) => m,
        };
        match msg.msg {
            Some(coordinator_message::Msg::Job(job)) => {
                report
                    .jobs
                    .push((job.lease_id, job.think_sfen().to_owned()));
                if answer != Answer::Silent {
                    let r = result_for(job.lease_id, job.think_sfen(), answer);
                    if tx
                        .send(WorkerMessage {
                            msg: Some(worker_message::Msg::Result(r)),
                        })
                        .await
                        .is_err()
                    {
                        break;
                    }
                }
            }
            Some(coordinator_message::Msg::Ack(a)) => {
                let sfen = report
                    .jobs
                    .iter()
                    .find(|(id, _)| *id == a.lease_id)
                    .map(|(_, s)| s.clone())
                    .unwrap_or_default();
                report.acked.push((a.lease_id, sfen));
            }
            Some(coordinator_message::Msg::Rejected(r)) => {
                report.rejected.push((r.lease_id, r.reason))
            }
            Some(coordinator_message::Msg::Drain(_))
            | Some(coordinator_message::Msg::Welcome(_))
            | None => {}
        }
    }
    Ok(report)
}

pub async fn status(url: &str, token: Option<&str>) -> StatusReply {
    let mut client = client(url.to_owned(), token).await.unwrap();
    client.status(StatusRequest {}).await.unwrap().into_inner()
}

/// Adds `authorization: Bearer <token>` to every request, as workers do.
#[derive(Clone)]
pub struct Bearer(Option<tonic::metadata::MetadataValue<tonic::metadata::Ascii>>);

impl tonic::service::Interceptor for Bearer {
    fn call(&mut self, mut r: tonic::Request<()>) -> Result<tonic::Request<()>, tonic::Status> {
        if let Some(h) = &self.0 {
            r.metadata_mut().insert("authorization", h.clone());
        }
        Ok(r)
    }
}

pub type Client = CoordinatorClient<
    tonic::service::interceptor::InterceptedService<tonic::transport::Channel, Bearer>,
>;

/// A gRPC client for `url`, presenting `token` if given.
pub async fn client(url: String, token: Option<&str>) -> Result<Client, tonic::Status> {
    let channel = tonic::transport::Endpoint::from_shared(url)
        .map_err(|e| tonic::Status::internal(e.to_string()))?
        .connect()
        .await
        .map_err(|e| tonic::Status::unavailable(e.to_string()))?;
    let header = token.map(|t| format!("Bearer {t}").parse().expect("ASCII token"));
    Ok(CoordinatorClient::with_interceptor(channel, Bearer(header)))
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

/// A free loopback port (bound and released).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A small tmpfs mounted for a full-disk test, unmounted when dropped.
pub struct SmallDisk {
    _dir: tempfile::TempDir,
    pub path: std::path::PathBuf,
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
    pub fn fill_leaving(&self, leave: u64) -> std::path::PathBuf {
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
