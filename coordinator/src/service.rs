//! The gRPC face of the coordinator: turns Work streams into dispatcher events.

use std::collections::HashMap;
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use stera_proto::v1::coordinator_server::Coordinator;
use stera_proto::v1::{
    BackupReply, BackupRequest, CoordinatorMessage, ExportReply, ExportRequest, SearchReply,
    SearchRequest, StatusReply, StatusRequest, WorkerMessage, worker_message::Msg,
};
use tokio::sync::{mpsc, watch};
use tokio_stream::wrappers::UnboundedReceiverStream;
use tonic::{Request, Response, Status, Streaming};

use stera_proto::limits::{self, Violation};

use crate::dispatcher::{Event, StreamId};
use crate::handle::{Closed, DispatcherHandle};
use crate::maintenance::MaintenanceError;
use crate::registry::{Mistake, Registry};

/// How long a new stream may take to say Hello.
const HELLO_TIMEOUT: Duration = Duration::from_secs(10);

pub struct CoordinatorService {
    dispatcher: DispatcherHandle,
    registry: Arc<Registry>,
    /// Becomes true when the coordinator closes: every stream ends, even one whose
    /// worker never hangs up (else the server's graceful shutdown waits forever).
    closing: watch::Receiver<bool>,
    next_stream: AtomicU64,
    /// The store directory and the directory remote exports may write into.
    store: PathBuf,
    export_dir: Option<PathBuf>,
    /// The store's record of the exports it wrote: a remote export never
    /// replaces a file that is not one of them.
    ledger: Option<stera_book::ExportLedger>,
}

impl CoordinatorService {
    pub fn new(
        dispatcher: DispatcherHandle,
        registry: Arc<Registry>,
        closing: watch::Receiver<bool>,
    ) -> Self {
        Self {
            dispatcher,
            registry,
            closing,
            next_stream: AtomicU64::new(1),
            store: PathBuf::new(),
            export_dir: None,
            ledger: None,
        }
    }

    /// Where remote exports may write (without this, every remote export is refused).
    #[must_use]
    pub fn with_export_paths(mut self, store: PathBuf, export_dir: Option<PathBuf>) -> Self {
        self.store = store;
        self.export_dir = export_dir;
        self
    }

    /// The store's export ledger, so that remote exports replace only files the
    /// store wrote (without it, any file in --export-dir may be replaced).
    #[must_use]
    pub fn with_export_ledger(mut self, ledger: stera_book::ExportLedger) -> Self {
        self.ledger = Some(ledger);
        self
    }
}

/// Longest name (one component of a path) a request may give, in bytes: Linux's
/// `NAME_MAX` (255) less what an export's or a backup's temporary name adds
/// (`.`, `.stera-partial-<pid>.XXXXXX.tmp`), so that every name allowed can be
/// written.
const MAX_NAME_BYTES: usize = 255 - 40;
/// Longest path a request may give, in bytes: Linux's `PATH_MAX`.
const MAX_PATH_BYTES: usize = 4096;

/// Refuses a path a request gives for an export or a backup (`what`) that no
/// file system takes: empty, with a NUL byte, over [`MAX_PATH_BYTES`] or with a
/// name over [`MAX_NAME_BYTES`]. The caller's mistake, answered as
/// INVALID_ARGUMENT before anything runs.
fn check_requested_path(what: &str, path: &str) -> Result<(), String> {
    let quoted = || stera_rules::excerpt(&path.escape_debug().to_string());
    if path.is_empty() {
        return Err(format!("{what} needs a path"));
    }
    if path.contains('\0') {
        return Err(format!(
            "the {what} path `{}` contains a NUL byte: no file can have that name",
            quoted()
        ));
    }
    if path.len() > MAX_PATH_BYTES {
        return Err(format!(
            "the {what} path `{}` is {} bytes long, at most {MAX_PATH_BYTES} allowed",
            quoted(),
            path.len()
        ));
    }
    if let Some(name) = path.split('/').find(|n| n.len() > MAX_NAME_BYTES) {
        return Err(format!(
            "the {what} path `{}` has a name of {} bytes, at most {MAX_NAME_BYTES} allowed",
            quoted(),
            name.len()
        ));
    }
    Ok(())
}

