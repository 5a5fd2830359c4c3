//! The Super Tera-Shock selector: hand out the leaves on the book's principal
//! variations while earlier ones are being thought. The selector keeps only its
//! search state (cache, turn, statistics, mode); the book it searches, the
//! in-flight set and the bans are the [`LiveBook`]'s, lent to every call.
//! Alpha-beta selection lives in `alpha_beta`, MC Softmax in `softmax`.
//!
//! ```
//! use stera_book::{LiveBook, MemoryStore, RunConfig, Selector, Thought};
//! let config = RunConfig { roots: vec!["startpos".into()], ..RunConfig::default() };
//! let mut live = LiveBook::open(MemoryStore::new(), Some(config)).unwrap();
//! let mut selector = Selector::new();
//! // An empty book: the root itself is the first leaf.
//! let leaves = selector.select(&mut live, 4).unwrap();
//! assert_eq!(leaves.len(), 1);
//! let n = leaves[0].position.legal_move_count();
//! let thought = Thought { values: vec![10; n], depths: None, evaluator: "doc".into(), timestamp: 0 };
//! live.complete(&leaves[0], thought).unwrap();
//! // Now the root's 30 moves are leaf edges: four distinct leaves come out.
//! let next = selector.select(&mut live, 4).unwrap();
//! assert_eq!(next.len(), 4);
//! assert_eq!(next[0].path.len(), 1);
//! ```

use stera_rules::Move;

use crate::live_book::{Reach, RootStart};
use crate::{BookError, LiveBook, NodeId, NodeStore};

mod alpha_beta;
mod edges;
mod line;
#[cfg(test)]
mod reference;
mod softmax;
#[cfg(test)]
mod tests;
use alpha_beta::CacheEntry;
pub use softmax::{DEFAULT_SELECT_SEED, SelectMode, SoftmaxSelect};

pub use crate::live_book::Leaf;

/// Counters for benchmarks and logs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SelectStats {
    /// Book nodes entered by the search (all selections so far).
    pub nodes_visited: u64,
    /// Searches run (a selection may need several when it bans edges).
    pub searches: u64,
    /// Leaves handed out.
    pub leaves: u64,
    /// Edges banned by selection.
    pub bans: u64,
    /// Nodes whose legal moves the selector generated because it kept no
    /// table of them: expanded for the first time, or again after their table
    /// was dropped.
    pub tables_built: u64,
}

/// How an edge of the PV ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum EdgeKind {
    /// The child is not thought: a leaf to hand out.
    Leaf,
    /// The child is thought but scored without search (repetition, ply limit, no
    /// legal move): nothing to think; the edge gets banned if it ends the PV.
    Ends,
    /// The child is thought and was searched.
    Node,
}

#[derive(Debug, Clone, Copy)]
struct PvEdge {
    node: NodeId,
    mv: Move,
    kind: EdgeKind,
    /// The move's child is not thought but its colour-flipped twin is: the line
    /// goes on on the twin's board (the child position flipped).
    twin: bool,
}

/// The moves of a line of (move, leads into a twin) pairs as played from its
/// root, starting on a twin's board when `on_twin` (a root searched as its
/// twin): a move made on a twin's board (after an odd number of twin edges) is
/// the flipped move on the real board.
pub(crate) fn moves_on_real_board(
    mut on_twin: bool,
    line: impl Iterator<Item = (Move, bool)>,
) -> Vec<Move> {
    line.map(|(mv, twin)| {
        let real = if on_twin { mv.flipped() } else { mv };
        on_twin ^= twin;
        real
    })
    .collect()
}

/// One leaf from a root: alpha-beta or softmax (what [`Selector::select`] runs
/// for each turn).
type FromRoot<S> = fn(&mut Selector, &mut LiveBook<S>, usize) -> Result<Option<Leaf>, BookError>;

