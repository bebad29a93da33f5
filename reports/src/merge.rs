//! `merge`: one report from the JSON reports of the shards of one run (`conformance run --shard
//! K/N`), refused with a stable error name (`MergeError::kind`) unless the shards are the same
//! run (harness, proxy, seed, plan) and together hold every planned scenario exactly once.

use std::collections::{BTreeMap, BTreeSet};

use crate::model::{Report, SCHEMA_VERSION, ScenarioResult};

/// Why shard reports cannot be merged. Each variant names the offending files.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MergeError {
    /// Nothing to merge.
    #[error("no report to merge: give the report.json of every shard")]
    NoReports,
    /// A report was not written by `conformance run --shard K/N` (no `shard` field).
    #[error(
        "{file} is not a shard report (no `shard`): merge only reports of `conformance run --shard K/N`"
    )]
    NotSharded { file: String },
    /// Two reports were written by different harness versions.
    #[error(
        "{file} was written by {theirs}, {first} by {ours}: run every shard with the same harness"
    )]
    HarnessMismatch {
        file: String,
        first: String,
        theirs: String,
        ours: String,
    },
    /// Two reports tested different proxies (or declared different features or bounds).
    #[error("{file} and {first} tested different proxies: `proxy.{field}` is {theirs} vs {ours}")]
    ProxyMismatch {
        file: String,
        first: String,
        field: &'static str,
        theirs: String,
        ours: String,
    },
    /// Two reports ran with different seeds.
    #[error(
        "{file} ran with seed {theirs}, {first} with seed {ours}: give every shard the same --seed"
    )]
    SeedMismatch {
        file: String,
        first: String,
        theirs: u64,
        ours: u64,
    },
    /// Two reports ran with different run settings (`--repeat`, `--allow-flaky`).
    #[error(
        "{file} ran with {field} {theirs}, {first} with {ours}: give every shard the same --repeat and --allow-flaky"
    )]
    SettingsMismatch {
        file: String,
        first: String,
        field: &'static str,
        theirs: String,
        ours: String,
    },
    /// Two reports split the plan into different numbers of shards.
    #[error(
        "{file} is shard {index}/{theirs}, {first} one of {ours}: give every shard the same N in --shard K/N"
    )]
    ShardCountMismatch {
        file: String,
        first: String,
        index: u32,
        theirs: u32,
        ours: u32,
    },
    /// Two reports planned different scenarios or claimed different profiles.
    #[error(
        "{file} and {first} planned different runs ({what}): give every shard the same --scenario, --skip, --profile and --scenario-dir"
    )]
    SelectionMismatch {
        file: String,
        first: String,
        what: String,
    },
    /// A shard number outside `1..=N`.
    #[error("{file} says it is shard {index} of {count}")]
    InvalidShard {
        file: String,
        index: u32,
        count: u32,
    },
    /// The same shard was given twice.
    #[error("shard {index}/{count} given twice: {file} and {other}")]
    ShardDuplicate {
        index: u32,
        count: u32,
        file: String,
        other: String,
    },
    /// Some shards are missing.
    #[error("shard(s) {missing:?} of {count} missing: give the report.json of every shard")]
    ShardMissing { missing: Vec<u32>, count: u32 },
    /// A report's scenarios are not the ones its `shard.mine` lists.
    #[error(
        "{file} does not hold its own scenarios: missing {missing:?}, unexpected {unexpected:?}"
    )]
    ShardIncomplete {
        file: String,
        missing: Vec<String>,
        unexpected: Vec<String>,
    },
    /// Two shards ran the same scenario.
    #[error(
        "scenario {id} is in two shards, {file} and {other}: did every shard use the same durations (--durations)?"
    )]
    ScenarioInTwoShards {
        id: String,
        file: String,
        other: String,
    },
    /// A planned scenario is in no shard, or a shard ran one that was not planned.
    #[error(
        "the shards do not cover the plan: in no shard {missing:?}, not planned {unplanned:?}: did every shard use the same durations (--durations)?"
    )]
    PlanNotCovered {
        missing: Vec<String>,
        unplanned: Vec<String>,
    },
}

