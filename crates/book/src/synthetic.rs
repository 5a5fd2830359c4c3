//! Synthetic books for benchmarks: a deterministic pseudo-evaluator (material +
//! hash noise) and a grower that runs the real selector with large batches.
//!
//! ```
//! use stera_book::synthetic::PseudoEvaluator;
//! use stera_rules::Position;
//! let eval = PseudoEvaluator::new(1);
//! let pos = Position::startpos();
//! let a = eval.thought(&pos);
//! assert_eq!(a.values.len(), 30);
//! assert_eq!(a.values, eval.thought(&pos).values); // deterministic
//! ```

use stera_rules::{Move, Position};

use crate::{BookError, LiveBook, NodeStore, Selector, Thought};

/// Piece values (centipawns) by SFEN letter, promoted pieces separately.
fn piece_value(c: u8, promoted: bool) -> i32 {
    match (c.to_ascii_lowercase(), promoted) {
        (b'p', false) => 90,
        (b'l', false) => 315,
        (b'n', false) => 405,
        (b's', false) => 495,
        (b'g', _) => 540,
        (b'b', false) => 855,
        (b'r', false) => 990,
        (b'p' | b'l' | b'n' | b's', true) => 540,
        (b'b', true) => 945,
        (b'r', true) => 1395,
        _ => 0,
    }
}

/// A board from an SFEN: per YaneuraOu square index (`(file-1)*9 + rank-1`), the
/// piece letter, whether promoted, and whether it is black's.
struct Board {
    squares: [(u8, bool, bool); 81],
    /// Material from black's point of view (board and hands).
    material: i32,
}

fn parse_board(sfen: &str) -> Board {
    let mut squares = [(0u8, false, false); 81];
    let mut material = 0;
    let mut fields = sfen.split(' ');
    let board = fields.next().unwrap_or("");
    let _side = fields.next();
    let hand = fields.next().unwrap_or("-");
    for (rank, row) in board.split('/').enumerate().take(9) {
        let mut file = 9usize;
        let mut promoted = false;
        for c in row.bytes() {
            match c {
                b'1'..=b'9' => file = file.saturating_sub(usize::from(c - b'0')),
                b'+' => promoted = true,
                _ => {
                    if file >= 1 {
                        let black = c.is_ascii_uppercase();
                        squares[(file - 1) * 9 + rank] = (c, promoted, black);
                        let v = piece_value(c, promoted);
                        material += if black { v } else { -v };
                    }
                    file = file.saturating_sub(1);
                    promoted = false;
                }
            }
        }
    }
    let mut count = 0i32;
    for c in hand.bytes() {
        match c {
            b'0'..=b'9' => count = count * 10 + i32::from(c - b'0'),
            b'-' => {}
            _ => {
                let n = count.max(1);
                // Pieces in hand are worth a bit more than on the board.
                let v = piece_value(c, false) * 11 / 10 * n;
                material += if c.is_ascii_uppercase() { v } else { -v };
                count = 0;
            }
        }
    }
    Board { squares, material }
}

/// How every [`PseudoEvaluator`] identity starts: no engine thought such a
/// book.
pub const IDENTITY_PREFIX: &str = "pseudo-material-noise";

/// A deterministic stand-in for an engine: the value of a move is the material
/// balance after it (captures and promotions counted, no recapture foreseen) plus
/// noise hashed from the child position's key, so transpositions agree.
#[derive(Debug, Clone, Copy)]
pub struct PseudoEvaluator {
    seed: u64,
    noise: i32,
}

impl PseudoEvaluator {
    /// An evaluator whose noise depends on `seed` (±150 cp).
    #[must_use]
    pub const fn new(seed: u64) -> Self {
        Self { seed, noise: 150 }
    }

    /// The identity recorded with its thoughts (it starts with
    /// [`IDENTITY_PREFIX`]).
    #[must_use]
    pub fn identity(&self) -> String {
        format!("{IDENTITY_PREFIX} seed={}", self.seed)
    }

    fn noise(&self, key: u128) -> i32 {
        let mut z = (key as u64) ^ ((key >> 64) as u64) ^ self.seed;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        let span = u64::try_from(2 * self.noise + 1).unwrap_or(1);
        i32::try_from(z % span).unwrap_or(0) - self.noise
    }

    /// Values for every legal move of `pos` in canonical order.
    #[must_use]
    pub fn thought(&self, pos: &Position) -> Thought {
        let mut moves = Vec::new();
        let mut values = Vec::new();
        self.evaluate_into(pos, &mut moves, &mut values);
        Thought {
            values,
            depths: None,
            evaluator: self.identity(),
            timestamp: 1_700_000_000,
        }
    }

    /// [`PseudoEvaluator::thought`]'s values into reused buffers.
    pub fn evaluate_into(&self, pos: &Position, moves: &mut Vec<Move>, values: &mut Vec<i16>) {
        pos.legal_moves_into(moves);
        let board = parse_board(&pos.to_sfen());
        let black = pos.side_to_move() == stera_rules::Color::Black;
        let base = if black {
            board.material
        } else {
            -board.material
        };
        values.clear();
        for &mv in moves.iter() {
            let raw = mv.raw();
            let to = usize::from(raw & 0x7f);
            let mut gain = 0;
            if raw & (1 << 14) == 0 {
                let from = usize::from((raw >> 7) & 0x7f);
                if let Some(&(c, promoted, _)) = board.squares.get(to)
                    && c != 0
                {
                    // The captured piece leaves their side and joins our hand.
                    gain += piece_value(c, promoted) + piece_value(c, false) * 11 / 10;
                }
                if raw & (1 << 15) != 0
                    && let Some(&(c, _, _)) = board.squares.get(from)
                {
                    gain += piece_value(c, true) - piece_value(c, false);
                }
            } else {
                // A drop moves a piece from the hand (worth 110%) to the board.
                let piece = [0u8, b'p', b'l', b'n', b's', b'b', b'r', b'g'];
                let c = piece
                    .get(usize::from((raw >> 7) & 0x7f))
                    .copied()
                    .unwrap_or(0);
                gain -= piece_value(c, false) / 10;
            }
            let v = base + gain + self.noise(pos.key_after(mv).0);
            values.push(stera_rules::value::clamp_to_i16(v.clamp(-29_000, 29_000)));
        }
    }
}

