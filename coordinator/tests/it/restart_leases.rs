//! No lost work across restarts (issue 14, item 4): a think result for a lease of
//! an earlier run of the coordinator (killed before the result arrived) is checked
//! against the position it names and stored when that position is still unthought.
//! Real coordinator processes on one sled store.

use crate::common;

use std::path::Path;

use crate::common::{Answer, Coord, LONG, result_for};
use stera_book::{LiveBook, Origin, RunConfig, SledStore};
use stera_coordinator::lease_id::{Binding, LeaseIds};
use stera_proto::v1::{
    CoordinatorMessage, Job, JobResult, WorkerMessage, coordinator_message, job_result,
    worker_message,
};
use stera_rules::Position;
use tokio::sync::mpsc as tmpsc;
use tokio_stream::wrappers::ReceiverStream;

/// What the coordinator said about one result.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Answered {
    Ack(u64),
    Rejected(u64, String),
}

/// One Work stream, driven by hand.
struct Session {
    tx: tmpsc::Sender<WorkerMessage>,
    inbound: tonic::Streaming<CoordinatorMessage>,
    /// Jobs received while waiting for answers.
    jobs: Vec<Job>,
}

impl Session {
    async fn open(url: String, worker_id: &str, slots: u32) -> Self {
        let mut client = common::client(url, None).await.expect("connect");
        let (tx, rx) = tmpsc::channel::<WorkerMessage>(256);
        tx.send(common::hello(worker_id, "fake", slots))
            .await
            .unwrap();
        let inbound = client
            .work(ReceiverStream::new(rx))
            .await
            .expect("work stream")
            .into_inner();
        Self {
            tx,
            inbound,
            jobs: Vec::new(),
        }
    }

    async fn next(&mut self) -> coordinator_message::Msg {
        loop {
            let msg = tokio::time::timeout(LONG, self.inbound.message())
                .await
                .expect("the coordinator answers in time")
                .expect("stream intact")
                .expect("stream open");
            if let Some(m) = msg.msg {
                return m;
            }
        }
    }

    /// Waits until `n` jobs were received in all (answers meanwhile are a bug).
    async fn jobs(&mut self, n: usize) -> Vec<Job> {
        while self.jobs.len() < n {
            match self.next().await {
                coordinator_message::Msg::Job(j) => self.jobs.push(j),
                coordinator_message::Msg::Welcome(_) | coordinator_message::Msg::Drain(_) => {}
                other => panic!("unexpected message while waiting for jobs: {other:?}"),
            }
        }
        self.jobs[..n].to_vec()
    }

    async fn send(&self, result: JobResult) {
        self.tx
            .send(WorkerMessage {
                msg: Some(worker_message::Msg::Result(result)),
            })
            .await
            .unwrap();
    }

    /// The next answer to a result (jobs are collected on the way).
    async fn answer(&mut self) -> Answered {
        loop {
            match self.next().await {
                coordinator_message::Msg::Ack(a) => return Answered::Ack(a.lease_id),
                coordinator_message::Msg::Rejected(r) => {
                    return Answered::Rejected(r.lease_id, r.reason);
                }
                coordinator_message::Msg::Job(j) => self.jobs.push(j),
                coordinator_message::Msg::Welcome(_) | coordinator_message::Msg::Drain(_) => {}
            }
        }
    }

    /// Sends `results` and returns their answers, in order.
    async fn exchange(&mut self, results: Vec<JobResult>) -> Vec<Answered> {
        let n = results.len();
        for r in results {
            self.send(r).await;
        }
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            out.push(self.answer().await);
        }
        out
    }
}

fn rt() -> tokio::runtime::Runtime {
    common::runtime(2)
}

/// A store whose only root is the start position, so that after the first result
/// the jobs are its children (leaves with a parent in the book).
fn new_store(db: &Path) {
    let config = RunConfig {
        roots: vec!["startpos".into()],
        ..RunConfig::default()
    };
    let store = SledStore::open(db).expect("create store");
    drop(LiveBook::open(store, Some(config)).expect("configure store"));
}

