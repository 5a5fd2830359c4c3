//! Mixed engines are a decision: which engines at which budgets may think for
//! the store.
//!
//! A worker's thinker is its engine (Hello `engine`) at the budget its think
//! jobs run at: the coordinator's limits when any is set, else the budget the
//! worker reports (Hello `default_limits`; unset by a worker built before it,
//! whose budget is then not recorded and which is compared by its engine alone).
//! At Hello it must agree with a thinker of the store (or, in a store no engine
//! thought yet, with the first worker of this run); otherwise it is refused
//! unless `--allow-mixed-engines`. Every think result is stored under its
//! stream's thinker (see `stera_games::thinker` for the identity and the rule
//! for stores written before budgets were recorded).

use std::collections::HashMap;

use stera_engine::Limits;
use stera_games::thinker::{self, Thinker, budget_text};
use stera_proto::v1::{self, Hello};
use stera_service::convert::limits_from_proto;

use crate::leases::StreamId;

/// How a worker is admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Admission {
    /// It thinks for the store (and plays, and answers any search).
    Thinker,
    /// It answers the searches of a learning opponent of its engine only.
    Opponent,
}

/// The flag that lets another engine or budget think for the store.
pub(crate) const ALLOW_FLAG: &str = "--allow-mixed-engines";

/// The thinkers of the store and of this run, and each open stream's.
pub(crate) struct Thinkers {
    /// Engine thinkers of the store when the run started, then every thinker
    /// admitted in this run.
    known: Vec<String>,
    /// True when `known` started from the store (says whose in a refusal).
    from_store: bool,
    /// The budget of every think job, when the coordinator sets one.
    job_budget: Option<Limits>,
    /// Workers of another engine or budget are admitted: `--allow-mixed-engines`,
    /// or a run that thinks nothing.
    allow_mixed: bool,
    /// The run thinks nothing (`--think-limit 0`): its workers' engines only
    /// play, so another engine or budget is no news.
    thinks_nothing: bool,
    /// The thinker of each open stream.
    by_stream: HashMap<StreamId, String>,
    /// Engines learning opponents name (`--learn-opponent "--engine-id ..."`):
    /// a worker of such an engine that does not think for the store is
    /// admitted to answer searches only.
    opponent_engines: Vec<String>,
}

/// The budget the coordinator's think limits set, `None` when they set nothing
/// (each worker's own budget applies then).
pub(crate) fn job_budget(limits: &v1::Limits) -> Option<Limits> {
    (limits.nodes > 0 || limits.depth > 0 || limits.time_ms > 0)
        .then(|| limits_from_proto(Some(limits), Limits::default()))
}

/// The store's thinkers among its interned identities: those an engine thought.
fn engine_thinkers(identities: &[String]) -> Vec<String> {
    identities
        .iter()
        .filter(|i| thinker::is_engine(i))
        .cloned()
        .collect()
}

/// Refuses a run whose think jobs would run at `budget` when the store's recorded
/// budgets are all others (thinkers without a recorded budget excepted), unless
/// `allow_mixed`. `why` says where the budget comes from.
pub(crate) fn check_run_budget(
    identities: &[String],
    budget: &Limits,
    why: &str,
    allow_mixed: bool,
) -> Result<(), String> {
    let words = budget_text(budget);
    let thinkers = engine_thinkers(identities);
    let recorded: Vec<&str> = thinkers
        .iter()
        .filter_map(|i| Thinker::parse(i).budget)
        .collect();
    if recorded.is_empty() || recorded.contains(&words.as_str()) {
        return Ok(());
    }
    if allow_mixed {
        tracing::warn!(
            budget = %words,
            store = %recorded.join("; "),
            "think jobs run at another budget than the store's positions were thought at ({ALLOW_FLAG})"
        );
        return Ok(());
    }
    Err(format!(
        "this run's think jobs would run at {words} ({why}), but the store's positions were thought at {}; \
         values of another budget are not on one scale with them: give the store's budget, \
         or {ALLOW_FLAG} to mix them",
        recorded.join(", ")
    ))
}

impl Thinkers {
    /// The store's interned `identities`, the coordinator's think `limits`.
    pub(crate) fn new(identities: &[String], limits: &v1::Limits, allow_mixed: bool) -> Self {
        let known = engine_thinkers(identities);
        Self {
            from_store: !known.is_empty(),
            known,
            job_budget: job_budget(limits),
            allow_mixed,
            thinks_nothing: false,
            by_stream: HashMap::new(),
            opponent_engines: Vec::new(),
        }
    }

    /// Workers whose engine contains one of `engines` and that do not think
    /// for the store are admitted as opponents: they answer searches only.
    pub(crate) fn with_opponent_engines(mut self, engines: Vec<String>) -> Self {
        self.opponent_engines = engines;
        self
    }

    /// The same, for a run that thinks nothing when `yes`: it admits workers of
    /// any engine and budget and logs none of them (mixing is moot where nothing
    /// is stored).
    pub(crate) fn thinking_nothing(mut self, yes: bool) -> Self {
        self.thinks_nothing = yes;
        self.allow_mixed |= yes;
        self
    }

