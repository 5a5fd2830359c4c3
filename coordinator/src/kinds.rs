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
use crate::play::{PlaySettings, SelfPlayLedger};
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
    /// One move of a game: a client's, or the coordinator's own (learning,
    /// self-play).
    Search(SearchTicket),
}

/// The kind of a job, for logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Think,
    Search,
}

impl Kind {
    /// What a worker does for this kind, as a failure names it ("evaluation
    /// failed on the worker").
    pub(crate) fn work(self) -> &'static str {
        match self {
            Kind::Think => "evaluation",
            Kind::Search => "search",
        }
    }

    fn name(self) -> &'static str {
        match self {
            Kind::Think => "think",
            Kind::Search => "search",
        }
    }
}

impl Ticket {
    pub(crate) fn kind(&self) -> Kind {
        match self {
            Ticket::Think(_) => Kind::Think,
            Ticket::Search(_) => Kind::Search,
        }
    }

    /// The job of a ticket, for logs and problems.
    pub(crate) fn describe(&self) -> String {
        match self {
            Ticket::Think(leaf) => leaf.sfen(),
            Ticket::Search(search) => format!("search for a game ({search})"),
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
/// history; of a search, nothing (its move history may be
/// long, and the memories of up to 200,000 voided leases stay: a search was put
/// back when its lease was voided, so a late answer is not needed).
#[derive(Debug, Clone)]
pub(crate) enum TicketMemo {
    Think(ParkedLeaf),
    Search,
}

impl TicketMemo {
    /// The ticket again, for a late result (a think leaf's position rebuilt).
    pub(crate) fn into_ticket(self) -> Result<Ticket, String> {
        Ok(match self {
            TicketMemo::Think(parked) => Ticket::Think(parked.unpark()?),
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
    pub(crate) play: SelfPlayLedger,
    pub(crate) search: SearchJobs,
    pub(crate) learn: crate::learn::LearnLedger,
    /// Ids of the games counted (self-play and learning share one space).
    game_ids: GameIds,
    /// The last plan left slots thinking could not use (its limit reached,
    /// nothing to select): with a games target, self-play takes them.
    thinking_idle: bool,
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
        let play = SelfPlayLedger::new(play)?;
        Ok(Self {
            live,
            think: ThinkJobs::new(selector, limits, think_limit),
            play,
            search: SearchJobs::new(limits),
            learn,
            game_ids: GameIds::default(),
            thinking_idle: false,
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
        in_flight.saturating_sub(self.search.in_flight())
    }

    /// The job message of `ticket` under lease `id`.
    pub(crate) fn job(&self, id: LeaseId, ticket: &Ticket, deadline_ms: u64) -> Job {
        match ticket {
            Ticket::Think(leaf) => self.think.job(id, leaf, deadline_ms),
            Ticket::Search(search) => SearchJobs::job(id, search, deadline_ms),
        }
    }

    /// A lease ended without a result that counts: its job goes back to its kind.
    pub(crate) fn put_back(&mut self, ticket: &Ticket) {
        match ticket {
            Ticket::Think(leaf) => ThinkJobs::put_back(&mut self.live, leaf),
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
    /// goes to a worker of its route): leaves, where learning games left the
    /// book first. With `writable` false (the store's disk is full) nothing
    /// goes out here: only searches, which store nothing.
    pub(crate) fn plan(&mut self, free: usize, in_flight: usize, writable: bool) -> Vec<Ticket> {
        if free == 0 || !writable {
            return Vec::new();
        }
        let think_in_flight = self.think_in_flight(in_flight);
        let think = free.min(self.think.room(think_in_flight));
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
        self.thinking_idle = leaves.len() < free;
        if think > 0 && leaves.is_empty() && think_in_flight == 0 && self.play.in_flight() == 0 {
            self.empty_selections += 1;
            if self.empty_selections >= 2 && !self.stalled {
                self.stalled = true;
                observe::stalled(&self.registry, self.think.thought());
            }
        } else if !leaves.is_empty() {
            self.empty_selections = 0;
        }
        leaves.into_iter().map(Ticket::Think).collect()
    }

    /// Tells the self-play games how many may play at once with `capacity`
    /// slots in all (see [`SelfPlayLedger::set_wanted`]).
    pub(crate) fn set_games_wanted(&self, capacity: usize) {
        self.play
            .set_wanted(capacity, self.thinking_idle || self.stalled);
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

    /// Counts a finished self-play game in the store's self-play counters (see
    /// [`crate::play`]); the self-play games counted in this run.
    pub(crate) fn count_self_play_game(&mut self, game: &stera_games::Game) -> Result<u64, String> {
        let counts = self.play.counts(game, self.live.book())?;
        let id = self.game_ids.next(self.live.store())?;
        self.play
            .count(self.live.store_mut(), id, game, &counts, &self.registry)
            .inspect_err(|e| tracing::error!(error = %e, "cannot count a self-play game"))
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
            .count(self.live.store_mut(), &mut self.game_ids, identity, counts)
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

/// The ids of the games a run counts: after every id of the store (read at
/// the first game), so that a game is counted once and no later run reuses an
/// id. Self-play and learning games share them.
#[derive(Debug, Default)]
pub(crate) struct GameIds {
    next: Option<u64>,
}

impl GameIds {
    /// The next id.
    ///
    /// # Errors
    /// The store's ids cannot be read.
    pub(crate) fn next<S: NodeStore>(&mut self, store: &S) -> Result<u64, String> {
        let id = match self.next {
            Some(id) => id,
            None => {
                let stored = store.max_game_id().map_err(|e| e.to_string())?;
                stera_games::learning_run::first_game_id(stored)
            }
        };
        self.next = Some(id.saturating_add(1));
        Ok(id)
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
