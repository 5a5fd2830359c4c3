//! Append-only columns in shared chunks, so that a copy of the book is nearly free.
//!
//! A [`Column`] keeps its elements in chunks of [`CHUNK`] behind `Arc`s. Cloning
//! a column shares every chunk; the owner's next push into a shared chunk copies
//! that one chunk (copy on write, at most [`CHUNK`] elements). This is what lets
//! an export or an analysis read a snapshot of a book of tens of millions of
//! nodes on another thread while the live book keeps growing, at the cost of
//! one chunk per column instead of a copy of the book.

use std::sync::Arc;

const CHUNK_BITS: u32 = 20;
/// Elements per chunk.
pub(crate) const CHUNK: usize = 1 << CHUNK_BITS;
const MASK: usize = CHUNK - 1;

/// An append-only sequence in shared chunks.
#[derive(Clone, Debug)]
pub(crate) struct Column<T: Clone> {
    chunks: Vec<Arc<Vec<T>>>,
    /// Elements held (with [`Column::push_run`]: the end of the last run, gaps
    /// included).
    end: usize,
}

impl<T: Clone> Default for Column<T> {
    fn default() -> Self {
        Self {
            chunks: Vec::new(),
            end: 0,
        }
    }
}

impl<T: Clone> Column<T> {
    /// The last chunk, writable (copied first if a snapshot shares it), with room
    /// for `extra` more elements; a new chunk when the last one has no room.
    fn writable_tail(&mut self, extra: usize) -> &mut Vec<T> {
        let fits = self.chunks.last().is_some_and(|c| c.len() + extra <= CHUNK);
        if !fits {
            self.chunks.push(Arc::new(Vec::new()));
        }
        let last = self.chunks.len() - 1;
        let tail = &mut self.chunks[last];
        if Arc::get_mut(tail).is_none() {
            // Shared with a snapshot: this chunk is copied once, with room to grow.
            let mut copy = Vec::with_capacity(CHUNK.min(tail.len() * 2 + extra));
            copy.extend_from_slice(tail);
            *tail = Arc::new(copy);
        }
        Arc::make_mut(tail)
    }

    /// Appends one element; returns its index.
    pub(crate) fn push(&mut self, value: T) -> usize {
        let tail = self.writable_tail(1);
        tail.push(value);
        let len = tail.len();
        self.end = ((self.chunks.len() - 1) << CHUNK_BITS) + len;
        self.end - 1
    }

    /// Appends `values` in one chunk (a run never straddles two, so it can be
    /// read back as one slice; a run that does not fit starts a new chunk and
    /// leaves a gap of unused indices). Returns the run's first index.
    ///
    /// # Panics
    /// If `values` is longer than a chunk.
    pub(crate) fn push_run(&mut self, values: &[T]) -> usize {
        assert!(values.len() <= CHUNK, "a run longer than a chunk");
        let tail = self.writable_tail(values.len());
        tail.extend_from_slice(values);
        let len = tail.len();
        self.end = ((self.chunks.len() - 1) << CHUNK_BITS) + len;
        self.end - values.len()
    }

    /// The index after the last element.
    pub(crate) fn end(&self) -> usize {
        self.end
    }

    /// The element at `index`.
    ///
    /// # Panics
    /// If `index` was never pushed.
    #[inline]
    pub(crate) fn get(&self, index: usize) -> &T {
        &self.chunks[index >> CHUNK_BITS][index & MASK]
    }

    /// `len` elements from `start`, pushed as one run.
    ///
    /// # Panics
    /// If the range was not pushed as (part of) one run.
    #[inline]
    pub(crate) fn run(&self, start: usize, len: usize) -> &[T] {
        let offset = start & MASK;
        &self.chunks[start >> CHUNK_BITS][offset..offset + len]
    }

    /// Bytes held by the chunks (capacity).
    pub(crate) fn memory_bytes(&self) -> usize {
        self.chunks
            .iter()
            .map(|c| c.capacity() * std::mem::size_of::<T>())
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pushes_read_back_across_chunks() {
        let mut c = Column::default();
        for i in 0..(CHUNK + 10) as u32 {
            assert_eq!(c.push(i), i as usize);
        }
        assert_eq!(c.end(), CHUNK + 10);
        assert_eq!(*c.get(CHUNK - 1), (CHUNK - 1) as u32);
        assert_eq!(*c.get(CHUNK + 9), (CHUNK + 9) as u32);
    }

    #[test]
    fn a_run_never_straddles_chunks() {
        let mut c: Column<u16> = Column::default();
        let filler = vec![7u16; CHUNK - 3];
        assert_eq!(c.push_run(&filler), 0);
        let start = c.push_run(&[1, 2, 3, 4, 5]);
        assert_eq!(start, CHUNK, "five values do not fit in the 3 left");
        assert_eq!(c.run(start, 5), &[1, 2, 3, 4, 5]);
        assert_eq!(c.push_run(&[9]), CHUNK + 5);
        assert_eq!(c.run(CHUNK - 3, 0), &[] as &[u16]);
    }

    #[test]
    fn a_clone_keeps_its_view_while_the_original_grows() {
        let mut c = Column::default();
        for i in 0..100u64 {
            c.push(i);
        }
        let snapshot = c.clone();
        for i in 100..(CHUNK as u64 + 50) {
            c.push(i);
        }
        assert_eq!(snapshot.end(), 100);
        assert_eq!(*snapshot.get(99), 99);
        assert_eq!(*c.get(99), 99);
        assert_eq!(*c.get(CHUNK + 49), CHUNK as u64 + 49);
        // The snapshot's chunk was copied before the push, not changed under it.
        assert_eq!(snapshot.chunks[0].len(), 100);
    }
}
