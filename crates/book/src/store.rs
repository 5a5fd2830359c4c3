//! What the book persists, behind a trait: thought nodes (append-only), banned
//! (node, move) pairs, the kifu key set, interned evaluator identities, the run
//! configuration and the results of games played through book positions
//! ([`GameCounts`] per position, plus the ids of the games counted). [`crate::SledStore`] is the durable implementation,
//! [`MemoryStore`] the one for tests and throw-away runs.

use std::collections::{BTreeMap, BTreeSet};

use stera_rules::{Key, Move};

use crate::{BookError, GameCounts, NodeId, OpponentId, OpponentRecord, ThoughtNode};

/// Selection settings that belong to a book run and persist with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunConfig {
    /// Root position commands (`startpos`, `startpos moves ...`, `sfen ...`).
    pub roots: Vec<String>,
    /// Added to a leaf move's value during selection when it leads to a kifu position.
    pub kifu_bonus: i32,
    /// Game ply at which a line scores as a draw.
    pub ply_limit: u32,
    /// Leaves taken from one root before moving to the next; the search cache is
    /// reused within such a turn (a new generation starts with every turn).
    pub leaves_per_turn: u32,
}

impl Default for RunConfig {
    /// The reference defaults: startpos and its 30 children, bonus 100, ply 512,
    /// 100 leaves per root per round (the reference's later setting).
    fn default() -> Self {
        let start = stera_rules::Position::startpos();
        let mut roots = vec!["startpos".to_owned()];
        roots.extend(
            start
                .legal_moves()
                .iter()
                .map(|m| format!("startpos moves {m}")),
        );
        Self {
            roots,
            kifu_bonus: 100,
            ply_limit: 512,
            leaves_per_turn: 100,
        }
    }
}

impl RunConfig {
    /// Text form: one `name value` per line, roots as repeated `root` lines.
    #[must_use]
    pub fn to_text(&self) -> String {
        let mut s = format!(
            "kifu_bonus {}\nply_limit {}\nleaves_per_turn {}\n",
            self.kifu_bonus, self.ply_limit, self.leaves_per_turn
        );
        for r in &self.roots {
            s.push_str("root ");
            s.push_str(r);
            s.push('\n');
        }
        s
    }

    /// Parses [`RunConfig::to_text`].
    ///
    /// # Errors
    /// [`BookError::Corrupt`] naming the bad line.
    pub fn from_text(text: &str) -> Result<Self, BookError> {
        let mut c = Self {
            roots: Vec::new(),
            ..Self::default()
        };
        for (i, line) in text.lines().enumerate() {
            let bad = || BookError::Corrupt(format!("run config line {}: `{line}`", i + 1));
            let (name, value) = line.split_once(' ').ok_or_else(bad)?;
            match name {
                "kifu_bonus" => c.kifu_bonus = value.parse().map_err(|_| bad())?,
                "ply_limit" => c.ply_limit = value.parse().map_err(|_| bad())?,
                "leaves_per_turn" => c.leaves_per_turn = value.parse().map_err(|_| bad())?,
                "root" => c.roots.push(value.to_owned()),
                _ => return Err(bad()),
            }
        }
        Ok(c)
    }
}

/// The most roots a run may have (ARCHITECTURE.md, "Limits on input"): every
/// root costs the selector and the game openings memory and a search per turn,
/// and 200,000 roots took gigabytes before anything was thought.
pub const MAX_ROOTS: usize = 10_000;

/// Checks what a run's roots must be: at most [`MAX_ROOTS`], each a position
/// whose moves can be thought (its ply below the run's ply limit and
/// [`stera_rules::MAX_PLY`]: a root at ply 10,000 had every child refused by the
/// workers, and the run stalled).
///
/// # Errors
/// [`BookError::Invalid`] naming the first bad root; [`BookError::Root`] for a
/// root that is no position.
pub fn check_roots(config: &RunConfig) -> Result<Vec<stera_rules::Position>, BookError> {
    if config.roots.len() > MAX_ROOTS {
        return Err(BookError::Invalid(format!(
            "{} roots, more than the limit of {MAX_ROOTS} (MAX_ROOTS)",
            config.roots.len()
        )));
    }
    let limit = config.ply_limit.min(stera_rules::MAX_PLY - 1);
    config
        .roots
        .iter()
        .enumerate()
        .map(|(index, text)| {
            let pos = stera_rules::Position::from_position_command(text).map_err(|source| {
                BookError::Root {
                    index,
                    text: text.clone(),
                    source,
                }
            })?;
            if pos.ply() > limit {
                return Err(BookError::Invalid(format!(
                    "root {index} (`{}`) is at ply {}, beyond the ply limit {limit}: its moves could never be thought",
                    stera_rules::excerpt(text),
                    pos.ply()
                )));
            }
            Ok(pos)
        })
        .collect()
}

