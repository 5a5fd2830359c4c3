//! The one softmax policy of the workspace: what selection samples from, what
//! the export writes as weights (`--export-weights policy`, NDF priors) and what a match
//! side plays by (`stera_games::MoveRule::Softmax`). One rule for T = 0 too: the
//! probability is shared equally among the best values, so a limit T → 0 and
//! T = 0 agree and no tie is broken by move order.

/// The softmax policy π(i) ∝ exp((q\[i\] - max q) / T) over values `q` (each
/// from the mover's view, centipawns) at temperature `temperature`. The maximum is
/// subtracted first, so mate scores do not overflow. A temperature that is not
/// greater than 0 (or not a number) shares 1 equally among the best values; an
/// infinite one gives the uniform policy. Empty `q`: empty policy.
///
/// ```
/// use stera_book::softmax_policy;
/// assert_eq!(softmax_policy(&[10.0, 10.0, 0.0], 0.0), [0.5, 0.5, 0.0]);
/// assert_eq!(softmax_policy(&[0, 0], 50.0), [0.5, 0.5]);
/// let p = softmax_policy(&[31990, -31990, 0], 1.0);
/// assert!((p[0] - 1.0).abs() < 1e-12 && p.iter().all(|x| x.is_finite()));
/// ```
#[must_use]
pub fn softmax_policy<Q: Copy + Into<f64>>(q: &[Q], temperature: f64) -> Vec<f64> {
    let Some(max) = q.iter().map(|&v| v.into()).reduce(f64::max) else {
        return Vec::new();
    };
    let weights: Vec<f64> = if temperature > 0.0 {
        q.iter()
            .map(|&v| ((v.into() - max) / temperature).exp())
            .collect()
    } else {
        q.iter()
            .map(|&v| f64::from(u8::from(v.into() == max)))
            .collect()
    };
    let sum: f64 = weights.iter().sum();
    weights.into_iter().map(|w| w / sum).collect()
}

#[cfg(test)]
mod tests {
    use super::softmax_policy;

    #[test]
    fn ties_share_at_zero_and_below() {
        assert_eq!(softmax_policy(&[3, 7, 7], 0.0), [0.0, 0.5, 0.5]);
        assert_eq!(softmax_policy(&[3, 7, 7], -1.0), [0.0, 0.5, 0.5]);
        assert_eq!(softmax_policy(&[3, 7, 7], f64::NAN), [0.0, 0.5, 0.5]);
        assert_eq!(softmax_policy(&[3, 7], f64::INFINITY), [0.5, 0.5]);
        assert!(softmax_policy::<i32>(&[], 1.0).is_empty());
    }

    #[test]
    fn integer_and_float_values_agree() {
        let ints = [31990, -31990, 0, 12];
        let floats: Vec<f64> = ints.iter().map(|&v| f64::from(v)).collect();
        assert_eq!(softmax_policy(&ints, 37.0), softmax_policy(&floats, 37.0));
    }
}
