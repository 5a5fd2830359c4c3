//! The Super Tera-Shock selector as a service: hand out the leaves on the book's
//! principal variations while earlier ones are being thought, take the results
//! back, keep everything durable.
//!
//! ```
//! use stera_book::{MemoryStore, RunConfig, Selector, Thought};
//! let config = RunConfig { roots: vec!["startpos".into()], ..RunConfig::default() };
//! let mut selector = Selector::open(MemoryStore::new(), Some(config)).unwrap();
//! // An empty book: the root itself is the first leaf.
//! let leaves = selector.select(4).unwrap();
//! assert_eq!(leaves.len(), 1);
//! let n = leaves[0].position.legal_move_count();
//! let thought = Thought { values: vec![10; n], depths: None, evaluator: "doc".into(), timestamp: 0 };
//! selector.complete(&leaves[0], thought).unwrap();
//! // Now the root's 30 moves are leaf edges: four distinct leaves come out.
//! let next = selector.select(4).unwrap();
//! assert_eq!(next.len(), 4);
//! assert_eq!(next[0].path.len(), 1);
//! ```

use hashbrown::HashSet;
use stera_rules::value::{INFINITE, MATE_IN_MAX_PLY, mate_in, mated_in};
use stera_rules::{Key, Move, Position, Repetition};

use crate::{Book, BookError, NodeId, NodeStore, Origin, RunConfig, Thought, ThoughtNode};

mod softmax;
pub use softmax::{DEFAULT_SELECT_SEED, SelectMode, SoftmaxSelect, softmax_policy};

/// A position handed out for thinking.
#[derive(Debug, Clone)]
pub struct Leaf {
    /// Index of the root (in [`RunConfig::roots`]) it was found from.
    pub root: usize,
    /// The moves from that root to the leaf, as played on the root's board. When
    /// the line went through a colour-flipped twin (an odd number of times),
    /// they lead to the twin of `position`: `position` is on the board of the
    /// book node it is a child of.
    pub path: Vec<Move>,
    /// The thought node and move whose child this is; `None` when the leaf is an
    /// unthought root.
    pub parent: Option<(NodeId, Move)>,
    /// The leaf position's key (what in-flight bookkeeping uses).
    pub key: Key,
    /// The leaf position, with the game history from the root command.
    pub position: Position,
}

impl Leaf {
    /// The leaf's SFEN (with ply), what a worker is sent.
    #[must_use]
    pub fn sfen(&self) -> String {
        self.position.to_sfen()
    }
}

/// Counters for benchmarks and logs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SelectStats {
    /// Book nodes entered by the search (all selections so far).
    pub nodes_visited: u64,
    /// Searches run (a selection may need several when it bans edges).
    pub searches: u64,
    /// Leaves handed out.
    pub leaves: u64,
    /// Edges banned.
    pub bans: u64,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Bound {
    Upper = 1,
    Lower = 2,
    Exact = 3,
}

/// Cached search result of one node: value (relative to the node for mate
/// scores), bound, best move index, generation. 8 bytes.
#[derive(Clone, Copy, Default)]
struct CacheEntry {
    generation: u32,
    value: i16,
    /// Bits 0..14: best move index (`NO_BEST` if none); bits 14..16: bound.
    best_and_bound: u16,
}

const NO_BEST: u16 = 0x3fff;

