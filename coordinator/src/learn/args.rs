//! The coordinator's learning flags.

use stera_games::opponent::Pool;
use stera_games::results_book::{DEFAULT_LEARNING_WINDOW, check_settled_threshold};

/// The flags of learning games.
#[derive(Debug, Clone, clap::Args)]
pub struct LearnArgs {
    /// Learning games to play in this run (the run ends only when they are
    /// counted): the book side follows the learner (Thompson sampling over the
    /// book's moves by their learning results, as `book-tools learn`), the
    /// opponents are the workers' engines at the budgets of --learn-opponent.
    /// Default 0: no learning games.
    #[arg(long, value_name = "GAMES", default_value_t = 0)]
    pub learn_games: u64,
    /// Learning games played at once, 1 to 256 (as `book-tools learn
    /// --learn-concurrency`). Each holds one search job at a time, and
    /// searches go before think jobs: this is the number of the
    /// workers' job slots learning takes.
    #[arg(long, value_name = "N", default_value_t = stera_games::DEFAULT_LEARN_CONCURRENCY,
          value_parser = parse_learn_concurrency)]
    pub learn_concurrency: usize,
    /// An opponent of the pool (repeatable), quoted as one argument, in the
    /// grammar of `book-tools learn --learn-opponent`: a budget (`--nodes N`,
    /// `--depth D` or `--time-ms MS`) with `--weight W` (its share of the
    /// games, default 1), `--node-jitter S` (default 0.5) and `--engine-id
    /// TEXT`, the engine as its workers report it (`book-tools remote status`
    /// lists them): its moves go to workers of that engine, which connect
    /// beside the book's workers and answer its searches only. Without
    /// --engine-id the book's own engine plays it. Engine flags
    /// (`--engine-cmd`...) are allowed with --engine-id, so one description
    /// serves `book-tools learn` and the cluster. E.g. `--learn-opponent
    /// "--nodes 500" --learn-opponent "--engine-id Fairy-Stockfish --nodes
    /// 20000 --weight 2"`. Its games are counted under the engine's identity
    /// and the budget. Default: one opponent, the book's engine at
    /// --learn-nodes.
    #[arg(long, value_name = "FLAGS", allow_hyphen_values = true)]
    pub learn_opponent: Vec<String>,
    /// Node budget per move of the book side's engine (once its line leaves
    /// the book): the budget the book is made for, jittered by
    /// --learn-node-jitter (`book-tools learn --nodes`, whose default is the
    /// same).
    #[arg(long, value_name = "NODES", default_value_t = stera_games::DEFAULT_LEARN_NODES)]
    pub learn_nodes: u64,
    /// Jitter each book-side engine move's node limit by up to this share (0.5 =
    /// ±50 %), drawn from --learn-seed, so that a deterministic engine does not
    /// replay the same game (0: every move at --learn-nodes); `book-tools learn
    /// --node-jitter` with a node limit, and an opponent's `--node-jitter`, have
    /// the same default.
    #[arg(long, value_name = "SHARE", default_value_t = stera_games::play::DEFAULT_NODE_JITTER)]
    pub learn_node_jitter: f64,
    /// Openings of the learning games, one per line (`startpos`, an SFEN, or a
    /// position command with moves; `#` starts a comment), used in turn, each
    /// with the learner as Black and as White: the same reader as `book-tools
    /// match` and `learn`. Default: the store's roots.
    #[arg(long, value_name = "FILE")]
    pub learn_openings: Option<std::path::PathBuf>,
    /// Seed of the learner's draws, the node jitter and the opponents' turns.
    #[arg(long, value_name = "SEED", default_value_t = stera_games::DEFAULT_PLAY_SEED)]
    pub learn_seed: u64,
    /// Grow where the games go: where a learning game left the book (an
    /// opponent's reply the book lacks, or a move the learner tried that nobody
    /// thought) before this game ply, that position is queued for thinking (0:
    /// off). Early exits are what the book's users meet in every game; deeper
    /// ones are left to the selection.
    #[arg(long, value_name = "PLY", default_value_t = 16)]
    pub learn_grow_plies: u32,
    /// Share of the think jobs given to the positions queued by
    /// --learn-grow-plies while any are queued (0 to 1; the rest follow the
    /// Super Tera-Shock selection).
    #[arg(long, value_name = "SHARE", default_value_t = 0.5)]
    pub learn_grow_share: f64,
    /// Start no new learning game once every key position (each learning
    /// opening's position, and the one after the opponents' most played reply
    /// there) is settled: the move the results rule plays there is the best
    /// with at least this posterior probability, in (0.5, 1); checked after
    /// each round of the openings (every opening played as Black and as
    /// White). Games in flight finish and are counted; the run then goes on as
    /// when --learn-games is reached. Default: play all --learn-games.
    #[arg(long, value_name = "PROBABILITY")]
    pub learn_stop_when_settled: Option<f64>,
    /// Try only the book moves at most CP below the position's best value: the
    /// window the learner samples from, as `book-tools learn --learn-window`.
    /// The weight of a move's value against its games is --prior-games, the
    /// same the exports by results use.
    #[arg(long, value_name = "CP", default_value_t = DEFAULT_LEARNING_WINDOW)]
    pub learn_window: i32,
}

