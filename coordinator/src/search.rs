//! Search jobs: one move for a game that a client plays through the workers
//! (`book-tools match --coordinator`).
//!
//! The client keeps the game and its referee; the coordinator queues the
//! position, hands it to a worker under a lease like any job, checks that the
//! answer is a legal move (or `resign`/`win`) and passes it back. Nothing is
//! stored: a search lost with its worker is simply searched again, and a client
//! that gave up is forgotten. Searches go before think jobs because a
//! client's game waits on each one.

use std::collections::{HashMap, VecDeque};
use std::time::Instant;

use stera_games::Route;
use stera_proto::v1::{Job, Limits, SearchJob, SearchReply, SearchRequest, SearchResult, job};
use stera_rules::Position;
use tokio::sync::oneshot;
use tonic::Status;

/// A search that fails this many times on workers (invalid answers, failed
/// engines) is answered with an error instead of being tried again.
const MAX_ATTEMPTS: u32 = 3;

/// What the client waits on.
pub type SearchAnswer = oneshot::Sender<Result<SearchReply, Status>>;

/// One queued search: what a worker needs, and the id of its waiting client.
#[derive(Debug, Clone)]
pub struct SearchTicket {
    id: u64,
    start_sfen: String,
    moves: Vec<String>,
    limits: Limits,
    /// Which workers may answer.
    route: Route,
}

/// Who may answer `request`: a worker of its engine, else one that thinks for
/// the book.
#[must_use]
pub fn route_of(request: &SearchRequest) -> Route {
    if request.engine.is_empty() {
        Route::Thinkers
    } else {
        Route::Engine(request.engine.clone())
    }
}

impl std::fmt::Display for SearchTicket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} moves after {}", self.moves.len(), self.start_sfen)
    }
}

struct Waiter {
    answer: SearchAnswer,
    arrived: Instant,
    failures: u32,
}

/// The queue of client searches and the clients waiting on them.
pub struct SearchJobs {
    queue: VecDeque<SearchTicket>,
    waiting: HashMap<u64, Waiter>,
    next_id: u64,
    in_flight: usize,
    default_limits: Limits,
}

/// The position a request describes, with its history.
///
/// # Errors
/// A start position that is no SFEN, or a move that is not legal where it is
/// played (named with its number).
pub fn position_of(start_sfen: &str, moves: &[String]) -> Result<Position, String> {
    let mut position =
        Position::from_sfen(start_sfen).map_err(|e| format!("bad start position: {e}"))?;
    for (i, usi) in moves.iter().enumerate() {
        let mv = position
            .parse_move(usi)
            .map_err(|e| format!("move #{} `{usi}`: {e}", i + 1))?;
        position.do_move(mv);
    }
    Ok(position)
}

impl SearchJobs {
    /// Searches without limits of their own get `default_limits` (the think limits).
    #[must_use]
    pub fn new(default_limits: Limits) -> Self {
        Self {
            queue: VecDeque::new(),
            waiting: HashMap::new(),
            next_id: 1,
            in_flight: 0,
            default_limits,
        }
    }

    /// Queues a client's request, or answers at once when it describes no
    /// position with a legal move to search.
    pub fn submit(&mut self, request: SearchRequest, answer: SearchAnswer, now: Instant) {
        let position = match position_of(&request.start_sfen, &request.moves) {
            Ok(p) => p,
            Err(e) => {
                let _ = answer.send(Err(Status::invalid_argument(e)));
                return;
            }
        };
        if position.legal_moves().is_empty() {
            let _ = answer.send(Err(Status::invalid_argument(
                "the side to move has no legal move (the game is over)",
            )));
            return;
        }
        let limits = match request.limits {
            Some(l) if l.nodes > 0 || l.depth > 0 || l.time_ms > 0 => l,
            _ => self.default_limits,
        };
        let id = self.next_id;
        self.next_id += 1;
        let route = route_of(&request);
        self.waiting.insert(
            id,
            Waiter {
                answer,
                arrived: now,
                failures: 0,
            },
        );
        self.queue.push_back(SearchTicket {
            id,
            start_sfen: request.start_sfen,
            moves: request.moves,
            limits,
            route,
        });
    }

