//! The SFEN code: order, round trips, the alphabetic codes, refused text.

use super::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use stera_rules::Position;

/// SFENs of positions along random games (captures give hands, promotions
/// give `+` pieces), deduplicated.
fn random_sfens(seed: u64, games: usize, plies: usize) -> Vec<String> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut out = std::collections::BTreeSet::new();
    for _ in 0..games {
        let mut pos = Position::startpos();
        for _ in 0..rng.random_range(0..plies) {
            let moves = pos.legal_moves();
            if moves.is_empty() {
                break;
            }
            pos.do_move(moves[rng.random_range(0..moves.len())]);
            out.insert(pos.to_sfen());
        }
    }
    out.into_iter().collect()
}

fn coder_of(sfens: &[String]) -> SfenCoder {
    SfenCoder::from_samples(sfens.iter().map(String::as_str)).unwrap()
}

fn table_of(coder: SfenCoder, sfens: &[String]) -> SfenTable {
    let mut t = SfenTable::new(coder, sfens.len());
    for (i, s) in sfens.iter().enumerate() {
        t.add(NodeId(u32::try_from(i).unwrap()), s).unwrap();
    }
    t
}

fn without_ply(s: &str) -> &str {
    &s[..s.rfind(' ').unwrap()]
}

/// Sorting the slots gives the order of plain string comparison, and every
/// code decodes to its text.
fn check_order_and_round_trip(mut t: SfenTable, sfens: &[String]) {
    t.sort();
    let got: Vec<usize> = t.slots().iter().map(|&s| slot_id(s) as usize).collect();
    let mut want: Vec<usize> = (0..sfens.len()).collect();
    want.sort_by(|&a, &b| sfens[a].cmp(&sfens[b]));
    assert!(got == want, "the slots' order is not the SFENs' order");
    let mut text = Vec::new();
    let mut code = Code::default();
    let mut entries = [0; FIELDS];
    for &slot in t.slots() {
        text.clear();
        t.decode(slot, &mut code, &mut text, &mut entries).unwrap();
        assert_eq!(
            std::str::from_utf8(&text).unwrap(),
            without_ply(&sfens[slot_id(slot) as usize])
        );
    }
}

#[test]
fn codes_sort_like_the_sfen_text_with_a_dictionary_of_other_positions() {
    let sfens = random_sfens(1, 400, 120);
    assert!(sfens.len() > 10_000);
    // Promoted pieces and hands occur.
    assert!(sfens.iter().any(|s| s.contains('+')));
    assert!(sfens.iter().any(|s| s.split(' ').nth(2) != Some("-")));
    let t = table_of(coder_of(&random_sfens(2, 50, 60)), &sfens);
    let flagged_count = t.slots().iter().filter(|&&s| flagged(s)).count();
    assert!(flagged_count > 0 && flagged_count < sfens.len());
    check_order_and_round_trip(t, &sfens);
}

#[test]
fn codes_sort_like_the_sfen_text_without_a_dictionary() {
    // Every field is a literal: every code is longer than a slot, and slots
    // tie on their 95 bits, so the remaining bits decide.
    let sfens = random_sfens(3, 100, 80);
    let t = table_of(SfenCoder::from_samples([]).unwrap(), &sfens);
    assert!(t.slots().iter().all(|&s| flagged(s)));
    check_order_and_round_trip(t, &sfens);
}

#[test]
fn codes_sort_like_the_sfen_text_with_a_dictionary_of_the_same_positions() {
    // Openings of random games: few distinct strings per field.
    let sfens = random_sfens(4, 300, 10);
    let t = table_of(coder_of(&sfens), &sfens);
    assert!(
        t.slots().iter().all(|&s| !flagged(s)),
        "short codes fit in a slot"
    );
    check_order_and_round_trip(t, &sfens);
}

#[test]
fn alphabetic_codes_are_prefix_free_complete_and_ordered() {
    let mut rng = StdRng::seed_from_u64(5);
    for n in [1usize, 2, 3, 7, 100, 1000, 40_000] {
        let weights: Vec<u64> = (0..n)
            .map(|_| {
                rng.random_range(1..1_000_000u64)
                    .pow(rng.random_range(1..3))
            })
            .collect();
        let (starts, lens) = alphabetic_code(&weights, MAX_WORD_BITS).unwrap();
        // Consecutive intervals [start, start + 2^(64 - len)) tile [0, 2^64).
        let mut next = 0u128;
        for (&s, &l) in starts.iter().zip(&lens) {
            assert_eq!(u128::from(s), next);
            next += 1u128 << (64 - u32::from(l));
        }
        assert_eq!(next, 1u128 << 64);
    }
    // Weights that would make words too long are refused; equal ones never are.
    let steep: Vec<u64> = (0..60).map(|i| 1u64 << i).collect();
    assert!(alphabetic_code(&steep, MAX_WORD_BITS).is_none());
    let (_, lens) = alphabetic_code(&vec![1; 2 * SAMPLES_MAX + 1], MAX_WORD_BITS).unwrap();
    assert!(lens.iter().all(|&l| l <= 18));
}

#[test]
fn text_that_is_no_sfen_is_refused() {
    let coder = SfenCoder::from_samples([]).unwrap();
    let mut code = Code::default();
    assert!(coder.encode("9/9 b -", &mut code).is_err());
    assert!(coder.encode("lnsgkgsnl", &mut code).is_err());
    assert!(
        coder
            .encode("9/9/9/9/9/9/9/9/9/9 b - 1", &mut code)
            .is_err()
    );
    assert!(coder.encode("9/9/9/9/9/9/9/9/x9 b - 1", &mut code).is_err());
    assert!(SfenCoder::from_samples(["9 b -"]).is_err());
}
