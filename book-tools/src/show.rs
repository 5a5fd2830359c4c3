//! `book-tools show`: one position of the book, its board and every move with
//! its stored and its propagated value.

use std::io::{self, Write};
use std::path::PathBuf;

use anyhow::{Context, Result};
use stera_book::terashock::{BookGraph, DEPTH_INFINITE, node_lines, solve};
use stera_rules::Position;

use crate::common;
use crate::export::Reporter;

#[derive(clap::Args)]
pub struct Args {
    /// The book store directory.
    #[arg(long)]
    db: PathBuf,
    /// `startpos`, `startpos moves ...`, `sfen ...` or an SFEN.
    position: String,
}

/// A text board from an SFEN: white's pieces lowercase, promoted with `+`.
pub fn board_diagram(sfen: &str) -> String {
    let mut fields = sfen.split_whitespace();
    let board = fields.next().unwrap_or("");
    let side = fields.next().unwrap_or("b");
    let hand = fields.next().unwrap_or("-");
    let mut out = format!("white hand: {}\n", hand_of(hand, false));
    out.push_str("  9  8  7  6  5  4  3  2  1\n");
    for (rank, row) in board.split('/').enumerate() {
        let mut cells = Vec::new();
        let mut promoted = false;
        for c in row.chars() {
            if let Some(n) = c.to_digit(10) {
                cells.extend(std::iter::repeat_n(" . ".to_owned(), n as usize));
            } else if c == '+' {
                promoted = true;
            } else {
                cells.push(format!(
                    "{:>3}",
                    format!("{}{c}", if promoted { "+" } else { "" })
                ));
                promoted = false;
            }
        }
        let rank_name = char::from(b'a' + u8::try_from(rank).unwrap_or(0));
        out.push_str(&format!("{} {rank_name}\n", cells.concat()));
    }
    out.push_str(&format!("black hand: {}\n", hand_of(hand, true)));
    out.push_str(if side == "b" {
        "black to move\n"
    } else {
        "white to move\n"
    });
    out
}

fn hand_of(hand: &str, black: bool) -> String {
    let mut out = String::new();
    let mut count = String::new();
    for c in hand.chars() {
        if c.is_ascii_digit() {
            count.push(c);
            continue;
        }
        if c != '-' && c.is_ascii_uppercase() == black {
            out.push_str(&format!("{}{} ", c.to_ascii_uppercase(), count));
        }
        count.clear();
    }
    if out.is_empty() {
        "-".to_owned()
    } else {
        out.trim_end().to_owned()
    }
}

pub fn run(args: &Args) -> Result<()> {
    // Position commands cover bare SFENs too.
    let pos = Position::from_position_command(&args.position).with_context(|| {
        format!(
            "cannot read position `{}`",
            stera_rules::excerpt(&args.position)
        )
    })?;
    let (book, _) = common::load(&args.db, false)?;
    let mut progress = Reporter::new();
    let graph = BookGraph::build(&book, &mut |p, d, t| progress.report(p, d, t))?;
    progress.finish();
    let solution = solve(&graph);
    let Some(id) = book.get(pos.key()) else {
        return common::to_stdout(|out| {
            print_position(out, &pos)?;
            writeln!(
                out,
                "not thought (not in the book); moves into thought positions:"
            )?;
            for mv in pos.legal_moves() {
                if let Some(child) = book.get(pos.key_after(mv)) {
                    let (v, d) = solution.line_through(child);
                    writeln!(out, "  {mv} propagated {v} depth {}", depth_text(d))?;
                }
            }
            Ok(())
        });
    };
    let mut moves = Vec::new();
    let lines = node_lines(&book, &graph, Some(&solution), None, id, &pos, &mut moves)?;
    let stored = book.values(id);
    common::to_stdout(|out| {
        print_position(out, &pos)?;
        writeln!(
            out,
            "node {id}: value {} depth {}, best {}",
            solution.value(id),
            depth_text(solution.depth(id)),
            solution
                .best_move(id)
                .map_or_else(|| "none (no legal move)".to_owned(), |m| m.to_string())
        )?;
        writeln!(
            out,
            "  move     stored  propagated  depth  ponder  (* = leads to a thought position)"
        )?;
        for l in &lines {
            writeln!(
                out,
                "  {:<7}{} {:>6} {:>11} {:>6}  {}",
                l.mv.to_string(),
                if l.thought_child { "*" } else { " " },
                stored[l.index],
                l.value,
                depth_text(l.depth),
                l.ponder
                    .map_or_else(|| "none".to_owned(), |m| m.to_string())
            )?;
        }
        Ok(())
    })
}

/// The board, the SFEN and the key.
fn print_position(out: &mut dyn Write, pos: &Position) -> io::Result<()> {
    write!(out, "{}", board_diagram(&pos.to_sfen()))?;
    writeln!(out, "sfen {}", pos.to_sfen())?;
    writeln!(out, "key {}", pos.key())
}

fn depth_text(d: u16) -> String {
    if d == DEPTH_INFINITE {
        "inf".to_owned()
    } else {
        d.to_string()
    }
}
