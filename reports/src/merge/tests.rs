//! Merging shard reports: a split of the sample report merges back into the same verdicts in
//! any order, and every way of not being one run is refused with its own error name.

use proptest::prelude::*;

use super::*;
use crate::fixture::sample_report;
use crate::model::{Outcome, Profile, ShardInfo};

/// The sample report cut into `count` shards, scenario `i` in shard `i % count + 1`.
fn split(count: u32) -> Vec<(String, Report)> {
    let whole = sample_report();
    let planned: Vec<String> = whole.scenarios.iter().map(|s| s.id.clone()).collect();
    (1..=count)
        .map(|index| {
            let mut r = whole.clone();
            r.scenarios = whole
                .scenarios
                .iter()
                .enumerate()
                .filter(|(i, _)| u32::try_from(*i).unwrap() % count + 1 == index)
                .map(|(_, s)| s.clone())
                .collect();
            r.duration_ms = u64::from(index) * 1000;
            r.started_at = format!("2026-03-14T09:2{index}:00Z");
            r.shard = Some(ShardInfo {
                index,
                count,
                planned: planned.clone(),
                mine: r.scenarios.iter().map(|s| s.id.clone()).collect(),
                claimed: vec![Profile::Core, Profile::Extended],
            });
            // As the runner does: a shard says so in its notes.
            let note = r.shard.as_ref().map(ShardInfo::note).unwrap_or_default();
            r.environment.notes.push(note);
            (format!("shard-{index}/report.json"), r.graded())
        })
        .collect()
}

fn kind(shards: &[(String, Report)]) -> &'static str {
    merge(shards).unwrap_err().kind()
}

#[test]
fn three_shards_merge_into_the_unsharded_verdicts() {
    let whole = sample_report();
    let merged = merge(&split(3)).unwrap();
    assert_eq!(merged.scenarios, whole.scenarios);
    assert_eq!(merged.profiles, whole.profiles);
    assert_eq!(merged.shard, None);
    assert_eq!(merged.duration_ms, 3000, "the longest shard's");
    assert_eq!(merged.started_at, "2026-03-14T09:21:00Z", "the earliest");
    for p in Profile::ALL {
        assert_eq!(merged.gate(p), whole.gate(p), "{p}");
    }
    let notes = &merged.environment.notes;
    assert!(notes.iter().any(|n| n.starts_with("merged from 3 shards")));
    assert!(
        !notes.iter().any(|n| n.contains("merge joins the shards")),
        "the first shard's own note is dropped: {notes:?}"
    );
    assert_eq!(
        notes.first(),
        whole.environment.notes.first(),
        "the run's notes stay"
    );
    assert!(
        notes
            .iter()
            .any(|n| n.starts_with("shard 2/3: 3 scenario(s), 2000 ms")),
        "{notes:?}"
    );
    // The merged report is a plain report: it reads back and is not a shard any more.
    let back = Report::from_json(&crate::to_json(&merged)).unwrap();
    assert_eq!(back, merged);
    assert_eq!(
        kind(&[("merged.json".into(), merged)]),
        "not_a_shard_report"
    );
}

#[test]
fn an_empty_shard_is_fine() {
    // 9 scenarios over 12 shards: three shards hold nothing.
    let merged = merge(&split(12)).unwrap();
    assert_eq!(merged.scenarios, sample_report().scenarios);
    assert_eq!(
        merged.profile(Profile::Core).map(|p| p.outcome),
        Some(Outcome::Failure)
    );
}

#[test]
fn a_missing_or_doubled_shard_is_refused() {
    assert_eq!(kind(&[]), "no_reports");
    let mut shards = split(3);
    shards.remove(1);
    let err = merge(&shards).unwrap_err();
    assert_eq!(
        err,
        MergeError::ShardMissing {
            missing: vec![2],
            count: 3
        }
    );
    assert!(
        err.to_string().contains("shard(s) [2] of 3 missing"),
        "{err}"
    );

    let mut shards = split(3);
    shards.push(shards[0].clone());
    assert_eq!(kind(&shards), "shard_duplicate");

    let mut shards = split(3);
    if let Some(s) = shards[0].1.shard.as_mut() {
        s.index = 4;
    }
    assert_eq!(kind(&shards), "invalid_shard");
}

