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
        match choice.engine {
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

/// The worker's engines.
pub struct EvaluatorPool {
    idle: Mutex<Vec<Engine>>,
    /// Signalled when an engine is returned (prefetched jobs wait for one).
    returned: Condvar,
    identity: String,
}

impl EvaluatorPool {
    /// Starts `slots` engines (external engines start in parallel threads).
    ///
    /// # Errors
    /// The first engine that fails to start.
    pub async fn start(choice: &EngineChoice, slots: u32) -> Result<Self, EvalError> {
        let mut handles = Vec::new();
        for _ in 0..slots {
            let choice = choice.clone();
            handles.push(tokio::task::spawn_blocking(move || Engine::start(&choice)));
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
        Ok(Self {
            idle: Mutex::new(idle),
            returned: Condvar::new(),
            identity,
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
    /// # Errors
    /// A poisoned pool (an engine panicked), or the evaluation's own error.
    pub fn evaluate(
        &self,
        position: &Position,
        limits: &Limits,
    ) -> (Result<Evaluation, EvalError>, EvaluationCost) {
        let poisoned = || EvalError::Engine {
            engine: self.identity.clone(),
            reason: "engine pool poisoned".into(),
        };
        let mut engine = {
            let Ok(mut idle) = self.idle.lock() else {
                return (Err(poisoned()), EvaluationCost::default());
            };
            loop {
                if let Some(e) = idle.pop() {
                    break e;
                }
                match self.returned.wait(idle) {
                    Ok(i) => idle = i,
                    Err(_) => return (Err(poisoned()), EvaluationCost::default()),
                }
            }
        };
        let restarts_before = engine.restarts();
        let result = engine.evaluator().evaluate(position, limits);
        let cost = EvaluationCost {
            restarts: engine.restarts().saturating_sub(restarts_before),
        };
        if let Ok(mut v) = self.idle.lock() {
            v.push(engine);
        }
        self.returned.notify_one();
        (result, cost)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Flags {
        #[command(flatten)]
        engine: EngineChoice,
    }

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
        Flags::parse_from(["worker", "--engine", "usi", "--engine-cmd", &cmd]).engine
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
        let builtin = Flags::parse_from(["worker"]).engine;
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
