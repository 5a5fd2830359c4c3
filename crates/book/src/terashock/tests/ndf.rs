//! The NDF backup: probabilities of being best against sampling, the cap, and
//! game weights in the export.

use super::*;

/// A normal sample (Box–Muller), independent of the quadrature under test.
fn gaussian(rng: &mut StdRng) -> f64 {
    let u1: f64 = rng.random_range(f64::EPSILON..1.0);
    let u2: f64 = rng.random_range(0.0..1.0);
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

#[test]
fn best_probabilities_equal_monte_carlo_sampling() {
    let mut rng = StdRng::seed_from_u64(11);
    let cases: Vec<Vec<(f64, f64)>> = vec![
        vec![(0.55, 0.05), (0.50, 0.05)],
        vec![(0.6, 0.1), (0.5, 0.02), (0.45, 0.15)],
        vec![(0.5, 0.01), (0.5, 0.1), (0.52, 0.05), (0.3, 0.2)],
        vec![(0.9, 0.3), (0.5, 0.03)],
    ];
    for case in cases {
        let rates: Vec<WinRate> = case
            .iter()
            .map(|&(mean, sd)| WinRate { mean, var: sd * sd })
            .collect();
        let p = best_probabilities(&rates);
        let samples = 200_000;
        let mut wins = vec![0u32; rates.len()];
        for _ in 0..samples {
            let mut best = (f64::NEG_INFINITY, 0);
            for (i, &(mean, sd)) in case.iter().enumerate() {
                let x = mean + sd * gaussian(&mut rng);
                if x > best.0 {
                    best = (x, i);
                }
            }
            wins[best.1] += 1;
        }
        for (i, &w) in wins.iter().enumerate() {
            let mc = f64::from(w) / f64::from(samples);
            // Three standard errors of the sampling at most ~0.0034.
            assert!(
                (p[i] - mc).abs() < 0.005,
                "{case:?}: move {i}: {} vs {mc}",
                p[i]
            );
        }
        assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-12);
    }
}

#[test]
fn the_cap_holds_and_the_rest_is_renormalised() {
    let mut rng = StdRng::seed_from_u64(3);
    for _ in 0..2000 {
        let n = rng.random_range(1..6);
        let raw: Vec<f64> = (0..n).map(|_| rng.random_range(0.0..1.0)).collect();
        let total: f64 = raw.iter().sum();
        let p: Vec<f64> = raw.iter().map(|v| v / total).collect();
        let prior_raw: Vec<f64> = (0..n).map(|_| rng.random_range(0.01..1.0)).collect();
        let prior_total: f64 = prior_raw.iter().sum::<f64>() * rng.random_range(1.0..3.0);
        let prior: Vec<f64> = prior_raw.iter().map(|v| v / prior_total).collect();
        let mass: f64 = prior.iter().sum();
        let w = cap_to_prior(&p, &prior, mass);
        assert!(
            (w.iter().sum::<f64>() - mass).abs() < 1e-9,
            "{p:?} {prior:?} {w:?}"
        );
        for i in 0..n {
            assert!(w[i] <= 2.0 * prior[i] + 1e-12, "{p:?} {prior:?} {w:?}");
        }
        // Uncapped moves keep the proportions of p among themselves.
        let free: Vec<usize> = (0..n).filter(|&i| w[i] < 2.0 * prior[i] - 1e-12).collect();
        for pair in free.windows(2) {
            let (a, b) = (pair[0], pair[1]);
            assert!(
                (w[a] * p[b] - w[b] * p[a]).abs() < 1e-9,
                "{p:?} {prior:?} {w:?}"
            );
        }
    }
}

#[test]
fn a_position_with_one_move_gets_probability_one() {
    // White king on 1a, black rook on 3b: 1a2a is white's only move.
    let only = "8k/6R2/9/9/9/9/9/9/K8 w - 1";
    assert_eq!(Position::from_sfen(only).unwrap().legal_move_count(), 1);
    let mut b = Builder::new(noise);
    let ids = b.line(only, &["1a2a"]);
    let (graph, solution) = analyse(&b.book);
    let games = std::collections::HashMap::from([(ids[1].0, counts(3, 1, 6))]);
    let w = NdfWeights::solve(&b.book, &graph, &solution, None, &games, 50.0);
    assert_eq!(w.of(ids[0]), Some(&[1.0][..]));
}

