//! The flags of `book-tools match`, and what they mean together: each
//! side's book rule, the opponent (one description or its `--opponent-*`
//! shorthand), the budgets, the SPRT.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use stera_engine::Player;
use stera_engine::choice::EngineChoice;
use stera_games::book::{
    DEFAULT_TEMPERATURE, YANEURAOU_BLACK_LIMIT, YANEURAOU_EVAL_DIFF, YANEURAOU_WHITE_LIMIT,
};
use stera_games::results_book::DEFAULT_PRIOR_GAMES;
use stera_games::stats::Sprt;
use stera_games::{Budget, DEFAULT_PLY_LIMIT, MoveRule, OpponentSpec, Route};
use stera_service::engine_flags::{EngineFlags, MoveLimitArgs, OpponentChoice};
use stera_service::export::MAX_LEAF_DISCOUNT;
use stera_service::opponent_flags::parse_opponent;

use super::suite;
use crate::remote_player::Cluster;

#[derive(clap::Args)]
pub struct Args {
    /// The book store under test (its moves are the tera-shock analysis: the
    /// values an export writes). Required unless --book names a file instead.
    #[arg(long, value_name = "DB", required_unless_present = "book")]
    pub(super) db: Option<PathBuf>,
    /// A book file under test instead of a store (YaneuraOu's text book, or `.ybb`
    /// binary by its extension): an export as an engine would play it. Default:
    /// the store of --db.
    #[arg(long, value_name = "FILE", conflicts_with = "db")]
    pub(super) book: Option<PathBuf>,
    /// The book store it plays against (the same store is allowed); without it
    /// (and without --against-book), against the engine without a book.
    #[arg(long, value_name = "DB")]
    pub(super) against: Option<PathBuf>,
    /// A book file it plays against (text, or `.ybb` binary by its extension).
    /// Default: --against, else no book.
    #[arg(long, value_name = "FILE", conflicts_with = "against")]
    pub(super) against_book: Option<PathBuf>,
    /// How a side picks among its book's moves: `best` (the best value only:
    /// YaneuraOu with BookEvalDiff 0, the setting the README recommends from
    /// BENCHMARKS "Book strength", and the default of YaneuraOu's BOOK_OPTIONS_V2
    /// option set), `yaneuraou` (YaneuraOu's rule with its classic
    /// default options: uniformly among the moves within --eval-diff of the best
    /// and not below the side's --eval-limit-*, by count with --by-count; none
    /// admitted: out of book), `softmax` (of the values at --play-temperature) or
    /// `count` (in proportion to the count field; book files only), or
    /// `results` (the best estimate from the store's game results, each move's
    /// score shrunk towards its value by --prior-games: what `book-tools learn`
    /// taught it; stores only, a book file carries no results).
    #[arg(long, value_enum, default_value_t = BookMoves::Best)]
    pub(super) book_moves: BookMoves,
    /// --book-moves of the --against/--against-book side (default: the same).
    #[arg(long, value_enum)]
    pub(super) against_book_moves: Option<BookMoves>,
    /// `yaneuraou`: admit moves at most CP below the best (YaneuraOu's
    /// BookEvalDiff).
    #[arg(long, value_name = "CP", default_value_t = YANEURAOU_EVAL_DIFF)]
    pub(super) eval_diff: i32,
    /// `yaneuraou`: never admit a Black move valued below CP (BookEvalBlackLimit).
    #[arg(long, value_name = "CP", default_value_t = YANEURAOU_BLACK_LIMIT, allow_hyphen_values = true)]
    pub(super) eval_limit_black: i32,
    /// `yaneuraou`: never admit a White move valued below CP (BookEvalWhiteLimit).
    #[arg(long, value_name = "CP", default_value_t = YANEURAOU_WHITE_LIMIT, allow_hyphen_values = true)]
    pub(super) eval_limit_white: i32,
    /// `yaneuraou`: weigh the admitted moves by their count field
    /// (ConsiderBookMoveCount); off by default, as in YaneuraOu.
    #[arg(long)]
    pub(super) by_count: bool,
    /// Use the books only for positions up to this game ply (YaneuraOu's
    /// BookMoves, whose own default is 16); 0: no book at all, the engine
    /// alone (a no-book baseline against the same opponent). Default: every
    /// ply.
    #[arg(long, value_name = "PLY")]
    pub(super) book_max_ply: Option<u32>,
    /// Analyse a store (--db, --against) counting every move into a position it
    /// has not thought this many centipawns below its stored value, as `export
    /// --export-leaf-discount` does (0 to 200). Book files carry their values as
    /// exported. Default 0: the analysis of a plain export.
    #[arg(long = "export-leaf-discount", alias = "leaf-discount", value_name = "CP", default_value_t = 0,
          value_parser = clap::value_parser!(i16).range(0..=i64::from(MAX_LEAF_DISCOUNT)))]
    pub(super) leaf_discount: i16,
    /// `results`: the weight of a move's value against its games, in games (the
    /// same flag as `book-tools learn`).
    #[arg(long, value_name = "GAMES", default_value_t = DEFAULT_PRIOR_GAMES,
          value_parser = crate::game_threads::parse_prior_games)]
    pub(super) prior_games: f64,
    /// `results`: whose learning games choose the moves: `all` (every learning
    /// opponent of the store, their games added) or a comma-separated list of
    /// opponent numbers or identities as `book-tools stats` lists them. Self-play
    /// games (the coordinator's self-play games) never count here.
    #[arg(long, value_name = "LIST", default_value = "all",
          value_parser = crate::common::parse_opponents)]
    pub(super) opponents: stera_book::OpponentSelection,
    /// `softmax`: temperature in centipawns with which a side samples its book
    /// moves (0: always the best move, as the coordinator's flag for its games'
    /// book moves).
    #[arg(long = "play-temperature", alias = "temperature", value_name = "CP", default_value_t = DEFAULT_TEMPERATURE)]
    pub(super) temperature: f64,
    /// Games to play (pairs of one opening with colours swapped; an odd number
    /// leaves the last pair incomplete). With --sprt, the most games to play.
    #[arg(long, default_value_t = 100)]
    pub(super) games: usize,
    /// Openings from a file instead of the book, one per line: `startpos`, an
    /// SFEN, or a position command with moves (`startpos moves 7g7f 3c3d`); `#`
    /// starts a comment. Each line is one pair's opening. Default: openings from
    /// the book under test (--suite-plies).
    #[arg(long, value_name = "FILE")]
    pub(super) openings: Option<PathBuf>,
    /// Openings from the book under test (the default): distinct positions
    /// reached from its roots (a book file: from startpos) through moves into
    /// positions the book holds, at these plies (`LO-HI` or `N`; moves from the
    /// start of the root's line, so the children of a `startpos` root are at 1).
    #[arg(long, value_name = "LO-HI", default_value = "2-8")]
    pub(super) suite_plies: suite::PlyRange,
    /// Openings of N random legal moves from the roots instead, kept when the
    /// engine scores them within --balanced-cp. Default: openings from the book.
    #[arg(long, value_name = "N", conflicts_with = "openings")]
    pub(super) random_plies: Option<u32>,
    /// --random-plies: the largest absolute engine score of a kept opening.
    #[arg(long, value_name = "CP", default_value_t = 150)]
    pub(super) balanced_cp: i32,
    /// Use the openings again, in turn, when there are fewer than pairs (their
    /// games may then repeat; see --max-repeats).
    #[arg(long)]
    pub(super) repeat_openings: bool,
    #[arg(long, value_name = "SHARE", help = crate::game_threads::NODE_JITTER_HELP)]
    pub(super) node_jitter: Option<f64>,
    /// --node-jitter of the opponent's engine. Only with a node limit for the
    /// opponent (--opponent-nodes, or --nodes when it has no limits of its own).
    /// Default: --node-jitter (or its default) when the opponent has a node
    /// limit, else 0.
    #[arg(long, value_name = "SHARE")]
    pub(super) opponent_node_jitter: Option<f64>,
    /// The opponent as one description, in the grammar of `learn
    /// --learn-opponent` and the coordinator's: engine flags, a budget
    /// (--nodes, --depth or --time-ms), --node-jitter and --engine-id (the
    /// engine's identity, or a part of it: with --coordinator the opponent
    /// plays on the coordinator's workers of that engine, otherwise the
    /// engine started here must say it), quoted as one argument, e.g.
    /// `--opponent "--engine-id Fairy-Stockfish --nodes 20000"`. The
    /// --opponent-* flags are a shorthand for the same. Default: the side
    /// under test's engine and budget.
    #[arg(
        long = "opponent",
        value_name = "SPEC",
        allow_hyphen_values = true,
        value_parser = parse_opponent,
        conflicts_with_all = [
            "opponent_node_jitter", "opponent_engine", "opponent_engine_cmd",
            "opponent_engine_option", "opponent_go_mode", "opponent_timeout_secs",
            "opponent_cp_is_win_rate", "opponent_win_rate_coefficient",
            "opponent_eval_file", "opponent_fv_scale", "opponent_nodes",
            "opponent_depth", "opponent_time_ms",
        ]
    )]
    pub(super) opponent_spec: Option<OpponentSpec>,
    /// The largest share of repeated games (the same moves with the book under
    /// test on the same side) and of repeated pairs for which an interval is
    /// printed; above it the games are not independent and the match reports
    /// counts only (and exits with an error).
    #[arg(long, value_name = "SHARE", default_value_t = 0.05)]
    pub(super) max_repeats: f64,
    /// Stop by a sequential probability ratio test of ELO0 against ELO1 (e.g.
    /// `0,10`; logistic Elo over pairs, as fishtest), at most --games games.
    /// Default: no test, exactly --games games.
    #[arg(long, value_name = "ELO0,ELO1", allow_hyphen_values = true)]
    pub(super) sprt: Option<String>,
    /// --sprt: the false-positive rate (accepting ELO1 when ELO0 holds).
    #[arg(long, default_value_t = 0.05)]
    pub(super) alpha: f64,
    /// --sprt: the false-negative rate.
    #[arg(long, default_value_t = 0.05)]
    pub(super) beta: f64,
    /// Games played at the same time (each with its own two engines), 1 to 256.
    #[arg(long, default_value_t = 1, value_parser = crate::learn::parse_concurrency)]
    pub(super) concurrency: usize,
    /// Moves after which a game is a draw.
    #[arg(long, default_value_t = DEFAULT_PLY_LIMIT)]
    pub(super) ply_limit: u32,
    /// Adjudicate a game when both sides' scores agree beyond this many
    /// centipawns for --adjudicate-plies moves (0: never), as the coordinator's.
    #[arg(long, value_name = "CP", default_value_t = 0)]
    pub(super) adjudicate_cp: u32,
    /// Consecutive moves the scores must agree for --adjudicate-cp (at least 2;
    /// the coordinator's default too).
    #[arg(long, value_name = "PLIES", default_value_t = stera_games::DEFAULT_ADJUDICATE_PLIES)]
    pub(super) adjudicate_plies: u32,
    /// Seed of the suite's order, the book move draws and the node jitter (the
    /// same seed gives the same games with deterministic engines; the
    /// coordinator's flag for its games' draws).
    #[arg(
        long = "play-seed",
        alias = "seed",
        value_name = "SEED",
        default_value_t = stera_games::DEFAULT_PLAY_SEED
    )]
    pub(super) seed: u64,
    /// Write the games to this file, each as it ends; its extension chooses the
    /// format, as for the coordinator's: `.csa` CSA (games separated by `/`
    /// lines), anything else one line per game, `sfen START moves ...`, a tab,
    /// and the result. The games go to a temporary file beside FILE
    /// (`.FILE.stera-partial-PID.….tmp`) that is renamed to FILE when the match
    /// ends: a match that fails (a full disk, an engine that dies) leaves no
    /// FILE, and an earlier FILE as it was. Default: the games are counted, not
    /// written.
    #[arg(long, value_name = "FILE")]
    pub(super) out_games: Option<PathBuf>,
    /// Write the result as JSON to this file as well (`-`, or no value:
    /// standard output, instead of the text summary), as `remote status --json`
    /// takes it; written whole under a temporary name and renamed, so a match
    /// that fails leaves no FILE. Default: the text summary only.
    #[arg(long, value_name = "FILE", num_args = 0..=1, default_missing_value = "-")]
    pub(super) json: Option<PathBuf>,
    #[command(flatten)]
    pub(super) engine: EngineFlags,
    #[command(flatten)]
    pub(super) limits: MoveLimitArgs,
    #[command(flatten)]
    pub(super) opponent: OpponentChoice,
    #[command(flatten)]
    pub(super) cluster: Cluster,
}

