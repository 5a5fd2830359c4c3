//! `book-tools match`: one book against another (or against no book), each side
//! with its engine once its book ends: the same engine on both sides by default,
//! or an opponent engine of its own (`--opponent-engine*`, `--opponent-nodes`...),
//! so that a book made for one engine can be measured against another.
//!
//! A match measures a book only if its games are independent: engines at a node
//! limit are deterministic, so games from one opening repeat. Hence:
//! * every pair of games (colours swapped, the same book draws) starts from its
//!   own opening of a suite ([`suite`]): distinct positions reached through the
//!   book's moves at the plies asked for (the default), the lines of a file, or
//!   random balanced plies; an opening is used again only when asked;
//! * engines at a node limit get a jittered limit by default
//!   ([`stera_games::play::DEFAULT_NODE_JITTER`]);
//! * the report ([`report`]) counts distinct games and pairs and withholds the
//!   interval when repeated games or pairs exceed a small share, or when the
//!   book under test played no move in any game;
//! * results are pentanomial over pairs (Elo with a 95 % interval, LOS) and can
//!   stop early by SPRT;
//! * where the book side leaves its book is reported ([`coverage`]).
//!
//! Each side plays its book's moves while its position is in its book, by a
//! [`MoveRule`] (YaneuraOu's own rule by default), and its engine's moves
//! otherwise. Games run in `--concurrency` threads, each with one engine per
//! side, each started from its side's choice: local engines, or the workers of
//! a running coordinator (`--coordinator`, see [`crate::remote_player`]; an
//! opponent engine named by `--opponent-*` flags runs locally). Finished games are counted
//! and written as they end, so memory does not grow with the number of games.
//! The result is from the point of view of the book under test.

mod coverage;
mod report;
pub(crate) mod suite;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use stera_book::{Book, NodeStore, SledStore};
use stera_engine::Player;
use stera_engine::choice::{EngineChoice, MoveLimitArgs, OpponentChoice};
use stera_games::book::{
    DEFAULT_TEMPERATURE, YANEURAOU_BLACK_LIMIT, YANEURAOU_EVAL_DIFF, YANEURAOU_WHITE_LIMIT,
};
use stera_games::openings::Opening;
use stera_games::results_book::DEFAULT_PRIOR_GAMES;
use stera_games::schedule;
use stera_games::stats::Sprt;
use stera_games::{
    AnalysedBook, BookPolicy, BookSource, Budget, DEFAULT_PLY_LIMIT, Game, MoveRule, PlayOptions,
    ResultsBook, RuledBook,
};
use stera_games::{OpponentSpec, Route};
use stera_rules::Color;
use stera_service::export::MAX_LEAF_DISCOUNT;

use crate::file_book::FileBook;
use crate::remote_player::Cluster;
use coverage::Coverage;
use report::{Report, Settings};
use suite::SuiteSource;