#[test]
fn ndf_weights_follow_the_results_within_the_cap_and_cycles_terminate() {
    // Two thought replies at the start with equal values: the one whose games
    // go well for the mover gets more weight, at most twice its prior.
    let mut b = Builder::new(|_, _| 0);
    let a = b.line(stera_rules::STARTPOS_SFEN, &["7g7f"]);
    let c = b.line(stera_rules::STARTPOS_SFEN, &["2g2f"]);
    let (graph, solution) = analyse(&b.book);
    // From the child's side to move (white): 7g7f's child loses often for white.
    let games = std::collections::HashMap::from([
        (a[1].0, counts(10, 10, 80)),
        (c[1].0, counts(50, 10, 40)),
    ]);
    let w = NdfWeights::solve(&b.book, &graph, &solution, None, &games, 50.0);
    let root = w.of(a[0]).unwrap();
    let pos = Position::startpos();
    let moves = pos.legal_moves();
    let index = |usi: &str| moves.iter().position(|m| m.to_string() == usi).unwrap();
    let prior = 1.0 / moves.len() as f64;
    // 7g7f takes nearly all of the pair's prior mass (2/30), never more than twice its own.
    assert!(
        root[index("7g7f")] <= 2.0 * prior + 1e-12,
        "capped at twice"
    );
    assert!(
        root[index("7g7f")] > 1.99 * prior,
        "{}",
        root[index("7g7f")]
    );
    assert!(
        root[index("2g2f")] < prior,
        "the move whose games go badly loses weight"
    );
    assert!((root.iter().sum::<f64>() - 1.0).abs() < 1e-12);

    // A repetition cycle with games on every node: the sweeps end.
    let mut b = Builder::new(noise);
    let ids = b.line(
        stera_rules::STARTPOS_SFEN,
        &["2h3h", "8b7b", "3h2h", "7b8b"],
    );
    let (graph, solution) = analyse(&b.book);
    let games: std::collections::HashMap<u32, crate::GameCounts> = ids[..4]
        .iter()
        .enumerate()
        .map(|(k, id)| (id.0, counts(5 + k as u32, 3, 7)))
        .collect();
    let w = NdfWeights::solve(&b.book, &graph, &solution, None, &games, 50.0);
    assert_eq!(w.cyclic, 4);
    for id in &ids[..4] {
        let p = w.of(*id).unwrap();
        assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-9);
    }
}

