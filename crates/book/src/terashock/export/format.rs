//! Formatting entries on many threads: each position's SFEN decoded from
//! its compact code, its legal moves generated again, its lines written.

use hashbrown::HashMap;
use stera_formats::db2016::{BookMove, format_move_line};
use stera_formats::ybb::{PreparedEntry, YbbOptions};
use stera_rules::backend::board as backend;
use stera_rules::{Move, Position};

use crate::results::results_value;
use crate::terashock::sfen_code::{Code, FIELDS, LITERAL, SfenCoder, SfenTable, slot_id};
use crate::terashock::{
    BookGraph, NdfWeights, NodeExtras, SoftmaxValues, Solution, TeraShockError, softmax_policy,
};
use crate::{Book, NodeId};

use super::lines::{MoveLine, book_moves, lines_into};
use super::options::{Weights, policy_counts};

/// Everything a formatting thread reads.
pub(super) struct FormatContext<'a> {
    pub(super) book: &'a Book,
    pub(super) parsed: &'a ParsedFields,
    pub(super) graph: &'a BookGraph,
    pub(super) solution: Option<&'a Solution>,
    pub(super) softmax: Option<&'a SoftmaxValues>,
    pub(super) ndf: Option<&'a NdfWeights>,
    pub(super) extras: &'a NodeExtras,
    pub(super) table: &'a SfenTable,
    pub(super) walk_plies: &'a HashMap<u32, u32>,
    pub(super) shrink: bool,
    pub(super) weights: Weights,
    pub(super) temperature: f64,
    pub(super) by_results: Option<f64>,
}

