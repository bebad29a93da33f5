//! The order scenarios start in: longest first, by recorded durations, so that the longest
//! scenario does not start last and stretch the run's wall time (scenarios mostly wait, so
//! `jobs` of them overlap well; what is left at the end is the tail that ran last).

use std::collections::BTreeMap;

/// The catalogue's recorded durations by scenario id (`scenarios/catalogue/durations.toml`, the
/// table `--shard` balances by; empty if the embedded file does not parse, which a unit test
/// rules out).
pub fn recorded() -> BTreeMap<String, u64> {
    super::Durations::recorded()
        .map(|d| d.0)
        .unwrap_or_default()
}

/// Indices into `ids` in start order: longest recorded duration first; scenarios without a
/// recorded duration (user scenarios, new ones) after them, in their planned order.
pub fn longest_first<'a>(
    ids: impl IntoIterator<Item = &'a str>,
    durations: &BTreeMap<String, u64>,
) -> Vec<usize> {
    let mut keyed: Vec<(usize, Option<u64>)> = ids
        .into_iter()
        .enumerate()
        .map(|(i, id)| (i, durations.get(id).copied()))
        .collect();
    // Stable: equal durations keep the planned order.
    keyed.sort_by_key(|&(_, d)| std::cmp::Reverse(d));
    keyed.into_iter().map(|(i, _)| i).collect()
}

#[cfg(test)]
mod tests;
