//! L7 traffic management as Consul renders it: subset clusters (SNI-named, EDS filtered by the
//! subset's filter and `OnlyPassing`), router destinations (rewrite, timeouts, retries, header
//! modifiers), splits with header modifiers, hash-based load balancing, and the upstream's
//! circuit breakers and outlier detection from service-defaults `UpstreamConfig`. Each shape
//! is also put before `envoy --mode validate`.

use envoy_types::pb::envoy::config::cluster::v3::{
    Cluster,
    cluster::{LbConfig, LbPolicy},
};
use envoy_types::pb::envoy::config::core::v3::HealthStatus;
use envoy_types::pb::envoy::config::endpoint::v3::{ClusterLoadAssignment, lb_endpoint};
use envoy_types::pb::envoy::config::listener::v3::Listener;
use envoy_types::pb::envoy::config::route::v3::{Route, RouteAction, RouteConfiguration, route};
use envoy_types::pb::envoy::extensions::filters::network::tcp_proxy::v3::{TcpProxy, tcp_proxy};
use envoy_types::pb::google::protobuf::{Duration, UInt32Value, UInt64Value};
use serde_json::{Value, json};

use super::envoy::validate;
use super::{build, get, proxy, sim};
use crate::state::control::Control;
use crate::state::store::CheckUpdate;
use crate::xds::types::{self, Resources, TlsMode};

/// Registers a `db` sidecar `db-<name>` on `port` with `Meta` and `Tags`, TTL check passing.
pub(super) fn db_instance(c: &Control, name: &str, port: u16, meta: &Value, tags: &Value) {
    c.register(&json!({
        "Kind": "connect-proxy", "ID": format!("db-{name}"), "Name": "db-sidecar-proxy",
        "Port": port, "Meta": meta, "Tags": tags,
        "Proxy": {"DestinationServiceName": "db", "LocalServicePort": 5000},
        "Check": {"CheckID": format!("db-{name}-check"), "TTL": "1h", "Status": "passing"}
    }))
    .expect("instance registers");
}

pub(super) fn entries(c: &Control, list: &[Value]) {
    for e in list {
        c.upsert_config_entry(e).expect("entry");
    }
}

pub(super) fn sni(c: &Control, subset: &str, svc: &str) -> String {
    let td = c.trust_domain();
    if subset.is_empty() {
        format!("{svc}.default.dc1.internal.{td}")
    } else {
        format!("{subset}.{svc}.default.dc1.internal.{td}")
    }
}

/// The ports of a cluster's endpoints, with whether each is healthy.
pub(super) fn ports(r: &Resources, cluster: &str) -> Vec<(u32, bool)> {
    let cla: ClusterLoadAssignment = get(r, types::ENDPOINT, cluster);
    let mut out: Vec<_> = cla.endpoints[0]
        .lb_endpoints
        .iter()
        .map(|lb| {
            let Some(lb_endpoint::HostIdentifier::Endpoint(ep)) = &lb.host_identifier else {
                panic!("endpoint")
            };
            let text = format!("{:?}", ep.address);
            let port = text
                .split("PortValue(")
                .nth(1)
                .and_then(|s| s.split(')').next())
                .and_then(|s| s.parse().ok())
                .expect("port");
            (port, lb.health_status == HealthStatus::Healthy as i32)
        })
        .collect();
    out.sort_unstable();
    out
}

pub(super) fn only_route(r: &Resources) -> Vec<Route> {
    let rc: RouteConfiguration = get(r, types::ROUTE, "db");
    assert_eq!(rc.validate_clusters.map(|b| b.value), Some(true));
    rc.virtual_hosts[0].routes.clone()
}

pub(super) fn action(r: &Route) -> &RouteAction {
    match &r.action {
        Some(route::Action::Route(a)) => a,
        other => panic!("route action {other:?}"),
    }
}

pub(super) fn secs(s: i64) -> Option<Duration> {
    Some(Duration {
        seconds: s,
        nanos: 0,
    })
}