impl FormatContext<'_> {
    /// `lines` of the position `sfen` valued by their game results
    /// ([`ExportOptions::by_results`]) and ordered by the new values (stable: the
    /// analysis's order among equals).
    fn value_by_results(
        &self,
        sfen: &[u8],
        prior_games: f64,
        lines: &mut [MoveLine],
    ) -> Result<(), TeraShockError> {
        let text = std::str::from_utf8(sfen)
            .map_err(|_| crate::BookError::Corrupt("a SFEN that is not UTF-8".into()))?;
        let position = Position::from_sfen(text)
            .map_err(|e| crate::BookError::Corrupt(format!("`{text}`: {e}")))?;
        for line in lines.iter_mut() {
            let key = self.book.count_key(
                position.key_after(line.mv),
                position.flipped_key_after(line.mv),
            );
            if let Some(c) = self.extras.learned.get(&key) {
                let value = results_value(c.flipped(), i32::from(line.value), prior_games);
                line.value = stera_rules::value::clamp_to_i16(value);
            }
        }
        lines.sort_by_key(|l| std::cmp::Reverse(l.value));
        Ok(())
    }

    /// Calls `emit` with each entry of `slots` (see [`SfenTable`]): its SFEN with
    /// ply, and its moves as written, and also its ply and its position as the
    /// rules backend holds it.
    fn entries(
        &self,
        slots: &[u128],
        mut emit: impl FnMut(&[u8], &[BookMove], u32, &backend::Position) -> Result<(), TeraShockError>,
    ) -> Result<(), TeraShockError> {
        let mut sfen = Vec::with_capacity(200);
        let mut moves = Vec::with_capacity(600);
        let mut lines = Vec::with_capacity(600);
        let mut written: Vec<BookMove> = Vec::with_capacity(600);
        let mut legal = LegalMoves::new();
        let mut code = Code::default();
        let mut entries = [LITERAL; FIELDS];
        for &slot in slots {
            let id = slot_id(slot);
            sfen.clear();
            self.table
                .decode(slot, &mut code, &mut sfen, &mut entries)?;
            legal.of(self.parsed, &entries, &sfen, &mut moves)?;
            if moves.len() != self.book.values(NodeId(id)).len() {
                return Err(crate::BookError::Corrupt(format!(
                    "node {id}: {} legal moves in `{}` but {} values",
                    moves.len(),
                    String::from_utf8_lossy(&sfen),
                    self.book.values(NodeId(id)).len()
                ))
                .into());
            }
            let ply = match self.extras.plies[id as usize] {
                0 => self.walk_plies.get(&id).copied().unwrap_or(1),
                stored => u32::from(stored),
            };
            sfen.push(b' ');
            push_decimal(&mut sfen, ply);
            lines_into(
                self.book,
                self.graph,
                self.solution,
                self.softmax,
                Some(self.extras),
                NodeId(id),
                &moves,
                &mut lines,
            );
            if let Some(prior_games) = self.by_results
                && self.solution.is_some()
            {
                self.value_by_results(&sfen, prior_games, &mut lines)?;
            }
            if self.shrink
                && let Some(best) = lines.first().map(|l| l.value)
            {
                lines.retain(|l| l.value == best);
            }
            let counts = self.counts(id, &lines);
            written.clear();
            written.extend(book_moves(&lines, self.solution.is_some()).enumerate().map(
                |(i, mut m)| {
                    if let Some(&c) = counts.get(i) {
                        m.count = c;
                    }
                    m
                },
            ));
            emit(&sfen, &written, ply, &legal.pos)?;
        }
        Ok(())
    }

    /// The `count` field of each of the lines of node `id` (empty: 1 each).
    fn counts(&self, id: u32, lines: &[MoveLine]) -> Vec<u64> {
        if self.weights == Weights::One {
            return Vec::new();
        }
        // NineDayFever's probabilities where asked for and the node has them:
        // canonical order to the lines' order, renormalised over the lines kept
        // (--shrink keeps the best only).
        let from_games = self
            .ndf
            .filter(|_| self.weights == Weights::Ndf)
            .and_then(|w| w.of(NodeId(id)))
            .and_then(|w| {
                let p: Vec<f64> = lines
                    .iter()
                    .map(|l| w.get(l.index).copied().unwrap_or(0.0))
                    .collect();
                let sum: f64 = p.iter().sum();
                (sum > 0.0).then(|| p.iter().map(|v| v / sum).collect::<Vec<_>>())
            });
        // Otherwise the softmax policy of the values.
        let p = from_games.unwrap_or_else(|| {
            let q: Vec<f64> = lines.iter().map(|l| f64::from(l.value)).collect();
            softmax_policy(&q, self.temperature)
        });
        policy_counts(&p)
    }

    /// The text of the entries of `slots`, with their entry and move counts.
    pub(super) fn format(&self, slots: &[u128]) -> Result<(Vec<u8>, u64, u64), TeraShockError> {
        let mut text = Vec::with_capacity(slots.len() * 600);
        let mut move_count = 0u64;
        self.entries(slots, |sfen, moves, _, _| {
            text.extend_from_slice(b"sfen ");
            text.extend_from_slice(sfen);
            text.extend_from_slice(b"\r\n");
            for m in moves {
                format_move_line(&mut text, m);
            }
            move_count += moves.len() as u64;
            Ok(())
        })?;
        Ok((text, slots.len() as u64, move_count))
    }

    /// The entries of `slots` packed for a `.ybb` writer: from the position the
    /// moves were generated on (parsing the SFEN text again, legality checks and
    /// all, was nearly a third of the packing's time).
    pub(super) fn prepare(
        &self,
        slots: &[u128],
        options: YbbOptions,
    ) -> Result<Vec<PreparedEntry>, TeraShockError> {
        let mut out = Vec::with_capacity(slots.len());
        self.entries(slots, |_, moves, ply, position| {
            let packed = stera_rules::packed_sfen::pack_backend(position);
            out.push(PreparedEntry::from_packed(packed, ply, moves, options)?);
            Ok(())
        })?;
        Ok(out)
    }
}

/// Appends `n` in decimal.
fn push_decimal(out: &mut Vec<u8>, n: u32) {
    out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
}

/// The backend's reading of every dictionary entry of the SFEN code, so that a
/// position's state is put together from its fields' entries instead of parsing
/// its text (a field outside the dictionary: the text is parsed).
pub(super) struct ParsedFields {
    /// Per rank (top to bottom) and entry: the pieces of files 1..9.
    ranks: Vec<Vec<Option<[stera_rules::backend::types::Piece; 9]>>>,
    sides: Vec<Option<stera_rules::backend::types::Color>>,
    hands: Vec<Option<[stera_rules::backend::types::Hand; 2]>>,
}