/// Run 1: the root is thought (acknowledged), then `n` child jobs are taken and the
/// coordinator is killed (SIGKILL) before any is answered. Returns those jobs.
fn run_one_then_kill(db: &Path, n: usize) -> Vec<Job> {
    new_store(db);
    let mut c = Coord::start(db, "127.0.0.1:0", &[], &[]);
    let jobs = rt().block_on(async {
        let mut s = Session::open(c.url(), "before", u32::try_from(n).unwrap()).await;
        let root = s.jobs(1).await.remove(0);
        assert_eq!(Position::from_sfen(root.think_sfen()).unwrap().ply(), 1);
        let answers = s
            .exchange(vec![result_for(
                root.lease_id,
                root.think_sfen(),
                Answer::Good,
            )])
            .await;
        assert_eq!(answers, vec![Answered::Ack(root.lease_id)]);
        let jobs = s.jobs(n + 1).await[1..].to_vec();
        for j in &jobs {
            assert_eq!(Position::from_sfen(j.think_sfen()).unwrap().ply(), 2);
        }
        jobs
    });
    c.kill9();
    assert_eq!(common::book_len(db), 1, "only the root is thought");
    jobs
}

/// The values `result_for` sends for `sfen`, in canonical move order.
fn good_values(sfen: &str) -> Vec<i16> {
    let pos = Position::from_sfen(sfen).unwrap();
    pos.legal_moves()
        .iter()
        .map(|m| i16::try_from(m.raw() % 97).unwrap() - 48)
        .collect()
}

/// The closed store at `db`, opened again.
fn reopen(db: &Path) -> SledStore {
    // sled lets go of its file lock when its flusher thread ends, a moment after the
    // previous handle of this process was dropped: wait for that, not longer.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        match SledStore::open(db) {
            Err(stera_book::BookError::InUse { .. }) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            other => break other.expect("reopen store"),
        }
    }
}

/// A closed store's node of `sfen`: its origin and values.
fn node_of(db: &Path, sfen: &str) -> Option<(Origin, Vec<i16>)> {
    let store = reopen(db);
    let live = LiveBook::open(store, None).unwrap();
    let book = live.book();
    let id = book.get(Position::from_sfen(sfen).unwrap().key())?;
    Some((book.origin(id), book.values(id).to_vec()))
}

fn stop(c: &mut Coord) {
    c.sigterm();
    assert!(c.wait_exit(LONG).success(), "{:?}", c.log.lock().unwrap());
}

