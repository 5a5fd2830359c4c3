//! Engine budgets (nodes and their jitter, depth, time) as the report and the
//! match's header name them.

use stera_games::Budget;

/// A budget as the report names it: `1,000 nodes ±30 %`, `depth 2`,
/// `1,500 ms`, or the engine's own default when no limit is given.
pub fn budget_text(budget: &Budget) -> String {
    let l = &budget.limits;
    let mut parts = Vec::new();
    if let Some(nodes) = l.nodes {
        let mut text = format!("{} nodes", thousands(nodes));
        if budget.node_jitter > 0.0 {
            // One decimal at most: 0.3 is `30 %`, 0.125 `12.5 %`.
            let percent = format!("{:.1}", 100.0 * budget.node_jitter);
            let percent = percent.strip_suffix(".0").unwrap_or(&percent);
            text.push_str(&format!(" ±{percent} %"));
        }
        parts.push(text);
    }
    if let Some(depth) = l.depth {
        parts.push(format!("depth {depth}"));
    }
    if let Some(time) = l.time {
        parts.push(format!(
            "{} ms",
            thousands(u64::try_from(time.as_millis()).unwrap_or(u64::MAX))
        ));
    }
    if parts.is_empty() {
        format!(
            "no limit given (the built-in engine: {} nodes)",
            thousands(stera_engine::builtin::DEFAULT_NODES)
        )
    } else {
        parts.join(", ")
    }
}

/// `1234567` as `1,234,567`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_read_as_words() {
        use std::time::Duration;
        use stera_engine::Limits;
        let budget = |nodes, depth, time: Option<u64>, node_jitter| {
            budget_text(&Budget {
                limits: Limits {
                    nodes,
                    depth,
                    time: time.map(Duration::from_millis),
                },
                node_jitter,
            })
        };
        assert_eq!(budget(Some(1_000), None, None, 0.3), "1,000 nodes ±30 %");
        assert_eq!(budget(Some(1_234_567), None, None, 0.0), "1,234,567 nodes");
        assert_eq!(budget(Some(500), None, None, 0.125), "500 nodes ±12.5 %");
        assert_eq!(budget(None, Some(2), Some(1_500), 0.0), "depth 2, 1,500 ms");
        assert_eq!(
            budget(None, None, None, 0.0),
            "no limit given (the built-in engine: 300,000 nodes)"
        );
    }
}
