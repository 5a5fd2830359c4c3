//! Learning games on the cluster: the book side played by the learner
//! ([`stera_games::LearningPolicy`], the same one `book-tools learn` plays), the opponents by
//! the workers' engines at the budgets of a pool, every finished game counted
//! in the store against its opponent.
//!
//! The game stays in the coordinator, as a client's game does in `book-tools
//! match --coordinator`: each engine move, the opponent's and the book side's
//! out of book, is one search job (the position with every move so far) served
//! by any worker, so a worker lost mid-game costs one search, and every move is
//! checked legal when it comes back (`search.rs`) and played under the
//! coordinator's own [`stera_games::Referee`]: the game counted is the one the
//! coordinator saw, not a worker's claim. `--learn-concurrency` games run at
//! once, each holding at most one search: that is the share of the workers'
//! slots learning takes (searches go before think jobs).
//!
//! Two halves, as everywhere in the coordinator: [`LearnLedger`] lives with the
//! dispatcher (the one owner of the store) and counts a finished game durably
//! ([`stera_book::NodeStore::record_learning_game`], one game id each, so a game
//! is counted at most once and a restarted coordinator goes on from the ids
//! stored); [`LearnDriver`] plays the games on threads of its own and talks to
//! the dispatcher through its handle only.
//!
//! How far learning has come is the count of settled key positions
//! ([`stera_games::results_book::KeyPositions`], the same as `book-tools learn` reports): in the progress
//! lines, and with `--learn-stop-when-settled P` the rule that ends learning
//! early. Once a check (after each round of the openings) finds every key
//! position settled, no new game starts, the games in flight are counted, and
//! the last thread to end tells the ledger that what it counted is the run's
//! target ([`LearnLedger::end`]).
//!
//! What the run decides (openings, colours, seeds, the opponent of each game,
//! settling and stopping) is [`stera_games::LearningRun`]'s, the same as
//! `book-tools learn`'s; each side's moves are searched through
//! [`stera_games::SearchPlayer`] with a route: the book side on the workers
//! that think for the book, each opponent on the workers of its engine
//! (`--engine-id`), or the book's own engine without one. A game whose
//! opponent moves came from two engines is not counted (its opponent is no
//! one), so a mixed cluster never mixes engines in one ledger.
//!
//! * [`args`]: the flags.
//! * [`ledger`]: the dispatcher's half.
//! * [`driver`]: the game threads.

mod args;
mod driver;
mod ledger;

pub use args::LearnArgs;
pub use driver::LearnDriver;
pub(crate) use ledger::LearnLedger;
