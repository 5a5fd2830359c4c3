//! Search jobs (rpc Search): a client's game played through the workers, as
//! `book-tools match --coordinator` does. Real coordinator processes, a real
//! worker process with the built-in engine, and an in-process worker that
//! answers wrongly on purpose.

use crate::common;

use std::time::Duration;

use crate::common::{Coord, LONG, runtime, start_worker};
use stera_proto::v1::{
    CoordinatorMessage, JobResult, Limits, SearchRequest, SearchResult, WorkerMessage,
    coordinator_message, job, job_result, worker_message,
};
use stera_rules::{Position, STARTPOS_SFEN};
use tokio::sync::mpsc as tmpsc;
use tokio_stream::wrappers::ReceiverStream;

fn request(moves: &[&str]) -> SearchRequest {
    SearchRequest {
        start_sfen: STARTPOS_SFEN.into(),
        moves: moves.iter().map(|m| (*m).to_owned()).collect(),
        limits: Some(Limits {
            nodes: 300,
            depth: 0,
            time_ms: 0,
        }),
        ..SearchRequest::default()
    }
}

fn after(moves: &[&str]) -> Position {
    let mut p = Position::from_sfen(STARTPOS_SFEN).unwrap();
    for m in moves {
        let mv = p.parse_move(m).unwrap();
        p.do_move(mv);
    }
    p
}

/// A real worker answers clients' searches with legal moves for the side to move,
/// many at once, while the coordinator also thinks; bad requests and a wrong token
/// are refused with the reason.
#[test]
fn clients_get_legal_moves_from_a_real_worker() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, "s3cret\n").unwrap();
    let token_arg = token_file.to_str().unwrap();
    let mut c = Coord::start(
        &db,
        "127.0.0.1:0",
        &["--token-file", token_arg, "--nodes", "300"],
        &[],
    );
    let mut worker = start_worker(
        &c.url(),
        &["--slots", "2", "--nodes", "300"],
        &[("STERA_TOKEN", "s3cret")],
    );
    let rt = runtime(2);
    rt.block_on(async {
        let lines: Vec<Vec<&str>> = vec![
            vec![],
            vec!["7g7f"],
            vec!["7g7f", "3c3d"],
            vec!["2g2f", "8c8d", "2f2e"],
            vec!["7g7f", "3c3d", "8h2b+"],
            vec!["5g5f", "5c5d", "5f5e", "5d5e"],
        ];
        let mut tasks = Vec::new();
        for moves in lines {
            let url = c.url();
            tasks.push(tokio::spawn(async move {
                let mut client = common::client(url, Some("s3cret")).await.unwrap();
                let reply = tokio::time::timeout(LONG, client.search(request(&moves)))
                    .await
                    .expect("an answer in time")
                    .expect("search answered")
                    .into_inner();
                (moves, reply)
            }));
        }
        for t in tasks {
            let (moves, reply) = t.await.unwrap();
            let position = after(&moves);
            assert!(
                position.parse_move(&reply.usi).is_ok(),
                "`{}` is not legal after {moves:?}",
                reply.usi
            );
            assert!(reply.has_score, "the built-in engine reports scores");
            assert!(reply.engine.contains("stera-builtin"), "{}", reply.engine);
        }

        let mut client = common::client(c.url(), Some("s3cret")).await.unwrap();
        let err = client.search(request(&["7g7f", "7g7f"])).await.unwrap_err();
        assert_eq!(err.code(), tonic::Code::InvalidArgument);
        assert!(
            err.message().contains("move #2 `7g7f`"),
            "{}",
            err.message()
        );
        let bad_sfen = SearchRequest {
            start_sfen: "not a position".into(),
            ..request(&[])
        };
        let err = client.search(bad_sfen).await.unwrap_err();
        assert_eq!(err.code(), tonic::Code::InvalidArgument);
        assert!(
            err.message().contains("bad start position"),
            "{}",
            err.message()
        );
        let too_long = SearchRequest {
            moves: vec!["7g7f".into(); 10_001],
            ..request(&[])
        };
        let err = client.search(too_long).await.unwrap_err();
        assert_eq!(err.code(), tonic::Code::InvalidArgument);
        assert!(
            err.message().contains("SearchRequest.moves"),
            "{}",
            err.message()
        );

        let mut stranger = common::client(c.url(), Some("wrong")).await.unwrap();
        let err = stranger.search(request(&[])).await.unwrap_err();
        assert_eq!(err.code(), tonic::Code::Unauthenticated);
    });
    c.sigterm();
    assert!(c.wait_exit(LONG).success(), "{:?}", c.log.lock().unwrap());
    let _ = worker.kill();
    let _ = worker.wait();
}

