//! `book-tools learn`: games the way a book is used, whose results choose its moves.
//!
//! A book's values are a deeper search's; the engine that plays on from its
//! moves is a weaker one, and the lines the deeper search prefers are not the
//! lines that engine plays best from (BENCHMARKS "From the start position").
//! Only games say which book move wins, and only games shaped like the book's
//! use: the book side against an opponent engine that plays its own moves.
//!
//! Each game here is such a game. The learner (the book side, Black and White in
//! turn) plays book moves wherever its position is in the book, by Thompson
//! sampling ([`LearningPolicy`]) over the moves within `--learn-window` of the best
//! value; the opponent and the learner out of book play the engine's own moves,
//! with `--node-jitter` so that a deterministic engine does not replay one game.
//! Every game is counted in the store at once (the positions from its start to
//! the one after the learner's last book move, W/D/L from the side to move's
//! view, durable, one game id each), so a stopped run keeps what it learned and
//! the next run goes on from it. `book-tools match --book-moves results` and
//! `export --by-results` play and write what the games chose.
//!
//! The opponents are a pool (`--learn-opponent`, repeated, with weights): a book that
//! learns against one engine at one budget learns that opponent's weaknesses
//! (BENCHMARKS "Learning that generalises"). Each game draws its opponent by
//! weight; its counters go to that opponent's ledger in the store
//! ([`stera_book::opponents`]), never to the self-play counters, and the
//! learner reads the pool's ledgers added. The score printed is the training
//! score against the pool, not the book's strength: that is measured by
//! `book-tools match` against an opponent outside the pool.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use stera_book::{Book, NodeStore, OpponentId};
use stera_engine::Player;
use stera_engine::choice::EngineChoice;
use stera_games::learning_run;
use stera_games::opponent::Pool;
use stera_games::results_book::{
    DEFAULT_LEARNING_WINDOW, DEFAULT_PRIOR_GAMES, check_settled_threshold,
};
use stera_games::{
    AnalysedBook, BookPolicy, Budget, DEFAULT_PLY_LIMIT, Game, GameRules, LearningPolicy,
    LearningRun, LearningSettings, OpponentSpec, ResultsBook,
};
use stera_rules::{Color, Position};
use stera_service::engine_flags::{EngineFlags, MoveLimitArgs};
use stera_service::opponent_flags::parse_opponent;

