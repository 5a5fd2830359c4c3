//! NNUE evaluation for the built-in engine: the HalfKP 256x2-32-32 network
//! (`nn.bin`) that most CPU shogi engines use.
//!
//! * [`file`] reads and checks an evaluation file into a [`Network`].
//! * [`features`] turns a position into HalfKP feature indices (king square x
//!   piece), one list per perspective.
//! * [`accumulator`] holds the first layer's output and updates it incrementally
//!   on each move (the idea that makes NNUE cheap on a CPU).
//! * [`network`] runs the remaining integer layers.
//! * [`transformer`] holds what both share: the layer sizes and the
//!   [`Accumulator`] values (so that neither of the two imports the other).
//! * [`simd`] provides the hot loops with AVX2 and a portable fallback.
//!
//! ```no_run
//! use stera_engine::nnue;
//!
//! let net = nnue::load_shared(std::path::Path::new("nn.bin"))?;
//! let pos = stera_rules::Position::startpos();
//! let value = nnue::evaluate_position(&net, pos.backend(), nnue::DEFAULT_FV_SCALE);
//! println!("{value}");
//! # Ok::<(), nnue::NnueError>(())
//! ```

pub mod accumulator;
pub mod features;
pub mod file;
pub mod network;
// The AVX2 kernels of the evaluation need `unsafe` (target-feature functions and
// intrinsics, called only after the CPU was checked): the one place the engine
// allows it.
#[allow(unsafe_code)]
pub mod simd;
pub mod transformer;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};

use stera_rules::backend::board::Position as Board;

pub use accumulator::AccumulatorStack;
pub use file::{NnueError, load};
pub use network::Network;
pub use simd::Backend;
pub use transformer::Accumulator;

/// The divisor of the network output that YaneuraOu calls `FV_SCALE`.
pub const DEFAULT_FV_SCALE: i32 = 16;

/// A loaded network and the divisor that turns its output into centipawns: what
/// the built-in engine needs to evaluate with NNUE.
#[derive(Clone)]
pub struct NnueConfig {
    /// The network, shared by every engine of the process.
    pub network: Arc<Network>,
    /// Output divisor (`FV_SCALE`), at least 1.
    pub fv_scale: i32,
}

impl std::fmt::Debug for NnueConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NnueConfig")
            .field("network", &self.network.description())
            .field("fv_scale", &self.fv_scale)
            .finish()
    }
}

/// Networks loaded by this process, by path, so that several engines (worker
/// slots) share one 64 MB copy. Weak: a network nobody uses any more is freed.
static LOADED: Mutex<Vec<(PathBuf, Weak<Network>)>> = Mutex::new(Vec::new());

/// Loads the network at `path`, or returns the copy this process already holds.
///
/// The lock is held while loading, so engines started in parallel wait for one
/// load instead of each reading the file.
///
/// # Errors
/// See [`load`].
pub fn load_shared(path: &Path) -> Result<Arc<Network>, NnueError> {
    let key = std::fs::canonicalize(path).map_err(|source| NnueError::Io {
        path: path.to_owned(),
        source,
    })?;
    // A poisoned lock only means another load panicked; the list itself is valid.
    let mut loaded = LOADED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    loaded.retain(|(_, weak)| weak.strong_count() > 0);
    if let Some(net) = loaded
        .iter()
        .find(|(p, _)| *p == key)
        .and_then(|(_, weak)| weak.upgrade())
    {
        return Ok(net);
    }
    let net = Arc::new(load(path)?);
    loaded.push((key, Arc::downgrade(&net)));
    Ok(net)
}

/// Evaluates `board` from scratch (no incremental state): centipawns from the side
/// to move's point of view. Positions without both kings have no HalfKP features
/// and get 0.
#[must_use]
pub fn evaluate_position(network: &Network, board: &Board, fv_scale: i32) -> i32 {
    let backend = Backend::detect();
    let mut acc = Accumulator::default();
    if !acc.refresh_all(network, board, backend) {
        return 0;
    }
    network.evaluate(&acc, board.turn(), fv_scale, backend)
}