impl ParsedFields {
    pub(super) fn new(coder: &SfenCoder) -> Self {
        let text = |s: &[u8]| String::from_utf8_lossy(s).into_owned();
        let parse = |sfen: String| backend::parse_sfen(&sfen).ok();
        let ranks = (0..9)
            .map(|r| {
                coder
                    .dictionary(r)
                    .iter()
                    .map(|entry| {
                        let board: Vec<String> = (0..9)
                            .map(|i| if i == r { text(entry) } else { "9".into() })
                            .collect();
                        let state = parse(format!("{} b -", board.join("/")))?;
                        Some(std::array::from_fn(|file| state.board.get(square(file, r))))
                    })
                    .collect()
            })
            .collect();
        let empty = "9/9/9/9/9/9/9/9/9";
        let sides = coder
            .dictionary(9)
            .iter()
            .map(|e| parse(format!("{empty} {} -", text(e))).map(|s| s.side_to_move))
            .collect();
        let hands = coder
            .dictionary(10)
            .iter()
            .map(|e| parse(format!("{empty} b {}", text(e))).map(|s| s.hands))
            .collect();
        Self {
            ranks,
            sides,
            hands,
        }
    }

    /// The state of the position whose fields are these dictionary entries
    /// (`None` when one is not an entry).
    fn state(&self, entries: &[u32; FIELDS]) -> Option<backend::PositionState> {
        let entry = |f: usize| usize::try_from(entries[f]).ok();
        let mut board = backend::BoardArray::empty();
        for (r, rank) in self.ranks.iter().enumerate() {
            let pieces = rank.get(entry(r)?)?.as_ref()?;
            for (file, &piece) in pieces.iter().enumerate() {
                if !piece.is_empty() {
                    board.set(square(file, r), piece);
                }
            }
        }
        Some(backend::PositionState {
            board,
            hands: (*self.hands.get(entry(10)?)?)?,
            side_to_move: (*self.sides.get(entry(9)?)?)?,
            ply: 0,
        })
    }
}

/// The backend's square of a file (0 for file 1) and rank (0 for rank a).
fn square(file: usize, rank: usize) -> stera_rules::backend::types::Square {
    stera_rules::backend::types::Square::from_index(file * 9 + rank)
}

/// The legal moves of an SFEN in canonical order, as
/// [`Position::legal_moves_into`] gives them, through the rules backend: the
/// export regenerates them for every entry while formatting instead of keeping
/// them from the walk, and skips what [`Position::from_sfen`] adds for input
/// from outside (legality checks, our key), since these SFENs are the walk's.
/// A node whose move count differs from its value count is reported.
struct LegalMoves {
    pos: backend::Position,
    list: backend::MoveList,
}

impl LegalMoves {
    fn new() -> Self {
        Self {
            pos: backend::Position::empty(),
            list: backend::MoveList::new(),
        }
    }

    /// The moves of the position whose SFEN (without ply) is `sfen`, with the
    /// dictionary `entries` of its fields.
    fn of(
        &mut self,
        parsed: &ParsedFields,
        entries: &[u32; FIELDS],
        sfen: &[u8],
        out: &mut Vec<Move>,
    ) -> Result<(), TeraShockError> {
        let text = || String::from_utf8_lossy(sfen).into_owned();
        let bad = |e: &dyn std::fmt::Display| TeraShockError::Invalid(format!("`{}`: {e}", text()));
        let state = match parsed.state(entries) {
            Some(state) => state,
            None => backend::parse_sfen(&text()).map_err(|e| bad(&e))?,
        };
        self.pos
            .try_set_position_state(&state)
            .map_err(|e| bad(&e))?;
        backend::movegen::generate_moves::<backend::movegen::LegalAll>(&self.pos, &mut self.list);
        out.clear();
        out.extend(self.list.iter().filter_map(|m| Move::from_raw(m.raw())));
        stera_rules::sort_canonical(out, |m| *m);
        Ok(())
    }
}