impl CacheEntry {
    fn best(self) -> Option<usize> {
        let b = self.best_and_bound & 0x3fff;
        (b != NO_BEST).then_some(usize::from(b))
    }
    fn bound(self) -> Option<Bound> {
        match self.best_and_bound >> 14 {
            1 => Some(Bound::Upper),
            2 => Some(Bound::Lower),
            3 => Some(Bound::Exact),
            _ => None,
        }
    }
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

/// What a move of a thought node leads to, for selection.
enum Reach {
    /// The child, or its colour-flipped twin, is being thought: skip the move.
    InFlight,
    /// Neither the child nor its twin is thought: a leaf.
    Leaf,
    /// A thought node: the child itself, or (`true`) the child's twin.
    Thought(NodeId, bool),
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

/// See [`Selector::root_start`].
enum RootStart {
    /// Search from thought node `id` at `pos` (the root's twin when `twin`).
    Node {
        id: NodeId,
        pos: Position,
        twin: bool,
    },
    /// The root is not thought: it is the leaf.
    Leaf(Leaf),
    /// The root (or its twin) is being thought.
    InFlight,
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

/// Converts a node-relative move value to the search's root-relative scale.
#[inline]
fn from_node_relative(v: i32, ply: usize) -> i32 {
    let ply = i32::try_from(ply).unwrap_or(i32::MAX / 2);
    if v >= MATE_IN_MAX_PLY {
        v - ply
    } else if v <= -MATE_IN_MAX_PLY {
        v + ply
    } else {
        v
    }
}

/// Inverse of [`from_node_relative`] (what the cache stores).
#[inline]
fn to_node_relative(v: i32, ply: usize) -> i32 {
    let ply = i32::try_from(ply).unwrap_or(i32::MAX / 2);
    if v >= MATE_IN_MAX_PLY {
        v + ply
    } else if v <= -MATE_IN_MAX_PLY {
        v - ply
    } else {
        v
    }
}

#[inline]
fn ply_i32(ply: usize) -> i32 {
    i32::try_from(ply).unwrap_or(i32::MAX / 2)
}

#[inline]
fn ban_code(node: NodeId, mv: Move) -> u64 {
    (u64::from(node.0) << 16) | u64::from(mv.raw())
}

/// The selector: the book, its store, the roots and the in-flight set.
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
pub struct Selector<S: NodeStore> {
    store: S,
    book: Book,
    config: RunConfig,
    roots: Vec<Position>,
    in_flight: HashSet<u128>,
    banned: HashSet<u64>,
    /// One bit per node: has at least one banned move (saves a hash probe per move).
    banned_nodes: Vec<u64>,
    kifu: HashSet<u128>,
    cache: Vec<CacheEntry>,
    use_cache: bool,
    generation: u32,
    cursor: usize,
    taken_in_turn: u32,
    evaluator_ids: hashbrown::HashMap<String, u16>,
    stats: SelectStats,
    pv: Vec<Vec<PvEdge>>,
    /// Per root: the principal variation and value of its last search.
    root_lines: Vec<Option<(Vec<Move>, i32)>>,
    move_buffers: Vec<Vec<Move>>,
    /// Twin nodes the current search entered through a twin edge and has not left:
    /// a line that enters one of them again goes round a loop through twins,
    /// which the position history (reset by the flip) cannot see.
    twin_stack: Vec<NodeId>,
    /// Softmax selection and its RNG when in that mode (`None`: alpha-beta).
    softmax: Option<softmax::SoftmaxState>,
}

impl<S: NodeStore> std::fmt::Debug for Selector<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Selector({} nodes, {} roots, {} in flight)",
            self.book.len(),
            self.roots.len(),
            self.in_flight.len()
        )
    }
}

impl<S: NodeStore> Selector<S> {
    /// Opens a selector over `store`, rebuilding the in-memory book. `config`
    /// replaces (and is saved over) the stored run configuration; with `None` the
    /// stored one is used, or [`RunConfig::default`] for a new store.
    ///
    /// # Errors
    /// Storage errors, corrupt data, invalid roots.
    pub fn open(mut store: S, config: Option<RunConfig>) -> Result<Self, BookError> {
        let config = match config {
            Some(c) => {
                store.save_config(&c)?;
                c
            }
            None => match store.config()? {
                Some(c) => c,
                None => {
                    let c = RunConfig::default();
                    store.save_config(&c)?;
                    c
                }
            },
        };
        let roots = crate::store::check_roots(&config)?;
        let book = Book::load(&store)?;
        let mut selector = Self {
            cache: vec![CacheEntry::default(); book.len()],
            banned_nodes: vec![0; book.len() / 64 + 1],
            book,
            config,
            roots,
            in_flight: HashSet::new(),
            banned: HashSet::new(),
            kifu: HashSet::new(),
            use_cache: true,
            generation: 1,
            cursor: 0,
            taken_in_turn: 0,
            evaluator_ids: hashbrown::HashMap::new(),
            stats: SelectStats::default(),
            pv: Vec::new(),
            root_lines: Vec::new(),
            move_buffers: Vec::new(),
            twin_stack: Vec::new(),
            softmax: None,
            store,
        };
        for (node, mv) in selector.store.bans()? {
            selector.mark_banned(node, mv);
        }
        for k in selector.store.kifu_keys()? {
            selector.kifu.insert(k.0);
        }
        for (i, e) in selector.store.evaluators()?.into_iter().enumerate() {
            let id = u16::try_from(i).map_err(|_| BookError::Corrupt("evaluators".into()))?;
            selector.evaluator_ids.insert(e, id);
        }
        Ok(selector)
    }

