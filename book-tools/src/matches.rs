//! `book-tools match`: one book against another (or against no book) with the
//! same engine on both sides once the books end.
//!
//! Games come in pairs: the same opening (a root of `--db`, or a line of
//! `--openings`) and the same book draws, colours swapped. Each side plays its
//! book's moves while its position is in its book (sampled by the softmax of
//! the tera-shock values, see `stera_games::book`), its engine's moves
//! otherwise. Games run in `--concurrency` threads, each with one engine per
//! side: local engines, or the workers of a running coordinator
//! (`--coordinator`, see [`crate::remote_player`]). The result is from the point
//! of view of `--db`.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, mpsc};
use std::thread;

use anyhow::{Context, Result, bail};
use stera_book::{Book, NodeStore, SledStore};
use stera_engine::Player;
use stera_engine::choice::{EngineChoice, LimitArgs};
use stera_games::book::DEFAULT_TEMPERATURE;
use stera_games::stats::{Estimate, Pentanomial, Tally, los, pentanomial, trinomial};
use stera_games::{
    Adjudication, AnalysedBook, BookPolicy, DEFAULT_PLY_LIMIT, Game, GameRules, PlayOptions, Side,
    SoftmaxPolicy, play_game,
};
use stera_rules::{Color, Move, Position};

use crate::file_book::{BookMoves, FileBook};
use crate::remote_player::{Cluster, RemotePlayer};

#[derive(clap::Args)]
pub struct Args {
    /// The book store under test (its moves by the softmax of the tera-shock
    /// values at --temperature).
    #[arg(long, value_name = "DIR", required_unless_present = "book")]
    db: Option<PathBuf>,
    /// A DB2016 book file under test instead of a store (an export as an engine
    /// would play it; see --book-moves). Openings default to `startpos`.
    #[arg(long, value_name = "FILE", conflicts_with = "db")]
    book: Option<PathBuf>,
    /// The book store it plays against (the same store is allowed); without it
    /// (and without --against-book), against the engine without a book.
    #[arg(long, value_name = "DIR")]
    against: Option<PathBuf>,
    /// A DB2016 book file it plays against.
    #[arg(long, value_name = "FILE", conflicts_with = "against")]
    against_book: Option<PathBuf>,
    /// How a side with a book file picks its moves: `best` (the first, best
    /// value), `softmax` (of the values at --temperature) or `count` (in
    /// proportion to the count field, as YaneuraOu with ConsiderBookMoveCount).
    #[arg(long, value_enum, default_value_t = BookMoves::Count)]
    book_moves: BookMoves,
    /// --book-moves for the --against-book side (default: the same).
    #[arg(long, value_enum, requires = "against_book")]
    against_book_moves: Option<BookMoves>,
    /// Games to play (pairs of one opening with colours swapped; an odd number
    /// leaves the last pair incomplete).
    #[arg(long, default_value_t = 100)]
    games: usize,
    /// Openings, one per line: `startpos`, an SFEN, or a position command with
    /// moves (`startpos moves 7g7f 3c3d`); `#` starts a comment. Default: the
    /// roots of --db. Used in turn, one per pair.
    #[arg(long, value_name = "FILE")]
    openings: Option<PathBuf>,
    /// Games played at the same time (each with its own two engines).
    #[arg(long, default_value_t = 1)]
    concurrency: usize,
    /// Softmax temperature (centipawns) of the book move probabilities; 0 plays
    /// the best move of the tera-shock analysis only.
    #[arg(long, default_value_t = DEFAULT_TEMPERATURE)]
    temperature: f64,
    /// Moves after which a game is a draw.
    #[arg(long, default_value_t = DEFAULT_PLY_LIMIT)]
    ply_limit: u32,
    /// Adjudicate a win when both engines' scores are beyond CP (from the same
    /// side's view) for --adjudicate-plies consecutive moves.
    #[arg(long, value_name = "CP", requires = "adjudicate_plies")]
    adjudicate_cp: Option<i32>,
    /// Consecutive moves for --adjudicate-cp (at least 2).
    #[arg(long, value_name = "N", requires = "adjudicate_cp")]
    adjudicate_plies: Option<u32>,
    /// Seed of the book move draws (the same seed gives the same games with
    /// deterministic engines, e.g. at a node limit).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Write the games to this file as CSA.
    #[arg(long, value_name = "FILE")]
    out_games: Option<PathBuf>,
    #[command(flatten)]
    engine: EngineChoice,
    #[command(flatten)]
    limits: LimitArgs,
    #[command(flatten)]
    cluster: Cluster,
}

