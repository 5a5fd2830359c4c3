//! Bounds on every number, string and list that crosses the network.
//!
//! A coordinator runs for months and talks to machines it does not control; one
//! careless or hostile message must not be able to allocate gigabytes, hand one
//! stream the whole book or store a megabyte blob per result. Each bound is checked
//! where the message is received ([`check_worker_message`] on the coordinator,
//! [`check_job`] on the worker); a violation names the [`Field`] so the peer's log
//! and the coordinator's metrics say exactly what was wrong.
//!
//! ```
//! use stera_proto::limits::{self, Field};
//! use stera_proto::v1::{Credit, WorkerMessage, worker_message::Msg};
//! let credit = WorkerMessage { msg: Some(Msg::Credit(Credit { slots: u32::MAX })) };
//! let err = limits::check_worker_message(&credit, 4).unwrap_err();
//! assert_eq!(err.field, Field::CreditSlots);
//! ```

use crate::v1::{
    Hello, Job, JobResult, Limits, SearchRequest, WorkerMessage, job, job_result,
    worker_message::Msg,
};

/// Most evaluation slots one Work stream may announce, and so most leases it holds.
pub const MAX_SLOTS_PER_STREAM: u32 = 1024;
/// Longest `Hello.worker_id` and `Hello.version`, in bytes.
pub const MAX_ID_BYTES: usize = 256;
/// Longest engine identity (`Hello.engine`, `JobResult.engine`), in bytes.
pub const MAX_ENGINE_BYTES: usize = 256;
/// Longest `GiveBack.reason`, in bytes.
pub const MAX_REASON_BYTES: usize = 1024;
/// Most move values in one result (a shogi position has at most 593 legal moves).
pub const MAX_MOVES_PER_RESULT: usize = 600;
/// Longest USI move text (`7g7f+`, `P*5e`).
pub const MAX_MOVE_BYTES: usize = 8;
/// Longest engine text a search may ask for (a part of an engine identity).
pub const MAX_SEARCH_ENGINE_BYTES: usize = 256;
/// Largest search depth a result may report per move, and a job may ask for.
pub const MAX_DEPTH: u32 = 1000;
/// Longest SFEN a job or a think result may carry, in bytes (a real one is under
/// 150).
pub const MAX_SFEN_BYTES: usize = 512;
/// Largest node budget a job may ask for (about a day of a fast engine).
pub const MAX_NODES: u64 = 1_000_000_000_000;
/// Largest time budget a job may ask for, in milliseconds (one hour).
pub const MAX_TIME_MS: u32 = 3_600_000;
/// Most moves of one game (a search's history); the
/// rules core reads no longer move lists (`stera_rules::MAX_PLY`).
pub const MAX_GAME_MOVES: usize = 10_000;
/// Largest gRPC message either side decodes (tonic's default), in bytes.
pub const MAX_MESSAGE_BYTES: usize = 4 * 1024 * 1024;

/// The field a bound applies to; a metric label, so a closed set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Field {
    HelloWorkerId,
    HelloVersion,
    HelloEngine,
    HelloSlots,
    CreditSlots,
    ResultEngine,
    ResultMoves,
    ResultMoveText,
    ResultMoveDepth,
    GiveBackReason,
    /// A message the server could not decode (too large, malformed protobuf).
    Message,
    JobSfen,
    JobNodes,
    JobDepth,
    JobTime,
    ResultSearchMove,
    JobSearchMoves,
    SearchSfen,
    SearchMoves,
    ResultSfen,
    /// `SearchRequest.engine`.
    SearchEngine,
}

