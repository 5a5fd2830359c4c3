//! `book-tools remote status`: the coordinator's Status reply for a person (a
//! summary like the status page's) or, with `--json`, for a program (the same
//! figures under stable names).

use std::fmt::Write as _;
use std::time::Duration;

use stera_proto::v1::StatusReply;
use stera_rules::value::to_text;

/// Moves of a root's principal variation shown in the summary.
const PV_MOVES: usize = 12;

/// The reply as JSON: `now_unix_ms` is when it was received (for the uptime).
/// The names are a stable interface; new figures are added, none renamed.
#[must_use]
pub fn json(reply: &StatusReply, now_unix_ms: u64) -> serde_json::Value {
    let workers: Vec<_> = reply
        .workers
        .iter()
        .map(|w| {
            serde_json::json!({
                "id": w.worker_id,
                "engine": w.engine,
                "job_slots": w.slots,
                "in_flight": w.in_flight,
                "completed": w.completed,
                "per_second": w.results_per_second,
            })
        })
        .collect();
    let roots: Vec<_> = reply
        .roots
        .iter()
        .map(|r| serde_json::json!({ "root": r.root, "pv": r.pv, "value": r.value }))
        .collect();
    serde_json::json!({
        "version": reply.version,
        "started_unix_ms": reply.started_unix_ms,
        "started_utc": utc(reply.started_unix_ms),
        "uptime_secs": uptime(reply, now_unix_ms).as_secs(),
        "nodes": reply.nodes,
        "leaf_edges": reply.leaf_edges,
        "thought_per_second": reply.thoughts_per_second,
        "in_flight": reply.in_flight,
        "games_in_flight": reply.play_in_flight,
        "rejected": reply.rejected,
        "quarantined": reply.quarantined,
        "workers_connected": reply.workers.len(),
        "job_slots": job_slots(reply),
        "workers": workers,
        "games_stored": reply.games,
        "games_black": reply.games_black,
        "games_white": reply.games_white,
        "games_draw": reply.games_draw,
        "games_rejected": reply.games_rejected,
        "exports_ok": reply.exports_ok,
        "exports_failed": reply.exports_failed,
        "last_export_unix": reply.last_export_unix,
        "last_export_ms": reply.last_export_ms,
        "backups_ok": reply.backups_ok,
        "backups_failed": reply.backups_failed,
        "last_backup_unix": reply.last_backup_unix,
        "last_backup_ms": reply.last_backup_ms,
        "last_backup_bytes": reply.last_backup_bytes,
        "roots": roots,
    })
}

/// The reply as a few lines for a person.
#[must_use]
pub fn text(reply: &StatusReply, now_unix_ms: u64) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "coordinator {}, up {} (since {})",
        reply.version,
        duration(uptime(reply, now_unix_ms)),
        utc(reply.started_unix_ms)
    );
    let _ = writeln!(
        out,
        "book       {} positions, {} leaf edges",
        reply.nodes, reply.leaf_edges
    );
    let _ = writeln!(
        out,
        "thinking   {:.1} positions/s, {} jobs in flight ({} of them games), {} results rejected, {} positions quarantined",
        reply.thoughts_per_second,
        reply.in_flight,
        reply.play_in_flight,
        reply.rejected,
        reply.quarantined
    );
    let _ = writeln!(
        out,
        "workers    {} connected, {} job slots (each worker's engines plus its prefetch)",
        reply.workers.len(),
        job_slots(reply)
    );
    for w in &reply.workers {
        let _ = writeln!(
            out,
            "  {}  {}  {} job slots, {} in flight, {} done, {:.1}/s",
            w.worker_id, w.engine, w.slots, w.in_flight, w.completed, w.results_per_second
        );
    }
    let run_games = reply.games_black + reply.games_white + reply.games_draw;
    if reply.games > 0 || run_games > 0 || reply.games_rejected > 0 {
        let _ = writeln!(
            out,
            "games      {} in the book; this run {} (black {}, white {}, draws {}), {} rejected",
            reply.games,
            run_games,
            reply.games_black,
            reply.games_white,
            reply.games_draw,
            reply.games_rejected
        );
    }
    let _ = writeln!(
        out,
        "exports    {}",
        maintenance(
            reply.exports_ok,
            reply.exports_failed,
            reply.last_export_unix,
            reply.last_export_ms,
            now_unix_ms
        )
    );
    let mut backups = maintenance(
        reply.backups_ok,
        reply.backups_failed,
        reply.last_backup_unix,
        reply.last_backup_ms,
        now_unix_ms,
    );
    if reply.last_backup_unix > 0 {
        let _ = write!(backups, ", {:.1} MB", reply.last_backup_bytes as f64 / 1e6);
    }
    let _ = writeln!(out, "backups    {backups}");
    for r in &reply.roots {
        let mut pv: Vec<&str> = r.pv.iter().take(PV_MOVES).map(String::as_str).collect();
        if r.pv.len() > PV_MOVES {
            pv.push("...");
        }
        let _ = writeln!(
            out,
            "root {}: {} {}",
            r.root,
            to_text(r.value),
            pv.join(" ")
        );
    }
    out
}