    /// Forgets the searches whose client gave up (a cancelled RPC): queued ones
    /// held their whole move history until a worker came to take them, which with
    /// no free worker was never (1,000 cancelled searches with long histories
    /// grew the coordinator by gigabytes). Called on every dispatcher tick.
    pub fn drop_cancelled(&mut self) {
        let before = self.queue.len();
        self.waiting.retain(|_, w| !w.answer.is_closed());
        let waiting = &self.waiting;
        self.queue.retain(|t| waiting.contains_key(&t.id));
        let dropped = before - self.queue.len();
        if dropped > 0 {
            tracing::debug!(dropped, "cancelled searches forgotten");
        }
        if self.queue.capacity() > 64 && self.queue.len() < self.queue.capacity() / 4 {
            self.queue.shrink_to_fit();
        }
        if self.waiting.capacity() > 64 && self.waiting.len() < self.waiting.capacity() / 4 {
            self.waiting.shrink_to_fit();
        }
    }

    /// Clients waiting for an answer (queued or out on a worker).
    #[cfg(test)]
    pub fn waiting(&self) -> usize {
        self.waiting.len()
    }

    /// Up to `n` searches a worker of `engine` (which thinks for the book
    /// when `thinks`) may answer, oldest first; the others keep their place.
    /// Searches whose client gave up are dropped on the way.
    pub fn tickets_for(&mut self, n: usize, engine: &str, thinks: bool) -> Vec<SearchTicket> {
        let mut out = Vec::new();
        if n == 0 || self.queue.is_empty() {
            return out;
        }
        // Searches skipped (another route's) keep their order before the rest.
        // The scan stops once `n` are found: with many games and many workers
        // this runs for every stream with a free slot.
        let mut skipped = VecDeque::new();
        while out.len() < n {
            let Some(ticket) = self.queue.pop_front() else {
                break;
            };
            if !self.wanted(ticket.id) {
                self.waiting.remove(&ticket.id);
            } else if ticket.route.admits(engine, thinks) {
                out.push(ticket);
            } else {
                skipped.push_back(ticket);
            }
        }
        while let Some(ticket) = skipped.pop_back() {
            self.queue.push_front(ticket);
        }
        self.in_flight += out.len();
        out
    }

    /// Up to `n` searches any worker may answer (tests).
    #[cfg(test)]
    pub fn tickets(&mut self, n: usize) -> Vec<SearchTicket> {
        self.tickets_for(n, "", true)
    }

    fn wanted(&self, id: u64) -> bool {
        self.waiting.get(&id).is_some_and(|w| !w.answer.is_closed())
    }

    /// The job a worker gets for `ticket` under lease `lease_id`.
    #[must_use]
    pub fn job(lease_id: u64, ticket: &SearchTicket, deadline_unix_ms: u64) -> Job {
        Job {
            lease_id,
            deadline_unix_ms,
            kind: Some(job::Kind::Search(SearchJob {
                start_sfen: ticket.start_sfen.clone(),
                moves: ticket.moves.clone(),
                limits: Some(ticket.limits),
            })),
        }
    }

    /// A lease of this search ended without an answer: it goes back to the front
    /// of the queue (its client has waited longest), unless the client is gone.
    /// `failed` counts toward [`MAX_ATTEMPTS`].
    pub fn put_back(&mut self, ticket: &SearchTicket, failed: bool, why: &str) {
        self.in_flight = self.in_flight.saturating_sub(1);
        if !self.wanted(ticket.id) {
            self.waiting.remove(&ticket.id);
            return;
        }
        if failed && let Some(w) = self.waiting.get_mut(&ticket.id) {
            w.failures += 1;
            if w.failures >= MAX_ATTEMPTS {
                if let Some(w) = self.waiting.remove(&ticket.id) {
                    let _ = w.answer.send(Err(Status::aborted(format!(
                        "the search failed {MAX_ATTEMPTS} times on workers; last: {why}"
                    ))));
                }
                return;
            }
        }
        self.queue.push_front(ticket.clone());
    }

