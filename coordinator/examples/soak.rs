//! Soak benchmark (issue 14, item 6): a long run of a real coordinator process
//! under a churning fleet of simulated workers, watching for leaks and lost work.
//!
//! ```text
//! export CARGO_TARGET_DIR=...   # the same for both commands
//! cargo build --release -p coordinator --bin coordinator
//! cargo run --release -p coordinator --example soak -- \
//!     --db DIR --minutes 60 --workers 200 --out soak.tsv
//! ```
//!
//! DIR is an existing store, e.g. from `book-tools synth --db DIR --nodes
//! 1100000`. 1.1M rather than 1M: the selector's per-node cache is a `Vec` that
//! doubles its capacity when the book passes 2^20 = 1,048,576 nodes, a legitimate
//! step of tens of MB that a run starting just below it would take for a leak.
//! DIR is not touched: the harness copies it (beside it, as
//! `DIR.soak-PID`, or to `--copy-to`) and runs on the copy, which is deleted after
//! a run whose checks pass (kept with `--keep-copy`, and always when a check
//! fails). `--in-place` grows DIR itself instead.
//!
//! **The coordinator** is the `coordinator` executable of the same target
//! directory (`target/release/coordinator` beside `target/release/examples/soak`,
//! or `--coordinator PATH`): build it first as above. It runs as a separate
//! process on loopback with `--metrics` on a free port, `--lease-secs`
//! (default 60, so that hung workers' leases expire within the run), no think
//! limit (it would run forever), `--play-share` when asked, and any
//! `--coordinator-arg=ARG`. Its log goes to `OUT.coordinator.log`.
//!
//! **The fleet**: `--workers` members in this process, each a tokio task with its
//! own connection (one Work stream), 1-4 slots (`--slots`) and the protocol of the
//! real worker: Hello, heartbeats every 10 s, every job answered after a random
//! delay (`--think-ms`) with a value for every legal move (play jobs with a game
//! of random legal moves through the worker's own play code), results sent once.
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

use std::collections::HashMap;
use std::io::{BufRead, BufReader, BufWriter, LineWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use clap::Parser;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use stera_book::{Book, NodeStore, SledStore};
use stera_proto::v1::coordinator_client::CoordinatorClient;
use stera_proto::v1::{
    Credit, GiveBack, Heartbeat, Hello, Job, JobResult, WorkerMessage, coordinator_message, job,
    job_result, worker_message,
};
use stera_rules::Position;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;
use tokio_stream::wrappers::ReceiverStream;

#[path = "support/fake_engine.rs"]
mod fake_engine;
use fake_engine::RandomMover;

/// Command line.
#[derive(Parser, Debug, Clone)]
#[command(
    name = "soak",
    about = "Soak a coordinator process with a churning fleet of fake workers"
)]
struct Args {
    /// Existing book store to soak (copied first unless --in-place).
    #[arg(long)]
    db: PathBuf,
    /// Length of the run in minutes (fractions allowed).
    #[arg(long, default_value_t = 60.0)]
    minutes: f64,
    /// Simulated workers (members of the fleet).
    #[arg(long, default_value_t = 200)]
    workers: usize,
    /// Samples as TSV; beside it OUT.acked (acknowledged results) and
    /// OUT.coordinator.log.
    #[arg(long, default_value = "soak.tsv")]
    out: PathBuf,
    /// Directory for the copy of --db (must not exist). Default: DB.soak-PID.
    #[arg(long)]
    copy_to: Option<PathBuf>,
    /// Run on --db itself: the book grows by what the fleet thinks.
    #[arg(long, conflicts_with = "copy_to")]
    in_place: bool,
    /// Keep the copy after a run whose checks pass (kept anyway when one fails).
    #[arg(long)]
    keep_copy: bool,
    /// The coordinator executable. Default: `coordinator` in the target directory
    /// this example was built in.
    #[arg(long)]
    coordinator: Option<PathBuf>,
    /// Slots of each simulated worker, uniform in LO-HI.
    #[arg(long, default_value = "1-4", value_parser = parse_span)]
    slots: Span,
    /// Milliseconds each fake evaluation (or game) takes, uniform in LO-HI.
    #[arg(long, default_value = "20000-100000", value_parser = parse_span)]
    think_ms: Span,
    /// Mean seconds a worker stays connected (exponential distribution).
    #[arg(long, default_value_t = 180.0)]
    session_secs: f64,
    /// Seconds between a departure and the next connection, uniform in LO-HI.
    #[arg(long, default_value = "1-10", value_parser = parse_span)]
    pause_secs: Span,
    /// Share of departures that are kills (new id afterwards).
    #[arg(long, default_value_t = 0.3)]
    kill_share: f64,
    /// Share of departures that drop the connection (results resent later).
    #[arg(long, default_value_t = 0.2)]
    drop_share: f64,
    /// Share of departures that hang (silent for 1.5 x --lease-secs, then killed).
    #[arg(long, default_value_t = 0.05)]
    hang_share: f64,
    /// The coordinator's --lease-secs.
    #[arg(long, default_value_t = 60)]
    lease_secs: u64,
    /// The coordinator's --play-share (0: think jobs only).
    #[arg(long, default_value_t = 0.0)]
    play_share: f64,
    /// Seconds between samples.
    #[arg(long, default_value_t = 10)]
    sample_secs: u64,
    /// Minutes excluded from the checks at the start. Default: 10 % of the run.
    #[arg(long)]
    warmup_mins: Option<f64>,
    /// Allowed RSS spread after the warm-up (max/min - 1), book growth deducted.
    #[arg(long, default_value_t = 0.05)]
    rss_tolerance: f64,
    /// Bytes of RSS a node added to the book may legitimately cost (the book's
    /// growth is deducted at this rate). Default: the idle coordinator's RSS per
    /// node of the book it loaded.
    #[arg(long)]
    bytes_per_node: Option<f64>,
    /// Seed of the fleet's random choices.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// One more coordinator argument (repeatable), e.g. --coordinator-arg=--select=softmax.
    #[arg(long = "coordinator-arg", allow_hyphen_values = true)]
    coordinator_args: Vec<String>,
}