    /// The in-memory book.
    #[must_use]
    pub fn book(&self) -> &Book {
        &self.book
    }

    /// The store.
    #[must_use]
    pub fn store(&self) -> &S {
        &self.store
    }

    /// The store, mutably (maintenance such as compaction).
    pub fn store_mut(&mut self) -> &mut S {
        &mut self.store
    }

    /// The run configuration in force.
    #[must_use]
    pub fn config(&self) -> &RunConfig {
        &self.config
    }

    /// Counters since opening.
    #[must_use]
    pub fn stats(&self) -> SelectStats {
        self.stats
    }

    /// Number of leaves handed out and not yet completed or abandoned.
    #[must_use]
    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    /// True if `(node, mv)` is banned.
    #[must_use]
    pub fn is_banned(&self, node: NodeId, mv: Move) -> bool {
        self.banned.contains(&ban_code(node, mv))
    }

    /// Turns the search cache off (every search starts from scratch and is exact
    /// even with repetitions) or on (the default: the reference's speed shortcut).
    pub fn set_cache_enabled(&mut self, enabled: bool) {
        self.use_cache = enabled;
    }

    /// Adds kifu positions: leaf moves into them get the kifu bonus in selection.
    ///
    /// # Errors
    /// Storage failure.
    pub fn add_kifu_keys(&mut self, keys: &[Key]) -> Result<(), BookError> {
        self.store.add_kifu_keys(keys)?;
        self.kifu.extend(keys.iter().map(|k| k.0));
        Ok(())
    }

    fn mark_banned(&mut self, node: NodeId, mv: Move) {
        self.banned.insert(ban_code(node, mv));
        let i = node.index();
        if self.banned_nodes.len() <= i / 64 {
            self.banned_nodes.resize(i / 64 + 1, 0);
        }
        self.banned_nodes[i / 64] |= 1 << (i % 64);
    }

    /// Bans `mv` at `node` for all later selections (persisted).
    ///
    /// # Errors
    /// Storage failure.
    pub fn ban(&mut self, node: NodeId, mv: Move) -> Result<(), BookError> {
        self.store.ban(node, mv)?;
        self.mark_banned(node, mv);
        self.stats.bans += 1;
        Ok(())
    }

    #[inline]
    fn skipped_by_ban(&self, node: NodeId, mv: Move) -> bool {
        let i = node.index();
        self.banned_nodes
            .get(i / 64)
            .is_some_and(|w| w & (1 << (i % 64)) != 0)
            && self.banned.contains(&ban_code(node, mv))
    }

    /// Up to `n` distinct leaves, none of them in flight; they are in flight on
    /// return. Roots take turns ([`RunConfig::leaves_per_turn`] leaves each); an
    /// empty result means no root has a selectable leaf now. In softmax mode
    /// ([`Selector::set_select_mode`]) each leaf comes from a sampled descent
    /// instead of the principal variation (see [`SelectMode::Softmax`]).
    ///
    /// # Errors
    /// Storage failure while banning an edge.
    pub fn select(&mut self, n: usize) -> Result<Vec<Leaf>, BookError> {
        if self.softmax.is_some() {
            self.take_turns(n, Self::sample_from_root)
        } else {
            self.take_turns(n, Self::select_from_root)
        }
    }

