//! The connection to the coordinator: one Work stream at a time, reconnecting with
//! randomized exponential backoff.

use std::collections::{HashSet, VecDeque};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::{Result, bail};
use rand::Rng;
use stera_engine::Limits;
use stera_proto::v1::coordinator_client::CoordinatorClient;
use stera_proto::v1::{
    Credit, GiveBack, Heartbeat, Hello, Job, JobResult, MoveValue, WorkerMessage,
    coordinator_message, worker_message,
};
use stera_rules::Position;
use tokio::sync::{mpsc, watch};
use tokio_stream::wrappers::ReceiverStream;
use tonic::Code;
use tonic::metadata::MetadataValue;

use crate::{EvaluatorPool, Shutdown, Stats};

pub struct SessionConfig {
    pub url: String,
    pub token: Option<String>,
    pub tls: Option<tonic::transport::ClientTlsConfig>,
    pub worker_id: String,
    /// Jobs this worker takes at once: engines plus prefetch.
    pub slots: u32,
    pub default_limits: Limits,
    pub max_backoff: Duration,
    /// After the first stop request, jobs in hand and their acknowledgements may take
    /// this long; then they are given back and the worker leaves anyway.
    pub stop_timeout: Duration,
    pub pool: Arc<EvaluatorPool>,
    pub stats: Arc<Stats>,
    pub shutdown: watch::Receiver<Shutdown>,
}

/// How a session ended.
#[derive(Debug, PartialEq, Eq)]
pub enum SessionEnd {
    /// Finished on request (Ctrl-C, drain): leave.
    Done,
    /// The connection was lost or could not be made: try again.
    Lost(String),
}

/// An evaluation that finished (or failed) on a blocking thread.
struct Finished {
    lease_id: u64,
    /// The result, or why the position could not be evaluated (given back as failed).
    outcome: Result<JobResult, String>,
}

fn give_back(lease_id: u64, reason: impl Into<String>, failed: bool) -> WorkerMessage {
    msg(worker_message::Msg::GiveBack(GiveBack {
        lease_id,
        reason: reason.into(),
        failed,
    }))
}

/// Connects, runs sessions, reconnects, until done or refused.
///
/// # Errors
/// The coordinator refused the token or the protocol version (no retry helps).
pub async fn run_forever(mut cfg: SessionConfig) -> Result<()> {
    let mut attempt: u32 = 0;
    // Results computed while disconnected go out on the next stream.
    let mut unsent: VecDeque<JobResult> = VecDeque::new();
    loop {
        if *cfg.shutdown.borrow() != Shutdown::Running {
            let late = tokio::time::Instant::now() >= cfg.stats.stop_requested() + cfg.stop_timeout;
            if unsent.is_empty() || late {
                if !unsent.is_empty() {
                    tracing::warn!(
                        results = unsent.len(),
                        "stop grace over; leaving with results the coordinator never received"
                    );
                }
                return Ok(());
            }
        }
        match session(&mut cfg, &mut unsent).await? {
            SessionEnd::Done => return Ok(()),
            SessionEnd::Lost(why) => {
                cfg.stats.connected.store(false, Ordering::Relaxed);
                if *cfg.shutdown.borrow() == Shutdown::Abort {
                    return Ok(());
                }
                attempt = attempt.saturating_add(1);
                let delay = backoff(attempt, cfg.max_backoff);
                tracing::warn!(reason = %why, retry_in_ms = delay.as_millis() as u64, "coordinator unreachable");
                cfg.stats.reconnects.fetch_add(1, Ordering::Relaxed);
                tokio::select! {
                    () = tokio::time::sleep(delay) => {}
                    _ = cfg.shutdown.changed() => {}
                }
            }
        }
        if cfg.stats.connected.load(Ordering::Relaxed) {
            attempt = 0;
        }
    }
}

/// Full-jitter exponential backoff: uniform in [0, min(cap, 0.5 s * 2^attempt)].
fn backoff(attempt: u32, cap: Duration) -> Duration {
    let exp = Duration::from_millis(500).saturating_mul(1u32 << attempt.min(16));
    let ceiling = exp.min(cap);
    let ms = u64::try_from(ceiling.as_millis())
        .unwrap_or(u64::MAX)
        .max(1);
    Duration::from_millis(rand::rng().random_range(ms / 4..=ms))
}

