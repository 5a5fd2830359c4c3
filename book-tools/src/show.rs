//! `book-tools show`: one position of the book, its board and every move with
//! its stored and its propagated value, the games played through it, and the
//! probabilities an export would write in `count` (softmax policy, NineDayFever).

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use stera_book::terashock::{
    BookGraph, DEPTH_INFINITE, MoveLine, NdfWeights, node_lines, softmax_policy, solve,
};
use stera_book::{GameCounts, NodeStore, SledStore};
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
    /// Temperature (centipawns) of the policy and NineDayFever priors shown, as
    /// `export --export-temperature`.
    #[arg(
        long = "export-temperature",
        alias = "temperature",
        value_name = "CP",
        default_value_t = 50.0
    )]
    temperature: f64,
}

/// A text board from an SFEN: white's pieces lowercase, promoted with `+`. Every
/// square, empty or not, is three columns wide and right-aligned under its file
/// number, so a promoted piece (`+B`) and an empty square (`.`) line up alike.
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
                cells.extend(std::iter::repeat_n("  .".to_owned(), n as usize));
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
    // One open for the book and the games (a second would repeat its notes).
    let store = common::open_for_reading(&args.db)?;
    let (book, extras) = common::load(&store, &args.db, false)?;
    let evaluators = store
        .evaluators()
        .with_context(|| format!("cannot read the evaluators of `{}`", args.db.display()))?;
    // As YaneuraOu's FlippedBook probe: a position that is not thought but whose
    // colour-flipped twin is, is shown as the twin (same values, moves turned).
    let held_as_twin = book
        .get_or_twin(pos.key(), pos.flipped_key())
        .is_some_and(|(_, twin)| twin);
    let (pos, twin_note) = if held_as_twin {
        let twin = pos.flipped();
        let note = format!(
            "not thought itself; its colour-flipped twin is (moves below are the twin's):\nsfen {}\n",
            twin.to_sfen()
        );
        (twin, Some(note))
    } else {
        (pos, None)
    };
    let games = load_games(&store, &args.db, &pos, &book)?;
    let quarantine = quarantine_notes(&store, &book, &pos)?;
    drop(store);
    let mut progress = Reporter::new();
    let graph = BookGraph::build(&book, &mut |p, d, t| progress.report(p, d, t))?;
    progress.finish();
    let solution = solve(&graph);
    let Some(id) = book.get(pos.key()) else {
        return common::to_stdout(|out| {
            print_position(out, &pos, &games)?;
            print_quarantine(out, &quarantine)?;
            writeln!(
                out,
                "not thought (not in the book); moves into thought positions:"
            )?;
            for (i, mv) in pos.legal_moves().into_iter().enumerate() {
                if let Some(child) = book.get(child_key(&book, &pos, mv)) {
                    let (v, d) = solution.line_through(child);
                    let c = games.after[i];
                    writeln!(
                        out,
                        "  {mv} propagated {v} depth {} games {} score {}",
                        depth_text(d),
                        c.games(),
                        score_text(c)
                    )?;
                }
            }
            Ok(())
        });
    };
    let mut moves = Vec::new();
    let lines = node_lines(&book, &graph, Some(&solution), None, id, &pos, &mut moves)?;
    let values: Vec<f64> = lines.iter().map(|l| f64::from(l.value)).collect();
    let policy = softmax_policy(&values, args.temperature);
    let ndf = NdfWeights::solve(&book, &graph, &solution, None, &games.all, args.temperature);
    let weights = Weights {
        policy: lines
            .iter()
            .zip(&policy)
            .map(|(l, &p)| (l.index, p))
            .collect(),
        ndf: ndf.of(id).map(<[f64]>::to_vec),
    };
    common::to_stdout(|out| {
        if let Some(note) = &twin_note {
            write!(out, "{note}")?;
        }
        print_position(out, &pos, &games)?;
        writeln!(
            out,
            "node {id}: value {} depth {}, best {}",
            solution.value(id),
            depth_text(solution.depth(id)),
            solution
                .best_move(id)
                .map_or_else(|| "none (no legal move)".to_owned(), |m| m.to_string())
        )?;
        let thinker = extras.evaluator(id).map(|e| thinker_text(&evaluators, e));
        writeln!(
            out,
            "{}",
            thinker.unwrap_or_else(|| "thought by: unknown".to_owned())
        )?;
        print_moves(out, &lines, book.values(id), &games, &weights)?;
        print_learning(out, &pos, &games)?;
        print_quarantine(out, &quarantine)
    })
}

/// Who thought a position stored under evaluator `id`: `thought by: ENGINE at
/// BUDGET` (`budget not recorded` for a store written before budgets were), or
/// `values from: import FILE` when no engine thought it.
fn thinker_text(evaluators: &[String], id: u16) -> String {
    let (engine, words) = thinker_words(evaluators, usize::from(id));
    if engine {
        format!("thought by: {words}")
    } else {
        format!("values from: {words}")
    }
}