#[derive(clap::Args)]
pub struct Args {
    /// The book store: its analysis gives the learner's moves, and every game is
    /// counted in its game counters (the coordinator must not be running on it).
    #[arg(long, value_name = "DB")]
    db: PathBuf,
    /// Learning games to play (the learner Black and White in turn), as the
    /// coordinator's flag. Formerly `--games`.
    #[arg(
        long = "learn-games",
        alias = "games",
        value_name = "GAMES",
        default_value_t = 1000
    )]
    games: usize,
    /// Openings from a file, one per line, used in turn: `startpos`, an SFEN, or a
    /// position command with moves; `#` starts a comment. Default: the store's
    /// roots, in turn. Formerly `--openings`.
    #[arg(long = "learn-openings", alias = "openings", value_name = "FILE")]
    openings: Option<PathBuf>,
    /// Try only the book moves at most CP below the position's best value: the
    /// window the learner samples from (not `match --eval-diff`, YaneuraOu's
    /// rule for playing a book). Formerly `--eval-diff`.
    #[arg(long = "learn-window", alias = "eval-diff", value_name = "CP", default_value_t = DEFAULT_LEARNING_WINDOW)]
    eval_diff: i32,
    /// The weight of a move's value against its games, in games: a move's
    /// estimate is its game score shrunk towards the win rate of its value by
    /// this many pseudo-games (the same flag as `match --book-moves results` and
    /// `export --export-by-results`).
    #[arg(long, value_name = "GAMES", default_value_t = DEFAULT_PRIOR_GAMES,
          value_parser = crate::game_threads::parse_prior_games)]
    prior_games: f64,
    /// Use the book only for positions up to this game ply. Default: every ply.
    #[arg(long, value_name = "PLY")]
    book_max_ply: Option<u32>,
    #[arg(long, value_name = "SHARE", help = crate::game_threads::NODE_JITTER_HELP)]
    node_jitter: Option<f64>,
    /// Learning games played at the same time (each with its own two engines),
    /// 1 to 256, as the coordinator's flag. Formerly `--concurrency`.
    #[arg(long = "learn-concurrency", alias = "concurrency", value_name = "N",
          default_value_t = stera_games::DEFAULT_LEARN_CONCURRENCY, value_parser = parse_concurrency)]
    concurrency: usize,
    /// Moves after which a game is a draw.
    #[arg(long, default_value_t = DEFAULT_PLY_LIMIT)]
    ply_limit: u32,
    /// Seed of the learner's draws and the node jitter (the coordinator's flag
    /// for its learning games).
    #[arg(
        long = "learn-seed",
        alias = "seed",
        value_name = "SEED",
        default_value_t = stera_games::DEFAULT_PLAY_SEED
    )]
    seed: u64,
    /// An opponent of the pool (repeatable): engine flags and a budget, quoted as
    /// one argument, as the book side's are given, with `--weight W` (its share
    /// of the games, default 1) and `--node-jitter S` (default 0.5, with
    /// `--nodes`), e.g. `--learn-opponent "--nodes 500 --weight 2"
    /// --learn-opponent "--engine usi --engine-cmd /usr/games/fairy-stockfish
    /// --engine-option UCI_Variant=shogi --nodes 20000"`. Its games are counted
    /// apart, under the engine's identity and the budget. Default: one
    /// opponent, the book side's engine and budget (--engine..., --nodes...,
    /// --node-jitter). Formerly `--opponent`.
    #[arg(
        long = "learn-opponent",
        alias = "opponent",
        value_name = "FLAGS",
        allow_hyphen_values = true
    )]
    opponent: Vec<String>,
    /// Stop once every position that matters most (each opening's position and
    /// the one after the opponents' most played reply there) is settled: the move
    /// the results rule plays is the best with at least this posterior
    /// probability (checked after each round of the openings, every opening
    /// played as Black and as White). Default: play all --learn-games.
    /// Formerly `--stop-when-settled`.
    #[arg(
        long = "learn-stop-when-settled",
        alias = "stop-when-settled",
        value_name = "PROBABILITY"
    )]
    stop_when_settled: Option<f64>,
    #[command(flatten)]
    engine: EngineFlags,
    #[command(flatten)]
    limits: MoveLimitArgs,
}

impl Args {
    fn check(&self) -> Result<()> {
        if self.games == 0 {
            bail!("--learn-games must be at least 1");
        }
        if self.eval_diff < 0 {
            bail!("--learn-window must be at least 0, not {}", self.eval_diff);
        }
        crate::game_threads::check_node_jitter("--node-jitter", self.node_jitter, &self.limits())?;
        if let Some(p) = self.stop_when_settled {
            check_settled_threshold(p)
                .map_err(|e| anyhow::anyhow!("--learn-stop-when-settled {e}"))?;
        }
        Ok(())
    }

    /// The book side's limits per move: the flags', or without any
    /// [`stera_games::DEFAULT_LEARN_NODES`] nodes (the coordinator's
    /// `--learn-nodes` default).
    fn limits(&self) -> stera_engine::Limits {
        let given = self.limits.limits();
        if given == stera_engine::Limits::default() {
            stera_engine::Limits {
                nodes: Some(stera_games::DEFAULT_LEARN_NODES),
                ..given
            }
        } else {
            given
        }
    }

    /// The node jitter: the flag's, else the default with a node limit.
    fn node_jitter(&self) -> f64 {
        crate::game_threads::node_jitter_or_default(self.node_jitter, &self.limits())
    }

