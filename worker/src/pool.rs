//! One engine per slot; an evaluation borrows one for its duration.

use std::sync::{Condvar, Mutex};

use stera_engine::choice::EngineChoice;
use stera_engine::{EvalError, Evaluation, Evaluator, Limits};
use stera_rules::Position;

/// The worker's engines.
pub struct EvaluatorPool {
    idle: Mutex<Vec<Box<dyn Evaluator>>>,
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
            handles.push(tokio::task::spawn_blocking(move || choice.start()));
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
    /// wait here); blocks, so run it on a blocking thread.
    ///
    /// # Errors
    /// A poisoned pool (an engine panicked), or the evaluation's own error.
    pub fn evaluate(&self, position: &Position, limits: &Limits) -> Result<Evaluation, EvalError> {
        let poisoned = || EvalError::Engine {
            engine: self.identity.clone(),
            reason: "engine pool poisoned".into(),
        };
        let mut engine = {
            let mut idle = self.idle.lock().map_err(|_| poisoned())?;
            loop {
                if let Some(e) = idle.pop() {
                    break e;
                }
                idle = self.returned.wait(idle).map_err(|_| poisoned())?;
            }
        };
        let result = engine.evaluate(position, limits);
        if let Ok(mut v) = self.idle.lock() {
            v.push(engine);
        }
        self.returned.notify_one();
        result
    }
}