/// Who plays the engines' moves.
#[derive(Clone)]
enum Engines {
    Local(EngineChoice),
    Cluster(Cluster),
}

impl Engines {
    fn start_player(&self) -> Result<Box<dyn Player>> {
        match self {
            Self::Local(choice) => Ok(choice.start_player()?),
            Self::Cluster(cluster) => Ok(Box::new(RemotePlayer::connect(cluster)?)),
        }
    }
}

/// Where one game starts.
#[derive(Debug, Clone)]
struct Opening {
    start: Position,
    moves: Vec<Move>,
}

/// A finished game with the colour `--db` played.
struct Played {
    index: usize,
    game: Game,
    db_color: Color,
}

pub fn run(args: &Args) -> Result<()> {
    if args.games == 0 {
        bail!("--games must be at least 1");
    }
    // Refused before any game is played: the games file never goes into a store.
    if let Some(out) = &args.out_games {
        match &args.db {
            Some(db) => stera_book::store_path::check_output_path(out, db),
            None => stera_book::store_path::check_output_path_outside_stores(out),
        }
        .with_context(|| format!("bad --out-games `{}`", out.display()))?;
    }
    let rules = GameRules {
        ply_limit: args.ply_limit,
        adjudication: args
            .adjudicate_cp
            .zip(args.adjudicate_plies)
            .map(|(threshold, plies)| Adjudication { threshold, plies }),
    };
    rules.check()?;
    let file_book = |path: &Path, moves: BookMoves| -> Result<Arc<dyn BookPolicy>> {
        Ok(Arc::new(FileBook::open(path, moves, args.temperature)?))
    };
    let (own, roots, own_name): (Arc<dyn BookPolicy>, Vec<String>, PathBuf) =
        match (&args.db, &args.book) {
            (Some(db), _) => {
                let (book, roots) = load_book(db)?;
                let policy = Arc::new(SoftmaxPolicy::new(book, args.temperature));
                (policy, roots, db.clone())
            }
            (None, Some(file)) => (
                file_book(file, args.book_moves)?,
                vec!["startpos".to_owned()],
                file.clone(),
            ),
            (None, None) => bail!("--db or --book names the book under test"),
        };
    let other: Option<Arc<dyn BookPolicy>> = match (&args.against, &args.against_book) {
        (Some(path), _) if args.db.as_ref().is_some_and(|db| same_store(path, db)) => {
            Some(Arc::clone(&own))
        }
        (Some(path), _) => {
            let (book, _) = load_book(path)?;
            Some(Arc::new(SoftmaxPolicy::new(book, args.temperature)))
        }
        (None, Some(file)) => Some(file_book(
            file,
            args.against_book_moves.unwrap_or(args.book_moves),
        )?),
        (None, None) => None,
    };
    let openings = match &args.openings {
        Some(file) => read_openings(file)?,
        None => parse_openings(&roots, "the book's roots")?,
    };
    let against = args
        .against
        .as_ref()
        .or(args.against_book.as_ref())
        .map_or_else(|| "no book".to_owned(), |p| p.display().to_string());
    eprintln!(
        "match: {} ({}) against {against}{}; {} games from {} openings, {} at a time",
        own_name.display(),
        own.describe(),
        other
            .as_ref()
            .map_or_else(String::new, |o| format!(" ({})", o.describe())),
        args.games,
        openings.len(),
        args.concurrency.max(1),
    );
    let options = PlayOptions {
        rules,
        limits: args.limits.limits(),
        seed: args.seed,
    };
    let engines = if args.cluster.coordinator.is_some() {
        Engines::Cluster(args.cluster.clone())
    } else {
        Engines::Local(args.engine.clone())
    };
    let identity = engines
        .start_player()
        .context("cannot start the engine")?
        .identity();
    eprintln!("engine: {identity}");
    let job = Job {
        engine: engines,
        options,
        openings,
        own,
        other,
        games: args.games,
    };
    let played = run_games(&job, args.concurrency.max(1))?;
    if let Some(path) = &args.out_games {
        write_games(path, &played, &own_name, &against, &identity)?;
    }
    Ok(())
}

/// Everything the game threads share.
struct Job {
    engine: Engines,
    options: PlayOptions,
    openings: Vec<Opening>,
    own: Arc<dyn BookPolicy>,
    other: Option<Arc<dyn BookPolicy>>,
    games: usize,
}

