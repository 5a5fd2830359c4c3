//! The connection to the coordinator: one Work stream at a time, reconnecting with
//! randomized exponential backoff.
//!
//! The log tells each outage once: one line when the coordinator is lost (WARN,
//! or INFO when it drained, an operator's stop), one INFO `connected again` when a
//! working session is back, with the time since the loss; the attempts between,
//! including sessions with a coordinator that still drains, go to DEBUG.

use std::collections::{HashSet, VecDeque};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::{Result, bail};
use rand::Rng;
use stera_proto::v1::coordinator_client::CoordinatorClient;
use stera_proto::v1::{
    CoordinatorMessage, Credit, GiveBack, Heartbeat, Hello, Job, JobResult, WorkerMessage,
    coordinator_message, worker_message,
};
use tokio::sync::{mpsc, watch};
use tokio_stream::wrappers::ReceiverStream;
use tonic::Code;
use tonic::metadata::MetadataValue;

use crate::jobs::{self, Finished, JobContext};
use crate::{Shutdown, Stats};

pub struct SessionConfig {
    pub url: String,
    pub token: Option<String>,
    pub tls: Option<tonic::transport::ClientTlsConfig>,
    pub worker_id: String,
    /// Jobs this worker takes at once: engines plus prefetch.
    pub slots: u32,
    pub max_backoff: Duration,
    /// After the first stop request, jobs in hand and their acknowledgements may take
    /// this long; then they are given back and the worker leaves anyway.
    pub stop_timeout: Duration,
    /// Leave when the coordinator drains (local workers, which their coordinator
    /// owns) instead of waiting for the next coordinator.
    pub exit_on_drain: bool,
    /// The budget a think job without limits runs at here, told in Hello (with
    /// the engine it makes the thinker the coordinator checks).
    pub think_budget: stera_engine::Limits,
    pub jobs: JobContext,
    pub stats: Arc<Stats>,
    pub shutdown: watch::Receiver<Shutdown>,
}

/// How a session ended.
#[derive(Debug, PartialEq, Eq)]
pub enum SessionEnd {
    /// Finished on this worker's own request (Ctrl-C, SIGTERM): leave.
    Done,
    /// The coordinator drained this stream (for the reason given) and the jobs in
    /// hand are answered: wait for the next coordinator (an upgrade or a move
    /// restarts it on the same store).
    Drained(String),
    /// The connection was lost or could not be made: try again.
    Lost(String),
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
    let mut link = Link::new(cfg.url.clone(), cfg.max_backoff);
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
        let end = session(&mut cfg, &mut unsent, &mut link).await?;
        cfg.stats.connected.store(false, Ordering::Relaxed);
        let (why, planned) = match end {
            SessionEnd::Done => return Ok(()),
            SessionEnd::Drained(_) if cfg.exit_on_drain => return Ok(()),
            SessionEnd::Drained(reason) => (format!("the coordinator drains: {reason}"), true),
            SessionEnd::Lost(why) => (why, false),
        };
        if *cfg.shutdown.borrow() == Shutdown::Abort {
            return Ok(());
        }
        let delay = link.ended(why, planned);
        cfg.stats.reconnects.fetch_add(1, Ordering::Relaxed);
        tokio::select! {
            () = tokio::time::sleep(delay) => {}
            _ = cfg.shutdown.changed() => {}
        }
    }
}

/// The worker's link to its coordinator as its log tells it. An outage lasts
/// from the loss of a working session (or the first failed attempt) until a
/// coordinator welcomes the worker without draining: a coordinator that drains
/// accepts the stream but hands out no jobs and closes it, so reaching one is an
/// attempt like a refused connection.
struct Link {
    url: String,
    max_backoff: Duration,
    /// A working session was established in this process (so the next one is
    /// `connected again`).
    ever_up: bool,
    /// The outage under way; none while a working session is up (and before the
    /// first attempt).
    outage: Option<Outage>,
}

struct Outage {
    since: tokio::time::Instant,
    /// How the coordinator was lost.
    reason: String,
    /// Attempts since the loss, the loss itself counted: the backoff grows with it.
    attempts: u32,
}

impl Link {
    fn new(url: String, max_backoff: Duration) -> Self {
        Self {
            url,
            max_backoff,
            ever_up: false,
            outage: None,
        }
    }

