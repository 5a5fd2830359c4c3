//! Repetition (sennichite) in its two forms.
//!
//! * The **game rule**: the fourth occurrence of a position ends the game; a draw,
//!   unless one side gave check on every move of the cycle, which loses.
//! * The **search form**: in a search, the first recurrence of a position within the
//!   searched line is already scored as the game rule would score the cycle (the same
//!   moves could be repeated until the fourth occurrence).

use rsshogi::types::RepetitionState;

use crate::Position;

/// How a repetition ends, from the point of view of the side to move.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Repetition {
    /// An ordinary repetition: draw.
    Draw,
    /// The opponent checked on every move of the cycle: the side to move wins.
    OpponentPerpetualCheck,
    /// The side to move checked on every move of the cycle: it loses.
    OwnPerpetualCheck,
}

impl Repetition {
    fn from_backend(state: RepetitionState) -> Option<Self> {
        match state {
            RepetitionState::Draw => Some(Self::Draw),
            RepetitionState::Win => Some(Self::OpponentPerpetualCheck),
            RepetitionState::Lose => Some(Self::OwnPerpetualCheck),
            // Superior/inferior hands are search heuristics, not game outcomes.
            RepetitionState::None | RepetitionState::Superior | RepetitionState::Inferior => None,
        }
    }
}

impl Position {
    /// The game rule: `Some` once the current position occurs for the fourth time in
    /// the history held by this position.
    #[must_use]
    pub fn game_repetition(&self) -> Option<Repetition> {
        Repetition::from_backend(self.backend().repetition_state())
    }

    /// The search form: the nearest earlier occurrence of the current position within
    /// the last `within_plies` moves (pass the distance to the search root to score
    /// only cycles inside the searched line, or [`usize::MAX`] for the whole history).
    #[must_use]
    pub fn search_repetition(&self, within_plies: usize) -> Option<Repetition> {
        match self.backend().repetition_state_with_distance(within_plies) {
            Some((state, _distance)) => Repetition::from_backend(state),
            None => None,
        }
    }
}
