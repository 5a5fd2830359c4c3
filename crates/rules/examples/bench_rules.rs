//! Rules-core speed: perft (bulk leaf counting) and make/unmake through our API.
//!
//! `cargo run --release -p stera-rules --example bench_rules`

// The positions are constants of this file: one that did not parse is a bug here,
// and the panic names it.
#![allow(clippy::expect_used)]

use std::time::Instant;

use stera_rules::Position;

const MATSURI: &str = "l6nl/5+P1gk/2np1S3/p1p4Pp/3P2Sp1/1PPb2P1P/P5GS1/R8/LN4bKL w RGgsn5p 1";

fn perft_rate(name: &str, sfen: &str, depth: u8) {
    let mut pos = Position::from_position_command(sfen).expect("built-in position");
    let start = Instant::now();
    let nodes = pos.perft(depth);
    let secs = start.elapsed().as_secs_f64();
    println!(
        "perft {name} depth {depth}: {nodes} nodes in {secs:.3} s = {:.1} M nodes/s",
        nodes as f64 / secs / 1e6
    );
}

/// Depth-limited tree walk making and unmaking every move through `Position`
/// (move generation, key update, history), counting make/unmake pairs.
fn walk(pos: &mut Position, depth: u8, buf: &mut Vec<Vec<stera_rules::Move>>) -> u64 {
    if depth == 0 {
        return 0;
    }
    let mut moves = buf.pop().unwrap_or_default();
    pos.legal_moves_into(&mut moves);
    let mut n = 0;
    for &mv in &moves {
        pos.do_move(mv);
        n += 1 + walk(pos, depth - 1, buf);
        let _ = pos.undo_move();
    }
    buf.push(moves);
    n
}

fn make_unmake_rate(name: &str, sfen: &str, depth: u8) {
    let mut pos = Position::from_position_command(sfen).expect("built-in position");
    let mut buf = Vec::new();
    let start = Instant::now();
    let n = walk(&mut pos, depth, &mut buf);
    let secs = start.elapsed().as_secs_f64();
    println!(
        "make/unmake {name} depth {depth}: {n} pairs in {secs:.3} s = {:.2} M/s (with movegen and key update)",
        n as f64 / secs / 1e6
    );
}

/// The same walk on the backend position directly (no key, no history): the cost
/// of our wrapper is the difference.
fn walk_backend(pos: &mut stera_rules::backend::board::Position, depth: u8) -> u64 {
    use stera_rules::backend::board::Move32List;
    use stera_rules::backend::board::movegen::{LegalAll, generate_moves_move32};
    if depth == 0 {
        return 0;
    }
    let mut list = Move32List::new();
    generate_moves_move32::<LegalAll>(pos, &mut list);
    let mut n = 0;
    for &mv in list.iter() {
        pos.apply_move32(mv);
        n += 1 + walk_backend(pos, depth - 1);
        let _ = pos.undo_move32(mv);
    }
    n
}

fn backend_rate(name: &str, sfen: &str, depth: u8) {
    let pos = Position::from_position_command(sfen).expect("built-in position");
    let mut raw = pos.backend().clone();
    let start = Instant::now();
    let n = walk_backend(&mut raw, depth);
    let secs = start.elapsed().as_secs_f64();
    println!(
        "make/unmake {name} depth {depth} on the backend directly: {:.2} M/s",
        n as f64 / secs / 1e6
    );
}

fn key_after_rate(name: &str, sfen: &str) {
    let pos = Position::from_position_command(sfen).expect("built-in position");
    let moves = pos.legal_moves();
    let start = Instant::now();
    let mut acc = 0u128;
    let rounds = 200_000;
    for _ in 0..rounds {
        for &mv in &moves {
            acc = acc.wrapping_add(pos.key_after(mv).0);
        }
    }
    let secs = start.elapsed().as_secs_f64();
    let n = rounds * moves.len();
    println!(
        "key_after {name}: {:.1} M/s (checksum {:x})",
        n as f64 / secs / 1e6,
        acc & 0xffff
    );
}

fn main() {
    perft_rate("startpos", "startpos", 5);
    perft_rate("matsuri", MATSURI, 4);
    make_unmake_rate("startpos", "startpos", 4);
    make_unmake_rate("matsuri", MATSURI, 3);
    backend_rate("startpos", "startpos", 4);
    backend_rate("matsuri", MATSURI, 3);
    key_after_rate("startpos", "startpos");
    key_after_rate("matsuri", MATSURI);
}
