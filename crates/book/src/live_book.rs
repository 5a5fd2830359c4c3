//! The live book: what a run writes into and selection reads. The store, the
//! in-memory [`Book`] over it, the roots, the leaves in flight, the banned edges
//! and the kifu positions. It is apart from the [`Selector`](crate::Selector),
//! which keeps only search state and borrows a `LiveBook` per call, so the one
//! owner of the book (the coordinator's dispatcher) lends it to every job kind:
//! selection reads it, think results and game results write into it.

use hashbrown::{HashMap, HashSet};
use stera_rules::{Key, Move, Position};

use crate::bitset::BitSet;
use crate::{Book, BookError, NodeId, NodeStore, Origin, RunConfig, Thought, ThoughtNode};

/// What a move of a thought node leads to, for selection.
pub(crate) enum Reach {
    /// The child, or its colour-flipped twin, is being thought: skip the move.
    InFlight,
    /// Neither the child nor its twin is thought: a leaf.
    Leaf,
    /// A thought node: the child itself, or (`true`) the child's twin.
    Thought(NodeId, bool),
}

/// See [`LiveBook::root_start`].
pub(crate) enum RootStart {
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

#[inline]
fn ban_code(node: NodeId, mv: Move) -> u64 {
    (u64::from(node.0) << 16) | u64::from(mv.raw())
}

/// The book a run grows: store, in-memory book, roots, in-flight set, bans and
/// kifu. Every write goes to the store first (durable), then into memory.
pub struct LiveBook<S: NodeStore> {
    store: S,
    book: Book,
    config: RunConfig,
    roots: Vec<Position>,
    in_flight: HashSet<u128>,
    banned: HashSet<u64>,
    /// One bit per node: has at least one banned move (saves a hash probe per move).
    banned_nodes: BitSet,
    kifu: HashSet<u128>,
    evaluator_ids: HashMap<String, u16>,
    /// Centipawns a leaf move counts below its stored value in selection.
    leaf_discount: i32,
}

impl<S: NodeStore> std::fmt::Debug for LiveBook<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "LiveBook({} nodes, {} roots, {} in flight)",
            self.book.len(),
            self.roots.len(),
            self.in_flight.len()
        )
    }
}

impl<S: NodeStore> LiveBook<S> {
    /// Opens the live book over `store`, rebuilding the in-memory book. `config`
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
        let mut live = Self {
            banned_nodes: BitSet::with_len(book.len()),
            book,
            config,
            roots,
            in_flight: HashSet::new(),
            banned: HashSet::new(),
            kifu: HashSet::new(),
            evaluator_ids: HashMap::new(),
            leaf_discount: 0,
            store,
        };
        for (node, mv) in live.store.bans()? {
            live.mark_banned(node, mv);
        }
        for k in live.store.kifu_keys()? {
            live.kifu.insert(k.0);
        }
        for (i, e) in live.store.evaluators()?.into_iter().enumerate() {
            let id = u16::try_from(i).map_err(|_| BookError::Corrupt("evaluators".into()))?;
            live.evaluator_ids.insert(e, id);
        }
        Ok(live)
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

    /// The roots, parsed (index as in [`RunConfig::roots`]).
    #[must_use]
    pub fn roots(&self) -> &[Position] {
        &self.roots
    }

    /// Number of leaves handed out and not yet completed or abandoned.
    #[must_use]
    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    /// Marks a leaf found by selection as being thought.
    pub(crate) fn mark_in_flight(&mut self, key: Key) {
        self.in_flight.insert(key.0);
    }

    /// True if `(node, mv)` is banned.
    #[must_use]
    pub fn is_banned(&self, node: NodeId, mv: Move) -> bool {
        self.banned.contains(&ban_code(node, mv))
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
        self.banned_nodes.insert(node.index());
    }

    /// Bans `mv` at `node` for all later selections (persisted).
    ///
    /// # Errors
    /// Storage failure.
    pub fn ban(&mut self, node: NodeId, mv: Move) -> Result<(), BookError> {
        self.store.ban(node, mv)?;
        self.mark_banned(node, mv);
        Ok(())
    }

    /// True if selection skips `(node, mv)`: the bitset answers most moves
    /// without a hash probe.
    #[inline]
    pub(crate) fn skipped_by_ban(&self, node: NodeId, mv: Move) -> bool {
        self.banned_nodes.contains(node.index()) && self.banned.contains(&ban_code(node, mv))
    }

