//! Issue 26, point 8: durable before acknowledged, in every path. A second copy
//! of a result in the same batch was acknowledged before the store write, so when
//! the write failed the worker was told "stored" for a result that was not, and
//! another stream's copy got an Ack instead of a Foreign rejection.
//!
//! The dispatcher runs in-process over a store whose writes fail on demand; the
//! copies are queued while the dispatcher is held in its maintenance poll, so
//! they arrive in one batch.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc as smpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use stera_book::{
    BookError, GameCounts, LiveBook, MemoryStore, NodeId, NodeStore, RunConfig, Selector,
    ThoughtNode,
};
use stera_coordinator::dispatcher::{DispatchConfig, Dispatcher, Event, Progress};
use stera_coordinator::registry::Registry;
use stera_proto::v1::{
    CoordinatorMessage, Hello, JobResult, Limits, MoveValue, coordinator_message::Msg,
};
use stera_rules::{Key, Move, Position};
use tokio::sync::{mpsc, watch};

/// A memory store whose node writes fail while `fail` is set.
struct FlakyStore {
    inner: MemoryStore,
    fail: Arc<AtomicBool>,
}

impl NodeStore for FlakyStore {
    fn append(&mut self, nodes: &[ThoughtNode]) -> Result<NodeId, BookError> {
        if self.fail.load(Ordering::SeqCst) {
            return Err(BookError::Invalid("the disk is full (test)".into()));
        }
        self.inner.append(nodes)
    }
    fn len(&self) -> u32 {
        self.inner.len()
    }
    fn for_each_node(
        &self,
        visit: &mut dyn FnMut(NodeId, ThoughtNode) -> Result<(), BookError>,
    ) -> Result<(), BookError> {
        self.inner.for_each_node(visit)
    }
    fn ban(&mut self, node: NodeId, mv: Move) -> Result<(), BookError> {
        self.inner.ban(node, mv)
    }
    fn bans(&self) -> Result<Vec<(NodeId, Move)>, BookError> {
        self.inner.bans()
    }
    fn add_kifu_keys(&mut self, keys: &[Key]) -> Result<(), BookError> {
        self.inner.add_kifu_keys(keys)
    }
    fn kifu_keys(&self) -> Result<Vec<Key>, BookError> {
        self.inner.kifu_keys()
    }
    fn intern_evaluator(&mut self, identity: &str) -> Result<u16, BookError> {
        self.inner.intern_evaluator(identity)
    }
    fn evaluators(&self) -> Result<Vec<String>, BookError> {
        self.inner.evaluators()
    }
    fn save_config(&mut self, config: &RunConfig) -> Result<(), BookError> {
        self.inner.save_config(config)
    }
    fn config(&self) -> Result<Option<RunConfig>, BookError> {
        self.inner.config()
    }
    fn flush(&mut self) -> Result<(), BookError> {
        if self.fail.load(Ordering::SeqCst) {
            return Err(BookError::Invalid("the disk is full (test)".into()));
        }
        self.inner.flush()
    }
    fn record_game(
        &mut self,
        game_id: u64,
        counts: &[(Key, GameCounts)],
    ) -> Result<bool, BookError> {
        self.inner.record_game(game_id, counts)
    }
    fn game_counts(&self, key: Key) -> Result<GameCounts, BookError> {
        self.inner.game_counts(key)
    }
    fn games_recorded(&self) -> Result<u64, BookError> {
        self.inner.games_recorded()
    }
    fn max_game_id(&self) -> Result<Option<u64>, BookError> {
        self.inner.max_game_id()
    }
    fn for_each_game_count(&self, f: &mut dyn FnMut(Key, GameCounts)) -> Result<(), BookError> {
        self.inner.for_each_game_count(f)
    }
    fn intern_opponent(&mut self, identity: &str) -> Result<stera_book::OpponentId, BookError> {
        self.inner.intern_opponent(identity)
    }
    fn opponents(&self) -> Result<Vec<stera_book::OpponentRecord>, BookError> {
        self.inner.opponents()
    }
    fn record_learning_game(
        &mut self,
        opponent: stera_book::OpponentId,
        game_id: u64,
        counts: &[(Key, GameCounts)],
    ) -> Result<bool, BookError> {
        self.inner.record_learning_game(opponent, game_id, counts)
    }
    fn for_each_learning_count(
        &self,
        opponent: stera_book::OpponentId,
        f: &mut dyn FnMut(Key, GameCounts),
    ) -> Result<(), BookError> {
        self.inner.for_each_learning_count(opponent, f)
    }
}