impl Job {
    /// Game `index`: its opening, the colour of `--db`, its seed.
    fn plan(&self, index: usize) -> (&Opening, Color, u64) {
        let pair = index / 2;
        let opening = &self.openings[pair % self.openings.len()];
        let color = if index.is_multiple_of(2) {
            Color::Black
        } else {
            Color::White
        };
        // Both games of a pair draw the same numbers.
        let seed = self
            .options
            .seed
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .wrapping_add(pair as u64);
        (opening, color, seed)
    }
}

/// Loads a store's book and analyses it; returns it with the store's roots.
fn load_book(path: &Path) -> Result<(Arc<AnalysedBook>, Vec<String>)> {
    let (book, roots) = {
        // Never creates a store; sled admits one opener at a time, so the store
        // is closed before the next one is opened.
        let store = SledStore::open_existing(path)
            .with_context(|| format!("cannot open the book store `{}`", path.display()))?;
        let book = Book::load(&store)
            .with_context(|| format!("cannot load the book in `{}`", path.display()))?;
        let roots = store
            .config()
            .with_context(|| format!("cannot read the roots of `{}`", path.display()))?
            .unwrap_or_default()
            .roots;
        (book, roots)
    };
    if book.is_empty() {
        bail!("the book in `{}` is empty", path.display());
    }
    let analysed = AnalysedBook::new(book)
        .with_context(|| format!("cannot analyse the book in `{}`", path.display()))?;
    Ok((Arc::new(analysed), roots))
}

/// True when both paths name the same directory.
fn same_store(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

fn read_openings(file: &Path) -> Result<Vec<Opening>> {
    let text = std::fs::read_to_string(file)
        .with_context(|| format!("cannot read openings from `{}`", file.display()))?;
    let lines: Vec<String> = text.lines().map(str::to_owned).collect();
    parse_openings(&lines, &file.display().to_string())
}

/// Parses opening lines (blank lines and `#` comments skipped).
fn parse_openings(lines: &[String], name: &str) -> Result<Vec<Opening>> {
    let mut openings = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let text = line.split('#').next().unwrap_or("").trim();
        if text.is_empty() {
            continue;
        }
        let pos = Position::from_position_command(text)
            .with_context(|| format!("{name}, line {}: `{text}`", i + 1))?;
        let (start, moves) = stera_engine::player::history(&pos);
        openings.push(Opening { start, moves });
    }
    if openings.is_empty() {
        bail!("{name}: no openings");
    }
    Ok(openings)
}

/// Plays every game of `job` in `threads` threads, reporting as games end.
fn run_games(job: &Job, threads: usize) -> Result<Vec<Played>> {
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let (sender, receiver) = mpsc::channel::<Result<Played>>();
    let mut report = Report::new(job.games);
    let mut played: Vec<Played> = Vec::with_capacity(job.games);
    let mut failure = None;
    thread::scope(|scope| {
        for t in 0..threads.min(job.games) {
            let sender = sender.clone();
            let (next, stop) = (&next, &stop);
            scope.spawn(move || {
                if let Err(e) = game_thread(job, next, stop, &sender) {
                    stop.store(true, Ordering::Relaxed);
                    let _ = sender.send(Err(e.context(format!("game thread {t}"))));
                }
            });
        }
        drop(sender);
        for message in receiver {
            match message {
                Ok(game) => {
                    report.add(&game);
                    played.push(game);
                }
                Err(e) => {
                    stop.store(true, Ordering::Relaxed);
                    failure.get_or_insert(e);
                }
            }
        }
    });
    report.finish();
    if let Some(e) = failure {
        return Err(e);
    }
    played.sort_by_key(|p| p.index);
    report.print_summary();
    Ok(played)
}

/// One thread: its two engines play games until none are left.
fn game_thread(
    job: &Job,
    next: &AtomicUsize,
    stop: &AtomicBool,
    sender: &mpsc::Sender<Result<Played>>,
) -> Result<()> {
    let mut own_engine = job.engine.start_player().context("starting an engine")?;
    let mut other_engine = job.engine.start_player().context("starting an engine")?;
    loop {
        if stop.load(Ordering::Relaxed) {
            return Ok(());
        }
        let index = next.fetch_add(1, Ordering::Relaxed);
        if index >= job.games {
            return Ok(());
        }
        let (opening, db_color, seed) = job.plan(index);
        let own = Side {
            player: own_engine.as_mut(),
            book: Some(job.own.as_ref()),
        };
        let other = Side {
            player: other_engine.as_mut(),
            book: job.other.as_deref(),
        };
        let (black, white) = match db_color {
            Color::Black => (own, other),
            Color::White => (other, own),
        };
        let options = PlayOptions {
            seed,
            ..job.options
        };
        let game = play_game(&opening.start, &opening.moves, black, white, &options)
            .with_context(|| format!("game {}", index + 1))?;
        if sender
            .send(Ok(Played {
                index,
                game,
                db_color,
            }))
            .is_err()
        {
            return Ok(());
        }
    }
}