    /// Checks a worker's answer and passes it to the client. `held` is false for
    /// a late answer on a lease that was voided (its search was put back already).
    ///
    /// # Errors
    /// The answer is not a legal move, `resign` or `win` in the position; the
    /// caller rejects it and the search is put back.
    pub fn finish(
        &mut self,
        ticket: &SearchTicket,
        result: &SearchResult,
        engine: &str,
        held: bool,
        now: Instant,
    ) -> Result<(), String> {
        if result.usi != "resign" && result.usi != "win" {
            // Checked even when no client waits any more: a worker that answers
            // illegal moves is told so.
            let position = position_of(&ticket.start_sfen, &ticket.moves)?;
            position
                .parse_move(&result.usi)
                .map_err(|e| format!("the answer `{}` is not a legal move: {e}", result.usi))?;
        }
        if held {
            self.in_flight = self.in_flight.saturating_sub(1);
        }
        if let Some(w) = self.waiting.remove(&ticket.id) {
            let elapsed = now.saturating_duration_since(w.arrived).as_millis();
            let _ = w.answer.send(Ok(SearchReply {
                usi: result.usi.clone(),
                score: result.score,
                has_score: result.has_score,
                engine: engine.to_owned(),
                elapsed_ms: u32::try_from(elapsed).unwrap_or(u32::MAX),
            }));
        }
        Ok(())
    }

    /// Answers every client still waiting with `status` (the coordinator stops).
    pub fn refuse_all(&mut self, status: &Status) {
        self.queue.clear();
        for (_, w) in self.waiting.drain() {
            let _ = w.answer.send(Err(status.clone()));
        }
    }

    /// Searches handed out and not answered yet.
    #[must_use]
    pub fn in_flight(&self) -> usize {
        self.in_flight
    }

    /// Searches waiting for a worker.
    #[cfg(test)]
    pub fn queued(&self) -> usize {
        self.queue.len()
    }

