//! One engine per slot; an evaluation borrows one for its duration.

use std::sync::{Condvar, Mutex};

use stera_engine::choice::{EngineChoice, EngineKind};
use stera_engine::{EvalError, Evaluation, Evaluator, Limits, UsiEvaluator};
use stera_rules::Position;

/// One slot's engine. USI engines are kept as their concrete type because only
/// they restart processes, and their restart count is what the metrics report.
enum Engine {
    Usi(Box<UsiEvaluator>),
    Other(Box<dyn Evaluator>),
}

impl Engine {
    fn start(choice: &EngineChoice) -> Result<Self, EvalError> {
        choice.check_flags()?;
        match choice.kind() {
            EngineKind::Usi => Ok(Self::Usi(Box::new(UsiEvaluator::new(
                choice.usi_config()?,
            )?))),
            EngineKind::Builtin => Ok(Self::Other(choice.start()?)),
        }
    }

    fn evaluator(&mut self) -> &mut dyn Evaluator {
        match self {
            Self::Usi(e) => e.as_mut(),
            Self::Other(e) => e.as_mut(),
        }
    }

    fn identity(&self) -> String {
        match self {
            Self::Usi(e) => e.identity(),
            Self::Other(e) => e.identity(),
        }
    }

    /// Engine process restarts so far.
    fn restarts(&self) -> u64 {
        match self {
            Self::Usi(e) => e.stats().restarts,
            Self::Other(_) => 0,
        }
    }
}

/// What one evaluation did besides its result.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EvaluationCost {
    /// Engine restarts it took (crashes retried, or a time-out).
    pub restarts: u64,
}

/// Starts one engine (again, after one panicked).
type EngineFactory = Box<dyn Fn() -> Result<Engine, EvalError> + Send + Sync>;

/// The engines a pool has: those idle, and how many exist at all (an engine that
/// panicked and cannot be restarted is gone for good).
struct Engines {
    idle: Vec<Engine>,
    alive: usize,
}

/// The worker's engines.
pub struct EvaluatorPool {
    engines: Mutex<Engines>,
    /// Signalled when an engine is returned (prefetched jobs wait for one).
    returned: Condvar,
    identity: String,
    factory: EngineFactory,
}

/// The text of a panic's payload.
pub(crate) fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_owned())
}

impl EvaluatorPool {
    /// Starts `slots` engines (external engines start in parallel threads).
    ///
    /// # Errors
    /// The first engine that fails to start.
    pub async fn start(choice: &EngineChoice, slots: u32) -> Result<Self, EvalError> {
        let choice = choice.clone();
        Self::start_with(Box::new(move || Engine::start(&choice)), slots).await
    }

    async fn start_with(factory: EngineFactory, slots: u32) -> Result<Self, EvalError> {
        let factory = std::sync::Arc::new(factory);
        let mut handles = Vec::new();
        for _ in 0..slots {
            let factory = factory.clone();
            handles.push(tokio::task::spawn_blocking(move || factory()));
        }
        let mut idle = Vec::new();
        for h in handles {
            let ev = h.await.map_err(|e| EvalError::Engine {
                engine: "pool".into(),
                reason: e.to_string(),
            })??;
            idle.push(ev);
        }
        let identity = idle.first().map(|e| e.identity()).unwrap_or_default();
        let factory = std::sync::Arc::into_inner(factory).ok_or_else(|| EvalError::Engine {
            engine: identity.clone(),
            reason: "engine start-up threads still running".into(),
        })?;
        Ok(Self {
            engines: Mutex::new(Engines {
                alive: idle.len(),
                idle,
            }),
            returned: Condvar::new(),
            identity,
            factory,
        })
    }

    /// The engine identity (the same for every slot).
    #[must_use]
    pub fn identity(&self) -> String {
        self.identity.clone()
    }

    /// Evaluates on a borrowed engine, waiting for one to be free (prefetched jobs
    /// wait here); blocks, so run it on a blocking thread. Also says how many engine
    /// restarts the evaluation took, whether it succeeded or not.
    ///
    /// An engine that panics is replaced by a fresh one (counted as a restart) and
    /// the panic becomes this evaluation's error, so the job is given back with a
    /// reason instead of being lost, and the other slots go on.
    ///
    /// # Errors
    /// No engine left, a poisoned pool, a panic, or the evaluation's own error.
    pub fn evaluate(
        &self,
        position: &Position,
        limits: &Limits,
    ) -> (Result<Evaluation, EvalError>, EvaluationCost) {
        let fail = |reason: String| EvalError::Engine {
            engine: self.identity.clone(),
            reason,
        };
        let mut engine = {
            let Ok(mut engines) = self.engines.lock() else {
                return (
                    Err(fail("engine pool poisoned".into())),
                    EvaluationCost::default(),
                );
            };
            loop {
                if let Some(e) = engines.idle.pop() {
                    break e;
                }
                if engines.alive == 0 {
                    return (
                        Err(fail(
                            "no engine left: every engine panicked and could not be restarted"
                                .into(),
                        )),
                        EvaluationCost::default(),
                    );
                }
                match self.returned.wait(engines) {
                    Ok(e) => engines = e,
                    Err(_) => {
                        return (
                            Err(fail("engine pool poisoned".into())),
                            EvaluationCost::default(),
                        );
                    }
                }
            }
        };
        let restarts_before = engine.restarts();
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            engine.evaluator().evaluate(position, limits)
        }));
        let mut cost = EvaluationCost {
            restarts: engine.restarts().saturating_sub(restarts_before),
        };
        let (result, engine) = match outcome {
            Ok(result) => (result, Some(engine)),
            Err(payload) => {
                let why = panic_text(payload.as_ref());
                tracing::error!(sfen = %position.to_sfen(), panic = %why, "the engine panicked; starting a new one");
                // The engine's state is unknown after a panic: never reuse it.
                drop(engine);
                cost.restarts += 1;
                let fresh = match (self.factory)() {
                    Ok(e) => Some(e),
                    Err(e) => {
                        tracing::error!(error = %e, "cannot restart the engine; one slot fewer");
                        None
                    }
                };
                (Err(fail(format!("the engine panicked: {why}"))), fresh)
            }
        };
        if let Ok(mut engines) = self.engines.lock() {
            match engine {
                Some(e) => engines.idle.push(e),
                None => engines.alive = engines.alive.saturating_sub(1),
            }
        }
        // Wake every waiter: with an engine gone, all must re-check `alive`.
        self.returned.notify_all();
        (result, cost)
    }
}