    /// A coordinator welcomed the worker; `draining`: it said it drains. Returns
    /// whether the session is a working one (the coordinator is back).
    fn welcomed(&mut self, draining: bool) -> bool {
        let url = &self.url;
        if draining {
            if let Some(o) = &self.outage {
                tracing::debug!(url = %url, attempts = o.attempts, "connected, but the coordinator still drains");
            } else {
                tracing::info!(url = %url, "connected; the coordinator drains");
            }
            return false;
        }
        match self.outage.take() {
            Some(o) if self.ever_up => tracing::info!(
                url = %url,
                attempts = o.attempts,
                down_secs = seconds(o.since.elapsed()),
                lost = %o.reason,
                "connected again"
            ),
            Some(o) => tracing::info!(
                url = %url,
                attempts = o.attempts,
                waited_secs = seconds(o.since.elapsed()),
                "connected"
            ),
            None => tracing::info!(url = %url, "connected"),
        }
        self.ever_up = true;
        true
    }

    /// A session or an attempt ended for `why` (`planned`: the coordinator
    /// drained). Returns how long to wait before the next attempt.
    fn ended(&mut self, why: String, planned: bool) -> Duration {
        if let Some(o) = &mut self.outage {
            o.attempts = o.attempts.saturating_add(1);
            let delay = backoff(o.attempts, self.max_backoff);
            tracing::debug!(reason = %why, attempt = o.attempts, retry_in_ms = millis(delay), "coordinator still unreachable");
            return delay;
        }
        let delay = backoff(1, self.max_backoff);
        let retry_in_ms = millis(delay);
        // One line per outage: INFO after a drain (an operator's restart), WARN
        // after a lost connection.
        if planned {
            tracing::info!(reason = %why, retry_in_ms, "waiting for the coordinator to come back; reconnecting with backoff");
        } else {
            tracing::warn!(reason = %why, retry_in_ms, "coordinator unreachable");
        }
        self.outage = Some(Outage {
            since: tokio::time::Instant::now(),
            reason: why,
            attempts: 1,
        });
        delay
    }
}

/// `d` in seconds, to the millisecond.
fn seconds(d: Duration) -> f64 {
    (d.as_secs_f64() * 1000.0).round() / 1000.0
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
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

/// An open Work stream: the channel out, the messages in, the heartbeat rate, and
/// whether the coordinator said it drains.
struct Connected {
    out: mpsc::Sender<WorkerMessage>,
    inbound: tonic::Streaming<CoordinatorMessage>,
    heartbeat_every: Duration,
    draining: bool,
}

/// Opens the channel, sends Hello and waits for Welcome.
async fn connect(cfg: &SessionConfig) -> Result<Result<Connected, SessionEnd>> {
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
        Err(e) => {
            let why = stera_service::error_text(&e);
            return Ok(Err(SessionEnd::Lost(format!("connect: {why}"))));
        }
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
        engine: cfg.jobs.pool.identity(),
        slots: cfg.slots,
        protocol: stera_proto::PROTOCOL_VERSION,
        default_limits: Some(stera_service::convert::limits_to_proto(&cfg.think_budget)),
    };
    let lost = |why: &str| Ok(Err(SessionEnd::Lost(why.to_owned())));
    if out
        .send(msg(worker_message::Msg::Hello(hello)))
        .await
        .is_err()
    {
        return lost("stream closed before Hello");
    }
    let mut inbound = match client.work(ReceiverStream::new(out_rx)).await {
        Ok(r) => r.into_inner(),
        Err(status) => return failed(&status).map(Err),
    };
    let (heartbeat_every, draining) = match inbound.message().await {
        Ok(Some(CoordinatorMessage {
            msg: Some(coordinator_message::Msg::Welcome(w)),
        })) => (
            Duration::from_millis(u64::from(w.heartbeat_ms.max(100))),
            w.draining,
        ),
        Ok(Some(_)) => return lost("the coordinator did not answer with Welcome"),
        Ok(None) => return lost("stream closed before Welcome"),
        Err(status) => return failed(&status).map(Err),
    };
    Ok(Ok(Connected {
        out,
        inbound,
        heartbeat_every,
        draining,
    }))
}

