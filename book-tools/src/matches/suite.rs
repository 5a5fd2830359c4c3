//! The opening suite of a match: one opening per pair of games.
//!
//! Where openings come from:
//! * the book under test (the default): every distinct position (a position and
//!   its colour-flipped twin count once) reached from the roots through moves
//!   into positions the book holds, at the plies asked for, shuffled by the seed;
//! * a file of position lines, in its order;
//! * random plies: that many random legal moves from a root, kept when the
//!   engine scores the position as balanced.
//!
//! A suite shorter than the pairs is refused (unless openings may repeat),
//! with what to add.

use std::collections::HashSet;
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use anyhow::{Context, Result, bail};
use rand::SeedableRng;
use rand::rngs::StdRng;
use rand::seq::{IndexedRandom, SliceRandom};
use stera_engine::{Limits, Player, PlayerMove};
use stera_games::BookSource;
use stera_games::openings::{self, Opening};
use stera_rules::Position;

/// The most positions a book suite collects before sampling: enough for any
/// match, bounded for a 15M-position book.
pub const MAX_BOOK_SUITE: usize = 1_000_000;

/// The largest ply a book suite reaches.
pub const MAX_SUITE_PLY: u32 = 64;

/// Plies from a root: `LO-HI` or `N`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlyRange {
    pub low: u32,
    pub high: u32,
}

impl FromStr for PlyRange {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let number = |s: &str| {
            s.trim()
                .parse::<u32>()
                .map_err(|_| format!("`{s}` is not a ply number (expected LO-HI or N)"))
        };
        let (low, high) = match text.split_once('-') {
            Some((a, b)) => (number(a)?, number(b)?),
            None => {
                let n = number(text)?;
                (n, n)
            }
        };
        if low > high {
            return Err(format!("plies {low}-{high}: the first is above the last"));
        }
        if high > MAX_SUITE_PLY {
            return Err(format!(
                "plies up to {high}: at most {MAX_SUITE_PLY} (a book suite walks every line to that depth)"
            ));
        }
        Ok(Self { low, high })
    }
}

impl fmt::Display for PlyRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.low == self.high {
            write!(f, "{}", self.low)
        } else {
            write!(f, "{}-{}", self.low, self.high)
        }
    }
}

/// Which kind of suite a match plays.
#[derive(Debug, Clone)]
pub enum SuiteSource {
    Book(PlyRange),
    File(PathBuf),
    Random { plies: u32, balanced_cp: i32 },
}

impl SuiteSource {
    /// A short description for reports.
    pub fn describe(&self) -> String {
        match self {
            Self::Book(plies) => format!("book positions at plies {plies}"),
            Self::File(path) => format!("file {}", path.display()),
            Self::Random { plies, balanced_cp } => {
                format!("{plies} random plies within {balanced_cp} cp")
            }
        }
    }
}

/// What a suite is built from.
pub struct Request<'a> {
    pub source: &'a SuiteSource,
    /// The book under test.
    pub book: &'a dyn BookSource,
    /// Its roots (position lines; a book file's is `startpos`).
    pub roots: &'a [String],
    /// Pairs to play: openings needed.
    pub pairs: usize,
    /// Openings may be used again when there are fewer than pairs.
    pub repeat: bool,
    pub seed: u64,
    /// The engine that scores random openings.
    pub player: &'a mut dyn Player,
    pub limits: &'a Limits,
}

/// Builds the suite: at least `pairs` openings, or fewer with `repeat`.
///
/// # Errors
/// Unreadable or malformed openings, an engine failure scoring random ones, or
/// too few openings (saying what to add).
pub fn build(request: &mut Request<'_>) -> Result<Vec<Opening>> {
    let roots = || {
        let lines = root_lines(request.roots);
        openings::parse_lines(lines.iter().map(String::as_str), "the book's roots")
    };
    let openings = match request.source {
        SuiteSource::File(path) => openings::read_file(path)?,
        SuiteSource::Book(plies) => {
            from_book(request.book, &roots()?, *plies, request.pairs, request.seed)
        }
        &SuiteSource::Random { plies, balanced_cp } => random(
            &roots()?,
            plies,
            balanced_cp,
            request.pairs,
            request.seed,
            request.player,
            request.limits,
        )?,
    };
    enough(openings, request.pairs, request.repeat, request.source)
}

fn root_lines(roots: &[String]) -> Vec<String> {
    if roots.is_empty() {
        vec!["startpos".to_owned()]
    } else {
        roots.to_vec()
    }
}

/// Refuses a suite shorter than `pairs` unless openings may repeat.
fn enough(
    openings: Vec<Opening>,
    pairs: usize,
    repeat: bool,
    source: &SuiteSource,
) -> Result<Vec<Opening>> {
    if openings.is_empty() {
        bail!("the suite ({}) has no openings", source.describe());
    }
    if openings.len() < pairs && !repeat {
        let hint = match source {
            SuiteSource::Book(plies) => format!(
                "widen --suite-plies (now {plies}), grow the book, give --openings FILE or --random-plies N"
            ),
            SuiteSource::File(_) => "add lines to the file".to_owned(),
            SuiteSource::Random { .. } => {
                "raise --random-plies or --balanced-cp, or give --openings FILE".to_owned()
            }
        };
        bail!(
            "the suite ({}) has {} distinct openings, {} pairs need {}: games would repeat and not be independent; {hint}, play fewer --games, or allow repeats with --repeat-openings (and --node-jitter for deterministic engines)",
            source.describe(),
            openings.len(),
            pairs,
            pairs,
        );
    }
    Ok(openings)
}