impl MergeError {
    /// The stable snake_case machine name of this error.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::NoReports => "no_reports",
            Self::NotSharded { .. } => "not_a_shard_report",
            Self::HarnessMismatch { .. } => "harness_mismatch",
            Self::ProxyMismatch { .. } => "proxy_mismatch",
            Self::SeedMismatch { .. } => "seed_mismatch",
            Self::SettingsMismatch { .. } => "settings_mismatch",
            Self::ShardCountMismatch { .. } => "shard_count_mismatch",
            Self::SelectionMismatch { .. } => "selection_mismatch",
            Self::InvalidShard { .. } => "invalid_shard",
            Self::ShardDuplicate { .. } => "shard_duplicate",
            Self::ShardMissing { .. } => "shard_missing",
            Self::ShardIncomplete { .. } => "shard_incomplete",
            Self::ScenarioInTwoShards { .. } => "scenario_in_two_shards",
            Self::PlanNotCovered { .. } => "plan_not_covered",
        }
    }
}

/// Merges the shard reports `(file name, report)` of one run into one graded report: the
/// scenarios in plan order (every field as the shard recorded it, re-graded), `duration_ms` the
/// longest shard's, `started_at` the earliest, and one environment note per shard.
pub fn merge(shards: &[(String, Report)]) -> Result<Report, MergeError> {
    let Some((first_file, first)) = shards.first() else {
        return Err(MergeError::NoReports);
    };
    let Some(plan) = first.shard.clone() else {
        return Err(MergeError::NotSharded {
            file: first_file.clone(),
        });
    };
    for (file, r) in shards {
        same_run(file, r, first_file, first)?;
    }
    let by_index = by_index(shards, plan.count)?;
    let mut owner: BTreeMap<&str, &str> = BTreeMap::new();
    let mut results: BTreeMap<String, ScenarioResult> = BTreeMap::new();
    for (file, r) in by_index.values() {
        let mine = r
            .shard
            .as_ref()
            .map(|s| s.mine.as_slice())
            .unwrap_or_default();
        holds_its_own(file, r, mine)?;
        for id in mine {
            if let Some(other) = owner.insert(id, file) {
                return Err(MergeError::ScenarioInTwoShards {
                    id: id.clone(),
                    file: other.to_owned(),
                    other: file.clone(),
                });
            }
        }
        for s in &r.scenarios {
            results.insert(s.id.clone(), s.clone());
        }
    }
    let planned: BTreeSet<&str> = plan.planned.iter().map(String::as_str).collect();
    let missing: Vec<String> = plan
        .planned
        .iter()
        .filter(|id| !owner.contains_key(id.as_str()))
        .cloned()
        .collect();
    let unplanned: Vec<String> = owner
        .keys()
        .filter(|id| !planned.contains(*id))
        .map(|id| (*id).to_owned())
        .collect();
    if !missing.is_empty() || !unplanned.is_empty() {
        return Err(MergeError::PlanNotCovered { missing, unplanned });
    }
    let mut merged = first.clone();
    merged.schema_version = SCHEMA_VERSION.to_owned();
    merged.shard = None;
    merged.scenarios = plan
        .planned
        .iter()
        .filter_map(|id| results.remove(id))
        .collect();
    merged.duration_ms = shards.iter().map(|(_, r)| r.duration_ms).max().unwrap_or(0);
    merged.started_at = shards
        .iter()
        .map(|(_, r)| r.started_at.clone())
        .min()
        .unwrap_or_default();
    let env = &mut merged.environment;
    if shards
        .iter()
        .any(|(_, r)| r.environment.hostname != env.hostname)
    {
        env.hostname = None;
    }
    env.ci = shards.iter().any(|(_, r)| r.environment.ci);
    env.notes.retain(|n| *n != plan.note());
    env.notes.push(format!(
        "merged from {} shards (conformance merge); duration is the longest shard's",
        plan.count
    ));
    for (index, (file, r)) in &by_index {
        env.notes.push(format!(
            "shard {index}/{}: {} scenario(s), {} ms, started {} on {} ({} cpus) [{file}]",
            plan.count,
            r.scenarios.len(),
            r.duration_ms,
            r.started_at,
            r.environment.hostname.as_deref().unwrap_or("?"),
            r.environment.cpus,
        ));
    }
    merged.grade();
    Ok(merged)
}

