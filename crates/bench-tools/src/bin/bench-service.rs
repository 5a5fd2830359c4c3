//! Throughput and added latency of the coordinator with instant fake evaluators.
//!
//! `cargo run --release -p stera-bench-tools --bin bench-service -- <DB> [SECONDS] [WORKERS] [SLOTS] [think|play|export=DIR|disk=N] [DELAY_MS]`
//!
//! With `disk=N[:C]` (issue 14: bounded disk), the coordinator runs with
//! `--compact-every N` (0: no compaction) and `--compact-chunk C` and the store's bytes on disk per
//! position are printed ten times while the book grows.
//!
//! With `export=DIR` (issue 14: exports that never stop the cluster), the rate is
//! measured for SECONDS, then an Export RPC writes the book into DIR (the
//! coordinator's `--export-dir`) while the workers go on: it reports the rate
//! without and during the export, their ratio, and this process's RSS before and
//! at its peak during the export (sampled every 250 ms). DELAY_MS makes every fake
//! evaluation take that long (a cluster whose workers think, not one that only
//! measures the coordinator's ceiling).
//!
//! With `play`, the coordinator plays self-play games only (`--think-limit 0
//! --play-share 1`, 320-ply limit), one search job a move, and the fake
//! workers answer each search at once with a random legal move: the figures
//! are searches answered per second and games refereed, counted and stored
//! per second.
//!
//! Starts the coordinator in this process on loopback over the store DB (e.g. a
//! 1M-node book from `book-tools synth`), connects WORKERS fake workers with SLOTS
//! slots each that answer every job at once with values for every legal move, and
//! reports results acknowledged per second and the time from sending a result to
//! its acknowledgement (p50/p99). The fake workers run in the same process and
//! share its two cores, so the figure is a lower bound for the coordinator alone.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use stera_proto::v1::coordinator_client::CoordinatorClient;
use stera_proto::v1::{JobResult, coordinator_message, worker_message};
use stera_rules::Position;
use stera_testkit::fake_worker::{WorkStream, client, hello_of, message, open_work};
use stera_testkit::proc::self_rss_mb as rss_mb;
use stera_testkit::random_mover::move_values;

fn answer(lease_id: u64, sfen: &str) -> anyhow::Result<JobResult> {
    let pos = Position::from_sfen(sfen).context("invalid SFEN from the coordinator")?;
    let moves = move_values(&pos);
    Ok(JobResult::think(
        lease_id,
        sfen.to_owned(),
        moves,
        1,
        0,
        "fake".into(),
    ))
}