fn refused(status: &tonic::Status) -> bool {
    matches!(
        status.code(),
        Code::Unauthenticated
            | Code::PermissionDenied
            | Code::FailedPrecondition
            | Code::InvalidArgument
    )
}

/// A refusal ends the worker (no retry helps); anything else is a lost connection.
fn failed(status: &tonic::Status) -> Result<SessionEnd> {
    if refused(status) {
        bail!(
            "the coordinator refused this worker: {} ({:?})",
            status.message(),
            status.code()
        );
    }
    Ok(SessionEnd::Lost(format!(
        "{}: {}",
        status.code(),
        status.message()
    )))
}

fn msg(m: worker_message::Msg) -> WorkerMessage {
    WorkerMessage { msg: Some(m) }
}

async fn session(cfg: &mut SessionConfig, unsent: &mut VecDeque<JobResult>) -> Result<SessionEnd> {
    let channel = match tonic::transport::Endpoint::from_shared(cfg.url.clone()) {
        Ok(e) => e.connect_timeout(Duration::from_secs(10)).tcp_nodelay(true),
        Err(e) => bail!("bad coordinator URL `{}`: {e}", cfg.url),
    };
    let channel = match &cfg.tls {
        Some(tls) => channel
            .tls_config(tls.clone())
            .map_err(|e| anyhow::anyhow!("TLS set-up failed: {e}"))?,
        None => channel,
    };
    let channel = match channel.connect().await {
        Ok(c) => c,
        Err(e) => return Ok(SessionEnd::Lost(format!("connect: {e}"))),
    };
    let token = match &cfg.token {
        Some(t) => match format!("Bearer {t}").parse::<MetadataValue<_>>() {
            Ok(v) => Some(v),
            Err(_) => bail!("the token contains characters that cannot be sent in a header"),
        },
        None => None,
    };
    let mut client =
        CoordinatorClient::with_interceptor(channel, move |mut req: tonic::Request<()>| {
            if let Some(t) = &token {
                req.metadata_mut().insert("authorization", t.clone());
            }
            Ok(req)
        });
    let (out, out_rx) = mpsc::channel::<WorkerMessage>(256);
    let hello = Hello {
        worker_id: cfg.worker_id.clone(),
        version: env!("CARGO_PKG_VERSION").to_owned(),
        engine: cfg.pool.identity(),
        slots: cfg.slots,
        protocol: stera_proto::PROTOCOL_VERSION,
    };
    if out
        .send(msg(worker_message::Msg::Hello(hello)))
        .await
        .is_err()
    {
        return Ok(SessionEnd::Lost("stream closed before Hello".into()));
    }
    let mut inbound = match client.work(ReceiverStream::new(out_rx)).await {
        Ok(r) => r.into_inner(),
        Err(status) => return failed(&status),
    };
    let heartbeat_every = match inbound.message().await {
        Ok(Some(m)) => match m.msg {
            Some(coordinator_message::Msg::Welcome(w)) => {
                Duration::from_millis(u64::from(w.heartbeat_ms.max(100)))
            }
            _ => {
                return Ok(SessionEnd::Lost(
                    "the coordinator did not answer with Welcome".into(),
                ));
            }
        },
        Ok(None) => return Ok(SessionEnd::Lost("stream closed before Welcome".into())),
        Err(status) => return failed(&status),
    };
    cfg.stats.connected.store(true, Ordering::Relaxed);
    tracing::info!(url = %cfg.url, "connected");
    // Results sent and not yet answered; an answer for anything else is ignored.
    let mut awaiting_ack: HashSet<u64> = HashSet::new();
    while let Some(r) = unsent.pop_front() {
        let lease_id = r.lease_id;
        if let Err(e) = out.send(msg(worker_message::Msg::Result(r))).await {
            if let Some(worker_message::Msg::Result(r)) = e.0.msg {
                unsent.push_front(r);
            }
            return Ok(SessionEnd::Lost("stream closed".into()));
        }
        awaiting_ack.insert(lease_id);
    }

    let (done_tx, mut done_rx) = mpsc::unbounded_channel::<Finished>();
    let mut in_hand: HashSet<u64> = HashSet::new();
    let mut heartbeat = tokio::time::interval(heartbeat_every);
    let mut draining = *cfg.shutdown.borrow() != Shutdown::Running;
    // When a stop request's grace ends (far away until there is one).
    let far = tokio::time::Instant::now() + Duration::from_secs(365 * 24 * 3600);
    let mut stop_by = if draining {
        cfg.stats.stop_requested() + cfg.stop_timeout
    } else {
        far
    };
    if draining {
        // Finishing already: take no jobs on this stream.
        let _ = out
            .send(msg(worker_message::Msg::Credit(Credit { slots: 0 })))
            .await;
    }
    loop {
        if draining && in_hand.is_empty() && awaiting_ack.is_empty() && unsent.is_empty() {
            return Ok(SessionEnd::Done);
        }
        tokio::select! {
            incoming = inbound.message() => {
                let m = match incoming {
                    Ok(Some(m)) => m,
                    Ok(None) => return Ok(SessionEnd::Lost("the coordinator closed the stream".into())),
                    Err(status) => return Ok(SessionEnd::Lost(format!("{}: {}", status.code(), status.message()))),
                };
                match m.msg {
                    Some(coordinator_message::Msg::Job(job)) => {
                        if draining {
                            let _ = out.send(give_back(job.lease_id, "worker is stopping", false)).await;
                            continue;
                        }
                        if let Err(v) = stera_proto::limits::check_job(&job) {
                            cfg.stats.errors.fetch_add(1, Ordering::Relaxed);
                            tracing::error!(lease = job.lease_id, violation = %v, "job refused; giving it back");
                            let _ = out.send(give_back(job.lease_id, format!("job refused: {v}"), true)).await;
                            continue;
                        }
                        if !in_hand.insert(job.lease_id) {
                            tracing::warn!(lease = job.lease_id, "the coordinator sent a lease already in hand; ignored");
                            continue;
                        }
                        spawn_evaluation(job, cfg.default_limits, cfg.pool.clone(), cfg.stats.clone(), done_tx.clone());
                    }
                    Some(coordinator_message::Msg::Ack(a)) => {
                        if awaiting_ack.remove(&a.lease_id) {
                            cfg.stats.acked.fetch_add(1, Ordering::Relaxed);
                        } else {
                            tracing::warn!(lease = a.lease_id, "acknowledgement of no result sent on this stream; ignored");
                        }
                    }
                    Some(coordinator_message::Msg::Rejected(r)) => {
                        if awaiting_ack.remove(&r.lease_id) {
                            cfg.stats.rejected.fetch_add(1, Ordering::Relaxed);
                            tracing::warn!(lease = r.lease_id, reason = %r.reason, "result rejected");
                        } else {
                            tracing::warn!(lease = r.lease_id, reason = %r.reason, "rejection of no result sent on this stream; ignored");
                        }
                    }
                    Some(coordinator_message::Msg::Drain(d)) => {
                        tracing::info!(reason = %d.reason, "coordinator drains; finishing the jobs in hand");
                        draining = true;
                    }
                    Some(coordinator_message::Msg::Welcome(_)) | None => {}
                }
            }
            Some(f) = done_rx.recv() => {
                if !in_hand.remove(&f.lease_id) {
                    // Given back already (the stop grace ended): nothing to send.
                    continue;
                }
                let m = match f.outcome {
                    Ok(result) => {
                        awaiting_ack.insert(result.lease_id);
                        msg(worker_message::Msg::Result(result))
                    }
                    Err(reason) => {
                        cfg.stats.errors.fetch_add(1, Ordering::Relaxed);
                        tracing::error!(lease = f.lease_id, %reason, "evaluation failed; giving the job back");
                        give_back(f.lease_id, truncate(&reason, stera_proto::limits::MAX_REASON_BYTES), true)
                    }
                };
                if let Err(e) = out.send(m).await {
                    if let Some(worker_message::Msg::Result(r)) = e.0.msg {
                        unsent.push_back(r);
                    }
                    return Ok(SessionEnd::Lost("stream closed".into()));
                }
            }
            _ = heartbeat.tick() => {
                let hb = Heartbeat {
                    busy_slots: u32::try_from(in_hand.len()).unwrap_or(u32::MAX),
                    evaluated: cfg.stats.evaluated.load(Ordering::Relaxed),
                };
                if out.send(msg(worker_message::Msg::Heartbeat(hb))).await.is_err() {
                    return Ok(SessionEnd::Lost("stream closed".into()));
                }
            }
            changed = cfg.shutdown.changed() => {
                if changed.is_err() {
                    continue;
                }
                let state = *cfg.shutdown.borrow();
                match state {
                    Shutdown::Running => {}
                    Shutdown::Finish => {
                        draining = true;
                        stop_by = cfg.stats.stop_requested() + cfg.stop_timeout;
                        let _ = out.send(msg(worker_message::Msg::Credit(Credit { slots: 0 }))).await;
                    }
                    Shutdown::Abort => {
                        abandon(&out, &in_hand, "worker aborted").await;
                        return Ok(SessionEnd::Done);
                    }
                }
            }
            () = tokio::time::sleep_until(stop_by) => {
                tracing::warn!(
                    in_hand = in_hand.len(),
                    unacknowledged = awaiting_ack.len(),
                    "stop grace of {:?} over; giving back what is left and leaving",
                    cfg.stop_timeout
                );
                abandon(&out, &in_hand, "worker stopped: its stop grace ended").await;
                unsent.clear();
                return Ok(SessionEnd::Done);
            }
        }
    }
}