/// The selector's search state over a [`LiveBook`] it borrows per call.
///
/// Search semantics (the method, see the crate docs): alpha-beta from a root over
/// thought nodes; a move whose child is not thought is a leaf scored with its
/// stored value (plus the kifu bonus when the child or its colour-flipped twin is
/// a kifu position); moves
/// whose child is in flight or that are banned are skipped as if illegal; a node
/// whose every move is skipped is itself skipped by its parent; a thought child
/// that repeats a position of the line scores as a draw (perpetual check loses for
/// the checker), one past the ply limit as a draw, one without legal moves as
/// mated. When the PV ends on such a scored, thought child, the edge is banned
/// (persistently) and the search runs again.
///
/// One selector serves one live book: its cache is indexed by the book's node
/// ids, which only grow. Besides its cache (8 bytes per node) it keeps what the
/// moves of the nodes it expanded lead to, at most 1M moves (40 MB): the
/// tables least recently used go first.
pub struct Selector {
    cache: Vec<CacheEntry>,
    use_cache: bool,
    generation: u32,
    cursor: usize,
    taken_in_turn: u32,
    stats: SelectStats,
    pv: Vec<Vec<PvEdge>>,
    /// Per root: the principal variation and value of its last search.
    root_lines: Vec<Option<(Vec<Move>, i32)>>,
    /// What the moves of the nodes expanded lead to, kept between selections.
    edge_tables: edges::EdgeTables,
    /// Per ply, the edges of the node being searched there.
    edge_buffers: Vec<Vec<edges::Edge>>,
    /// The line being searched.
    line: line::Line,
    /// Twin nodes the current search entered through a twin edge and has not left:
    /// a line that enters one of them again goes round a loop through twins,
    /// which the position history (reset by the flip) cannot see.
    twin_stack: Vec<NodeId>,
    /// Softmax selection and its RNG when in that mode (`None`: alpha-beta).
    softmax: Option<softmax::SoftmaxState>,
    /// Set while [`Selector::book_lines`] runs: a move into a position in flight
    /// counts as the leaf it still is, at its stored value, instead of being
    /// skipped (which selection must do so as not to hand it out twice).
    count_in_flight: bool,
    /// Run today's search before edge tables (`reference`), to compare with.
    #[cfg(test)]
    reference: bool,
    #[cfg(test)]
    reference_moves: Vec<Vec<Move>>,
}

impl std::fmt::Debug for Selector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Selector({} cached, {} leaves handed out)",
            self.cache.len(),
            self.stats.leaves
        )
    }
}

impl Default for Selector {
    fn default() -> Self {
        Self::new()
    }
}

impl Selector {
    /// A selector in alpha-beta mode with the search cache on.
    #[must_use]
    pub fn new() -> Self {
        Self {
            cache: Vec::new(),
            use_cache: true,
            generation: 1,
            cursor: 0,
            taken_in_turn: 0,
            stats: SelectStats::default(),
            pv: Vec::new(),
            root_lines: Vec::new(),
            edge_tables: edges::EdgeTables::default(),
            edge_buffers: Vec::new(),
            line: line::Line::default(),
            twin_stack: Vec::new(),
            softmax: None,
            count_in_flight: false,
            #[cfg(test)]
            reference: false,
            #[cfg(test)]
            reference_moves: Vec::new(),
        }
    }

    /// Counters since creation.
    #[must_use]
    pub fn stats(&self) -> SelectStats {
        self.stats
    }

    /// Turns the search cache off (every search starts from scratch and is exact
    /// even with repetitions) or on (the default: the reference's speed shortcut).
    pub fn set_cache_enabled(&mut self, enabled: bool) {
        self.use_cache = enabled;
    }

    /// Gives every node of `live` a cache slot (nodes added since the last call
    /// start without an entry).
    fn fit_cache<S: NodeStore>(&mut self, live: &LiveBook<S>) {
        self.edge_tables.fit(live.book());
        if self.cache.len() < live.book().len() {
            self.cache.resize(live.book().len(), CacheEntry::default());
        }
    }

