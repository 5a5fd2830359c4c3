//! `--local-workers`: worker processes on loopback, this same executable run in
//! worker mode, so the main job needs only `cargo run -p coordinator`. They run
//! the engine of the coordinator's `--engine` flags (the worker's own, passed on).

use std::io::Write;
use std::net::SocketAddr;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, ChildStderr};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

use crate::cli::CoordinatorArgs;

/// The local worker processes, the tasks that wait for them, and the tasks
/// that copy their log records to this process's stderr.
pub(crate) struct LocalWorkers {
    /// Turned true by [`LocalWorkers::stop`]: each waiting task kills its child.
    stop: watch::Sender<bool>,
    /// One task per worker: it waits for the worker, then for its log relay.
    waiters: Vec<JoinHandle<()>>,
    /// Each worker that ended before [`LocalWorkers::stop`]: how and its last
    /// log line.
    exits: mpsc::UnboundedReceiver<String>,
    started: usize,
    ended: Vec<String>,
}

impl Default for LocalWorkers {
    fn default() -> Self {
        let (stop, _) = watch::channel(false);
        let (_, exits) = mpsc::unbounded_channel();
        Self {
            stop,
            waiters: Vec::new(),
            exits,
            started: 0,
            ended: Vec::new(),
        }
    }
}

impl LocalWorkers {
    /// Returns once every local worker has ended (never when none were
    /// started), with how each ended and its last log line: a run whose workers
    /// cannot start (an engine that is not there, an evaluation file that cannot
    /// be read) or are all refused cannot think, and must not idle.
    pub(crate) async fn all_ended(&mut self) -> String {
        if self.started == 0 {
            return std::future::pending().await;
        }
        while self.ended.len() < self.started {
            match self.exits.recv().await {
                Some(why) => self.ended.push(why),
                None => return std::future::pending().await,
            }
        }
        format!(
            "all {} --local-workers ended: {}",
            self.started,
            self.ended.join("; ")
        )
    }

    /// Stops the workers and waits until they and their last log records are out.
    pub(crate) async fn stop(self) {
        let _ = self.stop.send(true);
        for waiter in self.waiters {
            let _ = waiter.await;
        }
    }
}

/// Longest line of a local worker's log copied whole; the rest of a longer
/// line is dropped (a worker's records are far shorter).
const MAX_RELAY_LINE: usize = 64 * 1024;

/// Copies a local worker's log records, line by line, to this process's stderr
/// through the terminal writer: a worker writing to the terminal itself would glue
/// its records onto the coordinator's status line or leave fragments of it.
/// Keeps the last non-empty line in `last` (cut to a quote's length), the reason
/// a worker that ends gives.
fn relay(stderr: ChildStderr, last: Arc<Mutex<String>>) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut reader = BufReader::new(stderr);
        let mut line = Vec::new();
        loop {
            line.clear();
            match read_bounded_line(&mut reader, &mut line).await {
                Ok(true) => {}
                Ok(false) | Err(_) => break,
            }
            if !line.ends_with(b"\n") {
                line.push(b'\n');
            }
            let _ = stera_service::terminal::StderrWriter.write_all(&line);
            let text = String::from_utf8_lossy(&line);
            let text = text.trim();
            if !text.is_empty()
                && let Ok(mut last) = last.lock()
            {
                *last = stera_rules::excerpt_message(text);
            }
        }
    })
}

/// Reads one line into `line`, keeping at most [`MAX_RELAY_LINE`] bytes of it;
/// `false` at the end of the stream.
async fn read_bounded_line(
    reader: &mut BufReader<ChildStderr>,
    line: &mut Vec<u8>,
) -> std::io::Result<bool> {
    let mut read_any = false;
    loop {
        let buf = reader.fill_buf().await?;
        if buf.is_empty() {
            return Ok(read_any);
        }
        read_any = true;
        let (chunk, done) = match buf.iter().position(|b| *b == b'\n') {
            Some(at) => (&buf[..=at], true),
            None => (buf, false),
        };
        let used = chunk.len();
        let room = MAX_RELAY_LINE.saturating_sub(line.len());
        line.extend_from_slice(&chunk[..used.min(room)]);
        reader.consume(used);
        if done {
            return Ok(true);
        }
    }
}

/// How long a worker that ended may take to close its stderr, so that its last
/// words are relayed before they are quoted (an engine process it left behind
/// may hold the pipe open longer).
const LAST_WORDS: std::time::Duration = std::time::Duration::from_secs(2);