/// An inclusive range `LO-HI` (or a single number).
#[derive(Debug, Clone, Copy)]
struct Span {
    lo: u64,
    hi: u64,
}

impl Span {
    fn draw(self, rng: &mut StdRng) -> u64 {
        rng.random_range(self.lo..=self.hi)
    }
}

fn parse_span(s: &str) -> Result<Span, String> {
    let (lo, hi) = s.split_once('-').unwrap_or((s, s));
    let num = |t: &str| {
        t.trim()
            .parse::<u64>()
            .map_err(|e| format!("`{t}` in `{s}`: {e}"))
    };
    let (lo, hi) = (num(lo)?, num(hi)?);
    if lo > hi {
        return Err(format!("`{s}`: the low end is above the high end"));
    }
    Ok(Span { lo, hi })
}

// ---------------------------------------------------------------------------
// The fleet

/// How a member leaves the coordinator at the end of a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Departure {
    Leave,
    Drop,
    Kill,
    Hang,
}

/// How a connection ended.
enum End {
    /// The fleet is stopping.
    Stopped,
    Departed(Departure),
    /// No connection, or the coordinator ended the stream.
    Failed,
}

/// The fleet's counters (sampled with the coordinator).
#[derive(Default)]
struct Counters {
    connected: AtomicI64,
    sessions: AtomicU64,
    connect_errors: AtomicU64,
    lost: AtomicU64,
    jobs: AtomicU64,
    results_sent: AtomicU64,
    resent: AtomicU64,
    acked_think: AtomicU64,
    acked_play: AtomicU64,
    rejected: AtomicU64,
    unmatched_acks: AtomicU64,
    give_backs: AtomicU64,
    leaves: AtomicU64,
    drops: AtomicU64,
    kills: AtomicU64,
    hangs: AtomicU64,
}

fn load(a: &AtomicU64) -> u64 {
    a.load(Ordering::Relaxed)
}

fn bump(a: &AtomicU64) {
    a.fetch_add(1, Ordering::Relaxed);
}

/// What a result sent on a stream was about, until it is answered.
#[derive(Debug, Clone)]
struct Sent {
    play: bool,
    sfen: String,
}

/// An acknowledged result.
struct Acked {
    lease_id: u64,
    sent: Sent,
}

/// What every member shares.
struct Fleet {
    url: String,
    args: Args,
    counters: Counters,
    acks: mpsc::UnboundedSender<Acked>,
    rejections: Mutex<HashMap<String, u64>>,
    next_identity: AtomicU64,
}

impl Fleet {
    fn identity(&self) -> String {
        format!(
            "soak-{}",
            self.next_identity.fetch_add(1, Ordering::Relaxed)
        )
    }

    fn departure(&self, rng: &mut StdRng) -> Departure {
        let x: f64 = rng.random();
        let a = &self.args;
        if x < a.kill_share {
            Departure::Kill
        } else if x < a.kill_share + a.drop_share {
            Departure::Drop
        } else if x < a.kill_share + a.drop_share + a.hang_share {
            Departure::Hang
        } else {
            Departure::Leave
        }
    }

    fn session_length(&self, rng: &mut StdRng) -> Duration {
        let u: f64 = rng.random_range(f64::EPSILON..1.0);
        let mean = self.args.session_secs.max(1.0);
        Duration::from_secs_f64((-u.ln() * mean).clamp(2.0, 10.0 * mean))
    }

    fn reject(&self, reason: &str) {
        bump(&self.counters.rejected);
        // Reasons name leases and positions: numbers become N and the text is cut
        // short, so that reasons of a kind count together.
        let mut kind = String::new();
        for c in reason.chars().take(60) {
            if !c.is_ascii_digit() {
                kind.push(c);
            } else if !kind.ends_with('N') {
                kind.push('N');
            }
        }
        if let Ok(mut r) = self.rejections.lock() {
            *r.entry(kind).or_default() += 1;
        }
    }
}