/// `status` with its message bounded (see [`stera_rules::excerpt_message`]): a
/// path of 5,000 characters made a 17.7 KB grpc-message, and the caller reads a
/// few hundred bytes of it.
fn bounded(status: Status) -> Status {
    match stera_rules::excerpt_runs(status.message()) {
        std::borrow::Cow::Borrowed(m) if m.chars().count() <= stera_rules::MAX_MESSAGE_CHARS => {
            status
        }
        _ => Status::new(
            status.code(),
            stera_rules::excerpt_message(status.message()),
        ),
    }
}

/// The status that refuses a message breaking a protocol bound; the field comes
/// first so a worker's log says what to fix.
fn refusal(violation: &Violation) -> Status {
    Status::invalid_argument(format!("refused: {violation}"))
}

/// Turns one received message into a dispatcher event, or `None` for messages
/// that are only logged.
fn event_for(stream: StreamId, msg: Msg) -> Option<Event> {
    Some(match msg {
        Msg::Result(result) => Event::Result { stream, result },
        Msg::Heartbeat(_) => Event::Heartbeat { stream },
        Msg::GiveBack(g) => Event::GiveBack {
            stream,
            lease_id: g.lease_id,
            reason: g.reason,
            failed: g.failed,
        },
        Msg::Credit(c) => Event::Credit {
            stream,
            slots: c.slots,
        },
        Msg::Hello(_) => {
            tracing::warn!(stream, "second Hello on a stream ignored");
            return None;
        }
    })
}

/// Whether a stream error means the worker sent something the server cannot decode
/// (over [`limits::MAX_MESSAGE_BYTES`], or not protobuf), as opposed to a peer that
/// went away.
fn undecodable(status: &Status) -> bool {
    status.code() == tonic::Code::OutOfRange
        || (status.code() == tonic::Code::Internal && status.message().contains("decode"))
}

#[tonic::async_trait]
impl Coordinator for CoordinatorService {
    type WorkStream = UnboundedReceiverStream<Result<CoordinatorMessage, Status>>;

    async fn work(
        &self,
        request: Request<Streaming<WorkerMessage>>,
    ) -> Result<Response<Self::WorkStream>, Status> {
        let peer = request
            .remote_addr()
            .map_or_else(|| "unknown peer".to_owned(), |a| a.to_string());
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
        if let Err(v) = limits::check_hello(&hello) {
            tracing::warn!(%peer, violation = %v, "Hello refused");
            self.registry.record_violation(&v, &peer);
            return Err(refusal(&v));
        }
        let slots = hello.slots;
        let stream = self.next_stream.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = mpsc::unbounded_channel();
        let closer = tx.clone();
        self.dispatcher.send(Event::Connect { stream, hello, tx })?;
        let dispatcher = self.dispatcher.clone();
        let registry = self.registry.clone();
        let mut closing = self.closing.clone();
        tokio::spawn(async move {
            loop {
                let incoming = tokio::select! {
                    m = inbound.message() => m,
                    _ = closing.wait_for(|c| *c) => {
                        let _ = closer.send(Err(Closed.into()));
                        break;
                    }
                };
                let msg = match incoming {
                    Ok(Some(WorkerMessage { msg: Some(msg) })) => msg,
                    Ok(Some(WorkerMessage { msg: None })) => {
                        tracing::warn!(stream, "empty message ignored");
                        continue;
                    }
                    Ok(None) => break,
                    Err(status) => {
                        // A message the server cannot decode (over the size limit,
                        // malformed) ends the stream; tell the worker why. A peer
                        // that simply went away is no violation.
                        if undecodable(&status) {
                            let v = Violation {
                                field: limits::Field::Message,
                                detail: status.message().chars().take(200).collect(),
                            };
                            tracing::warn!(stream, %peer, violation = %v, "stream refused");
                            registry.record_violation(&v, &peer);
                            let _ = closer.send(Err(refusal(&v)));
                        } else {
                            tracing::debug!(stream, %status, "stream ended");
                        }
                        break;
                    }
                };
                let checked = WorkerMessage { msg: Some(msg) };
                if let Err(v) = limits::check_worker_message(&checked, slots) {
                    tracing::warn!(stream, %peer, violation = %v, "message refused; closing the stream");
                    registry.record_violation(&v, &format!("stream {stream} ({peer})"));
                    let _ = closer.send(Err(refusal(&v)));
                    break;
                }
                let Some(event) = checked.msg.and_then(|m| event_for(stream, m)) else {
                    continue;
                };
                if dispatcher.send(event).is_err() {
                    break;
                }
            }
            let _ = dispatcher.send(Event::Disconnect { stream });
        });
        Ok(Response::new(UnboundedReceiverStream::new(rx)))
    }