/// Persistence for a book. Node ids are dense and given in append order.
pub trait NodeStore {
    /// Appends `nodes` with ids `len()..len()+nodes.len()` and returns the first id.
    /// The nodes are durable when this returns: a crash (even SIGKILL or power
    /// loss, as far as the disk honours fsync) afterwards does not lose them.
    ///
    /// # Errors
    /// Encoding or storage failure; nothing is appended then.
    fn append(&mut self, nodes: &[ThoughtNode]) -> Result<NodeId, BookError>;

    /// Number of stored nodes (the next id).
    fn len(&self) -> u32;

    /// True when no node is stored.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Visits every node in id order.
    ///
    /// # Errors
    /// Storage failure, corrupt data, or an error returned by `visit`.
    fn for_each_node(
        &self,
        visit: &mut dyn FnMut(NodeId, ThoughtNode) -> Result<(), BookError>,
    ) -> Result<(), BookError>;

    /// Records that `mv` of `node` must not be selected again. Durable with the
    /// next [`NodeStore::append`] or [`NodeStore::flush`]: a ban lost in a crash is
    /// found again by the next selection that meets it.
    ///
    /// # Errors
    /// Storage failure.
    fn ban(&mut self, node: NodeId, mv: Move) -> Result<(), BookError>;

    /// Every banned pair.
    ///
    /// # Errors
    /// Storage failure or corrupt data.
    fn bans(&self) -> Result<Vec<(NodeId, Move)>, BookError>;

    /// Records why the (already banned) edge `mv` of `node` was quarantined: its
    /// position failed to evaluate on several workers. `note` is free text (the
    /// position's SFEN, a tab, the reason). Stores that keep no notes ignore it.
    ///
    /// # Errors
    /// Storage failure.
    fn record_quarantine(
        &mut self,
        _node: NodeId,
        _mv: Move,
        _note: &str,
    ) -> Result<(), BookError> {
        Ok(())
    }

    /// Every quarantined edge with its note.
    ///
    /// # Errors
    /// Storage failure or corrupt data.
    fn quarantined(&self) -> Result<Vec<(NodeId, Move, String)>, BookError> {
        Ok(Vec::new())
    }

    /// Lifts the ban of `mv` of `node` (and its quarantine record); true when
    /// there was one. The selector bans an edge again when it meets one that
    /// still cannot be thought.
    ///
    /// # Errors
    /// Storage failure, or a store that cannot lift bans.
    fn unban(&mut self, node: NodeId, mv: Move) -> Result<bool, BookError> {
        let _ = (node, mv);
        Err(BookError::Invalid("this store cannot lift bans".to_owned()))
    }

    /// Adds positions from game records (durable on return).
    ///
    /// # Errors
    /// Storage failure.
    fn add_kifu_keys(&mut self, keys: &[Key]) -> Result<(), BookError>;

    /// Every kifu key added so far (duplicates possible).
    ///
    /// # Errors
    /// Storage failure or corrupt data.
    fn kifu_keys(&self) -> Result<Vec<Key>, BookError>;

    /// The id of an evaluator identity, assigning (durably) a new one if needed.
    ///
    /// # Errors
    /// Storage failure, or more than 65,536 identities.
    fn intern_evaluator(&mut self, identity: &str) -> Result<u16, BookError>;

    /// Every interned identity, indexed by id.
    ///
    /// # Errors
    /// Storage failure or corrupt data.
    fn evaluators(&self) -> Result<Vec<String>, BookError>;

    /// Stores the run configuration (durable on return).
    ///
    /// # Errors
    /// Storage failure.
    fn save_config(&mut self, config: &RunConfig) -> Result<(), BookError>;

    /// The stored run configuration, if any.
    ///
    /// # Errors
    /// Storage failure or corrupt data.
    fn config(&self) -> Result<Option<RunConfig>, BookError>;

    /// Makes everything written so far durable.
    ///
    /// # Errors
    /// Storage failure.
    fn flush(&mut self) -> Result<(), BookError>;