    /// The pool of opponents: the `--learn-opponent`s, or the book side's engine.
    fn pool(&self) -> Result<Pool> {
        let members = if self.opponent.is_empty() {
            vec![OpponentSpec::of(
                self.engine.choice(),
                self.limits(),
                self.node_jitter(),
            )]
        } else {
            self.opponent
                .iter()
                .map(|text| parse_opponent(text).context("--learn-opponent"))
                .collect::<Result<_>>()?
        };
        Ok(Pool::new(members)?)
    }
}

/// A finished game, the colour the learner played and its opponent (index in the pool).
struct Finished {
    game: Game,
    learner: Color,
    opponent: usize,
}

/// Everything the game threads share.
struct Job {
    engine: EngineChoice,
    /// What the run decides: openings, colours, seeds, opponents, settling.
    run: LearningRun,
    policy: LearningPolicy,
    book_max_ply: Option<u32>,
}

thread_local! {
    /// A game thread's engines of the opponents whose engine differs from the
    /// book side's, started at their first game (by pool index).
    static OPPONENT_ENGINES: RefCell<HashMap<usize, Box<dyn Player>>> = RefCell::new(HashMap::new());
}

pub fn run(args: &Args) -> Result<()> {
    args.check()?;
    let rules = GameRules {
        ply_limit: args.ply_limit,
        adjudication: None,
    };
    rules.check()?;
    let mut store = crate::common::open_existing(&args.db)?;
    let book = Book::load(&store)
        .with_context(|| format!("cannot load the book in `{}`", args.db.display()))?;
    if book.is_empty() {
        bail!("the book in `{}` is empty", args.db.display());
    }
    let roots = store
        .config()
        .with_context(|| format!("cannot read the roots of `{}`", args.db.display()))?
        .unwrap_or_default()
        .roots;
    let openings = learning_run::openings_of(
        args.openings.as_deref(),
        &roots,
        &format!("the roots of `{}`", args.db.display()),
    )?;
    let pool = args.pool()?;
    let opponent_ids = intern_pool(&mut store, &pool, &args.engine.choice(), &args.db)?;
    let counts = stera_book::learning_counts(&store, &opponent_ids).with_context(|| {
        format!(
            "cannot read the learning counters of `{}`",
            args.db.display()
        )
    })?;
    let known = counts.len();
    let analysed = AnalysedBook::new(book)
        .with_context(|| format!("cannot analyse the book in `{}`", args.db.display()))?;
    let results = Arc::new(ResultsBook::new(Arc::new(analysed), counts));
    // Game ids go on from the store's: a game is counted once.
    let first_id = learning_run::first_game_id(store.max_game_id()?);
    let run = LearningRun::new(LearningSettings {
        openings,
        pool,
        seed: args.seed,
        book_budget: Budget {
            limits: args.limits(),
            node_jitter: args.node_jitter(),
        },
        rules,
        stop_when_settled: args.stop_when_settled,
    })?;
    let job = Job {
        engine: args.engine.choice(),
        run,
        policy: LearningPolicy::new(Arc::clone(&results), args.eval_diff, args.prior_games),
        book_max_ply: args.book_max_ply,
    };
    crate::tell!(
        "learn: {} ({} positions, results against this pool at {known} positions), {} games from {} openings, {} at a time; {}",
        args.db.display(),
        results.analysed().len(),
        args.games,
        job.run.openings().len(),
        args.concurrency.max(1),
        job.policy.describe(),
    );
    for (spec, id) in job.run.pool().members().iter().zip(&opponent_ids) {
        crate::tell!(
            "opponent {id} (weight {}): {}{}",
            spec.weight,
            spec.text,
            if spec.varies() {
                String::new()
            } else {
                " -- no node limit to jitter: its games differ only where the book side's do; give it --nodes with --node-jitter, or openings of several moves, for games that differ".to_owned()
            }
        );
    }
    let mut tally = Tally::new(args.games, opponent_ids.clone());
    let policy = UpToPly {
        policy: &job.policy,
        max_ply: job.book_max_ply,
    };
    let start = || Ok(job.engine.start_player()?);
    let play = |index: usize, learner: &mut dyn Player, opponent: &mut dyn Player| {
        play_one(&job, &policy, index, learner, opponent)
    };
    let mut settled_note = String::new();
    crate::game_threads::run(args.concurrency, args.games, &start, &play, |finished| {
        let counts = results
            .learning_counts(&finished.game, finished.learner)
            .context("a finished game")?;
        let id = first_id + tally.games;
        if !counts.is_empty() {
            store
                .record_learning_game(opponent_ids[finished.opponent], id, &counts)
                .with_context(|| format!("cannot count game {id} in `{}`", args.db.display()))?;
            results.add(&counts);
        }
        tally.add(&finished, !counts.is_empty(), &settled_note);
        if job.run.check_due(tally.games) {
            let count = job.run.settled(&job.policy);
            settled_note = count.to_string();
            if job.run.stops(&count) {
                crate::tell!(
                    "every key position is settled after {} games: stopping (--learn-stop-when-settled)",
                    tally.games
                );
                return Ok(true);
            }
        }
        Ok(false)
    })?;
    tally.finish();
    crate::say!("{}", tally.summary());
    if let Some(line) = tally.distinct_note() {
        crate::say!("{line}");
    }
    print_key_positions(&results, &job.policy, &job.run, args);
    Ok(())
}

