//! A fake worker: connects over gRPC like a real one, says Hello and answers think
//! jobs at once with values for every legal move (or wrongly, on purpose), so the
//! coordinator's tests and benchmarks need no engine.

use std::time::Duration;

use stera_proto::v1::coordinator_client::CoordinatorClient;
use stera_proto::v1::{
    CoordinatorMessage, Hello, JobResult, MoveValue, StatusReply, StatusRequest, WorkerMessage,
    coordinator_message, worker_message,
};
use stera_rules::Position;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

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

/// What a fake worker saw: jobs, and results acknowledged or rejected (lease id,
/// SFEN or reason).
#[derive(Debug, Default, Clone)]
pub struct Report {
    pub acked: Vec<(u64, String)>,
    pub rejected: Vec<(u64, String)>,
    pub jobs: Vec<(u64, String)>,
}

/// The Hello of a fake worker of this build's protocol.
pub fn hello_of(worker_id: &str, version: &str, engine: &str, slots: u32) -> Hello {
    Hello {
        worker_id: worker_id.into(),
        version: version.into(),
        engine: engine.into(),
        slots,
        protocol: stera_proto::PROTOCOL_VERSION,
        default_limits: None,
    }
}

/// The Hello of a test worker of this build's protocol, as a message.
pub fn hello(worker_id: &str, engine: &str, slots: u32) -> WorkerMessage {
    message(worker_message::Msg::Hello(hello_of(
        worker_id, "test", engine, slots,
    )))
}

/// A worker message around `msg`.
pub fn message(msg: worker_message::Msg) -> WorkerMessage {
    WorkerMessage { msg: Some(msg) }
}

/// A think result for `lease_id` on `sfen`, answered as `answer` says.
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

/// An open Work stream: the sender of the worker's messages and the coordinator's
/// messages.
pub struct WorkStream {
    pub tx: mpsc::Sender<WorkerMessage>,
    pub inbound: tonic::Streaming<CoordinatorMessage>,
}

/// Sends `hello` first and opens the Work stream on `client` (outgoing queue of
/// `capacity` messages).
pub async fn open_work(
    client: &mut Client,
    hello: Hello,
    capacity: usize,
) -> Result<WorkStream, tonic::Status> {
    let (tx, rx) = mpsc::channel::<WorkerMessage>(capacity);
    tx.send(message(worker_message::Msg::Hello(hello)))
        .await
        .map_err(|_| tonic::Status::internal("the outgoing queue closed before Hello"))?;
    let inbound = client.work(ReceiverStream::new(rx)).await?.into_inner();
    Ok(WorkStream { tx, inbound })
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
    let WorkStream { tx, mut inbound } =
        open_work(&mut client, hello_of("fake", "test", "fake", slots), 1024).await?;
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
                        .send(message(worker_message::Msg::Result(r)))
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

/// The coordinator's Status reply.
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

/// A gRPC client presenting a token (or none).
pub type Client = CoordinatorClient<
    tonic::service::interceptor::InterceptedService<tonic::transport::Channel, Bearer>,
>;

/// A gRPC client for `url`, presenting `token` if given.
pub async fn client(url: String, token: Option<&str>) -> Result<Client, tonic::Status> {
    client_within(url, token, None).await
}

/// [`client`], giving up on the connection after `connect_timeout` if given (a
/// fleet of fake workers must not hang on a coordinator that stopped answering).
pub async fn client_within(
    url: String,
    token: Option<&str>,
    connect_timeout: Option<Duration>,
) -> Result<Client, tonic::Status> {
    let mut endpoint = tonic::transport::Endpoint::from_shared(url)
        .map_err(|e| tonic::Status::internal(e.to_string()))?;
    if let Some(timeout) = connect_timeout {
        endpoint = endpoint.connect_timeout(timeout);
    }
    let channel = endpoint
        .connect()
        .await
        .map_err(|e| tonic::Status::unavailable(e.to_string()))?;
    let header = match token {
        Some(t) => Some(
            format!("Bearer {t}")
                .parse()
                .map_err(|_| tonic::Status::invalid_argument("the token is not ASCII"))?,
        ),
        None => None,
    };
    Ok(CoordinatorClient::with_interceptor(channel, Bearer(header)))
}
