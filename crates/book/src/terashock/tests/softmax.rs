//! The softmax backup against a plain recursion, on cycles, and its policy
//! weights.

use super::*;

/// Softmax backup by plain recursion over positions (no graph, no order).
fn naive_softmax(book: &Book, pos: &mut Position, t: f64) -> f64 {
    let id = book.get(pos.key()).unwrap();
    let mut q = Vec::new();
    for (i, mv) in pos.legal_moves().into_iter().enumerate() {
        pos.do_move(mv);
        let v = if book.contains(pos.key()) {
            -naive_softmax(book, pos, t)
        } else if let Some(mut twin) = thought_twin(book, pos) {
            -naive_softmax(book, &mut twin, t)
        } else {
            f64::from(book.values(id)[i].clamp(-32000, 32000))
        };
        pos.undo_move().unwrap();
        q.push(v);
    }
    // Written out: Σ q e^{q/T} / Σ e^{q/T}, shifted by the max for range.
    let max = q.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let w: Vec<f64> = q.iter().map(|v| ((v - max) / t).exp()).collect();
    q.iter().zip(&w).map(|(v, w)| v * w).sum::<f64>() / w.iter().sum::<f64>()
}

#[test]
fn softmax_values_equal_a_plain_recursion_on_random_acyclic_books() {
    let mut checked = 0;
    for seed in 0..24 {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut b = Builder::new(noise);
        b.random_lines(&mut rng, 60, 7, 8);
        let (graph, solution) = analyse(&b.book);
        if solution.stats().cyclic > 0 {
            continue; // a cycle: not for this test
        }
        checked += 1;
        for t in [20.0, 50.0, 400.0] {
            let sm = SoftmaxValues::solve(&b.book, &graph, &solution, t);
            assert_eq!((sm.cyclic, sm.unconverged), (0, 0));
            let mut pos = Position::startpos();
            let id = b.book.get(pos.key()).unwrap();
            let expected = naive_softmax(&b.book, &mut pos, t);
            assert!(
                (sm.value(id) - expected).abs() < 1e-9,
                "seed {seed} T={t}: {} vs {expected}",
                sm.value(id)
            );
            // Softmax never exceeds the max; at a high temperature it is lower.
            assert!(sm.value(id) <= f64::from(solution.value(id)) + 1e-9);
        }
    }
    assert!(checked >= 4, "only {checked} acyclic books");
}

#[test]
fn softmax_backup_on_a_cycle_terminates_at_a_fixed_point() {
    let mut b = Builder::new(noise);
    let ids = b.line(
        stera_rules::STARTPOS_SFEN,
        &["2h3h", "8b7b", "3h2h", "7b8b"],
    );
    let (graph, solution) = analyse(&b.book);
    let sm = SoftmaxValues::solve(&b.book, &graph, &solution, 100.0);
    assert_eq!(sm.cyclic, 4);
    assert_eq!(sm.unconverged, 0);
    // At the fixed point each node is the softmax mean of its moves.
    for &id in &ids[..4] {
        let values = b.book.values(id);
        let mut q: Vec<f64> = values.iter().map(|&v| f64::from(v)).collect();
        for e in graph.edges(id) {
            q[usize::from(e.index)] = -sm.value(e.child);
        }
        assert!(
            (softmax_mean(&q, 100.0) - sm.value(id)).abs() < 0.05,
            "{id}"
        );
    }
}

#[test]
fn policy_weights_sum_to_the_scale_and_follow_the_values() {
    let dir = tempfile::tempdir().unwrap();
    let (_, book) = sample_books().swap_remove(0);
    let options = ExportOptions {
        backup: Backup::Softmax,
        weights: Weights::Policy,
        temperature: 50.0,
        ..ExportOptions::default()
    };
    export_bytes(&book, &options, dir.path(), "policy");
    let entries: Vec<_> = stera_formats::db2016::Db2016Reader::open(dir.path().join("policy"))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(entries.len(), book.len());
    let mut spread = 0;
    for entry in &entries {
        let sum: u64 = entry.moves.iter().map(|m| m.count).sum();
        assert_eq!(sum, COUNT_SCALE, "{}", entry.sfen());
        for w in entry.moves.windows(2) {
            if w[0].value > w[1].value {
                assert!(w[0].count >= w[1].count, "{}", entry.sfen());
            }
        }
        spread += usize::from(entry.moves.iter().filter(|m| m.count > 0).count() > 1);
    }
    assert!(spread > 0, "some positions share their weight among moves");
}