/// Key positions shown at the end: the least settled, where more games help.
const KEY_POSITIONS_SHOWN: usize = 5;

/// How settled the key positions are, and the least settled of them, each in
/// two short lines (a run of many openings has dozens of key positions: one
/// line of SFEN and five moves each filled screens).
fn print_key_positions(
    results: &ResultsBook,
    policy: &LearningPolicy,
    run: &LearningRun,
    args: &Args,
) {
    let threshold = run.settled_at();
    let count = run.settled(policy);
    let mut rows: Vec<(Position, stera_games::Settled)> = run
        .key_positions()
        .positions()
        .iter()
        .flat_map(|p| [Some(p.clone()), policy.most_played_reply(p)])
        .flatten()
        .filter_map(|p| policy.settled(&p).map(|s| (p, s)))
        .collect();
    rows.sort_by(|a, b| a.1.probability.total_cmp(&b.1.probability));
    crate::say!("{count} (the move played is the best with P >= {threshold})");
    for (position, settled) in rows.iter().take(KEY_POSITIONS_SHOWN) {
        crate::say!(
            "  {}: plays {}, P(best) {:.3}, {} games",
            position_words(position),
            settled.best,
            settled.probability,
            settled.games
        );
        crate::say!("    {}", top_moves(results, position, args.prior_games));
    }
    if rows.len() > KEY_POSITIONS_SHOWN {
        crate::say!(
            "  ... and {} more; `book-tools show --db {} 'POSITION'` lists a position's moves with their games",
            rows.len() - KEY_POSITIONS_SHOWN,
            args.db.display()
        );
    }
}

/// A position as the moves that reach it: `startpos moves 7g7f 3c3d`.
fn position_words(position: &Position) -> String {
    let (start, moves) = stera_engine::player::history(position);
    let start = if start.to_sfen() == Position::startpos().to_sfen() {
        "startpos".to_owned()
    } else {
        format!("sfen {}", start.to_sfen())
    };
    if moves.is_empty() {
        return start;
    }
    let moves: Vec<String> = moves.iter().map(ToString::to_string).collect();
    format!("{start} moves {}", moves.join(" "))
}