/// The fake worker's answer to a job, or why it gives the job back.
fn answer(job: &Job) -> Result<(JobResult, Sent), String> {
    match &job.kind {
        Some(job::Kind::Think(think)) => {
            let pos = Position::from_sfen(&think.sfen).map_err(|e| e.to_string())?;
            let moves = fake_engine::move_values(&pos);
            let result =
                JobResult::think(job.lease_id, think.sfen.clone(), moves, 1, 0, "fake".into());
            let sent = Sent {
                play: false,
                sfen: think.sfen.clone(),
            };
            Ok((result, sent))
        }
        Some(job::Kind::Play(play)) => {
            let mut player = RandomMover(job.lease_id | 1);
            let game =
                stera_worker::play::play(play, &mut player, &stera_engine::Limits::default())?;
            let result = JobResult {
                lease_id: job.lease_id,
                engine: "fake".into(),
                kind: Some(job_result::Kind::Play(game)),
                ..JobResult::default()
            };
            let sent = Sent {
                play: true,
                sfen: play.start_sfen.clone(),
            };
            Ok((result, sent))
        }
        _ => Err("the soak's fake worker answers think and play jobs only".into()),
    }
}

fn msg(m: worker_message::Msg) -> WorkerMessage {
    WorkerMessage { msg: Some(m) }
}

/// Sleeps, or returns true at once when the fleet stops.
async fn stopped_during(stop: &mut watch::Receiver<bool>, d: Duration) -> bool {
    if *stop.borrow() {
        return true;
    }
    tokio::select! {
        () = tokio::time::sleep(d) => *stop.borrow(),
        _ = stop.changed() => true,
    }
}

/// One member of the fleet: connections and departures until the fleet stops.
async fn member(fleet: Arc<Fleet>, index: u64, mut stop: watch::Receiver<bool>) {
    let mut rng = StdRng::seed_from_u64(
        fleet
            .args
            .seed
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .wrapping_add(index),
    );
    let mut identity = fleet.identity();
    let mut slots = fleet.args.slots.draw(&mut rng).max(1);
    let mut carried: Vec<(JobResult, Sent)> = Vec::new();
    if stopped_during(
        &mut stop,
        Duration::from_millis(rng.random_range(0..10_000)),
    )
    .await
    {
        return;
    }
    loop {
        let departure = fleet.departure(&mut rng);
        let length = fleet.session_length(&mut rng);
        let mut session = match Session::open(&fleet, &identity, slots).await {
            Ok(s) => s,
            Err(e) => {
                // The first few are worth seeing; the count is in every sample.
                if fleet
                    .counters
                    .connect_errors
                    .fetch_add(1, Ordering::Relaxed)
                    < 5
                {
                    eprintln!("{identity}: cannot connect: {e}");
                }
                if stopped_during(&mut stop, Duration::from_secs(1)).await {
                    return;
                }
                continue;
            }
        };
        let end = session
            .run(&mut carried, departure, length, &mut rng, &mut stop)
            .await;
        drop(session);
        match end {
            End::Stopped => return,
            End::Departed(Departure::Kill | Departure::Hang) => {
                identity = fleet.identity();
                slots = fleet.args.slots.draw(&mut rng).max(1);
                carried.clear();
            }
            End::Departed(_) | End::Failed => {}
        }
        let pause = Duration::from_secs(fleet.args.pause_secs.draw(&mut rng));
        if stopped_during(&mut stop, pause).await {
            return;
        }
    }
}

/// A fake evaluation's end: its lease, and the result or why it failed.
type Finished = (u64, Result<(JobResult, Sent), String>);

/// One Work stream of a member.
struct Session {
    fleet: Arc<Fleet>,
    tx: mpsc::Sender<WorkerMessage>,
    inbound: tonic::Streaming<stera_proto::v1::CoordinatorMessage>,
    /// Results sent and not answered yet, by lease id.
    sent: HashMap<u64, Sent>,
    /// Jobs being "evaluated".
    in_hand: HashMap<u64, Job>,
    evals: JoinSet<()>,
    done_tx: mpsc::UnboundedSender<Finished>,
    done_rx: mpsc::UnboundedReceiver<Finished>,
    heartbeat: Duration,
}

impl Drop for Session {
    fn drop(&mut self) {
        self.fleet
            .counters
            .connected
            .fetch_sub(1, Ordering::Relaxed);
    }
}

impl Session {
    /// Connects (a connection of its own) and says Hello.
    async fn open(fleet: &Arc<Fleet>, identity: &str, slots: u64) -> Result<Self, String> {
        let endpoint = tonic::transport::Endpoint::from_shared(fleet.url.clone())
            .map_err(|e| e.to_string())?
            .connect_timeout(Duration::from_secs(5));
        let channel = endpoint.connect().await.map_err(|e| e.to_string())?;
        let mut client = CoordinatorClient::new(channel);
        let (tx, rx) = mpsc::channel::<WorkerMessage>(256);
        let hello = Hello {
            worker_id: identity.to_owned(),
            version: "soak".into(),
            engine: "fake".into(),
            slots: u32::try_from(slots).unwrap_or(u32::MAX),
            protocol: stera_proto::PROTOCOL_VERSION,
        };
        tx.send(msg(worker_message::Msg::Hello(hello)))
            .await
            .map_err(|e| e.to_string())?;
        let inbound = client
            .work(ReceiverStream::new(rx))
            .await
            .map_err(|s| format!("{:?}: {}", s.code(), s.message()))?
            .into_inner();
        fleet.counters.connected.fetch_add(1, Ordering::Relaxed);
        bump(&fleet.counters.sessions);
        let (done_tx, done_rx) = mpsc::unbounded_channel();
        Ok(Self {
            fleet: fleet.clone(),
            tx,
            inbound,
            sent: HashMap::new(),
            in_hand: HashMap::new(),
            evals: JoinSet::new(),
            done_tx,
            done_rx,
            heartbeat: Duration::from_secs(10),
        })
    }

