//! Lease ids a coordinator can recognise as its own, across restarts.
//!
//! A think result whose lease the coordinator does not know (it restarted since
//! it handed the lease out) is stored by the position it names, so that
//! finished work survives a restart (`ThinkJobs::intake_by_position`). That
//! must not let a client make up a lease id and put any values into the book:
//! every lease id carries a tag, an HMAC-SHA256 keyed by the store's secret
//! (`SledStore::lease_secret`), over the id's sequence number and what the
//! lease is for (a think job's position key). A result for an unknown lease is
//! taken only when its id's tag is the one this store's secret gives for the
//! position the result names: an id never issued, an id altered, or an id a
//! coordinator of another store issued are refused, whatever the position.
//!
//! Layout (the protocol's `uint64 lease_id`): the tag in the high 32 bits, the
//! sequence number in the low 32. Guessing a tag takes 2^31 tries on average,
//! each one a refused result. Play and search leases are bound to a random
//! nonce of this run instead of a position: their results are never taken by
//! position, and an id of an earlier run never passes for one of this run.

use ring::hmac;
use stera_rules::Key;

use crate::leases::LeaseId;

/// What a lease is for, as its tag binds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Binding {
    /// A think job of the position with this key.
    Think(Key),
    /// A play or search job (of this run only).
    ThisRun,
}

/// Makes and checks lease ids with a store's secret.
pub struct LeaseIds {
    key: hmac::Key,
    /// Random per run: binds the ids of play and search leases to this run.
    run: [u8; 8],
    next_seq: u32,
}

impl std::fmt::Debug for LeaseIds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "LeaseIds(next {})", self.next_seq)
    }
}

impl LeaseIds {
    /// Ids signed with `secret` (the store's), numbered from a random start.
    pub fn new(secret: &[u8]) -> Self {
        Self {
            key: hmac::Key::new(hmac::HMAC_SHA256, secret),
            run: rand::random(),
            next_seq: rand::random(),
        }
    }

    fn tag(&self, seq: u32, binding: Binding) -> u32 {
        let mut ctx = hmac::Context::with_key(&self.key);
        ctx.update(b"stera lease v1");
        ctx.update(&seq.to_le_bytes());
        match binding {
            Binding::Think(key) => {
                ctx.update(b"T");
                ctx.update(&key.0.to_le_bytes());
            }
            Binding::ThisRun => {
                ctx.update(b"R");
                ctx.update(&self.run);
            }
        }
        let tag = ctx.sign();
        let mut first = [0u8; 4];
        first.copy_from_slice(&tag.as_ref()[..4]);
        u32::from_le_bytes(first)
    }

    /// The next lease id, for a lease bound to `binding`.
    pub fn next(&mut self, binding: Binding) -> LeaseId {
        let seq = self.next_seq;
        self.next_seq = seq.wrapping_add(1);
        (u64::from(self.tag(seq, binding)) << 32) | u64::from(seq)
    }

    /// Whether `id` was issued, by a coordinator of this store (this run or an
    /// earlier one), for a think job of the position `key`.
    pub fn issued_for_think(&self, id: LeaseId, key: Key) -> bool {
        let seq = (id & u64::from(u32::MAX)) as u32;
        let tag = (id >> 32) as u32;
        // Compared whole, in constant time: a timing cannot tell a prefix.
        (self.tag(seq, Binding::Think(key)) ^ tag) == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_ids_of_this_secret_and_position_pass() {
        let mut ids = LeaseIds::new(&[1; 32]);
        let (a, b) = (Key(11), Key(12));
        let id = ids.next(Binding::Think(a));
        assert!(ids.issued_for_think(id, a));
        // Another position, another bit of the id, another store, another run
        // of this store (which knows the ids of the earlier one).
        assert!(!ids.issued_for_think(id, b));
        for bit in 0..64 {
            assert!(!ids.issued_for_think(id ^ (1 << bit), a), "bit {bit}");
        }
        assert!(!LeaseIds::new(&[2; 32]).issued_for_think(id, a));
        assert!(LeaseIds::new(&[1; 32]).issued_for_think(id, a));
        // A play lease's id is no think lease's, and ids follow each other.
        let play = ids.next(Binding::ThisRun);
        assert!(!ids.issued_for_think(play, a));
        assert_eq!(play as u32, (id as u32).wrapping_add(1));
        assert_ne!(ids.next(Binding::Think(a)), id);
    }
}
