//! Which game of a run is played how: its opening, the colour of the side under
//! test, its seed, and the colours given to two sides. One schedule for
//! `book-tools match`, `book-tools learn` and the coordinator's learning games,
//! so that the same seed gives the same games wherever they are played.
//!
//! Nothing here reads a clock: a seed is the run's seed and the game's number.
//!
//! ```
//! use stera_games::schedule::{game_seed, pair_slot, unit_draw};
//! use stera_rules::Color;
//! // Games come in pairs: one opening, the side under test Black then White.
//! assert_eq!(pair_slot(0, 3), (0, Color::Black));
//! assert_eq!(pair_slot(1, 3), (0, Color::White));
//! assert_eq!(pair_slot(6, 3), (0, Color::Black)); // the openings go round
//! assert_ne!(game_seed(1, 0), game_seed(1, 1));
//! assert_eq!(game_seed(7, 3), game_seed(7, 3));
//! assert!((0.0..1.0).contains(&unit_draw(game_seed(1, 0))));
//! ```

use stera_engine::Player;
use stera_rules::Color;

use crate::Game;
use crate::openings::Opening;
use crate::play::{Budget, PlayError, PlayOptions, Side, play_game_with_budgets};

/// Game `index` of a run of pairs (one opening, colours swapped): the index of
/// its opening among `openings` used in turn, and the colour of the side under
/// test (Black in the first game of a pair).
#[must_use]
pub fn pair_slot(index: u64, openings: usize) -> (usize, Color) {
    let color = if index.is_multiple_of(2) {
        Color::Black
    } else {
        Color::White
    };
    let openings = openings.max(1) as u64;
    // The remainder is below `openings`, a usize.
    ((index / 2 % openings) as usize, color)
}

/// The seed of game (or pair) `n` of a run seeded with `seed`: distinct for
/// every `n`, the same for the same two numbers.
#[must_use]
pub fn game_seed(seed: u64, n: u64) -> u64 {
    seed.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(n)
}

/// A number in [0, 1) drawn from `seed` (which opponent of a pool plays a
/// game): a stream of its own, apart from the book and jitter draws the same
/// seed gives in a game.
#[must_use]
pub fn unit_draw(seed: u64) -> f64 {
    use rand::{Rng, SeedableRng};
    rand::rngs::StdRng::seed_from_u64(seed ^ 0x0990_5E1E_C7ED).random::<f64>()
}

/// One side of a game with its budget.
pub struct Seat<'a> {
    pub side: Side<'a>,
    pub budget: Budget,
}

/// Plays `opening` with `own` (the side under test) as `own_color` and
/// `other` as the other colour, each at its own budget.
///
/// # Errors
/// As [`play_game_with_budgets`].
pub fn play_as<'a>(
    opening: &Opening,
    own: Seat<'a>,
    other: Seat<'a>,
    own_color: Color,
    options: &PlayOptions,
) -> Result<Game, PlayError> {
    let (black, white) = match own_color {
        Color::Black => (own, other),
        Color::White => (other, own),
    };
    play_game_with_budgets(
        &opening.start,
        &opening.moves,
        black.side,
        white.side,
        options,
        [black.budget, white.budget],
    )
}

/// A seat for `player` with `book` at `budget`.
#[must_use]
pub fn seat<'a>(
    player: &'a mut dyn Player,
    book: Option<&'a dyn crate::BookPolicy>,
    budget: Budget,
) -> Seat<'a> {
    Seat {
        side: Side { player, book },
        budget,
    }
}