    /// Bans an edge that selection found nothing to think below.
    fn ban<S: NodeStore>(
        &mut self,
        live: &mut LiveBook<S>,
        node: NodeId,
        mv: Move,
    ) -> Result<(), BookError> {
        live.ban(node, mv)?;
        self.stats.bans += 1;
        Ok(())
    }

    /// Up to `n` distinct leaves of `live`, none of them in flight; they are in
    /// flight on return. Roots take turns
    /// ([`RunConfig::leaves_per_turn`](crate::RunConfig::leaves_per_turn) leaves
    /// each); an empty result means no root has a selectable leaf now. In softmax
    /// mode ([`Selector::set_select_mode`]) each leaf comes from a sampled descent
    /// instead of the principal variation (see [`SelectMode::Softmax`]).
    ///
    /// # Errors
    /// Storage failure while banning an edge.
    pub fn select<S: NodeStore>(
        &mut self,
        live: &mut LiveBook<S>,
        n: usize,
    ) -> Result<Vec<Leaf>, BookError> {
        self.fit_cache(live);
        if self.softmax.is_some() {
            self.take_turns(live, n, Self::sample_from_root)
        } else {
            self.take_turns(live, n, Self::select_from_root)
        }
    }

    /// Up to `n` leaves from `from_root`, roots taking turns
    /// ([`RunConfig::leaves_per_turn`](crate::RunConfig::leaves_per_turn) leaves
    /// each; a root that finds nothing passes the turn; the call ends when every
    /// root in a row found nothing). Each leaf is in flight as soon as it is
    /// found, so no leaf comes twice.
    fn take_turns<S: NodeStore>(
        &mut self,
        live: &mut LiveBook<S>,
        n: usize,
        from_root: FromRoot<S>,
    ) -> Result<Vec<Leaf>, BookError> {
        let mut out = Vec::with_capacity(n);
        let mut fruitless_roots = 0;
        let roots = live.roots().len();
        while out.len() < n && fruitless_roots < roots {
            if self.taken_in_turn >= live.config().leaves_per_turn.max(1) {
                self.next_turn(roots);
            }
            match from_root(self, live, self.cursor)? {
                Some(leaf) => {
                    live.mark_in_flight(leaf.key);
                    self.taken_in_turn += 1;
                    self.stats.leaves += 1;
                    fruitless_roots = 0;
                    out.push(leaf);
                }
                None => {
                    fruitless_roots += 1;
                    self.next_turn(roots);
                }
            }
        }
        Ok(out)
    }

    fn next_turn(&mut self, roots: usize) {
        self.cursor = (self.cursor + 1) % roots.max(1);
        self.taken_in_turn = 0;
        self.generation = self.generation.wrapping_add(1).max(1);
    }

    /// For each root of `live` that has been searched: the root as given, the
    /// principal variation of its last selection search and its value from the
    /// root mover's view. Moves whose children were in flight at that time were
    /// skipped, so this is the line the book believes in among what is not being
    /// thought.
    #[must_use]
    pub fn root_lines<S: NodeStore>(&self, live: &LiveBook<S>) -> Vec<(String, Vec<Move>, i32)> {
        self.root_lines
            .iter()
            .enumerate()
            .filter_map(|(i, line)| {
                let (pv, value) = line.as_ref()?;
                Some((live.config().roots.get(i)?.clone(), pv.clone(), *value))
            })
            .collect()
    }