/// The thinker of evaluator `id` in words, and whether it is an engine (not an
/// import or a synthetic book's pseudo-evaluator).
pub fn thinker_words(evaluators: &[String], id: usize) -> (bool, String) {
    let Some(identity) = evaluators.get(id) else {
        return (false, format!("evaluator #{id} (not in the store's list)"));
    };
    if !stera_games::thinker::is_engine(identity) {
        return (false, identity.clone());
    }
    let t = stera_games::thinker::Thinker::parse(identity);
    (true, format!("{} at {}", t.engine, t.budget_words()))
}

/// The learning opponents and the moves with learning games (every opponent's
/// games added; `match --book-moves results --opponents` and `export
/// --by-results --opponents` choose whose count).
fn print_learning(out: &mut dyn Write, pos: &Position, games: &Games) -> io::Result<()> {
    if games.opponents.is_empty() {
        return writeln!(out, "learning games: none");
    }
    let list: Vec<String> = games
        .opponents
        .iter()
        .map(|o| format!("{} {} ({} games)", o.id, o.identity, o.games))
        .collect();
    writeln!(out, "learning opponents: {}", list.join("; "))?;
    let mut any = false;
    for (mv, c) in pos.legal_moves().into_iter().zip(&games.learned_after) {
        if c.games() > 0 {
            if !any {
                writeln!(
                    out,
                    "  move     learning games  won/drawn/lost  score (all opponents)"
                )?;
                any = true;
            }
            writeln!(
                out,
                "  {:<7} {:>15}  {:>14}  {}",
                mv.to_string(),
                c.games(),
                format!("{}/{}/{}", c.wins, c.draws, c.losses),
                score_text(*c)
            )?;
        }
    }
    if !any {
        writeln!(out, "  no learning games through this position's moves")?;
    }
    Ok(())
}

/// Quarantine records that concern the shown position: it is quarantined
/// itself, or moves of it lead to quarantined positions.
fn quarantine_notes(
    store: &stera_book::SledStore,
    book: &stera_book::Book,
    pos: &Position,
) -> Result<Vec<String>> {
    use stera_book::NodeStore;
    let here = book.get(pos.key());
    let mut notes = Vec::new();
    for (node, mv, note) in store
        .quarantined()
        .context("cannot read the quarantined positions")?
    {
        let (sfen, why) = note.split_once('\t').unwrap_or((note.as_str(), ""));
        if Some(node) == here {
            notes.push(format!(
                "move {mv} is banned: sfen {sfen} is quarantined ({why})"
            ));
        } else if Position::from_sfen(sfen).is_ok_and(|p| p.key() == pos.key()) {
            notes.push(format!("this position is quarantined ({why})"));
        }
    }
    Ok(notes)
}

fn print_quarantine(out: &mut dyn Write, notes: &[String]) -> io::Result<()> {
    for note in notes {
        writeln!(out, "quarantine: {note}")?;
    }
    if !notes.is_empty() {
        writeln!(
            out,
            "(`book-tools unban --db STORE --sfen SFEN` lifts a quarantine, on a stopped store)"
        )?;
    }
    Ok(())
}

/// The export's weights of the shown position's moves.
struct Weights {
    /// Softmax policy by canonical move index.
    policy: std::collections::HashMap<usize, f64>,
    /// NineDayFever probabilities (canonical order), when its moves have games.
    ndf: Option<Vec<f64>>,
}

/// Game results at the shown position and after each of its legal moves.
struct Games {
    /// At the position, from its side to move's view.
    here: GameCounts,
    /// After each legal move (canonical order), from the mover's view.
    after: Vec<GameCounts>,
    /// Every book position's games, by node index (for the NineDayFever weights).
    all: std::collections::HashMap<u32, GameCounts>,
    /// The learning opponents with their games.
    opponents: Vec<stera_book::OpponentRecord>,
    /// Learning games after each legal move (canonical order), every opponent's
    /// added, from the mover's view.
    learned_after: Vec<GameCounts>,
}

