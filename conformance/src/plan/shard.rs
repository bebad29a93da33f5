//! `--shard K/N`: a stable partition of the selected plan over N CI jobs, balanced by the
//! scenarios' recorded durations (greedy longest-first into the least-loaded shard, ties broken
//! by id and shard number), so every job computes the same partition on its own; and the
//! recorded durations themselves (`scenarios/catalogue/durations.toml`, `conformance
//! durations`, `--durations FILE`).

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;
use std::str::FromStr;

use reports::{Report, ShardInfo, Verdict};

use crate::error::Error;
use crate::runner::Planned;

/// The checked-in durations of the catalogue (regenerate with `conformance durations`).
pub const RECORDED: &str = include_str!("../../scenarios/catalogue/durations.toml");

/// The weight of every scenario when no duration at all is recorded.
const FALLBACK_MS: u64 = 1000;

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

/// Recorded durations by scenario id, in milliseconds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Durations(pub BTreeMap<String, u64>);

impl Durations {
    /// Parses a durations table: one `scenario-id = milliseconds` per line (TOML).
    pub fn parse(origin: &str, text: &str) -> Result<Self, Error> {
        toml::from_str(text)
            .map(Self)
            .map_err(|e| Error::Usage(format!("{origin}: not a durations table (id = ms): {e}")))
    }

    /// The durations of the scenarios a report ran (skipped, not-supported and zero-length
    /// ones say nothing about how long a scenario takes).
    pub fn from_report(report: &Report) -> Self {
        Self(
            report
                .scenarios
                .iter()
                .filter(|s| !matches!(s.verdict, Verdict::Skipped | Verdict::NotSupported))
                .filter(|s| s.duration_ms > 0)
                .map(|s| (s.id.clone(), s.duration_ms))
                .collect(),
        )
    }

    /// Reads `--durations FILE`: a `report.json` (a previous run's, e.g. from a CI cache) or a
    /// durations table.
    pub fn read(path: &Path) -> Result<Self, Error> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::io(format!("read {}", path.display()), e))?;
        if path.extension().is_some_and(|e| e == "json") {
            let report = Report::from_json(&text).map_err(|e| {
                Error::Usage(format!("{}: not a conformance report: {e}", path.display()))
            })?;
            return Ok(Self::from_report(&report));
        }
        Self::parse(&path.display().to_string(), &text)
    }

    /// The checked-in table (`scenarios/catalogue/durations.toml`).
    pub fn recorded() -> Result<Self, Error> {
        Self::parse("scenarios/catalogue/durations.toml", RECORDED)
    }

    /// Adds `other`'s entries, keeping the longer duration of an id in both.
    pub fn extend(&mut self, other: Self) {
        for (id, ms) in other.0 {
            let slot = self.0.entry(id).or_insert(ms);
            *slot = (*slot).max(ms);
        }
    }

    /// The median recorded duration (the weight of a scenario with none).
    pub fn median(&self) -> u64 {
        let mut v: Vec<u64> = self.0.values().copied().collect();
        v.sort_unstable();
        match v.len() {
            0 => FALLBACK_MS,
            n if n % 2 == 1 => v[n / 2],
            n => (v[n / 2 - 1] + v[n / 2]) / 2,
        }
    }

    /// The table as TOML, with a header saying how to regenerate it.
    pub fn to_toml(&self) -> String {
        let mut out = String::from(
            "# Recorded scenario durations (ms) that `conformance run --shard K/N` balances shards\n\
             # by; a scenario not listed weighs the median. Regenerate from a full run:\n\
             #   cargo run -p conformance -- run --report-dir /tmp/r\n\
             #   cargo run -p conformance -- durations /tmp/r/report.json > scenarios/catalogue/durations.toml\n",
        );
        for (id, ms) in &self.0 {
            // Ids are TOML bare keys (letters, digits, `-`, `_`); quote anything else.
            let bare = !id.is_empty()
                && id
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
            if bare {
                out.push_str(&format!("{id} = {ms}\n"));
            } else {
                out.push_str(&format!("{id:?} = {ms}\n"));
            }
        }
        out
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