    /// Nothing queued and nothing out.
    #[must_use]
    pub fn idle(&self) -> bool {
        self.queue.is_empty() && self.in_flight == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(moves: &[&str]) -> SearchRequest {
        SearchRequest {
            start_sfen: stera_rules::STARTPOS_SFEN.into(),
            moves: moves.iter().map(|m| (*m).to_owned()).collect(),
            limits: None,
            ..SearchRequest::default()
        }
    }

    fn limits() -> Limits {
        Limits {
            nodes: 1000,
            depth: 0,
            time_ms: 0,
        }
    }

    /// Issue 26, point 4: cancelled searches (their client's RPC dropped) were
    /// held, with their whole move history, until a worker came for them.
    #[test]
    fn cancelled_searches_are_forgotten_without_a_worker() {
        let mut jobs = SearchJobs::new(limits());
        let line: Vec<&str> = ["5i5h", "5a5b", "5h5i", "5b5a"].repeat(20);
        let mut kept = Vec::new();
        for i in 0..1000 {
            let (tx, rx) = oneshot::channel();
            jobs.submit(request(&line), tx, Instant::now());
            if i % 100 == 0 {
                kept.push(rx);
            }
        }
        assert_eq!(jobs.queued(), 1000);
        jobs.drop_cancelled();
        assert_eq!(jobs.queued(), 10);
        assert_eq!(jobs.waiting(), 10);
        drop(kept);
        jobs.drop_cancelled();
        assert_eq!((jobs.queued(), jobs.waiting()), (0, 0));
        assert!(jobs.idle());
    }

    #[test]
    fn an_illegal_move_in_the_request_is_named_and_nothing_is_queued() {
        let mut jobs = SearchJobs::new(limits());
        let (tx, mut rx) = oneshot::channel();
        jobs.submit(request(&["7g7f", "7g7f"]), tx, Instant::now());
        let err = rx.try_recv().unwrap().unwrap_err();
        assert_eq!(err.code(), tonic::Code::InvalidArgument);
        assert!(
            err.message().contains("move #2 `7g7f`"),
            "{}",
            err.message()
        );
        assert_eq!(jobs.queued(), 0);
    }

    #[test]
    fn a_legal_answer_reaches_the_client_and_an_illegal_one_is_refused() {
        let mut jobs = SearchJobs::new(limits());
        let (tx, mut rx) = oneshot::channel();
        jobs.submit(request(&["7g7f"]), tx, Instant::now());
        let ticket = jobs.tickets(4).pop().unwrap();
        assert_eq!(jobs.in_flight(), 1);
        let job = SearchJobs::job(9, &ticket, 0);
        let Some(job::Kind::Search(s)) = job.kind else {
            panic!("not a search job")
        };
        assert_eq!(s.moves, ["7g7f"]);
        assert_eq!(s.limits, Some(limits()));
        // 7g7f is black's move; white is to move.
        let illegal = SearchResult {
            usi: "2g2f".into(),
            ..SearchResult::default()
        };
        let err = jobs
            .finish(&ticket, &illegal, "e", true, Instant::now())
            .unwrap_err();
        assert!(err.contains("`2g2f` is not a legal move"), "{err}");
        assert!(rx.try_recv().is_err(), "no answer yet");
        jobs.put_back(&ticket, true, &err);
        let ticket = jobs.tickets(1).pop().unwrap();
        let legal = SearchResult {
            usi: "3c3d".into(),
            score: -20,
            has_score: true,
        };
        jobs.finish(&ticket, &legal, "engine", true, Instant::now())
            .unwrap();
        let reply = rx.try_recv().unwrap().unwrap();
        assert_eq!(
            (reply.usi.as_str(), reply.score, reply.engine.as_str()),
            ("3c3d", -20, "engine")
        );
        assert!(jobs.idle());
    }

    #[test]
    fn a_search_failing_on_three_workers_is_answered_with_an_error() {
        let mut jobs = SearchJobs::new(limits());
        let (tx, mut rx) = oneshot::channel();
        jobs.submit(request(&[]), tx, Instant::now());
        for _ in 0..MAX_ATTEMPTS {
            let ticket = jobs.tickets(1).pop().unwrap();
            jobs.put_back(&ticket, true, "engine died");
        }
        let err = rx.try_recv().unwrap().unwrap_err();
        assert_eq!(err.code(), tonic::Code::Aborted);
        assert!(err.message().contains("engine died"));
        assert!(jobs.idle());
    }

    #[test]
    fn searches_of_clients_that_gave_up_are_dropped() {
        let mut jobs = SearchJobs::new(limits());
        let (tx, rx) = oneshot::channel();
        jobs.submit(request(&[]), tx, Instant::now());
        let (tx2, _rx2) = oneshot::channel();
        jobs.submit(request(&["7g7f"]), tx2, Instant::now());
        drop(rx);
        let tickets = jobs.tickets(2);
        assert_eq!(tickets.len(), 1);
        assert_eq!(tickets[0].moves, ["7g7f"]);
        // A lost lease of a search no one waits for is not queued again.
        let (tx3, rx3) = oneshot::channel();
        jobs.submit(request(&["2g2f"]), tx3, Instant::now());
        let t3 = jobs.tickets(1).pop().unwrap();
        drop(rx3);
        jobs.put_back(&t3, false, "disconnected");
        assert_eq!(jobs.queued(), 0);
    }

    #[test]
    fn a_routed_search_waits_for_a_worker_of_its_engine_and_keeps_its_place() {
        let mut jobs = SearchJobs::new(limits());
        let (tx1, _rx1) = oneshot::channel();
        let (tx2, _rx2) = oneshot::channel();
        let (tx3, _rx3) = oneshot::channel();
        let now = Instant::now();
        let fairy = SearchRequest {
            engine: "Fairy-Stockfish".into(),
            ..request(&[])
        };
        let book = request(&["7g7f"]);
        jobs.submit(fairy, tx1, now);
        jobs.submit(book, tx2, now);
        jobs.submit(request(&["2g2f"]), tx3, now);
        // An opponent's worker (it does not think for the book) takes its
        // engine's search only, not even an unrouted one.
        let for_fairy = jobs.tickets_for(4, "Fairy-Stockfish 14 [UCI_Variant=shogi]", false);
        assert_eq!(for_fairy.len(), 1);
        assert_eq!(for_fairy[0].moves, Vec::<String>::new());
        // A builtin thinker takes the two for the book's workers, in order.
        let for_builtin = jobs.tickets_for(4, "stera-builtin 0.1.0 (hce)", true);
        assert_eq!(for_builtin.len(), 2);
        assert_eq!(for_builtin[0].moves, vec!["7g7f".to_owned()]);
        assert_eq!(for_builtin[1].moves, vec!["2g2f".to_owned()]);
        assert_eq!(jobs.queued(), 0);
        // With no worker of its engine a search stays queued.
        let (tx4, _rx4) = oneshot::channel();
        jobs.submit(
            SearchRequest {
                engine: "gpsusi".into(),
                ..request(&[])
            },
            tx4,
            now,
        );
        assert!(
            jobs.tickets_for(4, "stera-builtin 0.1.0 (hce)", true)
                .is_empty()
        );
        assert_eq!(jobs.queued(), 1);
    }
}