impl Field {
    /// Every field, in label order.
    pub const ALL: [Self; 21] = [
        Self::HelloWorkerId,
        Self::HelloVersion,
        Self::HelloEngine,
        Self::HelloSlots,
        Self::CreditSlots,
        Self::ResultEngine,
        Self::ResultMoves,
        Self::ResultMoveText,
        Self::ResultMoveDepth,
        Self::GiveBackReason,
        Self::Message,
        Self::JobSfen,
        Self::JobNodes,
        Self::JobDepth,
        Self::JobTime,
        Self::ResultSearchMove,
        Self::JobSearchMoves,
        Self::SearchSfen,
        Self::SearchMoves,
        Self::ResultSfen,
        Self::SearchEngine,
    ];

    /// The protocol name of the field (`Credit.slots`), also the metric label.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::HelloWorkerId => "Hello.worker_id",
            Self::HelloVersion => "Hello.version",
            Self::HelloEngine => "Hello.engine",
            Self::HelloSlots => "Hello.slots",
            Self::CreditSlots => "Credit.slots",
            Self::ResultEngine => "JobResult.engine",
            Self::ResultMoves => "JobResult.think.moves",
            Self::ResultMoveText => "JobResult.think.moves.usi",
            Self::ResultMoveDepth => "JobResult.think.moves.depth",
            Self::GiveBackReason => "GiveBack.reason",
            Self::Message => "message",
            Self::JobSfen => "Job.sfen",
            Self::JobNodes => "Job.limits.nodes",
            Self::JobDepth => "Job.limits.depth",
            Self::JobTime => "Job.limits.time_ms",
            Self::ResultSearchMove => "JobResult.search.usi",
            Self::JobSearchMoves => "Job.search.moves",
            Self::SearchSfen => "SearchRequest.start_sfen",
            Self::SearchMoves => "SearchRequest.moves",
            Self::ResultSfen => "JobResult.think.sfen",
            Self::SearchEngine => "SearchRequest.engine",
        }
    }

    /// Position in [`Field::ALL`] (for counters indexed by field).
    #[must_use]
    pub fn index(self) -> usize {
        Self::ALL.iter().position(|f| *f == self).unwrap_or(0)
    }
}

/// A message that breaks a bound.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {detail}", field.name())]
pub struct Violation {
    /// Which field.
    pub field: Field,
    /// What was wrong, with the bound (never the offending text itself).
    pub detail: String,
}

fn too_long(field: Field, len: usize, max: usize) -> Result<(), Violation> {
    if len > max {
        return Err(Violation {
            field,
            detail: format!("{len} bytes, at most {max} allowed"),
        });
    }
    Ok(())
}

fn too_large<T: PartialOrd + std::fmt::Display>(
    field: Field,
    value: T,
    max: T,
) -> Result<(), Violation> {
    if value > max {
        return Err(Violation {
            field,
            detail: format!("{value}, at most {max} allowed"),
        });
    }
    Ok(())
}

/// Checks a Hello: identifiers and engine within their lengths, slots in
/// `1..=MAX_SLOTS_PER_STREAM`.
///
/// # Errors
/// The first field out of bounds.
pub fn check_hello(hello: &Hello) -> Result<(), Violation> {
    too_long(Field::HelloWorkerId, hello.worker_id.len(), MAX_ID_BYTES)?;
    too_long(Field::HelloVersion, hello.version.len(), MAX_ID_BYTES)?;
    too_long(Field::HelloEngine, hello.engine.len(), MAX_ENGINE_BYTES)?;
    // Logged as they are: a newline or an escape sequence would forge log lines
    // or rewrite a terminal.
    printable(Field::HelloWorkerId, &hello.worker_id)?;
    printable(Field::HelloVersion, &hello.version)?;
    printable(Field::HelloEngine, &hello.engine)?;
    if hello.slots == 0 || hello.slots > MAX_SLOTS_PER_STREAM {
        return Err(Violation {
            field: Field::HelloSlots,
            detail: format!("{}, must be 1..={MAX_SLOTS_PER_STREAM}", hello.slots),
        });
    }
    Ok(())
}

