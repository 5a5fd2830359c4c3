//! The event loop on the in-memory store, without threads or gRPC: events are
//! handled one by one, and the lease clock is passed in.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use stera_book::{LiveBook, MemoryStore, RunConfig, Selector};
use stera_proto::v1::{CoordinatorMessage, Hello, Job, JobResult, Limits, MoveValue};
use stera_rules::Position;
use tokio::sync::{mpsc, watch};
use tonic::Status;

use super::*;
use crate::play::PlaySettings;
use stera_proto::v1::coordinator_message::Msg;

type Outbound = mpsc::UnboundedReceiver<Result<CoordinatorMessage, Status>>;

fn dispatcher(lease: Duration) -> Dispatcher<MemoryStore> {
    let live = LiveBook::open(MemoryStore::default(), Some(RunConfig::default())).unwrap();
    let config = DispatchConfig {
        lease,
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
        play: PlaySettings::default(),
        learn: Default::default(),
        allow_mixed_engines: false,
        lease_secret: [7; 32],
    };
    let (progress, _) = watch::channel(Progress::default());
    Dispatcher::new(
        live,
        Selector::new(),
        config,
        None,
        Arc::new(Registry::default()),
        progress,
    )
    .unwrap()
}

fn connect(d: &mut Dispatcher<MemoryStore>, stream: StreamId) -> Outbound {
    let (tx, rx) = mpsc::unbounded_channel();
    let hello = Hello {
        worker_id: format!("w{stream}"),
        version: "test".into(),
        engine: "fake".into(),
        slots: 1,
        protocol: stera_proto::PROTOCOL_VERSION,
        default_limits: None,
    };
    d.handle(Event::Connect { stream, hello, tx }, &mut Vec::new());
    rx
}

/// The next message that is not a Welcome.
fn next(rx: &mut Outbound) -> Msg {
    loop {
        let m = rx.try_recv().expect("a message").expect("no error status");
        match m.msg {
            Some(Msg::Welcome(_)) | None => {}
            Some(m) => return m,
        }
    }
}

fn job(rx: &mut Outbound) -> Job {
    match next(rx) {
        Msg::Job(job) => job,
        other => panic!("a job expected, got {other:?}"),
    }
}

fn answer(job: &Job) -> JobResult {
    let sfen = job.think_sfen();
    let moves = Position::from_sfen(sfen)
        .unwrap()
        .legal_moves()
        .iter()
        .map(|m| MoveValue {
            usi: m.to_string(),
            value: 0,
            depth: 1,
        })
        .collect();
    JobResult::think(job.lease_id, sfen.to_owned(), moves, 1, 0, "fake".into())
}

#[test]
fn a_think_lease_is_given_and_its_result_stored_and_acknowledged() {
    let mut d = dispatcher(Duration::from_secs(600));
    let mut worker = connect(&mut d, 1);
    d.fill_credits();
    let job = job(&mut worker);
    assert_eq!(d.leases.len(), 1);
    d.commit(vec![(1, answer(&job))]);
    match next(&mut worker) {
        Msg::Ack(ack) => assert_eq!(ack.lease_id, job.lease_id),
        other => panic!("an ack expected, got {other:?}"),
    }
    assert_eq!(d.leases.len(), 0);
    assert_eq!(d.kinds.live.book().len(), 1);
    assert_eq!(d.kinds.think.thought(), 1);
    // The same result again is acknowledged again and changes nothing.
    d.commit(vec![(1, answer(&job))]);
    assert!(matches!(next(&mut worker), Msg::Ack(_)));
    assert_eq!(d.kinds.live.book().len(), 1);
}

#[test]
fn an_expired_lease_is_requeued_and_its_position_handed_out_again() {
    let lease = Duration::from_secs(60);
    let mut d = dispatcher(lease);
    let mut worker = connect(&mut d, 1);
    d.fill_credits();
    let first = job(&mut worker);
    d.expire(Instant::now() + lease * 2);
    assert_eq!(d.leases.len(), 0);
    assert_eq!(d.registry.counters.expired.load(Ordering::Relaxed), 1);
    d.fill_credits();
    let again = job(&mut worker);
    assert_ne!(again.lease_id, first.lease_id);
    assert_eq!(again.think_sfen(), first.think_sfen());
    // The late result of the expired lease still counts: its position is stored
    // once, and the new lease's result is then a duplicate.
    d.commit(vec![(1, answer(&first))]);
    assert!(matches!(next(&mut worker), Msg::Ack(_)));
    d.commit(vec![(1, answer(&again))]);
    assert!(matches!(next(&mut worker), Msg::Ack(_)));
    assert_eq!(d.kinds.live.book().len(), 1);
    assert_eq!(d.registry.counters.duplicates.load(Ordering::Relaxed), 1);
}
