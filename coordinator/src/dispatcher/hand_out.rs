//! Handing out jobs: searches to the workers their route admits, then what
//! the job kinds plan for the free slots left, round robin over the streams.

use std::time::{Instant, SystemTime};

use stera_book::NodeStore;
use stera_proto::v1::coordinator_message::Msg;

use super::Dispatcher;
use crate::kinds::Ticket;
use crate::lease_id::Binding;
use crate::leases::StreamId;
use crate::registry::unix_ms;
use crate::store_space::StoreSpace;

impl<S: NodeStore> Dispatcher<S> {
    /// Hands out jobs to every stream with free slots (credit-based flow).
    pub(super) fn fill_credits(&mut self) {
        if self.draining {
            return;
        }
        // Read even without free slots, so that a full disk is told at once.
        let writable = self.space.as_mut().is_none_or(StoreSpace::writable);
        // Start after the stream served last: a job put back (failed) then goes
        // to another stream with a free slot rather than to the same one again,
        // so a position that fails gets a second worker's opinion (blame.rs).
        let mut wanting = self.leases.free_slots_after(self.last_served);
        // A silent stream (a lease of it expired, and it has said nothing
        // since) gets no job while a stream heard from is open: the job of the
        // expired lease goes to another worker (when one has a free slot, or
        // later), not back to the one that sat on it, and the silent worker
        // does not take job after job that expire in turn. It is served again
        // once it says something (a heartbeat, a late result), or when every
        // stream is silent.
        if self.leases.any_heard() {
            wanting.retain(|(stream, _)| !self.leases.is_silent(*stream));
        }
        // Self-play games hold a slot each while a move is searched: their
        // number follows the slots there are.
        let capacity = self.leases.len() + wanting.iter().map(|(_, n)| n).sum::<usize>();
        self.kinds.set_games_wanted(capacity);
        let now = Instant::now();
        let deadline_ms = unix_ms(SystemTime::now() + self.leases.lease_time());
        // Searches first (a game waits on each), each to a worker that may
        // answer it; a learning opponent's worker takes nothing else.
        for (stream, free) in &mut wanting {
            let (engine, thinks) = self.workers.engine_of(*stream);
            let searches = self.kinds.search.tickets_for(*free, engine, thinks);
            for ticket in searches {
                self.grant(*stream, Ticket::Search(ticket), now, deadline_ms);
                *free -= 1;
            }
            if !thinks {
                *free = 0;
            }
        }
        let free: usize = wanting.iter().map(|(_, n)| n).sum();
        if free == 0 {
            return;
        }
        let tickets = self.kinds.plan(free, self.leases.len(), writable);
        if tickets.is_empty() {
            return;
        }
        let mut tickets = tickets.into_iter();
        // Round robin so one stream does not starve the others.
        'outer: loop {
            let mut gave = false;
            for (stream, free) in &mut wanting {
                if *free == 0 {
                    continue;
                }
                let Some(ticket) = tickets.next() else {
                    break 'outer;
                };
                self.grant(*stream, ticket, now, deadline_ms);
                *free -= 1;
                gave = true;
            }
            if !gave {
                break;
            }
        }
        for ticket in tickets {
            // More tickets than free slots cannot happen, but never leak in-flight marks.
            self.kinds.put_back(&ticket);
        }
    }

    /// Leases `ticket` to `stream` under a new lease id and sends its job.
    fn grant(&mut self, stream: StreamId, ticket: Ticket, now: Instant, deadline_ms: u64) {
        let binding = match &ticket {
            Ticket::Think(leaf) => Binding::Think(leaf.key),
            Ticket::Search(_) => Binding::ThisRun,
        };
        let mut id = self.lease_ids.next(binding);
        while self.leases.knows(id) {
            // Sequence numbers wrap after 2^32 leases.
            id = self.lease_ids.next(binding);
        }
        self.leases.grant_as(stream, ticket.clone(), now, id);
        let job = self.kinds.job(id, &ticket, deadline_ms);
        self.workers.send(stream, Msg::Job(job));
        self.last_served = stream;
    }
}