    async fn send(&self, m: worker_message::Msg) -> bool {
        self.tx.send(msg(m)).await.is_ok()
    }

    async fn send_result(&mut self, result: JobResult, sent: Sent) -> bool {
        self.sent.insert(result.lease_id, sent);
        bump(&self.fleet.counters.results_sent);
        self.send(worker_message::Msg::Result(result)).await
    }

    /// Answers (acks, rejections) are recorded; jobs start an evaluation unless
    /// the member is leaving (then they are given back).
    async fn on_message(
        &mut self,
        m: stera_proto::v1::CoordinatorMessage,
        rng: &mut StdRng,
        leaving: bool,
    ) {
        match m.msg {
            Some(coordinator_message::Msg::Job(job)) => {
                bump(&self.fleet.counters.jobs);
                if leaving {
                    self.give_back(job.lease_id).await;
                    return;
                }
                let delay = Duration::from_millis(self.fleet.args.think_ms.draw(rng));
                let done = self.done_tx.clone();
                let copy = job.clone();
                self.in_hand.insert(job.lease_id, job);
                self.evals.spawn(async move {
                    tokio::time::sleep(delay).await;
                    let lease = copy.lease_id;
                    let answer = tokio::task::spawn_blocking(move || answer(&copy))
                        .await
                        .unwrap_or_else(|e| Err(format!("fake evaluation panicked: {e}")));
                    let _ = done.send((lease, answer));
                });
            }
            Some(coordinator_message::Msg::Ack(a)) => match self.sent.remove(&a.lease_id) {
                Some(sent) => {
                    let c = &self.fleet.counters;
                    bump(if sent.play {
                        &c.acked_play
                    } else {
                        &c.acked_think
                    });
                    let _ = self.fleet.acks.send(Acked {
                        lease_id: a.lease_id,
                        sent,
                    });
                }
                None => bump(&self.fleet.counters.unmatched_acks),
            },
            Some(coordinator_message::Msg::Rejected(r)) => {
                self.sent.remove(&r.lease_id);
                self.fleet.reject(&r.reason);
            }
            Some(coordinator_message::Msg::Welcome(w)) => {
                if w.heartbeat_ms > 0 {
                    self.heartbeat = Duration::from_millis(u64::from(w.heartbeat_ms));
                }
            }
            Some(coordinator_message::Msg::Drain(_)) | None => {}
        }
    }

    async fn give_back(&mut self, lease_id: u64) {
        bump(&self.fleet.counters.give_backs);
        let g = GiveBack {
            lease_id,
            reason: "soak: worker leaving".into(),
            failed: false,
        };
        let _ = self.send(worker_message::Msg::GiveBack(g)).await;
    }

    /// Until the departure time (or the fleet stops, or the stream ends).
    async fn run(
        &mut self,
        carried: &mut Vec<(JobResult, Sent)>,
        departure: Departure,
        length: Duration,
        rng: &mut StdRng,
        stop: &mut watch::Receiver<bool>,
    ) -> End {
        // Results finished while disconnected go out first.
        for (result, sent) in carried.drain(..) {
            bump(&self.fleet.counters.resent);
            if !self.send_result(result, sent).await {
                return End::Failed;
            }
        }
        let depart_at = tokio::time::Instant::now() + length;
        let mut heartbeat = tokio::time::interval(self.heartbeat);
        heartbeat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                m = self.inbound.message() => match m {
                    Ok(Some(m)) => {
                        let before = self.heartbeat;
                        self.on_message(m, rng, false).await;
                        if self.heartbeat != before {
                            heartbeat = tokio::time::interval(self.heartbeat);
                            heartbeat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                        }
                    }
                    Ok(None) | Err(_) => {
                        if *stop.borrow() {
                            return End::Stopped;
                        }
                        bump(&self.fleet.counters.lost);
                        return End::Failed;
                    }
                },
                Some((lease, answer)) = self.done_rx.recv() => {
                    self.in_hand.remove(&lease);
                    match answer {
                        Ok((result, sent)) => {
                            if !self.send_result(result, sent).await {
                                return End::Failed;
                            }
                        }
                        Err(reason) => {
                            let g = GiveBack { lease_id: lease, reason, failed: true };
                            let _ = self.send(worker_message::Msg::GiveBack(g)).await;
                        }
                    }
                }
                Some(_) = self.evals.join_next(), if !self.evals.is_empty() => {}
                _ = heartbeat.tick() => {
                    let busy = u32::try_from(self.in_hand.len()).unwrap_or(u32::MAX);
                    let evaluated = load(&self.fleet.counters.results_sent);
                    let h = Heartbeat { busy_slots: busy, evaluated };
                    let _ = self.send(worker_message::Msg::Heartbeat(h)).await;
                }
                () = tokio::time::sleep_until(depart_at) => break,
                _ = stop.changed() => {
                    self.leave(rng).await;
                    return End::Stopped;
                }
            }
        }
        let c = &self.fleet.counters;
        match departure {
            Departure::Leave => {
                bump(&c.leaves);
                self.leave(rng).await;
            }
            Departure::Drop => {
                bump(&c.drops);
                // The evaluations in hand finish while the member is away.
                self.evals.abort_all();
                for job in self.in_hand.values() {
                    if let Ok(done) = answer(job) {
                        carried.push(done);
                    }
                }
            }
            Departure::Kill => bump(&c.kills),
            Departure::Hang => {
                bump(&c.hangs);
                self.evals.abort_all();
                let silent = Duration::from_secs(self.fleet.args.lease_secs.max(1) * 3 / 2);
                if stopped_during(stop, silent).await {
                    return End::Stopped;
                }
            }
        }
        End::Departed(departure)
    }

    /// A clean departure: no more jobs, the jobs in hand given back, the answers
    /// to the results sent awaited (up to 10 s), then the stream closed.
    async fn leave(&mut self, rng: &mut StdRng) {
        self.evals.abort_all();
        let _ = self
            .send(worker_message::Msg::Credit(Credit { slots: 0 }))
            .await;
        let held: Vec<u64> = self.in_hand.drain().map(|(id, _)| id).collect();
        for id in held {
            self.give_back(id).await;
        }
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while !self.sent.is_empty() {
            match tokio::time::timeout_at(deadline, self.inbound.message()).await {
                Ok(Ok(Some(m))) => self.on_message(m, rng, true).await,
                _ => return,
            }
        }
        // Closing the request stream ends the Work call; the coordinator then ends
        // the response stream.
        let (closed, _) = mpsc::channel(1);
        self.tx = closed;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while let Ok(Ok(Some(m))) = tokio::time::timeout_at(deadline, self.inbound.message()).await
        {
            self.on_message(m, rng, true).await;
        }
    }
}