/// Gives back every job in hand (not failures: the worker is leaving).
async fn abandon(out: &mpsc::Sender<WorkerMessage>, in_hand: &HashSet<u64>, reason: &str) {
    for lease_id in in_hand {
        let _ = out.send(give_back(*lease_id, reason, false)).await;
    }
    // Give the messages a moment to leave before the stream drops.
    tokio::time::sleep(Duration::from_millis(200)).await;
}

/// At most `max` bytes of `text`, cut at a character boundary.
fn truncate(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max.saturating_sub(3);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &text[..end])
}

fn job_limits(job: &Job, default: Limits) -> Limits {
    match job.limits {
        Some(l) if l.nodes > 0 || l.depth > 0 || l.time_ms > 0 => Limits {
            nodes: (l.nodes > 0).then_some(l.nodes),
            depth: (l.depth > 0).then_some(l.depth),
            time: (l.time_ms > 0).then(|| Duration::from_millis(u64::from(l.time_ms))),
        },
        _ => default,
    }
}

fn spawn_evaluation(
    job: Job,
    default: Limits,
    pool: Arc<EvaluatorPool>,
    stats: Arc<Stats>,
    done: mpsc::UnboundedSender<Finished>,
) {
    let limits = job_limits(&job, default);
    stats.busy.fetch_add(1, Ordering::Relaxed);
    tokio::task::spawn_blocking(move || {
        // Whatever happens in here, the lease is answered: a panic is reported as the
        // evaluation's failure, never left to hold the lease forever.
        let lease_id = job.lease_id;
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            evaluate_job(&job, &limits, &pool, &stats)
        }))
        .unwrap_or_else(|payload| {
            Err(format!(
                "the evaluation panicked: {}",
                crate::pool::panic_text(payload.as_ref())
            ))
        });
        stats.busy.fetch_sub(1, Ordering::Relaxed);
        let _ = done.send(Finished { lease_id, outcome });
    });
}

