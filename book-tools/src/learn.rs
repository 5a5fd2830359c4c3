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
//! sampling ([`LearningPolicy`]) over the moves within `--eval-diff` of the best
//! value; the opponent and the learner out of book play the engine's own moves,
//! with `--node-jitter` so that a deterministic engine does not replay one game.
//! Every game is counted in the store at once (the positions from its start to
//! the one after the learner's last book move, W/D/L from the side to move's
//! view, durable, one game id each), so a stopped run keeps what it learned and
//! the next run goes on from it. `book-tools match --book-moves results` and
//! `export --by-results` play and write what the games chose.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};
use stera_book::{Book, GameCounts, NodeStore};
use stera_engine::Player;
use stera_engine::choice::{EngineChoice, LimitArgs};
use stera_games::openings::{self, Opening};
use stera_games::results_book::DEFAULT_PRIOR_GAMES;
use stera_games::{
    AnalysedBook, BookPolicy, DEFAULT_PLY_LIMIT, Game, GameRules, LearningPolicy, PlayOptions,
    ResultsBook, Side,
};
use stera_rules::{Color, Key, Position};

/// The learner's default margin: moves this far below the best value are
/// never tried (a book's values spread over a few tens of centipawns at the
/// start; a move 100 cp worse is a mistake at any budget).
pub const DEFAULT_LEARN_EVAL_DIFF: i32 = 100;

#[derive(clap::Args)]
pub struct Args {
    /// The book store: its analysis gives the learner's moves, and every game is
    /// counted in its game counters (the coordinator must not be running on it).
    #[arg(long, value_name = "DIR")]
    db: PathBuf,
    /// Games to play (the learner Black and White in turn).
    #[arg(long, default_value_t = 1000)]
    games: usize,
    /// Openings from a file, one per line, used in turn: `startpos`, an SFEN, or a
    /// position command with moves; `#` starts a comment. Default: the store's
    /// roots, in turn.
    #[arg(long, value_name = "FILE")]
    openings: Option<PathBuf>,
    /// Try only the book moves at most CP below the position's best value
    /// (the same flag as `match`'s YaneuraOu rule).
    #[arg(long, value_name = "CP", default_value_t = DEFAULT_LEARN_EVAL_DIFF)]
    eval_diff: i32,
    /// The weight of a move's value against its games, in games: a move's
    /// estimate is its game score shrunk towards the win rate of its value by
    /// this many pseudo-games (the same flag as `match --book-moves results` and
    /// `export --by-results`).
    #[arg(long, value_name = "GAMES", default_value_t = DEFAULT_PRIOR_GAMES,
          value_parser = crate::game_threads::parse_prior_games)]
    prior_games: f64,
    /// Use the book only for positions up to this game ply. Default: every ply.
    #[arg(long, value_name = "PLY")]
    book_max_ply: Option<u32>,
    /// Jitter each engine move's node limit by up to this share (0.5 = ±50 %),
    /// drawn from --seed. Default 0.5: a deterministic engine replays the same
    /// game from the same line, and a learner needs games that differ. Only with
    /// --nodes (0 turns it off).
    #[arg(long, value_name = "SHARE", default_value_t = 0.5)]
    node_jitter: f64,
    /// Games played at the same time (each with its own two engines).
    #[arg(long, default_value_t = 1)]
    concurrency: usize,
    /// Moves after which a game is a draw.
    #[arg(long, default_value_t = DEFAULT_PLY_LIMIT)]
    ply_limit: u32,
    /// Seed of the learner's draws and the node jitter.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    #[command(flatten)]
    engine: EngineChoice,
    #[command(flatten)]
    limits: LimitArgs,
}

impl Args {
    fn check(&self) -> Result<()> {
        if self.games == 0 {
            bail!("--games must be at least 1");
        }
        if self.eval_diff < 0 {
            bail!("--eval-diff must be at least 0, not {}", self.eval_diff);
        }
        if !(self.node_jitter >= 0.0 && self.node_jitter < 1.0) {
            bail!("--node-jitter must lie in [0, 1), not {}", self.node_jitter);
        }
        if self.node_jitter > 0.0 && self.limits.nodes.is_none() {
            bail!(
                "--node-jitter needs --nodes (it jitters the node limit); pass --node-jitter 0 with another limit"
            );
        }
        Ok(())
    }
}

/// A finished game and the colour the learner played.
struct Finished {
    game: Game,
    learner: Color,
}