    /// The thinker of a worker that said `hello`.
    pub(crate) fn of_worker(&self, hello: &Hello) -> String {
        let reported = hello
            .default_limits
            .as_ref()
            .map(|l| limits_from_proto(Some(l), Limits::default()));
        thinker::thinker_identity(&hello.engine, self.job_budget.or(reported).as_ref())
    }

    /// The worker's own budget (its --nodes, --depth, --time-ms, else its
    /// engine's default) in words when this run's think limits replace it:
    /// the worker's flags would otherwise seem to be in force.
    pub(crate) fn overridden_budget(&self, hello: &Hello) -> Option<(String, String)> {
        let own = limits_from_proto(hello.default_limits.as_ref(), Limits::default());
        let run = self.job_budget?;
        (hello.default_limits.is_some() && own != run)
            .then(|| (thinker::budget_text(&own), thinker::budget_text(&run)))
    }

    /// Admits the worker of `stream` that said `hello`, or says why it is
    /// refused: [`Admission::Thinker`], or [`Admission::Opponent`] for a
    /// worker of a learning opponent's engine that does not think for the
    /// store (it answers searches only, and nothing it says is stored).
    pub(crate) fn admit(&mut self, stream: StreamId, hello: &Hello) -> Result<Admission, String> {
        let identity = self.of_worker(hello);
        let worker = Thinker::parse(&identity);
        let known: Vec<Thinker<'_>> = self.known.iter().map(|k| Thinker::parse(k)).collect();
        let agrees = !known.is_empty() && thinker::agrees_with_any(&known, &worker);
        let opponent = self
            .opponent_engines
            .iter()
            .any(|e| hello.engine.contains(e.as_str()));
        if opponent && !agrees {
            tracing::info!(
                worker = %hello.worker_id,
                engine = %hello.engine,
                "a worker of a learning opponent's engine: it answers that opponent's searches only"
            );
            return Ok(Admission::Opponent);
        }
        let agrees = agrees || known.is_empty();
        if !agrees {
            if !self.allow_mixed {
                return Err(self.refusal(&hello.worker_id, &worker));
            }
            // INFO, not WARN: mixing was decided. Nothing at all in a run that
            // thinks nothing, where the worker's engine only plays.
            if !self.thinks_nothing {
                tracing::info!(
                    worker = %hello.worker_id,
                    thinker = %identity,
                    "a worker of another engine or budget admitted ({ALLOW_FLAG}); positions it thinks are recorded under it"
                );
            }
        }
        if !self.known.contains(&identity) {
            self.known.push(identity.clone());
        }
        self.by_stream.insert(stream, identity);
        Ok(Admission::Thinker)
    }

    /// Why `worker` (of `worker_id`) is refused: its engine and budget, the
    /// store's (or this run's first worker's), and the flag.
    fn refusal(&self, worker_id: &str, worker: &Thinker<'_>) -> String {
        let theirs: Vec<String> = self
            .known
            .iter()
            .map(|k| {
                let t = Thinker::parse(k);
                format!("`{}` at {}", t.engine, t.budget_words())
            })
            .collect();
        let whose = if self.from_store {
            "this store's positions were thought by"
        } else {
            "this run's workers think with"
        };
        format!(
            "worker `{worker_id}` thinks with `{}` at {}, but {whose} {}; values of another engine or budget \
             are not on one scale with them: run the worker with that engine and budget, or start the \
             coordinator with {ALLOW_FLAG} to mix them",
            worker.engine,
            worker.budget_words(),
            theirs.join(", ")
        )
    }

    /// The thinker of an open stream.
    pub(crate) fn of_stream(&self, stream: StreamId) -> Option<&str> {
        self.by_stream.get(&stream).map(String::as_str)
    }