/// Parses the job's position and evaluates it on a pooled engine.
fn evaluate_job(
    job: &Job,
    limits: &Limits,
    pool: &EvaluatorPool,
    stats: &Stats,
) -> Result<JobResult, String> {
    Position::from_sfen(&job.sfen)
        .map_err(|e| format!("bad position from the coordinator: {e}"))
        .and_then(|position| {
            let (result, cost) = pool.evaluate(&position, limits);
            stats.restarts.fetch_add(cost.restarts, Ordering::Relaxed);
            result.map_err(|e| e.to_string())
        })
        .map(|ev| {
            stats.evaluated.fetch_add(1, Ordering::Relaxed);
            crate::worker_metrics::record_evaluation(ev.elapsed);
            stats.engine_ms.fetch_add(
                u64::try_from(ev.elapsed.as_millis()).unwrap_or(0),
                Ordering::Relaxed,
            );
            JobResult {
                lease_id: job.lease_id,
                moves: ev
                    .moves
                    .iter()
                    .map(|m| MoveValue {
                        usi: m.mv.to_string(),
                        value: m.value,
                        depth: m.depth,
                    })
                    .collect(),
                nodes: ev.nodes,
                elapsed_ms: u32::try_from(ev.elapsed.as_millis()).unwrap_or(u32::MAX),
                engine: ev.engine,
            }
        })
}
