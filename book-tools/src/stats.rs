//! `book-tools stats`: size, shape, principal variations and growth of a book.

use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;

use anyhow::{Context, Result};
use stera_book::NodeStore;
use stera_book::terashock::{BookGraph, DEPTH_INFINITE, solve};
use stera_rules::Position;

use crate::export::{Reporter, open_existing};

#[derive(clap::Args)]
pub struct Args {
    /// The book store directory.
    #[arg(long)]
    db: PathBuf,
    /// Longest principal variation printed per root (plies).
    #[arg(long, default_value_t = 40)]
    pv_length: usize,
}

pub fn run(args: &Args) -> Result<()> {
    let store = open_existing(&args.db)?;
    let config = store
        .config()
        .context("cannot read the run configuration")?
        .unwrap_or_default();
    let (book, extras) = stera_book::terashock::NodeExtras::load_with_book(&store, false)
        .context("cannot load the book")?;
    drop(store);
    let mut progress = Reporter::new();
    let graph = BookGraph::build(&book, &mut |p, d, t| progress.report(p, d, t))?;
    progress.finish();
    let solution = solve(&graph);
    let s = solution.stats();
    println!("nodes            {}", book.len());
    println!("move values      {}", book.value_count());
    println!("book edges       {}", graph.edge_count());
    println!("leaf edges       {}", graph.leaf_edge_count());
    println!(
        "analysis         {} acyclic, {} on or above cycles, {} perpetual-check loops, {} unconverged",
        s.acyclic, s.cyclic, s.perpetual_loops, s.unconverged
    );

    // In-book depth: fewest book moves from a root.
    let mut distance = vec![u32::MAX; book.len()];
    let mut queue = VecDeque::new();
    let mut roots = Vec::new();
    for r in &config.roots {
        let pos = Position::from_position_command(r)
            .with_context(|| format!("stored root `{r}` is not a position"))?;
        let id = book.get(pos.key());
        if let Some(id) = id
            && distance[id.index()] == u32::MAX
        {
            distance[id.index()] = 0;
            queue.push_back(id);
        }
        roots.push((r.clone(), pos, id));
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
    let mut histogram: BTreeMap<u32, u64> = BTreeMap::new();
    for &d in &distance {
        *histogram.entry(d).or_default() += 1;
    }
    println!("in-book depth (book moves from the nearest root): nodes");
    for (d, count) in &histogram {
        if *d == u32::MAX {
            println!("  unreachable from the roots: {count}");
        } else {
            println!("  {d:>3}: {count}");
        }
    }

    println!("principal variations (value for the side to move at the root, depth):");
    for (text, pos, id) in &roots {
        let Some(mut id) = *id else {
            println!("  {text}: not thought yet");
            continue;
        };
        let depth = solution.depth(id);
        let depth = if depth == DEPTH_INFINITE {
            "repetition".to_owned()
        } else {
            depth.to_string()
        };
        let mut line = format!("  {text}: {} ({depth}):", solution.value(id));
        let mut pos = pos.clone();
        let mut seen = vec![id];
        for _ in 0..args.pv_length {
            let Some(mv) = solution.best_move(id) else {
                line.push_str(" (no legal move)");
                break;
            };
            let value = graph
                .edges(id)
                .find(|e| e.mv == mv)
                .map_or_else(|| solution.value(id), |e| -solution.value(e.child));
            line.push_str(&format!(" {mv}({value})"));
            pos.do_move(mv);
            match book.get(pos.key()) {
                Some(next) if seen.contains(&next) => {
                    line.push_str(" (repetition)");
                    break;
                }
                Some(next) => {
                    seen.push(next);
                    id = next;
                }
                None => break,
            }
        }
        println!("{line}");
    }

    // Growth: nodes thought per hour of their timestamps.
    let mut per_hour: BTreeMap<u32, u64> = BTreeMap::new();
    for &t in &extras.timestamps {
        *per_hour.entry(t / 3600).or_default() += 1;
    }
    println!("growth (nodes per hour, UTC hours since the epoch):");
    let hours: Vec<_> = per_hour.iter().collect();
    let skip = hours.len().saturating_sub(48);
    if skip > 0 {
        println!("  ({skip} earlier hours not shown)");
    }
    for (hour, count) in &hours[skip..] {
        println!("  hour {hour}: {count}");
    }
    Ok(())
}