    async fn status(
        &self,
        _request: Request<StatusRequest>,
    ) -> Result<Response<StatusReply>, Status> {
        Ok(Response::new(self.dispatcher.status().await?))
    }

    async fn export(
        &self,
        request: Request<ExportRequest>,
    ) -> Result<Response<ExportReply>, Status> {
        self.export_to(request.into_inner())
            .await
            .map(Response::new)
            .map_err(bounded)
    }

    async fn backup(
        &self,
        request: Request<BackupRequest>,
    ) -> Result<Response<BackupReply>, Status> {
        self.backup_to(request.into_inner())
            .await
            .map(Response::new)
            .map_err(bounded)
    }

    async fn search(
        &self,
        request: Request<SearchRequest>,
    ) -> Result<Response<SearchReply>, Status> {
        self.search_move(request.into_inner())
            .await
            .map(Response::new)
            .map_err(bounded)
    }
}

impl CoordinatorService {
    async fn export_to(&self, mut request: ExportRequest) -> Result<ExportReply, Status> {
        // Options no export can run with (a NaN temperature, a format this
        // coordinator does not know) and paths no file can have are the
        // caller's mistake, like a refused path: answered as such, logged,
        // counted as `invalid` (or `refused`), not as a failed export (which
        // the critical export alert watches).
        let invalid = check_requested_path("export", &request.path).and_then(|()| {
            stera_service::export::ExportChoice::from_request(&request)
                .map(drop)
                .map_err(|e| format!("export refused: {e}"))
        });
        if let Err(e) = invalid {
            self.registry.record_export_mistake(Mistake::Invalid);
            tracing::warn!(path = %stera_rules::excerpt(&request.path), reason = %e, "export request refused");
            return Err(Status::invalid_argument(e));
        }
        let resolved = stera_book::store_path::resolve_in_export_dir(
            &request.path,
            self.export_dir.as_deref(),
            &self.store,
        )
        .map_err(|e| {
            // A refused path is the caller's mistake (a typo), answered to the
            // caller and logged here; no export ran, so none failed: it is
            // counted as refused, and the export alert stays quiet.
            self.registry.record_export_mistake(Mistake::Refused);
            tracing::warn!(path = %stera_rules::excerpt(&request.path), reason = %e, "export request refused");
            Status::permission_denied(e.to_string())
        })?;
        // A file there that this store did not write is not replaced.
        if let Some(ledger) = &self.ledger
            && let Some(why) = crate::export::not_ours(ledger, &resolved)
        {
            let e = MaintenanceError::NotOurExport {
                path: PathBuf::from(&request.path),
                why,
            };
            self.registry.record_export_mistake(Mistake::Refused);
            tracing::warn!(path = %stera_rules::excerpt(&request.path), reason = %e, "export request refused");
            return Err(Status::already_exists(e.to_string()));
        }
        request.path = resolved.display().to_string();
        self.dispatcher
            .export(request)
            .await
            .map_err(|e| maintenance_status("export", e))
    }

