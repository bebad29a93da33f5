//! What a discovery-chain cluster gets beyond its name and endpoints, as Consul's
//! `agent/xds/clusters.go` sets it: `makeThresholdsIfNeeded` (circuit breakers from the
//! upstream's `Limits`), `config.ToOutlierDetection` (outlier detection from its
//! `PassiveHealthCheck`) and `injectLBToCluster` (the resolver node's `LoadBalancer` policy).

use envoy_types::pb::envoy::config::cluster::v3::{
    CircuitBreakers, Cluster, OutlierDetection,
    circuit_breakers::Thresholds,
    cluster::{LbConfig, LbPolicy, LeastRequestLbConfig, RingHashLbConfig},
};
use envoy_types::pb::google::protobuf::{UInt32Value, UInt64Value};

use super::clusters::duration_ns;
use super::upstream_config::{Limits, PassiveHealthCheck};
use crate::model::chain::LoadBalancer;

/// `CircuitBreakers{Thresholds: makeThresholdsIfNeeded(limits)}`: no thresholds without
/// `Limits`, else one threshold carrying only the limits that are set (Envoy's defaults for
/// the rest). `MaxConcurrentRequests` is Envoy's `max_requests`.
pub(crate) fn circuit_breakers(limits: Option<&Limits>) -> CircuitBreakers {
    let Some(l) = limits else {
        return CircuitBreakers::default();
    };
    let u32v = |v: Option<i64>| {
        v.map(|v| UInt32Value {
            // Go's `uint32(int)` conversion wraps; validation keeps these non-negative.
            value: v as u32,
        })
    };
    CircuitBreakers {
        thresholds: vec![Thresholds {
            max_connections: u32v(l.max_connections),
            max_pending_requests: u32v(l.max_pending_requests),
            max_requests: u32v(l.max_concurrent_requests),
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// `ToOutlierDetection(p)`: empty (Envoy's defaults) without a passive health check; else
/// `interval` and `consecutive_5xx` (from `MaxFailures`) when non-zero, and
/// `enforcing_consecutive_5xx`, `max_ejection_percent`, `base_ejection_time` when set.
pub(crate) fn outlier_detection(p: Option<&PassiveHealthCheck>) -> OutlierDetection {
    let Some(p) = p else {
        return OutlierDetection::default();
    };
    OutlierDetection {
        interval: (p.interval != 0).then(|| duration_ns(p.interval)),
        consecutive_5xx: (p.max_failures != 0).then_some(UInt32Value {
            value: p.max_failures,
        }),
        enforcing_consecutive_5xx: p
            .enforcing_consecutive_5xx
            .map(|value| UInt32Value { value }),
        max_ejection_percent: p.max_ejection_percent.map(|value| UInt32Value { value }),
        base_ejection_time: p.base_ejection_time.map(duration_ns),
        ..Default::default()
    }
}

/// `injectLBToCluster`: the policy (`least_request` with its choice count, `round_robin`,
/// `random`, `ring_hash` with both ring sizes written even when only one is set, as Consul
/// does, `maglev`); an empty policy leaves Envoy's default. Unknown policies cannot pass
/// resolver validation and are left out.
pub(crate) fn inject_lb(lb: Option<&LoadBalancer>, c: &mut Cluster) {
    let Some(lb) = lb else { return };
    match lb.policy.as_str() {
        "least_request" => {
            c.lb_policy = LbPolicy::LeastRequest as i32;
            if let Some(cfg) = &lb.least_request_config {
                c.lb_config = Some(LbConfig::LeastRequestLbConfig(LeastRequestLbConfig {
                    choice_count: Some(UInt32Value {
                        value: cfg.choice_count,
                    }),
                    ..Default::default()
                }));
            }
        }
        "round_robin" => c.lb_policy = LbPolicy::RoundRobin as i32,
        "random" => c.lb_policy = LbPolicy::Random as i32,
        "ring_hash" => {
            c.lb_policy = LbPolicy::RingHash as i32;
            if let Some(cfg) = &lb.ring_hash_config {
                c.lb_config = Some(LbConfig::RingHashLbConfig(RingHashLbConfig {
                    minimum_ring_size: Some(UInt64Value {
                        value: cfg.minimum_ring_size,
                    }),
                    maximum_ring_size: Some(UInt64Value {
                        value: cfg.maximum_ring_size,
                    }),
                    ..Default::default()
                }));
            }
        }
        "maglev" => c.lb_policy = LbPolicy::Maglev as i32,
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::chain::{LeastRequestConfig, RingHashConfig};

    #[test]
    fn thresholds_only_when_limits_are_set() {
        assert!(circuit_breakers(None).thresholds.is_empty());
        let cb = circuit_breakers(Some(&Limits {
            max_connections: Some(10),
            max_pending_requests: None,
            max_concurrent_requests: Some(0),
        }));
        assert_eq!(cb.thresholds.len(), 1);
        let t = &cb.thresholds[0];
        assert_eq!(t.max_connections, Some(UInt32Value { value: 10 }));
        assert_eq!(t.max_pending_requests, None);
        assert_eq!(t.max_requests, Some(UInt32Value { value: 0 }));
    }

    #[test]
    fn outlier_detection_follows_to_outlier_detection() {
        assert_eq!(outlier_detection(None), OutlierDetection::default());
        let od = outlier_detection(Some(&PassiveHealthCheck {
            interval: 10_000_000_000,
            max_failures: 0,
            enforcing_consecutive_5xx: Some(0),
            max_ejection_percent: None,
            base_ejection_time: Some(1_500_000_000),
        }));
        assert_eq!(od.interval, Some(duration_ns(10_000_000_000)));
        assert_eq!(od.consecutive_5xx, None, "MaxFailures 0 leaves Envoy's 5");
        assert_eq!(od.enforcing_consecutive_5xx, Some(UInt32Value { value: 0 }));
        assert_eq!(od.max_ejection_percent, None);
        assert_eq!(od.base_ejection_time, Some(duration_ns(1_500_000_000)));
    }

    #[test]
    fn lb_policies_map_to_envoy() {
        let mut c = Cluster::default();
        inject_lb(None, &mut c);
        assert_eq!(c, Cluster::default());
        for (policy, want) in [
            ("", LbPolicy::RoundRobin),
            ("round_robin", LbPolicy::RoundRobin),
            ("random", LbPolicy::Random),
            ("maglev", LbPolicy::Maglev),
            ("least_request", LbPolicy::LeastRequest),
            ("ring_hash", LbPolicy::RingHash),
        ] {
            let mut c = Cluster::default();
            let lb = LoadBalancer {
                policy: policy.into(),
                ..Default::default()
            };
            inject_lb(Some(&lb), &mut c);
            assert_eq!(c.lb_policy, want as i32, "{policy}");
            assert_eq!(c.lb_config, None);
        }
        let mut c = Cluster::default();
        let lb = LoadBalancer {
            policy: "ring_hash".into(),
            ring_hash_config: Some(RingHashConfig {
                minimum_ring_size: 1024,
                maximum_ring_size: 0,
            }),
            ..Default::default()
        };
        inject_lb(Some(&lb), &mut c);
        let Some(LbConfig::RingHashLbConfig(rh)) = c.lb_config else {
            panic!("ring hash config")
        };
        assert_eq!(rh.minimum_ring_size, Some(UInt64Value { value: 1024 }));
        assert_eq!(rh.maximum_ring_size, Some(UInt64Value { value: 0 }));
        let mut c = Cluster::default();
        let lb = LoadBalancer {
            policy: "least_request".into(),
            least_request_config: Some(LeastRequestConfig { choice_count: 3 }),
            ..Default::default()
        };
        inject_lb(Some(&lb), &mut c);
        let Some(LbConfig::LeastRequestLbConfig(lr)) = c.lb_config else {
            panic!("least request config")
        };
        assert_eq!(lr.choice_count, Some(UInt32Value { value: 3 }));
    }
}