    /// Up to `n` leaves from `from_root`, roots taking turns
    /// ([`RunConfig::leaves_per_turn`] leaves each; a root that finds nothing
    /// passes the turn; the call ends when every root in a row found nothing).
    /// Each leaf is in flight as soon as it is found, so no leaf comes twice.
    fn take_turns(
        &mut self,
        n: usize,
        from_root: fn(&mut Self, usize) -> Result<Option<Leaf>, BookError>,
    ) -> Result<Vec<Leaf>, BookError> {
        let mut out = Vec::with_capacity(n);
        let mut fruitless_roots = 0;
        while out.len() < n && fruitless_roots < self.roots.len() {
            if self.taken_in_turn >= self.config.leaves_per_turn.max(1) {
                self.next_turn();
            }
            match from_root(self, self.cursor)? {
                Some(leaf) => {
                    self.in_flight.insert(leaf.key.0);
                    self.taken_in_turn += 1;
                    self.stats.leaves += 1;
                    fruitless_roots = 0;
                    out.push(leaf);
                }
                None => {
                    fruitless_roots += 1;
                    self.next_turn();
                }
            }
        }
        Ok(out)
    }

    fn next_turn(&mut self) {
        self.cursor = (self.cursor + 1) % self.roots.len().max(1);
        self.taken_in_turn = 0;
        self.generation = self.generation.wrapping_add(1).max(1);
    }

    /// For each root that has been searched: the root as given, the principal
    /// variation of its last selection search and its value from the root mover's
    /// view. Moves whose children were in flight at that time were skipped, so this
    /// is the line the book believes in among what is not being thought.
    #[must_use]
    pub fn root_lines(&self) -> Vec<(String, Vec<Move>, i32)> {
        self.root_lines
            .iter()
            .enumerate()
            .filter_map(|(i, line)| {
                let (pv, value) = line.as_ref()?;
                Some((self.config.roots.get(i)?.clone(), pv.clone(), *value))
            })
            .collect()
    }

    /// Starts a new cache generation (cached bounds are not reused past it).
    pub fn new_generation(&mut self) {
        self.generation = self.generation.wrapping_add(1).max(1);
    }

    /// Where the search from root `root` begins. A root that is not thought but
    /// whose colour-flipped twin is, is searched as the twin, on the twin's board
    /// (as any move into it is).
    fn root_start(&self, root: usize) -> RootStart {
        let pos = self.roots[root].clone();
        let (key, twin_key) = (pos.key(), pos.flipped_key());
        if let Some((id, twin)) = self.book.get_or_twin(key, twin_key) {
            let pos = if twin { pos.flipped() } else { pos };
            return RootStart::Node { id, pos, twin };
        }
        if self.in_flight.contains(&key.0) || self.in_flight.contains(&twin_key.0) {
            return RootStart::InFlight;
        }
        RootStart::Leaf(Leaf {
            root,
            path: Vec::new(),
            parent: None,
            key,
            position: pos,
        })
    }

    fn select_from_root(&mut self, root: usize) -> Result<Option<Leaf>, BookError> {
        if root >= self.roots.len() {
            return Ok(None);
        }
        loop {
            let (id, mut pos, root_twin) = match self.root_start(root) {
                RootStart::Node { id, pos, twin } => (id, pos, twin),
                RootStart::Leaf(leaf) => return Ok(Some(leaf)),
                RootStart::InFlight => return Ok(None),
            };
            self.stats.searches += 1;
            if self.pv.is_empty() {
                self.pv.push(Vec::new());
            }
            self.pv[0].clear();
            self.twin_stack.clear();
            let Some(value) = self.search(&mut pos, id, -INFINITE, INFINITE, 0, true) else {
                return Ok(None);
            };
            if self.root_lines.len() < self.roots.len() {
                self.root_lines.resize(self.roots.len(), None);
            }
            let line = moves_on_real_board(root_twin, self.pv[0].iter().map(|e| (e.mv, e.twin)));
            self.root_lines[root] = Some((line.clone(), value));
            let Some(last) = self.pv[0].last().copied() else {
                return Ok(None);
            };
            match last.kind {
                EdgeKind::Leaf => {
                    // On the board of the node the search began at.
                    let mut position = if root_twin {
                        self.roots[root].flipped()
                    } else {
                        self.roots[root].clone()
                    };
                    let path = line;
                    for e in &self.pv[0] {
                        position.do_move(e.mv);
                        if e.twin {
                            position = position.flipped();
                        }
                    }
                    return Ok(Some(Leaf {
                        root,
                        path,
                        parent: Some((last.node, last.mv)),
                        key: position.key(),
                        position,
                    }));
                }
                EdgeKind::Ends => {
                    self.ban(last.node, last.mv)?;
                }
                // A PV cut short (possible only with stale cached bounds): nothing
                // sound to hand out from this root in this turn.
                EdgeKind::Node => return Ok(None),
            }
        }
    }