    async fn backup_to(&self, request: BackupRequest) -> Result<BackupReply, Status> {
        if let Err(e) = check_requested_path("backup", &request.path) {
            self.registry
                .record_backup(&crate::registry::BackupOutcome::Invalid);
            tracing::warn!(path = %stera_rules::excerpt(&request.path), reason = %e, "backup request refused");
            return Err(Status::invalid_argument(e));
        }
        // The same rule as exports: only inside --export-dir, never in a store.
        let path = stera_book::store_path::resolve_in_export_dir(
            &request.path,
            self.export_dir.as_deref(),
            &self.store,
        )
        .map_err(|e| {
            // The caller's mistake: no backup ran, so none failed.
            tracing::warn!(path = %stera_rules::excerpt(&request.path), reason = %e, "backup request refused");
            self.registry
                .record_backup(&crate::registry::BackupOutcome::Refused);
            Status::permission_denied(e.to_string())
        })?;
        self.dispatcher
            .backup(path)
            .await
            .map_err(|e| maintenance_status("backup", e))
    }

    async fn search_move(&self, request: SearchRequest) -> Result<SearchReply, Status> {
        if let Err(v) = limits::check_search_request(&request) {
            return Err(refusal(&v));
        }
        // A client that goes away drops this future and with it the receiver: the
        // dispatcher sees the closed channel and forgets the search.
        self.dispatcher.search(request).await
    }
}

/// Bearer-token check for every RPC. Compares in constant time.
#[derive(Clone)]
pub struct TokenCheck {
    expected: Option<Arc<str>>,
    /// When each peer address was last logged as refused: a misconfigured worker
    /// retries for ever, and one line a minute says as much as one per attempt.
    logged: Arc<std::sync::Mutex<HashMap<IpAddr, Instant>>>,
}

impl TokenCheck {
    pub fn new(token: Option<String>) -> Self {
        Self {
            expected: token.map(Into::into),
            logged: Arc::default(),
        }
    }

    /// Logs a refusal of `peer` unless it was logged within `REFUSAL_LOG_EVERY`.
    fn log_refusal(&self, peer: Option<std::net::SocketAddr>, missing: bool) {
        let now = Instant::now();
        if let Some(addr) = peer {
            let mut logged = self
                .logged
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if logged
                .get(&addr.ip())
                .is_some_and(|at| now.duration_since(*at) < REFUSAL_LOG_EVERY)
            {
                return;
            }
            // Bounded: peers not refused for a while are forgotten.
            logged.retain(|_, at| now.duration_since(*at) < REFUSAL_LOG_EVERY);
            logged.insert(addr.ip(), now);
        }
        let peer = peer.map_or_else(|| "unknown".to_owned(), |a| a.to_string());
        let reason = if missing {
            "no token given"
        } else {
            "wrong token"
        };
        tracing::warn!(
            %peer,
            reason,
            "request refused: check the peer's --token-file or STERA_TOKEN (logged once a minute per address)"
        );
    }
}

/// How often refusals of one peer address are logged.
const REFUSAL_LOG_EVERY: Duration = Duration::from_secs(60);

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
            self.log_refusal(request.remote_addr(), given.is_empty());
            Err(Status::unauthenticated("missing or wrong token"))
        }
    }
}

/// The status of an export or backup (`what`) that did not happen: the
/// caller's mistakes (options, a refused path, a backup target that exists)
/// by their kind, anything else as INTERNAL. The maintenance queue has logged
/// and counted it already (a refusal as no failure).
fn maintenance_status(what: &str, error: MaintenanceError) -> Status {
    match error {
        MaintenanceError::Closed(closed) => closed.into(),
        MaintenanceError::Request(e) => Status::invalid_argument(format!("{what} refused: {e}")),
        e @ MaintenanceError::Opponents(_) => {
            Status::invalid_argument(format!("{what} refused: {e}"))
        }
        e @ MaintenanceError::NotOurExport { .. } => Status::already_exists(e.to_string()),
        MaintenanceError::OutputPath(e) => Status::permission_denied(e.to_string()),
        e @ MaintenanceError::BackupExists(_) => Status::already_exists(e.to_string()),
        e => Status::internal(format!("{what} failed: {e}")),
    }
}
