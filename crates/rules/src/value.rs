//! Score units shared by the engine, the book and the export (YaneuraOu conventions).
//!
//! Values are centipawns from the point of view of the side to move. Mate in `n`
//! plies is `MATE - n`; being mated in `n` plies is `-(MATE - n)`.

/// The score of delivering mate now.
pub const MATE: i32 = 32_000;
/// Larger than every real score.
pub const INFINITE: i32 = 32_001;
/// "No value".
pub const NONE: i32 = 32_002;
/// Scores at or beyond this magnitude are mate scores.
pub const MATE_IN_MAX_PLY: i32 = MATE - 1_000;
/// A draw.
pub const DRAW: i32 = 0;

/// Mate delivered in `ply` plies.
///
/// ```
/// assert_eq!(stera_rules::value::mate_in(3), 31_997);
/// ```
#[must_use]
pub const fn mate_in(ply: i32) -> i32 {
    MATE - ply
}

/// Mated in `ply` plies.
#[must_use]
pub const fn mated_in(ply: i32) -> i32 {
    -MATE + ply
}

/// True for a mate score of either sign.
#[must_use]
pub const fn is_mate(v: i32) -> bool {
    v >= MATE_IN_MAX_PLY || v <= -MATE_IN_MAX_PLY
}

/// `v` moved by `delta` centipawns when it is not a mate, kept out of the mate
/// range (a bonus or a discount never makes a mate); a mate is returned as it is.
///
/// ```
/// use stera_rules::value::{MATE, MATE_IN_MAX_PLY, shift_non_mate};
/// assert_eq!(shift_non_mate(120, -30), 90);
/// assert_eq!(shift_non_mate(MATE - 3, -30), MATE - 3);
/// assert_eq!(shift_non_mate(-MATE_IN_MAX_PLY + 10, -30), -MATE_IN_MAX_PLY + 1);
/// ```
#[must_use]
pub const fn shift_non_mate(v: i32, delta: i32) -> i32 {
    if is_mate(v) {
        return v;
    }
    let shifted = v.saturating_add(delta);
    if shifted >= MATE_IN_MAX_PLY {
        MATE_IN_MAX_PLY - 1
    } else if shifted <= -MATE_IN_MAX_PLY {
        -MATE_IN_MAX_PLY + 1
    } else {
        shifted
    }
}

/// A value as people read it: centipawns with a sign (`+34`, `-12`, `0`), a mate
/// as `+M7` / `-M7` (plies to the mate).
///
/// ```
/// use stera_rules::value::{MATE, to_text};
/// assert_eq!(to_text(34), "+34");
/// assert_eq!(to_text(-(MATE - 4)), "-M4");
/// ```
#[must_use]
pub fn to_text(v: i32) -> String {
    if v >= MATE_IN_MAX_PLY {
        format!("+M{}", MATE - v)
    } else if v <= -MATE_IN_MAX_PLY {
        format!("-M{}", MATE + v)
    } else if v > 0 {
        format!("+{v}")
    } else {
        v.to_string()
    }
}

/// Clamps to the book range `-MATE..=MATE` and converts to `i16`.
#[must_use]
pub const fn clamp_to_i16(v: i32) -> i16 {
    let c = if v > MATE {
        MATE
    } else if v < -MATE {
        -MATE
    } else {
        v
    };
    c as i16
}