    /// Scores a thought child that needs no search (repetition, ply limit, no legal
    /// move), from the child's side, root-relative; `pos` is at the child.
    fn score_without_search(&self, pos: &Position, child: NodeId, ply: usize) -> Option<i32> {
        if let Some(rep) = pos.search_repetition(usize::MAX) {
            return Some(match rep {
                Repetition::Draw => 0,
                Repetition::OpponentPerpetualCheck => mate_in(ply_i32(ply)),
                Repetition::OwnPerpetualCheck => mated_in(ply_i32(ply)),
            });
        }
        if pos.ply() > self.config.ply_limit {
            return Some(0);
        }
        if self.book.values(child).is_empty() {
            return Some(mated_in(ply_i32(ply)));
        }
        None
    }

    /// Alpha-beta (fail-soft PVS) at thought node `node`; `pos` is its position,
    /// `ply` the distance from the root. `None` when every move is skipped.
    #[allow(clippy::too_many_lines)]
    fn search(
        &mut self,
        pos: &mut Position,
        node: NodeId,
        mut alpha: i32,
        mut beta: i32,
        ply: usize,
        pv_node: bool,
    ) -> Option<i32> {
        self.stats.nodes_visited += 1;
        let alpha_orig = alpha;
        // Any generation's best move orders the moves (it stays a good guess as the
        // book grows); only the current generation's bounds cut the search.
        let entry = self
            .cache
            .get(node.index())
            .copied()
            .filter(|e| self.use_cache && e.generation != 0);
        let cached = entry.filter(|e| e.generation == self.generation);
        if !pv_node {
            // Mate-distance pruning: no line from here beats mate at this ply.
            alpha = alpha.max(mated_in(ply_i32(ply)));
            beta = beta.min(mate_in(ply_i32(ply) + 1));
            if alpha >= beta {
                return Some(alpha);
            }
            if let Some(e) = cached {
                let v = from_node_relative(i32::from(e.value), ply);
                match e.bound() {
                    Some(Bound::Exact) => return Some(v),
                    Some(Bound::Lower) if v >= beta => return Some(v),
                    Some(Bound::Upper) if v <= alpha => return Some(v),
                    _ => {}
                }
            }
        }
        while self.move_buffers.len() <= ply {
            self.move_buffers.push(Vec::new());
        }
        while self.pv.len() <= ply + 1 {
            self.pv.push(Vec::new());
        }
        if pv_node {
            self.pv[ply].clear();
        }
        let mut moves = std::mem::take(&mut self.move_buffers[ply]);
        pos.legal_moves_into(&mut moves);
        let values = self.book.values(node);
        if values.len() != moves.len() {
            // Cannot happen for nodes that passed `complete`; skip rather than misread.
            self.move_buffers[ply] = moves;
            return None;
        }
        // Best move first: the cached best, else the best stored value.
        let first = entry
            .and_then(CacheEntry::best)
            .filter(|&i| i < moves.len())
            .or_else(|| {
                values
                    .iter()
                    .enumerate()
                    .max_by_key(|(_, v)| **v)
                    .map(|(i, _)| i)
            })
            .unwrap_or(0);
        let mut best = -INFINITE;
        let mut best_index: Option<usize> = None;
        let mut searched = 0usize;
        for k in 0..=moves.len() {
            let i = if k == 0 {
                first
            } else if k - 1 == first {
                continue;
            } else {
                k - 1
            };
            let Some(&mv) = moves.get(i) else { continue };
            if self.skipped_by_ban(node, mv) {
                continue;
            }
            let child_key = pos.key_after(mv);
            let (thought, twin) = match self.reach(pos, mv, child_key) {
                Reach::InFlight => continue,
                Reach::Leaf => (None, false),
                Reach::Thought(child, twin) => (Some(child), twin),
            };
            let (value, kind) = match thought {
                None => (
                    self.leaf_value(pos, node, i, mv, child_key, ply),
                    EdgeKind::Leaf,
                ),
                Some(child) => {
                    let scored = self.score_thought_child(
                        pos, mv, child, twin, alpha, beta, ply, pv_node, searched,
                    );
                    match scored {
                        Some(r) => r,
                        None => continue,
                    }
                }
            };
            searched += 1;
            if value > best {
                best = value;
                best_index = Some(i);
                if value > alpha {
                    if pv_node {
                        let (head, tail) = self.pv.split_at_mut(ply + 1);
                        let line = &mut head[ply];
                        line.clear();
                        line.push(PvEdge {
                            node,
                            mv,
                            kind,
                            twin,
                        });
                        if kind == EdgeKind::Node {
                            line.extend_from_slice(&tail[0]);
                        }
                    }
                    if value >= beta {
                        break;
                    }
                    alpha = value;
                }
            }
        }
        self.move_buffers[ply] = moves;
        let best_index = best_index?;
        if self.use_cache
            && let Some(slot) = self.cache.get_mut(node.index())
        {
            let bound = if best >= beta {
                Bound::Lower
            } else if pv_node && best > alpha_orig {
                Bound::Exact
            } else {
                Bound::Upper
            };
            let idx = u16::try_from(best_index).unwrap_or(NO_BEST).min(NO_BEST);
            *slot = CacheEntry {
                generation: self.generation,
                value: stera_rules::value::clamp_to_i16(to_node_relative(best, ply)),
                best_and_bound: idx | ((bound as u16) << 14),
            };
        }
        Some(best)
    }

