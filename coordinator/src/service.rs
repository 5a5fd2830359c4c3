//! The gRPC face of the coordinator: turns Work streams into dispatcher events.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use stera_proto::v1::coordinator_server::Coordinator;
use stera_proto::v1::{
    CoordinatorMessage, ExportReply, ExportRequest, StatusReply, StatusRequest, WorkerMessage,
    worker_message::Msg,
};
use tokio::sync::{mpsc, oneshot};
use tokio_stream::wrappers::UnboundedReceiverStream;
use tonic::{Request, Response, Status, Streaming};

use crate::dispatcher::Event;

/// How long a new stream may take to say Hello.
const HELLO_TIMEOUT: Duration = Duration::from_secs(10);

pub struct CoordinatorService {
    events: mpsc::UnboundedSender<Event>,
    next_stream: AtomicU64,
}

impl CoordinatorService {
    pub fn new(events: mpsc::UnboundedSender<Event>) -> Self {
        Self {
            events,
            next_stream: AtomicU64::new(1),
        }
    }

    fn send(&self, event: Event) -> Result<(), Status> {
        self.events
            .send(event)
            .map_err(|_| Status::unavailable("the coordinator is shutting down"))
    }
}

#[tonic::async_trait]
impl Coordinator for CoordinatorService {
    type WorkStream = UnboundedReceiverStream<Result<CoordinatorMessage, Status>>;

    async fn work(
        &self,
        request: Request<Streaming<WorkerMessage>>,
    ) -> Result<Response<Self::WorkStream>, Status> {
        let mut inbound = request.into_inner();
        let first = tokio::time::timeout(HELLO_TIMEOUT, inbound.message())
            .await
            .map_err(|_| Status::deadline_exceeded("no Hello within 10 s"))??;
        let hello = match first.and_then(|m| m.msg) {
            Some(Msg::Hello(h)) => h,
            _ => {
                return Err(Status::invalid_argument(
                    "the first message of a Work stream must be Hello",
                ));
            }
        };
        if hello.protocol != stera_proto::PROTOCOL_VERSION {
            return Err(Status::failed_precondition(format!(
                "worker speaks protocol {} but this coordinator speaks {}; upgrade the older side",
                hello.protocol,
                stera_proto::PROTOCOL_VERSION
            )));
        }
        if hello.slots == 0 || hello.slots > 4096 {
            return Err(Status::invalid_argument(format!(
                "slots must be 1..=4096, got {}",
                hello.slots
            )));
        }
        let stream = self.next_stream.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = mpsc::unbounded_channel();
        self.send(Event::Connect { stream, hello, tx })?;
        let events = self.events.clone();
        tokio::spawn(async move {
            loop {
                let event = match inbound.message().await {
                    Ok(Some(WorkerMessage { msg: Some(msg) })) => match msg {
                        Msg::Result(result) => Event::Result { stream, result },
                        Msg::Heartbeat(_) => Event::Heartbeat { stream },
                        Msg::GiveBack(g) => Event::GiveBack {
                            stream,
                            lease_id: g.lease_id,
                            reason: g.reason,
                        },
                        Msg::Credit(c) => Event::Credit {
                            stream,
                            slots: c.slots,
                        },
                        Msg::Hello(_) => {
                            tracing::warn!(stream, "second Hello on a stream ignored");
                            continue;
                        }
                    },
                    Ok(Some(WorkerMessage { msg: None })) => {
                        tracing::warn!(stream, "empty message ignored");
                        continue;
                    }
                    Ok(None) => break,
                    Err(status) => {
                        tracing::info!(stream, %status, "stream error");
                        break;
                    }
                };
                if events.send(event).is_err() {
                    break;
                }
            }
            let _ = events.send(Event::Disconnect { stream });
        });
        Ok(Response::new(UnboundedReceiverStream::new(rx)))
    }

    async fn status(
        &self,
        _request: Request<StatusRequest>,
    ) -> Result<Response<StatusReply>, Status> {
        let (reply, rx) = oneshot::channel();
        self.send(Event::Status { reply })?;
        rx.await
            .map(Response::new)
            .map_err(|_| Status::unavailable("the coordinator is shutting down"))
    }

    async fn export(
        &self,
        request: Request<ExportRequest>,
    ) -> Result<Response<ExportReply>, Status> {
        let request = request.into_inner();
        if request.path.is_empty() {
            return Err(Status::invalid_argument("export needs a path"));
        }
        let (reply, rx) = oneshot::channel();
        self.send(Event::Export { request, reply })?;
        match rx.await {
            Ok(Ok(r)) => Ok(Response::new(r)),
            Ok(Err(e)) => Err(Status::internal(format!("export failed: {e}"))),
            Err(_) => Err(Status::unavailable("the coordinator is shutting down")),
        }
    }
}

/// Bearer-token check for every RPC. Compares in constant time.
#[derive(Clone)]
pub struct TokenCheck {
    expected: Option<Arc<str>>,
}

impl TokenCheck {
    pub fn new(token: Option<String>) -> Self {
        Self {
            expected: token.map(Into::into),
        }
    }
}

impl tonic::service::Interceptor for TokenCheck {
    fn call(&mut self, request: Request<()>) -> Result<Request<()>, Status> {
        let Some(expected) = &self.expected else {
            return Ok(request);
        };
        let given = request
            .metadata()
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or("");
        let a = given.as_bytes();
        let b = expected.as_bytes();
        let mut diff = a.len() ^ b.len();
        for (x, y) in a.iter().zip(b.iter().cycle()) {
            diff |= usize::from(x ^ y);
        }
        if diff == 0 && !b.is_empty() {
            Ok(request)
        } else {
            Err(Status::unauthenticated("missing or wrong token"))
        }
    }
}
