//! What the export needs besides the in-memory [`Book`]: the stored plies (the
//! SFEN lines carry them), timestamps (statistics) and per-move search depths
//! (the raw export). The book keeps only keys and values, so these come from one
//! scan of the store.

use super::TeraShockError;
use stera_rules::Key;

use crate::{Book, BookError, BookLoader, NodeId, NodeStore};

/// Per-node data from the store that [`Book`] does not keep.
#[derive(Debug, Clone, Default)]
pub struct NodeExtras {
    /// Game ply of each node when first reached, by node id.
    pub plies: Vec<u16>,
    /// When each node was thought (seconds since the Unix epoch), by node id.
    pub timestamps: Vec<u32>,
    /// Per-move search depths (0 where none were stored), when loaded.
    depths: Option<Depths>,
    /// Positions per evaluator id (see [`crate::NodeStore::evaluators`]): who
    /// thought how much of the book.
    pub positions_by_evaluator: Vec<u64>,
    /// Each node's evaluator id, when loaded
    /// ([`NodeExtras::load_with_book_and_evaluators`]).
    evaluators: Option<Vec<u16>>,
    /// Game results per node index (side to move's view), when loaded with
    /// [`NodeExtras::scan_games`]; only nodes with games.
    pub games: std::collections::HashMap<u32, crate::GameCounts>,
    /// Game results by the key they are kept under ([`Book::count_key`]), every
    /// position with games, in the book or not (a move into a leaf has its
    /// results at the leaf); filled by [`NodeExtras::scan_games`].
    pub counts: std::collections::HashMap<Key, crate::GameCounts>,
    /// Learning games' results by key, the selected opponents' counters added
    /// (what `--by-results` values moves by; never the self-play counters);
    /// filled by [`NodeExtras::scan_learning`].
    pub learned: std::collections::HashMap<Key, crate::GameCounts>,
}

#[derive(Debug, Clone, Default)]
struct Depths {
    /// `start[i]..start[i + 1]` are node `i`'s depths.
    start: Vec<u64>,
    depths: Vec<u8>,
}

/// Nodes per batch handed to the thread that builds the book while loading.
const LOAD_BATCH: usize = 1024;
/// Batches on their way at most.
const LOAD_BATCHES: usize = 8;

impl NodeExtras {
    /// Reads the extras of every node of `store` (one scan), with per-move depths
    /// if `with_depths` (one byte per stored value).
    ///
    /// # Errors
    /// Storage failure or corrupt records.
    pub fn scan(store: &dyn NodeStore, with_depths: bool) -> Result<Self, BookError> {
        Self::scan_first(
            |visit| store.for_each_node(visit),
            store.len() as usize,
            with_depths,
        )
    }

    /// The extras of the first `nodes` nodes that `scan` visits in id order: those
    /// of a snapshot of a book that has grown since (see
    /// [`crate::SledReader`]); nodes past the snapshot are skipped.
    ///
    /// # Errors
    /// What `scan` returns, or fewer than `nodes` nodes.
    pub fn scan_first(
        scan: impl FnOnce(
            &mut dyn FnMut(NodeId, crate::ThoughtNode) -> Result<(), BookError>,
        ) -> Result<(), BookError>,
        nodes: usize,
        with_depths: bool,
    ) -> Result<Self, BookError> {
        let mut extras = Self::with_capacity(nodes, with_depths);
        scan(&mut |id, node| {
            if id.index() < nodes {
                extras.push(&node);
            }
            Ok(())
        })?;
        if extras.len() == nodes {
            Ok(extras)
        } else {
            Err(BookError::Corrupt(format!(
                "the store holds {} nodes, the book {nodes}",
                extras.len()
            )))
        }
    }

    /// Reads the game results that `scan` visits: by node for the nodes of
    /// `book` ([`NodeExtras::games`]), by key for every position
    /// ([`NodeExtras::counts`]).
    ///
    /// # Errors
    /// What `scan` returns.
    pub fn scan_games(
        &mut self,
        scan: impl FnOnce(&mut dyn FnMut(Key, crate::GameCounts)) -> Result<(), BookError>,
        book: &Book,
    ) -> Result<(), BookError> {
        let (games, by_key) = (&mut self.games, &mut self.counts);
        scan(&mut |key, counts| {
            if let Some(id) = book.get(key) {
                games.insert(id.0, counts);
            }
            by_key.insert(key, counts);
        })
    }

    /// Adds the learning counters that `scan` visits (by key, see
    /// [`NodeExtras::learned`]); call it once per selected opponent.
    ///
    /// # Errors
    /// What `scan` returns.
    pub fn scan_learning(
        &mut self,
        scan: impl FnOnce(&mut dyn FnMut(Key, crate::GameCounts)) -> Result<(), BookError>,
    ) -> Result<(), BookError> {
        let learned = &mut self.learned;
        scan(&mut |key, counts| learned.entry(key).or_default().add(counts))
    }

    /// Loads the book and its extras with one scan of `store`.
    ///
    /// # Errors
    /// Storage failure, corrupt records, a store that repeats a key.
    pub fn load_with_book(
        store: &dyn NodeStore,
        with_depths: bool,
    ) -> Result<(Book, Self), BookError> {
        Self::load_first_with_book(store, store.len() as usize, with_depths)
    }