    /// A leaf move's value: its stored value, plus the kifu bonus when the child
    /// or its colour-flipped twin is a kifu position (a kifu line reaches the same
    /// situation whichever colour it was recorded in).
    pub(crate) fn leaf_value(
        &self,
        pos: &Position,
        node: NodeId,
        index: usize,
        mv: Move,
        child_key: Key,
        ply: usize,
    ) -> i32 {
        let v = from_node_relative(i32::from(self.book.values(node)[index]), ply);
        if self.kifu.is_empty() || v.abs() >= MATE_IN_MAX_PLY {
            return v;
        }
        if self.kifu.contains(&child_key.0) || self.kifu.contains(&pos.flipped_key_after(mv).0) {
            (v + self.config.kifu_bonus).clamp(-MATE_IN_MAX_PLY + 1, MATE_IN_MAX_PLY - 1)
        } else {
            v
        }
    }

    /// What `mv` from `pos` (`child_key` its child's key) leads to. A child that
    /// is not thought but whose colour-flipped twin is (the same situation)
    /// leads to the twin, as in the export; a child that is in flight, or whose
    /// twin is, is skipped.
    fn reach(&self, pos: &Position, mv: Move, child_key: Key) -> Reach {
        let in_flight = |key: Key| !self.in_flight.is_empty() && self.in_flight.contains(&key.0);
        if in_flight(child_key) {
            return Reach::InFlight;
        }
        if let Some(child) = self.book.get(child_key) {
            return Reach::Thought(child, false);
        }
        let twin_key = pos.flipped_key_after(mv);
        if in_flight(twin_key) {
            return Reach::InFlight;
        }
        self.book
            .get(twin_key)
            .map_or(Reach::Leaf, |twin| Reach::Thought(twin, true))
    }