/// A worker that answers a search with an illegal move is told so; after three
/// failed attempts the client gets an error that says why, and the coordinator
/// goes on.
#[test]
fn an_illegal_answer_is_refused_and_the_client_is_told_after_three() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    let mut c = Coord::start(&db, "127.0.0.1:0", &["--nodes", "300"], &[]);
    let rt = runtime(2);
    let url = c.url();
    let (client_answer, rejections) = rt.block_on(async move {
        // The search is queued before any worker connects, so it is the first job.
        let mut client = common::client(url.clone(), None).await.unwrap();
        let search = tokio::spawn(async move { client.search(request(&["7g7f"])).await });
        let mut status_client = common::client(url.clone(), None).await.unwrap();
        // Wait until the coordinator has the request (its answer would come at once
        // if it were invalid; a queued one waits).
        tokio::time::sleep(Duration::from_millis(300)).await;
        let _ = status_client
            .status(stera_proto::v1::StatusRequest::default())
            .await
            .unwrap();

        let mut worker = common::client(url, None).await.unwrap();
        let (tx, rx) = tmpsc::channel::<WorkerMessage>(64);
        tx.send(common::hello("liar", "fake", 1)).await.unwrap();
        let mut inbound = worker
            .work(ReceiverStream::new(rx))
            .await
            .unwrap()
            .into_inner();
        let mut rejections = Vec::new();
        while rejections.len() < 3 {
            let m = tokio::time::timeout(LONG, inbound.message())
                .await
                .expect("a message in time")
                .expect("stream")
                .expect("open");
            match m {
                CoordinatorMessage {
                    msg: Some(coordinator_message::Msg::Job(j)),
                } => {
                    let Some(job::Kind::Search(s)) = j.kind else {
                        panic!("a job of another kind before the search failed");
                    };
                    assert_eq!(s.moves, ["7g7f"]);
                    // Black's move, but white is to move.
                    let result = JobResult {
                        lease_id: j.lease_id,
                        engine: "fake".into(),
                        kind: Some(job_result::Kind::Search(SearchResult {
                            usi: "2g2f".into(),
                            score: 0,
                            has_score: true,
                        })),
                        ..JobResult::default()
                    };
                    tx.send(WorkerMessage {
                        msg: Some(worker_message::Msg::Result(result)),
                    })
                    .await
                    .unwrap();
                }
                CoordinatorMessage {
                    msg: Some(coordinator_message::Msg::Rejected(r)),
                } => rejections.push(r.reason),
                _ => {}
            }
        }
        let answer = tokio::time::timeout(LONG, search)
            .await
            .expect("the client is answered")
            .unwrap();
        (answer, rejections)
    });
    for r in &rejections {
        assert!(r.contains("`2g2f` is not a legal move"), "{r}");
    }
    let err = client_answer.unwrap_err();
    assert_eq!(err.code(), tonic::Code::Aborted);
    assert!(
        err.message().contains("failed 3 times") && err.message().contains("2g2f"),
        "{}",
        err.message()
    );
    c.sigterm();
    assert!(c.wait_exit(LONG).success(), "{:?}", c.log.lock().unwrap());
}
