//! `book-tools stats`: size, shape, principal variations, games played and growth
//! of a book.

use std::collections::{BTreeMap, VecDeque};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use stera_book::terashock::{BookGraph, DEPTH_INFINITE, NodeExtras, Solution, solve};
use stera_book::{Book, GameCounts, NodeId, NodeStore, RunConfig};
use stera_rules::Position;

use stera_service::export::MAX_LEAF_DISCOUNT;

use crate::common;
use crate::export::Reporter;

#[derive(clap::Args)]
pub struct Args {
    /// The book store directory.
    #[arg(long)]
    db: PathBuf,
    /// Longest principal variation printed per root (plies).
    #[arg(long, default_value_t = 40)]
    pv_length: usize,
}

/// A root of the run: its text, its position and, if thought, its node and
/// whether the book holds it as its colour-flipped twin.
type Root = (String, Position, Option<(NodeId, bool)>);

/// Games recorded in the store: how many, and the counters at each root; and
/// the store's bans.
struct Games {
    /// Banned edges (the selector's and quarantines).
    bans: usize,
    /// Quarantine notes: SFEN, a tab, the reason.
    quarantined: Vec<String>,
    /// Self-play games (the coordinator's self-play games); the learning games are
    /// the opponents'.
    recorded: u64,
    /// Per root (in the order of the roots), from its side to move's view.
    at_roots: Vec<GameCounts>,
    /// The learning opponents with their games.
    opponents: Vec<stera_book::OpponentRecord>,
    /// The store's evaluator identities, by id.
    evaluators: Vec<String>,
}

pub fn run(args: &Args) -> Result<()> {
    let (roots, book, extras, games) = load(&args.db)?;
    let mut progress = Reporter::new();
    let graph = BookGraph::build(&book, &mut |p, d, t| progress.report(p, d, t))?;
    progress.finish();
    let solution = solve(&graph);
    let distance = in_book_depth(&book, &graph, &roots);
    common::to_stdout(|out| {
        print_summary(out, &book, &graph, &solution)?;
        print_thinkers(out, &games, &extras)?;
        print_bans(out, &games)?;
        print_depths(out, &distance)?;
        print_pvs(out, &graph, &solution, &roots, args.pv_length)?;
        print_games(out, &roots, &games)?;
        print_growth(out, &extras)
    })
}

/// The roots of the run configuration, the book, its extras and the games; the
/// store is closed after.
fn load(db: &Path) -> Result<(Vec<Root>, Book, NodeExtras, Games)> {
    let store = common::open_for_reading(db)?;
    let config = store
        .config()
        .context("cannot read the run configuration")?
        .unwrap_or_default();
    let (book, extras) =
        NodeExtras::load_with_book(&store, false).context("cannot load the book")?;
    let roots = roots(&config, &book)?;
    let games = Games {
        bans: store.bans().context("cannot read the banned moves")?.len(),
        quarantined: store
            .quarantined()
            .context("cannot read the quarantined positions")?
            .into_iter()
            .map(|(_, _, note)| note)
            .collect(),
        recorded: store
            .games_recorded()
            .context("cannot read the game results")?,
        at_roots: roots
            .iter()
            // A root held as its twin has its games under the twin's key.
            .map(|(_, pos, held)| {
                let twin = held.is_some_and(|(_, twin)| twin);
                store.game_counts(if twin { pos.flipped_key() } else { pos.key() })
            })
            .collect::<Result<_, _>>()
            .context("cannot read the game results")?,
        opponents: store
            .opponents()
            .context("cannot read the learning opponents")?,
        evaluators: store.evaluators().context("cannot read the evaluators")?,
    };
    Ok((roots, book, extras, games))
}

fn roots(config: &RunConfig, book: &Book) -> Result<Vec<Root>> {
    config
        .roots
        .iter()
        .map(|r| {
            let pos = Position::from_position_command(r)
                .with_context(|| format!("stored root `{r}` is not a position"))?;
            let held = book.get_or_twin(pos.key(), pos.flipped_key());
            Ok((r.clone(), pos, held))
        })
        .collect()
}

/// In-book depth: fewest book moves from a root (`u32::MAX` if unreachable).
fn in_book_depth(book: &Book, graph: &BookGraph, roots: &[Root]) -> Vec<u32> {
    let mut distance = vec![u32::MAX; book.len()];
    let mut queue = VecDeque::new();
    for (id, _) in roots.iter().filter_map(|(_, _, held)| *held) {
        if distance[id.index()] == u32::MAX {
            distance[id.index()] = 0;
            queue.push_back(id);
        }
    }
    while let Some(id) = queue.pop_front() {
        let d = distance[id.index()] + 1;
        for e in graph.edges(id) {
            if distance[e.child.index()] == u32::MAX {
                distance[e.child.index()] = d;
                queue.push_back(e.child);
            }
        }
    }
    distance
}

