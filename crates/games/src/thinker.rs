//! Who thought a position: an engine at a budget, in the one form learning
//! opponents are counted under (`stera-builtin 0.1.0 (hce) at 1000 nodes`).
//!
//! The store interns such an identity per thought position; the coordinator
//! compares a worker's with the store's before it takes the worker's results
//! (values of two engines, or of one engine at two budgets, are not one scale,
//! and a book mixing them is a decision, `--allow-mixed-engines`).
//!
//! Stores written before budgets were recorded hold the engine's identity alone
//! (no ` at `): such a thinker is "that engine, budget not recorded" and agrees
//! with the same engine at any budget, so an upgraded store is not refused. A
//! worker too old to report its budget is taken the same way. Positions that no
//! engine thought for the store (`book-tools import`, synthetic benchmark books)
//! are no thinkers at all.
//!
//! ```
//! use stera_engine::Limits;
//! use stera_games::thinker::{Thinker, thinker_identity};
//! let limits = Limits { nodes: Some(1000), ..Limits::default() };
//! let id = thinker_identity("stera-builtin 0.1.0 (hce)", Some(&limits));
//! assert_eq!(id, "stera-builtin 0.1.0 (hce) at 1000 nodes");
//! let at_1000 = Thinker::parse(&id);
//! assert_eq!(at_1000.budget, Some("1000 nodes"));
//! // A store from before budgets were recorded: the same engine, any budget.
//! assert!(at_1000.agrees_with(&Thinker::parse("stera-builtin 0.1.0 (hce)")));
//! assert!(!at_1000.agrees_with(&Thinker::parse("stera-builtin 0.1.0 (hce) at 2000 nodes")));
//! ```

use stera_engine::Limits;

/// Between an engine's identity and its budget.
pub const BUDGET_SEPARATOR: &str = " at ";

/// How `book-tools import` names the positions it stores (`import book.db`):
/// values read from a file, no engine of the store's.
pub const IMPORTED_PREFIX: &str = "import ";

/// What a thinker without a recorded budget says in place of one.
pub const BUDGET_NOT_RECORDED: &str = "budget not recorded";

/// A budget in words: `1000 nodes`, `depth 3`, `200 ms`, joined by `, `.
#[must_use]
pub fn budget_text(limits: &Limits) -> String {
    let mut parts = Vec::new();
    if let Some(n) = limits.nodes {
        parts.push(format!("{n} nodes"));
    }
    if let Some(d) = limits.depth {
        parts.push(format!("depth {d}"));
    }
    if let Some(t) = limits.time {
        parts.push(format!("{} ms", t.as_millis()));
    }
    if parts.is_empty() {
        NO_LIMIT.into()
    } else {
        parts.join(", ")
    }
}

/// [`budget_text`] of limits that set nothing.
const NO_LIMIT: &str = "the engine's default budget";

/// `engine` at the budget in words (`budget`, as [`budget_text`] writes it).
#[must_use]
pub fn identity(engine: &str, budget: &str) -> String {
    format!("{engine}{BUDGET_SEPARATOR}{budget}")
}

/// The identity of `engine` thinking at `limits`; `None` (a budget the worker
/// did not report) gives the engine alone, a thinker whose budget is not recorded.
#[must_use]
pub fn thinker_identity(engine: &str, limits: Option<&Limits>) -> String {
    match limits {
        Some(l) => identity(engine, &budget_text(l)),
        None => engine.to_owned(),
    }
}

/// An identity read back: the engine, and the budget when one is recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Thinker<'a> {
    /// The engine's identity (name, version, options that change values).
    pub engine: &'a str,
    /// The budget in words; `None` for an identity written before budgets were
    /// recorded (or of a worker that did not report its budget).
    pub budget: Option<&'a str>,
}

impl<'a> Thinker<'a> {
    /// Reads `identity`: the text after the last ` at ` is the budget when it
    /// reads as one ([`budget_text`]'s words), so an engine name that happens to
    /// hold ` at ` stays whole.
    #[must_use]
    pub fn parse(identity: &'a str) -> Self {
        match identity.rsplit_once(BUDGET_SEPARATOR) {
            Some((engine, budget)) if is_budget(budget) => Self {
                engine,
                budget: Some(budget),
            },
            _ => Self {
                engine: identity,
                budget: None,
            },
        }
    }

    /// True when values of the two are of one scale: the same engine, and the
    /// same budget unless either budget is not recorded.
    #[must_use]
    pub fn agrees_with(&self, other: &Thinker<'_>) -> bool {
        self.engine == other.engine
            && match (self.budget, other.budget) {
                (Some(a), Some(b)) => a == b,
                _ => true,
            }
    }

    /// The budget in words, or [`BUDGET_NOT_RECORDED`].
    #[must_use]
    pub fn budget_words(&self) -> &'a str {
        self.budget.unwrap_or(BUDGET_NOT_RECORDED)
    }
}

