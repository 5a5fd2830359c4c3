//! The Super Tera-Shock book: thought positions, their store, and the selector
//! that decides what to think next.
//!
//! * [`ThoughtNode`] (module `node`): one evaluated position, immutable, with a
//!   value for every legal move in canonical order.
//! * [`NodeStore`]: persistence behind a trait; [`SledStore`] (durable, compact
//!   chunked records) and [`MemoryStore`].
//! * [`GameCounts`] (module `results`): wins, draws and losses of the games
//!   played through a position, from its side to move's view.
//! * [`Book`]: the in-memory index (key -> node, values), a few dozen bytes per
//!   node plus 2 bytes per move.
//! * [`LiveBook`]: what a run grows: the store, the book, the roots, the leaves
//!   in flight, bans and kifu (`complete` / `abandon` / `ban`).
//! * [`Selector`]: search state only; alpha-beta over a borrowed [`LiveBook`]
//!   from the roots, handing out leaves while earlier ones are in flight
//!   (`select`), or by MC Softmax sampling ([`SelectMode::Softmax`]).
//! * [`synthetic`]: a deterministic pseudo-evaluator and a fast book grower for
//!   benchmarks.

mod bitset;
mod book;
mod columns;
mod error;
mod live_book;
mod node;
pub mod opponents;
pub mod results;
mod selector;
mod sled_guard;
mod sled_store;
mod softmax;
pub mod space;
mod store;
pub mod store_path;
pub mod synthetic;
pub mod terashock;
pub mod twins;

pub use book::{Book, BookLoader};
pub use error::BookError;
pub use live_book::LiveBook;
pub use node::{NodeId, Origin, Thought, ThoughtNode};
pub use opponents::{
    OpponentId, OpponentRecord, OpponentSelection, check_opponent_identity, learning_counts,
};
pub use results::{GameCounts, GameCountsDecodeError};
pub use selector::{DEFAULT_SELECT_SEED, Leaf, SelectMode, SelectStats, Selector, SoftmaxSelect};
pub use sled_store::{
    BackupSnapshot, BackupSummary, CheckReport, CompactSummary, Compactor, ExportLedger,
    FileFingerprint, Holdings, KEPT_EXPORTS, RECORD_FILE, SECRET_BYTES, SledReader, SledStore,
    TABLES,
};
pub use softmax::softmax_policy;
pub use store::{DryRun, MAX_ROOTS, MemoryStore, NodeStore, RunConfig, check_roots};