/// A position and its colour-flipped twin are one opening.
fn canonical(position: &Position) -> u128 {
    position.key().0.min(position.flipped_key().0)
}

/// Distinct book positions at `plies` (moves from the start of their root's
/// line, so `startpos moves 7g7f` is at ply 1), reached from the roots through
/// moves into positions the book holds; a sample of `pairs` of them (all when fewer) in an
/// order drawn from `seed`.
fn from_book(
    book: &dyn BookSource,
    roots: &[Opening],
    plies: PlyRange,
    pairs: usize,
    seed: u64,
) -> Vec<Opening> {
    let mut seen = HashSet::new();
    // Positions with their ply: moves from the start of their root's line.
    let mut frontier: Vec<(Position, u32)> = Vec::new();
    for root in roots {
        let mut pos = root.start.clone();
        for &mv in &root.moves {
            pos.do_move(mv);
        }
        let ply = u32::try_from(root.moves.len()).unwrap_or(u32::MAX);
        if book.candidates(&pos).is_some() && seen.insert(canonical(&pos)) {
            frontier.push((pos, ply));
        }
    }
    let mut found: Vec<Position> = Vec::new();
    while !frontier.is_empty() && found.len() < MAX_BOOK_SUITE {
        let mut next = Vec::new();
        'walk: for (pos, ply) in frontier {
            if (plies.low..=plies.high).contains(&ply) {
                found.push(pos.clone());
            }
            if ply >= plies.high {
                continue;
            }
            let Some(candidates) = book.candidates(&pos) else {
                continue;
            };
            for c in candidates {
                let mut child = pos.clone();
                child.do_move(c.mv);
                if child.game_repetition().is_some() || book.candidates(&child).is_none() {
                    continue;
                }
                if seen.insert(canonical(&child)) {
                    next.push((child, ply + 1));
                    if found.len() + next.len() >= MAX_BOOK_SUITE {
                        break 'walk;
                    }
                }
            }
        }
        frontier = next;
    }
    let mut rng = StdRng::seed_from_u64(seed);
    found.shuffle(&mut rng);
    found.truncate(pairs.max(1));
    found.iter().map(Opening::of).collect()
}

/// Openings of `plies` random legal moves from the roots, kept when the engine's
/// score is within `balanced_cp`; distinct (twins count once).
fn random(
    roots: &[Opening],
    plies: u32,
    balanced_cp: i32,
    pairs: usize,
    seed: u64,
    player: &mut dyn Player,
    limits: &Limits,
) -> Result<Vec<Opening>> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut seen = HashSet::new();
    let mut openings = Vec::new();
    // Each try costs one engine search; most succeed near the start position.
    let tries = pairs.saturating_mul(20).max(100);
    for attempt in 0..tries {
        if openings.len() >= pairs {
            break;
        }
        let root = &roots[attempt % roots.len()];
        let mut pos = root.start.clone();
        for &mv in &root.moves {
            pos.do_move(mv);
        }
        let mut complete = true;
        for _ in 0..plies {
            let moves = pos.legal_moves();
            let Some(&mv) = moves.choose(&mut rng) else {
                complete = false;
                break;
            };
            pos.do_move(mv);
        }
        if !complete || pos.game_repetition().is_some() || !seen.insert(canonical(&pos)) {
            continue;
        }
        player.new_game().context("scoring a random opening")?;
        let answer = player
            .play(&pos, limits)
            .context("scoring a random opening")?;
        if let PlayerMove::Move {
            score: Some(score), ..
        } = answer
            && score.abs() <= balanced_cp
        {
            openings.push(Opening::of(&pos));
        }
    }
    Ok(openings)
}

#[cfg(test)]
mod tests {
    use super::*;
    use stera_games::Candidate;
    use stera_rules::Move;

    /// A book of every position up to `depth` plies along the first `width`
    /// legal moves of each position.
    struct TreeBook {
        keys: HashSet<u128>,
        width: usize,
    }

    impl TreeBook {
        fn new(depth: u32, width: usize) -> Self {
            let mut keys = HashSet::new();
            let mut frontier = vec![Position::startpos()];
            for _ in 0..=depth {
                let mut next = Vec::new();
                for pos in &frontier {
                    keys.insert(pos.key().0);
                    for mv in pos.legal_moves().into_iter().take(width) {
                        let mut child = pos.clone();
                        child.do_move(mv);
                        next.push(child);
                    }
                }
                frontier = next;
            }
            Self { keys, width }
        }
    }