/// `--learn-concurrency`: 1 to 256 games at once, as `book-tools learn`'s.
fn parse_learn_concurrency(text: &str) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(n) if (1..=256).contains(&n) => Ok(n),
        _ => Err(format!("`{text}` is not 1 to 256 games at once")),
    }
}

impl LearnArgs {
    /// Checks the learning flags alone, before anything starts.
    ///
    /// # Errors
    /// What [`LearnArgs::pool`] refuses, a negative window, a stopping
    /// probability outside (0.5, 1), or one given without learning games.
    pub fn check(&self) -> Result<(), String> {
        if self.learn_window < 0 {
            return Err(format!(
                "--learn-window must be at least 0, not {}",
                self.learn_window
            ));
        }
        if let Some(p) = self.learn_stop_when_settled {
            check_settled_threshold(p).map_err(|e| format!("--learn-stop-when-settled {e}"))?;
            if self.learn_games == 0 {
                return Err(
                    "--learn-stop-when-settled stops learning games: give --learn-games too".into(),
                );
            }
        }
        self.pool().map(drop)
    }

    /// The engines the pool's opponents name (`--engine-id`): workers of
    /// these answer searches only.
    #[must_use]
    pub fn opponent_engines(&self) -> Vec<String> {
        self.pool()
            .map(|pool| {
                pool.members()
                    .iter()
                    .filter_map(|m| m.engine_id.clone())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The pool these flags name.
    ///
    /// # Errors
    /// An opponent that cannot be read, or one that names an engine without
    /// `--engine-id` (the coordinator cannot tell which workers run it).
    pub fn pool(&self) -> Result<Pool, String> {
        if self.learn_nodes == 0 {
            return Err("--learn-nodes must be at least 1".into());
        }
        if !(0.0..1.0).contains(&self.learn_node_jitter) {
            return Err(format!(
                "--learn-node-jitter must lie in [0, 1), not {}",
                self.learn_node_jitter
            ));
        }
        if !(0.0..=1.0).contains(&self.learn_grow_share) {
            return Err(format!(
                "--learn-grow-share must lie in [0, 1], not {}",
                self.learn_grow_share
            ));
        }
        let members = if self.learn_opponent.is_empty() {
            vec![
                stera_service::opponent_flags::parse_opponent(&format!(
                    "--nodes {}",
                    self.learn_nodes
                ))
                .map_err(|e| e.to_string())?,
            ]
        } else {
            self.learn_opponent
                .iter()
                .map(|text| {
                    let spec = stera_service::opponent_flags::parse_opponent(text)
                        .map_err(|e| e.to_string())?;
                    // Which workers play it, or why none can.
                    spec.route().map_err(|e| format!("--learn-opponent: {e}"))?;
                    Ok(spec)
                })
                .collect::<Result<_, String>>()?
        };
        Pool::new(members).map_err(|e| e.to_string())
    }
}
