//! Learning opponents: who the book's learning games were played against.
//!
//! A learned move wins against someone: an engine at a budget. The counters of
//! learning games are kept per opponent ([`NodeStore::record_learning_game`]),
//! apart from the self-play counters of the coordinator's self-play games
//! ([`NodeStore::record_game`]), so that a run against another opponent (another
//! engine, or the same engine at another budget) never mixes silently into an
//! earlier one, and a reader chooses which opponents' games it trusts
//! ([`OpponentSelection`]): one, a list, or the whole pool (their counters added).
//!
//! An opponent is named by its identity text: the engine's identity (as its
//! `Player` reports it) and its budget, e.g. `stera-builtin 0.1.0 (hce) at 1000
//! nodes`. The store numbers identities densely from 0 ([`OpponentId`]).
//!
//! ```
//! use stera_book::{MemoryStore, NodeStore, OpponentSelection, GameCounts};
//! use stera_rules::Position;
//! let mut store = MemoryStore::new();
//! let weak = store.intern_opponent("engine at 500 nodes").unwrap();
//! let strong = store.intern_opponent("engine at 4000 nodes").unwrap();
//! let key = Position::startpos().key();
//! store.record_learning_game(weak, 1, &[(key, GameCounts::WIN)]).unwrap();
//! store.record_learning_game(strong, 2, &[(key, GameCounts::LOSS)]).unwrap();
//! // The self-play counters know nothing of them.
//! assert_eq!(store.game_counts(key).unwrap(), GameCounts::default());
//! let all = OpponentSelection::All.resolve(&store.opponents().unwrap()).unwrap();
//! let pooled = stera_book::learning_counts(&store, &all).unwrap();
//! assert_eq!(pooled[&key].games(), 2);
//! let only_weak = OpponentSelection::parse("1").unwrap().resolve(&store.opponents().unwrap()).unwrap();
//! assert_eq!(stera_book::learning_counts(&store, &only_weak).unwrap()[&key], GameCounts::WIN);
//! ```

use std::collections::HashMap;
use std::fmt;

use stera_rules::Key;

use crate::{BookError, GameCounts, NodeStore};

/// The largest opponent identity accepted (the engine identity plus a budget).
pub const MAX_OPPONENT_IDENTITY_BYTES: usize = 512;

/// An opponent's number in a store (dense from 0, in the order first met).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct OpponentId(pub u16);

impl fmt::Display for OpponentId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Shown to people from 1, as `--opponents` takes them.
        write!(f, "{}", u32::from(self.0) + 1)
    }
}

/// An opponent a store knows, with the learning games counted against it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpponentRecord {
    /// Its number.
    pub id: OpponentId,
    /// Engine identity and budget.
    pub identity: String,
    /// Learning games counted against it.
    pub games: u64,
}

/// Checks an opponent identity before it is stored: not empty, bounded, one line.
///
/// # Errors
/// [`BookError::Invalid`] naming the rule broken.
pub fn check_opponent_identity(identity: &str) -> Result<(), BookError> {
    if identity.trim().is_empty() {
        return Err(BookError::Invalid("an opponent identity is empty".into()));
    }
    if identity.len() > MAX_OPPONENT_IDENTITY_BYTES {
        return Err(BookError::Invalid(format!(
            "an opponent identity of {} bytes (at most {MAX_OPPONENT_IDENTITY_BYTES})",
            identity.len()
        )));
    }
    if identity.chars().any(char::is_control) {
        return Err(BookError::Invalid(
            "an opponent identity holds a control character".into(),
        ));
    }
    Ok(())
}

/// Which opponents' learning games a reader counts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum OpponentSelection {
    /// Every opponent of the store, their counters added (the pooled estimate).
    #[default]
    All,
    /// These, by number (from 1, as `stats` and `show` list them) or by identity.
    Listed(Vec<String>),
}

