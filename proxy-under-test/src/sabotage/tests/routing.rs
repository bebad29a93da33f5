//! The L7 outbound sabotages, each against the reference hooks: routes, splits, subsets,
//! retries, timeouts, rewrite, headers, limits, outlier detection, hash policy, stale routes.

use std::time::Duration;

use serde_json::json;

use crate::agent::types::CompiledChain;
use crate::route::limits::Outlier;
use crate::route::{Lb, LbPolicy, RouteTable};
use crate::sabotage::{Hooks, Sabotage};

fn hooks(s: Sabotage) -> Hooks {
    Hooks::new(s.into())
}

fn reference() -> Hooks {
    Hooks::default()
}

fn table() -> RouteTable {
    let chain: CompiledChain = serde_json::from_value(json!({
        "StartNode": "router:web",
        "Nodes": {
            "router:web": {"Type": "router", "Routes": [
                {"Definition": {"Match": {"HTTP": {"PathPrefix": "/admin"}}}, "NextNode": "resolver:admin"},
                {"Definition": {"Match": {"HTTP": {"PathPrefix": "/"}}}, "NextNode": "resolver:web"}
            ]},
            "resolver:admin": {"Type": "resolver", "Resolver": {"Target": "admin"}},
            "resolver:web": {"Type": "resolver", "Resolver": {"Target": "web"}}
        }
    }))
    .unwrap();
    RouteTable::from_chain(&chain).unwrap()
}

#[test]
fn ignore_routes_sends_everything_to_the_default_route() {
    let t = table();
    assert_eq!(reference().route_index(&t, Some(0)), Some(0));
    assert_eq!(
        hooks(Sabotage::IgnoreRoutes).route_index(&t, Some(0)),
        Some(1)
    );
    assert_eq!(hooks(Sabotage::IgnoreRoutes).route_index(&t, None), Some(1));
}

#[test]
fn ignore_splits_always_rolls_the_first_split() {
    assert_eq!(reference().split_roll(9_000), 9_000);
    assert_eq!(hooks(Sabotage::IgnoreSplits).split_roll(9_000), 0);
}

#[test]
fn ignore_subsets_drops_the_subset_filter() {
    let f = "Service.Meta.version == v2";
    assert_eq!(reference().subset_filter(f), f);
    assert_eq!(hooks(Sabotage::IgnoreSubsets).subset_filter(f), "");
}

#[test]
fn no_retries_and_retry_unbounded_change_the_retry_count() {
    assert_eq!(reference().max_retries(2), 2);
    assert_eq!(hooks(Sabotage::NoRetries).max_retries(2), 0);
    assert_eq!(hooks(Sabotage::RetryUnbounded).max_retries(2), 10);
    assert_eq!(
        hooks(Sabotage::RetryUnbounded).max_retries(0),
        0,
        "no policy, no retries"
    );
}

#[test]
fn ignore_timeouts_has_no_route_timeout() {
    let t = Duration::from_millis(300);
    assert_eq!(reference().route_timeout(t), Some(t));
    assert_eq!(hooks(Sabotage::IgnoreTimeouts).route_timeout(t), None);
}

#[test]
fn ignore_prefix_rewrite_and_header_manipulation_skip_them() {
    assert!(reference().applies_prefix_rewrite());
    assert!(!hooks(Sabotage::IgnorePrefixRewrite).applies_prefix_rewrite());
    assert!(reference().applies_header_ops());
    assert!(!hooks(Sabotage::IgnoreHeaderManipulation).applies_header_ops());
}

#[test]
fn ignore_limits_is_unlimited() {
    assert_eq!(reference().in_flight_limit(2), 2);
    assert_eq!(hooks(Sabotage::IgnoreLimits).in_flight_limit(2), usize::MAX);
}

#[test]
fn no_outlier_detection_drops_it() {
    let o = Outlier {
        consecutive_5xx: 2,
        base_ejection_time: Duration::from_secs(30),
        max_ejection_percent: 50,
        enforcing: 100,
    };
    assert_eq!(reference().outlier(Some(o)), Some(o));
    assert_eq!(hooks(Sabotage::NoOutlierDetection).outlier(Some(o)), None);
}

#[test]
fn ignore_hash_policy_round_robins() {
    let lb = Lb {
        policy: LbPolicy::Hash,
        hash: Vec::new(),
        choice_count: 2,
    };
    assert_eq!(reference().lb(&lb), lb);
    assert_eq!(
        hooks(Sabotage::IgnoreHashPolicy).lb(&lb).policy,
        LbPolicy::RoundRobin
    );
    let lr = Lb {
        policy: LbPolicy::LeastRequest,
        hash: Vec::new(),
        choice_count: 2,
    };
    assert_eq!(
        hooks(Sabotage::IgnoreHashPolicy).lb(&lr),
        lr,
        "other policies stay"
    );
}

#[test]
fn ignore_lb_policy_round_robins_every_policy() {
    for policy in [LbPolicy::LeastRequest, LbPolicy::Hash, LbPolicy::RoundRobin] {
        let lb = Lb {
            policy,
            hash: Vec::new(),
            choice_count: 5,
        };
        assert_eq!(reference().lb(&lb), lb);
        assert_eq!(
            hooks(Sabotage::IgnoreLbPolicy).lb(&lb).policy,
            LbPolicy::RoundRobin
        );
    }
}

#[test]
fn stale_routes_pins_the_connections_snapshot() {
    assert!(!reference().pin_routes());
    assert!(hooks(Sabotage::StaleRoutes).pin_routes());
}
