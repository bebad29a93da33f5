//! Start order: longest first, unknown last, stable.

use super::*;

#[test]
fn longest_first_then_unknown_in_planned_order() {
    let d: BTreeMap<String, u64> = [("a", 100), ("b", 5_000), ("c", 100), ("d", 12_000)]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
    let order = longest_first(["x", "a", "b", "y", "c", "d"], &d);
    // d, b, then a and c in planned order, then x and y in planned order.
    assert_eq!(order, [5, 2, 1, 4, 0, 3]);
}

#[test]
fn nothing_recorded_keeps_the_planned_order() {
    assert_eq!(longest_first(["b", "a", "c"], &BTreeMap::new()), [0, 1, 2]);
}

#[test]
fn the_recorded_file_parses_and_covers_the_catalogue() {
    let d = recorded();
    for s in scenarios::catalogue() {
        assert!(d.contains_key(&s.id), "{} has no recorded duration", s.id);
    }
    for id in d.keys() {
        assert!(
            scenarios::catalogue().iter().any(|s| &s.id == id),
            "{id} is recorded but not in the catalogue"
        );
    }
}