/// The engine a worker started with `args` (its engine flags) would run.
#[cfg(test)]
pub(crate) fn engine_choice(args: &[&str]) -> EngineChoice {
    use clap::Parser;

    #[derive(Parser)]
    struct Flags {
        #[command(flatten)]
        engine: stera_service::engine_flags::EngineFlags,
    }
    Flags::parse_from(std::iter::once("worker").chain(args.iter().copied()))
        .engine
        .choice()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn depth_one() -> Limits {
        Limits {
            depth: Some(1),
            ..Limits::default()
        }
    }

    /// The scripted engine of the engine crate's tests, in a given mode.
    fn fake_usi(mode: &str) -> EngineChoice {
        let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../crates/engine/tests/fixtures/fake_usi.sh");
        let cmd = format!("sh {} {mode}", script.display());
        engine_choice(&["--engine", "usi", "--engine-cmd", &cmd])
    }

    /// Evaluates `left` positions, then panics (as an engine bug would).
    struct Panicky {
        left: u32,
    }

    impl Evaluator for Panicky {
        fn evaluate(&mut self, position: &Position, _: &Limits) -> Result<Evaluation, EvalError> {
            if self.left == 0 {
                panic!("index out of bounds: the len is 2 but the index is 7");
            }
            self.left -= 1;
            Ok(Evaluation {
                moves: position
                    .legal_moves()
                    .into_iter()
                    .map(|mv| stera_engine::MoveValue {
                        mv,
                        value: 0,
                        depth: 1,
                    })
                    .collect(),
                nodes: 1,
                elapsed: std::time::Duration::ZERO,
                engine: "panicky".into(),
            })
        }

        fn identity(&self) -> String {
            "panicky".into()
        }
    }

    #[tokio::test]
    async fn a_panicking_engine_is_replaced_and_the_panic_reported() {
        let started = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
        let counter = started.clone();
        let pool = EvaluatorPool::start_with(
            Box::new(move || {
                counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                Ok(Engine::Other(Box::new(Panicky { left: 1 })))
            }),
            1,
        )
        .await
        .unwrap();
        let (first, _) = pool.evaluate(&Position::startpos(), &depth_one());
        assert_eq!(first.unwrap().moves.len(), 30);
        let (second, cost) = pool.evaluate(&Position::startpos(), &depth_one());
        let err = second.unwrap_err().to_string();
        assert!(
            err.contains("the engine panicked: index out of bounds"),
            "{err}"
        );
        assert_eq!(cost.restarts, 1);
        // The slot goes on with a fresh engine instead of waiting forever.
        let (third, _) = pool.evaluate(&Position::startpos(), &depth_one());
        assert_eq!(third.unwrap().moves.len(), 30);
        assert_eq!(started.load(std::sync::atomic::Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn a_pool_whose_engines_cannot_restart_says_so() {
        let starts = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
        let counter = starts.clone();
        let pool = EvaluatorPool::start_with(
            Box::new(move || {
                if counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 {
                    Ok(Engine::Other(Box::new(Panicky { left: 0 })))
                } else {
                    Err(EvalError::Engine {
                        engine: "panicky".into(),
                        reason: "cannot start".into(),
                    })
                }
            }),
            1,
        )
        .await
        .unwrap();
        let (first, _) = pool.evaluate(&Position::startpos(), &depth_one());
        assert!(first.unwrap_err().to_string().contains("panicked"));
        // No engine left: an error at once, not a wait on a condition variable forever.
        let (second, _) = pool.evaluate(&Position::startpos(), &depth_one());
        assert!(second.unwrap_err().to_string().contains("no engine left"));
    }

    #[tokio::test]
    async fn restarts_of_a_crashing_engine_are_counted() {
        let pool = EvaluatorPool::start(&fake_usi("crash-always"), 1)
            .await
            .unwrap();
        let (result, cost) = pool.evaluate(&Position::startpos(), &depth_one());
        assert!(result.is_err());
        // The default configuration restarts a crashed engine twice per position.
        assert_eq!(cost.restarts, 2);
        // The engine stays in the pool: the next position counts its own restarts.
        let (_, again) = pool.evaluate(&Position::startpos(), &depth_one());
        assert_eq!(again.restarts, 2);
    }

    #[tokio::test]
    async fn a_healthy_engine_costs_no_restart() {
        let pool = EvaluatorPool::start(&fake_usi("all"), 1).await.unwrap();
        let (result, cost) = pool.evaluate(&Position::startpos(), &depth_one());
        assert_eq!(result.unwrap().moves.len(), 30);
        assert_eq!(cost.restarts, 0);
        let builtin = engine_choice(&[]);
        let pool = EvaluatorPool::start(&builtin, 1).await.unwrap();
        let (result, cost) = pool.evaluate(
            &Position::startpos(),
            &Limits {
                nodes: Some(200),
                ..Limits::default()
            },
        );
        assert!(result.is_ok());
        assert_eq!(cost, EvaluationCost::default());
    }
}
