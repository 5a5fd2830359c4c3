//! The job kinds side by side: what a lease carries ([`Ticket`]), what the lease
//! table keeps of a voided one ([`TicketMemo`]), and every place where the kind
//! of a job decides what happens: the plan of what to hand out, the job message,
//! putting a job back, and what a result does. The dispatcher calls these and
//! never matches on a kind itself, so adding a kind touches this file and the
//! kind's own module (see ARCHITECTURE.md, "How to add a job kind").

use std::sync::Arc;
use std::time::Instant;

use stera_book::{Leaf, LiveBook, NodeStore, Selector};
use stera_proto::v1::{Job, JobResult, Limits, SearchRequest, job_result};
use tonic::Status;

use crate::leases::{Job as LeasedJob, LeaseId, StreamId};
use crate::observe;
use crate::play::{GameTicket, PlayJobs, PlaySettings};
use crate::registry::{Registry, RejectReason};
use crate::search::{SearchAnswer, SearchJobs, SearchTicket};
use crate::think::{Intake, ParkedLeaf, ThinkJobs};
use crate::workers::SHUTTING_DOWN;

/// What a lease is for: the payload the lease table carries without looking in.
// Think tickets are nearly all of them and the lease table held leaves unboxed
// before; boxing them would cost an allocation per lease for nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone)]
pub(crate) enum Ticket {
    /// A leaf to evaluate.
    Think(Leaf),
    /// A game to play.
    Play(GameTicket),
    /// One move for a client's game.
    Search(SearchTicket),
}

/// The kind of a job, for logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Think,
    Play,
    Search,
}

impl Kind {
    /// What a worker does for this kind, as a failure names it ("evaluation
    /// failed on the worker").
    pub(crate) fn work(self) -> &'static str {
        match self {
            Kind::Think => "evaluation",
            Kind::Play => "game",
            Kind::Search => "search",
        }
    }

    fn name(self) -> &'static str {
        match self {
            Kind::Think => "think",
            Kind::Play => "play",
            Kind::Search => "search",
        }
    }
}

impl Ticket {
    pub(crate) fn kind(&self) -> Kind {
        match self {
            Ticket::Think(_) => Kind::Think,
            Ticket::Play(_) => Kind::Play,
            Ticket::Search(_) => Kind::Search,
        }
    }

    /// The job of a ticket, for logs and problems.
    pub(crate) fn describe(&self) -> String {
        match self {
            Ticket::Think(leaf) => leaf.sfen(),
            Ticket::Play(game) => format!(
                "game from {} after {} book moves",
                game.start_sfen,
                game.opening.len()
            ),
            Ticket::Search(search) => format!("search for a client ({search})"),
        }
    }

    /// The position a failure of this job counts against (think jobs only).
    pub(crate) fn position(&self) -> Option<&Leaf> {
        match self {
            Ticket::Think(leaf) => Some(leaf),
            _ => None,
        }
    }
}

/// What the lease table keeps of a voided ticket: a think leaf without its game
/// history; a play ticket (small); of a search, nothing (its move history may be
/// long, and the memories of up to 200,000 voided leases stay: a search was put
/// back when its lease was voided, so a late answer is not needed).
#[derive(Debug, Clone)]
pub(crate) enum TicketMemo {
    Think(ParkedLeaf),
    Play(GameTicket),
    Search,
}

impl TicketMemo {
    /// The ticket again, for a late result (a think leaf's position rebuilt).
    pub(crate) fn into_ticket(self) -> Result<Ticket, String> {
        Ok(match self {
            TicketMemo::Think(parked) => Ticket::Think(parked.unpark()?),
            TicketMemo::Play(game) => Ticket::Play(game),
            TicketMemo::Search => {
                return Err(
                    "a late answer to a search whose lease ended: the search was handed out again"
                        .to_owned(),
                );
            }
        })
    }
}

impl LeasedJob for Ticket {
    type Memo = TicketMemo;

    fn memo(&self) -> TicketMemo {
        match self {
            Ticket::Think(leaf) => TicketMemo::Think(ParkedLeaf::park(leaf)),
            Ticket::Play(game) => TicketMemo::Play(game.clone()),
            Ticket::Search(_) => TicketMemo::Search,
        }
    }
}

/// What a result for a leased ticket comes to.
// Moved once per result, like the think ticket it came from: boxing the think
// intake would cost an allocation per result for nothing.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Settled {
    /// Done: complete the lease and acknowledge.
    Done,
    /// Reject it with this reason.
    Rejected(RejectReason, String),
    /// A think result, checked: see [`Intake`].
    Think(Intake),
}

