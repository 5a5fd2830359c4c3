//! The lease table: who holds which job, until when, and what a result for a lease
//! id means. It knows nothing of what a job is (a think job's leaf, a game, a search):
//! the payload `J` is opaque, and the job kinds beside it decide what to hand out
//! and what a result does to the book.
//!
//! No tokio, no clock of its own: every call that depends on time takes `now`, so
//! the state machine is tested without gRPC or sleeping, and the caller decides when
//! the lease clock runs (e.g. not while the dispatcher was busy with something long).
//!
//! ```
//! use std::time::{Duration, Instant};
//! use stera_coordinator::leases::{Job, LeaseTable, Verdict};
//! #[derive(Debug, PartialEq)]
//! struct Leaf(&'static str);
//! impl Job for Leaf {
//!     type Memo = &'static str;
//!     fn memo(&self) -> &'static str {
//!         self.0
//!     }
//! }
//! let mut table = LeaseTable::new(Duration::from_secs(60));
//! let now = Instant::now();
//! table.open_stream(1, 2);
//! let id = table.grant(1, Leaf("7g7f"), now);
//! assert_eq!(table.free_slots(), vec![(1, 1)]);
//! assert!(matches!(table.resolve(1, id), Verdict::Held(Leaf("7g7f"))));
//! table.complete(id);
//! assert!(matches!(table.resolve(1, id), Verdict::Done));
//! ```

use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::time::{Duration, Instant};

/// Identifies one Work stream (one connection of one worker).
pub type StreamId = u64;
/// Identifies one lease, unique within a coordinator process.
pub type LeaseId = u64;

/// How many ids of finished or voided leases are remembered, so that late and
/// duplicate results get a precise answer with bounded memory.
pub const REMEMBERED_LEASES: usize = 200_000;

/// A job the table can hold, and what it keeps of one that was voided. A late
/// result needs little of its job, and the memos of up to [`REMEMBERED_LEASES`]
/// voided leases stay in memory: a memo should be small (a think job's position
/// carries kilobytes of game history that a late result does not need).
pub trait Job {
    /// What a late result of a voided lease gets back.
    type Memo: Clone;
    /// The memo of this job.
    fn memo(&self) -> Self::Memo;
}

struct Lease<J> {
    job: J,
    stream: StreamId,
    deadline: Instant,
}

struct Stream {
    /// Slots announced in Hello: the most leases this stream may ever hold.
    announced: u32,
    /// Slots the worker currently offers (a Credit lowers or restores them).
    slots: u32,
    leases: HashSet<LeaseId>,
    /// A lease of this stream expired (the worker said nothing for a whole
    /// lease time) and it has said nothing since: it is served last.
    silent: bool,
}

/// What a result for a lease id means.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict<J: Job> {
    /// The lease is held by this stream; it is taken out of the table (the slot is
    /// free again), whatever the result turns out to be.
    Held(J),
    /// The lease was voided (expired, its stream dropped, given back) and its job
    /// not yet done by anyone: a late result may still be used, with the job's memo.
    Voided(J::Memo),
    /// Already completed: acknowledge again, change nothing.
    Done,
    /// Held by another stream.
    Foreign,
    /// Never granted, or forgotten long ago.
    Unknown,
}

/// A lease that was voided, with its job to put back.
#[derive(Debug, PartialEq, Eq)]
pub struct Voided<J> {
    pub id: LeaseId,
    pub stream: StreamId,
    pub job: J,
}

/// A bounded memory of ids in insertion order; the oldest go first.
struct Remembered<V> {
    map: HashMap<LeaseId, V>,
    order: VecDeque<LeaseId>,
}

impl<V> Remembered<V> {
    fn new() -> Self {
        Self {
            map: HashMap::new(),
            order: VecDeque::new(),
        }
    }

    fn insert(&mut self, id: LeaseId, value: V) {
        if self.map.insert(id, value).is_none() {
            self.order.push_back(id);
        }
        while self.order.len() > REMEMBERED_LEASES {
            if let Some(old) = self.order.pop_front() {
                self.map.remove(&old);
            }
        }
    }

    fn remove(&mut self, id: LeaseId) -> Option<V> {
        // The id stays in `order` until it ages out; `insert` skips re-adding it.
        self.map.remove(&id)
    }

    fn contains(&self, id: LeaseId) -> bool {
        self.map.contains_key(&id)
    }
}

/// The leases of every stream, their deadlines, and the memories that make results
/// idempotent. Failures are counted elsewhere (`blame`): the table knows
/// nothing of jobs.
pub struct LeaseTable<J: Job> {
    lease_time: Duration,
    leases: HashMap<LeaseId, Lease<J>>,
    /// Deadlines in order, so expiry looks only at what is due.
    deadlines: BTreeSet<(Instant, LeaseId)>,
    streams: HashMap<StreamId, Stream>,
    voided: Remembered<J::Memo>,
    done: Remembered<()>,
    next_id: LeaseId,
}