async fn fake(
    url: String,
    slots: u32,
    delay: Duration,
    acked: Arc<AtomicU64>,
    lat: Arc<std::sync::Mutex<Vec<u32>>>,
    stop: Arc<AtomicBool>,
) -> anyhow::Result<()> {
    let mut client = client(url, None).await?;
    let WorkStream { tx, mut inbound } =
        open_work(&mut client, hello_of("bench", "bench", "fake", slots), 4096).await?;
    let mut sent: std::collections::HashMap<u64, Instant> = std::collections::HashMap::new();
    while let Ok(Some(m)) = inbound.message().await {
        match m.msg {
            Some(coordinator_message::Msg::Job(job)) => {
                if stop.load(Ordering::Relaxed) {
                    continue;
                }
                let r = match &job.kind {
                    Some(stera_proto::v1::job::Kind::Search(search)) => {
                        stera_testkit::random_mover::search_answer(
                            job.lease_id,
                            search,
                            job.lease_id,
                        )
                        .map_err(|e| anyhow::anyhow!("a bad search job: {e}"))?
                    }
                    _ => answer(job.lease_id, job.think_sfen())?,
                };
                sent.insert(job.lease_id, Instant::now());
                let msg = message(worker_message::Msg::Result(r));
                if delay.is_zero() {
                    if tx.send(msg).await.is_err() {
                        return Ok(());
                    }
                } else {
                    let tx = tx.clone();
                    tokio::spawn(async move {
                        tokio::time::sleep(delay).await;
                        let _ = tx.send(msg).await;
                    });
                }
            }
            Some(coordinator_message::Msg::Ack(a)) => {
                acked.fetch_add(1, Ordering::Relaxed);
                if let Some(t) = sent.remove(&a.lease_id) {
                    lat.lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .push(u32::try_from(t.elapsed().as_micros()).unwrap_or(u32::MAX));
                }
            }
            _ => {}
        }
        if stop.load(Ordering::Relaxed) && sent.is_empty() {
            return Ok(());
        }
    }
    Ok(())
}

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let db = PathBuf::from(args.next().ok_or_else(|| {
        anyhow::anyhow!("usage: bench-service <DB> [SECONDS] [WORKERS] [SLOTS] [think|play]")
    })?);
    let seconds: u64 = args.next().map_or(Ok(20), |s| s.parse())?;
    let workers: u32 = args.next().map_or(Ok(20), |s| s.parse())?;
    let slots: u32 = args.next().map_or(Ok(8), |s| s.parse())?;
    let mode = args.next();
    let mut compact_every: Option<String> = None;
    let (play, export_dir) = match mode.as_deref() {
        None | Some("think") => (false, None),
        Some("play") => (true, None),
        Some(m) if m.starts_with("export=") => (false, Some(m["export=".len()..].to_owned())),
        Some(m) if m.starts_with("disk=") => {
            compact_every = Some(m["disk=".len()..].to_owned());
            (false, None)
        }
        Some(other) => {
            anyhow::bail!("mode `{other}`: think, play, export=DIR or disk=COMPACT_EVERY")
        }
    };
    let delay = Duration::from_millis(args.next().map_or(Ok(0), |s| s.parse())?);
    let start_nodes = if compact_every.is_some() {
        u64::from(stera_book::NodeStore::len(
            &stera_book::SledStore::open_existing(&db)?,
        ))
    } else {
        0
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let listen = format!("127.0.0.1:{port}");
        let mut argv = vec![
            "coordinator", "--db", db.to_str().unwrap_or("."), "--listen", &listen, "--drain-secs", "5",
        ];
        if play {
            argv.extend(["--think-limit", "0", "--play-share", "1", "--games", "1000000000", "--ply-limit", "320"]);
        }
        if let Some(dir) = &export_dir {
            argv.extend(["--export-dir", dir.as_str()]);
        }
        if let Some(every) = &compact_every {
            // `disk=EVERY` or `disk=EVERY:CHUNK`.
            let (every, chunk) = every.split_once(':').unwrap_or((every.as_str(), "4096"));
            argv.extend(["--compact-every", every, "--compact-chunk", chunk, "--think-limit", "4000000000"]);
        }
        let cli = <stera_coordinator::CoordinatorArgs as clap::Parser>::parse_from(argv);
        let load_start = Instant::now();
        let exporter = stera_coordinator::export::book_exporter(db.clone());
        let server = tokio::spawn(stera_coordinator::run(cli, Some(exporter)));
        let url = format!("http://{listen}");
        // Wait until the book is loaded and the port answers.
        loop {
            if CoordinatorClient::connect(url.clone()).await.is_ok() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        println!("coordinator up after {:.1} s", load_start.elapsed().as_secs_f64());
        let acked = Arc::new(AtomicU64::new(0));
        let lat = Arc::new(std::sync::Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let mut handles = Vec::new();
        for _ in 0..workers {
            let worker = fake(url.clone(), slots, delay, acked.clone(), lat.clone(), stop.clone());
            handles.push(tokio::spawn(async move {
                if let Err(e) = worker.await {
                    eprintln!("fake worker: {e:#}");
                }
            }));
        }
        // Warm up, then measure.
        tokio::time::sleep(Duration::from_secs(2)).await;
        let a0 = acked.load(Ordering::Relaxed);
        let games_counted = |s: stera_proto::v1::StatusReply| s.games_black + s.games_white + s.games_draw;
        let g0 = games_counted(stera_testkit::fake_worker::status(&url, None).await);
        lat.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clear();
        let t0 = Instant::now();
        if compact_every.is_some() {
            disk_samples(&db, start_nodes, seconds, &acked).await?;
        } else {
            tokio::time::sleep(Duration::from_secs(seconds)).await;
        }
        let n = acked.load(Ordering::Relaxed) - a0;
        let games = games_counted(stera_testkit::fake_worker::status(&url, None).await) - g0;
        let secs = t0.elapsed().as_secs_f64();
        if let Some(dir) = &export_dir {
            export_while_running(&url, dir, &acked, n as f64 / secs).await?;
        }
        stop.store(true, Ordering::Relaxed);
        let mut l = lat.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
        l.sort_unstable();
        let pct = |p: f64| l.get(((l.len() as f64 - 1.0) * p) as usize).copied().unwrap_or(0) as f64 / 1000.0;
        println!(
            "service mode={} results_per_s={:.0} ack_p50_ms={:.2} ack_p99_ms={:.2} workers={workers} slots={slots} in_flight_max={}",
            if play { "play (searches)" } else { "think" },
            n as f64 / secs,
            pct(0.5),
            pct(0.99),
            workers * slots
        );
        if play {
            println!(
                "games_per_s={:.1} moves_per_game={:.1}",
                games as f64 / secs,
                n as f64 / games.max(1) as f64
            );
        }
        server.abort();
        Ok::<(), anyhow::Error>(())
    })
}

