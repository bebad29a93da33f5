//! `--shard K/N`: a stable partition of the selected plan over N CI jobs, balanced by the
//! scenarios' recorded durations ([`Durations`]; greedy longest-first into the least-loaded
//! shard, ties broken by id and shard number), so every job computes the same partition on its
//! own.

use std::fmt;
use std::str::FromStr;

use reports::ShardInfo;

use super::Planned;
use super::durations::Durations;

/// `--shard K/N`: shard K (1-based) of N.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShardSpec {
    /// 1-based, `1..=count`.
    pub index: u32,
    /// At least 1.
    pub count: u32,
}

impl FromStr for ShardSpec {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let fix = "expected K/N with 1 <= K <= N, e.g. --shard 1/3 ... --shard 3/3";
        let (k, n) = s
            .split_once('/')
            .ok_or_else(|| format!("{s:?} is not K/N: {fix}"))?;
        let parse = |what: &str, v: &str| {
            v.trim()
                .parse::<u32>()
                .map_err(|_| format!("{what} in {s:?} is not a whole number: {fix}"))
        };
        let (index, count) = (parse("K", k)?, parse("N", n)?);
        if count == 0 {
            return Err(format!("N in {s:?} must be at least 1: {fix}"));
        }
        if index == 0 {
            return Err(format!("K in {s:?} counts from 1: {fix}"));
        }
        if index > count {
            return Err(format!("K in {s:?} is larger than N: {fix}"));
        }
        Ok(Self { index, count })
    }
}

impl fmt::Display for ShardSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// Greedy longest-processing-time partition of `(id, weight)` into `count` shards: heaviest
/// first (ties by id), each into the least-loaded shard (ties by lowest number). Returns the
/// 0-based shard of every item, in input order. The result depends only on the set of items.
pub fn partition(items: &[(&str, u64)], count: u32) -> Vec<u32> {
    let count = count.max(1);
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_by(|&a, &b| items[b].1.cmp(&items[a].1).then(items[a].0.cmp(items[b].0)));
    let mut load = vec![0u64; count as usize];
    let mut shard_of = vec![0u32; items.len()];
    for i in order {
        let (best, _) = load
            .iter()
            .enumerate()
            .min_by_key(|(k, l)| (**l, *k))
            .unwrap_or((0, &0));
        load[best] = load[best].saturating_add(items[i].1);
        shard_of[i] = u32::try_from(best).unwrap_or(0);
    }
    shard_of
}

/// Keeps shard `spec`'s part of `plan` (in plan order) and describes it. A scenario reported
/// skipped weighs nothing; one without a recorded duration weighs the median.
pub fn select(
    plan: Vec<Planned>,
    spec: ShardSpec,
    durations: &Durations,
    claimed: Vec<reports::Profile>,
) -> (Vec<Planned>, ShardInfo) {
    let median = durations.median();
    let weights: Vec<(&str, u64)> = plan
        .iter()
        .map(|p| {
            let id = p.scenario().id.as_str();
            let w = match p {
                Planned::Skip(_) => 0,
                Planned::Run(_) => durations.0.get(id).copied().unwrap_or(median),
            };
            (id, w)
        })
        .collect();
    let shard_of = partition(&weights, spec.count);
    let planned: Vec<String> = plan.iter().map(|p| p.scenario().id.clone()).collect();
    let mine: Vec<Planned> = plan
        .into_iter()
        .zip(shard_of)
        .filter(|(_, k)| *k + 1 == spec.index)
        .map(|(p, _)| p)
        .collect();
    let info = ShardInfo {
        index: spec.index,
        count: spec.count,
        planned,
        mine: mine.iter().map(|p| p.scenario().id.clone()).collect(),
        claimed,
    };
    (mine, info)
}

#[cfg(test)]
mod tests;