impl<J: Job> LeaseTable<J> {
    /// A table whose leases last `lease_time` after they are granted or renewed.
    #[must_use]
    pub fn new(lease_time: Duration) -> Self {
        Self {
            lease_time,
            leases: HashMap::new(),
            deadlines: BTreeSet::new(),
            streams: HashMap::new(),
            voided: Remembered::new(),
            done: Remembered::new(),
            next_id: 1,
        }
    }

    /// How long a lease lasts without renewal.
    #[must_use]
    pub fn lease_time(&self) -> Duration {
        self.lease_time
    }

    /// Leases outstanding.
    #[must_use]
    pub fn len(&self) -> usize {
        self.leases.len()
    }

    /// Whether no lease is outstanding.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.leases.is_empty()
    }

    /// Leases held by `stream`.
    #[must_use]
    pub fn held_by(&self, stream: StreamId) -> usize {
        self.streams.get(&stream).map_or(0, |s| s.leases.len())
    }

    /// Every open stream with the number of leases it holds.
    pub fn streams(&self) -> impl Iterator<Item = (StreamId, usize)> + '_ {
        self.streams.iter().map(|(id, s)| (*id, s.leases.len()))
    }

    /// Registers a stream that announced `slots` in Hello.
    pub fn open_stream(&mut self, stream: StreamId, slots: u32) {
        self.streams.insert(
            stream,
            Stream {
                announced: slots,
                slots,
                leases: HashSet::new(),
                silent: false,
            },
        );
    }

    /// Whether `stream` is open.
    #[must_use]
    pub fn has_stream(&self, stream: StreamId) -> bool {
        self.streams.contains_key(&stream)
    }

    /// Sets the slots a stream offers, never above what it announced; returns the
    /// slots in force (`None` for an unknown stream).
    pub fn set_slots(&mut self, stream: StreamId, slots: u32) -> Option<u32> {
        let s = self.streams.get_mut(&stream)?;
        s.silent = false;
        s.slots = slots.min(s.announced);
        Some(s.slots)
    }

    /// A dropped stream: every lease it held is voided at once.
    pub fn close_stream(&mut self, stream: StreamId) -> Option<Vec<Voided<J>>> {
        let s = self.streams.remove(&stream)?;
        let mut out = Vec::with_capacity(s.leases.len());
        for id in s.leases {
            if let Some(v) = self.void(id) {
                out.push(v);
            }
        }
        out.sort_unstable_by_key(|v| v.id);
        Some(out)
    }

    /// Streams with free slots and how many, in stream order from the first
    /// after `last` (round robin: the stream served last comes last).
    #[must_use]
    pub fn free_slots_after(&self, last: StreamId) -> Vec<(StreamId, usize)> {
        let mut free = self.free_slots();
        let first = free.iter().position(|(s, _)| *s > last).unwrap_or(0);
        free.rotate_left(first);
        free
    }

    /// Whether an open stream is not silent ([`LeaseTable::is_silent`]).
    #[must_use]
    pub fn any_heard(&self) -> bool {
        self.streams.values().any(|s| !s.silent)
    }

    /// Whether a lease of `stream` expired and the stream has said nothing
    /// since (no heartbeat, result, give-back or credit).
    #[must_use]
    pub fn is_silent(&self, stream: StreamId) -> bool {
        self.streams.get(&stream).is_some_and(|s| s.silent)
    }

    /// `stream` said something: it is not silent.
    fn heard(&mut self, stream: StreamId) {
        if let Some(s) = self.streams.get_mut(&stream) {
            s.silent = false;
        }
    }

    /// Streams with free slots and how many, in stream order.
    #[must_use]
    pub fn free_slots(&self) -> Vec<(StreamId, usize)> {
        let mut free: Vec<(StreamId, usize)> = self
            .streams
            .iter()
            .filter_map(|(id, s)| {
                let n = (s.slots as usize).saturating_sub(s.leases.len());
                (n > 0).then_some((*id, n))
            })
            .collect();
        free.sort_unstable();
        free
    }

    /// Grants `job` to `stream` until `now + lease_time`; returns the lease id.
    /// The caller has checked the stream's free slots.
    pub fn grant(&mut self, stream: StreamId, job: J, now: Instant) -> LeaseId {
        let id = self.next_id;
        self.next_id += 1;
        self.grant_as(stream, job, now, id)
    }

    /// Whether `id` is a lease of this table: held, voided or done (and still
    /// remembered).
    #[must_use]
    pub fn knows(&self, id: LeaseId) -> bool {
        self.leases.contains_key(&id) || self.voided.contains(id) || self.done.contains(id)
    }

    /// [`LeaseTable::grant`] with the id the caller made (a signed one, see
    /// `lease_id`), which the table does not know yet ([`LeaseTable::knows`]).
    pub fn grant_as(&mut self, stream: StreamId, job: J, now: Instant, id: LeaseId) -> LeaseId {
        let deadline = now + self.lease_time;
        if let Some(s) = self.streams.get_mut(&stream) {
            s.leases.insert(id);
        }
        self.deadlines.insert((deadline, id));
        self.leases.insert(
            id,
            Lease {
                job,
                stream,
                deadline,
            },
        );
        id
    }

    /// A heartbeat: every lease of `stream` lasts `lease_time` from `now`.
    pub fn renew(&mut self, stream: StreamId, now: Instant) {
        self.heard(stream);
        let deadline = now + self.lease_time;
        let Some(s) = self.streams.get(&stream) else {
            return;
        };
        for id in &s.leases {
            if let Some(l) = self.leases.get_mut(id) {
                self.deadlines.remove(&(l.deadline, *id));
                l.deadline = deadline;
                self.deadlines.insert((deadline, *id));
            }
        }
    }

    /// Every lease whose deadline is at or before `now` is voided; the streams
    /// that held them are silent until they say something.
    pub fn expire(&mut self, now: Instant) -> Vec<Voided<J>> {
        let due: Vec<LeaseId> = self
            .deadlines
            .iter()
            .take_while(|(deadline, _)| *deadline <= now)
            .map(|(_, id)| *id)
            .collect();
        let voided: Vec<Voided<J>> = due.into_iter().filter_map(|id| self.void(id)).collect();
        for v in &voided {
            if let Some(s) = self.streams.get_mut(&v.stream) {
                s.silent = true;
            }
        }
        voided
    }

    /// The worker gives a lease back; `None` unless `stream` holds it.
    pub fn give_back(&mut self, stream: StreamId, id: LeaseId) -> Option<Voided<J>> {
        self.heard(stream);
        if self.leases.get(&id)?.stream != stream {
            return None;
        }
        self.void(id)
    }

    /// What a result from `stream` for lease `id` means. A held lease leaves the
    /// table (its slot is free again).
    pub fn resolve(&mut self, stream: StreamId, id: LeaseId) -> Verdict<J> {
        self.heard(stream);
        if self.done.contains(id) {
            return Verdict::Done;
        }
        match self.leases.get(&id) {
            Some(l) if l.stream == stream => match self.take(id) {
                Some(l) => Verdict::Held(l.job),
                None => Verdict::Unknown,
            },
            Some(_) => Verdict::Foreign,
            None => match self.voided.map.get(&id) {
                Some(memo) => Verdict::Voided(memo.clone()),
                None => Verdict::Unknown,
            },
        }
    }

    /// The lease's job is done (its result is durable): later results for it are
    /// answered [`Verdict::Done`].
    pub fn complete(&mut self, id: LeaseId) {
        self.voided.remove(id);
        self.done.insert(id, ());
    }

    /// Removes a lease from the table and its stream.
    fn take(&mut self, id: LeaseId) -> Option<Lease<J>> {
        let lease = self.leases.remove(&id)?;
        self.deadlines.remove(&(lease.deadline, id));
        if let Some(s) = self.streams.get_mut(&lease.stream) {
            s.leases.remove(&id);
        }
        Some(lease)
    }

    /// Takes a lease out and remembers its job's memo for a late result.
    fn void(&mut self, id: LeaseId) -> Option<Voided<J>> {
        let lease = self.take(id)?;
        self.voided.insert(id, lease.job.memo());
        Some(Voided {
            id,
            stream: lease.stream,
            job: lease.job,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: Duration = Duration::from_secs(60);

    impl Job for &'static str {
        type Memo = &'static str;
        fn memo(&self) -> &'static str {
            self
        }
    }

    impl Job for u32 {
        type Memo = Self;
        fn memo(&self) -> Self {
            *self
        }
    }

    impl Job for () {
        type Memo = Self;
        fn memo(&self) -> Self {}
    }

    fn table() -> (LeaseTable<&'static str>, Instant) {
        let mut t = LeaseTable::new(MIN);
        t.open_stream(1, 2);
        t.open_stream(2, 1);
        (t, Instant::now())
    }

    #[test]
    fn grants_follow_free_slots_and_credits_never_exceed_hello() {
        let (mut t, now) = table();
        assert_eq!(t.free_slots(), vec![(1, 2), (2, 1)]);
        t.grant(1, "a", now);
        assert_eq!(t.free_slots(), vec![(1, 1), (2, 1)]);
        assert_eq!(t.set_slots(2, u32::MAX), Some(1));
        assert_eq!(t.set_slots(1, 0), Some(0));
        assert_eq!(t.free_slots(), vec![(2, 1)]);
        assert_eq!(t.set_slots(9, 1), None);
    }

    #[test]
    fn results_resolve_by_owner_and_memory() {
        let (mut t, now) = table();
        let a = t.grant(1, "a", now);
        let b = t.grant(1, "b", now);
        assert_eq!(t.resolve(2, a), Verdict::Foreign);
        assert_eq!(t.resolve(1, a), Verdict::Held("a"));
        assert_eq!(t.held_by(1), 1);
        // Resolved but not completed (e.g. the result was invalid): unknown now.
        assert_eq!(t.resolve(1, a), Verdict::Unknown);
        assert_eq!(t.resolve(1, b), Verdict::Held("b"));
        t.complete(b);
        assert_eq!(t.resolve(1, b), Verdict::Done);
        assert_eq!(t.resolve(2, b), Verdict::Done);
        assert_eq!(t.resolve(1, 999), Verdict::Unknown);
    }

    #[test]
    fn expiry_takes_only_what_is_due_and_heartbeats_postpone_it() {
        let (mut t, now) = table();
        let a = t.grant(1, "a", now);
        let b = t.grant(2, "b", now + Duration::from_secs(10));
        assert!(t.expire(now + MIN - Duration::from_secs(1)).is_empty());
        t.renew(1, now + Duration::from_secs(30));
        let gone = t.expire(now + MIN + Duration::from_secs(10));
        assert_eq!(
            gone,
            vec![Voided {
                id: b,
                stream: 2,
                job: "b"
            }]
        );
        // A late result of the expired lease may still be used, once.
        assert_eq!(t.resolve(2, b), Verdict::Voided("b"));
        t.complete(b);
        assert_eq!(t.resolve(2, b), Verdict::Done);
        assert_eq!(t.len(), 1);
        let gone = t.expire(now + Duration::from_secs(30) + MIN);
        assert_eq!(gone.len(), 1);
        assert_eq!(gone[0].id, a);
        assert!(t.is_empty());
    }

    #[test]
    fn a_stream_whose_lease_expired_is_silent_until_it_speaks() {
        let (mut t, now) = table();
        let a = t.grant(1, "a", now);
        let c = t.grant(2, "c", now + MIN / 2);
        assert_eq!(t.expire(now + MIN).len(), 1);
        assert!(t.is_silent(1) && !t.is_silent(2) && t.any_heard());
        assert_eq!(t.expire(now + 2 * MIN).len(), 1);
        assert!(t.is_silent(2) && !t.any_heard());
        // A heartbeat, a result (even a late one) or a credit is speaking.
        t.renew(2, now + 2 * MIN);
        assert!(!t.is_silent(2));
        assert_eq!(t.resolve(1, a), Verdict::Voided("a"));
        assert!(!t.is_silent(1));
        assert_eq!(t.resolve(2, c), Verdict::Voided("c"));
        t.grant(1, "d", now);
        t.expire(now + MIN);
        assert_eq!(t.set_slots(1, 2), Some(2));
        assert!(!t.is_silent(1));
    }

    #[test]
    fn closing_a_stream_voids_its_leases_and_give_back_needs_the_owner() {
        let (mut t, now) = table();
        let a = t.grant(1, "a", now);
        let b = t.grant(1, "b", now);
        let c = t.grant(2, "c", now);
        assert_eq!(t.give_back(2, a), None);
        let back = t.give_back(1, a).unwrap();
        assert_eq!((back.id, back.job), (a, "a"));
        let closed = t.close_stream(1).unwrap();
        assert_eq!(closed.iter().map(|v| v.id).collect::<Vec<_>>(), vec![b]);
        assert_eq!(t.close_stream(1), None);
        assert_eq!(t.len(), 1);
        assert_eq!(t.resolve(2, c), Verdict::Held("c"));
        // Expiry does not see leases that left the table.
        assert!(t.expire(now + MIN * 2).is_empty());
    }

    #[test]
    fn memories_are_bounded() {
        let mut t = LeaseTable::new(MIN);
        t.open_stream(1, 1);
        let now = Instant::now();
        let first = t.grant(1, 0u32, now);
        assert_eq!(t.resolve(1, first), Verdict::Held(0));
        t.complete(first);
        assert_eq!(t.resolve(1, first), Verdict::Done);
        for i in 0..REMEMBERED_LEASES as u32 {
            let id = t.grant(1, i, now);
            assert_eq!(t.resolve(1, id), Verdict::Held(i));
            t.complete(id);
        }
        // The oldest memory made room for the newer ones.
        assert!(t.is_empty());
        assert_eq!(t.resolve(1, first), Verdict::Unknown);
        assert!(t.done.map.len() <= REMEMBERED_LEASES);
    }
}
