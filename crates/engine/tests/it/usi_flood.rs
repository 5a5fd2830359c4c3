//! Engines whose output has no end: a flood of `info` lines, one endless line, a
//! handshake that never finishes. Each search fails with a clear error by its
//! deadline (or at once), and what the engine printed is not kept. Needs only `sh`.

use std::time::Duration;

use crate::engines::fake_engine;
use stera_engine::usi::UsiEvaluator;
use stera_engine::{EvalError, Evaluator, Limits};
use stera_rules::Position;

fn depth(d: u32) -> Limits {
    Limits {
        depth: Some(d),
        ..Limits::default()
    }
}

#[test]
fn an_engine_flooding_info_lines_times_out_at_its_deadline() {
    let mut config = fake_engine("flood", &[]);
    config.search_timeout = Duration::from_millis(300);
    let mut engine = UsiEvaluator::new(config).unwrap();
    // Without the deadline check this never returns: a line is always ready.
    let err = engine
        .evaluate(&Position::startpos(), &depth(2))
        .unwrap_err();
    let EvalError::Timeout { after, .. } = &err else {
        panic!("expected a time-out, got {err}");
    };
    assert_eq!(*after, Duration::from_millis(300));
    // The flooding engine was replaced and floods again: the same clear error.
    let err = engine
        .evaluate(&Position::startpos(), &depth(2))
        .unwrap_err();
    assert!(matches!(err, EvalError::Timeout { .. }), "{err}");
}

#[test]
fn an_endless_line_fails_the_search_at_once() {
    // The search timeout is far away: the line's length, not the clock, ends it
    // (before the line was bounded, this search timed out holding gigabytes).
    let mut config = fake_engine("long-line", &[]);
    config.search_timeout = Duration::from_secs(30);
    let mut engine = UsiEvaluator::new(config).unwrap();
    let err = engine
        .evaluate(&Position::startpos(), &depth(2))
        .unwrap_err();
    let EvalError::Engine { reason, .. } = &err else {
        panic!("expected an engine error, got {err}");
    };
    assert!(reason.contains("longer than 65536 bytes"), "{reason}");
    // The quoted start of the line is at most 200 characters and an ellipsis.
    let quoted = reason
        .split('`')
        .nth(1)
        .unwrap_or_else(|| panic!("no quoted line in {reason}"));
    assert!(quoted.starts_with("info string xxx"), "{quoted}");
    assert_eq!(quoted.chars().count(), 201, "{quoted}");
    let request = format!("on `{}`", Position::startpos().to_sfen());
    assert!(
        reason.contains(&request),
        "the request is not named: {reason}"
    );
    // Killed, not restarted for the same request; the next request starts it again.
    assert_eq!(engine.stats().restarts, 1);
}

#[test]
fn an_engine_flooding_scored_lines_fails_before_filling_memory() {
    let mut config = fake_engine("flood-scored", &[]);
    config.search_timeout = Duration::from_secs(30);
    let mut engine = UsiEvaluator::new(config).unwrap();
    let err = engine
        .evaluate(&Position::startpos(), &depth(2))
        .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("more than 200000 scored `info` lines in one search"),
        "{text}"
    );
}

#[test]
fn a_handshake_that_never_ends_times_out() {
    let mut config = fake_engine("flood-handshake", &[]);
    config.startup_timeout = Duration::from_millis(300);
    let err = UsiEvaluator::new(config).err().unwrap();
    let EvalError::Timeout { after, sfen, .. } = &err else {
        panic!("expected a time-out, got {err}");
    };
    assert_eq!(*after, Duration::from_millis(300));
    assert_eq!(sfen, "startup");
}
