//! The verdict: RSS flat, no fd or task growth, nothing acknowledged lost.

use std::path::Path;
use std::time::Instant;

use anyhow::{Result, bail};

use crate::Outcome;
use crate::cli::Args;
use crate::sample::Sample;
use crate::store::check_store;

/// One check's line and whether it passed.
pub(crate) fn check(ok: bool, what: String) -> bool {
    println!("{} {what}", if ok { "PASS" } else { "FAIL" });
    ok
}

pub(crate) fn verdict(
    args: &Args,
    db: &Path,
    o: &Outcome,
    nodes0: u64,
    games0: u64,
) -> Result<bool> {
    let warmup = args.warmup_mins.unwrap_or(args.minutes * 0.1) * 60.0;
    let after_warmup: Vec<&Sample> = o.samples.iter().filter(|s| s.t >= warmup).collect();
    let (Some(first), Some(last)) = (after_warmup.first(), after_warmup.last()) else {
        bail!("no sample after the warm-up of {warmup:.0} s");
    };
    println!();
    println!(
        "verdict: {} samples after a warm-up of {:.1} min (of {:.1} min), {} workers",
        after_warmup.len(),
        warmup / 60.0,
        args.minutes,
        args.workers
    );
    let mut ok = rss_flat(args, &o.idle, &after_warmup, first, last);
    ok &= no_growth(o, &after_warmup, first, last);
    ok &= check(
        o.exit.success(),
        format!("the coordinator exited on SIGTERM: {}", o.exit),
    );
    ok &= nothing_lost(db, o, nodes0, games0)?;
    report_counters(o, &after_warmup);
    println!("{}", if ok { "SOAK PASSED" } else { "SOAK FAILED" });
    Ok(ok)
}

/// RSS after the warm-up, the book's growth deducted at the idle coordinator's
/// bytes per node.
pub(crate) fn rss_flat(
    args: &Args,
    idle: &Sample,
    window: &[&Sample],
    first: &Sample,
    last: &Sample,
) -> bool {
    const MB: f64 = 1_048_576.0;
    let bytes = |s: &Sample| s.rss_kb as f64 * 1024.0;
    let per_node = args
        .bytes_per_node
        .unwrap_or(bytes(idle) / idle.nodes.max(1.0));
    let adjusted = |s: &Sample| bytes(s) - per_node * (s.nodes - first.nodes);
    let (raw_min, raw_max) = min_max(window.iter().map(|s| bytes(s)));
    let (adj_min, adj_max) = min_max(window.iter().map(|s| adjusted(s)));
    let grown = last.nodes - first.nodes;
    println!(
        "rss: idle {:.1} MB at {} nodes ({:.0} B/node); after warm-up raw min {:.1} max {:.1} MB (+{:.2} %), first {:.1} last {:.1} MB",
        idle.rss_mb(),
        idle.nodes,
        bytes(idle) / idle.nodes.max(1.0),
        raw_min / MB,
        raw_max / MB,
        (raw_max / raw_min - 1.0) * 100.0,
        first.rss_mb(),
        last.rss_mb(),
    );
    // What the growth would cost per event if one kind of event caused it all (a
    // hint where to look, not a measurement of either).
    let grew = bytes(last) - bytes(first);
    let requeued = last.requeued - first.requeued;
    let sessions = last.sessions.saturating_sub(first.sessions) as f64;
    println!(
        "rss growth after warm-up: {:+.1} MB over +{grown} nodes, +{requeued} requeued leases, +{sessions} sessions: {:.0} B per node, {:.1} KB per requeued lease, {:.1} KB per session if each alone caused it",
        grew / MB,
        grew / grown.max(1.0),
        grew / requeued.max(1.0) / 1024.0,
        grew / sessions.max(1.0) / 1024.0,
    );
    let spread = adj_max / adj_min - 1.0;
    check(
        spread <= args.rss_tolerance,
        format!(
            "RSS flat after warm-up, book growth deducted ({:.1} MB at {per_node:.0} B/node): min {:.1} MB, max {:.1} MB, spread {:.2} % (limit {:.1} %)",
            per_node * grown / MB,
            adj_min / MB,
            adj_max / MB,
            spread * 100.0,
            args.rss_tolerance * 100.0
        ),
    )
}

