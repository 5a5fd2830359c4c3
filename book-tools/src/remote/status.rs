//! `book-tools remote status`: the coordinator's Status reply as the status
//! document (`stera_service::status`, the same JSON as the coordinator's
//! `/api/status`) with `--json`, or as a summary for a person (like the status
//! page's).

use std::fmt::Write as _;
use std::time::Duration;

use stera_rules::value::to_text;
use stera_service::status::StatusDocument;

/// Moves of a root's principal variation shown in the summary.
const PV_MOVES: usize = 12;

/// The document as one line of JSON.
///
/// # Errors
/// Never for this type (no map has a key that is not a string); the error is
/// serde's.
pub fn json(doc: &StatusDocument) -> serde_json::Result<String> {
    serde_json::to_string(doc)
}

/// The document as a few lines for a person.
#[must_use]
pub fn text(doc: &StatusDocument) -> String {
    let now_unix_ms = doc.now_unix_ms;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "coordinator {}, up {} (since {})",
        doc.coordinator_version,
        duration(Duration::from_secs(doc.uptime_secs)),
        utc(doc.started_unix_ms)
    );
    let _ = writeln!(
        out,
        "book       {} positions, {} leaf edges",
        doc.nodes, doc.leaf_edges
    );
    let _ = writeln!(
        out,
        "thinking   {:.1} positions/s, {} jobs in flight ({} of them games), {} results rejected, {} positions quarantined",
        doc.thought_per_second, doc.in_flight, doc.games_in_flight, doc.rejected, doc.quarantined
    );
    let _ = writeln!(
        out,
        "workers    {} connected, {} job slots (each worker's engines plus its prefetch)",
        doc.workers_connected, doc.job_slots
    );
    for w in &doc.workers {
        let _ = writeln!(
            out,
            "  {}  {}  {} job slots, {} in flight, {} done, {:.1}/s",
            w.id, w.engine, w.job_slots, w.in_flight, w.completed, w.per_second
        );
    }
    let run_games = doc.games_black + doc.games_white + doc.games_draw;
    if doc.games_stored > 0 || run_games > 0 || doc.games_rejected > 0 {
        let _ = writeln!(
            out,
            "games      {} in the book; this run {} (black {}, white {}, draws {}), {} rejected",
            doc.games_stored,
            run_games,
            doc.games_black,
            doc.games_white,
            doc.games_draw,
            doc.games_rejected
        );
    }
    learning(&mut out, doc);
    let _ = writeln!(
        out,
        "exports    {}",
        maintenance(
            doc.exports_ok,
            doc.exports_failed,
            doc.last_export_unix,
            doc.last_export_ms,
            now_unix_ms
        )
    );
    let mut backups = maintenance(
        doc.backups_ok,
        doc.backups_failed,
        doc.last_backup_unix,
        doc.last_backup_ms,
        now_unix_ms,
    );
    if doc.last_backup_unix > 0 {
        let _ = write!(backups, ", {:.1} MB", doc.last_backup_bytes as f64 / 1e6);
    }
    let _ = writeln!(out, "backups    {backups}");
    for r in &doc.roots {
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

/// The run's learning games, if it plays any: counted against the target, the
/// pace, the key positions, and each opponent's games by the store's number.
fn learning(out: &mut String, doc: &StatusDocument) {
    if doc.learning_target == 0 && doc.learning_games == 0 {
        return;
    }
    let left = if doc.learning_all_settled {
        "every key position settled".to_owned()
    } else {
        format!(
            "{} left",
            duration(Duration::from_secs(doc.learning_left_secs))
        )
    };
    let _ = writeln!(
        out,
        "learning   {}/{} games this run, {:.2}/s, {left}; {}/{} key positions settled",
        doc.learning_games,
        doc.learning_target,
        doc.learning_games_per_second,
        doc.learning_key_positions_settled,
        doc.learning_key_positions
    );
    for o in &doc.learning_opponents {
        let _ = writeln!(
            out,
            "  opponent {} {}: {} games this run, {} in the store",
            o.number, o.identity, o.games, o.games_stored
        );
    }
}

/// `3 written, 1 failed; the last written 12m 05s ago (2026-11-26 14:05:09 UTC)
/// in 4.2 s`, or `none written yet` (a count and its last success, as the
/// document has them for exports and backups).
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
    use stera_proto::v1::{RootLine, StatusReply, WorkerStatus};
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

    /// The document of `reply` made at `now_unix_ms`.
    fn at(reply: StatusReply, now_unix_ms: u64) -> StatusDocument {
        StatusDocument::from_reply(StatusReply {
            now_unix_ms,
            ..reply
        })
    }

    #[test]
    fn a_person_reads_dates_durations_and_slots() {
        let now = 1_764_165_909_000 + ((26 * 60 + 7) * 60 + 5) * 1000;
        let t = text(&at(reply(), now));
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
        assert!(!t.contains("\nlearning"), "no learning games: {t}");
        let learning = StatusReply {
            learning: Some(stera_proto::v1::LearningStatus {
                games: 270,
                target: 400,
                games_per_second: 2.5,
                left_secs: 52,
                key_positions_settled: 3,
                key_positions: 12,
                opponents: vec![stera_proto::v1::LearningOpponent {
                    number: 2,
                    identity: "builtin at 60 nodes".into(),
                    games: 270,
                    games_stored: 300,
                }],
                ..Default::default()
            }),
            ..reply()
        };
        let t = text(&at(learning, now));
        assert!(
            t.contains(
                "learning   270/400 games this run, 2.50/s, 52s left; 3/12 key positions settled\n  \
                 opponent 2 builtin at 60 nodes: 270 games this run, 300 in the store\n"
            ),
            "{t}"
        );
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
        let t = text(&at(done, 1_764_165_909_000 + 185_000));
        assert!(
            t.contains(
                "backups    2 written, 1 failed; the last written 3m 05s ago \
                 (2025-11-26 14:05:09 UTC) in 4.2 s, 12.5 MB\n"
            ),
            "{t}"
        );
    }

    #[test]
    fn a_program_reads_the_status_document() {
        let j: serde_json::Value =
            serde_json::from_str(&json(&at(reply(), 1_764_165_909_000 + 61_000)).unwrap()).unwrap();
        assert_eq!(j["version"], 2);
        assert_eq!(j["coordinator_version"], "1.2.3");
        assert_eq!(j["uptime_secs"], 61);
        assert_eq!(j["job_slots"], 3);
        assert_eq!(j["workers"][0]["job_slots"], 3);
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
