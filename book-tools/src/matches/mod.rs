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

mod args;
mod coverage;
mod report;
pub(crate) mod suite;

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use stera_book::{Book, NodeStore, SledStore};
use stera_engine::Player;
use stera_games::Route;
use stera_games::openings::Opening;
use stera_games::schedule;
use stera_games::{
    AnalysedBook, BookPolicy, BookSource, Budget, Game, MoveRule, PlayOptions, ResultsBook,
    RuledBook,
};
use stera_rules::Color;

use crate::file_book::FileBook;
pub use args::Args;
use args::Engines;
use coverage::Coverage;
use report::{Report, Settings};
use suite::SuiteSource;

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
    // Bound now (a directory of its path swapped later cannot redirect it) and
    // written under a temporary name: a match that fails leaves no partial file.
    let json_out = match args.json.as_deref() {
        Some(path) if path != Path::new("-") => Some(
            stera_book::store_path::BoundOutput::staged(path, args.db.as_deref())
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
        Engines::Cluster(args.cluster.clone(), Route::Thinkers)
    } else {
        Engines::Local(args.engine.choice())
    };
    let opponent_engines = args.opponent_engines(&engines);
    let mut first_player = engines.start_player().context("cannot start the engine")?;
    let identity = first_player.identity();
    let opponent_identity = if args.opponent_names_engine() {
        opponent_engines
            .start_player()
            .context("cannot start the opponent's engine")?
            .identity()
    } else {
        identity.clone()
    };
    if let (Some(spec), Engines::Local(_)) = (args.spec(), &opponent_engines) {
        spec.check_engine_id(&opponent_identity)?;
    }
    let budgets = args.budgets();
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
            args.db.as_deref(),
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
    report.finish(args.json.as_deref(), json_out)
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