/// fds and tokio tasks: no more than the connected workers explain, and back
/// to idle once the fleet left.
pub(crate) fn no_growth(o: &Outcome, window: &[&Sample], first: &Sample, last: &Sample) -> bool {
    let idle = &o.idle;
    let mut ok = true;
    for (name, get) in [
        ("fds", (|s: &Sample| s.fds as f64) as fn(&Sample) -> f64),
        ("tokio tasks", |s: &Sample| s.tasks),
    ] {
        let per_worker = (get(first) - get(idle)) / first.workers.max(1.0);
        let allowed = per_worker * (last.workers - first.workers) + 4.0;
        let (lo, hi) = min_max(window.iter().map(|s| get(s)));
        ok &= check(
            get(last) - get(first) <= allowed,
            format!(
                "{name}: idle {}, first after warm-up {} with {} workers ({per_worker:.2} per worker), last {} with {} workers (allowed <= {:.0}), min {lo} max {hi}",
                get(idle),
                get(first),
                first.workers,
                get(last),
                last.workers,
                get(first) + allowed,
            ),
        );
        ok &= check(
            get(&o.after) <= get(idle) + 4.0,
            format!(
                "{name} after the fleet left: {} ({} workers connected), idle {}",
                get(&o.after),
                o.after.workers,
                get(idle)
            ),
        );
    }
    println!(
        "threads: idle {}, first after warm-up {}, last {}, after {}, max {}",
        idle.threads,
        first.threads,
        last.threads,
        o.after.threads,
        o.samples.iter().map(|s| s.threads).max().unwrap_or(0)
    );
    ok
}

/// Every acknowledged think result's position in the store; the games too.
pub(crate) fn nothing_lost(db: &Path, o: &Outcome, nodes0: u64, games0: u64) -> Result<bool> {
    let t = Instant::now();
    let (missing, nodes, games) = check_store(db, &o.acked)?;
    let distinct: std::collections::HashSet<&String> = o.acked.iter().collect();
    println!(
        "store after the run: {nodes} nodes (+{} since the start; {} distinct positions acknowledged), {games} games (+{}), checked in {:.1} s",
        nodes.saturating_sub(nodes0),
        distinct.len(),
        games.saturating_sub(games0),
        t.elapsed().as_secs_f64()
    );
    for s in missing.iter().take(10) {
        println!("  missing: {s}");
    }
    let mut ok = check(
        missing.is_empty(),
        format!(
            "acknowledged think results missing from the store: {} of {}",
            missing.len(),
            o.acked.len()
        ),
    );
    ok &= check(
        games >= games0 + o.acked_play,
        format!(
            "games stored {games} >= {games0} before + {} acknowledged",
            o.acked_play
        ),
    );
    Ok(ok)
}

pub(crate) fn report_counters(o: &Outcome, window: &[&Sample]) {
    let a = &o.after;
    println!(
        "fleet: {} sessions (leave {}, drop {}, kill {}, hang {}), {} results resent after a drop, {} streams ended by the coordinator, {} connect errors, {} acks of unknown leases",
        a.sessions,
        a.leaves,
        a.drops,
        a.kills,
        a.hangs,
        a.resent,
        a.lost,
        a.connect_errors,
        o.unmatched_acks
    );
    println!(
        "coordinator counters at the end: thought {}, lease expiries {}, requeued {}, rejected {}, duplicates {}; mean connected workers after warm-up {:.1}",
        a.thought,
        a.expired,
        a.requeued,
        a.rejected,
        a.duplicates,
        window.iter().map(|s| s.workers).sum::<f64>() / window.len().max(1) as f64
    );
    let mut reasons: Vec<(&String, &u64)> = o.rejections.iter().collect();
    reasons.sort_by(|a, b| b.1.cmp(a.1));
    for (reason, n) in reasons.iter().take(8) {
        println!("  rejected {n} x: {reason}...");
    }
}

pub(crate) fn min_max(values: impl Iterator<Item = f64>) -> (f64, f64) {
    values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    })
}