/// Appends every acknowledged result to `path` and keeps the think positions.
fn recorder(
    mut rx: mpsc::UnboundedReceiver<Acked>,
    path: PathBuf,
) -> std::thread::JoinHandle<Result<Vec<String>>> {
    std::thread::spawn(move || {
        let file = std::fs::File::create(&path)
            .with_context(|| format!("cannot create {}", path.display()))?;
        let mut out = BufWriter::new(file);
        let mut think = Vec::new();
        while let Some(first) = rx.blocking_recv() {
            let mut next = Some(first);
            while let Some(a) = next {
                let kind = if a.sent.play { "play" } else { "think" };
                writeln!(out, "{kind}\t{}\t{}", a.lease_id, a.sent.sfen)
                    .with_context(|| format!("cannot write {}", path.display()))?;
                if !a.sent.play {
                    think.push(a.sent.sfen);
                }
                next = rx.try_recv().ok();
            }
            out.flush()
                .with_context(|| format!("cannot write {}", path.display()))?;
        }
        Ok(think)
    })
}

// ---------------------------------------------------------------------------
// The coordinator process

/// The coordinator child process.
struct Coordinator {
    child: Child,
    url: String,
    metrics: String,
    log_tail: Arc<Mutex<Vec<String>>>,
}

impl Coordinator {
    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn tail(&self) -> String {
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

fn coordinator_exe(args: &Args) -> Result<PathBuf> {
    if let Some(p) = &args.coordinator {
        return Ok(p.clone());
    }
    let me = std::env::current_exe().context("cannot find this executable's path")?;
    // target/<profile>/examples/soak -> target/<profile>/coordinator
    let exe = me
        .parent()
        .and_then(Path::parent)
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

fn free_port() -> Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

fn start_coordinator(args: &Args, db: &Path, log_path: &Path) -> Result<Coordinator> {
    let exe = coordinator_exe(args)?;
    let metrics = format!("127.0.0.1:{}", free_port()?);
    let mut cmd = Command::new(&exe);
    cmd.arg("--db")
        .arg(db)
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
fn stop_coordinator(c: &mut Coordinator, patience: Duration) -> Result<std::process::ExitStatus> {
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

// ---------------------------------------------------------------------------
// Samples

/// One sample of the coordinator process and the fleet.
#[derive(Debug, Clone, Default)]
struct Sample {
    t: f64,
    rss_kb: u64,
    rss_anon_kb: u64,
    rss_file_kb: u64,
    threads: u64,
    fds: u64,
    tasks: f64,
    nodes: f64,
    workers: f64,
    leases: f64,
    thought: f64,
    expired: f64,
    requeued: f64,
    rejected: f64,
    duplicates: f64,
    fleet_connected: i64,
    acked_think: u64,
    acked_play: u64,
    fleet_rejected: u64,
    sessions: u64,
    leaves: u64,
    drops: u64,
    kills: u64,
    hangs: u64,
    connect_errors: u64,
    lost: u64,
    resent: u64,
}

const TSV_HEADER: &str = "t_s\trss_kb\trss_anon_kb\trss_file_kb\tthreads\tfds\ttokio_tasks\tnodes\tworkers_connected\tleases_in_flight\tthought_total\tlease_expiries_total\trequeued_total\trejected_total\tduplicates_total\tfleet_connected\tacked_think\tacked_play\tfleet_rejected\tsessions\tleaves\tdrops\tkills\thangs\tconnect_errors\tstreams_lost\tresent";

impl Sample {
    fn tsv(&self) -> String {
        format!(
            "{:.1}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
            self.t,
            self.rss_kb,
            self.rss_anon_kb,
            self.rss_file_kb,
            self.threads,
            self.fds,
            self.tasks,
            self.nodes,
            self.workers,
            self.leases,
            self.thought,
            self.expired,
            self.requeued,
            self.rejected,
            self.duplicates,
            self.fleet_connected,
            self.acked_think,
            self.acked_play,
            self.fleet_rejected,
            self.sessions,
            self.leaves,
            self.drops,
            self.kills,
            self.hangs,
            self.connect_errors,
            self.lost,
            self.resent
        )
    }

    fn rss_mb(&self) -> f64 {
        self.rss_kb as f64 / 1024.0
    }

    fn summary(&self, nodes0: f64) -> String {
        format!(
            "[{:>5.1} min] rss {:.1} MB (anon {:.1}, file {:.1}), fds {}, threads {}, tasks {}, nodes {} (+{}), workers {} (fleet {}), leases {}, acked {} think / {} play, rejected {}, expiries {}, sessions {} (leave {}, drop {}, kill {}, hang {}), connect errors {}",
            self.t / 60.0,
            self.rss_mb(),
            self.rss_anon_kb as f64 / 1024.0,
            self.rss_file_kb as f64 / 1024.0,
            self.fds,
            self.threads,
            self.tasks,
            self.nodes,
            self.nodes - nodes0,
            self.workers,
            self.fleet_connected,
            self.leases,
            self.acked_think,
            self.acked_play,
            self.fleet_rejected,
            self.expired,
            self.sessions,
            self.leaves,
            self.drops,
            self.kills,
            self.hangs,
            self.connect_errors
        )
    }
}

/// `/proc/PID/status`: VmRSS, RssAnon, RssFile (kB) and Threads.
fn proc_status(pid: u32) -> Result<[u64; 4]> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .with_context(|| format!("cannot read /proc/{pid}/status"))?;
    let field = |name: &str| {
        text.lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<u64>().ok())
            .ok_or_else(|| anyhow!("no {name} in /proc/{pid}/status"))
    };
    Ok([
        field("VmRSS:")?,
        field("RssAnon:")?,
        field("RssFile:")?,
        field("Threads:")?,
    ])
}

fn open_fds(pid: u32) -> Result<u64> {
    let dir = format!("/proc/{pid}/fd");
    Ok(std::fs::read_dir(&dir)
        .with_context(|| format!("cannot list {dir}"))?
        .count() as u64)
}

/// GET /metrics over plain HTTP/1.1; each metric's value summed over its labels.
fn scrape(addr: &str) -> Result<HashMap<String, f64>> {
    let sock: std::net::SocketAddr = addr.parse()?;
    let mut s = std::net::TcpStream::connect_timeout(&sock, Duration::from_secs(5))
        .with_context(|| format!("cannot connect to the metrics address {addr}"))?;
    s.set_read_timeout(Some(Duration::from_secs(20)))?;
    s.set_write_timeout(Some(Duration::from_secs(5)))?;
    write!(
        s,
        "GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw)
        .with_context(|| format!("reading http://{addr}/metrics"))?;
    let text = String::from_utf8_lossy(&raw);
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| anyhow!("no HTTP header from {addr}"))?;
    if !head.starts_with("HTTP/1.1 200") {
        bail!(
            "GET http://{addr}/metrics: {}",
            head.lines().next().unwrap_or("")
        );
    }
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(body)
    } else {
        body.to_owned()
    };
    let mut out: HashMap<String, f64> = HashMap::new();
    for line in body.lines() {
        if line.starts_with('#') || line.is_empty() {
            continue;
        }
        let name = line.split(['{', ' ']).next().unwrap_or("");
        if let Some(v) = line.rsplit(' ').next().and_then(|v| v.parse::<f64>().ok()) {
            *out.entry(name.to_owned()).or_default() += v;
        }
    }
    Ok(out)
}

/// The body of a chunked HTTP/1.1 response.
fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        body = rest[n..].strip_prefix("\r\n").unwrap_or(&rest[n..]);
    }
    out
}