/// What a local worker is: its process, its name, its log relay and its last line.
struct Started {
    child: Child,
    name: String,
    relay: Option<JoinHandle<()>>,
    last: Arc<Mutex<String>>,
}

/// Waits for the worker to end, or kills it once `stop` turns true; then for its
/// log relay. An end before the stop is reported on `exits` with the worker's
/// last log line.
fn wait_for(
    mut w: Started,
    mut stop: watch::Receiver<bool>,
    exits: mpsc::UnboundedSender<String>,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        tokio::select! {
            status = w.child.wait() => {
                if let Some(mut relay) = w.relay.take()
                    && tokio::time::timeout(LAST_WORDS, &mut relay).await.is_err()
                {
                    w.relay = Some(relay);
                }
                let left = status.as_ref().is_ok_and(std::process::ExitStatus::success);
                let status = status.map_or_else(|e| format!("cannot wait for it: {e}"), |s| s.to_string());
                let last = w.last.lock().map(|l| l.clone()).unwrap_or_default();
                if left {
                    // It left on its own: the coordinator drains (--exit-on-drain).
                    tracing::info!(worker = %w.name, "a local worker left");
                } else {
                    tracing::warn!(worker = %w.name, %status, last_line = %last, "a local worker ended");
                }
                let _ = exits.send(format!("{} ({status}): {last}", w.name));
            }
            () = async { let _ = stop.wait_for(|s| *s).await; } => {
                let _ = w.child.start_kill();
                let _ = w.child.wait().await;
            }
        }
        if let Some(relay) = w.relay {
            let _ = relay.await;
        }
    })
}

/// Starts `--local-workers` worker processes: this same executable in worker mode.
pub(crate) fn start_local_workers(
    args: &CoordinatorArgs,
    addr: SocketAddr,
    token: Option<&str>,
) -> Result<LocalWorkers> {
    if args.local_workers == 0 {
        return Ok(LocalWorkers::default());
    }
    let exe =
        std::env::current_exe().context("cannot find this executable to start local workers")?;
    let mut workers = LocalWorkers::default();
    let (exits_tx, exits) = mpsc::unbounded_channel();
    workers.exits = exits;
    for i in 0..args.local_workers {
        let mut cmd = tokio::process::Command::new(&exe);
        cmd.arg(LOCAL_WORKER_ARG)
            .arg("--coordinator")
            .arg(local_url(args, addr))
            .arg("--slots")
            .arg(args.local_slots.max(1).to_string())
            .arg("--worker-id")
            .arg(format!("local-{i}"))
            // They end with this coordinator rather than wait for the next one.
            .arg("--exit-on-drain")
            // And with this coordinator when it is killed without a drain.
            .arg("--exit-with-parent")
            // One status line, this process's; their log records in this
            // process's format, written out by this process (`relay`).
            .arg("--status-every-secs")
            .arg("0")
            .arg("--log-format")
            .arg(log_format_flag(args.log_format))
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        cmd.args(stera_service::engine_flags::engine_args(
            &args.local_engine.choice(),
        ));
        if let Some(t) = token {
            cmd.env("STERA_TOKEN", t);
        }
        if let Some(cert) = &args.tls_cert {
            cmd.arg("--tls-ca").arg(cert);
        }
        let mut child = cmd.spawn().context("cannot start a local worker")?;
        let last = Arc::new(Mutex::new(String::new()));
        let relay = child.stderr.take().map(|e| relay(e, last.clone()));
        workers.waiters.push(wait_for(
            Started {
                child,
                name: format!("local-{i}"),
                relay,
                last,
            },
            workers.stop.subscribe(),
            exits_tx.clone(),
        ));
        workers.started += 1;
    }
    tracing::info!(count = args.local_workers, "local workers started");
    Ok(workers)
}

/// The URL local workers use: loopback, over TLS when the coordinator serves TLS
/// (then the certificate must name `localhost`).
fn local_url(args: &CoordinatorArgs, addr: SocketAddr) -> String {
    if args.tls_cert.is_some() {
        format!("https://localhost:{}", addr.port())
    } else {
        format!("http://{addr}")
    }
}

/// First argument that makes the coordinator executable act as a worker.
pub const LOCAL_WORKER_ARG: &str = "__worker";

/// `--log-format`'s value for `format`, as clap spells it (the one list of names).
fn log_format_flag(format: stera_service::logging::LogFormat) -> String {
    use clap::ValueEnum;
    format
        .to_possible_value()
        .map_or_else(|| "text".to_owned(), |v| v.get_name().to_owned())
}