/// Refuses a text with a control character (newline, escape...), quoting it
/// escaped.
fn printable(field: Field, text: &str) -> Result<(), Violation> {
    match text.chars().find(|c| c.is_control()) {
        None => Ok(()),
        Some(c) => Err(Violation {
            field,
            detail: format!(
                "contains the control character {:?}: `{}`",
                c,
                text.escape_debug()
            ),
        }),
    }
}

/// Checks a result's shape (its meaning is checked against the position later).
///
/// # Errors
/// The first field out of bounds.
pub fn check_result(result: &JobResult) -> Result<(), Violation> {
    too_long(Field::ResultEngine, result.engine.len(), MAX_ENGINE_BYTES)?;
    match &result.kind {
        Some(job_result::Kind::Think(think)) => {
            too_long(Field::ResultSfen, think.sfen.len(), MAX_SFEN_BYTES)?;
            too_large(Field::ResultMoves, think.moves.len(), MAX_MOVES_PER_RESULT)?;
            for m in &think.moves {
                too_long(Field::ResultMoveText, m.usi.len(), MAX_MOVE_BYTES)?;
                too_large(Field::ResultMoveDepth, m.depth, MAX_DEPTH)?;
            }
        }
        Some(job_result::Kind::Search(search)) => {
            too_long(Field::ResultSearchMove, search.usi.len(), MAX_MOVE_BYTES)?;
        }
        // A result of no kind is well-formed but meaningless: the job kind rejects it.
        None => {}
    }
    Ok(())
}

/// Checks any message after Hello on a stream whose Hello announced `announced_slots`:
/// a Credit may not exceed them.
///
/// # Errors
/// The first field out of bounds.
pub fn check_worker_message(
    message: &WorkerMessage,
    announced_slots: u32,
) -> Result<(), Violation> {
    match &message.msg {
        Some(Msg::Hello(h)) => check_hello(h),
        Some(Msg::Result(r)) => check_result(r),
        Some(Msg::GiveBack(g)) => too_long(Field::GiveBackReason, g.reason.len(), MAX_REASON_BYTES),
        Some(Msg::Credit(c)) => {
            if c.slots > announced_slots {
                return Err(Violation {
                    field: Field::CreditSlots,
                    detail: format!(
                        "{}, more than the {announced_slots} slots announced in Hello",
                        c.slots
                    ),
                });
            }
            Ok(())
        }
        Some(Msg::Heartbeat(_)) | None => Ok(()),
    }
}

/// Checks a job as the worker receives it: SFEN length and limits in range.
///
/// # Errors
/// The first field out of bounds.
pub fn check_job(job: &Job) -> Result<(), Violation> {
    match &job.kind {
        Some(job::Kind::Think(think)) => {
            too_long(Field::JobSfen, think.sfen.len(), MAX_SFEN_BYTES)?;
            check_limits(think.limits.as_ref())
        }
        Some(job::Kind::Search(search)) => {
            too_long(Field::JobSfen, search.start_sfen.len(), MAX_SFEN_BYTES)?;
            too_large(Field::JobSearchMoves, search.moves.len(), MAX_GAME_MOVES)?;
            for m in &search.moves {
                too_long(Field::JobSearchMoves, m.len(), MAX_MOVE_BYTES)?;
            }
            check_limits(search.limits.as_ref())
        }
        None => Ok(()),
    }
}

/// Checks a client's search request: SFEN and moves within their lengths, limits
/// in range.
///
/// # Errors
/// The first field out of bounds.
pub fn check_search_request(request: &SearchRequest) -> Result<(), Violation> {
    too_long(Field::SearchSfen, request.start_sfen.len(), MAX_SFEN_BYTES)?;
    too_long(
        Field::SearchEngine,
        request.engine.len(),
        MAX_SEARCH_ENGINE_BYTES,
    )?;
    too_large(Field::SearchMoves, request.moves.len(), MAX_GAME_MOVES)?;
    for m in &request.moves {
        too_long(Field::SearchMoves, m.len(), MAX_MOVE_BYTES)?;
    }
    check_limits(request.limits.as_ref())
}