    /// Counts one game: adds each position's counts (from that position's side to
    /// move's view) to its stored counters, unless `game_id` was recorded before;
    /// then nothing changes and it returns `false`. A key listed twice is added
    /// twice. All or nothing, and durable when it returns `true`.
    ///
    /// `game_id` must be unique over the store's whole life, not only over one
    /// process (see [`NodeStore::max_game_id`]). Called from one thread.
    ///
    /// # Errors
    /// Storage failure or corrupt stored counters; nothing is recorded then.
    fn record_game(
        &mut self,
        game_id: u64,
        counts: &[(Key, GameCounts)],
    ) -> Result<bool, BookError>;

    /// The counters of a position (zero when no game was counted there).
    ///
    /// # Errors
    /// Storage failure or corrupt data.
    fn game_counts(&self, key: Key) -> Result<GameCounts, BookError>;

    /// How many distinct game ids were recorded.
    ///
    /// # Errors
    /// Storage failure or corrupt data.
    fn games_recorded(&self) -> Result<u64, BookError>;

    /// The largest recorded game id, if any (where a new process can start its
    /// ids so that they never repeat an earlier run's).
    ///
    /// # Errors
    /// Storage failure or corrupt data.
    fn max_game_id(&self) -> Result<Option<u64>, BookError>;

    /// Calls `f` with every position that has counters, in key order.
    ///
    /// # Errors
    /// Storage failure or corrupt data.
    fn for_each_game_count(&self, f: &mut dyn FnMut(Key, GameCounts)) -> Result<(), BookError>;

    /// Registers a learning opponent (engine identity and budget) and returns its
    /// id; an identity met before keeps its id. Durable when it returns.
    ///
    /// # Errors
    /// An identity [`crate::check_opponent_identity`] refuses, more than 65,536
    /// opponents, storage failure.
    fn intern_opponent(&mut self, identity: &str) -> Result<OpponentId, BookError>;

    /// The learning opponents, in id order, with the games counted against each.
    ///
    /// # Errors
    /// Storage failure or corrupt data.
    fn opponents(&self) -> Result<Vec<OpponentRecord>, BookError>;

    /// Counts one learning game against `opponent` (see [`crate::opponents`]):
    /// like [`NodeStore::record_game`], on counters of that opponent only, never
    /// the self-play ones. Game ids share one space with `record_game`'s
    /// ([`NodeStore::max_game_id`] covers both); an id recorded before changes
    /// nothing and returns `false`. All or nothing, durable when it returns `true`.
    ///
    /// # Errors
    /// An opponent not interned, storage failure; nothing is recorded then.
    fn record_learning_game(
        &mut self,
        opponent: OpponentId,
        game_id: u64,
        counts: &[(Key, GameCounts)],
    ) -> Result<bool, BookError>;

    /// Calls `f` with every position that has learning counters against `opponent`.
    ///
    /// # Errors
    /// Storage failure or corrupt data.
    fn for_each_learning_count(
        &self,
        opponent: OpponentId,
        f: &mut dyn FnMut(Key, GameCounts),
    ) -> Result<(), BookError>;
}

/// A store in memory (tests, dry runs). Same contract, no durability.
#[derive(Debug, Default)]
pub struct MemoryStore {
    nodes: Vec<ThoughtNode>,
    bans: Vec<(NodeId, Move)>,
    kifu: Vec<Key>,
    evaluators: Vec<String>,
    config: Option<RunConfig>,
    game_counts: BTreeMap<Key, GameCounts>,
    game_ids: BTreeSet<u64>,
    opponents: Vec<OpponentRecord>,
    learning_counts: BTreeMap<(OpponentId, Key), GameCounts>,
}

impl MemoryStore {
    /// An empty store.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }
}

impl NodeStore for MemoryStore {
    fn append(&mut self, nodes: &[ThoughtNode]) -> Result<NodeId, BookError> {
        let first = self.len();
        u32::try_from(self.nodes.len() + nodes.len())
            .map_err(|_| BookError::Full("more than 2^32 nodes".to_owned()))?;
        self.nodes.extend_from_slice(nodes);
        Ok(NodeId(first))
    }

    fn len(&self) -> u32 {
        u32::try_from(self.nodes.len()).unwrap_or(u32::MAX)
    }

    fn for_each_node(
        &self,
        visit: &mut dyn FnMut(NodeId, ThoughtNode) -> Result<(), BookError>,
    ) -> Result<(), BookError> {
        for (i, n) in self.nodes.iter().enumerate() {
            visit(NodeId(u32::try_from(i).unwrap_or(u32::MAX)), n.clone())?;
        }
        Ok(())
    }

    fn ban(&mut self, node: NodeId, mv: Move) -> Result<(), BookError> {
        self.bans.push((node, mv));
        Ok(())
    }

