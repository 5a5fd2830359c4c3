//! Checks a worker's result against the leased position before it may touch the book.

use stera_book::Thought;
use stera_proto::v1::MoveValue;
use stera_rules::{Move, Position, value::MATE};

/// Turns a result into a [`Thought`] (values in canonical move order), or says what
/// is wrong with it.
///
/// # Errors
/// A reason naming the offending move: a malformed move, a move that is not legal,
/// a move listed twice, a value outside `-MATE..=MATE`, a legal move missing.
pub fn thought_from_result(
    position: &Position,
    moves: &[MoveValue],
    engine: &str,
    now_unix: u32,
) -> Result<Thought, String> {
    let legal = position.legal_moves();
    let mut values: Vec<Option<(i16, u8)>> = vec![None; legal.len()];
    for (i, mv) in moves.iter().enumerate() {
        let parsed = Move::from_usi(&mv.usi)
            .map_err(|_| format!("move #{} `{}` is not a USI move", i + 1, mv.usi))?;
        let Ok(index) = legal.binary_search(&parsed) else {
            return Err(format!(
                "move `{}` is not legal in `{}`",
                mv.usi,
                position.to_sfen()
            ));
        };
        if !(-MATE..=MATE).contains(&mv.value) {
            return Err(format!(
                "move `{}` has value {} outside -{MATE}..={MATE}",
                mv.usi, mv.value
            ));
        }
        if values[index].is_some() {
            return Err(format!("move `{}` is listed twice", mv.usi));
        }
        let depth = u8::try_from(mv.depth).unwrap_or(u8::MAX);
        values[index] = Some((stera_rules::value::clamp_to_i16(mv.value), depth));
    }
    let mut out_values = Vec::with_capacity(legal.len());
    let mut depths = Vec::with_capacity(legal.len());
    for (slot, mv) in values.iter().zip(&legal) {
        let Some((v, d)) = slot else {
            return Err(format!(
                "legal move `{mv}` is missing ({} of {} moves given)",
                moves.len(),
                legal.len()
            ));
        };
        out_values.push(*v);
        depths.push(*d);
    }
    let evaluator = if engine.is_empty() {
        "unknown".to_owned()
    } else {
        engine.to_owned()
    };
    Ok(Thought {
        values: out_values,
        depths: Some(depths),
        evaluator,
        timestamp: now_unix,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn full_result(pos: &Position) -> Vec<MoveValue> {
        pos.legal_moves()
            .iter()
            .enumerate()
            .map(|(i, m)| MoveValue {
                usi: m.to_string(),
                value: i32::try_from(i).unwrap_or(0) - 10,
                depth: 3,
            })
            .collect()
    }

    #[test]
    fn complete_result_becomes_canonical_thought() {
        let pos = Position::startpos();
        let mut result = full_result(&pos);
        result.reverse();
        let thought = thought_from_result(&pos, &result, "test", 5).unwrap();
        assert_eq!(thought.values.len(), 30);
        // Canonical order puts the value of legal_moves()[i] at index i.
        assert_eq!(thought.values[0], -10);
        assert_eq!(thought.values[29], 19);
        assert_eq!(thought.timestamp, 5);
    }

    #[test]
    fn every_defect_is_named() {
        let pos = Position::startpos();
        type Breaker = Box<dyn Fn(&mut Vec<MoveValue>)>;
        let cases: Vec<(Breaker, &str)> = vec![
            (Box::new(|r| r[0].usi = "7g7x".into()), "not a USI move"),
            (Box::new(|r| r[0].usi = "7g7e".into()), "not legal"),
            (Box::new(|r| r[1].usi = r[0].usi.clone()), "listed twice"),
            (Box::new(|r| r[2].value = 40_000), "outside"),
            (
                Box::new(|r| {
                    r.pop();
                }),
                "missing",
            ),
        ];
        for (break_it, needle) in cases {
            let mut r = full_result(&pos);
            break_it(&mut r);
            let err = thought_from_result(&pos, &r, "test", 0).unwrap_err();
            assert!(err.contains(needle), "`{err}` lacks `{needle}`");
        }
    }
}
