//! Property tests of the splitter's weights as Envoy gets them: Consul's
//! `int(split.Weight * 100)` on a normalized (two-decimal) `float32` weight.

use proptest::prelude::*;

use super::super::routes::split_weight;

/// The oracle: the `float32` product is the exact `f64` product rounded once to `f32`.
fn go_weight(w: f32) -> u32 {
    ((f64::from(w) * 100.0) as f32) as u32
}

/// A weight as the splitter stores it after `Normalize` (`round(w*100)/100` in `float32`).
fn normalized(hundredths: u32) -> f32 {
    hundredths as f32 / 100.0
}

#[test]
fn known_truncations_match_go() {
    for (w, want) in [
        (33.33_f32, 3333),
        (66.67, 6667),
        (2.1, 209),
        (0.53, 52),
        (0.01, 1),
        (50.0, 5000),
        (99.99, 9999),
        (100.0, 10_000),
        (0.0, 0),
    ] {
        assert_eq!(split_weight(w), want, "{w}");
    }
}

proptest! {
    #[test]
    fn every_two_decimal_weight_truncates_like_go(h in 0u32..=10_000) {
        let w = normalized(h);
        let got = split_weight(w);
        prop_assert_eq!(got, go_weight(w));
        // At most one below the intended hundredths, never above.
        prop_assert!(got == h || got + 1 == h, "{} -> {}", h, got);
    }

    #[test]
    fn splits_summing_to_100_reach_envoy_with_a_positive_total(
        cuts in prop::collection::btree_set(1u32..10_000, 0..6)
    ) {
        // Two-decimal weights summing to exactly 100, as splitter validation requires.
        let mut edges: Vec<u32> = std::iter::once(0).chain(cuts).chain([10_000]).collect();
        edges.dedup();
        let parts: Vec<u32> = edges.windows(2).map(|p| p[1] - p[0]).collect();
        let total: u32 = parts.iter().map(|h| split_weight(normalized(*h))).sum();
        let n = u32::try_from(parts.len()).unwrap_or(u32::MAX);
        prop_assert!(total <= 10_000 && total + n >= 10_000, "{:?} -> {}", parts, total);
        prop_assert!(total > 0);
    }
}