/// Progress of [`grow`].
#[derive(Debug, Clone, Copy, Default)]
pub struct GrowProgress {
    pub nodes: usize,
    pub selections: u64,
}

/// How [`grow`] picks leaves.
#[derive(Debug, Clone, Copy)]
pub struct GrowOptions {
    /// Leaves thought and completed per durable write.
    pub batch: usize,
    /// With every selected leaf, also hand out up to this many of its siblings
    /// ([`Selector::select_siblings`]); 0 = every leaf comes from a search.
    pub siblings: usize,
    /// Value window (cp) for those siblings.
    pub sibling_margin: i32,
}

impl Default for GrowOptions {
    fn default() -> Self {
        Self {
            batch: 4096,
            siblings: 0,
            sibling_margin: 150,
        }
    }
}

/// Grows `live` with `selector` to `target` nodes: select a batch of leaves
/// (the real selector, leaves handed out while earlier ones are still in flight,
/// optionally with their near siblings), think them with `eval`, complete the
/// batch with one durable write. Returns the final node count (less than `target`
/// if no root has a leaf left).
///
/// # Errors
/// Storage failures.
pub fn grow<S: NodeStore>(
    live: &mut LiveBook<S>,
    selector: &mut Selector,
    eval: &PseudoEvaluator,
    target: usize,
    options: GrowOptions,
    progress: &mut dyn FnMut(GrowProgress),
) -> Result<usize, BookError> {
    let mut moves = Vec::new();
    while live.book().len() < target {
        let want = options.batch.min(target - live.book().len()).max(1);
        let mut leaves = Vec::with_capacity(want);
        while leaves.len() < want {
            let Some(leaf) = selector.select(live, 1)?.pop() else {
                break;
            };
            let room = (want - leaves.len() - 1).min(options.siblings);
            let siblings = selector.select_siblings(live, &leaf, room, options.sibling_margin);
            leaves.push(leaf);
            leaves.extend(siblings);
        }
        if leaves.is_empty() {
            break;
        }
        let mut items = Vec::with_capacity(leaves.len());
        for leaf in leaves {
            let mut values = Vec::new();
            eval.evaluate_into(&leaf.position, &mut moves, &mut values);
            items.push((
                leaf,
                Thought {
                    values,
                    depths: None,
                    evaluator: eval.identity(),
                    timestamp: 1_700_000_000,
                },
            ));
        }
        live.complete_batch(items)?;
        progress(GrowProgress {
            nodes: live.book().len(),
            selections: selector.stats().leaves,
        });
    }
    Ok(live.book().len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{MemoryStore, RunConfig};

    #[test]
    fn raw_move_squares_follow_the_board_layout() {
        // 7g7f: from square 7g = (7-1)*9 + 6, to 7f = (7-1)*9 + 5.
        let m = Move::from_usi("7g7f").unwrap().raw();
        assert_eq!(usize::from(m & 0x7f), 59);
        assert_eq!(usize::from((m >> 7) & 0x7f), 60);
        let b = parse_board(stera_rules::STARTPOS_SFEN);
        assert_eq!(b.squares[60].0, b'P');
        assert_eq!(b.material, 0);
    }

    #[test]
    fn captures_are_worth_material() {
        // Black's bishop takes white's bishop after 7g7f 3c3d.
        let pos = Position::from_position_command("startpos moves 7g7f 3c3d").unwrap();
        let eval = PseudoEvaluator::new(3);
        let t = eval.thought(&pos);
        let moves = pos.legal_moves();
        let capture = moves.iter().position(|m| m.to_string() == "8h2b+").unwrap();
        let quiet = moves.iter().position(|m| m.to_string() == "2g2f").unwrap();
        assert!(t.values[capture] > t.values[quiet] + 1000);
    }

    #[test]
    fn grow_builds_a_book_through_the_selector() {
        let config = RunConfig {
            roots: vec!["startpos".into()],
            leaves_per_turn: 16,
            ..RunConfig::default()
        };
        let mut live = LiveBook::open(MemoryStore::new(), Some(config)).unwrap();
        let mut selector = Selector::new();
        let n = grow(
            &mut live,
            &mut selector,
            &PseudoEvaluator::new(1),
            300,
            GrowOptions {
                batch: 16,
                siblings: 3,
                sibling_margin: 100,
            },
            &mut |_| {},
        )
        .unwrap();
        assert_eq!(n, 300);
        assert_eq!(live.in_flight(), 0);
        // Every node's position has as many values as legal moves.
        for i in 0..300u32 {
            let id = crate::NodeId(i);
            let pos = live.book().position_of(id).unwrap();
            assert_eq!(pos.key(), live.book().key(id));
            assert_eq!(pos.legal_move_count(), live.book().values(id).len());
        }
    }
}
