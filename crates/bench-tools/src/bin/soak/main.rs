//! Soak benchmark (issue 14, item 6): a long run of a real coordinator process
//! under a churning fleet of simulated workers, watching for leaks and lost work.
//!
//! ```text
//! export CARGO_TARGET_DIR=...   # the same for both commands
//! cargo build --release -p coordinator --bin coordinator
//! cargo run --release -p stera-bench-tools --bin soak -- \
//!     --db DIR --minutes 60 --workers 200 --out soak.tsv
//! ```
//!
//! DIR is an existing store, e.g. from `book-tools synth --db DIR --positions
//! 1100000`. 1.1M rather than 1M: the selector's per-node cache is a `Vec` that
//! doubles its capacity when the book passes 2^20 = 1,048,576 nodes, a legitimate
//! step of tens of MB that a run starting just below it would take for a leak.
//! DIR is not touched: the harness copies it (beside it, as
//! `DIR.soak-PID`, or to `--copy-to`) and runs on the copy, which is deleted after
//! a run whose checks pass (kept with `--keep-copy`, and always when a check
//! fails). `--in-place` grows DIR itself instead.
//!
//! **The coordinator** is the `coordinator` executable of the same target
//! directory (`target/release/coordinator` beside `target/release/soak`,
//! or `--coordinator PATH`): build it first as above. It runs as a separate
//! process on loopback with `--metrics` on a free port, `--lease-secs`
//! (default 60, so that hung workers' leases expire within the run), no think
//! limit (it would run forever), `--play-share` when asked, and any
//! `--coordinator-arg=ARG`. Its log goes to `OUT.coordinator.log`.
//!
//! **The fleet**: `--workers` members in this process, each a tokio task with its
//! own connection (one Work stream), 1-4 slots (`--slots`) and the protocol of the
//! real worker: Hello, heartbeats every 10 s, every job answered after a random
//! delay (`--think-ms`) with a value for every legal move (search jobs with a
//! random legal move), results sent once.
//! A member stays connected for an exponentially distributed time (mean
//! `--session-secs`), then departs in one of four ways:
//! * **leave** (the rest): Credit 0, a GiveBack for every job in hand, up to 10 s
//!   for the answers to the results sent, then the stream is closed; it comes
//!   back under the same id.
//! * **drop** (`--drop-share`): the connection is dropped at once; the jobs in hand
//!   finish while it is away and their results go out first on the next stream,
//!   under the same id (what the real worker does with results computed while
//!   disconnected: the coordinator has requeued those leases meanwhile).
//! * **kill** (`--kill-share`): the connection and the jobs in hand are dropped
//!   without a word; a new worker with a new id and new slots takes its place.
//! * **hang** (`--hang-share`): the member stops reading, answering and sending
//!   heartbeats but keeps the connection for 1.5 x `--lease-secs` (its leases
//!   expire), then is killed as above.
//!
//! Every member pauses `--pause-secs` between connections, so about
//! `workers x session / (session + pause)` are connected on average (about 194 of
//! 200 with the defaults; the first connections are spread over 10 s).
//!
//! **Acknowledged results**: every ResultAck is matched to the result it answers
//! (by lease id on that stream) and recorded with the result's position: think
//! results in memory and in `OUT.acked` (`think|play TAB lease TAB SFEN`, the
//! start position for games).
//!
//! **Samples**: before the fleet connects ("idle"), every `--sample-secs` (10)
//! during the run, and after the fleet has left ("after"): the coordinator's RSS
//! (VmRSS), threads (`/proc/PID/status`), open file descriptors (`/proc/PID/fd`)
//! and, from its `/metrics`, `stera_coordinator_tokio_tasks`, `stera_book_nodes`,
//! `stera_coordinator_workers_connected`, `stera_coordinator_leases_in_flight`,
//! and counters (thought, lease expiries, requeues, rejections), beside the
//! fleet's own counters. Written to OUT (TSV, one row per sample); a summary line
//! is printed every minute.
//!
//! **Verdict**, over the samples after the warm-up (`--warmup-mins`, default 10 %
//! of the run):
//! * RSS flat: max/min - 1 <= `--rss-tolerance` (5 %) after deducting the book's
//!   legitimate growth, `(nodes - nodes at the first sample after warm-up) x B`
//!   where B is `--bytes-per-node`, by default the idle coordinator's RSS per node
//!   of the book it loaded (about 230 B at 1M nodes). Raw min/max are printed
//!   too, and what the growth would cost per node added, per requeued lease and
//!   per session, a hint at its cause. A node added at run time costs more than
//!   a loaded one (about 0.7 KB of RSS per node in a 10-minute run at 250
//!   results/s: small sled batches, amortised table growth), so the book must
//!   grow little: the default `--think-ms` (20-100 s per position, about 8
//!   results/s from 200 workers, some 30,000 nodes an hour) keeps that within a
//!   few per cent. With fast fake workers the book would grow by millions of
//!   nodes and RSS with it, by design.
//! * No fd or task growth: last - first (after warm-up) <= the change in
//!   connected workers x the per-worker cost measured at the first sample (minus
//!   idle) + a slack of 4; and once the fleet has left, fds and tasks are back
//!   within 4 of idle (this one needs no estimate).
//! * Every acknowledged think result's position is in the store (opened by this
//!   process after the coordinator exited on SIGTERM), and the store holds at
//!   least the games it held plus the games acknowledged.
//! * The coordinator exits successfully on SIGTERM.
//!
//! Any failed check makes the exit status non-zero. Linux only (`/proc`).

