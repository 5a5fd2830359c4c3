//! Game record readers: USI `position` lines, SFEN lines, CSA and KIF.
//!
//! Every reader returns games as a start position plus the main-line moves, checked
//! move by move by the rules core. A game that cannot be read (bad syntax, illegal
//! move) is skipped with a [`GameError`] naming the file and line; the others are kept.
//!
//! ```
//! use stera_formats::kifu::{read_kifu_bytes, KifuFormat};
//! let text = b"startpos moves 7g7f 3c3d\nstartpos moves 2g2f 2g2e\nsfen 4k4/9/9/9/9/9/9/9/4K4 b G 1\n";
//! let report = read_kifu_bytes(text, "games.usi", Some(KifuFormat::UsiPositions)).unwrap();
//! assert_eq!(report.games.len(), 2);
//! assert_eq!(report.summary.games_skipped, 1);
//! assert_eq!(report.summary.errors[0].line, 2); // 2g2e after 2g2f is illegal
//! assert_eq!(report.summary.positions, 3 + 1);
//! ```

mod csa;
mod detect;
mod kif;
mod position_lines;

use std::fmt;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

use stera_rules::{Move, Position, RulesError};
use thiserror::Error;

pub use detect::{detect_format, format_from_extension, sniff_format};

/// The kinds of game record files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KifuFormat {
    /// One USI `position` command per line (`position startpos moves ...`,
    /// `startpos moves ...`, `sfen ... moves ...`); each line is a game.
    UsiPositions,
    /// One SFEN per line; each is a game of one position.
    SfenLines,
    /// CSA V2.x, several games per file separated by `/` lines.
    Csa,
    /// KIF (UTF-8 or Shift_JIS), one game per file; the main line is read.
    Kif,
}

impl fmt::Display for KifuFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::UsiPositions => "USI position lines",
            Self::SfenLines => "SFEN lines",
            Self::Csa => "CSA",
            Self::Kif => "KIF",
        })
    }
}

/// A game: where it starts and the moves played (all legal).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Game {
    /// Canonical SFEN of the start position (with ply).
    pub start_sfen: String,
    /// Main-line moves from the start position.
    pub moves: Vec<Move>,
    /// The line of the file where the game begins.
    pub line: u64,
}

impl Game {
    /// Builds a game, checking every move in turn.
    ///
    /// # Errors
    /// The index (0-based) of the first illegal move and the rules core's reason.
    pub(crate) fn from_usi_moves<'a>(
        start: &Position,
        moves: impl IntoIterator<Item = &'a str>,
        line: u64,
    ) -> Result<Self, (usize, RulesError)> {
        let mut pos = start.clone();
        let mut played = Vec::new();
        for (index, usi) in moves.into_iter().enumerate() {
            let mv = pos.play_usi(usi).map_err(|e| match e {
                RulesError::PlyLimit { .. } => (index, RulesError::PlyLimit { index: index + 1 }),
                e => (index, e),
            })?;
            played.push(mv);
        }
        Ok(Self {
            start_sfen: start.to_sfen(),
            moves: played,
            line,
        })
    }

    /// The start position.
    ///
    /// # Errors
    /// Only if the rules core rejects its own SFEN.
    pub fn start_position(&self) -> Result<Position, RulesError> {
        Position::from_sfen(&self.start_sfen)
    }

    /// Number of positions in the game (start included).
    #[must_use]
    pub fn position_count(&self) -> usize {
        self.moves.len() + 1
    }

    /// Calls `visit` with the start position and the position after each move.
    ///
    /// ```
    /// use stera_formats::kifu::read_kifu_bytes;
    /// let report = read_kifu_bytes(b"startpos moves 7g7f 3c3d", "g.usi", None).unwrap();
    /// let mut plies = Vec::new();
    /// report.games[0].for_each_position(|p| plies.push(p.ply())).unwrap();
    /// assert_eq!(plies, [1, 2, 3]);
    /// ```
    ///
    /// # Errors
    /// Only if the game was not built by this module (moves are checked on reading).
    pub fn for_each_position(&self, mut visit: impl FnMut(&Position)) -> Result<(), RulesError> {
        let mut pos = self.start_position()?;
        visit(&pos);
        for &mv in &self.moves {
            if !pos.is_legal(mv) {
                return Err(RulesError::IllegalMove {
                    mv: mv.to_string(),
                    sfen: pos.to_sfen(),
                });
            }
            pos.do_move(mv);
            visit(&pos);
        }
        Ok(())
    }
}

/// A game that was skipped, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GameError {
    /// The file (or the name given to [`read_kifu_bytes`]).
    pub file: PathBuf,
    /// The line with the problem (1-based).
    pub line: u64,
    /// Which game of the file (1-based, counting skipped games).
    pub game: u64,
    /// What is wrong.
    pub reason: String,
}