/// `db` with instances v1 (21011, tag canary), v2 (21012), v3 (21013) and the untagged
/// `db-proxy` (21001); subsets v1, v2 (`OnlyPassing`) and canary (by tag); HTTP.
fn subset_sim() -> Control {
    let c = sim();
    db_instance(
        &c,
        "v1",
        21011,
        &json!({"version": "v1"}),
        &json!(["canary"]),
    );
    db_instance(&c, "v2", 21012, &json!({"version": "v2"}), &json!([]));
    db_instance(&c, "v3", 21013, &json!({"version": "v3"}), &json!([]));
    entries(
        &c,
        &[
            json!({"Kind": "proxy-defaults", "Name": "global", "Config": {"protocol": "http"}}),
            json!({"Kind": "service-resolver", "Name": "db", "Subsets": {
                "v1": {"Filter": "Service.Meta.version == v1"},
                "v2": {"Filter": "Service.Meta.version == v2", "OnlyPassing": true},
                "canary": {"Filter": "\"canary\" in Service.Tags"}
            }}),
            json!({"Kind": "service-router", "Name": "db", "Routes": [
                {"Match": {"HTTP": {"PathPrefix": "/v1"}}, "Destination": {"ServiceSubset": "v1"}},
                {"Match": {"HTTP": {"PathPrefix": "/v2"}}, "Destination": {"ServiceSubset": "v2"}},
                {"Match": {"HTTP": {"Header": [{"Name": "x-canary", "Present": true}]}},
                 "Destination": {"ServiceSubset": "canary"}}
            ]}),
        ],
    );
    c
}

#[test]
#[cfg_attr(
    missing_envoy,
    ignore = "needs Envoy 1.40: run scripts/install-envoy.sh or set ENVOY_BIN (CONFORMANCE_REQUIRE_ENVOY=1 makes it a failure)"
)]
fn subset_clusters_hold_only_the_instances_their_filter_matches() {
    let c = subset_sim();
    let r = build(&c, TlsMode::Inline).resources;
    assert_eq!(ports(&r, &sni(&c, "v1", "db")), [(21011, true)]);
    assert_eq!(ports(&r, &sni(&c, "v2", "db")), [(21012, true)]);
    assert_eq!(ports(&r, &sni(&c, "canary", "db")), [(21011, true)]);
    // The router's catch-all goes to the service's default target: every instance.
    let all: Vec<u32> = ports(&r, &sni(&c, "", "db")).iter().map(|p| p.0).collect();
    assert_eq!(all, [21001, 21011, 21012, 21013]);
    // v3 matches no subset: no subset cluster lists it.
    for cla in r.of(types::ENDPOINT) {
        if cla.name.starts_with("v") || cla.name.starts_with("canary") {
            assert!(
                !ports(&r, &cla.name).iter().any(|p| p.0 == 21013),
                "{}",
                cla.name
            );
        }
    }
    // Every subset cluster is an EDS cluster of that name with the subset's SNI.
    for subset in ["v1", "v2", "canary"] {
        let cl: Cluster = get(&r, types::CLUSTER, &sni(&c, subset, "db"));
        assert_eq!(cl.alt_stat_name, sni(&c, subset, "db"));
        assert_eq!(super::upstream_tls(&cl).sni, sni(&c, subset, "db"));
    }
    validate("subset clusters", &r).expect("envoy accepts");
}

#[test]
fn only_passing_subset_marks_a_warning_instance_unhealthy() {
    let c = subset_sim();
    for check in ["db-v1-check", "db-v2-check"] {
        c.set_check(CheckUpdate {
            node: None,
            check_id: check.into(),
            status: "warning".into(),
            output: None,
        })
        .expect("check");
    }
    let r = build(&c, TlsMode::Inline).resources;
    assert_eq!(ports(&r, &sni(&c, "v2", "db")), [(21012, false)]);
    assert_eq!(ports(&r, &sni(&c, "v1", "db")), [(21011, true)]);
    assert!(ports(&r, &sni(&c, "", "db")).contains(&(21012, true)));
}

