//! Inputs that would exhaust the stack, or take exponential time in a plain backtracking parser:
//! long chains work, deep nesting ends in a parser error, and nothing overflows a small stack.

use super::support::health_entry;
use crate::filter::{Filter, HEALTH_ENTRY_FIELDS};

const PREFIX: &str = "Failed to create boolean expression evaluator: ";

fn or_chain(n: usize) -> String {
    (0..n)
        .map(|i| format!("Node.Node == n{i}"))
        .collect::<Vec<_>>()
        .join(" or ")
}

fn nested(depth: usize, inner: &str) -> String {
    format!("{}{inner}{}", "(".repeat(depth), ")".repeat(depth))
}

/// The deepest nesting of parentheses that parses.
fn max_nesting() -> usize {
    (1..200)
        .find(|&d| Filter::parse(&nested(d, "a == b")).is_err())
        .map_or(200, |d| d - 1)
}

#[test]
fn chains_have_no_length_limit() {
    let entry = health_entry();
    let f = Filter::parse_for(&or_chain(5_000), HEALTH_ENTRY_FIELDS).unwrap();
    assert!(f.matches(&entry).unwrap(), "n1 is in the chain");
    let nots = "not ".repeat(10_001) + "Node.Node == n2";
    let f = Filter::parse_for(&nots, HEALTH_ENTRY_FIELDS).unwrap();
    assert!(f.matches(&entry).unwrap(), "an odd number of nots negates");
}

#[test]
fn deep_nesting_is_a_parser_error() {
    let depth = max_nesting();
    assert!((40..60).contains(&depth), "nesting limit {depth}");
    for expr in [nested(depth + 1, "a == b"), nested(100_000, "a == b")] {
        let err = Filter::parse(&expr).unwrap_err().to_string();
        assert!(err.starts_with(PREFIX), "{err}");
        assert!(err.ends_with("maximum nesting depth exceeded"), "{err}");
    }
}

#[test]
fn the_deepest_accepted_expression_fits_a_small_stack() {
    // Tokio workers and test threads get 2 MiB; a quarter must do, in a debug build.
    let depth = max_nesting();
    let worker = std::thread::Builder::new()
        .stack_size(512 << 10)
        .spawn(move || {
            let f =
                Filter::parse_for(&nested(depth, "Node.Node == n1"), HEALTH_ENTRY_FIELDS).unwrap();
            f.matches(&health_entry()).unwrap()
        })
        .unwrap();
    assert!(worker.join().unwrap());
}

#[test]
fn unclosed_groups_do_not_backtrack_exponentially() {
    // Each unclosed level is parsed twice by the grammar; memoization keeps this linear.
    let depth = 40;
    let expr = format!("{}Node.Node == n1", "(".repeat(depth));
    let at = expr.len();
    assert_eq!(
        Filter::parse(&expr).unwrap_err().to_string(),
        format!(
            "{PREFIX}1:{} ({at}): rule \"grouping\": Unmatched parentheses",
            at + 1
        )
    );
}