/// `3 written, 1 failed; the last written 12m 05s ago (2026-11-26 14:05:09 UTC)
/// in 4.2 s`, or `none written yet` (a count and its last success, as the
/// Status reply has them for exports and backups).
fn maintenance(ok: u64, failed: u64, last_unix: u64, last_ms: u64, now_unix_ms: u64) -> String {
    let mut text = format!("{ok} written, {failed} failed");
    if last_unix == 0 {
        text.push_str("; none written yet");
    } else {
        let last_unix_ms = last_unix.saturating_mul(1000);
        let _ = write!(
            text,
            "; the last written {} ago ({}) in {:.1} s",
            duration(Duration::from_millis(
                now_unix_ms.saturating_sub(last_unix_ms)
            )),
            utc(last_unix_ms),
            last_ms as f64 / 1000.0
        );
    }
    text
}

/// Engines plus prefetch of every connected worker: the jobs the cluster takes
/// at once (a worker's Hello counts both).
fn job_slots(reply: &StatusReply) -> u64 {
    reply.workers.iter().map(|w| u64::from(w.slots)).sum()
}

fn uptime(reply: &StatusReply, now_unix_ms: u64) -> Duration {
    Duration::from_millis(now_unix_ms.saturating_sub(reply.started_unix_ms))
}

/// `2026-11-26 14:05:09 UTC`, or the raw milliseconds if out of the calendar's range.
fn utc(unix_ms: u64) -> String {
    let format =
        time::macros::format_description!("[year]-[month]-[day] [hour]:[minute]:[second] UTC");
    i64::try_from(unix_ms / 1000)
        .ok()
        .and_then(|secs| time::OffsetDateTime::from_unix_timestamp(secs).ok())
        .and_then(|t| t.format(format).ok())
        .unwrap_or_else(|| format!("{unix_ms} ms after the Unix epoch"))
}

/// `42s`, `3m 05s`, `2h 03m 09s`, `4d 07h 12m`.
fn duration(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..60 => format!("{s}s"),
        60..3_600 => format!("{}m {:02}s", s / 60, s % 60),
        3_600..86_400 => format!("{}h {:02}m {:02}s", s / 3_600, s % 3_600 / 60, s % 60),
        _ => format!(
            "{}d {:02}h {:02}m",
            s / 86_400,
            s % 86_400 / 3_600,
            s % 3_600 / 60
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use stera_proto::v1::{RootLine, WorkerStatus};
    use stera_rules::value::MATE;

    fn reply() -> StatusReply {
        StatusReply {
            version: "1.2.3".into(),
            nodes: 1234,
            leaf_edges: 99,
            in_flight: 5,
            thoughts_per_second: 2.5,
            started_unix_ms: 1_764_165_909_000, // 2025-11-26 14:05:09 UTC
            workers: vec![WorkerStatus {
                worker_id: "host-7".into(),
                engine: "builtin".into(),
                slots: 3,
                in_flight: 2,
                completed: 40,
                results_per_second: 1.5,
            }],
            roots: vec![RootLine {
                root: "startpos".into(),
                pv: vec!["7g7f".into(), "3c3d".into()],
                value: 34,
            }],
            ..StatusReply::default()
        }
    }

    #[test]
    fn a_person_reads_dates_durations_and_slots() {
        let now = 1_764_165_909_000 + ((26 * 60 + 7) * 60 + 5) * 1000;
        let t = text(&reply(), now);
        assert!(
            t.starts_with("coordinator 1.2.3, up 1d 02h 07m (since 2025-11-26 14:05:09 UTC)\n"),
            "{t}"
        );
        assert!(
            t.contains("book       1234 positions, 99 leaf edges\n"),
            "{t}"
        );
        assert!(t.contains("2.5 positions/s, 5 jobs in flight"), "{t}");
        assert!(t.contains("workers    1 connected, 3 job slots"), "{t}");
        assert!(
            t.contains("  host-7  builtin  3 job slots, 2 in flight, 40 done, 1.5/s\n"),
            "{t}"
        );
        assert!(t.contains("root startpos: +34 7g7f 3c3d\n"), "{t}");
        assert!(!t.contains("\ngames"), "no games were played: {t}");
        assert!(
            t.contains("exports    0 written, 0 failed; none written yet\n"),
            "{t}"
        );
        let done = StatusReply {
            backups_ok: 2,
            backups_failed: 1,
            last_backup_unix: 1_764_165_909,
            last_backup_ms: 4_200,
            last_backup_bytes: 12_500_000,
            ..reply()
        };
        let t = text(&done, 1_764_165_909_000 + 185_000);
        assert!(
            t.contains(
                "backups    2 written, 1 failed; the last written 3m 05s ago \
                 (2025-11-26 14:05:09 UTC) in 4.2 s, 12.5 MB\n"
            ),
            "{t}"
        );
    }

    #[test]
    fn a_program_reads_stable_names() {
        let j = json(&reply(), 1_764_165_909_000 + 61_000);
        assert_eq!(j["uptime_secs"], 61);
        assert_eq!(j["started_utc"], "2025-11-26 14:05:09 UTC");
        assert_eq!(j["job_slots"], 3);
        assert_eq!(j["workers"][0]["id"], "host-7");
        assert_eq!(j["roots"][0]["value"], 34);
        assert_eq!(j["nodes"], 1234);
    }

    #[test]
    fn durations_and_values() {
        assert_eq!(duration(Duration::from_secs(42)), "42s");
        assert_eq!(duration(Duration::from_secs(185)), "3m 05s");
        assert_eq!(duration(Duration::from_secs(7_389)), "2h 03m 09s");
        assert_eq!(to_text(MATE - 7), "+M7");
        assert_eq!(to_text(-(MATE - 3)), "-M3");
        assert_eq!(to_text(0), "0");
        assert_eq!(to_text(-12), "-12");
    }
}