/// How a side picks its book moves (see [`MoveRule`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum BookMoves {
    Yaneuraou,
    Best,
    Softmax,
    Count,
    Results,
}

impl Args {
    pub(super) fn rule(&self, moves: BookMoves) -> MoveRule {
        match moves {
            BookMoves::Best => MoveRule::Best,
            BookMoves::Count => MoveRule::Count,
            BookMoves::Results => MoveRule::Results {
                prior_games: self.prior_games,
            },
            BookMoves::Softmax => MoveRule::Softmax {
                temperature: self.temperature,
            },
            BookMoves::Yaneuraou => MoveRule::YaneuraOu {
                eval_diff: self.eval_diff,
                black_limit: self.eval_limit_black,
                white_limit: self.eval_limit_white,
                by_count: self.by_count,
            },
        }
    }

    pub(super) fn check(&self) -> Result<()> {
        if self.games == 0 {
            bail!("--games must be at least 1");
        }
        crate::game_threads::check_node_jitter(
            "--node-jitter",
            self.node_jitter,
            &self.limits.limits(),
        )?;
        crate::game_threads::check_node_jitter(
            "--opponent-node-jitter",
            self.opponent_node_jitter,
            &self.opponent.limits(&self.limits.as_limit_args()).limits(),
        )
        .context("the opponent's node limit is --opponent-nodes, or --nodes when it has no --opponent-* limits")?;
        if !(self.max_repeats >= 0.0 && self.max_repeats <= 1.0) {
            bail!("--max-repeats must lie in [0, 1], not {}", self.max_repeats);
        }
        if !(self.temperature >= 0.0 && self.temperature.is_finite()) {
            bail!(
                "--play-temperature must be a finite number >= 0, not {}",
                self.temperature
            );
        }
        if self.eval_diff < 0 {
            bail!("--eval-diff must be at least 0, not {}", self.eval_diff);
        }
        // Before a store is opened or an engine started: an --opponent-* flag
        // the opponent's engine would not use is never left aside.
        self.opponent.check_flags().map_err(|e| match e {
            stera_engine::EvalError::Engine { reason, .. } => anyhow::anyhow!(reason),
            other => anyhow::anyhow!(other),
        })?;
        Ok(())
    }

