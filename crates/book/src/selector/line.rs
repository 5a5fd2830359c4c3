//! The line the search is on, with its position built only when asked for.
//!
//! The search used to play every move into a thought child on a `Position`
//! (and build the twin's board at every twin edge) only to ask whether the
//! child repeats a position of the line and how deep it is, and to take it
//! back. With the moves' keys kept by the edge tables, those answers come from
//! the keys of the line: a repetition needs the same key at an even distance of
//! at least four plies (the same board, hands and side to move), so when no
//! such key is there the position's own repetition rule would find none. The
//! position is built, from the last one built, only where the keys cannot
//! answer: a node without an edge table yet, or a child whose key did repeat.

use stera_rules::{Key, Move, Position, Repetition};

/// The search's line from where it started: keys of every position on it, and
/// its position built as far as was needed.
pub(super) struct Line {
    /// The position at depth `built`.
    pos: Position,
    built: usize,
    /// The line's edges: move and whether it leads into a colour-flipped twin.
    edges: Vec<(Move, bool)>,
    /// The positions before each twin edge among the first `built` edges (a
    /// twin's board has no history to take a move back through).
    before_twin: Vec<Position>,
    /// The key of the position at each depth of the line, on its own board.
    keys: Vec<Key>,
    /// The keys of the positions before the start, oldest first.
    history: Vec<Key>,
    /// Depth of the last position entered through a twin edge (0: none), where
    /// the history of the position's own repetition rule begins again.
    since: Vec<usize>,
    /// The starting position's game ply.
    start_ply: u32,
    /// How many keys of `history` and `keys` fall in each bucket (by their low
    /// bits): a key alone in its bucket repeats nothing, which spares the scan
    /// of the whole line at nearly every thought child.
    buckets: Box<[u32; BUCKETS]>,
}

/// Buckets of [`Line::buckets`]: a line and its history hold a few hundred keys
/// at most, so a key that repeats nothing shares its bucket with another only
/// now and then, and the table stays in the processor's first cache (8 KB).
const BUCKETS: usize = 2048;

fn bucket(key: Key) -> usize {
    (key.0 as usize) & (BUCKETS - 1)
}

impl Default for Line {
    fn default() -> Self {
        Self::start(Position::startpos())
    }
}

impl Line {
    /// A line starting at `pos`, with `pos`'s history.
    pub(super) fn start(pos: Position) -> Self {
        let mut line = Self {
            keys: Vec::new(),
            start_ply: 0,
            pos: pos.clone(),
            built: 0,
            edges: Vec::new(),
            before_twin: Vec::new(),
            history: Vec::new(),
            since: Vec::new(),
            buckets: Box::new([0; BUCKETS]),
        };
        line.restart(pos);
        line
    }

    /// Starts again at `pos`, keeping the buffers.
    pub(super) fn restart(&mut self, pos: Position) {
        self.history.clear();
        let mut back = pos.clone();
        while back.undo_move().is_ok() {
            self.history.push(back.key());
        }
        self.history.reverse();
        self.keys.clear();
        self.keys.push(pos.key());
        self.buckets.fill(0);
        for &key in self.history.iter().chain(&self.keys) {
            self.buckets[bucket(key)] += 1;
        }
        self.start_ply = pos.ply();
        self.pos = pos;
        self.built = 0;
        self.edges.clear();
        self.before_twin.clear();
        self.since.clear();
        self.since.push(0);
    }

    /// Counts `key` in its bucket (`add`), or no longer.
    fn count(&mut self, key: Key, add: bool) {
        let n = &mut self.buckets[bucket(key)];
        *n = if add {
            n.saturating_add(1)
        } else {
            n.saturating_sub(1)
        };
    }

    /// The game ply of the line's last position (a twin's board keeps the ply).
    pub(super) fn ply(&self) -> u32 {
        self.start_ply
            .saturating_add(u32::try_from(self.edges.len()).unwrap_or(u32::MAX))
    }

    /// Goes on by `mv` into the position with key `key` (on its own board: the
    /// twin's when `twin`).
    pub(super) fn push(&mut self, mv: Move, twin: bool, key: Key) {
        self.edges.push((mv, twin));
        self.keys.push(key);
        self.count(key, true);
        let since = if twin {
            self.edges.len()
        } else {
            self.since.last().copied().unwrap_or(0)
        };
        self.since.push(since);
    }

