//! Repetitions: a cycle back to the start is a draw, a perpetual check loses
//! for the checker.

use super::*;

#[test]
fn rook_shuffle_back_to_the_start_is_a_draw_with_infinite_depth() {
    let line = ["2h3h", "8b7b", "3h2h", "7b8b"];
    let mut b = Builder::new(|_, _| -50);
    let ids = b.line(stera_rules::STARTPOS_SFEN, &line);
    assert_eq!(ids[4], ids[0], "the shuffle returns to the start position");
    let (_, s) = analyse(&b.book);
    assert_eq!(s.stats().cyclic, 4);
    for &id in &ids[..4] {
        assert_eq!((s.value(id), s.depth(id)), (0, DEPTH_INFINITE), "{id}");
    }
    assert_eq!(s.best_move(ids[0]).unwrap().to_string(), "2h3h");
    assert_eq!(s.stats().unconverged, 0);

    // One good leaf for black after 2h3h 8b7b breaks the draw.
    let good = Position::from_position_command("startpos moves 2h3h 8b7b").unwrap();
    let good_key = good.key();
    let mut b = Builder::new(move |p, i| {
        if p.key() == good_key && i == 0 {
            100
        } else {
            -50
        }
    });
    let ids = b.line(stera_rules::STARTPOS_SFEN, &line);
    let (_, s) = analyse(&b.book);
    let line_of = |id| (s.value(id), s.depth(id));
    assert_eq!(line_of(ids[2]), (100, 0));
    // White after 2h3h: into that node -100 at depth 1, or a leaf -50.
    assert_eq!(line_of(ids[1]), (-50, 0));
    // Start: 2h3h is worth 50 at depth 1.
    assert_eq!(line_of(ids[0]), (50, 1));
    // White after 3h2h: 7b8b back to the start is -50 at depth 2, a tie with the
    // leaves at depth 0: below 0 the longer line is preferred.
    assert_eq!(line_of(ids[3]), (-50, 2));
    assert_eq!(s.best_move(ids[3]).unwrap().to_string(), "7b8b");
}

#[test]
fn perpetual_check_loses_for_the_checker() {
    let mut b = Builder::new(|_, _| -100);
    let ids = b.line(PERPETUAL, &PERPETUAL_LINE);
    assert_eq!(ids[4], ids[0]);
    let (graph, s) = analyse(&b.book);
    assert!(graph.in_check(ids[1]) && graph.in_check(ids[3]));
    assert_eq!(s.stats().perpetual_loops, 1);
    // Without the rule the loop would be a draw (0) that beats every -100 leaf.
    // The checker (black) must leave the loop: it takes its best leaf, now or
    // after some checks; the line it settles on ends.
    assert_eq!(s.value(ids[0]), -100);
    assert_ne!(s.depth(ids[0]), DEPTH_INFINITE);
    // White at ids[3]: 2a1a leads to black's -100: +100.
    assert_eq!(s.value(ids[3]), 100);
    assert_ne!(s.depth(ids[3]), DEPTH_INFINITE);
    assert_eq!(s.stats().unconverged, 0);
}

#[test]
fn the_checkers_moves_into_a_check_loop_are_written_9997_and_lose_value_ties() {
    let mut b = Builder::new(|_, _| -100);
    let ids = b.line(PERPETUAL, &PERPETUAL_LINE);
    let (graph, s) = analyse(&b.book);
    // The checked positions of the loop, not the checker's.
    assert!(s.in_check_loop(ids[1]) && s.in_check_loop(ids[3]));
    assert!(!s.in_check_loop(ids[0]) && !s.in_check_loop(ids[2]));
    let pos = Position::from_sfen(PERPETUAL).unwrap();
    let mut moves = Vec::new();
    let lines = node_lines(&b.book, &graph, Some(&s), None, ids[0], &pos, &mut moves).unwrap();
    let into_loop = lines
        .iter()
        .position(|l| l.mv.to_string() == "2i1i")
        .unwrap();
    assert_eq!(lines[into_loop].depth, DEPTH_PERPETUAL_CHECK);
    // It ties the leaves at -100 and comes after all of them, written one lower.
    assert_eq!(lines[into_loop].value, -100);
    assert_eq!(into_loop, lines.len() - 1);
    assert!(
        lines[..into_loop]
            .iter()
            .all(|l| l.value == -100 && l.depth == 0)
    );
    let written: Vec<_> = book_moves(&lines, true).collect();
    assert_eq!(written[into_loop].depth, 9997);
    assert_eq!(written[into_loop].value, -101);
    assert_eq!((written[0].value, written[0].depth), (-100, 0));

    // A check the other side can end (the king steps where no rook move checks
    // again, here a book without the loop's second half) is no check loop.
    let mut open = Builder::new(|_, _| -100);
    let ids = open.line(PERPETUAL, &PERPETUAL_LINE[..2]);
    let (_, s) = analyse(&open.book);
    assert!(!s.in_check_loop(ids[1]));
}

#[test]
fn forced_perpetual_check_scores_mate_for_the_checked_side() {
    // Black's only alternatives are worse than any finite score: it is forced to
    // keep checking, and so loses.
    let mut p = Position::from_sfen(PERPETUAL).unwrap();
    let p0 = p.key();
    for usi in &PERPETUAL_LINE[..2] {
        let mv = p.parse_move(usi).unwrap();
        p.do_move(mv);
    }
    let p2 = p.key();
    let mut b = Builder::new(move |p, _| {
        if p.key() == p0 || p.key() == p2 {
            -32000
        } else {
            -100
        }
    });
    let ids = b.line(PERPETUAL, &PERPETUAL_LINE);
    let (_, s) = analyse(&b.book);
    assert_eq!(s.value(ids[0]), -32000);
    assert_eq!(s.value(ids[3]), 32000);
}