fn print_summary(
    out: &mut dyn Write,
    book: &Book,
    graph: &BookGraph,
    solution: &Solution,
) -> io::Result<()> {
    let s = solution.stats();
    writeln!(out, "nodes            {}", book.len())?;
    writeln!(out, "move values      {}", book.value_count())?;
    writeln!(out, "book edges       {}", graph.edge_count())?;
    writeln!(out, "leaf edges       {}", graph.leaf_edge_count())?;
    writeln!(
        out,
        "analysis         {} acyclic, {} on or above cycles, {} perpetual-check loops, {} unconverged",
        s.acyclic, s.cyclic, s.perpetual_loops, s.unconverged
    )?;
    let drop = graph.expansion_drop(book);
    match (drop.mean, drop.median) {
        (Some(mean), Some(median)) => writeln!(
            out,
            "expansion drop   mean {mean:+.1} cp, median {median:+} cp over {} moves into thought positions \
             (stored value minus the value one ply deeper; --select-leaf-discount and \
             --export-leaf-discount {:.0} would put thought and unthought moves on one footing)",
            drop.moves,
            (mean / 2.0).clamp(0.0, f64::from(MAX_LEAF_DISCOUNT))
        ),
        _ => writeln!(out, "expansion drop   no move into a thought position yet"),
    }
}

/// Every thinker (engine at budget, or an import) with the positions it thought,
/// from the one scan that loaded the book.
fn print_thinkers(out: &mut dyn Write, games: &Games, extras: &NodeExtras) -> io::Result<()> {
    writeln!(
        out,
        "thinkers (positions each engine at its budget thought):"
    )?;
    let counts = &extras.positions_by_evaluator;
    if counts.iter().all(|&n| n == 0) {
        return writeln!(out, "  none (no position thought yet)");
    }
    for (id, &n) in counts.iter().enumerate().filter(|(_, n)| **n > 0) {
        let (_, who) = crate::show::thinker_words(&games.evaluators, id);
        writeln!(out, "  {who}: {n} positions")?;
    }
    Ok(())
}

/// Banned moves, and the quarantined positions one per line (they are not
/// selected again until `book-tools unban` lifts them).
fn print_bans(out: &mut dyn Write, games: &Games) -> io::Result<()> {
    writeln!(out, "banned moves     {}", games.bans)?;
    writeln!(out, "quarantined      {}", games.quarantined.len())?;
    for note in &games.quarantined {
        let (sfen, why) = note.split_once('\t').unwrap_or((note.as_str(), ""));
        writeln!(out, "  quarantined: sfen {sfen} ({why})")?;
    }
    if !games.quarantined.is_empty() {
        writeln!(
            out,
            "  (`book-tools unban --db STORE --all` lifts them, on a stopped store)"
        )?;
    }
    Ok(())
}

fn print_depths(out: &mut dyn Write, distance: &[u32]) -> io::Result<()> {
    let mut histogram: BTreeMap<u32, u64> = BTreeMap::new();
    for &d in distance {
        *histogram.entry(d).or_default() += 1;
    }
    writeln!(
        out,
        "in-book depth (book moves from the nearest root): nodes"
    )?;
    for (d, count) in &histogram {
        if *d == u32::MAX {
            writeln!(out, "  unreachable from the roots: {count}")?;
        } else {
            writeln!(out, "  {d:>3}: {count}")?;
        }
    }
    Ok(())
}

fn print_pvs(
    out: &mut dyn Write,
    graph: &BookGraph,
    solution: &Solution,
    roots: &[Root],
    pv_length: usize,
) -> io::Result<()> {
    writeln!(
        out,
        "principal variations (value for the side to move at the root, depth):"
    )?;
    for (text, _, held) in roots {
        // A root thought only as its colour-flipped twin has the twin's line.
        let line = match *held {
            Some((id, twin)) => pv_line(graph, solution, text, id, twin, pv_length),
            None => format!("  {text}: not thought yet"),
        };
        writeln!(out, "{line}")?;
    }
    Ok(())
}

/// One root's principal variation, with each move's value.
fn pv_line(
    graph: &BookGraph,
    solution: &Solution,
    text: &str,
    mut id: NodeId,
    root_twin: bool,
    pv_length: usize,
) -> String {
    let depth = solution.depth(id);
    let depth = if depth == DEPTH_INFINITE {
        "repetition".to_owned()
    } else {
        depth.to_string()
    };
    let mut line = format!("  {text}: {} ({depth}):", solution.value(id));
    let mut seen = vec![id];
    // After an odd number of edges into colour-flipped twins the line goes on on
    // a twin's board; its moves are shown flipped, as played from the root.
    let mut on_twin = root_twin;
    for _ in 0..pv_length {
        let Some(mv) = solution.best_move(id) else {
            line.push_str(" (no legal move)");
            break;
        };
        let edge = graph.edges(id).find(|e| e.mv == mv);
        let value = edge.map_or_else(|| solution.value(id), |e| -solution.value(e.child));
        let shown = if on_twin { mv.flipped() } else { mv };
        line.push_str(&format!(" {shown}({value})"));
        match edge {
            Some(e) if seen.contains(&e.child) => {
                line.push_str(" (repetition)");
                break;
            }
            Some(e) => {
                seen.push(e.child);
                on_twin ^= e.twin;
                id = e.child;
            }
            None => break,
        }
    }
    line
}