impl fmt::Display for GameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}: game {} skipped: {}",
            self.file.display(),
            self.line,
            self.game,
            self.reason
        )
    }
}

/// Counts and skipped games of one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KifuSummary {
    /// The format the file was read as.
    pub format: KifuFormat,
    /// Games read and kept.
    pub games_read: u64,
    /// Games skipped because of an error (see `errors`).
    pub games_skipped: u64,
    /// Positions in the kept games, start positions included (not deduplicated).
    pub positions: u64,
    /// The first [`MAX_KEPT_ERRORS`] skipped games, in file order (all are counted
    /// in `games_skipped`): endless bad input must not grow memory.
    pub errors: Vec<GameError>,
}

/// The games of one file with its [`KifuSummary`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KifuReport {
    /// The games kept, in file order.
    pub games: Vec<Game>,
    /// Counts and errors.
    pub summary: KifuSummary,
}

/// File-level failures (individual games fail with a [`GameError`] instead).
#[derive(Debug, Error)]
pub enum KifuError {
    /// The file could not be opened or read.
    #[error("cannot read `{}`: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Neither the extension nor the content says which format the file is.
    #[error(
        "`{}`: cannot tell the game record format (use .csa, .kif, .kifu, .sfen or .usi, or one USI position or SFEN per line)",
        path.display()
    )]
    UnknownFormat { path: PathBuf },
    /// A CSA or KIF file over [`crate::MAX_RECORD_FILE_BYTES`] (they are read whole).
    #[error(
        "`{}`: a {format} file larger than {} MiB (MAX_RECORD_FILE_BYTES); split it",
        path.display(),
        crate::MAX_RECORD_FILE_BYTES >> 20
    )]
    TooLarge { path: PathBuf, format: KifuFormat },
}

/// How many skipped games a [`KifuSummary`] keeps with their reasons.
pub const MAX_KEPT_ERRORS: usize = 1_000;

/// Collects games and counts while a reader goes through a file.
pub(crate) struct Collector<'a> {
    file: PathBuf,
    summary: KifuSummary,
    on_game: &'a mut dyn FnMut(Game),
}

impl Collector<'_> {
    pub(crate) fn game(&mut self, game: Game) {
        self.summary.games_read += 1;
        self.summary.positions += game.position_count() as u64;
        (self.on_game)(game);
    }

    pub(crate) fn skip(&mut self, line: u64, reason: String) {
        self.summary.games_skipped += 1;
        let game = self.summary.games_read + self.summary.games_skipped;
        if self.summary.errors.len() >= MAX_KEPT_ERRORS {
            return;
        }
        self.summary.errors.push(GameError {
            file: self.file.clone(),
            line,
            game,
            reason,
        });
    }
}

/// Reads every game of a file (`-`: standard input). The format comes from the
/// extension (`.csa`, `.kif`, `.kifu`, `.sfen`, `.usi`) or, for `.txt` and others,
/// from the content.
///
/// # Errors
/// [`KifuError`] when the file cannot be read or its format cannot be told; bad games
/// are reported in [`KifuSummary::errors`] instead.
pub fn read_kifu_file(path: impl AsRef<Path>) -> Result<KifuReport, KifuError> {
    let mut games = Vec::new();
    let summary = read_kifu_file_with(path, None, |g| games.push(g))?;
    Ok(KifuReport { games, summary })
}

/// Streams the games of a file to `on_game` without keeping them (USI and SFEN line
/// files are read line by line, so they may be larger than memory); `format` overrides
/// detection. The file is opened once and read through (`-`: standard input), so a
/// pipe is read whole.
///
/// # Errors
/// As [`read_kifu_file`].
pub fn read_kifu_file_with(
    path: impl AsRef<Path>,
    format: Option<KifuFormat>,
    mut on_game: impl FnMut(Game),
) -> Result<KifuSummary, KifuError> {
    let path = path.as_ref();
    let io = |source| KifuError::Io {
        path: path.to_path_buf(),
        source,
    };
    // Opened once: the format is sniffed from the first bytes, which are then
    // read again from memory, so a pipe or `/dev/stdin` is read whole.
    let mut input = crate::input::open_input(path).map_err(io)?;
    let mut head = Vec::new();
    let format = match format.or_else(|| format_from_extension(path)) {
        Some(f) => f,
        None => {
            (&mut input)
                .take(detect::SNIFF_BYTES)
                .read_to_end(&mut head)
                .map_err(io)?;
            sniff_format(&head).ok_or_else(|| KifuError::UnknownFormat {
                path: path.to_path_buf(),
            })?
        }
    };
    let file = BufReader::new(std::io::Cursor::new(head).chain(input));
    let mut collector = Collector {
        file: path.to_path_buf(),
        summary: empty_summary(format),
        on_game: &mut on_game,
    };
    match format {
        KifuFormat::UsiPositions | KifuFormat::SfenLines => {
            position_lines::read(file, &mut collector).map_err(io)?;
        }
        KifuFormat::Csa | KifuFormat::Kif => {
            let mut bytes = Vec::new();
            file.take(crate::MAX_RECORD_FILE_BYTES + 1)
                .read_to_end(&mut bytes)
                .map_err(io)?;
            if bytes.len() as u64 > crate::MAX_RECORD_FILE_BYTES {
                return Err(KifuError::TooLarge {
                    path: path.to_path_buf(),
                    format,
                });
            }
            read_whole(&bytes, format, &mut collector);
        }
    }
    Ok(collector.summary)
}