    /// A leaf move's value: its stored value, plus the kifu bonus when the child
    /// or its colour-flipped twin is a kifu position (a kifu line reaches the same
    /// situation whichever colour it was recorded in). `from_node_relative`
    /// converts the stored value to the search's root-relative scale.
    pub(crate) fn leaf_value(
        &self,
        node: NodeId,
        index: usize,
        child_key: Key,
        twin_key: impl FnOnce() -> Key,
        stored_to_search: impl Fn(i32) -> i32,
    ) -> i32 {
        let v = stored_to_search(i32::from(self.book.values(node)[index]));
        let to_kifu = !self.kifu.is_empty()
            && (self.kifu.contains(&child_key.0) || self.kifu.contains(&twin_key().0));
        let bonus = if to_kifu { self.config.kifu_bonus } else { 0 };
        stera_rules::value::shift_non_mate(v, bonus - self.leaf_discount)
    }

    /// Selection counts every leaf move (into a position not thought) `cp`
    /// centipawns below its stored value, mates excepted, as an export with the
    /// same discount does (`BookGraph::set_leaf_discount` says why). 0, the
    /// default, is the reference method. Set it before selecting: cached
    /// search results of another discount are not told apart.
    pub fn set_leaf_discount(&mut self, cp: i16) {
        self.leaf_discount = i32::from(cp);
    }

    /// True if the position with `key` is being thought.
    #[inline]
    pub(crate) fn in_flight_contains(&self, key: Key) -> bool {
        !self.in_flight.is_empty() && self.in_flight.contains(&key.0)
    }

    /// What `mv` from `pos` (`child_key` its child's key) leads to. A child that
    /// is not thought but whose colour-flipped twin is (the same situation)
    /// leads to the twin, as in the export; a child that is in flight, or whose
    /// twin is, is skipped.
    pub(crate) fn reach(&self, pos: &Position, mv: Move, child_key: Key) -> Reach {
        let in_flight = |key: Key| self.in_flight_contains(key);
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

    /// Where the search from root `root` begins. A root that is not thought but
    /// whose colour-flipped twin is, is searched as the twin, on the twin's board
    /// (as any move into it is).
    pub(crate) fn root_start(&self, root: usize) -> RootStart {
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

    /// Whether `leaf.path`, played from its root, leads to the colour-flipped twin
    /// of `leaf.position` (the line went through an odd number of twins).
    pub(crate) fn path_ends_on_twin(&self, leaf: &Leaf) -> bool {
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

    /// A leaf for the position after `mv` in `parent`, a position the book holds
    /// as itself: where a game left the book (growth aimed at where games go).
    /// `None` when the move is banned or not legal, the child (or its
    /// colour-flipped twin) is thought or in flight, it has no legal move, or it
    /// lies beyond the run's ply limit. The leaf is marked in flight; it carries
    /// no line from a root (`path` is empty, `root` 0).
    pub fn claim_child(&mut self, parent: &Position, mv: Move) -> Option<Leaf> {
        let parent_id = self.book.get(parent.key())?;
        if !parent.is_legal(mv) || self.is_banned(parent_id, mv) {
            return None;
        }
        let key = parent.key_after(mv);
        let twin = parent.flipped_key_after(mv);
        if self.book.get_or_twin(key, twin).is_some()
            || self.in_flight.contains(&key.0)
            || self.in_flight.contains(&twin.0)
        {
            return None;
        }
        let mut position = parent.clone();
        position.do_move(mv);
        if position.ply() > self.config.ply_limit || position.legal_moves().is_empty() {
            return None;
        }
        self.in_flight.insert(key.0);
        Some(Leaf {
            root: 0,
            path: Vec::new(),
            parent: Some((parent_id, mv)),
            key,
            position,
        })
    }

    /// Takes back one thought leaf: see [`LiveBook::complete_batch`].
    ///
    /// # Errors
    /// As [`LiveBook::complete_batch`].
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
        let mut fresh: HashMap<u128, usize> = HashMap::new();
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

    /// [`LiveBook::abandon`] by the leaf's key (when the leaf itself is gone).
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

/// A position handed out for thinking.
#[derive(Debug, Clone)]
pub struct Leaf {
    /// Index of the root (in [`RunConfig::roots`](crate::RunConfig::roots)) it
    /// was found from.
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
