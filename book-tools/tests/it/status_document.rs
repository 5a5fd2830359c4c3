//! One status document: a coordinator process's `/api/status` (HTTP, the status
//! page's JSON) and `book-tools remote status --json` (the Status RPC over gRPC)
//! print the same document for the same state: version 2, the same keys at every
//! depth, the same values but for those that move with the clock.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use serde_json::Value;
use stera_service::status::StatusDocument;
use stera_testkit::fake_worker::{Answer, client, fake_worker, hello_of, open_work};

use crate::common::{Coordinator, Dir, ok, single_root_book};

const LONG: Duration = Duration::from_secs(120);

/// Keys whose values change with the clock alone, on a coordinator that does
/// nothing: when the document was made, and rates and ages measured to then.
const CLOCK_KEYS: [&str; 4] = [
    "now_unix_ms",
    "uptime_secs",
    "thought_per_second",
    "roots_age_ms",
];
/// The same inside each element of `workers`.
const WORKER_CLOCK_KEYS: [&str; 1] = ["per_second"];

fn over_http(addr: &str) -> Value {
    let r = stera_testkit::http::get_ok(addr, "/api/status", LONG);
    serde_json::from_str(&r.body).unwrap_or_else(|e| panic!("bad JSON ({e}): {}", r.body))
}

fn over_grpc(url: &str) -> Value {
    let out = ok(&["remote", "status", "--coordinator", url, "--json"]);
    let doc: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("bad JSON ({e}): {out}"));
    // `--json FILE` writes the same document (as `match --json FILE`).
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("status.json");
    ok(&[
        "remote",
        "status",
        "--coordinator",
        url,
        "--json",
        file.to_str().unwrap(),
    ]);
    let written: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(written["version"], doc["version"]);
    assert_eq!(written["coordinator_version"], doc["coordinator_version"]);
    doc
}

/// The document without the values that move with the clock.
fn without_clock(doc: &Value) -> Value {
    let mut doc = doc.clone();
    let map = doc.as_object_mut().unwrap();
    for key in CLOCK_KEYS {
        assert!(map.remove(key).is_some(), "no `{key}`");
    }
    for worker in map["workers"].as_array_mut().unwrap() {
        for key in WORKER_CLOCK_KEYS {
            worker.as_object_mut().unwrap().remove(key);
        }
    }
    doc
}

/// Every key of `value`, lists' elements as `list[].key`.
fn keys(value: &Value, prefix: &str, out: &mut BTreeSet<String>) {
    match value {
        Value::Object(map) => {
            for (key, inner) in map {
                let path = format!("{prefix}{key}");
                out.insert(path.clone());
                keys(inner, &path, out);
            }
        }
        Value::Array(items) => {
            for item in items {
                keys(item, &format!("{prefix}[]."), out);
            }
        }
        _ => {}
    }
}

fn key_set(doc: &Value) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    keys(doc, "", &mut out);
    out
}