/// Everything the game threads share.
struct Job {
    engine: EngineChoice,
    options: PlayOptions,
    openings: Vec<Opening>,
    policy: LearningPolicy,
    book_max_ply: Option<u32>,
    first_index: u64,
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
    let openings = match &args.openings {
        Some(file) => openings::read_file(file)?,
        None => openings::parse_lines(
            roots.iter().map(String::as_str),
            &format!("the roots of `{}`", args.db.display()),
        )?,
    };
    let mut counts: HashMap<Key, GameCounts> = HashMap::new();
    store
        .for_each_game_count(&mut |key, c| {
            counts.insert(key, c);
        })
        .with_context(|| format!("cannot read the game counters of `{}`", args.db.display()))?;
    let known = counts.len();
    let analysed = AnalysedBook::new(book)
        .with_context(|| format!("cannot analyse the book in `{}`", args.db.display()))?;
    let results = Arc::new(ResultsBook::new(Arc::new(analysed), counts));
    // Game ids never meet one of an earlier run, nor a coordinator's lease id
    // (which starts from its clock the same way).
    let clock_floor = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| {
        u64::try_from(d.as_millis()).unwrap_or(u64::MAX) << 16
    });
    let first_id = store
        .max_game_id()?
        .map_or(0, |m| m.saturating_add(1))
        .max(clock_floor);
    let job = Job {
        engine: args.engine.clone(),
        options: PlayOptions {
            rules,
            limits: args.limits.limits(),
            seed: args.seed,
            node_jitter: args.node_jitter,
        },
        openings,
        policy: LearningPolicy::new(Arc::clone(&results), args.eval_diff, args.prior_games),
        book_max_ply: args.book_max_ply,
        first_index: first_id,
    };
    eprintln!(
        "learn: {} ({} positions, results at {known} positions), {} games from {} openings, {} at a time; {}",
        args.db.display(),
        results.analysed().len(),
        args.games,
        job.openings.len(),
        args.concurrency.max(1),
        job.policy.describe(),
    );
    let mut tally = Tally::new(args.games);
    let policy = UpToPly {
        policy: &job.policy,
        max_ply: job.book_max_ply,
    };
    let start = || Ok(job.engine.start_player()?);
    let play = |index: usize, learner: &mut dyn Player, opponent: &mut dyn Player| {
        play_one(&job, &policy, index, learner, opponent)
    };
    crate::game_threads::run(args.concurrency, args.games, &start, &play, |finished| {
        let counts = results
            .learning_counts(&finished.game, finished.learner)
            .context("a finished game")?;
        let id = first_id + tally.games;
        if !counts.is_empty() {
            store
                .record_game(id, &counts)
                .with_context(|| format!("cannot count game {id} in `{}`", args.db.display()))?;
            results.add(&counts);
        }
        tally.add(&finished, !counts.is_empty());
        Ok(false)
    })?;
    tally.finish();
    println!("{}", tally.summary());
    for opening in &job.openings {
        print_choices(&results, opening, args.prior_games);
    }
    Ok(())
}

/// The moves the games chose so far at each opening (the learner as the side to
/// move) and after the opponent's most played move there (the learner as the
/// other side).
fn print_choices(results: &ResultsBook, opening: &Opening, prior_games: f64) {
    let mut position = opening.start.clone();
    for &mv in &opening.moves {
        position.do_move(mv);
    }
    print_estimates(results, &position, prior_games);
    let most_played = position
        .legal_moves()
        .into_iter()
        .map(|mv| (results.move_results(&position, mv).games(), mv))
        .filter(|(games, _)| *games > 0)
        .max_by_key(|(games, _)| *games);
    if let Some((_, mv)) = most_played {
        position.do_move(mv);
        print_estimates(results, &position, prior_games);
    }
}

/// One position's five best moves by their estimates from games.
fn print_estimates(results: &ResultsBook, position: &Position, prior_games: f64) {
    let Some(mut estimates) = results.estimates(position, prior_games) else {
        println!("{}: not in the book", position.to_sfen());
        return;
    };
    estimates.sort_by(|a, b| b.2.mean.total_cmp(&a.2.mean));
    let top: Vec<String> = estimates
        .iter()
        .filter(|e| e.1.games() > 0)
        .take(5)
        .map(|(c, r, e)| {
            format!(
                "{} {:.3} ({} games, value {})",
                c.mv,
                e.mean,
                r.games(),
                c.value
            )
        })
        .collect();
    println!(
        "{}: {}",
        position.to_sfen(),
        if top.is_empty() {
            "no games yet".to_owned()
        } else {
            top.join(", ")
        }
    );
}

/// The learner's results of this run, by colour.
struct Tally {
    total: usize,
    games: u64,
    counted: u64,
    /// Points and games as Black, as White.
    points: [(f64, u64); 2],
    started: Instant,
    bar: Option<indicatif::ProgressBar>,
}

impl Tally {
    fn new(total: usize) -> Self {
        let bar = crate::game_threads::games_bar(total);
        Self {
            total,
            games: 0,
            counted: 0,
            points: [(0.0, 0); 2],
            started: Instant::now(),
            bar,
        }
    }

    fn add(&mut self, finished: &Finished, counted: bool) {
        self.games += 1;
        self.counted += u64::from(counted);
        let slot = &mut self.points[usize::from(finished.learner == Color::White)];
        slot.0 += finished.game.result.outcome.points_for(finished.learner);
        slot.1 += 1;
        let step = (self.total / 20).max(1) as u64;
        let due = self.games.is_multiple_of(step) || self.games == self.total as u64;
        crate::game_threads::show_progress(self.bar.as_ref(), self.line(), due, |line| {
            eprintln!(
                "game {}/{} ({:.0} s): {line}",
                self.games,
                self.total,
                self.started.elapsed().as_secs_f64()
            );
        });
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
            "learner scores {} as black, {} as white; {} games counted",
            self.score(0),
            self.score(1),
            self.counted
        )
    }

    fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish();
        }
    }

    fn summary(&self) -> String {
        format!(
            "{} games in {:.0} s: {}",
            self.games,
            self.started.elapsed().as_secs_f64(),
            self.line()
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

/// Game `index` of `job`: the learner's colour alternates, the opening goes round.
fn play_one(
    job: &Job,
    policy: &UpToPly<'_>,
    index: usize,
    learner_engine: &mut dyn Player,
    opponent_engine: &mut dyn Player,
) -> Result<Finished> {
    let (slot, learner) = crate::game_threads::pair_slot(index, job.openings.len());
    let opening = &job.openings[slot];
    // A seed per game of this run and of the store's history, so that a second
    // run does not replay the first one's draws.
    let seed = crate::game_threads::game_seed(
        job.options.seed,
        job.first_index.wrapping_add(index as u64),
    );
    let learning = Side {
        player: learner_engine,
        book: Some(policy),
    };
    let opponent = Side {
        player: opponent_engine,
        book: None,
    };
    let game = crate::game_threads::play_as(
        opening,
        learning,
        opponent,
        learner,
        &job.options,
        seed,
        index,
    )?;
    Ok(Finished { game, learner })
}
