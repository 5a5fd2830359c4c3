//! Samples of the coordinator process (`/proc`, `/metrics`) and the fleet.

use std::collections::HashMap;
use std::sync::atomic::Ordering;

use anyhow::{Context, Result, bail};
use stera_testkit::proc::{self, ProcStatus};

use crate::coordinator::Coordinator;
use crate::fleet::{Fleet, load};

/// One sample of the coordinator process and the fleet.
#[derive(Debug, Clone, Default)]
pub(crate) struct Sample {
    pub(crate) t: f64,
    pub(crate) rss_kb: u64,
    pub(crate) rss_anon_kb: u64,
    pub(crate) rss_file_kb: u64,
    pub(crate) threads: u64,
    pub(crate) fds: u64,
    pub(crate) tasks: f64,
    pub(crate) nodes: f64,
    pub(crate) workers: f64,
    pub(crate) leases: f64,
    pub(crate) thought: f64,
    pub(crate) expired: f64,
    pub(crate) requeued: f64,
    pub(crate) rejected: f64,
    pub(crate) duplicates: f64,
    pub(crate) fleet_connected: i64,
    pub(crate) acked_think: u64,
    pub(crate) acked_play: u64,
    pub(crate) fleet_rejected: u64,
    pub(crate) sessions: u64,
    pub(crate) leaves: u64,
    pub(crate) drops: u64,
    pub(crate) kills: u64,
    pub(crate) hangs: u64,
    pub(crate) connect_errors: u64,
    pub(crate) lost: u64,
    pub(crate) resent: u64,
}

pub(crate) const TSV_HEADER: &str = "t_s\trss_kb\trss_anon_kb\trss_file_kb\tthreads\tfds\ttokio_tasks\tnodes\tworkers_connected\tleases_in_flight\tthought_total\tlease_expiries_total\trequeued_total\trejected_total\tduplicates_total\tfleet_connected\tacked_think\tacked_play\tfleet_rejected\tsessions\tleaves\tdrops\tkills\thangs\tconnect_errors\tstreams_lost\tresent";

impl Sample {
    pub(crate) fn tsv(&self) -> String {
        format!(
            "{:.1}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
            self.t,
            self.rss_kb,
            self.rss_anon_kb,
            self.rss_file_kb,
            self.threads,
            self.fds,
            self.tasks,
            self.nodes,
            self.workers,
            self.leases,
            self.thought,
            self.expired,
            self.requeued,
            self.rejected,
            self.duplicates,
            self.fleet_connected,
            self.acked_think,
            self.acked_play,
            self.fleet_rejected,
            self.sessions,
            self.leaves,
            self.drops,
            self.kills,
            self.hangs,
            self.connect_errors,
            self.lost,
            self.resent
        )
    }

    pub(crate) fn rss_mb(&self) -> f64 {
        self.rss_kb as f64 / 1024.0
    }

    pub(crate) fn summary(&self, nodes0: f64) -> String {
        format!(
            "[{:>5.1} min] rss {:.1} MB (anon {:.1}, file {:.1}), fds {}, threads {}, tasks {}, nodes {} (+{}), workers {} (fleet {}), leases {}, acked {} think / {} play, rejected {}, expiries {}, sessions {} (leave {}, drop {}, kill {}, hang {}), connect errors {}",
            self.t / 60.0,
            self.rss_mb(),
            self.rss_anon_kb as f64 / 1024.0,
            self.rss_file_kb as f64 / 1024.0,
            self.fds,
            self.threads,
            self.tasks,
            self.nodes,
            self.nodes - nodes0,
            self.workers,
            self.fleet_connected,
            self.leases,
            self.acked_think,
            self.acked_play,
            self.fleet_rejected,
            self.expired,
            self.sessions,
            self.leaves,
            self.drops,
            self.kills,
            self.hangs,
            self.connect_errors
        )
    }
}

/// GET /metrics over plain HTTP/1.1; each metric's value summed over its labels.
pub(crate) fn scrape(addr: &str) -> Result<HashMap<String, f64>> {
    let response = stera_testkit::http::get(addr, "/metrics")
        .with_context(|| format!("reading http://{addr}/metrics"))?;
    if response.status != 200 {
        bail!("GET http://{addr}/metrics: status {}", response.status);
    }
    let mut out: HashMap<String, f64> = HashMap::new();
    for line in response.body.lines() {
        if line.starts_with('#') || line.is_empty() {
            continue;
        }
        let name = line.split(['{', ' ']).next().unwrap_or("");
        if let Some(v) = line.rsplit(' ').next().and_then(|v| v.parse::<f64>().ok()) {
            *out.entry(name.to_owned()).or_default() += v;
        }
    }
    Ok(out)
}

pub(crate) fn sample(c: &Coordinator, fleet: &Fleet, t: f64) -> Result<Sample> {
    let pid = c.pid().to_string();
    let ProcStatus {
        rss_kb,
        rss_anon_kb,
        rss_file_kb,
        threads,
    } = proc::status(&pid).with_context(|| format!("cannot read /proc/{pid}/status"))?;
    let fds = proc::open_fds(&pid).with_context(|| format!("cannot list /proc/{pid}/fd"))?;
    let m = scrape(&c.metrics)?;
    let g = |name: &str| m.get(name).copied().unwrap_or(f64::NAN);
    let f = &fleet.counters;
    Ok(Sample {
        t,
        rss_kb,
        rss_anon_kb,
        rss_file_kb,
        threads,
        fds,
        tasks: g("stera_coordinator_tokio_tasks"),
        nodes: g("stera_book_nodes"),
        workers: g("stera_coordinator_workers_connected"),
        leases: g("stera_coordinator_leases_in_flight"),
        thought: g("stera_coordinator_thought_positions_total"),
        expired: g("stera_coordinator_lease_expiries_total"),
        requeued: g("stera_coordinator_leases_requeued_total"),
        rejected: g("stera_coordinator_results_rejected_total"),
        duplicates: g("stera_coordinator_results_duplicate_total"),
        fleet_connected: f.connected.load(Ordering::Relaxed),
        acked_think: load(&f.acked_think),
        acked_play: load(&f.acked_play),
        fleet_rejected: load(&f.rejected),
        sessions: load(&f.sessions),
        leaves: load(&f.leaves),
        drops: load(&f.drops),
        kills: load(&f.kills),
        hangs: load(&f.hangs),
        connect_errors: load(&f.connect_errors),
        lost: load(&f.lost),
        resent: load(&f.resent),
    })
}