/// `/api/status`, `remote status --json`, `/api/status` again, until both HTTP
/// documents agree (the coordinator did nothing meanwhile, not even take a
/// history point); the first HTTP document and the gRPC one.
fn quiet_pair(http: &str, url: &str) -> (Value, Value) {
    let start = Instant::now();
    loop {
        let before = over_http(http);
        let grpc = over_grpc(url);
        let after = over_http(http);
        if without_clock(&before) == without_clock(&after) {
            return (before, grpc);
        }
        assert!(
            start.elapsed() < LONG,
            "the coordinator never kept still: {before} then {after}"
        );
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// Both are the version 2 document, with the same keys at every depth and the
/// same values but the clock's. Every list must hold something, so that the
/// keys inside it are compared too.
fn assert_one_document(http: &Value, grpc: &Value) {
    for (name, doc) in [("/api/status", http), ("remote status --json", grpc)] {
        let parsed: StatusDocument = serde_json::from_value(doc.clone())
            .unwrap_or_else(|e| panic!("{name} is not the status document ({e}): {doc}"));
        assert_eq!(parsed.version, 2, "{name}: {doc}");
        assert_eq!(
            parsed.coordinator_version,
            env!("CARGO_PKG_VERSION"),
            "{name}"
        );
        for list in ["roots", "workers", "history", "problems"] {
            assert!(
                doc[list].as_array().is_some_and(|l| !l.is_empty()),
                "{name}: `{list}` is empty, its keys go unchecked: {doc}"
            );
        }
    }
    let (http_keys, grpc_keys) = (key_set(http), key_set(grpc));
    assert_eq!(
        http_keys,
        grpc_keys,
        "keys only in /api/status: {:?}; only in remote status: {:?}",
        http_keys.difference(&grpc_keys).collect::<Vec<_>>(),
        grpc_keys.difference(&http_keys).collect::<Vec<_>>()
    );
    assert_eq!(without_clock(http), without_clock(grpc));
    // Both read one clock, the coordinator's.
    let started = http["started_unix_ms"].as_u64().unwrap();
    assert!(started > 1_700_000_000_000, "{http}");
    assert!(grpc["now_unix_ms"].as_u64().unwrap() >= http["now_unix_ms"].as_u64().unwrap());
}

/// A coordinator that thought, rejected a result, requeued the leases of a
/// worker that left, and holds two leases of a worker that keeps them.
#[test]
fn http_and_grpc_print_one_document_of_a_working_coordinator() {
    let dir = Dir::new();
    let db = single_root_book(&dir.path(""));
    let http = format!("127.0.0.1:{}", stera_testkit::free_port());
    // Leases outlive the test: the held ones must not expire in between.
    let (_running, url) =
        Coordinator::start(&["--db", &db, "--metrics", &http, "--lease-secs", "3600"]);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let good = runtime
        .block_on(fake_worker(url.clone(), None, 2, Answer::Good, 5, LONG))
        .unwrap();
    assert_eq!(good.acked.len(), 5);
    let bad = runtime
        .block_on(fake_worker(
            url.clone(),
            None,
            1,
            Answer::MissingMove,
            1,
            LONG,
        ))
        .unwrap();
    assert_eq!(bad.rejected.len(), 1);
    // Takes its jobs and never answers; connected while `_holder` lives.
    let _holder = runtime.block_on(async {
        let mut c = client(url.clone(), None).await.unwrap();
        open_work(&mut c, hello_of("holder-1", "test", "fake", 2), 16)
            .await
            .unwrap()
    });
    let start = Instant::now();
    loop {
        let doc = over_http(&http);
        if doc["workers_connected"] == 1
            && doc["in_flight"] == 2
            && doc["roots"].as_array().is_some_and(|r| !r.is_empty())
        {
            break;
        }
        assert!(start.elapsed() < LONG, "never settled: {doc}");
        std::thread::sleep(Duration::from_millis(200));
    }

    let (http_doc, grpc_doc) = quiet_pair(&http, &url);
    assert_one_document(&http_doc, &grpc_doc);
    // The state the documents agree on is the one made above.
    assert!(grpc_doc["thought"].as_u64().unwrap() >= 5, "{grpc_doc}");
    assert_eq!(grpc_doc["rejected"], 1, "{grpc_doc}");
    assert_eq!(grpc_doc["job_slots"], 2, "{grpc_doc}");
    assert_eq!(grpc_doc["workers"][0]["id"], "holder-1", "{grpc_doc}");
    assert_eq!(grpc_doc["workers"][0]["in_flight"], 2, "{grpc_doc}");
    assert_eq!(grpc_doc["problems"][0]["kind"], "rejected", "{grpc_doc}");
    assert!(grpc_doc["store_bytes"].as_u64().unwrap() > 0, "{grpc_doc}");
}

/// A coordinator with a real local worker that it gives no jobs (the store's
/// disk is "full": a reserve larger than any disk), so that it keeps still.
#[test]
fn http_and_grpc_print_one_document_of_an_idle_coordinator_with_a_local_worker() {
    let dir = Dir::new();
    let db = single_root_book(&dir.path(""));
    let http = format!("127.0.0.1:{}", stera_testkit::free_port());
    let (_running, url) = Coordinator::start(&[
        "--db",
        &db,
        "--metrics",
        &http,
        "--local-workers",
        "1",
        "--store-reserve-mb",
        "1000000000000",
    ]);
    let start = Instant::now();
    loop {
        let doc = over_http(&http);
        if doc["workers_connected"] == 1
            && doc["roots"].as_array().is_some_and(|r| !r.is_empty())
            && doc["problems"].as_array().is_some_and(|p| !p.is_empty())
        {
            break;
        }
        assert!(start.elapsed() < LONG, "never settled: {doc}");
        std::thread::sleep(Duration::from_millis(200));
    }

    let (http_doc, grpc_doc) = quiet_pair(&http, &url);
    assert_one_document(&http_doc, &grpc_doc);
    assert_eq!(grpc_doc["thought"], 0, "{grpc_doc}");
    assert_eq!(grpc_doc["nodes"], 300, "{grpc_doc}");
    assert_eq!(grpc_doc["in_flight"], 0, "{grpc_doc}");
    // The local worker's one engine plus its prefetched job.
    assert_eq!(grpc_doc["job_slots"], 2, "{grpc_doc}");
    assert_eq!(grpc_doc["problems"][0]["kind"], "store full", "{grpc_doc}");
    assert_eq!(grpc_doc["roots"][0]["root"], "startpos", "{grpc_doc}");
}