/// Results finished for the leases of a killed coordinator are acknowledged by the
/// next run on the same store and stored once; sent again, acknowledged again and
/// still stored once.
#[test]
fn results_of_a_killed_run_are_kept() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    let old = run_one_then_kill(&db, 4);
    let sfens: Vec<String> = old.iter().map(|j| j.think_sfen().to_owned()).collect();

    let mut c = Coord::start(&db, "127.0.0.1:0", &[], &[]);
    rt().block_on(async {
        // A new stream of the restarted worker; it is handed jobs of its own,
        // possibly the same positions: they stay unanswered.
        let mut s = Session::open(c.url(), "after", 1).await;
        let results: Vec<JobResult> = old
            .iter()
            .map(|j| result_for(j.lease_id, j.think_sfen(), Answer::Good))
            .collect();
        let want: Vec<Answered> = old.iter().map(|j| Answered::Ack(j.lease_id)).collect();
        assert_eq!(s.exchange(results.clone()).await, want);
        let status = common::status(&c.url(), None).await;
        assert_eq!(status.nodes, 5, "the root and the four old results");
        // Again: acknowledged, nothing stored twice.
        assert_eq!(s.exchange(results).await, want);
        let status = common::status(&c.url(), None).await;
        assert_eq!(status.nodes, 5);
    });
    c.wait_log("result of an earlier lease accepted by position", LONG);
    let accepted = c
        .log
        .lock()
        .unwrap()
        .iter()
        .filter(|l| l.contains("result of an earlier lease accepted by position"))
        .count();
    assert_eq!(accepted, 4, "logged once per stored result");
    stop(&mut c);

    // Reopened: each position once, with the values sent, under the thought
    // parent it was found a child of (the root) as a leased leaf would be.
    assert_eq!(common::book_len(&db), 5);
    assert!(common::book_contains_all(&db, &sfens).is_empty());
    let root = Position::startpos();
    for sfen in &sfens {
        let (origin, values) = node_of(&db, sfen).expect("stored");
        let pos = Position::from_sfen(sfen).unwrap();
        match origin {
            Origin::Child { parent, mv } => {
                assert_eq!(parent.index(), 0, "the root is the first node");
                assert_eq!(root.key_after(mv), pos.key());
            }
            Origin::Sfen(s) => panic!("`{sfen}` stored with the SFEN origin `{s}`"),
        }
        assert_eq!(values, good_values(sfen));
    }

    // A third run knows none of these leases: the results are duplicates by
    // position now, acknowledged and not stored again.
    let mut c = Coord::start(&db, "127.0.0.1:0", &[], &[]);
    rt().block_on(async {
        let mut s = Session::open(c.url(), "later", 1).await;
        let results: Vec<JobResult> = old
            .iter()
            .map(|j| result_for(j.lease_id, j.think_sfen(), Answer::Good))
            .collect();
        let want: Vec<Answered> = old.iter().map(|j| Answered::Ack(j.lease_id)).collect();
        assert_eq!(s.exchange(results).await, want);
        assert_eq!(common::status(&c.url(), None).await.nodes, 5);
    });
    stop(&mut c);
    assert_eq!(common::book_len(&db), 5);
}

/// An old lease's result that is wrong for its position is rejected with the
/// reason and nothing is stored; so is one naming no position (a worker before
/// `ThinkResult.sfen`) or something that is not a position.
#[test]
fn wrong_results_of_a_killed_run_are_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    let old = run_one_then_kill(&db, 4);

    let mut c = Coord::start(&db, "127.0.0.1:0", &[], &[]);
    rt().block_on(async {
        let mut s = Session::open(c.url(), "after", 1).await;
        let missing = result_for(old[0].lease_id, old[0].think_sfen(), Answer::MissingMove);
        let illegal = result_for(old[1].lease_id, old[1].think_sfen(), Answer::IllegalMove);
        let mut no_sfen = result_for(old[2].lease_id, old[2].think_sfen(), Answer::Good);
        let mut not_a_position = no_sfen.clone();
        if let Some(job_result::Kind::Think(t)) = &mut no_sfen.kind {
            t.sfen.clear();
        }
        not_a_position.lease_id = old[3].lease_id;
        if let Some(job_result::Kind::Think(t)) = &mut not_a_position.kind {
            t.sfen = "9/9/9 b - 1".into();
        }
        let answers = s
            .exchange(vec![missing, illegal, no_sfen, not_a_position])
            .await;
        let reasons: Vec<(u64, String)> = answers
            .into_iter()
            .map(|a| match a {
                Answered::Rejected(id, reason) => (id, reason),
                Answered::Ack(id) => panic!("a wrong result for lease {id} was acknowledged"),
            })
            .collect();
        let ids: Vec<u64> = reasons.iter().map(|(id, _)| *id).collect();
        assert_eq!(ids, old.iter().map(|j| j.lease_id).collect::<Vec<_>>());
        assert!(reasons[0].1.contains("missing"), "{}", reasons[0].1);
        assert!(reasons[1].1.contains("not legal"), "{}", reasons[1].1);
        assert!(reasons[2].1.contains("unknown"), "{}", reasons[2].1);
        assert!(reasons[3].1.contains("not an SFEN"), "{}", reasons[3].1);
        assert_eq!(common::status(&c.url(), None).await.nodes, 1);
    });
    assert!(
        !c.log
            .lock()
            .unwrap()
            .iter()
            .any(|l| l.contains("accepted by position")),
        "{:?}",
        c.log.lock().unwrap()
    );
    stop(&mut c);
    assert_eq!(common::book_len(&db), 1, "nothing stored");
}

