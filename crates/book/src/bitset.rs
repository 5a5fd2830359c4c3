//! One bit per node id: the book's dense sets over node indices (the selector's
//! "has a banned move", the graph's "side to move in check", the solver's work
//! flags, the softmax backup's "on a cycle").

/// A growable set of small integers (node indices), one bit each.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct BitSet(Vec<u64>);

impl BitSet {
    /// An empty set with room for indices below `len` (it grows on insert).
    pub(crate) fn with_len(len: usize) -> Self {
        Self(vec![0; len.div_ceil(64)])
    }

    /// True if `i` is in the set (an index past the room is not).
    #[inline]
    pub(crate) fn contains(&self, i: usize) -> bool {
        self.0.get(i / 64).is_some_and(|w| w >> (i % 64) & 1 != 0)
    }

    /// Adds `i`, growing the set when `i` is past its room.
    #[inline]
    pub(crate) fn insert(&mut self, i: usize) {
        if self.0.len() <= i / 64 {
            self.0.resize(i / 64 + 1, 0);
        }
        self.0[i / 64] |= 1 << (i % 64);
    }

    /// Removes `i` (nothing happens when it is not in the set).
    #[inline]
    pub(crate) fn remove(&mut self, i: usize) {
        if let Some(w) = self.0.get_mut(i / 64) {
            *w &= !(1 << (i % 64));
        }
    }

    /// Adds or removes `i`.
    #[inline]
    pub(crate) fn set(&mut self, i: usize, on: bool) {
        if on {
            self.insert(i);
        } else {
            self.remove(i);
        }
    }

    /// Bytes held (for memory estimates).
    pub(crate) fn memory_bytes(&self) -> usize {
        self.0.len() * 8
    }
}

#[cfg(test)]
mod tests {
    use super::BitSet;

    #[test]
    fn insert_remove_and_growth() {
        let mut s = BitSet::with_len(10);
        assert!(!s.contains(3) && !s.contains(1000));
        s.insert(3);
        s.insert(130);
        assert!(s.contains(3) && s.contains(130) && !s.contains(129));
        s.set(3, false);
        s.remove(5000);
        assert!(!s.contains(3));
        assert_eq!(s.memory_bytes(), 24);
    }
}