/// A position's three moves with the best estimates from games:
/// `2g2f 0.612 (40 games), 7g7f 0.580 (35), ...`.
fn top_moves(results: &ResultsBook, position: &Position, prior_games: f64) -> String {
    let Some(mut estimates) = results.estimates(position, prior_games) else {
        return "not in the book".to_owned();
    };
    estimates.sort_by(|a, b| b.2.mean.total_cmp(&a.2.mean));
    let top: Vec<String> = estimates
        .iter()
        .filter(|e| e.1.games() > 0)
        .take(3)
        .enumerate()
        .map(|(i, (c, r, e))| {
            let games = if i == 0 { " games" } else { "" };
            format!("{} {:.3} ({}{games})", c.mv, e.mean, r.games())
        })
        .collect();
    if top.is_empty() {
        "no games yet".to_owned()
    } else {
        top.join(", ")
    }
}

/// Registers each of the pool's opponents in the store (engine identity as its
/// engine reports it, and the budget) and returns their ids in pool order. An
/// opponent's engine is started once here, so a description that cannot start
/// fails before any game.
fn intern_pool(
    store: &mut stera_book::SledStore,
    pool: &Pool,
    book_engine: &EngineChoice,
    db: &std::path::Path,
) -> Result<Vec<OpponentId>> {
    let mut book_identity: Option<String> = None;
    pool.members()
        .iter()
        .map(|spec| {
            let engine_identity = if spec.same_engine(book_engine) {
                match &book_identity {
                    Some(i) => i.clone(),
                    None => {
                        let i = book_engine.start_player()?.identity();
                        book_identity = Some(i.clone());
                        i
                    }
                }
            } else {
                spec.engine
                    .start_player()
                    .with_context(|| format!("starting opponent `{}`", spec.text))?
                    .identity()
            };
            spec.check_engine_id(&engine_identity)?;
            let identity = spec.identity(&engine_identity);
            store.intern_opponent(&identity).with_context(|| {
                format!(
                    "cannot register opponent `{identity}` in `{}`",
                    db.display()
                )
            })
        })
        .collect()
}

/// The learner's results of this run, by colour, with its speed and how many
/// of its games were distinct.
struct Tally {
    total: usize,
    games: u64,
    counted: u64,
    /// Points and games as Black, as White.
    points: [(f64, u64); 2],
    /// Games per opponent of the pool, and each one's number in the store
    /// (as `stats` and `--opponents` number it).
    per_opponent: Vec<u64>,
    opponent_ids: Vec<OpponentId>,
    /// A hash of each distinct game (start and moves).
    distinct: HashSet<u64>,
    started: Instant,
    bar: Option<indicatif::ProgressBar>,
}

impl Tally {
    fn new(total: usize, opponent_ids: Vec<OpponentId>) -> Self {
        let bar = crate::game_threads::games_bar(total);
        Self {
            total,
            games: 0,
            counted: 0,
            points: [(0.0, 0); 2],
            per_opponent: vec![0; opponent_ids.len()],
            opponent_ids,
            distinct: HashSet::new(),
            started: Instant::now(),
            bar,
        }
    }

    fn add(&mut self, finished: &Finished, counted: bool, settled: &str) {
        self.games += 1;
        self.counted += u64::from(counted);
        let slot = &mut self.points[usize::from(finished.learner == Color::White)];
        slot.0 += finished.game.result.outcome.points_for(finished.learner);
        slot.1 += 1;
        if let Some(n) = self.per_opponent.get_mut(finished.opponent) {
            *n += 1;
        }
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        finished.game.start_sfen.hash(&mut hasher);
        for m in &finished.game.moves {
            m.mv.hash(&mut hasher);
        }
        self.distinct.insert(hasher.finish());
        let step = (self.total / 20).max(1) as u64;
        let due = self.games.is_multiple_of(step) || self.games == self.total as u64;
        // The rate and the time left first: a narrow terminal cuts the end.
        let speed = crate::game_threads::speed_text(self.started, self.games, self.total as u64);
        let mut line = format!("{speed}; {}", self.line());
        if !settled.is_empty() {
            line.push_str("; ");
            line.push_str(settled);
        }
        crate::game_threads::show_progress(self.bar.as_ref(), line, due, |line| {
            crate::tell!("game {}/{}: {line}", self.games, self.total);
        });
    }