/// An old lease's result for a position the new run has thought meanwhile is
/// acknowledged as a duplicate; the stored node stays as it was.
#[test]
fn old_result_for_a_thought_position_is_a_duplicate() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    let old = run_one_then_kill(&db, 1).remove(0);
    let sfen = old.think_sfen().to_owned();

    let mut c = Coord::start(&db, "127.0.0.1:0", &[], &[]);
    rt().block_on(async {
        // The new run hands the same position out again (selection is
        // deterministic); a live lease's result stores it.
        let mut s = Session::open(c.url(), "after", 1).await;
        let mut thought = false;
        for n in 1..=40 {
            let job = s.jobs(n).await.pop().unwrap();
            let r = result_for(job.lease_id, job.think_sfen(), Answer::Good);
            assert_eq!(s.exchange(vec![r]).await, vec![Answered::Ack(job.lease_id)]);
            if job.think_sfen() == sfen {
                thought = true;
                break;
            }
        }
        assert!(thought, "the new run never handed out `{sfen}`");
        let nodes = common::status(&c.url(), None).await.nodes;
        // The old result, with other values.
        let mut late = result_for(old.lease_id, &sfen, Answer::Good);
        if let Some(job_result::Kind::Think(t)) = &mut late.kind {
            for m in &mut t.moves {
                m.value += 1;
            }
        }
        assert_eq!(
            s.exchange(vec![late]).await,
            vec![Answered::Ack(old.lease_id)]
        );
        assert_eq!(common::status(&c.url(), None).await.nodes, nodes);
    });
    assert!(
        !c.log
            .lock()
            .unwrap()
            .iter()
            .any(|l| l.contains("accepted by position")),
    );
    stop(&mut c);
    let (origin, values) = node_of(&db, &sfen).expect("stored");
    assert!(
        matches!(origin, Origin::Child { .. }),
        "stored by its live lease, with its parent: {origin:?}"
    );
    assert_eq!(values, good_values(&sfen), "the stored node is unchanged");
}

/// A result, every move valued 32,000, for `sfen`.
fn all_mates(lease_id: u64, sfen: &str) -> JobResult {
    let mut r = result_for(lease_id, sfen, Answer::Good);
    if let Some(job_result::Kind::Think(t)) = &mut r.kind {
        for m in &mut t.moves {
            m.value = 32_000;
        }
    }
    r
}

/// Lease ids as the coordinators of the closed store at `db` sign them: what no
/// client can make (see `made_up_lease_ids_are_rejected_whatever_their_position`),
/// here to test the check beneath the signature.
fn signed_ids(db: &Path) -> LeaseIds {
    let secret = reopen(db).lease_secret().expect("the store's lease secret");
    LeaseIds::new(&secret)
}

/// A genuine lease id of this store for `sfen`.
fn signed_for(ids: &mut LeaseIds, sfen: &str) -> u64 {
    ids.next(Binding::Think(Position::from_sfen(sfen).unwrap().key()))
}