/// The job kinds of a run, and the state of the selection that only the plan
/// reads (a stall: nothing to select while nothing is in flight).
pub(crate) struct Kinds<S: NodeStore> {
    /// The book every kind reads and writes: selection reads it, think results
    /// and games are stored into it.
    pub(crate) live: LiveBook<S>,
    pub(crate) think: ThinkJobs,
    pub(crate) play: PlayJobs,
    pub(crate) search: SearchJobs,
    pub(crate) learn: crate::learn::LearnLedger,
    registry: Arc<Registry>,
    /// Nothing could be selected while nothing was in flight.
    stalled: bool,
    /// Selections in a row that found nothing with nothing in flight (a second
    /// one, on a later event, confirms a stall: a selection cut short by stale
    /// bounds finds nothing once and is fine the next time).
    empty_selections: u32,
}

impl<S: NodeStore> Kinds<S> {
    /// # Errors
    /// A root of the book that is not a position, or game rules that make no sense.
    pub(crate) fn new(
        live: LiveBook<S>,
        selector: Selector,
        limits: Limits,
        think_limit: Option<u64>,
        play: PlaySettings,
        learn: crate::learn::LearnLedger,
        registry: Arc<Registry>,
    ) -> Result<Self, String> {
        let play = PlayJobs::new(play, &live.config().roots)?;
        Ok(Self {
            live,
            think: ThinkJobs::new(selector, limits, think_limit),
            play,
            search: SearchJobs::new(limits),
            learn,
            registry,
            stalled: false,
            empty_selections: 0,
        })
    }

    /// Whether the selection stalled (see [`crate::dispatcher::Progress`]).
    pub(crate) fn stalled(&self) -> bool {
        self.stalled
    }

    /// Think leases among `in_flight` leases in all.
    pub(crate) fn think_in_flight(&self, in_flight: usize) -> usize {
        in_flight.saturating_sub(self.play.in_flight() + self.search.in_flight())
    }

    /// The job message of `ticket` under lease `id`.
    pub(crate) fn job(&self, id: LeaseId, ticket: &Ticket, deadline_ms: u64) -> Job {
        match ticket {
            Ticket::Think(leaf) => self.think.job(id, leaf, deadline_ms),
            Ticket::Play(game) => self.play.job(id, game, deadline_ms),
            Ticket::Search(search) => SearchJobs::job(id, search, deadline_ms),
        }
    }

    /// A lease ended without a result that counts: its job goes back to its kind.
    pub(crate) fn put_back(&mut self, ticket: &Ticket) {
        match ticket {
            Ticket::Think(leaf) => ThinkJobs::put_back(&mut self.live, leaf),
            Ticket::Play(_) => self.play.put_back(Instant::now()),
            Ticket::Search(search) => self.search.put_back(search, false, ""),
        }
    }

    /// A job failed on its worker (given back failed, or its lease expired with
    /// `reason`): a search counts the failure (an engine that hangs on a position
    /// must not keep its client waiting forever); the others are put back.
    pub(crate) fn failed(&mut self, ticket: &Ticket, reason: &str) {
        match ticket {
            Ticket::Search(search) => self.search.put_back(search, true, reason),
            _ => self.put_back(ticket),
        }
    }

    /// Queues a client's search; refused while draining (shutdown).
    pub(crate) fn submit_search(
        &mut self,
        request: SearchRequest,
        answer: SearchAnswer,
        draining: bool,
    ) {
        if draining {
            let _ = answer.send(Err(Status::unavailable(SHUTTING_DOWN)));
        } else {
            self.search.submit(request, answer, Instant::now());
        }
    }

    /// Shutdown: the searches waiting are refused (their clients must not wait
    /// for jobs that no longer go out).
    pub(crate) fn drain(&mut self) {
        self.search.refuse_all(&Status::unavailable(SHUTTING_DOWN));
    }

    /// What a result of `stream` does for its ticket under lease `id`: a game
    /// is checked and counted, a search answered, a think result checked for
    /// its batch. `held`: the lease was live (not voided), so its job is still
    /// counted in flight.
    pub(crate) fn settle(
        &mut self,
        stream: StreamId,
        id: LeaseId,
        ticket: Ticket,
        result: &JobResult,
        now_unix: u32,
        held: bool,
    ) -> Settled {
        match (ticket, &result.kind) {
            (Ticket::Think(leaf), Some(job_result::Kind::Think(_))) => {
                let live = &mut self.live;
                let intake = ThinkJobs::intake(live, stream, id, leaf, result, now_unix, held);
                Settled::Think(intake)
            }
            (Ticket::Play(game), Some(job_result::Kind::Play(play))) => {
                let book = self.live.book();
                let counted = match self.play.receive(&game, play, book, held) {
                    Ok(counted) => counted,
                    Err(why) => return Settled::Rejected(RejectReason::InvalidGame, why),
                };
                let store = self.live.store_mut();
                match self.play.commit(store, id, &counted, &self.registry) {
                    Ok(()) => Settled::Done,
                    Err(why) => Settled::Rejected(RejectReason::StoreFailed, why),
                }
            }
            (Ticket::Search(search), Some(job_result::Kind::Search(answer))) => {
                match self
                    .search
                    .finish(&search, answer, &result.engine, held, Instant::now())
                {
                    Ok(()) => Settled::Done,
                    Err(reason) => {
                        if held {
                            self.search.put_back(&search, true, &reason);
                        }
                        Settled::Rejected(RejectReason::Invalid, reason)
                    }
                }
            }
            (ticket, _) => {
                if held {
                    self.put_back(&ticket);
                }
                let why = format!(
                    "lease {id} is a {} job; the result is of another kind",
                    ticket.kind().name()
                );
                Settled::Rejected(RejectReason::Invalid, why)
            }
        }
    }