    /// The opponent of `--opponent SPEC`, if given.
    pub(super) fn spec(&self) -> Option<&OpponentSpec> {
        self.opponent_spec.as_ref()
    }

    /// True when the opponent names an engine of its own (by --opponent SPEC
    /// or --opponent-* flags).
    pub(super) fn opponent_names_engine(&self) -> bool {
        match self.spec() {
            Some(spec) => spec.names_engine() || spec.engine_id.is_some(),
            None => self.opponent.names_engine(),
        }
    }

    /// The opponent's engines: on the coordinator's workers of its
    /// --engine-id with --coordinator, else started here (the side's own
    /// engines when the opponent names none).
    pub(super) fn opponent_engines(&self, own: &Engines) -> Engines {
        if let Some(spec) = self.spec() {
            return match (own, &spec.engine_id) {
                (Engines::Cluster(cluster, _), Some(id)) => {
                    Engines::Cluster(cluster.clone(), Route::Engine(id.clone()))
                }
                _ if spec.names_engine() => Engines::Local(spec.engine.clone()),
                _ => own.clone(),
            };
        }
        if self.opponent.names_engine() {
            Engines::Local(self.opponent.engine(&self.engine.choice()))
        } else {
            own.clone()
        }
    }

    /// Both sides' budgets: the side under test's, then its opponent's.
    pub(super) fn budgets(&self) -> [Budget; 2] {
        let own = self.limits.limits();
        let own_jitter = crate::game_threads::node_jitter_or_default(self.node_jitter, &own);
        if let Some(spec) = self.spec() {
            return [
                Budget {
                    limits: own,
                    node_jitter: own_jitter,
                },
                spec.budget_per_move(),
            ];
        }
        let other = self.opponent.limits(&self.limits.as_limit_args()).limits();
        // The side's --node-jitter goes to an opponent with a node limit only.
        let other_jitter = crate::game_threads::node_jitter_or_default(
            self.opponent_node_jitter
                .or(self.node_jitter.filter(|_| other.nodes.is_some())),
            &other,
        );
        [
            Budget {
                limits: own,
                node_jitter: own_jitter,
            },
            Budget {
                limits: other,
                node_jitter: other_jitter,
            },
        ]
    }

    pub(super) fn sprt(&self) -> Result<Option<Sprt>> {
        let Some(text) = &self.sprt else {
            return Ok(None);
        };
        let parse = |s: &str| -> Result<f64> {
            s.trim()
                .parse::<f64>()
                .with_context(|| format!("--sprt {text}: `{s}` is not a number"))
        };
        let Some((a, b)) = text.split_once(',') else {
            bail!("--sprt takes ELO0,ELO1 (e.g. 0,10), not `{text}`");
        };
        let sprt = Sprt::new(parse(a)?, parse(b)?, self.alpha, self.beta)
            .map_err(|e| anyhow::anyhow!("--sprt {text}: {e}"))?;
        Ok(Some(sprt))
    }
}

/// Who plays the engines' moves.
#[derive(Clone)]
pub(super) enum Engines {
    Local(EngineChoice),
    /// The workers of a coordinator that the route admits.
    Cluster(Cluster, Route),
}

impl Engines {
    pub(super) fn start_player(&self) -> Result<Box<dyn Player>> {
        match self {
            Self::Local(choice) => Ok(choice.start_player()?),
            Self::Cluster(cluster, route) => Ok(Box::new(crate::remote_player::connect(
                cluster,
                route.clone(),
            )?)),
        }
    }
}
