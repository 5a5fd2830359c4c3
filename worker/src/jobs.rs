//! What the worker does with a job, by kind: a think job evaluates every legal move
//! of a position on a pooled engine ([`EvaluatorPool`]); a search job finds one
//! move of a game the coordinator plays ([`PlayerPool`]). Either runs on a
//! blocking thread and always answers its lease:
//! a result, or a reason to give the job back as failed (a panic included).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use stera_engine::Limits;
use stera_proto::v1::{Job, JobResult, ThinkJob, job};
use stera_rules::Position;
use stera_service::convert::{limits_from_proto, think_result_to_proto};
use tokio::sync::mpsc;

use crate::search::PlayerPool;
use crate::{EvaluatorPool, Stats};

/// A job that finished (or failed) on a blocking thread.
pub struct Finished {
    pub lease_id: u64,
    /// The result, or why the job could not be done (given back as failed).
    pub outcome: Result<JobResult, String>,
}

/// What jobs run with.
#[derive(Clone)]
pub struct JobContext {
    /// Budget used when a job carries no limits of its own.
    pub default_limits: Limits,
    /// Whether the user said that the worker was told, once, that the
    /// coordinator's limits override its own --nodes/--depth/--time-ms.
    pub told_override: Arc<std::sync::atomic::AtomicBool>,
    pub pool: Arc<EvaluatorPool>,
    pub players: Arc<PlayerPool>,
    pub stats: Arc<Stats>,
}

/// Runs `job` on a blocking thread; its [`Finished`] goes to `done`.
pub fn spawn(job: Job, ctx: &JobContext, done: mpsc::UnboundedSender<Finished>) {
    let ctx = ctx.clone();
    ctx.stats.busy.fetch_add(1, Ordering::Relaxed);
    tokio::task::spawn_blocking(move || {
        // Whatever happens in here, the lease is answered: a panic is reported as the
        // job's failure, never left to hold the lease forever.
        let lease_id = job.lease_id;
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(&job, &ctx)))
            .unwrap_or_else(|payload| {
                Err(format!(
                    "the job panicked: {}",
                    crate::pool::panic_text(payload.as_ref())
                ))
            });
        ctx.stats.busy.fetch_sub(1, Ordering::Relaxed);
        let _ = done.send(Finished { lease_id, outcome });
    });
}

fn run(job: &Job, ctx: &JobContext) -> Result<JobResult, String> {
    match &job.kind {
        Some(job::Kind::Think(think)) => evaluate(job.lease_id, think, ctx),
        Some(job::Kind::Search(search)) => {
            let limits = limits_from_proto(search.limits.as_ref(), ctx.default_limits);
            let result = engine_timed(&ctx.stats, || {
                ctx.players.search(job.lease_id, search, &limits)
            })?;
            ctx.stats.game_moves.fetch_add(1, Ordering::Relaxed);
            Ok(result)
        }
        None => Err("a job of no kind this worker knows (upgrade the worker)".into()),
    }
}

/// Runs `work` (a search on the slot's engine), counting its time as engine
/// time, as an evaluation's is.
fn engine_timed<T>(stats: &Stats, work: impl FnOnce() -> T) -> T {
    let start = Instant::now();
    let result = work();
    add_engine_time(stats, start.elapsed());
    result
}

/// Counts `elapsed` as time the slot's engine worked (the status line's engine %).
fn add_engine_time(stats: &Stats, elapsed: Duration) {
    stats.engine_ms.fetch_add(
        u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX),
        Ordering::Relaxed,
    );
}

/// Parses the job's position and evaluates it on a pooled engine.
fn evaluate(lease_id: u64, job: &ThinkJob, ctx: &JobContext) -> Result<JobResult, String> {
    let limits = limits_from_proto(job.limits.as_ref(), ctx.default_limits);
    if let Some(note) = override_note(ctx, &limits) {
        tracing::warn!("{note}");
    }
    let position = Position::from_sfen(&job.sfen)
        .map_err(|e| format!("bad position from the coordinator: {e}"))?;
    let (result, cost) = ctx.pool.evaluate(&position, &limits);
    let stats = &ctx.stats;
    stats.restarts.fetch_add(cost.restarts, Ordering::Relaxed);
    let ev = result.map_err(|e| e.to_string())?;
    stats.evaluated.fetch_add(1, Ordering::Relaxed);
    crate::worker_metrics::record_evaluation(ev.elapsed);
    add_engine_time(stats, ev.elapsed);
    Ok(think_result_to_proto(lease_id, job.sfen.clone(), &ev))
}

/// The first time a think job's limits replace the worker's own (given
/// --nodes, --depth or --time-ms that differ): a note saying so, since the
/// worker's flags would otherwise seem to be in force. `None` after that.
fn override_note(ctx: &JobContext, limits: &Limits) -> Option<String> {
    let own = ctx.default_limits;
    if own == Limits::default() || *limits == own || ctx.told_override.swap(true, Ordering::Relaxed)
    {
        return None;
    }
    Some(format!(
        "the coordinator's think jobs carry limits ({}): they override this worker's own {} (which apply only to jobs without limits)",
        stera_games::thinker::budget_text(limits),
        stera_games::thinker::budget_text(&own),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use stera_proto::v1;

    #[tokio::test]
    async fn a_search_counts_as_engine_time_and_a_game_move() {
        let choice = crate::pool::engine_choice(&[]);
        let ctx = JobContext {
            default_limits: Limits {
                nodes: Some(20_000),
                ..Limits::default()
            },
            pool: Arc::new(EvaluatorPool::start(&choice, 1).await.unwrap()),
            players: Arc::new(PlayerPool::new(choice)),
            stats: Arc::new(Stats::default()),
            told_override: Arc::default(),
        };
        // A search job (a move of the coordinator's learning games) counts
        // where the summary line shows it (issue 43: `games 0` after learning).
        let search = Job {
            lease_id: 8,
            deadline_unix_ms: 0,
            kind: Some(job::Kind::Search(v1::SearchJob {
                start_sfen: stera_rules::STARTPOS_SFEN.into(),
                moves: vec!["7g7f".into()],
                limits: None,
            })),
        };
        let (tx, mut rx) = mpsc::unbounded_channel();
        spawn(search, &ctx, tx);
        let finished = rx.recv().await.unwrap();
        assert!(finished.outcome.is_ok(), "{:?}", finished.outcome);
        assert_eq!(ctx.stats.game_moves.load(Ordering::Relaxed), 1);
        // A 20,000-node search takes well over a millisecond.
        assert!(ctx.stats.engine_ms.load(Ordering::Relaxed) > 0);
        assert!(ctx.stats.engine_share() > 0.0);
        assert!(
            ctx.stats.line().contains("| game moves 1 |"),
            "{}",
            ctx.stats.line()
        );
        // The worker was given 20,000 nodes; a think job of 500 overrides
        // them: said once, then not again.
        let job_limits = Limits {
            nodes: Some(500),
            ..Limits::default()
        };
        let note = override_note(&ctx, &job_limits).unwrap();
        assert!(
            note.contains("(500 nodes)") && note.contains("own 20000 nodes"),
            "{note}"
        );
        assert_eq!(override_note(&ctx, &job_limits), None);
        let quiet = JobContext {
            told_override: Arc::default(),
            ..ctx.clone()
        };
        assert_eq!(override_note(&quiet, &quiet.default_limits), None);
    }
}