/// Games recorded (self-play and learning), the learning opponents, and the
/// self-play games through each root with its score.
fn print_games(out: &mut dyn Write, roots: &[Root], games: &Games) -> io::Result<()> {
    writeln!(out, "{}", games_recorded_line(games))?;
    if games.opponents.is_empty() {
        writeln!(out, "learning opponents: none (no learning games)")?;
    } else {
        writeln!(
            out,
            "learning opponents (their games counted apart; --opponents takes the numbers):"
        )?;
        for o in &games.opponents {
            writeln!(out, "  {} {}: {} games", o.id, o.identity, o.games)?;
        }
    }
    writeln!(
        out,
        "games through the roots (won/drawn/lost and score for the side to move at the root):"
    )?;
    for ((text, _, _), c) in roots.iter().zip(&games.at_roots) {
        match c.score() {
            Some(score) => writeln!(
                out,
                "  {text}: {} games, {}/{}/{}, score {score:.3}",
                c.games(),
                c.wins,
                c.draws,
                c.losses
            )?,
            None => writeln!(out, "  {text}: no games")?,
        }
    }
    Ok(())
}

/// `games recorded   525 (0 self-play, 525 learning)`: every game the store
/// counts, self-play games (self-play games) beside learning games (`book-tools
/// learn`, the coordinator's `--learn-games`), whose counters are kept apart.
fn games_recorded_line(games: &Games) -> String {
    let learning: u64 = games.opponents.iter().map(|o| o.games).sum();
    format!(
        "games recorded   {} ({} self-play, {learning} learning)",
        games.recorded.saturating_add(learning),
        games.recorded
    )
}

/// Growth: nodes thought per hour of their timestamps.
fn print_growth(out: &mut dyn Write, extras: &NodeExtras) -> io::Result<()> {
    let mut per_hour: BTreeMap<u32, u64> = BTreeMap::new();
    for &t in &extras.timestamps {
        *per_hour.entry(t / 3600).or_default() += 1;
    }
    writeln!(out, "growth (nodes thought per hour, UTC):")?;
    let hours: Vec<_> = per_hour.iter().collect();
    let skip = hours.len().saturating_sub(48);
    if skip > 0 {
        writeln!(out, "  ({skip} earlier hours not shown)")?;
    }
    for (hour, count) in &hours[skip..] {
        writeln!(out, "  {}: {count}", hour_name(**hour))?;
    }
    Ok(())
}

/// `2026-11-26 09:00` for the hour that starts `hour` hours after the Unix epoch.
fn hour_name(hour: u32) -> String {
    let format = time::macros::format_description!("[year]-[month]-[day] [hour]:00");
    time::OffsetDateTime::from_unix_timestamp(i64::from(hour) * 3600)
        .ok()
        .and_then(|t| t.format(&format).ok())
        .unwrap_or_else(|| format!("hour {hour} since 1970"))
}

#[cfg(test)]
mod tests {
    use super::{Games, games_recorded_line, hour_name};
    use stera_book::{OpponentId, OpponentRecord};

    #[test]
    fn learning_games_are_counted_beside_self_play() {
        let opponent = |id, games| OpponentRecord {
            id: OpponentId(id),
            identity: format!("e at {id} nodes"),
            games,
        };
        let mut games = Games {
            bans: 0,
            quarantined: Vec::new(),
            recorded: 0,
            at_roots: Vec::new(),
            opponents: vec![opponent(0, 200), opponent(1, 325)],
            evaluators: Vec::new(),
        };
        assert_eq!(
            games_recorded_line(&games),
            "games recorded   525 (0 self-play, 525 learning)"
        );
        games.recorded = 3;
        games.opponents.clear();
        assert_eq!(
            games_recorded_line(&games),
            "games recorded   3 (3 self-play, 0 learning)"
        );
    }

    #[test]
    fn hours_are_named_by_their_utc_date() {
        assert_eq!(hour_name(0), "1970-01-01 00:00");
        // 2026-11-26 09:00 UTC is 1,795,683,600 s after the epoch.
        assert_eq!(hour_name(1_795_683_600 / 3600), "2026-11-26 09:00");
    }
}