fn check_limits(limits: Option<&Limits>) -> Result<(), Violation> {
    limits.map_or(Ok(()), check_job_limits)
}

/// Checks the limits a job carries: nodes, depth and time within their bounds.
/// A coordinator checks its own flags with it at start, so that no run hands
/// out jobs every worker refuses.
///
/// # Errors
/// The first field out of bounds.
pub fn check_job_limits(limits: &Limits) -> Result<(), Violation> {
    too_large(Field::JobNodes, limits.nodes, MAX_NODES)?;
    too_large(Field::JobDepth, limits.depth, MAX_DEPTH)?;
    too_large(Field::JobTime, limits.time_ms, MAX_TIME_MS)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::v1::{Credit, GiveBack, Limits, MoveValue, SearchResult};

    fn hello() -> Hello {
        Hello {
            worker_id: "w".into(),
            version: "1".into(),
            engine: "e".into(),
            slots: 4,
            protocol: crate::PROTOCOL_VERSION,
            default_limits: None,
        }
    }

    #[test]
    fn hello_bounds() {
        assert_eq!(check_hello(&hello()), Ok(()));
        let mut h = hello();
        h.worker_id = "x".repeat(MAX_ID_BYTES + 1);
        assert_eq!(check_hello(&h).unwrap_err().field, Field::HelloWorkerId);
        let mut h = hello();
        h.engine = "x".repeat(3 << 20);
        let e = check_hello(&h).unwrap_err();
        assert_eq!(e.field, Field::HelloEngine);
        // The error names the size, never repeats the text.
        assert!(e.to_string().len() < 100, "{e}");
        for slots in [0, MAX_SLOTS_PER_STREAM + 1, u32::MAX] {
            let mut h = hello();
            h.slots = slots;
            assert_eq!(check_hello(&h).unwrap_err().field, Field::HelloSlots);
        }
        let mut h = hello();
        h.slots = MAX_SLOTS_PER_STREAM;
        assert_eq!(check_hello(&h), Ok(()));
    }

    #[test]
    fn credit_is_bounded_by_the_announced_slots() {
        let credit = |slots| WorkerMessage {
            msg: Some(Msg::Credit(Credit { slots })),
        };
        assert_eq!(check_worker_message(&credit(0), 4), Ok(()));
        assert_eq!(check_worker_message(&credit(4), 4), Ok(()));
        for slots in [5, 100_000, u32::MAX] {
            let e = check_worker_message(&credit(slots), 4).unwrap_err();
            assert_eq!(e.field, Field::CreditSlots);
            assert!(e.to_string().starts_with("Credit.slots: "), "{e}");
        }
    }

    #[test]
    fn result_and_give_back_bounds() {
        let mv = |usi: &str, depth| MoveValue {
            usi: usi.into(),
            value: 0,
            depth,
        };
        let think = |moves| JobResult::think(1, String::new(), moves, 0, 0, "e".into());
        let ok = vec![mv("7g7f", 10), mv("P*5e", 0), mv("8h2b+", 3)];
        assert_eq!(check_result(&think(ok.clone())), Ok(()));
        let startpos = "lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b - 1";
        let r = JobResult::think(1, startpos.into(), ok.clone(), 0, 0, "e".into());
        assert_eq!(check_result(&r), Ok(()));
        let r = JobResult::think(1, "x".repeat(MAX_SFEN_BYTES), ok.clone(), 0, 0, "e".into());
        assert_eq!(check_result(&r), Ok(()));
        let r = JobResult::think(1, "x".repeat(3 << 20), ok.clone(), 0, 0, "e".into());
        let e = check_result(&r).unwrap_err();
        assert_eq!(e.field, Field::ResultSfen);
        assert!(e.to_string().starts_with("JobResult.think.sfen: "), "{e}");
        assert!(e.to_string().len() < 100, "{e}");
        let mut r = think(ok.clone());
        r.engine = "x".repeat(MAX_ENGINE_BYTES + 1);
        assert_eq!(check_result(&r).unwrap_err().field, Field::ResultEngine);
        let r = think(vec![mv("7g7f", 1); MAX_MOVES_PER_RESULT + 1]);
        assert_eq!(check_result(&r).unwrap_err().field, Field::ResultMoves);
        let mut moves = ok.clone();
        moves.push(mv("7g7f7g7f7g", 1));
        assert_eq!(
            check_result(&think(moves)).unwrap_err().field,
            Field::ResultMoveText
        );
        let mut moves = ok;
        moves.push(mv("7g7f", MAX_DEPTH + 1));
        assert_eq!(
            check_result(&think(moves)).unwrap_err().field,
            Field::ResultMoveDepth
        );
        let search = |usi: &str| JobResult {
            lease_id: 1,
            kind: Some(job_result::Kind::Search(SearchResult {
                usi: usi.into(),
                ..SearchResult::default()
            })),
            ..JobResult::default()
        };
        assert_eq!(check_result(&search("P*5e")), Ok(()));
        assert_eq!(
            check_result(&search("7g7f7g7f7g")).unwrap_err().field,
            Field::ResultSearchMove
        );
        let gb = WorkerMessage {
            msg: Some(Msg::GiveBack(GiveBack {
                lease_id: 1,
                reason: "x".repeat(MAX_REASON_BYTES + 1),
                failed: true,
            })),
        };
        assert_eq!(
            check_worker_message(&gb, 1).unwrap_err().field,
            Field::GiveBackReason
        );
    }

    #[test]
    fn job_bounds() {
        let job = |limits| {
            Job::think(
                1,
                0,
                "lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b - 1".into(),
                limits,
            )
        };
        assert_eq!(check_job(&job(Limits::default())), Ok(()));
        let l = |nodes, depth, time_ms| Limits {
            nodes,
            depth,
            time_ms,
        };
        assert_eq!(
            check_job(&job(l(MAX_NODES + 1, 0, 0))).unwrap_err().field,
            Field::JobNodes
        );
        assert_eq!(
            check_job(&job(l(0, MAX_DEPTH + 1, 0))).unwrap_err().field,
            Field::JobDepth
        );
        assert_eq!(
            check_job(&job(l(0, 0, MAX_TIME_MS + 1))).unwrap_err().field,
            Field::JobTime
        );
        let j = Job::think(1, 0, "x".repeat(MAX_SFEN_BYTES + 1), Limits::default());
        assert_eq!(check_job(&j).unwrap_err().field, Field::JobSfen);
        let search = |moves: Vec<String>, nodes| Job {
            lease_id: 1,
            deadline_unix_ms: 0,
            kind: Some(job::Kind::Search(crate::v1::SearchJob {
                start_sfen: "lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b - 1"
                    .into(),
                moves,
                limits: Some(l(nodes, 0, 0)),
            })),
        };
        assert_eq!(check_job(&search(vec!["7g7f".into()], 1000)), Ok(()));
        assert_eq!(
            check_job(&search(vec!["7g7f".into(); MAX_GAME_MOVES + 1], 1000))
                .unwrap_err()
                .field,
            Field::JobSearchMoves
        );
        assert_eq!(
            check_job(&search(vec!["x".repeat(20)], 1000))
                .unwrap_err()
                .field,
            Field::JobSearchMoves
        );
        assert_eq!(
            check_job(&search(Vec::new(), MAX_NODES + 1))
                .unwrap_err()
                .field,
            Field::JobNodes
        );
    }

    #[test]
    fn field_indices_are_distinct() {
        for (i, f) in Field::ALL.iter().enumerate() {
            assert_eq!(f.index(), i);
        }
    }
}