    fn bans(&self) -> Result<Vec<(NodeId, Move)>, BookError> {
        Ok(self.bans.clone())
    }

    fn add_kifu_keys(&mut self, keys: &[Key]) -> Result<(), BookError> {
        self.kifu.extend_from_slice(keys);
        Ok(())
    }

    fn kifu_keys(&self) -> Result<Vec<Key>, BookError> {
        Ok(self.kifu.clone())
    }

    fn intern_evaluator(&mut self, identity: &str) -> Result<u16, BookError> {
        if let Some(i) = self.evaluators.iter().position(|e| e == identity) {
            return u16::try_from(i).map_err(|_| BookError::Full("evaluators".into()));
        }
        let id = u16::try_from(self.evaluators.len())
            .map_err(|_| BookError::Full("more than 65,536 evaluators".into()))?;
        self.evaluators.push(identity.to_owned());
        Ok(id)
    }

    fn evaluators(&self) -> Result<Vec<String>, BookError> {
        Ok(self.evaluators.clone())
    }

    fn save_config(&mut self, config: &RunConfig) -> Result<(), BookError> {
        self.config = Some(config.clone());
        Ok(())
    }

    fn config(&self) -> Result<Option<RunConfig>, BookError> {
        Ok(self.config.clone())
    }

    fn flush(&mut self) -> Result<(), BookError> {
        Ok(())
    }

    fn record_game(
        &mut self,
        game_id: u64,
        counts: &[(Key, GameCounts)],
    ) -> Result<bool, BookError> {
        if !self.game_ids.insert(game_id) {
            return Ok(false);
        }
        for &(key, c) in counts {
            self.game_counts.entry(key).or_default().add(c);
        }
        Ok(true)
    }

    fn game_counts(&self, key: Key) -> Result<GameCounts, BookError> {
        Ok(self.game_counts.get(&key).copied().unwrap_or_default())
    }

    fn games_recorded(&self) -> Result<u64, BookError> {
        Ok(self.game_ids.len() as u64)
    }

    fn max_game_id(&self) -> Result<Option<u64>, BookError> {
        Ok(self.game_ids.last().copied())
    }

    fn for_each_game_count(&self, f: &mut dyn FnMut(Key, GameCounts)) -> Result<(), BookError> {
        for (&key, &c) in &self.game_counts {
            f(key, c);
        }
        Ok(())
    }

    fn intern_opponent(&mut self, identity: &str) -> Result<OpponentId, BookError> {
        crate::check_opponent_identity(identity)?;
        if let Some(o) = self.opponents.iter().find(|o| o.identity == identity) {
            return Ok(o.id);
        }
        let id = OpponentId(
            u16::try_from(self.opponents.len())
                .map_err(|_| BookError::Full("more than 65,536 opponents".into()))?,
        );
        self.opponents.push(OpponentRecord {
            id,
            identity: identity.to_owned(),
            games: 0,
        });
        Ok(id)
    }

    fn opponents(&self) -> Result<Vec<OpponentRecord>, BookError> {
        Ok(self.opponents.clone())
    }

    fn record_learning_game(
        &mut self,
        opponent: OpponentId,
        game_id: u64,
        counts: &[(Key, GameCounts)],
    ) -> Result<bool, BookError> {
        let record = self
            .opponents
            .get_mut(usize::from(opponent.0))
            .ok_or_else(|| BookError::Invalid(format!("no learning opponent {opponent}")))?;
        if !self.game_ids.insert(game_id) {
            return Ok(false);
        }
        record.games += 1;
        for &(key, c) in counts {
            self.learning_counts
                .entry((opponent, key))
                .or_default()
                .add(c);
        }
        Ok(true)
    }