    impl BookSource for TreeBook {
        fn candidates(&self, position: &Position) -> Option<Vec<Candidate>> {
            self.keys.contains(&position.key().0).then(|| {
                position
                    .legal_moves()
                    .into_iter()
                    .take(self.width)
                    .map(|mv| Candidate {
                        mv,
                        value: 0,
                        count: 1,
                    })
                    .collect()
            })
        }
        fn has_counts(&self) -> bool {
            false
        }
        fn describe(&self) -> String {
            "tree".to_owned()
        }
    }

    fn startpos() -> Vec<Opening> {
        openings::parse_lines(["startpos"], "roots").unwrap()
    }

    #[test]
    fn a_book_suite_holds_distinct_book_positions_at_the_plies_asked_for() {
        let book = TreeBook::new(4, 3);
        let plies = PlyRange { low: 2, high: 3 };
        let suite = from_book(&book, &startpos(), plies, 1_000, 7);
        // Independently: the positions of the tree at plies 2 and 3 (3 moves a
        // position: 9 and 27 lines, some of which transpose), less those seen
        // at plies 0 and 1.
        let mut by_ply = vec![vec![Position::startpos()]];
        for _ in 0..3 {
            let next: Vec<Position> = by_ply
                .last()
                .unwrap()
                .iter()
                .flat_map(|p| {
                    p.legal_moves().into_iter().take(3).map(move |mv| {
                        let mut c = p.clone();
                        c.do_move(mv);
                        c
                    })
                })
                .collect();
            by_ply.push(next);
        }
        let early: HashSet<u128> = by_ply[..2].iter().flatten().map(canonical).collect();
        let expected: HashSet<u128> = by_ply[2..]
            .iter()
            .flatten()
            .map(canonical)
            .filter(|k| !early.contains(k))
            .collect();
        assert!(expected.len() > 20 && expected.len() <= 36);
        assert_eq!(suite.len(), expected.len());
        let mut keys = HashSet::new();
        for opening in &suite {
            assert!((2..=3).contains(&opening.moves.len()), "{opening:?}");
            let mut pos = opening.start.clone();
            for &mv in &opening.moves {
                pos.do_move(mv);
            }
            assert!(book.candidates(&pos).is_some());
            assert!(keys.insert(canonical(&pos)), "repeated opening");
        }
        // A sample of 5, the same for the same seed, another for another seed.
        let a = from_book(&book, &startpos(), plies, 5, 7);
        let b = from_book(&book, &startpos(), plies, 5, 7);
        let c = from_book(&book, &startpos(), plies, 5, 8);
        let line =
            |s: &[Opening]| -> Vec<Vec<Move>> { s.iter().map(|o| o.moves.clone()).collect() };
        assert_eq!(a.len(), 5);
        assert_eq!(line(&a), line(&b));
        assert_ne!(line(&a), line(&c));
    }

    #[test]
    fn a_short_suite_is_refused_with_what_to_add_unless_repeats_are_allowed() {
        let book = TreeBook::new(2, 2);
        let source = SuiteSource::Book(PlyRange { low: 1, high: 1 });
        let suite = from_book(&book, &startpos(), PlyRange { low: 1, high: 1 }, 10, 1);
        assert_eq!(suite.len(), 2);
        let err = enough(suite.clone(), 10, false, &source).unwrap_err();
        let text = format!("{err:#}");
        assert!(text.contains("2 distinct openings, 10 pairs"), "{text}");
        assert!(text.contains("--suite-plies"), "{text}");
        assert!(text.contains("--repeat-openings"), "{text}");
        assert_eq!(enough(suite, 10, true, &source).unwrap().len(), 2);
    }

    #[test]
    fn ply_ranges_parse_and_bad_ones_are_refused() {
        assert_eq!(
            "2-8".parse::<PlyRange>().unwrap(),
            PlyRange { low: 2, high: 8 }
        );
        assert_eq!(
            "5".parse::<PlyRange>().unwrap(),
            PlyRange { low: 5, high: 5 }
        );
        assert!("8-2".parse::<PlyRange>().is_err());
        assert!("x".parse::<PlyRange>().is_err());
        assert!("2-1000".parse::<PlyRange>().is_err());
    }

    #[test]
    fn random_openings_are_distinct_balanced_and_reproducible() {
        let mut player = stera_engine::builtin::BuiltinPlayer::new();
        let limits = Limits {
            nodes: Some(300),
            ..Limits::default()
        };
        let a = random(&startpos(), 4, 300, 6, 3, &mut player, &limits).unwrap();
        let b = random(&startpos(), 4, 300, 6, 3, &mut player, &limits).unwrap();
        assert_eq!(a.len(), 6);
        let line =
            |s: &[Opening]| -> Vec<Vec<Move>> { s.iter().map(|o| o.moves.clone()).collect() };
        assert_eq!(line(&a), line(&b));
        let keys: HashSet<u128> = a
            .iter()
            .map(|o| {
                let mut pos = o.start.clone();
                for &mv in &o.moves {
                    pos.do_move(mv);
                }
                canonical(&pos)
            })
            .collect();
        assert_eq!(keys.len(), 6);
        assert!(a.iter().all(|o| o.moves.len() == 4));
    }
}
