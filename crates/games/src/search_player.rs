//! A [`Player`] whose moves something else searches: the workers of a
//! coordinator, reached in the coordinator's own process (its learning games)
//! or over gRPC (`book-tools match --coordinator`). The game stays with the
//! caller and its [`crate::Referee`]; each move is one search of the position
//! with its whole history, so any worker can answer any move and a worker lost
//! mid-game costs one search, not the game.
//!
//! The transport is a [`MoveSearch`]; what an answer means (a move that must be
//! legal where it is played, `resign`, `win`) and which engines answered are
//! decided here, once.
//!
//! ```
//! use stera_engine::{Limits, Player, PlayerMove};
//! use stera_games::search_player::{MoveSearch, SearchAnswer, SearchPlayer, SearchQuery};
//! use stera_rules::Position;
//!
//! /// Answers 7g7f wherever it is asked.
//! struct Always;
//! impl MoveSearch for Always {
//!     fn search(&mut self, _: &SearchQuery<'_>) -> Result<SearchAnswer, String> {
//!         Ok(SearchAnswer { usi: "7g7f".into(), score: Some(30), engine: "always 1.0".into() })
//!     }
//!     fn describe(&self) -> String { "always".into() }
//! }
//! let mut player = SearchPlayer::new(Always);
//! let answer = player.play(&Position::startpos(), &Limits::default()).unwrap();
//! assert!(matches!(answer, PlayerMove::Move { score: Some(30), .. }));
//! assert_eq!(player.single_engine().unwrap(), Some("always 1.0".to_owned()));
//! // Not legal after 7g7f (it is White's move): refused, not played.
//! let mut after = Position::startpos();
//! after.do_move(after.parse_move("7g7f").unwrap());
//! assert!(player.play(&after, &Limits::default()).is_err());
//! ```

use stera_engine::{EvalError, Limits, Player, PlayerMove};
use stera_rules::{Move, Position};

/// Which workers may answer a search.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Route {
    /// Workers that think for the book (their engine and budget agree with
    /// the store's): the book side of a learning game, a match's searches. A
    /// worker admitted only as a learning opponent answers its own engine's
    /// searches alone.
    #[default]
    Thinkers,
    /// Workers whose engine identity (as they say it at Hello) contains this
    /// text: an opponent of another engine (`--engine-id`).
    Engine(String),
}

impl Route {
    /// True when a worker whose engine identity is `engine` (and which thinks
    /// for the book when `thinks`) may answer.
    ///
    /// ```
    /// use stera_games::search_player::Route;
    /// let fairy = Route::Engine("Fairy-Stockfish".into());
    /// assert!(fairy.admits("Fairy-Stockfish 14 [UCI_Variant=shogi]", false));
    /// assert!(!fairy.admits("stera-builtin 0.1.0 (hce)", true));
    /// assert!(Route::Thinkers.admits("stera-builtin 0.1.0 (hce)", true));
    /// assert!(!Route::Thinkers.admits("Fairy-Stockfish 14", false));
    /// ```
    #[must_use]
    pub fn admits(&self, engine: &str, thinks: bool) -> bool {
        match self {
            Self::Thinkers => thinks,
            Self::Engine(text) => engine.contains(text.as_str()),
        }
    }

    /// The route in words, for messages.
    #[must_use]
    pub fn describe(&self) -> String {
        match self {
            Self::Thinkers => "the workers that think for the book".to_owned(),
            Self::Engine(text) => format!("workers whose engine is `{text}`"),
        }
    }
}

/// One search asked of the transport.
#[derive(Debug, Clone, Copy)]
pub struct SearchQuery<'a> {
    /// Where the game started.
    pub start: &'a Position,
    /// Every move since `start`.
    pub moves: &'a [Move],
    /// The budget of this move.
    pub limits: &'a Limits,
    /// Who may answer.
    pub route: &'a Route,
}

/// A transport's answer: a move in USI (`resign`, `win` included), its score
/// when the engine gave one, and the engine that searched it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchAnswer {
    pub usi: String,
    pub score: Option<i32>,
    pub engine: String,
}

/// What carries a search to an engine and its answer back.
pub trait MoveSearch: Send {
    /// One search.
    ///
    /// # Errors
    /// Why no answer came, in words.
    fn search(&mut self, query: &SearchQuery<'_>) -> Result<SearchAnswer, String>;

    /// Who searches, for messages before any answer named an engine.
    fn describe(&self) -> String;

    /// How the player names `engine`, an engine that answered (the engine
    /// alone by default; a remote transport adds where it runs).
    fn name_engine(&self, engine: &str) -> String {
        engine.to_owned()
    }
}

/// A side's engine whose moves a [`MoveSearch`] answers.
pub struct SearchPlayer<S> {
    search: S,
    route: Route,
    /// Each engine that answered this player's searches, in order of first answer.
    engines: Vec<String>,
}

/// Two engines answered one side's searches: the game has no one opponent.
#[derive(Debug, thiserror::Error)]
#[error("the side's moves came from {} engines ({}): the game has no one engine", engines.len(), engines.join(", "))]
pub struct MixedEngines {
    pub engines: Vec<String>,
}

impl<S: MoveSearch> SearchPlayer<S> {
    /// A player whose searches the workers that think for the book answer.
    #[must_use]
    pub fn new(search: S) -> Self {
        Self::routed(search, Route::Thinkers)
    }

    /// A player whose searches go to the workers of `route`.
    #[must_use]
    pub fn routed(search: S, route: Route) -> Self {
        Self {
            search,
            route,
            engines: Vec::new(),
        }
    }

    /// The one engine that played this side's moves since the last
    /// [`Player::new_game`]; `None` when it never moved.
    ///
    /// # Errors
    /// Two engines answered.
    pub fn single_engine(&self) -> Result<Option<String>, MixedEngines> {
        match self.engines.as_slice() {
            [] => Ok(None),
            [one] => Ok(Some(one.clone())),
            more => Err(MixedEngines {
                engines: more.to_vec(),
            }),
        }
    }

    fn failure(&self, reason: String) -> EvalError {
        EvalError::Engine {
            engine: self.identity(),
            reason,
        }
    }
}

impl<S: MoveSearch> Player for SearchPlayer<S> {
    fn new_game(&mut self) -> Result<(), EvalError> {
        // Every search starts a fresh game on its worker; only the engines
        // seen are this game's.
        self.engines.clear();
        Ok(())
    }

    fn play(&mut self, position: &Position, limits: &Limits) -> Result<PlayerMove, EvalError> {
        let (start, moves) = stera_engine::player::history(position);
        let query = SearchQuery {
            start: &start,
            moves: &moves,
            limits,
            route: &self.route,
        };
        let answer = self
            .search
            .search(&query)
            .map_err(|reason| self.failure(reason))?;
        if !self.engines.contains(&answer.engine) {
            self.engines.push(answer.engine.clone());
        }
        match answer.usi.as_str() {
            "resign" => Ok(PlayerMove::Resign),
            "win" => Ok(PlayerMove::Win),
            usi => {
                // The coordinator checked the move already; a client trusts no one.
                let mv = position.parse_move(usi).map_err(|e| {
                    self.failure(format!(
                        "the workers answered `{}`, not legal here: {e}",
                        stera_rules::excerpt(usi)
                    ))
                })?;
                Ok(PlayerMove::Move {
                    mv,
                    score: answer.score,
                })
            }
        }
    }

    fn identity(&self) -> String {
        match self.engines.last() {
            Some(engine) => self.search.name_engine(engine),
            None => self.search.describe(),
        }
    }
}