mod cli;
mod coordinator;
mod fleet;
mod sample;
mod store;
mod verdict;

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use clap::Parser;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;

use cli::Args;
use coordinator::{Coordinator, start_coordinator, stop_coordinator};
use fleet::{Counters, Fleet, load, member, recorder};
use sample::{Sample, TSV_HEADER, sample};
use store::{copy_dir, side_path, store_counts};
use verdict::verdict;

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("soak: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// Prepares the store, runs the soak, checks; `Ok(false)` when a check fails.
fn run(args: &Args) -> Result<bool> {
    if args.workers == 0 || args.minutes <= 0.0 || args.sample_secs == 0 {
        bail!("--workers, --minutes and --sample-secs must be positive");
    }
    let shares = [args.kill_share, args.drop_share, args.hang_share];
    if shares.iter().any(|s| !(0.0..=1.0).contains(s)) || shares.iter().sum::<f64>() > 1.0 {
        bail!(
            "--kill-share, --drop-share and --hang-share are shares (0 to 1) summing to 1 at most"
        );
    }
    let (nodes0, games0) = store_counts(&args.db)?;
    println!(
        "store {}: {nodes0} nodes, {games0} games",
        args.db.display()
    );
    let db = if args.in_place {
        println!("--in-place: the soak grows {} itself", args.db.display());
        args.db.clone()
    } else {
        let to = match &args.copy_to {
            Some(p) => p.clone(),
            None => side_path(&args.db, &format!(".soak-{}", std::process::id())),
        };
        if to.exists() {
            bail!("{} exists; the copy needs a new directory", to.display());
        }
        let t = Instant::now();
        let bytes = copy_dir(&args.db, &to)?;
        println!(
            "copied the store to {} ({:.0} MB, {:.1} s); the soak runs on the copy",
            to.display(),
            bytes as f64 / 1e6,
            t.elapsed().as_secs_f64()
        );
        to
    };
    let passed = soak(args, &db, nodes0, games0).inspect_err(|_| {
        if !args.in_place {
            eprintln!("the store the run used is kept: {}", db.display());
        }
    })?;
    if !args.in_place {
        if passed && !args.keep_copy {
            std::fs::remove_dir_all(&db)
                .with_context(|| format!("cannot remove the copy {}", db.display()))?;
            println!("removed the copy {}", db.display());
        } else {
            println!("kept the copy {}", db.display());
        }
    }
    Ok(passed)
}

/// Everything a verdict needs.
pub(crate) struct Outcome {
    pub(crate) samples: Vec<Sample>,
    pub(crate) idle: Sample,
    pub(crate) after: Sample,
    pub(crate) exit: std::process::ExitStatus,
    pub(crate) acked: Vec<String>,
    pub(crate) acked_play: u64,
    pub(crate) rejections: HashMap<String, u64>,
    pub(crate) unmatched_acks: u64,
}

fn soak(args: &Args, db: &Path, nodes0: u64, games0: u64) -> Result<bool> {
    let tsv_path = args.out.clone();
    let acked_path = side_path(&args.out, ".acked");
    let log_path = side_path(&args.out, ".coordinator.log");
    let mut coordinator = start_coordinator(args, db, &log_path)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the tokio runtime")?;
    let (ack_tx, ack_rx) = mpsc::unbounded_channel();
    let recorder = recorder(ack_rx, acked_path.clone());
    let fleet = Arc::new(Fleet {
        url: coordinator.url.clone(),
        args: args.clone(),
        counters: Counters::default(),
        acks: ack_tx,
        rejections: Mutex::new(HashMap::new()),
        next_identity: AtomicU64::new(0),
    });
    let (samples, idle, after) =
        runtime.block_on(drive(args, &mut coordinator, &fleet, &tsv_path))?;
    let patience = Duration::from_secs(30 + 60);
    let t = Instant::now();
    let exit = stop_coordinator(&mut coordinator, patience)?;
    println!(
        "coordinator exited ({exit}) {:.1} s after SIGTERM",
        t.elapsed().as_secs_f64()
    );
    drop(runtime);
    let rejections = fleet
        .rejections
        .lock()
        .map(|r| r.clone())
        .unwrap_or_default();
    let acked_play = load(&fleet.counters.acked_play);
    let unmatched_acks = load(&fleet.counters.unmatched_acks);
    // The recorder ends when the last sender (the fleet's) is gone.
    drop(fleet);
    let acked = recorder
        .join()
        .map_err(|_| anyhow!("the recorder thread panicked"))??;
    println!(
        "{} acknowledged think results recorded in {}",
        acked.len(),
        acked_path.display()
    );
    let outcome = Outcome {
        samples,
        idle,
        after,
        exit,
        acked,
        acked_play,
        rejections,
        unmatched_acks,
    };
    verdict(args, db, &outcome, nodes0, games0)
}

/// Idle sample, the run with its samples, the fleet stopped, the "after" sample.
async fn drive(
    args: &Args,
    coordinator: &mut Coordinator,
    fleet: &Arc<Fleet>,
    tsv_path: &Path,
) -> Result<(Vec<Sample>, Sample, Sample)> {
    let file = std::fs::File::create(tsv_path)
        .with_context(|| format!("cannot create {}", tsv_path.display()))?;
    let mut tsv = std::io::LineWriter::new(file);
    writeln!(tsv, "{TSV_HEADER}")?;
    // The metrics server answers once the coordinator is up; let it settle.
    let start = Instant::now();
    let idle = loop {
        match sample(coordinator, fleet, 0.0) {
            Ok(s) if s.nodes.is_finite() => break s,
            _ if start.elapsed() > Duration::from_secs(60) => {
                bail!(
                    "no metrics from http://{}/metrics within 60 s",
                    coordinator.metrics
                )
            }
            _ => tokio::time::sleep(Duration::from_millis(500)).await,
        }
    };
    tokio::time::sleep(Duration::from_secs(2)).await;
    let idle = sample(coordinator, fleet, 0.0).unwrap_or(idle);
    println!("idle: {}", idle.summary(idle.nodes));
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut members = JoinSet::new();
    for i in 0..args.workers {
        members.spawn(member(fleet.clone(), i as u64, stop_rx.clone()));
    }
    println!(
        "{} workers started; running {:.1} minutes, a sample every {} s into {}",
        args.workers,
        args.minutes,
        args.sample_secs,
        tsv_path.display()
    );
    let run = Duration::from_secs_f64(args.minutes * 60.0);
    let t0 = Instant::now();
    let mut samples = Vec::new();
    let mut next_minute = 1.0;
    let every = Duration::from_secs(args.sample_secs);
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    loop {
        tick.tick().await;
        if let Ok(Some(status)) = coordinator.child.try_wait() {
            bail!(
                "the coordinator exited ({status}) during the run:\n{}",
                coordinator.tail()
            );
        }
        let t = t0.elapsed().as_secs_f64();
        match sample(coordinator, fleet, t) {
            Ok(s) => {
                writeln!(tsv, "{}", s.tsv())?;
                if t / 60.0 >= next_minute || t0.elapsed() >= run {
                    println!("{}", s.summary(idle.nodes));
                    next_minute = (t / 60.0).floor() + 1.0;
                }
                samples.push(s);
            }
            Err(e) => eprintln!("sample at {t:.0} s failed: {e:#}"),
        }
        if t0.elapsed() >= run {
            break;
        }
    }
    println!("stopping the fleet");
    let _ = stop_tx.send(true);
    let wait = tokio::time::timeout(Duration::from_secs(60), async {
        while members.join_next().await.is_some() {}
    })
    .await;
    if wait.is_err() {
        eprintln!("some members did not stop within 60 s; aborting them");
        members.abort_all();
    }
    // Once the coordinator has seen every stream go, its connections close too.
    let gone = Instant::now();
    let mut after = sample(coordinator, fleet, t0.elapsed().as_secs_f64())?;
    while gone.elapsed() < Duration::from_secs(30) {
        tokio::time::sleep(Duration::from_secs(2)).await;
        after = sample(coordinator, fleet, t0.elapsed().as_secs_f64())?;
        let settled =
            after.workers == 0.0 && after.fds <= idle.fds + 1 && after.tasks <= idle.tasks + 1.0;
        if settled && gone.elapsed() >= Duration::from_secs(5) {
            break;
        }
    }
    writeln!(tsv, "{}", after.tsv())?;
    println!("after the fleet left: {}", after.summary(idle.nodes));
    Ok((samples, idle, after))
}