    /// Scores the thought node `child` that `mv` from `pos` leads to (its twin
    /// when `twin`), for the search at `ply` of `pos`'s node: without search when
    /// the line ends there, else by a (PVS) search; the value is `pos`'s view.
    /// A twin is searched on its own board; entering a twin the line already
    /// went through is a repetition.
    #[allow(clippy::too_many_arguments)]
    fn score_thought_child(
        &mut self,
        pos: &mut Position,
        mv: Move,
        child: NodeId,
        twin: bool,
        alpha: i32,
        beta: i32,
        ply: usize,
        pv_node: bool,
        searched: usize,
    ) -> Option<(i32, EdgeKind)> {
        if twin && self.twin_stack.contains(&child) {
            return Some((0, EdgeKind::Ends));
        }
        pos.do_move(mv);
        let mut twin_pos = None;
        if twin {
            twin_pos = Some(pos.flipped());
            let _ = pos.undo_move();
            self.twin_stack.push(child);
        }
        let at = twin_pos.as_mut().unwrap_or(pos);
        let scored = if let Some(v) = self.score_without_search(at, child, ply + 1) {
            Some((-v, EdgeKind::Ends))
        } else if !pv_node || searched == 0 {
            self.search(at, child, -beta, -alpha, ply + 1, pv_node)
                .map(|v| (-v, EdgeKind::Node))
        } else {
            match self.search(at, child, -alpha - 1, -alpha, ply + 1, false) {
                Some(v) if -v > alpha => self
                    .search(at, child, -beta, -alpha, ply + 1, true)
                    .map(|v| (-v, EdgeKind::Node)),
                other => other.map(|v| (-v, EdgeKind::Node)),
            }
        };
        if twin {
            self.twin_stack.pop();
        } else {
            let _ = pos.undo_move();
        }
        scored
    }

