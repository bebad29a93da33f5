//! `--shard K/N` parsing and the partition: every scenario in exactly one shard for any N, the
//! same partition whatever the input order, and a makespan within the bounds of
//! longest-processing-time scheduling.

use std::collections::BTreeMap;

use proptest::prelude::*;

use super::*;

#[test]
fn shard_specs_parse_and_bad_ones_name_the_fix() {
    assert_eq!("2/3".parse(), Ok(ShardSpec { index: 2, count: 3 }));
    assert_eq!(" 1 / 1 ".parse(), Ok(ShardSpec { index: 1, count: 1 }));
    for (bad, why) in [
        ("0/3", "counts from 1"),
        ("4/3", "larger than N"),
        ("1/0", "at least 1"),
        ("3", "is not K/N"),
        ("a/3", "K in"),
        ("1/-2", "N in"),
        ("", "is not K/N"),
    ] {
        let err = bad.parse::<ShardSpec>().unwrap_err();
        assert!(err.contains(why), "{bad}: {err}");
        assert!(err.contains("e.g. --shard 1/3"), "{bad}: {err}");
    }
}

#[test]
fn heaviest_first_into_the_least_loaded_shard() {
    let items = [("a", 5), ("b", 4), ("c", 3), ("d", 3), ("e", 3)];
    // a->0, b->1, c->1 (4<5), d->0 (5<7), e->0 (8 == 7? no: 7 < 8 -> 1).
    assert_eq!(partition(&items, 2), [0, 1, 1, 0, 1]);
    assert_eq!(partition(&items, 1), [0; 5]);
    assert_eq!(partition(&[], 3), Vec::<u32>::new());
}

fn loads(items: &[(String, u64)], count: u32) -> Vec<u64> {
    let refs: Vec<(&str, u64)> = items.iter().map(|(id, w)| (id.as_str(), *w)).collect();
    let mut load = vec![0; count as usize];
    for (i, k) in partition(&refs, count).into_iter().enumerate() {
        load[k as usize] += refs[i].1;
    }
    load
}

/// The optimal makespan, by trying every assignment (small inputs only).
fn optimum(weights: &[u64], count: u32) -> u64 {
    let n = weights.len();
    let mut best = u64::MAX;
    let total = (count as usize).pow(u32::try_from(n).unwrap());
    for code in 0..total {
        let mut load = vec![0; count as usize];
        let mut c = code;
        for w in weights {
            load[c % count as usize] += w;
            c /= count as usize;
        }
        best = best.min(load.into_iter().max().unwrap_or(0));
    }
    best
}

fn distinct_items(max: usize) -> impl Strategy<Value = Vec<(String, u64)>> {
    prop::collection::btree_map("[a-z][a-z0-9-]{0,8}", 0u64..60_000, 0..max)
        .prop_map(|m| m.into_iter().collect())
}

proptest! {
    #[test]
    fn every_item_in_exactly_one_shard_whatever_the_order(
        items in distinct_items(60),
        count in 1u32..10,
        rotate in any::<usize>(),
        reverse in any::<bool>(),
    ) {
        let refs: Vec<(&str, u64)> = items.iter().map(|(id, w)| (id.as_str(), *w)).collect();
        let shard_of = partition(&refs, count);
        prop_assert_eq!(shard_of.len(), items.len());
        prop_assert!(shard_of.iter().all(|k| *k < count));
        // The same set in another order: every id lands in the same shard.
        let mut shuffled = refs.clone();
        if !shuffled.is_empty() {
            let r = rotate % shuffled.len();
            shuffled.rotate_left(r);
        }
        if reverse {
            shuffled.reverse();
        }
        let again = partition(&shuffled, count);
        let by_id: BTreeMap<&str, u32> = refs.iter().map(|(id, _)| *id).zip(shard_of).collect();
        for ((id, _), k) in shuffled.iter().zip(again) {
            prop_assert_eq!(by_id.get(id), Some(&k), "{} moved", id);
        }
    }

    /// Graham's list-scheduling bound: makespan <= total/N + (1 - 1/N) * heaviest, and never
    /// below the trivial lower bound.
    #[test]
    fn makespan_within_the_list_scheduling_bound(items in distinct_items(60), count in 1u32..10) {
        let load = loads(&items, count);
        let makespan = load.iter().copied().max().unwrap_or(0);
        let total: u64 = items.iter().map(|(_, w)| w).sum();
        let heaviest = items.iter().map(|(_, w)| *w).max().unwrap_or(0);
        let n = u64::from(count);
        prop_assert!(makespan * n <= total + (n - 1) * heaviest, "{load:?}");
        prop_assert!(makespan * n >= total);
    }

    /// LPT's own bound against the true optimum: makespan <= (4/3 - 1/(3N)) * OPT.
    #[test]
    fn makespan_within_the_lpt_bound_of_the_optimum(items in distinct_items(9), count in 1u32..4) {
        let makespan = loads(&items, count).into_iter().max().unwrap_or(0);
        let weights: Vec<u64> = items.iter().map(|(_, w)| *w).collect();
        let opt = optimum(&weights, count);
        let n = u64::from(count);
        // makespan <= (4N - 1) / (3N) * OPT, in integers.
        prop_assert!(makespan * 3 * n <= (4 * n - 1) * opt, "{makespan} vs optimum {opt}");
    }
}

#[test]
fn the_shards_of_the_catalogue_hold_every_planned_scenario_once_in_plan_order() {
    let sel = crate::plan::catalogue::Selection {
        skip: vec!["ca-*".into()],
        ..Default::default()
    };
    let plan = crate::plan::catalogue::select(crate::plan::catalogue::builtin(), &sel);
    let ids: Vec<String> = plan.iter().map(|p| p.scenario().id.clone()).collect();
    let table = Durations::recorded().unwrap();
    for count in 1..=12 {
        let mut seen: Vec<String> = Vec::new();
        for index in 1..=count {
            let spec = ShardSpec { index, count };
            let (mine, info) = select(plan.clone(), spec, &table, vec![]);
            assert_eq!(info.planned, ids);
            let mine_ids: Vec<String> = mine.iter().map(|p| p.scenario().id.clone()).collect();
            assert_eq!(info.mine, mine_ids);
            // In plan order, and a skipped scenario stays skipped.
            let order: Vec<usize> = mine_ids
                .iter()
                .filter_map(|id| ids.iter().position(|i| i == id))
                .collect();
            assert!(order.windows(2).all(|w| w[0] < w[1]), "{count}: {order:?}");
            for p in &mine {
                let skipped = matches!(p, Planned::Skip(_));
                assert_eq!(skipped, p.scenario().id.starts_with("ca-"));
            }
            seen.extend(mine_ids);
        }
        seen.sort();
        let mut want = ids.clone();
        want.sort();
        assert_eq!(seen, want, "{count} shards: each scenario exactly once");
    }
}
