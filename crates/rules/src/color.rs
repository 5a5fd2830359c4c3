/// The side to move. Black (sente) moves first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Color {
    Black,
    White,
}

impl Color {
    /// The other side.
    #[must_use]
    pub const fn flip(self) -> Self {
        match self {
            Self::Black => Self::White,
            Self::White => Self::Black,
        }
    }

    /// The SFEN letter (`b` or `w`).
    #[must_use]
    pub const fn sfen_char(self) -> char {
        match self {
            Self::Black => 'b',
            Self::White => 'w',
        }
    }

    pub(crate) fn from_backend(c: rsshogi::types::Color) -> Self {
        if c == rsshogi::types::Color::BLACK {
            Self::Black
        } else {
            Self::White
        }
    }
}