#[test]
fn a_subset_cluster_follows_instance_meta_changes() {
    let c = subset_sim();
    db_instance(&c, "v3", 21013, &json!({"version": "v1"}), &json!([]));
    let r = build(&c, TlsMode::Inline).resources;
    assert_eq!(
        ports(&r, &sni(&c, "v1", "db")),
        [(21011, true), (21013, true)]
    );
}

#[test]
#[cfg_attr(
    missing_envoy,
    ignore = "needs Envoy 1.40: run scripts/install-envoy.sh or set ENVOY_BIN (CONFORMANCE_REQUIRE_ENVOY=1 makes it a failure)"
)]
fn least_request_and_maglev_reach_the_cluster() {
    for (lb, want) in [
        (
            json!({"Policy": "least_request", "LeastRequestConfig": {"ChoiceCount": 4}}),
            LbPolicy::LeastRequest,
        ),
        (json!({"Policy": "maglev"}), LbPolicy::Maglev),
        (json!({"Policy": "random"}), LbPolicy::Random),
    ] {
        let c = sim();
        entries(
            &c,
            &[json!({"Kind": "service-resolver", "Name": "db", "LoadBalancer": lb})],
        );
        let r = build(&c, TlsMode::Inline).resources;
        let cl: Cluster = get(&r, types::CLUSTER, &sni(&c, "", "db"));
        assert_eq!(cl.lb_policy, want as i32);
        validate(&format!("lb {want:?}"), &r).expect("envoy accepts");
    }
}

#[test]
#[cfg_attr(
    missing_envoy,
    ignore = "needs Envoy 1.40: run scripts/install-envoy.sh or set ENVOY_BIN (CONFORMANCE_REQUIRE_ENVOY=1 makes it a failure)"
)]
fn upstream_config_sets_connect_timeout_circuit_breakers_and_outlier_detection() {
    let c = sim();
    entries(
        &c,
        &[
            json!({"Kind": "service-defaults", "Name": "web", "UpstreamConfig": {
                "Defaults": {"ConnectTimeoutMs": 2500,
                    "Limits": {"MaxConnections": 100, "MaxPendingRequests": 50},
                    "PassiveHealthCheck": {"Interval": "10s", "MaxFailures": 3,
                        "EnforcingConsecutive5xx": 100, "MaxEjectionPercent": 50,
                        "BaseEjectionTime": "30s"}},
                "Overrides": [{"Name": "db", "Limits": {"MaxConcurrentRequests": 7}}]
            }}),
        ],
    );
    let r = build(&c, TlsMode::Inline).resources;
    // A connect timeout from the upstream config is a compile override: the chain gets a
    // customization hash and its clusters are named `<hash>~<sni>` (`CustomizeClusterName`).
    let name = r
        .of(types::CLUSTER)
        .map(|x| x.name.clone())
        .find(|n| n.ends_with(&format!("~{}", sni(&c, "", "db"))))
        .expect("customized cluster");
    assert_eq!(name.split('~').next().map(str::len), Some(8), "{name}");
    let _: ClusterLoadAssignment = get(&r, types::ENDPOINT, &name);
    let l: Listener = get(&r, types::LISTENER, "db:127.0.0.1:9191");
    let tp: TcpProxy = super::decode(super::typed(&l.filter_chains[0].filters[0]));
    assert_eq!(
        tp.cluster_specifier,
        Some(tcp_proxy::ClusterSpecifier::Cluster(name.clone())),
        "the listener names the customized cluster"
    );
    let cl: Cluster = get(&r, types::CLUSTER, &name);
    assert_eq!(cl.alt_stat_name, name);
    assert_eq!(
        super::upstream_tls(&cl).sni,
        sni(&c, "", "db"),
        "SNI stays the target's"
    );
    assert_eq!(
        cl.connect_timeout,
        Some(Duration {
            seconds: 2,
            nanos: 500_000_000
        })
    );
    // The override's Limits replace the defaults' whole `limits` value.
    let cb = cl.circuit_breakers.expect("circuit breakers");
    assert_eq!(cb.thresholds.len(), 1);
    assert_eq!(
        cb.thresholds[0].max_requests,
        Some(UInt32Value { value: 7 })
    );
    assert_eq!(cb.thresholds[0].max_connections, None);
    assert_eq!(cb.thresholds[0].max_pending_requests, None);
    let od = cl.outlier_detection.expect("outlier detection");
    assert_eq!(od.interval, secs(10));
    assert_eq!(od.consecutive_5xx, Some(UInt32Value { value: 3 }));
    assert_eq!(
        od.enforcing_consecutive_5xx,
        Some(UInt32Value { value: 100 })
    );
    assert_eq!(od.max_ejection_percent, Some(UInt32Value { value: 50 }));
    assert_eq!(od.base_ejection_time, secs(30));
    validate("upstream limits and passive health check", &r).expect("envoy accepts");
}

