use std::time::Instant;

use anyhow::{Context, Result};
use stera_rules::Position;

#[derive(clap::Args)]
pub struct Args {
    /// `startpos`, an SFEN (with or without a leading `sfen `, ply optional), or a
    /// position command such as `startpos moves 7g7f 3c3d`.
    position: String,
    /// Plies to enumerate (0 counts the position itself).
    depth: u8,
    /// Print the leaf count below each legal move, one `<move> <count>` line each.
    #[arg(long)]
    divide: bool,
}

pub fn run(args: &Args) -> Result<()> {
    let mut pos = Position::from_position_command(&args.position).with_context(|| {
        format!(
            "cannot read position `{}`",
            stera_rules::excerpt(&args.position)
        )
    })?;
    let start = Instant::now();
    let nodes = if args.divide && args.depth > 0 {
        let branches = pos.perft_divide(args.depth);
        for (mv, n) in &branches {
            crate::say!("{mv} {n}");
        }
        branches.iter().map(|(_, n)| n).sum()
    } else {
        pos.perft(args.depth)
    };
    let secs = start.elapsed().as_secs_f64();
    let rate = if secs > 0.0 { nodes as f64 / secs } else { 0.0 };
    crate::say!("time {secs:.3} s, {rate:.0} nodes/s");
    crate::say!("nodes {nodes}");
    Ok(())
}