/// Reads games from bytes already in memory; `name` labels errors and, with no
/// `format`, its extension picks the format (content sniffing otherwise).
///
/// # Errors
/// [`KifuError::UnknownFormat`] when the format cannot be told.
pub fn read_kifu_bytes(
    bytes: &[u8],
    name: impl AsRef<Path>,
    format: Option<KifuFormat>,
) -> Result<KifuReport, KifuError> {
    let name = name.as_ref();
    let format = format
        .or_else(|| format_from_extension(name))
        .or_else(|| sniff_format(bytes))
        .ok_or_else(|| KifuError::UnknownFormat {
            path: name.to_path_buf(),
        })?;
    let mut games = Vec::new();
    let mut on_game = |g| games.push(g);
    let mut collector = Collector {
        file: name.to_path_buf(),
        summary: empty_summary(format),
        on_game: &mut on_game,
    };
    match format {
        KifuFormat::UsiPositions | KifuFormat::SfenLines => {
            // Reading from memory cannot fail.
            let _ = position_lines::read(bytes, &mut collector);
        }
        KifuFormat::Csa | KifuFormat::Kif => read_whole(bytes, format, &mut collector),
    }
    let summary = collector.summary;
    Ok(KifuReport { games, summary })
}

fn read_whole(bytes: &[u8], format: KifuFormat, collector: &mut Collector<'_>) {
    let text = decode_text(bytes);
    if format == KifuFormat::Csa {
        csa::read(&text, collector);
    } else {
        kif::read(&text, collector);
    }
}

fn empty_summary(format: KifuFormat) -> KifuSummary {
    KifuSummary {
        format,
        games_read: 0,
        games_skipped: 0,
        positions: 0,
        errors: Vec::new(),
    }
}

/// Decodes a game record line by line: a line of valid UTF-8 is UTF-8, any other
/// line is taken as Shift_JIS (the encoding of KIF and CSA files from Windows
/// tools). Line by line, because files edited by hand mix the two (a Shift_JIS
/// header, UTF-8 moves); CR and LF never occur inside a Shift_JIS character. A byte
/// order mark is dropped.
///
/// ```
/// let (sjis, _, _) = encoding_rs::SHIFT_JIS.encode("手合割：平手");
/// let mut bytes = sjis.into_owned();
/// bytes.extend_from_slice("\n   1 ７六歩(77)\n".as_bytes());
/// assert_eq!(stera_formats::kifu::decode_text(&bytes), "手合割：平手\n   1 ７六歩(77)\n");
/// ```
#[must_use]
pub fn decode_text(bytes: &[u8]) -> String {
    let bytes = bytes.strip_prefix("\u{feff}".as_bytes()).unwrap_or(bytes);
    if let Ok(text) = std::str::from_utf8(bytes) {
        return text.to_owned();
    }
    let mut out = String::with_capacity(bytes.len() + bytes.len() / 2);
    let mut rest = bytes;
    while !rest.is_empty() {
        let end = rest
            .iter()
            .position(|&b| b == b'\n' || b == b'\r')
            .unwrap_or(rest.len());
        let (line, tail) = rest.split_at(end);
        match std::str::from_utf8(line) {
            Ok(text) => out.push_str(text),
            Err(_) => out.push_str(&encoding_rs::SHIFT_JIS.decode_without_bom_handling(line).0),
        }
        // The line ending itself (ASCII), if any.
        if let Some(&b) = tail.first() {
            out.push(char::from(b));
            rest = &tail[1..];
        } else {
            rest = tail;
        }
    }
    out
}

/// Converts the main line of an rsshogi record into a [`Game`], checking each move
/// with the rules core. On failure: the index of the bad move (if a move) and why.
pub(crate) fn game_from_record(
    record: &rsshogi::records::Record,
    line: u64,
) -> Result<Game, (Option<usize>, String)> {
    let start = Position::from_sfen(record.init_position_sfen())
        .map_err(|e| (None, format!("bad start position: {e}")))?;
    let usi: Vec<String> = record.main_moves().map(|m| m.mv().to_usi()).collect();
    Game::from_usi_moves(&start, usi.iter().map(String::as_str), line)
        .map_err(|(index, e)| (Some(index), format!("move {}: {e}", index + 1)))
}