/// Mode `disk=N` (issue 14: bounded disk): the store's size on disk per position
/// while the book grows, ten samples over SECONDS, with the coordinator's
/// `--compact-every N` (0: compaction off).
async fn disk_samples(
    db: &std::path::Path,
    start_nodes: u64,
    seconds: u64,
    acked: &AtomicU64,
) -> anyhow::Result<()> {
    for i in 1..=10u64 {
        tokio::time::sleep(Duration::from_secs(seconds / 10)).await;
        let bytes = stera_book::store_path::directory_size(db)?;
        let nodes = start_nodes + acked.load(Ordering::Relaxed);
        println!(
            "disk t={}s nodes={nodes} store_bytes={bytes} bytes_per_node={:.1}",
            i * seconds / 10,
            bytes as f64 / nodes as f64
        );
    }
    Ok(())
}

/// Asks for an export into `dir` and measures the acknowledgements and the RSS
/// while it runs.
async fn export_while_running(
    url: &str,
    dir: &str,
    acked: &Arc<AtomicU64>,
    rate_without: f64,
) -> anyhow::Result<()> {
    let path = std::path::Path::new(dir).join("bench-export.db2016");
    let rss_before = rss_mb();
    let peak = Arc::new(AtomicU64::new(rss_before));
    let sampling = Arc::new(AtomicBool::new(true));
    let sampler = {
        let (peak, sampling) = (peak.clone(), sampling.clone());
        tokio::spawn(async move {
            while sampling.load(Ordering::Relaxed) {
                peak.fetch_max(rss_mb(), Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        })
    };
    let mut client = CoordinatorClient::connect(url.to_owned()).await?;
    let a0 = acked.load(Ordering::Relaxed);
    let t0 = Instant::now();
    let reply = client
        .export(stera_proto::v1::ExportRequest {
            path: path.display().to_string(),
            ..stera_proto::v1::ExportRequest::default()
        })
        .await?
        .into_inner();
    let secs = t0.elapsed().as_secs_f64();
    let during = (acked.load(Ordering::Relaxed) - a0) as f64 / secs;
    sampling.store(false, Ordering::Relaxed);
    let _ = sampler.await;
    let peak = peak.load(Ordering::Relaxed);
    println!(
        "export rate_without={rate_without:.0} rate_during={during:.0} ratio={:.3} export_s={secs:.1} nodes={} entries={} rss_before_mb={rss_before} rss_peak_mb={peak} extra_mb={}",
        during / rate_without.max(1.0),
        reply.nodes,
        reply.entries,
        peak.saturating_sub(rss_before)
    );
    println!(
        "exported {} (offline twin: book-tools export --db <DB> --first-positions {} --export F)",
        reply.path, reply.nodes
    );
    Ok(())
}