#[test]
fn an_ndf_export_writes_game_weights_summing_to_the_scale() {
    let mut b = Builder::new(|_, _| 0);
    let a = b.line(stera_rules::STARTPOS_SFEN, &["7g7f"]);
    let c = b.line(stera_rules::STARTPOS_SFEN, &["2g2f"]);
    let mut extras = NodeExtras::default();
    extras.plies = vec![0; b.book.len()];
    extras.timestamps = vec![0; b.book.len()];
    extras.games = std::collections::HashMap::from([
        (a[1].0, counts(10, 10, 80)),
        (c[1].0, counts(50, 10, 40)),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ndf.db");
    let options = ExportOptions {
        weights: Weights::Ndf,
        temperature: 50.0,
        ..ExportOptions::default()
    };
    let summary = export_db2016(&b.book, &extras, &path, &options, &mut |_, _, _| {}).unwrap();
    assert_eq!(summary.ndf_positions, 1);
    let entries: Vec<_> = stera_formats::db2016::Db2016Reader::open(&path)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let start = entries
        .iter()
        .find(|e| e.position().unwrap().key() == Position::startpos().key())
        .unwrap();
    let count_of = |usi: &str| {
        start
            .moves
            .iter()
            .find(|m| m.mv.to_string() == usi)
            .unwrap()
            .count
    };
    let n = start.moves.len() as u64;
    assert_eq!(
        start.moves.iter().map(|m| m.count).sum::<u64>(),
        COUNT_SCALE
    );
    // 7g7f at twice the prior (2/30 of 10000), 2g2f below the prior's 333.
    assert!(
        count_of("7g7f").abs_diff(2 * COUNT_SCALE / n) <= 1,
        "{}",
        count_of("7g7f")
    );
    assert!(count_of("2g2f") < COUNT_SCALE / n);
    for e in &entries {
        assert_eq!(e.moves.iter().map(|m| m.count).sum::<u64>(), COUNT_SCALE);
    }
}

/// A two-level tree: the root's weights from the NDF code equal a computation by
/// hand (child mixtures written out) and Monte Carlo sampling for P(best).
#[test]
fn ndf_weights_of_a_two_level_tree_equal_an_independent_computation() {
    let mut b = Builder::new(|_, _| 0);
    let a = b.line(stera_rules::STARTPOS_SFEN, &["7g7f", "3c3d"]);
    let a2 = b.line(stera_rules::STARTPOS_SFEN, &["7g7f", "8c8d"]);
    let c = b.line(stera_rules::STARTPOS_SFEN, &["2g2f", "3c3d"]);
    let c2 = b.line(stera_rules::STARTPOS_SFEN, &["2g2f", "8c8d"]);
    let (graph, solution) = analyse(&b.book);
    // Games at the grandchildren (black to move there).
    let grand = [
        (a[2], counts(30, 10, 20)),
        (a2[2], counts(12, 4, 24)),
        (c[2], counts(20, 20, 20)),
        (c2[2], counts(5, 0, 5)),
    ];
    let games: std::collections::HashMap<u32, crate::GameCounts> =
        grand.iter().map(|&(id, g)| (id.0, g)).collect();
    let t = 50.0;
    let w = NdfWeights::solve(&b.book, &graph, &solution, None, &games, t);

    // By hand. A grandchild's rate for black (its side to move), as white's move
    // into it is worth 1 - that for white.
    let rate = |g: crate::GameCounts| {
        let n = f64::from(g.wins + g.draws + g.losses);
        let pts = f64::from(g.wins) + f64::from(g.draws) / 2.0;
        let sm = (pts + 1.0) / (n + 2.0);
        (pts / n, sm * (1.0 - sm) / n)
    };
    let mut rng = StdRng::seed_from_u64(99);
    let samples = 200_000;
    let mc_best = |rng: &mut StdRng, moves: &[(f64, f64)]| -> Vec<f64> {
        let mut wins = vec![0u32; moves.len()];
        for _ in 0..samples {
            let mut best = (f64::NEG_INFINITY, 0);
            for (i, &(m, v)) in moves.iter().enumerate() {
                let x = m + v.sqrt() * gaussian(rng);
                if x > best.0 {
                    best = (x, i);
                }
            }
            wins[best.1] += 1;
        }
        wins.iter()
            .map(|&w| f64::from(w) / f64::from(samples))
            .collect()
    };
    // White's choice at each child: two moves, all values 0, so the priors are
    // equal (1/30 each of white's 30 moves): the pair shares 2/30 by P, capped
    // at 2/30 each (never binding for a pair), so within the pair the weights
    // are P itself.
    let child = |rng: &mut StdRng, g1: crate::GameCounts, g2: crate::GameCounts| {
        let (m1, v1) = rate(g1);
        let (m2, v2) = rate(g2);
        // White's view of each move: 1 - black's rate.
        let p = mc_best(rng, &[(1.0 - m1, v1), (1.0 - m2, v2)]);
        let mean = p[0] * (1.0 - m1) + p[1] * (1.0 - m2);
        let second = p[0] * (v1 + (1.0 - m1).powi(2)) + p[1] * (v2 + (1.0 - m2).powi(2));
        (mean, second - mean * mean)
    };
    let (ma, va) = child(&mut rng, grand[0].1, grand[1].1);
    let (mc, vc) = child(&mut rng, grand[2].1, grand[3].1);
    // Black at the root: 7g7f and 2g2f, worth 1 - white's mixture.
    let p = mc_best(&mut rng, &[(1.0 - ma, va), (1.0 - mc, vc)]);
    let prior = 1.0 / 30.0;
    let expected = cap_to_prior(&p, &[prior, prior], 2.0 * prior);
    let root = w.of(a[0]).unwrap();
    let moves = Position::startpos().legal_moves();
    let index = |usi: &str| moves.iter().position(|m| m.to_string() == usi).unwrap();
    for (k, usi) in ["7g7f", "2g2f"].iter().enumerate() {
        let got = root[index(usi)];
        assert!(
            (got - expected[k]).abs() < 0.01 * prior * 2.0 + 1e-3 * prior,
            "{usi}: {got} vs {}",
            expected[k]
        );
    }
    // The white nodes have their own weights, equal to the hand P within MC error.
    let at_a = w.of(a[1]).unwrap();
    let after = Position::from_position_command("startpos moves 7g7f").unwrap();
    let wm = after.legal_moves();
    let windex = |usi: &str| wm.iter().position(|m| m.to_string() == usi).unwrap();
    let (m1, v1) = rate(grand[0].1);
    let (m2, v2) = rate(grand[1].1);
    let pa = mc_best(&mut rng, &[(1.0 - m1, v1), (1.0 - m2, v2)]);
    let wprior = 1.0 / wm.len() as f64;
    assert!((at_a[windex("3c3d")] - pa[0] * 2.0 * wprior).abs() < 0.01 * 2.0 * wprior);
    assert!((at_a[windex("8c8d")] - pa[1] * 2.0 * wprior).abs() < 0.01 * 2.0 * wprior);
}
