//! The dispatcher's handle and the [`Event`]s it sends: typed requests to the
//! dispatcher thread for the tasks around it (the gRPC service, the dashboard,
//! the status line, the maintenance timers, shutdown). Each request that waits
//! for an answer sends an event with a one-shot reply channel; a dispatcher that is gone (the
//! coordinator shuts down) is one error, [`Closed`], wherever it is met.

use std::path::PathBuf;

use stera_proto::v1::{
    BackupReply, CoordinatorMessage, ExportReply, ExportRequest, Hello, JobResult, SearchReply,
    SearchRequest, StatusReply,
};
use tokio::sync::{mpsc, oneshot};
use tonic::Status;

use crate::leases::StreamId;
use crate::maintenance::queue::{BackupReplyTx, ExportReplyTx};
use crate::maintenance::{MaintenanceError, Requester};
use crate::search::SearchAnswer;

/// The answer to [`Event::BookSnapshot`]: the book and the pool's learning counters.
pub(crate) type SnapshotReply = oneshot::Sender<
    Result<
        (
            stera_book::Book,
            std::collections::HashMap<stera_rules::Key, stera_book::GameCounts>,
        ),
        String,
    >,
>;
/// The answer to [`Event::LearnGame`] and [`Event::SelfPlayGame`]: the games
/// of that kind counted in this run, and the positions the book holds now.
pub(crate) type CountReply = oneshot::Sender<Result<(u64, u64), String>>;

/// Messages to a worker's stream.
pub type StreamTx = mpsc::UnboundedSender<Result<CoordinatorMessage, Status>>;

/// What the dispatcher reacts to.
pub enum Event {
    Connect {
        stream: StreamId,
        hello: Hello,
        tx: StreamTx,
    },
    Disconnect {
        stream: StreamId,
    },
    Result {
        stream: StreamId,
        result: JobResult,
    },
    Heartbeat {
        stream: StreamId,
    },
    GiveBack {
        stream: StreamId,
        lease_id: u64,
        reason: String,
        /// The evaluation failed (counts toward quarantine), rather than the
        /// worker stopping.
        failed: bool,
    },
    Credit {
        stream: StreamId,
        slots: u32,
    },
    Tick,
    Status {
        reply: oneshot::Sender<StatusReply>,
    },
    Export {
        request: ExportRequest,
        reply: ExportReplyTx,
    },
    /// Copy the store to `path` (a new directory).
    Backup {
        path: std::path::PathBuf,
        reply: BackupReplyTx,
    },
    /// A client asks for one move of its game (rpc Search).
    Search {
        request: SearchRequest,
        answer: SearchAnswer,
    },
    /// The game threads (learning, self-play) ask for the book and the pool's
    /// learning counters.
    BookSnapshot {
        /// The pool's budgets (`1000 nodes`): opponents whose identity ends with
        /// ` at ` one of them are the pool's ledgers (none for self-play).
        budgets: Vec<String>,
        reply: SnapshotReply,
    },
    /// A finished learning game to count against the opponent `identity`
    /// (empty counts: nothing to teach, counted towards the target only).
    LearnGame {
        identity: String,
        counts: Vec<(stera_rules::Key, stera_book::GameCounts)>,
        /// Where the game left the book early: the position before the
        /// opponent's reply the book lacks, and the reply.
        exit: Option<Box<(stera_rules::Position, stera_rules::Move)>>,
        reply: CountReply,
    },
    /// No more learning games come (every key position settled): the games
    /// counted are the run's learning target.
    LearnEnded,
    /// A finished self-play game to count in the self-play counters.
    SelfPlayGame {
        game: Box<stera_games::Game>,
        reply: CountReply,
    },
    /// Stop handing out jobs (shutdown); leases in flight may still complete.
    Drain {
        reason: String,
    },
}

pub use crate::closed::Closed;

/// Sends events and requests to the dispatcher thread. Cheap to clone; the
/// dispatcher ends once every handle (and every other sender) is dropped.
#[derive(Debug, Clone)]
pub struct DispatcherHandle {
    events: mpsc::UnboundedSender<Event>,
}

/// A handle that does not keep the dispatcher alive (for servers that outlive it).
#[derive(Debug, Clone)]
pub struct WeakDispatcherHandle {
    events: mpsc::WeakUnboundedSender<Event>,
}

impl WeakDispatcherHandle {
    /// The handle, while the dispatcher runs.
    #[must_use]
    pub fn upgrade(&self) -> Option<DispatcherHandle> {
        self.events
            .upgrade()
            .map(|events| DispatcherHandle { events })
    }
}

impl DispatcherHandle {
    /// A handle and the receiver that [`crate::dispatcher::Dispatcher::run`] takes.
    #[must_use]
    pub fn channel() -> (Self, mpsc::UnboundedReceiver<Event>) {
        let (events, rx) = mpsc::unbounded_channel();
        (Self { events }, rx)
    }

    /// A handle that does not keep the dispatcher alive.
    #[must_use]
    pub fn downgrade(&self) -> WeakDispatcherHandle {
        WeakDispatcherHandle {
            events: self.events.downgrade(),
        }
    }

    /// Sends an event that needs no answer (a worker's message, a tick, a drain).
    ///
    /// # Errors
    /// The dispatcher is gone.
    pub fn send(&self, event: Event) -> Result<(), Closed> {
        self.events.send(event).map_err(|_| Closed)
    }

    /// Stops handing out jobs; leases in flight may still complete.
    ///
    /// # Errors
    /// The dispatcher is gone.
    pub fn drain(&self, reason: &str) -> Result<(), Closed> {
        self.send(Event::Drain {
            reason: reason.to_owned(),
        })
    }

    /// The book, the workers and the counters now.
    ///
    /// # Errors
    /// The dispatcher is gone.
    pub async fn status(&self) -> Result<StatusReply, Closed> {
        let (reply, rx) = oneshot::channel();
        self.send(Event::Status { reply })?;
        rx.await.map_err(|_| Closed)
    }

    /// Exports the live book as `request` says (once the maintenance thread is free).
    ///
    /// # Errors
    /// The export failed, or the dispatcher is gone.
    pub async fn export(&self, request: ExportRequest) -> Result<ExportReply, MaintenanceError> {
        let (reply, rx) = oneshot::channel();
        self.send(Event::Export { request, reply })?;
        rx.await.map_err(|_| Closed)?
    }

    /// Copies the store into the new directory `path`.
    ///
    /// # Errors
    /// The backup failed, or the dispatcher is gone.
    pub async fn backup(&self, path: PathBuf) -> Result<BackupReply, MaintenanceError> {
        let (reply, rx) = oneshot::channel();
        self.send(Event::Backup { path, reply })?;
        rx.await.map_err(|_| Closed)?
    }

    /// One move for a client's game, searched by a worker. Dropping the future
    /// drops the receiver: the dispatcher sees the closed channel and forgets the
    /// search.
    ///
    /// # Errors
    /// The search failed (the status goes to the client as it is), or the
    /// dispatcher is gone.
    pub async fn search(&self, request: SearchRequest) -> Result<SearchReply, tonic::Status> {
        let (answer, rx) = oneshot::channel();
        self.send(Event::Search { request, answer })?;
        rx.await.map_err(|_| Closed)?
    }
}

impl Requester for DispatcherHandle {
    async fn export(&self, request: ExportRequest) -> Result<ExportReply, MaintenanceError> {
        DispatcherHandle::export(self, request).await
    }

    async fn backup(&self, path: PathBuf) -> Result<BackupReply, MaintenanceError> {
        DispatcherHandle::backup(self, path).await
    }
}