    /// For each root of `live` that is thought: the root as given, the book's own
    /// principal variation from it and its value from the root mover's view. The
    /// same alpha-beta over the book as selection, but with positions in flight
    /// counted at their stored values, so the line is what an export made now
    /// would play, not the line selection last took around the positions being
    /// thought ([`Selector::root_lines`]).
    ///
    /// The roots share one generation of their own (a position under several
    /// roots is searched once); selection reuses none of its bounds.
    pub fn book_lines<S: NodeStore>(
        &mut self,
        live: &LiveBook<S>,
    ) -> Vec<(String, Vec<Move>, i32)> {
        self.fit_cache(live);
        let stats = self.stats;
        self.new_generation();
        self.count_in_flight = true;
        let mut lines = Vec::new();
        for (root, text) in live.config().roots.iter().enumerate() {
            let RootStart::Node {
                id,
                pos,
                twin: root_twin,
            } = live.root_start(root)
            else {
                continue;
            };
            if let Some(value) = self.search_from(live, pos, id) {
                let line =
                    moves_on_real_board(root_twin, self.pv[0].iter().map(|e| (e.mv, e.twin)));
                lines.push((text.clone(), line, value));
            }
        }
        self.count_in_flight = false;
        self.new_generation();
        self.stats = stats;
        lines
    }

    /// Records the line and value of root `root`'s last search.
    fn set_root_line(&mut self, roots: usize, root: usize, line: (Vec<Move>, i32)) {
        if self.root_lines.len() < roots {
            self.root_lines.resize(roots, None);
        }
        self.root_lines[root] = Some(line);
    }

    /// Starts a new cache generation (cached bounds are not reused past it).
    pub fn new_generation(&mut self) {
        self.generation = self.generation.wrapping_add(1).max(1);
    }

    /// Leaves next to `leaf`: the other leaf moves of its parent whose stored value
    /// is within `margin` of `leaf`'s, best first, at most `max`; they are in
    /// flight on return. Consecutive selections mostly pick these anyway (once the
    /// best leaf of a node is in flight, the next best often is the new PV), so a
    /// bulk grower can hand them out without a search each ("PV-guided batch").
    pub fn select_siblings<S: NodeStore>(
        &mut self,
        live: &mut LiveBook<S>,
        leaf: &Leaf,
        max: usize,
        margin: i32,
    ) -> Vec<Leaf> {
        let Some((parent, leaf_move)) = leaf.parent else {
            return Vec::new();
        };
        if max == 0 || parent.index() >= live.book().len() {
            return Vec::new();
        }
        let mut parent_pos = leaf.position.clone();
        if parent_pos.undo_move().is_err() {
            return Vec::new();
        }
        let moves = parent_pos.legal_moves();
        let values = live.book().values(parent);
        if values.len() != moves.len() {
            return Vec::new();
        }
        let Some(leaf_index) = moves.iter().position(|m| *m == leaf_move) else {
            return Vec::new();
        };
        let floor = i32::from(values[leaf_index]) - margin;
        let mut candidates: Vec<(i16, Move)> = moves
            .iter()
            .zip(values)
            .filter(|(m, v)| **m != leaf_move && i32::from(**v) >= floor)
            .map(|(m, v)| (*v, *m))
            .collect();
        candidates.sort_unstable_by_key(|c| std::cmp::Reverse(c.0));
        // The path is played on the root's board: after an odd number of twins
        // the parent's moves are flipped there.
        let on_twin = live.path_ends_on_twin(leaf);
        let mut out = Vec::new();
        for (_, mv) in candidates {
            if out.len() >= max {
                break;
            }
            let key = parent_pos.key_after(mv);
            // Only a leaf as the search sees one: not thought, not in flight,
            // and neither is its colour-flipped twin.
            if live.skipped_by_ban(parent, mv)
                || !matches!(live.reach(&parent_pos, mv, key), Reach::Leaf)
            {
                continue;
            }
            let mut position = parent_pos.clone();
            position.do_move(mv);
            let mut path = leaf.path.clone();
            path.pop();
            path.push(if on_twin { mv.flipped() } else { mv });
            live.mark_in_flight(key);
            self.stats.leaves += 1;
            out.push(Leaf {
                root: leaf.root,
                path,
                parent: Some((parent, mv)),
                key,
                position,
            });
        }
        out
    }
}
