//! `--local-workers`: worker processes on loopback, this same executable run in
//! worker mode, so the main job needs only `cargo run -p coordinator`.

use std::net::SocketAddr;

use anyhow::{Context, Result};

use crate::cli::CoordinatorArgs;

/// Starts `--local-workers` worker processes: this same executable in worker mode.
pub(crate) fn start_local_workers(
    args: &CoordinatorArgs,
    addr: SocketAddr,
    token: Option<&str>,
) -> Result<Vec<tokio::process::Child>> {
    if args.local_workers == 0 {
        return Ok(Vec::new());
    }
    let exe =
        std::env::current_exe().context("cannot find this executable to start local workers")?;
    let mut children = Vec::new();
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
            // They share this terminal: one status line, this process's; their
            // log lines in this process's format.
            .arg("--status-every-secs")
            .arg("0")
            .arg("--log-format")
            .arg(log_format_flag(args.log_format))
            .kill_on_drop(true);
        if let Some(t) = token {
            cmd.env("STERA_TOKEN", t);
        }
        if let Some(cert) = &args.tls_cert {
            cmd.arg("--tls-ca").arg(cert);
        }
        children.push(cmd.spawn().context("cannot start a local worker")?);
    }
    tracing::info!(count = args.local_workers, "local workers started");
    Ok(children)
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