fn sample(c: &Coordinator, fleet: &Fleet, t: f64) -> Result<Sample> {
    let [rss_kb, rss_anon_kb, rss_file_kb, threads] = proc_status(c.pid())?;
    let fds = open_fds(c.pid())?;
    let m = scrape(&c.metrics)?;
    let g = |name: &str| m.get(name).copied().unwrap_or(f64::NAN);
    let f = &fleet.counters;
    Ok(Sample {
        t,
        rss_kb,
        rss_anon_kb,
        rss_file_kb,
        threads,
        fds,
        tasks: g("stera_coordinator_tokio_tasks"),
        nodes: g("stera_book_nodes"),
        workers: g("stera_coordinator_workers_connected"),
        leases: g("stera_coordinator_leases_in_flight"),
        thought: g("stera_coordinator_thought_positions_total"),
        expired: g("stera_coordinator_lease_expiries_total"),
        requeued: g("stera_coordinator_leases_requeued_total"),
        rejected: g("stera_coordinator_results_rejected_total"),
        duplicates: g("stera_coordinator_results_duplicate_total"),
        fleet_connected: f.connected.load(Ordering::Relaxed),
        acked_think: load(&f.acked_think),
        acked_play: load(&f.acked_play),
        fleet_rejected: load(&f.rejected),
        sessions: load(&f.sessions),
        leaves: load(&f.leaves),
        drops: load(&f.drops),
        kills: load(&f.kills),
        hangs: load(&f.hangs),
        connect_errors: load(&f.connect_errors),
        lost: load(&f.lost),
        resent: load(&f.resent),
    })
}