/// Checks `r` (from `file`) is a shard of the same run as `first`.
fn same_run(file: &str, r: &Report, first_file: &str, first: &Report) -> Result<(), MergeError> {
    let (Some(shard), Some(plan)) = (&r.shard, &first.shard) else {
        return Err(MergeError::NotSharded {
            file: file.to_owned(),
        });
    };
    let (file, first_file) = (file.to_owned(), first_file.to_owned());
    if r.harness != first.harness {
        return Err(MergeError::HarnessMismatch {
            file,
            first: first_file,
            theirs: format!("{} {}", r.harness.name, r.harness.version),
            ours: format!("{} {}", first.harness.name, first.harness.version),
        });
    }
    let (a, b) = (&r.proxy, &first.proxy);
    let fields: [(&'static str, String, String); 6] = [
        ("name", format!("{:?}", a.name), format!("{:?}", b.name)),
        (
            "version",
            format!("{:?}", a.version),
            format!("{:?}", b.version),
        ),
        (
            "command",
            format!("{:?}", a.command),
            format!("{:?}", b.command),
        ),
        (
            "features",
            format!("{:?}", a.features),
            format!("{:?}", b.features),
        ),
        (
            "bounds",
            format!("{:?}", a.bounds),
            format!("{:?}", b.bounds),
        ),
        (
            "xds_tls_mode",
            format!("{:?}", a.xds_tls_mode),
            format!("{:?}", b.xds_tls_mode),
        ),
    ];
    if let Some((field, theirs, ours)) = fields.into_iter().find(|(_, t, o)| t != o) {
        return Err(MergeError::ProxyMismatch {
            file,
            first: first_file,
            field,
            theirs,
            ours,
        });
    }
    if r.seed != first.seed {
        return Err(MergeError::SeedMismatch {
            file,
            first: first_file,
            theirs: r.seed,
            ours: first.seed,
        });
    }
    let settings = [
        ("repeat", r.repeat.to_string(), first.repeat.to_string()),
        (
            "allow_flaky",
            r.allow_flaky.to_string(),
            first.allow_flaky.to_string(),
        ),
    ];
    if let Some((field, theirs, ours)) = settings.into_iter().find(|(_, t, o)| t != o) {
        return Err(MergeError::SettingsMismatch {
            file,
            first: first_file,
            field,
            theirs,
            ours,
        });
    }
    if shard.count != plan.count {
        return Err(MergeError::ShardCountMismatch {
            file,
            first: first_file,
            index: shard.index,
            theirs: shard.count,
            ours: plan.count,
        });
    }
    let what = if shard.planned != plan.planned {
        "the planned scenarios differ"
    } else if shard.claimed != plan.claimed {
        "the claimed profiles differ"
    } else {
        return Ok(());
    };
    Err(MergeError::SelectionMismatch {
        file,
        first: first_file,
        what: what.to_owned(),
    })
}

/// The reports by shard index, each index `1..=count` exactly once.
fn by_index(
    shards: &[(String, Report)],
    count: u32,
) -> Result<BTreeMap<u32, &(String, Report)>, MergeError> {
    let mut by_index = BTreeMap::new();
    for entry @ (file, r) in shards {
        let index = r.shard.as_ref().map_or(0, |s| s.index);
        if index == 0 || index > count {
            return Err(MergeError::InvalidShard {
                file: file.clone(),
                index,
                count,
            });
        }
        if let Some((other, _)) = by_index.insert(index, entry) {
            return Err(MergeError::ShardDuplicate {
                index,
                count,
                file: other.clone(),
                other: file.clone(),
            });
        }
    }
    let missing: Vec<u32> = (1..=count).filter(|i| !by_index.contains_key(i)).collect();
    if !missing.is_empty() {
        return Err(MergeError::ShardMissing { missing, count });
    }
    Ok(by_index)
}

/// Checks the report's scenarios are exactly the ids its shard claims, each once.
fn holds_its_own(file: &str, r: &Report, mine: &[String]) -> Result<(), MergeError> {
    let want: BTreeSet<&str> = mine.iter().map(String::as_str).collect();
    let mut seen = BTreeSet::new();
    let mut unexpected = Vec::new();
    for s in &r.scenarios {
        if !want.contains(s.id.as_str()) || !seen.insert(s.id.as_str()) {
            unexpected.push(s.id.clone());
        }
    }
    let missing: Vec<String> = want.difference(&seen).map(|id| (*id).to_owned()).collect();
    if missing.is_empty() && unexpected.is_empty() {
        return Ok(());
    }
    Err(MergeError::ShardIncomplete {
        file: file.to_owned(),
        missing,
        unexpected,
    })
}

#[cfg(test)]
mod tests;
