//! `SledStore::check`: a store read through, every table, for `book-tools
//! check`: what it holds, what its record says it must hold, and what is
//! missing or unreadable.

use std::collections::HashSet;
use std::path::Path;

use super::keys::{
    GAMES_RECORDED, QUARANTINE, chunk_count, chunk_first_id, decode_ban_key, decode_counts,
};
use super::whole::Holdings;
use super::{OpenMode, SledStore, store_error};
use crate::{BookError, NodeStore, Origin, RunConfig, ThoughtNode};
use stera_rules::Key;

/// At most this many problems are listed (the count says how many there were).
const MAX_LISTED: usize = 50;

/// What [`SledStore::check`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CheckReport {
    /// What the store holds (read through, not as its last chunk says).
    pub found: Holdings,
    /// What its record (`STERA-WHOLE`) says it must hold; `None` for a store
    /// made before stores kept one.
    pub recorded: Option<Holdings>,
    /// Node chunks (append batches not merged yet).
    pub chunks: u64,
    /// Banned edges and quarantine records.
    pub bans: u64,
    pub quarantined: u64,
    /// Positions with game counters.
    pub counted_positions: u64,
    /// What is missing or unreadable, at most 50 of them.
    pub problems: Vec<String>,
    /// Problems found, listed or not.
    pub problem_count: u64,
}

impl CheckReport {
    fn problem(&mut self, text: String) {
        self.problem_count += 1;
        if self.problems.len() < MAX_LISTED {
            self.problems.push(text);
        }
    }

    /// True when nothing is missing or unreadable.
    #[must_use]
    pub fn is_whole(&self) -> bool {
        self.problem_count == 0
    }
}

impl SledStore {
    /// Reads the store at `path` through: every node chunk and position
    /// (contiguous ids, decodable, unique keys, origins naming an earlier
    /// position), the kifu batches, evaluators and run configuration, bans and
    /// quarantine records (naming stored positions), the game counters and
    /// recorded games, and compares what it holds with its record of what it must
    /// hold. Writes nothing (an old store's record is not begun).
    ///
    /// # Errors
    /// What opening refuses: not a store, in use, or so damaged that sled cannot
    /// open it ([`BookError::Damaged`]).
    pub fn check(path: &Path) -> Result<CheckReport, BookError> {
        let store = Self::open_existing_as(path, OpenMode::Inspect)?;
        let mut report = CheckReport {
            recorded: store.inspected,
            ..CheckReport::default()
        };
        crate::sled_guard::guarded(path, || store.check_into(&mut report))?;
        Ok(report)
    }

    fn check_into(&self, report: &mut CheckReport) -> Result<(), BookError> {
        let found = self.check_nodes(report)?;
        let kifu_batches = self.check_kifu(report)?;
        let config = match self.meta.get("config").map_err(|e| self.err(e))? {
            Some(v) => {
                match std::str::from_utf8(&v)
                    .map_err(|_| "not UTF-8".to_owned())
                    .and_then(|t| RunConfig::from_text(t).map_err(|e| e.to_string()))
                {
                    Ok(_) => true,
                    Err(e) => {
                        report.problem(format!("the run configuration cannot be read: {e}"));
                        false
                    }
                }
            }
            None => false,
        };
        let games = self.check_games(report)?;
        report.bans = self.check_bans(&self.bans, "ban", found, report)?;
        let quarantine = self.db.open_tree(QUARANTINE).map_err(|e| self.err(e))?;
        report.quarantined = self.check_bans(&quarantine, "quarantine record", found, report)?;
        report.found = Holdings {
            nodes: found,
            kifu_batches,
            evaluators: u32::try_from(self.evaluators.len()).unwrap_or(u32::MAX),
            config,
            games,
            learning_games: self.check_learning(report)?,
        };
        if found != self.len {
            report.problem(format!(
                "{found} positions can be read, but its last node chunk ends at {}",
                self.len
            ));
        }
        if let Some(recorded) = report.recorded
            && let Some(missing) = recorded.missing_from(&report.found)
        {
            report.problem(format!(
                "it holds less than its record says was stored: {missing}"
            ));
        }
        // The store says it kept a record, and the record is gone: what every
        // other open refuses is no store "made before stores kept one".
        if report.recorded.is_none()
            && self
                .meta
                .contains_key(super::whole::RECORD_KEPT)
                .map_err(|e| self.err(e))?
        {
            report.problem(format!(
                "its record `{}` of what it must hold is missing (a copy that left it out?), so it cannot be told whole",
                super::whole::RECORD_FILE
            ));
        }
        Ok(())
    }