#[test]
#[cfg_attr(
    missing_envoy,
    ignore = "needs Envoy 1.40: run scripts/install-envoy.sh or set ENVOY_BIN (CONFORMANCE_REQUIRE_ENVOY=1 makes it a failure)"
)]
fn failover_children_carry_the_upstream_policy() {
    let c = sim();
    proxy(&c, "db-backup", 21003);
    entries(
        &c,
        &[
            json!({"Kind": "service-defaults", "Name": "web", "UpstreamConfig": {
                "Defaults": {"Limits": {"MaxConnections": 9}}}}),
            json!({"Kind": "service-resolver", "Name": "db",
                "LoadBalancer": {"Policy": "least_request"},
                "Failover": {"*": {"Service": "db-backup"}}}),
        ],
    );
    let r = build(&c, TlsMode::Inline).resources;
    for i in 0..2 {
        let cl: Cluster = get(
            &r,
            types::CLUSTER,
            &format!("failover-target~{i}~{}", sni(&c, "", "db")),
        );
        assert_eq!(cl.lb_policy, LbPolicy::LeastRequest as i32);
        let cb = cl.circuit_breakers.expect("circuit breakers");
        assert_eq!(
            cb.thresholds[0].max_connections,
            Some(UInt32Value { value: 9 })
        );
    }
    let agg: Cluster = get(&r, types::CLUSTER, &sni(&c, "", "db"));
    assert_eq!(agg.lb_policy, LbPolicy::ClusterProvided as i32);
    assert!(agg.circuit_breakers.is_none());
    validate("failover with policy", &r).expect("envoy accepts");
}

/// Consul writes both ring sizes whenever `RingHashConfig` is set (`injectLBToCluster`), so a
/// config with only `MinimumRingSize` sends `maximum_ring_size: 0`, which Envoy refuses (the
/// real pair NACKs that cluster update).
#[test]
#[cfg_attr(
    missing_envoy,
    ignore = "needs Envoy 1.40: run scripts/install-envoy.sh or set ENVOY_BIN (CONFORMANCE_REQUIRE_ENVOY=1 makes it a failure)"
)]
fn ring_hash_with_only_a_minimum_is_sent_as_consul_sends_it_and_envoy_refuses_it() {
    let c = sim();
    entries(
        &c,
        &[
            json!({"Kind": "service-resolver", "Name": "db", "LoadBalancer": {
            "Policy": "ring_hash", "RingHashConfig": {"MinimumRingSize": 1024}}}),
        ],
    );
    let r = build(&c, TlsMode::Inline).resources;
    let cl: Cluster = get(&r, types::CLUSTER, &sni(&c, "", "db"));
    let Some(LbConfig::RingHashLbConfig(rh)) = &cl.lb_config else {
        panic!("ring hash config")
    };
    assert_eq!(rh.maximum_ring_size, Some(UInt64Value { value: 0 }));
    match validate("ring hash, minimum only", &r) {
        Ok(()) => panic!("Envoy accepted maximum_ring_size 0 under a minimum of 1024"),
        Err(e) => assert!(e.contains("maximum_ring_size"), "{e}"),
    }
}
