//! The coordinator child process: started on loopback with metrics, stopped with
//! SIGTERM.

use std::io::{BufRead, BufReader, LineWriter, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};

use crate::cli::Args;

/// The coordinator child process.
pub(crate) struct Coordinator {
    pub(crate) child: Child,
    pub(crate) url: String,
    pub(crate) metrics: String,
    pub(crate) log_tail: Arc<Mutex<Vec<String>>>,
}

impl Coordinator {
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    pub(crate) fn tail(&self) -> String {
        self.log_tail
            .lock()
            .map(|t| t.join("\n"))
            .unwrap_or_default()
    }
}

impl Drop for Coordinator {
    fn drop(&mut self) {
        // Only reached on an error path before the orderly SIGTERM (or after it).
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

pub(crate) fn coordinator_exe(args: &Args) -> Result<PathBuf> {
    if let Some(p) = &args.coordinator {
        return Ok(p.clone());
    }
    let me = std::env::current_exe().context("cannot find this executable's path")?;
    // target/<profile>/soak -> target/<profile>/coordinator
    let exe = me
        .parent()
        .map(|dir| dir.join("coordinator"))
        .ok_or_else(|| anyhow!("cannot find the target directory of {}", me.display()))?;
    if !exe.is_file() {
        bail!(
            "no coordinator executable at {}: build it first with `cargo build --release -p coordinator --bin coordinator` (same CARGO_TARGET_DIR), or pass --coordinator PATH",
            exe.display()
        );
    }
    Ok(exe)
}

pub(crate) fn start_coordinator(args: &Args, db: &Path, log_path: &Path) -> Result<Coordinator> {
    let exe = coordinator_exe(args)?;
    let metrics = format!("127.0.0.1:{}", stera_testkit::try_free_port()?);
    let mut cmd = Command::new(&exe);
    cmd.arg("--db")
        .arg(db)
        // The first start makes the store; restarts grow it.
        .arg("--create")
        .args(["--listen", "127.0.0.1:0", "--metrics", &metrics])
        .args(["--lease-secs", &args.lease_secs.to_string()])
        .args(["--drain-secs", "30", "--status-every-secs", "60"]);
    if args.play_share > 0.0 {
        cmd.args(["--play-share", &args.play_share.to_string()])
            .args(["--ply-limit", "320"]);
    }
    cmd.args(&args.coordinator_args);
    cmd.env("RUST_LOG", "info")
        .env_remove("STERA_TOKEN")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    // A stale binary soaks old code: say how old it is.
    let age = std::fs::metadata(&exe)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.elapsed().ok())
        .map_or_else(
            || "unknown age".to_owned(),
            |d| format!("built {:.0} min ago", d.as_secs_f64() / 60.0),
        );
    println!("starting ({age}) {cmd:?}");
    let mut child = cmd
        .spawn()
        .with_context(|| format!("cannot start {}", exe.display()))?;
    let stderr = child
        .stderr
        .take()
        .ok_or_else(|| anyhow!("no stderr pipe"))?;
    let log_file = std::fs::File::create(log_path)
        .with_context(|| format!("cannot create {}", log_path.display()))?;
    let tail = Arc::new(Mutex::new(Vec::new()));
    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    let tail2 = tail.clone();
    std::thread::spawn(move || {
        let mut log = LineWriter::new(log_file);
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if line.contains("listening")
                && let Some(a) = line.split("addr=").nth(1)
            {
                let _ = addr_tx.send(a.trim().to_owned());
            }
            let _ = writeln!(log, "{line}");
            if let Ok(mut t) = tail2.lock() {
                if t.len() >= 20 {
                    t.remove(0);
                }
                t.push(line);
            }
        }
    });
    let mut coordinator = Coordinator {
        child,
        url: String::new(),
        metrics,
        log_tail: tail,
    };
    let started = Instant::now();
    loop {
        match addr_rx.recv_timeout(Duration::from_millis(200)) {
            Ok(addr) => {
                coordinator.url = format!("http://{addr}");
                break;
            }
            Err(_) => {
                if let Ok(Some(status)) = coordinator.child.try_wait() {
                    bail!(
                        "the coordinator exited ({status}) before listening:\n{}",
                        coordinator.tail()
                    );
                }
                if started.elapsed() > Duration::from_secs(600) {
                    bail!(
                        "the coordinator did not listen within 10 minutes:\n{}",
                        coordinator.tail()
                    );
                }
            }
        }
    }
    println!(
        "coordinator pid {} listening on {} after {:.1} s (metrics http://{}/metrics)",
        coordinator.pid(),
        coordinator.url,
        started.elapsed().as_secs_f64(),
        coordinator.metrics
    );
    Ok(coordinator)
}

/// Sends SIGTERM and waits for the exit (killing it after `patience`).
pub(crate) fn stop_coordinator(
    c: &mut Coordinator,
    patience: Duration,
) -> Result<std::process::ExitStatus> {
    let status = Command::new("kill")
        .args(["-TERM", &c.pid().to_string()])
        .status()
        .context("cannot run kill")?;
    if !status.success() {
        bail!("kill -TERM {} failed", c.pid());
    }
    let start = Instant::now();
    loop {
        if let Some(s) = c.child.try_wait()? {
            return Ok(s);
        }
        if start.elapsed() > patience {
            let _ = c.child.kill();
            let _ = c.child.wait();
            bail!(
                "the coordinator did not exit within {patience:?} of SIGTERM (killed):\n{}",
                c.tail()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}
