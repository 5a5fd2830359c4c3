//! The fleet: simulated workers connecting, answering and departing (leave, drop,
//! kill, hang) as the module documentation of `main.rs` describes.

use std::collections::HashMap;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, Result};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use stera_proto::v1::{
    Credit, GiveBack, Heartbeat, Job, JobResult, WorkerMessage, coordinator_message, job,
    worker_message,
};
use stera_rules::Position;
use stera_testkit::fake_worker::{WorkStream, client_within, hello_of, message as msg, open_work};
use stera_testkit::random_mover::move_values;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;

use crate::cli::Args;

/// How a member leaves the coordinator at the end of a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Departure {
    Leave,
    Drop,
    Kill,
    Hang,
}

/// How a connection ended.
pub(crate) enum End {
    /// The fleet is stopping.
    Stopped,
    Departed(Departure),
    /// No connection, or the coordinator ended the stream.
    Failed,
}

/// The fleet's counters (sampled with the coordinator).
#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) connected: AtomicI64,
    pub(crate) sessions: AtomicU64,
    pub(crate) connect_errors: AtomicU64,
    pub(crate) lost: AtomicU64,
    pub(crate) jobs: AtomicU64,
    pub(crate) results_sent: AtomicU64,
    pub(crate) resent: AtomicU64,
    pub(crate) acked_think: AtomicU64,
    pub(crate) acked_play: AtomicU64,
    pub(crate) rejected: AtomicU64,
    pub(crate) unmatched_acks: AtomicU64,
    pub(crate) give_backs: AtomicU64,
    pub(crate) leaves: AtomicU64,
    pub(crate) drops: AtomicU64,
    pub(crate) kills: AtomicU64,
    pub(crate) hangs: AtomicU64,
}

pub(crate) fn load(a: &AtomicU64) -> u64 {
    a.load(Ordering::Relaxed)
}

pub(crate) fn bump(a: &AtomicU64) {
    a.fetch_add(1, Ordering::Relaxed);
}

/// What a result sent on a stream was about, until it is answered.
#[derive(Debug, Clone)]
pub(crate) struct Sent {
    pub(crate) play: bool,
    pub(crate) sfen: String,
}

/// An acknowledged result.
pub(crate) struct Acked {
    pub(crate) lease_id: u64,
    pub(crate) sent: Sent,
}

/// What every member shares.
pub(crate) struct Fleet {
    pub(crate) url: String,
    pub(crate) args: Args,
    pub(crate) counters: Counters,
    pub(crate) acks: mpsc::UnboundedSender<Acked>,
    pub(crate) rejections: Mutex<HashMap<String, u64>>,
    pub(crate) next_identity: AtomicU64,
}

impl Fleet {
    pub(crate) fn identity(&self) -> String {
        format!(
            "soak-{}",
            self.next_identity.fetch_add(1, Ordering::Relaxed)
        )
    }

    pub(crate) fn departure(&self, rng: &mut StdRng) -> Departure {
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

    pub(crate) fn session_length(&self, rng: &mut StdRng) -> Duration {
        let u: f64 = rng.random_range(f64::EPSILON..1.0);
        let mean = self.args.session_secs.max(1.0);
        Duration::from_secs_f64((-u.ln() * mean).clamp(2.0, 10.0 * mean))
    }

    pub(crate) fn reject(&self, reason: &str) {
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
pub(crate) fn answer(job: &Job) -> Result<(JobResult, Sent), String> {
    match &job.kind {
        Some(job::Kind::Think(think)) => {
            let pos = Position::from_sfen(&think.sfen).map_err(|e| e.to_string())?;
            let moves = move_values(&pos);
            let result =
                JobResult::think(job.lease_id, think.sfen.clone(), moves, 1, 0, "fake".into());
            let sent = Sent {
                play: false,
                sfen: think.sfen.clone(),
            };
            Ok((result, sent))
        }
        Some(job::Kind::Search(search)) => {
            let result =
                stera_testkit::random_mover::search_answer(job.lease_id, search, job.lease_id)?;
            let sent = Sent {
                play: true,
                sfen: search.start_sfen.clone(),
            };
            Ok((result, sent))
        }
        _ => Err("the soak's fake worker answers think and search jobs only".into()),
    }
}

/// Sleeps, or returns true at once when the fleet stops.
pub(crate) async fn stopped_during(stop: &mut watch::Receiver<bool>, d: Duration) -> bool {
    if *stop.borrow() {
        return true;
    }
    tokio::select! {
        () = tokio::time::sleep(d) => *stop.borrow(),
        _ = stop.changed() => true,
    }
}

/// One member of the fleet: connections and departures until the fleet stops.
pub(crate) async fn member(fleet: Arc<Fleet>, index: u64, mut stop: watch::Receiver<bool>) {
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
pub(crate) type Finished = (u64, Result<(JobResult, Sent), String>);

/// One Work stream of a member.
pub(crate) struct Session {
    pub(crate) fleet: Arc<Fleet>,
    pub(crate) tx: mpsc::Sender<WorkerMessage>,
    pub(crate) inbound: tonic::Streaming<stera_proto::v1::CoordinatorMessage>,
    /// Results sent and not answered yet, by lease id.
    pub(crate) sent: HashMap<u64, Sent>,
    /// Jobs being "evaluated".
    pub(crate) in_hand: HashMap<u64, Job>,
    pub(crate) evals: JoinSet<()>,
    pub(crate) done_tx: mpsc::UnboundedSender<Finished>,
    pub(crate) done_rx: mpsc::UnboundedReceiver<Finished>,
    pub(crate) heartbeat: Duration,
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
    pub(crate) async fn open(
        fleet: &Arc<Fleet>,
        identity: &str,
        slots: u64,
    ) -> Result<Self, String> {
        let status = |s: tonic::Status| format!("{:?}: {}", s.code(), s.message());
        let mut client = client_within(fleet.url.clone(), None, Some(Duration::from_secs(5)))
            .await
            .map_err(status)?;
        let hello = hello_of(
            identity,
            "soak",
            "fake",
            u32::try_from(slots).unwrap_or(u32::MAX),
        );
        let WorkStream { tx, inbound } =
            open_work(&mut client, hello, 256).await.map_err(status)?;
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

    pub(crate) async fn send(&self, m: worker_message::Msg) -> bool {
        self.tx.send(msg(m)).await.is_ok()
    }

    pub(crate) async fn send_result(&mut self, result: JobResult, sent: Sent) -> bool {
        self.sent.insert(result.lease_id, sent);
        bump(&self.fleet.counters.results_sent);
        self.send(worker_message::Msg::Result(result)).await
    }

    /// Answers (acks, rejections) are recorded; jobs start an evaluation unless
    /// the member is leaving (then they are given back).
    pub(crate) async fn on_message(
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

    pub(crate) async fn give_back(&mut self, lease_id: u64) {
        bump(&self.fleet.counters.give_backs);
        let g = GiveBack {
            lease_id,
            reason: "soak: worker leaving".into(),
            failed: false,
        };
        let _ = self.send(worker_message::Msg::GiveBack(g)).await;
    }

    /// Until the departure time (or the fleet stops, or the stream ends).
    pub(crate) async fn run(
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
    pub(crate) async fn leave(&mut self, rng: &mut StdRng) {
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
pub(crate) fn recorder(
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