// ---------------------------------------------------------------------------
// The store

fn copy_dir(from: &Path, to: &Path) -> Result<u64> {
    std::fs::create_dir(to).with_context(|| format!("cannot create {}", to.display()))?;
    let mut bytes = 0;
    for entry in
        std::fs::read_dir(from).with_context(|| format!("cannot list {}", from.display()))?
    {
        let entry = entry?;
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        let kind = entry.file_type()?;
        if kind.is_dir() {
            bytes += copy_dir(&src, &dst)?;
        } else if kind.is_file() {
            bytes += std::fs::copy(&src, &dst)
                .with_context(|| format!("cannot copy {} to {}", src.display(), dst.display()))?;
        } else {
            bail!("{} is neither a file nor a directory", src.display());
        }
    }
    Ok(bytes)
}

/// Nodes and games of a closed store.
fn store_counts(db: &Path) -> Result<(u64, u64)> {
    let store = SledStore::open_existing(db)
        .with_context(|| format!("cannot open the store {}", db.display()))?;
    Ok((u64::from(store.len()), store.games_recorded()?))
}

/// Which acknowledged positions the closed store lacks; its nodes and games.
fn check_store(db: &Path, acked: &[String]) -> Result<(Vec<String>, u64, u64)> {
    let store = SledStore::open_existing(db)
        .with_context(|| format!("cannot reopen the store {}", db.display()))?;
    let games = store.games_recorded()?;
    let book = Book::load(&store).context("cannot load the book")?;
    let mut missing = Vec::new();
    for sfen in acked {
        let key = Position::from_sfen(sfen)
            .with_context(|| format!("acknowledged position `{sfen}`"))?
            .key();
        if !book.contains(key) {
            missing.push(sfen.clone());
        }
    }
    Ok((missing, book.len() as u64, games))
}

// ---------------------------------------------------------------------------
// The run