    /// [`NodeExtras::load_with_book`] that keeps each node's evaluator id too
    /// ([`NodeExtras::evaluator`]; two bytes a node).
    ///
    /// # Errors
    /// Storage failure, corrupt records, a store that repeats a key.
    pub fn load_with_book_and_evaluators(
        store: &dyn NodeStore,
        with_depths: bool,
    ) -> Result<(Book, Self), BookError> {
        let n = store.len() as usize;
        let mut extras = Self::with_capacity(n, with_depths);
        extras.evaluators = Some(Vec::with_capacity(n));
        let book = extras.load_into(store, n)?;
        Ok((book, extras))
    }

    /// [`NodeExtras::load_with_book`] of the first `nodes` nodes only: the book
    /// as it was when it had `nodes` nodes (what a coordinator's export of that
    /// snapshot wrote), all of it if the store holds fewer.
    ///
    /// # Errors
    /// Storage failure, corrupt records, a store that repeats a key.
    pub fn load_first_with_book(
        store: &dyn NodeStore,
        nodes: usize,
        with_depths: bool,
    ) -> Result<(Book, Self), BookError> {
        let n = nodes.min(store.len() as usize);
        let mut extras = Self::with_capacity(n, with_depths);
        let book = extras.load_into(store, n)?;
        Ok((book, extras))
    }

    /// Loads the first `n` nodes of `store` into a new book and these extras.
    ///
    /// Reading and decoding the store's records and putting them into the
    /// book's tables take about as long each: a thread of its own does the
    /// second, fed with batches of nodes.
    fn load_into(&mut self, store: &dyn NodeStore, n: usize) -> Result<Book, BookError> {
        std::thread::scope(|scope| {
            let (to_book, batches) =
                std::sync::mpsc::sync_channel::<Vec<(NodeId, crate::ThoughtNode)>>(LOAD_BATCHES);
            let builder = scope.spawn(move || -> Result<Book, BookError> {
                let mut loader = BookLoader::new(n);
                for batch in batches {
                    for (id, node) in batch {
                        loader.push_as(id, &node)?;
                        self.push(&node);
                    }
                }
                loader.finish()
            });
            let mut batch = Vec::with_capacity(LOAD_BATCH);
            // An error of the builder stops the scan (it has gone); it is the
            // one reported.
            let stopped = || BookError::Corrupt("the book stopped taking nodes".into());
            let scanned = store.for_each_node(&mut |id, node| {
                if id.index() >= n {
                    return Ok(());
                }
                batch.push((id, node));
                if batch.len() == LOAD_BATCH {
                    let full = std::mem::replace(&mut batch, Vec::with_capacity(LOAD_BATCH));
                    to_book.send(full).map_err(|_| stopped())?;
                }
                Ok(())
            });
            if scanned.is_ok() && !batch.is_empty() {
                // A send that fails leaves the builder's error to report.
                let _ = to_book.send(batch);
            }
            drop(to_book);
            let built = builder
                .join()
                .map_err(|_| BookError::Corrupt("the thread loading the book panicked".into()))?;
            match (scanned, built) {
                (_, Err(e)) | (Err(e), Ok(_)) => Err(e),
                (Ok(()), Ok(book)) => Ok(book),
            }
        })
    }

    fn with_capacity(n: usize, with_depths: bool) -> Self {
        Self {
            plies: Vec::with_capacity(n),
            timestamps: Vec::with_capacity(n),
            depths: with_depths.then(|| Depths {
                start: vec![0],
                depths: Vec::new(),
            }),
            positions_by_evaluator: Vec::new(),
            evaluators: None,
            games: std::collections::HashMap::new(),
            counts: std::collections::HashMap::new(),
            learned: std::collections::HashMap::new(),
        }
    }

    fn push(&mut self, node: &crate::ThoughtNode) {
        self.plies.push(node.ply);
        self.timestamps.push(node.timestamp);
        let e = usize::from(node.evaluator);
        if self.positions_by_evaluator.len() <= e {
            self.positions_by_evaluator.resize(e + 1, 0);
        }
        self.positions_by_evaluator[e] += 1;
        if let Some(ids) = &mut self.evaluators {
            ids.push(node.evaluator);
        }
        if let Some(d) = &mut self.depths {
            match &node.depths {
                Some(nd) => d.depths.extend_from_slice(nd),
                None => d.depths.resize(d.depths.len() + node.values.len(), 0),
            }
            d.start.push(d.depths.len() as u64);
        }
    }

    /// Number of nodes covered.
    #[must_use]
    pub fn len(&self) -> usize {
        self.plies.len()
    }

    /// True when no node is covered.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.plies.is_empty()
    }

    /// The evaluator id of a node, if evaluators were loaded.
    #[must_use]
    pub fn evaluator(&self, id: NodeId) -> Option<u16> {
        self.evaluators.as_ref()?.get(id.index()).copied()
    }

    /// The stored per-move depths of a node, if depths were loaded.
    #[must_use]
    pub fn depths(&self, id: NodeId) -> Option<&[u8]> {
        let d = self.depths.as_ref()?;
        let i = id.index();
        let (s, e) = (*d.start.get(i)?, *d.start.get(i + 1)?);
        d.depths
            .get(usize::try_from(s).ok()?..usize::try_from(e).ok()?)
    }

    /// Checks that these extras cover exactly the nodes of `book`.
    ///
    /// # Errors
    /// [`TeraShockError::Invalid`] when the counts differ (extras of another book,
    /// or nodes added since the scan).
    pub fn check_covers(&self, book: &Book) -> Result<(), TeraShockError> {
        if self.len() == book.len() {
            Ok(())
        } else {
            Err(TeraShockError::Invalid(format!(
                "node extras cover {} nodes, the book has {}",
                self.len(),
                book.len()
            )))
        }
    }
}