/// The running result, shown as games end: a progress bar on a terminal, one
/// line per game otherwise.
struct Report {
    total: usize,
    tally: Tally,
    pairs: Pentanomial,
    /// Points of the first finished game of each pair, waiting for the other.
    half_pairs: std::collections::HashMap<usize, f64>,
    bar: Option<indicatif::ProgressBar>,
}

impl Report {
    fn new(total: usize) -> Self {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = indicatif::ProgressBar::new(total as u64);
            bar.set_style(
                indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} {msg}")
                    .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            );
            bar
        });
        Self {
            total,
            tally: Tally::default(),
            pairs: Pentanomial::default(),
            half_pairs: std::collections::HashMap::new(),
            bar,
        }
    }

    fn add(&mut self, p: &Played) {
        let points = p.game.result.outcome.points_for(p.db_color);
        self.tally.add(points);
        let pair = p.index / 2;
        if let Some(first) = self.half_pairs.remove(&pair) {
            self.pairs.add_pair(first, points);
        } else {
            self.half_pairs.insert(pair, points);
        }
        let line = self.line();
        match &self.bar {
            Some(bar) => {
                bar.set_message(line);
                bar.inc(1);
            }
            None => eprintln!(
                "game {} (--db {}): {}, {} plies, {} from books; {line}",
                p.index + 1,
                if p.db_color == Color::Black {
                    "black"
                } else {
                    "white"
                },
                p.game.result,
                p.game.moves.len(),
                p.game.book_plies().len(),
            ),
        }
    }

    /// `+W =D -L score S elo E [lo, hi]`.
    fn line(&self) -> String {
        let t = &self.tally;
        let mut line = format!("+{} ={} -{}", t.wins, t.draws, t.losses);
        if let Some(e) = trinomial(t) {
            line.push_str(&format!(
                " score {:.3} elo {} [{}, {}]",
                e.score,
                elo_text(e.elo),
                elo_text(e.elo_low),
                elo_text(e.elo_high)
            ));
        }
        line
    }

    fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish();
        }
    }

    /// The final result on stdout, one `name: value` per line.
    fn print_summary(&self) {
        let t = &self.tally;
        println!("games: {} of {}", t.games(), self.total);
        println!("wins: {}", t.wins);
        println!("draws: {}", t.draws);
        println!("losses: {}", t.losses);
        if let Some(e) = trinomial(t) {
            print_estimate("trinomial", &e, t.games(), "games");
        }
        if let Some(e) = pentanomial(&self.pairs) {
            print_estimate("pentanomial", &e, self.pairs.pairs(), "pairs");
        }
        println!("los: {:.4}", los(t.wins, t.losses));
    }
}

fn print_estimate(kind: &str, e: &Estimate, n: u64, unit: &str) {
    println!(
        "score ({kind}, {n} {unit}): {:.4} [{:.4}, {:.4}]",
        e.score, e.score_low, e.score_high
    );
    println!(
        "elo ({kind}, 95 %): {} [{}, {}]",
        elo_text(e.elo),
        elo_text(e.elo_low),
        elo_text(e.elo_high)
    );
}

/// Elo with one decimal and a sign; `inf` where the score is 0 or 1.
fn elo_text(elo: f64) -> String {
    if elo.is_infinite() {
        if elo > 0.0 { "+inf" } else { "-inf" }.to_owned()
    } else {
        // `+ 0.0` turns -0.0 (an even score) into 0.0.
        format!("{:+.1}", elo + 0.0)
    }
}

fn write_games(
    path: &Path,
    played: &[Played],
    db: &Path,
    against: &str,
    engine: &str,
) -> Result<()> {
    let own = format!("{} + book {}", engine, db.display());
    let other = if against == "no book" {
        engine.to_owned()
    } else {
        format!("{engine} + book {against}")
    };
    let games = played.iter().map(|p| match p.db_color {
        Color::Black => (&p.game, own.as_str(), other.as_str()),
        Color::White => (&p.game, other.as_str(), own.as_str()),
    });
    let text = stera_games::csa::games_to_csa(games).context("cannot write the games as CSA")?;
    std::fs::write(path, text).with_context(|| format!("cannot write `{}`", path.display()))?;
    eprintln!("wrote {} games to {}", played.len(), path.display());
    Ok(())
}