    /// Leaves next to `leaf`: the other leaf moves of its parent whose stored value
    /// is within `margin` of `leaf`'s, best first, at most `max`; they are in
    /// flight on return. Consecutive selections mostly pick these anyway (once the
    /// best leaf of a node is in flight, the next best often is the new PV), so a
    /// bulk grower can hand them out without a search each ("PV-guided batch").
    pub fn select_siblings(&mut self, leaf: &Leaf, max: usize, margin: i32) -> Vec<Leaf> {
        let Some((parent, leaf_move)) = leaf.parent else {
            return Vec::new();
        };
        if max == 0 || parent.index() >= self.book.len() {
            return Vec::new();
        }
        let mut parent_pos = leaf.position.clone();
        if parent_pos.undo_move().is_err() {
            return Vec::new();
        }
        let moves = parent_pos.legal_moves();
        let values = self.book.values(parent);
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
        let on_twin = self.path_ends_on_twin(leaf);
        let mut out = Vec::new();
        for (_, mv) in candidates {
            if out.len() >= max {
                break;
            }
            let key = parent_pos.key_after(mv);
            // Only a leaf as the search sees one: not thought, not in flight,
            // and neither is its colour-flipped twin.
            if self.skipped_by_ban(parent, mv)
                || !matches!(self.reach(&parent_pos, mv, key), Reach::Leaf)
            {
                continue;
            }
            let mut position = parent_pos.clone();
            position.do_move(mv);
            let mut path = leaf.path.clone();
            path.pop();
            path.push(if on_twin { mv.flipped() } else { mv });
            self.in_flight.insert(key.0);
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

    /// Whether `leaf.path`, played from its root, leads to the colour-flipped twin
    /// of `leaf.position` (the line went through an odd number of twins).
    fn path_ends_on_twin(&self, leaf: &Leaf) -> bool {
        let Some(mut real) = self.roots.get(leaf.root).cloned() else {
            return false;
        };
        for &mv in &leaf.path {
            if !real.is_legal(mv) {
                return false;
            }
            real.do_move(mv);
        }
        real.key() != leaf.key
    }

    /// Takes back one thought leaf: see [`Selector::complete_batch`].
    ///
    /// # Errors
    /// As [`Selector::complete_batch`].
    pub fn complete(&mut self, leaf: &Leaf, thought: Thought) -> Result<NodeId, BookError> {
        let ids = self.complete_batch(vec![(leaf.clone(), thought)])?;
        ids.into_iter()
            .next()
            .ok_or_else(|| BookError::Invalid("empty completion".into()))
    }

    /// Inserts the thought nodes of several leaves with one durable store write
    /// (group commit) and clears them from the in-flight set. A leaf whose
    /// position is already in the book keeps the existing node (its id is
    /// returned). Leaves not in flight (e.g. handed out before a restart) are
    /// accepted. Returns the node ids in input order.
    ///
    /// # Errors
    /// [`BookError::Invalid`] when a thought does not fit its leaf (value count,
    /// depth count, key) — then nothing of the batch is inserted — or a storage
    /// failure (nothing inserted, the leaves stay in flight).
    pub fn complete_batch(
        &mut self,
        items: Vec<(Leaf, Thought)>,
    ) -> Result<Vec<NodeId>, BookError> {
        let mut nodes: Vec<ThoughtNode> = Vec::with_capacity(items.len());
        let mut fresh: hashbrown::HashMap<u128, usize> = hashbrown::HashMap::new();
        for (leaf, thought) in &items {
            if leaf.position.key() != leaf.key {
                return Err(BookError::Invalid(format!(
                    "leaf key {} is not the key of `{}`",
                    leaf.key,
                    leaf.sfen()
                )));
            }
            if let Some((parent, _)) = leaf.parent
                && parent.index() >= self.book.len()
            {
                return Err(BookError::Invalid(format!(
                    "leaf `{}` names parent {parent}, not in the book",
                    leaf.sfen()
                )));
            }
            if self.book.contains(leaf.key) || fresh.contains_key(&leaf.key.0) {
                continue;
            }
            let evaluator = self.intern(&thought.evaluator)?;
            let node = ThoughtNode {
                key: leaf.key,
                origin: match leaf.parent {
                    Some((parent, mv)) => Origin::Child { parent, mv },
                    None => Origin::Sfen(leaf.position.to_sfen_without_ply()),
                },
                ply: u16::try_from(leaf.position.ply()).unwrap_or(u16::MAX),
                values: thought.values.clone(),
                depths: thought.depths.clone(),
                evaluator,
                timestamp: thought.timestamp,
            };
            node.check_against(&leaf.position)?;
            fresh.insert(leaf.key.0, nodes.len());
            nodes.push(node);
        }
        let first = self.store.append(&nodes)?;
        for (i, node) in nodes.iter().enumerate() {
            let id = self.book.insert(node)?;
            debug_assert_eq!(id.index(), first.index() + i);
        }
        self.cache.resize(self.book.len(), CacheEntry::default());
        let mut ids = Vec::with_capacity(items.len());
        for (leaf, _) in &items {
            self.in_flight.remove(&leaf.key.0);
            let id = self
                .book
                .get(leaf.key)
                .ok_or_else(|| BookError::Invalid(format!("leaf {} vanished", leaf.key)))?;
            ids.push(id);
        }
        Ok(ids)
    }

    fn intern(&mut self, identity: &str) -> Result<u16, BookError> {
        if let Some(&id) = self.evaluator_ids.get(identity) {
            return Ok(id);
        }
        let id = self.store.intern_evaluator(identity)?;
        self.evaluator_ids.insert(identity.to_owned(), id);
        Ok(id)
    }

    /// Puts a handed-out leaf back (its thinker gave up): it can be selected again.
    ///
    /// # Errors
    /// [`BookError::NotInFlight`] if it was not in flight.
    pub fn abandon(&mut self, leaf: &Leaf) -> Result<(), BookError> {
        self.abandon_key(leaf.key)
    }

    /// [`Selector::abandon`] by the leaf's key (when the leaf itself is gone).
    ///
    /// # Errors
    /// [`BookError::NotInFlight`] if no leaf with this key is in flight.
    pub fn abandon_key(&mut self, key: Key) -> Result<(), BookError> {
        if self.in_flight.remove(&key.0) {
            Ok(())
        } else {
            Err(BookError::NotInFlight(key))
        }
    }
}