    /// A warning when many games repeat (a deterministic opponent).
    fn distinct_note(&self) -> Option<String> {
        let distinct = self.distinct.len() as u64;
        (self.games >= 20 && distinct * 10 < self.games * 8).then(|| {
            format!(
                "warning: only {distinct} of {} games were distinct: an opponent deterministic at its budget replays games; give it --nodes with --node-jitter, or more openings",
                self.games
            )
        })
    }

    fn score(&self, slot: usize) -> String {
        let (points, games) = self.points[slot];
        if games == 0 {
            "-".to_owned()
        } else {
            format!("{:.3}", points / games as f64)
        }
    }

    fn line(&self) -> String {
        format!(
            "training score {} as black, {} as white; {} games counted, {} distinct",
            self.score(0),
            self.score(1),
            self.counted,
            self.distinct.len(),
        )
    }

    fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }

    fn summary(&self) -> String {
        let per_opponent: Vec<String> = self
            .per_opponent
            .iter()
            .enumerate()
            .zip(&self.opponent_ids)
            .map(|((_, n), id)| format!("opponent {id}: {n}"))
            .collect();
        format!(
            "{} games in {:.0} s: {} ({}). The training score is against the opponents learned against, not the book's strength: measure that with `book-tools match` against an opponent outside the pool.",
            self.games,
            self.started.elapsed().as_secs_f64(),
            self.line(),
            per_opponent.join(", ")
        )
    }
}

/// Only the positions up to `max_ply` are the book's.
struct UpToPly<'a> {
    policy: &'a LearningPolicy,
    max_ply: Option<u32>,
}

impl BookPolicy for UpToPly<'_> {
    fn probabilities(&self, position: &Position) -> Option<Vec<(stera_rules::Move, f64)>> {
        if self.max_ply.is_some_and(|max| position.ply() > max) {
            return None;
        }
        self.policy.probabilities(position)
    }

    fn choose(&self, position: &Position, uniform: f64) -> Option<stera_rules::Move> {
        if self.max_ply.is_some_and(|max| position.ply() > max) {
            return None;
        }
        self.policy.choose(position, uniform)
    }

    fn describe(&self) -> String {
        self.policy.describe()
    }
}

/// Game `index` of `job` as its run plans it, the opponent's engine the
/// thread's own when it is the book side's, else one the thread starts at its
/// first game against that opponent.
fn play_one(
    job: &Job,
    policy: &UpToPly<'_>,
    index: usize,
    learner_engine: &mut dyn Player,
    opponent_engine: &mut dyn Player,
) -> Result<Finished> {
    let plan = job.run.plan(index as u64);
    let spec = &job.run.pool().members()[plan.opponent];
    let finished = |game| Finished {
        game,
        learner: plan.learner,
        opponent: plan.opponent,
    };
    let context = || format!("game {}", index + 1);
    if spec.same_engine(&job.engine) {
        let game = job
            .run
            .play(&plan, policy, learner_engine, opponent_engine)
            .with_context(context)?;
        return Ok(finished(game));
    }
    OPPONENT_ENGINES.with(|engines| {
        let mut engines = engines.borrow_mut();
        let engine = match engines.entry(plan.opponent) {
            std::collections::hash_map::Entry::Occupied(o) => o.into_mut(),
            std::collections::hash_map::Entry::Vacant(v) => v.insert(
                spec.engine
                    .start_player()
                    .with_context(|| format!("starting opponent `{}`", spec.text))?,
            ),
        };
        let game = job
            .run
            .play(&plan, policy, learner_engine, engine.as_mut())
            .with_context(context)?;
        Ok(finished(game))
    })
}

/// `--learn-concurrency`, `match --concurrency`: 1 to 256 game threads (each runs two engines).
pub(crate) fn parse_concurrency(text: &str) -> std::result::Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(n) if (1..=256).contains(&n) => Ok(n),
        _ => Err(format!("`{text}` is not 1 to 256 game threads")),
    }
}