/// One session's state: what is in hand, what awaits an answer, whether it drains.
struct Session<'a> {
    cfg: &'a mut SessionConfig,
    out: mpsc::Sender<WorkerMessage>,
    done_tx: mpsc::UnboundedSender<Finished>,
    /// Jobs running here.
    in_hand: HashSet<u64>,
    /// Results sent and not yet answered; an answer for anything else is ignored.
    awaiting_ack: HashSet<u64>,
    draining: bool,
    /// Why the coordinator asked this stream to drain (as opposed to this worker's
    /// own stop): the session ends as [`SessionEnd::Drained`] and the worker waits
    /// for the next coordinator.
    coordinator_drains: Option<String>,
    /// The coordinator did not drain when it welcomed this stream: its drain is
    /// news (INFO); a coordinator that still drains is only another attempt.
    working: bool,
    /// When a stop request's grace ends (far away until there is one).
    stop_by: tokio::time::Instant,
}

/// What a step of the loop decided.
type Step = Option<SessionEnd>;

async fn session(
    cfg: &mut SessionConfig,
    unsent: &mut VecDeque<JobResult>,
    link: &mut Link,
) -> Result<SessionEnd> {
    let Connected {
        out,
        mut inbound,
        heartbeat_every,
        draining: coordinator_draining,
    } = match connect(cfg).await? {
        Ok(c) => c,
        Err(end) => return Ok(end),
    };
    cfg.stats.connected.store(true, Ordering::Relaxed);
    let working = link.welcomed(coordinator_draining);
    let (done_tx, mut done_rx) = mpsc::unbounded_channel::<Finished>();
    let draining = *cfg.shutdown.borrow() != Shutdown::Running;
    let far = tokio::time::Instant::now() + Duration::from_secs(365 * 24 * 3600);
    let stop_by = if draining {
        cfg.stats.stop_requested() + cfg.stop_timeout
    } else {
        far
    };
    let mut s = Session {
        cfg,
        out,
        done_tx,
        in_hand: HashSet::new(),
        awaiting_ack: HashSet::new(),
        draining,
        coordinator_drains: None,
        working,
        stop_by,
    };
    if let Some(end) = s.resend(unsent).await {
        return Ok(end);
    }
    if s.draining {
        // Finishing already: take no jobs on this stream.
        s.send(msg(worker_message::Msg::Credit(Credit { slots: 0 })))
            .await;
    }
    let mut heartbeat = tokio::time::interval(heartbeat_every);
    loop {
        if s.draining && s.in_hand.is_empty() && s.awaiting_ack.is_empty() && unsent.is_empty() {
            let own_stop = *s.cfg.shutdown.borrow() != Shutdown::Running;
            return Ok(match s.coordinator_drains.take() {
                Some(reason) if !own_stop => SessionEnd::Drained(reason),
                _ => SessionEnd::Done,
            });
        }
        let step = tokio::select! {
            incoming = inbound.message() => match incoming {
                Ok(Some(m)) => s.on_message(m).await,
                Ok(None) => Some(SessionEnd::Lost("the coordinator closed the stream".into())),
                Err(status) => Some(SessionEnd::Lost(format!("{}: {}", status.code(), status.message()))),
            },
            Some(f) = done_rx.recv() => s.on_finished(f, unsent).await,
            _ = heartbeat.tick() => s.heartbeat().await,
            changed = s.cfg.shutdown.changed() => match changed {
                Ok(()) => s.on_shutdown().await,
                Err(_) => None,
            },
            () = tokio::time::sleep_until(s.stop_by) => {
                s.grace_over().await;
                unsent.clear();
                Some(SessionEnd::Done)
            }
        };
        if let Some(end) = step {
            return Ok(end);
        }
    }
}