fn side_path(out: &Path, suffix: &str) -> PathBuf {
    let mut s = out.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

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
struct Outcome {
    samples: Vec<Sample>,
    idle: Sample,
    after: Sample,
    exit: std::process::ExitStatus,
    acked: Vec<String>,
    acked_play: u64,
    rejections: HashMap<String, u64>,
    unmatched_acks: u64,
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
    let mut tsv = LineWriter::new(file);
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

/// One check's line and whether it passed.
fn check(ok: bool, what: String) -> bool {
    println!("{} {what}", if ok { "PASS" } else { "FAIL" });
    ok
}

fn verdict(args: &Args, db: &Path, o: &Outcome, nodes0: u64, games0: u64) -> Result<bool> {
    let warmup = args.warmup_mins.unwrap_or(args.minutes * 0.1) * 60.0;
    let after_warmup: Vec<&Sample> = o.samples.iter().filter(|s| s.t >= warmup).collect();
    let (Some(first), Some(last)) = (after_warmup.first(), after_warmup.last()) else {
        bail!("no sample after the warm-up of {warmup:.0} s");
    };
    println!();
    println!(
        "verdict: {} samples after a warm-up of {:.1} min (of {:.1} min), {} workers",
        after_warmup.len(),
        warmup / 60.0,
        args.minutes,
        args.workers
    );
    let mut ok = rss_flat(args, &o.idle, &after_warmup, first, last);
    ok &= no_growth(o, &after_warmup, first, last);
    ok &= check(
        o.exit.success(),
        format!("the coordinator exited on SIGTERM: {}", o.exit),
    );
    ok &= nothing_lost(db, o, nodes0, games0)?;
    report_counters(o, &after_warmup);
    println!("{}", if ok { "SOAK PASSED" } else { "SOAK FAILED" });
    Ok(ok)
}

/// RSS after the warm-up, the book's growth deducted at the idle coordinator's
/// bytes per node.
fn rss_flat(args: &Args, idle: &Sample, window: &[&Sample], first: &Sample, last: &Sample) -> bool {
    const MB: f64 = 1_048_576.0;
    let bytes = |s: &Sample| s.rss_kb as f64 * 1024.0;
    let per_node = args
        .bytes_per_node
        .unwrap_or(bytes(idle) / idle.nodes.max(1.0));
    let adjusted = |s: &Sample| bytes(s) - per_node * (s.nodes - first.nodes);
    let (raw_min, raw_max) = min_max(window.iter().map(|s| bytes(s)));
    let (adj_min, adj_max) = min_max(window.iter().map(|s| adjusted(s)));
    let grown = last.nodes - first.nodes;
    println!(
        "rss: idle {:.1} MB at {} nodes ({:.0} B/node); after warm-up raw min {:.1} max {:.1} MB (+{:.2} %), first {:.1} last {:.1} MB",
        idle.rss_mb(),
        idle.nodes,
        bytes(idle) / idle.nodes.max(1.0),
        raw_min / MB,
        raw_max / MB,
        (raw_max / raw_min - 1.0) * 100.0,
        first.rss_mb(),
        last.rss_mb(),
    );
    // What the growth would cost per event if one kind of event caused it all (a
    // hint where to look, not a measurement of either).
    let grew = bytes(last) - bytes(first);
    let requeued = last.requeued - first.requeued;
    let sessions = last.sessions.saturating_sub(first.sessions) as f64;
    println!(
        "rss growth after warm-up: {:+.1} MB over +{grown} nodes, +{requeued} requeued leases, +{sessions} sessions: {:.0} B per node, {:.1} KB per requeued lease, {:.1} KB per session if each alone caused it",
        grew / MB,
        grew / grown.max(1.0),
        grew / requeued.max(1.0) / 1024.0,
        grew / sessions.max(1.0) / 1024.0,
    );
    let spread = adj_max / adj_min - 1.0;
    check(
        spread <= args.rss_tolerance,
        format!(
            "RSS flat after warm-up, book growth deducted ({:.1} MB at {per_node:.0} B/node): min {:.1} MB, max {:.1} MB, spread {:.2} % (limit {:.1} %)",
            per_node * grown / MB,
            adj_min / MB,
            adj_max / MB,
            spread * 100.0,
            args.rss_tolerance * 100.0
        ),
    )
}

/// fds and tokio tasks: no more than the connected workers explain, and back
/// to idle once the fleet left.
fn no_growth(o: &Outcome, window: &[&Sample], first: &Sample, last: &Sample) -> bool {
    let idle = &o.idle;
    let mut ok = true;
    for (name, get) in [
        ("fds", (|s: &Sample| s.fds as f64) as fn(&Sample) -> f64),
        ("tokio tasks", |s: &Sample| s.tasks),
    ] {
        let per_worker = (get(first) - get(idle)) / first.workers.max(1.0);
        let allowed = per_worker * (last.workers - first.workers) + 4.0;
        let (lo, hi) = min_max(window.iter().map(|s| get(s)));
        ok &= check(
            get(last) - get(first) <= allowed,
            format!(
                "{name}: idle {}, first after warm-up {} with {} workers ({per_worker:.2} per worker), last {} with {} workers (allowed <= {:.0}), min {lo} max {hi}",
                get(idle),
                get(first),
                first.workers,
                get(last),
                last.workers,
                get(first) + allowed,
            ),
        );
        ok &= check(
            get(&o.after) <= get(idle) + 4.0,
            format!(
                "{name} after the fleet left: {} ({} workers connected), idle {}",
                get(&o.after),
                o.after.workers,
                get(idle)
            ),
        );
    }
    println!(
        "threads: idle {}, first after warm-up {}, last {}, after {}, max {}",
        idle.threads,
        first.threads,
        last.threads,
        o.after.threads,
        o.samples.iter().map(|s| s.threads).max().unwrap_or(0)
    );
    ok
}

/// Every acknowledged think result's position in the store; the games too.
fn nothing_lost(db: &Path, o: &Outcome, nodes0: u64, games0: u64) -> Result<bool> {
    let t = Instant::now();
    let (missing, nodes, games) = check_store(db, &o.acked)?;
    let distinct: std::collections::HashSet<&String> = o.acked.iter().collect();
    println!(
        "store after the run: {nodes} nodes (+{} since the start; {} distinct positions acknowledged), {games} games (+{}), checked in {:.1} s",
        nodes.saturating_sub(nodes0),
        distinct.len(),
        games.saturating_sub(games0),
        t.elapsed().as_secs_f64()
    );
    for s in missing.iter().take(10) {
        println!("  missing: {s}");
    }
    let mut ok = check(
        missing.is_empty(),
        format!(
            "acknowledged think results missing from the store: {} of {}",
            missing.len(),
            o.acked.len()
        ),
    );
    ok &= check(
        games >= games0 + o.acked_play,
        format!(
            "games stored {games} >= {games0} before + {} acknowledged",
            o.acked_play
        ),
    );
    Ok(ok)
}

fn report_counters(o: &Outcome, window: &[&Sample]) {
    let a = &o.after;
    println!(
        "fleet: {} sessions (leave {}, drop {}, kill {}, hang {}), {} results resent after a drop, {} streams ended by the coordinator, {} connect errors, {} acks of unknown leases",
        a.sessions,
        a.leaves,
        a.drops,
        a.kills,
        a.hangs,
        a.resent,
        a.lost,
        a.connect_errors,
        o.unmatched_acks
    );
    println!(
        "coordinator counters at the end: thought {}, lease expiries {}, requeued {}, rejected {}, duplicates {}; mean connected workers after warm-up {:.1}",
        a.thought,
        a.expired,
        a.requeued,
        a.rejected,
        a.duplicates,
        window.iter().map(|s| s.workers).sum::<f64>() / window.len().max(1) as f64
    );
    let mut reasons: Vec<(&String, &u64)> = o.rejections.iter().collect();
    reasons.sort_by(|a, b| b.1.cmp(a.1));
    for (reason, n) in reasons.iter().take(8) {
        println!("  rejected {n} x: {reason}...");
    }
}

fn min_max(values: impl Iterator<Item = f64>) -> (f64, f64) {
    values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    })
}