type Outbound = mpsc::UnboundedReceiver<Result<CoordinatorMessage, tonic::Status>>;

fn connect(events: &mpsc::UnboundedSender<Event>, stream: u64, id: &str) -> Outbound {
    let (tx, rx) = mpsc::unbounded_channel();
    events
        .send(Event::Connect {
            stream,
            hello: Hello {
                worker_id: id.into(),
                version: "test".into(),
                engine: "fake".into(),
                slots: 1,
                protocol: stera_proto::PROTOCOL_VERSION,
                default_limits: None,
            },
            tx,
        })
        .unwrap();
    rx
}

fn next(rx: &mut Outbound) -> Msg {
    loop {
        let m = rx
            .blocking_recv()
            .expect("stream open")
            .expect("no error status");
        match m.msg {
            Some(Msg::Welcome(_)) | None => {}
            Some(m) => return m,
        }
    }
}

fn answer(lease_id: u64, sfen: &str) -> JobResult {
    let pos = Position::from_sfen(sfen).unwrap();
    let moves = pos
        .legal_moves()
        .iter()
        .map(|m| MoveValue {
            usi: m.to_string(),
            value: 0,
            depth: 1,
        })
        .collect();
    JobResult::think(lease_id, sfen.to_owned(), moves, 1, 0, "fake".into())
}

#[test]
fn copies_of_a_result_are_never_acknowledged_before_the_store_write() {
    let fail = Arc::new(AtomicBool::new(false));
    let store = FlakyStore {
        inner: MemoryStore::default(),
        fail: fail.clone(),
    };
    let live = LiveBook::open(store, Some(RunConfig::default())).unwrap();
    let config = DispatchConfig {
        lease: Duration::from_secs(600),
        heartbeat: Duration::from_secs(10),
        limits: Limits {
            nodes: 0,
            depth: 1,
            time_ms: 0,
        },
        think_limit: None,
        max_failures: 3,
        max_worker_failures: 10,
        version: "test".into(),
        play: Default::default(),
        learn: Default::default(),
        allow_mixed_engines: false,
        lease_secret: [7; 32],
    };
    let (progress, _progress_rx) = watch::channel(Progress::default());
    // Holds the dispatcher in its maintenance poll while the test queues events.
    let hold = Arc::new(AtomicBool::new(false));
    let (held_tx, held_rx) = smpsc::channel::<()>();
    let (release_tx, release_rx) = smpsc::channel::<()>();
    let release_rx = Mutex::new(release_rx);
    let gate = hold.clone();
    let dispatcher = Dispatcher::new(
        live,
        Selector::new(),
        config,
        None,
        Arc::new(Registry::default()),
        progress,
    )
    .unwrap()
    .with_compaction(Box::new(move |_| {
        if gate.swap(false, Ordering::SeqCst) {
            held_tx.send(()).unwrap();
            release_rx.lock().unwrap().recv().unwrap();
        }
        None
    }));
    let (events, events_rx) = mpsc::unbounded_channel();
    let thread = std::thread::spawn(move || dispatcher.run(events_rx));

    let mut a = connect(&events, 1, "a");
    let Msg::Job(job) = next(&mut a) else {
        panic!("a job first")
    };
    let mut b = connect(&events, 2, "b");
    // Hold the dispatcher, then queue three copies of one result and fail the store.
    hold.store(true, Ordering::SeqCst);
    events.send(Event::Heartbeat { stream: 1 }).unwrap();
    held_rx.recv().unwrap();
    fail.store(true, Ordering::SeqCst);
    let result = answer(job.lease_id, job.think_sfen());
    for stream in [1, 1, 2] {
        events
            .send(Event::Result {
                stream,
                result: result.clone(),
            })
            .unwrap();
    }
    release_tx.send(()).unwrap();
    // Both copies of stream 1 are rejected: the result is not stored.
    for copy in 0..2 {
        match next(&mut a) {
            Msg::Rejected(r) => assert_eq!(r.lease_id, job.lease_id),
            other => panic!("copy {copy} of a result that was not stored: {other:?}"),
        }
    }
    // Stream 2 never held the lease.
    loop {
        match next(&mut b) {
            Msg::Rejected(r) => {
                assert!(r.reason.contains("another worker"), "{}", r.reason);
                break;
            }
            Msg::Job(_) => {}
            other => panic!("a foreign copy answered with {other:?}"),
        }
    }
    drop(events);
    let live = thread.join().unwrap();
    assert_eq!(live.book().len(), 0);
}