    fn for_each_learning_count(
        &self,
        opponent: OpponentId,
        f: &mut dyn FnMut(Key, GameCounts),
    ) -> Result<(), BookError> {
        for (&(o, key), &c) in &self.learning_counts {
            if o == opponent {
                f(key, c);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_config_has_startpos_and_its_children_and_round_trips() {
        let c = RunConfig::default();
        assert_eq!(c.roots.len(), 31);
        assert_eq!(c.roots[0], "startpos");
        assert!(c.roots.contains(&"startpos moves 7g7f".to_owned()));
        assert_eq!(RunConfig::from_text(&c.to_text()).unwrap(), c);
        assert!(RunConfig::from_text("ply_limit x\n").is_err());
        assert!(RunConfig::from_text("colour blue\n").is_err());
    }
}

/// A store seen without changing it: reads go to `S`; bans the selector finds are
/// kept in memory; every other write is refused. What `book-tools next` selects
/// through, so that asking which positions come next never alters a book.
#[derive(Debug)]
pub struct DryRun<S> {
    inner: S,
    bans: Vec<(NodeId, Move)>,
}

impl<S: NodeStore> DryRun<S> {
    /// Wraps `inner`.
    pub fn new(inner: S) -> Self {
        Self {
            inner,
            bans: Vec::new(),
        }
    }

    /// The bans found since the wrap (not written to the store).
    #[must_use]
    pub fn new_bans(&self) -> &[(NodeId, Move)] {
        &self.bans
    }

    fn refuse<T>(what: &str) -> Result<T, BookError> {
        Err(BookError::Invalid(format!(
            "{what}: this store is opened for a dry run and is not changed"
        )))
    }
}

impl<S: NodeStore> NodeStore for DryRun<S> {
    fn append(&mut self, _: &[ThoughtNode]) -> Result<NodeId, BookError> {
        Self::refuse("append")
    }
    fn len(&self) -> u32 {
        self.inner.len()
    }
    fn for_each_node(
        &self,
        visit: &mut dyn FnMut(NodeId, ThoughtNode) -> Result<(), BookError>,
    ) -> Result<(), BookError> {
        self.inner.for_each_node(visit)
    }
    fn ban(&mut self, node: NodeId, mv: Move) -> Result<(), BookError> {
        self.bans.push((node, mv));
        Ok(())
    }
    fn quarantined(&self) -> Result<Vec<(NodeId, Move, String)>, BookError> {
        self.inner.quarantined()
    }

    fn bans(&self) -> Result<Vec<(NodeId, Move)>, BookError> {
        let mut all = self.inner.bans()?;
        all.extend_from_slice(&self.bans);
        Ok(all)
    }
    fn add_kifu_keys(&mut self, _: &[Key]) -> Result<(), BookError> {
        Self::refuse("adding kifu positions")
    }
    fn kifu_keys(&self) -> Result<Vec<Key>, BookError> {
        self.inner.kifu_keys()
    }
    fn intern_evaluator(&mut self, identity: &str) -> Result<u16, BookError> {
        match self.inner.evaluators()?.iter().position(|e| e == identity) {
            Some(i) => u16::try_from(i).map_err(|_| BookError::Corrupt("evaluator id".into())),
            None => Self::refuse("a new evaluator"),
        }
    }
    fn evaluators(&self) -> Result<Vec<String>, BookError> {
        self.inner.evaluators()
    }
    fn save_config(&mut self, _: &RunConfig) -> Result<(), BookError> {
        Self::refuse("saving the run configuration")
    }
    fn config(&self) -> Result<Option<RunConfig>, BookError> {
        self.inner.config()
    }
    fn flush(&mut self) -> Result<(), BookError> {
        Ok(())
    }
    fn record_game(&mut self, _: u64, _: &[(Key, GameCounts)]) -> Result<bool, BookError> {
        Self::refuse("recording a game")
    }
    fn game_counts(&self, key: Key) -> Result<GameCounts, BookError> {
        self.inner.game_counts(key)
    }
    fn games_recorded(&self) -> Result<u64, BookError> {
        self.inner.games_recorded()
    }
    fn max_game_id(&self) -> Result<Option<u64>, BookError> {
        self.inner.max_game_id()
    }
    fn for_each_game_count(&self, f: &mut dyn FnMut(Key, GameCounts)) -> Result<(), BookError> {
        self.inner.for_each_game_count(f)
    }
    fn intern_opponent(&mut self, identity: &str) -> Result<OpponentId, BookError> {
        match self
            .inner
            .opponents()?
            .iter()
            .find(|o| o.identity == identity)
        {
            Some(o) => Ok(o.id),
            None => Self::refuse("a new learning opponent"),
        }
    }
    fn opponents(&self) -> Result<Vec<OpponentRecord>, BookError> {
        self.inner.opponents()
    }
    fn record_learning_game(
        &mut self,
        _: OpponentId,
        _: u64,
        _: &[(Key, GameCounts)],
    ) -> Result<bool, BookError> {
        Self::refuse("recording a learning game")
    }
    fn for_each_learning_count(
        &self,
        opponent: OpponentId,
        f: &mut dyn FnMut(Key, GameCounts),
    ) -> Result<(), BookError> {
        self.inner.for_each_learning_count(opponent, f)
    }
}