    /// A stream closed.
    pub(crate) fn disconnect(&mut self, stream: StreamId) {
        self.by_stream.remove(&stream);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BUILTIN: &str = "stera-builtin 0.1.0 (hce)";

    fn hello(engine: &str, nodes: Option<u64>) -> Hello {
        Hello {
            worker_id: "w".into(),
            version: "t".into(),
            engine: engine.into(),
            slots: 1,
            protocol: stera_proto::PROTOCOL_VERSION,
            default_limits: nodes.map(|nodes| v1::Limits {
                nodes,
                ..v1::Limits::default()
            }),
        }
    }

    fn no_limits() -> v1::Limits {
        v1::Limits::default()
    }

    #[test]
    fn a_run_whose_limits_replace_a_workers_own_says_both() {
        let run = v1::Limits {
            nodes: 1000,
            ..v1::Limits::default()
        };
        let thinkers = Thinkers::new(&[], &run, false);
        assert_eq!(
            thinkers.overridden_budget(&hello(BUILTIN, Some(500))),
            Some(("500 nodes".to_owned(), "1000 nodes".to_owned()))
        );
        assert_eq!(
            thinkers.overridden_budget(&hello(BUILTIN, Some(1000))),
            None
        );
        assert_eq!(thinkers.overridden_budget(&hello(BUILTIN, None)), None);
        let own = Thinkers::new(&[], &no_limits(), false);
        assert_eq!(own.overridden_budget(&hello(BUILTIN, Some(500))), None);
    }

    #[test]
    fn the_coordinators_limits_are_the_budget_else_the_workers_own() {
        let at = |nodes| v1::Limits {
            nodes,
            ..v1::Limits::default()
        };
        let own = Thinkers::new(&[], &no_limits(), false);
        assert_eq!(
            own.of_worker(&hello(BUILTIN, Some(300_000))),
            format!("{BUILTIN} at 300000 nodes")
        );
        // A worker that does not report its budget: the engine alone.
        assert_eq!(own.of_worker(&hello(BUILTIN, None)), BUILTIN);
        let sent = Thinkers::new(&[], &at(1000), false);
        assert_eq!(
            sent.of_worker(&hello(BUILTIN, Some(300_000))),
            format!("{BUILTIN} at 1000 nodes")
        );
        assert_eq!(
            sent.of_worker(&hello(BUILTIN, None)),
            format!("{BUILTIN} at 1000 nodes")
        );
    }

    #[test]
    fn another_engine_or_budget_is_refused_naming_both_and_the_flag() {
        let store = vec![format!("{BUILTIN} at 1000 nodes"), "import a.db".to_owned()];
        let mut t = Thinkers::new(&store, &no_limits(), false);
        assert!(t.admit(1, &hello(BUILTIN, Some(1000))).is_ok());
        let why = t.admit(2, &hello(BUILTIN, Some(2000))).unwrap_err();
        for part in [
            "`stera-builtin 0.1.0 (hce)` at 2000 nodes",
            "`stera-builtin 0.1.0 (hce)` at 1000 nodes",
            "this store's",
            ALLOW_FLAG,
        ] {
            assert!(why.contains(part), "{part} missing from: {why}");
        }
        assert!(!why.contains("import"), "{why}");
        assert!(
            t.admit(3, &hello("Fairy-Stockfish 14", Some(1000)))
                .is_err()
        );
        assert_eq!(t.of_stream(2), None);
        assert_eq!(
            t.of_stream(1),
            Some("stera-builtin 0.1.0 (hce) at 1000 nodes")
        );
    }

    #[test]
    fn a_store_from_before_budgets_takes_its_engine_at_any_budget() {
        let mut t = Thinkers::new(&[BUILTIN.to_owned()], &no_limits(), false);
        assert!(t.admit(1, &hello(BUILTIN, Some(2000))).is_ok());
        assert_eq!(
            t.of_stream(1),
            Some("stera-builtin 0.1.0 (hce) at 2000 nodes")
        );
        // The budget now recorded in this run binds the next workers too.
        assert!(t.admit(2, &hello(BUILTIN, Some(500))).is_err());
        assert!(t.admit(3, &hello("other 1.0", Some(2000))).is_err());
    }

    #[test]
    fn in_an_empty_store_the_first_worker_sets_the_thinker() {
        let mut t = Thinkers::new(&["import a.db".to_owned()], &no_limits(), false);
        assert!(t.admit(1, &hello("A 1.0", Some(10))).is_ok());
        let why = t.admit(2, &hello("B 1.0", Some(10))).unwrap_err();
        assert!(
            why.contains("this run's workers think with `A 1.0` at 10 nodes"),
            "{why}"
        );
        t.disconnect(1);
        // The first worker's thinker stays this run's after it left.
        assert!(t.admit(3, &hello("B 1.0", Some(10))).is_err());
    }

    #[test]
    fn allowed_mixing_admits_and_records_each_thinker() {
        let store = vec![format!("{BUILTIN} at 1000 nodes")];
        let mut t = Thinkers::new(&store, &no_limits(), true);
        assert!(t.admit(1, &hello("Fairy-Stockfish 14", Some(1000))).is_ok());
        assert_eq!(t.of_stream(1), Some("Fairy-Stockfish 14 at 1000 nodes"));
        assert_eq!(t.known.len(), 2);
        assert!(t.admit(2, &hello("Fairy-Stockfish 14", Some(1000))).is_ok());
        assert_eq!(t.known.len(), 2);
    }

    #[test]
    fn a_run_budget_the_store_never_thought_at_is_refused_unless_allowed() {
        let store = vec![format!("{BUILTIN} at 1000 nodes"), BUILTIN.to_owned()];
        let at = |nodes| Limits {
            nodes: Some(nodes),
            ..Limits::default()
        };
        assert!(check_run_budget(&store, &at(1000), "--nodes", false).is_ok());
        let why = check_run_budget(&store, &at(2000), "--nodes", false).unwrap_err();
        for part in ["2000 nodes", "1000 nodes", "--nodes", ALLOW_FLAG] {
            assert!(why.contains(part), "{part} missing from: {why}");
        }
        assert!(check_run_budget(&store, &at(2000), "--nodes", true).is_ok());
        // Only budgets recorded count: a store from before budgets takes any.
        let legacy = vec![BUILTIN.to_owned(), "import a.db".to_owned()];
        assert!(check_run_budget(&legacy, &at(2000), "--nodes", false).is_ok());
        assert!(check_run_budget(&[], &at(2000), "--nodes", false).is_ok());
    }
}