/// The games through `pos` and its children, read from `store` (at `db`).
fn load_games(
    store: &SledStore,
    db: &Path,
    pos: &Position,
    book: &stera_book::Book,
) -> Result<Games> {
    let counts = |key| {
        store
            .game_counts(key)
            .with_context(|| format!("cannot read the game results in `{}`", db.display()))
    };
    let here = counts(pos.key())?;
    let after = pos
        .legal_moves()
        .into_iter()
        // The child's counters are from its side to move: the mover's opponent.
        // A child the book holds as its colour-flipped twin has them under the
        // twin's key (games count for the position the book holds).
        .map(|mv| counts(child_key(book, pos, mv)).map(GameCounts::flipped))
        .collect::<Result<_>>()?;
    let mut all = std::collections::HashMap::new();
    store
        .for_each_game_count(&mut |key, c| {
            if let Some(id) = book.get(key) {
                all.insert(id.0, c);
            }
        })
        .with_context(|| format!("cannot read the game results in `{}`", db.display()))?;
    let opponents = store
        .opponents()
        .with_context(|| format!("cannot read the learning opponents of `{}`", db.display()))?;
    let ids: Vec<_> = opponents.iter().map(|o| o.id).collect();
    let learned = stera_book::learning_counts(store, &ids)
        .with_context(|| format!("cannot read the learning results in `{}`", db.display()))?;
    let learned_after = pos
        .legal_moves()
        .into_iter()
        .map(|mv| {
            let key = book.count_key(pos.key_after(mv), pos.flipped_key_after(mv));
            learned.get(&key).copied().unwrap_or_default().flipped()
        })
        .collect();
    Ok(Games {
        here,
        after,
        all,
        opponents,
        learned_after,
    })
}

/// The key under which the book holds the position after `mv`: its own, or its
/// colour-flipped twin's when only the twin is thought.
fn child_key(book: &stera_book::Book, pos: &Position, mv: stera_rules::Move) -> stera_rules::Key {
    let (key, twin_key) = (pos.key_after(mv), pos.flipped_key_after(mv));
    match book.get_or_twin(key, twin_key) {
        Some((_, true)) => twin_key,
        _ => key,
    }
}

/// The move table of a thought position, best first.
fn print_moves(
    out: &mut dyn Write,
    lines: &[MoveLine],
    stored: &[i16],
    games: &Games,
    weights: &Weights,
) -> io::Result<()> {
    writeln!(
        out,
        "  move     stored  propagated  depth  games  score  policy     ndf  ponder  (* = leads to a thought position; score for the mover; policy and ndf in %, as export --export-weights writes them in count)"
    )?;
    for l in lines {
        let c = games.after[l.index];
        let policy = weights.policy.get(&l.index).copied().unwrap_or(0.0);
        let ndf = weights
            .ndf
            .as_ref()
            .and_then(|w| w.get(l.index))
            .map_or_else(|| "-".to_owned(), |p| format!("{:.1}", 100.0 * p));
        writeln!(
            out,
            "  {:<7}{} {:>6} {:>11} {:>6} {:>6} {:>6} {:>7.1} {:>7}  {}",
            l.mv.to_string(),
            if l.thought_child { "*" } else { " " },
            stored[l.index],
            l.value,
            depth_text(l.depth),
            c.games(),
            score_text(c),
            100.0 * policy,
            ndf,
            l.ponder
                .map_or_else(|| "none".to_owned(), |m| m.to_string())
        )?;
    }
    Ok(())
}

/// A score with three decimals, `-` without games.
fn score_text(c: GameCounts) -> String {
    c.score()
        .map_or_else(|| "-".to_owned(), |s| format!("{s:.3}"))
}

/// The board, the SFEN, the key and the games through the position.
fn print_position(out: &mut dyn Write, pos: &Position, games: &Games) -> io::Result<()> {
    write!(out, "{}", board_diagram(&pos.to_sfen()))?;
    writeln!(out, "sfen {}", pos.to_sfen())?;
    writeln!(out, "key {}", pos.key())?;
    let c = games.here;
    writeln!(
        out,
        "games {} (side to move: won {}, drawn {}, lost {}), score {}",
        c.games(),
        c.wins,
        c.draws,
        c.losses,
        score_text(c)
    )
}

fn depth_text(d: u16) -> String {
    if d == DEPTH_INFINITE {
        "inf".to_owned()
    } else {
        d.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::board_diagram;

    #[test]
    fn squares_align_under_their_file_numbers() {
        // After 7g7f 3c3d 8h2b+: a promoted bishop, empty squares and pieces on one row.
        let diagram =
            board_diagram("lnsgkgsnl/1r5+B1/pppppp1pp/6p2/9/2P6/PP1PPPPPP/7R1/LNSGKGSNL w B 4");
        let lines: Vec<&str> = diagram.lines().collect();
        assert_eq!(lines[1], "  9  8  7  6  5  4  3  2  1");
        assert_eq!(lines[3], "  .  r  .  .  .  .  . +B  . b", "{diagram}");
        assert_eq!(lines[6], "  .  .  .  .  .  .  .  .  . e", "{diagram}");
        // Each of the nine rows: nine cells of three columns, each ending in its piece
        // or `.` right under the file number (the header's cells end in the digit).
        for row in &lines[1..11] {
            let cells: Vec<&str> = (0..9).map(|f| &row[3 * f..3 * f + 3]).collect();
            assert!(
                cells
                    .iter()
                    .all(|c| !c.ends_with(' ') && c.starts_with(' ')),
                "{row:?} in\n{diagram}"
            );
        }
        assert_eq!(lines[11], "black hand: B");
        assert_eq!(lines[12], "white to move");
    }
}