    /// Scans the node chunks; returns the positions read up to the first gap
    /// or unreadable record.
    fn check_nodes(&self, report: &mut CheckReport) -> Result<u32, BookError> {
        let mut expected = 0u32;
        let mut readable = None;
        let mut keys: HashSet<Key> = HashSet::new();
        for item in self.nodes.iter() {
            let (k, v) = item.map_err(|e| self.err(e))?;
            report.chunks += 1;
            let (first, count) = match (chunk_first_id(&k), chunk_count(&v)) {
                (Ok(first), Ok(count)) => (first, count),
                (Err(e), _) | (_, Err(e)) => {
                    report.problem(format!("a node chunk cannot be read: {e}"));
                    readable.get_or_insert(expected);
                    continue;
                }
            };
            if first != expected {
                report.problem(format!(
                    "positions {expected} to {} are missing (the chunk after them starts at {first})",
                    first.saturating_sub(1)
                ));
                readable.get_or_insert(expected);
            }
            let mut rest = &v[4..];
            for i in 0..count {
                let id = first.saturating_add(i);
                match ThoughtNode::decode(rest) {
                    Ok((node, tail)) => {
                        rest = tail;
                        if !keys.insert(node.key) {
                            report.problem(format!(
                                "position {id} has the key {} of an earlier position",
                                node.key
                            ));
                        }
                        if let Origin::Child { parent, .. } = node.origin
                            && parent.0 >= id
                        {
                            report.problem(format!(
                                "position {id} names parent {parent}, which is not stored before it"
                            ));
                        }
                        if usize::from(node.evaluator) >= self.evaluators.len() {
                            report.problem(format!(
                                "position {id} names evaluator {}, of {} stored",
                                node.evaluator,
                                self.evaluators.len()
                            ));
                        }
                    }
                    Err(e) => {
                        report.problem(format!("position {id} cannot be read: {e}"));
                        readable.get_or_insert(id);
                        rest = &[];
                        break;
                    }
                }
            }
            if !rest.is_empty() {
                report.problem(format!(
                    "the node chunk at {first} has {} bytes after its {count} records",
                    rest.len()
                ));
            }
            expected = first.saturating_add(count);
        }
        Ok(readable.unwrap_or(expected))
    }

    /// Checks the kifu batches (numbered from 0, whole keys); returns their count.
    fn check_kifu(&self, report: &mut CheckReport) -> Result<u32, BookError> {
        let mut next = 0u32;
        let mut whole = None;
        for item in self.kifu.iter() {
            let (k, v) = item.map_err(|e| self.err(e))?;
            let Ok(number) = chunk_first_id(&k) else {
                report.problem(format!("a kifu batch has a key of {} bytes", k.len()));
                continue;
            };
            if number != next {
                report.problem(format!(
                    "kifu batches {next} to {} are missing",
                    number.saturating_sub(1)
                ));
                whole.get_or_insert(next);
            }
            if v.len() % 16 != 0 {
                report.problem(format!("kifu batch {number} holds {} bytes", v.len()));
            }
            next = number.saturating_add(1);
        }
        Ok(whole.unwrap_or(next))
    }

    /// Checks the game counters and recorded game ids; returns the games the
    /// store counts (its `n`).
    /// The learning games: every opponent's counters readable, one game id per
    /// game counted. Returns the games the per-opponent counts add up to.
    fn check_learning(&self, report: &mut CheckReport) -> Result<u64, BookError> {
        let opponents = self.opponents()?;
        if opponents.is_empty() {
            // No opponent was ever registered (their identities live in `meta`,
            // checked above): there is nothing to read, and the tree may be no
            // more than sled's empty root.
            return Ok(0);
        }
        let mut counted = 0u64;
        for o in &opponents {
            counted = counted.saturating_add(o.games);
            let mut bad = None;
            if let Err(e) = self.for_each_learning_count(o.id, &mut |_, _| {}) {
                bad = Some(e);
            }
            if let Some(e) = bad {
                report.problem(format!("learning counters against opponent {}: {e}", o.id));
            }
        }
        let ids = self
            .learning
            .as_ref()
            .map_or(0, |t| t.scan_prefix(b"g").count() as u64);
        if ids != counted {
            report.problem(format!(
                "{ids} learning game ids, but the opponents' game counts add up to {counted}"
            ));
        }
        Ok(counted)
    }

    fn check_games(&self, report: &mut CheckReport) -> Result<u64, BookError> {
        let mut ids = 0u64;
        let mut recorded = 0u64;
        for item in self.games.iter() {
            let (k, v) = item.map_err(|e| self.err(e))?;
            match k.first() {
                Some(b'c') => {
                    report.counted_positions += 1;
                    let key = k
                        .get(1..)
                        .and_then(|b| <[u8; 16]>::try_from(b).ok())
                        .map(Key::from_bytes);
                    match key {
                        Some(key) => {
                            if let Err(e) = decode_counts(key, &v) {
                                report.problem(format!("game counters: {e}"));
                            }
                        }
                        None => report.problem(format!("a game counter key of {} bytes", k.len())),
                    }
                }
                Some(b'g') if k.len() == 9 => ids += 1,
                _ if k.as_ref() == GAMES_RECORDED => match <[u8; 8]>::try_from(v.as_ref()) {
                    Ok(b) => recorded = u64::from_le_bytes(b),
                    Err(_) => report.problem(format!("the game count is {} bytes", v.len())),
                },
                _ => report.problem(format!("an unknown key of {} bytes in `games`", k.len())),
            }
        }
        if ids != recorded {
            report.problem(format!(
                "{ids} game ids are stored, but the game count says {recorded}"
            ));
        }
        Ok(recorded.min(ids))
    }

    /// Checks the keys of a tree of banned edges (`bans`, `quarantine`).
    fn check_bans(
        &self,
        tree: &sled::Tree,
        what: &str,
        nodes: u32,
        report: &mut CheckReport,
    ) -> Result<u64, BookError> {
        let mut count = 0u64;
        for item in tree.iter() {
            let (k, _) = item.map_err(|e| store_error(&self.path, e))?;
            count += 1;
            match decode_ban_key(&k) {
                Ok((node, _)) if node.0 >= nodes => {
                    report.problem(format!("a {what} names position {node}, of {nodes} stored"))
                }
                Ok(_) => {}
                Err(e) => report.problem(format!("a {what}: {e}")),
            }
        }
        Ok(count)
    }
}