impl OpponentSelection {
    /// Reads `all` or a comma-separated list of opponent numbers or identities.
    ///
    /// # Errors
    /// An empty list or an empty item.
    pub fn parse(text: &str) -> Result<Self, BookError> {
        let text = text.trim();
        if text.eq_ignore_ascii_case("all") {
            return Ok(Self::All);
        }
        let items: Vec<String> = text.split(',').map(|s| s.trim().to_owned()).collect();
        if items.iter().any(String::is_empty) {
            return Err(BookError::Invalid(format!(
                "`{}`: expected `all` or a comma-separated list of opponent numbers (as `book-tools stats` lists them) or identities",
                stera_rules::excerpt(text)
            )));
        }
        Ok(Self::Listed(items))
    }

    /// The ids of the selected opponents among `known`.
    ///
    /// # Errors
    /// A listed opponent the store does not know (the error lists those it knows).
    pub fn resolve(&self, known: &[OpponentRecord]) -> Result<Vec<OpponentId>, BookError> {
        match self {
            Self::All => Ok(known.iter().map(|o| o.id).collect()),
            Self::Listed(items) => items
                .iter()
                .map(|item| {
                    let by_number = item
                        .parse::<u32>()
                        .ok()
                        .and_then(|n| n.checked_sub(1))
                        .and_then(|n| known.iter().find(|o| u32::from(o.id.0) == n));
                    by_number
                        .or_else(|| known.iter().find(|o| o.identity == *item))
                        .map(|o| o.id)
                        .ok_or_else(|| {
                            BookError::Invalid(format!(
                                "no learning opponent `{}` in this store; it knows {}",
                                stera_rules::excerpt(item),
                                describe_known(known)
                            ))
                        })
                })
                .collect(),
        }
    }
}

impl fmt::Display for OpponentSelection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::All => write!(f, "all"),
            Self::Listed(items) => write!(f, "{}", items.join(",")),
        }
    }
}

fn describe_known(known: &[OpponentRecord]) -> String {
    if known.is_empty() {
        return "none (no learning games yet)".into();
    }
    known
        .iter()
        .map(|o| format!("{} `{}`", o.id, o.identity))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The learning counters of `opponents` in `store`, added per position key.
///
/// # Errors
/// Storage failure or corrupt counters.
pub fn learning_counts(
    store: &dyn NodeStore,
    opponents: &[OpponentId],
) -> Result<HashMap<Key, GameCounts>, BookError> {
    let mut counts: HashMap<Key, GameCounts> = HashMap::new();
    for &opponent in opponents {
        store.for_each_learning_count(opponent, &mut |key, c| {
            counts.entry(key).or_default().add(c);
        })?;
    }
    Ok(counts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn known() -> Vec<OpponentRecord> {
        vec![
            OpponentRecord {
                id: OpponentId(0),
                identity: "a at 500 nodes".into(),
                games: 3,
            },
            OpponentRecord {
                id: OpponentId(1),
                identity: "b at 1000 nodes".into(),
                games: 1,
            },
        ]
    }

    #[test]
    fn a_selection_takes_numbers_from_one_and_identities() {
        let s = OpponentSelection::parse("2, a at 500 nodes").unwrap();
        assert_eq!(s.resolve(&known()).unwrap(), [OpponentId(1), OpponentId(0)]);
        assert_eq!(
            OpponentSelection::parse("ALL")
                .unwrap()
                .resolve(&known())
                .unwrap(),
            [OpponentId(0), OpponentId(1)]
        );
    }

    #[test]
    fn an_unknown_opponent_is_refused_with_the_known_ones() {
        let err = OpponentSelection::parse("3")
            .unwrap()
            .resolve(&known())
            .unwrap_err()
            .to_string();
        assert!(err.contains("no learning opponent `3`"), "{err}");
        assert!(err.contains("1 `a at 500 nodes`"), "{err}");
        assert!(OpponentSelection::parse("1,,2").is_err());
        assert!(
            OpponentSelection::parse("0")
                .unwrap()
                .resolve(&known())
                .is_err()
        );
    }

    #[test]
    fn identities_are_checked() {
        assert!(check_opponent_identity("x at 1 nodes").is_ok());
        assert!(check_opponent_identity(" ").is_err());
        assert!(check_opponent_identity("a\nb").is_err());
        assert!(check_opponent_identity(&"x".repeat(600)).is_err());
    }
}