#[test]
fn different_runs_are_refused() {
    let mut shards = split(3);
    shards[1].1.seed += 1;
    assert_eq!(kind(&shards), "seed_mismatch");

    let mut shards = split(3);
    shards[1].1.repeat = 3;
    assert_eq!(kind(&shards), "settings_mismatch");
    let mut shards = split(3);
    shards[2].1.allow_flaky = true;
    assert_eq!(kind(&shards), "settings_mismatch");

    let mut shards = split(3);
    shards[2].1.harness.version = "9.9.9".into();
    assert_eq!(kind(&shards), "harness_mismatch");

    for field in [
        "name",
        "version",
        "command",
        "features",
        "bounds",
        "xds_tls_mode",
    ] {
        let mut shards = split(3);
        let p = &mut shards[2].1.proxy;
        match field {
            "name" => p.name = "other".into(),
            "version" => p.version = None,
            "command" => p.command.push_str(" -v"),
            "features" => p.features.pop().map_or((), drop),
            "bounds" => {
                p.bounds.insert("intention-change".into(), 1);
            }
            _ => p.xds_tls_mode = Some("sds".into()),
        }
        let err = merge(&shards).unwrap_err();
        assert_eq!(err.kind(), "proxy_mismatch", "{field}");
        assert!(
            err.to_string().contains(&format!("`proxy.{field}`")),
            "{err}"
        );
    }

    let mut shards = split(3);
    if let Some(s) = shards[1].1.shard.as_mut() {
        s.count = 4;
    }
    assert_eq!(kind(&shards), "shard_count_mismatch");

    let mut shards = split(3);
    if let Some(s) = shards[1].1.shard.as_mut() {
        s.planned.pop();
    }
    assert_eq!(kind(&shards), "selection_mismatch");

    let mut shards = split(3);
    if let Some(s) = shards[1].1.shard.as_mut() {
        s.claimed.pop();
    }
    assert_eq!(kind(&shards), "selection_mismatch");

    let mut shards = split(3);
    shards[0].1.shard = None;
    assert_eq!(kind(&shards), "not_a_shard_report");
}

#[test]
fn shards_that_do_not_partition_the_plan_are_refused() {
    // Shard 2 also ran one of shard 1's scenarios (another durations table, say).
    let mut shards = split(3);
    let stolen = shards[0].1.scenarios[0].clone();
    shards[1].1.scenarios.push(stolen.clone());
    if let Some(s) = shards[1].1.shard.as_mut() {
        s.mine.push(stolen.id.clone());
    }
    let err = merge(&shards).unwrap_err();
    assert_eq!(err.kind(), "scenario_in_two_shards");
    assert!(err.to_string().contains(&stolen.id), "{err}");

    // A scenario in nobody's share.
    let mut shards = split(3);
    shards[0].1.scenarios.remove(0);
    if let Some(s) = shards[0].1.shard.as_mut() {
        s.mine.remove(0);
    }
    assert_eq!(kind(&shards), "plan_not_covered");

    // A report that lost one of its own scenarios, or holds one twice.
    let mut shards = split(3);
    shards[0].1.scenarios.remove(0);
    assert_eq!(kind(&shards), "shard_incomplete");
    let mut shards = split(3);
    let again = shards[0].1.scenarios[0].clone();
    shards[0].1.scenarios.push(again);
    assert_eq!(kind(&shards), "shard_incomplete");
}

proptest! {
    /// Any number of shards, given in any order, merges into the unsharded scenarios and grades.
    #[test]
    fn any_split_in_any_order_merges_back(count in 1u32..12, order in any::<u64>()) {
        let mut shards = split(count);
        // A deterministic shuffle from `order`.
        let mut seed = order;
        for i in (1..shards.len()).rev() {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            let j = usize::try_from(seed >> 33).unwrap() % (i + 1);
            shards.swap(i, j);
        }
        let merged = merge(&shards).unwrap();
        let whole = sample_report();
        prop_assert_eq!(merged.scenarios, whole.scenarios);
        prop_assert_eq!(merged.profiles, whole.profiles);
        prop_assert_eq!(merged.duration_ms, u64::from(count) * 1000);
    }
}