    /// Takes the last move back.
    pub(super) fn pop(&mut self) {
        if self.edges.is_empty() {
            return;
        }
        if self.built == self.edges.len() {
            match self.edges.last() {
                Some((_, true)) => {
                    if let Some(pos) = self.before_twin.pop() {
                        self.pos = pos;
                    }
                }
                _ => {
                    let _ = self.pos.undo_move();
                }
            }
            self.built -= 1;
        }
        self.edges.pop();
        if let Some(key) = self.keys.pop() {
            self.count(key, false);
        }
        self.since.pop();
    }

    /// The line's last position, built from the last one built.
    pub(super) fn position(&mut self) -> &Position {
        while self.built < self.edges.len() {
            let (mv, twin) = self.edges[self.built];
            if twin {
                self.before_twin.push(self.pos.clone());
                self.pos.do_move(mv);
                self.pos = self.pos.flipped();
            } else {
                self.pos.do_move(mv);
            }
            self.built += 1;
        }
        &self.pos
    }

    /// What the position's own repetition rule says of the line's last position
    /// ([`Position::search_repetition`] over its whole history), asked of the
    /// position only when its key occurs at an even distance of four plies or
    /// more since the history began (otherwise the rule finds nothing).
    pub(super) fn repetition(&mut self) -> Option<Repetition> {
        let depth = self.edges.len();
        let key = self.keys[depth];
        if self.buckets[bucket(key)] <= 1 {
            // No other key of the history or the line is this one.
            return None;
        }
        let since = self.since[depth];
        let before: &[Key] = if since == 0 { &self.history } else { &[] };
        let on_line = depth - since;
        // The key `distance` plies before the last position.
        let earlier = |distance: usize| {
            if distance <= on_line {
                self.keys[depth - distance]
            } else {
                before[before.len() + on_line - distance]
            }
        };
        let suspect = (4..=on_line + before.len())
            .step_by(2)
            .any(|distance| earlier(distance) == key);
        if !suspect {
            return None;
        }
        self.position().search_repetition(usize::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every prefix of `moves` from `start`: the line's answers are the
    /// position's own.
    fn agree(start: &str, moves: &[&str]) {
        let start = Position::from_position_command(start).unwrap();
        let mut line = Line::start(start.clone());
        let mut pos = start;
        for text in moves {
            let mv = pos.parse_move(text).unwrap();
            let key = pos.key_after(mv);
            pos.do_move(mv);
            line.push(mv, false, key);
            assert_eq!(
                line.repetition(),
                pos.search_repetition(usize::MAX),
                "{text}"
            );
            assert_eq!(line.ply(), pos.ply());
        }
        assert_eq!(line.position().to_sfen(), pos.to_sfen());
        for _ in moves {
            line.pop();
            pos.undo_move().unwrap();
            assert_eq!(line.position().to_sfen(), pos.to_sfen());
        }
    }

    #[test]
    fn repetitions_are_the_positions_own() {
        // A rook back and forth: the start repeats after four plies.
        agree(
            "startpos",
            &["2h3h", "8b7b", "3h2h", "7b8b", "2h3h", "8b7b", "3h2h"],
        );
        // The repetition reaches into the history before the line's start.
        agree(
            "startpos moves 2h3h 8b7b",
            &["3h2h", "7b8b", "2h3h", "8b7b"],
        );
    }

    #[test]
    fn a_twin_edge_starts_the_history_again() {
        let start = Position::startpos();
        let mut line = Line::start(start.clone());
        let mut pos = start;
        for text in ["2h3h", "8b7b", "3h2h", "7b8b"] {
            let mv = pos.parse_move(text).unwrap();
            let key = pos.key_after(mv);
            pos.do_move(mv);
            line.push(mv, false, key);
        }
        assert!(line.repetition().is_some());
        line.pop();
        pos.undo_move().unwrap();
        // The same last move into the twin's board: no history there.
        let mv = pos.parse_move("7b8b").unwrap();
        let twin_key = pos.flipped_key_after(mv);
        line.push(mv, true, twin_key);
        assert_eq!(line.repetition(), None);
        let mut twin = pos.clone();
        twin.do_move(mv);
        let twin = twin.flipped();
        assert_eq!(twin.search_repetition(usize::MAX), None);
        assert_eq!(line.position().to_sfen(), twin.to_sfen());
        line.pop();
        assert_eq!(line.position().to_sfen(), pos.to_sfen());
    }
}
