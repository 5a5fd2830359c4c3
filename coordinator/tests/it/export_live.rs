//! An export while generation runs (issue 14, item 1): results keep being
//! acknowledged during the export, and the file equals an offline export of the
//! snapshot it reports.

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use crate::common::{Answer, Coord, runtime};
use stera_book::synthetic::{GrowOptions, PseudoEvaluator, grow};
use stera_book::terashock::{NodeExtras, export_db2016};
use stera_book::{LiveBook, NodeStore, RunConfig, Selector, SledStore};
use stera_proto::v1::{ExportRequest, WorkerMessage, coordinator_message, worker_message};
use tokio::sync::mpsc as tmpsc;
use tokio_stream::wrappers::ReceiverStream;

/// A book big enough that its export takes a while in a debug build.
const BOOK_NODES: usize = 40_000;

fn grow_store(db: &std::path::Path) {
    let store = SledStore::open(db).unwrap();
    let mut live = LiveBook::open(store, Some(RunConfig::default())).unwrap();
    let mut selector = Selector::new();
    grow(
        &mut live,
        &mut selector,
        &PseudoEvaluator::new(7),
        BOOK_NODES,
        GrowOptions::default(),
        &mut |_| {},
    )
    .unwrap();
}

/// A worker that answers every job until `stop` and counts acknowledgements.
async fn counting_worker(url: String, acked: Arc<AtomicUsize>, stop: Arc<AtomicBool>) {
    let mut client = common::client(url, None).await.unwrap();
    let (tx, rx) = tmpsc::channel::<WorkerMessage>(1024);
    tx.send(common::hello("counting", "fake", 8)).await.unwrap();
    let mut inbound = client
        .work(ReceiverStream::new(rx))
        .await
        .unwrap()
        .into_inner();
    while !stop.load(Ordering::Relaxed) {
        let Ok(Ok(Some(msg))) =
            tokio::time::timeout(Duration::from_millis(200), inbound.message()).await
        else {
            continue;
        };
        match msg.msg {
            Some(coordinator_message::Msg::Job(job)) => {
                let r = common::result_for(job.lease_id, job.think_sfen(), Answer::Good);
                let msg = WorkerMessage {
                    msg: Some(worker_message::Msg::Result(r)),
                };
                if tx.send(msg).await.is_err() {
                    return;
                }
            }
            Some(coordinator_message::Msg::Ack(_)) => {
                acked.fetch_add(1, Ordering::Relaxed);
            }
            _ => {}
        }
    }
}

#[test]
fn results_are_acknowledged_during_an_export_that_equals_the_offline_one() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("book.db");
    grow_store(&db);
    let out_dir = dir.path().join("exports");
    std::fs::create_dir(&out_dir).unwrap();
    let live = out_dir.join("live.db2016");
    let mut coord = Coord::start(
        &db,
        "127.0.0.1:0",
        &["--export-dir", out_dir.to_str().unwrap()],
        &[],
    );
    let rt = runtime(2);
    let acked = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let worker = rt.spawn(counting_worker(coord.url(), acked.clone(), stop.clone()));
    let request = ExportRequest {
        path: live.display().to_string(),
        ..ExportRequest::default()
    };
    let (reply, during) = rt.block_on(async {
        // Generation is under way before the export is asked for.
        while acked.load(Ordering::Relaxed) < 50 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let mut client = common::client(coord.url(), None).await.unwrap();
        let before = acked.load(Ordering::Relaxed);
        let reply = client.export(request.clone()).await.unwrap().into_inner();
        (reply, acked.load(Ordering::Relaxed) - before)
    });
    stop.store(true, Ordering::Relaxed);
    rt.block_on(worker).unwrap();
    // The dispatcher went on while the export ran (before, it was the export).
    assert!(
        during >= 20,
        "only {during} results acknowledged during an export of {} ms",
        reply.elapsed_ms
    );
    assert!(reply.nodes as usize > BOOK_NODES, "{reply:?}");
    assert_eq!(reply.entries, reply.nodes, "one entry per thought position");
    coord.sigterm();
    assert!(coord.wait_exit(Duration::from_secs(60)).success());

    let store = SledStore::open_existing(&db).unwrap();
    assert!(
        store.len() as u64 > reply.nodes,
        "results acknowledged after the snapshot are stored too"
    );
    let (book, extras) =
        NodeExtras::load_first_with_book(&store, reply.nodes as usize, false).unwrap();
    let offline = dir.path().join("offline.db2016");
    let options = stera_coordinator::export::options_of(&request).unwrap();
    export_db2016(&book, &extras, &offline, &options, &mut |_, _, _| {}).unwrap();
    let (a, b) = (
        std::fs::read(&live).unwrap(),
        std::fs::read(&offline).unwrap(),
    );
    assert!(a.len() > 1000);
    assert!(a == b, "the live export differs from the offline one");
}