impl Session<'_> {
    /// Sends what may be lost with the stream (a credit, a give-back).
    async fn send(&self, m: WorkerMessage) {
        let _ = self.out.send(m).await;
    }

    /// Results computed while disconnected go out first.
    async fn resend(&mut self, unsent: &mut VecDeque<JobResult>) -> Step {
        while let Some(r) = unsent.pop_front() {
            let lease_id = r.lease_id;
            if let Err(e) = self.out.send(msg(worker_message::Msg::Result(r))).await {
                if let Some(worker_message::Msg::Result(r)) = e.0.msg {
                    unsent.push_front(r);
                }
                return Some(SessionEnd::Lost("stream closed".into()));
            }
            self.awaiting_ack.insert(lease_id);
        }
        None
    }

    async fn on_message(&mut self, m: CoordinatorMessage) -> Step {
        match m.msg {
            Some(coordinator_message::Msg::Job(job)) => self.on_job(job).await,
            Some(coordinator_message::Msg::Ack(a)) => {
                if self.awaiting_ack.remove(&a.lease_id) {
                    self.cfg.stats.acked.fetch_add(1, Ordering::Relaxed);
                } else {
                    tracing::warn!(
                        lease = a.lease_id,
                        "acknowledgement of no result sent on this stream; ignored"
                    );
                }
            }
            Some(coordinator_message::Msg::Rejected(r)) => {
                if self.awaiting_ack.remove(&r.lease_id) {
                    self.cfg.stats.rejected.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(lease = r.lease_id, reason = %r.reason, "result rejected");
                } else {
                    tracing::warn!(lease = r.lease_id, reason = %r.reason, "rejection of no result sent on this stream; ignored");
                }
            }
            Some(coordinator_message::Msg::Drain(d)) => {
                let then = if self.cfg.exit_on_drain {
                    "then exiting (--exit-on-drain)"
                } else {
                    "then waiting for it to come back"
                };
                if self.working {
                    tracing::info!(reason = %d.reason, "coordinator drains; finishing the jobs in hand, {then}");
                } else {
                    tracing::debug!(reason = %d.reason, "coordinator drains");
                }
                self.draining = true;
                self.coordinator_drains = Some(d.reason);
            }
            Some(coordinator_message::Msg::Welcome(_)) | None => {}
        }
        None
    }

    async fn on_job(&mut self, job: Job) {
        if self.draining {
            self.send(give_back(job.lease_id, "worker is stopping", false))
                .await;
            return;
        }
        if let Err(v) = stera_proto::limits::check_job(&job) {
            self.cfg.stats.errors.fetch_add(1, Ordering::Relaxed);
            tracing::error!(lease = job.lease_id, violation = %v, "job refused; giving it back");
            self.send(give_back(job.lease_id, format!("job refused: {v}"), true))
                .await;
            return;
        }
        if !self.in_hand.insert(job.lease_id) {
            tracing::warn!(
                lease = job.lease_id,
                "the coordinator sent a lease already in hand; ignored"
            );
            return;
        }
        jobs::spawn(job, &self.cfg.jobs, self.done_tx.clone());
    }

    async fn on_finished(&mut self, f: Finished, unsent: &mut VecDeque<JobResult>) -> Step {
        if !self.in_hand.remove(&f.lease_id) {
            // Given back already (the stop grace ended): nothing to send.
            return None;
        }
        let m = match f.outcome {
            Ok(result) => {
                self.awaiting_ack.insert(result.lease_id);
                msg(worker_message::Msg::Result(result))
            }
            Err(reason) => {
                self.cfg.stats.errors.fetch_add(1, Ordering::Relaxed);
                tracing::error!(lease = f.lease_id, %reason, "job failed; giving it back");
                give_back(
                    f.lease_id,
                    truncate(&reason, stera_proto::limits::MAX_REASON_BYTES),
                    true,
                )
            }
        };
        if let Err(e) = self.out.send(m).await {
            if let Some(worker_message::Msg::Result(r)) = e.0.msg {
                unsent.push_back(r);
            }
            return Some(SessionEnd::Lost("stream closed".into()));
        }
        None
    }

    async fn heartbeat(&mut self) -> Step {
        let hb = Heartbeat {
            busy_slots: u32::try_from(self.in_hand.len()).unwrap_or(u32::MAX),
            evaluated: self.cfg.stats.evaluated.load(Ordering::Relaxed),
        };
        if self
            .out
            .send(msg(worker_message::Msg::Heartbeat(hb)))
            .await
            .is_err()
        {
            return Some(SessionEnd::Lost("stream closed".into()));
        }
        None
    }

    async fn on_shutdown(&mut self) -> Step {
        let state = *self.cfg.shutdown.borrow();
        match state {
            Shutdown::Running => None,
            Shutdown::Finish => {
                self.draining = true;
                self.stop_by = self.cfg.stats.stop_requested() + self.cfg.stop_timeout;
                self.send(msg(worker_message::Msg::Credit(Credit { slots: 0 })))
                    .await;
                None
            }
            Shutdown::Abort => {
                abandon(&self.out, &self.in_hand, "worker aborted").await;
                Some(SessionEnd::Done)
            }
        }
    }

    async fn grace_over(&mut self) {
        tracing::warn!(
            in_hand = self.in_hand.len(),
            unacknowledged = self.awaiting_ack.len(),
            "stop grace of {:?} over; giving back what is left and leaving",
            self.cfg.stop_timeout
        );
        abandon(
            &self.out,
            &self.in_hand,
            "worker stopped: its stop grace ended",
        )
        .await;
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