/// Results for positions no lease of this book could have named (issue 35),
/// every move valued 32,000, each with a lease id signed for its position with
/// the store's own secret (which no client has: the layer beneath the
/// signature): a child of the thought root at ply 9,000 (past the ply limit), a
/// position two moves from any thought one, and one of a middle game. Each is
/// rejected, nothing is stored, and each counts against the worker: with
/// `--max-worker-failures 3` the third refuses it. A late result for the
/// colour-flipped twin of a child of the root (a position the book links to the
/// root) is still taken.
#[test]
fn forged_results_for_positions_never_handed_out_are_rejected_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    let old = run_one_then_kill(&db, 1).remove(0);
    let mut ids = signed_ids(&db);
    let child = Position::from_sfen(old.think_sfen()).unwrap();
    let far_ply = format!("{} 9000", child.to_sfen_without_ply());
    let grandchild = Position::from_position_command("startpos moves 7g7f 3c3d")
        .unwrap()
        .to_sfen();
    let middle = Position::from_position_command(
        "startpos moves 7g7f 3c3d 2g2f 4c4d 3i4h 3a4b 5i6h 5a6b 6h7h 6b7b",
    )
    .unwrap()
    .to_sfen();
    let forged = [far_ply, grandchild, middle];

    let mut c = Coord::start(&db, "127.0.0.1:0", &["--max-worker-failures", "3"], &[]);
    rt().block_on(async {
        let mut s = Session::open(c.url(), "forger", 1).await;
        let results: Vec<JobResult> = forged
            .iter()
            .map(|sfen| all_mates(signed_for(&mut ids, sfen), sfen))
            .collect();
        let answers = s.exchange(results).await;
        for (answer, sfen) in answers.iter().zip(&forged) {
            match answer {
                Answered::Rejected(_, reason) => {
                    assert!(reason.contains("no lease names it"), "{sfen}: {reason}");
                }
                Answered::Ack(id) => panic!("the forged result {id} for `{sfen}` was taken"),
            }
        }
        if let Answered::Rejected(_, reason) = &answers[0] {
            assert!(reason.contains("ply limit"), "{reason}");
        }
        // Counted against the worker: the third failure in a row refuses it.
        let status = loop {
            match tokio::time::timeout(LONG, s.inbound.message()).await {
                Ok(Ok(Some(_))) => {}
                Ok(Err(status)) => break status,
                other => panic!("the forger's stream was not refused: {other:?}"),
            }
        };
        assert_eq!(status.code(), tonic::Code::FailedPrecondition, "{status:?}");
        assert!(status.message().contains("refused"), "{status:?}");
        assert_eq!(common::status(&c.url(), None).await.nodes, 1);

        // The twin of a child of the thought root, from another worker.
        let twin = child.flipped().to_sfen();
        let mut s = Session::open(c.url(), "honest", 1).await;
        let twin_lease = signed_for(&mut ids, &twin);
        let late = result_for(twin_lease, &twin, Answer::Good);
        assert_eq!(
            s.exchange(vec![late]).await,
            vec![Answered::Ack(twin_lease)]
        );
        assert_eq!(common::status(&c.url(), None).await.nodes, 2);
    });
    c.wait_log("worker refused", LONG);
    stop(&mut c);
    assert_eq!(common::book_len(&db), 2, "the root and the twin");
    for sfen in &forged {
        let pos = Position::from_sfen(sfen).unwrap();
        assert!(node_of(&db, &pos.to_sfen()).is_none(), "`{sfen}` stored");
    }
}