    /// What to hand out for `free` slots with `in_flight` leases out, once the
    /// dispatcher gave searches their workers (a game waits on each, and each
    /// goes to a worker of its route): games by their share of the slot time,
    /// leaves for the rest; with a games target, slots thinking cannot use
    /// (its limit reached, nothing to select) play too. With `writable` false
    /// (the store's disk is full) nothing goes out here: only searches, which
    /// store nothing.
    pub(crate) fn plan(&mut self, free: usize, in_flight: usize, writable: bool) -> Vec<Ticket> {
        let mut tickets = Vec::new();
        if free == 0 || !writable {
            return tickets;
        }
        let think_in_flight = self.think_in_flight(in_flight);
        let capacity = in_flight + free;
        let mut games = self.play.wanted(capacity, Instant::now()).min(free);
        let think = (free - games).min(self.think.room(think_in_flight));
        let leaves = if think > 0 {
            // Where learning games left the book first (their share), then
            // the selection.
            let mut leaves = self.learn.exit_leaves(&mut self.live, think);
            if leaves.len() < think {
                leaves.extend(self.select(think - leaves.len()));
            }
            leaves
        } else {
            Vec::new()
        };
        if think > 0 && leaves.is_empty() && think_in_flight == 0 && games == 0 {
            self.empty_selections += 1;
            if self.empty_selections >= 2 && !self.stalled {
                self.stalled = true;
                observe::stalled(&self.registry, self.think.thought());
            }
        } else if !leaves.is_empty() {
            self.empty_selections = 0;
        }
        if self.play.has_target() {
            games = games.max((free - leaves.len()).min(self.play.room()));
        }
        tickets.reserve(games + leaves.len());
        for _ in 0..games {
            match self.play.ticket(Instant::now()) {
                Some(t) => tickets.push(Ticket::Play(t)),
                None => break,
            }
        }
        tickets.extend(leaves.into_iter().map(Ticket::Think));
        tickets
    }

    /// Up to `n` leaves from the selector (timed for the metrics).
    fn select(&mut self, n: usize) -> Vec<Leaf> {
        let started = Instant::now();
        match self.think.select(&mut self.live, n) {
            Ok(leaves) => {
                observe::selected(&self.registry, started.elapsed(), leaves.len());
                leaves
            }
            Err(e) => {
                observe::selection_failed(&self.registry, &e);
                Vec::new()
            }
        }
    }

    /// Takes a finished opening snapshot and starts a new one when due.
    pub(crate) fn refresh(&mut self) {
        self.play.refresh(self.live.book());
    }

    /// Whether the run is done with `in_flight` leases out: the think limit
    /// reached and stored and the games target met, or stalled with no game out.
    pub(crate) fn done(&self, in_flight: usize) -> bool {
        let think_in_flight = self.think_in_flight(in_flight);
        (self.stalled && self.play.in_flight() == 0 && self.learn.done())
            || (self.think.limit_reached(think_in_flight)
                && self.think.limit_done()
                && self.play.target_done()
                && self.learn.done())
    }

    /// Counts a finished learning game in the store (see [`crate::learn`]);
    /// the games counted in this run.
    pub(crate) fn count_learning_game(
        &mut self,
        identity: &str,
        counts: &[(stera_rules::Key, stera_book::GameCounts)],
    ) -> Result<u64, String> {
        let counted = self
            .learn
            .count(self.live.store_mut(), identity, counts)
            .inspect_err(|e| tracing::error!(error = %e, "cannot count a learning game"))?;
        self.registry
            .counters
            .learning_games
            .store(counted, std::sync::atomic::Ordering::Relaxed);
        self.registry
            .learning
            .set_opponents(self.learn.opponents().to_vec());
        Ok(counted)
    }
}

impl crate::observe::Job for Ticket {
    fn work(&self) -> &'static str {
        self.kind().work()
    }

    fn describe(&self) -> String {
        Ticket::describe(self)
    }
}
