//! `--local-workers`: worker processes on loopback, this same executable run in
//! worker mode, so the main job needs only `cargo run -p coordinator`. They run
//! the engine of the coordinator's `--engine` flags (the worker's own, passed on).

use std::io::Write;
use std::net::SocketAddr;
use std::process::Stdio;

use anyhow::{Context, Result};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, ChildStderr};
use tokio::task::JoinHandle;

use crate::cli::CoordinatorArgs;

/// The local worker processes, and the tasks that copy their log records to
/// this process's stderr.
#[derive(Default)]
pub(crate) struct LocalWorkers {
    children: Vec<Child>,
    relays: Vec<JoinHandle<()>>,
}

impl LocalWorkers {
    /// Stops the workers and waits until they and their last log records are out.
    pub(crate) async fn stop(mut self) {
        for child in &mut self.children {
            let _ = child.start_kill();
        }
        for child in &mut self.children {
            let _ = child.wait().await;
        }
        for relay in self.relays {
            let _ = relay.await;
        }
    }
}

/// Copies a local worker's log records, line by line, to this process's stderr
/// through the terminal writer: a worker writing to the terminal itself would glue
/// its records onto the coordinator's status line or leave fragments of it.
fn relay(stderr: ChildStderr) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut lines = BufReader::new(stderr).lines();
        while let Ok(Some(mut line)) = lines.next_line().await {
            line.push('\n');
            let _ = stera_service::terminal::StderrWriter.write_all(line.as_bytes());
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
        if let Some(stderr) = child.stderr.take() {
            workers.relays.push(relay(stderr));
        }
        workers.children.push(child);
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