/// True when `worker` may think beside `known` thinkers: it agrees with one of
/// them ([`Thinker::agrees_with`]), except that an engine's identity without a
/// budget counts only until the same engine has a recorded budget among `known`
/// (the first run after an upgrade records it, and from then on it binds).
#[must_use]
pub fn agrees_with_any(known: &[Thinker<'_>], worker: &Thinker<'_>) -> bool {
    let same_engine = || known.iter().filter(|k| k.engine == worker.engine);
    let budgets_recorded = same_engine().any(|k| k.budget.is_some());
    same_engine().any(|k| (k.budget.is_some() || !budgets_recorded) && k.agrees_with(worker))
}

/// True when an engine thought the positions stored under `identity`: not for
/// imported positions nor the pseudo-evaluator of synthetic books.
#[must_use]
pub fn is_engine(identity: &str) -> bool {
    !identity.starts_with(IMPORTED_PREFIX)
        && !identity.starts_with(stera_book::synthetic::IDENTITY_PREFIX)
}

/// True when `text` is a budget as [`budget_text`] words it.
fn is_budget(text: &str) -> bool {
    text == NO_LIMIT
        || text.split(", ").all(|part| {
            let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
            part.strip_suffix(" nodes").is_some_and(digits)
                || part.strip_suffix(" ms").is_some_and(digits)
                || part.strip_prefix("depth ").is_some_and(digits)
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    const BUILTIN: &str = "stera-builtin 0.1.0 (hce)";

    #[test]
    fn an_identity_reads_back_as_its_engine_and_budget() {
        let limits = Limits {
            nodes: Some(300_000),
            depth: Some(4),
            time: Some(Duration::from_millis(250)),
        };
        let id = thinker_identity(BUILTIN, Some(&limits));
        assert_eq!(
            id,
            "stera-builtin 0.1.0 (hce) at 300000 nodes, depth 4, 250 ms"
        );
        let t = Thinker::parse(&id);
        assert_eq!(t.engine, BUILTIN);
        assert_eq!(t.budget, Some("300000 nodes, depth 4, 250 ms"));
        let none = thinker_identity(BUILTIN, Some(&Limits::default()));
        assert_eq!(Thinker::parse(&none).budget, Some(NO_LIMIT));
    }

    #[test]
    fn a_legacy_identity_is_its_engine_with_no_budget() {
        for legacy in [BUILTIN, "Fairy-Stockfish 14 [UCI_Variant=shogi]"] {
            let t = Thinker::parse(legacy);
            assert_eq!(t.engine, legacy);
            assert_eq!(t.budget, None);
            assert_eq!(t.budget_words(), BUDGET_NOT_RECORDED);
        }
        // An unreported budget is written as a legacy identity.
        assert_eq!(thinker_identity(BUILTIN, None), BUILTIN);
    }

    #[test]
    fn an_engine_name_holding_the_separator_stays_whole() {
        let engine = "Engine at Home 2.0";
        assert_eq!(Thinker::parse(engine).engine, engine);
        let id = identity(engine, "depth 8");
        let t = Thinker::parse(&id);
        assert_eq!((t.engine, t.budget), (engine, Some("depth 8")));
        // Words after ` at ` that are no budget belong to the engine.
        assert_eq!(Thinker::parse("X at 12 apples").budget, None);
        assert_eq!(Thinker::parse("X at  nodes").budget, None);
    }

    #[test]
    fn a_legacy_identity_agrees_with_its_engine_at_any_budget_only() {
        let at_1000 = identity(BUILTIN, "1000 nodes");
        let at_2000 = identity(BUILTIN, "2000 nodes");
        let (a, b) = (Thinker::parse(&at_1000), Thinker::parse(&at_2000));
        let legacy = Thinker::parse(BUILTIN);
        assert!(a.agrees_with(&a));
        assert!(!a.agrees_with(&b) && !b.agrees_with(&a));
        assert!(legacy.agrees_with(&a) && a.agrees_with(&legacy));
        assert!(legacy.agrees_with(&b));
        let other = identity("Fairy-Stockfish 14", "1000 nodes");
        let other = Thinker::parse(&other);
        assert!(!other.agrees_with(&a));
        assert!(!other.agrees_with(&legacy));
        assert!(!Thinker::parse("Fairy-Stockfish 14").agrees_with(&legacy));
    }

    #[test]
    fn a_legacy_identity_counts_until_its_engine_has_a_recorded_budget() {
        let at = |b: &str| identity(BUILTIN, b);
        let (at_1000, at_2000) = (at("1000 nodes"), at("2000 nodes"));
        fn parse<'a>(v: &[&'a str]) -> Vec<Thinker<'a>> {
            v.iter().map(|i| Thinker::parse(i)).collect()
        }
        let legacy_only = parse(&[BUILTIN, "Fairy-Stockfish 14"]);
        assert!(agrees_with_any(&legacy_only, &Thinker::parse(&at_2000)));
        let upgraded = parse(&[BUILTIN, &at_1000]);
        assert!(agrees_with_any(&upgraded, &Thinker::parse(&at_1000)));
        assert!(!agrees_with_any(&upgraded, &Thinker::parse(&at_2000)));
        // A worker that does not report its budget agrees with its engine.
        assert!(agrees_with_any(&upgraded, &Thinker::parse(BUILTIN)));
        // Another engine's budget does not bind this one.
        let mixed = parse(&[BUILTIN, "Fairy-Stockfish 14 at depth 8"]);
        assert!(agrees_with_any(&mixed, &Thinker::parse(&at_2000)));
        let fairy = identity("Fairy-Stockfish 14", "depth 9");
        assert!(!agrees_with_any(&mixed, &Thinker::parse(&fairy)));
        assert!(!agrees_with_any(&[], &Thinker::parse(BUILTIN)));
    }

    #[test]
    fn imports_and_synthetic_books_are_no_thinkers() {
        assert!(!is_engine("import book.db"));
        assert!(!is_engine(
            &stera_book::synthetic::PseudoEvaluator::new(5).identity()
        ));
        assert!(is_engine(BUILTIN));
        assert!(is_engine(&identity(BUILTIN, "1000 nodes")));
    }
}