#[derive(clap::Args)]
pub struct Args {
    /// The book store under test (its moves are the tera-shock analysis: the
    /// values an export writes). Required unless --book names a file instead.
    #[arg(long, value_name = "DB", required_unless_present = "book")]
    db: Option<PathBuf>,
    /// A book file under test instead of a store (YaneuraOu's text book, or `.ybb`
    /// binary by its extension): an export as an engine would play it. Default:
    /// the store of --db.
    #[arg(long, value_name = "FILE", conflicts_with = "db")]
    book: Option<PathBuf>,
    /// The book store it plays against (the same store is allowed); without it
    /// (and without --against-book), against the engine without a book.
    #[arg(long, value_name = "DB")]
    against: Option<PathBuf>,
    /// A book file it plays against (text, or `.ybb` binary by its extension).
    /// Default: --against, else no book.
    #[arg(long, value_name = "FILE", conflicts_with = "against")]
    against_book: Option<PathBuf>,
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
    book_moves: BookMoves,
    /// --book-moves of the --against/--against-book side (default: the same).
    #[arg(long, value_enum)]
    against_book_moves: Option<BookMoves>,
    /// `yaneuraou`: admit moves at most CP below the best (YaneuraOu's
    /// BookEvalDiff).
    #[arg(long, value_name = "CP", default_value_t = YANEURAOU_EVAL_DIFF)]
    eval_diff: i32,
    /// `yaneuraou`: never admit a Black move valued below CP (BookEvalBlackLimit).
    #[arg(long, value_name = "CP", default_value_t = YANEURAOU_BLACK_LIMIT, allow_hyphen_values = true)]
    eval_limit_black: i32,
    /// `yaneuraou`: never admit a White move valued below CP (BookEvalWhiteLimit).
    #[arg(long, value_name = "CP", default_value_t = YANEURAOU_WHITE_LIMIT, allow_hyphen_values = true)]
    eval_limit_white: i32,
    /// `yaneuraou`: weigh the admitted moves by their count field
    /// (ConsiderBookMoveCount); off by default, as in YaneuraOu.
    #[arg(long)]
    by_count: bool,
    /// Use the books only for positions up to this game ply (YaneuraOu's
    /// BookMoves, whose own default is 16); 0: no book at all, the engine
    /// alone (a no-book baseline against the same opponent). Default: every
    /// ply.
    #[arg(long, value_name = "PLY")]
    book_max_ply: Option<u32>,
    /// Analyse a store (--db, --against) counting every move into a position it
    /// has not thought this many centipawns below its stored value, as `export
    /// --export-leaf-discount` does (0 to 200). Book files carry their values as
    /// exported. Default 0: the analysis of a plain export.
    #[arg(long = "export-leaf-discount", alias = "leaf-discount", value_name = "CP", default_value_t = 0,
          value_parser = clap::value_parser!(i16).range(0..=i64::from(MAX_LEAF_DISCOUNT)))]
    leaf_discount: i16,
    /// `results`: the weight of a move's value against its games, in games (the
    /// same flag as `book-tools learn`).
    #[arg(long, value_name = "GAMES", default_value_t = DEFAULT_PRIOR_GAMES,
          value_parser = crate::game_threads::parse_prior_games)]
    prior_games: f64,
    /// `results`: whose learning games choose the moves: `all` (every learning
    /// opponent of the store, their games added) or a comma-separated list of
    /// opponent numbers or identities as `book-tools stats` lists them. Self-play
    /// games (the coordinator's play jobs) never count here.
    #[arg(long, value_name = "LIST", default_value = "all",
          value_parser = crate::common::parse_opponents)]
    opponents: stera_book::OpponentSelection,
    /// `softmax`: temperature in centipawns with which a side samples its book
    /// moves (0: always the best move, as the coordinator's flag for its games'
    /// book moves).
    #[arg(long = "play-temperature", alias = "temperature", value_name = "CP", default_value_t = DEFAULT_TEMPERATURE)]
    temperature: f64,
    /// Games to play (pairs of one opening with colours swapped; an odd number
    /// leaves the last pair incomplete). With --sprt, the most games to play.
    #[arg(long, default_value_t = 100)]
    games: usize,
    /// Openings from a file instead of the book, one per line: `startpos`, an
    /// SFEN, or a position command with moves (`startpos moves 7g7f 3c3d`); `#`
    /// starts a comment. Each line is one pair's opening. Default: openings from
    /// the book under test (--suite-plies).
    #[arg(long, value_name = "FILE")]
    openings: Option<PathBuf>,
    /// Openings from the book under test (the default): distinct positions
    /// reached from its roots (a book file: from startpos) through moves into
    /// positions the book holds, at these plies (`LO-HI` or `N`; moves from the
    /// start of the root's line, so the children of a `startpos` root are at 1).
    #[arg(long, value_name = "LO-HI", default_value = "2-8")]
    suite_plies: suite::PlyRange,
    /// Openings of N random legal moves from the roots instead, kept when the
    /// engine scores them within --balanced-cp. Default: openings from the book.
    #[arg(long, value_name = "N", conflicts_with = "openings")]
    random_plies: Option<u32>,
    /// --random-plies: the largest absolute engine score of a kept opening.
    #[arg(long, value_name = "CP", default_value_t = 150)]
    balanced_cp: i32,
    /// Use the openings again, in turn, when there are fewer than pairs (their
    /// games may then repeat; see --max-repeats).
    #[arg(long)]
    repeat_openings: bool,
    #[arg(long, value_name = "SHARE", help = crate::game_threads::NODE_JITTER_HELP)]
    node_jitter: Option<f64>,
    /// --node-jitter of the opponent's engine. Only with a node limit for the
    /// opponent (--opponent-nodes, or --nodes when it has no limits of its own).
    /// Default: --node-jitter (or its default) when the opponent has a node
    /// limit, else 0.
    #[arg(long, value_name = "SHARE")]
    opponent_node_jitter: Option<f64>,
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
        conflicts_with_all = [
            "opponent_node_jitter", "opponent_engine", "opponent_engine_cmd",
            "opponent_engine_option", "opponent_go_mode", "opponent_timeout_secs",
            "opponent_cp_is_win_rate", "opponent_win_rate_coefficient",
            "opponent_eval_file", "opponent_fv_scale", "opponent_nodes",
            "opponent_depth", "opponent_time_ms",
        ]
    )]
    opponent_spec: Option<String>,
    /// The largest share of repeated games (the same moves with the book under
    /// test on the same side) and of repeated pairs for which an interval is
    /// printed; above it the games are not independent and the match reports
    /// counts only (and exits with an error).
    #[arg(long, value_name = "SHARE", default_value_t = 0.05)]
    max_repeats: f64,
    /// Stop by a sequential probability ratio test of ELO0 against ELO1 (e.g.
    /// `0,10`; logistic Elo over pairs, as fishtest), at most --games games.
    /// Default: no test, exactly --games games.
    #[arg(long, value_name = "ELO0,ELO1", allow_hyphen_values = true)]
    sprt: Option<String>,
    /// --sprt: the false-positive rate (accepting ELO1 when ELO0 holds).
    #[arg(long, default_value_t = 0.05)]
    alpha: f64,
    /// --sprt: the false-negative rate.
    #[arg(long, default_value_t = 0.05)]
    beta: f64,
    /// Games played at the same time (each with its own two engines), 1 to 256.
    #[arg(long, default_value_t = 1, value_parser = crate::learn::parse_concurrency)]
    concurrency: usize,
    /// Moves after which a game is a draw.
    #[arg(long, default_value_t = DEFAULT_PLY_LIMIT)]
    ply_limit: u32,
    /// Adjudicate a game when both sides' scores agree beyond this many
    /// centipawns for --adjudicate-plies moves (0: never), as the coordinator's.
    #[arg(long, value_name = "CP", default_value_t = 0)]
    adjudicate_cp: u32,
    /// Consecutive moves the scores must agree for --adjudicate-cp (at least 2;
    /// the coordinator's default too).
    #[arg(long, value_name = "PLIES", default_value_t = stera_games::DEFAULT_ADJUDICATE_PLIES)]
    adjudicate_plies: u32,
    /// Seed of the suite's order, the book move draws and the node jitter (the
    /// same seed gives the same games with deterministic engines; the
    /// coordinator's flag for its games' draws).
    #[arg(
        long = "play-seed",
        alias = "seed",
        value_name = "SEED",
        default_value_t = stera_games::DEFAULT_PLAY_SEED
    )]
    seed: u64,
    /// Write the games to this file, each as it ends; its extension chooses the
    /// format, as for the coordinator's: `.csa` CSA (games separated by `/`
    /// lines), anything else one line per game, `sfen START moves ...`, a tab,
    /// and the result. Default: the games are counted, not written.
    #[arg(long, value_name = "FILE")]
    out_games: Option<PathBuf>,
    /// Write the result as JSON to this file as well (`-`, or no value:
    /// standard output, instead of the text summary), as `remote status --json`
    /// takes it. Default: the text summary only.
    #[arg(long, value_name = "FILE", num_args = 0..=1, default_missing_value = "-")]
    json: Option<PathBuf>,
    #[command(flatten)]
    engine: EngineChoice,
    #[command(flatten)]
    limits: MoveLimitArgs,
    #[command(flatten)]
    opponent: OpponentChoice,
    #[command(flatten)]
    cluster: Cluster,
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
    fn rule(&self, moves: BookMoves) -> MoveRule {
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

    fn check(&self) -> Result<()> {
        if self.games == 0 {
            bail!("--games must be at least 1");
        }
        self.spec()?;
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
    fn spec(&self) -> Result<Option<OpponentSpec>> {
        self.opponent_spec
            .as_deref()
            .map(|text| OpponentSpec::parse(text).context("--opponent"))
            .transpose()
    }

    /// True when the opponent names an engine of its own (by --opponent SPEC
    /// or --opponent-* flags).
    fn opponent_names_engine(&self) -> Result<bool> {
        Ok(match self.spec()? {
            Some(spec) => spec.names_engine() || spec.engine_id.is_some(),
            None => self.opponent.names_engine(),
        })
    }

    /// The opponent's engines: on the coordinator's workers of its
    /// --engine-id with --coordinator, else started here (the side's own
    /// engines when the opponent names none).
    fn opponent_engines(&self, own: &Engines) -> Result<Engines> {
        if let Some(spec) = self.spec()? {
            return Ok(match (own, &spec.engine_id) {
                (Engines::Cluster(cluster, _), Some(id)) => {
                    Engines::Cluster(cluster.clone(), Route::Engine(id.clone()))
                }
                _ if spec.names_engine() => Engines::Local(spec.engine.clone()),
                _ => own.clone(),
            });
        }
        Ok(if self.opponent.names_engine() {
            Engines::Local(self.opponent.engine(&self.engine))
        } else {
            own.clone()
        })
    }

    /// Both sides' budgets: the side under test's, then its opponent's.
    fn budgets(&self) -> Result<[Budget; 2]> {
        let own = self.limits.limits();
        let own_jitter = crate::game_threads::node_jitter_or_default(self.node_jitter, &own);
        if let Some(spec) = self.spec()? {
            return Ok([
                Budget {
                    limits: own,
                    node_jitter: own_jitter,
                },
                spec.budget_per_move(),
            ]);
        }
        let other = self.opponent.limits(&self.limits.as_limit_args()).limits();
        // The side's --node-jitter goes to an opponent with a node limit only.
        let other_jitter = crate::game_threads::node_jitter_or_default(
            self.opponent_node_jitter
                .or(self.node_jitter.filter(|_| other.nodes.is_some())),
            &other,
        );
        Ok([
            Budget {
                limits: own,
                node_jitter: own_jitter,
            },
            Budget {
                limits: other,
                node_jitter: other_jitter,
            },
        ])
    }

    fn sprt(&self) -> Result<Option<Sprt>> {
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
enum Engines {
    Local(EngineChoice),
    /// The workers of a coordinator that the route admits.
    Cluster(Cluster, Route),
}

impl Engines {
    fn start_player(&self) -> Result<Box<dyn Player>> {
        match self {
            Self::Local(choice) => Ok(choice.start_player()?),
            Self::Cluster(cluster, route) => Ok(Box::new(crate::remote_player::connect(
                cluster,
                route.clone(),
            )?)),
        }
    }
}

/// A finished game with the colour the book under test played.
pub(crate) struct Finished {
    pub index: usize,
    pub game: Game,
    pub own_color: Color,
    pub coverage: Coverage,
}

/// One side's book: its moves and the rule it plays them by.
struct SideBook {
    name: String,
    book: Arc<RuledBook>,
}

pub fn run(args: &Args) -> Result<()> {
    args.check()?;
    let sprt = args.sprt()?;
    let rules = stera_service::convert::game_rules(
        args.ply_limit,
        args.adjudicate_cp,
        args.adjudicate_plies,
    );
    rules.check()?;
    // Refused before any game is played: no output goes into a store.
    for (flag, out) in [("--out-games", &args.out_games), ("--json", &args.json)] {
        let Some(out) = out.as_ref().filter(|p| p.as_path() != Path::new("-")) else {
            continue;
        };
        match &args.db {
            Some(db) => stera_book::store_path::check_output_path(out, db),
            None => stera_book::store_path::check_output_path_outside_stores(out),
        }
        .with_context(|| format!("bad {flag} `{}`", out.display()))?;
    }
    // Opened now: a directory of its path swapped later cannot redirect it.
    let json_out = match args.json.as_deref() {
        Some(path) if path != Path::new("-") => Some(
            stera_book::store_path::BoundOutput::create(path, args.db.as_deref())
                .with_context(|| format!("bad --json `{}`", path.display()))?,
        ),
        _ => None,
    };
    let own_rule = args.rule(args.book_moves);
    let (own_source, roots, own_name): (Arc<dyn BookSource>, Vec<String>, String) =
        match (&args.db, &args.book) {
            (Some(db), _) => {
                let (book, roots) = load_book(
                    db,
                    args.leaf_discount,
                    matches!(own_rule, MoveRule::Results { .. }).then_some(&args.opponents),
                )?;
                (book, roots, db.display().to_string())
            }
            (None, Some(file)) => {
                let book = FileBook::open(file)?;
                warn_uniform_counts(own_rule, &book, "--book-moves");
                (
                    Arc::new(book),
                    vec!["startpos".to_owned()],
                    file.display().to_string(),
                )
            }
            (None, None) => bail!("--db or --book names the book under test"),
        };
    check_rule(own_rule, own_source.as_ref(), "--book-moves")?;
    let own = SideBook {
        name: own_name,
        book: Arc::new(RuledBook::new(
            Arc::clone(&own_source),
            own_rule,
            args.book_max_ply,
        )),
    };
    let other_rule = args.rule(args.against_book_moves.unwrap_or(args.book_moves));
    let other: Option<SideBook> = match (&args.against, &args.against_book) {
        (Some(path), _) => {
            let source: Arc<dyn BookSource> =
                if args.db.as_ref().is_some_and(|db| same_store(path, db)) {
                    Arc::clone(&own_source)
                } else {
                    load_book(
                        path,
                        args.leaf_discount,
                        matches!(other_rule, MoveRule::Results { .. }).then_some(&args.opponents),
                    )?
                    .0
                };
            Some(SideBook {
                name: path.display().to_string(),
                book: Arc::new(RuledBook::new(source, other_rule, args.book_max_ply)),
            })
        }
        (None, Some(file)) => {
            let book = FileBook::open(file)?;
            warn_uniform_counts(other_rule, &book, "--against-book-moves");
            Some(SideBook {
                name: file.display().to_string(),
                book: Arc::new(RuledBook::new(
                    Arc::new(book),
                    other_rule,
                    args.book_max_ply,
                )),
            })
        }
        (None, None) => None,
    };
    if let Some(other) = &other {
        check_rule(
            other_rule,
            other.book.source(),
            "--against-book-moves (or --book-moves)",
        )?;
    }
    let engines = if args.cluster.url()?.is_some() {
        Engines::Cluster(args.cluster.clone(), Route::Any)
    } else {
        Engines::Local(args.engine.clone())
    };
    let opponent_engines = args.opponent_engines(&engines)?;
    let mut first_player = engines.start_player().context("cannot start the engine")?;
    let identity = first_player.identity();
    let opponent_identity = if args.opponent_names_engine()? {
        opponent_engines
            .start_player()
            .context("cannot start the opponent's engine")?
            .identity()
    } else {
        identity.clone()
    };
    if let (Some(spec), Engines::Local(_)) = (args.spec()?, &opponent_engines) {
        spec.check_engine_id(&opponent_identity)?;
    }
    let budgets = args.budgets()?;
    let pairs = args.games.div_ceil(2);
    let suite_source = match (&args.openings, args.random_plies) {
        (Some(file), _) => SuiteSource::File(file.clone()),
        (None, Some(plies)) => SuiteSource::Random {
            plies,
            balanced_cp: args.balanced_cp,
        },
        (None, None) => SuiteSource::Book(args.suite_plies),
    };
    let options = PlayOptions {
        rules,
        limits: budgets[0].limits,
        seed: args.seed,
        node_jitter: budgets[0].node_jitter,
    };
    let openings = suite::build(&mut suite::Request {
        source: &suite_source,
        book: own_source.as_ref(),
        roots: &roots,
        pairs,
        repeat: args.repeat_openings,
        seed: args.seed,
        player: first_player.as_mut(),
        limits: &options.limits,
    })?;
    drop(first_player);
    let against = other
        .as_ref()
        .map_or_else(|| "no book".to_owned(), |o| o.name.clone());
    crate::tell!(
        "match: {} ({}) against {against}{}; {} games ({} pairs) from {} openings ({}), {} at a time",
        own.name,
        own.book.describe(),
        other
            .as_ref()
            .map_or_else(String::new, |o| format!(" ({})", o.book.describe())),
        args.games,
        pairs,
        openings.len(),
        suite_source.describe(),
        args.concurrency.max(1),
    );
    let training = match &args.db {
        Some(db) if args.book_max_ply != Some(0) => training_note(
            db,
            &stera_games::thinker::identity(
                &opponent_identity,
                &stera_games::thinker::budget_text(&budgets[1].limits),
            ),
        )?,
        _ => None,
    };
    if let Some(note) = &training {
        crate::tell!("training score: {note}");
    }
    crate::tell!("engine: {identity}, {}", report::budget_text(&budgets[0]));
    crate::tell!(
        "opponent's engine: {opponent_identity}, {}",
        report::budget_text(&budgets[1])
    );
    if let Some(s) = &sprt {
        let (lower, upper) = s.bounds();
        crate::tell!(
            "sprt: elo0 {} elo1 {} alpha {} beta {} (llr bounds [{lower:.2}, {upper:.2}])",
            s.elo0,
            s.elo1,
            s.alpha,
            s.beta
        );
    }
    let settings = Settings {
        own: own.name.clone(),
        own_policy: own.book.describe(),
        against: against.clone(),
        against_policy: other.as_ref().map(|o| o.book.describe()),
        engine: identity.clone(),
        limits: report::budget_text(&budgets[0]),
        node_jitter: budgets[0].node_jitter,
        opponent_engine: opponent_identity.clone(),
        opponent_limits: report::budget_text(&budgets[1]),
        opponent_node_jitter: budgets[1].node_jitter,
        openings: openings.len(),
        suite: suite_source.describe(),
        seed: args.seed,
        max_repeats: args.max_repeats,
        baseline: args.book_max_ply == Some(0),
        training,
    };
    let games_out = match &args.out_games {
        Some(path) => Some(report::GamesFile::create(
            path,
            &own.name,
            &against,
            &identity,
            &opponent_identity,
        )?),
        None => None,
    };
    let mut report = Report::new(args.games, sprt, settings, games_out);
    let job = Job {
        engines: [engines, opponent_engines],
        budgets,
        options,
        openings,
        own,
        other,
        games: args.games,
    };
    run_games(&job, args.concurrency.max(1), &mut report)?;
    report.finish(args.json.as_deref(), json_out.as_ref())
}

/// Says so when a book played by its counts has the same count on every move
/// of every position: the games then choose uniformly among its moves.
fn warn_uniform_counts(rule: MoveRule, book: &FileBook, flag: &str) {
    if matches!(rule, MoveRule::Count) && book.counts_all_equal() {
        crate::tell!(
            "warning: {flag} count: every move of {} has the same count (an export without --export-weights, or a .ybb book), so each side picks uniformly among a position's moves; export with --export-weights policy or ndf for weights",
            book.describe()
        );
    }
}

/// A rule the book cannot play by is refused before any game.
fn check_rule(rule: MoveRule, source: &dyn BookSource, flag: &str) -> Result<()> {
    if matches!(rule, MoveRule::Results { .. }) && !source.has_results() {
        bail!(
            "{flag} results: {} has no game results (a book file carries none); play the store with --db, or export it with --export-by-results and play the file with --book-moves best",
            source.describe()
        );
    }
    if matches!(rule, MoveRule::Count) && !source.has_counts() {
        bail!(
            "{flag} count: {} has no count weights (a store's analysis has none); export it with --export-weights and play the file with --book, or choose another rule",
            source.describe()
        );
    }
    Ok(())
}

/// Everything the game threads share.
struct Job {
    /// The side under test's engines, then its opponent's.
    engines: [Engines; 2],
    budgets: [Budget; 2],
    options: PlayOptions,
    openings: Vec<Opening>,
    own: SideBook,
    other: Option<SideBook>,
    games: usize,
}

impl Job {
    /// Game `index`: its opening, the colour of the book under test, its seed.
    fn plan(&self, index: usize) -> (&Opening, Color, u64) {
        let pair = index / 2;
        let (slot, color) = schedule::pair_slot(index as u64, self.openings.len());
        let opening = &self.openings[slot];
        // Both games of a pair draw the same numbers.
        let seed = schedule::game_seed(self.options.seed, pair as u64);
        (opening, color, seed)
    }
}

/// Loads a store's book and analyses it (leaf moves `leaf_discount` below their
/// stored values), with the learning results of the `results` opponents when
/// given; returns it with the store's roots.
fn load_book(
    path: &Path,
    leaf_discount: i16,
    results: Option<&stera_book::OpponentSelection>,
) -> Result<(Arc<dyn BookSource>, Vec<String>)> {
    let with_results = results.is_some();
    let mut counts = HashMap::new();
    let (book, roots) = {
        // Never creates a store; sled admits one opener at a time, so the store
        // is closed before the next one is opened.
        let store = SledStore::open_read_only(path)
            .with_context(|| format!("cannot open the book store `{}`", path.display()))?;
        let book = Book::load(&store)
            .with_context(|| format!("cannot load the book in `{}`", path.display()))?;
        let roots = store
            .config()
            .with_context(|| format!("cannot read the roots of `{}`", path.display()))?
            .unwrap_or_default()
            .roots;
        if let Some(selection) = results {
            counts = crate::common::learning_counts(&store, selection, path)?;
        }
        (book, roots)
    };
    if book.is_empty() {
        bail!("the book in `{}` is empty", path.display());
    }
    let analysed = AnalysedBook::with_leaf_discount(book, leaf_discount)
        .with_context(|| format!("cannot analyse the book in `{}`", path.display()))?;
    if with_results {
        return Ok((
            Arc::new(ResultsBook::new(Arc::new(analysed), counts)),
            roots,
        ));
    }
    Ok((Arc::new(analysed), roots))
}

/// The note for a match whose opponent, `identity` (engine and budget as
/// learning games record it), is one the store in `db` learned against: its
/// score is a training score. `None` for any other opponent.
fn training_note(db: &Path, identity: &str) -> Result<Option<String>> {
    let store = SledStore::open_existing(db)
        .with_context(|| format!("cannot open the book store `{}`", db.display()))?;
    let opponents = store
        .opponents()
        .with_context(|| format!("cannot read the learning opponents of `{}`", db.display()))?;
    Ok(opponents.iter().find(|o| o.identity == identity).map(|o| {
        format!(
            "the opponent, `{identity}`, is learning opponent {} of {}, which learned its moves against it ({} games): this measures what the book learned about that opponent, not its strength against another (match an opponent outside the pool for that). The same opponent's no-book baseline: this match with --book-max-ply 0 (the engine alone).",
            o.id,
            db.display(),
            o.games
        )
    }))
}

/// True when both paths name the same directory.
fn same_store(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// Plays the games of `job` in `threads` threads, giving each to `report` as it
/// ends; stops early when the report's SPRT decides.
fn run_games(job: &Job, threads: usize, report: &mut Report) -> Result<()> {
    let start_own = || job.engines[0].start_player();
    let start_other = || job.engines[1].start_player();
    let play = |index: usize, own_engine: &mut dyn Player, other_engine: &mut dyn Player| {
        play_one(job, index, own_engine, other_engine)
    };
    let outcome = crate::game_threads::run_sides(
        threads,
        job.games,
        [&start_own, &start_other],
        &play,
        |game| {
            report.add(game)?;
            // Games in flight still end and count; no new ones start.
            Ok(report.decided())
        },
    );
    if outcome.is_err() {
        report.abandon();
    }
    outcome
}

/// Game `index` of `job` with one thread's two engines.
fn play_one(
    job: &Job,
    index: usize,
    own_engine: &mut dyn Player,
    other_engine: &mut dyn Player,
) -> Result<Finished> {
    let (opening, own_color, seed) = job.plan(index);
    let own_book: &dyn BookPolicy = job.own.book.as_ref();
    let other_book = job
        .other
        .as_ref()
        .map(|o| o.book.as_ref() as &dyn BookPolicy);
    let options = PlayOptions {
        seed,
        ..job.options
    };
    let game = schedule::play_as(
        opening,
        schedule::seat(own_engine, Some(own_book), job.budgets[0]),
        schedule::seat(other_engine, other_book, job.budgets[1]),
        own_color,
        &options,
    )
    .with_context(|| format!("game {}", index + 1))?;
    let coverage = Coverage::of(&game, own_color, &job.own.book)
        .with_context(|| format!("game {}", index + 1))?;
    Ok(Finished {
        index,
        game,
        own_color,
        coverage,
    })
}