/// Issue 45, point 3: a token holder sends results, every move valued -31,000,
/// for an unthought child of the thought root (a position a lease of this book
/// could name) with lease ids this store's coordinators never issued for it: an
/// id never issued, the genuine id with its number or its tag altered, the id a
/// coordinator of another store issued, and the genuine id for another
/// position. Each is rejected as an unknown lease, nothing of it is stored,
/// and none counts against the worker (a caller's mistake, not a failure): its
/// stream stays open, and the genuine result is then taken with its own values.
#[test]
fn made_up_lease_ids_are_rejected_whatever_their_position() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    let old = run_one_then_kill(&db, 1).remove(0);
    let other_store = run_one_then_kill(&dir.path().join("other.db"), 1).remove(0);
    let sfen = old.think_sfen().to_owned();
    let sibling = ["startpos moves 2g2f", "startpos moves 7g7f"]
        .into_iter()
        .map(|p| Position::from_position_command(p).unwrap().to_sfen())
        .find(|s| *s != sfen)
        .unwrap();
    let forged = |lease_id: u64, sfen: &str| {
        let mut r = all_mates(lease_id, sfen);
        if let Some(job_result::Kind::Think(t)) = &mut r.kind {
            for m in &mut t.moves {
                m.value = -31_000;
            }
        }
        r
    };
    let variants = [
        ("never issued", forged(0x1234_5678_9abc_def0, &sfen)),
        ("its number altered", forged(old.lease_id ^ 1, &sfen)),
        ("its tag altered", forged(old.lease_id ^ (1 << 40), &sfen)),
        (
            "of another store",
            forged(other_store.lease_id, other_store.think_sfen()),
        ),
        ("for another position", forged(old.lease_id, &sibling)),
    ];

    let mut c = Coord::start(&db, "127.0.0.1:0", &["--max-worker-failures", "1"], &[]);
    rt().block_on(async {
        let mut s = Session::open(c.url(), "forger", 1).await;
        let results: Vec<JobResult> = variants.iter().map(|(_, r)| r.clone()).collect();
        let answers = s.exchange(results).await;
        for ((what, sent), answer) in variants.iter().zip(&answers) {
            match answer {
                Answered::Rejected(id, reason) => {
                    assert_eq!(*id, sent.lease_id, "{what}");
                    assert!(reason.contains("unknown lease"), "{what}: {reason}");
                }
                Answered::Ack(id) => panic!("the result of a lease id {what} ({id}) was taken"),
            }
        }
        let status = common::status(&c.url(), None).await;
        assert_eq!(status.nodes, 1, "nothing of them stored");
        assert_eq!(status.rejected, variants.len() as u64);
        // Not counted against the worker (it would be refused at the first
        // failure): its stream goes on, and the genuine result is taken.
        let genuine = result_for(old.lease_id, &sfen, Answer::Good);
        assert_eq!(
            s.exchange(vec![genuine]).await,
            vec![Answered::Ack(old.lease_id)]
        );
        assert_eq!(common::status(&c.url(), None).await.nodes, 2);
    });
    assert!(
        !c.log
            .lock()
            .unwrap()
            .iter()
            .any(|l| l.contains("worker refused")),
        "{:?}",
        c.log.lock().unwrap()
    );
    stop(&mut c);
    let (_, values) = node_of(&db, &sfen).expect("the genuine result is stored");
    assert_eq!(values, good_values(&sfen), "with its own values");
    assert!(node_of(&db, &sibling).is_none());
}

/// Issue 45: the job of an expired lease went back to the same silent worker
/// whenever the round robin happened to start there (another worker had been
/// served since). A stream whose lease expired is now served after every
/// other with a free slot until it speaks again: the job goes to the worker
/// that answers. Two workers of one slot and a run of two games: the first
/// worker takes a game and never answers; the second plays the other, and
/// then, when the first one's lease expires, the game it held (the only job
/// left) instead of waiting for ever.
#[test]
fn an_expired_job_goes_to_another_worker_not_the_silent_one() {
    use crate::games::{Answer as Reply, Maker, exchange, resigning_game};
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    let mut c = Coord::start(
        &db,
        "127.0.0.1:0",
        &common::games_only("2", &["--lease-secs", "2", "--heartbeat-secs", "1"]),
        &[],
    );
    let url = c.url();
    let rt = common::runtime(2);
    let silent = rt.spawn(common::fake_worker(
        url.clone(),
        None,
        1,
        Answer::Silent,
        usize::MAX,
        LONG,
    ));
    let start = std::time::Instant::now();
    while rt.block_on(common::status(&url, None)).in_flight < 1 {
        assert!(start.elapsed() < LONG, "the silent worker got no job");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let games: Vec<Maker> = (0..2)
        .map(|_| -> Maker { Box::new(|lease, play| vec![resigning_game(lease, play)]) })
        .collect();
    assert_eq!(exchange(&url, games), [Reply::Ack, Reply::Ack]);
    c.wait_log("lease expired", LONG);
    // Two games counted: the run ends, and the silent worker's stream with it.
    assert!(c.wait_exit(LONG).success());
    let silent = rt.block_on(silent).unwrap().unwrap();
    assert_eq!(silent.jobs.len(), 1, "{silent:?}");
    let store = SledStore::open_existing(&db).unwrap();
    assert_eq!(stera_book::NodeStore::games_recorded(&store).unwrap(), 2);
}
